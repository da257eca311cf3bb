/*
 * q8_x86.c - AVX2 and AVX-512 VNNI int8 GEMM kernels (see q8.h for the arithmetic they must
 * reproduce bit for bit). Each function carries its own target attribute; the dispatcher
 * calls one only when sk_cpu_features() reports its instructions.
 *
 * Per block the products are formed as |w| (unsigned) x sign(x, w) (signed), which is exact
 * for every weight quant including -128 (|-128| = 128 as u8) because activation quants are
 * limited to [-127, 127]: AVX2 uses maddubs (pair sums <= 2 * 128 * 127, no saturation) and
 * madd with ones; VNNI uses vpdpbusd on 256-bit vectors. Either way 32-bit lane j holds the
 * sum of values 4j..4j+3, as the reference defines. A tile of 4 rows x 2 outputs keeps 8
 * accumulators in registers while it walks the blocks; the weight blocks of one input block
 * for consecutive outputs are adjacent in the INPUT_BLOCK_MAJOR order.
 */
#include "q8.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <string.h>

#include "../gguf/gguf.h"

#define TR 4
#define TO 2
#define INLINE __attribute__((always_inline)) static inline
#define AVX2 __attribute__((target("avx2,fma,f16c")))
#define VNNI __attribute__((target("avx512vnni,avx512vl,avx512bw,avx512f,avx2,fma,f16c")))

AVX2 INLINE float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));              /* (a0+a4)+(a2+a6), (a1+a5)+(a3+a7) */
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

AVX2 INLINE float wscale(const uint8_t *blk) {
    uint16_t h;
    memcpy(&h, blk, 2);
    return _cvtsh_ss(h);
}

/* One tile: rows [r0, r0 + nr), outputs [o, o + no) with nr <= TR, no <= TO. */
#define TILE_BODY(DOT)                                                                        \
    __m256 acc[TR][TO];                                                                       \
    for (int r = 0; r < TR; r++)                                                              \
        for (int t = 0; t < TO; t++) acc[r][t] = _mm256_setzero_ps();                         \
    for (size_t b = 0; b < nb; b++) {                                                         \
        const uint8_t *wb = w->blocks + (b * m + o) * SK_Q8_0_BLOCK_BYTES;                    \
        for (int t = 0; t < TO; t++) {                                                        \
            if (t >= no) break;                                                               \
            const uint8_t *blk = wb + (size_t)t * SK_Q8_0_BLOCK_BYTES;                        \
            const __m256i wq = _mm256_loadu_si256((const __m256i *)(blk + 2));                \
            const __m256i aw = _mm256_abs_epi8(wq);                                           \
            const float wd = wscale(blk);                                                     \
            for (int r = 0; r < TR; r++) {                                                    \
                if (r >= nr) break;                                                           \
                const size_t xi = (r0 + (size_t)r) * nb + b;                                  \
                const __m256i xq = _mm256_loadu_si256((const __m256i *)(a->q + xi * 32));     \
                __m256i isum = DOT(aw, _mm256_sign_epi8(xq, wq));                             \
                if (two) {                                                                    \
                    const __m256i xr = _mm256_loadu_si256((const __m256i *)(a->r + xi * 32)); \
                    isum = _mm256_add_epi32(_mm256_slli_epi32(isum, 7),                       \
                                            DOT(aw, _mm256_sign_epi8(xr, wq)));               \
                }                                                                             \
                const __m256 s = _mm256_set1_ps(a->xs[xi] * wd);                              \
                acc[r][t] = _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(isum), acc[r][t]);          \
            }                                                                                 \
        }                                                                                     \
    }                                                                                         \
    for (int r = 0; r < TR; r++) {                                                            \
        if (r >= nr) break;                                                                   \
        for (int t = 0; t < TO; t++) {                                                        \
            if (t >= no) break;                                                               \
            const float v = hsum8(acc[r][t]);                                                 \
            y[(r0 + (size_t)r) * ldy + o + (size_t)t] = w->bias ? v + w->bias[o + t] : v;     \
        }                                                                                     \
    }

AVX2 INLINE __m256i dot_avx2(__m256i aw, __m256i sx) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sx), _mm256_set1_epi16(1));
}

AVX2 INLINE void tile_avx2(const sk_q8_act *a, const sk_q8_packed *w, size_t r0, int nr,
                           size_t o, int no, float *y, size_t ldy) {
    const size_t nb = w->n_in / 32, m = w->n_out;
    const int two = a->two_pass;
    TILE_BODY(dot_avx2)
}

AVX2 void sk_q8_gemm_avx2(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                          float *y, size_t ldy) {
    const size_t n = a->n_rows;
    for (size_t o = o0; o < o1; o += TO) {
        const int no = o1 - o < TO ? (int)(o1 - o) : TO;
        for (size_t r0 = 0; r0 < n; r0 += TR) {
            const int nr = n - r0 < TR ? (int)(n - r0) : TR;
            if (nr == TR && no == TO)
                tile_avx2(a, w, r0, TR, o, TO, y, ldy);
            else
                tile_avx2(a, w, r0, nr, o, no, y, ldy);
        }
    }
}

VNNI INLINE __m256i dot_vnni(__m256i aw, __m256i sx) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), aw, sx);
}

VNNI INLINE void tile_vnni(const sk_q8_act *a, const sk_q8_packed *w, size_t r0, int nr,
                           size_t o, int no, float *y, size_t ldy) {
    const size_t nb = w->n_in / 32, m = w->n_out;
    const int two = a->two_pass;
    TILE_BODY(dot_vnni)
}

VNNI void sk_q8_gemm_vnni(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                          float *y, size_t ldy) {
    const size_t n = a->n_rows;
    for (size_t o = o0; o < o1; o += TO) {
        const int no = o1 - o < TO ? (int)(o1 - o) : TO;
        for (size_t r0 = 0; r0 < n; r0 += TR) {
            const int nr = n - r0 < TR ? (int)(n - r0) : TR;
            if (nr == TR && no == TO)
                tile_vnni(a, w, r0, TR, o, TO, y, ldy);
            else
                tile_vnni(a, w, r0, nr, o, no, y, ldy);
        }
    }
}

#else
/* Not x86-64: the dispatcher never calls these; they exist so that the symbols resolve. */
void sk_q8_gemm_avx2(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                     float *y, size_t ldy) {
    sk_q8_gemm_ref(a, w, o0, o1, y, ldy);
}
void sk_q8_gemm_vnni(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                     float *y, size_t ldy) {
    sk_q8_gemm_ref(a, w, o0, o1, y, ldy);
}
#endif
