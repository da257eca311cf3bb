#!/usr/bin/env bash
# repair-wheel.sh WHEEL OUTDIR - `auditwheel repair` (pinned in requirements-repair.txt, in a
# throw-away venv) of a wheel from `pip wheel bindings/python`: the result is tagged
# manylinux_2_X for the oldest glibc its symbols allow and carries libcjson and libutf8proc in
# skycmd.libs/ (libskycmd itself is already linked in), so it runs where they are absent.
# Prints the repaired wheel's path on the last line.
set -euo pipefail
wheel=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
tools=$(mktemp -d "${TMPDIR:-/tmp}/skycmd-auditwheel.XXXXXX")
trap 'rm -rf "$tools"' EXIT
"$py" -m venv "$tools/venv"
"$tools/venv/bin/pip" install -q -r "$here/requirements-repair.txt"
# The lowest manylinux tag the wheel is consistent with (auditwheel show names it).
plat=$("$tools/venv/bin/auditwheel" show "$wheel" 2>/dev/null | grep -o 'manylinux_[0-9]*_[0-9]*_x86_64' | tail -n1)
[ -n "$plat" ] || { echo "repair-wheel.sh: auditwheel finds no manylinux tag for $wheel"; exit 1; }
mkdir -p "$out"
PATH="$tools/venv/bin:$PATH" "$tools/venv/bin/auditwheel" repair --plat "$plat" -w "$out" "$wheel" >"$tools/repair.log" 2>&1 || { cat "$tools/repair.log"; exit 1; }
ls "$out"/skycmd-*"$plat"*.whl
