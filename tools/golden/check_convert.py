#!/usr/bin/env python3
"""Independent checks of skycmd's Laya -> GGUF converter, with the pinned PyPI packages.

Two jobs:

  fixtures   Write tests/fixtures/convert/ with the Python packages only:
             - st_numpy.safetensors / st_torch_bf16.safetensors: files written by
               `safetensors` (numpy and torch front ends) for the reader test;
             - pylaya/: a complete Laya checkpoint (F16 safetensors as the real checkpoints,
               an F32 `temperature` buffer, a transformers-4.x style encoder/config.json, a
               byte-level BPE tokenizer trained with `tokenizers`);
             - pylaya_expected.json: what our reader must see in pylaya/ (a FNV-1a hash of
               each tensor's f32 values, the vocabulary, a few encodings) and what the GGUF
               must contain per the rules of llama.cpp's converter, re-derived here in Python
               (metadata keys and values, tensor names, ggml shapes and types).
             tests/test_convert.c checks our C code against these files.

  check GGUF LAYA_DIR [--type T] [--head-type T] [--name N] [--pre P]
             Read a GGUF file that `skycmd convert` wrote with gguf's GGUFReader and compare
             every key, value, tensor name, shape, type and byte with LAYA_DIR's configs and
             safetensors values (F32 exact, F16/BF16 = numpy's rounding, Q8_0 = gguf's own
             quantizer). Exit status 0 when everything matches.

Run:  /opt/gvenv/bin/python tools/golden/check_convert.py fixtures
      /opt/gvenv/bin/python tools/golden/check_convert.py check out.gguf models/s1-pico
Pinned (tools/golden/requirements.txt): gguf==0.19.0, safetensors==0.8.0,
tokenizers==0.23.3, numpy==2.4.6, torch==2.15.0, transformers==5.23.0.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "..", "tests", "fixtures", "convert")
ARCH = "modern-bert"

SYSTEMONE = (
    "[CLS]{{ type }} question: {{ instructions if instructions is string else instructions | tojson }}[SEP]"
    "{% for o in options %}[MASK] {% if type == 'choice' %}{{ o.key }}{% if o.description %}: "
    "{{ o.description if o.description is string else o.description | tojson }}{% endif %}"
    "{% elif type == 'score' %}level {{ o.key }}: {{ o.description if o.description is string "
    "else o.description | tojson }}{% else %}{{ o.key }}: {% if o.description %}{{ o.description "
    "if o.description is string else o.description | tojson }}{% elif o.key == 'true' %}yes, the "
    "statement holds{% else %}no, the statement does not hold{% endif %}{% endif %}{% endfor %}"
    "[SEP]{{ state if state is string else state | tojson }}[SEP]"
)


def fnv1a64(b: bytes) -> str:
    h = 0xCBF29CE484222325
    for x in b:
        h ^= x
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


# ---------------------------------------------------------------- the converter's rules
def laya_tensor_map(n_enc, head_layers):
    """HF name -> GGUF name (spec 6.2); None = dropped."""
    m = {
        "encoder.embeddings.tok_embeddings.weight": "token_embd.weight",
        "encoder.embeddings.norm.weight": "token_embd_norm.weight",
        "encoder.final_norm.weight": "output_norm.weight",
        "type_emb.weight": "token_types.weight",
        "scorer.0.weight": "cls.norm.weight", "scorer.0.bias": "cls.norm.bias",
        "scorer.1.weight": "cls.weight", "scorer.1.bias": "cls.bias",
        "scorer.3.weight": "cls.output.weight", "scorer.3.bias": "cls.output.bias",
        "temperature": None,
    }
    enc = {"attn_norm.weight": "attn_norm.weight", "attn.Wqkv.weight": "attn_qkv.weight",
           "attn.Wo.weight": "attn_output.weight", "mlp_norm.weight": "ffn_norm.weight",
           "mlp.Wi.weight": "ffn_up.weight", "mlp.Wo.weight": "ffn_down.weight"}
    for i in range(n_enc):
        for a, b in enc.items():
            m["encoder.layers.%d.%s" % (i, a)] = "blk.%d.%s" % (i, b)
    head = {"norm1": "attn_norm", "self_attn.in_proj_": "attn_qkv.", "self_attn.out_proj": "attn_output",
            "norm2": "ffn_norm", "linear1": "ffn_up", "linear2": "ffn_down"}
    for j in range(head_layers):
        for a, b in head.items():
            for wb in ("weight", "bias"):
                if a.endswith("_"):
                    src, dst = "head.layers.%d.%s%s" % (j, a, wb), "blk.%d.%s%s" % (n_enc + j, b, wb)
                else:
                    src, dst = "head.layers.%d.%s.%s" % (j, a, wb), "blk.%d.%s.%s" % (n_enc + j, b, wb)
                m[src] = dst
    return m


def is_head(gname, n_enc):
    if gname.startswith("blk."):
        return int(gname.split(".")[1]) >= n_enc
    return gname.startswith("token_types") or gname.startswith("cls")


def tensor_type(gname, shape_pt, n_enc, ftype, head_type):
    """The seed's policy (chapter 13); shape in PyTorch order."""
    if len(shape_pt) < 2:
        t = "F32"
    elif is_head(gname, n_enc):
        t = head_type
    elif gname == "token_embd.weight" and ftype == "Q8_0":
        t = "F16"
    else:
        t = ftype
    if t == "Q8_0" and shape_pt[-1] % 32 != 0:
        t = "F16"
    return t


def bucket_key(name):
    return name.replace(":", ".").replace("-", "_").rstrip("+")


def expected_metadata(rl, enc, name, pre):
    n_enc, hl = enc["num_hidden_layers"], rl["head_layers"]
    g, l = 160000.0, 10000.0
    g = enc.get("global_rope_theta", g)
    l = enc.get("local_rope_theta", l)
    rp = enc.get("rope_parameters")
    if isinstance(rp, dict):
        g = (rp.get("full_attention") or {}).get("rope_theta", rp.get("rope_theta", g))
        l = (rp.get("sliding_attention") or {}).get("rope_theta", rp.get("rope_theta", l))
    md = {
        "general.architecture": ARCH,
        "general.name": name,
        ARCH + ".block_count": n_enc + hl,
        ARCH + ".context_length": enc.get("max_position_embeddings", 8192),
        ARCH + ".embedding_length": enc["hidden_size"],
        ARCH + ".feed_forward_length": [enc["intermediate_size"]] * n_enc + [4 * enc["hidden_size"]] * hl,
        ARCH + ".attention.head_count": enc["num_attention_heads"],
        ARCH + ".attention.layer_norm_epsilon": enc.get("norm_eps", enc.get("layer_norm_eps", 1e-5)),
        ARCH + ".attention.causal": False,
        ARCH + ".attention.sliding_window": enc.get("local_attention", 128),
        ARCH + ".attention.sliding_window_pattern": enc.get("global_attn_every_n_layers", 3),
        ARCH + ".rope.freq_base": g,
        ARCH + ".rope.freq_base_swa": l,
        ARCH + ".rope.scaling.type": "none",
        ARCH + ".vocab_size": enc["vocab_size"],
        ARCH + ".hidden_activation": enc.get("hidden_activation", "gelu"),
        ARCH + ".decision.type": "laya",
        ARCH + ".decision.block_count": hl,
        ARCH + ".decision.max_head_tokens": rl.get("head_max_len", 192),
        ARCH + ".decision.max_tokens": rl.get("max_len", 512),
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": pre,
        "tokenizer.ggml.token_type_count": 3,
        "tokenizer.chat_template.systemone": SYSTEMONE,
        "tokenizer.chat_templates": ["systemone"],
    }
    for n, t in zip(("choice", "score", "noul"), rl.get("temperature", [1.0, 1.0, 1.0])):
        md[ARCH + ".decision.temperature." + n] = t
    for k, t in (rl.get("temperature_by_options") or {}).items():
        md[ARCH + ".decision.temperature." + bucket_key(k)] = t
    return md


# ---------------------------------------------------------------- fixtures
def make_fixtures():
    import torch
    from safetensors.numpy import save_file as np_save
    from safetensors.torch import save_file as torch_save
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from tokenizers.trainers import BpeTrainer
    from transformers import PreTrainedTokenizerFast

    os.makedirs(FIX, exist_ok=True)
    np_save({"a": (np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5 - 1),
             "b": np.array([1.5, -2.25, 65504, 6.1035156e-05], dtype=np.float16),
             "scalar": np.array(3.0, dtype=np.float32),
             "empty": np.zeros((0, 4), dtype=np.float32),
             "ints": np.array([1, 2, 3], dtype=np.int64)},
            os.path.join(FIX, "st_numpy.safetensors"), metadata={"format": "pt"})
    torch_save({"bf": torch.tensor([[1.0, -0.5], [3.140625, 1e-3]], dtype=torch.bfloat16)},
               os.path.join(FIX, "st_torch_bf16.safetensors"))

    # --- a Laya checkpoint written by the Python packages ---
    d = os.path.join(FIX, "pylaya")
    os.makedirs(os.path.join(d, "encoder"), exist_ok=True)
    os.makedirs(os.path.join(d, "tokenizer"), exist_ok=True)
    specials = [AddedToken("[PAD]", special=True, normalized=False),
                AddedToken("[UNK]", special=True, normalized=False),
                AddedToken("[CLS]", special=True, normalized=False),
                AddedToken("[SEP]", special=True, normalized=False),
                AddedToken("[MASK]", special=True, normalized=False, lstrip=True)]
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = BpeTrainer(vocab_size=320, special_tokens=specials, show_progress=False,
                         initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    corpus = ["choice question: Which input keeps the drone flying through the next gap?",
              "fire the rotors for an upward impulse", "let gravity pull the drone down",
              "noul question: Will the drone crash within the next half second?",
              "yes, the statement holds", "no, the statement does not hold",
              "vy 0 dx 36 up 9 dn 7 nxt 10 alt 32", "Café crème, naïve façade."] * 10
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, cls_token="[CLS]", sep_token="[SEP]",
                                   mask_token="[MASK]", pad_token="[PAD]", unk_token="[UNK]")
    fast.save_pretrained(os.path.join(d, "tokenizer"))
    V = tok.get_vocab_size()

    D, L, I, HL = 64, 2, 48, 1
    enc = {"architectures": ["ModernBertModel"], "model_type": "modernbert", "hidden_size": D,
           "num_hidden_layers": L, "num_attention_heads": 1, "intermediate_size": I,
           "vocab_size": V, "max_position_embeddings": 512, "local_attention": 32,
           "global_attn_every_n_layers": 2, "global_rope_theta": 80000.0,
           "local_rope_theta": 20000.0, "norm_eps": 1e-05, "norm_bias": False,
           "attention_bias": False, "mlp_bias": False, "hidden_activation": "gelu",
           "pad_token_id": 0, "cls_token_id": 2, "sep_token_id": 3, "bos_token_id": 2,
           "eos_token_id": 3, "transformers_version": "4.48.0"}
    rl = {"encoder": "answerdotai/ModernBERT-base", "head_layers": HL, "max_len": 128,
          "head_max_len": 64, "act_costs": {"escalate": 0.5},
          "temperature": [1.25, 0.75, 2.0],
          "temperature_by_options": {"choice:3-5": 1.5, "choice:11+": 0.1, "noul:2": 3.5}}
    with open(os.path.join(d, "encoder", "config.json"), "w") as f:
        json.dump(enc, f, indent=2)
    with open(os.path.join(d, "rl_agent_config.json"), "w") as f:
        json.dump(rl, f, indent=2)

    rng = np.random.default_rng(1234)
    shapes = {"encoder.embeddings.tok_embeddings.weight": (V, D), "encoder.embeddings.norm.weight": (D,),
              "encoder.final_norm.weight": (D,)}
    for i in range(L):
        if i > 0:
            shapes["encoder.layers.%d.attn_norm.weight" % i] = (D,)
        shapes.update({"encoder.layers.%d.attn.Wqkv.weight" % i: (3 * D, D),
                       "encoder.layers.%d.attn.Wo.weight" % i: (D, D),
                       "encoder.layers.%d.mlp_norm.weight" % i: (D,),
                       "encoder.layers.%d.mlp.Wi.weight" % i: (2 * I, D),
                       "encoder.layers.%d.mlp.Wo.weight" % i: (D, I)})
    for j in range(HL):
        p = "head.layers.%d." % j
        shapes.update({p + "self_attn.in_proj_weight": (3 * D, D), p + "self_attn.in_proj_bias": (3 * D,),
                       p + "self_attn.out_proj.weight": (D, D), p + "self_attn.out_proj.bias": (D,),
                       p + "linear1.weight": (4 * D, D), p + "linear1.bias": (4 * D,),
                       p + "linear2.weight": (D, 4 * D), p + "linear2.bias": (D,),
                       p + "norm1.weight": (D,), p + "norm1.bias": (D,),
                       p + "norm2.weight": (D,), p + "norm2.bias": (D,)})
    shapes.update({"type_emb.weight": (3, D), "scorer.0.weight": (D,), "scorer.0.bias": (D,),
                   "scorer.1.weight": (D, D), "scorer.1.bias": (D,), "scorer.3.weight": (1, D),
                   "scorer.3.bias": (1,), "act_head.0.weight": (256, D + 4), "act_head.0.bias": (256,),
                   "act_head.2.weight": (2, 256), "act_head.2.bias": (2,)})
    tensors = {k: (rng.standard_normal(s) * 0.5).astype(np.float16) for k, s in shapes.items()}
    tensors["temperature"] = np.ones(3, dtype=np.float32)
    np_save(tensors, os.path.join(d, "model.safetensors"))

    name = "pylaya"
    tmap = laya_tensor_map(L, HL)
    exp = {"tensors": {}, "vocab": [], "encodings": [], "gguf": {}}
    for k, v in tensors.items():
        exp["tensors"][k] = {"shape": list(v.shape), "dtype": "F32" if v.dtype == np.float32 else "F16",
                             "fnv_f32": fnv1a64(v.astype(np.float32).tobytes())}
    exp["vocab"] = [tok.id_to_token(i) for i in range(V)]
    for text in ["choice question: Which input keeps the drone flying?", " [MASK] thrust",
                 "Café crème  naïve", "vy 0 dx 36 up 9"]:
        exp["encodings"].append({"text": text, "ids": tok.encode(text, add_special_tokens=False).ids})
    for ftype, htype in (("F16", "F32"), ("Q8_0", "F32"), ("F32", "BF16")):
        tl = []
        for k, v in tensors.items():
            g = tmap.get(k)
            if g is None or k.startswith("act_head"):
                continue
            tl.append([g, list(reversed(v.shape)), tensor_type(g, v.shape, L, ftype, htype)])
        exp["gguf"]["%s/%s" % (ftype, htype)] = sorted(tl)
    md = expected_metadata(rl, enc, name, "gpt-2")
    md["tokenizer.ggml.mask_token_id"] = 4
    md["tokenizer.ggml.seperator_token_id"] = 3
    exp["metadata"] = md
    with open(os.path.join(FIX, "pylaya_expected.json"), "w") as f:
        json.dump(exp, f, indent=1, ensure_ascii=False)
    for root, _, files in os.walk(FIX):
        for fn in files:
            os.chmod(os.path.join(root, fn), 0o644)
    print("wrote", FIX)


# ---------------------------------------------------------------- check a GGUF file
def check(args):
    import gguf
    from gguf import GGUFReader, GGMLQuantizationType as QT
    from safetensors.numpy import load_file

    fails = []
    def fail(msg):
        fails.append(msg)

    d = args.laya_dir.rstrip("/")
    rl = json.load(open(os.path.join(d, "rl_agent_config.json")))
    enc = json.load(open(os.path.join(d, "encoder", "config.json")))
    st = load_file(os.path.join(d, "model.safetensors"))
    name = args.name or os.path.basename(d)
    md = expected_metadata(rl, enc, name, args.pre)
    r = GGUFReader(args.gguf)

    def value(field):
        t = field.types[0]
        if t == gguf.GGUFValueType.ARRAY:
            if field.types[1] == gguf.GGUFValueType.STRING:
                return [bytes(field.parts[i]).decode("utf-8") for i in field.data]
            return [field.parts[i].tolist()[0] for i in field.data]
        if t == gguf.GGUFValueType.STRING:
            return bytes(field.parts[field.data[0]]).decode("utf-8")
        return field.parts[field.data[0]].tolist()[0]

    fields = {k: f for k, f in r.fields.items()}
    for k, want in md.items():
        if k not in fields:
            fail("missing key " + k)
            continue
        got = value(fields[k])
        if isinstance(want, float):
            if np.float32(want) != np.float32(got):
                fail("%s = %r, want %r" % (k, got, want))
        elif got != want:
            fail("%s = %r, want %r" % (k, str(got)[:80], str(want)[:80]))
    # value types of spec 6.1
    T = gguf.GGUFValueType
    types = {"block_count": T.UINT32, "context_length": T.UINT32, "embedding_length": T.UINT32,
             "attention.head_count": T.UINT32, "attention.layer_norm_epsilon": T.FLOAT32,
             "attention.causal": T.BOOL, "attention.sliding_window": T.UINT32,
             "attention.sliding_window_pattern": T.UINT32, "rope.freq_base": T.FLOAT32,
             "rope.freq_base_swa": T.FLOAT32, "vocab_size": T.UINT32,
             "decision.block_count": T.UINT32, "decision.max_head_tokens": T.UINT32}
    for k, t in types.items():
        f = fields.get(ARCH + "." + k)
        if f is not None and f.types[0] != t:
            fail("%s.%s has type %s, want %s" % (ARCH, k, f.types[0].name, t.name))
    for k in fields:
        if k.startswith(ARCH + ".decision.temperature.") and fields[k].types[0] != T.FLOAT32:
            fail(k + " is not f32")
    ff = fields.get(ARCH + ".feed_forward_length")
    if ff is not None and (ff.types[0] != T.ARRAY or ff.types[1] != T.UINT32):
        fail("feed_forward_length must be an array of u32")
    for k in ("tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges",
              "tokenizer.ggml.mask_token_id", "tokenizer.ggml.seperator_token_id"):
        if k not in fields:
            fail("missing key " + k)
    tokens = value(fields["tokenizer.ggml.tokens"]) if "tokenizer.ggml.tokens" in fields else []
    tj = json.load(open(os.path.join(d, "tokenizer", "tokenizer.json")))
    vocab = dict(tj["model"]["vocab"])
    for a in tj.get("added_tokens", []):
        vocab[a["content"]] = a["id"]
    inv = {i: t for t, i in vocab.items()}
    if len(tokens) != enc["vocab_size"]:
        fail("%d tokens, vocab_size %d" % (len(tokens), enc["vocab_size"]))
    for i, t in enumerate(tokens):
        if inv.get(i) != t:
            fail("token %d = %r, tokenizer.json has %r" % (i, t, inv.get(i)))
            break

    n_enc, hl = enc["num_hidden_layers"], rl["head_layers"]
    tmap = laya_tensor_map(n_enc, hl)
    want_names = {}
    for k, v in st.items():
        g = tmap.get(k)
        if g is None:
            if not (k.startswith("act_head.") or k == "temperature"):
                fail("unexpected safetensors tensor " + k)
            continue
        want_names[g] = k
    got = {t.name: t for t in r.tensors}
    if set(got) != set(want_names):
        fail("tensor names differ: extra %s, missing %s" % (sorted(set(got) - set(want_names))[:5],
                                                           sorted(set(want_names) - set(got))[:5]))
    qt = {"F32": QT.F32, "F16": QT.F16, "BF16": QT.BF16, "Q8_0": QT.Q8_0}
    for g, k in want_names.items():
        t = got.get(g)
        if t is None:
            continue
        src = st[k].astype(np.float32)
        want_type = tensor_type(g, src.shape, n_enc, args.type, args.head_type)
        if t.tensor_type != qt[want_type]:
            fail("%s: type %s, want %s" % (g, t.tensor_type.name, want_type))
        if list(t.shape) != list(reversed(src.shape)):
            fail("%s: ggml shape %s, want %s" % (g, list(t.shape), list(reversed(src.shape))))
        raw = np.asarray(t.data).tobytes()
        if want_type == "F32":
            ref = src.tobytes()
        elif want_type == "F16":
            ref = src.astype(np.float16).tobytes()
        elif want_type == "BF16":
            ref = gguf.quants.quantize(src, QT.BF16).tobytes()
        else:
            ref = gguf.quants.quantize(src, QT.Q8_0).tobytes()
        if raw != ref:
            fail("%s: bytes differ from the %s of the safetensors values" % (g, want_type))
    align = fields.get("general.alignment")
    for t in r.tensors:
        if t.data_offset % (value(align) if align else 32):
            fail(t.name + " is not aligned")
    if fails:
        for m in fails[:40]:
            print("FAIL", m)
        print("%d failures" % len(fails))
        return 1
    print("OK: %d keys, %d tensors checked (%s)" % (len(md), len(want_names), args.gguf))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("fixtures")
    c = sub.add_parser("check")
    c.add_argument("gguf")
    c.add_argument("laya_dir")
    c.add_argument("--type", default="F16", type=str.upper)
    c.add_argument("--head-type", default="F32", type=str.upper)
    c.add_argument("--name")
    c.add_argument("--pre", default="gpt-2")
    a = ap.parse_args()
    if a.cmd == "fixtures":
        make_fixtures()
        return 0
    return check(a)


if __name__ == "__main__":
    sys.exit(main())
