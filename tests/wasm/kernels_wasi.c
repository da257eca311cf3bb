/*
 * kernels_wasi.c - the SIMD128 kernels against the scalar reference, in WebAssembly (the
 * criterion tests cannot run there): tests/wasm/run.sh runs it under Node on the --simd
 * build. Shapes as tests/test_kernels.c's (partial row tiles, partial panels, k over one
 * block, strided x and y, F32/F16/BF16 panels, a row-major F32 matrix served in place, with
 * and without bias): sk_gemm_wasm must give sk_gemm_scalar's results bit for bit, never write
 * past n_out, and give a row the same result whatever rows share the call; sk_widen16_wasm
 * sk_widen16_ref's bits for all 65536 F16 and BF16 values at every alignment; GELU/GEGLU
 * within test_kernels.c's bounds of the exact GELU and of the reference. Also: the
 * dispatcher's level is "simd128" and sk_gemm runs it. Prints one line; exit 1 on failure.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
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
    sk_gemm_scalar(x, ldx, n, &P, y0, ldy);
    sk_gemm_wasm(x, ldx, n, &P, y1, ldy);
    g_checks++;
    for (size_t r = 0; r < n; r++) {
        if (memcmp(y0 + r * ldy, y1 + r * ldy, m * sizeof(float)) != 0)
            fail("n=%zu k=%zu m=%zu wtype %d: not the scalar reference's bits", n, k, m, wt);
        for (size_t o = m; o < ldy; o++)
            if (y1[r * ldy + o] != 12345.0f) fail("n=%zu k=%zu m=%zu wtype %d: wrote past n_out", n, k, m, wt);
        sk_gemm_wasm(x + r * ldx, ldx, 1, &P, yr, m);
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
    const char *level = sk_kernels_level_name(sk_kernels_level());
    if (strcmp(level, "simd128") != 0) {
        fprintf(stderr, "  the dispatcher's level is %s, not simd128 (built without -msimd128?)\n", level);
        g_fail++;
    }
    printf("kernels (%s, %s): %d GEMM and widening calls compared, %d mismatches\n", level, skycmd_kernels(), g_checks,
           g_fail);
    return g_fail ? 1 : 0;
}
