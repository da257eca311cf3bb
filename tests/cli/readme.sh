#!/usr/bin/env bash
# readme.sh - README's quick start shows what `tools/run-example.sh` prints (`skycmd decide
# --pretty examples/flappy-drone.json` on the built-in model), abridged with `...` lines.
# Every line it shows must be a line of the real output, in order: the same text, the
# numbers within 1e-4 (the last digits depend on the CPU's kernels, AVX-512, AVX2, NEON or AMX);
# a `...` line stands for one or more lines left out. So the README cannot drift from the
# program. (The tolerance is 1e-4, not tighter: on a CPU with AMX the default mode is bf16x3,
# within 1e-4 of the f32 path, and CI's machines differ.) Usage: readme.sh <cli> <source_dir> <binary_dir>
set -u
CLI=$1
SRC=$2
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
out=$("$CLI" decide --pretty "$SRC/examples/flappy-drone.json") || { echo "FAIL: decide"; exit 1; }
OUT=$out python3 - "$SRC/README.md" <<'PY'
import os, re, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
# the first code block after the quick start's "It asks three questions" paragraph
start = next(k for k, l in enumerate(lines) if l.startswith("It asks three questions"))
open_ = next(k for k in range(start, len(lines)) if lines[k].startswith("```"))
close = next(k for k in range(open_ + 1, len(lines)) if lines[k].startswith("```"))
shown = lines[open_ + 1:close]
real = os.environ["OUT"].split("\n")
NUM = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")

def same(a, b):
    if NUM.sub("#", a) != NUM.sub("#", b):
        return False
    return all(abs(float(x) - float(y)) <= 1e-4 * max(1.0, abs(float(x)))
               for x, y in zip(NUM.findall(a), NUM.findall(b)))

r, skipping, bad = 0, False, []
for s in shown:
    if s.strip() == "...":
        skipping = True
        continue
    if skipping:
        k = r
        while k < len(real) and not same(s, real[k]):
            k += 1
        if k == r or k == len(real):
            bad.append("'...' before %r does not stand for lines of the output" % s)
            break
        r, skipping = k, False
    if r >= len(real) or not same(s, real[r]):
        bad.append("README shows %r where the program prints %r" % (s, real[r] if r < len(real) else "<end>"))
        break
    r += 1
if not bad and r != len(real) and not skipping:
    bad.append("README's output stops at line %d of %d" % (r, len(real)))
if bad:
    print("FAIL: README quick start output: " + bad[0])
    sys.exit(1)
print("README quick start: %d lines shown, %d printed, they agree" % (len(shown), len(real)))
PY
