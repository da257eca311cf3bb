/* kernels_wasm.c - WebAssembly SIMD128 kernels (wasm_simd128.h), chosen at build time: a
 * wasm32 build with -msimd128 (tools/build-wasm.sh --simd) dispatches to them
 * (kernels.c, level "simd128"); elsewhere these entry points are the scalar code.
 *
 * The packed GEMM keeps the scalar reference's arithmetic exactly: per output, the products
 * are added in the same order (k ascending, blocks of SK_SCALAR_KC), each a separate
 * multiply and add (SIMD128 has no fused multiply-add), the bias added last; so its
 * results are bit for bit sk_gemm_scalar's (tests/wasm/kernels_wasi.c checks it), and a row
 * does not depend on the rows beside it. Tiles of 4 rows x 16 outputs (16 accumulators);
 * F16/BF16 panels are widened once per block of k, as the reference does, by
 * sk_widen16_wasm (also the level's widen16). GELU/GEGLU: kernels_x86.c's rational erf
 * (within 2.5e-7 max(1, |x|) of the exact GELU, as every SIMD level). */
#include "kernels.h"

#if defined(__wasm_simd128__)
#include <string.h>
#include <wasm_simd128.h>

#define KC 128 /* the reference's k block (SK_SCALAR_KC in kernels_ref.c) */

/* F16/BF16 (little-endian, as GGUF stores them) to f32, exactly as sk_widen16_ref. F16:
 * the magnitude's bits moved into f32 position and multiplied by 2^112 rebias normal and
 * subnormal values alike (exact: a power of two, no flush to zero in wasm); an all-ones
 * exponent becomes f32's infinity/NaN with the same payload; then the sign. */
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
        const v128_t rebias = wasm_f32x4_splat(0x1p112f), expo = wasm_i32x4_splat(0x7c00);
        const v128_t mag_mask = wasm_i32x4_splat(0x7fff), sign_mask = wasm_i32x4_splat(0x8000);
        const v128_t inf = wasm_i32x4_splat(0x7f800000);
        for (; i + 4 <= n; i += 4) {
            const v128_t e = wasm_u32x4_extend_low_u16x8(wasm_v128_load64_zero(b + 2 * i));
            const v128_t mag = wasm_i32x4_shl(wasm_v128_and(e, mag_mask), 13);
            const v128_t fin = wasm_f32x4_mul(mag, rebias);
            const v128_t special = wasm_i32x4_eq(wasm_v128_and(e, expo), expo);
            const v128_t v = wasm_v128_bitselect(wasm_v128_or(mag, inf), fin, special);
            wasm_v128_store(dst + i, wasm_v128_or(v, wasm_i32x4_shl(wasm_v128_and(e, sign_mask), 16)));
        }
    }
    if (i < n) sk_widen16_ref(wtype, b + 2 * i, dst + i, n - i);
}

/* Rows [0, R) of x (R <= 4) times one panel's kc rows (stride ps), added to acc. */
static inline void tile(const float *x, size_t ldx, const float *panel, size_t ps, size_t kc,
                        v128_t acc[4][4], int R) {
    for (size_t i = 0; i < kc; i++) {
        const float *pr = panel + i * ps;
        const v128_t w0 = wasm_v128_load(pr), w1 = wasm_v128_load(pr + 4);
        const v128_t w2 = wasm_v128_load(pr + 8), w3 = wasm_v128_load(pr + 12);
        for (int r = 0; r < R; r++) {
            const v128_t xi = wasm_f32x4_splat(x[r * ldx + i]);
            acc[r][0] = wasm_f32x4_add(acc[r][0], wasm_f32x4_mul(xi, w0));
            acc[r][1] = wasm_f32x4_add(acc[r][1], wasm_f32x4_mul(xi, w1));
            acc[r][2] = wasm_f32x4_add(acc[r][2], wasm_f32x4_mul(xi, w2));
            acc[r][3] = wasm_f32x4_add(acc[r][3], wasm_f32x4_mul(xi, w3));
        }
    }
}

/* The block of rows [0, R) for one panel and one k block: start from y (k0 > 0) or zero,
 * store the nc outputs back, with the bias added after the last block. */
static inline void block(const float *x, size_t ldx, const float *panel, size_t ps, size_t kc,
                         float *y, size_t ldy, size_t nc, const float *bias, int first, int R) {
    v128_t acc[4][4];
    float buf[SK_PANEL];
    for (int r = 0; r < R; r++)
        for (int j = 0; j < 4; j++) {
            if (first) {
                acc[r][j] = wasm_f32x4_splat(0.0f);
            } else if (nc == SK_PANEL) {
                acc[r][j] = wasm_v128_load(y + r * ldy + 4 * j);
            } else {
                memset(buf, 0, sizeof buf);
                memcpy(buf, y + r * ldy, nc * sizeof(float));
                acc[r][j] = wasm_v128_load(buf + 4 * j);
            }
        }
    switch (R) {  /* constant row counts: the accumulators stay in locals */
    case 4: tile(x, ldx, panel, ps, kc, acc, 4); break;
    case 3: tile(x, ldx, panel, ps, kc, acc, 3); break;
    case 2: tile(x, ldx, panel, ps, kc, acc, 2); break;
    default: tile(x, ldx, panel, ps, kc, acc, 1); break;
    }
    for (int r = 0; r < R; r++) {
        if (bias)
            for (int j = 0; j < 4; j++) acc[r][j] = wasm_f32x4_add(acc[r][j], wasm_v128_load(bias + 4 * j));
        if (nc == SK_PANEL) {
            for (int j = 0; j < 4; j++) wasm_v128_store(y + r * ldy + 4 * j, acc[r][j]);
        } else {
            for (int j = 0; j < 4; j++) wasm_v128_store(buf + 4 * j, acc[r][j]);
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
        if (k == 0) {
            for (size_t r = 0; r < n_rows; r++)
                for (size_t c = 0; c < nc; c++) y[r * ldy + p * SK_PANEL + c] = bias ? bias[c] : 0.0f;
            continue;
        }
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
            for (size_t r0 = 0; r0 < n_rows; r0 += 4) {
                const int R = n_rows - r0 < 4 ? (int)(n_rows - r0) : 4;
                block(x + r0 * ldx + k0, ldx, panel, ps, kc, y + r0 * ldy + p * SK_PANEL, ldy, nc,
                      last_bias, k0 == 0, R);
            }
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
#endif
