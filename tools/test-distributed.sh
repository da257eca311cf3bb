#!/usr/bin/env bash
# test-distributed.sh - skycmd.spark (PySpark local[2]) and skycmd.ray (Ray Data, one node) on
# the built-in model s1-pico-flappy: answers equal to `skycmd decide --batch` row for row, a
# failed task / a dead actor retried with no row lost or doubled, bad rows with their error.
#
# usage: tools/test-distributed.sh [--build-dir DIR] [--venv DIR] [--fresh] [--states N]
#   --build-dir  the library's build tree (default build/, as tools/test-all.sh leaves it;
#                configured if missing, and built here:
#                skycmd, skycmd_cli, skycmd_static)
#   --venv       the venv with tools/requirements-distributed.txt (default .venv-dist; made
#                if missing, pip's cache makes a new one cheap); --fresh makes it anew
#   --states N   states of the equality and retry tests (default 20000, the issue's number)
# The whole pytest session runs in a private network namespace with only loopback up
# (`unshare -n`, root): Ray binds the machine's own address otherwise; Spark is bound to
# 127.0.0.1 as well. The wheel is built as bindings/run-tests.sh's python suite builds it.
# The JVM function (bindings/java/spark) is built against PySpark's own jars, over the Java
# binding (bindings/java/target/classes; compiled with Maven when missing).
# Prints one line "distributed: N passed, M failed"; exit status 1 on any failure.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
venv="$root/.venv-dist"
fresh=0
states=20000
while [ $# -gt 0 ]; do
    case "$1" in
        --build-dir) build=$(realpath -m "$2"); shift 2 ;;
        --venv) venv=$(realpath -m "$2"); shift 2 ;;
        --fresh) fresh=1; shift ;;
        --states) states=$2; shift 2 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done
fail() { echo "test-distributed: $*" >&2; echo "distributed: 0 passed, 1 failed"; exit 1; }

export PKG_CONFIG_PATH="$root/.deps/mhd/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null || fail "cmake configure"
fi
cmake --build "$build" -j2 --target skycmd skycmd_cli skycmd_static skycmd_package_files >/dev/null ||
    fail "cmake --build $build"

py=${PYTHON:-python3}
[ $fresh -eq 1 ] && rm -rf "$venv"
if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv" || fail "python venv"
fi
"$venv/bin/pip" install -q --disable-pip-version-check -r "$root/tools/requirements-distributed.txt" ||
    fail "pip install -r tools/requirements-distributed.txt"

work=$(mktemp -d "${TMPDIR:-/tmp}/skycmd-distributed.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The wheel the documented way: pip wheel against an installed prefix (libskycmd.a linked in).
(cmake --install "$build" --prefix "$work/prefix" --component dev >/dev/null &&
    cmake --install "$build" --prefix "$work/prefix" --component runtime >/dev/null &&
    PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" "$venv/bin/pip" wheel -q --no-deps \
        --disable-pip-version-check "$root/bindings/python" -w "$work/dist" >/dev/null &&
    "$venv/bin/pip" install -q --no-deps --force-reinstall --disable-pip-version-check \
        "$work"/dist/skycmd-*.whl) || fail "the skycmd wheel"

# The Java binding's classes and JNI library, for the JVM function (tests/distributed/
# test_spark_jvm.py): what bindings/run-tests.sh java leaves, else compiled here with Maven.
java_classes=$root/bindings/java/target/classes
if ! ls "$java_classes"/native/*/libskycmd_jni.* >/dev/null 2>&1; then
    command -v mvn >/dev/null || fail "no Maven to build the Java binding (tools/setup.sh --all installs it)"
    (cd "$root/bindings/java" && PKG_CONFIG_PATH="$build/pkgconfig:$PKG_CONFIG_PATH" \
        mvn -B -q -DskipTests compile >"$work/mvn.log" 2>&1) || { tail -n 30 "$work/mvn.log"; fail "mvn compile (bindings/java)"; }
fi

command -v unshare >/dev/null || fail "no unshare (util-linux)"
# pytest outside the source tree, so `import skycmd` is the installed wheel.
(cd "$work" && SKYCMD_DIST_STATES=$states SKYCMD_DIST_CLI="$build/skycmd" \
    unshare -n sh -c '"$0" "$1/loopback_up.py" && exec "$0" -m pytest -p no:cacheprovider -q \
        -W ignore::DeprecationWarning -W ignore::FutureWarning -W ignore::UserWarning \
        "$1"' "$venv/bin/python" "$root/tests/distributed") > "$work/pytest.log" 2>&1
rc=$?
grep -vE '^\[Stage [0-9]+:|^\s*$' "$work/pytest.log" | grep -E '^(FAILED|ERROR)|Error|^[=_]+ ' | head -40
line=$(grep -E '^(=+ )?[0-9]+ (passed|failed|error).* in [0-9.]+s' "$work/pytest.log" | tail -n1)
echo "${line//=/}"
[ $rc -ne 0 ] && [ -z "$line" ] && tail -n 30 "$work/pytest.log"
count() { echo "$line" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' || echo 0; }
passed=$(count passed); failed=$(( $(count failed) + $(count error) ))
skipped=$(count skipped)
[ $rc -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
[ "$passed" -eq 0 ] && [ "$failed" -eq 0 ] && failed=1
if [ "$skipped" -gt 0 ]; then
    echo "distributed: $passed passed, $failed failed, $skipped skipped"
else
    echo "distributed: $passed passed, $failed failed"
fi
[ "$failed" -eq 0 ] && [ "$skipped" -eq 0 ]
