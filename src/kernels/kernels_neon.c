/*
 * kernels_neon.c - aarch64 Advanced SIMD (NEON) f32 kernels (see kernels.h). NEON is part of
 * the base aarch64 architecture, so nothing here needs a target attribute or a feature
 * check beyond SK_CPU_NEON; on other architectures every entry point is the scalar code.
 *
 * GEMM: the packed matrix is read panel by panel (16 outputs x k, four q-registers per row
 * of outputs). The main micro-kernel keeps a 5 x 16 block of outputs in 20 registers while
 * it walks k four inputs at a time: one 4-lane load of x per row (5 registers), then per
 * input the panel's 16 weights (4 registers, widened as they load) and FMLA by element
 * (vfmaq_laneq_f32) into every row: 29 of the 32 registers, no spills (6 rows would need
 * 34). The last n_rows % 5 rows take a tile of R rows by several panels (1 x 64, 2 x 48,
 * 3 x 32, 4 x 16), so one or two rows (the decision head's marker rows) still run 16-24
 * independent accumulator chains instead of computing duplicate rows. k is cut into blocks
 * of SK_KC = 256 as in gemm_x86.c, so a panel block stays in L1 while the row blocks of x
 * stream past it. Every output, in every tile, is the same chain: the bias (or 0), then one
 * fused multiply-add per input in order of i, stored to y and reloaded between k blocks
 * (exact); so a row's result does not depend on the tile that computed it, nor on how many
 * rows share the call (the batch-equals-one-at-a-time guarantee), and the rstride views give
 * the bits of their packed copies.
 * Panels hold f32, F16 (widened by FCVTL, exact) or BF16 (a 16-bit left shift, exact)
 * elements, so the three give identical results for identical values; each kernel is
 * instantiated once per element type with a single load path.
 *
 * exp and erf: the formulas of kernels_x86.c (Cephes-style exp, a few ulp; the rational erf
 * fit clamped to [-1, 1], absolute GELU error about 1.4e-7 max(1, |x|)), with a true
 * division (FDIV) as in the AVX2 GELU; the softmax sums add in another order than the
 * reference's (four-lane partial sums).
 *
 * LayerNorm: the row mean summed in double, centring with the mean split into two floats
 * (hi + lo), the variance of the centred values in float lanes (the AVX2 scheme).
 *
 * RoPE: products rounded separately (no FMA), like the reference. widen16: exact (NaN
 * payloads of F16 may come out quieted). Unaligned 16-bit sources are read as bytes.
 * all_finite: an exponent-field test, 64 values between early exits.
 *
 * Every tail (n % 4, d % 4, k % 4, partial panels) is exact: a scalar loop or a zero-padded
 * stack copy; nothing reads or writes past the caller's arrays.
 */
#include "kernels.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#define SK_KC 256
#define MR 5

#define INLINE __attribute__((always_inline)) static inline

/* ------------------------------------------------------------------ GEMM --------- */

/* The 16 panel elements at element index idx, widened to f32 (wt is a compile-time constant
 * in every caller). */
INLINE void ld_w16(const void *base, size_t idx, int wt, float32x4_t *w) {
    if (wt == SK_PACK_F32) {
        const float *p = (const float *)base + idx;
        w[0] = vld1q_f32(p);
        w[1] = vld1q_f32(p + 4);
        w[2] = vld1q_f32(p + 8);
        w[3] = vld1q_f32(p + 12);
        return;
    }
    const uint16_t *h = (const uint16_t *)base + idx;
    const uint16x8_t a = vld1q_u16(h), b = vld1q_u16(h + 8);
    if (wt == SK_PACK_F16) {
        const float16x8_t fa = vreinterpretq_f16_u16(a), fb = vreinterpretq_f16_u16(b);
        w[0] = vcvt_f32_f16(vget_low_f16(fa));
        w[1] = vcvt_high_f32_f16(fa);
        w[2] = vcvt_f32_f16(vget_low_f16(fb));
        w[3] = vcvt_high_f32_f16(fb);
    } else {
        w[0] = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(a), 16));
        w[1] = vreinterpretq_f32_u32(vshll_high_n_u16(a, 16));
        w[2] = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(b), 16));
        w[3] = vreinterpretq_f32_u32(vshll_high_n_u16(b, 16));
    }
}

/* R rows (x, row stride ldx) by NP panels (R * NP <= 6, every panel inside the matrix) over
 * k inputs; base points at the first panel's block, pstride/rs in elements. nc: how many of
 * the NP * 16 outputs exist (the rest is panel padding, computed and not stored). accumulate:
 * continue from y (a later k block), else start from the bias (or 0). */
INLINE void kern(const float *x, size_t ldx, const void *base, size_t pstride, size_t rs,
                 size_t k, float *y, size_t ldy, size_t nc, const float *bias, int accumulate,
                 int wt, const int R, const int NP) {
    float32x4_t c[6][4];  /* R * NP tiles of 16 outputs */
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int p = 0; p < NP; p++) {
            float32x4_t *ct = c[r * NP + p];
            const size_t lo = (size_t)p * 16;
            const size_t cnt = nc <= lo ? 0 : nc - lo < 16 ? nc - lo : 16;
            if (accumulate) {
                const float *yr = y + (size_t)r * ldy + lo;
                if (cnt == 16) {
                    ct[0] = vld1q_f32(yr);
                    ct[1] = vld1q_f32(yr + 4);
                    ct[2] = vld1q_f32(yr + 8);
                    ct[3] = vld1q_f32(yr + 12);
                } else {
                    float tmp[16] = {0};
                    memcpy(tmp, yr, cnt * sizeof(float));
                    ct[0] = vld1q_f32(tmp);
                    ct[1] = vld1q_f32(tmp + 4);
                    ct[2] = vld1q_f32(tmp + 8);
                    ct[3] = vld1q_f32(tmp + 12);
                }
            } else if (bias) { /* padded with zeros to a whole panel */
                ct[0] = vld1q_f32(bias + lo);
                ct[1] = vld1q_f32(bias + lo + 4);
                ct[2] = vld1q_f32(bias + lo + 8);
                ct[3] = vld1q_f32(bias + lo + 12);
            } else {
                ct[0] = ct[1] = ct[2] = ct[3] = vdupq_n_f32(0.0f);
            }
        }
    /* four inputs at a time: one 4-lane load of x per row, then FMLA by element */
    size_t i = 0;
    for (; i + 4 <= k; i += 4) {
        float32x4_t xv[MR];
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) xv[r] = vld1q_f32(x + (size_t)r * ldx + i);
#define STEP(J)                                                                  \
    _Pragma("GCC unroll 4") for (int p = 0; p < NP; p++) {                      \
        float32x4_t wv[4];                                                       \
        ld_w16(base, (size_t)p * pstride + (i + (J)) * rs, wt, wv);              \
        _Pragma("GCC unroll 6") for (int r = 0; r < R; r++) {                    \
            float32x4_t *ct = c[r * NP + p];                                     \
            ct[0] = vfmaq_laneq_f32(ct[0], wv[0], xv[r], J);                     \
            ct[1] = vfmaq_laneq_f32(ct[1], wv[1], xv[r], J);                     \
            ct[2] = vfmaq_laneq_f32(ct[2], wv[2], xv[r], J);                     \
            ct[3] = vfmaq_laneq_f32(ct[3], wv[3], xv[r], J);                     \
        }                                                                        \
    }
        STEP(0) STEP(1) STEP(2) STEP(3)
#undef STEP
    }
    for (; i < k; i++) {
#pragma GCC unroll 4
        for (int p = 0; p < NP; p++) {
            float32x4_t wv[4];
            ld_w16(base, (size_t)p * pstride + i * rs, wt, wv);
#pragma GCC unroll 6
            for (int r = 0; r < R; r++) {
                const float32x4_t a = vld1q_dup_f32(x + (size_t)r * ldx + i);
                float32x4_t *ct = c[r * NP + p];
                ct[0] = vfmaq_f32(ct[0], wv[0], a);
                ct[1] = vfmaq_f32(ct[1], wv[1], a);
                ct[2] = vfmaq_f32(ct[2], wv[2], a);
                ct[3] = vfmaq_f32(ct[3], wv[3], a);
            }
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int p = 0; p < NP; p++) {
            const float32x4_t *ct = c[r * NP + p];
            const size_t lo = (size_t)p * 16;
            const size_t cnt = nc <= lo ? 0 : nc - lo < 16 ? nc - lo : 16;
            float *yr = y + (size_t)r * ldy + lo;
            if (cnt == 16) {
                vst1q_f32(yr, ct[0]);
                vst1q_f32(yr + 4, ct[1]);
                vst1q_f32(yr + 8, ct[2]);
                vst1q_f32(yr + 12, ct[3]);
            } else {
                float tmp[16];
                vst1q_f32(tmp, ct[0]);
                vst1q_f32(tmp + 4, ct[1]);
                vst1q_f32(tmp + 8, ct[2]);
                vst1q_f32(tmp + 12, ct[3]);
                memcpy(yr, tmp, cnt * sizeof(float));
            }
        }
}

/* The last R (1-4) rows of a k block: NP panels at a time (the widest tile that keeps at
 * most 24 accumulators), then the panels left over one by one. */
INLINE void rows_tail(const float *x, size_t ldx, const sk_packed *w, size_t k0, size_t kc,
                      float *y, size_t ldy, int wt, const int R, const int NP) {
    const size_t m = w->n_out, np = (m + 15) / 16, rs = sk_packed_rstride(w);
    const size_t esz = wt == SK_PACK_F32 ? 4 : 2;
    size_t p = 0;
    for (; p + (size_t)NP <= np; p += (size_t)NP) {
        const void *base = (const char *)w->data + (p * w->pstride + k0 * rs) * esz;
        const size_t nc = m - p * 16 < (size_t)NP * 16 ? m - p * 16 : (size_t)NP * 16;
        kern(x + k0, ldx, base, w->pstride, rs, kc, y + p * 16, ldy, nc,
             w->bias ? w->bias + p * 16 : NULL, k0 > 0, wt, R, NP);
    }
    for (; p < np; p++) {
        const void *base = (const char *)w->data + (p * w->pstride + k0 * rs) * esz;
        const size_t nc = m - p * 16 < 16 ? m - p * 16 : 16;
        kern(x + k0, ldx, base, w->pstride, rs, kc, y + p * 16, ldy, nc,
             w->bias ? w->bias + p * 16 : NULL, k0 > 0, wt, R, 1);
    }
}

INLINE void gemm_t(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,
                   size_t ldy, int wt) {
    const size_t k = w->n_in, m = w->n_out, np = (m + 15) / 16, rs = sk_packed_rstride(w);
    const size_t esz = wt == SK_PACK_F32 ? 4 : 2;
    const size_t rem = n_rows % MR, n_main = n_rows - rem;
    for (size_t k0 = 0; k0 < k; k0 += SK_KC) {
        const size_t kc = k - k0 < SK_KC ? k - k0 : SK_KC;
        for (size_t p = 0; p < np; p++) {
            const void *base = (const char *)w->data + (p * w->pstride + k0 * rs) * esz;
            const size_t nc = m - p * 16 < 16 ? m - p * 16 : 16;
            const float *bias = w->bias ? w->bias + p * 16 : NULL;
            for (size_t r0 = 0; r0 < n_main; r0 += MR)
                kern(x + r0 * ldx + k0, ldx, base, w->pstride, rs, kc, y + r0 * ldy + p * 16,
                     ldy, nc, bias, k0 > 0, wt, MR, 1);
        }
        const float *xt = x + n_main * ldx;
        float *yt = y + n_main * ldy;
        switch (rem) {
        case 0: break;
        case 1: rows_tail(xt, ldx, w, k0, kc, yt, ldy, wt, 1, 4); break;
        case 2: rows_tail(xt, ldx, w, k0, kc, yt, ldy, wt, 2, 3); break;
        case 3: rows_tail(xt, ldx, w, k0, kc, yt, ldy, wt, 3, 2); break;
        default: rows_tail(xt, ldx, w, k0, kc, yt, ldy, wt, 4, 1); break;
        }
    }
}

/* GCC's pre-allocation scheduler hoists the next steps' weight loads above the FMLAs and
 * pushes the tiles past the 32 registers (accumulators spilled in the inner loop); without
 * it every tile's loop is spill-free. */
#if defined(__GNUC__) && !defined(__clang__)
#define GEMM_FN __attribute__((optimize("no-schedule-insns"))) static
#else
#define GEMM_FN static
#endif

GEMM_FN void gemm_f32(const float *x, size_t ldx, size_t n, const sk_packed *w, float *y,
                     size_t ldy) {
    gemm_t(x, ldx, n, w, y, ldy, SK_PACK_F32);
}
GEMM_FN void gemm_f16(const float *x, size_t ldx, size_t n, const sk_packed *w, float *y,
                     size_t ldy) {
    gemm_t(x, ldx, n, w, y, ldy, SK_PACK_F16);
}
GEMM_FN void gemm_bf16(const float *x, size_t ldx, size_t n, const sk_packed *w, float *y,
                      size_t ldy) {
    gemm_t(x, ldx, n, w, y, ldy, SK_PACK_BF16);
}

void sk_gemm_neon(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,
                  size_t ldy) {
    if (w->wtype == SK_PACK_F16)
        gemm_f16(x, ldx, n_rows, w, y, ldy);
    else if (w->wtype == SK_PACK_BF16)
        gemm_bf16(x, ldx, n_rows, w, y, ldy);
    else
        gemm_f32(x, ldx, n_rows, w, y, ldy);
}

/* ------------------------------------------------------------------ LayerNorm ---- */

/* One row: y = (x - mean) / sqrt(var + eps) * w (+ b). y may alias x. */
static void ln_row(const float *xr, size_t d, const float *w, const float *b, float eps,
                   float *yr) {
    float64x2_t s0 = vdupq_n_f64(0.0), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 8 <= d; i += 8) {
        const float32x4_t v0 = vld1q_f32(xr + i), v1 = vld1q_f32(xr + i + 4);
        s0 = vaddq_f64(s0, vcvt_f64_f32(vget_low_f32(v0)));
        s1 = vaddq_f64(s1, vcvt_high_f64_f32(v0));
        s2 = vaddq_f64(s2, vcvt_f64_f32(vget_low_f32(v1)));
        s3 = vaddq_f64(s3, vcvt_high_f64_f32(v1));
    }
    double sum = vaddvq_f64(vaddq_f64(vaddq_f64(s0, s1), vaddq_f64(s2, s3)));
    for (; i < d; i++) sum += xr[i];
    const double mean = sum / (double)d;
    const float mhi = (float)mean, mlo = (float)(mean - (double)mhi);
    const float32x4_t vhi = vdupq_n_f32(mhi), vlo = vdupq_n_f32(mlo);
    float32x4_t q0 = vdupq_n_f32(0.0f), q1 = q0, q2 = q0, q3 = q0;
    for (i = 0; i + 16 <= d; i += 16) {
        const float32x4_t t0 = vsubq_f32(vsubq_f32(vld1q_f32(xr + i), vhi), vlo);
        const float32x4_t t1 = vsubq_f32(vsubq_f32(vld1q_f32(xr + i + 4), vhi), vlo);
        const float32x4_t t2 = vsubq_f32(vsubq_f32(vld1q_f32(xr + i + 8), vhi), vlo);
        const float32x4_t t3 = vsubq_f32(vsubq_f32(vld1q_f32(xr + i + 12), vhi), vlo);
        q0 = vfmaq_f32(q0, t0, t0);
        q1 = vfmaq_f32(q1, t1, t1);
        q2 = vfmaq_f32(q2, t2, t2);
        q3 = vfmaq_f32(q3, t3, t3);
    }
    double var = (double)vaddvq_f32(vaddq_f32(vaddq_f32(q0, q1), vaddq_f32(q2, q3)));
    for (; i < d; i++) {
        const double t = (double)xr[i] - mean;
        var += t * t;
    }
    const float rstd = (float)(1.0 / sqrt(var / (double)d + (double)eps));
    const float32x4_t vr = vdupq_n_f32(rstd);
    for (i = 0; i + 4 <= d; i += 4) {
        const float32x4_t t = vsubq_f32(vsubq_f32(vld1q_f32(xr + i), vhi), vlo);
        float32x4_t v = vmulq_f32(vmulq_f32(t, vr), vld1q_f32(w + i));
        if (b) v = vaddq_f32(v, vld1q_f32(b + i));
        vst1q_f32(yr + i, v);
    }
    for (; i < d; i++) {
        const float v = ((xr[i] - mhi) - mlo) * rstd * w[i];
        yr[i] = b ? v + b[i] : v;
    }
}

void sk_layernorm_neon(const float *x, size_t n_rows, size_t d, const float *w, const float *b,
                       float eps, float *y) {
    for (size_t r = 0; r < n_rows; r++) ln_row(x + r * d, d, w, b, eps, y + r * d);
}

/* Row by row: the residual add of a row, then its LayerNorm while it is in cache. y may
 * alias x or a: row r of a is read before row r of y is written. */
void sk_add_layernorm_neon(float *x, const float *a, size_t n_rows, size_t d, const float *w,
                           const float *b, float eps, float *y) {
    for (size_t r = 0; r < n_rows; r++) {
        float *xr = x + r * d;
        if (a) {
            const float *ar = a + r * d;
            size_t i = 0;
            for (; i + 4 <= d; i += 4) vst1q_f32(xr + i, vaddq_f32(vld1q_f32(xr + i), vld1q_f32(ar + i)));
            for (; i < d; i++) xr[i] += ar[i];
        }
        ln_row(xr, d, w, b, eps, y + r * d);
    }
}

/* ------------------------------------------------------------------ GELU --------- */

/* The rational erf fit of kernels_x86.c (tools/golden/fit_gelu_erf.py): erf(z) = z P(z^2) /
 * Q(z^2) on |z| <= 3.9, clamped to [-1, 1]. */
static const float gelu_erf_p[6] = {1.128378987e+00f, 1.919294000e-01f, 5.296520516e-02f,
                                    3.836323274e-03f, 2.874355123e-04f, 2.050359171e-06f};
static const float gelu_erf_q[6] = {1.0f, 5.034247637e-01f, 1.147532389e-01f,
                                    1.510811411e-02f, 1.181582455e-03f, 3.822930375e-05f};
#define GELU_ERF_ZMAX 3.9f

INLINE float32x4_t gelu4(float32x4_t x) {
    const float32x4_t zmax = vdupq_n_f32(GELU_ERF_ZMAX), one = vdupq_n_f32(1.0f);
    float32x4_t z = vmulq_f32(x, vdupq_n_f32(0.70710678118654752f));
    z = vmaxq_f32(vminq_f32(z, zmax), vnegq_f32(zmax));
    const float32x4_t u = vmulq_f32(z, z);
    float32x4_t p = vdupq_n_f32(gelu_erf_p[5]), q = vdupq_n_f32(gelu_erf_q[5]);
#pragma GCC unroll 5
    for (int k = 4; k >= 0; k--) {
        p = vfmaq_f32(vdupq_n_f32(gelu_erf_p[k]), p, u);
        q = vfmaq_f32(vdupq_n_f32(gelu_erf_q[k]), q, u);
    }
    float32x4_t erf = vdivq_f32(vmulq_f32(z, p), q);
    erf = vmaxq_f32(vminq_f32(erf, one), vnegq_f32(one));
    const float32x4_t h = vmulq_f32(x, vdupq_n_f32(0.5f));
    return vfmaq_f32(h, h, erf);
}

void sk_geglu_neon(const float *a, const float *g, float *y, size_t n) {
    size_t i = 0;
    /* four independent chains per step, so the divisions and polynomials overlap */
    for (; i + 16 <= n; i += 16) {
        const float32x4_t v0 = gelu4(vld1q_f32(a + i)), v1 = gelu4(vld1q_f32(a + i + 4));
        const float32x4_t v2 = gelu4(vld1q_f32(a + i + 8)), v3 = gelu4(vld1q_f32(a + i + 12));
        vst1q_f32(y + i, vmulq_f32(v0, vld1q_f32(g + i)));
        vst1q_f32(y + i + 4, vmulq_f32(v1, vld1q_f32(g + i + 4)));
        vst1q_f32(y + i + 8, vmulq_f32(v2, vld1q_f32(g + i + 8)));
        vst1q_f32(y + i + 12, vmulq_f32(v3, vld1q_f32(g + i + 12)));
    }
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, vmulq_f32(gelu4(vld1q_f32(a + i)), vld1q_f32(g + i)));
    if (i < n) {
        float ta[4] = {0}, tg[4] = {0};
        memcpy(ta, a + i, (n - i) * sizeof(float));
        memcpy(tg, g + i, (n - i) * sizeof(float));
        vst1q_f32(ta, vmulq_f32(gelu4(vld1q_f32(ta)), vld1q_f32(tg)));
        memcpy(y + i, ta, (n - i) * sizeof(float));
    }
}

void sk_gelu_neon(float *x, size_t n) {
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const float32x4_t v0 = gelu4(vld1q_f32(x + i)), v1 = gelu4(vld1q_f32(x + i + 4));
        const float32x4_t v2 = gelu4(vld1q_f32(x + i + 8)), v3 = gelu4(vld1q_f32(x + i + 12));
        vst1q_f32(x + i, v0);
        vst1q_f32(x + i + 4, v1);
        vst1q_f32(x + i + 8, v2);
        vst1q_f32(x + i + 12, v3);
    }
    for (; i + 4 <= n; i += 4) vst1q_f32(x + i, gelu4(vld1q_f32(x + i)));
    if (i < n) {
        float t[4] = {0};
        memcpy(t, x + i, (n - i) * sizeof(float));
        vst1q_f32(t, gelu4(vld1q_f32(t)));
        memcpy(x + i, t, (n - i) * sizeof(float));
    }
}

/* ------------------------------------------------------------------ softmax ------ */

/* exp(x) for x in about [-87.3, 88.7]; smaller x (and -inf) give 0 (the result would be
 * below the normal range). The exp256 of kernels_x86.c, four lanes wide. */
INLINE float32x4_t exp4(float32x4_t x) {
    const float32x4_t lo = vdupq_n_f32(-87.3f), hi = vdupq_n_f32(88.7f);
    const uint32x4_t under = vcltq_f32(x, lo);
    x = vmaxq_f32(vminq_f32(x, hi), lo);
    const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
    p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
    p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), p, vmulq_f32(r, r));
    const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    const float32x4_t res = vmulq_f32(p, vreinterpretq_f32_s32(e));
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(res), under));
}

void sk_attn_softmax_neon(float *x, size_t n, float scale) {
    if (n == 0) return;
    const float32x4_t vs = vdupq_n_f32(scale);
    float32x4_t m0 = vdupq_n_f32(-INFINITY), m1 = m0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const float32x4_t v0 = vmulq_f32(vld1q_f32(x + i), vs);
        const float32x4_t v1 = vmulq_f32(vld1q_f32(x + i + 4), vs);
        vst1q_f32(x + i, v0);
        vst1q_f32(x + i + 4, v1);
        m0 = vmaxq_f32(m0, v0);
        m1 = vmaxq_f32(m1, v1);
    }
    float mx = vmaxvq_f32(vmaxq_f32(m0, m1));
    for (; i < n; i++) {
        x[i] *= scale;
        if (x[i] > mx) mx = x[i];
    }
    const float32x4_t vmx = vdupq_n_f32(mx);
    float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
    for (i = 0; i + 16 <= n; i += 16) {
        const float32x4_t e0 = exp4(vsubq_f32(vld1q_f32(x + i), vmx));
        const float32x4_t e1 = exp4(vsubq_f32(vld1q_f32(x + i + 4), vmx));
        const float32x4_t e2 = exp4(vsubq_f32(vld1q_f32(x + i + 8), vmx));
        const float32x4_t e3 = exp4(vsubq_f32(vld1q_f32(x + i + 12), vmx));
        vst1q_f32(x + i, e0);
        vst1q_f32(x + i + 4, e1);
        vst1q_f32(x + i + 8, e2);
        vst1q_f32(x + i + 12, e3);
        s0 = vaddq_f32(s0, e0);
        s1 = vaddq_f32(s1, e1);
        s2 = vaddq_f32(s2, e2);
        s3 = vaddq_f32(s3, e3);
    }
    for (; i + 4 <= n; i += 4) {
        const float32x4_t e = exp4(vsubq_f32(vld1q_f32(x + i), vmx));
        vst1q_f32(x + i, e);
        s0 = vaddq_f32(s0, e);
    }
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
    if (i < n) {
        float t[4];
        for (size_t j = 0; j < 4; j++) t[j] = i + j < n ? x[i + j] - mx : -INFINITY;
        vst1q_f32(t, exp4(vld1q_f32(t)));
        for (size_t j = 0; i + j < n; j++) {
            x[i + j] = t[j];
            sum += t[j];
        }
    }
    const float inv = 1.0f / sum;
    const float32x4_t vinv = vdupq_n_f32(inv);
    for (i = 0; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_f32(vld1q_f32(x + i), vinv));
    for (; i < n; i++) x[i] *= inv;
}

/* ------------------------------------------------------------------ RoPE --------- */

/* Products rounded separately (FMUL, then FSUB/FADD: no contraction in ISO C mode), so the
 * rotation is bitwise the reference's. Any half-size: a scalar tail for half % 4. */
void sk_rope_neon(float *u, size_t n_heads, size_t D, const float *c, const float *s) {
    const size_t half = D / 2;
    for (size_t h = 0; h < n_heads; h++) {
        float *v = u + h * D;
        size_t i = 0;
        for (; i + 4 <= half; i += 4) {
            const float32x4_t x1 = vld1q_f32(v + i), x2 = vld1q_f32(v + half + i);
            const float32x4_t vc = vld1q_f32(c + i), vs = vld1q_f32(s + i);
            vst1q_f32(v + i, vsubq_f32(vmulq_f32(x1, vc), vmulq_f32(x2, vs)));
            vst1q_f32(v + half + i, vaddq_f32(vmulq_f32(x2, vc), vmulq_f32(x1, vs)));
        }
        for (; i < half; i++) {
            const float x1 = v[i], x2 = v[i + half];
            v[i] = x1 * c[i] - x2 * s[i];
            v[i + half] = x2 * c[i] + x1 * s[i];
        }
    }
}

/* ------------------------------------------------------------------ widen16 ------ */

void sk_widen16_neon(int wtype, const void *src, float *dst, size_t n) {
    const uint8_t *bytes = src;  /* may be unaligned: read as bytes, little-endian lanes */
    size_t i = 0;
#if !defined(__AARCH64EB__)
    if (wtype == SK_PACK_F16)
        for (; i + 8 <= n; i += 8) {
            const float16x8_t h = vreinterpretq_f16_u8(vld1q_u8(bytes + 2 * i));
            vst1q_f32(dst + i, vcvt_f32_f16(vget_low_f16(h)));
            vst1q_f32(dst + i + 4, vcvt_high_f32_f16(h));
        }
    else
        for (; i + 8 <= n; i += 8) {
            const uint16x8_t h = vreinterpretq_u16_u8(vld1q_u8(bytes + 2 * i));
            vst1q_f32(dst + i, vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16)));
            vst1q_f32(dst + i + 4, vreinterpretq_f32_u32(vshll_high_n_u16(h, 16)));
        }
#endif
    if (i < n) sk_widen16_ref(wtype, bytes + 2 * i, dst + i, n - i);
}

/* ------------------------------------------------------------------ all_finite --- */

/* An exponent field of all ones is an infinity or a NaN. Blocks of 64 values, so a bad
 * value stops the scan within a block. */
int sk_all_finite_neon(const float *x, size_t n) {
    const uint32x4_t expo = vdupq_n_u32(0x7f800000u);
    size_t i = 0;
    while (i + 16 <= n) {
        uint32x4_t bad = vdupq_n_u32(0);
        const size_t end = n - i >= 64 ? i + 64 : i + (n - i) / 16 * 16;
        for (; i < end; i += 16) {
            const uint32x4_t v0 = vreinterpretq_u32_f32(vld1q_f32(x + i));
            const uint32x4_t v1 = vreinterpretq_u32_f32(vld1q_f32(x + i + 4));
            const uint32x4_t v2 = vreinterpretq_u32_f32(vld1q_f32(x + i + 8));
            const uint32x4_t v3 = vreinterpretq_u32_f32(vld1q_f32(x + i + 12));
            bad = vorrq_u32(bad, vorrq_u32(vceqq_u32(vandq_u32(v0, expo), expo),
                                           vceqq_u32(vandq_u32(v1, expo), expo)));
            bad = vorrq_u32(bad, vorrq_u32(vceqq_u32(vandq_u32(v2, expo), expo),
                                           vceqq_u32(vandq_u32(v3, expo), expo)));
        }
        if (vmaxvq_u32(bad)) return 0;
    }
    for (; i + 4 <= n; i += 4) {
        const uint32x4_t v = vreinterpretq_u32_f32(vld1q_f32(x + i));
        if (vmaxvq_u32(vceqq_u32(vandq_u32(v, expo), expo))) return 0;
    }
    for (; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

#else /* not aarch64: the NEON entry points are the scalar code */

void sk_gemm_neon(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,
                  size_t ldy) {
    sk_gemm_scalar(x, ldx, n_rows, w, y, ldy);
}
void sk_layernorm_neon(const float *x, size_t n_rows, size_t d, const float *w, const float *b,
                       float eps, float *y) {
    sk_layernorm_ref(x, n_rows, d, w, b, eps, y);
}
void sk_add_layernorm_neon(float *x, const float *a, size_t n_rows, size_t d, const float *w,
                           const float *b, float eps, float *y) {
    sk_add_layernorm_ref(x, a, n_rows, d, w, b, eps, y);
}
void sk_geglu_neon(const float *a, const float *g, float *y, size_t n) { sk_geglu_ref(a, g, y, n); }
void sk_gelu_neon(float *x, size_t n) { sk_gelu_ref(x, n); }
void sk_attn_softmax_neon(float *x, size_t n, float scale) { sk_attn_softmax_ref(x, n, scale); }
void sk_rope_neon(float *u, size_t n_heads, size_t D, const float *c, const float *s) {
    sk_rope_ref(u, n_heads, D, c, s);
}
void sk_widen16_neon(int wtype, const void *src, float *dst, size_t n) {
    sk_widen16_ref(wtype, src, dst, n);
}
int sk_all_finite_neon(const float *x, size_t n) { return sk_all_finite_ref(x, n); }
#endif
