#!/usr/bin/env python3
"""The cost of a 2 MB state against one that fits (docs/performance.md 2.6).

Makes the states (ordinary words, one base64 word, one run of pseudo-random digits, one DNA
word, one digit repeated; strings, and lists of one 2 MB item), then runs
`SKYCMD decide MODEL STATE.json` for every model, build and state, interleaved, and prints
the median CPU ms of each process (user + system) and its ratio to the state of the same
kind (string or list) that fits, as a Markdown table.

  python3 bench/compare/state_cost.py --skycmd build/skycmd [--skycmd old/skycmd] \
      --model pico.gguf[:FITS_BYTES] [--model mmb.gguf:1000] [--rounds 11]

FITS_BYTES (default 440) is the size of the state that fits: pick one just under the
model's sequence (`skycmd decide` warns when a state is cut).
"""
import argparse
import os
import random
import resource
import statistics
import subprocess
import tempfile

QUESTIONS = ('"questions":{"n":{"type":"noul","instructions":"Will the drone crash?"},'
             '"c":{"type":"choice","instructions":"Pick","criteria":{"a":"up","b":"down","c":"hold"}}}')
MB2 = 2 * 1024 * 1024


def texts():
    r = random.Random(5)
    words = ("vy 0 dx 36 up 9 dn 7 nxt 10 alt 32 " * (MB2 // 35 + 1))[:MB2]
    b64 = "".join(r.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") for _ in range(MB2))
    digits = "".join(r.choice("0123456789") for _ in range(MB2))
    dna = "".join(r.choice("ACGT") for _ in range(MB2))
    return words, [("2 MB of words", words, False), ("one base64 word", b64, False),
                   ("one run of pseudo-random digits", digits, False), ("one DNA word (A, C, G, T)", dna, False),
                   ("one digit repeated", "7" * MB2, False), ("a list of one 2 MB digit run", digits, True),
                   ("a list of one 2 MB base64 word", b64, True)]


def body(text, is_list):
    return '{"state":%s,%s}\n' % (('["%s"]' if is_list else '"%s"') % text, QUESTIONS)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skycmd", action="append", required=True, help="a skycmd binary (repeat to compare builds)")
    ap.add_argument("--model", action="append", required=True, help="MODEL.gguf[:FITS_BYTES]")
    ap.add_argument("--rounds", type=int, default=11)
    a = ap.parse_args()
    words, states = texts()
    with tempfile.TemporaryDirectory() as d:
        files = {}
        for i, (name, text, is_list) in enumerate(states):
            files[name] = os.path.join(d, "s%d.json" % i)
            with open(files[name], "w") as f:
                f.write(body(text, is_list))
        models = []
        for m in a.model:
            path, _, fits = m.partition(":")
            n = int(fits or 440)
            fs = os.path.join(d, "fits-%d-string.json" % len(models))
            fl = os.path.join(d, "fits-%d-list.json" % len(models))
            with open(fs, "w") as f:
                f.write(body(words[:n], False))
            with open(fl, "w") as f:
                f.write(body(words[:n - 10], True))
            models.append((path, {"a string that fits": fs, "a list that fits": fl, **files}))
        names = ["a string that fits", "a list that fits"] + [s[0] for s in states]
        cpu = {}
        for _ in range(a.rounds):
            for mi, (path, fmap) in enumerate(models):
                for bi, exe in enumerate(a.skycmd):
                    for name in names:
                        before = resource.getrusage(resource.RUSAGE_CHILDREN)
                        subprocess.run([exe, "decide", path, fmap[name]], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, check=False)
                        after = resource.getrusage(resource.RUSAGE_CHILDREN)
                        ms = 1000 * ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
                        cpu.setdefault((mi, bi, name), []).append(ms)
        cols = [(mi, bi) for mi in range(len(models)) for bi in range(len(a.skycmd))]
        print("| state | " + " | ".join("%s, %s" % (os.path.basename(models[mi][0]), a.skycmd[bi]) for mi, bi in cols)
              + " |")
        print("|---|" + "---|" * len(cols))
        for name in names:
            cells = []
            for mi, bi in cols:
                m = statistics.median(cpu[(mi, bi, name)])
                ref = "a list that fits" if name.startswith("a list") else "a string that fits"
                base = statistics.median(cpu[(mi, bi, ref)])
                cells.append("%.1f ms" % m if name == ref else "%.1f ms (%.1fx)" % (m, m / base))
            print("| %s | %s |" % (name, " | ".join(cells)))


if __name__ == "__main__":
    main()
