/*
 * gemm_x86.c - the f32 GEMMs on AVX2+FMA and AVX-512F, and the AVX-512 packer of their
 * panels (see kernels.h). Each function carries its own target attribute, so the file
 * builds without -mavx2 and the dispatcher only calls a function when sk_cpu_features()
 * reports the instructions.
 *
 * The packed matrix is read panel by panel (16 outputs x k); a micro-kernel keeps an
 * R x 16 (AVX2: 6 x 16) or 8 x 48 (AVX-512: three panels) block of outputs in registers while
 * it walks k, broadcasting one x value per row per step. k is cut into blocks of SK_KC so a
 * panel block stays in L1 while every row block of x streams past it. Rows past the end of
 * a block reuse the last valid row (computed, not stored), so no padding of x is needed.
 * Panels may hold f32, F16 or BF16 elements; 16-bit ones are widened exactly (vcvtph2ps or
 * a 16-bit shift), once per k block into the thread's scratch when enough row tiles read
 * them (SK_WIDEN_MIN_TILES) or else as they are loaded, so the three give identical results
 * and each kernel is instantiated once per element type with a single load path.
 *
 * Panels may also be a row-major matrix read in place (sk_packed.rstride). Attention
 * copies V into panels instead (forward.c's attn_unit): at a row stride that is a multiple
 * of 4 KB every k step of an in-place read lands in the same L1 sets.
 */
#include "kernels.h"
#include "pool.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <string.h>

#define SK_KC 256
/* Rows per block of the AVX-512 GEMM (multiples of its 8-row tile), so that the block's
 * SK_KC-wide slice of x stays in L2 while every group of panels passes over it. Up to SK_MC_ONE
 * rows go in one block; more in blocks of SK_MC, small enough that the slice fits L2's sets
 * whatever x's row stride: at large's d = 1024 (4 KB rows) every row's slice starts in the
 * same sets, and 512-row blocks overfilled them. Measured with one thread on an AMX Xeon
 * guest (FMA peak 248 GFLOP/s): large's GEMMs at 1536 rows 175-183 GFLOP/s in 512-row
 * blocks, 205-209 in blocks of 128 to 256; base's 384 rows (a 128-token request) 213-221 as
 * one block, 211-219 in blocks of 192. */
#define SK_MC 192
#define SK_MC_ONE 384

#define AVX2 __attribute__((target("avx2,fma")))
#define AVX2F __attribute__((target("avx2,fma,f16c")))
#define AVX512 __attribute__((target("avx512f,avx2,fma,f16c")))

/* A GEMM template instantiated once per panel type (NAME_f32, NAME_f16, NAME_bf16), each
 * its own function so that the type is a constant inside it, and the ISA's entry point PUBLIC
 * choosing among them. */
#define GEMM_PER_TYPE(ATTR, TEMPLATE, NAME, PUBLIC)                                          \
    ATTR static void NAME##_f32(const float *x, size_t ldx, size_t n, const sk_packed *w,     \
                                float *y, size_t ldy) {                                       \
        TEMPLATE(x, ldx, n, w, y, ldy, SK_PACK_F32);                                          \
    }                                                                                         \
    ATTR static void NAME##_f16(const float *x, size_t ldx, size_t n, const sk_packed *w,     \
                                float *y, size_t ldy) {                                       \
        TEMPLATE(x, ldx, n, w, y, ldy, SK_PACK_F16);                                          \
    }                                                                                         \
    ATTR static void NAME##_bf16(const float *x, size_t ldx, size_t n, const sk_packed *w,    \
                                 float *y, size_t ldy) {                                      \
        TEMPLATE(x, ldx, n, w, y, ldy, SK_PACK_BF16);                                         \
    }                                                                                         \
    void PUBLIC(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,      \
                size_t ldy) {                                                                 \
        if (w->wtype == SK_PACK_F16)                                                          \
            NAME##_f16(x, ldx, n_rows, w, y, ldy);                                            \
        else if (w->wtype == SK_PACK_BF16)                                                    \
            NAME##_bf16(x, ldx, n_rows, w, y, ldy);                                           \
        else                                                                                  \
            NAME##_f32(x, ldx, n_rows, w, y, ldy);                                            \
    }

/* ------------------------------------------------------------------ AVX2 GEMM ---- */

#define INLINE __attribute__((always_inline)) static inline

/* Prefetches shared by the GEMMs (docs/performance.md §3). Inside a request each layer's
 * weights arrive from memory once, and y (past L2 at 3072 and more outputs) from L3: left
 * to the hardware, the first row tile of a panel waited for the panel's slice, and each
 * tile of a later k block for its rows of y. So, before each tile, the loops fetch into L2
 * that tile's share (lines [*line, *line + per_tile)) of the next panel's kc-line slice
 * (next: NULL where there is none, or the panels are read in place: a strided matrix), and
 * into L1 the rows of y the next tile reads (n_bytes from each). Prefetches never fault
 * and change no result. Only past SK_PREFETCH_BYTES (weights, or y) do they run: the
 * small models' matrices stay in cache, and there they cost s1-pico's f32 question 3 %. */
#define SK_PREFETCH_BYTES ((size_t)1 << 20)
INLINE void prefetch_panel_share(const char *next, size_t line_bytes, size_t kc, size_t per_tile,
                                 size_t *line) {
    if (!next) return;
    for (const size_t end = *line + per_tile < kc ? *line + per_tile : kc; *line < end; ++*line)
        _mm_prefetch(next + *line * line_bytes, _MM_HINT_T1);
}
INLINE void prefetch_y_rows(const float *y, size_t ldy, size_t rows, size_t n_bytes) {
    for (size_t r = 0; r < rows; r++)
        for (size_t b = 0; b < n_bytes; b += 64) _mm_prefetch((const char *)(y + r * ldy) + b, _MM_HINT_T0);
}

/* 16-bit panels widened once per panel group and k block, not per row tile (both GEMMs).
 * Widening takes FMA-port work (vcvtph2ps), and a tile that widens for itself pays it for
 * every panel row it reads: one conversion per 8 (AVX2: 6) FMAs. With at least
 * SK_WIDEN_MIN_TILES row tiles, the group's kc slice is widened into the thread's scratch
 * (exactly: the same values) and the tiles read f32 from there. Base F16, a 128-token f32
 * request (one thread, Sapphire Rapids class guest, 2026-12-07): AVX-512 3-10 % less CPU,
 * about the F32 file's time. No widening (each tile widens) below the threshold, for a
 * read-in-place matrix, for f32 panels, or when there is no scratch. */
#define SK_WIDEN_MIN_TILES 4
#define SK_WIDE_BYTES (3 * SK_KC * SK_PANEL * sizeof(float)) /* up to three panels' slices */
INLINE int widen_wanted(const sk_packed *w, size_t tiles, int wt) {
    return wt != SK_PACK_F32 && sk_packed_rstride(w) == SK_PANEL && tiles >= SK_WIDEN_MIN_TILES;
}

#define R2 6

/* 8 panel elements at element index idx, widened to f32 (wt is a compile-time constant
 * in every caller, so each kernel instance has a single load path). */
AVX2F INLINE __m256 ld8(const void *base, size_t idx, int wt) {
    if (wt == SK_PACK_F32) return _mm256_loadu_ps((const float *)base + idx);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)base + idx));
    if (wt == SK_PACK_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* Panel p's k0 slice widened into the thread's scratch (see SK_WIDEN_MIN_TILES), or NULL. */
AVX2F INLINE const float *widen_panel_avx2(const sk_packed *w, size_t p, size_t k0, size_t kc,
                                           size_t tiles, int wt) {
    if (!widen_wanted(w, tiles, wt)) return NULL;
    float *wide = sk_kernel_scratch(SK_SCRATCH_WIDE_PANELS, SK_WIDE_BYTES);
    if (!wide) return NULL;
    const uint16_t *src = (const uint16_t *)w->data + p * w->pstride + k0 * SK_PANEL;
    for (size_t e = 0; e < kc * SK_PANEL; e += 8) _mm256_storeu_ps(wide + e, ld8(src, e, wt));
    return wide;
}

AVX2F INLINE void kern_avx2(const float *const *xp, const void *panel, size_t pidx, size_t rs,
                            size_t k, float *y, size_t ldy, size_t nr, size_t nc,
                            const float *bias, int accumulate, int wt) {
    __m256 c[R2][2];
    if (accumulate) {
#pragma GCC unroll 6
        for (size_t r = 0; r < R2; r++) {
            float tmp[16] = {0};
            if (r < nr) memcpy(tmp, y + r * ldy, nc * sizeof(float));
            c[r][0] = _mm256_loadu_ps(tmp);
            c[r][1] = _mm256_loadu_ps(tmp + 8);
        }
    } else {
        __m256 b0 = bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps();
        __m256 b1 = bias ? _mm256_loadu_ps(bias + 8) : _mm256_setzero_ps();
#pragma GCC unroll 6
        for (size_t r = 0; r < R2; r++) {
            c[r][0] = b0;
            c[r][1] = b1;
        }
    }
    const float *x0 = xp[0], *x1 = xp[1], *x2 = xp[2], *x3 = xp[3], *x4 = xp[4], *x5 = xp[5];
    for (size_t i = 0; i < k; i++) {
        const __m256 w0 = ld8(panel, pidx + i * rs, wt);
        const __m256 w1 = ld8(panel, pidx + i * rs + 8, wt);
        __m256 a;
#define STEP(R, X)                                 \
    a = _mm256_broadcast_ss(X + i);                \
    c[R][0] = _mm256_fmadd_ps(a, w0, c[R][0]);     \
    c[R][1] = _mm256_fmadd_ps(a, w1, c[R][1]);
        STEP(0, x0) STEP(1, x1) STEP(2, x2) STEP(3, x3) STEP(4, x4) STEP(5, x5)
#undef STEP
    }
    if (nc == 16) {
#pragma GCC unroll 6
        for (size_t r = 0; r < R2; r++)
            if (r < nr) {
                _mm256_storeu_ps(y + r * ldy, c[r][0]);
                _mm256_storeu_ps(y + r * ldy + 8, c[r][1]);
            }
    } else {
#pragma GCC unroll 6
        for (size_t r = 0; r < R2; r++)
            if (r < nr) {
                float tmp[16];
                _mm256_storeu_ps(tmp, c[r][0]);
                _mm256_storeu_ps(tmp + 8, c[r][1]);
                memcpy(y + r * ldy, tmp, nc * sizeof(float));
            }
    }
}

AVX2F INLINE void gemm_avx2_t(const float *x, size_t ldx, size_t n_rows, const sk_packed *w,
                              float *y, size_t ldy, int wt) {
    const size_t k = w->n_in, m = w->n_out, np = (m + 15) / 16, rs = sk_packed_rstride(w);
    const size_t esz = wt == SK_PACK_F32 ? 4 : 2, tiles = (n_rows + R2 - 1) / R2;
    const int fetch_w = rs == SK_PANEL && k * m * esz >= SK_PREFETCH_BYTES;
    const int fetch_y = n_rows * m * sizeof(float) >= SK_PREFETCH_BYTES;
    for (size_t k0 = 0; k0 < k; k0 += SK_KC) {
        const size_t kc = k - k0 < SK_KC ? k - k0 : SK_KC, per_tile = (kc + tiles - 1) / tiles;
        for (size_t p = 0; p < np; p++) {
            const size_t pidx = p * w->pstride + k0 * rs;
            const size_t nc = m - p * 16 < 16 ? m - p * 16 : 16;
            const float *bias = w->bias ? w->bias + p * 16 : NULL;
            const char *next = fetch_w && p + 1 < np
                                   ? (const char *)w->data + ((p + 1) * w->pstride + k0 * rs) * esz
                                   : NULL;
            size_t line = 0;
            const float *wide = widen_panel_avx2(w, p, k0, kc, tiles, wt);
            for (size_t r0 = 0; r0 < n_rows; r0 += R2) {
                prefetch_panel_share(next, esz * SK_PANEL, kc, per_tile, &line);
                const size_t nr = n_rows - r0 < R2 ? n_rows - r0 : R2;
                if (fetch_y && k0 > 0 && r0 + R2 < n_rows)
                    prefetch_y_rows(y + (r0 + R2) * ldy + p * 16, ldy,
                                    n_rows - r0 - R2 < R2 ? n_rows - r0 - R2 : R2, nc * sizeof(float));
                const float *xp[R2];
                for (size_t r = 0; r < R2; r++)
                    xp[r] = x + (r0 + (r < nr ? r : nr - 1)) * ldx + k0;
                if (wide) /* the panel's slice, widened: kc x 16 floats */
                    kern_avx2(xp, wide, 0, SK_PANEL, kc, y + r0 * ldy + p * 16, ldy, nr, nc, bias,
                              k0 > 0, SK_PACK_F32);
                else
                    kern_avx2(xp, w->data, pidx, rs, kc, y + r0 * ldy + p * 16, ldy, nr, nc, bias,
                              k0 > 0, wt);
            }
        }
    }
}

GEMM_PER_TYPE(AVX2F, gemm_avx2_t, gemm_avx2, sk_gemm_avx2)

/* ------------------------------------------------------------------ AVX-512 GEMM - */

#define R5 8

AVX512 INLINE __m512 ld16(const void *base, size_t idx, int wt) {
    if (wt == SK_PACK_F32) return _mm512_loadu_ps((const float *)base + idx);
    __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)base + idx));
    if (wt == SK_PACK_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* P panels (P = 1..3, a compile-time constant in every caller: 16 P outputs, nc of them
 * real) by 8 rows. Three panels are the widest tile the 32 registers hold (24 accumulators,
 * three panel rows and the broadcast): each broadcast x feeds three FMAs, and x is what
 * streams from L2. Measured against two panels a tile, one thread on the Sapphire Rapids
 * class guest of docs/performance.md 2.4.1: large's GEMMs alone 155-171 against 142-165
 * GFLOP/s, a large 128-token f32 request 5-8 % less CPU. Indices are in elements. */
AVX512 INLINE void kern_avx512(const float *const *xp, const void *base, size_t pa, size_t pstride,
                               size_t rs, const int P, size_t k, float *y, size_t ldy, size_t nr,
                               size_t nc, const float *bias, int accumulate, int wt) {
    __m512 c[R5][3];
    __mmask16 mk[3];
#pragma GCC unroll 3
    for (int p = 0; p < P; p++) {
        const size_t lo = (size_t)p * 16;
        mk[p] = (__mmask16)(nc >= lo + 16 ? 0xFFFF : nc <= lo ? 0 : (1u << (nc - lo)) - 1);
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < R5; r++) {
        const size_t rr = r < nr ? r : 0;
#pragma GCC unroll 3
        for (int p = 0; p < P; p++)
            c[r][p] = accumulate ? _mm512_maskz_loadu_ps(mk[p], y + rr * ldy + p * 16)
                      : bias     ? _mm512_maskz_loadu_ps(mk[p], bias + p * 16)
                                 : _mm512_setzero_ps();
    }
    const float *x0 = xp[0], *x1 = xp[1], *x2 = xp[2], *x3 = xp[3];
    const float *x4 = xp[4], *x5 = xp[5], *x6 = xp[6], *x7 = xp[7];
    for (size_t i = 0; i < k; i++) {
        __m512 w[3];
#pragma GCC unroll 3
        for (int p = 0; p < P; p++) w[p] = ld16(base, pa + p * pstride + i * rs, wt);
        __m512 a;
#define STEP(R, X)                                          \
    a = _mm512_set1_ps(X[i]);                               \
    _Pragma("GCC unroll 3") for (int p = 0; p < P; p++)     \
        c[R][p] = _mm512_fmadd_ps(a, w[p], c[R][p]);
        STEP(0, x0) STEP(1, x1) STEP(2, x2) STEP(3, x3)
        STEP(4, x4) STEP(5, x5) STEP(6, x6) STEP(7, x7)
#undef STEP
    }
    if (nc == (size_t)P * 16 && nr == R5) { /* a whole tile: plain stores (measured faster on Zen 5) */
#pragma GCC unroll 8
        for (size_t r = 0; r < R5; r++)
#pragma GCC unroll 3
            for (int p = 0; p < P; p++) _mm512_storeu_ps(y + r * ldy + p * 16, c[r][p]);
        return;
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < R5; r++)
        if (r < nr)
#pragma GCC unroll 3
            for (int p = 0; p < P; p++)
                if (mk[p]) _mm512_mask_storeu_ps(y + r * ldy + p * 16, mk[p], c[r][p]);
}

/* R rows (1..4) by up to four panels (64 outputs): the tile for a few rows (the decision
 * head's marker rows, the last rows of a batch), where the 8-row kernel would compute
 * duplicate rows. Each output is the same chain of FMAs as in kern_avx512, so results are
 * bitwise the same whichever kernel computes a row. */
AVX512 INLINE void kern_small_avx512(const float *x, size_t ldx, const void *base,
                                     size_t pstride, size_t rs, size_t np, size_t k, float *y,
                                     size_t ldy, size_t nc, const float *bias, int accumulate,
                                     int wt, const int R) {
    __m512 c[4][4];
    __mmask16 m[4];
    for (size_t p = 0; p < 4; p++) {
        const size_t lo = p * 16;
        m[p] = (__mmask16)(nc >= lo + 16 ? 0xFFFF : nc <= lo ? 0 : (1u << (nc - lo)) - 1);
    }
    for (int r = 0; r < R; r++)
        for (size_t p = 0; p < 4; p++)
            c[r][p] = accumulate ? _mm512_maskz_loadu_ps(m[p], y + (size_t)r * ldy + p * 16)
                      : (bias && p < np) ? _mm512_loadu_ps(bias + p * 16)
                                          : _mm512_setzero_ps();
    if (np == 4) {
        for (size_t i = 0; i < k; i++) {
            __m512 w0 = ld16(base, i * rs, wt), w1 = ld16(base, pstride + i * rs, wt);
            __m512 w2 = ld16(base, 2 * pstride + i * rs, wt);
            __m512 w3 = ld16(base, 3 * pstride + i * rs, wt);
            for (int r = 0; r < R; r++) {
                const __m512 a = _mm512_set1_ps(x[(size_t)r * ldx + i]);
                c[r][0] = _mm512_fmadd_ps(a, w0, c[r][0]);
                c[r][1] = _mm512_fmadd_ps(a, w1, c[r][1]);
                c[r][2] = _mm512_fmadd_ps(a, w2, c[r][2]);
                c[r][3] = _mm512_fmadd_ps(a, w3, c[r][3]);
            }
        }
    } else {
        for (size_t i = 0; i < k; i++)
            for (size_t p = 0; p < np; p++) {
                const __m512 wp = ld16(base, p * pstride + i * rs, wt);
                for (int r = 0; r < R; r++)
                    c[r][p] = _mm512_fmadd_ps(_mm512_set1_ps(x[(size_t)r * ldx + i]), wp, c[r][p]);
            }
    }
    for (int r = 0; r < R; r++)
        for (size_t p = 0; p < np; p++)
            _mm512_mask_storeu_ps(y + (size_t)r * ldy + p * 16, m[p], c[r][p]);
}

/* The group's P panels' k0 slices widened into the thread's scratch (see SK_WIDEN_MIN_TILES),
 * or NULL. */
AVX512 INLINE const float *widen_group(const sk_packed *w, size_t p, size_t P, size_t k0,
                                       size_t kc, size_t tiles, int wt) {
    if (!widen_wanted(w, tiles, wt)) return NULL;
    float *wide = sk_kernel_scratch(SK_SCRATCH_WIDE_PANELS, SK_WIDE_BYTES);
    if (!wide) return NULL;
    for (size_t q = 0; q < P; q++) {
        const uint16_t *src = (const uint16_t *)w->data + (p + q) * w->pstride + k0 * SK_PANEL;
        float *dst = wide + q * kc * SK_PANEL;
        for (size_t e = 0; e < kc * SK_PANEL; e += 16) _mm512_storeu_ps(dst + e, ld16(src, e, wt));
    }
    return wide;
}

/* kern_avx512 for a group of P = 1..3 panels (P known only at run time; the element type
 * wt is a compile-time constant at each call, so each branch is one kernel instance). */
AVX512 INLINE void kern_avx512_group(const float *const *xp, const void *base, size_t pa,
                                     size_t pstride, size_t rs, size_t P, size_t k, float *y,
                                     size_t ldy, size_t nr, size_t nc, const float *bias,
                                     int accumulate, int wt) {
    if (P == 3)
        kern_avx512(xp, base, pa, pstride, rs, 3, k, y, ldy, nr, nc, bias, accumulate, wt);
    else if (P == 2)
        kern_avx512(xp, base, pa, pstride, rs, 2, k, y, ldy, nr, nc, bias, accumulate, wt);
    else
        kern_avx512(xp, base, pa, pstride, rs, 1, k, y, ldy, nr, nc, bias, accumulate, wt);
}

AVX512 INLINE void gemm_avx512_t(const float *x, size_t ldx, size_t n_rows, const sk_packed *w,
                                 float *y, size_t ldy, int wt) {
    const size_t k = w->n_in, m = w->n_out, np = (m + 15) / 16, rs = sk_packed_rstride(w);
    /* rows past the last whole 8-row tile go to the small-row kernel when they are 1-4 */
    const size_t rem = n_rows % R5, n_main = rem && rem <= 4 ? n_rows - rem : n_rows;
    /* rows in blocks (SK_MC above), so the block's kc-wide slice of x stays in L2 while
     * every group of panels passes over it (the tiles, and so every sum's order, stay the same) */
    const size_t mc = n_main <= SK_MC_ONE ? n_main : SK_MC;
    const size_t esz = wt == SK_PACK_F32 ? 4 : 2, line_step = esz * SK_PANEL;
    const int fetch_w = rs == SK_PANEL && k * m * esz >= SK_PREFETCH_BYTES;
    const int fetch_y = n_rows * m * sizeof(float) >= SK_PREFETCH_BYTES;
    for (size_t k0 = 0; k0 < k; k0 += SK_KC) {
        const size_t kc = k - k0 < SK_KC ? k - k0 : SK_KC;
        if (n_main < n_rows)
            for (size_t p = 0; p < np; p += 4) {
                const size_t npp = np - p < 4 ? np - p : 4, nc = m - p * 16 < 64 ? m - p * 16 : 64;
                const void *base = (const char *)w->data + (p * w->pstride + k0 * rs) * esz;
                const float *xr = x + n_main * ldx + k0;
                float *yr = y + n_main * ldy + p * 16;
                const float *bias = w->bias ? w->bias + p * 16 : NULL;
                switch (rem) {
                case 1: kern_small_avx512(xr, ldx, base, w->pstride, rs, npp, kc, yr, ldy, nc, bias, k0 > 0, wt, 1); break;
                case 2: kern_small_avx512(xr, ldx, base, w->pstride, rs, npp, kc, yr, ldy, nc, bias, k0 > 0, wt, 2); break;
                case 3: kern_small_avx512(xr, ldx, base, w->pstride, rs, npp, kc, yr, ldy, nc, bias, k0 > 0, wt, 3); break;
                default: kern_small_avx512(xr, ldx, base, w->pstride, rs, npp, kc, yr, ldy, nc, bias, k0 > 0, wt, 4); break;
                }
            }
        for (size_t m0 = 0; m0 < n_main; m0 += mc) {
            const size_t m1 = n_main - m0 < mc ? n_main : m0 + mc;
            const size_t tiles = (m1 - m0 + R5 - 1) / R5, per_tile = (kc + tiles - 1) / tiles;
            for (size_t p = 0; p < np; p += 3) {
                const size_t P = np - p < 3 ? np - p : 3, pa = p * w->pstride + k0 * rs;
                const size_t nc = m - p * 16 < 48 ? m - p * 16 : 48;
                const float *bias = w->bias ? w->bias + p * 16 : NULL;
                /* the next group's panels, each tile fetching its share of their slices */
                const char *next[3];
                size_t line[3] = {0, 0, 0};
                for (size_t q = 0; q < 3; q++)
                    next[q] = fetch_w && p + 3 + q < np
                                  ? (const char *)w->data + ((p + 3 + q) * w->pstride + k0 * rs) * esz
                                  : NULL;
                const float *wide = widen_group(w, p, P, k0, kc, tiles, wt);
                for (size_t r0 = m0; r0 < m1; r0 += R5) {
                    for (size_t q = 0; q < 3; q++)
                        prefetch_panel_share(next[q], line_step, kc, per_tile, &line[q]);
                    const size_t nr = m1 - r0 < R5 ? m1 - r0 : R5;
                    if (fetch_y && k0 > 0 && r0 + R5 < m1)
                        prefetch_y_rows(y + (r0 + R5) * ldy + p * 16, ldy,
                                        m1 - r0 - R5 < R5 ? m1 - r0 - R5 : R5, nc * sizeof(float));
                    const float *xp[R5];
                    for (size_t r = 0; r < R5; r++)
                        xp[r] = x + (r0 + (r < nr ? r : nr - 1)) * ldx + k0;
                    float *yt = y + r0 * ldy + p * 16;
                    if (wide) /* the group's slice, widened: P panels of kc x 16 floats */
                        kern_avx512_group(xp, wide, 0, kc * SK_PANEL, SK_PANEL, P, kc, yt, ldy, nr,
                                          nc, bias, k0 > 0, SK_PACK_F32);
                    else
                        kern_avx512_group(xp, w->data, pa, w->pstride, rs, P, kc, yt, ldy, nr, nc,
                                          bias, k0 > 0, wt);
                }
            }
        }
    }
}

GEMM_PER_TYPE(AVX512, gemm_avx512_t, gemm_avx512, sk_gemm_avx512)

/* ------------------------------------------------------------------ AVX-512 pack - */

/* 16 inputs at a time: load 16 rows x 16 inputs, transpose in registers (unpack ps, unpack
 * pd, then two rounds of 128-bit lane shuffles), store 16 x 16 outputs. A partial panel
 * transposes zero vectors for its missing rows (the padding the layout wants); the last
 * n_in % 16 inputs take the scalar path. */
AVX512 void sk_pack_avx512(const float *w, size_t ldw, size_t n_out, size_t n_in, float *out) {
    const size_t panels = n_out / SK_PANEL + (n_out % SK_PANEL != 0);
    for (size_t p = 0; p < panels; p++) {
        float *dst = out + p * n_in * SK_PANEL;
        const size_t nc = n_out - p * SK_PANEL < SK_PANEL ? n_out - p * SK_PANEL : SK_PANEL;
        const float *base = w + p * SK_PANEL * ldw;
        size_t i0 = 0;
        for (; i0 + 16 <= n_in; i0 += 16) {
            __m512 r[16], t[16], u[16];
            for (size_t c = 0; c < 16; c++)
                r[c] = c < nc ? _mm512_loadu_ps(base + c * ldw + i0) : _mm512_setzero_ps();
            for (int k = 0; k < 8; k++) {
                t[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
                t[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
            }
            for (int k = 0; k < 4; k++) {
                __m512d a = _mm512_castps_pd(t[4 * k]), b = _mm512_castps_pd(t[4 * k + 1]);
                __m512d c2 = _mm512_castps_pd(t[4 * k + 2]), d2 = _mm512_castps_pd(t[4 * k + 3]);
                u[4 * k + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c2));
                u[4 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c2));
                u[4 * k + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d2));
                u[4 * k + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d2));
            }
            /* lane L of u[4k + j]: rows 4k..4k+3 at input 4L + j */
            for (int j = 0; j < 4; j++) {
                __m512 v0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88);
                __m512 v1 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xDD);
                __m512 v2 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88);
                __m512 v3 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xDD);
                float *d = dst + i0 * SK_PANEL;
                _mm512_storeu_ps(d + (size_t)(0 + j) * SK_PANEL, _mm512_shuffle_f32x4(v0, v2, 0x88));
                _mm512_storeu_ps(d + (size_t)(8 + j) * SK_PANEL, _mm512_shuffle_f32x4(v0, v2, 0xDD));
                _mm512_storeu_ps(d + (size_t)(4 + j) * SK_PANEL, _mm512_shuffle_f32x4(v1, v3, 0x88));
                _mm512_storeu_ps(d + (size_t)(12 + j) * SK_PANEL, _mm512_shuffle_f32x4(v1, v3, 0xDD));
            }
        }
        for (size_t i = i0; i < n_in; i++) {
            float *d = dst + i * SK_PANEL;
            for (size_t c = 0; c < nc; c++) d[c] = base[c * ldw + i];
            for (size_t c = nc; c < SK_PANEL; c++) d[c] = 0.0f;
        }
    }
}

#else /* not x86-64: the SIMD entry points fall back to the scalar code */

void sk_gemm_avx2(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,
                  size_t ldy) {
    sk_gemm_scalar(x, ldx, n_rows, w, y, ldy);
}
void sk_gemm_avx512(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,
                    size_t ldy) {
    sk_gemm_scalar(x, ldx, n_rows, w, y, ldy);
}
void sk_pack_avx512(const float *w, size_t ldw, size_t n_out, size_t n_in, float *out) {
    sk_pack_ref(w, ldw, n_out, n_in, out);
}
#endif
