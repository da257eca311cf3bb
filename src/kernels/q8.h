/*
 * q8.h - int8 x int8 -> int32 matrix products on Q8_0 weights (the int8 path of the model).
 *
 * Contract:
 *  - Weights: the kernels declare they read Q8_0 blocks (f16 scale, 32 int8) of an
 *    [n_out][n_in] matrix in INPUT_BLOCK_MAJOR order: block (o, b) at (b * n_out + o) * 34.
 *    File bytes (ROW_MAJOR) are converted to it once at load by sk_q8_to_kernel_order
 *    (src/quant/quant.h); sk_q8_pack_panels then interleaves those blocks, once, into the
 *    panels the kernels stream: for each panel p of SK_Q8_PANEL outputs and each input block
 *    b (chunk p * n_blocks + b, SK_Q8_CHUNK bytes): quants [8][16][4] (byte t of group j of
 *    output 16p + c at (j * 16 + c) * 4 + t), then the 16 scales as the file's f16 bits, then
 *    the sums of each output's 32 quants as int16 (128 times that sum corrects the
 *    biased-activation VNNI product): 36 bytes per block of 32 weights, against 34 in the
 *    file. The kernels widen scale and sum exactly, so keeping them 16-bit changes no result.
 *    Outputs past n_out are zero. Weight quants may be -128..127.
 *  - Activations are quantized per row in blocks of 32 (sk_q8_quantize_act): Q8 keeps one
 *    int8 block (x ~ d q, |q| <= 127); Q8x2 adds a second int8 pass on the rounding residual
 *    at 1/128 of the scale (x ~ d (q + r / 128)), and the kernels sum 128 dot(q, w) +
 *    dot(r, w) in int32. The scale stored per block (xs) is d for Q8 and d / 128 for Q8x2,
 *    so every kernel computes sum_b xs_b * wd_b * isum_b.
 *  - Arithmetic (fixed, so that every implementation is bit-identical to the reference):
 *    per output and block the exact int32 sum isum (Q8: dot(q, w); Q8x2: 128 dot(q, w) +
 *    dot(r, w)); acc = fmaf(xs * wd, (float)isum, acc) over the blocks in order from 0; the
 *    output is acc + bias. sk_q8_gemm_ref is that definition in plain C; the AVX2, AVX-512
 *    VNNI and AMX kernels and aarch64's SDOT and SMMLA ones are tested against it bit for bit.
 *  - Row-scaled matrices (sk_q8_packed.row_sum128 set; SKYCMD_WEIGHTS_Q8_ROW): every block
 *    of an output row carries the same scale wd, and the activations are quantized with
 *    SK_Q8_ACT_ROW (one scale d per row: d = max|x| / 127 over the row, stored in every
 *    block's xs; single pass). The integer sum then runs over the whole row and the float
 *    step happens once per output: y = fmaf(xs * wd, (float)isum, bias) with isum the exact
 *    int32 sum of q * w over all n_in inputs (n_in <= SK_Q8_ROW_MAX_IN, so no overflow, also
 *    with VNNI's q + 128). No per-block float step: the kernels (AMX: whole-row sums in
 *    the C tiles) are bound by the integer products alone (ONNX Runtime's dynamic int8
 *    granularity is coarser: one scale per tensor). sk_q8_linear quantizes the activations
 *    of such a matrix per row: two passes (SK_Q8_ACT_ROW2) when the mode asked is Q8x2 or
 *    ROW2, else one. Two passes run the kernels twice, as two single-pass products that
 *    are added (y = y_q + y_r, the bias in y_q): the q pass with scale d, the r pass (the
 *    rounding residual, r = round((x / d - q) * 128)) with scale d / 128. Each pass keeps
 *    its exact whole-row int32 sum, where one 128 q + r sum could overflow.
 *  - Outlier columns: channels listed in an sk_q8_weights are zeroed in the activations
 *    before quantization and added back afterwards in f32 with their exact weights.
 *  - No kernel allocates; sk_q8_act buffers belong to the caller (one per thread).
 */
#ifndef SK_Q8_H
#define SK_Q8_H

#include <stddef.h>
#include <stdint.h>

enum { SK_Q8_ACT_Q8X2 = 0, SK_Q8_ACT_Q8 = 1,   /* = skycmd_activations */
       SK_Q8_ACT_ROW = 2,    /* one scale per row (the row-scaled weights' activations) */
       SK_Q8_ACT_ROW2 = 3 }; /* one scale per row, two passes (q and r as Q8x2) */

/* Quantized activations: n_rows rows of n_blocks blocks. */
typedef struct sk_q8_act {
    size_t n_rows, n_blocks, cap_rows, cap_blocks;
    float *xs;     /* [n_rows][n_blocks] scale of the integer sum */
    int8_t *q;     /* [n_rows][n_blocks * 32] */
    int8_t *r;     /* residual pass (Q8x2) or unused */
    uint8_t *qb, *rb;  /* q + 128 and r + 128 as u8 (the VNNI kernel's unsigned operand) */
    int two_pass;
} sk_q8_act;

/* Grow a to hold n_rows x k (k % 32 == 0) activations; 0 or SKYCMD_E_NOMEM. */
int sk_q8_act_reserve(sk_q8_act *a, size_t n_rows, size_t k);
void sk_q8_act_free(sk_q8_act *a);
/* Quantize x ([n_rows][k], row stride ldx) into a (reserved). Columns c with zero_cols[c]
 * (k flags, may be NULL) are taken as 0. mode: SK_Q8_ACT_*. Per block of 32: d = max|x| /
 * 127, q = round(x / d) (x * (1 / d), half to even, clamped to [-127, 127], NaN -> 0); Q8x2
 * adds r = round((x / d - q) * 128); SK_Q8_ACT_ROW takes d = max|x| / 127 over the whole
 * row for every block (single pass), and SK_Q8_ACT_ROW2 the same d with Q8x2's second pass
 * (xs = d / 128 as for Q8x2). The SIMD versions give identical bytes. */
void sk_q8_quantize_act(const float *x, size_t ldx, size_t n_rows, size_t k, int mode,
                        const uint8_t *zero_cols, sk_q8_act *a);
void sk_q8_quantize_act_ref(const float *x, size_t ldx, size_t n_rows, size_t k, int mode,
                            const uint8_t *zero_cols, sk_q8_act *a);
void sk_q8_quantize_act_avx2(const float *x, size_t ldx, size_t n_rows, size_t k, int mode,
                             sk_q8_act *a);
void sk_q8_quantize_act_avx512(const float *x, size_t ldx, size_t n_rows, size_t k, int mode,
                               sk_q8_act *a);
/* aarch64 Advanced SIMD (src/kernels/q8_neon.c): the same bytes; zero_cols stays with the
 * reference. Elsewhere it forwards to the reference. */
void sk_q8_quantize_act_neon(const float *x, size_t ldx, size_t n_rows, size_t k, int mode,
                             sk_q8_act *a);
/* WebAssembly SIMD128 (src/kernels/kernels_wasm.c): the same bytes, zero_cols included.
 * Elsewhere it forwards to the reference. */
void sk_q8_quantize_act_wasm(const float *x, size_t ldx, size_t n_rows, size_t k, int mode,
                             const uint8_t *zero_cols, sk_q8_act *a);

#define SK_Q8_PANEL 16
#define SK_Q8_CHUNK (SK_Q8_PANEL * 32 + SK_Q8_PANEL * 2 + SK_Q8_PANEL * 2)
#define SK_Q8_CHUNK_SCALES (SK_Q8_PANEL * 32)                    /* uint16 f16 bits [16] */
#define SK_Q8_CHUNK_SUMS (SK_Q8_PANEL * 32 + SK_Q8_PANEL * 2)    /* int16 [16] */

/* A Q8_0 matrix packed into panels (see above). */
typedef struct sk_q8_packed {
    const uint8_t *panels;  /* ceil(n_out / 16) * (n_in / 32) chunks, 64-byte aligned */
    size_t n_in, n_out;
    const float *bias;      /* n_out values or NULL */
    /* Row-scaled (see above): 128 * the sum of each output row's quants, n_out values
     * (the VNNI kernel's correction for its biased activations); NULL = per-block scales. */
    const int32_t *row_sum128;
    /* Row-scaled panels in the tiles' pair order (sk_q8_relayout_pairs; AMX CPUs only):
     * blocks 2t and 2t + 1 of a panel keep their 2 x 576 bytes but hold the 1024 quant
     * bytes first, then the two 64-byte scale/sum parts, so one TDPBSSD reads K = 64 (a
     * TDPBSSD costs the same 16 cycles at K = 32 and 64). Every kernel reaches a block's
     * bytes through sk_q8_quants_at / sk_q8_meta_at; only the AMX and reference kernels
     * read this order (the VNNI and AVX2 entry points hand it to the reference, so sk_q8_gemm
     * stays correct when the tiles are capped after the load). */
    int pairs;
} sk_q8_packed;

/* Offsets (bytes from w->panels) of block b's 512 quant bytes and of its 64 bytes of f16
 * scales and int16 sums, in panel p of a matrix of nb blocks per row. */
static inline size_t sk_q8_quants_at(const sk_q8_packed *w, size_t nb, size_t p, size_t b) {
    const size_t base = p * nb * (size_t)SK_Q8_CHUNK;
    return w->pairs ? base + b / 2 * 2 * (size_t)SK_Q8_CHUNK + b % 2 * 512 : base + b * (size_t)SK_Q8_CHUNK;
}
static inline size_t sk_q8_meta_at(const sk_q8_packed *w, size_t nb, size_t p, size_t b) {
    const size_t base = p * nb * (size_t)SK_Q8_CHUNK;
    return w->pairs ? base + b / 2 * 2 * (size_t)SK_Q8_CHUNK + 1024 + b % 2 * 64
                    : base + b * (size_t)SK_Q8_CHUNK + 512;
}
/* Reorder the panels of a row-scaled matrix with an even block count into pair order, in
 * place (panels: w->panels, writable), and set w->pairs. Anything else is left as it is
 * (returns 0 then, 1 when reordered). Reading the matrix gives the same results after. */
int sk_q8_relayout_pairs(sk_q8_packed *w, uint8_t *panels);

/* Inputs of a row-scaled matrix at most: 255 * 128 * n_in stays below 2^31. */
#define SK_Q8_ROW_MAX_IN 65536

/* Bytes of the panels of an [n_out][n_in] matrix (0 on overflow). */
size_t sk_q8_panel_bytes(size_t n_out, size_t n_in);
/* Interleave Q8_0 blocks in INPUT_BLOCK_MAJOR order into panels (sk_q8_panel_bytes). */
void sk_q8_pack_panels(const uint8_t *kernel_order, size_t n_out, size_t n_in, uint8_t *out);

/* y[r][o] for r < a->n_rows, o in [o0, o1) (o0 a multiple of 16): the fixed arithmetic
 * above. */
void sk_q8_gemm_ref(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1, float *y,
                    size_t ldy);
void sk_q8_gemm_avx2(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                     float *y, size_t ldy);
void sk_q8_gemm_vnni(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                     float *y, size_t ldy);
/* aarch64 (src/kernels/q8_neon.c), bit-identical to sk_q8_gemm_ref like the x86 ones:
 * SDOT (call only when SK_CPU_DOTPROD) and SMMLA (only when SK_CPU_I8MM). A compiler that
 * cannot build one under a function target attribute (SK_Q8_HAVE_* below 0) leaves it the
 * reference, and the dispatcher does not choose it; off aarch64 both are the reference. */
void sk_q8_gemm_dotprod(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                        float *y, size_t ldy);
void sk_q8_gemm_i8mm(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                     float *y, size_t ldy);
/* 1 when the compiler builds the SDOT / SMMLA kernels whatever the baseline -march: the
 * intrinsics usable under a target attribute (GCC >= 8 / >= 10, clang >= 16, Apple clang
 * >= 15) or the feature on in the baseline. */
#if defined(__aarch64__) && (defined(__ARM_FEATURE_DOTPROD) ||                          \
    (defined(__clang__) && defined(__apple_build_version__) && __clang_major__ >= 15) ||  \
    (defined(__clang__) && !defined(__apple_build_version__) && __clang_major__ >= 16) || \
    (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 8))
#define SK_Q8_HAVE_DOTPROD 1
#else
#define SK_Q8_HAVE_DOTPROD 0
#endif
#if defined(__aarch64__) && SK_Q8_HAVE_DOTPROD && (defined(__ARM_FEATURE_MATMUL_INT8) || \
    (defined(__clang__) && defined(__apple_build_version__) && __clang_major__ >= 15) ||  \
    (defined(__clang__) && !defined(__apple_build_version__) && __clang_major__ >= 16) || \
    (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 10))
#define SK_Q8_HAVE_I8MM 1
#else
#define SK_Q8_HAVE_I8MM 0
#endif
/* WebAssembly SIMD128 (src/kernels/kernels_wasm.c; i32x4.dot_i16x8_s on quants widened to
 * int16), bit-identical to sk_q8_gemm_ref; the int8 kernel of a wasm32 build with
 * -msimd128, the reference elsewhere. */
void sk_q8_gemm_wasm(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                     float *y, size_t ldy);
/* AMX tiles (src/kernels/amx.c): call only when sk_amx_usable() and SK_CPU_AMX_INT8. */
void sk_q8_gemm_amx(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                    float *y, size_t ldy);
/* Two-pass row activations (a from SK_Q8_ACT_ROW2) on row-scaled weights, both passes in
 * one product: y = fmaf(128 xs wd, (float)isum_q, bias) + fmaf(xs wd, (float)isum_r, 0),
 * the sum sk_q8_linear forms from two single-pass products on every other kernel.
 * sk_q8_gemm_row2_ref is that definition; the AMX one is bit-identical to it (call only
 * where sk_q8_uses_tiles(); elsewhere it is the reference). */
void sk_q8_gemm_row2_ref(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                         float *y, size_t ldy);
void sk_q8_gemm_amx_row2(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                         float *y, size_t ldy);
/* Best of the above for this CPU (respects sk_kernels_level(): scalar level -> ref; AMX
 * unless SKYCMD_KERNELS caps it, see cpu.h; aarch64: SMMLA, else SDOT, at level NEON). */
void sk_q8_gemm(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1, float *y,
                size_t ldy);
/* 1 when sk_q8_gemm runs the AMX kernel here (the tile state granted, nothing capping it;
 * always 0 on aarch64). */
int sk_q8_uses_tiles(void);
/* What sk_q8_gemm uses: "amx", "vnni", "avx2" or "scalar" (x86-64); "i8mm", "dotprod" or
 * "scalar" (aarch64); "simd128" or "scalar" (wasm32). */
const char *sk_q8_kernel_name(void);
/* Test hook: 0 scalar, 1 avx2, 2 vnni, 3 amx (aarch64: 0 scalar, 1 dotprod, 2 i8mm; wasm32:
 * 0 scalar, 1 simd128), -1 automatic (a cap: never above what the CPU allows). Not for
 * concurrent use. */
void sk_q8_force_kernel(int which);

/* A Linear layer on int8 weights, with outlier columns. */
typedef struct sk_q8_weights {
    sk_q8_packed p;
    size_t n_outl;          /* outlier input channels (0 = none) */
    const uint32_t *outl;   /* their indices, ascending */
    const uint8_t *is_outl; /* n_in flags, or NULL when n_outl == 0 */
    const float *w_outl;    /* [n_out][n_outl] exact f32 weights of those columns */
} sk_q8_weights;

/* Per-thread workspace of sk_q8_linear. */
typedef struct sk_q8_ws {
    sk_q8_act act;
    float *xo;      /* gathered outlier activations [rows][n_outl] */
    size_t xo_cap;
    /* two-pass row activations: the q pass's scales (128 x act.xs) and the r pass's
     * products [rows][n_out] */
    float *xs_q, *y_r;
    size_t xs_q_cap, y_r_cap;
} sk_q8_ws;
void sk_q8_ws_free(sk_q8_ws *ws);

/* y = x . W^T + b on int8 weights (activations quantized with mode, outlier columns in f32),
 * split over the threads of pool (NULL = one) by output tiles: each output is computed by
 * the same arithmetic whatever the thread count. 0 or SKYCMD_E_NOMEM (workspace growth). */
struct sk_pool;
int sk_q8_linear(struct sk_pool *pool, sk_q8_ws *ws, const sk_q8_weights *w, int mode,
                 const float *x, size_t ldx, size_t n_rows, float *y, size_t ldy);

#endif /* SK_Q8_H */
