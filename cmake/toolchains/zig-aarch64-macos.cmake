# Cross-compiling for aarch64 macOS on Linux with `zig cc -target aarch64-macos` (tools/macos-cross.sh).
set(SKYCMD_ZIG_ARCH aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/zig-macos-common.cmake)
