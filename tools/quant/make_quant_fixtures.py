#!/usr/bin/env python3
"""Fixtures of `skycmd quantize` (tests/test_quant.c), made with gguf-py only.

in-f32.gguf      a small decision-model-shaped GGUF (F32 everywhere; names, metadata and
                 shapes as the converter writes them) with values that exercise Q8_0 edge
                 cases: zero blocks, ties at .5, -127/127 extremes, a row of 48 (no Q8_0).
expect-q8_0.gguf the same file re-typed by the type policy with gguf-py's Q8_0 quantizer
                 (bit-exact ggml quantize_row_q8_0_ref) and F16 conversion (numpy):
                 1-D -> F32; head (blk.N with N >= block_count - decision.block_count,
                 token_types.*, cls.*) -> F32; token_embd.weight -> F16; other matrices ->
                 Q8_0 unless ne0 % 32 != 0 -> F16.
Versions: gguf==0.19.0, numpy==2.4.6 (tools/golden/requirements.txt).
"""
import os
import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.quants import quantize

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures", "quant")
ARCH = "modern-bert"
D, I, V, NL, NH = 64, 48, 96, 2, 1   # I = 48: ffn_down rows (ne0 = I) do not split into 32


def tensors():
    rng = np.random.default_rng(20261129)
    t = []
    def mat(name, rows, cols, scale=0.05):
        w = (rng.standard_normal((rows, cols)) * scale).astype(np.float32)
        t.append((name, w))
        return w
    emb = mat("token_embd.weight", V, D)
    t.append(("token_embd_norm.weight", np.ones(D, np.float32)))
    for i in range(NL):
        if i > 0:
            t.append((f"blk.{i}.attn_norm.weight", (1 + 0.1 * rng.standard_normal(D)).astype(np.float32)))
        w = mat(f"blk.{i}.attn_qkv.weight", 3 * D, D)
        if i == 0:
            w[0, :32] = 0.0                      # an all-zero block: d = 0
            w[1, :32] = np.arange(32) - 15.5     # exact .5 ties after scaling
            w[1, 0] = 127.0
            w[2, 5] = 40.0                       # a massive column value
        mat(f"blk.{i}.attn_output.weight", D, D)
        t.append((f"blk.{i}.ffn_norm.weight", np.ones(D, np.float32)))
        mat(f"blk.{i}.ffn_up.weight", 2 * I, D)
        mat(f"blk.{i}.ffn_down.weight", D, I)
    t.append(("output_norm.weight", np.ones(D, np.float32)))
    for j in range(NH):
        b = NL + j
        t.append((f"blk.{b}.attn_norm.weight", np.ones(D, np.float32)))
        t.append((f"blk.{b}.attn_norm.bias", np.zeros(D, np.float32)))
        mat(f"blk.{b}.attn_qkv.weight", 3 * D, D)
        t.append((f"blk.{b}.attn_qkv.bias", np.zeros(3 * D, np.float32)))
        mat(f"blk.{b}.ffn_up.weight", 4 * D, D)
    mat("token_types.weight", 3, D)
    mat("cls.weight", D, D)
    mat("cls.output.weight", 1, D)
    t.append(("cls.output.bias", np.zeros(1, np.float32)))
    return t


def policy(name, arr, qtype):
    if arr.ndim < 2:
        return T.F32
    if name.startswith("token_types.") or name.startswith("cls."):
        return T.F32
    if name.startswith("blk.") and int(name.split(".")[1]) >= NL:
        return T.F32
    if name == "token_embd.weight" and qtype == T.Q8_0:
        return T.F16
    if qtype == T.Q8_0 and arr.shape[-1] % 32 != 0:
        return T.F16
    return qtype


def write(path, ts, retype, file_type):
    w = gguf.GGUFWriter(path, ARCH)
    w.add_name("quant-fixture")
    w.add_uint32("general.file_type", file_type)
    w.add_uint32(f"{ARCH}.block_count", NL + NH)
    w.add_uint32(f"{ARCH}.decision.block_count", NH)
    w.add_uint32(f"{ARCH}.embedding_length", D)
    w.add_float32(f"{ARCH}.attention.layer_norm_epsilon", 1e-5)
    w.add_array("skycmd.test.array", [1, 2, 3])
    w.add_string("skycmd.test.text", "métadonnées gardées")
    for name, arr in ts:
        ty = retype(name, arr)
        if ty == T.F32:
            w.add_tensor(name, arr)
        elif ty == T.F16:
            w.add_tensor(name, arr.astype(np.float16))
        else:
            q = quantize(arr, T.Q8_0)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=T.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    os.makedirs(HERE, exist_ok=True)
    ts = tensors()
    write(os.path.join(HERE, "in-f32.gguf"), ts, lambda n, a: T.F32, 0)
    write(os.path.join(HERE, "expect-q8_0.gguf"), ts, lambda n, a: policy(n, a, T.Q8_0), 7)
    write(os.path.join(HERE, "expect-f16.gguf"), ts, lambda n, a: policy(n, a, T.F16), 1)


if __name__ == "__main__":
    main()
