# Cross-compiling for x86_64 macOS on Linux with `zig cc -target x86_64-macos` (tools/macos-cross.sh).
set(SKYCMD_ZIG_ARCH x86_64)
include(${CMAKE_CURRENT_LIST_DIR}/zig-macos-common.cmake)
