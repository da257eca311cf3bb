#!/usr/bin/env python3
"""Generate the prompt-building fixtures of tests/test_prompt.c from the Python reference.

Everything expected here comes from the reference packages, never from our C code:

  1. A small byte-level BPE tokenizer configured like ModernBERT's (NFC normalizer, ByteLevel
     pre-tokenizer with the GPT-2 regex, [MASK] with lstrip, runs of spaces as added tokens)
     is trained with Hugging Face `tokenizers` on a fixed multilingual corpus and saved as
     tests/fixtures/prompt/tokenizer.json (plus tokenizer_config.json).
  2. Each request of CASES (raw JSON text, so number spelling and key order reach the C
     parser untouched) goes through laya's own code: json.loads, Agent._check_question,
     Agent._to_internal and Agent._encode_state, which calls laya.common.build_sequence.
     The resulting ids and markers per question, or the error laya raises, are stored in
     tests/fixtures/prompt/cases.json.
  3. tests/fixtures/prompt/pyjson.json pairs JSON texts with Python's
     json.dumps(json.loads(text), ensure_ascii=False) and float reprs, for the serializer.

Run with the pinned reference environment (tools/golden/requirements.txt):
    /opt/gvenv/bin/python tools/golden/make_prompt_fixtures.py
"""
import json
import os
import random
import struct
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

import laya
from laya.agent import Agent

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "tests", "fixtures", "prompt")

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "choice question: Which input keeps the drone flying through the next gap?",
    "score question: How much room is left above and below the drone?",
    "noul question: Will the drone crash within the next half second if it keeps gliding?",
    "no, the statement does not hold", "yes, the statement holds", "level 0: none",
    "fire the rotors for an upward impulse", "let gravity pull the drone down",
    "vy 0 dx 36 up 9 dn 7 nxt 10 alt 32", "{\"user\": \"hello\", \"score\": 1.5, \"ok\": true}",
    "Der schnelle braune Fuchs springt über den faulen Hund. Grüße aus München!",
    "Le café est très bon à Paris, n'est-ce pas ? Déjà vu.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "東京は日本の首都です。今日はいい天気ですね。", "안녕하세요 세계", "مرحبا بالعالم",
    "The customer wants a refund for order #12345 placed on 2024-01-05.",
    "[{\"role\": \"user\", \"content\": \"I need help\"}, {\"role\": \"assistant\"}]",
    "0123456789 3.14159 1e-07 -42 +7 100%", "emails: a.b@example.com, urls: https://x.y/z?q=1",
]


def build_tokenizer():
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    specials = [AddedToken("[PAD]", special=True, normalized=False),
                AddedToken("[UNK]", special=True, normalized=False),
                AddedToken("[CLS]", special=True, normalized=False),
                AddedToken("[SEP]", special=True, normalized=False),
                AddedToken("[MASK]", special=True, normalized=False, lstrip=True)]
    trainer = trainers.BpeTrainer(vocab_size=1400, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS * 3, trainer)
    tok.add_tokens([AddedToken(" " * n, normalized=False) for n in range(8, 1, -1)])
    return tok


def hf_wrap(path):
    return PreTrainedTokenizerFast(tokenizer_file=path, cls_token="[CLS]", sep_token="[SEP]",
                                   mask_token="[MASK]", pad_token="[PAD]", unk_token="[UNK]")


def long_text(n, seed):
    r = random.Random(seed)
    words = " ".join(CORPUS).split()
    return " ".join(r.choice(words) for _ in range(n))


def cases():
    C = []

    def add(name, body, max_len=512, head_max_len=192):
        C.append({"name": name, "body": body if isinstance(body, str) else json.dumps(body, ensure_ascii=False),
                  "max_len": max_len, "head_max_len": head_max_len})

    flappy = open(os.path.join(HERE, "..", "..", "examples", "flappy-drone.json"), encoding="utf-8").read()
    add("flappy", flappy)
    add("flappy_small", flappy, 40, 24)
    add("flappy_tiny_head", flappy, 64, 10)
    # floats and ints as json.dumps prints them (raw text keeps the spelling)
    add("state_numbers", '{"state": {"a": 1.0, "b": 1e-07, "c": 1e16, "d": 1E5, "e": 0.1, "f": -0.0, '
        '"g": 123456789012345678901234567890, "h": 1.5e300, "i": 1e400, "j": -1e400, "k": 2.5E-5, '
        '"l": 0.0001, "m": 1e22, "n": 3.141592653589793, "o": -0, "p": 100, "q": 5e-324, '
        '"r": 1.7976931348623157e308, "s": 9007199254740993, "t": 0.30000000000000004}, '
        '"questions": {"q": {"type": "noul", "instructions": "Is it big?"}}}')
    add("state_nested", {"state": {"user": {"name": "Zoë", "tags": ["a", "b", {"x": None, "y": True}],
                                            "empty": {}, "list": []}, "ok": False},
                         "questions": {"q": {"type": "choice", "instructions": "Who?",
                                             "criteria": {"a": "first", "b": "second"}}}})
    add("state_escapes", {"state": {"q\"uote": "back\\slash \n new\tline \r \b \f \u0001 \u001f \u007f / é 😀"},
                          "questions": {"q": {"type": "noul", "instructions": "Escapes?"}}})
    add("mask_everywhere", {"state": {"[MASK]key": "val[MASK]ue", "k": "[MASK][MASK]x"},
                            "questions": {"q": {"type": "choice", "instructions": "Pick [MASK] one[MASK]",
                                                "criteria": {"a[MASK]": "desc [MASK]", "b": None}}}})
    add("mask_string_state", {"state": "a[MASK]b [MASK] c[MASK", "questions": {
        "q": {"type": "score", "instructions": "[MASK]", "criteria": ["lo[MASK]w", "high"]}}})
    add("specials_in_text", {"state": "[CLS] hello [SEP] world [PAD][UNK]", "questions": {
        "q": {"type": "noul", "instructions": "Has [SEP] inside?"}}})
    add("list_state_cut_left", {"state": [{"role": "user", "content": long_text(120, 1)},
                                          {"role": "assistant", "content": long_text(60, 2)},
                                          {"role": "user", "content": "the newest turn is here"}],
                                "questions": {"q": {"type": "noul", "instructions": "Newest?"}}}, 96, 48)
    add("string_state_cut_right", {"state": long_text(400, 3), "questions": {
        "q": {"type": "choice", "instructions": "Which?", "criteria": ["yes", "no", "maybe"]}}}, 128, 64)
    add("object_state_cut_right", {"state": {"log": long_text(300, 4)}, "questions": {
        "q": {"type": "noul", "instructions": "Cut?"}}}, 80, 40)
    opts30 = {"opt%02d" % i: long_text(6, 100 + i) for i in range(30)}
    add("shrink_30_options", {"state": "s", "questions": {
        "q": {"type": "choice", "instructions": long_text(50, 5), "criteria": opts30}}})
    add("shrink_30_options_small", {"state": "s", "questions": {
        "q": {"type": "choice", "instructions": long_text(50, 5), "criteria": opts30}}}, 256, 96)
    opts11 = {"k%d" % i: long_text(3, 200 + i) for i in range(11)}
    add("eleven_options", {"state": "t", "questions": {"q": {"type": "choice", "instructions": "Eleven?",
                                                           "criteria": opts11}}})
    add("long_option_cap48", {"state": "x", "questions": {"q": {"type": "choice", "instructions": "Long?",
                                                              "criteria": {"a": long_text(120, 6), "b": "short"}}}})
    add("long_question", {"state": "y", "questions": {"q": {"type": "noul", "instructions": long_text(400, 7)}}})
    add("long_question_small_head", {"state": "y", "questions": {
        "q": {"type": "score", "instructions": long_text(100, 8), "criteria": [long_text(30, 9), long_text(30, 10)]}}},
        200, 40)
    add("descriptions_odd", {"state": "z", "questions": {"q": {"type": "choice", "instructions": "Odd",
        "criteria": {"null": None, "empty": "", "zero": 0, "false": False, "num": 1.5, "obj": {"a": [1, 2.0]},
                     "list": ["x", None], "true": True, "big": 10**20, "ws": "  spaced   out  "}}}})
    add("choice_list_labels", '{"state": "w", "questions": {"q": {"type": "choice", "instructions": "L", '
        '"criteria": ["alpha", 2, 3.5, true, "", 1e400, 1E2]}}}')
    add("score_levels_odd", {"state": "v", "questions": {"q": {"type": "score", "instructions": "S",
        "criteria": ["", {"d": "x"}, 3, [1, "two"], "  ", False] }}})
    add("score_one_level", {"state": "v", "questions": {"q": {"type": "score", "instructions": "S", "criteria": ["only"]}}})
    add("score_eleven_levels", {"state": "v", "questions": {"q": {"type": "score", "instructions": "S",
        "criteria": ["l%d" % i for i in range(11)]}}})
    add("noul_criteria", {"state": "u", "questions": {
        "a": {"type": "noul", "instructions": "A", "criteria": {"TRUE": "it holds", "False": ""}},
        "b": {"type": "noul", "instructions": "B", "criteria": {"false": {"why": 1}, "true": 0}},
        "c": {"type": "noul", "instructions": "C", "criteria": None},
        "d": {"type": "noul", "instructions": "D", "labels": {"false": "  nope\u3000", "true": "\tyep\n"}},
        "e": {"type": "noul", "instructions": "E", "labels": {"true": "Ja", "false": "Nein"},
              "criteria": {"true": "stimmt"}}}})
    add("instructions_nonstring", '{"state": "t", "questions": {'
        '"a": {"type": "noul", "instructions": {"ask": "is it [MASK]?", "n": 2.50}}, '
        '"b": {"type": "noul", "instructions": ["x", 1, null]}, '
        '"c": {"type": "noul", "instructions": 42}, "d": {"type": "noul", "instructions": 0.5}, '
        '"e": {"type": "noul", "instructions": true}}}')
    add("unicode_nfc", {"state": "Cafe\u0301 e\u0301te\u0301 \u00c5ngstro\u0308m \u1e9b\u0323 ﬁ", "questions": {
        "q": {"type": "choice", "instructions": "Re\u0301sume\u0301?", "criteria": {"o\u0308": "n\u0303o", "ü": "ja"}}}})
    add("scripts", {"state": {"ru": "Съешь ещё", "ja": "東京は日本", "ar": "مرحبا", "emoji": "👍🏽 ok"}, "questions": {
        "q": {"type": "noul", "instructions": "Multilingual?"}}})
    add("whitespace_heavy", {"state": "a  b   c    d         e\t\t\n\n  f ", "questions": {
        "q": {"type": "choice", "instructions": "   spaced    question   ", "criteria": {" k ": "  v  ", "k2": "\n"}}}})
    add("empty_state", {"state": "", "questions": {"q": {"type": "noul", "instructions": "Empty?"}}})
    add("empty_key", {"state": "e", "questions": {"e": {"type": "choice", "instructions": "E",
                                                      "criteria": {"": "nothing", "x": None}}}})
    add("number_state", '{"state": 12.50, "questions": {"q": {"type": "noul", "instructions": "N"}}}')
    add("bool_state", '{"state": true, "questions": {"q": {"type": "noul", "instructions": "B"}}}')
    add("duplicate_keys", '{"state": {"a": 1, "b": 2, "a": 3}, "questions": {"q": {"type": "choice", '
        '"instructions": "D", "criteria": {"x": "first", "y": "why", "x": "second"}}, '
        '"q": {"type": "choice", "instructions": "D2", "criteria": {"x": "1", "y": "2", "x": "3"}}}}')
    add("many_questions", {"state": long_text(80, 11), "questions": {
        "q%d" % i: ({"type": "noul", "instructions": long_text(5, 300 + i)} if i % 3 == 0 else
                    {"type": "score", "instructions": long_text(8, 400 + i), "criteria": ["a", "b", "c"]} if i % 3 == 1
                    else {"type": "choice", "instructions": long_text(4, 500 + i),
                          "criteria": {"k%d" % j: long_text(2, 600 + j) for j in range(2 + i % 5)}})
        for i in range(12)}}, 128, 64)
    add("markers_lost", {"state": "x", "questions": {"q": {"type": "choice", "instructions": "M",
        "criteria": {"k%d" % i: long_text(10, 700 + i) for i in range(20)}}}}, 40, 192)
    add("head_exactly_fills", {"state": long_text(50, 12), "questions": {"q": {"type": "noul", "instructions": long_text(40, 13)}}},
        30, 24)
    return C


def run_case(tok, case):
    body = json.loads(case["body"])
    state, questions = body["state"], body["questions"]
    ids = list(questions.keys())
    internal = {}
    for qid in ids:
        Agent._check_question(qid, questions[qid])
        internal[qid] = Agent._to_internal(questions[qid])
    a = Agent.__new__(Agent)
    a.cfg = {"max_len": case["max_len"], "head_max_len": case["head_max_len"]}
    a.tok = tok
    a.parallel_options = False
    try:
        items = a._encode_state(state, ids, internal)
    except ValueError as e:
        return {"error": str(e)}
    return {"questions": [{"id": qid, "ids": it["ids"], "markers": it["markers"], "qtype": it["qtype"]}
                          for qid, it in zip(ids, items)],
            "input_tokens": sum(len(it["ids"]) for it in items)}


def pyjson_cases():
    texts = [
        "1.0", "1e-07", "1e16", "1E5", "0.1", "-0.0", "123456789012345678901234567890", "1.5e300", "1e400",
        "-1e400", "2.5E-5", "0.0001", "0.00001", "1e22", "3.141592653589793", "-0", "100", "5e-324",
        "1.7976931348623157e308", "9007199254740993", "0.30000000000000004", "9999999999999998.0",
        "1e15", "123456789.125", "-12.5e-3", "2.2250738585072014e-308", "4.9406564584124654e-324",
        "[]", "{}", "[1, [2, [3, {}]]]", '{"a": {"b": []}, "c": [true, false, null]}',
        '"\\u00e9\\ud83d\\ude00 \\" \\\\ \\/ \\b\\f\\n\\r\\t \\u0000 \\u001f \\u007f"',
        '{"z": 1, "a": 2, "z": 3}', '[0.5, -1.25e-10, 6.02214076e23, 1e-5, 1e-4]',
    ]
    r = random.Random(1234)
    for _ in range(300):
        # random doubles from random bit patterns (finite), printed with 17 significant digits
        while True:
            x = struct.unpack("<d", struct.pack("<Q", r.getrandbits(64)))[0]
            if x == x and abs(x) != float("inf"):
                break
        texts.append("%.17g" % x)
    for _ in range(200):
        texts.append(repr(r.uniform(-1000, 1000) * 10 ** r.randint(-30, 30)))
    for _ in range(100):
        texts.append(repr(r.random()))
    return [{"text": t, "dumps": json.dumps(json.loads(t), ensure_ascii=False)} for t in texts]


def main():
    os.makedirs(OUT, exist_ok=True)
    raw = build_tokenizer()
    tok_path = os.path.join(OUT, "tokenizer.json")
    raw.save(tok_path)
    with open(os.path.join(OUT, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"cls_token": "[CLS]", "sep_token": "[SEP]", "mask_token": "[MASK]", "pad_token": "[PAD]",
                   "unk_token": "[UNK]", "tokenizer_class": "PreTrainedTokenizerFast"}, f, indent=1)
    tok = hf_wrap(tok_path)
    out_cases = []
    for c in cases():
        res = run_case(tok, c)
        out_cases.append(dict(c, **res))
    meta = {"generator": "tools/golden/make_prompt_fixtures.py", "laya": laya.__version__,
            "cls": tok.cls_token_id, "sep": tok.sep_token_id, "mask": tok.mask_token_id,
            "mask_text": tok.mask_token}
    with open(os.path.join(OUT, "cases.json"), "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "cases": out_cases}, f, ensure_ascii=False, indent=0)
    with open(os.path.join(OUT, "pyjson.json"), "w", encoding="utf-8") as f:
        json.dump({"cases": pyjson_cases()}, f, ensure_ascii=False, indent=0)
    print("wrote %d prompt cases (%d errors) to %s" % (
        len(out_cases), sum(1 for c in out_cases if "error" in c), OUT))


if __name__ == "__main__":
    sys.exit(main())
