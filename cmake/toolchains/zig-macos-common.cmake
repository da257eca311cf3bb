# Shared by zig-aarch64-macos.cmake and zig-x86_64-macos.cmake (which set SKYCMD_ZIG_ARCH
# first): cross-compiling and linking for macOS with `zig cc`, which carries the macOS libc
# headers and libSystem stubs, so no Apple SDK is needed. tools/macos-cross.sh installs zig
# (into .deps/zig-venv), builds the dependencies with these same files and then skycmd.
#
# The dependencies (cJSON, utf8proc, libmicrohttpd, zstd, zlib), static, are looked up only
# under SKYCMD_MACOS_DEPS (default .deps/macos-<arch> in the repository), through their .pc
# files there and nowhere on the host.
set(CMAKE_SYSTEM_NAME Darwin)
set(CMAKE_SYSTEM_PROCESSOR ${SKYCMD_ZIG_ARCH})
get_filename_component(_skycmd_root "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
# The compiler is tools/zig/cc (one path, as CMake wants) with the zig target as its
# mandatory argument; ar and ranlib are zig's too.
set(CMAKE_C_COMPILER "${_skycmd_root}/tools/zig/cc" -target ${SKYCMD_ZIG_ARCH}-macos)
set(CMAKE_AR "${_skycmd_root}/tools/zig/ar" CACHE FILEPATH "zig ar")
set(CMAKE_RANLIB "${_skycmd_root}/tools/zig/ranlib" CACHE FILEPATH "zig ranlib")
set(CMAKE_USER_MAKE_RULES_OVERRIDE "${CMAKE_CURRENT_LIST_DIR}/zig-macos-rules.cmake")
# No Xcode here: no sysroot to look up, and CMake must not run xcrun/xcodebuild for one.
set(CMAKE_OSX_SYSROOT "" CACHE PATH "")
set(CMAKE_OSX_ARCHITECTURES "" CACHE STRING "")
set(CMAKE_OSX_DEPLOYMENT_TARGET "" CACHE STRING "")

if(NOT SKYCMD_MACOS_DEPS)
  if(DEFINED ENV{SKYCMD_MACOS_DEPS})
    set(SKYCMD_MACOS_DEPS "$ENV{SKYCMD_MACOS_DEPS}")
  else()
    set(SKYCMD_MACOS_DEPS "${_skycmd_root}/.deps/macos-${SKYCMD_ZIG_ARCH}")
  endif()
endif()
set(SKYCMD_MACOS_DEPS "${SKYCMD_MACOS_DEPS}" CACHE PATH "prefix of the macOS dependencies")
list(APPEND CMAKE_FIND_ROOT_PATH "${SKYCMD_MACOS_DEPS}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config answers from the dependencies' prefix only (no host .pc files), and its paths
# are not prefixed with a sysroot (they are absolute already).
set(ENV{PKG_CONFIG_LIBDIR} "${SKYCMD_MACOS_DEPS}/lib/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")
