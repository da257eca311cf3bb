/*
 * q8_x86.c - AVX2 and AVX-512 VNNI int8 GEMM kernels on the panel layout of q8.h; they must
 * reproduce sk_q8_gemm_ref bit for bit. Each function carries its own target attribute; the
 * dispatcher calls one only when sk_cpu_features() reports its instructions.
 *
 * Both put one output per 32-bit lane, so a block's integer sum lands in the lane of its
 * output and the float step (fma of xs * wd with the converted sum) is the reference's, lane
 * by lane, with no horizontal reduction.
 *  - VNNI: vpdpbusd multiplies unsigned bytes by signed bytes. The activations are given as
 *    q + 128 (u8, broadcast 4 at a time) against the signed weights, and the panel's
 *    128 * sum(w) is subtracted: exact, every weight quant (-128 too) allowed. A tile is
 *    8 rows x 16 outputs: the block's 8 weight vectors stay in registers for all 8 rows.
 *  - AVX2: |w| (unsigned; |-128| = 128) times sign(x, w) (signed) with maddubs, then madd
 *    with ones. Activation quants are within [-127, 127], so each pair sum is at most
 *    2 * 128 * 127 and never saturates. A tile is 4 rows x 8 outputs.
 */
#include "q8.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <math.h>
#include <string.h>

#define INLINE __attribute__((always_inline)) static inline
#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define VNNI __attribute__((target("avx512vnni,avx512vl,avx512bw,avx512f,avx2,fma,f16c")))

static inline int32_t ld32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* ------------------------------------------------------------------ AVX-512 VNNI --- */

#define VR 8

/* One block's products into the rows' int32 chains: s[r] += dot(x + 128, w) for its 16
 * outputs, one weight vector at a time against every row (VR independent dpbusd chains). */
VNNI INLINE void block_vnni(const uint8_t *ch, const uint8_t *x, size_t xstride, int nr,
                            __m512i *s) {
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        const __m512i W = _mm512_load_si512((const void *)(ch + j * 64));
#pragma GCC unroll 8
        for (int r = 0; r < VR; r++) {
            if (r >= nr) break;
            s[r] = _mm512_dpbusd_epi32(s[r], _mm512_set1_epi32(ld32(x + (size_t)r * xstride + 4 * j)), W);
        }
    }
}

/* Row-scaled weights (q8.h): the rows' int32 sums run over all blocks, starting from -128 *
 * the row sums of the weights (the correction of the biased activations), and the float
 * step comes once at the end. A tile is 8 rows x np panels (np = 1 or 2; nc outputs of the
 * last): two panels give 16 independent vpdpbusd chains, which cover its latency at two
 * per cycle (8 chains held the kernel at 64 % of the peak), and each activation broadcast
 * serves both. The sums are exact, so the result is the reference's whatever the tile. */
VNNI INLINE void tile_vnni_rows(const sk_q8_act *a, const sk_q8_packed *w, size_t r0, int nr,
                                size_t p, const int np, size_t nc, float *y, size_t ldy) {
    const size_t nb = w->n_in / 32, o = p * SK_Q8_PANEL;
    const __mmask16 full = (__mmask16)0xFFFF, last = (__mmask16)((1u << nc) - 1u);
    const __mmask16 m0 = np == 2 ? full : last, m1 = last;
    const uint8_t *ch0 = w->panels + p * nb * SK_Q8_CHUNK, *ch1 = ch0 + nb * SK_Q8_CHUNK;
    const __m512i neg0 = _mm512_sub_epi32(_mm512_setzero_si512(),
                                          _mm512_maskz_loadu_epi32(m0, w->row_sum128 + o));
    const __m512i neg1 = np == 2 ? _mm512_sub_epi32(_mm512_setzero_si512(),
                                                    _mm512_maskz_loadu_epi32(m1, w->row_sum128 + o + SK_Q8_PANEL))
                                 : _mm512_setzero_si512();
    __m512i s0[VR], s1[VR];
#pragma GCC unroll 8
    for (int r = 0; r < VR; r++) {
        s0[r] = neg0;
        s1[r] = neg1;
    }
    const size_t xstride = nb * 32;
    for (size_t b = 0; b < nb; b++) {
        const uint8_t *x = a->qb + (r0 * nb + b) * 32, *c0 = ch0 + b * SK_Q8_CHUNK, *c1 = ch1 + b * SK_Q8_CHUNK;
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            const __m512i W0 = _mm512_load_si512((const void *)(c0 + j * 64));
            const __m512i W1 = np == 2 ? _mm512_load_si512((const void *)(c1 + j * 64)) : W0;
#pragma GCC unroll 8
            for (int r = 0; r < VR; r++) {
                if (r >= nr) break;
                const __m512i X = _mm512_set1_epi32(ld32(x + (size_t)r * xstride + 4 * j));
                s0[r] = _mm512_dpbusd_epi32(s0[r], X, W0);
                if (np == 2) s1[r] = _mm512_dpbusd_epi32(s1[r], X, W1);
            }
        }
    }
    const __m512 wd0 = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(ch0 + SK_Q8_CHUNK_SCALES)));
    const __m512 wd1 = np == 2 ? _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(ch1 + SK_Q8_CHUNK_SCALES)))
                               : wd0;
    const __m512 bias0 = w->bias ? _mm512_maskz_loadu_ps(m0, w->bias + o) : _mm512_setzero_ps();
    const __m512 bias1 = w->bias && np == 2 ? _mm512_maskz_loadu_ps(m1, w->bias + o + SK_Q8_PANEL)
                                            : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int r = 0; r < VR; r++) {
        if (r >= nr) break;
        const __m512 xs = _mm512_set1_ps(a->xs[(r0 + (size_t)r) * nb]);
        float *yr = y + (r0 + (size_t)r) * ldy + o;
        _mm512_mask_storeu_ps(yr, m0, _mm512_fmadd_ps(_mm512_mul_ps(xs, wd0), _mm512_cvtepi32_ps(s0[r]), bias0));
        if (np == 2)
            _mm512_mask_storeu_ps(yr + SK_Q8_PANEL, m1,
                                  _mm512_fmadd_ps(_mm512_mul_ps(xs, wd1), _mm512_cvtepi32_ps(s1[r]), bias1));
    }
}

VNNI INLINE void tile_vnni(const sk_q8_act *a, const sk_q8_packed *w, size_t r0, int nr,
                           size_t p, size_t nc, float *y, size_t ldy) {
    const size_t nb = w->n_in / 32;
    const int two = a->two_pass;
    const uint8_t *ch = w->panels + p * nb * SK_Q8_CHUNK;
    __m512 acc[VR];
#pragma GCC unroll 8
    for (int r = 0; r < VR; r++) acc[r] = _mm512_setzero_ps();
    for (size_t b = 0; b < nb; b++, ch += SK_Q8_CHUNK) {
        __m512i s[VR], t[VR];
#pragma GCC unroll 8
        for (int r = 0; r < VR; r++) s[r] = t[r] = _mm512_setzero_si512();
        const size_t xstride = nb * 32;
        block_vnni(ch, a->qb + (r0 * nb + b) * 32, xstride, nr, s);
        if (two) block_vnni(ch, a->rb + (r0 * nb + b) * 32, xstride, nr, t);
        const __m512 wd = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(ch + SK_Q8_CHUNK_SCALES)));
        const __m512i ws = _mm512_slli_epi32(
            _mm512_cvtepi16_epi32(_mm256_load_si256((const __m256i *)(ch + SK_Q8_CHUNK_SUMS))), 7);
#pragma GCC unroll 8
        for (int r = 0; r < VR; r++) {
            if (r >= nr) break;
            const size_t xi = (r0 + (size_t)r) * nb + b;
            __m512i is = _mm512_sub_epi32(s[r], ws);
            if (two) is = _mm512_add_epi32(_mm512_slli_epi32(is, 7), _mm512_sub_epi32(t[r], ws));
            const __m512 sc = _mm512_mul_ps(_mm512_set1_ps(a->xs[xi]), wd);
            acc[r] = _mm512_fmadd_ps(sc, _mm512_cvtepi32_ps(is), acc[r]);
        }
    }
    const __mmask16 m = (__mmask16)((1u << nc) - 1u);
    const size_t o = p * SK_Q8_PANEL;
    const __m512 bias = w->bias ? _mm512_maskz_loadu_ps(m, w->bias + o) : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int r = 0; r < VR; r++) {
        if (r >= nr) break;
        const __m512 v = w->bias ? _mm512_add_ps(acc[r], bias) : acc[r];
        _mm512_mask_storeu_ps(y + (r0 + (size_t)r) * ldy + o, m, v);
    }
}

/* The loop nest for one kind of weights (rows: row-scaled), instantiated twice so the kind
 * is decided once per call rather than per tile. */
VNNI INLINE void gemm_vnni_t(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                             float *y, size_t ldy, const int rows) {
    const size_t n = a->n_rows;
    for (size_t p = o0 / SK_Q8_PANEL; p * SK_Q8_PANEL < o1; p++) {
        const size_t nc = o1 - p * SK_Q8_PANEL < SK_Q8_PANEL ? o1 - p * SK_Q8_PANEL : SK_Q8_PANEL;
        if (rows) {
            /* two panels a tile where a second one starts before o1 */
            const int np = o1 > (p + 1) * SK_Q8_PANEL ? 2 : 1;
            const size_t left = o1 - (p + (size_t)np - 1) * SK_Q8_PANEL;
            const size_t nl = left < SK_Q8_PANEL ? left : SK_Q8_PANEL;
            for (size_t r0 = 0; r0 < n; r0 += VR) {
                const int nr = n - r0 < VR ? (int)(n - r0) : VR;
                if (np == 2 && nr == VR) tile_vnni_rows(a, w, r0, VR, p, 2, nl, y, ldy);
                else if (np == 2) tile_vnni_rows(a, w, r0, nr, p, 2, nl, y, ldy);
                else if (nr == VR) tile_vnni_rows(a, w, r0, VR, p, 1, nl, y, ldy);
                else tile_vnni_rows(a, w, r0, nr, p, 1, nl, y, ldy);
            }
            p += (size_t)np - 1;
            continue;
        }
        for (size_t r0 = 0; r0 < n; r0 += VR) {
            const int nr = n - r0 < VR ? (int)(n - r0) : VR;
            if (nr == VR)
                tile_vnni(a, w, r0, VR, p, nc, y, ldy);
            else
                tile_vnni(a, w, r0, nr, p, nc, y, ldy);
        }
    }
}

VNNI void sk_q8_gemm_vnni(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                          float *y, size_t ldy) {
    if (w->pairs)  /* the tiles' order (q8.h): not this kernel's */
        sk_q8_gemm_ref(a, w, o0, o1, y, ldy);
    else if (w->row_sum128)
        gemm_vnni_t(a, w, o0, o1, y, ldy, 1);
    else
        gemm_vnni_t(a, w, o0, o1, y, ldy, 0);
}

/* ------------------------------------------------------------------ AVX2 ------------ */

#define AR 4

/* One block's products into the rows' int32 sums: |w| x sign(x, w) with maddubs, then madd
 * with ones; ch points at the 8 outputs' quants of the block's chunk. */
AVX2 INLINE void block_avx2(const uint8_t *ch, const int8_t *x, size_t xstride, int nr,
                            __m256i *s) {
    const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++) {
        const __m256i W = _mm256_loadu_si256((const __m256i *)(ch + j * 64));
        const __m256i aw = _mm256_abs_epi8(W);
#pragma GCC unroll 4
        for (int r = 0; r < AR; r++) {
            if (r >= nr) break;
            const __m256i xv = _mm256_set1_epi32(ld32(x + (size_t)r * xstride + 4 * j));
            s[r] = _mm256_add_epi32(s[r], _mm256_madd_epi16(
                       _mm256_maddubs_epi16(aw, _mm256_sign_epi8(xv, W)), ones));
        }
    }
}

/* Row-scaled weights: the int32 sums over all blocks, one float step at the end. */
AVX2 INLINE void tile_avx2_rows(const sk_q8_act *a, const sk_q8_packed *w, size_t r0, int nr,
                                size_t p, int h, size_t nc, float *y, size_t ldy) {
    const size_t nb = w->n_in / 32;
    const uint8_t *ch = w->panels + p * nb * SK_Q8_CHUNK + (size_t)h * 32;
    __m256i s[AR];
#pragma GCC unroll 4
    for (int r = 0; r < AR; r++) s[r] = _mm256_setzero_si256();
    const size_t xstride = nb * 32;
    for (size_t b = 0; b < nb; b++, ch += SK_Q8_CHUNK)
        block_avx2(ch, a->q + (r0 * nb + b) * 32, xstride, nr, s);
    const size_t o = p * SK_Q8_PANEL + (size_t)h * 8;
    const __m256 wd = _mm256_cvtph_ps(_mm_loadu_si128(
        (const __m128i *)(w->panels + p * nb * SK_Q8_CHUNK + SK_Q8_CHUNK_SCALES + (size_t)h * 16)));
    float bias[8] = {0};
    for (size_t c = 0; c < nc && w->bias; c++) bias[c] = w->bias[o + c];
    const __m256 bv = _mm256_loadu_ps(bias);
    for (int r = 0; r < AR; r++) {
        if (r >= nr) break;
        const __m256 sc = _mm256_mul_ps(_mm256_set1_ps(a->xs[(r0 + (size_t)r) * nb]), wd);
        float tmp[8];
        _mm256_storeu_ps(tmp, _mm256_fmadd_ps(sc, _mm256_cvtepi32_ps(s[r]), bv));
        memcpy(y + (r0 + (size_t)r) * ldy + o, tmp, nc * sizeof(float));
    }
}

/* Rows [r0, r0 + nr), outputs 8h..8h+7 of panel p (nc of them valid). */
AVX2 INLINE void tile_avx2(const sk_q8_act *a, const sk_q8_packed *w, size_t r0, int nr,
                           size_t p, int h, size_t nc, float *y, size_t ldy) {
    const size_t nb = w->n_in / 32;
    const int two = a->two_pass;
    const uint8_t *ch = w->panels + p * nb * SK_Q8_CHUNK + (size_t)h * 32;
    __m256 acc[AR];
#pragma GCC unroll 4
    for (int r = 0; r < AR; r++) acc[r] = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; b++, ch += SK_Q8_CHUNK) {
        __m256i s[AR], t[AR];
#pragma GCC unroll 4
        for (int r = 0; r < AR; r++) s[r] = t[r] = _mm256_setzero_si256();
        /* the passes' products written out rather than as two block_avx2 calls: one
         * |w| per weight vector for both, 11 % faster on Zen 4 (gcc 12) */
        const int8_t *xq = a->q + (r0 * nb + b) * 32, *xr = a->r + (r0 * nb + b) * 32;
        const size_t xstride = nb * 32;
        const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) {
            const __m256i W = _mm256_loadu_si256((const __m256i *)(ch + j * 64));
            const __m256i aw = _mm256_abs_epi8(W);
#pragma GCC unroll 4
            for (int r = 0; r < AR; r++) {
                if (r >= nr) break;
                const __m256i xv = _mm256_set1_epi32(ld32(xq + (size_t)r * xstride + 4 * j));
                s[r] = _mm256_add_epi32(s[r], _mm256_madd_epi16(
                           _mm256_maddubs_epi16(aw, _mm256_sign_epi8(xv, W)), ones));
                if (two) {
                    const __m256i rv = _mm256_set1_epi32(ld32(xr + (size_t)r * xstride + 4 * j));
                    t[r] = _mm256_add_epi32(t[r], _mm256_madd_epi16(
                               _mm256_maddubs_epi16(aw, _mm256_sign_epi8(rv, W)), ones));
                }
            }
        }
        /* ch is offset by h * 32 for the quants; the 8 scales of this half are at h * 16 */
        const __m256 wd = _mm256_cvtph_ps(_mm_loadu_si128(
            (const __m128i *)(ch - (size_t)h * 32 + SK_Q8_CHUNK_SCALES + (size_t)h * 16)));
#pragma GCC unroll 4
        for (int r = 0; r < AR; r++) {
            if (r >= nr) break;
            const size_t xi = (r0 + (size_t)r) * nb + b;
            __m256i is = s[r];
            if (two) is = _mm256_add_epi32(_mm256_slli_epi32(is, 7), t[r]);
            const __m256 sc = _mm256_mul_ps(_mm256_set1_ps(a->xs[xi]), wd);
            acc[r] = _mm256_fmadd_ps(sc, _mm256_cvtepi32_ps(is), acc[r]);
        }
    }
    const size_t o = p * SK_Q8_PANEL + (size_t)h * 8;
    for (int r = 0; r < AR; r++) {
        if (r >= nr) break;
        float tmp[8];
        _mm256_storeu_ps(tmp, acc[r]);
        float *yr = y + (r0 + (size_t)r) * ldy + o;
        for (size_t c = 0; c < nc; c++) yr[c] = w->bias ? tmp[c] + w->bias[o + c] : tmp[c];
    }
}

/* The loop nest for one kind of weights (rows: row-scaled), instantiated twice so the kind
 * is decided once per call rather than per tile. */
AVX2 INLINE void gemm_avx2_t(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                             float *y, size_t ldy, const int rows) {
    const size_t n = a->n_rows;
    for (size_t p = o0 / SK_Q8_PANEL; p * SK_Q8_PANEL < o1; p++)
        for (int h = 0; h < 2; h++) {
            const size_t base = p * SK_Q8_PANEL + (size_t)h * 8;
            if (base >= o1) break;
            const size_t nc = o1 - base < 8 ? o1 - base : 8;
            for (size_t r0 = 0; r0 < n; r0 += AR) {
                const int nr = n - r0 < AR ? (int)(n - r0) : AR;
                if (rows && nr == AR)
                    tile_avx2_rows(a, w, r0, AR, p, h, nc, y, ldy);
                else if (rows)
                    tile_avx2_rows(a, w, r0, nr, p, h, nc, y, ldy);
                else if (nr == AR)
                    tile_avx2(a, w, r0, AR, p, h, nc, y, ldy);
                else
                    tile_avx2(a, w, r0, nr, p, h, nc, y, ldy);
            }
        }
}

AVX2 void sk_q8_gemm_avx2(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                          float *y, size_t ldy) {
    if (w->pairs)  /* the tiles' order (q8.h): not this kernel's */
        sk_q8_gemm_ref(a, w, o0, o1, y, ldy);
    else if (w->row_sum128)
        gemm_avx2_t(a, w, o0, o1, y, ldy, 1);
    else
        gemm_avx2_t(a, w, o0, o1, y, ldy, 0);
}

/* ------------------------------------------------------------------ activations ---- */
/* The reference's arithmetic lane by lane: the same max, division and product; the
 * conversion rounds half to even (MXCSR default) as the reference's magic-number rounding;
 * NaN is zeroed before converting and the result clamped to [-127, 127]. */

VNNI INLINE __m512i q8_cvt512(__m512 s) {
    s = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(s, s, _CMP_ORD_Q), s);
    s = _mm512_min_ps(_mm512_max_ps(s, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
    return _mm512_cvtps_epi32(s);
}

VNNI void sk_q8_quantize_act_avx512(const float *x, size_t ldx, size_t n_rows, size_t k,
                                    int mode, sk_q8_act *a) {
    const size_t nb = k / 32;
    const int two = mode == SK_Q8_ACT_Q8X2 || mode == SK_Q8_ACT_ROW2;
    a->two_pass = two;
    a->n_rows = n_rows;
    a->n_blocks = nb;
    const int row = mode == SK_Q8_ACT_ROW || mode == SK_Q8_ACT_ROW2;
    const __m128i bias = _mm_set1_epi8((char)0x80);
    for (size_t r = 0; r < n_rows; r++) {
        const float *xr = x + r * ldx;
        float row_max = 0.0f;
        if (row) {
            __m512 rm = _mm512_setzero_ps();
            for (size_t c = 0; c < nb * 32; c += 16) {
                const __m512 av = _mm512_abs_ps(_mm512_loadu_ps(xr + c));
                rm = _mm512_max_ps(rm, _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(av, av, _CMP_ORD_Q), av));
            }
            row_max = _mm512_reduce_max_ps(rm);
        }
        /* one row scale: its step and inverse once, not per block */
        const float row_d = row_max / 127.0f, row_id = row_d != 0.0f ? 1.0f / row_d : 0.0f;
        for (size_t b = 0; b < nb; b++) {
            const __m512 v0 = _mm512_loadu_ps(xr + b * 32), v1 = _mm512_loadu_ps(xr + b * 32 + 16);
            float d = row_d, id = row_id;
            if (!row) {
                /* max that ignores NaN like the reference's "a > amax" */
                __m512 m0 = _mm512_abs_ps(v0), m1 = _mm512_abs_ps(v1);
                m0 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(m0, m0, _CMP_ORD_Q), m0);
                m1 = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(m1, m1, _CMP_ORD_Q), m1);
                d = _mm512_reduce_max_ps(_mm512_max_ps(m0, m1)) / 127.0f;
                id = d != 0.0f ? 1.0f / d : 0.0f;
            }
            const __m512 vid = _mm512_set1_ps(id);
            const __m512 s0 = _mm512_mul_ps(v0, vid), s1 = _mm512_mul_ps(v1, vid);
            const __m512i q0 = q8_cvt512(s0), q1 = q8_cvt512(s1);
            const size_t off = (r * nb + b) * 32;
            const __m128i p0 = _mm512_cvtepi32_epi8(q0), p1 = _mm512_cvtepi32_epi8(q1);
            _mm_storeu_si128((__m128i *)(a->q + off), p0);
            _mm_storeu_si128((__m128i *)(a->q + off + 16), p1);
            _mm_storeu_si128((__m128i *)(a->qb + off), _mm_xor_si128(p0, bias));
            _mm_storeu_si128((__m128i *)(a->qb + off + 16), _mm_xor_si128(p1, bias));
            if (two) {
                const __m512 k128 = _mm512_set1_ps(128.0f);
                const __m512i r0 = q8_cvt512(_mm512_mul_ps(_mm512_sub_ps(s0, _mm512_cvtepi32_ps(q0)), k128));
                const __m512i r1 = q8_cvt512(_mm512_mul_ps(_mm512_sub_ps(s1, _mm512_cvtepi32_ps(q1)), k128));
                const __m128i t0 = _mm512_cvtepi32_epi8(r0), t1 = _mm512_cvtepi32_epi8(r1);
                _mm_storeu_si128((__m128i *)(a->r + off), t0);
                _mm_storeu_si128((__m128i *)(a->r + off + 16), t1);
                _mm_storeu_si128((__m128i *)(a->rb + off), _mm_xor_si128(t0, bias));
                _mm_storeu_si128((__m128i *)(a->rb + off + 16), _mm_xor_si128(t1, bias));
            }
            a->xs[r * nb + b] = two ? d / 128.0f : d;
        }
    }
}

AVX2 INLINE __m256i q8_cvt256(__m256 s) {
    s = _mm256_and_ps(s, _mm256_cmp_ps(s, s, _CMP_ORD_Q));
    s = _mm256_min_ps(_mm256_max_ps(s, _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
    return _mm256_cvtps_epi32(s);
}

/* 32 int32 (four vectors) to 32 bytes in order. */
AVX2 INLINE __m256i pack32(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i ab = _mm256_packs_epi32(a, b), cd = _mm256_packs_epi32(c, d);
    const __m256i v = _mm256_packs_epi16(ab, cd);
    return _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

AVX2 void sk_q8_quantize_act_avx2(const float *x, size_t ldx, size_t n_rows, size_t k,
                                  int mode, sk_q8_act *a) {
    const size_t nb = k / 32;
    const int two = mode == SK_Q8_ACT_Q8X2 || mode == SK_Q8_ACT_ROW2;
    a->two_pass = two;
    a->n_rows = n_rows;
    a->n_blocks = nb;
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    const __m256i bias = _mm256_set1_epi8((char)0x80);
    const int row = mode == SK_Q8_ACT_ROW || mode == SK_Q8_ACT_ROW2;
    for (size_t r = 0; r < n_rows; r++) {
        const float *xr = x + r * ldx;
        float row_max = 0.0f;
        for (size_t c = 0; row && c < nb * 32; c++) {  /* rare path: plain, NaN ignored */
            const float av = fabsf(xr[c]);
            if (av > row_max) row_max = av;
        }
        for (size_t b = 0; b < nb; b++) {
            __m256 v[4], m = _mm256_setzero_ps();
            for (int i = 0; i < 4; i++) {
                v[i] = _mm256_loadu_ps(xr + b * 32 + (size_t)i * 8);
                __m256 av = _mm256_and_ps(v[i], absmask);
                av = _mm256_and_ps(av, _mm256_cmp_ps(av, av, _CMP_ORD_Q));
                m = _mm256_max_ps(m, av);
            }
            __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
            h = _mm_max_ps(h, _mm_movehl_ps(h, h));
            h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
            const float amax = row ? row_max : _mm_cvtss_f32(h);
            const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            const __m256 vid = _mm256_set1_ps(id);
            __m256 s[4];
            __m256i q[4];
            for (int i = 0; i < 4; i++) {
                s[i] = _mm256_mul_ps(v[i], vid);
                q[i] = q8_cvt256(s[i]);
            }
            const size_t off = (r * nb + b) * 32;
            const __m256i pq = pack32(q[0], q[1], q[2], q[3]);
            _mm256_storeu_si256((__m256i *)(a->q + off), pq);
            _mm256_storeu_si256((__m256i *)(a->qb + off), _mm256_xor_si256(pq, bias));
            if (two) {
                __m256i t[4];
                for (int i = 0; i < 4; i++)
                    t[i] = q8_cvt256(_mm256_mul_ps(_mm256_sub_ps(s[i], _mm256_cvtepi32_ps(q[i])),
                                                   _mm256_set1_ps(128.0f)));
                const __m256i pr = pack32(t[0], t[1], t[2], t[3]);
                _mm256_storeu_si256((__m256i *)(a->r + off), pr);
                _mm256_storeu_si256((__m256i *)(a->rb + off), _mm256_xor_si256(pr, bias));
            }
            a->xs[r * nb + b] = two ? d / 128.0f : d;
        }
    }
}

#else
/* Not x86-64: the dispatcher never calls these; they exist so that the symbols resolve. */
void sk_q8_quantize_act_avx2(const float *x, size_t ldx, size_t n_rows, size_t k, int mode,
                             sk_q8_act *a) {
    sk_q8_quantize_act_ref(x, ldx, n_rows, k, mode, NULL, a);
}
void sk_q8_quantize_act_avx512(const float *x, size_t ldx, size_t n_rows, size_t k, int mode,
                               sk_q8_act *a) {
    sk_q8_quantize_act_ref(x, ldx, n_rows, k, mode, NULL, a);
}
void sk_q8_gemm_avx2(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                     float *y, size_t ldy) {
    sk_q8_gemm_ref(a, w, o0, o1, y, ldy);
}
void sk_q8_gemm_vnni(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                     float *y, size_t ldy) {
    sk_q8_gemm_ref(a, w, o0, o1, y, ldy);
}
#endif
