#!/usr/bin/env python3
"""Regenerate the GGUF reference fixtures in tests/fixtures/gguf/ with the pinned `gguf`
package (llama.cpp's own Python reader/writer; gguf==0.19.0, numpy==2.4.6).

Run with:  /opt/gvenv/bin/python tools/golden/make_gguf_fixtures.py

What it writes (all committed so that CI needs no Python):
  basic.gguf / basic.json      GGUFWriter output, default alignment 32: every scalar type,
                               strings, arrays (u8, i32, f32, bool, string, nested), tensors
                               F32/F16/BF16/Q8_0; the JSON lists the expected keys, types,
                               values and every tensor's dims, type, absolute data offset and
                               bytes (hex), as GGUFReader reads them back.
  align64.gguf / align64.json  same idea with general.alignment = 64.
  basic_v2.gguf                basic.gguf with the version field set to 2 (v2 and v3 share the
                               little-endian layout), so the v2 path is exercised.
  conv_input.f32.bin           fixed random f32 values (plus crafted edge cases)
  conv_f16.bin, conv_bf16.bin  gguf.quants.quantize(..., F16 / BF16) of them
  conv_q8_0.bin                gguf.quants.quantize(..., Q8_0) of the finite part
  conv_q8_0_deq.f32.bin        gguf.quants.dequantize of that
  ours_writer.check.json       the result of reading ours_writer.gguf (written by OUR writer,
                               see tests/test_gguf_writer.c) with GGUFReader and comparing it
                               with the recipe below.
The damaged-file corpus is made by make_gguf_damaged.py from basic.gguf.
"""
import hashlib
import json
import os
import struct
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as QT, GGUFValueType as VT
from gguf import quants

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "gguf")

assert gguf.__version__ if hasattr(gguf, "__version__") else True

VT_NAME = {VT.UINT8: "u8", VT.INT8: "i8", VT.UINT16: "u16", VT.INT16: "i16",
           VT.UINT32: "u32", VT.INT32: "i32", VT.FLOAT32: "f32", VT.BOOL: "bool",
           VT.STRING: "string", VT.ARRAY: "array", VT.UINT64: "u64", VT.INT64: "i64",
           VT.FLOAT64: "f64"}


def f32_bits(x):
    return "%08x" % struct.unpack("<I", struct.pack("<f", x))[0]


def f64_bits(x):
    return "%016x" % struct.unpack("<Q", struct.pack("<d", x))[0]


def enc_scalar(t, v):
    """JSON form of one scalar: integers as decimal strings (exact for u64), floats as
    their bit patterns, strings as UTF-8 hex (exact bytes), bools as 0/1."""
    if t in (VT.FLOAT32,):
        return f32_bits(v)
    if t == VT.FLOAT64:
        return f64_bits(v)
    if t == VT.STRING:
        return (v.encode("utf-8") if isinstance(v, str) else bytes(v)).hex()
    if t == VT.BOOL:
        return "1" if v else "0"
    return str(int(v))


def parse_value(buf, off, t):
    """An independent little parser for the expected JSON, used only to describe nested
    arrays, which GGUFReader flattens. Returns (json_value, new_off)."""
    if t == VT.ARRAY:
        et, n = struct.unpack_from("<IQ", buf, off)
        off += 12
        items = []
        for _ in range(n):
            v, off = parse_value(buf, off, VT(et))
            items.append(v)
        return {"elem": VT_NAME[VT(et)], "items": items}, off
    if t == VT.STRING:
        (n,) = struct.unpack_from("<Q", buf, off)
        return bytes(buf[off + 8:off + 8 + n]).hex(), off + 8 + n
    fmt = {VT.UINT8: "<B", VT.INT8: "<b", VT.UINT16: "<H", VT.INT16: "<h", VT.UINT32: "<I",
           VT.INT32: "<i", VT.FLOAT32: "<f", VT.BOOL: "<B", VT.UINT64: "<Q", VT.INT64: "<q",
           VT.FLOAT64: "<d"}[t]
    (v,) = struct.unpack_from(fmt, buf, off)
    return enc_scalar(t, v), off + struct.calcsize(fmt)


def describe(path):
    """What GGUFReader sees in a file, in the JSON form the C tests compare against."""
    r = gguf.GGUFReader(path)
    raw = open(path, "rb").read()
    keys = []
    for name, f in r.fields.items():
        if name.startswith("GGUF."):
            continue
        t = f.types[0]
        entry = {"key": name, "type": VT_NAME[t]}
        if t == VT.ARRAY:
            # GGUFReader flattens nested arrays; walk the bytes at the field's offset for the
            # structure and check the flattened leaves against GGUFReader's contents().
            off = f.offset + 8 + len(name.encode()) + 4
            val, _ = parse_value(raw, off, VT.ARRAY)
            leaves = []

            def walk(v):
                if isinstance(v, dict):
                    for it in v["items"]:
                        walk(it)
                else:
                    leaves.append(v)
            walk(val)
            sub = f.types[-1]
            flat = f.contents()
            assert [enc_scalar(sub, x) for x in flat] == leaves, name
            entry["value"] = val
        else:
            entry["value"] = enc_scalar(t, f.contents())
        keys.append(entry)
    tensors = []
    for t in r.tensors:
        data = np.asarray(t.data).tobytes()
        tensors.append({
            "name": t.name,
            "ne": [int(x) for x in t.field.parts[3].tolist()],  # ggml order as stored
            "type": int(t.tensor_type),
            "data_offset": int(t.data_offset),
            "nbytes": int(t.n_bytes),
            "n_elements": int(t.n_elements),
            "hex": data.hex(),
        })
    ver = int(r.fields["GGUF.version"].contents())
    align = r.alignment
    return {"file": os.path.basename(path), "version": ver, "alignment": int(align),
            "size": len(raw), "keys": keys, "tensors": tensors,
            "gguf_package": "gguf==0.19.0"}


def rng_matrix(seed, shape, scale=1.0):
    g = np.random.default_rng(seed)
    return (g.standard_normal(shape) * scale).astype(np.float32)


def write_basic(path, alignment=None):
    w = gguf.GGUFWriter(path, "modern-bert")
    if alignment:
        w.add_custom_alignment(alignment)
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 65000)
    w.add_int16("test.i16", -32000)
    w.add_uint32("modern-bert.block_count", 3)
    w.add_int32("test.i32", -2000000000)
    w.add_float32("modern-bert.decision.temperature.choice.2", 1.0647699)
    w.add_bool("test.bool_true", True)
    w.add_bool("test.bool_false", False)
    w.add_string("general.name", "skycmd-fixture \u00e9\u4e2d\U0001F600")
    w.add_uint64("test.u64", 18446744073709551615)
    w.add_int64("test.i64", -9223372036854775807)
    w.add_float64("test.f64", 3.141592653589793)
    w.add_key_value("test.arr_u8", [1, 2, 3, 250], VT.ARRAY, sub_type=VT.UINT8)
    w.add_array("test.arr_i32", [-1, 0, 1, 2147483647, -2147483648])
    w.add_array("test.arr_f32", [0.5, -1.25, 3.0e-8])
    w.add_array("test.arr_bool", [True, False, True])
    w.add_array("tokenizer.ggml.tokens", ["[CLS]", "[SEP]", "\u0120the", "a\"b\\c", "\n", "x" * 40,
                                           "tok6", "tok7", "tok8", "tok9"])
    w.add_array("test.arr_nested", [[1, 2, 3], [4], [5, 6]])
    w.add_array("test.arr_nested_str", [["a", "bc"], ["def"]])
    # Tensors: ggml dims are the reverse of numpy's shape.
    a = rng_matrix(1, (4, 8))                                   # ne = [8, 4]
    w.add_tensor("blk.0.f32.weight", a)
    b = rng_matrix(2, (3, 5)).astype(np.float16)                # ne = [5, 3], odd size: padding
    w.add_tensor("blk.0.f16.weight", b)
    c = rng_matrix(3, (2, 16))
    w.add_tensor("blk.0.bf16.weight", quants.quantize(c, QT.BF16), raw_dtype=QT.BF16)
    d = rng_matrix(4, (3, 64))
    w.add_tensor("blk.0.q8.weight", quants.quantize(d, QT.Q8_0), raw_dtype=QT.Q8_0)
    e = rng_matrix(5, (7,))
    w.add_tensor("output_norm.bias", e)
    f = rng_matrix(6, (2, 2, 2, 3))
    w.add_tensor("test.4d", f)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_conversions():
    g = np.random.default_rng(1234)
    parts = [
        g.standard_normal(2048).astype(np.float32),
        (g.standard_normal(512) * 1e-5).astype(np.float32),   # f16 subnormal range
        (g.standard_normal(512) * 3e4).astype(np.float32),    # near the f16 max
        g.uniform(-1, 1, 512).astype(np.float32),
    ]
    # Crafted Q8_0 blocks: an all-zero block; a block with amax 127 so that id = 1 and
    # x.5 values test roundf's ties-away-from-zero; tiny values.
    z = np.zeros(32, np.float32)
    ties = np.array([127.0] + [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, -3.5] * 3 +
                    [126.5, -126.5, 0.0, 64.5, -64.5, 100.49, -100.51], np.float32)
    assert ties.size == 32
    tiny = np.full(32, 1e-30, np.float32)
    finite = np.concatenate(parts + [z, ties, tiny])
    assert finite.size % 32 == 0
    # f16/bf16 edge cases (not used for Q8_0): halfway points, overflow, inf, nan, -0.
    specials = np.array([65504.0, 65519.99, 65520.0, 70000.0, -65520.0, np.inf, -np.inf,
                         np.nan, -0.0, 0.0, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26,
                         2.0 ** -14, 1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11,
                         1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, 3.4e38, -3.4e38,
                         1e-40, -1e-45], np.float32)
    allv = np.concatenate([finite, specials])
    with open(os.path.join(OUT, "conv_input.f32.bin"), "wb") as fh:
        fh.write(allv.astype("<f4").tobytes())
    with open(os.path.join(OUT, "conv_f16.bin"), "wb") as fh:
        fh.write(quants.quantize(allv, QT.F16).tobytes())
    with open(os.path.join(OUT, "conv_bf16.bin"), "wb") as fh:
        fh.write(quants.quantize(allv, QT.BF16).tobytes())
    q = quants.quantize(finite, QT.Q8_0)
    with open(os.path.join(OUT, "conv_q8_0.bin"), "wb") as fh:
        fh.write(q.tobytes())
    with open(os.path.join(OUT, "conv_q8_0_deq.f32.bin"), "wb") as fh:
        fh.write(quants.dequantize(q, QT.Q8_0).astype("<f4").tobytes())
    with open(os.path.join(OUT, "conv.json"), "w") as fh:
        json.dump({"n_all": int(allv.size), "n_q8_0": int(finite.size),
                   "gguf_package": "gguf==0.19.0", "numpy": np.__version__}, fh, indent=1)


# The recipe of ours_writer.gguf: tests/test_gguf_writer.c builds exactly this file with our
# writer. Keep the two in step.
def ours_writer_expectation():
    ramp = np.arange(64 * 2, dtype=np.float32) / 16.0 - 4.0
    return {
        "keys": [
            ("general.architecture", VT.STRING, "modern-bert"),
            ("general.name", VT.STRING, "ours"),
            ("test.u32", VT.UINT32, 7),
            ("test.i32", VT.INT32, -7),
            ("test.u64", VT.UINT64, 1 << 40),
            ("test.f32", VT.FLOAT32, 0.25),
            ("test.bool", VT.BOOL, True),
            ("test.arr_i32", VT.ARRAY, [1, -2, 3]),
            ("tokenizer.ggml.tokens", VT.ARRAY, ["a", "bb", "ccc"]),
            ("general.alignment", VT.UINT32, 32),
        ],
        "tensors": [
            ("t.f32", [64, 2], QT.F32, ramp.astype("<f4").tobytes()),
            ("t.f16", [64, 2], QT.F16, ramp.astype("<f2").tobytes()),
            ("t.bf16", [64, 2], QT.BF16, quants.quantize(ramp, QT.BF16).tobytes()),
            ("t.q8", [64, 2], QT.Q8_0, quants.quantize(ramp.reshape(2, 64), QT.Q8_0).tobytes()),
            ("t.odd", [3], QT.F32, ramp[:3].astype("<f4").tobytes()),
        ],
    }


def check_ours_writer():
    path = os.path.join(OUT, "ours_writer.gguf")
    result = {"file": "ours_writer.gguf", "reader": "gguf.GGUFReader (gguf==0.19.0)"}
    if not os.path.exists(path):
        result.update(ok=False, problems=["ours_writer.gguf missing: run test_gguf_writer first"])
        return result
    raw = open(path, "rb").read()
    result["sha256"] = hashlib.sha256(raw).hexdigest()
    h = 1469598103934665603
    for byte in raw:
        h = ((h ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    result["fnv1a64"] = "%016x" % h
    problems = []
    r = gguf.GGUFReader(path)
    exp = ours_writer_expectation()
    got_keys = [(n, f) for n, f in r.fields.items() if not n.startswith("GGUF.")]
    if [n for n, _ in got_keys] != [k for k, _, _ in exp["keys"]]:
        problems.append("key order/names differ: %r" % [n for n, _ in got_keys])
    for (name, t, v) in exp["keys"]:
        f = r.fields.get(name)
        if f is None:
            problems.append("missing key " + name)
            continue
        if f.types[0] != t:
            problems.append("%s: type %s" % (name, f.types[0]))
            continue
        got = f.contents()
        if t == VT.FLOAT32:
            ok = f32_bits(got) == f32_bits(v)
        else:
            ok = got == v
        if not ok:
            problems.append("%s: value %r != %r" % (name, got, v))
    if r.alignment != 32:
        problems.append("alignment %r" % r.alignment)
    if len(r.tensors) != len(exp["tensors"]):
        problems.append("tensor count %d" % len(r.tensors))
    for t, (name, ne, ty, data) in zip(r.tensors, exp["tensors"]):
        if t.name != name:
            problems.append("tensor name %s != %s" % (t.name, name))
        if [int(x) for x in t.field.parts[3].tolist()] != ne:
            problems.append("%s: dims %r" % (name, t.field.parts[3].tolist()))
        if int(t.tensor_type) != int(ty):
            problems.append("%s: type %r" % (name, t.tensor_type))
        if np.asarray(t.data).tobytes() != data:
            problems.append("%s: data bytes differ" % name)
        if t.data_offset % 32:
            problems.append("%s: data offset %d not aligned" % (name, t.data_offset))
    result["ok"] = not problems
    result["problems"] = problems
    result["n_keys"] = len(got_keys)
    result["n_tensors"] = len(r.tensors)
    return result


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, al in (("basic", None), ("align64", 64)):
        p = os.path.join(OUT, name + ".gguf")
        write_basic(p, al)
        with open(os.path.join(OUT, name + ".json"), "w") as fh:
            json.dump(describe(p), fh, indent=1)
    raw = bytearray(open(os.path.join(OUT, "basic.gguf"), "rb").read())
    struct.pack_into("<I", raw, 4, 2)
    open(os.path.join(OUT, "basic_v2.gguf"), "wb").write(raw)
    write_conversions()
    res = check_ours_writer()
    with open(os.path.join(OUT, "ours_writer.check.json"), "w") as fh:
        json.dump(res, fh, indent=1)
    print("ours_writer.gguf read by GGUFReader:", "OK" if res.get("ok") else res)
    return 0 if res.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
