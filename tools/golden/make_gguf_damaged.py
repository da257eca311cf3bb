#!/usr/bin/env python3
"""Regenerate the damaged-GGUF corpus tests/fixtures/gguf/damaged/ from the valid fixtures
(basic.gguf, align64.gguf made by make_gguf_fixtures.py) plus a few files crafted from
scratch. Standard library only.

Each file is one defect; manifest.json maps file -> a substring the reader's error message
must contain, so the test checks that the message names the right problem (and, through
"byte offset" in most expectations, where it is). The same files seed the fuzzer
(tests/fuzz/corpus/gguf/).

Run with:  python3 tools/golden/make_gguf_damaged.py
"""
import json
import os
import shutil
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures", "gguf")
OUT = os.path.join(FIX, "damaged")
FUZZ = os.path.join(ROOT, "tests", "fuzz", "corpus", "gguf")

FIXED = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def layout(buf):
    """Offsets of every field of a valid little-endian GGUF file."""
    n_t, n_kv = struct.unpack_from("<QQ", buf, 8)
    off = 24
    kvs = []

    def skip(t, off):
        if t in FIXED:
            return off + FIXED[t]
        if t == 8:
            (n,) = struct.unpack_from("<Q", buf, off)
            return off + 8 + n
        et, n = struct.unpack_from("<IQ", buf, off)
        off += 12
        for _ in range(n):
            off = skip(et, off)
        return off

    for _ in range(n_kv):
        (kl,) = struct.unpack_from("<Q", buf, off)
        key = bytes(buf[off + 8:off + 8 + kl]).decode()
        toff = off + 8 + kl
        (t,) = struct.unpack_from("<I", buf, toff)
        end = skip(t, toff + 4)
        kvs.append({"key": key, "off": off, "type_off": toff, "val_off": toff + 4, "type": t,
                    "end": end})
        off = end
    tis = []
    for _ in range(n_t):
        (nl,) = struct.unpack_from("<Q", buf, off)
        name = bytes(buf[off + 8:off + 8 + nl]).decode()
        nd_off = off + 8 + nl
        (nd,) = struct.unpack_from("<I", buf, nd_off)
        ne_off = nd_off + 4
        ne = list(struct.unpack_from("<%dQ" % nd, buf, ne_off))
        ty_off = ne_off + 8 * nd
        (ty, rel) = struct.unpack_from("<IQ", buf, ty_off)
        tis.append({"name": name, "off": off, "nd_off": nd_off, "ne_off": ne_off, "ne": ne,
                    "type_off": ty_off, "type": ty, "rel_off": ty_off + 4, "rel": rel,
                    "end": ty_off + 12})
        off = ty_off + 12
    return {"kvs": kvs, "tis": tis, "info_end": off}


def gguf_bytes(kvs, tensors=(), version=3, alignment=32):
    """Craft a file: kvs = [(key, type, payload_bytes)], tensors = [(name, ne, type, rel)]."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)))
    for k, t, payload in kvs:
        kb = k.encode()
        out += struct.pack("<Q", len(kb)) + kb + struct.pack("<I", t) + payload
    for name, ne, ty, rel in tensors:
        nb = name.encode()
        out += struct.pack("<Q", len(nb)) + nb + struct.pack("<I", len(ne))
        out += struct.pack("<%dQ" % len(ne), *ne) + struct.pack("<IQ", ty, rel)
    out += b"\0" * ((-len(out)) % alignment)
    return out


def main():
    basic = bytearray(open(os.path.join(FIX, "basic.gguf"), "rb").read())
    a64 = bytearray(open(os.path.join(FIX, "align64.gguf"), "rb").read())
    L = layout(basic)
    L64 = layout(a64)
    kv = {k["key"]: k for k in L["kvs"]}
    ti = L["tis"]
    data_off = (L["info_end"] + 31) // 32 * 32
    cases = []

    def add(name, data, expect, what):
        cases.append((name, bytes(data), expect, what))

    def patched(src, off, fmt, *vals):
        b = bytearray(src)
        struct.pack_into(fmt, b, off, *vals)
        return b

    def cut(n, n_kv=None, n_t=None):
        """The first n bytes, with the counts made small enough to pass the quick size
        check so that the reader reaches the truncated field itself."""
        b = bytearray(basic[:n])
        if n_t is not None:
            struct.pack_into("<Q", b, 8, n_t)
        if n_kv is not None:
            struct.pack_into("<Q", b, 16, n_kv)
        return b

    # --- header ---
    add("empty", b"", "no magic", "empty file")
    add("trunc_magic", basic[:2], "only 2 bytes", "truncated inside the magic")
    add("bad_magic", b"GGUX" + basic[4:], "bad magic", "wrong magic")
    add("trunc_version", basic[:6], "version truncated", "truncated inside the version")
    add("version1", patched(basic, 4, "<I", 1), "version 1", "GGUF v1")
    add("version4", patched(basic, 4, "<I", 4), "unsupported GGUF version 4", "future version")
    add("version_big_endian", patched(basic, 4, ">I", 3), "big-endian", "big-endian file")
    add("trunc_counts", basic[:16], "counts truncated", "truncated inside the counts")
    add("n_kv_huge", patched(basic, 16, "<Q", 1 << 62), "metadata key count", "lying key count")
    add("n_tensors_huge", patched(basic, 8, "<Q", (1 << 64) - 1), "tensor count",
        "lying tensor count")
    add("n_kv_plus_one", patched(basic, 16, "<Q", len(L["kvs"]) + 1), "tensor #0",
        "key count one too many: the tensor table is read as metadata")
    add("n_tensors_plus_one", patched(basic, 8, "<Q", len(ti) + 1), "tensor #",
        "tensor count one too many")
    # --- metadata ---
    k0 = L["kvs"][1]
    add("trunc_in_key_counts_kept", basic[:k0["off"] + 10], "cannot fit",
        "truncated inside a key, counts as in the full file")
    add("trunc_in_key", cut(k0["off"] + 10, 2, 0), "runs past the end", "truncated inside a key")
    add("trunc_before_type", cut(k0["type_off"], 2, 0), "value type truncated",
        "truncated between a key and its type")
    add("trunc_in_value", cut(kv["test.u64"]["val_off"] + 3, 12, 0), "u64 value truncated",
        "truncated inside a scalar value")
    add("key_len_huge", patched(basic, k0["off"], "<Q", (1 << 64) - 1), "string length",
        "huge key length")
    add("str_len_huge", patched(basic, kv["general.name"]["val_off"], "<Q", 1 << 60),
        "string length", "huge string value length")
    add("str_len_past_end", patched(basic, kv["general.name"]["val_off"], "<Q", len(basic)),
        "runs past the end", "string length one file long")
    add("value_type_unknown", patched(basic, kv["test.u8"]["type_off"], "<I", 13),
        "unknown value type 13", "unknown value type")
    add("arr_u8_count_huge", patched(basic, kv["test.arr_u8"]["val_off"] + 4, "<Q", 1 << 61),
        "array of", "lying u8 array count")
    add("arr_i32_count_overflow",
        patched(basic, kv["test.arr_i32"]["val_off"] + 4, "<Q", (1 << 64) - 1),
        "array of", "array count whose byte size overflows")
    add("arr_str_count_huge",
        patched(basic, kv["tokenizer.ggml.tokens"]["val_off"] + 4, "<Q", 1 << 40),
        "cannot fit", "lying string array count")
    add("arr_str_elem_len_huge",
        patched(basic, kv["tokenizer.ggml.tokens"]["val_off"] + 12, "<Q", 1 << 50),
        "string length", "huge string inside an array")
    add("arr_elem_type_unknown",
        patched(basic, kv["test.arr_u8"]["val_off"], "<I", 99),
        "unknown array element type 99", "unknown array element type")
    add("arr_nested_inner_count_huge",
        patched(basic, kv["test.arr_nested"]["val_off"] + 12 + 4, "<Q", 1 << 62),
        "array of", "lying count of a nested array")
    add("bool_value_2", patched(basic, kv["test.bool_true"]["val_off"], "<B", 2),
        "bool value 2", "bool that is neither 0 nor 1")
    dup = bytearray(basic)
    io = kv["test.i8"]["off"] + 8
    dup[io:io + 7] = b"test.u8"
    add("dup_key", dup, "duplicate", "the same key twice")
    bad = bytearray(basic)
    bad[kv["test.u16"]["off"] + 8] = 0xFF
    add("key_bad_utf8", bad, "not valid UTF-8", "key that is not UTF-8")
    add("key_empty", patched(basic, k0["off"], "<Q", 0), "is empty", "empty key")
    deep = struct.pack("<I", 9)  # element type of the outer array: array
    payload = b""
    inner = struct.pack("<IQ", 4, 1) + struct.pack("<I", 7)
    for _ in range(10):
        inner = struct.pack("<IQ", 9, 1) + inner
    payload = inner
    add("nested_too_deep", gguf_bytes([("test.deep", 9, payload)]), "nested deeper",
        "arrays nested 11 deep")
    # --- alignment ---
    al = [k for k in L64["kvs"] if k["key"] == "general.alignment"][0]
    add("alignment_48", patched(a64, al["val_off"], "<I", 48), "power of two",
        "alignment that is not a power of two")
    add("alignment_0", patched(a64, al["val_off"], "<I", 0), "power of two", "alignment 0")
    add("alignment_type_i32", patched(a64, al["type_off"], "<I", 5), "expected u32",
        "alignment stored as i32")
    add("alignment_4096", patched(a64, al["val_off"], "<I", 4096), "data section",
        "alignment larger than the file: data section moves past the end")
    # --- tensor table ---
    t0, t1 = ti[0], ti[1]
    add("trunc_tensor_table_start", basic[:ti[0]["off"]], "tensor #0",
        "truncated at the start of the tensor table")
    add("trunc_in_tensor_name", basic[:t1["off"] + 12], "runs past the end",
        "truncated inside a tensor name")
    add("trunc_in_tensor_dims", basic[:t1["ne_off"] + 4], "truncated",
        "truncated inside a tensor's dims")
    add("trunc_after_tensor_table", basic[:L["info_end"]], "data section",
        "truncated right after the tensor table (no data)")
    add("tensor_name_len_huge", patched(basic, t1["off"], "<Q", 1 << 63), "string length",
        "huge tensor name length")
    add("n_dims_5", patched(basic, t0["nd_off"], "<I", 5), "n_dims 5", "five dimensions")
    add("n_dims_0", patched(basic, t0["nd_off"], "<I", 0), "n_dims 0", "zero dimensions")
    add("dim_zero", patched(basic, t0["ne_off"], "<Q", 0), "ne[0] = 0", "a zero-sized dim")
    add("dim_negative", patched(basic, t0["ne_off"] + 8, "<Q", (1 << 64) - 5), "ne[1]",
        "a dim that is negative as int64")
    add("dims_overflow", patched(patched(basic, t0["ne_off"], "<Q", 1 << 40), t0["ne_off"] + 8,
                                 "<Q", 1 << 40), "overflows", "element count overflow")
    q8 = [t for t in ti if t["type"] == 8][0]
    add("q8_row_not_32", patched(basic, q8["ne_off"], "<Q", 48), "multiple of 32",
        "Q8_0 rows of 48 elements")
    dupt = bytearray(basic)
    dupt[t1["off"] + 8:t1["off"] + 8 + 16] = t0["name"].encode()
    add("dup_tensor_name", dupt, "duplicate tensor name", "the same tensor name twice")
    add("offset_past_end", patched(basic, t1["rel_off"], "<Q", 1 << 20), "past the end",
        "tensor offset past the end of the file")
    add("offset_huge", patched(basic, t1["rel_off"], "<Q", (1 << 64) - 32), "past the end",
        "tensor offset near 2^64")
    last = ti[-1]
    add("data_past_end", patched(basic, last["rel_off"], "<Q", len(basic) - data_off - 32),
        "run past the end", "tensor data running past the end")
    add("offset_misaligned", patched(basic, t1["rel_off"], "<Q", t1["rel"] + 4),
        "not a multiple of the alignment", "tensor offset not aligned")
    add("overlap", patched(basic, t1["rel_off"], "<Q", 96), "overlap", "overlapping tensors")
    add("overlap_same_offset", patched(basic, ti[2]["rel_off"], "<Q", t1["rel"]), "overlap",
        "two tensors at the same offset")
    add("trunc_in_data", basic[:data_off + 200], "run past the end",
        "truncated inside the tensor data")
    add("trunc_last_byte", basic[:-1] if len(basic) - 1 >= data_off + last["rel"] + 96 else
        basic[:data_off + last["rel"] + 95], "run past the end",
        "last tensor one byte short")
    # Truncations at every section boundary (each key and each tensor-table entry).
    for i, k in enumerate(L["kvs"][1:], 1):
        add("trunc_at_kv_%02d" % i, cut(k["off"], i + 1, 0), "metadata key #%d" % i,
            "truncated just before key %d" % i)
    for i, t in enumerate(ti[1:], 1):
        add("trunc_at_tensor_%02d" % i, basic[:t["off"]], "tensor #%d" % i,
            "truncated just before tensor %d" % i)

    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    manifest = []
    for name, data, expect, what in cases:
        with open(os.path.join(OUT, name + ".gguf"), "wb") as fh:
            fh.write(data)
        manifest.append({"file": name + ".gguf", "expect": expect, "what": what})
    with open(os.path.join(OUT, "manifest.json"), "w") as fh:
        json.dump(manifest, fh, indent=1)
    # Seeds for the fuzzer: the valid files and every damaged one.
    if os.path.isdir(FUZZ):
        shutil.rmtree(FUZZ)
    os.makedirs(FUZZ)
    for f in ("basic.gguf", "align64.gguf", "basic_v2.gguf", "ours_writer.gguf"):
        if os.path.exists(os.path.join(FIX, f)):
            shutil.copy(os.path.join(FIX, f), os.path.join(FUZZ, f))
    for name, data, _, _ in cases:
        if data:
            with open(os.path.join(FUZZ, "damaged_" + name + ".gguf"), "wb") as fh:
                fh.write(data)
    print("%d damaged files in %s" % (len(cases), OUT))


if __name__ == "__main__":
    main()
