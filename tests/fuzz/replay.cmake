# replay.cmake - the fuzz targets' seed corpora replayed by ordinary ctest in every build
# (release, ASan/UBSan, TSan, cross), not only in the clang fuzz build: each
# tests/fuzz/fuzz_<name>.c that has tests/fuzz/corpus/<name>/ is linked with replay_main.c
# (a main() that calls LLVMFuzzerTestOneInput once per seed file) and the library objects by
# the build's own compiler, as the executable fuzz_replay_<name> and the ctest test of the
# same name. Included by tests/CMakeLists.txt.
include(${CMAKE_CURRENT_LIST_DIR}/targets.cmake)
file(GLOB _fuzz_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/fuzz_*.c)
foreach(_src IN LISTS _fuzz_sources)
  get_filename_component(_t ${_src} NAME_WE)
  string(REGEX REPLACE "^fuzz_" "" _name ${_t})
  set(_corpus ${CMAKE_CURRENT_LIST_DIR}/corpus/${_name})
  skycmd_fuzz_extras("" ${_name} _ok)
  if(NOT _ok OR NOT IS_DIRECTORY ${_corpus})
    continue()
  endif()
  set(_target fuzz_replay_${_name})
  add_executable(${_target} ${CMAKE_CURRENT_LIST_DIR}/replay_main.c ${_src} $<TARGET_OBJECTS:skycmd_obj>)
  skycmd_fuzz_extras(${_target} ${_name} _ok)
  target_include_directories(${_target} PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
  target_link_libraries(${_target} PRIVATE PkgConfig::CJSON PkgConfig::UTF8PROC Threads::Threads m)
  add_test(NAME ${_target} COMMAND ${_target} ${_corpus})
  set_tests_properties(${_target} PROPERTIES TIMEOUT 120)
endforeach()
