/*
 * kernels.h - f32 compute kernels of the forward pass.
 *
 * Contract:
 *  - The *_ref functions are the plain scalar reference: straightforward loops, f32
 *    accumulation (double for LayerNorm statistics). Tests check every SIMD kernel against
 *    them.
 *  - The functions without a suffix dispatch, by sk_kernels_level(), to the best
 *    implementation this CPU supports (AVX-512F, AVX2+FMA or scalar code). The _scalar,
 *    _avx2 and _avx512 variants exist so that tests can compare them; calling a SIMD variant
 *    on a CPU without the feature is undefined, so check sk_cpu_features() first.
 *  - Matrices use PyTorch's order: a Linear weight W is [n_out][n_in] row-major, so
 *    y = x . W^T + b. Activations are [rows][cols] row-major with explicit row strides.
 *  - Weights are prepacked once (sk_pack) into panels of SK_PANEL outputs: panel p holds
 *    W[p*16 + c][i] at [i][c], zero-padded past n_out, so the GEMM streams each panel
 *    linearly. Packed buffers are 64-byte aligned.
 *  - No kernel allocates; all are thread-safe (no shared mutable state except the level
 *    override, which tests set before any concurrent use).
 */
#ifndef SK_KERNELS_H
#define SK_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#define SK_PANEL 16

/* Kernel levels: ordered tiers of one architecture, 0 the scalar reference. x86-64 has
 * AVX2 (+FMA+F16C) < AVX-512F; aarch64 has NEON (Advanced SIMD, every aarch64 CPU), whose
 * int8 products use SDOT/SMMLA where the CPU has them (q8.h). A tier's number means nothing
 * across architectures: compare levels only with the names of the architecture compiled. */
enum { SK_LEVEL_SCALAR = 0, SK_LEVEL_AVX2 = 1, SK_LEVEL_AVX512 = 2, SK_LEVEL_NEON = 1,
       SK_LEVEL_SIMD128 = 1 /* wasm32 built with -msimd128 */ };
/* The level the dispatchers use: the best the CPU supports, lowered by
 * sk_kernels_force_level() (tests) or the environment variable SKYCMD_KERNELS=scalar|avx2
 * (SKYCMD_KERNELS=avx512 leaves the level and turns the AMX kernels off: cpu.h). */
int sk_kernels_level(void);
/* Test hook: cap the level (-1 restores automatic choice). Not for concurrent use. */
void sk_kernels_force_level(int level);
const char *sk_kernels_level_name(int level);

/* Element types of packed weights. F16 and BF16 panels are widened exactly to f32 as the
 * GEMM reads them, so they give the same results as f32 panels of the widened values with
 * half the memory. */
enum { SK_PACK_F32 = 0, SK_PACK_F16 = 1, SK_PACK_BF16 = 2,
       /* AMX tile layouts (src/kernels/amx.c), made only when the tile unit is usable:
        * bf16 weights (exact for a BF16 file), and bf16 hi + lo pairs of f32 weights. Only
        * sk_gemm / sk_gemm_pool (dispatching to sk_gemm_amx_bf16) read them. */
       SK_PACK_AMX_BF16X2 = 3, SK_PACK_AMX_BF16X3 = 4,
       /* the same two on aarch64 BF16 matrix instructions (src/kernels/bf16_neon.c, BFMMLA
        * operand order), made only where sk_neon_bf16_usable() */
       SK_PACK_NEON_BF16X2 = 5, SK_PACK_NEON_BF16X3 = 6 };

/* A packed weight matrix (or a view of one). */
typedef struct sk_packed {
    const void *data;     /* panels of elements of type wtype */
    const float *bias;    /* n_out values padded with zeros to a whole panel, or NULL */
    size_t n_in;          /* k: the reduction length */
    size_t n_out;         /* m */
    size_t pstride;       /* elements from one panel to the next (>= n_in * SK_PANEL) */
    int wtype;            /* SK_PACK_* */
    size_t rstride;       /* elements from one input to the next within a panel; 0 means
                           * SK_PANEL (packed). Other values (F32 only, whole panels only)
                           * let a row-major [n_in][ld] matrix serve in place: panel p at
                           * column 16p, pstride SK_PANEL, rstride ld. */
} sk_packed;

/* The row stride of w's panels (rstride, or SK_PANEL when 0). */
static inline size_t sk_packed_rstride(const sk_packed *w) {
    return w->rstride ? w->rstride : SK_PANEL;
}

/* Elements needed to pack an [n_out][n_in] matrix (0 on overflow). */
size_t sk_packed_floats(size_t n_out, size_t n_in);
/* Pack w ([n_out][n_in], row stride ldw) into out (sk_packed_floats() elements). A pure
 * copy: every implementation gives the same bytes (AVX-512: 16 x 16 register transposes;
 * attention packs its keys with it on every call). */
void sk_pack(const float *w, size_t ldw, size_t n_out, size_t n_in, float *out);
void sk_pack_ref(const float *w, size_t ldw, size_t n_out, size_t n_in, float *out);
void sk_pack_avx512(const float *w, size_t ldw, size_t n_out, size_t n_in, float *out);
/* The same for 16-bit elements (F16 or BF16 bits, moved unchanged). */
void sk_pack_u16(const uint16_t *w, size_t ldw, size_t n_out, size_t n_in, uint16_t *out);
/* Bytes per element of a SK_PACK_* type. */
size_t sk_pack_elem_size(int wtype);
/* Weight (o, i) of a packed F32/F16/BF16 matrix (or view), widened to f32: the BF16 layouts'
 * packers read their source through it. */
float sk_packed_elem(const sk_packed *w, size_t o, size_t i);

/* y[r][o] = sum_i x[r][i] * w[o][i] + (b ? b[o] : 0), for r < n_rows, o < n_out.
 * ldx/ldy are the row strides of x and y (in floats). Row-major w: the reference. */
void sk_gemm_ref(const float *x, size_t ldx, size_t n_rows, size_t n_in, const float *w,
                 const float *b, size_t n_out, float *y, size_t ldy);
/* The same with a packed matrix (bias from w->bias). Any shape: with n_in = 0 each output is
 * its bias (or 0), and nothing is written (or read) when n_rows or n_out is 0. sk_gemm
 * settles those shapes itself and sends n_in = 0 to sk_gemm_scalar, the definition, which
 * gives it for any shape; the ISA GEMMs below need not handle them, so callers of one by
 * name pass n_rows, n_out and n_in >= 1. */
void sk_gemm(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y, size_t ldy);
/* sk_gemm split over the threads of a pool (NULL or 1 thread: plain sk_gemm) when the product
 * is large enough to pay for the hand-off. Each output is computed by one thread with the
 * same arithmetic as sk_gemm, so the result is identical for any thread count. */
struct sk_pool;
void sk_gemm_pool(struct sk_pool *pool, const float *x, size_t ldx, size_t n_rows,
                  const sk_packed *w, float *y, size_t ldy);
void sk_gemm_scalar(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,
                    size_t ldy);
void sk_gemm_avx2(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,
                  size_t ldy);
void sk_gemm_avx512(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,
                    size_t ldy);

/* LayerNorm over each row of d values (row stride d): (x - mean) / sqrt(var + eps) * w (+ b),
 * biased variance. y may alias x. b may be NULL. */
void sk_layernorm_ref(const float *x, size_t n_rows, size_t d, const float *w, const float *b,
                      float eps, float *y);
void sk_layernorm(const float *x, size_t n_rows, size_t d, const float *w, const float *b,
                  float eps, float *y);
void sk_layernorm_avx2(const float *x, size_t n_rows, size_t d, const float *w, const float *b,
                       float eps, float *y);
void sk_layernorm_avx512(const float *x, size_t n_rows, size_t d, const float *w,
                         const float *b, float eps, float *y);
/* x[i] += a[i] for i < n (the residual add; x and a distinct). */
void sk_add(float *restrict x, const float *restrict a, size_t n);
/* The residual step before a LayerNorm, in one pass over the rows: x += a (when a is not
 * NULL), then y = LayerNorm(x) as above. y may alias x or a. */
void sk_add_layernorm_ref(float *x, const float *a, size_t n_rows, size_t d, const float *w,
                          const float *b, float eps, float *y);
void sk_add_layernorm(float *x, const float *a, size_t n_rows, size_t d, const float *w,
                      const float *b, float eps, float *y);
void sk_add_layernorm_avx512(float *x, const float *a, size_t n_rows, size_t d, const float *w,
                             const float *b, float eps, float *y);

/* Exact GELU, 0.5 x (1 + erf(x / sqrt 2)). */
float sk_gelu1(float x);
/* y[i] = gelu(a[i]) * g[i] for i < n (the GeGLU of ModernBERT's MLP); y may alias a. The
 * reference uses libm erff; the SIMD versions are within 2.5e-7 max(1, |x|) of the exact
 * GELU (absolute: the accuracy class of PyTorch's float GELU; see kernels_x86.c). */
void sk_geglu_ref(const float *a, const float *g, float *y, size_t n);
void sk_geglu(const float *a, const float *g, float *y, size_t n);
/* The implementation sk_geglu dispatches to, for loops that call it row by row. */
typedef void (*sk_geglu_fn)(const float *a, const float *g, float *y, size_t n);
sk_geglu_fn sk_geglu_kernel(void);
void sk_geglu_avx2(const float *a, const float *g, float *y, size_t n);
void sk_geglu_avx512(const float *a, const float *g, float *y, size_t n);
/* In place: x[i] = gelu(x[i]). */
void sk_gelu_ref(float *x, size_t n);
void sk_gelu(float *x, size_t n);
void sk_gelu_avx2(float *x, size_t n);
void sk_gelu_avx512(float *x, size_t n);

/* In-place softmax of n values scaled first: x[i] = exp(s*x[i] - max) / sum (one row). */
typedef void (*sk_softmax_row_fn)(float *x, size_t n, float scale);
void sk_attn_softmax_ref(float *x, size_t n, float scale);
void sk_attn_softmax_avx2(float *x, size_t n, float scale);
/* The softmax of nr rows of an attention score block (row stride ld, nk columns, nk < 2^31):
 * row r is the one-row softmax over its columns [a[r], b[r]) (a[r] < b[r] <= nk) and 0 in
 * the other columns. _each applies a one-row kernel row by row (the reference and the AVX2
 * level); the AVX-512 code runs rows eight at a time, so its sums may add in another order. */
void sk_attn_softmax_rows_each(sk_softmax_row_fn row_softmax, float *x, size_t ld, size_t nr,
                               size_t nk, const size_t *a, const size_t *b, float scale);
void sk_attn_softmax_rows_ref(float *x, size_t ld, size_t nr, size_t nk, const size_t *a,
                              const size_t *b, float scale);
void sk_attn_softmax_rows(float *x, size_t ld, size_t nr, size_t nk, const size_t *a,
                          const size_t *b, float scale);
void sk_attn_softmax_rows_avx512(float *x, size_t ld, size_t nr, size_t nk, const size_t *a,
                                 const size_t *b, float scale);

/* NEOX rotary embedding of n_heads head vectors of D values each (u[h*D .. h*D+D)): with
 * half = D/2, u'[i] = u[i] c[i] - u[i+half] s[i] and u'[i+half] = u[i+half] c[i] + u[i] s[i]
 * (rotate_half, as transformers), c/s holding D/2 values for the position. */
void sk_rope_ref(float *u, size_t n_heads, size_t D, const float *c, const float *s);
void sk_rope(float *u, size_t n_heads, size_t D, const float *c, const float *s);
/* The implementation sk_rope dispatches to, for loops that call it row by row. */
typedef void (*sk_rope_fn)(float *u, size_t n_heads, size_t D, const float *c, const float *s);
sk_rope_fn sk_rope_kernel(void);
void sk_rope_avx2(float *u, size_t n_heads, size_t D, const float *c, const float *s);
void sk_rope_avx512(float *u, size_t n_heads, size_t D, const float *c, const float *s);

/* Widen n 16-bit values (SK_PACK_F16 or SK_PACK_BF16 bits; src need not be aligned) to f32,
 * exactly. */
/* 1 when every one of x[0..n) is finite (no infinity, no NaN), else 0. */
int sk_all_finite_ref(const float *x, size_t n);
int sk_all_finite(const float *x, size_t n);
int sk_all_finite_avx512(const float *x, size_t n);

void sk_widen16_ref(int wtype, const void *src, float *dst, size_t n);
void sk_widen16(int wtype, const void *src, float *dst, size_t n);
void sk_widen16_avx2(int wtype, const void *src, float *dst, size_t n);

/* aarch64 NEON (src/kernels/kernels_neon.c): call only where sk_cpu_features() has
 * SK_CPU_NEON (on other CPUs they are the scalar code). Same contracts as the functions
 * above; the GEMM widens F16/BF16 panels exactly as it loads them. */
void sk_gemm_neon(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,
                  size_t ldy);
void sk_layernorm_neon(const float *x, size_t n_rows, size_t d, const float *w, const float *b,
                       float eps, float *y);
void sk_add_layernorm_neon(float *x, const float *a, size_t n_rows, size_t d, const float *w,
                           const float *b, float eps, float *y);
void sk_geglu_neon(const float *a, const float *g, float *y, size_t n);
void sk_gelu_neon(float *x, size_t n);
void sk_attn_softmax_neon(float *x, size_t n, float scale);
void sk_rope_neon(float *u, size_t n_heads, size_t D, const float *c, const float *s);
void sk_widen16_neon(int wtype, const void *src, float *dst, size_t n);
int sk_all_finite_neon(const float *x, size_t n);

/* WebAssembly SIMD128 (src/kernels/kernels_wasm.c): the packed GEMM and the F16/BF16
 * widening, bit for bit sk_gemm_scalar's and sk_widen16_ref's results, and GELU/GEGLU,
 * the one-row softmax and (add+)LayerNorm (the x86 levels' contracts); the level of a
 * wasm32 build with -msimd128 (chosen at build time), the scalar code elsewhere. Its int8
 * GEMM is sk_q8_gemm_wasm (q8.h). */
void sk_gemm_wasm(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,
                  size_t ldy);
void sk_widen16_wasm(int wtype, const void *src, float *dst, size_t n);
void sk_geglu_wasm(const float *a, const float *g, float *y, size_t n);
void sk_gelu_wasm(float *x, size_t n);
void sk_attn_softmax_wasm(float *x, size_t n, float scale);
void sk_layernorm_wasm(const float *x, size_t n_rows, size_t d, const float *w, const float *b,
                       float eps, float *y);
void sk_add_layernorm_wasm(float *x, const float *a, size_t n_rows, size_t d, const float *w,
                           const float *b, float eps, float *y);

/* AMX BF16 GEMM (src/kernels/amx.c): y = x . W^T + b on SK_PACK_AMX_BF16X2/X3 weights
 * (activations split into bf16 hi + lo per call; see amx.c for the error bound). Call only
 * when sk_amx_usable() and SK_CPU_AMX_BF16 and SK_CPU_AVX512BF16. The _ref is its scalar
 * model (the same products summed in double). sk_pack_amx_bf16 writes the layout from any
 * packed F32/F16/BF16 matrix (sk_amx_bf16_packed_elems(n_out, n_in) elements of
 * sk_pack_elem_size(wtype) bytes; 0 on overflow); its pstride is 16 * round_up(n_in, 32). */
/* Whether the AMX-BF16 kernel may run here (CPU, OS grant, SKYCMD_KERNELS cap). */
int sk_amx_bf16_usable(void);
size_t sk_amx_bf16_packed_elems(size_t n_out, size_t n_in);
void sk_pack_amx_bf16(const sk_packed *src, int wtype, uint16_t *out);
/* The same layout from an F32 source in AVX-512-BF16 (call only where sk_gemm_amx_bf16 may
 * run; out 64-byte aligned): bit-identical to sk_pack_amx_bf16 for normal values (the
 * instruction takes f32 denormals, below 1e-38, as zero). Attention packs every head's keys
 * and values with it on each call (src/model/forward.c). */
void sk_pack_amx_bf16_f32(const sk_packed *src, int wtype, uint16_t *out);
/* sk_gemm_amx_bf16 configures the tiles and releases them on every call; a run of small
 * products (attention) instead brackets sk_gemm_amx_bf16_run calls (no pool, SK_PACK_AMX_*
 * weights only) with _begin and _end on one thread, and may run other (non-tile) kernels
 * in between. */
/* aarch64 BF16 GEMM (src/kernels/bf16_neon.c): y = x . W^T + b on SK_PACK_NEON_BF16X2/X3
 * weights, the arithmetic of the AMX one above (activations split into bf16 hi + lo, three
 * products for X3); BFMMLA where sk_neon_bf16_usable() (FEAT_BF16, a compiler that builds
 * BFMMLA, not capped by SKYCMD_KERNELS=neon|scalar), else _ref, its scalar model (double sums);
 * sk_pack_neon_bf16 writes the layout from a packed F32/F16/BF16 matrix
 * (sk_neon_bf16_packed_elems(n_out, n_in) elements of sk_pack_elem_size(wtype) bytes). */
int sk_neon_bf16_usable(void);
/* 1 when this compiler builds BFMMLA and BFCVTN under a target attribute (GCC >= 12, clang
 * >= 16, Apple clang >= 15) or the feature is on in the baseline: bf16_neon.c has the kernel. */
#if defined(__aarch64__) && (defined(__ARM_FEATURE_BF16_VECTOR_ARITHMETIC) ||            \
    (defined(__clang__) && defined(__apple_build_version__) && __clang_major__ >= 15) ||  \
    (defined(__clang__) && !defined(__apple_build_version__) && __clang_major__ >= 16) || \
    (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 12))
#define SK_KERNELS_HAVE_NEON_BF16 1
#else
#define SK_KERNELS_HAVE_NEON_BF16 0
#endif
size_t sk_neon_bf16_packed_elems(size_t n_out, size_t n_in);
void sk_pack_neon_bf16(const sk_packed *src, int wtype, uint16_t *out);
void sk_gemm_neon_bf16(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,
                       size_t ldy);
void sk_gemm_neon_bf16_ref(const float *x, size_t ldx, size_t n_rows, const sk_packed *w,
                           float *y, size_t ldy);
void sk_amx_bf16_begin(void);
void sk_amx_bf16_end(void);
void sk_gemm_amx_bf16_run(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,
                          size_t ldy);
void sk_gemm_amx_bf16(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y,
                      size_t ldy);
void sk_gemm_amx_bf16_ref(const float *x, size_t ldx, size_t n_rows, const sk_packed *w,
                          float *y, size_t ldy);

#endif /* SK_KERNELS_H */
