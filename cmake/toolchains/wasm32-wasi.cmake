# Cross-compiling the library for WebAssembly (wasm32-wasi) with Debian bookworm's own
# toolchain: clang-14, lld-14 (wasm-ld), wasi-libc and libclang-rt-14-dev-wasm32 (the
# compiler's builtins for wasm32). tools/build-wasm.sh installs those when missing, builds
# cJSON and utf8proc for wasm32 from Debian's source packages and configures with this file;
# by hand:
#   cmake -B build-wasm -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/wasm32-wasi.cmake \
#         -DCMAKE_BUILD_TYPE=Release -DSKYCMD_THREADS=OFF -DBUILD_TESTING=OFF \
#         -DSKYCMD_SERVE=OFF [-DSKYCMD_WASM_SIMD=ON]
#   cmake --build build-wasm --target skycmd_static
# with the dependencies' .pc files in SKYCMD_WASM_PREFIX/lib/pkgconfig.
# Single-threaded (SKYCMD_THREADS=OFF): no SharedArrayBuffer, so a page needs no
# cross-origin isolation. Only the static library is meant to be built: the programs (CLI,
# server) and the tests need threads and a file system.
set(CMAKE_SYSTEM_NAME Generic)  # CMake 3.25 has no WASI platform: no shared libraries
set(CMAKE_SYSTEM_PROCESSOR wasm32)
set(CMAKE_C_COMPILER clang-14)
set(CMAKE_C_COMPILER_TARGET wasm32-wasi)
set(CMAKE_AR llvm-ar-14 CACHE FILEPATH "")
set(CMAKE_RANLIB llvm-ranlib-14 CACHE FILEPATH "")
set(CMAKE_EXECUTABLE_SUFFIX .wasm)

# Debian's clang searches /usr/include after wasi-libc's headers, so the host's glibc headers
# would be found for what wasi-libc lacks (pthread.h): a sysroot of links to wasi-libc alone.
get_filename_component(_sk_root "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
set(SKYCMD_WASM_PREFIX "${_sk_root}/.deps/wasm32-wasi" CACHE PATH
    "wasm32-wasi sysroot links and dependencies (cJSON, utf8proc): tools/build-wasm.sh")
set(_sk_sysroot "${SKYCMD_WASM_PREFIX}/sysroot")
if(NOT EXISTS "${_sk_sysroot}/lib/wasm32-wasi")
  file(MAKE_DIRECTORY "${_sk_sysroot}/include" "${_sk_sysroot}/lib")
  file(CREATE_LINK /usr/include/wasm32-wasi "${_sk_sysroot}/include/wasm32-wasi" SYMBOLIC)
  file(CREATE_LINK /usr/lib/wasm32-wasi "${_sk_sysroot}/lib/wasm32-wasi" SYMBOLIC)
endif()
option(SKYCMD_WASM_SIMD "wasm32: SIMD128 (-msimd128; Chrome 91, Firefox 89, Safari 16.4, Node 16.4)" OFF)
set(_sk_flags "--sysroot=${_sk_sysroot}")
if(SKYCMD_WASM_SIMD)
  string(APPEND _sk_flags " -msimd128")
endif()
set(CMAKE_C_FLAGS_INIT "${_sk_flags}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_sk_flags}")
set(CMAKE_TRY_COMPILE_PLATFORM_VARIABLES SKYCMD_WASM_PREFIX SKYCMD_WASM_SIMD)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

set(CMAKE_FIND_ROOT_PATH "${SKYCMD_WASM_PREFIX}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config answers with the wasm32 builds of the dependencies alone.
set(ENV{PKG_CONFIG_LIBDIR} "${SKYCMD_WASM_PREFIX}/lib/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
