# Included by tests/CMakeLists.txt.
#
# 1. The public header compiles as strict C99 and as C++ (11 and 17), with every warning
#    as an error, and a program of each kind links and runs against libskycmd.so: the
#    header_c99 / header_cxx11 / header_cxx17 executables are part of the normal build, so
#    a header that stops compiling breaks the build, and ctest runs them.
# 2. libskycmd.so exports only skycmd_* symbols, each versioned @@SKYCMD_1.0 (abi/skycmd.map).

enable_language(CXX)   # the header's C++ check is the only C++ in the project
set(_hdr_dir ${CMAKE_BINARY_DIR}/header_test)
set(_hdr_body "
#include \"skycmd.h\"
#include \"skycmd.h\" /* include guard */
#include <stdio.h>
int main(void) {
    skycmd_error *err = skycmd_error_new();
    int st = skycmd_check_version(SKYCMD_VERSION_NUMBER, err);
    if (st != SKYCMD_OK) { fprintf(stderr, \"%s\\n\", skycmd_error_message(err)); return 1; }
    skycmd_error_free(err);
    skycmd_type t = SKYCMD_TYPE_Q8_0;
    return (skycmd_abi_version() == SKYCMD_ABI_VERSION && t == 8) ? 0 : 1;
}
")
file(WRITE ${_hdr_dir}/header_c99.c "${_hdr_body}")
file(WRITE ${_hdr_dir}/header_cxx.cpp "${_hdr_body}")

add_executable(header_c99 ${_hdr_dir}/header_c99.c)
set_target_properties(header_c99 PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_options(header_c99 PRIVATE -pedantic-errors -Wall -Wextra -Werror)
target_link_libraries(header_c99 PRIVATE skycmd)
add_test(NAME header_c99 COMMAND header_c99)

foreach(_std 11 17)
  add_executable(header_cxx${_std} ${_hdr_dir}/header_cxx.cpp)
  set_target_properties(header_cxx${_std} PROPERTIES CXX_STANDARD ${_std} CXX_STANDARD_REQUIRED ON
                        CXX_EXTENSIONS OFF)
  target_compile_options(header_cxx${_std} PRIVATE -pedantic-errors -Wall -Wextra -Werror)
  target_link_libraries(header_cxx${_std} PRIVATE skycmd)
  add_test(NAME header_cxx${_std} COMMAND header_cxx${_std})
endforeach()

# Every defined dynamic symbol must be skycmd_*@@SKYCMD_1.0; the only other entry allowed
# is the version node itself (an absolute symbol named SKYCMD_1.0).
if(NOT APPLE)
  file(WRITE ${_hdr_dir}/check_exports.sh [=[
set -eu
lib="$1"
syms=$(nm -D --defined-only "$lib" | awk '{print $NF}')
[ -n "$syms" ] || { echo "no dynamic symbols in $lib"; exit 1; }
bad=$(printf '%s\n' "$syms" | grep -v -E '^skycmd_[A-Za-z0-9_]+@@SKYCMD_1\.0$' | grep -v -x 'SKYCMD_1.0' || true)
if [ -n "$bad" ]; then echo "unexpected exports in $lib:"; printf '%s\n' "$bad"; exit 1; fi
n=$(printf '%s\n' "$syms" | grep -c '^skycmd_')
echo "$n skycmd_* symbols, all versioned @@SKYCMD_1.0"
]=])
  add_test(NAME abi_exports_only_skycmd COMMAND sh ${_hdr_dir}/check_exports.sh $<TARGET_FILE:skycmd>)
endif()
