"""Golden figures of torch's float32 CPU kernels that laya's temperature fit runs, for
src/decide/torch_f32.c (tests/test_calibrate.c compares bit for bit).

    /tmp/gvenv/bin/python tools/golden/make_torch_f32_golden.py [--out tests/fixtures/calibrate]

Writes torch_f32.json. Inputs are not stored: both sides draw them from the same 64-bit
LCG (`lcg_floats`, mirrored in the test), so the file holds only torch's outputs:
  sum          torch.sum of n floats, for n from 1 to 40 and a few long lengths (bits);
  log_softmax  FNV-1a 64 of the output bits of torch.log_softmax(X / s, -1) for X of 37 rows
               and widths 1..40, 64, 100, 255 (s the scale, as the fit divides);
  backward     the same for the gradient log_softmax's autograd backward returns, given
               an upstream gradient G (what the fit's chain hands it);
  exp          torch.exp (MKL vsExp) on 200,000 floats in [-12, 12]: the indices and bits
               where it differs from the correctly rounded expf, for the model's
               mismatch count.
Run with one thread (torch.set_num_threads(1)), as the fit's golden was.
"""
import argparse
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
M64 = (1 << 64) - 1


def lcg_floats(seed, n, lo, hi):
    """n float32 values in [lo, hi): 24-bit uniforms from a 64-bit LCG, scaled in double."""
    out = np.empty(n, dtype=np.float32)
    s = seed & M64
    for i in range(n):
        s = (s * 6364136223846793005 + 1442695040888963407) & M64
        u = (s >> 40) / float(1 << 24)
        out[i] = np.float32(lo + (hi - lo) * u)
    return out


def fnv1a(arr):
    h = 0xcbf29ce484222325
    for b in np.ascontiguousarray(arr, dtype=np.float32).reshape(-1).view(np.uint32).tolist():
        for k in range(4):
            h ^= (b >> (8 * k)) & 0xff
            h = (h * 0x100000001b3) & M64
    return "%016x" % h


SUM_LENGTHS = list(range(1, 41)) + [63, 64, 65, 100, 127, 255, 256, 1000, 2000, 2080, 5200, 12480, 20000]
WIDTHS = list(range(1, 41)) + [64, 100, 255]
ROWS = 37


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "fixtures", "calibrate"))
    a = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    doc = {"format": 1, "versions": {"torch": torch.__version__,
                                     "cpu_capability": torch.backends.cpu.get_cpu_capability()},
           "rows": ROWS, "sum": [], "log_softmax": [], "backward": []}
    for n in SUM_LENGTHS:
        x = lcg_floats(1000 + n, n, -3.0, 3.0)
        s = torch.from_numpy(x).sum().numpy()
        doc["sum"].append({"n": n, "bits": int(np.float32(s).view(np.uint32))})
    scale = np.float32(1.7156487703323364)
    for w in WIDTHS:
        z = torch.from_numpy(lcg_floats(2000 + w, ROWS * w, -20.0, 20.0).reshape(ROWS, w))
        g = torch.from_numpy(lcg_floats(3000 + w, ROWS * w, -1.0, 1.0).reshape(ROWS, w))
        u = (z / torch.tensor([scale])).requires_grad_(True)
        out = torch.log_softmax(u, -1)
        out.backward(g)
        doc["log_softmax"].append({"w": w, "fnv": fnv1a(out.detach().numpy())})
        doc["backward"].append({"w": w, "fnv": fnv1a(u.grad.numpy())})
    n_exp = 200000
    x = lcg_floats(77, n_exp, -12.0, 12.0)
    mk = torch.exp(torch.from_numpy(x)).numpy()
    cr = np.exp(x.astype(np.float64)).astype(np.float32)
    idx = np.nonzero(mk != cr)[0]
    doc["exp"] = {"n": n_exp, "seed": 77, "lo": -12.0, "hi": 12.0,
                  "differs": [[int(i), int(mk[i].view(np.uint32))] for i in idx]}
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "torch_f32.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    print("torch_f32.json: %d sums, %d widths, exp differs from the correctly rounded value at %d of %d"
          % (len(SUM_LENGTHS), len(WIDTHS), len(idx), n_exp))


if __name__ == "__main__":
    main()
