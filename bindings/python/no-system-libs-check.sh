#!/usr/bin/env bash
# no-system-libs-check.sh WHEEL MODEL REQUEST - the plain wheel (`pip wheel bindings/python`,
# no auditwheel) needs neither libcjson nor libutf8proc: setup.py links static cJSON and
# utf8proc into its extension beside libskycmd.a.
#
# 1. In a private mount namespace (`unshare --mount`: root, or where user namespaces allow it)
#    an empty file (/dev/null) is bind-mounted over every libcjson.so*, libutf8proc.so* and
#    libskycmd.so* under /usr/lib and /usr/local/lib; that they are hidden is checked (the
#    loader can no longer open libcjson.so.1 and libutf8proc.so.2).
# 2. There a fresh venv is made, the wheel pip-installed into it (no index: the wheel has no
#    dependencies), and MODEL opened as the built-in model ($SKYCMD_DEFAULT_MODEL,
#    Model.open_default) answers REQUEST: every question answered, and decide_each gives the
#    same answers.
# 3. Outside, `ldd` and the NEEDED entries of the installed extension name neither library.
# Exit status 0 when all hold, 1 when one does not, 77 when no mount namespace can be made
# here (the check did not run; bindings/run-tests.sh reports that as a failure unless
# SKYCMD_ALLOW_NO_UNSHARE=1). About 10 s.
set -euo pipefail
wheel=$(realpath "${1:?usage: no-system-libs-check.sh WHEEL MODEL REQUEST}")
model=$(realpath "${2:?usage: no-system-libs-check.sh WHEEL MODEL REQUEST}")
request=$(realpath "${3:?usage: no-system-libs-check.sh WHEEL MODEL REQUEST}")
py=${PYTHON:-python3}
unset LD_LIBRARY_PATH PYTHONPATH

if ! unshare --mount --propagation private true 2>/dev/null; then
    echo "no-system-libs-check: cannot make a private mount namespace here (unshare --mount): not run"
    exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/skycmd-nolibs.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Every such file (a symlink stands for its target; each target once).
hidden=$(find /usr/lib /usr/local/lib \( -name 'libcjson.so*' -o -name 'libutf8proc.so*' \
             -o -name 'libskycmd.so*' \) \( -type f -o -type l \) -exec readlink -f {} + 2>/dev/null |
         sort -u)
echo "-- hidden in the namespace: $(echo $hidden)"

cat > "$work/answer.py" <<'PY'
"""Run inside the namespace by the fresh venv's python: the built-in model answers."""
import ctypes
import json
import sys

for lib in ("libcjson.so.1", "libutf8proc.so.2"):
    try:
        ctypes.CDLL(lib)
    except OSError:
        continue
    sys.exit(f"{lib} still loads: it is not hidden, the check proves nothing")

import skycmd

with open(sys.argv[1], encoding="utf-8") as f:
    request = json.load(f)
with skycmd.Model.open_default(threads=1) as model:
    r = model.decide(request)
    assert list(r) == list(request["questions"]), (list(r), list(request["questions"]))
    streamed = list(model.decide_each([request, "{", request], group=2))
assert [type(x).__name__ for x in streamed] == ["Response", "JsonError", "Response"], streamed
assert streamed[0].json == r.json and streamed[2].json == r.json
print("   %s from %s: %s" % (r.model, skycmd.default_model_path(), ", ".join(
    "%s=%s" % (k, a.choice if a.choice is not None else round(a.value, 4)) for k, a in r.items())))
print("   " + skycmd.__file__)
PY

mounts=""
for f in $hidden; do mounts="$mounts mount --bind /dev/null '$f' &&"; done
echo "-- $("$py" --version) -m venv, pip install $(basename "$wheel"), answer (libraries hidden)"
unshare --mount --propagation private bash -c "set -e; $mounts true
    '$py' -m venv '$work/venv'
    '$work/venv/bin/pip' install -q --no-index --no-deps '$wheel'
    cd '$work' && SKYCMD_DEFAULT_MODEL='$model' '$work/venv/bin/python' answer.py '$request'"

ext=$("$work/venv/bin/python" -c 'import skycmd._skycmd as m; print(m.__file__)')
needed=$(readelf -d "$ext" | sed -n 's/.*(NEEDED) *Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "-- NEEDED of $(basename "$ext"): $needed"
echo "-- ldd:"
ldd "$ext" | sed 's/^/   /'
if ldd "$ext" | grep -Eq 'libcjson|libutf8proc|libskycmd' || echo "$needed" | grep -Eq 'libcjson|libutf8proc|libskycmd'; then
    echo "no-system-libs-check: FAIL: the extension still needs a shared libcjson, libutf8proc or libskycmd"
    exit 1
fi
echo "no-system-libs-check: PASS: the plain wheel installs and answers without libcjson and libutf8proc"
