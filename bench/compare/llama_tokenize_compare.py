#!/usr/bin/env python3
"""llama_tokenize_compare.py - llama-server's tokenizer against Hugging Face `tokenizers` on a corpus.

Given the path of an EXISTING llama-server binary (this script never builds or fetches
llama.cpp) and a GGUF written by skycmd, it starts `llama-server -m MODEL` on loopback,
sends every string of a corpus to its POST /tokenize (add_special false, parse_special true:
what the /v1/systemone prompt uses, `common_tokenize(vocab, prompt, false, true)`), and
compares the ids with those `tokenizers` gives for the same string (`encode(s,
add_special_tokens=False)`), read from a fixture written by tools/golden/make_gemma_tokenizer.py
(tests/fixtures/gemma_tok/expected_NAME.txt: a "specials" line, then "ids<TAB>hex(decode)"
per string of corpus.txt, hex UTF-8 per line). skycmd's own tokenizer reproduces those
fixtures exactly (tests/test_gemma_tok.c), so any difference here is llama.cpp's.

Each differing string is put in the first class that applies, to name the cause:
  newline        the string has a newline (llama.cpp's mmbert pre-tokenizer splits there
                 first and then starts every line with U+2581)
  special-text   the string holds a special token's text (<mask>, <bos>...; each piece after
                 it is a new fragment in llama.cpp, and <mask> gets lstrip)
  prefix         llama.cpp's ids are tokenizers' with an extra leading U+2581 (its Metaspace
                 step always starts a fragment with an escaped space)
  cross-space    a token of tokenizers' answer has U+2581 inside it (llama.cpp splits words
                 at every U+2581 before BPE, so such a token can never come out of it)
  byte-fallback  tokenizers' answer uses <0xNN> byte tokens
  other
With the `gguf` Python package (tools/golden/requirements.txt) the token texts come from the
GGUF; without it only `newline`, `special-text` and `other` are told apart.

Usage:
  /tmp/gvenv/bin/python bench/compare/llama_tokenize_compare.py --llama-server /path/to/llama-server \
      --model /tmp/m.gguf --expected tests/fixtures/gemma_tok/expected_gemma3000.txt \
      [--corpus tests/fixtures/gemma_tok/corpus.txt] [--show 5] [--out result.json]
Exit status 0 when every string gives the same ids, 1 when some differ, 2 on a setup error.
"""
import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import time

SPACE = "\u2581"


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_server_compare import free_port, wait_health  # noqa: E402  (one server start-up for both scripts)


def read_vocab(path):
    try:
        import gguf
    except ImportError:
        return None
    r = gguf.GGUFReader(path)
    f = r.fields["tokenizer.ggml.tokens"]
    return [bytes(f.parts[i]).decode("utf-8") for i in f.data]


def classify(s, want, got, vocab, specials):
    if "\n" in s:
        return "newline"
    if any(t in s for t in specials):
        return "special-text"
    if vocab is None:
        return "other"
    wp = [vocab[i] for i in want]
    gp = [vocab[i] for i in got if 0 <= i < len(vocab)]
    if "".join(gp) == SPACE + "".join(wp) or (gp and gp[0].startswith(SPACE) and
                                              not (wp and wp[0].startswith(SPACE)) and
                                              "".join(gp)[1:] == "".join(wp)):
        return "prefix"
    if any(SPACE in p.lstrip(SPACE) for p in wp if p.strip(SPACE)):
        return "cross-space"
    if any(len(p) == 6 and p.startswith("<0x") and p.endswith(">") for p in wp):
        return "byte-fallback"
    return "other"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llama-server", required=True, help="path of an existing llama-server binary")
    ap.add_argument("--model", required=True, help="GGUF written by skycmd (random or convert)")
    ap.add_argument("--expected", required=True, help="expected_NAME.txt (ids from tokenizers)")
    ap.add_argument("--corpus", default=None, help="corpus.txt (default: beside --expected)")
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--limit", type=int, default=0, help="first N strings only (0 = all)")
    ap.add_argument("--show", type=int, default=3, help="examples printed per class")
    ap.add_argument("--out", help="write counts and the differing strings as JSON")
    a = ap.parse_args()
    corpus = a.corpus or os.path.join(os.path.dirname(a.expected), "corpus.txt")
    with open(corpus) as f:
        strs = [bytes.fromhex(l.strip()).decode("utf-8") for l in f if l.strip()]
    with open(a.expected) as f:
        lines = f.read().split("\n")
    if not lines[0].startswith("specials"):
        print("%s: no 'specials' line" % a.expected)
        return 2
    want_all = []
    for l in lines[1:1 + len(strs)]:
        ids = l.split("\t", 1)[0]
        want_all.append([int(x) for x in ids.split()] if ids else [])
    if len(want_all) != len(strs):
        print("corpus has %d strings, expected file %d lines" % (len(strs), len(want_all)))
        return 2
    if a.limit:
        strs, want_all = strs[:a.limit], want_all[:a.limit]
    vocab = read_vocab(a.model)
    specials = [t for t in ("<pad>", "<eos>", "<bos>", "<unk>", "<mask>")]

    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)
    cmd = [a.llama_server, "-m", a.model, "-c", str(a.ctx), "--host", "127.0.0.1",
           "--port", str(port), "-ngl", "0", "-np", "1"]
    print("$", " ".join(cmd))
    srv = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        if not wait_health(port, srv, 300):
            log.flush()
            with open(log.name, encoding="utf-8", errors="replace") as f:
                print("LOAD FAILED (exit %s); log tail:\n%s" % (srv.poll(), f.read()[-4000:]))
            return 2
        print("load: OK, log in", log.name)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        same, classes, diffs = 0, {}, []
        t0 = time.time()
        for i, (s, want) in enumerate(zip(strs, want_all)):
            body = json.dumps({"content": s, "add_special": False, "parse_special": True})
            conn.request("POST", "/tokenize", body=body, headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            data = r.read()
            if r.status != 200:
                print("string %d: HTTP %d %r" % (i, r.status, data[:200]))
                return 2
            got = json.loads(data)["tokens"]
            if got == want:
                same += 1
                continue
            c = classify(s, want, got, vocab, specials)
            classes[c] = classes.get(c, 0) + 1
            diffs.append({"index": i, "class": c, "text": s, "tokenizers": want, "llama": got})
        dt = time.time() - t0
        n = len(strs)
        print("\n%s vs tokenizers (%s): %d strings, %d identical ids (%.1f %%), %d differ; %.1f s"
              % (os.path.basename(a.model), os.path.basename(a.expected), n, same,
                 100.0 * same / max(n, 1), n - same, dt))
        for c in sorted(classes, key=lambda k: -classes[k]):
            print("  %-14s %d" % (c, classes[c]))
            for d in [d for d in diffs if d["class"] == c][:a.show]:
                wp = [vocab[i] for i in d["tokenizers"]] if vocab else d["tokenizers"]
                gp = [vocab[i] for i in d["llama"] if 0 <= i < len(vocab)] if vocab else d["llama"]
                print("     #%d %r\n       tokenizers %s\n       llama.cpp  %s" % (
                    d["index"], d["text"][:60], json.dumps(wp[:12], ensure_ascii=False),
                    json.dumps(gp[:12], ensure_ascii=False)))
        if a.out:
            with open(a.out, "w") as f:
                json.dump({"model": a.model, "expected": a.expected, "strings": n,
                           "identical": same, "classes": classes, "diffs": diffs}, f,
                          ensure_ascii=False, indent=1)
        return 0 if same == n else 1
    finally:
        if srv.poll() is None:
            srv.terminate()
            try:
                srv.wait(10)
            except subprocess.TimeoutExpired:
                srv.kill()


if __name__ == "__main__":
    sys.exit(main())
