# Read by CMake after its Darwin platform files (CMAKE_USER_MAKE_RULES_OVERRIDE, set by
# zig-macos-common.cmake). CMake enables -rpath (and with it @rpath install names) only
# when `sw_vers` says the host is macOS >= 10.5; on a Linux host it cannot ask, so the
# flag is set here: every macOS skycmd targets has had it.
set(CMAKE_SHARED_LIBRARY_RUNTIME_C_FLAG "-Wl,-rpath,")
