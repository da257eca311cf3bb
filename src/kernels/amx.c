/*
 * amx.c - Intel AMX kernels (Sapphire Rapids and later): the int8 GEMM of the Q8 paths on
 * tile registers. Every function carries its own target attribute, so only this file's code
 * uses AMX instructions; the dispatchers call it only when sk_amx_usable() and the kernel's
 * feature bit (cpu.h) say the tile state was granted to the process.
 *
 * Int8 GEMM (sk_q8_gemm_amx), bit-identical to sk_q8_gemm_ref:
 *  - The panel layout of q8.h is already the AMX B-operand layout: a chunk's 512 quant bytes
 *    are 8 rows of 64 bytes, row j holding bytes 4j..4j+3 of each of the 16 outputs, which is
 *    what TDPBSSD reads as a K = 32 by N = 16 int8 matrix ("VNNI" pairing of 4). The
 *    activations' signed quants (sk_q8_act.q / .r, row stride n_blocks * 32) are the A
 *    operand as they lie: 16 rows of 32 bytes. No repacking, no +128 bias (TDPBSSD is signed
 *    by signed).
 *  - Q8_0 scales are per block of 32 inputs, and the reference's float step is per block
 *    (acc = fmaf(xs * wd, isum, acc), blocks in order), so each TDPBSSD covers exactly one
 *    block (K = 32) into a zeroed tile: its int32 results are the exact block sums of 16 rows
 *    x 16 outputs. They are stored to a small buffer and the float step runs there in AVX-512,
 *    16 accumulator registers (one per row, 16 outputs per lane) in the reference's order:
 *    the result is bit for bit the reference's. Q8x2 runs the second pass (residual quants)
 *    in a second tile and combines 128 dq + dr in int32 (exact, |value| < 2^31).
 *  - The TMUL does a block of 16 x 16 x 32 in ~16 cycles; the float step (convert, scale,
 *    fma per row) costs ~24, so the kernel is bound by that step, not by the matrix unit.
 *    Two blocks are in flight (even/odd tiles and buffers) so the tile unit's latency hides
 *    behind the vector work of the previous block.
 *  - Rows are taken 16 at a time; the n_rows % 16 rows left over go to the AVX-512 VNNI
 *    kernel (bit-identical too), so no tile ever reads past the activation rows.
 *  - The tile configuration is loaded at the start of each call and released at its end
 *    (TILERELEASE), so a thread holds no live tile state between calls.
 */
#include "q8.h"
#include "cpu.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <string.h>

#define AMXI8 __attribute__((target("avx512vnni,avx512vl,avx512bw,avx512f,avx2,fma,f16c")))

/* The tile instructions as inline assembly with their memory effects spelled out (GCC 12's
 * intrinsics give tileloadd no memory input and ldtilecfg an 8-byte one, so the compiler
 * could move stores to the operands past them). Tile numbers must be literal digits. */
#define TILE_LOAD(t, base, stride) TILE_LOAD_(t, base, stride)
#define TILE_LOAD_(t, base, stride)                                                        \
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"((const void *)(base)),          \
                     "r"((long)(stride)) : "memory")
#define TILE_STORE(t, base, stride) TILE_STORE_(t, base, stride)
#define TILE_STORE_(t, base, stride)                                                       \
    __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"((void *)(base)),             \
                     "r"((long)(stride)) : "memory")
#define TILE_ZERO(t) TILE_ZERO_(t)
#define TILE_ZERO_(t) __asm__ volatile("tilezero %%tmm" #t ::)
/* c += a . b (int8 x int8 -> int32, signed by signed) */
#define TILE_DPBSSD(c, a, b) TILE_DPBSSD_(c, a, b)
#define TILE_DPBSSD_(c, a, b) __asm__ volatile("tdpbssd %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
/* c += a . b (bf16 pairs -> f32) */
#define TILE_DPBF16PS(c, a, b) TILE_DPBF16PS_(c, a, b)
#define TILE_DPBF16PS_(c, a, b) __asm__ volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
#define TILE_RELEASE() __asm__ volatile("tilerelease" ::: "memory")

/* The 64-byte tile configuration of palette 1. */
typedef struct amx_cfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_cfg;

static void tile_config(const amx_cfg *c) {
    __asm__ volatile("ldtilecfg %0" ::"m"(*c) : "memory");
}

/* Tiles of the int8 kernel: C (16 x 16 int32) of the q and r passes of even and odd blocks,
 * A (16 rows x 32 int8) of q and r, B (8 rows x 64 int8) of even and odd blocks. */
#define T_CQ0 0
#define T_CR0 1
#define T_AQ 2
#define T_AR 3
#define T_B0 4
#define T_B1 5
#define T_CQ1 6
#define T_CR1 7
static const amx_cfg q8_cfg = {
    .palette = 1,
    .colsb = {64, 64, 32, 32, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 8, 8, 16, 16},
};

/* The reference's float step for one block of 16 rows x 16 outputs: sums (16 x 16 int32,
 * dq; dr as well for Q8x2), acc[r] += (xs[r] * wd) * isum, lane by lane. */
#define Q8_STEP(acc, sq, sr, two, xs, xstride, wd)                                          \
    do {                                                                                    \
        _Pragma("GCC unroll 16") for (int r_ = 0; r_ < 16; r_++) {                          \
            __m512i is_ = _mm512_load_si512((const void *)((sq) + r_ * 16));                \
            if (two)                                                                        \
                is_ = _mm512_add_epi32(_mm512_slli_epi32(is_, 7),                           \
                                       _mm512_load_si512((const void *)((sr) + r_ * 16)));  \
            const __m512 sc_ = _mm512_mul_ps(_mm512_set1_ps((xs)[(size_t)r_ * (xstride)]), (wd)); \
            acc[r_] = _mm512_fmadd_ps(sc_, _mm512_cvtepi32_ps(is_), acc[r_]);               \
        }                                                                                   \
    } while (0)

/* 16 rows from r0, the 16 outputs of panel p (nc valid). */
AMXI8 static inline void q8_tile16(const sk_q8_act *a, const sk_q8_packed *w, size_t r0,
                                   size_t p, size_t nc, float *y, size_t ldy, int two) {
    const size_t nb = w->n_in / 32, xstride = nb * 32;
    const uint8_t *ch = w->panels + p * nb * SK_Q8_CHUNK;
    const int8_t *xq = a->q + r0 * xstride, *xr = a->r + r0 * xstride;
    const float *xs = a->xs + r0 * nb;
    _Alignas(64) int32_t sq0[256], sr0[256], sq1[256], sr1[256];
    __m512 acc[16];
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++) acc[r] = _mm512_setzero_ps();
    size_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const uint8_t *c0 = ch + b * SK_Q8_CHUNK, *c1 = c0 + SK_Q8_CHUNK;
        TILE_ZERO(T_CQ0);
        TILE_ZERO(T_CQ1);
        TILE_LOAD(T_B0, c0, 64);
        TILE_LOAD(T_B1, c1, 64);
        TILE_LOAD(T_AQ, xq + b * 32, xstride);
        TILE_DPBSSD(T_CQ0, T_AQ, T_B0);
        TILE_LOAD(T_AQ, xq + (b + 1) * 32, xstride);
        TILE_DPBSSD(T_CQ1, T_AQ, T_B1);
        if (two) {
            TILE_ZERO(T_CR0);
            TILE_ZERO(T_CR1);
            TILE_LOAD(T_AR, xr + b * 32, xstride);
            TILE_DPBSSD(T_CR0, T_AR, T_B0);
            TILE_LOAD(T_AR, xr + (b + 1) * 32, xstride);
            TILE_DPBSSD(T_CR1, T_AR, T_B1);
        }
        TILE_STORE(T_CQ0, sq0, 64);
        if (two) TILE_STORE(T_CR0, sr0, 64);
        TILE_STORE(T_CQ1, sq1, 64);
        if (two) TILE_STORE(T_CR1, sr1, 64);
        const __m512 wd0 = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(c0 + SK_Q8_CHUNK_SCALES)));
        const __m512 wd1 = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(c1 + SK_Q8_CHUNK_SCALES)));
        Q8_STEP(acc, sq0, sr0, two, xs + b, nb, wd0);
        Q8_STEP(acc, sq1, sr1, two, xs + b + 1, nb, wd1);
    }
    if (b < nb) {
        const uint8_t *c0 = ch + b * SK_Q8_CHUNK;
        TILE_ZERO(T_CQ0);
        TILE_LOAD(T_B0, c0, 64);
        TILE_LOAD(T_AQ, xq + b * 32, xstride);
        TILE_DPBSSD(T_CQ0, T_AQ, T_B0);
        if (two) {
            TILE_ZERO(T_CR0);
            TILE_LOAD(T_AR, xr + b * 32, xstride);
            TILE_DPBSSD(T_CR0, T_AR, T_B0);
        }
        TILE_STORE(T_CQ0, sq0, 64);
        if (two) TILE_STORE(T_CR0, sr0, 64);
        const __m512 wd0 = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(c0 + SK_Q8_CHUNK_SCALES)));
        Q8_STEP(acc, sq0, sr0, two, xs + b, nb, wd0);
    }
    const __mmask16 m = (__mmask16)((1u << nc) - 1u);
    const size_t o = p * SK_Q8_PANEL;
    const __m512 bias = w->bias ? _mm512_maskz_loadu_ps(m, w->bias + o) : _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++) {
        const __m512 v = w->bias ? _mm512_add_ps(acc[r], bias) : acc[r];
        _mm512_mask_storeu_ps(y + (r0 + (size_t)r) * ldy + o, m, v);
    }
}

AMXI8 void sk_q8_gemm_amx(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                          float *y, size_t ldy) {
    const size_t full = a->n_rows / 16 * 16;
    if (full) {
        tile_config(&q8_cfg);
        for (size_t p = o0 / SK_Q8_PANEL; p * SK_Q8_PANEL < o1; p++) {
            const size_t nc = o1 - p * SK_Q8_PANEL < SK_Q8_PANEL ? o1 - p * SK_Q8_PANEL : SK_Q8_PANEL;
            for (size_t r0 = 0; r0 < full; r0 += 16) {
                if (a->two_pass)
                    q8_tile16(a, w, r0, p, nc, y, ldy, 1);
                else
                    q8_tile16(a, w, r0, p, nc, y, ldy, 0);
            }
        }
        TILE_RELEASE();
    }
    if (full < a->n_rows) {
        /* the last rows: the VNNI kernel on a view that starts at row `full` */
        sk_q8_act tail = *a;
        const size_t off = full * a->n_blocks;
        tail.n_rows = a->n_rows - full;
        tail.xs = a->xs + off;
        tail.q = a->q + off * 32;
        tail.r = a->r + off * 32;
        tail.qb = a->qb + off * 32;
        tail.rb = a->rb + off * 32;
        sk_q8_gemm_vnni(&tail, w, o0, o1, y + full * ldy, ldy);
    }
}

#else
void sk_q8_gemm_amx(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1, float *y,
                    size_t ldy) {
    sk_q8_gemm_ref(a, w, o0, o1, y, ldy);
}
#endif
