/* kernels.c - run-time dispatch of the kernels in kernels.h to the best implementation the
 * CPU supports. The level is computed once (CPU features, capped by SKYCMD_KERNELS=scalar|
 * avx2 in the environment) and cached; tests may cap it with sk_kernels_force_level(). Each
 * level is one table of implementations (kernel_set). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "skycmd.h"
#include "kernels.h"
#include "cpu.h"
#include "q8.h"
#include "pool.h"

/* One table of implementations per level of this architecture: a dispatcher reads the
 * table of the current level, so adding an architecture or a level is one table, not a
 * branch in every function. A NULL add_layernorm means "sk_add, then the level's
 * layernorm"; a NULL softmax_rows means "the level's one-row softmax, row by row". */
typedef struct kernel_set {
    const char *name;
    void (*gemm)(const float *, size_t, size_t, const sk_packed *, float *, size_t);
    void (*pack)(const float *, size_t, size_t, size_t, float *);
    void (*layernorm)(const float *, size_t, size_t, const float *, const float *, float, float *);
    void (*add_layernorm)(float *, const float *, size_t, size_t, const float *, const float *,
                          float, float *);
    sk_geglu_fn geglu;
    void (*gelu)(float *, size_t);
    void (*softmax_rows)(float *, size_t, size_t, size_t, const size_t *, const size_t *, float);
    sk_softmax_row_fn softmax_row;
    sk_rope_fn rope;
    void (*widen16)(int, const void *, float *, size_t);
    int (*all_finite)(const float *, size_t);
} kernel_set;

static const kernel_set k_scalar = {
    "scalar", sk_gemm_scalar, sk_pack_ref, sk_layernorm_ref, NULL, sk_geglu_ref, sk_gelu_ref,
    NULL, sk_attn_softmax_ref, sk_rope_ref, sk_widen16_ref, sk_all_finite_ref};
#if defined(__aarch64__)
static const kernel_set k_neon = {
    "neon", sk_gemm_neon, sk_pack_ref, sk_layernorm_neon, sk_add_layernorm_neon, sk_geglu_neon,
    sk_gelu_neon, NULL, sk_attn_softmax_neon, sk_rope_neon, sk_widen16_neon, sk_all_finite_neon};
static const kernel_set *const k_levels[] = {&k_scalar, &k_neon};

static int best_level(int f) { return (f & SK_CPU_NEON) ? SK_LEVEL_NEON : SK_LEVEL_SCALAR; }
#elif defined(__x86_64__)
static const kernel_set k_avx2 = {
    "avx2", sk_gemm_avx2, sk_pack_ref, sk_layernorm_avx2, NULL, sk_geglu_avx2, sk_gelu_avx2,
    NULL, sk_attn_softmax_avx2, sk_rope_avx2, sk_widen16_avx2, sk_all_finite_ref};
static const kernel_set k_avx512 = {
    "avx512", sk_gemm_avx512, sk_pack_avx512, sk_layernorm_avx512, sk_add_layernorm_avx512,
    sk_geglu_avx512, sk_gelu_avx512, sk_attn_softmax_rows_avx512, NULL, sk_rope_avx512,
    sk_widen16_avx2, sk_all_finite_avx512};
static const kernel_set *const k_levels[] = {&k_scalar, &k_avx2, &k_avx512};

static int best_level(int f) {
    if (!((f & SK_CPU_AVX2) && (f & SK_CPU_FMA) && (f & SK_CPU_F16C))) return SK_LEVEL_SCALAR;
    return (f & SK_CPU_AVX512F) ? SK_LEVEL_AVX512 : SK_LEVEL_AVX2;
}
#elif defined(__wasm_simd128__)
/* chosen at build time: a module built with -msimd128 runs only where SIMD128 is */
static const kernel_set k_simd128 = {
    "simd128", sk_gemm_wasm, sk_pack_ref, sk_layernorm_wasm, sk_add_layernorm_wasm,
    sk_geglu_wasm, sk_gelu_wasm, NULL, sk_attn_softmax_wasm, sk_rope_ref, sk_widen16_wasm,
    sk_all_finite_ref};
static const kernel_set *const k_levels[] = {&k_scalar, &k_simd128};

static int best_level(int f) { (void)f; return SK_LEVEL_SIMD128; }
#else
static const kernel_set *const k_levels[] = {&k_scalar};

static int best_level(int f) { (void)f; return SK_LEVEL_SCALAR; }
#endif
enum { n_levels = sizeof k_levels / sizeof k_levels[0] };

static int g_auto = -1;   /* cached automatic level */
static int g_force = -1;  /* test override */

static int auto_level(void) {
    int lv = __atomic_load_n(&g_auto, __ATOMIC_ACQUIRE);
    if (lv >= 0) return lv;
    lv = best_level(sk_cpu_features());
    if (sk_kernels_cap() == SK_CAP_SCALAR) lv = SK_LEVEL_SCALAR;
#if defined(__x86_64__)
    if (sk_kernels_cap() == SK_CAP_AVX2 && lv > SK_LEVEL_AVX2) lv = SK_LEVEL_AVX2;
#endif
    __atomic_store_n(&g_auto, lv, __ATOMIC_RELEASE);
    return lv;
}

int sk_kernels_level(void) {
    int lv = auto_level();
    int f = __atomic_load_n(&g_force, __ATOMIC_RELAXED);
    return (f >= 0 && f < lv) ? f : lv;
}

int sk_amx_bf16_usable(void) {
#if defined(__x86_64__)
    const int f = sk_cpu_features();
    return sk_amx_usable() && (f & SK_CPU_AMX_BF16) && (f & SK_CPU_AVX512BF16) &&
           sk_kernels_level() >= SK_LEVEL_AVX512;
#else
    return 0;
#endif
}

void sk_kernels_force_level(int level) { __atomic_store_n(&g_force, level, __ATOMIC_RELAXED); }

const char *sk_kernels_level_name(int level) {
    return level >= 0 && level < n_levels ? k_levels[level]->name : "unknown";
}

static const kernel_set *kset(void) { return k_levels[sk_kernels_level()]; }

const char *skycmd_kernels(void) {
    static char text[64];
    static int done;
    if (__atomic_load_n(&done, __ATOMIC_ACQUIRE)) return text;
    char buf[sizeof text];
    snprintf(buf, sizeof buf, "f32=%s int8=%s", kset()->name, sk_q8_kernel_name());
    memcpy(text, buf, sizeof text);  /* the same bytes whichever thread writes first */
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    return text;
}

void sk_gemm(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y, size_t ldy) {
    /* The empty shapes are settled here for every kernel (the ISA GEMMs are written for
     * n_rows, n_out and n_in >= 1, kernels.h): nothing to write, or, with no inputs, the
     * scalar definition, which makes each output its bias. */
    if (n_rows == 0 || w->n_out == 0) return;
    if (w->n_in == 0) {
        sk_gemm_scalar(x, ldx, n_rows, w, y, ldy);
        return;
    }
    /* the BF16 layouts are made only where their kernel may run */
    if (w->wtype == SK_PACK_AMX_BF16X2 || w->wtype == SK_PACK_AMX_BF16X3) {
        sk_gemm_amx_bf16(x, ldx, n_rows, w, y, ldy);
        return;
    }
    if (w->wtype == SK_PACK_NEON_BF16X2 || w->wtype == SK_PACK_NEON_BF16X3) {
        sk_gemm_neon_bf16(x, ldx, n_rows, w, y, ldy);
        return;
    }
    kset()->gemm(x, ldx, n_rows, w, y, ldy);
}

void sk_pack(const float *w, size_t ldw, size_t n_out, size_t n_in, float *out) {
    kset()->pack(w, ldw, n_out, n_in, out);
}

void sk_layernorm(const float *x, size_t n_rows, size_t d, const float *w, const float *b,
                  float eps, float *y) {
    kset()->layernorm(x, n_rows, d, w, b, eps, y);
}

void sk_add_layernorm(float *x, const float *a, size_t n_rows, size_t d, const float *w,
                      const float *b, float eps, float *y) {
    const kernel_set *k = kset();
    if (k->add_layernorm) {
        k->add_layernorm(x, a, n_rows, d, w, b, eps, y);
        return;
    }
    if (a) sk_add(x, a, n_rows * d);
    k->layernorm(x, n_rows, d, w, b, eps, y);
}

sk_geglu_fn sk_geglu_kernel(void) { return kset()->geglu; }

void sk_geglu(const float *a, const float *g, float *y, size_t n) { sk_geglu_kernel()(a, g, y, n); }

void sk_gelu(float *x, size_t n) { kset()->gelu(x, n); }

void sk_attn_softmax_rows(float *x, size_t ld, size_t nr, size_t nk, const size_t *a,
                          const size_t *b, float scale) {
    const kernel_set *k = kset();
    if (k->softmax_rows)
        k->softmax_rows(x, ld, nr, nk, a, b, scale);
    else
        sk_attn_softmax_rows_each(k->softmax_row, x, ld, nr, nk, a, b, scale);
}

/* Products below this many multiply-adds stay on one thread: the hand-off costs about a
 * microsecond. */
#define SK_GEMM_MT_MIN 262144.0

typedef struct gemm_job {
    const float *x;
    size_t ldx, n_rows;
    const sk_packed *w;
    float *y;
    size_t ldy;
    int by_rows;
    size_t next;    /* the next piece to claim (atomic): see pool.h */
} gemm_job;

/* Pieces per thread: enough that a helper that joins late still takes a share, few enough
 * that each piece stays a real product. */
#define SK_GEMM_PIECES_PER_THREAD 3
/* Outputs per unit when a product is split by outputs: the AVX-512 kernel's widest tile
 * (three panels, gemm_x86.c). */
#define SK_GEMM_GROUP (3 * SK_PANEL)

static void gemm_part(void *ctx, int ith, int nth) {
    gemm_job *j = ctx;
    (void)ith;
    /* rows in blocks of 8 (the AVX-512 micro-kernel height), or whole groups of
     * SK_GEMM_GROUP outputs, so the AVX-512 kernel takes its three-panel tiles as one thread
     * would. Neither matters for the results (every output is the same chain of FMAs
     * whatever tile computes it), only for the tiles' sizes. */
    const size_t m = j->w->n_out;
    const size_t units = j->by_rows ? (j->n_rows + 7) / 8 : (m + SK_GEMM_GROUP - 1) / SK_GEMM_GROUP;
    size_t pieces = (size_t)nth * SK_GEMM_PIECES_PER_THREAD;
    if (pieces > units) pieces = units;
    for (;;) {
        size_t c = nth > 1 ? __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED) : j->next++;
        if (c >= pieces) return;
        size_t u0 = units * c / pieces, u1 = units * (c + 1) / pieces;
        if (j->by_rows) {
            size_t r0 = u0 * 8, r1 = u1 * 8 < j->n_rows ? u1 * 8 : j->n_rows;
            if (r0 < r1) sk_gemm(j->x + r0 * j->ldx, j->ldx, r1 - r0, j->w, j->y + r0 * j->ldy, j->ldy);
            continue;
        }
        size_t o0 = u0 * SK_GEMM_GROUP, o1 = u1 * SK_GEMM_GROUP < m ? u1 * SK_GEMM_GROUP : m;
        if (o0 >= o1) continue;
        sk_packed v = *j->w;
        v.data = (const char *)v.data + (o0 / SK_PANEL) * v.pstride * sk_pack_elem_size(v.wtype);
        if (v.bias) v.bias += o0;
        v.n_out = o1 - o0;
        sk_gemm(j->x, j->ldx, j->n_rows, &v, j->y + o0, j->ldy);
    }
}

void sk_gemm_pool(struct sk_pool *pool, const float *x, size_t ldx, size_t n_rows,
                  const sk_packed *w, float *y, size_t ldy) {
    int nth = sk_pool_size(pool);
    double work = (double)n_rows * (double)w->n_in * (double)w->n_out;
    if (nth <= 1 || work < SK_GEMM_MT_MIN) {
        sk_gemm(x, ldx, n_rows, w, y, ldy);
        return;
    }
    const size_t groups = (w->n_out + SK_GEMM_GROUP - 1) / SK_GEMM_GROUP;
    gemm_job j = {x, ldx, n_rows, w, y, ldy, groups < (size_t)nth * 2, 0};
    sk_pool_run(pool, gemm_part, &j);
}

sk_rope_fn sk_rope_kernel(void) { return kset()->rope; }

void sk_rope(float *u, size_t n_heads, size_t D, const float *c, const float *s) {
    sk_rope_kernel()(u, n_heads, D, c, s);
}

void sk_widen16(int wtype, const void *src, float *dst, size_t n) {
    kset()->widen16(wtype, src, dst, n);
}

int sk_all_finite(const float *x, size_t n) { return kset()->all_finite(x, n); }

