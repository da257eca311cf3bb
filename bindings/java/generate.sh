#!/usr/bin/env bash
# generate.sh [--check] - the one producer of the Java binding's SWIG output, which is
# committed so that building the binding (`mvn install`) never needs SWIG:
#   src/generated/java/org/skycmd/internal/*.java   the JNI proxy classes
#   src/generated/jni/skycmd_wrap.c                 the JNI C wrapper
# from bindings/java/skycmd_java.i (Java's own typemaps and helpers around the shared
# bindings/swig/skycmd.i) and include/skycmd.h. Run it after changing either file and
# commit the result. --check regenerates into a temporary directory and fails (exit 1, with
# a diff) if the committed output is stale; CI runs it (bindings/run-tests.sh java).
# env: SWIG (default: the CI venv's .venv-ci/bin/swig, then swig on PATH). It must be the
# pinned SWIG 4.5.1 (tools/requirements-ci.txt), as for bindings/generate.sh (Go, Node):
# another version writes different files.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
swig=${SWIG:-}
if [ -z "$swig" ]; then
    if [ -x "$root/.venv-ci/bin/swig" ]; then swig=$root/.venv-ci/bin/swig; else swig=swig; fi
fi
check=0
[ "${1:-}" = "--check" ] && check=1

want=4.5.1
version=$("$swig" -version 2>/dev/null | sed -n 's/^SWIG Version //p' || true)
if [ "$version" != "$want" ]; then
    echo "generate.sh: need SWIG $want (pip install swig==$want); $swig is '${version:-missing}'"
    exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/java/org/skycmd/internal" "$tmp/jni"
# Run from the repository root with relative paths, so that no absolute path of this
# checkout ends up in the output.
(cd "$root" && "$swig" -java -package org.skycmd.internal -Iinclude -Ibindings/swig \
    -outdir "$tmp/java/org/skycmd/internal" -o "$tmp/jni/skycmd_wrap.c" bindings/java/skycmd_java.i)

out=$here/src/generated
if [ $check -eq 1 ]; then
    if diff -ru "$out" "$tmp" > "$tmp.diff" 2>&1; then
        rm -f "$tmp.diff"
        echo "generate.sh --check: the committed SWIG output is current (SWIG $version)"
        exit 0
    fi
    head -n 60 "$tmp.diff"
    rm -f "$tmp.diff"
    echo "generate.sh --check: bindings/java/src/generated is stale; run bindings/java/generate.sh and commit"
    exit 1
fi
rm -rf "$out"
mkdir -p "$out"
cp -r "$tmp/java" "$tmp/jni" "$out/"
echo "generate.sh: wrote $out (SWIG $version)"
