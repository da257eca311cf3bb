#!/usr/bin/env python3
"""compare.py WASM.jsonl NATIVE.jsonl [TOL] - compare two streams of skycmd responses, one
JSON object per line (the WASI driver's output against native `skycmd decide`'s): the same
answers (ids, types, choices, option keys), usage.input_tokens identical, and every
probability, score, noul and confidence within TOL (default 1e-5). Errors must match by
status name. Prints the largest difference and one line per mismatch; exit 1 on any."""
import json
import sys


def walk(a, b, path, tol, bad, worst):
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            bad.append(f"{path}: keys {sorted(a)} != {sorted(b)}")
            return
        for k in a:
            walk(a[k], b[k], f"{path}.{k}", tol, bad, worst)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            bad.append(f"{path}: {len(a)} items != {len(b)}")
            return
        for i, (x, y) in enumerate(zip(a, b)):
            walk(x, y, f"{path}[{i}]", tol, bad, worst)
    elif isinstance(a, bool) or isinstance(b, bool) or isinstance(a, str) or a is None:
        if a != b:
            bad.append(f"{path}: {a!r} != {b!r}")
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
        exact = path.endswith("input_tokens") or path.endswith("output_tokens") or \
            isinstance(a, int) and isinstance(b, int)
        d = abs(a - b)
        if exact and a != b:
            bad.append(f"{path}: {a} != {b}")
        elif not exact:
            worst[0] = max(worst[0], d)
            if d > tol:
                bad.append(f"{path}: {a} vs {b} (|d| {d:.3g} > {tol:g})")
    else:
        bad.append(f"{path}: {a!r} != {b!r}")


def main():
    wasm = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
    native = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
    tol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
    bad, worst = [], [0.0]
    if len(wasm) != len(native):
        bad.append(f"{len(wasm)} responses != {len(native)}")
    for i, (a, b) in enumerate(zip(wasm, native)):
        if "error" in a or "error" in b:
            if a.get("error") != b.get("error"):
                bad.append(f"[{i}]: error {a.get('error')!r} != {b.get('error')!r}")
            continue
        walk(a, b, f"[{i}]", tol, bad, worst)
    for m in bad[:15]:
        print("  mismatch " + m)
    print(f"compare: {len(native)} responses, max |d| {worst[0]:.3g}, {len(bad)} mismatches")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
