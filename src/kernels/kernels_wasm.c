/* kernels_wasm.c - WebAssembly SIMD128 kernels (wasm_simd128.h), chosen at build time: a
 * wasm32 build with -msimd128 (tools/build-wasm.sh --simd) dispatches to them
 * (kernels.c and q8_ref.c, level "simd128"); elsewhere these entry points are the scalar
 * code. SIMD128 has no fused multiply-add: every kernel multiplies and adds separately.
 *
 * Bit for bit the scalar reference's results (tests/wasm/kernels_wasi.c checks each):
 *  - The packed GEMM: per output, the products are added in the same order (k ascending,
 *    blocks of SK_SCALAR_KC), the bias added last, so a row does not depend on the rows
 *    beside it. Tiles of 2 rows x 16 outputs (8 accumulators); F16/BF16 panels are widened
 *    once per block of k, as the reference does, by sk_widen16_wasm (also the level's
 *    widen16).
 *  - The int8 GEMM (q8.h's fixed arithmetic): the integer sums with i32x4.dot_i16x8_s on
 *    quants widened to int16 (exact: integer sums in any order); the float step
 *    fmaf(xs * wd, isum, acc) from double lanes (exact products, one rounding of the sum,
 *    then to float), with libm's fmaf itself for the rare lanes where that second rounding
 *    could differ from fmaf's one (a float halfway case, or a subnormal result). So it
 *    gives the reference's fmaf bits, also where wasi-libc's fmaf is not correctly rounded
 *    (it rounds twice when the addend is far above the product: tests/wasm/kernels_wasi.c).
 *    The activations' quantization gives sk_q8_quantize_act_ref's bytes.
 *  - The residual add of add+LayerNorm.
 * Within a bound of the reference (the x86 levels' approximations, without their FMAs):
 *  - GELU/GEGLU: kernels_x86.c's rational erf, within 2.5e-7 max(1, |x|) of the exact GELU.
 *  - Softmax: kernels_x86.c's exp256 four lanes wide (Cephes-style reduction, degree-6
 *    polynomial), sums in four lanes: within 1e-6 relative of the libm-based reference,
 *    test_kernels.c's bound for every SIMD level.
 *  - LayerNorm: the mean summed in double lanes, centred with the mean as hi + lo floats,
 *    the variance of the centred values in float lanes (kernels_x86.c's AVX2 scheme): within
 *    2e-5 max(1, |y|) of the reference, test_kernels.c's bound. */
#include "kernels.h"

#include "q8.h"
#include "../numeric/numeric.h"

#if defined(__wasm_simd128__)
#include <math.h>
#include <string.h>
#include <wasm_simd128.h>

#define KC 128 /* the reference's k block (SK_SCALAR_KC in kernels_ref.c) */

/* F16/BF16 (little-endian, as GGUF stores them) to f32, exactly as sk_widen16_ref. F16:
 * the magnitude's bits moved into f32 position and multiplied by 2^112 rebias normal and
 * subnormal values alike (exact: a power of two, no flush to zero in wasm); an all-ones
 * exponent becomes f32's infinity/NaN with the same payload; then the sign. */
static inline v128_t f16_to_f32_lanes(v128_t e /* four F16 values, one per u32 lane */) {
    const v128_t rebias = wasm_f32x4_splat(0x1p112f), expo = wasm_i32x4_splat(0x7c00);
    const v128_t mag_mask = wasm_i32x4_splat(0x7fff), sign_mask = wasm_i32x4_splat(0x8000);
    const v128_t inf = wasm_i32x4_splat(0x7f800000);
    const v128_t mag = wasm_i32x4_shl(wasm_v128_and(e, mag_mask), 13);
    const v128_t fin = wasm_f32x4_mul(mag, rebias);
    const v128_t special = wasm_i32x4_eq(wasm_v128_and(e, expo), expo);
    const v128_t v = wasm_v128_bitselect(wasm_v128_or(mag, inf), fin, special);
    return wasm_v128_or(v, wasm_i32x4_shl(wasm_v128_and(e, sign_mask), 16));
}

void sk_widen16_wasm(int wtype, const void *src, float *dst, size_t n) {
    const unsigned char *b = src;
    size_t i = 0;
    if (wtype == SK_PACK_BF16) {
        for (; i + 8 <= n; i += 8) {
            const v128_t h = wasm_v128_load(b + 2 * i);
            wasm_v128_store(dst + i, wasm_i32x4_shl(wasm_u32x4_extend_low_u16x8(h), 16));
            wasm_v128_store(dst + i + 4, wasm_i32x4_shl(wasm_u32x4_extend_high_u16x8(h), 16));
        }
    } else {
        for (; i + 4 <= n; i += 4)
            wasm_v128_store(dst + i, f16_to_f32_lanes(wasm_u32x4_extend_low_u16x8(
                                         wasm_v128_load64_zero(b + 2 * i))));
    }
    if (i < n) sk_widen16_ref(wtype, b + 2 * i, dst + i, n - i);
}

/* A tile: GEMM_ROWS rows x GEMM_VECS vectors of 4 outputs of one panel (overridable with
 * -D to try other shapes). 2 x 16: 8 accumulators, 4 weight vectors and a broadcast fit in
 * the 16 vector registers V8 has on x86-64; 4 x 16 spills, and measured 13 % slower on
 * s1-pico's products in Node 20 (AMD EPYC, tests/wasm/bench.sh's shapes). */
#ifndef GEMM_ROWS
#define GEMM_ROWS 2
#endif
#ifndef GEMM_VECS
#define GEMM_VECS 4
#endif
#if GEMM_ROWS < 1 || GEMM_ROWS > 4 || (GEMM_VECS != 1 && GEMM_VECS != 2 && GEMM_VECS != 4)
#error "tiles of 1 to 4 rows and 4, 8 or 16 outputs (a whole number of tiles per panel)"
#endif
#define GEMM_COLS (4 * GEMM_VECS)

/* Rows [0, R) of x (R <= GEMM_ROWS) times kc rows (stride ps) of GEMM_COLS panel columns,
 * added to acc. */
static inline void tile(const float *x, size_t ldx, const float *panel, size_t ps, size_t kc,
                        v128_t acc[][GEMM_VECS], int R) {
    for (size_t i = 0; i < kc; i++) {
        const float *pr = panel + i * ps;
        v128_t w[GEMM_VECS];
        for (int j = 0; j < GEMM_VECS; j++) w[j] = wasm_v128_load(pr + 4 * j);
        for (int r = 0; r < R; r++) {
            const v128_t xi = wasm_f32x4_splat(x[r * ldx + i]);
            for (int j = 0; j < GEMM_VECS; j++)
                acc[r][j] = wasm_f32x4_add(acc[r][j], wasm_f32x4_mul(xi, w[j]));
        }
    }
}

/* Rows [0, R) and the nc (<= GEMM_COLS) outputs of a tile for one k block: start from y
 * (k0 > 0) or zero, store the nc outputs back, with the bias added after the last block. */
static inline void block(const float *x, size_t ldx, const float *panel, size_t ps, size_t kc,
                         float *y, size_t ldy, size_t nc, const float *bias, int first, int R) {
    v128_t acc[GEMM_ROWS][GEMM_VECS];
    float buf[GEMM_COLS];
    for (int r = 0; r < R; r++) {
        if (!first && nc < GEMM_COLS) {
            memset(buf, 0, sizeof buf);
            memcpy(buf, y + r * ldy, nc * sizeof(float));
        }
        for (int j = 0; j < GEMM_VECS; j++)
            acc[r][j] = first ? wasm_f32x4_splat(0.0f)
                              : wasm_v128_load(nc == GEMM_COLS ? y + r * ldy + 4 * j : buf + 4 * j);
    }
    switch (R) {  /* constant row counts: the accumulators stay in locals */
#if GEMM_ROWS >= 4
    case 4: tile(x, ldx, panel, ps, kc, acc, 4); break;
#endif
#if GEMM_ROWS >= 3
    case 3: tile(x, ldx, panel, ps, kc, acc, 3); break;
#endif
#if GEMM_ROWS >= 2
    case 2: tile(x, ldx, panel, ps, kc, acc, 2); break;
#endif
    default: tile(x, ldx, panel, ps, kc, acc, 1); break;
    }
    for (int r = 0; r < R; r++) {
        if (bias)
            for (int j = 0; j < GEMM_VECS; j++) acc[r][j] = wasm_f32x4_add(acc[r][j], wasm_v128_load(bias + 4 * j));
        if (nc == GEMM_COLS) {
            for (int j = 0; j < GEMM_VECS; j++) wasm_v128_store(y + r * ldy + 4 * j, acc[r][j]);
        } else {
            for (int j = 0; j < GEMM_VECS; j++) wasm_v128_store(buf + 4 * j, acc[r][j]);
            memcpy(y + r * ldy, buf, nc * sizeof(float));
        }
    }
}

/* GELU as kernels_x86.c's gelu256: 0.5 x (1 + erf(x / sqrt 2)) with erf(z) = z P(z^2) /
 * Q(z^2) on |z| <= 3.9 (tools/golden/fit_gelu_erf.py), clamped to [-1, 1]; the coefficients
 * are those of kernels_x86.c. Multiply and add in place of its FMAs: the same contract,
 * absolute error below 2.5e-7 max(1, |x|) (tests/wasm/kernels_wasi.c). */
static const float gelu_erf_p[6] = {1.128378987e+00f, 1.919294000e-01f, 5.296520516e-02f,
                                    3.836323274e-03f, 2.874355123e-04f, 2.050359171e-06f};
static const float gelu_erf_q[6] = {1.0f, 5.034247637e-01f, 1.147532389e-01f,
                                    1.510811411e-02f, 1.181582455e-03f, 3.822930375e-05f};

static inline v128_t gelu4(v128_t x) {
    const v128_t zmax = wasm_f32x4_splat(3.9f), one = wasm_f32x4_splat(1.0f);
    v128_t z = wasm_f32x4_mul(x, wasm_f32x4_splat(0.70710678118654752f));
    z = wasm_f32x4_pmax(wasm_f32x4_pmin(z, zmax), wasm_f32x4_neg(zmax));
    const v128_t u = wasm_f32x4_mul(z, z);
    v128_t p = wasm_f32x4_splat(gelu_erf_p[5]), q = wasm_f32x4_splat(gelu_erf_q[5]);
    for (int k = 4; k >= 0; k--) {
        p = wasm_f32x4_add(wasm_f32x4_mul(p, u), wasm_f32x4_splat(gelu_erf_p[k]));
        q = wasm_f32x4_add(wasm_f32x4_mul(q, u), wasm_f32x4_splat(gelu_erf_q[k]));
    }
    v128_t erf = wasm_f32x4_div(wasm_f32x4_mul(z, p), q);
    erf = wasm_f32x4_pmax(wasm_f32x4_pmin(erf, one), wasm_f32x4_neg(one));
    const v128_t h = wasm_f32x4_mul(x, wasm_f32x4_splat(0.5f));
    return wasm_f32x4_add(wasm_f32x4_mul(h, erf), h);
}

void sk_geglu_wasm(const float *a, const float *g, float *y, size_t n) {
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        wasm_v128_store(y + i, wasm_f32x4_mul(gelu4(wasm_v128_load(a + i)), wasm_v128_load(g + i)));
    if (i < n) {
        float ta[4] = {0}, tg[4] = {0};
        memcpy(ta, a + i, (n - i) * sizeof(float));
        memcpy(tg, g + i, (n - i) * sizeof(float));
        wasm_v128_store(ta, wasm_f32x4_mul(gelu4(wasm_v128_load(ta)), wasm_v128_load(tg)));
        memcpy(y + i, ta, (n - i) * sizeof(float));
    }
}

void sk_gelu_wasm(float *x, size_t n) {
    size_t i = 0;
    for (; i + 4 <= n; i += 4) wasm_v128_store(x + i, gelu4(wasm_v128_load(x + i)));
    if (i < n) {
        float t[4] = {0};
        memcpy(t, x + i, (n - i) * sizeof(float));
        wasm_v128_store(t, gelu4(wasm_v128_load(t)));
        memcpy(x + i, t, (n - i) * sizeof(float));
    }
}

void sk_gemm_wasm(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,
                  size_t ldy) {
    const size_t k = w->n_in, m = w->n_out, rs = sk_packed_rstride(w);
    float tmp[KC * SK_PANEL] __attribute__((aligned(16)));
    for (size_t p = 0; p * SK_PANEL < m; p++) {
        const size_t nc = m - p * SK_PANEL < SK_PANEL ? m - p * SK_PANEL : SK_PANEL;
        /* the bias is padded to whole panels (kernels.h) */
        const float *bias = w->bias ? w->bias + p * SK_PANEL : NULL;
        for (size_t k0 = 0; k0 < k; k0 += KC) {
            const size_t kc = k - k0 < KC ? k - k0 : KC;
            const size_t idx = p * w->pstride + k0 * rs;
            const float *panel;
            size_t ps;
            if (w->wtype == SK_PACK_F32) {
                panel = (const float *)w->data + idx;
                ps = rs;
            } else {
                sk_widen16_wasm(w->wtype, (const uint16_t *)w->data + idx, tmp, kc * SK_PANEL);
                panel = tmp;
                ps = SK_PANEL;
            }
            const float *last_bias = k0 + kc == k ? bias : NULL;
            for (size_t c0 = 0; c0 < nc; c0 += GEMM_COLS) {
                const size_t tc = nc - c0 < GEMM_COLS ? nc - c0 : GEMM_COLS;
                for (size_t r0 = 0; r0 < n_rows; r0 += GEMM_ROWS) {
                    const int R = n_rows - r0 < GEMM_ROWS ? (int)(n_rows - r0) : GEMM_ROWS;
                    block(x + r0 * ldx + k0, ldx, panel + c0, ps, kc, y + r0 * ldy + p * SK_PANEL + c0,
                          ldy, tc, last_bias ? last_bias + c0 : NULL, k0 == 0, R);
                }
            }
        }
    }
}

/* ------------------------------------------------------------------ softmax ------ */

/* exp(x) for x in about [-87.3, 88.7]; smaller x (and -inf) give 0 (the result would be
 * below the normal range). kernels_x86.c's exp256, four lanes wide, each FMA a multiply
 * and an add (the first reduction step stays exact: n * 0.693359375 needs 16 bits). */
static inline v128_t exp4(v128_t x) {
    const v128_t lo = wasm_f32x4_splat(-87.3f), hi = wasm_f32x4_splat(88.7f);
    const v128_t under = wasm_f32x4_lt(x, lo);
    x = wasm_f32x4_pmax(wasm_f32x4_pmin(x, hi), lo);
    const v128_t n = wasm_f32x4_nearest(wasm_f32x4_mul(x, wasm_f32x4_splat(1.44269504088896341f)));
    v128_t r = wasm_f32x4_sub(x, wasm_f32x4_mul(n, wasm_f32x4_splat(0.693359375f)));
    r = wasm_f32x4_sub(r, wasm_f32x4_mul(n, wasm_f32x4_splat(-2.12194440e-4f)));
    v128_t p = wasm_f32x4_splat(1.9875691500e-4f);
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.3981999507e-3f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(8.3334519073e-3f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(4.1665795894e-2f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(1.6666665459e-1f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, r), wasm_f32x4_splat(5.0000001201e-1f));
    p = wasm_f32x4_add(wasm_f32x4_mul(p, wasm_f32x4_mul(r, r)),
                       wasm_f32x4_add(r, wasm_f32x4_splat(1.0f)));
    const v128_t e = wasm_i32x4_shl(wasm_i32x4_add(wasm_i32x4_trunc_sat_f32x4(n),
                                                   wasm_i32x4_splat(127)), 23);
    return wasm_v128_andnot(wasm_f32x4_mul(p, e), under);
}

static inline float hmax4(v128_t v) {
    v = wasm_f32x4_pmax(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
    v = wasm_f32x4_pmax(v, wasm_i32x4_shuffle(v, v, 1, 0, 3, 2));
    return wasm_f32x4_extract_lane(v, 0);
}

static inline float hsum4(v128_t v) {
    v = wasm_f32x4_add(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
    v = wasm_f32x4_add(v, wasm_i32x4_shuffle(v, v, 1, 0, 3, 2));
    return wasm_f32x4_extract_lane(v, 0);
}

/* The one-row softmax (the level's rows run it row by row: sk_attn_softmax_rows_each). */
void sk_attn_softmax_wasm(float *x, size_t n, float scale) {
    if (n == 0) return;
    const v128_t vs = wasm_f32x4_splat(scale);
    v128_t m0 = wasm_f32x4_splat(-INFINITY), m1 = m0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const v128_t v0 = wasm_f32x4_mul(wasm_v128_load(x + i), vs);
        const v128_t v1 = wasm_f32x4_mul(wasm_v128_load(x + i + 4), vs);
        wasm_v128_store(x + i, v0);
        wasm_v128_store(x + i + 4, v1);
        m0 = wasm_f32x4_pmax(m0, v0);
        m1 = wasm_f32x4_pmax(m1, v1);
    }
    float mx = hmax4(wasm_f32x4_pmax(m0, m1));
    for (; i < n; i++) {
        x[i] *= scale;
        if (x[i] > mx) mx = x[i];
    }
    const v128_t vmx = wasm_f32x4_splat(mx);
    v128_t s0 = wasm_f32x4_splat(0.0f), s1 = s0, s2 = s0, s3 = s0;
    for (i = 0; i + 16 <= n; i += 16) {
        const v128_t e0 = exp4(wasm_f32x4_sub(wasm_v128_load(x + i), vmx));
        const v128_t e1 = exp4(wasm_f32x4_sub(wasm_v128_load(x + i + 4), vmx));
        const v128_t e2 = exp4(wasm_f32x4_sub(wasm_v128_load(x + i + 8), vmx));
        const v128_t e3 = exp4(wasm_f32x4_sub(wasm_v128_load(x + i + 12), vmx));
        wasm_v128_store(x + i, e0);
        wasm_v128_store(x + i + 4, e1);
        wasm_v128_store(x + i + 8, e2);
        wasm_v128_store(x + i + 12, e3);
        s0 = wasm_f32x4_add(s0, e0);
        s1 = wasm_f32x4_add(s1, e1);
        s2 = wasm_f32x4_add(s2, e2);
        s3 = wasm_f32x4_add(s3, e3);
    }
    for (; i + 4 <= n; i += 4) {
        const v128_t e = exp4(wasm_f32x4_sub(wasm_v128_load(x + i), vmx));
        wasm_v128_store(x + i, e);
        s0 = wasm_f32x4_add(s0, e);
    }
    float sum = hsum4(wasm_f32x4_add(wasm_f32x4_add(s0, s1), wasm_f32x4_add(s2, s3)));
    if (i < n) {
        float t[4];
        for (size_t j = 0; j < 4; j++) t[j] = i + j < n ? x[i + j] - mx : -INFINITY;
        wasm_v128_store(t, exp4(wasm_v128_load(t)));
        for (size_t j = 0; i + j < n; j++) {
            x[i + j] = t[j];
            sum += t[j];
        }
    }
    const float inv = 1.0f / sum;
    const v128_t vinv = wasm_f32x4_splat(inv);
    for (i = 0; i + 4 <= n; i += 4) wasm_v128_store(x + i, wasm_f32x4_mul(wasm_v128_load(x + i), vinv));
    for (; i < n; i++) x[i] *= inv;
}

/* ------------------------------------------------------------------ LayerNorm ---- */

/* One row: y = (x - mean) / sqrt(var + eps) * w (+ b); y may alias x. The mean in double
 * lanes (the residual stream reaches 1e4-1e5, where a float sum loses the digits that
 * matter), then split into hi + lo floats so that x - mean keeps them too; the variance of
 * the centred values in float lanes, 1 / sqrt in double. */
static void ln_row(const float *xr, size_t d, const float *w, const float *b, float eps,
                   float *yr) {
    v128_t s0 = wasm_f64x2_splat(0.0), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 8 <= d; i += 8) {
        const v128_t v0 = wasm_v128_load(xr + i), v1 = wasm_v128_load(xr + i + 4);
        s0 = wasm_f64x2_add(s0, wasm_f64x2_promote_low_f32x4(v0));
        s1 = wasm_f64x2_add(s1, wasm_f64x2_promote_low_f32x4(wasm_i32x4_shuffle(v0, v0, 2, 3, 2, 3)));
        s2 = wasm_f64x2_add(s2, wasm_f64x2_promote_low_f32x4(v1));
        s3 = wasm_f64x2_add(s3, wasm_f64x2_promote_low_f32x4(wasm_i32x4_shuffle(v1, v1, 2, 3, 2, 3)));
    }
    const v128_t s = wasm_f64x2_add(wasm_f64x2_add(s0, s1), wasm_f64x2_add(s2, s3));
    double sum = wasm_f64x2_extract_lane(s, 0) + wasm_f64x2_extract_lane(s, 1);
    for (; i < d; i++) sum += xr[i];
    const double mean = sum / (double)d;
    const float mhi = (float)mean, mlo = (float)(mean - (double)mhi);
    const v128_t vhi = wasm_f32x4_splat(mhi), vlo = wasm_f32x4_splat(mlo);
    v128_t q0 = wasm_f32x4_splat(0.0f), q1 = q0, q2 = q0, q3 = q0;
    for (i = 0; i + 16 <= d; i += 16) {
        const v128_t t0 = wasm_f32x4_sub(wasm_f32x4_sub(wasm_v128_load(xr + i), vhi), vlo);
        const v128_t t1 = wasm_f32x4_sub(wasm_f32x4_sub(wasm_v128_load(xr + i + 4), vhi), vlo);
        const v128_t t2 = wasm_f32x4_sub(wasm_f32x4_sub(wasm_v128_load(xr + i + 8), vhi), vlo);
        const v128_t t3 = wasm_f32x4_sub(wasm_f32x4_sub(wasm_v128_load(xr + i + 12), vhi), vlo);
        q0 = wasm_f32x4_add(q0, wasm_f32x4_mul(t0, t0));
        q1 = wasm_f32x4_add(q1, wasm_f32x4_mul(t1, t1));
        q2 = wasm_f32x4_add(q2, wasm_f32x4_mul(t2, t2));
        q3 = wasm_f32x4_add(q3, wasm_f32x4_mul(t3, t3));
    }
    double var = (double)hsum4(wasm_f32x4_add(wasm_f32x4_add(q0, q1), wasm_f32x4_add(q2, q3)));
    for (; i < d; i++) {
        const double t = (double)xr[i] - mean;
        var += t * t;
    }
    const float rstd = (float)(1.0 / sqrt(var / (double)d + (double)eps));
    const v128_t vr = wasm_f32x4_splat(rstd);
    for (i = 0; i + 4 <= d; i += 4) {
        const v128_t t = wasm_f32x4_sub(wasm_f32x4_sub(wasm_v128_load(xr + i), vhi), vlo);
        v128_t v = wasm_f32x4_mul(wasm_f32x4_mul(t, vr), wasm_v128_load(w + i));
        if (b) v = wasm_f32x4_add(v, wasm_v128_load(b + i));
        wasm_v128_store(yr + i, v);
    }
    for (; i < d; i++) {
        const float v = ((xr[i] - mhi) - mlo) * rstd * w[i];
        yr[i] = b ? v + b[i] : v;
    }
}

void sk_layernorm_wasm(const float *x, size_t n_rows, size_t d, const float *w, const float *b,
                       float eps, float *y) {
    for (size_t r = 0; r < n_rows; r++) ln_row(x + r * d, d, w, b, eps, y + r * d);
}

/* Row by row: the residual add of a row (the reference's x += a, bit for bit), then its
 * LayerNorm while it is in cache. y may alias x or a: row r of a is read before row r of y
 * is written. */
void sk_add_layernorm_wasm(float *x, const float *a, size_t n_rows, size_t d, const float *w,
                           const float *b, float eps, float *y) {
    for (size_t r = 0; r < n_rows; r++) {
        float *xr = x + r * d;
        if (a) {
            const float *ar = a + r * d;
            size_t i = 0;
            for (; i + 4 <= d; i += 4)
                wasm_v128_store(xr + i, wasm_f32x4_add(wasm_v128_load(xr + i), wasm_v128_load(ar + i)));
            for (; i < d; i++) xr[i] += ar[i];
        }
        ln_row(xr, d, w, b, eps, y + r * d);
    }
}

/* ------------------------------------------------------------------ int8 GEMM ---- */

/* fmaf(a, b, c) in four lanes, the bits libm's fmaf gives. In double, a * b is exact (24 +
 * 24 bits) and a * b + c is rounded once; rounding that to float gives the correctly
 * rounded fmaf unless the double lands exactly halfway between two floats (its low 29 bits
 * 0x10000000: the first rounding may have made the tie) or below the float normal range
 * (where floats have fewer bits): those lanes, rare, call libm's fmaf. (wasi-libc's fmaf
 * takes the same double path for every other lane.) */
static inline v128_t fmaf4(v128_t a, v128_t b, v128_t c) {
    const v128_t ah = wasm_i32x4_shuffle(a, a, 2, 3, 2, 3), bh = wasm_i32x4_shuffle(b, b, 2, 3, 2, 3);
    const v128_t ch = wasm_i32x4_shuffle(c, c, 2, 3, 2, 3);
    const v128_t dl = wasm_f64x2_add(wasm_f64x2_mul(wasm_f64x2_promote_low_f32x4(a),
                                                    wasm_f64x2_promote_low_f32x4(b)),
                                     wasm_f64x2_promote_low_f32x4(c));
    const v128_t dh = wasm_f64x2_add(wasm_f64x2_mul(wasm_f64x2_promote_low_f32x4(ah),
                                                    wasm_f64x2_promote_low_f32x4(bh)),
                                     wasm_f64x2_promote_low_f32x4(ch));
    const v128_t low29 = wasm_i64x2_splat(0x1fffffff), half = wasm_i64x2_splat(0x10000000);
    const v128_t tiny = wasm_f64x2_splat(0x1p-126), zero = wasm_f64x2_splat(0.0);
    const v128_t bad_l = wasm_v128_or(
        wasm_i64x2_eq(wasm_v128_and(dl, low29), half),
        wasm_v128_and(wasm_f64x2_lt(wasm_f64x2_abs(dl), tiny), wasm_f64x2_ne(dl, zero)));
    const v128_t bad_h = wasm_v128_or(
        wasm_i64x2_eq(wasm_v128_and(dh, low29), half),
        wasm_v128_and(wasm_f64x2_lt(wasm_f64x2_abs(dh), tiny), wasm_f64x2_ne(dh, zero)));
    v128_t r = wasm_i32x4_shuffle(wasm_f32x4_demote_f64x2_zero(dl), wasm_f32x4_demote_f64x2_zero(dh),
                                  0, 1, 4, 5);
    if (wasm_v128_any_true(wasm_v128_or(bad_l, bad_h))) {
        float fa[4], fb[4], fc[4], fr[4];
        int64_t bad[4];
        wasm_v128_store(fa, a);
        wasm_v128_store(fb, b);
        wasm_v128_store(fc, c);
        wasm_v128_store(fr, r);
        wasm_v128_store(bad, bad_l);
        wasm_v128_store(bad + 2, bad_h);
        for (int j = 0; j < 4; j++)
            if (bad[j]) fr[j] = fmaf(fa[j], fb[j], fc[j]);
        r = wasm_v128_load(fr);
    }
    return r;
}

/* Block b of row r's activations as eight int16 vectors, one per group of four inputs,
 * the four values twice ([v0 v1 v2 v3 v0 v1 v2 v3], the pairs i32x4.dot_i16x8_s adds):
 * v = q, or 128 q + r for two passes (exact in int16: |v| <= 127 * 128 + 127), whose dot
 * product with the weights is the reference's 128 dot(q, w) + dot(r, w). */
static inline void act_groups(const sk_q8_act *a, size_t off, v128_t g[8]) {
    const v128_t q0 = wasm_v128_load(a->q + off), q1 = wasm_v128_load(a->q + off + 16);
    v128_t v[4] = {wasm_i16x8_extend_low_i8x16(q0), wasm_i16x8_extend_high_i8x16(q0),
                   wasm_i16x8_extend_low_i8x16(q1), wasm_i16x8_extend_high_i8x16(q1)};
    if (a->two_pass) {
        const v128_t r0 = wasm_v128_load(a->r + off), r1 = wasm_v128_load(a->r + off + 16);
        v[0] = wasm_i16x8_add(wasm_i16x8_shl(v[0], 7), wasm_i16x8_extend_low_i8x16(r0));
        v[1] = wasm_i16x8_add(wasm_i16x8_shl(v[1], 7), wasm_i16x8_extend_high_i8x16(r0));
        v[2] = wasm_i16x8_add(wasm_i16x8_shl(v[2], 7), wasm_i16x8_extend_low_i8x16(r1));
        v[3] = wasm_i16x8_add(wasm_i16x8_shl(v[3], 7), wasm_i16x8_extend_high_i8x16(r1));
    }
    for (int i = 0; i < 4; i++) {
        g[2 * i] = wasm_i64x2_shuffle(v[i], v[i], 0, 0);
        g[2 * i + 1] = wasm_i64x2_shuffle(v[i], v[i], 1, 1);
    }
}

/* The exact int32 sums of one block for outputs 4 qt .. 4 qt + 3 of a panel, rows [0, R):
 * group j's 16 bytes for those outputs (four inputs each) widened to int16 once for all
 * rows; each dot gives two outputs' half sums, paired up at the end. */
static inline void quarter_isums(const uint8_t *quants, int qt, v128_t g[][8], int R, v128_t *isum) {
    v128_t lo[4], hi[4];
    for (int r = 0; r < R; r++) lo[r] = hi[r] = wasm_i32x4_splat(0);
    for (int j = 0; j < 8; j++) {
        const v128_t wv = wasm_v128_load(quants + j * 64 + qt * 16);
        const v128_t wl = wasm_i16x8_extend_low_i8x16(wv), wh = wasm_i16x8_extend_high_i8x16(wv);
        for (int r = 0; r < R; r++) {
            lo[r] = wasm_i32x4_add(lo[r], wasm_i32x4_dot_i16x8(wl, g[r][j]));
            hi[r] = wasm_i32x4_add(hi[r], wasm_i32x4_dot_i16x8(wh, g[r][j]));
        }
    }
    for (int r = 0; r < R; r++)
        isum[r] = wasm_i32x4_add(wasm_i32x4_shuffle(lo[r], hi[r], 0, 2, 4, 6),
                                 wasm_i32x4_shuffle(lo[r], hi[r], 1, 3, 5, 7));
}

/* Rows r0 .. r0 + R - 1 of panel p: the 16 outputs of each into out[r][16]. Per-block
 * scales: acc = fmaf(xs * wd, isum, acc) block by block, then + bias. Row-scaled: the
 * whole row's integer sum, then fmaf(xs * wd, isum, bias) once. */
static inline void q8_rows(const sk_q8_act *a, const sk_q8_packed *w, size_t nb, size_t p,
                           size_t r0, const float *bias16, float out[][SK_Q8_PANEL], int R) {
    const int row_scaled = w->row_sum128 != NULL;
    v128_t acc[4][4];
    for (int r = 0; r < R; r++)
        for (int qt = 0; qt < 4; qt++) acc[r][qt] = wasm_i32x4_splat(0); /* also 0.0f */
    for (size_t b = 0; b < nb; b++) {
        v128_t g[4][8];
        for (int r = 0; r < R; r++) act_groups(a, ((r0 + (size_t)r) * nb + b) * 32, g[r]);
        const uint8_t *quants = w->panels + sk_q8_quants_at(w, nb, p, b);
        const uint8_t *meta = w->panels + sk_q8_meta_at(w, nb, p, b);
        for (int qt = 0; qt < 4; qt++) {
            v128_t isum[4];
            switch (R) { /* constant row counts: the accumulators stay in locals */
            case 4: quarter_isums(quants, qt, g, 4, isum); break;
            case 3: quarter_isums(quants, qt, g, 3, isum); break;
            case 2: quarter_isums(quants, qt, g, 2, isum); break;
            default: quarter_isums(quants, qt, g, 1, isum); break;
            }
            if (row_scaled) {
                for (int r = 0; r < R; r++) acc[r][qt] = wasm_i32x4_add(acc[r][qt], isum[r]);
                continue;
            }
            const v128_t wd = f16_to_f32_lanes(wasm_u32x4_load16x4(meta + 2 * 4 * qt));
            for (int r = 0; r < R; r++) {
                const v128_t s = wasm_f32x4_mul(wasm_f32x4_splat(a->xs[(r0 + (size_t)r) * nb + b]), wd);
                acc[r][qt] = fmaf4(s, wasm_f32x4_convert_i32x4(isum[r]), acc[r][qt]);
            }
        }
    }
    const uint8_t *meta0 = w->panels + sk_q8_meta_at(w, nb, p, 0);
    for (int qt = 0; qt < 4; qt++) {
        const v128_t vb = wasm_v128_load(bias16 + 4 * qt);
        if (row_scaled) {
            const v128_t wd = f16_to_f32_lanes(wasm_u32x4_load16x4(meta0 + 2 * 4 * qt));
            for (int r = 0; r < R; r++) {
                const v128_t s = wasm_f32x4_mul(wasm_f32x4_splat(a->xs[(r0 + (size_t)r) * nb]), wd);
                wasm_v128_store(out[r] + 4 * qt, fmaf4(s, wasm_f32x4_convert_i32x4(acc[r][qt]), vb));
            }
        } else {
            for (int r = 0; r < R; r++)
                wasm_v128_store(out[r] + 4 * qt, w->bias ? wasm_f32x4_add(acc[r][qt], vb) : acc[r][qt]);
        }
    }
}

/* Activation quantization, the same bytes as sk_q8_quantize_act_ref (q8.h), outlier
 * columns (zero_cols) taken as +0 as there: per block of 32 (or per row, SK_Q8_ACT_ROW)
 * d = max|x| / 127 (NaN ignored, as the reference's
 * comparison ignores it), q = round half to even of x (1 / d) clamped to [-127, 127] (NaN
 * -> 0: the float-to-int conversion saturates NaN to 0), the residual pass likewise; the
 * biased bytes q + 128 for the VNNI layout too. */
static inline v128_t q8_round4(v128_t v) { /* int32 lanes */
    const v128_t lim = wasm_f32x4_splat(127.0f);
    return wasm_i32x4_trunc_sat_f32x4(
        wasm_f32x4_pmax(wasm_f32x4_pmin(wasm_f32x4_nearest(v), lim), wasm_f32x4_neg(lim)));
}

static inline v128_t narrow32(const v128_t *i32) { /* 4 vectors of int32 in [-127, 127] */
    return wasm_i8x16_narrow_i16x8(wasm_i16x8_narrow_i32x4(i32[0], i32[1]),
                                   wasm_i16x8_narrow_i32x4(i32[2], i32[3]));
}

/* x[0..4), with +0 where zero[i] (column flags, may be NULL). */
static inline v128_t load_cols(const float *x, const uint8_t *zero) {
    const v128_t v = wasm_v128_load(x);
    if (!zero) return v;
    const v128_t flags = wasm_u32x4_extend_low_u16x8(wasm_u16x8_extend_low_u8x16(wasm_v128_load32_zero(zero)));
    return wasm_v128_andnot(v, wasm_i32x4_ne(flags, wasm_i32x4_splat(0)));
}

static inline float absmax(const float *x, const uint8_t *zero, size_t n /* a multiple of 4 */) {
    v128_t m = wasm_f32x4_splat(0.0f);
    for (size_t i = 0; i < n; i += 4)
        m = wasm_f32x4_pmax(m, wasm_f32x4_abs(load_cols(x + i, zero ? zero + i : NULL)));
    return hmax4(m);
}

void sk_q8_quantize_act_wasm(const float *x, size_t ldx, size_t n_rows, size_t k, int mode,
                             const uint8_t *zero_cols, sk_q8_act *a) {
    const size_t nb = k / SK_QK8_0;
    const int two = mode == SK_Q8_ACT_Q8X2 || mode == SK_Q8_ACT_ROW2,
              row = mode == SK_Q8_ACT_ROW || mode == SK_Q8_ACT_ROW2;
    const v128_t bias = wasm_i8x16_splat((int8_t)0x80);
    a->two_pass = two;
    a->n_rows = n_rows;
    a->n_blocks = nb;
    for (size_t r = 0; r < n_rows; r++) {
        const float *xr = x + r * ldx;
        const float row_max = row ? absmax(xr, zero_cols, nb * SK_QK8_0) : 0.0f;
        for (size_t b = 0; b < nb; b++) {
            const float *xb = xr + b * SK_QK8_0;
            const uint8_t *zb = zero_cols ? zero_cols + b * SK_QK8_0 : NULL;
            const float amax = row ? row_max : absmax(xb, zb, SK_QK8_0);
            const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            const v128_t vid = wasm_f32x4_splat(id);
            v128_t qi[8], ri[8];
            for (int i = 0; i < 8; i++) {
                const v128_t s = wasm_f32x4_mul(load_cols(xb + 4 * i, zb ? zb + 4 * i : NULL), vid);
                qi[i] = q8_round4(s);
                if (two)
                    ri[i] = q8_round4(wasm_f32x4_mul(wasm_f32x4_sub(s, wasm_f32x4_convert_i32x4(qi[i])),
                                                     wasm_f32x4_splat(128.0f)));
            }
            const size_t off = (r * nb + b) * SK_QK8_0;
            for (int h = 0; h < 2; h++) {
                const v128_t q = narrow32(qi + 4 * h);
                wasm_v128_store(a->q + off + 16 * h, q);
                wasm_v128_store(a->qb + off + 16 * h, wasm_v128_xor(q, bias));
                if (two) {
                    const v128_t rr = narrow32(ri + 4 * h);
                    wasm_v128_store(a->r + off + 16 * h, rr);
                    wasm_v128_store(a->rb + off + 16 * h, wasm_v128_xor(rr, bias));
                }
            }
            a->xs[r * nb + b] = two ? d / 128.0f : d;
        }
    }
}

void sk_q8_gemm_wasm(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1, float *y,
                     size_t ldy) {
    const size_t nb = w->n_in / SK_QK8_0;
    if (nb == 0) {
        sk_q8_gemm_ref(a, w, o0, o1, y, ldy);
        return;
    }
    for (size_t p = o0 / SK_Q8_PANEL; p * SK_Q8_PANEL < o1; p++) {
        const size_t base = p * SK_Q8_PANEL;
        const size_t nc = o1 - base < SK_Q8_PANEL ? o1 - base : SK_Q8_PANEL;
        float bias16[SK_Q8_PANEL] = {0}; /* the bias holds n_out values: none read past o1 */
        if (w->bias) memcpy(bias16, w->bias + base, nc * sizeof(float));
        for (size_t r0 = 0; r0 < a->n_rows; r0 += 4) {
            const int R = a->n_rows - r0 < 4 ? (int)(a->n_rows - r0) : 4;
            float out[4][SK_Q8_PANEL];
            switch (R) {
            case 4: q8_rows(a, w, nb, p, r0, bias16, out, 4); break;
            case 3: q8_rows(a, w, nb, p, r0, bias16, out, 3); break;
            case 2: q8_rows(a, w, nb, p, r0, bias16, out, 2); break;
            default: q8_rows(a, w, nb, p, r0, bias16, out, 1); break;
            }
            for (int r = 0; r < R; r++) memcpy(y + (r0 + (size_t)r) * ldy + base, out[r], nc * sizeof(float));
        }
    }
}

#else /* not wasm32 with SIMD128: the entry point is the scalar code */

void sk_gemm_wasm(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,
                  size_t ldy) {
    sk_gemm_scalar(x, ldx, n_rows, w, y, ldy);
}
void sk_widen16_wasm(int wtype, const void *src, float *dst, size_t n) {
    sk_widen16_ref(wtype, src, dst, n);
}
void sk_geglu_wasm(const float *a, const float *g, float *y, size_t n) { sk_geglu_ref(a, g, y, n); }
void sk_gelu_wasm(float *x, size_t n) { sk_gelu_ref(x, n); }
void sk_attn_softmax_wasm(float *x, size_t n, float scale) { sk_attn_softmax_ref(x, n, scale); }
void sk_layernorm_wasm(const float *x, size_t n_rows, size_t d, const float *w, const float *b,
                       float eps, float *y) {
    sk_layernorm_ref(x, n_rows, d, w, b, eps, y);
}
void sk_add_layernorm_wasm(float *x, const float *a, size_t n_rows, size_t d, const float *w,
                           const float *b, float eps, float *y) {
    sk_add_layernorm_ref(x, a, n_rows, d, w, b, eps, y);
}
void sk_q8_gemm_wasm(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1, float *y,
                     size_t ldy) {
    sk_q8_gemm_ref(a, w, o0, o1, y, ldy);
}
void sk_q8_quantize_act_wasm(const float *x, size_t ldx, size_t n_rows, size_t k, int mode,
                             const uint8_t *zero_cols, sk_q8_act *a) {
    sk_q8_quantize_act_ref(x, ldx, n_rows, k, mode, zero_cols, a);
}
#endif
