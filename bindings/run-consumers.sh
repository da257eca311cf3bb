#!/usr/bin/env bash
# run-consumers.sh - use each binding the way a stranger would: from a new project created
# outside this repository, installed the documented way, with no SWIG on PATH, against
# libskycmd installed into a prefix (`cmake --install BUILD --prefix P`, found only through
# PKG_CONFIG_PATH=P/lib/pkgconfig). Each consumer answers the example request on a random
# s1-pico and writes its typed answers in the cross-check's dump format; the answers must
# equal `skycmd decide`'s (bindings/tools/crosscheck.js).
#
# usage: bindings/run-consumers.sh [--build-dir DIR] [LANG...]   (default: every
#        bindings/<lang>/consumer-test.sh)
#
# The contract of bindings/<lang>/consumer-test.sh WORKDIR (WORKDIR: an empty directory
# outside the repository, for the consumer project and its caches):
#   env SKYCMD_REPO        the repository (the binding's sources are taken from here only
#                          the documented way: npm pack, a go.mod replace, a Cargo path, ...)
#       SKYCMD_PREFIX      the installed library; PKG_CONFIG_PATH=$SKYCMD_PREFIX/lib/pkgconfig
#       SKYCMD_CONSUMER_MODEL, SKYCMD_CONSUMER_REQUEST   the model and the example request
#       SKYCMD_CONSUMER_DUMP  where the consumer writes its dump (LANG.txt)
#   LD_LIBRARY_PATH is unset; a consumer that needs the prefix's library at run time sets
#   it itself, as a user of a prefix install would (Rust `bundled` and Java must not).
#   Prints what it does and exits 0 on success.
# Prints each consumer's result and one summary line "N passed, N failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build="$root/build"
langs=()
while [ $# -gt 0 ]; do
    case "$1" in
        --build-dir) build=$(realpath -m "$2"); shift 2 ;;
        -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
        *) langs+=("$1"); shift ;;
    esac
done
if [ ${#langs[@]} -eq 0 ]; then
    for f in "$here"/*/consumer-test.sh; do
        [ -f "$f" ] && langs+=("$(basename "$(dirname "$f")")")
    done
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/skycmd-consumers.XXXXXX")
trap 'rm -rf "$work"' EXIT
case "$work" in "$root"/*) echo "run-consumers.sh: the scratch directory must lie outside the repository"; exit 1 ;; esac

echo "== install the library into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" >/dev/null || { echo "cmake --install failed"; exit 1; }
mkdir -p "$work/dumps"
"$build/skycmd" random s1-pico "$work/s1-pico.gguf" >/dev/null || exit 1
# --f32: the bindings open models with the library's default (SKYCMD_WEIGHTS_F32), while the
# CLI's default is bf16x3 (AMX-BF16 tiles where the CPU has them): compare the same mode
"$build/skycmd" decide "$work/s1-pico.gguf" "$root/examples/flappy-drone.json" --f32 > "$work/dumps/cli.json" || exit 1

# No SWIG: drop every PATH entry that holds one (the CI venv has it).
clean_path=
IFS=: read -r -a entries <<< "$PATH"
for d in "${entries[@]}"; do
    [ -n "$d" ] && [ ! -x "$d/swig" ] && [ ! -x "$d/swig4.0" ] && clean_path=${clean_path:+$clean_path:}$d
done

pass=0 fail=0 ok_langs=()
for l in "${langs[@]}"; do
    echo "== consumer: $l"
    script="$here/$l/consumer-test.sh"
    if [ ! -f "$script" ]; then echo "-- $l: no $script"; fail=$((fail + 1)); continue; fi
    mkdir -p "$work/$l"
    if env -u LD_LIBRARY_PATH -u SWIG PATH="$clean_path" \
        SKYCMD_REPO="$root" SKYCMD_PREFIX="$work/prefix" \
        PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" \
        SKYCMD_CONSUMER_MODEL="$work/s1-pico.gguf" \
        SKYCMD_CONSUMER_REQUEST="$root/examples/flappy-drone.json" \
        SKYCMD_CONSUMER_DUMP="$work/dumps/$l.txt" \
        bash -c 'if command -v swig >/dev/null; then echo "swig is on PATH"; exit 1; fi; exec bash "$0" "$1"' \
            "$script" "$work/$l"; then
        if [ -s "$work/dumps/$l.txt" ]; then
            echo "-- $l: PASS"; pass=$((pass + 1)); ok_langs+=("$l")
        else
            echo "-- $l: FAIL (no dump written)"; fail=$((fail + 1))
        fi
    else
        echo "-- $l: FAIL"; fail=$((fail + 1))
    fi
done

if [ ${#ok_langs[@]} -gt 0 ]; then
    echo "== cross-check of the consumers' answers against 'skycmd decide'"
    if node "$here/tools/crosscheck.js" "$work/dumps" "${ok_langs[@]}"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
    fi
fi
echo "consumers: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
