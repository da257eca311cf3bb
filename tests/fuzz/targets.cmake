# targets.cmake - what a fuzz target needs beyond its own file and the library objects, shared
# by the libFuzzer build (tests/fuzz/CMakeLists.txt) and the seed replay of every build
# (tests/fuzz/replay.cmake).
#
#   fuzz_serve_*   the server's HTTP layer without libmicrohttpd: src/serve's http.c, routes.c,
#                  batch.c, models.c, metrics.c, decode.c, serve_util.c and serve_stubs.c (the
#                  libmicrohttpd functions over a fake connection); built where libmicrohttpd's
#                  header (the server's own when it is built, else any: only its types are
#                  used, nothing is linked from it), libzstd and zlib are found, whether or
#                  not this build has the server.
#   fuzz_calibrate SKYCMD_FUZZ_TINY_MODEL, the path of fuzz_model's smallest seed, the model
#                  it calibrates.
#   others         nothing more (fuzz_decide_batch includes src/cli/cmd_decide_batch.c itself).
#
# skycmd_fuzz_extras(TARGET NAME OK_VAR): adds them to TARGET; OK_VAR is FALSE when NAME cannot
# be built here (then TARGET must not be created: call with TARGET empty to ask first).
if(NOT DEFINED SKYCMD_FUZZ_MHD_INCLUDE)
  find_path(SKYCMD_FUZZ_MHD_INCLUDE microhttpd.h HINTS ${MHD_INCLUDE_DIRS})
endif()
if(NOT TARGET PkgConfig::ZSTD)
  pkg_check_modules(ZSTD IMPORTED_TARGET libzstd)
endif()
if(NOT TARGET PkgConfig::ZLIB)
  pkg_check_modules(ZLIB IMPORTED_TARGET zlib)
endif()

function(skycmd_fuzz_extras target name ok_var)
  set(${ok_var} TRUE PARENT_SCOPE)
  if(name STREQUAL "calibrate" AND target)
    target_compile_definitions(${target} PRIVATE
      SKYCMD_FUZZ_TINY_MODEL="${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/model/tiny-f16.gguf")
  endif()
  if(name MATCHES "^serve_")
    if(NOT SKYCMD_FUZZ_MHD_INCLUDE OR NOT TARGET PkgConfig::ZSTD OR NOT TARGET PkgConfig::ZLIB)
      set(${ok_var} FALSE PARENT_SCOPE)
      return()
    endif()
    if(target)
      set(_s ${CMAKE_SOURCE_DIR}/src/serve)
      target_sources(${target} PRIVATE ${_s}/http.c ${_s}/routes.c ${_s}/batch.c ${_s}/models.c
        ${_s}/metrics.c ${_s}/decode.c ${_s}/serve_util.c ${CMAKE_SOURCE_DIR}/tests/fuzz/serve_stubs.c)
      target_include_directories(${target} PRIVATE ${_s} ${CMAKE_SOURCE_DIR}/tests/fuzz ${SKYCMD_FUZZ_MHD_INCLUDE})
      target_compile_definitions(${target} PRIVATE SKYCMD_HAVE_MHD=1)
      target_link_libraries(${target} PRIVATE PkgConfig::ZSTD PkgConfig::ZLIB)
    endif()
  endif()
endfunction()
