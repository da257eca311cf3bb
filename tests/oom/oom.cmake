# oom.cmake - the allocation-failure test (tests/oom/oom_alloc_fail.c, ctest oom_alloc_fail):
# the library's objects linked with the C allocator wrapped (-Wl,--wrap=...), so that the
# test can fail the n-th allocation of skycmd_model_open, skycmd_decide, skycmd_convert and
# skycmd_quantize. Meant for the ASan build (leaks are reported per operation); in the other
# builds it checks statuses, crashes and live-allocation counts. GNU ld / lld only.
if(NOT APPLE AND NOT SKYCMD_TSAN)
  add_executable(oom_alloc_fail ${CMAKE_CURRENT_LIST_DIR}/oom_alloc_fail.c $<TARGET_OBJECTS:skycmd_obj>)
  target_include_directories(oom_alloc_fail PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
  target_compile_definitions(oom_alloc_fail PRIVATE SKYCMD_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  target_link_options(oom_alloc_fail PRIVATE
    "LINKER:--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=aligned_alloc,--wrap=free")
  target_link_libraries(oom_alloc_fail PRIVATE PkgConfig::CJSON PkgConfig::UTF8PROC Threads::Threads m)
  add_test(NAME oom_alloc_fail COMMAND oom_alloc_fail)
  set_tests_properties(oom_alloc_fail PROPERTIES TIMEOUT 900)
endif()
