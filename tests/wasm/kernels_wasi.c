/*
 * kernels_wasi.c - the SIMD128 kernels against the scalar reference, in WebAssembly (the
 * criterion tests cannot run there): tests/wasm/run.sh runs it under Node on the --simd
 * build. Each check can fail on its own; one summary line, exit 1 on any failure.
 *  - GEMM: shapes as tests/test_kernels.c's (partial row tiles, partial panels, k over one
 *    block, strided x and y, F32/F16/BF16 panels, a row-major F32 matrix served in place,
 *    with and without bias): sk_gemm_wasm must give sk_gemm_scalar's results bit for bit,
 *    never write past n_out, and give a row the same result whatever rows share the call
 *    (the shape with no inputs through sk_gemm, which settles it for every kernel).
 *  - sk_widen16_wasm: sk_widen16_ref's bits for all 65536 F16 and BF16 values at every
 *    alignment.
 *  - GELU/GEGLU, softmax (one row, and the level's rows with windows), LayerNorm and
 *    add+LayerNorm: within test_kernels.c's bounds of the reference (the SIMD levels'
 *    contracts; the worst errors are printed), odd lengths and tails; the residual add bit
 *    for bit.
 *  - The activations' quantization: sk_q8_quantize_act_ref's bytes in every mode (NaN,
 *    infinities, zero blocks, halfway values).
 *  - The int8 GEMM: sk_q8_gemm_ref's bits (memcmp) for Q8x2, Q8 and row-scaled weights,
 *    with and without bias, over output sub-ranges into a padded y; and hand-made cases
 *    where rounding the float step through double would differ from fmaf.
 *  - The dispatchers: level "simd128" for f32 and int8.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/q8.h"
#include "numeric/numeric.h"
#include "skycmd.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static float frand(void) { return (float)((next() >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f; }

static int g_fail, g_checks;

static void fail(const char *fmt, size_t a, size_t b, size_t c, int d) {
    if (g_fail++ < 10) {
        fprintf(stderr, "  mismatch: ");
        fprintf(stderr, fmt, a, b, c, d);
        fputc('\n', stderr);
    }
}

static void failf(const char *fmt, ...) {
    if (g_fail++ < 10) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "  mismatch: ");
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
}

/* ---- softmax: test_kernels.c's softmax_check (1e-6 relative, sums to 1) and its rows
 * check through the dispatcher (0 outside each row's window, nothing past nk) ---------- */
static double g_softmax_worst, g_ln_worst;

static void softmax_checks(void) {
    static const size_t lens[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33, 129, 500};
    static float a[500], b[500];
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        const size_t n = lens[li];
        for (size_t i = 0; i < n; i++) a[i] = b[i] = frand() * 40.0f;
        if (n > 3) a[3] = b[3] = -1e4f; /* far below the max: exp underflows to 0 */
        sk_attn_softmax_ref(a, n, 0.125f);
        sk_attn_softmax_wasm(b, n, 0.125f);
        g_checks++;
        double sum = 0;
        for (size_t i = 0; i < n; i++) {
            if (!(fabs(a[i] - b[i]) <= 1e-6 * fmax(a[i], 1e-30) + 1e-37))
                failf("softmax n=%zu i=%zu: %.9g, the reference %.9g", n, i, (double)b[i], (double)a[i]);
            if (a[i] > 1e-30f && fabs(a[i] - b[i]) / a[i] > g_softmax_worst)
                g_softmax_worst = fabs(a[i] - b[i]) / a[i];
            sum += b[i];
        }
        if (!(fabs(sum - 1.0) < 1e-5)) failf("softmax n=%zu: the probabilities sum to %.9g", n, sum);
    }
    static const size_t nks[] = {1, 2, 5, 16, 17, 80, 129};
    enum { NR = 11, LD = 144 };
    static float x1[NR * LD], x2[NR * LD];
    for (size_t ki = 0; ki < 2 * sizeof nks / sizeof nks[0]; ki++) {
        const size_t nk = nks[ki / 2];
        const int all_full = ki % 2;
        size_t lo[NR], hi[NR];
        for (size_t r = 0; r < NR; r++) {
            lo[r] = (all_full || r % 3 == 0) ? 0 : (size_t)(next() % nk);
            hi[r] = (all_full || r % 4 == 0) ? nk : lo[r] + 1 + (size_t)(next() % (nk - lo[r]));
        }
        for (size_t i = 0; i < NR * LD; i++) x1[i] = x2[i] = frand() * 40.0f;
        x1[5] = x2[5] = -1e4f;
        sk_attn_softmax_rows_ref(x1, LD, NR, nk, lo, hi, 0.125f);
        sk_attn_softmax_rows(x2, LD, NR, nk, lo, hi, 0.125f); /* the level's rows */
        g_checks++;
        for (size_t r = 0; r < NR; r++) {
            for (size_t i = 0; i < nk; i++) {
                const float p1 = x1[r * LD + i], p2 = x2[r * LD + i];
                if (i < lo[r] || i >= hi[r] ? p2 != 0.0f : !(fabs(p1 - p2) <= 1e-6 * fmax(p1, 1e-30) + 1e-37))
                    failf("softmax rows nk=%zu row %zu col %zu (window [%zu, %zu)): %.9g, the reference %.9g",
                          nk, r, i, lo[r], hi[r], (double)p2, (double)p1);
            }
            for (size_t i = nk; i < LD; i++)
                if (x2[r * LD + i] != x1[r * LD + i]) failf("softmax rows nk=%zu row %zu: wrote past nk", nk, r);
        }
    }
}

/* ---- LayerNorm: test_kernels.c's layernorm_check and add_layernorm_check (2e-5 max(1,
 * |y|); the residual bit for bit; in place; y aliasing a) ------------------------------- */
static void ln_compare(const float *want, const float *got, size_t nd, const char *what, size_t d,
                       size_t n) {
    for (size_t i = 0; i < nd; i++) {
        const double e = fabs((double)want[i] - (double)got[i]) / fmax(1.0, fabs((double)want[i]));
        if (!(e <= 2e-5)) failf("%s d=%zu n=%zu i=%zu: %.9g, the reference %.9g", what, d, n, i,
                                (double)got[i], (double)want[i]);
        if (e > g_ln_worst) g_ln_worst = e;
    }
}

static void layernorm_checks(void) {
    static const size_t dims[] = {1, 3, 8, 15, 16, 17, 64, 100, 1024};
    static const size_t rows[] = {1, 6, 37};
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
        for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
            const size_t d = dims[di], n = rows[ri], nd = n * d;
            float *x = malloc(nd * sizeof(float)), *x2 = malloc(nd * sizeof(float));
            float *a1 = malloc(nd * sizeof(float)), *a2 = malloc(nd * sizeof(float));
            float *w = malloc(d * sizeof(float)), *b = malloc(d * sizeof(float));
            float *y1 = malloc(nd * sizeof(float)), *y2 = malloc(nd * sizeof(float));
            for (size_t i = 0; i < d; i++) {
                w[i] = 1.0f + 0.1f * frand();
                b[i] = 0.1f * frand();
            }
            /* rows plain and with a large offset (residual streams reach ~1e4), one massive
             * channel */
            for (size_t i = 0; i < nd; i++) x[i] = (i / d % 3 == 1 ? 2.6e4f : 0.0f) + frand();
            if (n > 3 && d > 3) {
                x[2 * d + d / 2] = 3000.0f;
                x[3 * d + d / 3] = -3000.0f;
            }
            for (int wb = 0; wb < 2; wb++) {
                sk_layernorm_ref(x, n, d, w, wb ? b : NULL, 1e-5f, y1);
                sk_layernorm_wasm(x, n, d, w, wb ? b : NULL, 1e-5f, y2);
                g_checks++;
                ln_compare(y1, y2, nd, "layernorm", d, n);
            }
            memcpy(y2, x, nd * sizeof(float)); /* in place */
            sk_layernorm_wasm(y2, n, d, w, b, 1e-5f, y2);
            g_checks++;
            ln_compare(y1, y2, nd, "layernorm in place", d, n);
            /* x += a, y = LN(x) into a (how the model calls it), then without a residual */
            for (size_t i = 0; i < nd; i++) {
                x2[i] = x[i];
                a1[i] = a2[i] = frand();
            }
            memcpy(y1, x, nd * sizeof(float));
            sk_add_layernorm_ref(y1, a1, n, d, w, b, 1e-5f, a1);
            sk_add_layernorm_wasm(x2, a2, n, d, w, b, 1e-5f, a2);
            g_checks++;
            if (memcmp(y1, x2, nd * sizeof(float)) != 0)
                failf("add_layernorm d=%zu n=%zu: the residual is not the reference's bits", d, n);
            ln_compare(a1, a2, nd, "add_layernorm", d, n);
            sk_add_layernorm_ref(y1, NULL, n, d, w, NULL, 1e-5f, a1);
            sk_add_layernorm_wasm(x2, NULL, n, d, w, NULL, 1e-5f, a2);
            g_checks++;
            ln_compare(a1, a2, nd, "add_layernorm without residual", d, n);
            free(x);
            free(x2);
            free(a1);
            free(a2);
            free(w);
            free(b);
            free(y1);
            free(y2);
        }
}

/* ---- the int8 GEMM: bit for bit sk_q8_gemm_ref (memcmp) over output ranges (o0 a multiple
 * of 16, o1 anywhere), into a padded y whose other cells must stay as they were --------- */
static void q8_compare(const sk_q8_act *a, const sk_q8_packed *p, const char *what) {
    const size_t n_rows = a->n_rows, n_out = p->n_out, ldy = n_out + 5, cells = n_rows * ldy;
    float *y0 = malloc(cells * sizeof(float)), *y1 = malloc(cells * sizeof(float));
    size_t ranges[6][2], nr = 0;
    ranges[nr][0] = 0, ranges[nr++][1] = n_out;
    if (n_out > 1) ranges[nr][0] = 0, ranges[nr++][1] = n_out - 1;
    if (n_out > 8) ranges[nr][0] = 0, ranges[nr++][1] = 9;
    if (n_out > 16) ranges[nr][0] = 16, ranges[nr++][1] = n_out;
    if (n_out > 21) ranges[nr][0] = 16, ranges[nr++][1] = 21;
    if (n_out > 32) ranges[nr][0] = 32, ranges[nr++][1] = n_out;
    for (size_t i = 0; i < nr; i++) {
        for (size_t c = 0; c < cells; c++) y0[c] = y1[c] = -7.25f - (float)c;
        sk_q8_gemm_ref(a, p, ranges[i][0], ranges[i][1], y0, ldy);
        sk_q8_gemm_wasm(a, p, ranges[i][0], ranges[i][1], y1, ldy);
        g_checks++;
        if (memcmp(y0, y1, cells * sizeof(float)) != 0)
            failf("q8 gemm %s: %zu rows x %zu in x %zu out, outputs [%zu, %zu), %s: not the reference's bits",
                  what, n_rows, p->n_in, n_out, ranges[i][0], ranges[i][1],
                  a->two_pass ? "two passes" : "one pass");
    }
    free(y0);
    free(y1);
}

/* Random Q8_0 weights (quants -128..127; row_scaled: one scale per output row) in the
 * kernels' block order, packed; activations of mode from random x with some large values. */
static void q8_check(size_t n_rows, size_t n_in, size_t n_out, int mode, int with_bias) {
    const size_t nb = n_in / 32;
    const int row_scaled = mode == SK_Q8_ACT_ROW;
    uint8_t *blocks = malloc(n_out * nb * 34 + 1);
    int32_t *row_sum = calloc(n_out + 1, sizeof(int32_t));
    for (size_t o = 0; o < n_out; o++) {
        const uint16_t row_d = sk_f32_to_f16(0.001f + (float)(next() % 1000) / 50000.0f);
        for (size_t b = 0; b < nb; b++) {
            uint8_t *blk = blocks + (b * n_out + o) * 34; /* INPUT_BLOCK_MAJOR */
            const uint16_t d = row_scaled ? row_d : sk_f32_to_f16(0.001f + (float)(next() % 1000) / 50000.0f);
            blk[0] = (uint8_t)d;
            blk[1] = (uint8_t)(d >> 8);
            for (int j = 0; j < 32; j++) {
                blk[2 + j] = (uint8_t)next();
                row_sum[o] += 128 * (int8_t)blk[2 + j];
            }
        }
    }
    uint8_t *pan = aligned_alloc(64, (sk_q8_panel_bytes(n_out, n_in) + 63) / 64 * 64);
    sk_q8_pack_panels(blocks, n_out, n_in, pan);
    float *bias = malloc((n_out + 1) * sizeof(float)), *x = malloc((n_rows * n_in + 1) * sizeof(float));
    for (size_t o = 0; o < n_out; o++) bias[o] = frand();
    for (size_t i = 0; i < n_rows * n_in; i++) x[i] = frand() * (i % 37 == 0 ? 20.0f : 1.0f);
    sk_q8_packed p = {pan, n_in, n_out, with_bias ? bias : NULL, row_scaled ? row_sum : NULL, 0};
    sk_q8_act a = {0};
    if (sk_q8_act_reserve(&a, n_rows, n_in) != 0) {
        failf("q8: out of memory for %zu x %zu", n_rows, n_in);
    } else {
        sk_q8_quantize_act_ref(x, n_in, n_rows, n_in, mode, NULL, &a);
        q8_compare(&a, &p, row_scaled ? "row-scaled" : "per-block scales");
    }
    sk_q8_act_free(&a);
    free(pan);
    free(blocks);
    free(row_sum);
    free(bias);
    free(x);
}

/* The float step's rare lanes, where fmaf(s, f, acc) differs from rounding the double
 * s f + acc to float. One output, two blocks, weight scales 1.0, two-pass activations set by
 * hand: block 0 gives acc = xs0 (integer sum 1), block 1 adds xs1 times its integer sum.
 * want: the correctly rounded answer, which the reference must give; 0: no such demand
 * (libm's fmaf may round twice there too), only the reference's bits. */
static void q8_rounding_case(float xs0, float xs1, const int8_t q1[6], const int8_t r1[6],
                             const uint8_t w1[6], float want, const char *what) {
    enum { N_IN = 64 };
    uint8_t blocks[2 * 34] = {0}, pan[2 * SK_Q8_CHUNK];
    for (int b = 0; b < 2; b++) {
        blocks[b * 34] = 0x00; /* f16 1.0 = 0x3c00 */
        blocks[b * 34 + 1] = 0x3c;
    }
    blocks[2] = 1;
    for (int j = 0; j < 6; j++) blocks[34 + 2 + j] = w1[j];
    sk_q8_pack_panels(blocks, 1, N_IN, pan);
    sk_q8_act a = {0};
    if (sk_q8_act_reserve(&a, 1, N_IN) != 0) {
        failf("q8 %s: out of memory", what);
        return;
    }
    memset(a.q, 0, N_IN);
    memset(a.r, 0, N_IN);
    a.two_pass = 1;
    a.r[0] = 1;
    for (int j = 0; j < 6; j++) {
        a.q[32 + j] = q1[j];
        a.r[32 + j] = r1[j];
    }
    a.xs[0] = xs0;
    a.xs[1] = xs1;
    sk_q8_packed p = {pan, N_IN, 1, NULL, NULL, 0};
    float y0 = 0, y1 = 0;
    sk_q8_gemm_ref(&a, &p, 0, 1, &y0, 1);
    sk_q8_gemm_wasm(&a, &p, 0, 1, &y1, 1);
    g_checks++;
    if ((want != 0 && y0 != want) || memcmp(&y0, &y1, sizeof y0) != 0)
        failf("q8 %s: %a, the reference %a (correctly rounded: %a)", what, (double)y1, (double)y0, (double)want);
    sk_q8_act_free(&a);
}

static void q8_rounding_checks(void) {
    /* 5592407 2^-14 * 3 = 2^10 + 5 2^-14 is halfway between two floats; + 2^-60 above it:
     * fmaf rounds up to 2^10 + 3 2^-13, the double (2^10 + 5 2^-14) would tie to even */
    static const int8_t q_a[6] = {0}, r_a[6] = {3};
    static const uint8_t w_a[6] = {1};
    q8_rounding_case(0x1p-60f, 5592407.0f * 0x1p-14f, q_a, r_a, w_a, 0x1p10f + 3 * 0x1p-13f, "halfway above");
    /* acc = 2^10 + 2^-13 (an odd last bit) plus (2^23 + 1) 2^-60 * (2^23 - 1) = 2^-14 - 2^-60,
     * just below half an ulp; the integer sum 127 * 66051 + 130 = 2^23 - 1 from weights 127
     * at inputs 0..4 and 1 at input 5. (wasi-libc's fmaf, whose exactness test is fooled by
     * an addend far above the product, rounds this one twice: only the reference's bits.) */
    static const int8_t q_b[6] = {127, 127, 127, 127, 4, 1}, r_b[6] = {127, 127, 127, 127, 7, 2};
    static const uint8_t w_b[6] = {127, 127, 127, 127, 127, 1};
    q8_rounding_case(0x1p10f + 0x1p-13f, (0x1p23f + 1.0f) * 0x1p-60f, q_b, r_b, w_b, 0, "halfway below");
}

/* The activations' quantization: sk_q8_quantize_act_ref's bytes (q, r, q + 128, r + 128)
 * and scales for every mode, with and without outlier columns (zero_cols, among them the
 * largest value of a block), rows with a stride, blocks of zeros, a NaN, infinities and
 * values that round halfway. */
static void q8_quantize_checks(void) {
    static const size_t shapes[][2] = {{1, 32}, {3, 64}, {5, 96}, {7, 256}, {2, 1024}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int mode = SK_Q8_ACT_Q8X2; mode <= SK_Q8_ACT_ROW2; mode++) {
            const size_t n = shapes[si][0], k = shapes[si][1], ldx = k + si, nq = n * k;
            float *x = malloc((n * ldx + 1) * sizeof(float));
            for (size_t i = 0; i < n * ldx; i++) x[i] = frand() * (i % 37 == 0 ? 20.0f : 1.0f);
            if (k >= 64) {
                for (size_t i = 32; i < 64; i++) x[i] = 0.0f;   /* a block of zeros */
                for (size_t i = 0; i < 8; i++) x[i] = (float)i * 0.5f - 2.0f; /* halves */
            }
            x[14] = 50.0f; /* in an outlier column: the block's scale changes without it */
            if (n > 1) x[ldx + 5] = NAN;
            if (n > 2) x[2 * ldx + 1] = INFINITY;
            if (n > 3) x[3 * ldx + 40 % k] = -INFINITY;
            uint8_t *zero_cols = calloc(k, 1); /* flags 1 and 2: any nonzero byte */
            for (size_t c = 0; c < k; c += 7) zero_cols[c] = 1 + (uint8_t)(c % 2);
            sk_q8_act a0 = {0}, a1 = {0};
            if (sk_q8_act_reserve(&a0, n, k) || sk_q8_act_reserve(&a1, n, k)) {
                failf("quantize: out of memory (%zu)", k);
            } else {
                for (int z = 0; z < 2; z++) {
                    const uint8_t *zc = z ? zero_cols : NULL;
                    memset(a0.r, 0, nq);
                    memset(a1.r, 0, nq);
                    memset(a0.rb, 0, nq);
                    memset(a1.rb, 0, nq);
                    sk_q8_quantize_act_ref(x, ldx, n, k, mode, zc, &a0);
                    sk_q8_quantize_act_wasm(x, ldx, n, k, mode, zc, &a1);
                    g_checks++;
                    if (memcmp(a0.q, a1.q, nq) || memcmp(a0.r, a1.r, nq) || memcmp(a0.qb, a1.qb, nq) ||
                        memcmp(a0.rb, a1.rb, nq) || memcmp(a0.xs, a1.xs, n * (k / 32) * sizeof(float)) ||
                        a0.two_pass != a1.two_pass || a1.n_rows != n || a1.n_blocks != k / 32)
                        failf("quantize %zu x %zu mode %d%s: not the reference's bytes", n, k, mode,
                              z ? " with outlier columns" : "");
                }
            }
            sk_q8_act_free(&a0);
            sk_q8_act_free(&a1);
            free(zero_cols);
            free(x);
        }
}

static void q8_checks(void) {
    static const size_t shapes[][3] = {{1, 32, 1},   {3, 64, 5},    {4, 96, 2},   {7, 128, 33},
                                       {13, 256, 64}, {5, 384, 17}, {20, 512, 48}, {2, 32, 100},
                                       {9, 160, 31}, {6, 768, 16}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int mode = SK_Q8_ACT_Q8X2; mode <= SK_Q8_ACT_ROW; mode++)
            for (int b = 0; b < 2; b++) q8_check(shapes[i][0], shapes[i][1], shapes[i][2], mode, b);
    q8_rounding_checks();
    q8_quantize_checks();
}

/* One call of each on the same operands; wt: SK_PACK_F32/F16/BF16; inplace: F32 weights as
 * a row-major [k][ld] matrix (rstride) instead of packed panels. */
static void check(size_t n, size_t k, size_t m, int wt, int with_bias, int inplace, size_t ldx_pad,
                  size_t ldy_pad) {
    const size_t panels = (m + SK_PANEL - 1) / SK_PANEL;
    if (inplace) m = panels * SK_PANEL; /* whole panels only */
    const size_t ldx = k + ldx_pad, ldy = m + ldy_pad;
    const size_t ld = panels * SK_PANEL + 8;
    const size_t elems = inplace ? (k ? k : 1) * ld : panels * SK_PANEL * (k ? k : 1);
    float *x = malloc((n * ldx + 1) * sizeof(float)), *bias = calloc(panels * SK_PANEL, sizeof(float));
    float *y0 = malloc((n * ldy + 1) * sizeof(float)), *y1 = malloc((n * ldy + 1) * sizeof(float));
    float *yr = malloc((m + 1) * sizeof(float));
    void *wdata = malloc(elems * 4);
    for (size_t i = 0; i < n * ldx; i++) x[i] = frand();
    for (size_t i = 0; i < m; i++) bias[i] = frand();
    for (size_t i = 0; i < elems; i++) {
        if (wt == SK_PACK_F32) {
            ((float *)wdata)[i] = frand();
        } else if (wt == SK_PACK_BF16) {
            float f = frand();
            uint32_t u;
            memcpy(&u, &f, 4);
            ((uint16_t *)wdata)[i] = (uint16_t)(u >> 16);
        } else { /* F16: sign, exponent 8..22 (2^-7..2^7), mantissa; some subnormals */
            const uint64_t r = next();
            ((uint16_t *)wdata)[i] = (uint16_t)((r & 0x8000u) | ((r % 7 == 0 ? 0 : 8 + (r >> 20) % 15) << 10) |
                                                ((r >> 32) & 0x3ffu));
        }
    }
    sk_packed P = {wdata, with_bias ? bias : NULL, k, m, inplace ? SK_PANEL : k * SK_PANEL, wt,
                   inplace ? ld : 0};
    for (size_t i = 0; i < n * ldy; i++) y0[i] = y1[i] = 12345.0f;
    /* no inputs: sk_gemm settles that shape before it chooses a kernel (kernels.h) */
    void (*const gemm)(const float *, size_t, size_t, const sk_packed *, float *, size_t) =
        k ? sk_gemm_wasm : sk_gemm;
    sk_gemm_scalar(x, ldx, n, &P, y0, ldy);
    gemm(x, ldx, n, &P, y1, ldy);
    g_checks++;
    for (size_t r = 0; r < n; r++) {
        if (memcmp(y0 + r * ldy, y1 + r * ldy, m * sizeof(float)) != 0)
            fail("n=%zu k=%zu m=%zu wtype %d: not the scalar reference's bits", n, k, m, wt);
        for (size_t o = m; o < ldy; o++)
            if (y1[r * ldy + o] != 12345.0f) fail("n=%zu k=%zu m=%zu wtype %d: wrote past n_out", n, k, m, wt);
        gemm(x + r * ldx, ldx, 1, &P, yr, m);
        if (memcmp(yr, y1 + r * ldy, m * sizeof(float)) != 0)
            fail("n=%zu k=%zu m=%zu wtype %d: a row differs from the row alone", n, k, m, wt);
    }
    free(x);
    free(bias);
    free(y0);
    free(y1);
    free(yr);
    free(wdata);
}

int main(void) {
    static const size_t shapes[][3] = {
        {1, 1, 1},    {1, 64, 1},    {5, 64, 16},  {6, 64, 16},  {7, 64, 17},   {8, 33, 31},
        {9, 100, 33}, {13, 257, 48}, {17, 300, 70}, {40, 600, 40}, {3, 1024, 100}, {33, 64, 192},
        {2, 70, 130}, {4, 64, 256},  {12, 40, 80},  {20, 1500, 90}, {10, 16, 65},  {3, 0, 20},
    };
    static const int types[] = {SK_PACK_F32, SK_PACK_F16, SK_PACK_BF16};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int t = 0; t < 3; t++)
            for (int b = 0; b < 2; b++) {
                check(shapes[i][0], shapes[i][1], shapes[i][2], types[t], b, 0, i % 3, (i + 1) % 4);
                if (types[t] == SK_PACK_F32) check(shapes[i][0], shapes[i][1], shapes[i][2], types[t], b, 1, i % 2, i % 3);
            }
    /* the widening: every F16 and BF16 value, at every offset of a vector */
    static uint16_t h[65536 + 8];
    static float w0[65536 + 8], w1[65536 + 8];
    for (uint32_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
    for (int wt = SK_PACK_F16; wt <= SK_PACK_BF16; wt++)
        for (size_t off = 0; off < 8; off++) {
            const size_t n = 65536 - off;
            memset(w0, 0, sizeof w0);
            memset(w1, 0, sizeof w1);
            sk_widen16_ref(wt, h + off, w0, n);
            sk_widen16_wasm(wt, h + off, w1, n);
            g_checks++;
            if (memcmp(w0, w1, sizeof w0) != 0) fail("widen16 off=%zu n=%zu (%zu) wtype %d: not the reference's bits", off, n, (size_t)0, wt);
        }
    /* GELU/GEGLU: tests/test_kernels.c's gelu_check (the SIMD levels' contract) */
    enum { N = 4003 };
    static float a[N], g[N], y1[N], y2[N], x2[N];
    for (size_t i = 0; i < N; i++) {
        a[i] = (float)(-15.0 + 30.0 * i / (N - 1));
        g[i] = frand();
    }
    a[7] = 0.0f;
    a[8] = -0.0f;
    a[9] = 1e-30f;
    a[10] = -1e-30f;
    sk_geglu_ref(a, g, y1, N);
    sk_geglu_wasm(a, g, y2, N);
    memcpy(x2, a, sizeof a);
    sk_gelu_wasm(x2, N - 1); /* odd length: the tail path; the last one untouched */
    g_checks++;
    if (x2[N - 1] != a[N - 1]) fail("gelu n=%zu: wrote past n (%zu %zu %d)", N - 1, (size_t)0, (size_t)0, 0);
    double worst = 0;
    for (size_t i = 0; i + 1 < N; i++) {
        const double want = 0.5 * (double)a[i] * (1.0 + erf((double)a[i] / sqrt(2.0)));
        const double es = fabs(x2[i] - want) / fmax(1.0, fabs((double)a[i]));
        if (es > worst) worst = es;
        if (!(es < 2.5e-7)) fail("gelu at %zu: error %zu e-9 x max(1,|x|) (%zu %d)", i, (size_t)(es * 1e9), (size_t)0, 0);
        if (!(a[i] < 0 ? x2[i] <= 0.0f : x2[i] <= a[i])) fail("gelu at %zu: on the wrong side (%zu %zu %d)", i, (size_t)0, (size_t)0, 0);
        if (!(fabs(y2[i] - y1[i]) <= 5e-7 * fmax(1.0, fabs((double)a[i])) * fabs(g[i]) + 1e-12))
            fail("geglu at %zu: off the reference (%zu %zu %d)", i, (size_t)0, (size_t)0, 0);
    }
    fprintf(stderr, "gelu_wasm: worst error %.3g x max(1, |x|)\n", worst);
    softmax_checks();
    fprintf(stderr, "softmax_wasm: worst relative error vs reference %.3g\n", g_softmax_worst);
    layernorm_checks();
    fprintf(stderr, "layernorm_wasm: worst error vs reference %.3g x max(1, |y|)\n", g_ln_worst);
    q8_checks();
    const char *level = sk_kernels_level_name(sk_kernels_level());
    if (strcmp(level, "simd128") != 0 || strcmp(sk_q8_kernel_name(), "simd128") != 0) {
        fprintf(stderr, "  the dispatchers' levels are %s and %s, not simd128 (built without -msimd128?)\n", level,
                sk_q8_kernel_name());
        g_fail++;
    }
    printf("kernels (%s, %s): %d kernel calls compared, %d mismatches\n", level, skycmd_kernels(), g_checks, g_fail);
    return g_fail ? 1 : 0;
}
