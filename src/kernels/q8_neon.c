/*
 * q8_neon.c - aarch64 int8 kernels on the panel layout of q8.h: activation quantization
 * (Advanced SIMD), the Q8_0 GEMM with SDOT (FEAT_DotProd) and with SMMLA (FEAT_I8MM). They
 * must reproduce sk_q8_quantize_act_ref byte for byte and sk_q8_gemm_ref bit for bit. The
 * GEMMs carry their own target attribute, so the file builds with the baseline -march; the
 * dispatcher (q8_ref.c) calls one only when sk_cpu_features() reports its instructions and
 * SK_Q8_HAVE_DOTPROD / SK_Q8_HAVE_I8MM (q8.h) say this compiler built it.
 *
 * Fixed arithmetic (q8.h): per output and block the exact int32 sum isum (Q8x2: the q pass
 * shifted left by 7, then the r pass added to it: 128 dq + dr exactly), then
 * acc = fma(xs * wd, (float)isum, acc) lane by lane, blocks in order; + bias at the end
 * (nothing added without a bias, so -0 stays -0). Row-scaled matrices: one int32 sum over
 * the whole row, then y = fma(xs * wd, (float)isum, bias or +0). f16 scales widen exactly
 * (FCVTL); int32 -> f32 rounds to nearest even (FPCR default), as C's conversion.
 *
 *  - SDOT: the chunk's quants [8][16][4] are SDOT's operand as they lie: group j of 4 bytes
 *    for 4 outputs is one q-register, and vdotq_laneq_s32 broadcasts 4 activation bytes from
 *    the row's two q-registers. Per block tile 4 rows x 8 outputs (8 int32 sums, 8 f32
 *    accumulators, 8 activation registers, 2 weight registers streamed per group: 16 SDOT
 *    per 2 weight loads). Row-scaled tile 4 rows x 16 outputs (16 int32 sums, no per-block
 *    float step).
 *  - SMMLA: one instruction is a 2 rows x 2 outputs x 8 inputs product (twice SDOT's 16
 *    MACs). Its weight operand wants 8 consecutive inputs of one output, which the chunk
 *    keeps in two groups 64 bytes apart: one ZIP1/ZIP2 (32-bit lanes) of groups 2t and 2t+1
 *    gives the operands of two output pairs; it is shared by every row pair of the tile. The
 *    activation operand (8 bytes of two rows) is two 64-bit loads. Sums stay in SMMLA's 2x2
 *    layout (lanes: r c, r c+1, r+1 c, r+1 c+1) through the per-block float step (the scales
 *    are laid out the same way: [xs_r, xs_r, xs_r+1, xs_r+1] * [wd_c, wd_c+1, wd_c, wd_c+1])
 *    and are put back in row order once per tile. Per block tile 4 rows x 8 outputs:
 *    32 SMMLA + 16 ZIP + 8 activation pairs, against 64 SDOT for the same tile; row-scaled
 *    tile 8 rows x 8 outputs: 64 SMMLA + 16 ZIP + 16 pairs, against 128 SDOT.
 *  - Odd row counts: the SMMLA tiles' missing last row is fed zeros and not stored.
 *  - The tiles' pair order (sk_q8_packed.pairs, AMX machines only) goes to the reference.
 */
#include "q8.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#include <string.h>

#define INLINE __attribute__((always_inline)) static inline
#if defined(__clang__)
#define DOTPROD __attribute__((target("dotprod")))
#define I8MM __attribute__((target("dotprod,i8mm")))
#else
/* GCC's arm_neon.h declares these intrinsics under "arch=armv8.2-a+..." and inlines them
 * only into functions whose ISA is a superset of that. */
#define DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#define I8MM __attribute__((target("arch=armv8.2-a+dotprod+i8mm")))
#endif

/* ------------------------------------------------------------------ activations ---- */
/* The reference's arithmetic lane by lane: max |x| with NaN ignored (NaN lanes cleared
 * before the max), the same scalar d and 1 / d, the same product; NaN -> 0, clamp to
 * [-127, 127], then FCVTNS (round half to even, whatever FPCR says). */

INLINE float32x4_t abs_ord(float32x4_t v) {
    return vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(vabsq_f32(v)), vceqq_f32(v, v)));
}

INLINE int32x4_t q8_cvt(float32x4_t s) {
    s = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(s), vceqq_f32(s, s)));
    s = vminq_f32(vmaxq_f32(s, vdupq_n_f32(-127.0f)), vdupq_n_f32(127.0f));
    return vcvtnq_s32_f32(s);
}

/* 16 int32 within [-127, 127] to 16 bytes in order. */
INLINE int8x16_t narrow16(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d) {
    const int16x8_t ab = vmovn_high_s32(vmovn_s32(a), b), cd = vmovn_high_s32(vmovn_s32(c), d);
    return vmovn_high_s16(vmovn_s16(ab), cd);
}

INLINE void store32(int8_t *q, uint8_t *qb, int8x16_t lo, int8x16_t hi) {
    const uint8x16_t bias = vdupq_n_u8(0x80);
    vst1q_s8(q, lo);
    vst1q_s8(q + 16, hi);
    vst1q_u8(qb, veorq_u8(vreinterpretq_u8_s8(lo), bias));
    vst1q_u8(qb + 16, veorq_u8(vreinterpretq_u8_s8(hi), bias));
}

void sk_q8_quantize_act_neon(const float *x, size_t ldx, size_t n_rows, size_t k, int mode,
                             sk_q8_act *a) {
    const size_t nb = k / 32;
    const int two = mode == SK_Q8_ACT_Q8X2 || mode == SK_Q8_ACT_ROW2,
              row = mode == SK_Q8_ACT_ROW || mode == SK_Q8_ACT_ROW2;
    a->two_pass = two;
    a->n_rows = n_rows;
    a->n_blocks = nb;
    for (size_t r = 0; r < n_rows; r++) {
        const float *xr = x + r * ldx;
        float row_max = 0.0f;
        if (row) {
            float32x4_t m = vdupq_n_f32(0.0f);
            for (size_t c = 0; c < nb * 32; c += 4) m = vmaxq_f32(m, abs_ord(vld1q_f32(xr + c)));
            row_max = vmaxvq_f32(m);
        }
        /* one row scale: its step and inverse once, not per block (the same values) */
        const float row_d = row_max / 127.0f, row_id = row_d != 0.0f ? 1.0f / row_d : 0.0f;
        for (size_t b = 0; b < nb; b++) {
            float32x4_t v[8], m = vdupq_n_f32(0.0f);
            for (int i = 0; i < 8; i++) {
                v[i] = vld1q_f32(xr + b * 32 + (size_t)i * 4);
                m = vmaxq_f32(m, abs_ord(v[i]));
            }
            float d = row_d, id = row_id;
            if (!row) {
                d = vmaxvq_f32(m) / 127.0f;
                id = d != 0.0f ? 1.0f / d : 0.0f;
            }
            const float32x4_t vid = vdupq_n_f32(id);
            float32x4_t s[8];
            int32x4_t q[8];
            for (int i = 0; i < 8; i++) {
                s[i] = vmulq_f32(v[i], vid);
                q[i] = q8_cvt(s[i]);
            }
            const size_t off = (r * nb + b) * 32;
            store32(a->q + off, a->qb + off, narrow16(q[0], q[1], q[2], q[3]),
                    narrow16(q[4], q[5], q[6], q[7]));
            if (two) {
                int32x4_t t[8];
                for (int i = 0; i < 8; i++)
                    t[i] = q8_cvt(vmulq_f32(vsubq_f32(s[i], vcvtq_f32_s32(q[i])), vdupq_n_f32(128.0f)));
                store32(a->r + off, a->rb + off, narrow16(t[0], t[1], t[2], t[3]),
                        narrow16(t[4], t[5], t[6], t[7]));
            }
            a->xs[r * nb + b] = two ? d / 128.0f : d;
        }
    }
}

/* ------------------------------------------------------------------ common --------- */

/* The 8 f16 scales at p (16 bytes) widened: outputs 0-3 and 4-7. */
INLINE void load_wd8(const uint8_t *p, float32x4_t *lo, float32x4_t *hi) {
    const float16x8_t h = vreinterpretq_f16_u8(vld1q_u8(p));
    *lo = vcvt_f32_f16(vget_low_f16(h));
    *hi = vcvt_high_f32_f16(h);
}

/* n (<= 4 * nv) floats of v[] to y. */
INLINE void store_part(float *y, const float32x4_t *v, int nv, size_t n) {
    float tmp[16];
    for (int i = 0; i < nv; i++) vst1q_f32(tmp + 4 * i, v[i]);
    memcpy(y, tmp, n * sizeof(float));
}

/* ------------------------------------------------------------------ SDOT ----------- */

#if SK_Q8_HAVE_DOTPROD

#define DR 4  /* rows of a tile */

/* One block's products into s[r][0..1] (outputs 0-3, 4-7 of the 8 at ch, group j at
 * ch + 64 j) for the rows at x + r * xstride (32 bytes each). */
DOTPROD INLINE void block_dot8(const uint8_t *ch, const int8_t *x, size_t xstride, int nr,
                               int32x4_t s[DR][2]) {
    int8x16_t X[DR][2];
    for (int r = 0; r < DR; r++) {
        if (r >= nr) {
            X[r][0] = X[r][1] = vdupq_n_s8(0);
            continue;
        }
        X[r][0] = vld1q_s8(x + (size_t)r * xstride);
        X[r][1] = vld1q_s8(x + (size_t)r * xstride + 16);
    }
    const int8_t *w = (const int8_t *)ch;
#define SK_DOT8(j)                                                                        \
    do {                                                                                  \
        const int8x16_t W0 = vld1q_s8(w + (j) * 64), W1 = vld1q_s8(w + (j) * 64 + 16);    \
        for (int r = 0; r < DR; r++) {                                                    \
            if (r >= nr) break;                                                           \
            s[r][0] = vdotq_laneq_s32(s[r][0], W0, X[r][(j) / 4], (j) % 4);               \
            s[r][1] = vdotq_laneq_s32(s[r][1], W1, X[r][(j) / 4], (j) % 4);               \
        }                                                                                 \
    } while (0)
    SK_DOT8(0); SK_DOT8(1); SK_DOT8(2); SK_DOT8(3);
    SK_DOT8(4); SK_DOT8(5); SK_DOT8(6); SK_DOT8(7);
#undef SK_DOT8
}

/* Rows [r0, r0 + nr), outputs 8h..8h+7 of panel p (nc of them stored). */
DOTPROD INLINE void tile_dot(const sk_q8_act *a, const sk_q8_packed *w, size_t r0, int nr,
                             size_t p, int h, size_t nc, float *y, size_t ldy) {
    const size_t nb = w->n_in / 32, xstride = nb * 32;
    const int two = a->two_pass;
    const uint8_t *ch = w->panels + p * nb * SK_Q8_CHUNK;
    float32x4_t acc[DR][2];
    for (int r = 0; r < DR; r++) acc[r][0] = acc[r][1] = vdupq_n_f32(0.0f);
    for (size_t b = 0; b < nb; b++, ch += SK_Q8_CHUNK) {
        int32x4_t s[DR][2];
        for (int r = 0; r < DR; r++) s[r][0] = s[r][1] = vdupq_n_s32(0);
        block_dot8(ch + (size_t)h * 32, a->q + (r0 * nb + b) * 32, xstride, nr, s);
        if (two) {
            for (int r = 0; r < DR; r++) {
                s[r][0] = vshlq_n_s32(s[r][0], 7);
                s[r][1] = vshlq_n_s32(s[r][1], 7);
            }
            block_dot8(ch + (size_t)h * 32, a->r + (r0 * nb + b) * 32, xstride, nr, s);
        }
        float32x4_t wd[2];
        load_wd8(ch + SK_Q8_CHUNK_SCALES + (size_t)h * 16, &wd[0], &wd[1]);
        for (int r = 0; r < DR; r++) {
            if (r >= nr) break;
            const float32x4_t xs = vdupq_n_f32(a->xs[(r0 + (size_t)r) * nb + b]);
            for (int i = 0; i < 2; i++)
                acc[r][i] = vfmaq_f32(acc[r][i], vmulq_f32(xs, wd[i]), vcvtq_f32_s32(s[r][i]));
        }
    }
    const size_t o = p * SK_Q8_PANEL + (size_t)h * 8;
    float32x4_t bias[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    if (w->bias) {
        float bt[8] = {0};
        memcpy(bt, w->bias + o, nc * sizeof(float));
        bias[0] = vld1q_f32(bt);
        bias[1] = vld1q_f32(bt + 4);
    }
    for (int r = 0; r < DR; r++) {
        if (r >= nr) break;
        float32x4_t v[2];
        for (int i = 0; i < 2; i++) v[i] = w->bias ? vaddq_f32(acc[r][i], bias[i]) : acc[r][i];
        float *yr = y + (r0 + (size_t)r) * ldy + o;
        if (nc == 8) {
            vst1q_f32(yr, v[0]);
            vst1q_f32(yr + 4, v[1]);
        } else {
            store_part(yr, v, 2, nc);
        }
    }
}

/* Row-scaled weights: rows [r0, r0 + nr), the 16 outputs of panel p (nc stored); the int32
 * sums run over all blocks, the float step comes once. */
DOTPROD INLINE void tile_dot_rows(const sk_q8_act *a, const sk_q8_packed *w, size_t r0, int nr,
                                  size_t p, size_t nc, float *y, size_t ldy) {
    const size_t nb = w->n_in / 32, xstride = nb * 32;
    const uint8_t *ch = w->panels + p * nb * SK_Q8_CHUNK;
    int32x4_t s[DR][4];
    for (int r = 0; r < DR; r++) s[r][0] = s[r][1] = s[r][2] = s[r][3] = vdupq_n_s32(0);
    for (size_t b = 0; b < nb; b++, ch += SK_Q8_CHUNK) {
        const int8_t *x = a->q + (r0 * nb + b) * 32;
        int8x16_t X[DR][2];
        for (int r = 0; r < DR; r++) {
            if (r >= nr) {
                X[r][0] = X[r][1] = vdupq_n_s8(0);
                continue;
            }
            X[r][0] = vld1q_s8(x + (size_t)r * xstride);
            X[r][1] = vld1q_s8(x + (size_t)r * xstride + 16);
        }
        const int8_t *wq = (const int8_t *)ch;
#define SK_DOT16(j)                                                                       \
    do {                                                                                  \
        int8x16_t W[4];                                                                   \
        for (int i = 0; i < 4; i++) W[i] = vld1q_s8(wq + (j) * 64 + 16 * i);              \
        for (int r = 0; r < DR; r++) {                                                    \
            if (r >= nr) break;                                                           \
            for (int i = 0; i < 4; i++)                                                   \
                s[r][i] = vdotq_laneq_s32(s[r][i], W[i], X[r][(j) / 4], (j) % 4);         \
        }                                                                                 \
    } while (0)
        SK_DOT16(0); SK_DOT16(1); SK_DOT16(2); SK_DOT16(3);
        SK_DOT16(4); SK_DOT16(5); SK_DOT16(6); SK_DOT16(7);
#undef SK_DOT16
    }
    const size_t o = p * SK_Q8_PANEL;
    const uint8_t *meta = w->panels + p * nb * SK_Q8_CHUNK + SK_Q8_CHUNK_SCALES;
    float32x4_t wd[4], bias[4];
    load_wd8(meta, &wd[0], &wd[1]);
    load_wd8(meta + 16, &wd[2], &wd[3]);
    float bt[16] = {0};
    if (w->bias) memcpy(bt, w->bias + o, nc * sizeof(float));
    for (int i = 0; i < 4; i++) bias[i] = vld1q_f32(bt + 4 * i);
    for (int r = 0; r < DR; r++) {
        if (r >= nr) break;
        const float32x4_t xs = vdupq_n_f32(a->xs[(r0 + (size_t)r) * nb]);
        float32x4_t v[4];
        for (int i = 0; i < 4; i++) v[i] = vfmaq_f32(bias[i], vmulq_f32(xs, wd[i]), vcvtq_f32_s32(s[r][i]));
        float *yr = y + (r0 + (size_t)r) * ldy + o;
        if (nc == 16)
            for (int i = 0; i < 4; i++) vst1q_f32(yr + 4 * i, v[i]);
        else
            store_part(yr, v, 4, nc);
    }
}

/* The loop nest for one kind of weights (rows: row-scaled), instantiated twice so the kind
 * is decided once per call rather than per tile. */
DOTPROD INLINE void gemm_dot_t(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                               float *y, size_t ldy, const int rows) {
    const size_t n = a->n_rows;
    for (size_t p = o0 / SK_Q8_PANEL; p * SK_Q8_PANEL < o1; p++) {
        if (rows) {
            const size_t base = p * SK_Q8_PANEL;
            const size_t nc = o1 - base < SK_Q8_PANEL ? o1 - base : SK_Q8_PANEL;
            for (size_t r0 = 0; r0 < n; r0 += DR) {
                const int nr = n - r0 < DR ? (int)(n - r0) : DR;
                if (nr == DR) tile_dot_rows(a, w, r0, DR, p, nc, y, ldy);
                else tile_dot_rows(a, w, r0, nr, p, nc, y, ldy);
            }
            continue;
        }
        for (int h = 0; h < 2; h++) {
            const size_t base = p * SK_Q8_PANEL + (size_t)h * 8;
            if (base >= o1) break;
            const size_t nc = o1 - base < 8 ? o1 - base : 8;
            for (size_t r0 = 0; r0 < n; r0 += DR) {
                const int nr = n - r0 < DR ? (int)(n - r0) : DR;
                if (nr == DR) tile_dot(a, w, r0, DR, p, h, nc, y, ldy);
                else tile_dot(a, w, r0, nr, p, h, nc, y, ldy);
            }
        }
    }
}

DOTPROD void sk_q8_gemm_dotprod(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                                float *y, size_t ldy) {
    if (w->pairs)  /* the tiles' order (q8.h): not this kernel's */
        sk_q8_gemm_ref(a, w, o0, o1, y, ldy);
    else if (w->row_sum128)
        gemm_dot_t(a, w, o0, o1, y, ldy, 1);
    else
        gemm_dot_t(a, w, o0, o1, y, ldy, 0);
}

#else  /* this compiler cannot build SDOT under a target attribute: never dispatched */
void sk_q8_gemm_dotprod(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                        float *y, size_t ldy) {
    sk_q8_gemm_ref(a, w, o0, o1, y, ldy);
}
#endif /* SK_Q8_HAVE_DOTPROD */

/* ------------------------------------------------------------------ SMMLA ---------- */

#if SK_Q8_HAVE_I8MM

#define MP 2  /* row pairs of a per-block tile (4 rows x 8 outputs) */
#define RP 4  /* row pairs of a row-scaled tile (8 rows x 8 outputs) */

/* SMMLA's weight operands for input slice t (inputs 8t..8t+7) of the 8 outputs at ch:
 * B[q] = [output 2q: inputs 8t..8t+7, output 2q+1: the same], from groups 2t and 2t+1. */
I8MM INLINE void weights_mm(const uint8_t *ch, int t, int8x16_t B[4]) {
    const int32x4_t g0 = vreinterpretq_s32_u8(vld1q_u8(ch + (size_t)(2 * t) * 64));
    const int32x4_t g1 = vreinterpretq_s32_u8(vld1q_u8(ch + (size_t)(2 * t) * 64 + 16));
    const int32x4_t h0 = vreinterpretq_s32_u8(vld1q_u8(ch + (size_t)(2 * t + 1) * 64));
    const int32x4_t h1 = vreinterpretq_s32_u8(vld1q_u8(ch + (size_t)(2 * t + 1) * 64 + 16));
    B[0] = vreinterpretq_s8_s32(vzip1q_s32(g0, h0));
    B[1] = vreinterpretq_s8_s32(vzip2q_s32(g0, h0));
    B[2] = vreinterpretq_s8_s32(vzip1q_s32(g1, h1));
    B[3] = vreinterpretq_s8_s32(vzip2q_s32(g1, h1));
}

/* SMMLA's activation operand: inputs 8t..8t+7 of the rows at x and x1 (x1 NULL: zeros). */
INLINE int8x16_t act_mm(const int8_t *x, const int8_t *x1, int t) {
    return vcombine_s8(vld1_s8(x + 8 * t), x1 ? vld1_s8(x1 + 8 * t) : vdup_n_s8(0));
}

/* One block's products: s[p][q] += the 2 x 2 products of rows (2p, 2p + 1) and outputs
 * (2q, 2q + 1) of the 8 at ch; np row pairs, the last one's second row present or not. */
I8MM INLINE void block_mm(const uint8_t *ch, const int8_t *x, size_t xstride, int np, int odd,
                          int32x4_t s[][4], const int NP) {
    for (int t = 0; t < 4; t++) {
        int8x16_t B[4];
        weights_mm(ch, t, B);
        for (int p = 0; p < NP; p++) {
            if (p >= np) break;
            const int8_t *x0 = x + (size_t)(2 * p) * xstride;
            const int8x16_t A = act_mm(x0, odd && p == np - 1 ? NULL : x0 + xstride, t);
            for (int q = 0; q < 4; q++) s[p][q] = vmmlaq_s32(s[p][q], A, B[q]);
        }
    }
}

/* Rows [r0, r0 + nr), outputs 8h..8h+7 of panel p (nc of them stored). */
I8MM INLINE void tile_mm(const sk_q8_act *a, const sk_q8_packed *w, size_t r0, int nr, size_t p,
                         int h, size_t nc, float *y, size_t ldy) {
    const size_t nb = w->n_in / 32, xstride = nb * 32;
    const int two = a->two_pass, np = (nr + 1) / 2, odd = nr & 1;
    const uint8_t *ch = w->panels + p * nb * SK_Q8_CHUNK;
    float32x4_t acc[MP][4];
    for (int i = 0; i < MP; i++)
        for (int q = 0; q < 4; q++) acc[i][q] = vdupq_n_f32(0.0f);
    for (size_t b = 0; b < nb; b++, ch += SK_Q8_CHUNK) {
        int32x4_t s[MP][4];
        for (int i = 0; i < MP; i++)
            for (int q = 0; q < 4; q++) s[i][q] = vdupq_n_s32(0);
        block_mm(ch + (size_t)h * 32, a->q + (r0 * nb + b) * 32, xstride, np, odd, s, MP);
        if (two) {
            for (int i = 0; i < MP; i++)
                for (int q = 0; q < 4; q++) s[i][q] = vshlq_n_s32(s[i][q], 7);
            block_mm(ch + (size_t)h * 32, a->r + (r0 * nb + b) * 32, xstride, np, odd, s, MP);
        }
        /* the scales in SMMLA's layout: [wd_2q, wd_2q+1, wd_2q, wd_2q+1] */
        float32x4_t wlo, whi, wd[4];
        load_wd8(ch + SK_Q8_CHUNK_SCALES + (size_t)h * 16, &wlo, &whi);
        wd[0] = vreinterpretq_f32_u64(vdupq_laneq_u64(vreinterpretq_u64_f32(wlo), 0));
        wd[1] = vreinterpretq_f32_u64(vdupq_laneq_u64(vreinterpretq_u64_f32(wlo), 1));
        wd[2] = vreinterpretq_f32_u64(vdupq_laneq_u64(vreinterpretq_u64_f32(whi), 0));
        wd[3] = vreinterpretq_f32_u64(vdupq_laneq_u64(vreinterpretq_u64_f32(whi), 1));
        for (int i = 0; i < MP; i++) {
            if (i >= np) break;
            const size_t xi = (r0 + (size_t)(2 * i)) * nb + b;
            const float x1 = odd && i == np - 1 ? 0.0f : a->xs[xi + nb];
            const float32x4_t xs = vcombine_f32(vdup_n_f32(a->xs[xi]), vdup_n_f32(x1));
            for (int q = 0; q < 4; q++)
                acc[i][q] = vfmaq_f32(acc[i][q], vmulq_f32(xs, wd[q]), vcvtq_f32_s32(s[i][q]));
        }
    }
    const size_t o = p * SK_Q8_PANEL + (size_t)h * 8;
    float32x4_t bias[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    if (w->bias) {
        float bt[8] = {0};
        memcpy(bt, w->bias + o, nc * sizeof(float));
        bias[0] = vld1q_f32(bt);
        bias[1] = vld1q_f32(bt + 4);
    }
    for (int i = 0; i < MP; i++) {
        if (i >= np) break;
        for (int e = 0; e < 2; e++) {  /* e: the pair's first or second row */
            if (e == 1 && odd && i == np - 1) break;
            float32x4_t v[2];
            for (int k = 0; k < 2; k++) {
                const uint64x2_t l = vreinterpretq_u64_f32(acc[i][2 * k]);
                const uint64x2_t u = vreinterpretq_u64_f32(acc[i][2 * k + 1]);
                v[k] = vreinterpretq_f32_u64(e ? vzip2q_u64(l, u) : vzip1q_u64(l, u));
                if (w->bias) v[k] = vaddq_f32(v[k], bias[k]);
            }
            float *yr = y + (r0 + (size_t)(2 * i + e)) * ldy + o;
            if (nc == 8) {
                vst1q_f32(yr, v[0]);
                vst1q_f32(yr + 4, v[1]);
            } else {
                store_part(yr, v, 2, nc);
            }
        }
    }
}

/* Row-scaled weights: rows [r0, r0 + nr) (nr <= 8), outputs 8h..8h+7 of panel p. */
I8MM INLINE void tile_mm_rows(const sk_q8_act *a, const sk_q8_packed *w, size_t r0, int nr,
                              size_t p, int h, size_t nc, float *y, size_t ldy) {
    const size_t nb = w->n_in / 32, xstride = nb * 32;
    const int np = (nr + 1) / 2, odd = nr & 1;
    const uint8_t *ch = w->panels + p * nb * SK_Q8_CHUNK;
    int32x4_t s[RP][4];
    for (int i = 0; i < RP; i++)
        for (int q = 0; q < 4; q++) s[i][q] = vdupq_n_s32(0);
    for (size_t b = 0; b < nb; b++, ch += SK_Q8_CHUNK)
        block_mm(ch + (size_t)h * 32, a->q + (r0 * nb + b) * 32, xstride, np, odd, s, RP);
    const size_t o = p * SK_Q8_PANEL + (size_t)h * 8;
    float32x4_t wd[2], bias[2];
    load_wd8(w->panels + p * nb * SK_Q8_CHUNK + SK_Q8_CHUNK_SCALES + (size_t)h * 16, &wd[0], &wd[1]);
    float bt[8] = {0};
    if (w->bias) memcpy(bt, w->bias + o, nc * sizeof(float));
    bias[0] = vld1q_f32(bt);
    bias[1] = vld1q_f32(bt + 4);
    for (int i = 0; i < RP; i++) {
        if (i >= np) break;
        for (int e = 0; e < 2; e++) {
            if (e == 1 && odd && i == np - 1) break;
            const size_t r = r0 + (size_t)(2 * i + e);
            const float32x4_t xs = vdupq_n_f32(a->xs[r * nb]);
            float32x4_t v[2];
            for (int k = 0; k < 2; k++) {
                const int64x2_t l = vreinterpretq_s64_s32(s[i][2 * k]);
                const int64x2_t u = vreinterpretq_s64_s32(s[i][2 * k + 1]);
                const int32x4_t is = vreinterpretq_s32_s64(e ? vzip2q_s64(l, u) : vzip1q_s64(l, u));
                v[k] = vfmaq_f32(bias[k], vmulq_f32(xs, wd[k]), vcvtq_f32_s32(is));
            }
            float *yr = y + r * ldy + o;
            if (nc == 8) {
                vst1q_f32(yr, v[0]);
                vst1q_f32(yr + 4, v[1]);
            } else {
                store_part(yr, v, 2, nc);
            }
        }
    }
}

I8MM INLINE void gemm_mm_t(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                           float *y, size_t ldy, const int rows) {
    const size_t n = a->n_rows;
    const size_t R = rows ? 2 * RP : 2 * MP;
    for (size_t p = o0 / SK_Q8_PANEL; p * SK_Q8_PANEL < o1; p++)
        for (int h = 0; h < 2; h++) {
            const size_t base = p * SK_Q8_PANEL + (size_t)h * 8;
            if (base >= o1) break;
            const size_t nc = o1 - base < 8 ? o1 - base : 8;
            for (size_t r0 = 0; r0 < n; r0 += R) {
                const int nr = n - r0 < R ? (int)(n - r0) : (int)R;
                if (rows && nr == 2 * RP)
                    tile_mm_rows(a, w, r0, 2 * RP, p, h, nc, y, ldy);
                else if (rows)
                    tile_mm_rows(a, w, r0, nr, p, h, nc, y, ldy);
                else if (nr == 2 * MP)
                    tile_mm(a, w, r0, 2 * MP, p, h, nc, y, ldy);
                else
                    tile_mm(a, w, r0, nr, p, h, nc, y, ldy);
            }
        }
}

I8MM void sk_q8_gemm_i8mm(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                          float *y, size_t ldy) {
    if (w->pairs)  /* the tiles' order (q8.h): not this kernel's */
        sk_q8_gemm_ref(a, w, o0, o1, y, ldy);
    else if (w->row_sum128)
        gemm_mm_t(a, w, o0, o1, y, ldy, 1);
    else
        gemm_mm_t(a, w, o0, o1, y, ldy, 0);
}

#else  /* this compiler cannot build SMMLA under a target attribute: never dispatched */
void sk_q8_gemm_i8mm(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                     float *y, size_t ldy) {
    sk_q8_gemm_ref(a, w, o0, o1, y, ldy);
}
#endif /* SK_Q8_HAVE_I8MM */

#else
/* Not aarch64: the dispatcher never calls these; they exist so that the symbols resolve. */
void sk_q8_quantize_act_neon(const float *x, size_t ldx, size_t n_rows, size_t k, int mode,
                             sk_q8_act *a) {
    sk_q8_quantize_act_ref(x, ldx, n_rows, k, mode, NULL, a);
}
void sk_q8_gemm_dotprod(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                        float *y, size_t ldy) {
    sk_q8_gemm_ref(a, w, o0, o1, y, ldy);
}
void sk_q8_gemm_i8mm(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                     float *y, size_t ldy) {
    sk_q8_gemm_ref(a, w, o0, o1, y, ldy);
}
#endif
