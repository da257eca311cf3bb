/*
 * test_amx.c - the AMX kernels (src/kernels/amx.c) against the scalar references.
 *
 * Every test here needs the tile unit and the tile state granted by the OS; on a machine
 * without them each test is skipped with the reason printed (Criterion reports it as
 * skipped, never as passed). The int8 GEMM must equal sk_q8_gemm_ref bit for bit (the
 * contract of q8.h), on shapes with row counts around the 16-row tile (the tail rows take
 * the VNNI kernel), partial panels, odd and even block counts, both activation modes, with
 * and without bias, and weight quants including -128; so must the row-scaled kernel
 * (--q8-row: whole-row sums in the tiles), on the same kinds of shapes and output ranges
 * (the largest sums the row limit allows: tests/test_quant.c, whose 32 rows the dispatcher
 * gives to the tiles on an AMX CPU). One test runs everywhere:
 * SKYCMD_WEIGHTS_BF16X3 (the CLI's default) must be the tiles where they are usable and
 * exactly the f32 path elsewhere, and the library's own default stays the f32 path.
 */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "skycmd.h"
#include "gguf/gguf.h"
#include "kernels/cpu.h"
#include "kernels/kernels.h"
#include "kernels/q8.h"
#include "api/handles.h"
#include "model/model_internal.h"
#include "quant/outlier_calib.h"
#include "test_util.h"

#if defined(__x86_64__)  /* the AMX tiles: x86-64 only (not compiled, so not skipped, elsewhere) */
static uint32_t g_seed = 12345;
static uint32_t rnd(void) {
    g_seed = g_seed * 1664525u + 1013904223u;
    return g_seed >> 8;
}
static float frand(void) { return (float)(rnd() % 20001) / 10000.0f - 1.0f; }

static void need_amx_int8(void) {
    if (!(sk_cpu_features() & SK_CPU_AMX_INT8))
        cr_skip_test("no AMX-INT8 tile state on this CPU/OS (features: %s): skipped",
                     skycmd_cpu_features());
}

/* Q8_0 blocks in INPUT_BLOCK_MAJOR order, random scales and quants (-128 included). */
static uint8_t *random_q8(size_t n_out, size_t n_in) {
    size_t nb = n_out * (n_in / 32);
    uint8_t *b = malloc(nb * 34);
    for (size_t i = 0; i < nb; i++) {
        uint16_t d = sk_f32_to_f16(0.001f + (float)(rnd() % 1000) / 50000.0f);
        b[i * 34] = (uint8_t)d;
        b[i * 34 + 1] = (uint8_t)(d >> 8);
        for (int j = 0; j < 32; j++) b[i * 34 + 2 + j] = (uint8_t)(rnd() & 0xff);
    }
    return b;
}

/* got (the AMX kernel) equals want (the reference) bit for bit; what names the case. */
static void expect_bit_identical(const float *want, const float *got, size_t ny, size_t n_out,
                                 const char *what) {
    for (size_t i = 0; i < ny; i++)
        cr_assert(memcmp(&want[i], &got[i], sizeof(float)) == 0,
                  "amx differs from the reference at row %zu output %zu: %.9g vs %.9g (%s)",
                  i / n_out, i % n_out, (double)got[i], (double)want[i], what);
}

/* The AMX kernel against the reference over outputs [o0, o1). mode SK_Q8_ACT_Q8 / _Q8X2:
 * random Q8_0 blocks (every scale and quant, -128 included); SK_Q8_ACT_ROW: sk_q8_build_rows
 * of a random matrix with a few large weights (so the row scales differ), i.e. the
 * row-scaled path; SK_Q8_ACT_ROW2: the same weights, two-pass row activations, the fused
 * kernel (sk_q8_gemm_amx_row2) against sk_q8_gemm_row2_ref. */
static void q8_amx_equals_ref(size_t n_rows, size_t n_in, size_t n_out, int mode, int with_bias,
                              size_t o0, size_t o1) {
    float *bias = malloc(n_out * sizeof(float)), *x = malloc(n_rows * n_in * sizeof(float));
    for (size_t o = 0; o < n_out; o++) bias[o] = frand();
    uint8_t *w = NULL, *pan = NULL;
    sk_q8_owned rows = {0};
    sk_q8_packed p;
    const int row = mode == SK_Q8_ACT_ROW || mode == SK_Q8_ACT_ROW2;
    void (*ref)(const sk_q8_act *, const sk_q8_packed *, size_t, size_t, float *, size_t) =
        mode == SK_Q8_ACT_ROW2 ? sk_q8_gemm_row2_ref : sk_q8_gemm_ref;
    void (*amx)(const sk_q8_act *, const sk_q8_packed *, size_t, size_t, float *, size_t) =
        mode == SK_Q8_ACT_ROW2 ? sk_q8_gemm_amx_row2 : sk_q8_gemm_amx;
    if (row) {
        float *W = malloc(n_out * n_in * sizeof(float));
        for (size_t i = 0; i < n_out * n_in; i++) W[i] = frand() * (i % 41 == 0 ? 3.0f : 0.2f);
        sk_err e = {0};
        cr_assert_eq(sk_q8_build_rows(W, n_out, n_in, with_bias ? bias : NULL, NULL, "t", &rows,
                                      NULL, NULL, &e), 0, "%s", e.msg);
        free(W);
        p = rows.w.p;
    } else {
        w = random_q8(n_out, n_in);
        const size_t pb = sk_q8_panel_bytes(n_out, n_in);
        pan = aligned_alloc(64, (pb + 63) / 64 * 64);
        sk_q8_pack_panels(w, n_out, n_in, pan);
        p = (sk_q8_packed){pan, n_in, n_out, with_bias ? bias : NULL, NULL, 0};
    }
    for (size_t i = 0; i < n_rows * n_in; i++) x[i] = frand() * (i % 37 == 0 ? 20.0f : 1.0f);
    /* an all-extreme row: the largest int32 block sums the kernels can meet */
    for (size_t i = 0; i < n_in && n_rows > 2; i++) x[2 * n_in + i] = (i & 1) ? -1.0f : 1.0f;
    sk_q8_act a = {0};
    cr_assert_eq(sk_q8_act_reserve(&a, n_rows, n_in), 0);
    sk_q8_quantize_act(x, n_in, n_rows, n_in, mode, NULL, &a);
    const size_t ny = n_rows * n_out;
    float *y0 = malloc(ny * sizeof(float)), *y1 = malloc(ny * sizeof(float));
    for (size_t i = 0; i < ny; i++) y0[i] = y1[i] = -7.0f;  /* outside [o0, o1) untouched */
    ref(&a, &p, o0, o1, y0, n_out);
    amx(&a, &p, o0, o1, y1, n_out);
    char what[96];
    snprintf(what, sizeof what, "%zux%zux%zu mode %d bias %d outputs [%zu, %zu)", n_rows, n_in,
             n_out, mode, with_bias, o0, o1);
    expect_bit_identical(y0, y1, ny, n_out, what);
    /* row-scaled with an even block count: the tiles' pair order (K = 64 products) gives
     * the same bits, through the tile kernel and through the reference's reading of it */
    if (row && (n_in / 32) % 2 == 0) {
        cr_assert_eq(sk_q8_relayout_pairs(&p, rows.panels), 1);
        cr_assert(p.pairs);
        for (size_t i = 0; i < ny; i++) y1[i] = -7.0f;
        amx(&a, &p, o0, o1, y1, n_out);
        strcat(what, " pairs");
        expect_bit_identical(y0, y1, ny, n_out, what);
        for (size_t i = 0; i < ny; i++) y1[i] = -7.0f;
        ref(&a, &p, o0, o1, y1, n_out);
        strcat(what, " ref");
        expect_bit_identical(y0, y1, ny, n_out, what);
    } else if (row) {
        cr_assert_eq(sk_q8_relayout_pairs(&p, rows.panels), 0, "odd block count reordered");
    }
    sk_q8_act_free(&a);
    sk_q8_owned_free(&rows);
    free(pan);
    free(w);
    free(bias);
    free(x);
    free(y0);
    free(y1);
}

Test(amx, q8_gemm_bit_identical_to_reference) {
    need_amx_int8();
    const size_t shapes[][3] = {{16, 32, 16},  {16, 64, 5},   {17, 96, 33},  {31, 128, 48},
                                {32, 768, 64}, {48, 256, 17}, {5, 384, 20},  {130, 768, 96},
                                {64, 1152, 40}, {32, 1152, 656}};  /* last: 2 panel groups */
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int mode = 0; mode < 2; mode++)
            for (int b = 0; b < 2; b++)
                q8_amx_equals_ref(shapes[i][0], shapes[i][1], shapes[i][2], mode, b, 0, shapes[i][2]);
}

Test(amx, q8_gemm_output_ranges) {
    need_amx_int8();
    /* the pool splits by panels: [o0, o1) with o0 a multiple of 16 */
    for (int mode = 0; mode < 2; mode++) {
        q8_amx_equals_ref(40, 256, 80, mode, 1, 16, 48);
        q8_amx_equals_ref(40, 256, 80, mode, 0, 64, 80);
        q8_amx_equals_ref(16, 64, 70, mode, 1, 64, 70);
    }
}

Test(amx, q8_dispatch_picks_amx_and_obeys_the_cap) {
    need_amx_int8();
    if (!sk_amx_usable()) {
        cr_assert(strstr(skycmd_cpu_features(), "amx-int8") == NULL, "%s", skycmd_cpu_features());
        cr_skip_test("SKYCMD_KERNELS caps the kernels below AMX: skipped");
    }
    cr_assert(strstr(skycmd_cpu_features(), "amx-int8") != NULL, "%s", skycmd_cpu_features());
    cr_assert_str_eq(sk_q8_kernel_name(), "amx");
    sk_q8_force_kernel(2);
    cr_assert_str_eq(sk_q8_kernel_name(), "vnni");
    sk_q8_force_kernel(-1);
    cr_assert_str_eq(sk_q8_kernel_name(), "amx");
}

/* ---------------------------------------------------- row-scaled int8 (--q8-row) ---- */

Test(amx, q8_rows_bit_identical_to_reference) {
    need_amx_int8();
    /* row counts: one 16-row block, 32-row pairs, a pair and a lone block, tails of 1-15
     * rows (tiles configured to that many rows); output counts: one panel, panel pairs and
     * a lone last panel, partial panels, several panel groups of ~384 KB (2304 outputs x
     * 768 inputs: 144 panels of 13.5 KB, 6 groups) */
    const size_t shapes[][3] = {{16, 32, 16},  {16, 64, 5},    {17, 96, 33},   {31, 128, 48},
                                {32, 768, 64}, {48, 256, 17},  {5, 384, 20},   {130, 768, 96},
                                {64, 1152, 40}, {32, 1152, 656}, {145, 768, 2304}, {33, 2304, 24}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int b = 0; b < 2; b++)
            for (int mode = SK_Q8_ACT_ROW; mode <= SK_Q8_ACT_ROW2; mode++)
                q8_amx_equals_ref(shapes[i][0], shapes[i][1], shapes[i][2], mode, b, 0,
                                  shapes[i][2]);
}

Test(amx, q8_rows_output_ranges) {
    need_amx_int8();
    for (int mode = SK_Q8_ACT_ROW; mode <= SK_Q8_ACT_ROW2; mode++) {
        q8_amx_equals_ref(40, 256, 80, mode, 1, 16, 48);
        q8_amx_equals_ref(40, 256, 80, mode, 0, 64, 80);
        q8_amx_equals_ref(16, 64, 70, mode, 1, 64, 70);
        q8_amx_equals_ref(96, 768, 800, mode, 1, 48, 784);
    }
}

/* ---------------------------------------------------------------- BF16 tiles ---- */

static void need_amx_bf16(void) {
    const int f = sk_cpu_features();
    if (!(f & SK_CPU_AMX_BF16) || !(f & SK_CPU_AVX512BF16))
        cr_skip_test("no AMX-BF16 tile state or AVX512-BF16 on this CPU/OS (features: %s): skipped",
                     skycmd_cpu_features());
}

/* W ([n_out][n_in], f32 values or bf16-exact when bf16_exact) packed as F32 panels, then into
 * the AMX layout; the kernel against its scalar model (same products, double sums: only the
 * f32 accumulation differs) and against the plain f32 reference (the split's error). */
static void bf16_case(size_t n_rows, size_t n_in, size_t n_out, int wtype, int with_bias) {
    float *w = malloc(n_out * n_in * sizeof(float)), *x = malloc(n_rows * n_in * sizeof(float));
    float *b = malloc((n_out + 16) * sizeof(float));
    for (size_t i = 0; i < n_out * n_in; i++) {
        w[i] = frand() * 0.1f;
        if (wtype == SK_PACK_AMX_BF16X2) w[i] = sk_bf16_to_f32(sk_f32_to_bf16(w[i]));
    }
    for (size_t i = 0; i < n_rows * n_in; i++) x[i] = frand() * (i % 41 == 0 ? 30.0f : 1.0f);
    for (size_t o = 0; o < n_out + 16; o++) b[o] = o < n_out ? frand() : 0.0f;
    float *pf = aligned_alloc(64, (sk_packed_floats(n_out, n_in) * 4 + 63) / 64 * 64);
    sk_pack_ref(w, n_in, n_out, n_in, pf);
    sk_packed src = {pf, with_bias ? b : NULL, n_in, n_out, n_in * SK_PANEL, SK_PACK_F32, 0};
    const size_t elems = sk_amx_bf16_packed_elems(n_out, n_in);
    cr_assert(elems > 0);
    uint16_t *pa = aligned_alloc(64, (elems * sk_pack_elem_size(wtype) + 63) / 64 * 64);
    sk_pack_amx_bf16(&src, wtype, pa);
    sk_packed amx = {pa, with_bias ? b : NULL, n_in, n_out, (n_in + 31) / 32 * 32 * SK_PANEL, wtype, 0};
    const size_t ldy = n_out + 3;
    float *y0 = malloc(n_rows * ldy * sizeof(float)), *y1 = malloc(n_rows * ldy * sizeof(float));
    float *y2 = malloc(n_rows * ldy * sizeof(float));
    sk_gemm_amx_bf16_ref(x, n_in, n_rows, &amx, y0, ldy);
    sk_gemm_amx_bf16(x, n_in, n_rows, &amx, y1, ldy);
    sk_gemm_ref(x, n_in, n_rows, n_in, w, with_bias ? b : NULL, n_out, y2, ldy);
    double worst_model = 0, worst_f32 = 0;
    for (size_t r = 0; r < n_rows; r++)
        for (size_t o = 0; o < n_out; o++) {
            double mag = 0;
            for (size_t i = 0; i < n_in; i++) mag += fabs((double)x[r * n_in + i] * w[o * n_in + i]);
            mag += with_bias ? fabs(b[o]) : 0;
            const double got = y1[r * ldy + o];
            /* f32 accumulation of n_in exact products: well within n_in * 2^-24 * mag */
            const double e_model = fabs(got - y0[r * ldy + o]) / (mag + 1e-30);
            const double e_f32 = fabs(got - y2[r * ldy + o]) / (mag + 1e-30);
            if (e_model > worst_model) worst_model = e_model;
            if (e_f32 > worst_f32) worst_f32 = e_f32;
            cr_assert(e_model <= 1e-6, "amx vs its model at (%zu, %zu): %.9g vs %.9g", r, o, got,
                      (double)y0[r * ldy + o]);
            /* the split: X3 drops lo.lo (<= 2^-16 |x w|) and the rest of x, w (2^-17 each);
             * X2 loses only the rest of x */
            cr_assert(e_f32 <= (wtype == SK_PACK_AMX_BF16X3 ? 4e-5 : 2e-5),
                      "amx vs f32 at (%zu, %zu): %.9g vs %.9g", r, o, got, (double)y2[r * ldy + o]);
        }
    cr_log_info("bf16 %s %zux%zux%zu: worst |err|/sum|xw| %.2e vs model, %.2e vs f32",
                wtype == SK_PACK_AMX_BF16X3 ? "x3" : "x2", n_rows, n_in, n_out, worst_model, worst_f32);
    free(w);
    free(x);
    free(b);
    free(pf);
    free(pa);
    free(y0);
    free(y1);
    free(y2);
}

Test(amx, bf16_gemm_against_its_model_and_f32) {
    need_amx_bf16();
    const size_t shapes[][3] = {{1, 32, 16}, {16, 64, 64}, {17, 96, 33}, {40, 100, 80},
                                {130, 768, 96}, {5, 1152, 70}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int x3 = 0; x3 < 2; x3++)
            for (int b = 0; b < 2; b++)
                bf16_case(shapes[i][0], shapes[i][1], shapes[i][2],
                          x3 ? SK_PACK_AMX_BF16X3 : SK_PACK_AMX_BF16X2, b);
}

/* A random [n_out][n_in] matrix (to *w) in the X3 tile layout, through the scalar packer
 * or (fast) the AVX-512-BF16 one. */
static uint16_t *random_x3(size_t n_out, size_t n_in, int fast, float **w) {
    *w = malloc(n_out * n_in * sizeof(float));
    for (size_t i = 0; i < n_out * n_in; i++) (*w)[i] = frand();
    float *pf = aligned_alloc(64, sk_packed_floats(n_out, n_in) * 4);
    sk_pack_ref(*w, n_in, n_out, n_in, pf);
    sk_packed src = {pf, NULL, n_in, n_out, n_in * SK_PANEL, SK_PACK_F32, 0};
    uint16_t *pa = aligned_alloc(64, sk_amx_bf16_packed_elems(n_out, n_in) * 4);
    if (fast)
        sk_pack_amx_bf16_f32(&src, SK_PACK_AMX_BF16X3, pa);
    else
        sk_pack_amx_bf16(&src, SK_PACK_AMX_BF16X3, pa);
    free(pf);
    return pa;
}

Test(amx, bf16_gemm_pool_views) {
    need_amx_bf16();
    /* sk_gemm on a panel view (what sk_gemm_pool hands each thread) equals the whole call */
    const size_t n_rows = 20, n_in = 64, n_out = 96;
    float *w, *x = malloc(n_rows * n_in * sizeof(float));
    uint16_t *pa = random_x3(n_out, n_in, 0, &w);
    for (size_t i = 0; i < n_rows * n_in; i++) x[i] = frand();
    sk_packed amx = {pa, NULL, n_in, n_out, n_in * SK_PANEL, SK_PACK_AMX_BF16X3, 0};
    float y0[20 * 96], y1[20 * 96];
    sk_gemm(x, n_in, n_rows, &amx, y0, n_out);
    sk_packed v = amx;
    v.data = (const char *)v.data + 2 * v.pstride * sk_pack_elem_size(v.wtype);
    v.n_out = n_out - 32;
    sk_gemm(x, n_in, n_rows, &amx, y1, n_out);
    sk_gemm(x, n_in, n_rows, &v, y1 + 32, n_out);
    cr_assert(memcmp(y0, y1, sizeof y0) == 0);
    free(w);
    free(x);
    free(pa);
}

/* A view of inputs s0.. (a 32-step boundary) of a packed matrix, keeping its pstride, as
 * attention takes a block's key range of the values: the kernel against its scalar model on
 * the same view, and against f32 on the inputs the view covers (6 panels: a group of 4 and
 * one of 2, so the panel step inside a group is the view's pstride, not its own length). */
Test(amx, bf16_gemm_input_range_views) {
    need_amx_bf16();
    const size_t n_rows = 19, n_in = 160, n_out = 90, s0 = 64, nk = 70;
    float *w, *x = malloc(n_rows * nk * sizeof(float));
    uint16_t *pa = random_x3(n_out, n_in, 1, &w);
    for (size_t i = 0; i < n_rows * nk; i++) x[i] = frand();
    sk_packed v = {pa + s0 / 32 * 1024, NULL, nk, n_out, n_in * SK_PANEL, SK_PACK_AMX_BF16X3, 0};
    float *y0 = malloc(n_rows * n_out * 4), *y1 = malloc(n_rows * n_out * 4);
    sk_gemm_amx_bf16_ref(x, nk, n_rows, &v, y0, n_out);
    sk_amx_bf16_begin();
    sk_gemm_amx_bf16_run(x, nk, n_rows, &v, y1, n_out);
    sk_amx_bf16_end();
    for (size_t r = 0; r < n_rows; r++)
        for (size_t o = 0; o < n_out; o++) {
            double f = 0, mag = 0;
            for (size_t i = 0; i < nk; i++) {
                f += (double)x[r * nk + i] * w[o * n_in + s0 + i];
                mag += fabs((double)x[r * nk + i] * w[o * n_in + s0 + i]);
            }
            const double got = y1[r * n_out + o];
            cr_assert(fabs(got - y0[r * n_out + o]) <= 1e-6 * mag, "(%zu, %zu) vs model", r, o);
            cr_assert(fabs(got - f) <= 4e-5 * mag, "(%zu, %zu): %.9g vs f32 %.9g", r, o, got, f);
        }
    free(w);
    free(x);
    free(pa);
    free(y0);
    free(y1);
}

/* The vector packer of attention (sk_pack_amx_bf16_f32) writes the scalar packer's bytes:
 * packed panels and row-major views (rstride: attention's values in place), partial panels
 * (masked: a view reads nothing past its columns), inputs that end inside a 32-step. */
Test(amx, bf16_fast_packer_equals_the_scalar_one) {
    need_amx_bf16();
    const size_t shapes[][3] = {/* n_out, n_in, view row stride (0: packed) */
                                {16, 32, 0}, {37, 70, 0}, {64, 768, 0}, {5, 3, 0},
                                {64, 300, 200}, {40, 129, 72}, {8, 33, 24}};
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        const size_t n_out = shapes[t][0], n_in = shapes[t][1], ld = shapes[t][2];
        float *src;
        sk_packed p;
        if (ld) {  /* [n_in][ld] row-major, the view takes columns 0..n_out */
            src = malloc(n_in * ld * sizeof(float));
            for (size_t i = 0; i < n_in * ld; i++) src[i] = frand() * (i % 13 ? 1.0f : 1e3f);
            p = (sk_packed){src, NULL, n_in, n_out, SK_PANEL, SK_PACK_F32, ld};
        } else {
            const size_t nf = sk_packed_floats(n_out, n_in);
            src = aligned_alloc(64, (nf * 4 + 63) / 64 * 64);
            for (size_t i = 0; i < nf; i++) src[i] = frand() * (i % 7 ? 1.0f : 1e-3f);
            p = (sk_packed){src, NULL, n_in, n_out, n_in * SK_PANEL, SK_PACK_F32, 0};
        }
        for (int x3 = 0; x3 < 2; x3++) {
            const int wt = x3 ? SK_PACK_AMX_BF16X3 : SK_PACK_AMX_BF16X2;
            const size_t bytes = sk_amx_bf16_packed_elems(n_out, n_in) * sk_pack_elem_size(wt);
            uint16_t *a = aligned_alloc(64, (bytes + 63) / 64 * 64);
            uint16_t *b = aligned_alloc(64, (bytes + 63) / 64 * 64);
            memset(a, 0xa5, bytes);
            memset(b, 0x5a, bytes);
            sk_pack_amx_bf16(&p, wt, a);
            sk_pack_amx_bf16_f32(&p, wt, b);
            cr_assert(memcmp(a, b, bytes) == 0, "%zu x %zu (ld %zu) %s differs", n_out, n_in, ld,
                      x3 ? "x3" : "x2");
            free(a);
            free(b);
        }
        free(src);
    }
}

/* The tiles usable by the model's load: AMX-BF16 and nothing capping the kernels below it. */
static void need_bf16_tiles(void) {
    need_amx_bf16();
    if (!sk_amx_usable()) cr_skip_test("SKYCMD_KERNELS caps the kernels below AMX: skipped");
}

#endif
/* A random s1-micro model with matrices of `type` at dir/name.gguf (its path to path). */
static void random_preset(const char *dir, const char *name, const char *preset, int type,
                          char *path, size_t cap) {
    snprintf(path, cap, "%s/%s.gguf", dir, name);
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_TYPE, type), SKYCMD_OK);
    cr_assert_eq(skycmd_random_model(preset, path, o, err), SKYCMD_OK, "%s",
                 skycmd_error_message(err));
    skycmd_options_free(o);
    skycmd_error_free(err);
}

#if defined(__x86_64__)  /* the AMX tiles: x86-64 only (not compiled, so not skipped, elsewhere) */
/* The attention products on the tiles (model.attn_tiles: the bf16x3 and int8 modes on AMX)
 * against the f32 attention of the same f32 model: only those products differ, so the
 * logits agree to the bf16x3 class. 300-token sequences run the windowed layers (key ranges
 * that start off the tiles' 32-key grid) and the global ones; a batch of three lengths, on
 * one thread and on a pool of two (units split by query blocks), which must give the same
 * bits, as must a sequence alone. */
Test(amx, attention_on_tiles_matches_f32, .fini = tu_scratch_remove) {
    need_bf16_tiles();
    char dir[512], path[600];
    tu_scratch_make(dir, sizeof dir, "amx", "attn");
    random_preset(dir, "m", "s1-micro", SKYCMD_TYPE_F32, path, sizeof path);
    sk_err e = {0};
    sk_gguf *g = NULL;
    cr_assert_eq(sk_gguf_open_file(path, &g, &e), SKYCMD_OK, "%s", e.msg);
    sk_model *m = NULL;
    cr_assert_eq(sk_model_load(g, SKYCMD_WEIGHTS_F32, &m, &e), SKYCMD_OK, "%s", e.msg);
    cr_assert(m->hp.n_swa > 0 && m->hp.n_swa < 150, "the preset has windowed layers");
    sk_scratch *ref = sk_scratch_new(m);
    m->attn_tiles = 1;
    sk_scratch *til = sk_scratch_new(m);
    m->attn_tiles = 0;
    cr_assert(ref && til);
    const size_t lens[3] = {300, 77, 190};
    static int32_t ids[3][300];
    int32_t markers[3][3];
    static float want[3][3], got[3][3];
    sk_seq seqs[3], seqt[3];
    for (int i = 0; i < 3; i++) {
        for (size_t t = 0; t < lens[i]; t++) ids[i][t] = (int32_t)(5 + rnd() % 4000);
        for (int k = 0; k < 3; k++) markers[i][k] = (int32_t)(lens[i] / 4 * (size_t)(k + 1));
        seqs[i] = (sk_seq){ids[i], lens[i], i, markers[i], 3, want[i], NULL, NULL};
        seqt[i] = (sk_seq){ids[i], lens[i], i, markers[i], 3, got[i], NULL, NULL};
    }
    cr_assert_eq(sk_model_forward_batch(m, ref, seqs, 3, &e), SKYCMD_OK, "%s", e.msg);
    static float first[3][3];
    for (int nth = 1; nth <= 2; nth++) {
        sk_pool *pool = nth > 1 ? sk_pool_new(nth) : NULL;
        sk_scratch_set_pool(til, pool);
        memset(got, 0, sizeof got);
        cr_assert_eq(sk_model_forward_batch(m, til, seqt, 3, &e), SKYCMD_OK, "%s", e.msg);
        double worst = 0;
        int differ = 0;
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 3; k++) {
                const double d = fabs((double)got[i][k] - want[i][k]) / fmax(1.0, fabs(want[i][k]));
                if (d > worst) worst = d;
                differ |= got[i][k] != want[i][k];
            }
        cr_log_info("attention on tiles, %d thread(s): worst logit difference %.2e", nth, worst);
        cr_assert(worst <= 1e-4, "logits %.3e apart", worst);
        cr_assert(differ, "the tile attention gave f32's bits: it did not run");
        /* the forward pass's contract: bitwise the same whatever the threads or the batch */
        if (nth == 1) memcpy(first, got, sizeof got);
        cr_assert(memcmp(first, got, sizeof got) == 0, "%d threads differ from one", nth);
        float alone[3];
        sk_seq one = {ids[0], lens[0], 0, markers[0], 3, alone, NULL, NULL};
        cr_assert_eq(sk_model_forward_batch(m, til, &one, 1, &e), SKYCMD_OK, "%s", e.msg);
        cr_assert(memcmp(alone, got[0], sizeof alone) == 0, "alone differs from in the batch");
        sk_scratch_set_pool(til, NULL);
        sk_pool_free(pool);
    }
    sk_scratch_free(ref);
    sk_scratch_free(til);
    sk_model_free(m);
    sk_gguf_close(g);
}

/* ---------------------------------------------------------------- the model mode ---- */

static void keep_log(void *ud, int level, const char *msg) {
    (void)level;
    char *buf = ud;
    if (strstr(msg, "bf16x3")) snprintf(buf, 512, "%s", msg);
}

/* SKYCMD_WEIGHTS_BF16X3 on an f32 and a bf16 file: the load says the encoder and the head
 * went to the tiles (accuracy against laya: the golden suite with SKYCMD_GOLDEN_WEIGHTS=bf16x3). */
Test(amx, bf16x3_weights_mode_moves_the_encoder, .fini = tu_scratch_remove) {
    need_bf16_tiles();
    char dir[512], path[600];
    tu_scratch_make(dir, sizeof dir, "amx", "bf16x3");
    const int types[] = {SKYCMD_TYPE_F32, SKYCMD_TYPE_BF16};
    for (int t = 0; t < 2; t++) {
        random_preset(dir, t ? "bf16" : "f32", "s1-micro", types[t], path, sizeof path);
        skycmd_error *err = skycmd_error_new();
        char msg[512] = "";
        skycmd_options *o = skycmd_options_new();
        cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_WEIGHTS, SKYCMD_WEIGHTS_BF16X3), SKYCMD_OK);
        cr_assert_eq(skycmd_options_set_log(o, keep_log, msg), SKYCMD_OK);
        skycmd_model *m = NULL;
        cr_assert_eq(skycmd_model_open(path, o, &m, err), SKYCMD_OK, "%s", skycmd_error_message(err));
        /* s1-micro: 6 layers x 4 encoder matrices; 2 head blocks: 5 + 4 (the last block's kv
         * stays float panels for the folded attention) */
        cr_assert(strstr(msg, "24 encoder and 9 decision-head matrices and the attention "
                              "products on AMX-BF16 tiles") != NULL, "log: %s", msg);
        skycmd_model_free(m);
        skycmd_options_free(o);
        skycmd_error_free(err);
    }
}

#endif
/* One request's probabilities (every option of every question, in order) from a model
 * opened with weights mode `mode` (-1: the option left unset, the library's default);
 * the mode the model reports in effect to *in_effect. */
static size_t mode_probs(const char *path, int mode, const char *body, double *p, size_t cap,
                         int64_t *in_effect) {
    skycmd_error *err = skycmd_error_new();
    skycmd_options *o = NULL;
    if (mode >= 0) {
        o = skycmd_options_new();
        cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_WEIGHTS, mode), SKYCMD_OK);
    }
    skycmd_model *m = NULL;
    skycmd_session *s = NULL;
    skycmd_request *rq = NULL;
    skycmd_response *rs = NULL;
    cr_assert_eq(skycmd_model_open(path, o, &m, err), SKYCMD_OK, "%s", skycmd_error_message(err));
    cr_assert_eq(skycmd_model_get_int(m, "weights", in_effect), SKYCMD_OK);
    cr_assert_eq(skycmd_session_new(m, &s), SKYCMD_OK);
    cr_assert_eq(skycmd_request_parse(body, strlen(body), &rq), SKYCMD_OK, "%s", skycmd_request_errmsg(rq));
    cr_assert_eq(skycmd_decide(s, rq, &rs), SKYCMD_OK, "%s", skycmd_session_errmsg(s));
    size_t n = 0;
    for (size_t i = 0; i < skycmd_response_answer_count(rs); i++)
        for (size_t k = 0; k < skycmd_response_option_count(rs, i); k++) {
            cr_assert_lt(n, cap);
            p[n++] = skycmd_response_option_probability(rs, i, k);
        }
    skycmd_response_free(rs);
    skycmd_request_free(rq);
    skycmd_session_free(s);
    skycmd_model_free(m);
    skycmd_options_free(o);
    skycmd_error_free(err);
    return n;
}

/* SKYCMD_WEIGHTS_BF16X3, the CLI's default: the BF16 unit (AMX tiles, else BFMMLA) where one
 * is usable, f32's answers within the golden 1e-4; elsewhere (no AMX, or SKYCMD_KERNELS=avx512 as CI's non-AMX stage
 * runs this) exactly the F32 path's bits. The library's default (SKYCMD_OPT_WEIGHTS unset)
 * is the F32 path on every CPU, as documented (docs/abi.md: a documented call's behaviour
 * does not change). Not skipped anywhere: each machine checks its own branch. */
static void check_bf16x3_mode(const char *preset, int type, int pairs) {
    char dir[512], path[600];
    tu_scratch_make(dir, sizeof dir, "amx", "modes");
    random_preset(dir, "m", preset, type, path, sizeof path);
    const int tiles = sk_bf16x3_unit() != SK_BF16_UNIT_NONE;
    char body[4096];
    int len = snprintf(body, sizeof body, "{\"state\": \"");
    for (int i = 0; i < pairs; i++) len += snprintf(body + len, sizeof body - (size_t)len, "gap %d alt %d ", i, 97 - i);
    snprintf(body + len, sizeof body - (size_t)len, "\", \"questions\": {"
             "\"a\": {\"type\": \"choice\", \"instructions\": \"Which input?\", "
             "\"criteria\": {\"thrust\": \"up\", \"glide\": \"keep\", \"dive\": \"down\"}}, "
             "\"b\": {\"type\": \"noul\", \"instructions\": \"Safe?\"}}}");
    double pd[16], pb[16], pf[16];
    int64_t wd = -1, wb = -1, wf = -1;
    const size_t n = mode_probs(path, -1, body, pd, 16, &wd);
    cr_assert_eq(mode_probs(path, SKYCMD_WEIGHTS_BF16X3, body, pb, 16, &wb), n);
    cr_assert_eq(mode_probs(path, SKYCMD_WEIGHTS_F32, body, pf, 16, &wf), n);
    cr_assert_eq(n, 5);
    cr_log_info("%s (type %d): bf16x3 mode here: %s (cpu: %s)", preset, type,
                wb != SKYCMD_WEIGHTS_BF16X3 ? "f32 path"
                : sk_bf16x3_unit() == SK_BF16_UNIT_AMX ? "AMX tiles" : "BFMMLA", skycmd_cpu_features());
    cr_assert_eq(wf, SKYCMD_WEIGHTS_F32);
    cr_assert_eq(wd, SKYCMD_WEIGHTS_F32, "the library's default is the f32 path");
    cr_assert(memcmp(pd, pf, n * sizeof *pd) == 0, "the library's default gives F32's bits");
    cr_assert_eq(wb, tiles ? SKYCMD_WEIGHTS_BF16X3 : SKYCMD_WEIGHTS_F32);
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(pb[i] - pf[i]));
    cr_log_info("bf16x3 against f32: max |dp| %.2e", worst);
    if (tiles) {
        cr_assert(worst > 0, "the tiles ran yet gave f32's bits");
        cr_assert(worst <= 1e-4, "max |dp| %.3e against f32", worst);
    } else {
        cr_assert(memcmp(pb, pf, n * sizeof *pb) == 0, "without tiles bf16x3 is the f32 path");
    }
    tu_scratch_remove();  /* each call makes its own */
}

/* a state of ~250 tokens: the windowed and global layers' attention both run */
Test(amx, bf16x3_is_the_tiles_where_usable_else_exactly_f32, .fini = tu_scratch_remove) {
    check_bf16x3_mode("s1-micro", SKYCMD_TYPE_F32, 60);
}

/* the same on the smallest model and a short state, with f32 weights (three products) and
 * bf16 weights (two): cheap enough for an emulated CPU (the arm64 stage runs it under qemu,
 * where -cpu max has FEAT_BF16 and cortex-a53 has not) */
Test(amx, bf16x3_small_is_the_unit_where_usable_else_exactly_f32, .fini = tu_scratch_remove) {
    check_bf16x3_mode("s1-pico", SKYCMD_TYPE_F32, 4);
    check_bf16x3_mode("s1-pico", SKYCMD_TYPE_BF16, 4);
}

#if defined(__x86_64__)  /* the AMX tiles: x86-64 only (not compiled, so not skipped, elsewhere) */
static void keep_head_log(void *ud, int level, const char *msg) {
    (void)level;
    char *buf = ud;
    if (strstr(msg, "int8 on AMX")) snprintf(buf, 512, "%s", msg);
}

/* The int8 modes on AMX put the float matrices they leave on the bf16x3 tiles: the decision
 * head's Linears, and the encoder matrices the calibration kept in f32 (none without
 * calibration; a quarter of s1-micro's 24 with it). Accuracy: test_quant_golden against laya
 * runs in that configuration on this machine. */
static void check_int8_floats_on_tiles(const char *path, int weights, int kept) {
    skycmd_error *err = skycmd_error_new();
    char msg[512] = "", want[256];
    skycmd_options *o = skycmd_options_new();
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_WEIGHTS, weights), SKYCMD_OK);
    cr_assert_eq(skycmd_options_set_log(o, keep_head_log, msg), SKYCMD_OK);
    skycmd_model *m = NULL;
    cr_assert_eq(skycmd_model_open(path, o, &m, err), SKYCMD_OK, "%s", skycmd_error_message(err));
    snprintf(want, sizeof want, "int8 on AMX: %d encoder matrices kept in f32, 9 decision-head "
             "matrices and the attention products on AMX-BF16 tiles", kept);
    cr_assert(strstr(msg, want) != NULL, "weights %d, log: %s", weights, msg);
    int on_tiles = 0, int8 = 0;
    for (uint32_t l = 0; l < m->m->hp.n_layer; l++) {
        const sk_linear *list[] = {&m->m->enc[l].qkv, &m->m->enc[l].out, &m->m->enc[l].up, &m->m->enc[l].down};
        for (int k = 0; k < 4; k++) {
            on_tiles += list[k]->p.wtype == SK_PACK_AMX_BF16X3;
            int8 += list[k]->q8 != NULL;
        }
    }
    cr_assert_eq(on_tiles, kept, "encoder matrices on the tiles");
    cr_assert_eq(int8 + on_tiles, 24, "every encoder matrix is int8 or on the tiles");
    skycmd_model_free(m);
    skycmd_options_free(o);
    skycmd_error_free(err);
}

Test(amx, int8_modes_move_the_float_matrices_to_bf16x3, .fini = tu_scratch_remove) {
    need_bf16_tiles();
    char dir[512], path[600];
    tu_scratch_make(dir, sizeof dir, "amx", "int8head");
    random_preset(dir, "m", "s1-micro", SKYCMD_TYPE_F32, path, sizeof path);
    check_int8_floats_on_tiles(path, SKYCMD_WEIGHTS_Q8_PLAIN, 0);
    check_int8_floats_on_tiles(path, SKYCMD_WEIGHTS_Q8, 6);
}
#endif
