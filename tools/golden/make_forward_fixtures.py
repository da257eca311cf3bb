#!/usr/bin/env python3
"""Forward-pass fixtures for tests/test_model.c, produced by the Python reference.

Builds two small decision models in PyTorch -- transformers' ModernBertModel as the encoder
and laya's own DecisionModel as the head -- fills them with fixed random weights, writes them
to GGUF with the `gguf` package's GGUFWriter (llama.cpp tensor names, spec 6.1/6.2), runs
DecisionModel.forward in fp32 on a few sequences and stores ids, markers and raw scorer
logits as text fixtures. The C forward pass must reproduce these logits.

  fx-a: d=64, 2 encoder heads (head_dim 32) but max(1, 64/64) = 1 decision head, 4 encoder
        layers with global attention every 3 (layers 1, 2 local), window 16, 2 head layers,
        every tensor F32, feed_forward_length written as a per-block array.
  fx-b: d=128, 4 encoder heads (head_dim 32), 2 decision heads, 2 encoder layers with global
        attention every 2 (layer 1 local), window 32, 1 head layer; encoder matrices F16, head qkv BF16,
        head ffn_up Q8_0, the rest F32; feed_forward_length a scalar; no freq_base_swa key
        (the local base then defaults to 10000).

Where a weight is stored in a lossy type the reference runs on the dequantized values, so
the fixture stays an exact fp32 reference for the file's contents.

Sequences of 5, 70 and 200 tokens (the last two exceed the sliding window) in every
question type. Run: /opt/gvenv/bin/python tools/golden/make_forward_fixtures.py
Pinned: torch==2.15.0, transformers==5.23.0, laya==0.4.15, gguf==0.19.0, numpy==2.4.6.
"""
import os
import sys

import numpy as np
import torch
import gguf
from gguf import GGMLQuantizationType as QT
from transformers import ModernBertConfig, ModernBertModel
from laya.common import DecisionModel

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures", "model")
ARCH = "modern-bert"

MODELS = {
    "fx-a": dict(d=64, heads=2, layers=4, every=3, window=16, inter=64, vocab=100, head_layers=2,
                 gtheta=160000.0, ltheta=10000.0, ff_array=True, swa_key=True, seed=11,
                 types={}),
    "fx-b": dict(d=128, heads=4, layers=2, every=2, window=32, inter=64, vocab=96, head_layers=1,
                 gtheta=80000.0, ltheta=10000.0, ff_array=False, swa_key=False, seed=23,
                 types={"enc": QT.F16, "head_qkv": QT.BF16, "head_up": QT.Q8_0}),
}


def lossy(arr, qtype):
    """Round-trip through a GGUF type; returns (stored array, dequantized f32 values)."""
    if qtype is None or qtype == QT.F32:
        return arr.astype(np.float32), arr.astype(np.float32)
    q = gguf.quants.quantize(arr.astype(np.float32), qtype)
    deq = gguf.quants.dequantize(q, qtype).reshape(arr.shape).astype(np.float32)
    return q, deq


def build(name, c):
    g = torch.Generator().manual_seed(c["seed"])
    d, n_enc = c["d"], c["layers"]
    cfg = ModernBertConfig(
        vocab_size=c["vocab"], hidden_size=d, num_hidden_layers=n_enc,
        num_attention_heads=c["heads"], intermediate_size=c["inter"],
        max_position_embeddings=512, local_attention=c["window"],
        global_attn_every_n_layers=c["every"], global_rope_theta=c["gtheta"],
        local_rope_theta=c["ltheta"], norm_eps=1e-5, pad_token_id=0, bos_token_id=1,
        eos_token_id=2, cls_token_id=1, sep_token_id=2)
    enc = ModernBertModel._from_config(cfg, attn_implementation="sdpa")
    model = DecisionModel(enc, head_layers=c["head_layers"], n_act=2).eval()

    def rnd(shape, scale, offset=0.0):
        return (torch.randn(*shape, generator=g) * scale + offset).numpy().astype(np.float32)

    tensors = []  # (gguf name, stored array, qtype)
    sd = {}

    def put(hf, gname, arr, qtype=None):
        stored, deq = lossy(arr, qtype)
        sd[hf] = torch.from_numpy(deq.copy())
        tensors.append((gname, stored, qtype or QT.F32, arr.shape))

    et = c["types"].get("enc")
    I = c["inter"]
    put("encoder.embeddings.tok_embeddings.weight", "token_embd.weight", rnd((c["vocab"], d), 1.0), et)
    put("encoder.embeddings.norm.weight", "token_embd_norm.weight", rnd((d,), 0.1, 1.0))
    for i in range(n_enc):
        p = f"encoder.layers.{i}."
        if i > 0:
            put(p + "attn_norm.weight", f"blk.{i}.attn_norm.weight", rnd((d,), 0.1, 1.0))
        put(p + "attn.Wqkv.weight", f"blk.{i}.attn_qkv.weight", rnd((3 * d, d), 0.6 / np.sqrt(d) * 2), et)
        put(p + "attn.Wo.weight", f"blk.{i}.attn_output.weight", rnd((d, d), 1.0 / np.sqrt(d)), et)
        put(p + "mlp_norm.weight", f"blk.{i}.ffn_norm.weight", rnd((d,), 0.1, 1.0))
        put(p + "mlp.Wi.weight", f"blk.{i}.ffn_up.weight", rnd((2 * I, d), 1.0 / np.sqrt(d)), et)
        put(p + "mlp.Wo.weight", f"blk.{i}.ffn_down.weight", rnd((d, I), 1.0 / np.sqrt(I)), et)
    put("encoder.final_norm.weight", "output_norm.weight", rnd((d,), 0.1, 1.0))
    for j in range(c["head_layers"]):
        b = n_enc + j
        p = f"head.layers.{j}."
        put(p + "norm1.weight", f"blk.{b}.attn_norm.weight", rnd((d,), 0.1, 1.0))
        put(p + "norm1.bias", f"blk.{b}.attn_norm.bias", rnd((d,), 0.1))
        put(p + "self_attn.in_proj_weight", f"blk.{b}.attn_qkv.weight", rnd((3 * d, d), 1.5 / np.sqrt(d)),
            c["types"].get("head_qkv"))
        put(p + "self_attn.in_proj_bias", f"blk.{b}.attn_qkv.bias", rnd((3 * d,), 0.1))
        put(p + "self_attn.out_proj.weight", f"blk.{b}.attn_output.weight", rnd((d, d), 1.0 / np.sqrt(d)))
        put(p + "self_attn.out_proj.bias", f"blk.{b}.attn_output.bias", rnd((d,), 0.1))
        put(p + "norm2.weight", f"blk.{b}.ffn_norm.weight", rnd((d,), 0.1, 1.0))
        put(p + "norm2.bias", f"blk.{b}.ffn_norm.bias", rnd((d,), 0.1))
        put(p + "linear1.weight", f"blk.{b}.ffn_up.weight", rnd((4 * d, d), 1.0 / np.sqrt(d)),
            c["types"].get("head_up"))
        put(p + "linear1.bias", f"blk.{b}.ffn_up.bias", rnd((4 * d,), 0.1))
        put(p + "linear2.weight", f"blk.{b}.ffn_down.weight", rnd((d, 4 * d), 1.0 / np.sqrt(4 * d)))
        put(p + "linear2.bias", f"blk.{b}.ffn_down.bias", rnd((d,), 0.1))
    put("type_emb.weight", "token_types.weight", rnd((3, d), 0.5))
    put("scorer.0.weight", "cls.norm.weight", rnd((d,), 0.1, 1.0))
    put("scorer.0.bias", "cls.norm.bias", rnd((d,), 0.1))
    put("scorer.1.weight", "cls.weight", rnd((d, d), 1.0 / np.sqrt(d)))
    put("scorer.1.bias", "cls.bias", rnd((d,), 0.1))
    put("scorer.3.weight", "cls.output.weight", rnd((1, d), 1.0 / np.sqrt(d)))
    put("scorer.3.bias", "cls.output.bias", rnd((1,), 0.1))

    # Parameters the GGUF does not carry keep fixed values so load_state_dict is strict.
    for k, v in model.state_dict().items():
        if k not in sd:
            if not (k.startswith("act_head") or k == "temperature"):
                raise SystemExit(f"{name}: no value for {k}")
            sd[k] = torch.zeros_like(v)
    model.load_state_dict(sd, strict=True)

    w = gguf.GGUFWriter(os.path.join(OUT, f"{name}.gguf"), ARCH)
    w.add_name(name)
    a = ARCH
    w.add_uint32(f"{a}.block_count", n_enc + c["head_layers"])
    w.add_uint32(f"{a}.context_length", 512)
    w.add_uint32(f"{a}.embedding_length", d)
    if c["ff_array"]:
        w.add_array(f"{a}.feed_forward_length", [I] * n_enc + [4 * d] * c["head_layers"])
    else:
        w.add_uint32(f"{a}.feed_forward_length", I)
    w.add_uint32(f"{a}.attention.head_count", c["heads"])
    w.add_float32(f"{a}.attention.layer_norm_epsilon", 1e-5)
    w.add_bool(f"{a}.attention.causal", False)
    w.add_uint32(f"{a}.attention.sliding_window", c["window"])
    w.add_uint32(f"{a}.attention.sliding_window_pattern", c["every"])
    w.add_float32(f"{a}.rope.freq_base", c["gtheta"])
    if c["swa_key"]:
        w.add_float32(f"{a}.rope.freq_base_swa", c["ltheta"])
    w.add_uint32(f"{a}.vocab_size", c["vocab"])
    w.add_string(f"{a}.decision.type", "laya")
    w.add_uint32(f"{a}.decision.block_count", c["head_layers"])
    w.add_uint32(f"{a}.decision.max_head_tokens", 96)
    w.add_uint32("tokenizer.ggml.token_type_count", 3)
    for gname, stored, qtype, shape in tensors:
        if qtype in (QT.F32, QT.F16):
            w.add_tensor(gname, stored)
        else:
            w.add_tensor(gname, stored, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return model, c


def run_cases(name, model, c):
    rng = np.random.default_rng(c["seed"] + 1000)
    lines = [f"# {name}: ids, markers and raw scorer logits from laya DecisionModel.forward (fp32)",
             f"# then the same in float64 (a model copy cast to double) to judge the fp32 rounding"]
    m64 = None
    import copy
    m64 = copy.deepcopy(model).double()
    for n, qt, k in [(5, 0, 2), (5, 2, 2), (70, 1, 5), (70, 0, 3), (200, 2, 2), (200, 0, 11), (137, 1, 4)]:
        ids = rng.integers(3, c["vocab"], size=n)
        ids[0] = 1
        ids[-1] = 2
        markers = np.sort(rng.choice(np.arange(1, n - 1), size=min(k, n - 2), replace=False))
        inp = torch.tensor(ids[None, :], dtype=torch.long)
        mask = torch.ones_like(inp)
        mp = torch.tensor(markers[None, :], dtype=torch.long)
        mm = torch.ones_like(mp, dtype=torch.bool)
        qtype = torch.tensor([qt], dtype=torch.long)
        with torch.no_grad():
            logits, _ = model(inp, mask, mp, mm, qtype)
            l64, _ = m64(inp, mask, mp, mm, qtype)
        lines.append(f"case {qt} {n} {len(markers)}")
        lines.append("ids " + " ".join(str(int(x)) for x in ids))
        lines.append("markers " + " ".join(str(int(x)) for x in markers))
        lines.append("logits " + " ".join(repr(float(x)) for x in logits[0].tolist()))
        lines.append("logits64 " + " ".join(repr(float(x)) for x in l64[0].tolist()))
    with open(os.path.join(OUT, f"{name}.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    for name, c in MODELS.items():
        model, c = build(name, c)
        run_cases(name, model, c)
        print(name, "ok", file=sys.stderr)


if __name__ == "__main__":
    main()
