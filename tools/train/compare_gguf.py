"""Compare two GGUF files tensor by tensor (the reproducibility check of tools/train/train.py).

    python3 tools/train/compare_gguf.py models/s1-pico-flappy.gguf /tmp/rerun/s1-pico-flappy.gguf
        [--laya models/s1-pico-flappy.laya /tmp/rerun/s1-pico-flappy.laya]

Prints, per tensor, whether its bytes are equal and otherwise the largest absolute difference
of its values; then whether the whole files (metadata included) are equal. With --laya it does
the same for the two checkpoints' model.safetensors. Exit status 0 when every tensor is bit for
bit equal, 1 when some differ, 2 on a file it cannot read.

Needs only numpy (in tools/train/requirements.txt): the GGUF reader below is self-contained and
reads the v3 layout (docs/compat.md), treating the bytes as untrusted (every length is bounded
by the file's size).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import struct
import sys

import numpy as np

# ggml types this project writes (F32, F16, Q8_0), with their numpy view for a value compare
_DTYPES = {0: np.float32, 1: np.float16}
_BLOCK = {0: (1, 4), 1: (1, 2), 8: (32, 34)}  # type -> (values per block, bytes per block)
# GGUF metadata value types -> struct format (strings and arrays handled apart)
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


class Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError("truncated at byte %d (wanted %d more)" % (self.pos, n))
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def unpack(self, fmt: str):
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))[0]

    def string(self) -> str:
        return self.take(self.unpack("Q")).decode("utf-8")

    def value(self, vtype: int):
        if vtype in _SCALARS:
            return self.unpack(_SCALARS[vtype])
        if vtype == 8:
            return self.string()
        if vtype == 9:
            item, count = self.unpack("I"), self.unpack("Q")
            if count > len(self.data):
                raise ValueError("array of %d items in a %d-byte file" % (count, len(self.data)))
            return [self.value(item) for _ in range(count)]
        raise ValueError("unknown metadata type %d" % vtype)


def read_gguf(path: str):
    """(metadata dict, {name: (type, shape, bytes)})."""
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    if r.take(4) != b"GGUF":
        raise ValueError("%s: not a GGUF file" % path)
    version = r.unpack("I")
    if version != 3:
        raise ValueError("%s: GGUF version %d (3 expected)" % (path, version))
    n_tensors, n_kv = r.unpack("Q"), r.unpack("Q")
    if n_tensors > len(data) or n_kv > len(data):
        raise ValueError("%s: implausible counts" % path)
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.unpack("I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.unpack("Q") for _ in range(r.unpack("I"))]
        infos.append((name, dims, r.unpack("I"), r.unpack("Q")))
    align = int(meta.get("general.alignment", 32))
    base = (r.pos + align - 1) // align * align
    tensors = {}
    for name, dims, ttype, offset in infos:
        if ttype not in _BLOCK:
            raise ValueError("%s: tensor %s has type %d this script does not size" % (path, name, ttype))
        per, nbytes = _BLOCK[ttype]
        count = int(np.prod(dims)) if dims else 1
        size = count // per * nbytes
        if base + offset + size > len(data):
            raise ValueError("%s: tensor %s runs past the end of the file" % (path, name))
        tensors[name] = (ttype, dims, data[base + offset:base + offset + size])
    return meta, tensors


def max_abs_diff(ttype: int, a: bytes, b: bytes) -> float:
    if ttype in _DTYPES:
        x = np.frombuffer(a, _DTYPES[ttype]).astype(np.float64)
        y = np.frombuffer(b, _DTYPES[ttype]).astype(np.float64)
        return float(np.max(np.abs(x - y))) if x.size else 0.0
    return float("nan")  # quantized blocks: bytes only


def compare_gguf(a_path: str, b_path: str) -> int:
    meta_a, ta = read_gguf(a_path)
    meta_b, tb = read_gguf(b_path)
    differ = 0
    for name in sorted(set(ta) | set(tb)):
        if name not in ta or name not in tb:
            print("%-40s only in %s" % (name, a_path if name in ta else b_path))
            differ += 1
            continue
        (t1, d1, b1), (t2, d2, b2) = ta[name], tb[name]
        if (t1, d1) != (t2, d2):
            print("%-40s type/shape differ: %s %s vs %s %s" % (name, t1, d1, t2, d2))
            differ += 1
        elif b1 != b2:
            print("%-40s DIFFERS, max |diff| %.3g" % (name, max_abs_diff(t1, b1, b2)))
            differ += 1
    meta_same = json.dumps(meta_a, sort_keys=True) == json.dumps(meta_b, sort_keys=True)
    with open(a_path, "rb") as f:
        ha = hashlib.sha256(f.read()).hexdigest()
    with open(b_path, "rb") as f:
        hb = hashlib.sha256(f.read()).hexdigest()
    print("gguf: %d tensors, %d differ; metadata %s; files %s (sha256 %s%s)" % (
        len(ta), differ, "equal" if meta_same else "DIFFER", "byte for byte equal" if ha == hb else "DIFFER",
        ha, "" if ha == hb else " vs " + hb))
    return differ


def compare_safetensors(a_path: str, b_path: str) -> int:
    from safetensors.numpy import load_file
    a, b = load_file(a_path), load_file(b_path)
    differ = 0
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b or a[name].shape != b[name].shape or a[name].dtype != b[name].dtype:
            print("%-40s missing or of another shape/dtype" % name)
            differ += 1
        elif a[name].tobytes() != b[name].tobytes():
            print("%-40s DIFFERS, max |diff| %.3g" % (
                name, float(np.max(np.abs(a[name].astype(np.float64) - b[name].astype(np.float64))))))
            differ += 1
    print("safetensors: %d tensors, %d differ" % (len(a), differ))
    return differ


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--laya", nargs=2, metavar=("A_DIR", "B_DIR"),
                    help="also compare the two Laya checkpoints' model.safetensors")
    args = ap.parse_args()
    try:
        differ = compare_gguf(args.a, args.b)
        if args.laya:
            differ += compare_safetensors(args.laya[0] + "/model.safetensors", args.laya[1] + "/model.safetensors")
    except (OSError, ValueError, UnicodeDecodeError) as e:
        print("compare_gguf: %s" % e, file=sys.stderr)
        return 2
    print("bit for bit equal" if differ == 0 else "NOT bit for bit equal")
    return 0 if differ == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
