#!/usr/bin/env bash
# consumer-test.sh WORKDIR - the Python binding used the way a stranger would (the contract is
# in bindings/run-consumers.sh): a fresh venv of the system python3, `pip wheel` of
# bindings/python against the libskycmd that PKG_CONFIG_PATH finds (libskycmd.a linked in),
# `pip install` of that wheel, then a script outside the repository answers the example
# request (also opened with open_async, and streamed with decide_each and decide_each_async)
# and writes its dump. No LD_LIBRARY_PATH: the extension carries libskycmd, cJSON and
# utf8proc inside (its NEEDED entries are printed and must name none of them).
# Then the wheel is repaired into a manylinux wheel (repair-wheel.sh: auditwheel, pinned) and
# installed into a second venv; both wheels are run with the system's libcjson and
# libutf8proc hidden (bind-mounted over in a private mount namespace, where unshare is
# allowed): their dumps must equal the first one.
set -euo pipefail
work=$1
: "${SKYCMD_REPO:?}" "${SKYCMD_CONSUMER_MODEL:?}" "${SKYCMD_CONSUMER_REQUEST:?}" "${SKYCMD_CONSUMER_DUMP:?}"
py=${PYTHON:-/usr/bin/python3}
[ -x "$py" ] || py=python3
unset LD_LIBRARY_PATH

echo "-- $("$py" --version) -m venv $work/venv"
"$py" -m venv "$work/venv"
echo "-- pip wheel \$SKYCMD_REPO/bindings/python -w $work/dist"
"$work/venv/bin/pip" wheel -q "$SKYCMD_REPO/bindings/python" -w "$work/dist"
wheel=$(ls "$work"/dist/skycmd-*.whl)
echo "-- pip install $(basename "$wheel")"
"$work/venv/bin/pip" install -q "$wheel"

mkdir -p "$work/app"
cat > "$work/app/answer.py" <<'PY'
"""A consumer of the installed skycmd wheel: answer a request, write the cross-check dump."""
import asyncio
import json
import os
import struct
import sys

import skycmd


def bits(v):
    return "%016x" % struct.unpack("<Q", struct.pack("<d", v))[0]


with open(os.environ["SKYCMD_CONSUMER_REQUEST"], encoding="utf-8") as f:
    request = json.load(f)
with skycmd.Model.open(os.environ["SKYCMD_CONSUMER_MODEL"]) as model:
    response = model.decide(request)
    # the stream: one item per request, a bad one is its own error and the stream goes on
    streamed = list(model.decide_each([request, "{", request]))
assert [type(x) for x in streamed] == [skycmd.Response, skycmd.JsonError, skycmd.Response], streamed
assert streamed[0].json == response.json == streamed[2].json


async def open_and_stream():
    model = await skycmd.Model.open_async(os.environ["SKYCMD_CONSUMER_MODEL"])
    with model:
        return [item async for item in model.decide_each_async([request, request], group=1)]
assert [r.json for r in asyncio.run(open_and_stream())] == [response.json] * 2
lines = ["input_tokens %d" % response.input_tokens]
for a in response.values():
    conf = "none" if a.confidence is None else bits(a.confidence)
    lines.append("answer %s %s choice=%s value=%s confidence=%s"
                 % (a.id, a.type, a.choice or "", bits(a.value), conf))
    lines.extend("option %s %s" % (o.key, bits(o.probability)) for o in a.options)
with open(os.environ["SKYCMD_CONSUMER_DUMP"], "w") as f:
    f.write("\n".join(lines) + "\n")
print("skycmd", skycmd.__version__, "from", os.path.dirname(skycmd.__file__))
print("model %s: %s" % (response.model, ", ".join(
    "%s=%s" % (qid, a.choice if a.choice is not None else round(a.value, 4))
    for qid, a in response.items())))
print("decide_each: %s" % ", ".join(type(x).__name__ for x in streamed))
# The built-in model: the wheel has libskycmd inside its extension, so the library looks in
# its configured data directory (the prefix's is found only through SKYCMD_DEFAULT_MODEL).
try:
    print("built-in model:", skycmd.default_model_path())
except FileNotFoundError as e:
    print("built-in model: not found (%s)" % type(e).__name__)
if os.path.realpath(skycmd.__file__).startswith(os.path.realpath(os.environ["SKYCMD_REPO"]) + os.sep):
    sys.exit("skycmd was imported from the repository, not from the installed wheel")
PY
ext=$("$work/venv/bin/python" -c 'import skycmd._skycmd as m; print(m.__file__)')
echo "-- NEEDED of $(basename "$ext"):"
readelf -d "$ext" | sed -n 's/.*(NEEDED) *Shared library: \[\(.*\)\]/   \1/p'
if readelf -d "$ext" | grep -Eq 'libskycmd|libcjson|libutf8proc'; then
    echo "the extension needs a shared libskycmd, libcjson or libutf8proc"; exit 1
fi
echo "-- exported: $(nm -D --defined-only "$ext" | awk '{print $NF}' | tr '\n' ' ')"
cd "$work/app"
"$work/venv/bin/python" answer.py

echo "-- manylinux: repair-wheel.sh $(basename "$wheel")"
repaired=$(PYTHON="$py" bash "$SKYCMD_REPO/bindings/python/repair-wheel.sh" "$wheel" "$work/wheelhouse" | tail -n1)
echo "   $(basename "$repaired"): $(cd "$work" && "$py" -m zipfile -l "$repaired" | awk '/\.so/ {print $1}' | tr '\n' ' ')"
"$py" -m venv "$work/venv-manylinux"
"$work/venv-manylinux/bin/pip" install -q "$repaired"
hide=
for lib in libcjson.so.1 libutf8proc.so.2; do
    # (awk reads to the end: an early exit would make ldconfig die of SIGPIPE, and pipefail
    # would then end this script without a word)
    f=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ && f == "" {f = $NF} END {print f}')
    [ -n "$f" ] && hide="$hide mount --bind /dev/null $(readlink -f "$f") &&"
done
run_repaired="SKYCMD_CONSUMER_DUMP=$work/manylinux.txt $work/venv-manylinux/bin/python answer.py"
if [ -n "$hide" ] && unshare --mount --propagation private true 2>/dev/null; then
    echo "   run with libcjson and libutf8proc hidden (private mount namespace)"
    if unshare --mount --propagation private bash -c "$hide $work/venv/bin/python -c 'import ctypes; ctypes.CDLL(\"libcjson.so.1\")'" 2>/dev/null; then
        echo "   libcjson.so.1 still loads there: the libraries are not hidden"; exit 1
    fi
    echo "   the plain wheel (cJSON and utf8proc linked in):"
    unshare --mount --propagation private bash -c "$hide SKYCMD_CONSUMER_DUMP=$work/plain-hidden.txt $work/venv/bin/python answer.py"
    cmp "$SKYCMD_CONSUMER_DUMP" "$work/plain-hidden.txt"
    echo "   the manylinux wheel:"
    unshare --mount --propagation private bash -c "$hide $run_repaired"
else
    echo "   unshare is not allowed here: run with the system libraries present"
    bash -c "$run_repaired"
fi
cmp "$SKYCMD_CONSUMER_DUMP" "$work/manylinux.txt"
echo "   the manylinux wheel's answers equal the plain wheel's"
