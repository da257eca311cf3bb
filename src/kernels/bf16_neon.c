/*
 * bf16_neon.c - the bf16x3 mode's matrix products on aarch64 BF16 matrix instructions
 * (FEAT_BF16: BFMMLA), the NEON counterpart of amx.c's BF16 tiles. Same arithmetic class:
 *  - Activations are split per call: hi = bf16(x) (BFCVTN, round to nearest even), lo =
 *    bf16(x - hi) (x - hi exact in f32). Products: hi.W + lo.W on SK_PACK_NEON_BF16X2 (the
 *    matrices of a BF16 file, exact), hi.Wh + lo.Wh + hi.Wl on SK_PACK_NEON_BF16X3 (f32 or
 *    f16 weights as a bf16 hi + lo pair; lo.Wl, ~2^-16 relative, is dropped). So results are
 *    within ~1e-5 relative per product of the f32 sum, not the f32 kernel's bits; tests hold
 *    the kernel to its scalar model (sk_gemm_neon_bf16_ref, the same products summed in
 *    double) and to the f32 reference, and the model to laya's golden tolerances.
 *  - BFMMLA multiplies a 2 x 4 bf16 block of activations (two rows, four inputs) by the
 *    transpose of a 2 x 4 block of weights (two outputs, four inputs) into 2 x 2 f32 sums:
 *    16 products an instruction. Without FEAT_EBF16 its adds round to odd and flush
 *    denormals (values below 1e-38: nothing a model meets).
 *  - Weight layout (sk_pack_neon_bf16): per panel of 16 outputs, per group of 4 inputs (n_in
 *    rounded up to 4 with zeros): 64 bf16, the output pair j (outputs 2j, 2j + 1) as 8
 *    values: output 2j's four inputs, then output 2j + 1's, which is BFMMLA's weight operand
 *    as it lies; X3 follows each group's 64 hi values with the 64 lo values. pstride is 16 *
 *    n_in rounded up to 4, in elements of sk_pack_elem_size() bytes (4 for X3: hi + lo).
 *  - The split activations go to the per-thread scratch (sk_kernel_scratch), rows in
 *    chunks of at most ~512 KB (bounded, stays in L2), laid out as BFMMLA's activation
 *    operand: per pair of rows, per group of 4 inputs, 8 hi values (row 2q's four inputs,
 *    then row 2q + 1's) and the 8 lo values; an odd last row is paired with zeros and not
 *    stored. For each chunk, panel by panel, the panel's weights (16 x n_in x 4 bytes) serve
 *    every 4-row block of the chunk: 16 accumulators (2 row pairs x 8 output pairs), 4
 *    activation registers and 2 weight registers, 6 BFMMLA a weight pair for X3.
 *  - Speed is not measured here (the emulator's timings mean nothing): three BF16 products
 *    beat one FMLA chain only where BFMMLA issues at more than 3/4 of FMLA's rate per
 *    instruction (16 products against 4). docs/platforms.md says what to measure.
 * Contract: the layout is made only where sk_neon_bf16_usable(); sk_gemm_neon_bf16 runs the
 * scalar model where it is not (and when the scratch cannot be had).
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "kernels.h"
#include "pool.h"
#include "../numeric/numeric.h"

static size_t round4(size_t k) { return (k + 3) / 4 * 4; }

size_t sk_neon_bf16_packed_elems(size_t n_out, size_t n_in) {
    return n_in > SIZE_MAX - 3 ? 0 : sk_packed_floats(n_out, round4(n_in));
}

/* Where weight (o, i) of panel p's group g lies, in 16-bit units from the group's start. */
static size_t group_index(size_t c, size_t t) { return (c / 2) * 8 + (c % 2) * 4 + t; }

void sk_pack_neon_bf16(const sk_packed *src, int wtype, uint16_t *out) {
    const size_t kp = round4(src->n_in), panels = (src->n_out + 15) / 16, groups = kp / 4;
    const int x3 = wtype == SK_PACK_NEON_BF16X3;
    const size_t step = x3 ? 128 : 64;
    for (size_t p = 0; p < panels; p++)
        for (size_t g = 0; g < groups; g++) {
            uint16_t *hi = out + (p * groups + g) * step, *lo = hi + 64;
            for (size_t c = 0; c < 16; c++)
                for (size_t t = 0; t < 4; t++) {
                    const size_t o = p * 16 + c, i = g * 4 + t;
                    const float v = o < src->n_out && i < src->n_in ? sk_packed_elem(src, o, i) : 0.0f;
                    const uint16_t h = sk_f32_to_bf16(v);
                    hi[group_index(c, t)] = h;
                    if (x3) lo[group_index(c, t)] = sk_f32_to_bf16(v - sk_bf16_to_f32(h));
                }
        }
}

void sk_gemm_neon_bf16_ref(const float *x, size_t ldx, size_t n_rows, const sk_packed *w,
                           float *y, size_t ldy) {
    const int x3 = w->wtype == SK_PACK_NEON_BF16X3;
    const size_t step = x3 ? 128 : 64, parts = x3 ? 2 : 1;
    const uint16_t *wd = w->data;
    for (size_t r = 0; r < n_rows; r++)
        for (size_t o = 0; o < w->n_out; o++) {
            const size_t p = o / 16, c = o % 16;
            const uint16_t *wp = wd + p * w->pstride * parts;
            double s = 0.0;
            for (size_t i = 0; i < w->n_in; i++) {
                const float xv = x[r * ldx + i];
                const uint16_t xh = sk_f32_to_bf16(xv), xl = sk_f32_to_bf16(xv - sk_bf16_to_f32(xh));
                const uint16_t *grp = wp + (i / 4) * step;
                const double wh = sk_bf16_to_f32(grp[group_index(c, i % 4)]);
                s += (double)sk_bf16_to_f32(xh) * wh + (double)sk_bf16_to_f32(xl) * wh;
                if (x3) s += (double)sk_bf16_to_f32(xh) * sk_bf16_to_f32(grp[64 + group_index(c, i % 4)]);
            }
            y[r * ldy + o] = (float)(s + (w->bias ? w->bias[o] : 0.0f));
        }
}

/* SKYCMD_KERNELS=neon keeps the NEON level and turns BFMMLA off, as =avx512 turns the AMX
 * tiles off on x86-64 (=scalar turns everything off through the level). */
int sk_neon_bf16_usable(void) {
    static int cached = -1;
    int u = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
    if (u < 0) {
        u = SK_KERNELS_HAVE_NEON_BF16 && (sk_cpu_features() & SK_CPU_ARM_BF16) && sk_kernels_cap() != SK_CAP_NEON;
        __atomic_store_n(&cached, u, __ATOMIC_RELEASE);
    }
    return u && sk_kernels_level() >= SK_LEVEL_NEON;
}

#if SK_KERNELS_HAVE_NEON_BF16
#include <arm_neon.h>

#if defined(__clang__)
#define BF16 __attribute__((target("bf16")))
#else
#define BF16 __attribute__((target("arch=armv8.2-a+bf16")))
#endif
#define INLINE __attribute__((always_inline)) static inline

/* Rows [0, nr) of x as BFMMLA activation operands (see the top), rows up to `rows` (even)
 * zero. */
BF16 static void split_rows(const float *x, size_t ldx, size_t nr, size_t rows, size_t k,
                            uint16_t *out) {
    const size_t groups = round4(k) / 4, kw = k / 4 * 4;
    for (size_t q = 0; q < rows / 2; q++) {
        const size_t r0 = 2 * q, r1 = 2 * q + 1;
        const float *x0 = r0 < nr ? x + r0 * ldx : NULL, *x1 = r1 < nr ? x + r1 * ldx : NULL;
        uint16_t *o = out + q * groups * 16;
        for (size_t g = 0; g < groups; g++, o += 16) {
            float32x4_t v0 = vdupq_n_f32(0.0f), v1 = vdupq_n_f32(0.0f);
            if (g * 4 < kw) {
                if (x0) v0 = vld1q_f32(x0 + g * 4);
                if (x1) v1 = vld1q_f32(x1 + g * 4);
            } else {  /* the inputs past k are zeros */
                float t0[4] = {0}, t1[4] = {0};
                for (size_t t = 0; g * 4 + t < k; t++) {
                    if (x0) t0[t] = x0[g * 4 + t];
                    if (x1) t1[t] = x1[g * 4 + t];
                }
                v0 = vld1q_f32(t0);
                v1 = vld1q_f32(t1);
            }
            const bfloat16x8_t h = vcvtq_high_bf16_f32(vcvtq_low_bf16_f32(v0), v1);
            const float32x4_t l0 = vsubq_f32(v0, vcvtq_low_f32_bf16(h));
            const float32x4_t l1 = vsubq_f32(v1, vcvtq_high_f32_bf16(h));
            const bfloat16x8_t l = vcvtq_high_bf16_f32(vcvtq_low_bf16_f32(l0), l1);
            vst1q_bf16((bfloat16_t *)(void *)o, h);
            vst1q_bf16((bfloat16_t *)(void *)(o + 8), l);
        }
    }
}

/* Row pairs q0.. (np of them, 1 or 2) by panel p: the 2 x 2 sums of BFMMLA put back in row
 * order, + bias, the first nc outputs of rows below nr stored. */
BF16 INLINE void tile(const uint16_t *xs, size_t groups, const uint16_t *wp, int x3, int np,
                      size_t q0, size_t nr, size_t nc, const float *bias, float *y, size_t ldy) {
    float32x4_t acc[2][8];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 8; j++) acc[i][j] = vdupq_n_f32(0.0f);
    const uint16_t *a0 = xs + q0 * groups * 16, *a1 = a0 + groups * 16, *b = wp;
    const size_t step = x3 ? 128 : 64;
    for (size_t g = 0; g < groups; g++, b += step) {
        const bfloat16x8_t ah0 = vld1q_bf16((const bfloat16_t *)(const void *)(a0 + g * 16));
        const bfloat16x8_t al0 = vld1q_bf16((const bfloat16_t *)(const void *)(a0 + g * 16 + 8));
        bfloat16x8_t ah1 = ah0, al1 = al0;
        if (np == 2) {
            ah1 = vld1q_bf16((const bfloat16_t *)(const void *)(a1 + g * 16));
            al1 = vld1q_bf16((const bfloat16_t *)(const void *)(a1 + g * 16 + 8));
        }
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            const bfloat16x8_t bh = vld1q_bf16((const bfloat16_t *)(const void *)(b + j * 8));
            acc[0][j] = vbfmmlaq_f32(acc[0][j], ah0, bh);
            acc[0][j] = vbfmmlaq_f32(acc[0][j], al0, bh);
            if (np == 2) {
                acc[1][j] = vbfmmlaq_f32(acc[1][j], ah1, bh);
                acc[1][j] = vbfmmlaq_f32(acc[1][j], al1, bh);
            }
            if (x3) {
                const bfloat16x8_t bl = vld1q_bf16((const bfloat16_t *)(const void *)(b + 64 + j * 8));
                acc[0][j] = vbfmmlaq_f32(acc[0][j], ah0, bl);
                if (np == 2) acc[1][j] = vbfmmlaq_f32(acc[1][j], ah1, bl);
            }
        }
    }
    for (int i = 0; i < np; i++)
        for (int half = 0; half < 2; half++) {
            const size_t r = 2 * (q0 + (size_t)i) + (size_t)half;
            if (r >= nr) continue;
            float row[16];
            for (int jj = 0; jj < 4; jj++) {
                const float64x2_t e = vreinterpretq_f64_f32(acc[i][2 * jj]);
                const float64x2_t f = vreinterpretq_f64_f32(acc[i][2 * jj + 1]);
                float32x4_t v = vreinterpretq_f32_f64(half ? vzip2q_f64(e, f) : vzip1q_f64(e, f));
                if (bias) v = vaddq_f32(v, vld1q_f32(bias + 4 * jj));
                vst1q_f32(row + 4 * jj, v);
            }
            memcpy(y + r * ldy, row, nc * sizeof(float));
        }
}

BF16 static void gemm_bfmmla(const float *x, size_t ldx, size_t n_rows, const sk_packed *w,
                             float *y, size_t ldy) {
    const size_t groups = round4(w->n_in) / 4, per_row = groups * 8;  /* hi + lo per row */
    /* rows per chunk: a multiple of 4, the split at most ~512 KB */
    size_t chunk = (size_t)262144 / (per_row ? per_row : 1) / 4 * 4;
    if (chunk < 4) chunk = 4;
    if (chunk > (n_rows + 3) / 4 * 4) chunk = (n_rows + 3) / 4 * 4;
    uint16_t *xs = n_rows ? sk_kernel_scratch(SK_SCRATCH_BF16_SPLIT, chunk * per_row * sizeof(uint16_t)) : NULL;
    if (!xs) {
        sk_gemm_neon_bf16_ref(x, ldx, n_rows, w, y, ldy);
        return;
    }
    const int x3 = w->wtype == SK_PACK_NEON_BF16X3;
    const size_t parts = x3 ? 2 : 1, panels = (w->n_out + 15) / 16;
    for (size_t r0 = 0; r0 < n_rows; r0 += chunk) {
        const size_t nr = n_rows - r0 < chunk ? n_rows - r0 : chunk, pairs = (nr + 1) / 2;
        split_rows(x + r0 * ldx, ldx, nr, pairs * 2, w->n_in, xs);
        for (size_t p = 0; p < panels; p++) {
            const uint16_t *wp = (const uint16_t *)w->data + p * w->pstride * parts;
            const size_t nc = w->n_out - p * 16 < 16 ? w->n_out - p * 16 : 16;
            float bias[16] = {0};
            if (w->bias) memcpy(bias, w->bias + p * 16, nc * sizeof(float));
            float *yp = y + r0 * ldy + p * 16;
            size_t q = 0;
            for (; q + 2 <= pairs; q += 2)
                if (x3) tile(xs, groups, wp, 1, 2, q, nr, nc, w->bias ? bias : NULL, yp, ldy);
                else tile(xs, groups, wp, 0, 2, q, nr, nc, w->bias ? bias : NULL, yp, ldy);
            if (q < pairs) tile(xs, groups, wp, x3, 1, q, nr, nc, w->bias ? bias : NULL, yp, ldy);
        }
    }
}
#endif

/* The layout is made only where BFMMLA may run; the check keeps a caller that holds one
 * elsewhere (a test, a capped level) on the scalar model instead of an illegal instruction. */
void sk_gemm_neon_bf16(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,
                       size_t ldy) {
#if SK_KERNELS_HAVE_NEON_BF16
    if (sk_neon_bf16_usable()) {
        gemm_bfmmla(x, ldx, n_rows, w, y, ldy);
        return;
    }
#endif
    sk_gemm_neon_bf16_ref(x, ldx, n_rows, w, y, ldy);
}
