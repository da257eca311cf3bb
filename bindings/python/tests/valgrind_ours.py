"""valgrind_ours.py LOG - the valgrind records (errors and definitely-lost blocks) of LOG whose
stack passes through the extension or libskycmd; exit 1 if there is any. CPython's own
reports (e.g. the uninitialised-value false positives of an optimised longobject.c in some
builds) are counted and left out: they are not this binding's to fix."""
import re
import sys

records, current = [], []
with open(sys.argv[1], errors="replace") as f:
    for line in f:
        body = re.sub(r"^==\d+== ?", "", line.rstrip("\n"))
        if not body.strip():
            if current:
                records.append(current)
            current = []
        else:
            current.append(body)
if current:
    records.append(current)

def is_report(r):
    head = r[0]
    return (not head.startswith(("at ", "by ", "HEAP SUMMARY", "LEAK SUMMARY", "ERROR SUMMARY"))
            and any(l.lstrip().startswith("at 0x") for l in r[1:3]))

ours = re.compile(r"_skycmd\.c|_skycmd\.cpython|\bskycmd_\w+|\bsk_\w+ \(|/src/(api|decide|model|tokenizer|gguf|quant|convert|kernels|util|prompt|safetensors)/")
reports = [r for r in records if is_report(r)]
mine = [r for r in reports if any(ours.search(l) for l in r)]
for r in mine:
    print("\n".join(r) + "\n")
print(f"python valgrind: {len(mine)} reports through skycmd, {len(reports) - len(mine)} in CPython itself")
sys.exit(1 if mine else 0)
