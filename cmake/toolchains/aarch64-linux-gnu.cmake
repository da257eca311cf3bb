# Cross-compiling for arm64 Linux on a Debian x86-64 host: Debian's gcc-aarch64-linux-gnu,
# the arm64 (multiarch) -dev packages of the dependencies (dpkg --add-architecture arm64),
# and qemu-aarch64 to run what the build makes (ctest: CMAKE_CROSSCOMPILING_EMULATOR; the
# tests that start the `skycmd` program go through <build>/skycmd-emulated; programs started
# by programs need a binfmt_misc handler for aarch64). tools/test-arm64.sh sets all of it up;
# by hand:
#   cmake -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
#         [-DSKYCMD_QEMU_CPU=cortex-a53] [-DSKYCMD_QEMU_LD_PREFIX=DIR]
# SKYCMD_QEMU_CPU: the CPU qemu emulates ("max": dotprod, i8mm, bf16; "cortex-a53": none of
# them). SKYCMD_QEMU_LD_PREFIX: a directory searched first for the arm64 libraries the
# programs load (qemu -L), for libraries that cannot be installed beside the host's own.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config answers for arm64: Debian's multiarch directory and no host .pc files, unless
# the caller chose the directories (tools/test-arm64.sh adds its own builds first).
if(NOT DEFINED ENV{PKG_CONFIG_LIBDIR})
  set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
endif()
set(SKYCMD_QEMU_CPU "max" CACHE STRING "the CPU qemu-aarch64 emulates for ctest")
set(SKYCMD_QEMU_LD_PREFIX "/" CACHE PATH "qemu-aarch64 -L: searched first for the programs' libraries")
# Through the environment (QEMU_CPU, QEMU_LD_PREFIX), so that the programs a test starts
# itself (Criterion re-executes its test binary for every test) run on the same emulated CPU:
# they reach qemu through the kernel's binfmt_misc handler, which tools/test-arm64.sh
# registers when the machine has none.
set(CMAKE_CROSSCOMPILING_EMULATOR env QEMU_CPU=${SKYCMD_QEMU_CPU} QEMU_LD_PREFIX=${SKYCMD_QEMU_LD_PREFIX} qemu-aarch64)
