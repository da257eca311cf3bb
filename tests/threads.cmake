# threads.cmake - tests/threads/threads_stress.c: sessions with compute threads, batched
# decides and the thread budget exercised from several threads at once. A plain program
# (not Criterion) so that it also runs in the ThreadSanitizer build (-DSKYCMD_TSAN=ON),
# where it is the data-race check of the threaded forward pass. Included by
# tests/CMakeLists.txt.
add_executable(threads_stress ${CMAKE_CURRENT_SOURCE_DIR}/threads/threads_stress.c
                              $<TARGET_OBJECTS:skycmd_obj>)
target_include_directories(threads_stress PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
target_link_libraries(threads_stress PRIVATE PkgConfig::CJSON PkgConfig::UTF8PROC Threads::Threads m)
add_test(NAME threads_stress COMMAND threads_stress ${CMAKE_BINARY_DIR})
