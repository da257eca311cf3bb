#!/usr/bin/env python3
"""Expected token ids for tests/test_tokenizer.c, computed by Hugging Face `tokenizers`.

Inputs: tokenizer directories under tests/fixtures/tokenizer/ written by OUR random
vocabulary builder (sk_tokenizer_random_json; regenerate them with
`SKYCMD_WRITE_TOKENIZER_FIXTURES=tests/fixtures/tokenizer build/tests/test_tokenizer
--filter 'fixtures/*'` or pass --test-bin). This script then:

  * derives two variants with `tokenizers` itself: vocab1024_im (ignore_merges = true) and
    vocab1024_edge (extra added tokens with rstrip, single_word, normalized contents that
    NFC changes, a non-special non-normalized token, and tokens outside the model vocab);
  * checks that transformers' AutoTokenizer loads every directory offline and agrees with
    `tokenizers` on every string;
  * writes corpus.txt (one hex-encoded UTF-8 string per line, >= 2000 strings) and, per
    tokenizer, expected_<name>.txt: a `specials` line (cls sep mask pad unk ids and the
    vocabulary size, from AutoTokenizer), then per corpus line "<ids>\\t<hex of decode>";
  * writes expected_gguf_<name>.json: the tokens, token types, merges and special ids that
    llama.cpp's converter would write (gguf-py's SpecialVocab + the gpt2 vocabulary rules).

Pinned: tokenizers==0.23.3, transformers==5.23.0 (tools/golden/requirements.txt).
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys

import tokenizers
import transformers
from tokenizers import AddedToken, Tokenizer
from transformers import AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(ROOT, "tests", "fixtures", "tokenizer")


def corpus(seed=20261129):
    rnd = random.Random(seed)
    out = []
    add = out.append
    prose = [
        "The quick brown fox jumps over the lazy dog.",
        "Which action should the drone take when the gate is above it?",
        "It's 5 o'clock somewhere, isn't it? They're here; we've won, I'm sure you'll see, he'd agree.",
        "Score the danger from 0 to 4.",
        "choice question: pick the safest option",
        "vy 0 dx 36 up 9",
        "vy -12 dx 140 up 3 down 77 gap 120 y 240 score 17",
        "Hello, World!",
        "   leading spaces", "trailing spaces   ", "\ttabbed\tline\t", "line one\nline two\r\nline three",
        "", " ", "  ", "a", "I", "'", "''", "'s", "'S", "'re'", "don't", "DON'T", "rock'n'roll",
        "can’t won’t", "e-mail: someone@example.com, url: https://example.org/a?b=c&d=e#f",
        "C:\\path\\to\\file.txt", "snake_case_name and camelCaseName and SCREAMING_CASE",
        "1+1=2", "3.14159", "-0.5e-10", "1,000,000", "2026-11-29T12:30:00Z", "0x1F600", "100%",
    ]
    for s in prose:
        add(s)
    words = ("the drone wind river gate speed option answer policy state glide thrust wait "
             "safe risk level true false choice score noul question value height gap "
             "a an of to in on is are was were be it its they them we you I").split()
    for _ in range(300):
        n = rnd.randint(1, 14)
        s = " ".join(rnd.choice(words) for _ in range(n))
        if rnd.random() < 0.3:
            s = s.capitalize()
        if rnd.random() < 0.5:
            s += rnd.choice([".", "?", "!", "...", ";", ":", ",", " -", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d"])
        add(s)
    # numbers
    for _ in range(120):
        k = rnd.randint(0, 5)
        if k == 0:
            s = str(rnd.randint(0, 10 ** rnd.randint(1, 20)))
        elif k == 1:
            s = "%.*f" % (rnd.randint(0, 8), rnd.uniform(-1e6, 1e6))
        elif k == 2:
            s = " ".join(str(rnd.randint(-500, 500)) for _ in range(rnd.randint(2, 10)))
        elif k == 3:
            s = "".join(rnd.choice("0123456789") for _ in range(rnd.randint(1, 40)))
        elif k == 4:
            s = "x%dy%dz" % (rnd.randint(0, 999), rnd.randint(0, 99999))
        else:
            s = "½ ¾ ² ³ ١٢٣ ४५६ 一二三 Ⅳ ⅻ ①②"
        add(s)
    # punctuation runs
    punct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~§¶•–—…«»¿¡“”‘’"
    for _ in range(120):
        s = "".join(rnd.choice(punct) for _ in range(rnd.randint(1, 30)))
        if rnd.random() < 0.5:
            s = rnd.choice(words) + s + rnd.choice(words)
        add(s)
    # whitespace runs of every length and kind
    spaces = [" ", "\t", "\n", "\r", "\r\n", "\u00a0", "\u3000", "\u2003", "\u205f", "\u0085",
              "\u1680", "\u2028", "\u000b", "\u000c", "\u202f", "\u200b", "\u180e", "\ufeff"]
    for ws in spaces:
        for n in (1, 2, 3, 5, 8, 9, 17):
            add("a" + ws * n + "b")
            add(ws * n + "x")
            add("y" + ws * n)
    for n in range(1, 41):
        add("word" + " " * n + "next")
        add(" " * n)
        add("\t" * (n % 7 + 1) + " " * n + "z")
    for _ in range(150):
        s = ""
        for _ in range(rnd.randint(1, 8)):
            s += rnd.choice(words[:10] + ["1", "2.5", "!?", "ü", "日本"])
            s += "".join(rnd.choice(spaces) for _ in range(rnd.randint(0, 6)))
        add(s)
    # special tokens embedded
    specials = ["[MASK]", "[CLS]", "[SEP]", "[PAD]", "[UNK]"]
    for sp in specials:
        for tmpl in ("%s", "a%sb", "a %s b", "a  %s  b", " %s", "%s ", "\t%s\n", "%s%s", "[%s]",
                     "x %s%s y", "choice question: %s thrust", "\u00a0%s", "\u3000%s",
                     "é%sé", "%s's", "1%s2"):
            add(tmpl.replace("%s", sp))
    for s in ("[mask]", "[MASK", "MASK]", "[ MASK]", "[MAS K]", "[[MASK]]", "[MASK][CLS][SEP][PAD][UNK]",
              "[CLS]choice question: Which team?[SEP][MASK] red[MASK] blue[SEP]state[SEP]",
              "   [MASK]   [MASK]", "[MASK]" * 10, "a" + "  " * 3 + "[MASK]"):
        add(s)
    # NFC: combining marks, decomposed vs precomposed, singletons, Hangul
    nfc = ["café", "cafe\u0301", "e\u0301", "E\u0300", "a\u0308", "o\u0302\u0323", "o\u0323\u0302",
           "\u1100\u1161", "\u1100\u1161\u11a8", "한국어", "\u1112\u1161\u11ab\u1100\u116e\u11a8",
           "\u212b", "\u2126", "\u212a", "\uf900", "\u0344", "\u1e9b\u0323", "q\u0307\u0323",
           "ñ", "n\u0303", "Å", "A\u030a", "ḉ", "c\u0327\u0301", "\u0301", "\u0301\u0301abc",
           "ﬁ ligature", "ａｂｃ fullwidth", "Ⅻ", "x\u20d7", "\u0915\u093c", "\u0929",
           "Zoë Saldaña and Beyoncé", "Zoe\u0308 Saldan\u0303a", "ǅ ǈ ǋ", "İstanbul ı",
           "ß ẞ", "\u00c5\u0327", "A\u0327\u030a"]
    for s in nfc:
        add(s)
        add(" " + s)
        add("x" + s + "y")
    # scripts
    scripts = [
        "Дрон летит над рекой, и ветер толкает его к скалам.",
        "Το drone πετά πάνω από το ποτάμι.",
        "无人机在河上飞行，风把它推向悬崖。",
        "ドローンは川の上を飛ぶ。カタカナとひらがな",
        "드론이 강 위를 날아간다.",
        "الطائرة بدون طيار تحلق فوق النهر.",
        "הרחפן טס מעל הנהר.",
        "ड्रोन नदी के ऊपर उड़ता है।",
        "โดรนบินอยู่เหนือแม่น้ำ",
        "ட்ரோன் ஆற்றின் மேல் பறக்கிறது",
        "Ο Ζεύς και η Ἥρα", "Ꭰꭰ Cherokee", "ᚠᚢᚦ runes", "ⴰⵣⵓⵍ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛",
        "Le drone survole la rivière ; c'est déjà l'été.",
        "¿Qué acción debería tomar? La niña señaló.",
        "Größere Lücken sind schöner.",
        "mixed: English, русский, 中文, العربية, हिन्दी, 日本語 123",
    ]
    for s in scripts:
        add(s)
        add(s.upper())
        add(s.replace(" ", "  "))
    emoji = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷🇩🇪", "❤️", "🏳️‍🌈", "😀😀😀", "a😀b", " 😀 ", "🤖: beep"]
    for s in emoji:
        add(s)
        add("emoji " + s + " end")
    # JSON texts
    for _ in range(120):
        obj = {}
        for _ in range(rnd.randint(1, 6)):
            k = rnd.choice(["vy", "dx", "gap", "alive", "name", "état", "名前", "tags", "pos"])
            v = rnd.choice([rnd.randint(-1000, 1000), rnd.uniform(-10, 10), True, False, None,
                            rnd.choice(words), [rnd.randint(0, 9) for _ in range(3)],
                            {"x": rnd.random(), "y": "é"}])
            obj[k] = v
        s = json.dumps(obj, ensure_ascii=rnd.random() < 0.3)
        add(s)
        if rnd.random() < 0.3:
            add(json.dumps(obj, indent=2, ensure_ascii=False))
    # contractions and apostrophes
    for c in ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'x", "’s"]:
        add("it" + c)
        add("it" + c + " more")
        add(c)
        add(" " + c)
        add(c + c)
    # control chars and NUL
    for s in ["\x00", "a\x00b", "\x00\x00", "\x01\x02\x03", "\x7f", "tab\x1fsep", "\x1c\x1d\x1e",
              "nul at end\x00", "\u200d", "\u200c\u200d", "\ue000 private", "\U000f0000"]:
        add(s)
    # Unicode 16 letters / numbers that utf8proc 15 does not know
    for cp in (0x1C89, 0xA7CB, 0x105C0, 0x10D4A, 0x11380, 0x13460, 0x16100, 0x1E5D0, 0x2EBF0,
               0x10D40, 0x116D0, 0x16130, 0x1CCF0, 0x1E5F1):
        ch = chr(cp)
        add(ch)
        add(" " + ch + ch + " x")
        add("a" + ch + "1")
    # random code points from many blocks (exercise the class tables)
    blocks = [(0x20, 0x7e), (0xa0, 0x24f), (0x300, 0x36f), (0x370, 0x52f), (0x590, 0x6ff),
              (0x900, 0xdff), (0xe00, 0xeff), (0x1100, 0x11ff), (0x1d00, 0x1fff), (0x2000, 0x2bff),
              (0x3000, 0x30ff), (0x4e00, 0x4eff), (0xac00, 0xacff), (0xf900, 0xfaff), (0xfb00, 0xfdff),
              (0xfe00, 0xffef), (0x10000, 0x1ffff), (0x20000, 0x2ffff), (0xe0000, 0xe01ef)]
    for _ in range(400):
        n = rnd.randint(1, 12)
        s = ""
        for _ in range(n):
            lo, hi = rnd.choice(blocks)
            c = rnd.randint(lo, hi)
            if 0xD800 <= c <= 0xDFFF:
                c = 0x41
            s += chr(c)
            if rnd.random() < 0.2:
                s += rnd.choice([" ", "  ", "\t", "\n"])
        add(s)
    # long words and runs
    add("a" * 5000)
    add("ab" * 3000)
    add("x" + "1" * 4000)
    add("!" * 3000)
    add(" " * 2000 + "end")
    add("\n" * 1000)
    add("é" * 2000)
    add("e\u0301" * 1000)
    add("中" * 2000)
    add(("the drone " * 400).strip())
    add("[MASK]" * 500)
    add(" ".join(["supercalifragilisticexpialidocious"] * 50))
    add("".join(words) * 20)
    seen = set()
    uniq = []
    for s in out:
        if s not in seen:
            seen.add(s)
            uniq.append(s)
    return uniq


def bytes_to_unicode():
    """GPT-2's byte -> printable character table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def derive_variants():
    base = os.path.join(FIX, "vocab1024")
    # ignore_merges = true
    im = os.path.join(FIX, "vocab1024_im")
    os.makedirs(im, exist_ok=True)
    with open(os.path.join(base, "tokenizer.json"), encoding="utf-8") as f:
        d = json.load(f)
    d["model"]["ignore_merges"] = True
    # Whole words that the merges cannot build: only ignore_merges emits them as one token.
    b2u = bytes_to_unicode()
    vocab = d["model"]["vocab"]
    nxt = max(vocab.values()) + 1
    for w in ["drone", " drone", " the", "hello", " gate", " 42", "...", " Дрон", " über", "1234",
              " question", "choice", " thrust", "Ġ", " café", "ab", " speed", " wind", "'s", " 😀"]:
        bl = "".join(b2u[b] for b in w.encode("utf-8"))
        if bl not in vocab:
            vocab[bl] = nxt
            nxt += 1
    with open(os.path.join(im, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(d, f, ensure_ascii=False, indent=1)
    shutil.copy(os.path.join(base, "tokenizer_config.json"), im)
    # extra added tokens, assigned ids by tokenizers itself
    edge = os.path.join(FIX, "vocab1024_edge")
    os.makedirs(edge, exist_ok=True)
    tk = Tokenizer.from_file(os.path.join(base, "tokenizer.json"))
    tk.add_tokens([
        AddedToken("<|x|>", normalized=False, special=False),
        AddedToken("cafe\u0301", normalized=True),            # NFC changes the pattern
        AddedToken("drone", single_word=True, normalized=True),
        AddedToken("!!", rstrip=True, normalized=False),
        AddedToken("<sep2>", lstrip=True, rstrip=True, normalized=False, special=True),
        AddedToken("the", normalized=True),                  # also a model token
        AddedToken("Å", normalized=True),
    ])
    tk.save(os.path.join(edge, "tokenizer.json"))
    shutil.copy(os.path.join(base, "tokenizer_config.json"), edge)


def gguf_expectation(d, at):
    """What llama.cpp's converter (gguf-py) would write for this vocabulary: tokens and token
    types by the rules of convert_hf_to_gguf's gpt2 get_vocab_base, merges and special ids by
    gguf.SpecialVocab (the pinned gguf package)."""
    import gguf
    vocab = at.get_vocab()
    n = max(vocab.values()) + 1
    rev = {i: t for t, i in vocab.items()}
    added = at.get_added_vocab()
    dec = at.added_tokens_decoder
    toks, types = [], []
    for i in range(n):
        if i not in rev:
            toks.append("[PAD%d]" % i)
            types.append(int(gguf.TokenType.UNUSED))
            continue
        t = rev[i]
        if t in added:
            if not dec[i].normalized:
                t = at.decode(at.encode(t, add_special_tokens=False))
            looks = (t.startswith("<|") and t.endswith("|>")) or t in ("<pad>", "<mask>") or \
                (t.startswith("<unused") and t.endswith(">"))
            if dec[i].special or looks:
                types.append(int(gguf.TokenType.CONTROL))
            else:
                t = t.replace("\u2581", " ")
                types.append(int(gguf.TokenType.USER_DEFINED))
        else:
            types.append(int(gguf.TokenType.NORMAL))
        toks.append(t)
    sv = gguf.SpecialVocab(d, load_merges=True, n_vocab=n)
    special = {typ: tid for typ, tid in sv.special_token_ids.items()
               if hasattr(gguf.GGUFWriter, "add_%s_token_id" % typ)}
    # A merge listed twice (valid in a tokenizer.json; the random builder no longer writes
    # one) counts with its LAST rank in tokenizers (the merges become a map), while
    # llama.cpp keeps the first. skycmd writes each merge once, in tokenizers' rank order, so
    # that llama.cpp reading our GGUF ranks merges as tokenizers does: expect that list.
    last = {m: i for i, m in enumerate(sv.merges)}
    merges = [m for i, m in enumerate(sv.merges) if last[m] == i]
    return {"tokens": toks, "token_type": types, "merges": merges, "merges_as_listed": len(sv.merges),
            "special_ids": special}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--test-bin", help="build/tests/test_tokenizer: regenerate the random vocabularies first")
    args = ap.parse_args()
    assert tokenizers.__version__ == "0.23.3", tokenizers.__version__
    assert transformers.__version__ == "5.23.0", transformers.__version__
    if args.test_bin:
        env = dict(os.environ, SKYCMD_WRITE_TOKENIZER_FIXTURES=FIX)
        subprocess.run([args.test_bin, "--filter", "fixtures/*"], env=env, check=True)
    derive_variants()
    strs = corpus()
    assert len(strs) >= 2000, len(strs)
    with open(os.path.join(FIX, "corpus.txt"), "w") as f:
        for s in strs:
            f.write(s.encode("utf-8").hex() + "\n")
    names = ["vocab1024", "vocab4096", "vocab1024_im", "vocab1024_edge"]
    for name in names:
        d = os.path.join(FIX, name)
        tk = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        at = AutoTokenizer.from_pretrained(d, local_files_only=True)
        with open(os.path.join(d, "tokenizer.json"), encoding="utf-8") as f:
            raw = json.load(f)["model"]
        # the random builder lists every merge once and fills the vocabulary exactly
        assert len({tuple(m) for m in raw["merges"]}) == len(raw["merges"]), (name, "repeated merges")
        assert name not in ("vocab1024", "vocab4096") or len(raw["vocab"]) == int(name[5:]), name
        sp = [at.cls_token_id, at.sep_token_id, at.mask_token_id, at.pad_token_id, at.unk_token_id]
        with open(os.path.join(FIX, "expected_%s.txt" % name), "w") as f:
            f.write("specials %s %d\n" % (" ".join(str(-1 if x is None else x) for x in sp),
                                           tk.get_vocab_size(with_added_tokens=True)))
            for s in strs:
                ids = tk.encode(s, add_special_tokens=False).ids
                ids2 = at(s, add_special_tokens=False)["input_ids"]
                assert ids == ids2, (name, s[:40])
                dec = tk.decode(ids, skip_special_tokens=False)
                f.write(" ".join(map(str, ids)) + "\t" + dec.encode("utf-8").hex() + "\n")
        with open(os.path.join(FIX, "expected_gguf_%s.json" % name), "w", encoding="utf-8") as f:
            json.dump(gguf_expectation(d, at), f, ensure_ascii=False)
        print(name, len(strs), "strings", "specials", sp)


if __name__ == "__main__":
    main()
