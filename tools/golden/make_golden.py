#!/usr/bin/env python3
"""Generate the golden fixtures of tests/test_golden.c from the real Python Laya runtime.

What it does, for every model of MODELS below:
  1. writes a random Laya checkpoint with OUR generator: `skycmd random PRESET DIR --layout laya
     --seed N [--massive M]` (the C test regenerates the same directory with
     skycmd_random_model() and checks the SHA-256 of model.safetensors recorded here);
  2. optionally rewrites `temperature` / `temperature_by_options` of rl_agent_config.json
     (values outside [0.5, 5] exercise laya's clamp; the C test applies the same rewrite
     before converting to GGUF);
  3. loads the directory with laya's own loader (laya.Agent, CPU, fp32, HF_HUB_OFFLINE=1)
     and runs every request of requests() through Agent.system_one(), observing laya's own
     code paths without changing them: build_sequence (token ids and markers, as
     _encode_state calls it), Agent._forward (raw scorer logits), temp_bucket (the bucket
     _decode_answers looks up) and unpermute_probs (the probabilities after temperature,
     clamp and softmax, before laya rounds them to 4 decimals);
  4. writes tests/fixtures/golden/requests.json (the request bodies, as raw JSON text so that
     key order and number spelling reach the C parser untouched), one <model>.json per model
     and manifest.json.

Run it with the pinned reference environment (tools/golden/requirements.txt), e.g.
    /opt/gvenv/bin/python tools/golden/make_golden.py --cli build/skycmd
Nothing is downloaded; model weights are not written to the repository.
"""
import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

FORMAT_VERSION = 1

# The models of the suite. `temperatures` (optional) replaces the two keys of
# rl_agent_config.json before laya (and, in the C test, skycmd_convert) reads the directory.
MODELS = [
    {"name": "s1-pico", "preset": "s1-pico", "seed": 7, "massive": 0, "temperatures": None},
    # several attention heads + planted massive activation channels
    {"name": "s1-nano-massive", "preset": "s1-nano", "seed": 11, "massive": 4, "temperatures": None},
    # two decision-head layers, four heads of 64
    {"name": "s1-micro", "preset": "s1-micro", "seed": 17, "massive": 0, "temperatures": None},
    # the generator's own "-xt" variant: temperatures outside [0.5, 5] (laya clamps them;
    # llama.cpp would not)
    {"name": "s1-pico-xt", "preset": "s1-pico-xt", "seed": 5, "massive": 0, "temperatures": None},
    # a rewrite of rl_agent_config.json with more values outside [0.5, 5], and buckets that are
    # absent so that the per-type value (clamped or not) is used
    {"name": "s1-pico-clamp", "preset": "s1-pico", "seed": 13, "massive": 0,
     "temperatures": {
         "temperature": [0.2, 7.5, 1.37],
         "temperature_by_options": {
             "choice:2": 9.0,
             "choice:3-5": 0.05,
             "choice:11+": 0.10058280825614929,
             "score:2": 0.51,
             "score:6-10": 4.99,
             # absent on purpose, so the per-type value is used: choice:6-10 -> temperature[0]
             # = 0.2 (clamped to 0.5); score:3-5 and score:11+ -> 7.5 (clamped to 5);
             # noul:2 -> 1.37 (in range)
         },
     }},
]


# Checkpoints made by laya's and transformers' own classes (ModernBertConfig, AutoModel,
# laya.common.DecisionModel, laya.train.save_checkpoint), not by our generator, in shapes our
# presets do not have: several encoder and decision heads, odd local windows, other global
# layer patterns and RoPE bases, norm_eps, both transformers config spellings, F32/BF16/F16
# weights on disk, a padded vocabulary, no head_max_len, one and two decision blocks. Their
# directories are committed under tests/fixtures/golden/ckpt/ (the C test cannot regenerate
# torch's weights); the tokenizer is the BPE one of tests/fixtures/convert/pylaya.
LAYA_BUILT = [
    {"name": "laya-4x-f16-padded", "seed": 101, "spelling": "4.x", "dtype": "F16",
     "enc": {"hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 4,
             "intermediate_size": 96, "local_attention": 33, "global_attn_every_n_layers": 2,
             "global_rope_theta": 80000.0, "local_rope_theta": 20000.0, "norm_eps": 1e-6,
             "vocab_size": 384},
     "rl": {"head_layers": 2, "max_len": 256, "temperature": [1.3, 0.8, 1.1]}},
    # F32 weights on disk: the F16 file rounds them (the others are F16/BF16 already), which
    # moves its well-spread answers by up to ~1.1e-3; the C test's F16 bound against laya on
    # these weights is widened to 3e-3 for it (f16_tolerance), while against laya on the same
    # F16-rounded weights it keeps the 1e-4 bound
    {"name": "laya-5x-f32-d128", "seed": 202, "spelling": "5.x", "dtype": "F32", "f16_tolerance": 3e-3,
     "enc": {"hidden_size": 128, "num_attention_heads": 4, "num_hidden_layers": 3,
             "intermediate_size": 160, "local_attention": 16, "global_attn_every_n_layers": 3,
             "global_rope_theta": 160000.0, "local_rope_theta": 10000.0, "norm_eps": 1e-5,
             "vocab_size": 320},
     "rl": {"head_layers": 1, "max_len": 256, "head_max_len": 64,
            "temperature_by_options": {"choice:3-5": 1.7, "score:3-5": 0.7}}},
    {"name": "laya-5x-bf16-odd", "seed": 303, "spelling": "5.x", "dtype": "BF16",
     "enc": {"hidden_size": 96, "num_attention_heads": 3, "num_hidden_layers": 5,
             "intermediate_size": 128, "local_attention": 65, "global_attn_every_n_layers": 2,
             "global_rope_theta": 1000000.0, "local_rope_theta": 50000.0, "norm_eps": 1e-5,
             "vocab_size": 320},
     "rl": {"head_layers": 2, "max_len": 256, "head_max_len": 128}},
    # laya's parallel option layout (laya.common.parallel_layout / parallel_option_masks):
    # options share positions and are masked from each other; a small local window (measured
    # in positions) so that the layout's windows differ from the sequential ones
    {"name": "laya-parallel", "seed": 404, "spelling": "5.x", "dtype": "F16",
     "enc": {"hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 4,
             "intermediate_size": 96, "local_attention": 12, "global_attn_every_n_layers": 2,
             "global_rope_theta": 160000.0, "local_rope_theta": 10000.0, "norm_eps": 1e-5,
             "vocab_size": 320},
     "rl": {"head_layers": 2, "max_len": 256, "head_max_len": 96, "option_layout": "parallel"}},
    # mmBERT's shape (laya-multilingual, Julia-1) at a small depth and width: head_dim 64 (as
    # mmBERT-small/-base have), a global layer every 3, local window 128, both RoPE bases
    # 160000, 8192 positions, max_len 1024 / head_max_len 256 (laya-multilingual), and the
    # Gemma-style SentencePiece tokenizer of tests/fixtures/gemma_tok/gemma3000 (<pad>=0
    # <eos>=1 as SEP, <bos>=2 as CLS, <unk>=3, <mask>=4)
    {"name": "mmbert-tiny", "seed": 505, "spelling": "5.x", "dtype": "F16",
     "tokenizer": "tests/fixtures/gemma_tok/gemma3000", "max_position_embeddings": 8192,
     "special_ids": {"pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 1, "cls_token_id": 2, "sep_token_id": 1},
     "enc": {"hidden_size": 128, "num_attention_heads": 2, "num_hidden_layers": 4,
             "intermediate_size": 192, "local_attention": 128, "global_attn_every_n_layers": 3,
             "global_rope_theta": 160000.0, "local_rope_theta": 160000.0, "norm_eps": 1e-5,
             "vocab_size": 3000},
     "rl": {"head_layers": 2, "max_len": 1024, "head_max_len": 256},
     # 70 options fit in max_len 1024 (the request is sized for the 256-token models)
     "accepts": ["error-markers-past-max-len"]},
]


def build_laya_checkpoint(spec, tok_dir, out):
    """A checkpoint written by laya's save_checkpoint from a DecisionModel over a ModernBERT
    built by transformers, with weights drawn so that answers are well spread (the default
    init gives near-uniform probabilities, which would prove little)."""
    import torch
    from safetensors.torch import load_file, save_file
    from transformers import AutoModel, AutoTokenizer, ModernBertConfig
    from laya.common import DecisionModel
    from laya.train import save_checkpoint
    torch.manual_seed(spec["seed"])
    e = dict(spec["enc"])
    glob_every = e.pop("global_attn_every_n_layers")
    g_theta, l_theta = e.pop("global_rope_theta"), e.pop("local_rope_theta")
    n = e["num_hidden_layers"]
    ids = spec.get("special_ids", {"pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 3,
                                   "cls_token_id": 2, "sep_token_id": 3})
    cfg = ModernBertConfig(
        **e, max_position_embeddings=spec.get("max_position_embeddings", 512), **ids,
        layer_types=["full_attention" if i % glob_every == 0 else "sliding_attention" for i in range(n)],
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": g_theta},
                         "sliding_attention": {"rope_type": "default", "rope_theta": l_theta}})
    enc = AutoModel.from_config(cfg, attn_implementation="sdpa")
    model = DecisionModel(enc, spec["rl"]["head_layers"], 2)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 1.0 / p.shape[-1] ** 0.5)
            elif name.endswith("weight"):   # norms
                p.normal_(1.0, 0.15)
            else:
                p.normal_(0.0, 0.1)
        model.scorer[3].weight.mul_(6.0)   # spread the option logits
    model.eval()
    tok = AutoTokenizer.from_pretrained(tok_dir)
    rl = {"encoder": "skycmd/" + spec["name"], **spec["rl"], "act_costs": {"escalate": 0.5}}
    shutil.rmtree(out, ignore_errors=True)
    save_checkpoint(model, tok, rl, out)   # weights in F16, as laya writes them
    path = os.path.join(out, "model.safetensors")
    if spec["dtype"] != "F16":
        # the same values in F32 / BF16 on disk (F16 -> wider is exact for F32; BF16 rounds)
        sd = {k: v.detach().float() for k, v in model.state_dict().items()}
        dt = torch.float32 if spec["dtype"] == "F32" else torch.bfloat16
        save_file({k: v.to(dt).contiguous() for k, v in sd.items()}, path)
    ecfg_path = os.path.join(out, "encoder", "config.json")
    with open(ecfg_path) as f:
        ec = json.load(f)
    ec.pop("dtype", None)   # float32 compute either way (a bf16 dtype would make laya compute in bf16)
    if spec["spelling"] == "4.x":
        # transformers 4.x keys, which 5.x still reads: no layer_types, no rope_parameters
        ec.pop("layer_types", None)
        ec.pop("rope_parameters", None)
        ec["global_attn_every_n_layers"] = glob_every
        ec["global_rope_theta"] = g_theta
        ec["local_rope_theta"] = l_theta
        ec["transformers_version"] = "4.48.0"
    with open(ecfg_path, "w") as f:
        json.dump(ec, f, indent=2, sort_keys=True)
    return out


# --------------------------------------------------------------------------- requests ----
def _prose(n_sentences, start=0):
    s = [
        "The drone climbs when the rotors fire and falls when they rest.",
        "Gaps in the wall move down by one unit every second frame.",
        "A careful pilot keeps some altitude in reserve before each gap.",
        "Wind from the east pushes the craft two units per tick.",
        "The battery drains faster while the rotors are spinning hard.",
        "Score rises by one for every wall the drone passes cleanly.",
        "Obstacles closer than ten units leave little time to react.",
        "Below altitude five the ground effect makes the drone unstable.",
    ]
    return " ".join(s[(start + i) % len(s)] + (" (%d)" % i if i % 3 == 0 else "")
                    for i in range(n_sentences))


def _choice(ins, crit):
    return {"type": "choice", "instructions": ins, "criteria": crit}


def _score(ins, levels):
    return {"type": "score", "instructions": ins, "criteria": levels}


def _noul(ins, crit=None, with_key=True):
    q = {"type": "noul", "instructions": ins}
    if with_key:
        q["criteria"] = crit
    if crit is None and with_key:
        del q["criteria"]
    return q


def _body(state, questions):
    return json.dumps({"state": state, "questions": questions}, ensure_ascii=False)


def requests():
    """(name, raw JSON body, expect_error) triples; raw text keeps number spelling exact."""
    R = []
    flappy = "vy 0 dx 36 up 9 dn 7 nxt 10 alt 32"
    R.append(("flappy-3-types", _body(flappy, {
        "action": _choice("Which input keeps the drone flying through the next gap?",
                          {"thrust": "fire the rotors for an upward impulse",
                           "glide": "let gravity pull the drone down"}),
        "danger": _noul("Will the drone crash within the next half second if it keeps gliding?"),
        "margin": _score("How much room is left above and below the drone?",
                         ["none", "tight", "comfortable"]),
    }), False))

    # option counts 1, 2, 3, 5, 6, 10, 11, 30 (every temperature bucket) and the shrink rule
    words = ["north", "south", "east", "west", "up", "down", "wait", "boost", "brake", "turn",
             "left", "right", "hover", "land", "climb", "dive", "roll", "yaw", "pitch", "stop",
             "go", "slow", "fast", "back", "forth", "spin", "drift", "hold", "jump", "duck",
             "a1", "b2", "c3", "d4", "e5", "f6", "g7", "h8", "i9", "j10"]
    for k in (1, 2, 3, 5, 6, 10, 11, 30):
        crit = {w: "move %s now" % w for w in words[:k]}
        R.append(("choice-%d" % k, _body(_prose(2, k), {
            "pick": _choice("Which of the %d moves is best?" % k, crit)}), False))
    R.append(("choice-1-null", _body("alt 3", {"only": _choice("Is this the one?", {"yes": None})}), False))
    R.append(("choice-12-long-descs-shrink", _body(_prose(3), {
        "pick": _choice("Choose the plan that fits the state.",
                        {w: "plan %s: %s" % (w, _prose(1, i)) for i, w in enumerate(words[:12])})}), False))
    R.append(("choice-2-over-48-cap", _body(_prose(1), {
        "pick": _choice("Which long plan is better?",
                        {"first": _prose(6, 1), "second": _prose(6, 4)})}), False))
    R.append(("choice-60-tight", _body(_prose(4), {
        "pick": _choice("Pick one label.", {"opt%d" % i: "label number %d" % i for i in range(60)})}), False))
    R.append(("choice-30-long-state", _body(_prose(60), {
        "pick": _choice("Which of the thirty?", {w: None for w in words[:30]})}), False))
    R.append(("choice-list-nonstring-labels", '{"state": "s", "questions": {"c": {"type": "choice", '
              '"instructions": "Which label?", "criteria": ["a", 2, 2.5, true, 1e-7]}}}', False))
    R.append(("choice-duplicate-json-keys", '{"state": "s", "questions": {"c": {"type": "choice", '
              '"instructions": "Duplicate keys: the last value wins, at the first position", '
              '"criteria": {"a": "first a", "b": "b", "a": "second a"}}}}', False))
    R.append(("choice-list-criteria", _body(flappy, {
        "pick": {"type": "choice", "instructions": "Where next?", "criteria": ["left", "right", "stay"]}}), False))
    # description kinds: null, "", numbers, objects, arrays, bools
    R.append(("choice-desc-kinds-a", '{"state": "x 1 y 2", "questions": {"kinds": {"type": "choice", '
              '"instructions": "Which description is right?", "criteria": {"null": null, "empty": "", '
              '"zero": 0, "false": false, "float": 3.5, "obj": {"a": 1, "b": [1, 2], "c": "t\\u00e9"}}}}}', False))
    R.append(("choice-desc-kinds-b", '{"state": {"k": 1}, "questions": {"kinds": {"type": "choice", '
              '"instructions": "Which one, again?", "criteria": {"arr": [1, "x", null], "emptyarr": [], '
              '"emptyobj": {}, "true": true, "tiny": 1e-7, "negzero": -0.0, "int": 42}}}}', False))
    R.append(("choice-mask-in-keys-and-descs", _body("state with [MASK] inside and[MASK]glued", {
        "m": _choice("Pick [MASK] the [MASK][MASK] best", {"a[MASK]b": "desc [MASK] here", "[MASK]": "only mask key",
                                                          "plain": "[MASK]"})}), False))
    R.append(("choice-empty-and-space-keys", _body("  ", {
        "e": _choice("Which key?", {"": "the empty key", " ": "a space key", "  x  ": ""})}), False))
    R.append(("choice-unicode-keys", _body("Le drone vole vers le nord-est à 12 km/h.", {
        "dir": _choice("Quelle direction ?", {"gauche": "aller à gauche", "droite": "aller à droite",
                                              "北": "北へ行く", "naïve": "cafe\u0301"})}), False))
    R.append(("choice-numeric-keys-newlines", _body("a\nb\r\nc\td", {
        "n": _choice("Line\nbreak\tand tab?", {"1": "one\nline", "2": "two\tcols", "10": "ten\r\n"})}), False))

    # score: 1 (lenient), 2..10 levels, 11 (11+ bucket), level kinds
    for n in (1, 2, 3, 5, 6, 10, 11):
        R.append(("score-%d" % n, _body(_prose(2, n), {
            "lvl": _score("How risky is the position?", ["risk level %d" % i for i in range(n)])}), False))
    R.append(("score-level-kinds", '{"state": "s", "questions": {"s": {"type": "score", "instructions": '
              '"Rate it.", "criteria": [0, 2.5, "mid", {"desc": "high", "w": [1, 2]}, [true, false], 1e-7]}}}', False))
    R.append(("score-mask-levels", _body("[MASK]", {"s": _score("Rate [MASK].", ["[MASK]", "lo[MASK]w", "high"])}), False))

    # noul: with / without criteria, partial, empty, upper-case keys, empty strings
    R.append(("noul-variants", _body(flappy, {
        "plain": _noul("Is the drone climbing?"),
        "both": _noul("Is the gap open?", {"true": "the gap is open", "false": "the gap is closed"}),
        "true-only": _noul("Is it windy?", {"true": "wind above 5"}),
        "false-only": _noul("Is it calm?", {"false": "there is wind"}),
        "empty-obj": _noul("Is the battery low?", {}),
        "empty-strings": _noul("Is it late?", {"true": "", "false": ""}),
    }), False))
    R.append(("noul-null-criteria", '{"state": "q", "questions": {"n": {"type": "noul", '
              '"instructions": "Null criteria?", "criteria": null}}}', False))
    R.append(("noul-object-criteria", _body("x", {
        "n": _noul("Structured?", {"true": {"when": "always", "p": 0.5}, "false": [1, 2]})}), False))
    R.append(("noul-labels", _body(flappy, {
        "lab": dict(_noul("Custom labels?", {"true": "the gap is open"}), labels={"false": "B", "true": "A"}),
        "pad": dict(_noul("Padded labels?"), labels={"false": "  nope ", "true": "\tyep"}),
    }), False))
    R.append(("noul-uppercase-keys", _body("x", {
        "n": _noul("Upper-case keys?", {"TRUE": "yes upper", "False": "no upper"})}), False))

    # states
    R.append(("state-long-string-cut", _body(_prose(80), {
        "a": _choice("Which way?", {"up": "climb", "down": "descend"}),
        "r": _noul("Is it safe?")}), False))
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": "turn %d: %s" % (i, _prose(1, i))}
             for i in range(40)]
    R.append(("state-long-list-keeps-end", _body(turns, {
        "intent": _choice("What does the user want now?", {"help": "asks for help", "bye": "says goodbye"}),
        "calm": _score("How calm is the user?", ["angry", "neutral", "happy"])}), False))
    R.append(("state-list-short", _body(["hello", "how are you?", "fine, thanks"], {
        "t": _choice("Tone?", {"polite": None, "rude": None})}), False))
    R.append(("state-list-mixed", '{"state": [1, 2.0, "three", null, true, {"k": [4.5]}], "questions": '
              '{"n": {"type": "noul", "instructions": "Is the list numeric?"}}}', False))
    R.append(("state-json-floats", '{"state": {"one": 1.0, "tenth": 0.1, "tiny": 1e-7, '
              '"pi": 3.14159265358979, "i": 10, "f": 10.0, "e2": 1e2, "E5": 1E5, "neg": -2.5e-10, '
              '"big": 1e22, "nz": -0.0, "m": 12345678.9, "s": 0.0001, "t": 1e-05, "h": 1e16, '
              '"g": 1.5e300, "third": 0.3333333333333333, "two3": 0.6666666666666666, "z": 0, '
              '"neg_int": -7, "exp_int": 5e0}, "questions": {"v": {"type": "score", '
              '"instructions": "How large are the values?", "criteria": ["small", "medium", "large"]}}}', False))
    R.append(("state-json-nested-unicode", _body({
        "player": {"name": "Zoë", "pos": [1.5, -2.25, {"z": 0.125}], "tags": ["été", "straße", "ñ"]},
        "msg": "quote \" backslash \\ slash / tab \t nl \n cr \r ctl \u0001 \u001f del \u007f ls \u2028",
        "empty": {}, "none": None, "list": [], "yes": True, "no": False,
        "deep": {"a": {"b": {"c": {"d": {"e": [[[1]]]}}}}},
    }, {"q": _choice("Is the player safe?", {"safe": "no threats", "unsafe": "threats nearby"})}), False))
    R.append(("state-json-mask-in-keys", _body({"[MASK]key": "val [MASK] x", "nest": {"a[MASK]": ["[MASK]"]}},
                                               {"n": _noul("Any masks?")}), False))
    R.append(("state-json-bigint", '{"state": {"id": 12345678901234567890, "neg": -9007199254740993}, '
              '"questions": {"n": {"type": "noul", "instructions": "Is the id large?"}}}', False))
    R.append(("state-nonlatin-scripts", _body(
        "中文：无人机向北飞行。日本語：ドローンは北へ。한국어: 드론이 북쪽으로. العربية: الطائرة تطير شمالا. "
        "हिन्दी: ड्रोन उत्तर की ओर उड़ता है। Ελληνικά: το drone πετά. Русский: дрон летит. "
        "emoji: 🚁👍🏽 👨‍👩‍👧 ✈️", {
            "lang": _choice("Which language comes first?", {"zh": "Chinese", "ja": "Japanese", "ar": "Arabic"}),
            "m": _noul("Is there an emoji?")}), False))
    R.append(("state-combining-nfc", _body(
        "Cafe\u0301 re\u0301sume\u0301 A\u030angstro\u0308m \u212b \u1100\u1161\u11a8 "
        "e\u0301\u0301 \ufb01 \u00e9 vs e\u0301 Vie\u0323\u0302t", {
            "nfc": _choice("Which word is French?", {"cafe\u0301": "the word cafe\u0301", "hangul": "\u1100\u1161"})}), False))
    R.append(("state-whitespace-heavy", _body(
        "  a   b\t\t c \n\n\n d    e\u00a0\u00a0f\u3000g                          h   \r\n  ", {
            "w": _choice("   Which   letter\t\tcomes   last?   ", {"  h  ": "   the   letter   h   ", "a": " a "})}), False))
    R.append(("state-empty", _body("", {"e": _noul("Is the state empty?"),
                                        "s": _score("How empty?", ["empty", "full"])}), False))
    R.append(("state-spaces-only", _body("          ", {"e": _noul("Only spaces?")}), False))
    R.append(("state-number", '{"state": 42, "questions": {"n": {"type": "noul", "instructions": "Is it 42?"}}}', False))
    R.append(("state-true", '{"state": true, "questions": {"n": {"type": "noul", "instructions": "Is it true?"}}}', False))
    R.append(("state-special-token-text", _body("before [SEP] mid [CLS] x [PAD] y [UNK] z [mask] <|padding|> end", {
        "t": _choice("Any [SEP] tokens?", {"yes": "[CLS] yes", "no": "[SEP]"})}), False))

    # instructions
    R.append(("instructions-object", '{"state": "s", "questions": {"o": {"type": "choice", '
              '"instructions": {"goal": "win", "lives": 3, "ratio": 0.5, "tags": ["a", "b"]}, '
              '"criteria": {"go": null, "stop": null}}}}', False))
    R.append(("instructions-list", '{"state": "s", "questions": {"o": {"type": "noul", '
              '"instructions": ["is", "it", 1, 2.5, null]}}}', False))
    R.append(("instructions-number", '{"state": "s", "questions": {"o": {"type": "noul", "instructions": 42}}}', False))
    R.append(("instructions-long-cut", _body("short", {
        "l": _choice(_prose(12), {"a": "first", "b": "second", "c": "third"})}), False))
    R.append(("instructions-nonlatin", _body("状態", {
        "j": _score("どのくらい危険ですか？ Cafe\u0301?", ["安全", "注意", "危険"])}), False))

    # several questions of every type in one request, request order kept
    R.append(("mixed-six-questions", _body({"alt": 32, "vy": -1.5, "gaps": [10, 20, 30]}, {
        "z-last-key": _noul("Is altitude above 30?"),
        "a-first-key": _choice("Move?", {"up": "climb", "down": "dive", "hold": "keep altitude"}),
        "m": _score("Speed?", ["slow", "medium", "fast", "very fast"]),
        "c2": _choice("Two options", ["yes", "no"]),
        "n2": _noul("Is vy negative?", {"true": "falling"}),
        "s10": _score("Ten levels", ["l%d" % i for i in range(10)]),
    }), False))

    # bodies both runtimes must refuse (laya raises; llama-server's rules reject them too)
    R.append(("error-state-null", '{"state": null, "questions": {"n": {"type": "noul", "instructions": "x?"}}}', True))
    R.append(("error-no-instructions", '{"state": "s", "questions": {"n": {"type": "noul"}}}', True))
    R.append(("error-null-instructions", '{"state": "s", "questions": {"n": {"type": "noul", "instructions": null}}}', True))
    R.append(("error-unknown-type", '{"state": "s", "questions": {"n": {"type": "maybe", "instructions": "x?"}}}', True))
    R.append(("error-choice-empty-criteria", '{"state": "s", "questions": {"c": {"type": "choice", '
              '"instructions": "x?", "criteria": {}}}}', True))
    R.append(("error-choice-string-criteria", '{"state": "s", "questions": {"c": {"type": "choice", '
              '"instructions": "x?", "criteria": "abc"}}}', True))
    R.append(("error-score-empty-levels", '{"state": "s", "questions": {"c": {"type": "score", '
              '"instructions": "x?", "criteria": []}}}', True))
    R.append(("error-noul-list-criteria", '{"state": "s", "questions": {"c": {"type": "noul", '
              '"instructions": "x?", "criteria": ["true"]}}}', True))
    # 70 options shrink to 4 tokens each: the markers run past max_len (laya: "only N of its 70
    # option markers fit"); the model's max_len of 256 is assumed (all presets use it)
    # option_order (laya Agent): slot s shows option order[s]; probabilities come back in the
    # caller's option order (unpermute_probs)
    oc = _choice("Which tool fixes a loose screw?", {"hammer": "hits nails", "screwdriver": "turns screws",
                                                      "saw": "cuts wood", "glue": "sticks parts"})
    oc["option_order"] = [3, 1, 0, 2]
    osc = _score("How tight is the lid?", ["loose", "slightly loose", "snug", "tight", "stuck"])
    osc["option_order"] = [4, 2, 0, 1, 3]
    on = _noul("Is the jar open?", {"true": "the lid is off"})
    on["option_order"] = [1, 0]
    oi = _choice("Pick a colour.", ["red", "green", "blue"])
    oi["option_order"] = [0, 1, 2]
    R.append(("option-order", _body("a jar with a stuck lid and a toolbox next to it",
                                    {"tool": oc, "lid": osc, "open": on, "colour": oi}), False))
    bad = _choice("Pick one.", {"a": "x", "b": "y", "c": "z"})
    bad["option_order"] = [0, 0, 1]
    R.append(("error-option-order-not-a-permutation", _body("s", {"q": bad}), True))
    R.append(("error-markers-past-max-len", _body("s", {
        "many": _choice("Pick one.", {"o%d" % i: "option number %d of many" % i for i in range(70)})}), True))
    # a body's per-request budgets (laya serve BODY_CONTROLS max_len / head_max_len, passed to
    # Agent.system_one(max_len=, head_max_len=)), refused as laya serve's
    # _validate_budget_param refuses them (cap LAYA_MAX_TOKEN_BUDGET 8192)
    bq = {"action": _choice("Which input keeps the drone flying through the next gap?",
                            {"thrust": "fire the rotors for an upward impulse",
                             "glide": "let gravity pull the drone down",
                             "hover": "hold the altitude where it is",
                             "dive": "drop fast under the next obstacle"}),
          "danger": _noul("Will the drone crash within the next half second if it keeps gliding?"),
          "margin": _score("How much room is left above and below the drone?", ["none", "tight", "comfortable"])}
    long_state = _prose(40)

    def budget_body(state, **b):
        d = {"state": state, "questions": bq}
        d.update(b)
        return json.dumps(d, ensure_ascii=False)
    R.append(("budget-max-len-300", budget_body(long_state, max_len=300), False))
    R.append(("budget-max-len-100", budget_body(long_state, max_len=100, head_max_len=60), False))
    R.append(("budget-head-max-len-30", budget_body(long_state, head_max_len=30), False))
    R.append(("budget-both", budget_body([_prose(3, i) for i in range(12)], max_len=200, head_max_len=40), False))
    R.append(("budget-null", budget_body(long_state, max_len=None, head_max_len=None), False))
    R.append(("error-budget-max-len-9000", budget_body("s", max_len=9000), True))
    R.append(("error-budget-head-max-len-0", budget_body("s", head_max_len=0), True))
    R.append(("error-budget-max-len-negative", budget_body("s", max_len=-5), True))
    R.append(("error-budget-max-len-float", '{"state": "s", "max_len": 300.0, "questions": '
              '{"n": {"type": "noul", "instructions": "x?"}}}', True))
    R.append(("error-budget-head-max-len-bool", budget_body("s", head_max_len=True), True))
    return R


# --------------------------------------------------------------------------- helpers -----
def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def typesafe_confidence(qtype, p):
    """llama.cpp's decision_confidence_choice / _score (server-decision.cpp); noul has none."""
    n = len(p)
    if qtype == "noul":
        return None
    if n < 2:
        return 1.0
    if qtype == "choice":
        pmax = max(p)
        return max(0.0, (pmax - 1.0 / n) / (1.0 - 1.0 / n))
    mode = max(range(n), key=lambda i: (p[i], -i))
    dist = sum(p[i] * abs(i - mode) for i in range(n))
    dist_u = sum(abs(i - (n - 1) / 2.0) for i in range(n)) / n
    return max(0.0, 1.0 - dist / dist_u)


class Recorder:
    """Observes laya's own functions during one Agent.system_one() call."""

    def __init__(self, agent_mod, agent):
        self.mod, self.agent = agent_mod, agent
        self.reset()
        self._orig = (agent_mod.build_sequence, agent_mod.unpermute_probs, agent_mod.temp_bucket, agent._forward)
        bs, up, tb, fwd = self._orig

        def build_sequence(*a, **k):
            out = bs(*a, **k)
            self.seqs.append((list(map(int, out[0])), list(map(int, out[1]))))
            return out

        def unpermute_probs(p, order):
            # in the caller's option order (what the answer reports), as laya returns it
            out = up(p, order)
            self.probs.append([float(x) for x in out])
            return out

        def temp_bucket(qt, k):
            b = tb(qt, k)
            self.buckets.append(b)
            return b

        def forward(b):
            logits, act = fwd(b)
            self.logits.append(logits.copy())
            return logits, act

        agent_mod.build_sequence, agent_mod.unpermute_probs, agent_mod.temp_bucket = \
            build_sequence, unpermute_probs, temp_bucket
        agent._forward = forward

    def reset(self):
        self.seqs, self.probs, self.buckets, self.logits = [], [], [], []

    def close(self):
        self.mod.build_sequence, self.mod.unpermute_probs, self.mod.temp_bucket, _ = self._orig
        del self.agent._forward


def run_cli(cli, args):
    r = subprocess.run([cli] + args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("make_golden: `%s %s` failed (%d): %s" % (cli, " ".join(args), r.returncode, r.stderr.strip()))
    return r.stdout


def make_checkpoint(cli, spec, workdir):
    """Our generator's Laya directory, plus a copy for laya with the temperature rewrite."""
    gen = os.path.join(workdir, spec["name"] + "-gen")
    shutil.rmtree(gen, ignore_errors=True)
    args = ["random", spec["preset"], gen, "--layout", "laya", "--seed", str(spec["seed"])]
    if spec["massive"]:
        args += ["--massive", str(spec["massive"])]
    run_cli(cli, args)
    py = os.path.join(workdir, spec["name"] + "-py")
    shutil.rmtree(py, ignore_errors=True)
    shutil.copytree(gen, py)
    if spec["temperatures"]:
        path = os.path.join(py, "rl_agent_config.json")
        with open(path) as f:
            cfg = json.load(f)
        cfg.update(spec["temperatures"])
        with open(path, "w") as f:
            json.dump(cfg, f, indent=2)
    return gen, py


def f16_rounded_copy(src, dst):
    """A copy of the checkpoint whose encoder matrices are rounded to F16 and back, which is
    what `skycmd convert --type f16` stores (1-D tensors and the decision head stay F32).
    laya's answers on it separate the F16 file format's own loss from our implementation's
    error: the C test holds its F16 run to the tight F32 bound against these."""
    import torch
    from safetensors.torch import load_file, save_file
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    w = load_file(os.path.join(src, "model.safetensors"))
    rounded = []
    for name, t in w.items():
        if name.startswith("encoder.") and t.dim() == 2:
            w[name] = t.to(torch.float16).to(t.dtype).contiguous()
            rounded.append(name)
    save_file(w, os.path.join(dst, "model.safetensors"))
    return sorted(rounded)


def answer_of(qtype, keys, p):
    if qtype == "choice":
        best = max(range(len(p)), key=lambda i: (p[i], -i))   # first on a tie, like np.argmax
        return {"choice": keys[best], "value": p[best]}
    if qtype == "score":
        return {"score": sum(i * v for i, v in enumerate(p))}
    return {"noul": p[1]}


def run_model(agent, agent_mod, reqs, accepts=()):
    """accepts: names of expect_error requests this model's larger budget admits (laya
    answers them; the fixture then holds the answers, and the C test compares those)."""
    rec = Recorder(agent_mod, agent)
    cases = []
    try:
        for name, body, expect_error in reqs:
            obj = json.loads(body)
            rec.reset()
            try:
                # laya serve's budget validation, then the budgets as system_one's arguments
                import laya.serve as serve
                budgets = {}
                for key in ("max_len", "head_max_len"):
                    v = serve._validate_budget_param(obj, key, serve.DEFAULT_MAX_TOKEN_BUDGET)
                    if v is not None:
                        budgets[key] = v
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = agent.system_one(obj["state"], obj["questions"], **budgets)
            except Exception as e:  # ValueError/TypeError (system_one), HTTPException (serve)
                if type(e).__name__ == "HTTPException":
                    e = ValueError(e.detail)
                elif not isinstance(e, (ValueError, TypeError)):
                    raise
                if not expect_error:
                    sys.exit("make_golden: laya rejected %s: %s" % (name, e))
                cases.append({"name": name, "error": "%s: %s" % (type(e).__name__, e)})
                continue
            if expect_error and name not in accepts:
                sys.exit("make_golden: laya accepted %s, which is meant to be refused" % name)
            qids = list(obj["questions"].keys())
            nq = len(qids)
            if not (len(rec.seqs) == nq and len(rec.probs) == nq and len(rec.buckets) == nq
                    and len(rec.logits) == 1):
                sys.exit("make_golden: %s: unexpected call pattern (%d seqs, %d probs, %d buckets, %d forwards)"
                         % (name, len(rec.seqs), len(rec.probs), len(rec.buckets), len(rec.logits)))
            logits = rec.logits[0]
            qs, total = [], 0
            for j, qid in enumerate(qids):
                qd = obj["questions"][qid]
                t = qd["type"]
                ids, markers = rec.seqs[j]
                p = rec.probs[j]
                k = len(markers)
                total += len(ids)
                internal = agent._to_internal(qd)
                # answer keys as they appear on the wire (json.dumps turns True into "true")
                keys = list(json.loads(json.dumps(dict.fromkeys(internal["crit"].keys()))).keys()) if t == "choice" else \
                    ([str(i) for i in range(len(internal["crit"]))] if t == "score" else ["false", "true"])
                if len(p) != k or len(keys) != k:
                    sys.exit("make_golden: %s/%s: %d probabilities, %d markers, %d keys" % (name, qid, len(p), k, len(keys)))
                qt = {"choice": 0, "score": 1, "noul": 2}[t]
                bucket = rec.buckets[j]
                temp = agent.temperature_by_options.get(bucket, agent.temperature[qt])
                ans = answer_of(t, keys, p)
                # cross-check against laya's own (rounded) answer
                pa = out["answers"][qid]
                if t == "choice":
                    assert pa["choice"] == list(internal["crit"].keys())[keys.index(ans["choice"])], (name, qid)
                    for kk, v in zip(internal["crit"].keys(), p):
                        assert abs(pa["probabilities"][kk] - round(v, 4)) < 1e-12, (name, qid)
                elif t == "score":
                    assert abs(pa["score"] - round(ans["score"], 4)) < 1e-9, (name, qid)
                else:
                    assert abs(pa["noul"] - round(ans["noul"], 4)) < 1e-9, (name, qid)
                q = {"id": qid, "type": t, "keys": keys, "ids": ids, "markers": markers,
                     "bucket": bucket, "temperature": temp,
                     "logits": [float(x) for x in logits[j, :k]],
                     "probabilities": p}
                q.update(ans)
                c = typesafe_confidence(t, p)
                if c is not None:
                    q["confidence_typesafe"] = c
                qs.append(q)
            if out["usage"]["input_tokens"] != total:
                sys.exit("make_golden: %s: input_tokens %d != %d" % (name, out["usage"]["input_tokens"], total))
            cases.append({"name": name, "input_tokens": total,
                          "truncated": bool(out["usage"].get("truncated")), "questions": qs})
    finally:
        rec.close()
    return cases


def compact_json(obj):
    # one case per line: readable diffs, small files
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def write_model_file(path, header, cases):
    with open(path, "w", encoding="utf-8") as f:
        f.write("{\n")
        for k, v in header.items():
            f.write("%s: %s,\n" % (json.dumps(k), compact_json(v)))
        f.write('"cases": [\n')
        f.write(",\n".join(compact_json(c) for c in cases))
        f.write("\n]}\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", required=True, help="path of the built skycmd CLI")
    ap.add_argument("--out", default=os.path.join(repo, "tests", "fixtures", "golden"))
    ap.add_argument("--work", default=None, help="scratch directory (default: a temporary one)")
    ap.add_argument("--models", default=None, help="comma-separated subset of model names")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    ap.add_argument("--any-version", action="store_true",
                    help="run even if the packages differ from tools/golden/requirements.txt")
    a = ap.parse_args()

    import numpy
    import safetensors
    import tokenizers
    import torch
    import transformers
    import laya
    import laya.agent as agent_mod

    # the fixtures are only as good as the reference: refuse versions other than the pinned ones
    pins = {}
    with open(os.path.join(here, "requirements.txt")) as f:
        for line in f:
            line = line.split("#")[0].strip()
            if "==" in line:
                k, v = line.split("==", 1)
                pins[k.strip().lower()] = v.strip()
    have = {"laya": laya.__version__, "torch": torch.__version__, "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__, "safetensors": safetensors.__version__,
            "numpy": numpy.__version__}
    bad = ["%s %s (pinned %s)" % (k, v, pins[k]) for k, v in have.items()
           if k in pins and v.split("+")[0] != pins[k]]
    if bad and not a.any_version:
        sys.exit("make_golden: not the pinned reference versions: %s (--any-version to go on)" % ", ".join(bad))

    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    versions = {"laya": laya.__version__, "torch": torch.__version__, "transformers": transformers.__version__,
                "tokenizers": tokenizers.__version__, "safetensors": safetensors.__version__,
                "numpy": numpy.__version__, "python": "%d.%d.%d" % sys.version_info[:3]}

    models = MODELS
    if a.models:
        want = set(a.models.split(","))
        models = [m for m in MODELS if m["name"] in want]
    reqs = requests()
    names = [r[0] for r in reqs]
    assert len(names) == len(set(names)), "duplicate case names"
    for n, body, _ in reqs:
        json.loads(body)

    os.makedirs(a.out, exist_ok=True)
    work = a.work or tempfile.mkdtemp(prefix="golden-")
    os.makedirs(work, exist_ok=True)
    manifest = {"format": FORMAT_VERSION, "generator": "tools/golden/make_golden.py", "versions": versions,
                "requests": "requests.json", "models": []}
    outputs = []   # written only once every model has run: no half-updated fixture set

    for spec in models:
        gen, py = make_checkpoint(a.cli, spec, work)
        sha = sha256_file(os.path.join(gen, "model.safetensors"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agent = laya.Agent(py, device="cpu")
        cases = run_model(agent, agent_mod, reqs)
        header = {
            "format": FORMAT_VERSION,
            "model": spec["name"], "preset": spec["preset"], "seed": spec["seed"], "massive": spec["massive"],
            "temperature_overrides": spec["temperatures"],
            "model_safetensors_sha256": sha,
            "max_len": agent.cfg.get("max_len", 512), "head_max_len": agent.cfg.get("head_max_len", 192),
            "temperature_applied": agent.temperature,
            "temperature_by_options_applied": agent.temperature_by_options,
            "special_ids": {"cls": agent.tok.cls_token_id, "sep": agent.tok.sep_token_id,
                            "mask": agent.tok.mask_token_id, "pad": agent.tok.pad_token_id},
            "versions": versions,
        }
        del agent
        # the same requests on F16-rounded encoder matrices (see f16_rounded_copy)
        header["f16_rounded_tensors"] = f16_rounded_copy(py, py + "-f16w")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agent16 = laya.Agent(py + "-f16w", device="cpu")
        cases16 = run_model(agent16, agent_mod, reqs)
        del agent16
        for c, c16 in zip(cases, cases16):
            for q, q16 in zip(c.get("questions", []), c16.get("questions", [])):
                assert q["ids"] == q16["ids"] and q["markers"] == q16["markers"]
                q["probabilities_f16w"] = q16["probabilities"]
        fname = spec["name"] + ".json"
        outputs.append((fname, header, cases))
        manifest["models"].append({k: header[k] for k in (
            "model", "preset", "seed", "massive", "temperature_overrides", "model_safetensors_sha256")}
            | {"fixture": fname})
        nq = sum(len(c.get("questions", [])) for c in cases)
        print("%s: %d cases (%d questions), sha256 %s" % (spec["name"], len(cases), nq, sha[:16]))
    tok_dir = os.path.join(repo, "tests", "fixtures", "convert", "pylaya", "tokenizer")
    built = LAYA_BUILT
    if a.models:
        built = [b for b in LAYA_BUILT if b["name"] in set(a.models.split(","))]
    for spec in built:
        rel = os.path.join("ckpt", spec["name"])
        tdir = os.path.join(repo, spec["tokenizer"]) if "tokenizer" in spec else tok_dir
        ck = build_laya_checkpoint(spec, tdir, os.path.join(a.out, rel))
        # laya may rewrite tokenizer_config.json in place: it runs on a copy
        py = os.path.join(work, spec["name"] + "-py")
        shutil.rmtree(py, ignore_errors=True)
        shutil.copytree(ck, py)
        sha = sha256_file(os.path.join(ck, "model.safetensors"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agent = laya.Agent(py, device="cpu")
        cases = run_model(agent, agent_mod, reqs, spec.get("accepts", ()))
        header = {
            "format": FORMAT_VERSION, "model": spec["name"], "checkpoint": rel, "built_by": spec,
            "model_safetensors_sha256": sha,
            "max_len": agent.cfg.get("max_len", 512), "head_max_len": agent.cfg.get("head_max_len", 192),
            "temperature_applied": agent.temperature,
            "temperature_by_options_applied": agent.temperature_by_options,
            "special_ids": {"cls": agent.tok.cls_token_id, "sep": agent.tok.sep_token_id,
                            "mask": agent.tok.mask_token_id, "pad": agent.tok.pad_token_id},
            "versions": versions,
        }
        del agent
        header["f16_rounded_tensors"] = f16_rounded_copy(py, py + "-f16w")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agent16 = laya.Agent(py + "-f16w", device="cpu")
        cases16 = run_model(agent16, agent_mod, reqs, spec.get("accepts", ()))
        del agent16
        spread = []
        for c, c16 in zip(cases, cases16):
            for q, q16 in zip(c.get("questions", []), c16.get("questions", [])):
                assert q["ids"] == q16["ids"] and q["markers"] == q16["markers"]
                q["probabilities_f16w"] = q16["probabilities"]
                if len(q["probabilities"]) >= 2:
                    spread.append(max(q["probabilities"]) - min(q["probabilities"]))
        fname = spec["name"] + ".json"
        outputs.append((fname, header, cases))
        entry = {"model": spec["name"], "checkpoint": rel, "model_safetensors_sha256": sha,
                 "fixture": fname}
        if "f16_tolerance" in spec:
            entry["f16_tolerance"] = spec["f16_tolerance"]
        manifest["models"].append(entry)
        spread.sort()
        print("%s: %d cases, median max-min probability %.3f" % (spec["name"], len(cases),
                                                                 spread[len(spread) // 2]))
    with open(os.path.join(a.out, "requests.json"), "w", encoding="utf-8") as f:
        f.write("[\n" + ",\n".join(compact_json({"name": n, "body": b, "expect_error": e}) for n, b, e in reqs) + "\n]\n")
    for fname, header, cases in outputs:
        write_model_file(os.path.join(a.out, fname), header, cases)
    if a.models:
        # a subset run keeps the other models' manifest entries (their fixtures are untouched;
        # requests.json was rewritten, so rerun everything if requests() changed)
        try:
            with open(os.path.join(a.out, "manifest.json")) as f:
                old = json.load(f)["models"]
        except (OSError, ValueError, KeyError):
            old = []
        done = {m["model"] for m in manifest["models"]}
        order = [m["name"] for m in MODELS + LAYA_BUILT]
        merged = [m for m in old if m.get("model") not in done and m.get("model") in order] + manifest["models"]
        manifest["models"] = sorted(merged, key=lambda m: order.index(m["model"]))
    with open(os.path.join(a.out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
        f.write("\n")
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
