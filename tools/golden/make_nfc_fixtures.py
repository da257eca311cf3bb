#!/usr/bin/env python3
"""tests/fixtures/tokenizer/nfc_tokenizers.txt: Hugging Face tokenizers' own NFC, exhaustively.

    /opt/gvenv/bin/python tools/golden/make_nfc_fixtures.py

For every code point U+0000..U+10FFFF except the surrogates, in each context of CONTEXTS
(the code point alone, before a combining acute, after "A", after "a" + a below-mark, after
a Hangul LV syllable), tokenizers.normalizers.NFC() is applied; only the results that differ
from the input are written (the C test expects identity for every other one), one per line:

    <context> <code point hex> <output code points hex, space separated>

plus, for every code point whose NFD (tokenizers.normalizers.NFD()) differs from itself, a
line "nfd <cp> <nfd code points> = <nfc of that nfd>" (the NFD form normalized back).
tests/test_tokenizer.c `nfc_matches_tokenizers_on_every_code_point` checks them all.
"""
import os
import sys

CONTEXTS = {
    "alone": lambda c: [c],
    "before_acute": lambda c: [c, 0x0301],
    "after_A": lambda c: [0x41, c],
    "after_a_dotbelow": lambda c: [0x61, 0x0316, c],
    "after_hangul_lv": lambda c: [0xAC00, c],
}


def main():
    import tokenizers
    from tokenizers import normalizers
    if tokenizers.__version__ != "0.23.3":
        sys.exit("make_nfc_fixtures: tokenizers %s, pinned 0.23.3" % tokenizers.__version__)
    nfc, nfd = normalizers.NFC(), normalizers.NFD()
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(os.path.dirname(os.path.dirname(here)), "tests", "fixtures", "tokenizer",
                       "nfc_tokenizers.txt")
    lines = ["# tokenizers %s NFC (tools/golden/make_nfc_fixtures.py): results that differ "
             "from the input" % tokenizers.__version__]
    cps = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for name, ctx in CONTEXTS.items():
        for c in cps:
            seq = ctx(c)
            s = "".join(map(chr, seq))
            r = nfc.normalize_str(s)
            if r != s:
                lines.append("%s %X %s" % (name, c, " ".join("%X" % ord(x) for x in r)))
    for c in cps:
        d = nfd.normalize_str(chr(c))
        if d != chr(c):
            back = nfc.normalize_str(d)
            lines.append("nfd %X %s = %s" % (c, " ".join("%X" % ord(x) for x in d),
                                           " ".join("%X" % ord(x) for x in back)))
    with open(out, "w", encoding="ascii") as f:
        f.write("\n".join(lines) + "\n")
    print("%s: %d lines" % (out, len(lines)))


if __name__ == "__main__":
    main()
