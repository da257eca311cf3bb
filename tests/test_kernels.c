/*
 * test_kernels.c - every SIMD kernel against the scalar reference (kernels.h), on shapes
 * that hit the edge paths: row counts that are not multiples of the micro-kernel height,
 * output counts that end in a partial panel, k longer than one cache block, strided x and y.
 * The GELU and exp approximations are also checked against libm over a wide range.
 * The tests of one architecture's kernels (x86-64: AVX2, AVX-512; aarch64: NEON) are compiled
 * only for it; SIMD variants the CPU lacks are skipped (reported), never called.
 */
#define _GNU_SOURCE  /* sched_getcpu, sched_setaffinity */
#include <criterion/criterion.h>
#include <sched.h>
#include <unistd.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "skycmd.h"
#include "kernels/cpu.h"
#include "kernels/kernels.h"
#include "kernels/pool.h"
#include "gguf/gguf.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

#if defined(__x86_64__)
static int have_avx2(void) {
    int f = sk_cpu_features();
    return (f & SK_CPU_AVX2) && (f & SK_CPU_FMA) && (f & SK_CPU_F16C);
}
static int have_avx512(void) { return have_avx2() && (sk_cpu_features() & SK_CPU_AVX512F); }
#elif defined(__aarch64__)
static int have_neon(void) { return (sk_cpu_features() & SK_CPU_NEON) != 0; }
#endif

typedef void (*gemm_fn)(const float *, size_t, size_t, const sk_packed *, float *, size_t);

/* The packed GEMMs this CPU can run: the scalar one first, then this architecture's SIMD
 * levels (x86-64: AVX2, AVX-512; aarch64: NEON). Returns how many (at most 3). */
static int gemm_variants(gemm_fn fns[3], const char *names[3]) {
    int n = 0;
    fns[n] = sk_gemm_scalar;
    names[n++] = "gemm_scalar";
#if defined(__x86_64__)
    if (have_avx2()) {
        fns[n] = sk_gemm_avx2;
        names[n++] = "gemm_avx2";
    }
    if (have_avx512()) {
        fns[n] = sk_gemm_avx512;
        names[n++] = "gemm_avx512";
    }
#elif defined(__aarch64__)
    if (have_neon()) {
        fns[n] = sk_gemm_neon;
        names[n++] = "gemm_neon";
    }
#endif
    return n;
}

/* max |got - ref| / (sum_i |x_i w_i| + |b|): the error relative to the magnitude of the sum,
 * which is what reordering a float sum can change. */
static double gemm_check(gemm_fn fn, size_t n, size_t k, size_t m, int with_bias, size_t ldx_pad,
                         size_t ldy_pad) {
    size_t ldx = k + ldx_pad, ldy = m + ldy_pad;
    float *x = malloc(n * ldx * sizeof(float));
    float *w = malloc(m * k * sizeof(float));
    float *b = malloc((m + SK_PANEL) * sizeof(float));
    float *y = malloc(n * ldy * sizeof(float));
    float *yr = malloc(n * m * sizeof(float));
    size_t nf = sk_packed_floats(m, k);
    float *pk = aligned_alloc(64, (nf * sizeof(float) + 63) / 64 * 64);
    float *bp = aligned_alloc(64, ((m + SK_PANEL) / SK_PANEL * SK_PANEL) * sizeof(float) + 64);
    cr_assert(x && w && b && y && yr && pk && bp);
    for (size_t i = 0; i < n * ldx; i++) x[i] = frand();
    for (size_t i = 0; i < m * k; i++) w[i] = frand();
    for (size_t i = 0; i < m; i++) b[i] = frand();
    for (size_t i = 0; i < n * ldy; i++) y[i] = 12345.0f;  /* sentinel in the padding */
    sk_pack(w, k, m, k, pk);
    memset(bp, 0, ((m + SK_PANEL) / SK_PANEL * SK_PANEL) * sizeof(float));
    memcpy(bp, b, m * sizeof(float));
    sk_packed P = {pk, with_bias ? bp : NULL, k, m, k * SK_PANEL, SK_PACK_F32, 0};
    sk_gemm_ref(x, ldx, n, k, w, with_bias ? b : NULL, m, yr, m);
    fn(x, ldx, n, &P, y, ldy);
    double worst = 0;
    for (size_t r = 0; r < n; r++) {
        for (size_t o = 0; o < m; o++) {
            double mag = with_bias ? fabs(b[o]) : 0;
            for (size_t i = 0; i < k; i++) mag += fabs((double)x[r * ldx + i] * w[o * k + i]);
            double err = fabs((double)y[r * ldy + o] - yr[r * m + o]) / (mag > 0 ? mag : 1);
            if (err > worst) worst = err;
        }
        for (size_t o = m; o < ldy; o++)
            cr_assert_eq(y[r * ldy + o], 12345.0f, "gemm wrote past n_out (row %zu col %zu)", r, o);
    }
    free(x);
    free(w);
    free(b);
    free(y);
    free(yr);
    free(pk);
    free(bp);
    return worst;
}

static void gemm_suite(gemm_fn fn, const char *name) {
    static const size_t shapes[][3] = {
        {1, 1, 1},   {1, 64, 1},   {5, 64, 16},  {6, 64, 16},  {7, 64, 17},   {8, 33, 31},
        {9, 100, 33}, {13, 257, 48}, {17, 300, 70}, {40, 600, 40}, {3, 1024, 100}, {33, 64, 192},
        {2, 70, 130}, {4, 64, 256}, {12, 40, 80}, {20, 1500, 90}, {10, 16, 65},
        /* past the AVX-512 kernel's 512-row blocks: 3 rows to the small-row kernel; a
         * partial 8-row tile at the end */
        {523, 300, 40}, {1030, 64, 33},
        /* past the x86 GEMMs' prefetch threshold (1 MiB of weights), with a partial last
         * panel and two k blocks (the outputs' threshold takes 67M products at least,
         * minutes under qemu: the golden suite's s1-micro crosses it) */
        {21, 520, 513},
    };
    double worst = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int bias = 0; bias < 2; bias++) {
            double err = gemm_check(fn, shapes[i][0], shapes[i][1], shapes[i][2], bias, i % 3,
                                    (i + 1) % 4);
            cr_expect(err < 2e-6, "%s n=%zu k=%zu m=%zu bias=%d: relative error %.3g", name,
                      shapes[i][0], shapes[i][1], shapes[i][2], bias, err);
            if (err > worst) worst = err;
        }
    fprintf(stderr, "%s: worst relative error vs reference %.3g\n", name, worst);
}

/* A row's outputs do not depend on how many rows share the call (the 8-row tiles, the
 * small-row tiles and the duplicated rows of a partial tile all run the same FMA chain):
 * the batch-equals-one-at-a-time guarantee of the forward pass rests on it. */
static void gemm_rows_independent(gemm_fn fn, const char *name) {
    /* K above the k-blocking, M a partial panel group; calls of up to 23 rows, and one of
     * N (past the AVX-512 kernel's 512-row blocks) */
    enum { N = 530, K = 300, M = 100 };
    static float x[N * K], w[M * K], b[M + SK_PANEL], y[N * M], y1[M];
    static float pk[((M + SK_PANEL - 1) / SK_PANEL) * SK_PANEL * K] __attribute__((aligned(64)));
    for (size_t i = 0; i < N * K; i++) x[i] = frand();
    for (size_t i = 0; i < M * K; i++) w[i] = frand();
    memset(b, 0, sizeof b);
    for (size_t i = 0; i < M; i++) b[i] = frand();
    sk_pack(w, K, M, K, pk);
    sk_packed P = {pk, b, K, M, K * SK_PANEL, SK_PACK_F32, 0};
    for (size_t n = 1; n <= N; n = n < 23 ? n + 1 : n < N ? N : N + 1) {
        fn(x, K, n, &P, y, M);
        for (size_t r = 0; r < n; r++) {
            fn(x + r * K, K, 1, &P, y1, M);
            cr_assert(memcmp(y + r * M, y1, sizeof y1) == 0,
                      "%s: row %zu of a %zu-row call differs from the row alone", name, r, n);
        }
    }
}

Test(kernels, gemm_rows_independent_of_batch) {
    gemm_fn fns[3];
    const char *names[3];
    const int nf = gemm_variants(fns, names);
    for (int f = 0; f < nf; f++) gemm_rows_independent(fns[f], names[f]);
}

Test(kernels, gemm_scalar_packed) { gemm_suite(sk_gemm_scalar, "gemm_scalar"); }

#if defined(__x86_64__)
Test(kernels, gemm_avx2) {
    if (!have_avx2()) {
        cr_skip_test("no AVX2+FMA on this CPU: skipped");
    }
    gemm_suite(sk_gemm_avx2, "gemm_avx2");
}

Test(kernels, gemm_avx512) {
    if (!have_avx512()) {
        cr_skip_test("no AVX-512F on this CPU: skipped");
    }
    gemm_suite(sk_gemm_avx512, "gemm_avx512");
}
#endif

#if defined(__aarch64__)
Test(kernels, gemm_neon) {
    if (!have_neon()) cr_skip_test("no NEON on this CPU: skipped");
    gemm_suite(sk_gemm_neon, "gemm_neon");
}

/* The NEON tiles (5 x 16, then 1 x 64, 2 x 48, 3 x 32 and 4 x 16 for the last rows) run one
 * FMA chain per output, so a row's outputs are those of the row alone for every row count
 * and tail shape, whole and partial panels, k beyond one cache block and k % 4 != 0. */
Test(kernels, gemm_neon_tiles_bitwise) {
    if (!have_neon()) cr_skip_test("no NEON on this CPU: skipped");
    static const size_t shapes[][2] = {{3, 16}, {7, 33}, {258, 64}, {513, 100}, {64, 130}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const size_t K = shapes[s][0], M = shapes[s][1], N = 11;
        float *x = malloc(N * K * sizeof(float)), *w = malloc(M * K * sizeof(float));
        float *b = calloc(M + SK_PANEL, sizeof(float)), *y = malloc(N * M * sizeof(float));
        float *y1 = malloc(M * sizeof(float));
        float *pk = aligned_alloc(64, sk_packed_floats(M, K) * sizeof(float));
        cr_assert(x && w && b && y && y1 && pk);
        for (size_t i = 0; i < N * K; i++) x[i] = frand();
        for (size_t i = 0; i < M * K; i++) w[i] = frand();
        for (size_t i = 0; i < M; i++) b[i] = frand();
        sk_pack(w, K, M, K, pk);
        for (int wb = 0; wb < 2; wb++) {
            sk_packed P = {pk, wb ? b : NULL, K, M, K * SK_PANEL, SK_PACK_F32, 0};
            for (size_t n = 1; n <= N; n++) {
                sk_gemm_neon(x, K, n, &P, y, M);
                for (size_t r = 0; r < n; r++) {
                    sk_gemm_neon(x + r * K, K, 1, &P, y1, M);
                    cr_assert(memcmp(y + r * M, y1, M * sizeof(float)) == 0,
                              "k=%zu m=%zu bias=%d: row %zu of %zu differs from the row alone",
                              K, M, wb, r, n);
                }
            }
        }
        free(x);
        free(w);
        free(b);
        free(y);
        free(y1);
        free(pk);
    }
}
#endif

/* A row-major [k][ld] matrix read in place (rstride = ld, pstride = SK_PANEL: how attention
 * multiplies by V) gives bitwise the products of its packed copy, at every kernel level, for
 * row counts that take the 8-row and the small-row tiles and k beyond one SK_KC block. */
Test(kernels, gemm_row_stride_in_place) {
    static const size_t ks[] = {5, 64, 88, 300};
    const size_t m = 48, ld = 80, nmax = 13;
    gemm_fn fns[3];
    const char *names[3];
    const int nf = gemm_variants(fns, names);
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        const size_t k = ks[ki];
        float *b = malloc(k * ld * sizeof(float)), *w = malloc(m * k * sizeof(float));
        float *x = malloc(nmax * k * sizeof(float)), *y1 = malloc(nmax * m * sizeof(float));
        float *y2 = malloc(nmax * m * sizeof(float));
        float *pk = aligned_alloc(64, sk_packed_floats(m, k) * sizeof(float));
        for (size_t i = 0; i < k * ld; i++) b[i] = frand();
        for (size_t i = 0; i < nmax * k; i++) x[i] = frand();
        for (size_t o = 0; o < m; o++)  /* w = the first m columns of b, transposed */
            for (size_t i = 0; i < k; i++) w[o * k + i] = b[i * ld + o];
        sk_pack(w, k, m, k, pk);
        const sk_packed packed = {pk, NULL, k, m, k * SK_PANEL, SK_PACK_F32, 0};
        const sk_packed in_place = {b, NULL, k, m, SK_PANEL, SK_PACK_F32, ld};
        for (int f = 0; f < nf; f++) {
            for (size_t n = 1; n <= nmax; n += 3) {
                fns[f](x, k, n, &packed, y1, m);
                fns[f](x, k, n, &in_place, y2, m);
                cr_assert(memcmp(y1, y2, n * m * sizeof(float)) == 0,
                          "%s, k=%zu, n=%zu: in place differs from packed", names[f], k, n);
            }
        }
        free(b);
        free(w);
        free(x);
        free(y1);
        free(y2);
        free(pk);
    }
}

/* A view into the middle of a packed matrix (what attention uses for key ranges). */
Test(kernels, gemm_panel_view) {
    const size_t k = 24, m = 80, n = 7;
    float w[80 * 24], x[7 * 24], yr[7 * 80], y[7 * 80];
    for (size_t i = 0; i < m * k; i++) w[i] = frand();
    for (size_t i = 0; i < n * k; i++) x[i] = frand();
    float *pk = aligned_alloc(64, sk_packed_floats(m, k) * sizeof(float));
    sk_pack(w, k, m, k, pk);
    /* outputs 32..79 only */
    sk_packed P = {pk + 2 * k * SK_PANEL, NULL, k, m - 32, k * SK_PANEL, SK_PACK_F32, 0};
    sk_gemm_ref(x, k, n, k, w + 32 * k, NULL, m - 32, yr, m - 32);
    gemm_fn fns[3];
    const char *names[3];
    const int nf = gemm_variants(fns, names);
    for (int f = 0; f < nf; f++) {
        fns[f](x, k, n, &P, y, m - 32);
        for (size_t i = 0; i < n * (m - 32); i++)
            cr_assert_float_eq(y[i], yr[i], 1e-5f, "%s, element %zu", names[f], i);
    }
    free(pk);
}

/* The empty shapes, which sk_gemm settles for every kernel it dispatches to (kernels.h):
 * with no inputs each output is its bias (0 without one), and no rows or no outputs write
 * nothing, at every level this CPU has and for each panel type. */
Test(kernels, gemm_empty_shapes) {
    enum { N = 5, M = 37, LDY = 40 };
    float bias[48], y[N * LDY], data[3 * SK_PANEL] = {0};  /* one input's three panels */
    for (size_t o = 0; o < 48; o++) bias[o] = (float)o - 20.5f;
    const int types[3] = {SK_PACK_F32, SK_PACK_F16, SK_PACK_BF16};
    const float x[N] = {1, 2, 3, 4, 5};
    const int top = sk_kernels_level();
    for (int lv = SK_LEVEL_SCALAR; lv <= top; lv++) {
        sk_kernels_force_level(lv);
        for (int t = 0; t < 3; t++)
            for (int with_bias = 0; with_bias < 2; with_bias++) {
                sk_packed P = {data, with_bias ? bias : NULL, 0, M, 0, types[t], 0};
                for (size_t i = 0; i < N * LDY; i++) y[i] = -7.0f;
                sk_gemm(x, 1, N, &P, y, LDY);
                for (size_t r = 0; r < N; r++)
                    for (size_t o = 0; o < LDY; o++) {
                        const float want = o >= M ? -7.0f : with_bias ? bias[o] : 0.0f;
                        cr_assert_eq(y[r * LDY + o], want, "level %s, type %d, bias %d: y[%zu][%zu] = %g",
                                     sk_kernels_level_name(lv), types[t], with_bias, r, o,
                                     (double)y[r * LDY + o]);
                    }
                /* no rows, or no outputs (with inputs): nothing written */
                sk_packed Q = {data, bias, 1, M, SK_PANEL, types[t], 0};
                sk_gemm(x, 1, 0, &Q, y, LDY);
                Q.n_out = 0;
                sk_gemm(x, 1, N, &Q, y, LDY);
                for (size_t r = 0; r < N; r++)
                    for (size_t o = 0; o < LDY; o++)
                        cr_assert_eq(y[r * LDY + o], o >= M ? -7.0f : with_bias ? bias[o] : 0.0f,
                                     "level %s: an empty product wrote y[%zu][%zu]",
                                     sk_kernels_level_name(lv), r, o);
            }
    }
    sk_kernels_force_level(-1);
}

Test(kernels, pack_layout) {
    float w[3 * 2] = {1, 2, 3, 4, 5, 6};  /* 3 outputs x 2 inputs */
    float pk[16 * 2];
    cr_assert_eq(sk_packed_floats(3, 2), 32);
    cr_assert_eq(sk_packed_floats(16, 2), 32);
    cr_assert_eq(sk_packed_floats(17, 2), 64);
    sk_pack(w, 2, 3, 2, pk);
    cr_assert_eq(pk[0], 1);
    cr_assert_eq(pk[1], 3);
    cr_assert_eq(pk[2], 5);
    cr_assert_eq(pk[3], 0);
    cr_assert_eq(pk[16], 2);
    cr_assert_eq(pk[17], 4);
    cr_assert_eq(pk[18], 6);
    cr_assert_eq(pk[31], 0);
}

Test(kernels, gelu_reference_matches_erf) {
    /* the reference itself against a double-precision formula */
    for (double x = -12.0; x <= 12.0; x += 0.01) {
        double want = 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
        float got = sk_gelu1((float)x);
        cr_assert(fabs(got - want) <= 2e-7 * fmax(1.0, fabs(want)) + 1e-30,
                  "gelu(%g) = %.9g, want %.9g", x, got, want);
    }
}

typedef void (*geglu_fn)(const float *, const float *, float *, size_t);
typedef void (*gelu_fn)(float *, size_t);
typedef void (*softmax_fn)(float *, size_t, float);

static void gelu_check(geglu_fn geglu, gelu_fn gelu, const char *name) {
    enum { N = 4003 };
    static float a[N], g[N], y1[N], y2[N], x1[N], x2[N];
    for (size_t i = 0; i < N; i++) {
        a[i] = (float)(-15.0 + 30.0 * i / (N - 1));
        g[i] = frand();
    }
    a[7] = 0.0f;
    a[8] = -0.0f;
    a[9] = 1e-30f;
    a[10] = -1e-30f;
    sk_geglu_ref(a, g, y1, N);
    geglu(a, g, y2, N);
    memcpy(x1, a, sizeof a);
    memcpy(x2, a, sizeof a);
    sk_gelu_ref(x1, N);
    gelu(x2, N - 1);  /* odd length: the tail path; last one untouched */
    cr_assert_eq(x2[N - 1], a[N - 1]);
    /* the SIMD GELU's contract (kernels_x86.c): absolute error below 2.5e-7 max(1, |x|),
     * the accuracy class of PyTorch's float GELU (about 1e-7 max(1, |x|)) */
    double worst = 0;
    for (size_t i = 0; i + 1 < N; i++) {
        double want = 0.5 * (double)a[i] * (1.0 + erf((double)a[i] / sqrt(2.0)));
        double es = fabs(x2[i] - want) / fmax(1.0, fabs((double)a[i]));
        if (es > worst) worst = es;
        cr_expect(es < 2.5e-7, "%s(%.9g) = %.9g, want %.9g", name, (double)a[i], (double)x2[i],
                  want);
        /* the tails stay on their side: gelu(x) <= 0 below 0 and gelu(x) <= x above */
        cr_expect(a[i] < 0 ? x2[i] <= 0.0f : x2[i] <= a[i], "%s(%.9g) = %.9g", name,
                  (double)a[i], (double)x2[i]);
        cr_expect(fabs(y2[i] - y1[i]) <= 5e-7 * fmax(1.0, fabs((double)a[i])) * fabs(g[i]) + 1e-12,
                  "geglu at %zu: %.9g vs %.9g", i, (double)y2[i], (double)y1[i]);
    }
    fprintf(stderr, "%s: worst error %.3g x max(1, |x|)\n", name, worst);
}

#if defined(__x86_64__)
Test(kernels, gelu_and_geglu_avx2) {
    if (!have_avx2()) {
        cr_skip_test("no AVX2+FMA on this CPU: skipped");
    }
    gelu_check(sk_geglu_avx2, sk_gelu_avx2, "gelu_avx2");
}

Test(kernels, gelu_and_geglu_avx512) {
    if (!have_avx512()) {
        cr_skip_test("no AVX-512F on this CPU: skipped");
    }
    gelu_check(sk_geglu_avx512, sk_gelu_avx512, "gelu_avx512");
}
#endif

#if defined(__aarch64__)
Test(kernels, gelu_and_geglu_neon) {
    if (!have_neon()) cr_skip_test("no NEON on this CPU: skipped");
    gelu_check(sk_geglu_neon, sk_gelu_neon, "gelu_neon");
}
#endif

static void softmax_check(softmax_fn fn, const char *name) {
    static const size_t lens[] = {1, 2, 7, 8, 9, 16, 33, 129, 500};
    double worst = 0;  /* |got - ref| / ref over the probabilities above 1e-30 */
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        size_t n = lens[li];
        float a[500], b[500];
        for (size_t i = 0; i < n; i++) a[i] = b[i] = frand() * 40.0f;
        if (n > 3) a[3] = b[3] = -1e4f;  /* far below the max: exp underflows to 0 */
        sk_attn_softmax_ref(a, n, 0.125f);
        fn(b, n, 0.125f);
        double sum = 0;
        for (size_t i = 0; i < n; i++) {
            cr_expect(fabs(a[i] - b[i]) <= 1e-6 * fmax(a[i], 1e-30) + 1e-37,
                      "%s n=%zu i=%zu: %.9g vs %.9g", name, n, i, (double)b[i], (double)a[i]);
            if (a[i] > 1e-30f && fabs(a[i] - b[i]) / a[i] > worst) worst = fabs(a[i] - b[i]) / a[i];
            sum += b[i];
        }
        cr_expect(fabs(sum - 1.0) < 1e-5, "%s n=%zu: probabilities sum to %.9g", name, n, sum);
    }
    fprintf(stderr, "%s: worst relative error vs reference %.3g\n", name, worst);
}

typedef void (*softmax_rows_fn)(float *, size_t, size_t, size_t, const size_t *, const size_t *,
                                float);

/* A block of score rows with windows [a[r], b[r]) against the reference: 0 outside each
 * window, nothing written past nk. */
static void softmax_rows_check(softmax_rows_fn rows_fn) {
    static const size_t nks[] = {1, 2, 16, 17, 80, 129};
    enum { NR = 11, LD = 144 };
    static float x1[NR * LD], x2[NR * LD];
    /* every nk twice: rows of every kind, then all rows full (the kernel's no-window path) */
    for (size_t ki = 0; ki < 2 * sizeof nks / sizeof nks[0]; ki++) {
        const size_t nk = nks[ki / 2];
        const int all_full = ki % 2;
        size_t a[NR], b[NR];
        for (size_t r = 0; r < NR; r++) {
            /* full rows, windows cut at either end, single keys */
            a[r] = (all_full || r % 3 == 0) ? 0 : (size_t)(rng % nk);
            rng ^= rng << 13;
            b[r] = (all_full || r % 4 == 0) ? nk : a[r] + 1 + (size_t)(rng % (nk - a[r]));
            rng ^= rng >> 7;
        }
        for (size_t i = 0; i < NR * LD; i++) x1[i] = x2[i] = frand() * 40.0f;
        x1[5] = x2[5] = -1e4f;
        sk_attn_softmax_rows_ref(x1, LD, NR, nk, a, b, 0.125f);
        rows_fn(x2, LD, NR, nk, a, b, 0.125f);
        for (size_t r = 0; r < NR; r++) {
            for (size_t i = 0; i < nk; i++) {
                const float p1 = x1[r * LD + i], p2 = x2[r * LD + i];
                if (i < a[r] || i >= b[r])
                    cr_expect(p2 == 0.0f, "nk=%zu row %zu col %zu outside [%zu,%zu): %g", nk, r,
                              i, a[r], b[r], (double)p2);
                else
                    cr_expect(fabs(p1 - p2) <= 1e-6 * fmax(p1, 1e-30) + 1e-37,
                              "nk=%zu row %zu col %zu: %.9g vs %.9g", nk, r, i, (double)p2,
                              (double)p1);
            }
            for (size_t i = nk; i < LD; i++)
                cr_expect(x2[r * LD + i] == x1[r * LD + i], "nk=%zu row %zu: wrote past nk", nk, r);
        }
    }
}

#if defined(__x86_64__)
Test(kernels, softmax_rows_avx512) {
    if (!have_avx512()) cr_skip_test("no AVX-512F on this CPU: skipped");
    softmax_rows_check(sk_attn_softmax_rows_avx512);
}

Test(kernels, softmax_avx2) {
    if (!have_avx2()) {
        cr_skip_test("no AVX2+FMA on this CPU: skipped");
    }
    softmax_check(sk_attn_softmax_avx2, "softmax_avx2");
}

/* the AVX-512 softmax runs on rows of a score block: one row, all of it */
static void softmax512_one_row(float *x, size_t n, float scale) {
    const size_t a = 0, b = n;
    sk_attn_softmax_rows_avx512(x, n, 1, n, &a, &b, scale);
}

Test(kernels, softmax_avx512) {
    if (!have_avx512()) {
        cr_skip_test("no AVX-512F on this CPU: skipped");
    }
    softmax_check(softmax512_one_row, "softmax_avx512");
}
#endif

#if defined(__aarch64__)
Test(kernels, softmax_neon) {
    if (!have_neon()) cr_skip_test("no NEON on this CPU: skipped");
    softmax_check(sk_attn_softmax_neon, "softmax_neon");
}

/* The NEON level's rows: the one-row kernel applied row by row (what sk_attn_softmax_rows
 * dispatches to at this level). */
static void softmax_rows_neon(float *x, size_t ld, size_t nr, size_t nk, const size_t *a,
                              const size_t *b, float scale) {
    sk_attn_softmax_rows_each(sk_attn_softmax_neon, x, ld, nr, nk, a, b, scale);
}

Test(kernels, softmax_rows_neon) {
    if (!have_neon()) cr_skip_test("no NEON on this CPU: skipped");
    softmax_rows_check(softmax_rows_neon);
    /* and the dispatcher at the automatic level */
    softmax_rows_check(sk_attn_softmax_rows);
}
#endif

typedef void (*layernorm_fn)(const float *, size_t, size_t, const float *, const float *, float,
                             float *);

static void layernorm_check(layernorm_fn ln, const char *name) {
    static const size_t dims[] = {1, 8, 15, 16, 17, 64, 100, 1024};
    static const size_t rows[] = {6, 37, 70};
    double worst = 0;  /* |got - ref| / max(1, |ref|) */
    for (size_t di = 0; di < 3 * sizeof dims / sizeof dims[0]; di++) {
        /* the AVX-512 code takes 16 rows at a time in chunks of 64: a partial group, whole
         * and partial groups, two chunks */
        size_t d = dims[di / 3], n = rows[di % 3];
        float *x = malloc(n * d * sizeof(float)), *w = malloc(d * sizeof(float));
        float *b = malloc(d * sizeof(float)), *y1 = malloc(n * d * sizeof(float));
        float *y2 = malloc(n * d * sizeof(float));
        for (size_t i = 0; i < d; i++) {
            w[i] = 1.0f + 0.1f * frand();
            b[i] = 0.1f * frand();
        }
        /* rows plain, with a large offset (residual streams reach ~1e4), with one massive
         * channel; then again in another order */
        for (size_t r = 0; r < n; r++)
            for (size_t i = 0; i < d; i++) x[r * d + i] = (r % 3 == 1 ? 2.6e4f : 0.0f) + frand();
        x[2 * d + d / 2] = 3000.0f;
        x[3 * d + d / 3] = -3000.0f;
        for (int wb = 0; wb < 2; wb++) {
            sk_layernorm_ref(x, n, d, w, wb ? b : NULL, 1e-5f, y1);
            ln(x, n, d, w, wb ? b : NULL, 1e-5f, y2);
            for (size_t i = 0; i < n * d; i++) {
                cr_expect(fabs(y1[i] - y2[i]) <= 2e-5 * fmax(1.0, fabs(y1[i])),
                          "%s d=%zu bias=%d i=%zu: %.9g vs %.9g", name, d, wb, i, (double)y2[i],
                          (double)y1[i]);
                const double e = fabs(y1[i] - y2[i]) / fmax(1.0, fabs(y1[i]));
                if (e > worst) worst = e;
            }
        }
        /* in place */
        memcpy(y2, x, n * d * sizeof(float));
        ln(y2, n, d, w, b, 1e-5f, y2);
        sk_layernorm_ref(x, n, d, w, b, 1e-5f, y1);
        for (size_t i = 0; i < n * d; i++)
            cr_expect(fabs(y1[i] - y2[i]) <= 2e-5 * fmax(1.0, fabs(y1[i])));
        free(x);
        free(w);
        free(b);
        free(y1);
        free(y2);
    }
    fprintf(stderr, "%s: worst error vs reference %.3g x max(1, |y|)\n", name, worst);
}

#if defined(__x86_64__)
Test(kernels, layernorm_avx2) {
    if (!have_avx2()) {
        cr_skip_test("no AVX2+FMA on this CPU: skipped");
    }
    layernorm_check(sk_layernorm_avx2, "layernorm_avx2");
}

Test(kernels, layernorm_avx512) {
    if (!have_avx512()) {
        cr_skip_test("no AVX-512F on this CPU: skipped");
    }
    layernorm_check(sk_layernorm_avx512, "layernorm_avx512");
}
#endif

typedef void (*add_layernorm_fn)(float *, const float *, size_t, size_t, const float *,
                                 const float *, float, float *);

/* The residual form x += a, y = LN(x) against the reference, with y aliasing a (how the
 * model calls it) and with y separate. */
static void add_layernorm_check(add_layernorm_fn add_ln, const char *name) {
    static const size_t dims[] = {1, 15, 16, 64, 100};
    double worst = 0;
    static const size_t rows[] = {1, 6, 37, 70};
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
        for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++) {
            const size_t d = dims[di], n = rows[ri], nd = n * d;
            float *x1 = malloc(nd * sizeof(float)), *x2 = malloc(nd * sizeof(float));
            float *a1 = malloc(nd * sizeof(float)), *a2 = malloc(nd * sizeof(float));
            float *w = malloc(d * sizeof(float)), *b = malloc(d * sizeof(float));
            for (size_t i = 0; i < d; i++) {
                w[i] = 1.0f + 0.1f * frand();
                b[i] = 0.1f * frand();
            }
            for (size_t i = 0; i < nd; i++) {
                x1[i] = x2[i] = (i / d % 3 == 1 ? 2.6e4f : 0.0f) + frand();
                a1[i] = a2[i] = frand();
            }
            sk_add_layernorm_ref(x1, a1, n, d, w, b, 1e-5f, a1);
            add_ln(x2, a2, n, d, w, b, 1e-5f, a2);
            for (size_t i = 0; i < nd; i++) {
                cr_assert_eq(x1[i], x2[i], "%s d=%zu n=%zu: residual differs at %zu", name, d, n, i);
                cr_assert(fabs(a1[i] - a2[i]) <= 2e-5 * fmax(1.0, fabs(a1[i])),
                          "%s d=%zu n=%zu i=%zu: %.9g vs %.9g", name, d, n, i, (double)a2[i],
                          (double)a1[i]);
                const double e = fabs(a1[i] - a2[i]) / fmax(1.0, fabs(a1[i]));
                if (e > worst) worst = e;
            }
            /* no residual: plain LayerNorm into a separate y */
            sk_add_layernorm_ref(x1, NULL, n, d, w, NULL, 1e-5f, a1);
            add_ln(x2, NULL, n, d, w, NULL, 1e-5f, a2);
            for (size_t i = 0; i < nd; i++)
                cr_assert(fabs(a1[i] - a2[i]) <= 2e-5 * fmax(1.0, fabs(a1[i])));
            free(x1);
            free(x2);
            free(a1);
            free(a2);
            free(w);
            free(b);
        }
    fprintf(stderr, "%s: worst error vs reference %.3g x max(1, |y|)\n", name, worst);
}

#if defined(__x86_64__)
Test(kernels, add_layernorm_avx512) {
    if (!have_avx512()) cr_skip_test("no AVX-512F on this CPU: skipped");
    add_layernorm_check(sk_add_layernorm_avx512, "add_layernorm_avx512");
}
#endif

#if defined(__aarch64__)
Test(kernels, layernorm_neon) {
    if (!have_neon()) cr_skip_test("no NEON on this CPU: skipped");
    layernorm_check(sk_layernorm_neon, "layernorm_neon");
}

Test(kernels, add_layernorm_neon) {
    if (!have_neon()) cr_skip_test("no NEON on this CPU: skipped");
    add_layernorm_check(sk_add_layernorm_neon, "add_layernorm_neon");
}
#endif

/* The levels are those of the architecture compiled (kernels.h): x86-64 scalar < AVX2 <
 * AVX-512, aarch64 scalar < NEON. */
Test(kernels, dispatch_level) {
    int lv = sk_kernels_level();
    cr_assert_str_eq(sk_kernels_level_name(SK_LEVEL_SCALAR), "scalar");
#if defined(__x86_64__)
    cr_assert(lv >= SK_LEVEL_SCALAR && lv <= SK_LEVEL_AVX512);
    if (lv == SK_LEVEL_AVX512) cr_assert(have_avx512());
    if (lv >= SK_LEVEL_AVX2) cr_assert(have_avx2());
    cr_assert_str_eq(sk_kernels_level_name(SK_LEVEL_AVX2), "avx2");
    cr_assert_str_eq(sk_kernels_level_name(SK_LEVEL_AVX512), "avx512");
#elif defined(__aarch64__)
    cr_assert(lv == SK_LEVEL_SCALAR || lv == SK_LEVEL_NEON);
    /* every aarch64 CPU has Advanced SIMD: the automatic level is NEON unless the
     * environment caps it */
    const char *env = getenv("SKYCMD_KERNELS");
    if (have_neon() && !(env && strcmp(env, "scalar") == 0)) cr_assert_eq(lv, SK_LEVEL_NEON);
    if (lv == SK_LEVEL_NEON) cr_assert(have_neon());
    cr_assert_str_eq(sk_kernels_level_name(SK_LEVEL_NEON), "neon");
    cr_assert_str_eq(sk_kernels_level_name(SK_LEVEL_NEON + 1), "unknown");
#else
    cr_assert_eq(lv, SK_LEVEL_SCALAR);
#endif
    sk_kernels_force_level(SK_LEVEL_SCALAR);
    cr_assert_eq(sk_kernels_level(), SK_LEVEL_SCALAR);
    cr_assert_str_eq(sk_kernels_level_name(sk_kernels_level()), "scalar");
    sk_kernels_force_level(-1);
    cr_assert_eq(sk_kernels_level(), lv);
}

static void count_calls(void *ctx, int ith, int nth) {
    int *hits = ctx;
    cr_assert(ith >= 0 && ith < nth);
    __atomic_add_fetch(&hits[ith], 1, __ATOMIC_RELAXED);
}

Test(kernels, pool_runs_every_thread) {
    cr_assert_null(sk_pool_new(0));
    for (int n = 1; n <= 4; n++) {
        sk_pool *p = sk_pool_new(n);
        cr_assert(p);
        cr_assert_eq(sk_pool_size(p), n);
        int hits[4] = {0};
        for (int r = 0; r < 200; r++) sk_pool_run_all(p, count_calls, hits);
        for (int i = 0; i < n; i++) cr_assert_eq(hits[i], 200, "thread %d ran %d times", i, hits[i]);
        sk_pool_free(p);
    }
    cr_assert_eq(sk_pool_size(NULL), 1);
    sk_pool_free(NULL);
}

/* Workers woken from sleep never run on their caller's CPU (they would take turns with it):
 * with the caller pinned to one CPU, every worker of every job that woke them ran on
 * another. */
static void record_cpu(void *ctx, int ith, int nth) {
    int *cpu = ctx;
    cr_assert(ith >= 0 && ith < nth);
    cpu[ith] = sched_getcpu();
}

Test(kernels, pool_wakes_workers_off_the_callers_cpu) {
    cpu_set_t all;
    cr_assert_eq(sched_getaffinity(0, sizeof all, &all), 0);
    if (CPU_COUNT(&all) < 2) cr_skip_test("needs 2 CPUs to run on, this process has %d", CPU_COUNT(&all));
    sk_pool *p = sk_pool_new(3);  /* made before the pin: its workers may use every CPU */
    cr_assert(p);
    const int mine = sched_getcpu();
    cr_assert(mine >= 0);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(mine, &one);
    cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
    for (int r = 0; r < 20; r++) {
        usleep(20000);  /* the workers have stopped spinning and sleep */
        int cpu[3] = {-1, -1, -1};
        sk_pool_run_all(p, record_cpu, cpu);
        cr_assert_eq(cpu[0], mine, "the caller ran on CPU %d, pinned to %d", cpu[0], mine);
        for (int i = 1; i < 3; i++)
            cr_assert(cpu[i] >= 0 && cpu[i] != mine, "run %d: worker %d ran on the caller's CPU %d",
                      r, i, mine);
    }
    sk_pool_free(p);
    cr_assert_eq(sched_setaffinity(0, sizeof all, &all), 0);
}

/* A budgeted job whose pieces are claimed from a shared counter: every piece runs exactly
 * once whichever helpers join (a helper that wakes late skips the job), and the caller
 * always takes part. */
typedef struct claim_job {
    size_t next;
    int done[64];
    int caller_ran;
} claim_job;

static void claim_pieces(void *ctx, int ith, int nth) {
    claim_job *j = ctx;
    cr_assert(ith >= 0 && ith < nth);
    if (ith == 0) j->caller_ran = 1;
    for (;;) {
        size_t c = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
        if (c >= 64) return;
        __atomic_add_fetch(&j->done[c], 1, __ATOMIC_RELAXED);
    }
}

Test(kernels, pool_pieces_run_once_and_limit_applies) {
    sk_pool *p = sk_pool_new(3);
    cr_assert(p);
    for (int r = 0; r < 2000; r++) {
        if (r % 500 == 0) sk_pool_set_limit(p, 1 + (r / 500) % 3);  /* 1, 2, 3, 1 threads */
        claim_job j;
        memset(&j, 0, sizeof j);
        if (r % 7 == 0) sk_pool_wake(p);
        sk_pool_run(p, claim_pieces, &j);
        cr_assert(j.caller_ran);
        for (int c = 0; c < 64; c++) cr_assert_eq(j.done[c], 1, "run %d: piece %d ran %d times", r, c, j.done[c]);
    }
    /* the limit caps every job, run_all included, and never stops a thread */
    sk_pool_set_limit(p, 2);
    cr_assert_eq(sk_pool_size(p), 2);
    cr_assert_eq(sk_pool_threads(p), 3);
    int hits[4] = {0};
    for (int r = 0; r < 50; r++) sk_pool_run_all(p, count_calls, hits);
    cr_assert(hits[0] == 50 && hits[1] == 50 && hits[2] == 0, "%d %d %d", hits[0], hits[1], hits[2]);
    sk_pool_set_limit(p, 9);
    cr_assert_eq(sk_pool_size(p), 3);
    for (int r = 0; r < 50; r++) sk_pool_run_all(p, count_calls, hits);
    cr_assert(hits[0] == 100 && hits[1] == 100 && hits[2] == 50, "%d %d %d", hits[0], hits[1], hits[2]);
    sk_pool_free(p);
    sk_pool_set_limit(NULL, 2);
    sk_pool_wake(NULL);
    cr_assert_eq(sk_pool_threads(NULL), 1);
}

/* The pooled GEMM (split by panels or by rows) equals the single-thread one bit for bit. */
Test(kernels, gemm_pool_identical) {
    static const size_t shapes[][3] = {{128, 64, 192}, {100, 96, 20}, {9, 256, 300}, {64, 300, 33}};
    sk_pool *p = sk_pool_new(3);
    cr_assert(p);
    for (size_t s = 0; s < 4; s++) {
        size_t n = shapes[s][0], k = shapes[s][1], m = shapes[s][2];
        float *x = malloc(n * k * sizeof(float)), *w = malloc(m * k * sizeof(float));
        float *y1 = malloc(n * m * sizeof(float)), *y2 = malloc(n * m * sizeof(float));
        float *pk = aligned_alloc(64, sk_packed_floats(m, k) * sizeof(float));
        float *b = aligned_alloc(64, ((m + 15) / 16 * 16) * sizeof(float));
        for (size_t i = 0; i < n * k; i++) x[i] = frand();
        for (size_t i = 0; i < m * k; i++) w[i] = frand();
        for (size_t i = 0; i < (m + 15) / 16 * 16; i++) b[i] = i < m ? frand() : 0.0f;
        sk_pack(w, k, m, k, pk);
        sk_packed P = {pk, b, k, m, k * SK_PANEL, SK_PACK_F32, 0};
        sk_gemm(x, k, n, &P, y1, m);
        sk_gemm_pool(p, x, k, n, &P, y2, m);
        cr_assert(memcmp(y1, y2, n * m * sizeof(float)) == 0, "shape %zu differs", s);
        free(x);
        free(w);
        free(y1);
        free(y2);
        free(pk);
        free(b);
    }
    sk_pool_free(p);
}

/* F16 and BF16 panels give exactly the f32-panel result of the widened weights: each row
 * tile widening for itself (few rows), and with 32 rows or more the AVX-512 GEMM widening
 * each group of panels once into its scratch (several k blocks, a partial last group and
 * panel, a partial last row tile). */
Test(kernels, gemm_f16_bf16_panels_exact) {
    static const size_t shapes[][3] = {{7, 64, 17}, {13, 300, 48}, {9, 33, 70},
                                       {37, 300, 70}, {64, 520, 100}};
    gemm_fn fns[3];
    const char *names[3];
    const int nv = gemm_variants(fns, names);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        size_t n = shapes[s][0], k = shapes[s][1], m = shapes[s][2], nf = sk_packed_floats(m, k);
        float *x = malloc(n * k * sizeof(float)), *wf = malloc(m * k * sizeof(float));
        uint16_t *wh = malloc(m * k * sizeof(uint16_t));
        float *pf = aligned_alloc(64, nf * sizeof(float));
        uint16_t *ph = aligned_alloc(64, (nf * sizeof(uint16_t) + 63) / 64 * 64);
        float *y1 = malloc(n * m * sizeof(float)), *y2 = malloc(n * m * sizeof(float));
        for (size_t i = 0; i < n * k; i++) x[i] = frand();
        for (int t = SK_PACK_F16; t <= SK_PACK_BF16; t++) {
            for (size_t i = 0; i < m * k; i++) {
                float v = frand() * 3.0f;
                wh[i] = t == SK_PACK_F16 ? sk_f32_to_f16(v) : sk_f32_to_bf16(v);
                wf[i] = t == SK_PACK_F16 ? sk_f16_to_f32(wh[i]) : sk_bf16_to_f32(wh[i]);
            }
            sk_pack(wf, k, m, k, pf);
            sk_pack_u16(wh, k, m, k, ph);
            sk_packed Pf = {pf, NULL, k, m, k * SK_PANEL, SK_PACK_F32, 0};
            sk_packed Ph = {ph, NULL, k, m, k * SK_PANEL, t, 0};
            for (int f = 0; f < nv; f++) {
                fns[f](x, k, n, &Pf, y1, m);
                fns[f](x, k, n, &Ph, y2, m);
                cr_assert(memcmp(y1, y2, n * m * sizeof(float)) == 0,
                          "%s, type %d, shape %zu: 16-bit panels differ", names[f], t, s);
            }
        }
        free(x);
        free(wf);
        free(wh);
        free(pf);
        free(ph);
        free(y1);
        free(y2);
    }
}

static void rope_check(void (*rope)(float *, size_t, size_t, const float *, const float *)) {
    static const size_t Ds[] = {8, 16, 32, 64, 128, 12, 40};
    for (size_t di = 0; di < sizeof Ds / sizeof Ds[0]; di++) {
        size_t D = Ds[di], H = 3;
        float u1[3 * 128], u2[3 * 128], c[64], s[64];
        for (size_t i = 0; i < H * D; i++) u1[i] = u2[i] = frand() * 4.0f;
        for (size_t i = 0; i < D / 2; i++) {
            c[i] = cosf(0.37f * (float)i);
            s[i] = sinf(0.37f * (float)i);
        }
        sk_rope_ref(u1, H, D, c, s);
        rope(u2, H, D, c, s);
        /* bitwise with GCC (no contraction in ISO C mode); a compiler that contracts the
         * reference into FMAs may differ in the last bit */
        for (size_t i = 0; i < H * D; i++)
            cr_assert(fabsf(u1[i] - u2[i]) <= 1e-6f * fmaxf(1.0f, fabsf(u1[i])), "D=%zu i=%zu", D, i);
    }
}

#if defined(__x86_64__)
Test(kernels, rope_avx2) {
    if (!have_avx2()) {
        cr_skip_test("no AVX2+FMA on this CPU: skipped");
    }
    rope_check(sk_rope_avx2);
}

Test(kernels, rope_avx512) {
    if (!have_avx512()) cr_skip_test("no AVX-512F on this CPU: skipped");
    rope_check(sk_rope_avx512);
}
#endif

#if defined(__aarch64__)
Test(kernels, rope_neon) {
    if (!have_neon()) cr_skip_test("no NEON on this CPU: skipped");
    rope_check(sk_rope_neon);
}
#endif

Test(kernels, rope_reference) {
    /* the rotation itself: position 0 (cos 1, sin 0) is the identity; a quarter turn swaps */
    float v[4] = {1, 2, 3, 4}, one[2] = {1, 1}, zero[2] = {0, 0};
    sk_rope_ref(v, 1, 4, one, zero);
    cr_assert(v[0] == 1 && v[1] == 2 && v[2] == 3 && v[3] == 4);
    sk_rope_ref(v, 1, 4, zero, one);
    cr_assert(v[0] == -3 && v[1] == -4 && v[2] == 1 && v[3] == 2);
}

typedef void (*widen16_fn)(int, const void *, float *, size_t);

/* The reference against the f16/bf16 conversions, then fn (when not NULL) against the
 * reference, from an odd address. */
static void widen16_check(widen16_fn fn, const char *name) {
    enum { N = 1001 };
    static uint16_t h[N + 1];
    static float a[N], b[N];
    for (int t = SK_PACK_F16; t <= SK_PACK_BF16; t++) {
        for (size_t i = 0; i < N + 1; i++) {
            frand();
            h[i] = (uint16_t)(rng >> 7);
        }
        h[1] = t == SK_PACK_F16 ? 0x0001 : 0x0001;   /* smallest subnormal */
        h[2] = t == SK_PACK_F16 ? 0x8000 : 0x8000;   /* -0 */
        /* from an odd address: the source need not be aligned */
        const unsigned char *src = (const unsigned char *)h + 1;
        unsigned char tmp[2 * N];
        memcpy(tmp, src, sizeof tmp);
        sk_widen16_ref(t, tmp, a, N);
        for (size_t i = 0; i < N; i++) {
            uint16_t v = (uint16_t)(tmp[2 * i] | (tmp[2 * i + 1] << 8));
            float want = t == SK_PACK_F16 ? sk_f16_to_f32(v) : sk_bf16_to_f32(v);
            cr_assert(memcmp(&a[i], &want, 4) == 0, "ref %zu", i);
        }
        if (fn) {
            fn(t, src, b, N);
            /* NaN payloads may be quieted differently; every other value is exact */
            for (size_t i = 0; i < N; i++)
                cr_assert((isnan(a[i]) && isnan(b[i])) || memcmp(&a[i], &b[i], 4) == 0,
                          "type %d: %s differs at %zu: %g vs %g", t, name, i, (double)b[i],
                          (double)a[i]);
            /* every length (tails) from an odd address */
            for (size_t n = 0; n <= 40; n++) {
                float c[40];
                fn(t, src + 2 * n, c, n);
                for (size_t i = 0; i < n; i++)
                    cr_assert((isnan(a[n + i]) && isnan(c[i])) || memcmp(&a[n + i], &c[i], 4) == 0,
                              "type %d: %s n=%zu differs at %zu", t, name, n, i);
            }
        }
    }
}

Test(kernels, widen16) {
#if defined(__x86_64__)
    widen16_check(have_avx2() ? sk_widen16_avx2 : NULL, "avx2");
#else
    widen16_check(NULL, "");
#endif
}

#if defined(__aarch64__)
Test(kernels, widen16_neon) {
    if (!have_neon()) cr_skip_test("no NEON on this CPU: skipped");
    widen16_check(sk_widen16_neon, "neon");
}
#endif

#if defined(__x86_64__)
/* The AVX-512 pack (register transposes) writes exactly the reference's bytes, padding
 * included, for whole and partial panels and any input count. */
Test(kernels, pack_avx512_equals_ref) {
    if (!(sk_cpu_features() & SK_CPU_AVX512F)) cr_skip_test("no AVX-512F on this CPU");
    static const size_t shapes[][3] = {{16, 16, 16}, {32, 64, 70}, {17, 33, 40}, {5, 48, 48},
                                       {48, 15, 20}, {64, 100, 131}, {1, 1, 1}, {31, 17, 17}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        size_t m = shapes[s][0], k = shapes[s][1], ld = shapes[s][2];
        float *w = malloc(m * ld * sizeof(float));
        size_t nf = sk_packed_floats(m, k);
        float *a = malloc(nf * sizeof(float)), *b = malloc(nf * sizeof(float));
        for (size_t i = 0; i < m * ld; i++) w[i] = frand();
        memset(a, 0x5A, nf * sizeof(float));
        memset(b, 0xA5, nf * sizeof(float));
        sk_pack_ref(w, ld, m, k, a);
        sk_pack_avx512(w, ld, m, k, b);
        cr_assert(memcmp(a, b, nf * sizeof(float)) == 0, "shape %zu (%zu x %zu, ld %zu) differs",
                  s, m, k, ld);
        sk_pack(w, ld, m, k, b);
        cr_assert(memcmp(a, b, nf * sizeof(float)) == 0, "dispatched pack differs");
        free(w);
        free(a);
        free(b);
    }
}

#endif

typedef int (*all_finite_fn)(const float *, size_t);

/* The finiteness scan: every length up to 70 (whole vectors and tails), with one infinity,
 * NaN or huge-but-finite value at each position, and none. */
static void all_finite_check(all_finite_fn fn) {
    static const float specials[] = {INFINITY, -INFINITY, NAN, FLT_MAX, -FLT_MAX, 1e-45f};
    float x[70];
    for (size_t n = 0; n <= 70; n++) {
        for (size_t i = 0; i < n; i++) x[i] = frand();
        cr_assert_eq(fn(x, n), 1, "n=%zu", n);
        cr_assert_eq(sk_all_finite(x, n), 1);
        for (size_t at = 0; at < n; at++)
            for (size_t k = 0; k < sizeof specials / sizeof specials[0]; k++) {
                const float keep = x[at];
                x[at] = specials[k];
                const int want = sk_all_finite_ref(x, n);
                cr_assert_eq(want, isfinite(specials[k]) ? 1 : 0);
                cr_assert_eq(fn(x, n), want, "n=%zu at=%zu k=%zu", n, at, k);
                x[at] = keep;
            }
        /* values past n are not read */
        if (n < 70) {
            x[n] = NAN;
            cr_assert_eq(fn(x, n), 1);
        }
    }
}

#if defined(__x86_64__)
Test(kernels, all_finite_matches_reference) {
    if (!have_avx512()) cr_skip_test("no AVX-512F on this CPU: skipped");
    all_finite_check(sk_all_finite_avx512);
}
#endif

#if defined(__aarch64__)
Test(kernels, all_finite_neon) {
    if (!have_neon()) cr_skip_test("no NEON on this CPU: skipped");
    all_finite_check(sk_all_finite_neon);
    /* several blocks of 64 (the scan's early-exit unit), a bad value in each place */
    enum { N = 1000 };
    static float x[N + 1];
    static const size_t ats[] = {0, 15, 16, 63, 64, 65, 127, 128, 511, 960, 975, 976, 995, 999};
    for (size_t i = 0; i < N; i++) x[i] = frand() * 1e30f;
    x[N] = INFINITY;  /* past n: not read */
    cr_assert_eq(sk_all_finite_neon(x, N), 1);
    for (size_t k = 0; k < sizeof ats / sizeof ats[0]; k++)
        for (int sp = 0; sp < 2; sp++) {
            const float keep = x[ats[k]];
            x[ats[k]] = sp ? NAN : -INFINITY;
            cr_assert_eq(sk_all_finite_neon(x, N), 0, "at %zu", ats[k]);
            cr_assert_eq(sk_all_finite_neon(x, ats[k]), 1, "n = %zu", ats[k]);
            x[ats[k]] = keep;
        }
}
#endif

/* ---- the bf16x3 products on aarch64 BF16 matrix instructions (src/kernels/bf16_neon.c) ----
 * The layout and its scalar model are portable and checked on every machine against the f32
 * reference (the split's error bound); where BFMMLA runs (aarch64 with FEAT_BF16, not capped)
 * the kernel is held to the model, whose products it computes with f32 sums. A panel view
 * (what sk_gemm_pool hands a thread) gives the whole call's bits. */
static void neon_bf16_case(size_t n_rows, size_t n_in, size_t n_out, int wtype, int with_bias,
                           size_t ldx_pad) {
    const size_t ldx = n_in + ldx_pad, ldy = n_out + 3;
    float *w = malloc(n_out * n_in * sizeof(float)), *x = malloc(n_rows * ldx * sizeof(float));
    float *b = malloc((n_out + 16) * sizeof(float));
    for (size_t i = 0; i < n_out * n_in; i++) {
        w[i] = frand() * 0.1f;
        if (wtype == SK_PACK_NEON_BF16X2) w[i] = sk_bf16_to_f32(sk_f32_to_bf16(w[i]));
    }
    for (size_t i = 0; i < n_rows * ldx; i++) x[i] = frand() * (i % 41 == 0 ? 30.0f : 1.0f);
    for (size_t o = 0; o < n_out + 16; o++) b[o] = o < n_out ? frand() : 0.0f;
    float *pf = aligned_alloc(64, (sk_packed_floats(n_out, n_in) * 4 + 63) / 64 * 64);
    sk_pack_ref(w, n_in, n_out, n_in, pf);
    const sk_packed src = {pf, with_bias ? b : NULL, n_in, n_out, n_in * SK_PANEL, SK_PACK_F32, 0};
    const size_t elems = sk_neon_bf16_packed_elems(n_out, n_in);
    cr_assert(elems > 0);
    uint16_t *pw = aligned_alloc(64, (elems * sk_pack_elem_size(wtype) + 63) / 64 * 64);
    sk_pack_neon_bf16(&src, wtype, pw);
    const sk_packed nb = {pw, with_bias ? b : NULL, n_in, n_out, (n_in + 3) / 4 * 4 * SK_PANEL, wtype, 0};
    float *y0 = malloc(n_rows * ldy * sizeof(float)), *y1 = malloc(n_rows * ldy * sizeof(float));
    float *y2 = malloc(n_rows * ldy * sizeof(float));
    sk_gemm_neon_bf16_ref(x, ldx, n_rows, &nb, y0, ldy);
    sk_gemm(x, ldx, n_rows, &nb, y1, ldy);  /* the dispatcher: BFMMLA where usable */
    sk_gemm_ref(x, ldx, n_rows, n_in, w, with_bias ? b : NULL, n_out, y2, ldy);
    double worst_model = 0, worst_f32 = 0;
    for (size_t r = 0; r < n_rows; r++)
        for (size_t o = 0; o < n_out; o++) {
            double mag = with_bias ? fabs(b[o]) : 0;
            for (size_t i = 0; i < n_in; i++) mag += fabs((double)x[r * ldx + i] * w[o * n_in + i]);
            const double got = y1[r * ldy + o];
            const double e_model = fabs(got - y0[r * ldy + o]) / (mag + 1e-30);
            const double e_f32 = fabs(got - y2[r * ldy + o]) / (mag + 1e-30);
            worst_model = fmax(worst_model, e_model);
            worst_f32 = fmax(worst_f32, e_f32);
            /* f32 sums of exact products, but BFMMLA (without FEAT_EBF16) rounds to odd after
             * every pair of products: X3 rounds 6 times per 4 inputs into the running sum,
             * measured up to 1.0e-6 of sum |x w| at k = 1152 (a layout slip costs ~1) */
            cr_assert(e_model <= 2e-5, "bf16 gemm vs its model at (%zu, %zu): %.9g vs %.9g", r, o,
                      got, (double)y0[r * ldy + o]);
            /* X3 drops lo.lo (<= 2^-16 |x w|) and the rest of x, w; X2 only the rest of x;
             * plus the sums' rounding above */
            cr_assert(e_f32 <= (wtype == SK_PACK_NEON_BF16X3 ? 6e-5 : 4e-5),
                      "bf16 gemm vs f32 at (%zu, %zu): %.9g vs %.9g", r, o, got, (double)y2[r * ldy + o]);
        }
    /* a view of the panels from the second one on, as a pool thread gets it */
    if (n_out > 16) {
        sk_packed v = nb;
        v.data = (const char *)v.data + v.pstride * sk_pack_elem_size(v.wtype);
        v.n_out = n_out - 16;
        if (v.bias) v.bias += 16;
        float *yv = malloc(n_rows * ldy * sizeof(float));
        sk_gemm(x, ldx, n_rows, &v, yv + 16, ldy);
        for (size_t r = 0; r < n_rows; r++)
            cr_assert(memcmp(yv + r * ldy + 16, y1 + r * ldy + 16, (n_out - 16) * sizeof(float)) == 0,
                      "panel view, row %zu", r);
        free(yv);
    }
    cr_log_info("bf16 %s %zux%zux%zu (%s): worst |err|/sum|xw| %.2e vs model, %.2e vs f32",
                wtype == SK_PACK_NEON_BF16X3 ? "x3" : "x2", n_rows, n_in, n_out,
                sk_neon_bf16_usable() ? "BFMMLA" : "scalar model", worst_model, worst_f32);
    free(w);
    free(x);
    free(b);
    free(pf);
    free(pw);
    free(y0);
    free(y1);
    free(y2);
}

Test(kernels, neon_bf16_gemm_against_its_model_and_f32) {
    /* rows: one, an odd pair, 4-row blocks with a lone pair left; inputs that end inside a
     * group of 4; partial panels; more rows than one chunk of split activations (k = 1152:
     * 56 rows a chunk) */
    const size_t shapes[][3] = {{1, 32, 16}, {3, 5, 3}, {6, 64, 64}, {17, 97, 33},
                                {40, 100, 80}, {130, 1152, 21}, {5, 768, 70}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int x3 = 0; x3 < 2; x3++)
            neon_bf16_case(shapes[i][0], shapes[i][1], shapes[i][2],
                           x3 ? SK_PACK_NEON_BF16X3 : SK_PACK_NEON_BF16X2, (int)(i % 2), i % 3);
}

/* BFMMLA is taken exactly where the CPU has FEAT_BF16 and nothing caps it: aarch64 built by
 * a compiler that has the kernel (SK_KERNELS_HAVE_NEON_BF16) with the feature, unless
 * SKYCMD_KERNELS is scalar or neon (or a test caps the level); never on other architectures. */
Test(kernels, neon_bf16_dispatch) {
    const char *env = getenv("SKYCMD_KERNELS");
    const int capped = env && (!strcmp(env, "scalar") || !strcmp(env, "neon"));
#if SK_KERNELS_HAVE_NEON_BF16
    const int want = (sk_cpu_features() & SK_CPU_ARM_BF16) && !capped;
#else
    const int want = 0;
    (void)capped;
#endif
    cr_assert_eq(sk_neon_bf16_usable(), want, "BFMMLA usable: %d, want %d (cpu: %s, SKYCMD_KERNELS=%s)",
                 sk_neon_bf16_usable(), want, skycmd_cpu_features(), env ? env : "");
    sk_kernels_force_level(SK_LEVEL_SCALAR);
    cr_assert_eq(sk_neon_bf16_usable(), 0, "the scalar level turns BFMMLA off");
    sk_kernels_force_level(-1);
    cr_assert_eq(sk_neon_bf16_usable(), want);
    cr_log_info("BFMMLA here: %s (cpu: %s)", want ? "yes" : "no", skycmd_cpu_features());
}
