#!/usr/bin/env python3
"""Gemma-style test tokenizers, made the way mmBERT's is, and the ids `tokenizers` gives.

mmBERT (the encoder of laya-multilingual and Julia-1) uses Gemma's tokenizer: a SentencePiece
BPE model with byte fallback, converted to tokenizer.json by transformers' GemmaConverter.
This script does the same on a corpus it writes itself (26 scripts):

  1. trains a SentencePiece BPE model (sentencepiece==0.2.3) with byte_fallback, Gemma's
     special layout (<pad>=0 <eos>=1 <bos>=2 <unk>=3, then <mask>=4 as a control symbol),
     user-defined pieces for runs of U+2581, newlines and tabs (as Gemma has), split_digits,
     allow_whitespace_only_pieces, no dummy prefix, identity normalization;
  2. converts it the way transformers 5.23 converts Gemma's tokenizer.model (GemmaTokenizer
     over the SentencePiece extractor; the pipeline GemmaConverter also builds) and
     checks the pipeline shape is Gemma's (normalizer Replace " "->"▁", pre-tokenizer
     Split " " merged_with_previous, BPE byte_fallback + fuse_unk, decoder
     Replace/ByteFallback/Fuse);
  3. derives a "metaspace" variant with `tokenizers` itself: the pipeline llama.cpp's mmbert
     pre-tokenizer describes (no normalizer, Metaspace prepend_scheme "first" split true,
     Metaspace decoder, <mask> lstrip), so both shapes are covered;
  4. writes tests/fixtures/gemma_tok/corpus.txt (>= 3000 strings, hex UTF-8 per line) and
     expected_<name>.txt: a "specials" line (cls sep mask pad unk ids, vocabulary size), then
     per string "<ids>\\t<hex of decode>" computed by `tokenizers` (and checked against
     transformers' AutoTokenizer).

  5. with --test-bin build/tests/test_gemma_tok: has that binary write the 256k-vocabulary
     Gemma-shaped tokenizer its C generator makes (sk_tokenizer_random_spm_json; a
     SentencePiece model of mmBERT's size needs far more text than this corpus), checks its
     pipeline shape, and writes expected_spm256k.txt (the 14 MB tokenizer.json itself is not
     committed: the test regenerates it).

Run: /tmp/gvenv/bin/python tools/golden/make_gemma_tokenizer.py --test-bin build/tests/test_gemma_tok
Pinned: sentencepiece==0.2.3, protobuf==7.36.2, tokenizers==0.23.3, transformers==5.23.0.
"""
import json
import os
import random
import shutil
import sys
import tempfile

import sentencepiece as spm
import tokenizers
import transformers
from tokenizers import Tokenizer, decoders, pre_tokenizers
from transformers import AutoTokenizer
from transformers import GemmaTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(ROOT, "tests", "fixtures", "gemma_tok")

# One or two sentences per script (26 scripts); training lines are shuffled recombinations.
SCRIPTS = {
    "latin_en": "The drone flies over the river and the wind pushes it toward the rocks. Which action is safest?",
    "latin_fr": "Le drone survole la rivière ; c'est déjà l'été et le vent souffle fort.",
    "latin_de": "Größere Lücken sind schöner, aber der Wind drückt die Drohne nach unten.",
    "latin_es": "¿Qué acción debería tomar el dron? La niña señaló el cañón.",
    "latin_vi": "Máy bay không người lái bay trên sông, gió đẩy nó về phía vách đá.",
    "latin_tr": "İnsansız hava aracı nehrin üzerinde uçuyor; rüzgâr onu kayalıklara itiyor.",
    "cyrillic": "Дрон летит над рекой, и ветер толкает его к скалам. Какое действие безопаснее?",
    "greek": "Το drone πετά πάνω από το ποτάμι και ο άνεμος το σπρώχνει στα βράχια.",
    "han": "无人机在河上飞行，风把它推向悬崖。哪个动作最安全？",
    "kana": "ドローンは川の上を飛ぶ。風が岩の方へ押している。どの行動が一番安全ですか。",
    "hangul": "드론이 강 위를 날아간다. 바람이 바위 쪽으로 밀고 있다. 어떤 행동이 가장 안전한가?",
    "arabic": "الطائرة بدون طيار تحلق فوق النهر والرياح تدفعها نحو الصخور. ما هو الإجراء الأكثر أمانا؟",
    "hebrew": "הרחפן טס מעל הנהר והרוח דוחפת אותו אל הסלעים. איזו פעולה הכי בטוחה?",
    "devanagari": "ड्रोन नदी के ऊपर उड़ता है और हवा उसे चट्टानों की ओर धकेलती है। कौन सा कदम सबसे सुरक्षित है?",
    "bengali": "ড্রোনটি নদীর উপর দিয়ে উড়ছে এবং বাতাস এটিকে পাথরের দিকে ঠেলে দিচ্ছে।",
    "tamil": "ட்ரோன் ஆற்றின் மேல் பறக்கிறது, காற்று அதை பாறைகளை நோக்கி தள்ளுகிறது.",
    "telugu": "డ్రోన్ నది పైన ఎగురుతోంది, గాలి దానిని రాళ్ల వైపు నెడుతోంది.",
    "thai": "โดรนบินอยู่เหนือแม่น้ำและลมพัดมันไปทางโขดหิน การกระทำใดปลอดภัยที่สุด",
    "georgian": "დრონი მდინარის თავზე დაფრინავს და ქარი მას კლდეებისკენ უბიძგებს.",
    "armenian": "Անօդաչու սարքը թռչում է գետի վրայով, և քամին այն հրում է դեպի ժայռերը։",
    "ethiopic": "ድሮኑ ከወንዙ በላይ ይበራል ነፋሱም ወደ ድንጋዮቹ ይገፋዋል።",
    "khmer": "យន្តហោះគ្មានមនុស្សបើកហោះលើទន្លេ ហើយខ្យល់រុញវាទៅថ្មចោទ។",
    "sinhala": "ඩ්‍රෝනය ගඟ උඩින් පියාසර කරයි, සුළඟ එය ගල් දෙසට තල්ලු කරයි.",
    "gujarati": "ડ્રોન નદી ઉપર ઉડે છે અને પવન તેને ખડકો તરફ ધકેલે છે.",
    "myanmar": "ဒရုန်းသည် မြစ်အပေါ်တွင် ပျံသန်းပြီး လေက ကျောက်တုံးများဆီသို့ တွန်းသည်။",
    "lao": "ໂດຣນບິນຢູ່ເທິງແມ່ນ້ຳ ແລະ ລົມພັດມັນໄປຫາໂງ່ນຫີນ.",
    "code": "def step(state):\n    if state['vy'] > 0:\n        return 'up'\n\treturn \"wait\"  # 42 == 0x2A",
    "json": '{"vy": -12, "dx": 140, "gap": [120, 240], "alive": true, "name": "drone"}',
}


def training_lines(seed=20261201):
    rnd = random.Random(seed)
    texts = list(SCRIPTS.values())
    words = [w for t in texts for w in t.split()]
    lines = []
    for t in texts:
        lines.extend([t] * 40)
    for _ in range(6000):
        k = rnd.randint(2, 18)
        lines.append(" ".join(rnd.choice(words) for _ in range(k)))
    for _ in range(800):
        lines.append(" " * rnd.randint(1, 12) + rnd.choice(words) + "\n" * rnd.randint(0, 3)
                     + "\t" * rnd.randint(0, 2) + str(rnd.randint(0, 10 ** 6)))
    rnd.shuffle(lines)
    return lines


USER_DEFINED = (["\u2581" * n for n in range(2, 32)] + ["\n" * n for n in range(2, 9)]
                + ["\t" * n for n in range(1, 6)] + ["<start_of_turn>", "<end_of_turn>", "<table>", "<tr>"])


def train(vocab_size, out_dir):
    prefix = os.path.join(out_dir, "spm")
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(training_lines()), model_prefix=prefix, model_type="bpe",
        vocab_size=vocab_size, byte_fallback=True, character_coverage=0.995,
        pad_id=0, eos_id=1, bos_id=2, unk_id=3,
        pad_piece="<pad>", eos_piece="<eos>", bos_piece="<bos>", unk_piece="<unk>",
        control_symbols=["<mask>", "[multimodal]"], user_defined_symbols=USER_DEFINED,
        split_digits=True, allow_whitespace_only_pieces=True, add_dummy_prefix=False,
        remove_extra_whitespaces=False, normalization_rule_name="identity",
        split_by_unicode_script=True, split_by_whitespace=True, max_sentencepiece_length=16,
        num_threads=1, seed_sentencepiece_size=100000, minloglevel=2)
    return prefix + ".model"


TOKENIZER_CONFIG = {
    "tokenizer_class": "PreTrainedTokenizerFast",
    "bos_token": "<bos>", "eos_token": "<eos>", "unk_token": "<unk>", "pad_token": "<pad>",
    "mask_token": "<mask>", "cls_token": "<bos>", "sep_token": "<eos>",
    "add_bos_token": False, "add_eos_token": False, "clean_up_tokenization_spaces": False,
    "model_max_length": 8192,
}


def check_gemma_shape(tj):
    n = tj["normalizer"]
    assert n["type"] == "Replace" and n["pattern"] == {"String": " "} and n["content"] == "\u2581", n
    p = tj["pre_tokenizer"]
    assert p["type"] == "Split" and p["pattern"] == {"String": " "} and p["behavior"] == "MergedWithPrevious", p
    m = tj["model"]
    assert m["type"] == "BPE" and m["byte_fallback"] and m["fuse_unk"] and m["unk_token"] == "<unk>", \
        {k: v for k, v in m.items() if k not in ("vocab", "merges")}
    d = [x["type"] for x in tj["decoder"]["decoders"]]
    assert tj["decoder"]["type"] == "Sequence" and d == ["Replace", "ByteFallback", "Fuse"], tj["decoder"]
    v = m["vocab"]
    assert [v["<pad>"], v["<eos>"], v["<bos>"], v["<unk>"], v["<mask>"]] == [0, 1, 2, 3, 4]
    assert all("<0x%02X>" % b in v for b in range(256))


def build(name, vocab_size):
    d = os.path.join(FIX, name)
    os.makedirs(d, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        model = train(vocab_size, tmp)
        src, out = os.path.join(tmp, "spm_dir"), os.path.join(tmp, "hf")
        os.makedirs(src)
        shutil.copy(model, os.path.join(src, "tokenizer.model"))
        # transformers 5's Gemma conversion: GemmaTokenizer reads tokenizer.model through its
        # SentencePieceExtractor (the legacy GemmaConverter class is stale in 5.23: no .sp).
        GemmaTokenizer.from_pretrained(src).save_pretrained(out)
        shutil.copy(os.path.join(out, "tokenizer.json"), os.path.join(d, "tokenizer.json"))
    with open(os.path.join(d, "tokenizer.json"), encoding="utf-8") as f:
        check_gemma_shape(json.load(f))
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump(TOKENIZER_CONFIG, f, indent=2)
    return d


def derive_metaspace(src, name):
    d = os.path.join(FIX, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(src, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    tj["normalizer"] = None
    tj["pre_tokenizer"] = json.loads(pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first",
                                                              split=True).__getstate__())
    tj["decoder"] = json.loads(decoders.Sequence([decoders.Metaspace(replacement="\u2581", prepend_scheme="first",
                                                                     split=True), decoders.ByteFallback(),
                                                  decoders.Fuse()]).__getstate__())
    for a in tj["added_tokens"]:
        if a["content"] == "<mask>":
            a["lstrip"] = True
    tok = Tokenizer.from_str(json.dumps(tj))
    tok.save(os.path.join(d, "tokenizer.json"))
    shutil.copy(os.path.join(src, "tokenizer_config.json"), os.path.join(d, "tokenizer_config.json"))
    return d


def corpus(vocab_dir, seed=20261202):
    rnd = random.Random(seed)
    with open(os.path.join(vocab_dir, "tokenizer.json"), encoding="utf-8") as f:
        vocab = json.load(f)["model"]["vocab"]
    out = []
    add = out.append
    texts = list(SCRIPTS.values())
    for t in texts:
        add(t)
        add(" " + t)
        add(t + " ")
        add(t.upper())
        add(t.replace(" ", "  "))
        add(t.replace(" ", "\u3000"))
        for w in t.split():
            add(w)
    words = [w for t in texts for w in t.split()]
    for _ in range(900):
        add(" ".join(rnd.choice(words) for _ in range(rnd.randint(1, 12))))
    # pieces glued without spaces across scripts
    for _ in range(300):
        add("".join(rnd.choice(words) for _ in range(rnd.randint(2, 5))))
    # combining marks, decomposed forms (no normalizer here: they stay as they are)
    for s in ["cafe\u0301", "e\u0301\u0301", "n\u0303", "o\u0302\u0323", "\u0301abc", "a\u0308o\u0308u\u0308",
              "\u0915\u093c", "\u1100\u1161\u11a8", "Zoe\u0308 Saldan\u0303a", "x\u20d7", "\u05d0\u05b8",
              "\u0627\u064e\u0644\u0652", "q\u0307\u0323", "\u0e01\u0e34\u0e4a"]:
        for tmpl in ("%s", " %s", "x%sy", "%s %s"):
            add(tmpl.replace("%s", s))
    # whitespace runs of every kind and length
    spaces = [" ", "\t", "\n", "\r", "\r\n", "\u00a0", "\u3000", "\u2003", "\u2581", "\u200b", "\ufeff", "\x0b"]
    for ws in spaces:
        for n in (1, 2, 3, 5, 8, 16, 31, 32, 40):
            add("a" + ws * n + "b")
            add(ws * n + "x")
            add("y" + ws * n)
            add(ws * n)
    # out-of-vocabulary characters: byte fallback (not in the training corpus)
    rare = [0x1F600, 0x1F44D, 0x1F3FD, 0x1F468, 0x200D, 0x1F1EB, 0x2764, 0xFE0F, 0x13000, 0x1D54A, 0x10348,
            0xA000, 0x16A0, 0x2800, 0x1F916, 0xE000, 0xF0000, 0x10FFFD, 0x0, 0x1, 0x7F, 0x80, 0xFFFD, 0x2028]
    for cp in rare:
        ch = chr(cp)
        add(ch)
        add("emoji " + ch + " end")
        add(ch * 3)
        add("a" + ch + "1")
    for s in ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷🇩🇪", "❤️", "🏳️‍🌈", "🤖: beep", "a😀b", " 😀 "]:
        add(s)
        add(s + " " + rnd.choice(words))
    blocks = [(0x20, 0x7e), (0xa0, 0x24f), (0x300, 0x36f), (0x370, 0x52f), (0x590, 0x6ff), (0x900, 0xdff),
              (0xe00, 0xeff), (0x1100, 0x11ff), (0x1d00, 0x1fff), (0x2000, 0x2bff), (0x3000, 0x30ff),
              (0x4e00, 0x9fff), (0xac00, 0xd7a3), (0xf900, 0xfaff), (0xfe00, 0xffef), (0x10000, 0x1ffff),
              (0x20000, 0x2ffff), (0xe0000, 0xe01ef)]
    for _ in range(700):
        s = ""
        for _ in range(rnd.randint(1, 14)):
            lo, hi = rnd.choice(blocks)
            c = rnd.randint(lo, hi)
            if 0xD800 <= c <= 0xDFFF:
                c = 0x41
            s += chr(c)
            if rnd.random() < 0.25:
                s += rnd.choice([" ", "  ", "\t", "\n", "\u2581"])
        add(s)
    # numbers (split_digits: every digit its own piece)
    for _ in range(150):
        k = rnd.randint(0, 3)
        if k == 0:
            add(str(rnd.randint(0, 10 ** rnd.randint(1, 20))))
        elif k == 1:
            add("%.*f" % (rnd.randint(0, 6), rnd.uniform(-1e6, 1e6)))
        elif k == 2:
            add(" ".join(str(rnd.randint(-500, 500)) for _ in range(rnd.randint(2, 8))))
        else:
            add("x%dy%dz" % (rnd.randint(0, 999), rnd.randint(0, 99999)))
    # vocabulary pieces as text, including the byte tokens' and specials' spellings
    pieces = sorted(vocab, key=lambda p: vocab[p])
    for p in pieces[:400:3] + pieces[400::max(1, len(pieces) // 300)]:
        add(p)
        add(p.replace("\u2581", " "))
    special = ["<mask>", "<bos>", "<eos>", "<pad>", "<unk>", "<start_of_turn>", "<end_of_turn>", "[multimodal]",
               "<table>", "<0x41>", "<0xE2>"]
    for sp in special:
        for tmpl in ("%s", "a%sb", "a %s b", "a  %s  b", " %s", "%s ", "\t%s\n", "%s%s", "<%s>", "x %s%s y",
                     "choice question: %s thrust", "\u00a0%s", "\u3000%s", "é%sé", "1%s2", "日本%s語"):
            add(tmpl.replace("%s", sp))
    for s in ("<MASK>", "<mask", "mask>", "< mask>", "<<mask>>", "<bos>choice question: Which team?<eos><mask> red<mask> blue<eos>state<eos>",
              "   <mask>   <mask>", "<mask>" * 10, "\u2581\u2581<mask>", "[MASK]", "[CLS] [SEP]"):
        add(s)
    # JSON states
    for _ in range(150):
        obj = {}
        for _ in range(rnd.randint(1, 6)):
            k = rnd.choice(["vy", "dx", "gap", "état", "名前", "الحالة", "статус", "स्थिति"])
            obj[k] = rnd.choice([rnd.randint(-1000, 1000), rnd.uniform(-10, 10), True, None, rnd.choice(words)])
        add(json.dumps(obj, ensure_ascii=rnd.random() < 0.2))
    # control characters and long runs
    for s in ["\x00", "a\x00b", "\x01\x02\x03", "tab\x1fsep", "nul at end\x00"]:
        add(s)
    add("a" * 3000)
    add("ab" * 2000)
    add("1" * 2000)
    add(" " * 1500 + "end")
    add("\n" * 500)
    add("中" * 1500)
    add("😀" * 500)
    add(("дрон летит " * 200).strip())
    add("<mask>" * 300)
    seen, uniq = set(), []
    for s in out:
        if s not in seen:
            seen.add(s)
            uniq.append(s)
    return uniq


def write_expected(d, name, strs, expect_vocab=None):
    tk = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
    at = AutoTokenizer.from_pretrained(d, local_files_only=True)
    sp = [at.cls_token_id, at.sep_token_id, at.mask_token_id, at.pad_token_id, at.unk_token_id]
    assert sp == [2, 1, 4, 0, 3], sp
    n_fallback = 0
    with open(os.path.join(FIX, "expected_%s.txt" % name), "w") as f:
        f.write("specials %s %d\n" % (" ".join(map(str, sp)), tk.get_vocab_size(with_added_tokens=True)))
        for s in strs:
            ids = tk.encode(s, add_special_tokens=False).ids
            assert ids == at(s, add_special_tokens=False)["input_ids"], (name, s[:40])
            n_fallback += any(len(tk.id_to_token(i)) == 6 and tk.id_to_token(i).startswith("<0x") for i in ids)
            dec = tk.decode(ids, skip_special_tokens=False)
            f.write(" ".join(map(str, ids)) + "\t" + dec.encode("utf-8").hex() + "\n")
    print(name, len(strs), "strings;", n_fallback, "use byte fallback; vocab",
          tk.get_vocab_size(with_added_tokens=True))


def main():
    import argparse
    import subprocess
    ap = argparse.ArgumentParser()
    ap.add_argument("--test-bin", help="build/tests/test_gemma_tok: also the 256k generated vocabulary")
    args = ap.parse_args()
    assert tokenizers.__version__ == "0.23.3", tokenizers.__version__
    assert transformers.__version__ == "5.23.0", transformers.__version__
    assert spm.__version__ == "0.2.3", spm.__version__
    small = build("gemma3000", 3000)
    meta = derive_metaspace(small, "gemma3000_metaspace")
    strs = corpus(small)
    assert len(strs) >= 3000, len(strs)
    with open(os.path.join(FIX, "corpus.txt"), "w") as f:
        for s in strs:
            f.write(s.encode("utf-8").hex() + "\n")
    for d in (small, meta):
        write_expected(d, os.path.basename(d), strs)
    if args.test_bin:
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, SKYCMD_WRITE_GEMMA_FIXTURES=tmp)
            subprocess.run([args.test_bin, "--filter", "corpus/spm256k"], env=env, check=True)
            with open(os.path.join(tmp, "tokenizer.json"), encoding="utf-8") as f:
                tj = json.load(f)
            check_gemma_shape(tj)
            assert len(tj["model"]["vocab"]) == 256000
            write_expected(tmp, "spm256k", strs)


if __name__ == "__main__":
    sys.exit(main())
