# serve.cmake - HTTP tests of `skycmd serve` (tests/serve/*), run against real started
# servers on loopback. Included by tests/CMakeLists.txt.
#
#   serve_util      the helpers of src/serve (model scanner, escaping)  (Criterion)
#   serve_http      endpoints, error statuses, model selection, keep-alive, concurrency,
#                   auth on/off, graceful shutdown                  (python3, stdlib only)
#   serve_badinput  hostile HTTP and JSON over raw sockets           (python3, stdlib only)
#   serve_framing   RFC 9112 framing ambiguities -> 400 + close, nothing smuggled (raw sockets)
#   serve_limits    header/body deadlines (408), --max-connections (closed at once),
#                   --max-buffered (503), idle keep-alive apart from the deadlines
#   serve_lifecycle SIGTERM drain (connect refused, in flight answered, --drain-timeout) and
#                   SIGHUP reload under load (0 failed, new answers, a bad file keeps the old)
#   serve_encoding  zstd/gzip/deflate request bodies, bombs -> 413, corrupt -> 400, unknown -> 415
#   serve_contract  docs/openapi.json valid (openapi-spec-validator), served at /openapi.json,
#                   schemathesis >= 1,000 cases: no 5xx, responses match (skipped, 77, without)
#   serve_batch     POST /v1/systemone/batch and max_len/head_max_len against laya serve's
#                   own answers (tests/fixtures/serve/batch_golden.json)  (stdlib only)
#   serve_sdk       the typesafe-sdk 0.7.5 client against the server (skipped, 77, without it)
#   serve_openapi_clients  clients generated from /openapi.json (openapi-python-client,
#                   openapi-generator python + typescript-fetch, openapi-typescript) cover every
#                   operation, compile (tsc) and answer the example (skipped, 77, without the tools)
#   serve_jevcompat the Jev conformance suite jevcompat 0.1.1, with and without an API key:
#                   conformant, every MUST, >= 13/14 SHOULDs (skipped, 77, without it)
#   serve_env       every serve option from its SKYCMD_<NAME> variable (--print-config), the
#                   command line winning, and live servers configured by environment only
#   serve_load      wrk: 5 s at 64 connections (RSS, clean stop), then the 60 s soak at 256 connections (no errors, no stall); skipped (77) without wrk
#
# serve_sdk picks the interpreter that has typesafe-sdk when it runs, not here (a cached
# setting would keep the interpreter found at the first configure): $SKYCMD_SERVE_SDK_PYTHON,
# else the pinned CI venv .venv-ci that tools/setup.sh --all makes (see test_sdk.py).
# Unit tests of the server's own helpers (no HTTP needed).
add_executable(test_serve_util ${CMAKE_CURRENT_SOURCE_DIR}/serve/test_serve_util.c
                               ${CMAKE_SOURCE_DIR}/src/serve/serve_util.c)
target_include_directories(test_serve_util PRIVATE ${CMAKE_SOURCE_DIR}/src/serve)
target_link_libraries(test_serve_util PRIVATE PkgConfig::CRITERION)
add_test(NAME serve_util COMMAND test_serve_util --jobs=1)

if(NOT MHD_FOUND)
  message(STATUS "skycmd serve tests: libmicrohttpd not found, HTTP tests disabled")
  return()
endif()
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "skycmd serve tests: no python3, HTTP tests disabled")
  return()
endif()

set(_serve_dir ${CMAKE_CURRENT_SOURCE_DIR}/serve)
set(_serve_work ${CMAKE_BINARY_DIR}/serve-tests)
set(_serve_args --cli ${SKYCMD_CLI_RUN} --source-dir ${CMAKE_SOURCE_DIR})

add_test(NAME serve_http
         COMMAND ${Python3_EXECUTABLE} ${_serve_dir}/test_http.py ${_serve_args} --work-dir ${_serve_work}/http)
add_test(NAME serve_badinput
         COMMAND ${Python3_EXECUTABLE} ${_serve_dir}/test_badinput.py ${_serve_args} --work-dir ${_serve_work}/badinput)
add_test(NAME serve_framing
         COMMAND ${Python3_EXECUTABLE} ${_serve_dir}/test_framing.py ${_serve_args} --work-dir ${_serve_work}/framing)
add_test(NAME serve_limits
         COMMAND ${Python3_EXECUTABLE} ${_serve_dir}/test_limits.py ${_serve_args} --work-dir ${_serve_work}/limits)
add_test(NAME serve_lifecycle
         COMMAND ${Python3_EXECUTABLE} ${_serve_dir}/test_lifecycle.py ${_serve_args} --work-dir ${_serve_work}/lifecycle)
add_test(NAME serve_encoding
         COMMAND ${Python3_EXECUTABLE} ${_serve_dir}/test_encoding.py ${_serve_args} --work-dir ${_serve_work}/encoding)
add_test(NAME serve_batch
         COMMAND ${Python3_EXECUTABLE} ${_serve_dir}/test_batch.py ${_serve_args} --work-dir ${_serve_work}/batch)
add_test(NAME serve_sdk
         COMMAND ${Python3_EXECUTABLE} ${_serve_dir}/test_sdk.py ${_serve_args} --work-dir ${_serve_work}/sdk)
add_test(NAME serve_jevcompat
         COMMAND ${Python3_EXECUTABLE} ${_serve_dir}/test_jevcompat.py ${_serve_args} --work-dir ${_serve_work}/jevcompat)
add_test(NAME serve_env
         COMMAND ${Python3_EXECUTABLE} ${_serve_dir}/test_env.py ${_serve_args} --work-dir ${_serve_work}/env)
# The contract test needs openapi-spec-validator and schemathesis: it runs itself under the
# same interpreter as serve_sdk (chosen when it runs: serve_common.run_under_sdk_python).
add_test(NAME serve_contract
         COMMAND ${Python3_EXECUTABLE} ${_serve_dir}/test_contract.py ${_serve_args} --work-dir ${_serve_work}/contract)
# Clients generated from the document (issue 39): the generators come from tools/setup.sh --all
# (the CI venv, .tools/); it runs under serve_sdk's interpreter.
add_test(NAME serve_openapi_clients
         COMMAND ${Python3_EXECUTABLE} ${_serve_dir}/test_openapi_clients.py ${_serve_args} --work-dir ${_serve_work}/openapi_clients)
set_tests_properties(serve_openapi_clients PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
add_test(NAME serve_load
         COMMAND bash ${_serve_dir}/load.sh --ci ${_serve_args} --work-dir ${_serve_work}/load)
set_tests_properties(serve_http serve_batch serve_badinput serve_framing serve_limits serve_lifecycle serve_encoding serve_sdk serve_contract PROPERTIES TIMEOUT 600)
set_tests_properties(serve_sdk serve_jevcompat serve_contract serve_load PROPERTIES SKIP_RETURN_CODE 77)
set_tests_properties(serve_jevcompat serve_env PROPERTIES TIMEOUT 600)
# Two POST operations to fuzz (/v1/systemone and the batch route, whose cases carry up to 64
# states): on the shared 2-core machine the run took 580-620 s, past the 600 s above.
set_tests_properties(serve_contract PROPERTIES TIMEOUT 1500)
# The load test measures; keep it alone on the machine.
set_tests_properties(serve_load PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE)
# One request path: the same bodies through the CLI (single and batch), the library
# (tests/entry/decide_json.c, on the public API only) and the server, byte for byte.
add_executable(entry_decide_json ${CMAKE_CURRENT_SOURCE_DIR}/entry/decide_json.c)
target_include_directories(entry_decide_json PRIVATE ${CMAKE_SOURCE_DIR}/include)
target_link_libraries(entry_decide_json PRIVATE skycmd)
add_test(NAME serve_entry_points
         COMMAND ${Python3_EXECUTABLE} ${_serve_dir}/test_entry_points.py ${_serve_args}
                 --decide-json $<TARGET_FILE:entry_decide_json> --work-dir ${_serve_work}/entry_points)
set_tests_properties(serve_entry_points PROPERTIES TIMEOUT 600)
