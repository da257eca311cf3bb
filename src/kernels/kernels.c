/* kernels.c - run-time dispatch of the kernels in kernels.h to the best implementation the
 * CPU supports. The level is computed once (CPU features, capped by SKYCMD_KERNELS=scalar|
 * avx2 in the environment) and cached; tests may cap it with sk_kernels_force_level(). */
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "cpu.h"
#include "pool.h"

static int g_auto = -1;   /* cached automatic level */
static int g_force = -1;  /* test override */

static int auto_level(void) {
    int lv = __atomic_load_n(&g_auto, __ATOMIC_ACQUIRE);
    if (lv >= 0) return lv;
    int f = sk_cpu_features();
    lv = SK_LEVEL_SCALAR;
    if ((f & SK_CPU_AVX2) && (f & SK_CPU_FMA) && (f & SK_CPU_F16C)) lv = SK_LEVEL_AVX2;
    if (lv == SK_LEVEL_AVX2 && (f & SK_CPU_AVX512F)) lv = SK_LEVEL_AVX512;
    const char *env = getenv("SKYCMD_KERNELS");
    if (env && strcmp(env, "scalar") == 0) lv = SK_LEVEL_SCALAR;
    if (env && strcmp(env, "avx2") == 0 && lv > SK_LEVEL_AVX2) lv = SK_LEVEL_AVX2;
    __atomic_store_n(&g_auto, lv, __ATOMIC_RELEASE);
    return lv;
}

int sk_kernels_level(void) {
    int lv = auto_level();
    int f = __atomic_load_n(&g_force, __ATOMIC_RELAXED);
    return (f >= 0 && f < lv) ? f : lv;
}

void sk_kernels_force_level(int level) { __atomic_store_n(&g_force, level, __ATOMIC_RELAXED); }

const char *sk_kernels_level_name(int level) {
    switch (level) {
    case SK_LEVEL_SCALAR: return "scalar";
    case SK_LEVEL_AVX2: return "avx2";
    case SK_LEVEL_AVX512: return "avx512";
    default: return "unknown";
    }
}

void sk_gemm(const float *x, size_t ldx, size_t n_rows, const sk_packed *w, float *y, size_t ldy) {
    if (w->wtype >= SK_PACK_AMX_BF16X2) {  /* made only where the AMX kernel may run */
        sk_gemm_amx_bf16(x, ldx, n_rows, w, y, ldy);
        return;
    }
    switch (sk_kernels_level()) {
    case SK_LEVEL_AVX512: sk_gemm_avx512(x, ldx, n_rows, w, y, ldy); break;
    case SK_LEVEL_AVX2: sk_gemm_avx2(x, ldx, n_rows, w, y, ldy); break;
    default: sk_gemm_scalar(x, ldx, n_rows, w, y, ldy); break;
    }
}

void sk_pack(const float *w, size_t ldw, size_t n_out, size_t n_in, float *out) {
    if (sk_kernels_level() >= SK_LEVEL_AVX512)
        sk_pack_avx512(w, ldw, n_out, n_in, out);
    else
        sk_pack_ref(w, ldw, n_out, n_in, out);
}

void sk_layernorm(const float *x, size_t n_rows, size_t d, const float *w, const float *b,
                  float eps, float *y) {
    const int lv = sk_kernels_level();
    if (lv >= SK_LEVEL_AVX512)
        sk_layernorm_avx512(x, n_rows, d, w, b, eps, y);
    else if (lv >= SK_LEVEL_AVX2)
        sk_layernorm_avx2(x, n_rows, d, w, b, eps, y);
    else
        sk_layernorm_ref(x, n_rows, d, w, b, eps, y);
}

void sk_add_layernorm(float *x, const float *a, size_t n_rows, size_t d, const float *w,
                      const float *b, float eps, float *y) {
    if (sk_kernels_level() >= SK_LEVEL_AVX512) {
        sk_add_layernorm_avx512(x, a, n_rows, d, w, b, eps, y);
        return;
    }
    if (a) sk_add(x, a, n_rows * d);
    sk_layernorm(x, n_rows, d, w, b, eps, y);
}

sk_geglu_fn sk_geglu_kernel(void) {
    int lv = sk_kernels_level();
    return lv >= SK_LEVEL_AVX512 ? sk_geglu_avx512 : lv >= SK_LEVEL_AVX2 ? sk_geglu_avx2
                                                                        : sk_geglu_ref;
}

void sk_geglu(const float *a, const float *g, float *y, size_t n) { sk_geglu_kernel()(a, g, y, n); }

void sk_gelu(float *x, size_t n) {
    int lv = sk_kernels_level();
    if (lv >= SK_LEVEL_AVX512)
        sk_gelu_avx512(x, n);
    else if (lv >= SK_LEVEL_AVX2)
        sk_gelu_avx2(x, n);
    else
        sk_gelu_ref(x, n);
}

void sk_attn_softmax_rows(float *x, size_t ld, size_t nr, size_t nk, const size_t *a,
                          const size_t *b, float scale) {
    const int lv = sk_kernels_level();
    if (lv >= SK_LEVEL_AVX512)
        sk_attn_softmax_rows_avx512(x, ld, nr, nk, a, b, scale);
    else
        sk_attn_softmax_rows_each(lv >= SK_LEVEL_AVX2 ? sk_attn_softmax_avx2 : sk_attn_softmax_ref,
                                  x, ld, nr, nk, a, b, scale);
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

static void gemm_part(void *ctx, int ith, int nth) {
    gemm_job *j = ctx;
    (void)ith;
    /* rows in blocks of 8 (the AVX-512 micro-kernel height; a multiple of nothing else
     * matters for identical results since rows are independent), or whole pairs of panels,
     * so the AVX-512 kernel pairs them exactly as one thread would */
    const size_t m = j->w->n_out;
    const size_t units = j->by_rows ? (j->n_rows + 7) / 8 : (m + 2 * SK_PANEL - 1) / (2 * SK_PANEL);
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
        size_t o0 = u0 * 2 * SK_PANEL, o1 = u1 * 2 * SK_PANEL < m ? u1 * 2 * SK_PANEL : m;
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
    const size_t pairs = (w->n_out + 2 * SK_PANEL - 1) / (2 * SK_PANEL);
    gemm_job j = {x, ldx, n_rows, w, y, ldy, pairs < (size_t)nth * 2, 0};
    sk_pool_run(pool, gemm_part, &j);
}

sk_rope_fn sk_rope_kernel(void) {
    const int lv = sk_kernels_level();
    return lv >= SK_LEVEL_AVX512 ? sk_rope_avx512 : lv >= SK_LEVEL_AVX2 ? sk_rope_avx2
                                                                      : sk_rope_ref;
}

void sk_rope(float *u, size_t n_heads, size_t D, const float *c, const float *s) {
    sk_rope_kernel()(u, n_heads, D, c, s);
}

void sk_widen16(int wtype, const void *src, float *dst, size_t n) {
    if (sk_kernels_level() >= SK_LEVEL_AVX2)
        sk_widen16_avx2(wtype, src, dst, n);
    else
        sk_widen16_ref(wtype, src, dst, n);
}

int sk_all_finite(const float *x, size_t n) {
    if (sk_kernels_level() >= SK_LEVEL_AVX512) return sk_all_finite_avx512(x, n);
    return sk_all_finite_ref(x, n);
}
