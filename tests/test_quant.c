/*
 * test_quant.c - `skycmd quantize`, the Q8_0 block order, the int8 kernels and the
 * outlier-aware quantizer.
 *
 * References: the tests/fixtures/quant GGUF files are written by tools/quant/make_quant_fixtures.py
 * with gguf-py (its numpy Q8_0 quantizer is bit-exact with ggml's quantize_row_q8_0_ref) and
 * the type policy spelled out there; the int8 SIMD kernels are compared bit for bit with the
 * scalar reference, and the reference with a double-precision product of the dequantized
 * operands; the block order is checked against the library's published fixtures.
 */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "skycmd.h"
#include "gguf/gguf.h"
#include "kernels/cpu.h"
#include "kernels/kernels.h"
#include "kernels/pool.h"
#include "quant/outlier_calib.h"
#include "tokenizer/tokenizer.h"
#include "kernels/q8.h"
#include "prompt/outlier_calib_seqs.h"
#include "quant/quant.h"
#include "api/handles.h"
#include "model/model_internal.h"

#define QDIR SKYCMD_FIXTURES "/quant"

static sk_gguf *open_fx(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", QDIR, name);
    sk_gguf *g = NULL;
    sk_err e = {0};
    cr_assert_eq(sk_gguf_open_file(path, &g, &e), SKYCMD_OK, "%s: %s", path, e.msg);
    return g;
}

static void expect_same_tensors(const sk_gguf *got, const sk_gguf *want) {
    cr_assert_eq(sk_gguf_n_tensors(got), sk_gguf_n_tensors(want));
    for (size_t i = 0; i < sk_gguf_n_tensors(want); i++) {
        const sk_gguf_tensor *w = sk_gguf_tensor_at(want, i), *g = sk_gguf_tensor_at(got, i);
        cr_assert_eq(g->name.len, w->name.len);
        cr_assert(memcmp(g->name.ptr, w->name.ptr, (size_t)w->name.len) == 0);
        cr_assert_eq(g->type, w->type, "tensor %.*s: type %u, expected %u", (int)w->name.len,
                     w->name.ptr, g->type, w->type);
        cr_assert_eq(g->n_dims, w->n_dims);
        for (int d = 0; d < 4; d++) cr_assert_eq(g->ne[d], w->ne[d]);
        cr_assert_eq(g->nbytes, w->nbytes);
        cr_assert(memcmp(g->data, w->data, (size_t)w->nbytes) == 0,
                  "tensor %.*s: bytes differ from gguf-py's", (int)w->name.len, w->name.ptr);
    }
}

static void expect_same_keys(const sk_gguf *got, const sk_gguf *want, uint32_t file_type) {
    /* our writer always writes general.alignment (gguf-py omits the default) */
    cr_assert_eq(sk_gguf_n_kv(got),
                 sk_gguf_n_kv(want) + (sk_gguf_find_key(want, "general.alignment") < 0));
    for (size_t i = 0; i < sk_gguf_n_kv(want); i++) {
        sk_str k = sk_gguf_kv_key(want, i);
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)k.len, k.ptr);
        int64_t j = sk_gguf_find_key(got, key);
        cr_assert(j >= 0, "key %s lost", key);
        const sk_gguf_value *a = sk_gguf_kv_value(got, (size_t)j), *b = sk_gguf_kv_value(want, i);
        cr_assert_eq(a->type, b->type, "key %s changed type", key);
        if (b->type == SK_GGUF_STRING) {
            cr_assert_eq(a->v.s.len, b->v.s.len);
            cr_assert(memcmp(a->v.s.ptr, b->v.s.ptr, (size_t)b->v.s.len) == 0, "key %s", key);
        } else if (b->type == SK_GGUF_ARRAY) {
            cr_assert_eq(a->v.arr.count, b->v.arr.count);
            cr_assert(memcmp(a->v.arr.first, b->v.arr.first,
                             (size_t)(b->v.arr.end - b->v.arr.first)) == 0, "key %s", key);
        } else if (strcmp(key, "general.file_type") == 0) {
            cr_assert_eq(a->v.u, file_type);
        } else {
            cr_assert(memcmp(&a->v, &b->v, sizeof a->v) == 0, "key %s changed value", key);
        }
    }
}

static void quantize_matches(uint32_t type, const char *expect, uint32_t ft) {
    sk_gguf *in = open_fx("in-f32.gguf"), *want = open_fx(expect);
    sk_quantize_opts o = {type, SK_GGML_F32, NULL, NULL, NULL};
    uint8_t *buf = NULL;
    size_t n = 0;
    sk_err e = {0};
    cr_assert_eq(sk_quantize_gguf_mem(in, &o, &buf, &n, &e), SKYCMD_OK, "%s", e.msg);
    sk_gguf *got = NULL;
    cr_assert_eq(sk_gguf_open_buffer(buf, n, &got, &e), SKYCMD_OK, "%s", e.msg);
    expect_same_tensors(got, want);
    expect_same_keys(got, in, ft);
    sk_gguf_close(got);
    free(buf);
    sk_gguf_close(in);
    sk_gguf_close(want);
}

Test(quantize, q8_0_bytes_and_policy_match_gguf_py) {
    quantize_matches(SK_GGML_Q8_0, "expect-q8_0.gguf", 7);
}

Test(quantize, f16_matches_gguf_py) { quantize_matches(SK_GGML_F16, "expect-f16.gguf", 1); }

Test(quantize, q8_0_input_is_copied_not_requantized) {
    sk_gguf *want = open_fx("expect-q8_0.gguf");
    sk_quantize_opts o = {SK_GGML_Q8_0, SK_GGML_F32, NULL, NULL, NULL};
    uint8_t *buf = NULL;
    size_t n = 0;
    sk_err e = {0};
    cr_assert_eq(sk_quantize_gguf_mem(want, &o, &buf, &n, &e), SKYCMD_OK, "%s", e.msg);
    sk_gguf *got = NULL;
    cr_assert_eq(sk_gguf_open_buffer(buf, n, &got, &e), SKYCMD_OK);
    expect_same_tensors(got, want);
    sk_gguf_close(got);
    free(buf);
    sk_gguf_close(want);
}

Test(quantize, head_detection) {
    cr_assert(sk_quant_is_head("cls.output.weight", 2));
    cr_assert(sk_quant_is_head("token_types.weight", 2));
    cr_assert(sk_quant_is_head("blk.2.attn_qkv.weight", 2));
    cr_assert(sk_quant_is_head("blk.12.ffn_up.weight", 2));
    cr_assert(!sk_quant_is_head("blk.1.attn_qkv.weight", 2));
    cr_assert(!sk_quant_is_head("token_embd.weight", 2));
    cr_assert(!sk_quant_is_head("blk.x.attn_qkv.weight", 2));
    cr_assert(!sk_quant_is_head("blk.99999999999.attn_qkv.weight", UINT32_MAX));
}

static int cancel_half(void *ud, uint64_t done, uint64_t total) {
    (void)ud;
    return done * 2 >= total;
}

Test(quantize, public_api_errors_and_cancel_leave_no_file) {
    char dir[] = "/tmp/skq-XXXXXX";
    cr_assert(mkdtemp(dir));
    char out[600];
    snprintf(out, sizeof out, "%s/out.gguf", dir);
    skycmd_error *err = skycmd_error_new();
    skycmd_options *o = skycmd_options_new();
    cr_assert_eq(skycmd_quantize(NULL, out, NULL, err), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert_eq(skycmd_quantize("/nonexistent/x.gguf", out, NULL, err), SKYCMD_E_IO);
    cr_assert(strstr(skycmd_error_message(err), "/nonexistent/x.gguf"));
    if (skycmd_options_set_int(o, SKYCMD_OPT_TYPE, 3) == SKYCMD_OK) /* else the setter refused it */
        cr_assert_eq(skycmd_quantize(QDIR "/in-f32.gguf", out, o, err), SKYCMD_E_INVALID_ARGUMENT);
    skycmd_options_set_int(o, SKYCMD_OPT_TYPE, SKYCMD_TYPE_Q8_0);
    skycmd_options_set_progress(o, cancel_half, NULL);
    cr_assert_eq(skycmd_quantize(QDIR "/in-f32.gguf", out, o, err), SKYCMD_E_CANCELLED);
    cr_assert_neq(access(out, F_OK), 0, "a cancelled quantize left %s", out);
    skycmd_options_set_progress(o, NULL, NULL);
    cr_assert_eq(skycmd_quantize(QDIR "/in-f32.gguf", out, o, err), SKYCMD_OK, "%s",
                 skycmd_error_message(err));
    sk_gguf *got = NULL, *want = open_fx("expect-q8_0.gguf");
    sk_err e = {0};
    cr_assert_eq(sk_gguf_open_file(out, &got, &e), SKYCMD_OK);
    expect_same_tensors(got, want);
    sk_gguf_close(got);
    sk_gguf_close(want);
    unlink(out);
    rmdir(dir);
    skycmd_options_free(o);
    skycmd_error_free(err);
}

/* Weights that are NaN or infinite are refused with the tensor and the element named,
 * whatever the target type, and also when the tensor's type is kept. */
Test(quantize, non_finite_weights_are_refused) {
    const float bad[3] = {NAN, INFINITY, -INFINITY};
    const char *what[3] = {"NaN", "infinite", "infinite"};
    const uint32_t targets[2] = {SK_GGML_Q8_0, SK_GGML_F32};
    for (int k = 0; k < 3; k++) {
        for (int t = 0; t < 2; t++) {
            float x[64];
            for (int i = 0; i < 64; i++) x[i] = 0.01f * (float)i;
            x[37] = bad[k];
            uint64_t ne[2] = {32, 2};
            sk_err e = {0};
            sk_gguf_writer *w = sk_gguf_writer_new(0);
            cr_assert_eq(sk_gguf_writer_add_str(w, "general.architecture", "modern-bert"), 0);
            cr_assert_eq(sk_gguf_writer_add_tensor(w, "blk.0.attn_qkv.weight", 2, ne, SK_GGML_F32, x,
                                                   sizeof x, 0, &e), 0, "%s", e.msg);
            uint8_t *file = NULL;
            size_t n = 0;
            cr_assert_eq(sk_gguf_writer_write_mem(w, &file, &n, &e), 0, "%s", e.msg);
            sk_gguf_writer_free(w);
            sk_gguf *g = NULL;
            cr_assert_eq(sk_gguf_open_buffer(file, n, &g, &e), 0, "%s", e.msg);
            sk_quantize_opts o = {targets[t], SK_GGML_F32, NULL, NULL, NULL};
            uint8_t *out = NULL;
            size_t out_n = 0;
            cr_expect_eq(sk_quantize_gguf_mem(g, &o, &out, &out_n, &e), SKYCMD_E_FORMAT,
                         "a %s weight must be refused", what[k]);
            cr_expect_null(out);
            cr_expect(strstr(e.msg, "blk.0.attn_qkv.weight") && strstr(e.msg, "element 37") &&
                      strstr(e.msg, what[k]), "%s", e.msg);
            free(out);
            sk_gguf_close(g);
            free(file);
        }
    }
}

/* ------------------------------------------------------------------ block order --- */

Test(layout, published_fixtures_and_our_prepack_agree) {
    const uint8_t *canon, *kern;
    size_t n1, n2;
    int64_t r, c, r2, c2;
    cr_assert_eq(skycmd_packed_fixture(SKYCMD_TYPE_Q8_0, 0, &canon, &n1, &r, &c), SKYCMD_OK);
    cr_assert_eq(skycmd_packed_fixture(SKYCMD_TYPE_Q8_0, 1, &kern, &n2, &r2, &c2), SKYCMD_OK);
    cr_assert_eq(n1, n2);
    cr_assert_eq(r, r2);
    cr_assert_eq(c, c2);
    cr_assert_geq(c / 32, 3, "fixtures must be at least three blocks wide");
    cr_assert(memcmp(canon, kern, n1) != 0, "the two orders must differ");
    /* our prepack of the canonical bytes is the kernel-order fixture */
    uint8_t *mine = malloc(n1), *back = malloc(n1);
    sk_q8_to_kernel_order(canon, mine, (size_t)r, (size_t)c);
    char *msg = (char *)1;
    cr_assert_eq(skycmd_packed_disagreement(SKYCMD_TYPE_Q8_0, mine, n1, r, c, 1, &msg), SKYCMD_OK);
    cr_assert_null(msg, "%s", msg);
    sk_q8_to_canonical_order(mine, back, (size_t)r, (size_t)c);
    cr_assert_eq(skycmd_packed_disagreement(SKYCMD_TYPE_Q8_0, back, n1, r, c, 0, &msg), SKYCMD_OK);
    cr_assert_null(msg, "%s", msg);
    /* a mix-up is named: canonical bytes handed to the kernel order */
    cr_assert_eq(skycmd_packed_disagreement(SKYCMD_TYPE_Q8_0, canon, n1, r, c, 1, &msg), SKYCMD_OK);
    cr_assert_not_null(msg);
    cr_assert(strstr(msg, "block 1 ") != NULL, "%s", msg);
    cr_assert(strstr(msg, "ROW_MAJOR") != NULL, "%s", msg);
    skycmd_string_free(msg);
    /* a transposed label */
    cr_assert_eq(skycmd_packed_disagreement(SKYCMD_TYPE_Q8_0, kern, n1, c, r, 1, &msg), SKYCMD_OK);
    cr_assert_not_null(msg);
    skycmd_string_free(msg);
    /* the canonical fixture is ggml's Q8_0 of a matrix: dequantizing it by rows and reading
     * the kernel-order bytes through the int8 kernel with one-hot inputs give the same
     * numbers, so the kernel reads the order it declares */
    float *deq = malloc((size_t)(r * c) * sizeof(float));
    sk_dequantize_q8_0(canon, deq, (size_t)(r * c));
    uint8_t *pan = aligned_alloc(64, (sk_q8_panel_bytes((size_t)r, (size_t)c) + 63) / 64 * 64);
    sk_q8_pack_panels(kern, (size_t)r, (size_t)c, pan);
    sk_q8_packed p = {pan, (size_t)c, (size_t)r, NULL, NULL, 0};
    sk_q8_act a = {0};
    cr_assert_eq(sk_q8_act_reserve(&a, (size_t)c, (size_t)c), 0);
    float *x = calloc((size_t)(c * c), sizeof(float)), *y = malloc((size_t)(c * r) * sizeof(float));
    for (int64_t i = 0; i < c; i++) x[i * c + i] = 1.0f;
    sk_q8_quantize_act(x, (size_t)c, (size_t)c, (size_t)c, SK_Q8_ACT_Q8, NULL, &a);
    sk_q8_gemm(&a, &p, 0, (size_t)r, y, (size_t)r);
    for (int64_t i = 0; i < c; i++)
        for (int64_t o = 0; o < r; o++)
            cr_assert_float_eq(y[i * r + o], deq[o * c + i], 1e-6f * (1 + fabsf(deq[o * c + i])),
                               "input %lld output %lld", (long long)i, (long long)o);
    sk_q8_act_free(&a);
    free(pan);
    free(x);
    free(y);
    free(deq);
    free(mine);
    free(back);
    cr_assert_eq(skycmd_packed_fixture(SKYCMD_TYPE_F16, 0, &canon, &n1, &r, &c), SKYCMD_E_UNSUPPORTED);
    /* an order other than 0 (file) or 1 (kernel) is refused, not taken as one of them */
    for (int order = -1; order <= 2; order += 3) {
        cr_expect_eq(skycmd_packed_fixture(SKYCMD_TYPE_Q8_0, order, &canon, &n1, &r, &c),
                     SKYCMD_E_INVALID_ARGUMENT);
        char *msg = (char *)1;
        cr_expect_eq(skycmd_packed_disagreement(SKYCMD_TYPE_Q8_0, kern, n2, r2, c2, order, &msg),
                     SKYCMD_E_INVALID_ARGUMENT);
        cr_expect_null(msg);
    }
}

Test(layout, transposed_weight_is_refused_with_the_fix) {
    sk_err e = {0};
    cr_assert_eq(sk_q8_require_out_in("blk.0.ffn_down.weight", 64, 48, &e), SKYCMD_E_FORMAT);
    cr_assert(strstr(e.msg, "transposed") && strstr(e.msg, "reverse"), "%s", e.msg);
    cr_assert_eq(sk_q8_require_out_in("blk.0.ffn_up.weight", 96, 64, &e), SKYCMD_OK);
}

/* ------------------------------------------------------------------ int8 kernels --- */

static uint64_t rng_state = 88172645463325252ull;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}
static float frand(void) { return (float)(rnd() % 20001) / 10000.0f - 1.0f; }

static uint8_t *random_q8(size_t n_out, size_t n_in) {
    size_t nb = n_out * (n_in / 32);
    uint8_t *b = malloc(nb * 34);
    for (size_t i = 0; i < nb; i++) {
        uint16_t d = sk_f32_to_f16(0.001f + (float)(rnd() % 1000) / 50000.0f);
        b[i * 34] = (uint8_t)d;
        b[i * 34 + 1] = (uint8_t)(d >> 8);
        for (int j = 0; j < 32; j++) b[i * 34 + 2 + j] = (uint8_t)(rnd() & 0xff); /* incl. -128 */
    }
    return b;
}

typedef void (*q8_gemm_fn)(const sk_q8_act *, const sk_q8_packed *, size_t, size_t, float *, size_t);

/* The SIMD int8 kernels this CPU runs (and this compiler built), by name: AVX2 and AVX-512
 * VNNI on x86-64, dotprod and i8mm on aarch64 (a warning names those it cannot run). */
static size_t simd_kernels(q8_gemm_fn fn[2], const char *name[2]) {
    const int f = sk_cpu_features();
    size_t n = 0;
#if defined(__x86_64__)
    if (f & SK_CPU_AVX2) {
        fn[n] = sk_q8_gemm_avx2;
        name[n++] = "avx2";
    }
    if ((f & SK_CPU_AVX512VNNI) && (f & SK_CPU_AVX512BW)) {
        fn[n] = sk_q8_gemm_vnni;
        name[n++] = "vnni";
    } else {
        cr_log_warn("no AVX-512 VNNI on this CPU: the VNNI kernel was not run");
    }
#elif defined(__aarch64__)
    if ((f & SK_CPU_DOTPROD) && SK_Q8_HAVE_DOTPROD) {
        fn[n] = sk_q8_gemm_dotprod;
        name[n++] = "dotprod";
    }
    if ((f & SK_CPU_I8MM) && SK_Q8_HAVE_I8MM) {
        fn[n] = sk_q8_gemm_i8mm;
        name[n++] = "i8mm";
    }
#else
    (void)f;
    (void)fn;
    (void)name;
#endif
    return n;
}

/* Every SIMD kernel against the reference bit for bit (memcmp): the whole output range
 * and sub-ranges (o0 a multiple of 16, o1 anywhere: partial panels, halves, and pairs of
 * panels that start at an odd one), into a padded y (ldy = n_out + 5) whose cells outside
 * the range must stay as they were. */
static void simd_kernels_agree(const sk_q8_act *a, const sk_q8_packed *p, const char *what) {
    q8_gemm_fn fn[2];
    const char *name[2];
    const size_t nk = simd_kernels(fn, name), n_rows = a->n_rows, n_out = p->n_out;
    const size_t ldy = n_out + 5, cells = n_rows * ldy;
    float *y0 = malloc(cells * sizeof(float)), *y1 = malloc(cells * sizeof(float));
    size_t ranges[8][2], nr = 0;
    ranges[nr][0] = 0, ranges[nr++][1] = n_out;
    if (n_out > 1) ranges[nr][0] = 0, ranges[nr++][1] = n_out - 1;
    if (n_out > 8) ranges[nr][0] = 0, ranges[nr++][1] = 9;
    if (n_out > 16) ranges[nr][0] = 16, ranges[nr++][1] = n_out;
    if (n_out > 21) ranges[nr][0] = 16, ranges[nr++][1] = 21;
    if (n_out > 32) ranges[nr][0] = 32, ranges[nr++][1] = n_out;
    if (n_out > 33) ranges[nr][0] = 16, ranges[nr++][1] = 33;
    if (n_out > 48) ranges[nr][0] = 0, ranges[nr++][1] = 47;
    for (size_t k = 0; k < nk; k++)
        for (size_t i = 0; i < nr; i++) {
            for (size_t c = 0; c < cells; c++) y0[c] = y1[c] = -7.25f - (float)c;
            sk_q8_gemm_ref(a, p, ranges[i][0], ranges[i][1], y0, ldy);
            fn[k](a, p, ranges[i][0], ranges[i][1], y1, ldy);
            cr_assert(memcmp(y0, y1, cells * sizeof(float)) == 0,
                      "%s: %s differs from the reference (%zu rows x %zu in x %zu out, outputs "
                      "[%zu, %zu), %s)", what, name[k], n_rows, p->n_in, n_out, ranges[i][0],
                      ranges[i][1], a->two_pass ? "two-pass" : "single pass");
        }
    free(y0);
    free(y1);
}

static void kernels_agree(size_t n_rows, size_t n_in, size_t n_out, int mode, int with_bias) {
    uint8_t *w = random_q8(n_out, n_in);
    float *bias = malloc(n_out * sizeof(float)), *x = malloc(n_rows * n_in * sizeof(float));
    for (size_t o = 0; o < n_out; o++) bias[o] = frand();
    for (size_t i = 0; i < n_rows * n_in; i++) x[i] = frand() * (i % 37 == 0 ? 20.0f : 1.0f);
    uint8_t *pan = aligned_alloc(64, (sk_q8_panel_bytes(n_out, n_in) + 63) / 64 * 64);
    sk_q8_pack_panels(w, n_out, n_in, pan);
    sk_q8_packed p = {pan, n_in, n_out, with_bias ? bias : NULL, NULL, 0};
    sk_q8_act a = {0};
    cr_assert_eq(sk_q8_act_reserve(&a, n_rows, n_in), 0);
    sk_q8_quantize_act(x, n_in, n_rows, n_in, mode, NULL, &a);
    float *y0 = malloc(n_rows * n_out * sizeof(float)), *y1 = malloc(n_rows * n_out * sizeof(float));
    sk_q8_gemm_ref(&a, &p, 0, n_out, y0, n_out);
    /* the reference against double precision on the dequantized operands */
    for (size_t r = 0; r < n_rows; r++)
        for (size_t o = 0; o < n_out; o++) {
            double s = 0, mag = 0;
            for (size_t b = 0; b < n_in / 32; b++) {
                const uint8_t *blk = w + (b * n_out + o) * 34;
                double wd = sk_f16_to_f32((uint16_t)(blk[0] | blk[1] << 8));
                double xs = a.xs[r * (n_in / 32) + b];
                for (int j = 0; j < 32; j++) {
                    double xv = a.q[(r * (n_in / 32) + b) * 32 + j];
                    if (a.two_pass) xv = xv * 128 + a.r[(r * (n_in / 32) + b) * 32 + j];
                    double t = xs * xv * wd * (int8_t)blk[2 + j];
                    s += t;
                    mag += fabs(t);
                }
            }
            if (with_bias) s += bias[o];
            cr_assert(fabs(y0[r * n_out + o] - s) <= 1e-5 * (mag + 1), "ref %g vs %g",
                      (double)y0[r * n_out + o], s);
        }
    simd_kernels_agree(&a, &p, "per-block scales");
    sk_q8_act_free(&a);
    free(pan);
    free(w);
    free(bias);
    free(x);
    free(y0);
    free(y1);
}

Test(q8_kernels, simd_bit_identical_to_reference) {
    const size_t shapes[][3] = {{1, 32, 1}, {3, 64, 5}, {4, 96, 2}, {7, 128, 33}, {13, 256, 64},
                                {5, 384, 17}, {20, 512, 48}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int mode = 0; mode < 2; mode++)
            for (int b = 0; b < 2; b++) kernels_agree(shapes[i][0], shapes[i][1], shapes[i][2], mode, b);
}

Test(q8_kernels, activation_quantization_error_bounds) {
    float x[64];
    for (int i = 0; i < 64; i++) x[i] = frand() * (i == 5 ? 30.0f : 1.0f);
    sk_q8_act a = {0};
    cr_assert_eq(sk_q8_act_reserve(&a, 1, 64), 0);
    for (int mode = 0; mode < 2; mode++) {
        sk_q8_quantize_act(x, 64, 1, 64, mode, NULL, &a);
        for (int b = 0; b < 2; b++) {
            float amax = 0;
            for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[b * 32 + j]));
            const float d = amax / 127.0f;
            for (int j = 0; j < 32; j++) {
                const int i = b * 32 + j;
                cr_assert(a.q[i] >= -127 && a.q[i] <= 127);
                double v = mode == SK_Q8_ACT_Q8X2 ? a.xs[b] * (128.0 * a.q[i] + a.r[i]) : a.xs[b] * a.q[i];
                double bound = mode == SK_Q8_ACT_Q8X2 ? d / 256.0 * 1.01 + 1e-7 : d / 2.0 * 1.01;
                cr_assert(fabs(v - x[i]) <= bound, "mode %d: %g vs %g (bound %g)", mode, v,
                          (double)x[i], bound);
            }
        }
    }
    /* zeroed columns do not count */
    uint8_t zc[64] = {0};
    zc[5] = 1;
    sk_q8_quantize_act(x, 64, 1, 64, SK_Q8_ACT_Q8, zc, &a);
    cr_assert_eq(a.q[5], 0);
    cr_assert(a.xs[0] < 1.0f / 127.0f * 1.001f);
    sk_q8_act_free(&a);
}

/* ------------------------------------------------------------------ outliers -------- */

Test(outliers, pick_by_ratio_and_cap) {
    float m[64];
    for (int i = 0; i < 64; i++) m[i] = 1.0f + (float)i / 64.0f;
    m[3] = 10.0f;
    m[40] = 50.0f;
    m[41] = 5.0f;  /* above 3x the median (~1.5)... */
    m[60] = 4.4f;  /* ... this one is not */
    uint32_t idx[4];
    size_t n = sk_quant_pick_outliers(m, 64, SK_OUTLIER_RATIO, idx);
    cr_assert_eq(n, 3);
    cr_assert_eq(idx[0], 3);
    cr_assert_eq(idx[1], 40);
    cr_assert_eq(idx[2], 41);
    m[10] = 20.0f;
    m[11] = 30.0f;
    n = sk_quant_pick_outliers(m, 64, SK_OUTLIER_RATIO, idx); /* cap 64/16 = 4, largest kept */
    cr_assert_eq(n, 4);
    cr_assert_eq(idx[0], 3);
    cr_assert_eq(idx[1], 10);
    cr_assert_eq(idx[2], 11);
    cr_assert_eq(idx[3], 40);
}

Test(outliers, exact_cols_scale) {
    float w[96];
    for (int i = 0; i < 96; i++) w[i] = frand() * 0.05f;
    w[37] = 0.0371234f;  /* outlier column in block 1 */
    uint8_t isout[96] = {0};
    isout[37] = 1;
    uint8_t plain[3 * 34], ex[3 * 34], none[3 * 34];
    sk_quantize_q8_0(w, plain, 96);
    sk_quantize_q8_0_exact_cols(w, NULL, none, 96);
    cr_assert(memcmp(plain, none, sizeof plain) == 0, "no outliers: ggml's bytes");
    sk_quantize_q8_0_exact_cols(w, isout, ex, 96);
    cr_assert(memcmp(plain, ex, 34) == 0 && memcmp(plain + 68, ex + 68, 34) == 0,
              "blocks without an outlier column keep ggml's bytes");
    float dp[96], de[96];
    sk_dequantize_q8_0(plain, dp, 96);
    sk_dequantize_q8_0(ex, de, 96);
    const float ep = fabsf(dp[37] - w[37]), ee = fabsf(de[37] - w[37]);
    cr_assert(ee <= ep, "outlier error %g > plain %g", (double)ee, (double)ep);
    cr_assert(ee <= fabsf(w[37]) * 1e-3f, "outlier weight not (near) exact: %g", (double)ee);
    /* no clipping: every weight of the block within half a step */
    const float d = sk_f16_to_f32((uint16_t)(ex[34] | ex[35] << 8));
    for (int j = 32; j < 64; j++) cr_assert(fabsf(de[j] - w[j]) <= d * 0.5f + 1e-7f);
}

/* The largest |y - x . W^T| of two products y1 and y2 ([rows][n_out]) against the exact one
 * in double, and (mag, may be NULL) the largest |x . W^T|. */
static void max_errors(const float *x, const float *W, size_t rows, size_t n_in, size_t n_out,
                       const float *y1, const float *y2, double *e1, double *e2, double *mag) {
    *e1 = *e2 = 0.0;
    double m = 0.0;
    for (size_t r = 0; r < rows; r++)
        for (size_t o = 0; o < n_out; o++) {
            double s = 0;
            for (size_t i = 0; i < n_in; i++) s += (double)x[r * n_in + i] * W[o * n_in + i];
            *e1 = fmax(*e1, fabs(y1[r * n_out + o] - s));
            *e2 = fmax(*e2, fabs(y2[r * n_out + o] - s));
            m = fmax(m, fabs(s));
        }
    if (mag) *mag = m;
}

Test(outliers, q8_linear_adds_outlier_columns_in_f32) {
    const size_t n_in = 64, n_out = 8, rows = 3;
    float W[8 * 64], x[3 * 64], cm[64];
    for (size_t i = 0; i < n_out * n_in; i++) W[i] = frand() * 0.1f;
    for (size_t i = 0; i < rows * n_in; i++) x[i] = frand();
    for (size_t r = 0; r < rows; r++) x[r * n_in + 9] = 60.0f * (r + 1.0f);  /* massive channel */
    for (size_t c = 0; c < n_in; c++) {
        cm[c] = 0;
        for (size_t r = 0; r < rows; r++) cm[c] = fmaxf(cm[c], fabsf(x[r * n_in + c]));
    }
    sk_q8_owned with, plain;
    sk_err e = {0};
    size_t nb;
    cr_assert_eq(sk_q8_build(W, n_out, n_in, NULL, cm, NULL, NULL, 0, "t", &with, &nb, NULL, &e), 0);
    cr_assert_eq(with.w.n_outl, 1);
    cr_assert_eq(with.w.outl[0], 9);
    cr_assert_eq(nb, n_out * 2 * 34);
    cr_assert_eq(sk_q8_build(W, n_out, n_in, NULL, NULL, NULL, NULL, 0, "t", &plain, &nb, NULL, &e), 0);
    cr_assert_eq(plain.w.n_outl, 0);
    sk_q8_ws ws = {0};
    float y1[24], y2[24];
    cr_assert_eq(sk_q8_linear(NULL, &ws, &with.w, SK_Q8_ACT_Q8X2, x, n_in, rows, y1, n_out), 0);
    cr_assert_eq(sk_q8_linear(NULL, &ws, &plain.w, SK_Q8_ACT_Q8X2, x, n_in, rows, y2, n_out), 0);
    double e1, e2;
    max_errors(x, W, rows, n_in, n_out, y1, y2, &e1, &e2, NULL);
    cr_log_info("outlier path max error %g, plain %g", e1, e2);
    cr_assert(e1 < e2, "outlier columns must help: %g vs %g", e1, e2);
    sk_q8_ws_free(&ws);
    sk_q8_owned_free(&with);
    sk_q8_owned_free(&plain);
}

Test(q8_kernels, activation_quantizers_bit_identical) {
    const size_t rows = 5, k = 128;
    float *x = malloc(rows * k * sizeof(float));
    for (size_t i = 0; i < rows * k; i++) x[i] = frand() * (i % 29 == 0 ? 40.0f : 1.0f);
    /* row 1: exact ties after scaling (max 127 -> scale 1), row 2: zeros, row 3: a NaN */
    for (size_t j = 0; j < k; j++) x[k + j] = (float)((int)(j % 64) - 32) + 0.5f;
    x[k] = 127.0f;
    x[k + 32] = 127.0f;
    x[k + 64] = 127.0f;
    x[k + 96] = 127.0f;
    for (size_t j = 0; j < k; j++) x[2 * k + j] = 0.0f;
    x[3 * k + 7] = NAN;
    const int f = sk_cpu_features();
    for (int mode = 0; mode <= SK_Q8_ACT_ROW2; mode++) {
        sk_q8_act r = {0}, s = {0};
        cr_assert_eq(sk_q8_act_reserve(&r, rows, k), 0);
        cr_assert_eq(sk_q8_act_reserve(&s, rows, k), 0);
        sk_q8_quantize_act_ref(x, k, rows, k, mode, NULL, &r);
        /* ties round to even */
        cr_assert_eq(r.q[k + 1], -30, "%d", r.q[k + 1]);   /* -30.5 -> -30 */
        cr_assert_eq(r.q[k + 2], -30, "%d", r.q[k + 2]);   /* -29.5 -> -30 */
        cr_assert_eq(r.two_pass, mode == SK_Q8_ACT_Q8X2 || mode == SK_Q8_ACT_ROW2);
        /* one scale a row: its max |x| / 127, NaN ignored (two passes: / 128 as for Q8x2) */
        if (mode == SK_Q8_ACT_ROW || mode == SK_Q8_ACT_ROW2)
            for (size_t row = 0; row < rows; row++) {
                float mx = 0.0f;
                for (size_t j = 0; j < k; j++)
                    if (fabsf(x[row * k + j]) > mx) mx = fabsf(x[row * k + j]);
                const float d = mode == SK_Q8_ACT_ROW2 ? mx / 127.0f / 128.0f : mx / 127.0f;
                for (size_t b = 0; b < k / 32; b++)
                    cr_assert_eq(r.xs[row * (k / 32) + b], d, "row %zu block %zu", row, b);
            }
#if defined(__aarch64__)
        /* NEON (every aarch64 CPU): the same bytes */
        memset(s.q, 0x55, rows * k);
        memset(s.qb, 0x55, rows * k);
        memset(s.r, 0x55, rows * k);
        memset(s.rb, 0x55, rows * k);
        sk_q8_quantize_act_neon(x, k, rows, k, mode, &s);
        cr_assert_eq(s.two_pass, r.two_pass);
        cr_assert(s.n_rows == rows && s.n_blocks == k / 32);
        cr_assert(memcmp(r.q, s.q, rows * k) == 0, "neon: q differs (mode %d)", mode);
        cr_assert(memcmp(r.qb, s.qb, rows * k) == 0, "neon: qb differs (mode %d)", mode);
        cr_assert(memcmp(r.xs, s.xs, rows * (k / 32) * sizeof(float)) == 0, "neon: scales differ (mode %d)", mode);
        if (r.two_pass) {
            cr_assert(memcmp(r.r, s.r, rows * k) == 0, "neon: r differs");
            cr_assert(memcmp(r.rb, s.rb, rows * k) == 0, "neon: rb differs");
        }
        (void)f;
#else
        for (int lv = 0; lv < 2; lv++) {
            if (lv == 0 && !(f & SK_CPU_AVX2)) continue;
            if (lv == 1 && !((f & SK_CPU_AVX512F) && (f & SK_CPU_AVX512BW))) continue;
            memset(s.q, 0x55, rows * k);
            if (lv == 0) sk_q8_quantize_act_avx2(x, k, rows, k, mode, &s);
            else sk_q8_quantize_act_avx512(x, k, rows, k, mode, &s);
            cr_assert(memcmp(r.q, s.q, rows * k) == 0, "q differs (level %d, mode %d)", lv, mode);
            cr_assert(memcmp(r.qb, s.qb, rows * k) == 0, "qb differs (level %d)", lv);
            cr_assert(memcmp(r.xs, s.xs, rows * (k / 32) * sizeof(float)) == 0, "scales differ");
            if (r.two_pass) {
                cr_assert(memcmp(r.r, s.r, rows * k) == 0, "r differs (level %d)", lv);
                cr_assert(memcmp(r.rb, s.rb, rows * k) == 0, "rb differs (level %d)", lv);
            }
        }
#endif
        sk_q8_act_free(&r);
        sk_q8_act_free(&s);
    }
    free(x);
}

Test(q8_kernels, threads_give_identical_outputs) {
    const size_t n_in = 256, n_out = 200, rows = 37;
    float *W = malloc(n_out * n_in * sizeof(float)), *x = malloc(rows * n_in * sizeof(float));
    float cm[256];
    for (size_t i = 0; i < n_out * n_in; i++) W[i] = frand() * 0.1f;
    for (size_t i = 0; i < rows * n_in; i++) x[i] = frand();
    for (size_t r = 0; r < rows; r++) x[r * n_in + 17] = 50.0f;
    for (size_t c = 0; c < n_in; c++) cm[c] = c == 17 ? 50.0f : 1.0f;
    sk_q8_owned q;
    sk_err e = {0};
    cr_assert_eq(sk_q8_build(W, n_out, n_in, NULL, cm, NULL, NULL, 0, "t", &q, NULL, NULL, &e), 0, "%s", e.msg);
    cr_assert_eq(q.w.n_outl, 1);
    float *y1 = malloc(rows * n_out * sizeof(float)), *y3 = malloc(rows * n_out * sizeof(float));
    sk_q8_ws ws1 = {0}, ws3 = {0};
    sk_pool *pool = sk_pool_new(3);
    cr_assert_not_null(pool);
    for (int mode = 0; mode < 2; mode++) {
        cr_assert_eq(sk_q8_linear(NULL, &ws1, &q.w, mode, x, n_in, rows, y1, n_out), 0);
        cr_assert_eq(sk_q8_linear(pool, &ws3, &q.w, mode, x, n_in, rows, y3, n_out), 0);
        cr_assert(memcmp(y1, y3, rows * n_out * sizeof(float)) == 0, "mode %d: threads differ", mode);
    }
    sk_pool_free(pool);
    sk_q8_ws_free(&ws1);
    sk_q8_ws_free(&ws3);
    sk_q8_owned_free(&q);
    free(W);
    free(x);
    free(y1);
    free(y3);
}

Test(q8_weights, file_blocks_with_a_non_finite_scale_are_refused) {
    float w[2 * 64];
    for (int i = 0; i < 128; i++) w[i] = frand();
    uint8_t blocks[4 * 34];
    sk_quantize_q8_0(w, blocks, 128);
    sk_q8_owned q;
    sk_err e = {0};
    size_t nb = 0, pb = 0;
    cr_assert_eq(sk_q8_from_q8_0(blocks, 2, 64, NULL, "ok", &q, &nb, &pb, &e), 0, "%s", e.msg);
    cr_assert_eq(nb, 4 * 34);
    cr_assert_eq(pb, sk_q8_panel_bytes(2, 64));
    sk_q8_owned_free(&q);
    blocks[3 * 34 + 1] = 0x7c;  /* f16 infinity */
    blocks[3 * 34] = 0x00;
    cr_assert_eq(sk_q8_from_q8_0(blocks, 2, 64, NULL, "blk.0.ffn_up.weight", &q, &nb, &pb, &e),
                 SKYCMD_E_FORMAT);
    cr_assert(strstr(e.msg, "blk.0.ffn_up.weight") && strstr(e.msg, "block 3"), "%s", e.msg);
    cr_assert_eq(sk_q8_from_q8_0(blocks, 2, 48, NULL, "x", &q, &nb, &pb, &e), SKYCMD_E_FORMAT);
}

/* ------------------------------------------------------------------ the model ------- */

typedef struct logrec {
    int relayouts, summary, kept, fast_x2;
} logrec;

static void on_log(void *ud, int level, const char *msg) {
    logrec *l = ud;
    if (level == 0 && strstr(msg, "kept in f32")) l->kept++;
    if (level == 0 && strstr(msg, "two-pass activations under --q8-fast")) l->fast_x2++;
    if (strstr(msg, "ROW_MAJOR -> INPUT_BLOCK_MAJOR") && strstr(msg, "bytes")) {
        if (level == 0) l->relayouts++;
        else l->summary++;
    }
}

static char *decide_with(skycmd_model *m, const char *body, int threads, int act) {
    skycmd_session *s = NULL;
    cr_assert_eq(skycmd_session_new(m, &s), SKYCMD_OK);
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_THREADS, threads), SKYCMD_OK);
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_ACTIVATIONS, act), SKYCMD_OK);
    char *out = NULL;
    int st = skycmd_decide_json(s, body, strlen(body), &out);
    cr_assert_eq(st, SKYCMD_OK, "%s", skycmd_session_errmsg(s));
    skycmd_session_free(s);
    return out;
}

/* An s1-nano with two massive channels, F16, written to dir (a mkdtemp template)/m.gguf. */
static void nano_massive(char *dir, char *path, size_t cap, skycmd_error *err) {
    cr_assert(mkdtemp(dir));
    snprintf(path, cap, "%s/m.gguf", dir);
    skycmd_options *o = skycmd_options_new();
    skycmd_options_set_int(o, SKYCMD_OPT_TYPE, SKYCMD_TYPE_F16);
    skycmd_options_set_int(o, SKYCMD_OPT_MASSIVE, 2);
    cr_assert_eq(skycmd_random_model("s1-nano", path, o, err), SKYCMD_OK, "%s", skycmd_error_message(err));
    skycmd_options_free(o);
}

static const char k_q8_body[] =
    "{\"state\": \"turn 3, two enemies ahead, shield at 40%\", \"questions\": {"
    "\"act\": {\"type\": \"choice\", \"instructions\": \"what now?\", \"criteria\": "
    "{\"attack\": \"hit them\", \"hide\": \"take cover\", \"run\": \"leave\"}},"
    "\"risk\": {\"type\": \"noul\", \"instructions\": \"is it dangerous?\"}}}";

Test(q8_model, int8_modes_log_relayouts_and_are_thread_independent) {
    char dir[] = "/tmp/skq8m-XXXXXX", path[600];
    skycmd_error *err = skycmd_error_new();
    nano_massive(dir, path, sizeof path, err);
    const char *body = k_q8_body;
    char *ref[2] = {NULL, NULL};
    for (int mode = SKYCMD_WEIGHTS_Q8; mode <= SKYCMD_WEIGHTS_Q8_PLAIN; mode++) {
        skycmd_options *mo = skycmd_options_new();
        logrec lr = {0, 0, 0, 0};
        skycmd_options_set_int(mo, SKYCMD_OPT_WEIGHTS, mode);
        skycmd_options_set_log(mo, on_log, &lr);
        skycmd_model *m = NULL;
        cr_assert_eq(skycmd_model_open(path, mo, &m, err), SKYCMD_OK, "%s", skycmd_error_message(err));
        int64_t n_enc = 0;
        cr_assert_eq(skycmd_model_get_int(m, "encoder.block_count", &n_enc), SKYCMD_OK);
        /* calibrated: the most sensitive quarter of the sites stays f32, and as many others
         * keep two-pass activations under --q8-fast (each logged as such) */
        cr_assert_eq(lr.kept, mode == SKYCMD_WEIGHTS_Q8 ? (int)(4 * n_enc / 4) : 0,
                     "sites kept in f32: %d", lr.kept);
        cr_assert_eq(lr.fast_x2, lr.kept, "sites with two-pass activations under --q8-fast: %d", lr.fast_x2);
        cr_assert_eq(lr.relayouts + lr.kept, 4 * n_enc, "one relayout event per int8 matrix "
                     "(%lld layers x 4, %d kept in f32), got %d", (long long)n_enc, lr.kept,
                     lr.relayouts);
        cr_assert_eq(lr.summary, 1);
        char *a = decide_with(m, body, 1, SKYCMD_ACT_Q8X2);
        char *b = decide_with(m, body, 3, SKYCMD_ACT_Q8X2);
        cr_assert_str_eq(a, b, "threads changed the int8 answers");
        char *c = decide_with(m, body, 1, SKYCMD_ACT_Q8);
        cr_assert_str_neq(a, c, "the activation mode has no effect");
        ref[mode - 1] = a;
        skycmd_string_free(b);
        skycmd_string_free(c);
        cr_assert_eq(skycmd_model_free(m), SKYCMD_OK);
        skycmd_options_free(mo);
    }
    cr_assert_str_neq(ref[0], ref[1], "calibration made no difference on a model with massive channels");
    skycmd_string_free(ref[0]);
    skycmd_string_free(ref[1]);
    skycmd_options *bad = skycmd_options_new();
    cr_assert_neq(skycmd_options_set_int(bad, SKYCMD_OPT_WEIGHTS, 7), SKYCMD_OK);
    skycmd_options_free(bad);
    unlink(path);
    rmdir(dir);
    skycmd_error_free(err);
}

static void clear_fast_x2(sk_model *m) {
    sk_linear *lin[] = {&m->cls, &m->cls_out};
    for (uint32_t l = 0; l < m->hp.n_layer; l++) {
        sk_linear *e[] = {&m->enc[l].qkv, &m->enc[l].out, &m->enc[l].up, &m->enc[l].down};
        for (size_t k = 0; k < 4; k++)
            if (e[k]->q8) e[k]->q8->fast_x2 = 0;
    }
    for (uint32_t j = 0; j < m->hp.n_head_layers; j++) {
        sk_linear *h[] = {&m->head[j].q, &m->head[j].kv, &m->head[j].out, &m->head[j].up, &m->head[j].down};
        for (size_t k = 0; k < 5; k++)
            if (h[k]->q8) h[k]->q8->fast_x2 = 0;
    }
    for (size_t k = 0; k < 2; k++)
        if (lin[k]->q8) lin[k]->q8->fast_x2 = 0;
}

/* Row-scaled int8's single-pass choice (the probe of which matrices keep two passes under
 * SKYCMD_ACT_Q8): made in the open when its options name SKYCMD_ACT_Q8, else by the first
 * session that sets it; the two give the same answers, bitwise, and differ from one pass
 * everywhere (the choice matters). A load that defers it logs no choice and runs no probe. */
Test(q8_model, row_choice_deferred_to_the_first_single_pass_session_is_the_loads) {
    char dir[] = "/tmp/skq8m-XXXXXX", path[600];
    skycmd_error *err = skycmd_error_new();
    nano_massive(dir, path, sizeof path, err);
    const char *body = k_q8_body;
    skycmd_model *m[2] = {NULL, NULL};
    logrec lr[2] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
    for (int eager = 0; eager < 2; eager++) {
        skycmd_options *mo = skycmd_options_new();
        skycmd_options_set_int(mo, SKYCMD_OPT_WEIGHTS, SKYCMD_WEIGHTS_Q8_ROW);
        if (eager) skycmd_options_set_int(mo, SKYCMD_OPT_ACTIVATIONS, SKYCMD_ACT_Q8);
        skycmd_options_set_log(mo, on_log, &lr[eager]);
        cr_assert_eq(skycmd_model_open(path, mo, &m[eager], err), SKYCMD_OK, "%s", skycmd_error_message(err));
        skycmd_options_free(mo);
    }
    cr_assert_gt(lr[1].fast_x2, 0, "the eager load chose no matrix to keep two passes");
    cr_assert_eq(lr[0].fast_x2, 0, "the deferred load made the choice anyway");
    /* two passes: the choice is not read */
    char *e2 = decide_with(m[1], body, 1, SKYCMD_ACT_Q8X2), *d2 = decide_with(m[0], body, 1, SKYCMD_ACT_Q8X2);
    cr_assert_str_eq(e2, d2, "two-pass answers differ between the loads");
    /* one pass everywhere, as the deferred model ran before the choice existed: every
     * product's fast_x2 cleared on a third model */
    skycmd_options *mo = skycmd_options_new();
    skycmd_options_set_int(mo, SKYCMD_OPT_WEIGHTS, SKYCMD_WEIGHTS_Q8_ROW);
    skycmd_options_set_int(mo, SKYCMD_OPT_ACTIVATIONS, SKYCMD_ACT_Q8);
    skycmd_model *all1 = NULL;
    cr_assert_eq(skycmd_model_open(path, mo, &all1, err), SKYCMD_OK, "%s", skycmd_error_message(err));
    skycmd_options_free(mo);
    clear_fast_x2(all1->m);
    char *one = decide_with(all1, body, 1, SKYCMD_ACT_Q8);
    /* the deferred choice, by a session with two threads (the probe's passes on them) */
    char *e1 = decide_with(m[1], body, 1, SKYCMD_ACT_Q8), *d1 = decide_with(m[0], body, 2, SKYCMD_ACT_Q8);
    cr_assert_str_eq(e1, d1, "the first single-pass session's choice differs from the load's");
    cr_assert_str_neq(e1, one, "the choice changed nothing: one pass everywhere answers the same");
    cr_assert_str_neq(e1, e2, "single-pass activations changed nothing");
    char *d1b = decide_with(m[0], body, 1, SKYCMD_ACT_Q8);   /* made once: the same again */
    cr_assert_str_eq(d1, d1b);
    for (int k = 0; k < 2; k++) cr_assert_eq(skycmd_model_free(m[k]), SKYCMD_OK);
    cr_assert_eq(skycmd_model_free(all1), SKYCMD_OK);
    skycmd_string_free(e2);
    skycmd_string_free(d2);
    skycmd_string_free(one);
    skycmd_string_free(e1);
    skycmd_string_free(d1);
    skycmd_string_free(d1b);
    unlink(path);
    rmdir(dir);
    skycmd_error_free(err);
}

Test(layout, file_bytes_through_the_load_path_give_the_fixture_matrix) {
    /* the canonical (file-order) fixture through sk_q8_from_q8_0, the model's load path for
     * Q8_0 tensors, and the int8 kernel with one-hot inputs: exactly the dequantized matrix */
    const uint8_t *canon;
    size_t n;
    int64_t r, c;
    cr_assert_eq(skycmd_packed_fixture(SKYCMD_TYPE_Q8_0, 0, &canon, &n, &r, &c), SKYCMD_OK);
    sk_q8_owned q;
    sk_err e = {0};
    size_t nb = 0, pb = 0;
    cr_assert_eq(sk_q8_from_q8_0(canon, (size_t)r, (size_t)c, NULL, "fixture", &q, &nb, &pb, &e), 0,
                 "%s", e.msg);
    cr_assert_eq(nb, n, "the relayout reports the fixture's byte count");
    float *deq = malloc((size_t)(r * c) * sizeof(float));
    sk_dequantize_q8_0(canon, deq, (size_t)(r * c));
    float *x = calloc((size_t)(c * c), sizeof(float)), *y = malloc((size_t)(c * r) * sizeof(float));
    for (int64_t i = 0; i < c; i++) x[i * c + i] = 1.0f;
    sk_q8_ws ws = {0};
    for (int mode = 0; mode < 2; mode++) {
        cr_assert_eq(sk_q8_linear(NULL, &ws, &q.w, mode, x, (size_t)c, (size_t)c, y, (size_t)r), 0);
        for (int64_t i = 0; i < c; i++)
            for (int64_t o = 0; o < r; o++)
                cr_assert_float_eq(y[i * r + o], deq[o * c + i], 1e-6f * (1 + fabsf(deq[o * c + i])),
                                   "mode %d input %lld output %lld", mode, (long long)i, (long long)o);
    }
    sk_q8_ws_free(&ws);
    sk_q8_owned_free(&q);
    free(x);
    free(y);
    free(deq);
}

/* Issue 19, second round: the int8 calibration reads what the model reads. On the built-in
 * s1-pico-flappy (a BPE trained on its own states), every calibration sequence has the
 * prompt template's layout ([CLS] question [SEP] [MASK] option ... [SEP] state [SEP], the
 * question types in turn), and the vocabulary states are made of the tokens its tokenizer
 * learned (multi-character pieces, never special or unused tokens), unlike the built-in
 * English prompts, which this tokenizer cuts into single characters. */
static size_t utf8_chars(const char *s) {
    size_t n = 0;
    for (; s && *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

Test(calib, sequences_follow_the_template_and_the_vocabulary) {
    sk_err e = {0};
    sk_gguf *g = NULL;
    cr_assert_eq(sk_gguf_open_file(SKYCMD_SOURCE_DIR "/models/s1-pico-flappy.gguf", &g, &e), 0, "%s", e.msg);
    skycmd_tokenizer *tok = NULL;
    cr_assert_eq(sk_tokenizer_from_gguf(g, &tok, &e), 0, "%s", e.msg);
    const int32_t cls = sk_tokenizer_special(tok, SKYCMD_SPECIAL_CLS), sep = sk_tokenizer_special(tok, SKYCMD_SPECIAL_SEP),
                  mask = sk_tokenizer_special(tok, SKYCMD_SPECIAL_MASK);
    sk_calib_seq seqs[SK_CALIB_N_SEQS];
    cr_assert_eq(sk_calib_sequences(g, 256, 96, seqs, &e), 0, "%s", e.msg);
    size_t learned[2] = {0, 0}, total[2] = {0, 0};
    for (size_t i = 0; i < SK_CALIB_N_SEQS; i++) {
        const sk_calib_seq *q = &seqs[i];
        cr_assert_geq(q->n, 8, "sequence %zu has %zu tokens", i, q->n);
        cr_expect_eq(q->qtype, (int)(i % 3), "sequence %zu: question type %d", i, q->qtype);
        cr_expect_eq(q->ids[0], cls, "sequence %zu does not start with [CLS]", i);
        cr_expect_eq(q->ids[q->n - 1], sep, "sequence %zu does not end with [SEP]", i);
        size_t n_sep = 0, n_mask = 0, state_from = 0;
        for (size_t t = 0; t < q->n; t++) {
            if (q->ids[t] == sep && ++n_sep == 2) state_from = t + 1;
            n_mask += q->ids[t] == mask;
        }
        cr_expect_eq(n_sep, 3, "sequence %zu: %zu [SEP] (question, options, state)", i, n_sep);
        cr_expect_eq(n_mask, i % 3 == 1 ? 3u : 2u, "sequence %zu: %zu option markers", i, n_mask);
        const int vocab = i >= SK_CALIB_N_PROMPTS;
        for (size_t t = state_from; t + 1 < q->n; t++) {
            const char *piece = sk_tokenizer_piece(tok, q->ids[t]);
            cr_assert_not_null(piece);
            if (vocab)
                cr_expect(strncmp(piece, "[PAD", 4) != 0 && q->ids[t] != cls && q->ids[t] != sep && q->ids[t] != mask,
                          "vocabulary state %zu holds the special or unused token %s", i, piece);
            learned[vocab] += utf8_chars(piece) > 1;
            total[vocab]++;
        }
    }
    cr_assert(total[0] > 0 && total[1] > 0);
    const double share_prompts = (double)learned[0] / (double)total[0], share_vocab = (double)learned[1] / (double)total[1];
    cr_log_info("multi-character tokens: %.2f of the prompt states, %.2f of the vocabulary states", share_prompts,
                share_vocab);
    cr_expect_geq(share_vocab, 0.8, "vocabulary states: only %.2f of their tokens are learned pieces", share_vocab);
    cr_expect_lt(share_prompts, share_vocab);
    sk_calib_sequences_free(seqs);
    sk_tokenizer_free(tok);
    sk_gguf_close(g);
}

/* ---- row-scaled int8 (SKYCMD_WEIGHTS_Q8_ROW, q8.h) ---- */

static void build_rows(size_t n_out, size_t n_in, const float *cm, float *W, sk_q8_owned *q) {
    for (size_t i = 0; i < n_out * n_in; i++) W[i] = frand() * (i % 41 == 0 ? 3.0f : 0.2f);
    sk_err e = {0};
    size_t nb = 0, pb = 0;
    cr_assert_eq(sk_q8_build_rows(W, n_out, n_in, NULL, cm, "t", q, &nb, &pb, &e), 0, "%s", e.msg);
    cr_assert_eq(nb, n_out * (n_in / 32) * 34);
    cr_assert_eq(pb, sk_q8_panel_bytes(n_out, n_in));
    cr_assert_not_null(q->w.p.row_sum128);
}

Test(q8_rows, build_follows_the_definition) {
    const size_t n_out = 19, n_in = 96;
    float *W = malloc(n_out * n_in * sizeof(float)), cm[96];
    for (size_t c = 0; c < n_in; c++) cm[c] = 1.0f;
    cm[40] = 80.0f;  /* a massive channel: an outlier column */
    sk_q8_owned q;
    build_rows(n_out, n_in, cm, W, &q);
    cr_assert_eq(q.w.n_outl, 1);
    cr_assert_eq(q.w.outl[0], 40);
    const size_t nb = n_in / 32;
    for (size_t o = 0; o < n_out; o++) {
        float mx = 0.0f;
        for (size_t i = 0; i < n_in; i++)
            if (i != 40 && fabsf(W[o * n_in + i]) > mx) mx = fabsf(W[o * n_in + i]);
        const uint16_t d = sk_f32_to_f16(mx / 127.0f);
        int32_t sum = 0;
        for (size_t b = 0; b < nb; b++) {
            const uint8_t *ch = q.w.p.panels + ((o / 16) * nb + b) * SK_Q8_CHUNK;
            uint16_t got;
            memcpy(&got, ch + SK_Q8_CHUNK_SCALES + (o % 16) * 2, 2);
            cr_assert_eq(got, d, "row %zu block %zu: scale %04x, want %04x", o, b, got, d);
            for (int j = 0; j < 32; j++) {
                const size_t i = b * 32 + (size_t)j;
                const int8_t qv = (int8_t)ch[((size_t)(j / 4) * 16 + o % 16) * 4 + (size_t)(j % 4)];
                float want = i == 40 ? 0.0f : roundf(W[o * n_in + i] / sk_f16_to_f32(d));
                want = fminf(127.0f, fmaxf(-127.0f, want));
                cr_assert_eq(qv, (int8_t)want, "row %zu input %zu: %d, want %d", o, i, qv, (int)want);
                sum += qv;
            }
        }
        cr_assert_eq(q.w.p.row_sum128[o], 128 * sum, "row %zu sum", o);
        cr_assert_eq(q.w.w_outl[o], W[o * n_in + 40], "row %zu: the outlier weight is exact", o);
    }
    sk_q8_owned_free(&q);
    free(W);
    sk_err e = {0};
    sk_q8_owned big;
    static float one[1];
    cr_assert_eq(sk_q8_build_rows(one, 1, SK_Q8_ROW_MAX_IN + 32, NULL, NULL, "big", &big, NULL, NULL, &e),
                 SKYCMD_E_UNSUPPORTED, "more inputs than an int32 row sum holds are refused");
    cr_assert(strstr(e.msg, "big") != NULL, "%s", e.msg);
}

/* The reference against double precision, and every SIMD kernel against the reference
 * bit for bit, on row-scaled weights with row activations. */
static void rows_agree(size_t n_rows, size_t n_in, size_t n_out, int with_bias, float xscale) {
    float *W = malloc(n_out * n_in * sizeof(float)), *x = malloc(n_rows * n_in * sizeof(float));
    float *bias = malloc(n_out * sizeof(float));
    for (size_t o = 0; o < n_out; o++) bias[o] = frand();
    sk_q8_owned q;
    build_rows(n_out, n_in, NULL, W, &q);
    if (with_bias) q.w.p.bias = bias;
    for (size_t i = 0; i < n_rows * n_in; i++) x[i] = xscale * frand() * (i % 37 == 0 ? 20.0f : 1.0f);
    sk_q8_act a = {0};
    cr_assert_eq(sk_q8_act_reserve(&a, n_rows, n_in), 0);
    sk_q8_quantize_act(x, n_in, n_rows, n_in, SK_Q8_ACT_ROW, NULL, &a);
    float *y0 = malloc(n_rows * n_out * sizeof(float)), *y1 = malloc(n_rows * n_out * sizeof(float));
    sk_q8_gemm_ref(&a, &q.w.p, 0, n_out, y0, n_out);
    const size_t nb = n_in / 32;
    for (size_t r = 0; r < n_rows; r++)
        for (size_t o = 0; o < n_out; o++) {
            double s = 0, mag = 0;
            for (size_t b = 0; b < nb; b++) {
                const uint8_t *ch = q.w.p.panels + ((o / 16) * nb + b) * SK_Q8_CHUNK;
                uint16_t wd;
                memcpy(&wd, ch + SK_Q8_CHUNK_SCALES + (o % 16) * 2, 2);
                for (int j = 0; j < 32; j++) {
                    const double t = (double)a.xs[r * nb] * sk_f16_to_f32(wd) *
                                     a.q[(r * nb + b) * 32 + j] *
                                     (int8_t)ch[((size_t)(j / 4) * 16 + o % 16) * 4 + (size_t)(j % 4)];
                    s += t;
                    mag += fabs(t);
                }
            }
            if (with_bias) s += bias[o];
            cr_assert(fabs(y0[r * n_out + o] - s) <= 1e-6 * (mag + 1), "ref %g vs %g (%zux%zux%zu)",
                      (double)y0[r * n_out + o], s, n_rows, n_in, n_out);
        }
    simd_kernels_agree(&a, &q.w.p, "row-scaled");
    /* the dispatcher (on AMX CPUs the tile kernel, with these short row counts mostly its
     * VNNI tail: tests/test_amx.c covers the tiles) */
    memset(y1, 0, n_rows * n_out * sizeof(float));
    sk_q8_gemm(&a, &q.w.p, 0, n_out, y1, n_out);
    cr_assert(memcmp(y0, y1, n_rows * n_out * sizeof(float)) == 0, "dispatched kernel (%s) differs",
              sk_q8_kernel_name());
    sk_q8_act_free(&a);
    sk_q8_owned_free(&q);
    free(W);
    free(x);
    free(bias);
    free(y0);
    free(y1);
}

Test(q8_rows, kernels_bit_identical_to_reference) {
    const size_t shapes[][3] = {{1, 32, 1}, {3, 64, 5}, {4, 96, 2}, {7, 128, 33}, {8, 256, 64},
                                {13, 384, 17}, {20, 768, 48}, {9, 2304, 16}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int b = 0; b < 2; b++) rows_agree(shapes[i][0], shapes[i][1], shapes[i][2], b, 1.0f);
}

/* The largest sums a row-scaled product can meet: every weight quant +-127 (same sign per
 * output), every activation quant +-127, SK_Q8_ROW_MAX_IN inputs: the int32 sums (the VNNI
 * kernel's biased ones, the AMX tiles' whole-row ones) stay exact. 32 rows: on an AMX CPU
 * the dispatched kernel runs them as one full pair of 16-row tiles, and the VNNI kernel is
 * checked directly besides. */
Test(q8_rows, int32_sums_exact_at_the_input_limit) {
    const size_t n_in = SK_Q8_ROW_MAX_IN, n_out = 32, n_rows = 32;
    float *W = malloc(n_out * n_in * sizeof(float)), *x = malloc(n_rows * n_in * sizeof(float));
    for (size_t o = 0; o < n_out; o++)
        for (size_t i = 0; i < n_in; i++) W[o * n_in + i] = (o & 1) ? -1.0f : 1.0f;
    for (size_t r = 0; r < n_rows; r++)
        for (size_t i = 0; i < n_in; i++) x[r * n_in + i] = (r & 1) ? -1.0f : 1.0f;
    sk_err e = {0};
    sk_q8_owned q;
    cr_assert_eq(sk_q8_build_rows(W, n_out, n_in, NULL, NULL, "limit", &q, NULL, NULL, &e), 0);
    sk_q8_act a = {0};
    cr_assert_eq(sk_q8_act_reserve(&a, n_rows, n_in), 0);
    sk_q8_quantize_act(x, n_in, n_rows, n_in, SK_Q8_ACT_ROW, NULL, &a);
    float y0[32 * 32], y1[32 * 32];
    sk_q8_gemm_ref(&a, &q.w.p, 0, n_out, y0, n_out);
    for (size_t r = 0; r < n_rows; r++)
        for (size_t o = 0; o < n_out; o++) {
            /* x * w = +-1 each, so the exact answer is +-n_in (scales 1/127 each, sum 127^2 n_in) */
            const double want = ((r & 1) == (o & 1) ? 1.0 : -1.0) * (double)n_in;
            cr_assert(fabs(y0[r * n_out + o] - want) <= 1e-3 * (double)n_in, "%g vs %g",
                      (double)y0[r * n_out + o], want);
        }
    sk_q8_gemm(&a, &q.w.p, 0, n_out, y1, n_out);
    cr_assert(memcmp(y0, y1, sizeof y0) == 0, "%s kernel differs at the limit", sk_q8_kernel_name());
    q8_gemm_fn fn[2];
    const char *name[2];
    for (size_t k = 0, nk = simd_kernels(fn, name); k < nk; k++) {
        memset(y1, 0, sizeof y1);
        fn[k](&a, &q.w.p, 0, n_out, y1, n_out);
        cr_assert(memcmp(y0, y1, sizeof y0) == 0, "%s kernel differs at the limit", name[k]);
    }
    sk_q8_act_free(&a);
    sk_q8_owned_free(&q);
    free(W);
    free(x);
}

/* sk_q8_linear quantizes a row-scaled matrix's activations per row whatever mode it is
 * given, and with outlier columns it stays close to the f32 product. */
Test(q8_rows, linear_takes_row_activations_and_outlier_columns) {
    const size_t n_in = 128, n_out = 24, rows = 5;
    float *W = malloc(n_out * n_in * sizeof(float)), x[5 * 128], cm[128];
    for (size_t i = 0; i < rows * n_in; i++) x[i] = frand();
    for (size_t r = 0; r < rows; r++) x[r * n_in + 77] = 90.0f * (r + 1.0f);  /* massive channel */
    for (size_t c = 0; c < n_in; c++) {
        cm[c] = 0;
        for (size_t r = 0; r < rows; r++) cm[c] = fmaxf(cm[c], fabsf(x[r * n_in + c]));
    }
    sk_q8_owned with, plain;
    build_rows(n_out, n_in, cm, W, &with);
    sk_err e = {0};
    cr_assert_eq(sk_q8_build_rows(W, n_out, n_in, NULL, NULL, "t", &plain, NULL, NULL, &e), 0);
    sk_q8_ws ws = {0};
    float y[4][5 * 24], yp[5 * 24];
    const int modes[4] = {SK_Q8_ACT_ROW, SK_Q8_ACT_Q8, SK_Q8_ACT_Q8X2, SK_Q8_ACT_ROW2};
    for (int m = 0; m < 4; m++)
        cr_assert_eq(sk_q8_linear(NULL, &ws, &with.w, modes[m], x, n_in, rows, y[m], n_out), 0);
    /* one pass where one was asked (ROW, Q8), two where two were (Q8x2, ROW2) */
    cr_assert(memcmp(y[0], y[1], sizeof y[0]) == 0 && memcmp(y[2], y[3], sizeof y[0]) == 0,
              "a row-scaled product takes one or two passes, as asked");
    cr_assert_eq(sk_q8_linear(NULL, &ws, &plain.w, SK_Q8_ACT_ROW, x, n_in, rows, yp, n_out), 0);
    double e1, e2, mag;
    max_errors(x, W, rows, n_in, n_out, y[0], yp, &e1, &e2, &mag);
    cr_log_info("row-scaled: outlier path max error %g, plain %g (largest output %g)", e1, e2, mag);
    cr_assert(e1 < 0.02 * mag, "row-scaled with outlier columns: error %g of %g", e1, mag);
    cr_assert(e1 < e2, "outlier columns must help the row scales: %g vs %g", e1, e2);
    sk_q8_ws_free(&ws);
    sk_q8_owned_free(&with);
    sk_q8_owned_free(&plain);
    free(W);
}

/* Weights that row scales hold exactly (every weight an integer multiple of its row's
 * f16 scale, the row's largest 127 of them), so the activations are the only error: two
 * passes must bring it down by about the 128 of their second pass, against the exact
 * product in double; threads give the same bits. */
Test(q8_rows, two_passes_take_the_activation_error_down) {
    const size_t n_in = 256, n_out = 80, rows = 33;  /* enough work for the pool's split */
    float *W = malloc(n_out * n_in * sizeof(float)), *x = malloc(rows * n_in * sizeof(float));
    for (size_t o = 0; o < n_out; o++) {
        const float d = sk_f16_to_f32(sk_f32_to_f16(0.001f * (float)(o + 1)));
        for (size_t i = 0; i < n_in; i++) {
            const int qv = i == o % n_in ? (o % 2 ? -127 : 127) : (int)lrintf(frand() * 126.0f);
            W[o * n_in + i] = d * (float)qv;
        }
    }
    for (size_t i = 0; i < rows * n_in; i++) x[i] = frand() * (i % 53 == 0 ? 6.0f : 1.0f);
    sk_q8_owned q;
    sk_err e = {0};
    cr_assert_eq(sk_q8_build_rows(W, n_out, n_in, NULL, NULL, "t", &q, NULL, NULL, &e), 0, "%s", e.msg);
    sk_q8_ws ws = {0};
    float *y1 = malloc(rows * n_out * sizeof(float)), *y2 = malloc(rows * n_out * sizeof(float)),
          *y2t = malloc(rows * n_out * sizeof(float));
    cr_assert_eq(sk_q8_linear(NULL, &ws, &q.w, SK_Q8_ACT_ROW, x, n_in, rows, y1, n_out), 0);
    cr_assert_eq(sk_q8_linear(NULL, &ws, &q.w, SK_Q8_ACT_ROW2, x, n_in, rows, y2, n_out), 0);
    sk_pool *pool = sk_pool_new(3);
    cr_assert_not_null(pool);
    sk_q8_ws ws3 = {0};
    cr_assert_eq(sk_q8_linear(pool, &ws3, &q.w, SK_Q8_ACT_ROW2, x, n_in, rows, y2t, n_out), 0);
    cr_assert(memcmp(y2, y2t, rows * n_out * sizeof(float)) == 0, "threads changed the bits");
    /* every kernel level (AMX: the fused kernel; below: two single-pass products added)
     * gives sk_q8_gemm_row2_ref's bits */
    sk_q8_act a = {0};
    cr_assert_eq(sk_q8_act_reserve(&a, rows, n_in), 0);
    sk_q8_quantize_act_ref(x, n_in, rows, n_in, SK_Q8_ACT_ROW2, NULL, &a);
    float *yd = malloc(rows * n_out * sizeof(float));
    sk_q8_gemm_row2_ref(&a, &q.w.p, 0, n_out, yd, n_out);
    for (int lv = 0; lv <= 3; lv++) {
        sk_q8_force_kernel(lv);
        cr_assert_eq(sk_q8_linear(NULL, &ws, &q.w, SK_Q8_ACT_ROW2, x, n_in, rows, y2t, n_out), 0);
        for (size_t i = 0; i < rows * n_out; i++)
            cr_assert(memcmp(&yd[i], &y2t[i], sizeof(float)) == 0,
                      "kernel %s: output %zu: %.9g, the definition %.9g", sk_q8_kernel_name(), i,
                      (double)y2t[i], (double)yd[i]);
    }
    sk_q8_force_kernel(-1);
    sk_q8_act_free(&a);
    free(yd);
    double e1, e2;
    max_errors(x, W, rows, n_in, n_out, y1, y2, &e1, &e2, NULL);
    cr_log_info("row activations: one pass max error %g, two passes %g", e1, e2);
    cr_assert(e1 > 0.0, "one pass must have an error here");
    cr_assert(e2 < e1 / 30.0, "two passes: error %g, one pass %g", e2, e1);
    sk_q8_ws_free(&ws);
    sk_q8_ws_free(&ws3);
    sk_pool_free(pool);
    sk_q8_owned_free(&q);
    free(y1);
    free(y2);
    free(y2t);
    free(W);
    free(x);
}

/* ---- aarch64: NEON activations, the SDOT and SMMLA kernels and their dispatch ---- */

#if defined(__aarch64__)
/* The kernels run where the CPU has them: a CPU without (qemu -cpu cortex-a53) reports this
 * test skipped, so the bit-for-bit checks above (which then had nothing to run) show it. */
Test(q8_arm, sdot_and_smmla_kernels_ran) {
    const int f = sk_cpu_features();
    if (!(f & SK_CPU_DOTPROD) || !SK_Q8_HAVE_DOTPROD)
        cr_skip_test("no SDOT (FEAT_DotProd) here: the dotprod kernel was not tested");
    if (!(f & SK_CPU_I8MM) || !SK_Q8_HAVE_I8MM)
        cr_skip_test("no SMMLA (FEAT_I8MM) here: the i8mm kernel was not tested");
    q8_gemm_fn fn[2];
    const char *name[2];
    cr_assert_eq(simd_kernels(fn, name), 2);
}

/* Extremes the random data does not reach: infinities, subnormal maxima (1 / d infinite),
 * huge values, -0, NaN, exact halves; strided rows (ldx > k); all three modes. */
Test(q8_arm, neon_activations_byte_identical_on_edge_values) {
    const size_t rows = 9, k = 160, ldx = 173;
    float *x = malloc(rows * ldx * sizeof(float));
    for (size_t i = 0; i < rows * ldx; i++) x[i] = frand() * (i % 13 == 0 ? 1e3f : 1.0f);
    float *r1 = x + ldx, *r2 = x + 2 * ldx, *r3 = x + 3 * ldx, *r4 = x + 4 * ldx, *r5 = x + 5 * ldx;
    r1[3] = INFINITY;                       /* block 0: d infinite, 1 / d = 0 */
    r1[40] = -INFINITY;
    for (size_t j = 64; j < 96; j++) r1[j] = 1e-41f * (float)((int)j - 80);  /* subnormals */
    for (size_t j = 0; j < k; j++) r2[j] = (j & 1) ? -0.0f : 0.0f;
    r2[70] = 3e38f;
    r2[71] = -3e38f;
    for (size_t j = 0; j < k; j++) r3[j] = (float)((int)(j % 255) - 127) + 0.5f;
    r3[0] = 127.5f;
    r3[33] = NAN;
    r3[34] = -NAN;
    for (size_t j = 0; j < k; j++) r4[j] = 1e-39f * (float)(j % 7);  /* a subnormal row */
    for (size_t j = 0; j < k; j++) r5[j] = NAN;
    r5[5] = 1.0f;
    for (int mode = 0; mode <= SK_Q8_ACT_ROW2; mode++) {
        sk_q8_act r = {0}, s = {0};
        cr_assert_eq(sk_q8_act_reserve(&r, rows, k), 0);
        cr_assert_eq(sk_q8_act_reserve(&s, rows, k), 0);
        sk_q8_quantize_act_ref(x, ldx, rows, k, mode, NULL, &r);
        memset(s.q, 0x55, rows * k);
        memset(s.qb, 0x55, rows * k);
        memset(s.r, 0x55, rows * k);
        memset(s.rb, 0x55, rows * k);
        sk_q8_quantize_act_neon(x, ldx, rows, k, mode, &s);
        cr_assert(memcmp(r.q, s.q, rows * k) == 0, "q differs (mode %d)", mode);
        cr_assert(memcmp(r.qb, s.qb, rows * k) == 0, "qb differs (mode %d)", mode);
        cr_assert(memcmp(r.xs, s.xs, rows * (k / 32) * sizeof(float)) == 0, "scales differ (mode %d)", mode);
        if (r.two_pass) {
            cr_assert(memcmp(r.r, s.r, rows * k) == 0, "r differs");
            cr_assert(memcmp(r.rb, s.rb, rows * k) == 0, "rb differs");
        }
        /* the dispatcher: NEON without zero columns, the reference with them */
        uint8_t zc[160] = {0};
        zc[2] = zc[77] = zc[159] = 1;
        sk_q8_quantize_act_ref(x, ldx, rows, k, mode, zc, &r);
        sk_q8_quantize_act(x, ldx, rows, k, mode, zc, &s);
        cr_assert(memcmp(r.q, s.q, rows * k) == 0, "dispatched q with zero columns differs");
        cr_assert(memcmp(r.xs, s.xs, rows * (k / 32) * sizeof(float)) == 0);
        sk_q8_act_free(&r);
        sk_q8_act_free(&s);
    }
    free(x);
}

/* sk_q8_kernel_name follows the CPU and the caps; sk_q8_gemm gives the reference's bits
 * whichever kernel it picks; no tiles on ARM. */
Test(q8_arm, dispatch_names_caps_and_results) {
    const int f = sk_cpu_features();
    const char *best = (f & SK_CPU_DOTPROD) && SK_Q8_HAVE_DOTPROD
                           ? ((f & SK_CPU_I8MM) && SK_Q8_HAVE_I8MM ? "i8mm" : "dotprod")
                           : "scalar";
    cr_assert_str_eq(sk_q8_kernel_name(), best);
    cr_assert_eq(sk_q8_uses_tiles(), 0);
    const size_t n_rows = 11, n_in = 128, n_out = 40;
    uint8_t *w = random_q8(n_out, n_in);
    float *x = malloc(n_rows * n_in * sizeof(float));
    for (size_t i = 0; i < n_rows * n_in; i++) x[i] = frand();
    uint8_t *pan = aligned_alloc(64, (sk_q8_panel_bytes(n_out, n_in) + 63) / 64 * 64);
    sk_q8_pack_panels(w, n_out, n_in, pan);
    sk_q8_packed p = {pan, n_in, n_out, NULL, NULL, 0};
    sk_q8_act a = {0};
    cr_assert_eq(sk_q8_act_reserve(&a, n_rows, n_in), 0);
    sk_q8_quantize_act(x, n_in, n_rows, n_in, SK_Q8_ACT_Q8X2, NULL, &a);
    float y0[11 * 40], y1[11 * 40];
    sk_q8_gemm_ref(&a, &p, 0, n_out, y0, n_out);
    static const char *names[] = {"scalar", "dotprod", "i8mm"};
    for (int cap = 2; cap >= 0; cap--) {
        sk_q8_force_kernel(cap);
        const char *want = names[cap];
        if (strcmp(best, "scalar") == 0 || (cap == 2 && strcmp(best, "dotprod") == 0)) want = best;
        cr_assert_str_eq(sk_q8_kernel_name(), want, "cap %d", cap);
        memset(y1, 0, sizeof y1);
        sk_q8_gemm(&a, &p, 0, n_out, y1, n_out);
        cr_assert(memcmp(y0, y1, sizeof y0) == 0, "%s differs", sk_q8_kernel_name());
    }
    sk_q8_force_kernel(-1);
    cr_assert_str_eq(sk_q8_kernel_name(), best);
    sk_kernels_force_level(SK_LEVEL_SCALAR);  /* the scalar level caps the int8 kernels too */
    cr_assert_str_eq(sk_q8_kernel_name(), "scalar");
    sk_kernels_force_level(-1);
    cr_assert_str_eq(sk_q8_kernel_name(), best);
    sk_q8_act_free(&a);
    free(pan);
    free(w);
    free(x);
}
#endif
