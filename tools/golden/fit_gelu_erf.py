#!/usr/bin/env python3
"""Fit the rational erf that the SIMD GELU kernels use (src/kernels/kernels_x86.c).

erf(z) ~ z P(z^2) / Q(z^2) on [0, ZMAX], P and Q of degree 5, Q(0) = 1. The fit is a
linearized least-squares problem (z P(u) - erf(z) Q(u) = 0) on Chebyshev-like nodes,
reweighted by 1/Q (Sanathanan-Koerner) and by the error (Lawson) so that it approaches
the minimax fit. References: erf from mpmath at 40 digits.

Run with the reference venv (numpy, mpmath): /opt/gvenv/bin/python tools/golden/fit_gelu_erf.py
It prints the float coefficients and the error of the fit in double precision.
"""
import mpmath
import numpy as np

mpmath.mp.dps = 40
DP, DQ = 5, 5


def fit(zmax, iters=60, n=3000):
    k = np.arange(n)
    z = zmax / 2 * (1 - np.cos((k + 0.5) / n * np.pi))
    f = np.array([float(mpmath.erf(mpmath.mpf(v))) for v in z])
    u = z * z
    w = np.ones(n)
    qv = np.ones(n)
    for _ in range(iters):
        a = np.zeros((n, DP + 1 + DQ))
        for j in range(DP + 1):
            a[:, j] = z * u ** j
        for j in range(1, DQ + 1):
            a[:, DP + j] = -f * u ** j
        scale = w / np.abs(qv)
        sol, *_ = np.linalg.lstsq(a * scale[:, None], f * scale, rcond=None)
        p = sol[:DP + 1]
        q = np.concatenate([[1.0], sol[DP + 1:]])
        qv = np.polyval(q[::-1], u)
        err = z * np.polyval(p[::-1], u) / qv - f
        w = np.maximum(w * np.abs(err) ** 0.5 / np.max(w * np.abs(err) ** 0.5), 1e-6)
    return p, q, float(np.max(np.abs(err)))


def main():
    best = min((fit(zmax) + (zmax,) for zmax in (3.9, 3.95, 4.0, 4.05)), key=lambda r: r[2])
    p, q, err, zmax = best
    print("ZMAX = %.2f (erf(ZMAX) = 1 - %.2g); fit error %.3g" %
          (zmax, 1 - float(mpmath.erf(zmax)), err))
    print("P = {%s}" % ", ".join("%.9ef" % np.float32(v) for v in p))
    print("Q = {%s}" % ", ".join("%.9ef" % np.float32(v) for v in q))


if __name__ == "__main__":
    main()
