#!/usr/bin/env python3
"""make_fuzz_model_seeds.py - the seed models of tests/fuzz/fuzz_model.c, small on purpose.

libFuzzer mutates and loads a whole model per execution; with the s1-pico seeds (546 KB) the
target ran about 400 executions a second, far too slow to reach 10^7. These seeds keep
s1-pico's structure (two encoder layers, one local and one global, and a decision-head
block; every key and tensor kind the loader reads, the byte-level BPE tokenizer with its
added tokens) at hidden size 32 and a vocabulary cut to 400 tokens plus the added ones, so a
seed is ~45 KB.

Reads a `skycmd random s1-pico` F16 GGUF (made by SKYCMD, the CLI) with the `gguf` package,
rewrites its keys and tensors at the small shape (random weights from a fixed seed), then
makes the Q8_0 seed and the calibrated-int8 seed with the CLI:

  python3 tools/golden/make_fuzz_model_seeds.py build/skycmd

writes tests/fuzz/corpus/model/{tiny-f16,tiny-q8_0,tiny-int8-store,tiny-int8-rows}.gguf.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter

D, FF_ENC, FF_HEAD, KEEP = 32, 32, 64, 400   # hidden, encoder/head FFN, vocabulary kept
OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fuzz", "corpus", "model")


def shape_of(name, ne, n_vocab):
    """The small shape (ggml order, ne[0] innermost) of s1-pico's tensor `name`."""
    if name == "token_embd.weight":
        return [D, n_vocab]
    if name == "token_types.weight":
        return [D, ne[1]]
    if name == "cls.output.weight":
        return [D, 1]
    if name == "cls.output.bias":
        return [1]
    head = name.startswith("blk.2.")
    ff = FF_HEAD if head else FF_ENC
    if name.endswith("attn_qkv.weight"):
        return [D, 3 * D]
    if name.endswith("attn_qkv.bias"):
        return [3 * D]
    if name.endswith("ffn_up.weight"):   # the encoder's up is gated (GEGLU): 2 ff rows
        return [D, ff if head else 2 * ff]
    if name.endswith("ffn_up.bias"):
        return [ff]
    if name.endswith("ffn_down.weight"):
        return [ff, D]
    if len(ne) == 1:
        return [D]
    return [D, D]


def field_value(f):
    """A reader field as (value, type, sub_type) for GGUFWriter.add_key_value."""
    t = f.types[0]
    if t == GGUFValueType.ARRAY:
        # (an empty array's element type is not in the reader's field: these are i32 lists)
        return list(f.contents()), t, f.types[1] if len(f.types) > 1 else GGUFValueType.INT32
    return f.contents(), t, None


def main():
    sky = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build/skycmd")
    work = tempfile.mkdtemp(prefix="fuzz-model-seeds-")
    src = os.path.join(work, "s1-pico.gguf")
    subprocess.run([sky, "random", "s1-pico", src, "--type", "f16", "--seed", "7", "-q"], check=True)
    r = GGUFReader(src)
    kv = {f.name: field_value(f) for f in r.fields.values() if not f.name.startswith("GGUF.")}
    tokens = kv["tokenizer.ggml.tokens"][0]
    added = kv["skycmd.tokenizer.added_ids"][0]
    # keep ids [0, KEEP) and the added tokens past it, renumbered after them
    keep = list(range(KEEP)) + [i for i in added if i >= KEEP]
    new_id = {old: new for new, old in enumerate(keep)}
    kept = set(tokens[i] for i in keep)
    merges = [m for m in kv["tokenizer.ggml.merges"][0]
              if all(p in kept for p in m.split(" ")) and m.replace(" ", "") in kept]
    n_vocab = len(keep)
    arch = kv["general.architecture"][0]
    kv["tokenizer.ggml.tokens"] = ([tokens[i] for i in keep],) + kv["tokenizer.ggml.tokens"][1:]
    kv["tokenizer.ggml.token_type"] = ([kv["tokenizer.ggml.token_type"][0][i] for i in keep],) + \
        kv["tokenizer.ggml.token_type"][1:]
    kv["tokenizer.ggml.merges"] = (merges,) + kv["tokenizer.ggml.merges"][1:]
    kv["skycmd.tokenizer.added_ids"] = ([new_id[i] for i in added],) + kv["skycmd.tokenizer.added_ids"][1:]
    for key in ("skycmd.tokenizer.lstrip_ids", "skycmd.tokenizer.rstrip_ids"):
        kv[key] = ([new_id[i] for i in kv[key][0]],) + kv[key][1:]
    kv[arch + ".vocab_size"] = (n_vocab,) + kv[arch + ".vocab_size"][1:]
    kv[arch + ".embedding_length"] = (D,) + kv[arch + ".embedding_length"][1:]
    kv[arch + ".feed_forward_length"] = ([FF_ENC, FF_ENC, FF_HEAD],) + kv[arch + ".feed_forward_length"][1:]
    kv["general.name"] = ("fuzz-tiny",) + kv["general.name"][1:]

    rng = np.random.default_rng(7)
    f16 = os.path.join(OUT, "tiny-f16.gguf")
    w = GGUFWriter(f16, arch)
    for k, (v, t, st) in kv.items():
        # (the gguf package writes no empty array: skycmd.tokenizer.rstrip_ids [] is left
        # out, which the loader reads as empty)
        if k not in ("general.architecture", "general.alignment") and v != []:
            w.add_key_value(k, v, t, st)
    for t in r.tensors:
        ne = shape_of(t.name, [int(x) for x in t.shape], n_vocab)
        shape = list(reversed(ne))        # numpy order: outermost first
        if len(ne) == 1:
            a = np.ones(shape) if t.name.endswith("norm.weight") else rng.normal(0, 0.02, shape)
        else:
            a = rng.normal(0, 0.5 / np.sqrt(ne[0]), shape)
        w.add_tensor(t.name, a.astype(np.float16 if t.tensor_type == 1 else np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    subprocess.run([sky, "quantize", f16, os.path.join(OUT, "tiny-q8_0.gguf"), "--type", "q8_0", "-q"], check=True)
    subprocess.run([sky, "quantize", f16, os.path.join(OUT, "tiny-int8-store.gguf"), "--calibrated", "-q"], check=True)
    subprocess.run([sky, "quantize", f16, os.path.join(OUT, "tiny-int8-rows.gguf"), "--calibrated", "--q8-row",
                    "-q"], check=True)
    modes = {"tiny-int8-store": ["--q8"], "tiny-int8-rows": ["--q8-row"]}
    for n in ("tiny-f16", "tiny-q8_0", "tiny-int8-store", "tiny-int8-rows"):
        p = os.path.join(OUT, n + ".gguf")
        subprocess.run([sky, "decide", p, "-", "--no-progress", *modes.get(n, ["--f32"])],
                       input=b'{"state":"vy 0 dx 36","questions":{"a":{"type":"noul","instructions":"Crash?"}}}',
                       check=True, stdout=subprocess.DEVNULL)
        print("%s: %d bytes, answers" % (p, os.path.getsize(p)))


if __name__ == "__main__":
    main()
