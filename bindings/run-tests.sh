#!/usr/bin/env bash
# run-tests.sh - build libskycmd's build tree and run the Go, Java, Node, Rust and Python binding
# suites, then the cross-check of the bindings against the C CLI and the valgrind leak loop.
#
# usage: bindings/run-tests.sh [--build-dir DIR] [--no-build] [SUITE...]
#   SUITE: generated go java node rust python crosscheck valgrind (default: all). The
#   cross-check needs the dumps of the suites selected in the same run. generated: the
#   committed Go and Node SWIG wrappers are not stale (bindings/generate.sh --check).
# env: SWIG (default /opt/swigvenv/bin/swig if present, else swig on PATH; must be >= 4.2),
#      JAVA_HOME (default from javac), MVN_FLAGS (extra Maven flags, e.g. -o),
#      PYTHON (default python3: makes the Python suite's venv; needs venv and the headers).
# Each runner's own summary line is printed, then one line per suite; exit status 1 if any failed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build="$root/build-bindings"
do_build=1
suites=()
while [ $# -gt 0 ]; do
    case "$1" in
        --build-dir) build=$(realpath -m "$2"); shift 2 ;;
        --no-build) do_build=0; shift ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) suites+=("$1"); shift ;;
    esac
done
[ ${#suites[@]} -eq 0 ] && suites=(generated go java node rust python crosscheck valgrind)
want() { local s; for s in "${suites[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }

if [ -z "${SWIG:-}" ]; then
    if [ -x /opt/swigvenv/bin/swig ]; then SWIG=/opt/swigvenv/bin/swig; else SWIG=swig; fi
fi
export SWIG
: "${JAVA_HOME:=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}"
export JAVA_HOME

if [ $do_build -eq 1 ]; then
    if [ ! -f "$build/CMakeCache.txt" ]; then
        cmake -S "$root" -B "$build" -G Ninja >/dev/null || exit 1
    fi
    cmake --build "$build" --target skycmd skycmd_cli || exit 1
fi

export PKG_CONFIG_PATH="$build/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SKYCMD_REQUIRE_MODEL=1
export SKYCMD_EXAMPLE_REQUEST="$root/examples/flappy-drone.json"
# The same request with its own budgets (max_len 75, head_max_len 64: the state is cut):
# every binding must apply a body's budgets as the CLI does (docs/compat.md "One request
# path"); run_budget_crosscheck answers it through each binding's example test.
budget_request="$root/bindings/tools/budget-request.json"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off

work=$(mktemp -d "${TMPDIR:-/tmp}/skycmd-bindings.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/dumps"
export SKYCMD_DUMP_DIR="$work/dumps"
export SKYCMD_TEST_MODEL="$work/s1-pico.gguf"
"$build/skycmd" random s1-pico "$SKYCMD_TEST_MODEL" || { echo "cannot make the random s1-pico model"; exit 1; }
# --f32: the bindings open models with the library's default (SKYCMD_WEIGHTS_F32), while the
# CLI's default is bf16x3 (AMX-BF16 tiles where the CPU has them): compare the same mode
"$build/skycmd" decide "$SKYCMD_TEST_MODEL" "$SKYCMD_EXAMPLE_REQUEST" --f32 > "$work/dumps/cli.json" || exit 1

declare -A result
summary() { echo "== $1: $2"; result[$1]=$2; }

run_generated() {
    echo "== committed SWIG wrappers (Go, Node) vs skycmd.i + skycmd.h"
    SWIG="$SWIG" "$here/generate.sh" --check
    summary generated "$([ $? -eq 0 ] && echo PASS || echo FAIL)"
}

run_go() {
    echo "== go test -race (bindings/go; the SWIG layer is committed)"
    (cd "$here/go" && go test -race -count=1 -v ./... > "$work/go.log" 2>&1)
    local rc=$?
    grep -E '^(--- FAIL|panic:)' -A5 "$work/go.log"
    grep -E 'go loop:' "$work/go.log"
    local pass fail
    pass=$(grep -c '^--- PASS' "$work/go.log"); fail=$(grep -c '^--- FAIL' "$work/go.log")
    grep -E '^(ok|FAIL)\s' "$work/go.log"
    summary go "$([ $rc -eq 0 ] && echo PASS || echo FAIL) ($pass passed, $fail failed)"
}

run_java() {
    echo "== bindings/java/generate.sh --check (the committed SWIG output is current)"
    SWIG="$SWIG" bash "$here/java/generate.sh" --check
    local gen=$?
    echo "== mvn test (bindings/java, Surefire)"
    (cd "$here/java" && mvn -B ${MVN_FLAGS:-} test > "$work/java.log" 2>&1)
    local rc=$?
    [ $gen -ne 0 ] && rc=1
    # The build as a user who is not root, changing nothing under /etc/apt (issue 40).
    echo "== bindings/java/nonroot-build-check.sh (mvn install as a non-root user)"
    bash "$here/java/nonroot-build-check.sh" || rc=1
    grep -E 'java loop:|<<< (FAIL|ERROR)|^\[ERROR\]   ' "$work/java.log"
    local line
    line=$(grep -E '^\[(INFO|WARNING|ERROR)\] Tests run: [0-9]+, Failures' "$work/java.log" | tail -n1)
    echo "$line"
    [ -z "$line" ] && tail -n 30 "$work/java.log"
    summary java "$([ $rc -eq 0 ] && echo PASS || echo FAIL) (${line#*] })"
}

run_node() {
    echo "== node --test (bindings/node)"
    # npm ci --ignore-scripts, then the package's own install step (install.js: node-gyp
    # from the committed wrapper, no SWIG) against this build tree's pkg-config file.
    (cd "$here/node" && { [ -d node_modules/node-addon-api ] && [ -d node_modules/typescript ] || npm ci --ignore-scripts --no-audit --no-fund >/dev/null; } &&
        { npm run -s build > "$work/node-build.log" 2>&1 || { tail -n 30 "$work/node-build.log"; false; }; } &&
        npm run -s typecheck && node --test test/ > "$work/node.log" 2>&1)
    local rc=$?
    grep -E '^not ok|node loop:|^# (tests|pass|fail) ' "$work/node.log"
    [ $rc -ne 0 ] && grep -E '^\s+(error|expected|actual):' "$work/node.log" | head -20
    summary node "$([ $rc -eq 0 ] && echo PASS || echo FAIL) ($(grep -E '^# pass ' "$work/node.log" | cut -c3-), $(grep -E '^# fail ' "$work/node.log" | cut -c3-))"
}

run_rust() {
    # Twice: against the build tree's library (pkg-config) with feature `serde` (its tests
    # run), then with feature `bundled` alone (the C sources compiled by skycmd-sys; the crate
    # without serde; its dump, written last, is the one cross-checked).
    echo "== cargo test (bindings/rust; --features skycmd/serde, then --features skycmd/bundled)"
    local rc=0 features
    : > "$work/rust.log"
    for features in "--features skycmd/serde" "--features skycmd/bundled"; do
        # shellcheck disable=SC2086
        (cd "$here/rust" && { cargo test --offline --no-fail-fast $features > "$work/rust-run.log" 2>&1 ||
            { grep -q 'offline' "$work/rust-run.log" && cargo test --no-fail-fast $features > "$work/rust-run.log" 2>&1; }; }) || rc=1
        cat "$work/rust-run.log" >> "$work/rust.log"
    done
    grep -E 'rust loop:|^test .* FAILED|panicked' "$work/rust.log"
    grep -E '^test result:' "$work/rust.log"
    local pass fail
    pass=$(grep -E '^test result:' "$work/rust.log" | awk '{s+=$4} END {print s+0}')
    fail=$(grep -E '^test result:' "$work/rust.log" | awk '{s+=$6} END {print s+0}')
    summary rust "$([ $rc -eq 0 ] && echo PASS || echo FAIL) ($pass passed, $fail failed)"
}

# The wheel is built the documented way (pip wheel against an installed prefix, libskycmd.a
# linked in) and installed into a fresh venv; pytest runs outside the source tree so that
# `import skycmd` is the installed wheel.
run_python() {
    echo "== pytest (bindings/python: pip wheel into a fresh venv)"
    local py=${PYTHON:-python3} venv="$work/python-venv"
    # Only the library's components: the wheel needs the headers, the .pc and libskycmd.a
    # (the components also install the package's doc files: skycmd_package_files).
    (cmake --build "$build" --target skycmd skycmd_static skycmd_package_files >/dev/null &&
        cmake --install "$build" --prefix "$work/python-prefix" --component dev >/dev/null &&
        cmake --install "$build" --prefix "$work/python-prefix" --component runtime >/dev/null &&
        "$py" -m venv "$venv" &&
        PKG_CONFIG_PATH="$work/python-prefix/lib/pkgconfig" "$venv/bin/pip" wheel -q --no-deps \
            "$here/python" -w "$work/python-dist" &&
        "$venv/bin/pip" install -q "$work"/python-dist/skycmd-*.whl -r "$here/python/tests/requirements.txt" &&
        cd "$work" && "$venv/bin/python" -m pytest -p no:cacheprovider -v -s "$here/python/tests") \
        > "$work/python.log" 2>&1
    local rc=$?
    grep -E 'python (loop|gil):|^FAILED|^ERROR' "$work/python.log"
    local line
    line=$(grep -E '^=+ .*([0-9]+ (passed|failed|error)).* in [0-9.]+s' "$work/python.log" | tail -n1)
    echo "$line"
    [ $rc -ne 0 ] && [ -z "$line" ] && tail -n 30 "$work/python.log"
    line=$(echo ${line//=/})
    # The extension's own memory check: every entry point under valgrind; the errors and
    # definitely-lost blocks whose stacks pass through the extension or libskycmd must be none.
    local vg="valgrind loop skipped: no valgrind"
    if [ $rc -eq 0 ] && command -v valgrind >/dev/null; then
        (cd "$work" && PYTHONMALLOC=malloc valgrind --leak-check=full --show-leak-kinds=definite \
            --log-file="$work/python-valgrind.log" "$venv/bin/python" \
            "$here/python/tests/valgrind_loop.py" "$SKYCMD_TEST_MODEL" "$SKYCMD_EXAMPLE_REQUEST" 10) \
            > "$work/python-valgrind.out" 2>&1 &&
            "$venv/bin/python" "$here/python/tests/valgrind_ours.py" "$work/python-valgrind.log" \
            > "$work/python-valgrind.txt"
        if [ $? -eq 0 ]; then vg="valgrind loop: 0 reports through skycmd"; else
            rc=1; vg="valgrind loop FAILED"; tail -n 40 "$work/python-valgrind.out" "$work/python-valgrind.txt"; fi
        tail -n1 "$work/python-valgrind.txt" 2>/dev/null
    fi
    # The same wheel with no libcjson/libutf8proc on the system (a private mount namespace).
    local nolibs="no-system-libs check not run"
    if [ $rc -eq 0 ]; then
        bash "$here/python/no-system-libs-check.sh" "$work"/python-dist/skycmd-*.whl \
            "$root/models/s1-pico-flappy.gguf" "$SKYCMD_EXAMPLE_REQUEST" > "$work/python-nolibs.log" 2>&1
        case $? in
            0) nolibs="answers without libcjson/libutf8proc" ;;
            77) if [ "${SKYCMD_ALLOW_NO_UNSHARE:-0}" = 1 ]; then nolibs="no-system-libs check not run: no mount namespace"
                else rc=1; nolibs="no-system-libs check could not run (no mount namespace)"; fi ;;
            *) rc=1; nolibs="no-system-libs check FAILED"; tail -n 30 "$work/python-nolibs.log" ;;
        esac
        grep -E '^no-system-libs-check:' "$work/python-nolibs.log"
    fi
    summary python "$([ $rc -eq 0 ] && echo PASS || echo FAIL) ($line; $vg; $nolibs)"
}

# Each selected binding's example test once more on the budget request, its dump cross-checked
# against `skycmd decide` like the example's.
run_budget_crosscheck() {
    echo "== cross-check of a body's budgets (bindings/tools/budget-request.json)"
    local d="$work/dumps-budget" rc=0 langs=() l
    mkdir -p "$d"
    "$build/skycmd" decide "$SKYCMD_TEST_MODEL" "$budget_request" --f32 > "$d/cli.json" 2>/dev/null || rc=1
    export SKYCMD_EXAMPLE_REQUEST="$budget_request" SKYCMD_DUMP_DIR="$d"
    for l in go java node rust python; do want "$l" && langs+=("$l"); done
    for l in "${langs[@]}"; do
        case $l in
        go) (cd "$here/go" && go test -count=1 -run '^TestExampleRequest$' ./skycmd) ;;
        java) (cd "$here/java" && mvn -B -q ${MVN_FLAGS:-} test -Dtest='SkycmdTest#exampleRequestAnswered' \
                  -Dsurefire.failIfNoSpecifiedTests=false) ;;
        node) (cd "$here/node" && node --test --test-name-pattern='the example request is answered' test/skycmd.test.js) ;;
        rust) (cd "$here/rust" && cargo test --offline -q -p skycmd --test api example_request_answered) ;;
        python) (cd "$work" && "$work/python-venv/bin/python" -m pytest -p no:cacheprovider -q -k test_example_request \
                    "$here/python/tests") ;;
        esac > "$work/budget-$l.log" 2>&1 || { rc=1; echo "$l: its example test failed on the budget request"; tail -n 20 "$work/budget-$l.log"; }
    done
    export SKYCMD_EXAMPLE_REQUEST="$root/examples/flappy-drone.json" SKYCMD_DUMP_DIR="$work/dumps"
    node "$here/tools/crosscheck.js" "$d" "${langs[@]}" || rc=1
    summary budget-crosscheck "$([ $rc -eq 0 ] && echo PASS || echo FAIL)"
}

run_crosscheck() {
    echo "== cross-check against 'skycmd decide'"
    local langs=() l
    for l in go java node rust python; do want "$l" && langs+=("$l"); done
    node "$here/tools/crosscheck.js" "$work/dumps" "${langs[@]}"
    summary crosscheck "$([ $? -eq 0 ] && echo PASS || echo FAIL)"
}

run_valgrind() {
    echo "== valgrind C-level open/decide/close loop (bindings/tools/leak_loop.c)"
    if ! command -v valgrind >/dev/null; then summary valgrind "SKIPPED (no valgrind)"; return; fi
    ${CC:-cc} -O1 -g -Wall -Werror $(pkg-config --cflags skycmd) "$here/tools/leak_loop.c" \
        -o "$work/leak_loop" $(pkg-config --libs skycmd) || { summary valgrind FAIL; return; }
    valgrind --quiet --leak-check=full --show-leak-kinds=all --errors-for-leak-kinds=all --error-exitcode=9 \
        "$work/leak_loop" "$SKYCMD_TEST_MODEL" "$SKYCMD_EXAMPLE_REQUEST" 20 > "$work/valgrind.log" 2>&1
    local rc=$?
    cat "$work/valgrind.log"
    summary valgrind "$([ $rc -eq 0 ] && echo 'PASS (0 errors, no leaks, 20 rounds)' || echo FAIL)"
}

for s in generated go java node rust python crosscheck valgrind; do
    want "$s" && "run_$s"
    [ "$s" = crosscheck ] && want crosscheck && run_budget_crosscheck
done

echo "== bindings summary"
status=0
for s in generated go java node rust python crosscheck budget-crosscheck valgrind; do
    want "${s#budget-}" || continue
    echo "$s: ${result[$s]}"
    case "${result[$s]}" in PASS*|SKIPPED*) ;; *) status=1 ;; esac
done
exit $status
