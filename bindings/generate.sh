#!/usr/bin/env bash
# generate.sh - regenerate the committed SWIG wrappers of the Go and Node bindings from
# bindings/swig/skycmd.i and include/skycmd.h, with the pinned SWIG of the CI venv
# (.venv-ci/bin/swig, swig==4.5.1 from tools/requirements-ci.txt; $SWIG overrides it).
#
# usage: bindings/generate.sh           rewrite the generated files in place
#        bindings/generate.sh --check   regenerate into a scratch directory and fail (exit 1,
#                                       with a diff summary) if a committed file is stale
#
# Outputs (committed, so users of the bindings never need SWIG):
#   bindings/go/internal/raw/skycmd.go, bindings/go/internal/raw/skycmd_wrap.c
#   bindings/node/src/skycmd_wrap.cxx
# SWIG runs from the repository root with relative paths, so the output does not depend on
# where the checkout lives.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
check=0
case "${1:-}" in
    --check) check=1 ;;
    "") ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
esac
swig=${SWIG:-$root/.venv-ci/bin/swig}
if [ ! -x "$swig" ] && ! command -v "$swig" >/dev/null; then
    echo "generate.sh: no SWIG at $swig (run tools/setup.sh, or set SWIG)"; exit 1
fi
want="SWIG Version 4.5.1"
got=$("$swig" -version | grep -o 'SWIG Version [0-9.]*')
if [ "$got" != "$want" ]; then
    echo "generate.sh: $swig is $got; the committed wrappers are made with $want"; exit 1
fi

cd "$root"
out=$(mktemp -d "${TMPDIR:-/tmp}/skycmd-generate.XXXXXX")
trap 'rm -rf "$out"' EXIT
mkdir -p "$out/go" "$out/node"
"$swig" -go -cgo -intgosize 64 -package raw -Iinclude -outdir "$out/go" \
    -o "$out/go/skycmd_wrap.c" bindings/swig/skycmd.i
"$swig" -javascript -napi -Iinclude -o "$out/node/skycmd_wrap.cxx" bindings/swig/skycmd.i

pairs=("go/skycmd.go:bindings/go/internal/raw/skycmd.go"
       "go/skycmd_wrap.c:bindings/go/internal/raw/skycmd_wrap.c"
       "node/skycmd_wrap.cxx:bindings/node/src/skycmd_wrap.cxx")
stale=0
for p in "${pairs[@]}"; do
    fresh="$out/${p%%:*}" committed="${p#*:}"
    if [ $check -eq 1 ]; then
        if ! cmp -s "$fresh" "$committed"; then
            echo "stale: $committed (regenerate with bindings/generate.sh)"
            if [ -f "$committed" ]; then
                diff -u "$committed" "$fresh" > "$out/diff" || true
                head -n 20 "$out/diff"
            fi
            stale=1
        fi
    else
        mkdir -p "$(dirname "$committed")"
        cp "$fresh" "$committed"
        echo "wrote $committed"
    fi
done
if [ $check -eq 1 ]; then
    [ $stale -eq 0 ] && echo "generated wrappers: up to date (${#pairs[@]} files, $want)"
    exit $stale
fi
