/*
 * amx.c - Intel AMX kernels (Sapphire Rapids and later): the int8 GEMMs of the Q8 paths
 * (block-scaled and row-scaled) and the BF16 GEMM of the bf16x3 mode on tile registers.
 * Every function carries its own target attribute, so only this file's code uses AMX
 * instructions; the dispatchers call it only when sk_amx_usable() and the kernel's feature
 * bit (cpu.h) say the tile state was granted to the process.
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
 *    fma per row: 48 vector uops per block) costs more, so the kernel is bound by that step,
 *    not by the matrix unit (on the development VM the tile work alone and the float step
 *    alone each measured about half of the combined time). Software-pipelined: the tile unit
 *    computes group g of blocks (4 for Q8, 2 for Q8x2, one C tile each per pass) into one
 *    half of a buffer while the vector units run the float step of group g - 1.
 *  - Rows are taken 16 at a time; the n_rows % 16 rows left over go to the AVX-512 VNNI
 *    kernel (bit-identical too), so no tile ever reads past the activation rows.
 *  - Row-scaled weights (q8.h, --q8-row) take their own path (q8row_*): no per-block float
 *    step, so the C tiles accumulate over the whole row and the kernel is bound by the tile
 *    unit and the weights' stream, not by vector arithmetic (see q8row_block). In pair order
 *    (sk_q8_packed.pairs, made at load on AMX) each product takes K = 64.
 *  - BF16 (bf16x3 and the attention products of the modes that use the tiles): see the
 *    section "BF16 tiles" below.
 *  - The tile configuration is loaded at the start of each call and released at its end
 *    (TILERELEASE), so a thread holds no live tile state between calls.
 */
#include <stdlib.h>
#include <string.h>

#include "q8.h"
#include "cpu.h"
#include "kernels.h"
#include "pool.h"

/* ---- portable parts: the bf16 weight layout and the scalar model of the BF16 kernel ---- */

static size_t round32(size_t k) { return (k + 31) / 32 * 32; }

size_t sk_amx_bf16_packed_elems(size_t n_out, size_t n_in) {
    return n_in > SIZE_MAX - 31 ? 0 : sk_packed_floats(n_out, round32(n_in));
}

/* bf16 bits of f, round to nearest even (the conversion the kernel uses for activations;
 * NaN stays NaN). */
static uint16_t to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

void sk_pack_amx_bf16(const sk_packed *src, int wtype, uint16_t *out) {
    const size_t kp = round32(src->n_in), panels = (src->n_out + 15) / 16;
    const int x3 = wtype == SK_PACK_AMX_BF16X3;
    const size_t tile = 512, step = x3 ? 2 * tile : tile;
    for (size_t p = 0; p < panels; p++)
        for (size_t s = 0; s < kp / 32; s++) {
            uint16_t *hi = out + p * (kp / 32) * step + s * step, *lo = hi + tile;
            for (size_t kk = 0; kk < 16; kk++)
                for (size_t c = 0; c < 16; c++)
                    for (size_t t = 0; t < 2; t++) {
                        const size_t o = p * 16 + c, i = s * 32 + 2 * kk + t;
                        const float v = o < src->n_out && i < src->n_in ? sk_packed_elem(src, o, i) : 0.0f;
                        const uint16_t h = to_bf16(v);
                        hi[(kk * 16 + c) * 2 + t] = h;
                        if (x3) lo[(kk * 16 + c) * 2 + t] = to_bf16(v - from_bf16(h));
                    }
        }
}

/* Scalar model of the AMX kernel's products (same split, same dropped term), summed in
 * double: the tests' reference and the fallback when the buffer cannot be had. */
void sk_gemm_amx_bf16_ref(const float *x, size_t ldx, size_t n_rows, const sk_packed *w,
                          float *y, size_t ldy) {
    const size_t k = w->n_in, kp = round32(k), nsteps = kp / 32;
    const int x3 = w->wtype == SK_PACK_AMX_BF16X3;
    const size_t step = x3 ? 1024 : 512;
    const uint16_t *wd = w->data;
    for (size_t r = 0; r < n_rows; r++)
        for (size_t o = 0; o < w->n_out; o++) {
            const size_t p = o / 16, c = o % 16;
            const uint16_t *wp = wd + p * w->pstride * (x3 ? 2 : 1);
            double s = 0.0;
            for (size_t i = 0; i < k; i++) {
                const float xv = x[r * ldx + i];
                const uint16_t xh = to_bf16(xv), xl = to_bf16(xv - from_bf16(xh));
                const size_t st = i / 32, kk = (i % 32) / 2, t = i % 2;
                const uint16_t *tile = wp + st * step;
                const double wh = from_bf16(tile[(kk * 16 + c) * 2 + t]);
                s += (double)from_bf16(xh) * wh + (double)from_bf16(xl) * wh;
                if (x3) s += (double)from_bf16(xh) * from_bf16(tile[512 + (kk * 16 + c) * 2 + t]);
            }
            (void)nsteps;
            y[r * ldy + o] = (float)(s + (w->bias ? w->bias[o] : 0.0f));
        }
}


#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

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

/* Tiles of the int8 kernel: C 0-3 (16 x 16 int32 block sums), A 4-5 (16 rows x 32 int8),
 * B 6-7 (8 rows x 64 int8). Q8 runs groups of 4 blocks (C j for block 4g + j); Q8x2 groups
 * of 2 (C 0/1 the q/r sums of the even block, C 2/3 of the odd one). */
static const amx_cfg q8_cfg = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 32, 32, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 8, 8},
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

/* The tile work of block b: its exact int32 sums into sums (and sums + 256 for the r pass). */
#define Q8_ISSUE(b, CQ, CR, AT, ART, BT, two, sums)                                         \
    do {                                                                                    \
        TILE_ZERO(CQ);                                                                      \
        TILE_LOAD(BT, ch + (b) * SK_Q8_CHUNK, 64);                                          \
        TILE_LOAD(AT, xq + (b) * 32, xstride);                                              \
        TILE_DPBSSD(CQ, AT, BT);                                                            \
        if (two) {                                                                          \
            TILE_ZERO(CR);                                                                  \
            TILE_LOAD(ART, xr + (b) * 32, xstride);                                         \
            TILE_DPBSSD(CR, ART, BT);                                                       \
        }                                                                                   \
        TILE_STORE(CQ, (sums), 64);                                                         \
        if (two) TILE_STORE(CR, (sums) + 256, 64);                                          \
    } while (0)

/* 16 rows from r0, the 16 outputs of panel p (nc valid). Software-pipelined: the tile unit
 * works on group g while the vector units run the float step of group g - 1 from the other
 * half of the buffer, so no load waits on a tile store just issued. */
AMXI8 static inline void q8_tile16(const sk_q8_act *a, const sk_q8_packed *w, size_t r0,
                                   size_t p, size_t nc, float *y, size_t ldy, int two) {
    const size_t nb = w->n_in / 32, xstride = nb * 32;
    const uint8_t *ch = w->panels + p * nb * SK_Q8_CHUNK;
    const int8_t *xq = a->q + r0 * xstride, *xr = a->r + r0 * xstride;
    const float *xs = a->xs + r0 * nb;
    const size_t G = two ? 2 : 4;      /* blocks per group */
    /* [half][block in group][q sums 256, r sums 256] */
    _Alignas(64) int32_t buf[2][4][512];
    __m512 acc[16];
#pragma GCC unroll 16
    for (int r = 0; r < 16; r++) acc[r] = _mm512_setzero_ps();
    const size_t ng = (nb + G - 1) / G;
    for (size_t g = 0; g <= ng; g++) {
        if (g < ng) {
            int32_t(*h)[512] = buf[g & 1];
            const size_t b = g * G;
            if (two) {
                Q8_ISSUE(b, 0, 1, 4, 5, 6, 1, h[0]);
                if (b + 1 < nb) Q8_ISSUE(b + 1, 2, 3, 4, 5, 7, 1, h[1]);
            } else {
                Q8_ISSUE(b, 0, 1, 4, 5, 6, 0, h[0]);
                if (b + 1 < nb) Q8_ISSUE(b + 1, 1, 1, 5, 5, 7, 0, h[1]);
                if (b + 2 < nb) Q8_ISSUE(b + 2, 2, 1, 4, 5, 6, 0, h[2]);
                if (b + 3 < nb) Q8_ISSUE(b + 3, 3, 1, 5, 5, 7, 0, h[3]);
            }
        }
        if (g > 0) {
            int32_t(*h)[512] = buf[(g - 1) & 1];
            const size_t b0 = (g - 1) * G;
            for (size_t j = 0; j < G && b0 + j < nb; j++) {
                const uint8_t *cj = ch + (b0 + j) * SK_Q8_CHUNK;
                const __m512 wd = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(cj + SK_Q8_CHUNK_SCALES)));
                if (two)
                    Q8_STEP(acc, h[j], h[j] + 256, 1, xs + b0 + j, nb, wd);
                else
                    Q8_STEP(acc, h[j], h[j], 0, xs + b0 + j, nb, wd);
            }
        }
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

/* ---- row-scaled weights (q8.h, SKYCMD_WEIGHTS_Q8_ROW): whole-row int32 sums in the tiles ----
 * No float step per block: the C tiles accumulate TDPBSSD over every block of the row, and
 * the only float work is the final y = fmaf(xs * wd, (float)isum, bias) per output, so the
 * kernel is bound by the tile unit, not by vector arithmetic. The int32 sums are exact
 * (n_in <= SK_Q8_ROW_MAX_IN, |q| <= 127) and an integer sum has no order, so the result is
 * the reference's bit for bit. Blocking 2 x 2: two A tiles (32 rows) by two B tiles (two
 * panels) into four C tiles, each tile load feeding two products; a lone 16-row block or a
 * lone panel runs the same loop with the missing half skipped. */
static const amx_cfg q8row_cfg = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 32, 32, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 8, 8},
};
/* Pair order (q8.h, sk_q8_packed.pairs): A 16 rows x 64 int8, B 16 rows x 64 int8, K = 64 a
 * product: the same tile instructions do twice the work (measured 1.15-1.35x the K = 32
 * kernel alone; tile loads, not products, then bound it). */
static const amx_cfg q8row_pairs_cfg = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

/* The float step of the C tiles of a block, owed while the tile unit works on the next
 * block (software pipelining, as q8_tile16 does): their sums wait in one half of the sweep's
 * buffer, and a few of their output rows are finished at every step of the next block's
 * reduction, so the vector work hides under the tiles' and no load waits on a tile store
 * just issued. With the output lines fetched ahead (q8row_fetch_y), against the float step
 * after each block and no fetch (skycmd-q8-gemm, 384 rows, 8 matrices in turn from memory,
 * one thread, Sapphire Rapids class guest): base's 768 x 2304 1.84-1.95 against 1.57-1.65
 * TOP/s, large's 1024 x 4096 1.88-1.91 against 1.48-1.51; a large 128-token --int8 request
 * 336-360 against 373-392 ms (base's within the noise). Each output row is the reference's
 * one float step: y = fmaf(xs * wd, (float)isum, bias); with two-pass row activations (sr,
 * the r pass's sums of the same rows, a->xs = d / 128) fmaf(128 xs wd, (float)isum_q, bias) +
 * fmaf(xs wd, (float)isum_r, 0), the two single-pass products sk_q8_linear adds elsewhere
 * (q8.h), bit for bit. */
typedef struct q8row_tile_out {
    const int32_t *sq, *sr;  /* 16 x 16 int32 sums (sr: NULL but for two-pass activations) */
    const float *xs;         /* the first row's activation scale (a->xs, a row every nb) */
    float *y;                /* the first row's first output */
    __m512 wd, bias;
    __mmask16 m;
} q8row_tile_out;
typedef struct q8row_due {
    q8row_tile_out t[4];
    size_t n_tiles, h, nb, ldy;
    size_t tile, row;        /* the next output row to finish */
} q8row_due;

/* Finishes the owed rows up to the unit-th (tile-major: tile i's row r is i h + r). */
AMXI8 static inline void q8row_due_run(q8row_due *d, size_t unit) {
    while (d->tile < d->n_tiles && d->tile * d->h + d->row < unit) {
        const q8row_tile_out *t = &d->t[d->tile];
        const size_t r = d->row;
        const float xs = t->xs[r * d->nb];
        const __m512 iq = _mm512_cvtepi32_ps(_mm512_load_si512(t->sq + r * 16));
        __m512 v;
        if (t->sr) {
            const __m512 scq = _mm512_mul_ps(_mm512_set1_ps(xs * 128.0f), t->wd);
            const __m512 scr = _mm512_mul_ps(_mm512_set1_ps(xs), t->wd);
            v = _mm512_add_ps(_mm512_fmadd_ps(scq, iq, t->bias),
                              _mm512_fmadd_ps(scr, _mm512_cvtepi32_ps(_mm512_load_si512(t->sr + r * 16)),
                                              _mm512_setzero_ps()));
        } else {
            v = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(xs), t->wd), iq, t->bias);
        }
        _mm512_mask_storeu_ps(t->y + r * d->ldy, t->m, v);
        if (++d->row == d->h) {
            d->row = 0;
            d->tile++;
        }
    }
}

/* Owes the float step of one C tile's sums: rows r0 .. r0 + h - 1, panel p (nc outputs). */
AMXI8 static inline void q8row_due_add(q8row_due *d, const int32_t *sq, const int32_t *sr,
                                       const sk_q8_act *a, const sk_q8_packed *w, size_t r0,
                                       size_t p, size_t nc, float *y) {
    const size_t o = p * SK_Q8_PANEL;
    q8row_tile_out *t = &d->t[d->n_tiles++];
    t->sq = sq;
    t->sr = sr;
    t->xs = a->xs + r0 * d->nb;
    t->y = y + r0 * d->ldy + o;
    t->m = (__mmask16)((1u << nc) - 1u);
    t->wd = _mm512_cvtph_ps(_mm256_load_si256(
        (const __m256i *)(w->panels + sk_q8_meta_at(w, d->nb, p, 0))));
    t->bias = w->bias ? _mm512_maskz_loadu_ps(t->m, w->bias + o) : _mm512_setzero_ps();
}

/* Fetches the output lines [line, upto) of a block (rows from r0, panels p and p + 1 when
 * two_p: line i is row i / 2's panel p + i % 2, or row i's panel p), returns upto. */
AMXI8 static inline size_t q8row_fetch_y(const float *y, size_t ldy, size_t r0, size_t p, int two_p,
                                         size_t line, size_t upto) {
    for (; line < upto; line++) {
        const size_t r = two_p ? line / 2 : line, pp = p + (two_p ? line % 2 : 0);
        _mm_prefetch((const char *)(y + (r0 + r) * ldy + pp * SK_Q8_PANEL), _MM_HINT_T0);
    }
    return line;
}

/* Rows r0 .. r0 + h - 1 (and r0 + h .. r0 + 2h - 1 when two_r; h = the configured tile rows),
 * panels p (and p + 1 when two_p): C0 = A4.B6, C1 = A4.B7, C2 = A5.B6, C3 = A5.B7 over
 * every block, the sums stored to sums and owed to d (whose earlier block's rows are
 * finished meanwhile). fused (two-pass row activations): A5 holds the r pass of rows r0 ..
 * r0 + h - 1 instead, two_r is 1, and the outputs are two-pass ones. [pf, pf + pf_len):
 * weights the caller takes next, fetched into L2 a slice per block step meanwhile. */
AMXI8 static void q8row_block(const sk_q8_act *a, const sk_q8_packed *w, size_t r0, size_t h,
                              size_t p, int two_r, int two_p, int fused, const uint8_t *pf,
                              size_t pf_len, size_t o1, int32_t (*sums)[256], q8row_due *d,
                              float *y) {
    const size_t nb = w->n_in / 32, xstride = nb * 32, pstride = nb * SK_Q8_CHUNK;
    const uint8_t *b0 = w->panels + p * pstride, *b1 = b0 + pstride;
    const int8_t *x0 = a->q + r0 * xstride, *x1 = fused ? a->r + r0 * xstride : x0 + h * xstride;
    const size_t pf_step = (pf_len / nb + 63) / 64 * 64;
    const uint8_t *pf_end = pf + pf_len;
    /* the owed rows, spread evenly over the steps of the reduction */
    const size_t steps = w->pairs ? nb / 2 : nb, owed = d->n_tiles * d->h;
    /* this block's output lines, fetched meanwhile into L1 for the next block's float step
     * (y is written once and has no reason to be in cache: left to the stores, each line's
     * fetch stalled them) */
    const size_t y_lines = (two_r && !fused ? 2 * h : h) * (two_p ? 2 : 1);
    size_t y_line = 0;
    TILE_ZERO(0);
    TILE_ZERO(1);
    TILE_ZERO(2);
    TILE_ZERO(3);
    if (w->pairs) {  /* K = 64: blocks 2t and 2t + 1 in one product (q8row_pairs_cfg) */
        for (size_t t = 0; t < nb / 2; t++) {
            for (size_t i = 0; i < 2 * pf_step && pf < pf_end; i += 64, pf += 64)
                _mm_prefetch((const char *)pf, _MM_HINT_T1);
            TILE_LOAD(4, x0 + t * 64, xstride);
            TILE_LOAD(6, b0 + t * 2 * SK_Q8_CHUNK, 64);
            TILE_DPBSSD(0, 4, 6);
            if (two_p) {
                TILE_LOAD(7, b1 + t * 2 * SK_Q8_CHUNK, 64);
                TILE_DPBSSD(1, 4, 7);
            }
            if (two_r) {
                TILE_LOAD(5, x1 + t * 64, xstride);
                TILE_DPBSSD(2, 5, 6);
                if (two_p) TILE_DPBSSD(3, 5, 7);
            }
            q8row_due_run(d, (t + 1) * owed / steps);
            y_line = q8row_fetch_y(y, d->ldy, r0, p, two_p, y_line, (t + 1) * y_lines / steps);
        }
    }
    for (size_t b = 0; b < nb && !w->pairs; b++) {
        for (size_t i = 0; i < pf_step && pf < pf_end; i += 64, pf += 64)
            _mm_prefetch((const char *)pf, _MM_HINT_T1);
        TILE_LOAD(4, x0 + b * 32, xstride);
        TILE_LOAD(6, b0 + b * SK_Q8_CHUNK, 64);
        TILE_DPBSSD(0, 4, 6);
        if (two_p) {
            TILE_LOAD(7, b1 + b * SK_Q8_CHUNK, 64);
            TILE_DPBSSD(1, 4, 7);
        }
        if (two_r) {
            TILE_LOAD(5, x1 + b * 32, xstride);
            TILE_DPBSSD(2, 5, 6);
            if (two_p) TILE_DPBSSD(3, 5, 7);
        }
        q8row_due_run(d, (b + 1) * owed / steps);
        y_line = q8row_fetch_y(y, d->ldy, r0, p, two_p, y_line, (b + 1) * y_lines / steps);
    }
    q8row_due_run(d, owed);
    d->n_tiles = d->tile = d->row = 0;
    TILE_STORE(0, sums[0], 64);
    if (two_p) TILE_STORE(1, sums[1], 64);
    if (two_r) TILE_STORE(2, sums[2], 64);
    if (two_r && two_p) TILE_STORE(3, sums[3], 64);
    d->h = h;
    for (int i = 0; i < 4; i++) {
        const int ir = fused ? 0 : i >> 1, ip = i & 1;
        if ((fused && i >= 2) || (ir && !two_r) || (ip && !two_p)) continue;
        const size_t pp = p + (size_t)ip, o = pp * SK_Q8_PANEL;
        const size_t nc = o1 - o < SK_Q8_PANEL ? o1 - o : SK_Q8_PANEL;
        q8row_due_add(d, sums[i], fused ? sums[2 + ip] : NULL, a, w, r0 + h * (size_t)ir, pp, nc, y);
    }
}

/* Rows [r0, r1) in blocks of h rows (the configured tile rows; r1 - r0 a multiple of h),
 * outputs [o0, o1); fused: two-pass row activations, a block of h rows at a time. Groups of panels of ~384 KB (in L2) are each swept by every pair of
 * row blocks, whose activations stay in L1 across the group's panels (as in
 * sk_q8_gemm_amx); meanwhile the next group is fetched into L2, a slice per block. The
 * weights are the stream (a base question reads ~100 MB of them, from memory), so their
 * fetch has to overlap the tiles' work: swept without it, cold weights ran at ~1.1 TOP/s
 * against ~1.9 warm. Each block's float step runs during the next block (q8row_due); the
 * last one's after the sweep. */
AMXI8 static void q8row_sweep(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                              float *y, size_t ldy, size_t r0, size_t r1, size_t h, int fused) {
    const size_t rstep = fused ? h : 2 * h;
    const size_t pend = (o1 + SK_Q8_PANEL - 1) / SK_Q8_PANEL, pstride = w->n_in / 32 * SK_Q8_CHUNK;
    size_t pg = (size_t)393216 / pstride / 2 * 2;
    if (pg < 2) pg = 2;
    const size_t row_pairs = (r1 - r0 + rstep - 1) / rstep;
    _Alignas(64) int32_t sums[2][4][256];
    q8row_due d = {.nb = w->n_in / 32, .ldy = ldy};
    size_t half = 0;
    for (size_t pg0 = o0 / SK_Q8_PANEL; pg0 < pend; pg0 += pg) {
        const size_t pe = pg0 + pg < pend ? pg0 + pg : pend;
        const size_t next = pe < pend ? ((pe + pg < pend ? pe + pg : pend) - pe) * pstride : 0;
        const size_t calls = row_pairs * ((pe - pg0 + 1) / 2);
        const size_t slice = (next + calls - 1) / calls;
        const uint8_t *pf = w->panels + pe * pstride, *pf_end = pf + next;
        for (size_t r = r0; r < r1; r += rstep) {
            const int two_r = fused || r + 2 * h <= r1;
            for (size_t p = pg0; p < pe; p += 2, half ^= 1) {
                const int two_p = p + 1 < pe;
                const size_t len = (size_t)(pf_end - pf) < slice ? (size_t)(pf_end - pf) : slice;
                if (fused && two_p)
                    q8row_block(a, w, r, h, p, 1, 1, 1, pf, len, o1, sums[half], &d, y);
                else if (fused)
                    q8row_block(a, w, r, h, p, 1, 0, 1, pf, len, o1, sums[half], &d, y);
                else if (two_r && two_p)
                    q8row_block(a, w, r, h, p, 1, 1, 0, pf, len, o1, sums[half], &d, y);
                else
                    q8row_block(a, w, r, h, p, two_r, two_p, 0, pf, len, o1, sums[half], &d, y);
                pf += len;
            }
        }
    }
    q8row_due_run(&d, d.n_tiles * d.h);
}

/* Whole 16-row blocks first, then the n_rows % 16 rows left over on tiles configured with
 * that many rows (no tile reads past the activations). fused: a holds two-pass row
 * activations (q8row_store). */
AMXI8 static void q8row_gemm_amx(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                                 float *y, size_t ldy, int fused) {
    const size_t full = a->n_rows / 16 * 16, tail = a->n_rows - full;
    const amx_cfg *cfg = w->pairs ? &q8row_pairs_cfg : &q8row_cfg;
    if (full) {
        tile_config(cfg);
        q8row_sweep(a, w, o0, o1, y, ldy, 0, full, 16, fused);
    }
    if (tail) {
        amx_cfg c = *cfg;
        for (int t = 0; t < 6; t++) c.rows[t] = (uint8_t)tail;  /* C and A tiles */
        tile_config(&c);
        q8row_sweep(a, w, o0, o1, y, ldy, full, a->n_rows, tail, fused);
    }
    TILE_RELEASE();
}

AMXI8 void sk_q8_gemm_amx_row2(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                               float *y, size_t ldy) {
    q8row_gemm_amx(a, w, o0, o1, y, ldy, 1);
}

AMXI8 void sk_q8_gemm_amx(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                          float *y, size_t ldy) {
    if (w->row_sum128) {
        q8row_gemm_amx(a, w, o0, o1, y, ldy, 0);
        return;
    }
    const size_t full = a->n_rows / 16 * 16;
    if (full) {
        tile_config(&q8_cfg);
        /* groups of panels of ~768 KB (in L2), each swept by every 16-row block, whose
         * activations (16 x n_in bytes per pass) stay in L1 across the group's panels:
         * measured 25-40 % faster than panels outside rows (A tiles from L2) */
        const size_t pend = (o1 + SK_Q8_PANEL - 1) / SK_Q8_PANEL;
        size_t pg = (size_t)786432 / ((w->n_in / 32) * SK_Q8_CHUNK);
        if (pg < 1) pg = 1;
        for (size_t pg0 = o0 / SK_Q8_PANEL; pg0 < pend; pg0 += pg)
            for (size_t r0 = 0; r0 < full; r0 += 16)
                for (size_t p = pg0; p < pend && p < pg0 + pg; p++) {
                    const size_t nc = o1 - p * SK_Q8_PANEL < SK_Q8_PANEL ? o1 - p * SK_Q8_PANEL : SK_Q8_PANEL;
                    if (a->two_pass)
                        q8_tile16(a, w, r0, p, nc, y, ldy, 1);
                    else
                        q8_tile16(a, w, r0, p, nc, y, ldy, 0);
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


/* ======================================================================================
 * BF16 tiles: the f32 GEMM of kernels.h on weights held as bf16 (SK_PACK_AMX_BF16X2, the
 * matrices of a BF16 file, exact) or as a bf16 hi + lo pair (SK_PACK_AMX_BF16X3, from f32).
 *  - Activations are split per call: hi = bf16(x) (round to nearest even), lo = bf16(x - hi)
 *    (x - hi is exact in f32), so x = hi + lo to ~2^-17 relative. Products: hi.W + lo.W for
 *    X2 (the weights are exact, only the activation's last bits are lost), hi.Wh + lo.Wh +
 *    hi.Wl for X3 (lo.Wl, ~2^-16 relative, is dropped). TDPBF16PS multiplies bf16 pairs
 *    exactly and accumulates in f32 with round-to-nearest-even; bf16 denormal inputs are taken
 *    as zero and denormal outputs flushed (values below 1e-38: nothing a model meets).
 *  - So the result is not bit-identical to the AVX-512 f32 kernel: it is within ~1e-5
 *    relative per product (X3) of the f32 sum; tests hold it to a bound against the reference
 *    in double, and the model-level tolerance is checked against laya's goldens.
 *  - Weight layout (sk_pack_amx_bf16): per panel of 16 outputs, per step of 32 inputs
 *    (n_in rounded up to 32 with zeros): a 1024-byte B tile, row kk holding for each output
 *    c the pair (w[c][32s + 2kk], w[c][32s + 2kk + 1]); X3 follows it with the lo tile.
 *    pstride is 16 * n_in rounded up, in elements of sk_pack_elem_size() bytes (2 or 4).
 *  - The split activations go to a per-thread buffer (sk_kernel_scratch's BF16 slot: grown
 *    on demand, freed when the thread exits). Rows are converted in chunks of at most
 *    ~512 KB, zero-padded to 16 rows, so the buffer is bounded and stays in L2; for each
 *    chunk, panels are taken 4 at a time (4 C tiles, 16 x 64 outputs) with the weights of
 *    those panels reused over every 16-row block of the chunk.
 * ====================================================================================== */

#define AMXBF __attribute__((target("avx512bf16,avx512vl,avx512bw,avx512f,avx2,fma,f16c")))

static const amx_cfg bf_cfg = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};


/* The bf16 rounding of v as an f32 (what vcvtneps2bf16 gives for finite v; a denormal v,
 * which the instruction reads as zero, leaves a denormal residue that it then rounds to a
 * signed zero): integer round-to-nearest-even on the 16 bits dropped, so the residue v - hi
 * needs no widening of the packed bf16 (port 5 shuffles were half of the split's time). */
AMXBF static inline __m512 bf16_round_f32(__m512 v) {
    const __m512i b = _mm512_castps_si512(v);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_add_epi32(_mm512_add_epi32(b, _mm512_set1_epi32(0x7fff)), odd);
    return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32((int)0xffff0000)));
}

/* 32 consecutive values (v0 then v1) as bf16 hi parts and bf16 lo parts (the residues). */
AMXBF static inline void split32(__m512 v0, __m512 v1, uint16_t *h, uint16_t *l) {
    _mm512_storeu_si512((void *)h, (__m512i)_mm512_cvtne2ps_pbh(v1, v0));
    _mm512_storeu_si512((void *)l, (__m512i)_mm512_cvtne2ps_pbh(_mm512_sub_ps(v1, bf16_round_f32(v1)),
                                                                 _mm512_sub_ps(v0, bf16_round_f32(v0))));
}

/* Rows [0, nr) of x (nr <= rows, rows % 16 == 0) into hi/lo [rows][kp], zero-padded. */
AMXBF static void split_rows(const float *x, size_t ldx, size_t nr, size_t rows, size_t k,
                             size_t kp, uint16_t *hi, uint16_t *lo) {
    const size_t kw = k / 32 * 32, t0 = k - kw < 16 ? k - kw : 16, t1 = k - kw - t0;
    const __mmask16 m0 = (__mmask16)((1u << t0) - 1u), m1 = (__mmask16)((1u << t1) - 1u);
    for (size_t r = 0; r < nr; r++) {
        uint16_t *h = hi + r * kp, *l = lo + r * kp;
        const float *xr = x + r * ldx;
        size_t i = 0;
        for (; i < kw; i += 32)
            split32(_mm512_loadu_ps(xr + i), _mm512_loadu_ps(xr + i + 16), h + i, l + i);
        if (i < kp)
            split32(_mm512_maskz_loadu_ps(m0, xr + i), _mm512_maskz_loadu_ps(m1, xr + i + 16), h + i,
                    l + i);
    }
    if (rows > nr) {
        memset(hi + nr * kp, 0, (rows - nr) * kp * sizeof *hi);
        memset(lo + nr * kp, 0, (rows - nr) * kp * sizeof *lo);
    }
}

/* sk_pack_amx_bf16 for an F32 source, 16 outputs at a time: a tile row is the bf16 of two
 * consecutive inputs of the panel's 16 outputs, interleaved as (even, odd) pairs. Masked
 * loads take the panel's missing outputs and the inputs past n_in as zeros, so a view over
 * a wider row-major matrix (rstride > 16) reads nothing past its own columns. */
AMXBF void sk_pack_amx_bf16_f32(const sk_packed *src, int wtype, uint16_t *out) {
    const size_t kp = round32(src->n_in), panels = (src->n_out + 15) / 16;
    const size_t rs = sk_packed_rstride(src), n_in = src->n_in;
    const int x3 = wtype == SK_PACK_AMX_BF16X3;
    const size_t tile = 512, step = x3 ? 2 * tile : tile;
    const float *data = src->data;
    for (size_t p = 0; p < panels; p++) {
        const size_t nc = src->n_out - p * 16 < 16 ? src->n_out - p * 16 : 16;
        const __mmask16 m = (__mmask16)((1u << nc) - 1u);
        const float *base = data + p * src->pstride;
        for (size_t s = 0; s < kp / 32; s++) {
            uint16_t *hi = out + p * (kp / 32) * step + s * step, *lo = hi + tile;
            for (size_t kk = 0; kk < 16; kk++) {
                const size_t i0 = s * 32 + 2 * kk;
                const __m512 v0 = i0 < n_in ? _mm512_maskz_loadu_ps(m, base + i0 * rs) : _mm512_setzero_ps();
                const __m512 v1 = i0 + 1 < n_in ? _mm512_maskz_loadu_ps(m, base + (i0 + 1) * rs) : _mm512_setzero_ps();
                const __m512i h0 = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(v0));
                const __m512i h1 = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(v1));
                _mm512_store_si512((void *)(hi + kk * 32), _mm512_or_si512(h0, _mm512_slli_epi32(h1, 16)));
                if (x3) {
                    const __m512 r0 = _mm512_sub_ps(v0, _mm512_castsi512_ps(_mm512_slli_epi32(h0, 16)));
                    const __m512 r1 = _mm512_sub_ps(v1, _mm512_castsi512_ps(_mm512_slli_epi32(h1, 16)));
                    const __m512i l0 = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(r0));
                    const __m512i l1 = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(r1));
                    _mm512_store_si512((void *)(lo + kk * 32), _mm512_or_si512(l0, _mm512_slli_epi32(l1, 16)));
                }
            }
        }
    }
}

/* One block of the tile GEMM: two 16-row blocks of activations by two 16-column panels
 * (either may be one), four C tiles. The 32-deep steps go in order, and each step adds its
 * products to every C tile in the same order, lo x hi, hi x hi, then hi x lo (bf16x3):
 * consecutive TDPBF16PS write different C tiles, so no product waits for the one before it
 * (each tile is written once per four products), and every output element gets the same
 * sequence of operations whatever block shape it falls in: a row's result does not depend
 * on the rows around it. A0/A1 hold the two row blocks' operand, B0/B1 the two panels'. */
#define T_A0 4
#define T_A1 5
#define T_B0 6
#define T_B1 7
#define BF_PRODUCTS()                                                                          do {                                                                                           TILE_DPBF16PS(0, T_A0, T_B0);                                                              if (two_p) TILE_DPBF16PS(1, T_A0, T_B1);                                                   if (two_r) TILE_DPBF16PS(2, T_A1, T_B0);                                                   if (two_r && two_p) TILE_DPBF16PS(3, T_A1, T_B1);                                      } while (0)

/* Stores C tile t (row block r, panel j) to y + r * 16 rows + j * 16 columns when y is
 * given, else to out[t]. */
#define BF_STORE(t, r, j)                                                                      do {                                                                                           if (y)                                                                                         TILE_STORE(t, y + (r) * 16 * ldy + (j) * 16, ldy * sizeof(float));                     else                                                                                           TILE_STORE(t, out[t], 64);                                                         } while (0)

AMXBF static void bf_block(const uint16_t *hi, const uint16_t *lo, size_t kp, int two_r,
                           const uint16_t *wp, size_t pstep, int two_p, int x3,
                           float out[4][256], float *y, size_t ldy) {
    const size_t nsteps = kp / 32, wstep = x3 ? 1024 : 512; /* in uint16 */
    const size_t astride = kp * 2, rblock = 16 * kp;
    TILE_ZERO(0);
    TILE_ZERO(1);
    TILE_ZERO(2);
    TILE_ZERO(3);
    for (size_t s = 0; s < nsteps; s++) {
        const uint16_t *h = hi + s * 32, *l = lo + s * 32, *b = wp + s * wstep;
        TILE_LOAD(T_A0, l, astride);
        if (two_r) TILE_LOAD(T_A1, l + rblock, astride);
        TILE_LOAD(T_B0, b, 64);
        if (two_p) TILE_LOAD(T_B1, b + pstep, 64);
        BF_PRODUCTS();
        TILE_LOAD(T_A0, h, astride);
        if (two_r) TILE_LOAD(T_A1, h + rblock, astride);
        BF_PRODUCTS();
        if (x3) {
            TILE_LOAD(T_B0, b + 512, 64);
            if (two_p) TILE_LOAD(T_B1, b + pstep + 512, 64);
            BF_PRODUCTS();
        }
    }
    BF_STORE(0, 0, 0);
    if (two_p) BF_STORE(1, 0, 1);
    if (two_r) BF_STORE(2, 1, 0);
    if (two_r && two_p) BF_STORE(3, 1, 1);
}

/* The body of sk_gemm_amx_bf16 with the tiles already configured (bf_cfg). */
AMXBF static void bf_gemm(const float *x, size_t ldx, size_t n_rows, const sk_packed *w,
                          float *y, size_t ldy);

AMXBF void sk_gemm_amx_bf16(const float *x, size_t ldx, size_t n_rows, const sk_packed *w,
                            float *y, size_t ldy) {
    tile_config(&bf_cfg);
    bf_gemm(x, ldx, n_rows, w, y, ldy);
    TILE_RELEASE();
}

/* A run of products on one configuration: ldtilecfg costs about as much as a 16 x 64 x 64
 * product, so attention (two small products per block of 16 queries) configures once per
 * unit of work. */
void sk_amx_bf16_begin(void) { tile_config(&bf_cfg); }
void sk_amx_bf16_end(void) { TILE_RELEASE(); }
AMXBF void sk_gemm_amx_bf16_run(const float *x, size_t ldx, size_t n_rows, const sk_packed *w,
                                float *y, size_t ldy) {
    bf_gemm(x, ldx, n_rows, w, y, ldy);
}

AMXBF static void bf_gemm(const float *x, size_t ldx, size_t n_rows, const sk_packed *w,
                          float *y, size_t ldy) {
    const size_t k = w->n_in, kp = round32(k), m = w->n_out, panels = (m + 15) / 16;
    const int x3 = w->wtype == SK_PACK_AMX_BF16X3;
    /* rows per chunk: ~512 KB of split activations, a multiple of 16 */
    size_t chunk = (size_t)262144 / (kp * 2) / 16 * 16;
    if (chunk < 16) chunk = 16;
    const size_t want = (n_rows + 15) / 16 * 16 < chunk ? (n_rows + 15) / 16 * 16 : chunk;
    uint16_t *buf = sk_kernel_scratch(SK_SCRATCH_BF16_SPLIT, 2 * want * kp * sizeof(uint16_t));
    if (!buf) {
        sk_gemm_amx_bf16_ref(x, ldx, n_rows, w, y, ldy);
        return;
    }
    _Alignas(64) float out[4][256];
    const uint16_t *wd = w->data;
    const size_t pstep = w->pstride * (x3 ? 2 : 1);
    for (size_t r0 = 0; r0 < n_rows; r0 += chunk) {
        const size_t nr = n_rows - r0 < chunk ? n_rows - r0 : chunk, rows = (nr + 15) / 16 * 16;
        uint16_t *hi = buf, *lo = buf + rows * kp;
        split_rows(x + r0 * ldx, ldx, nr, rows, k, kp, hi, lo);
        for (size_t p0 = 0; p0 < panels; p0 += 2) {
            const int two_p = p0 + 1 < panels;
            const uint16_t *wp = wd + p0 * pstep;
            for (size_t b = 0; b < rows; b += 32) {
                const int two_r = b + 16 < rows;
                const size_t vr = nr - b < 32 ? nr - b : 32;
                /* no bias, whole rows and whole panels: the tiles go straight to y */
                float *direct = !w->bias && vr == (two_r ? 32u : 16u) &&
                                        (p0 + 1 + (size_t)two_p) * 16 <= m
                                    ? y + (r0 + b) * ldy + p0 * 16 : NULL;
                bf_block(hi + b * kp, lo + b * kp, kp, two_r, wp, pstep, two_p, x3, out, direct,
                         ldy);
                if (direct) continue;
                for (int t = 0; t < 4; t++) {
                    const size_t rb = (size_t)t / 2, j = (size_t)t % 2;
                    if ((rb && !two_r) || (j && !two_p)) continue;
                    const size_t o = (p0 + j) * 16, nc = m - o < 16 ? m - o : 16;
                    const size_t r_lo = b + rb * 16, nrow = nr - r_lo < 16 ? nr - r_lo : 16;
                    const __mmask16 mk = (__mmask16)((1u << nc) - 1u);
                    const __m512 bias = w->bias ? _mm512_maskz_loadu_ps(mk, w->bias + o) : _mm512_setzero_ps();
                    for (size_t r = 0; r < nrow; r++)
                        _mm512_mask_storeu_ps(y + (r0 + r_lo + r) * ldy + o, mk,
                                              _mm512_add_ps(_mm512_load_ps(out[t] + r * 16), bias));
                }
            }
        }
    }
}


#else
/* Not x86-64: the dispatchers never call these; they exist so that the symbols resolve. */
void sk_q8_gemm_amx(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1, float *y,
                    size_t ldy) {
    sk_q8_gemm_ref(a, w, o0, o1, y, ldy);
}
void sk_q8_gemm_amx_row2(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                         float *y, size_t ldy) {
    sk_q8_gemm_row2_ref(a, w, o0, o1, y, ldy);
}
void sk_gemm_amx_bf16(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,
                      size_t ldy) {
    sk_gemm_amx_bf16_ref(x, ldx, n_rows, w, y, ldy);
}
void sk_pack_amx_bf16_f32(const sk_packed *src, int wtype, uint16_t *out) {
    sk_pack_amx_bf16(src, wtype, out);
}
void sk_amx_bf16_begin(void) {}
void sk_amx_bf16_end(void) {}
void sk_gemm_amx_bf16_run(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,
                          size_t ldy) {
    sk_gemm_amx_bf16_ref(x, ldx, n_rows, w, y, ldy);
}
#endif
