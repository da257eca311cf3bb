/* q8_ref.c - activation quantization, the scalar reference int8 GEMM (the definition every
 * SIMD kernel must reproduce bit for bit), run-time dispatch and the threaded int8 Linear
 * with outlier columns. See q8.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "q8.h"
#include "cpu.h"
#include "kernels.h"
#include "pool.h"
#include "../numeric/numeric.h"
#include "../util/util.h"

int sk_q8_act_reserve(sk_q8_act *a, size_t n_rows, size_t k) {
    const size_t nb = k / SK_QK8_0;
    if (n_rows <= a->cap_rows && nb <= a->cap_blocks) {
        a->n_rows = n_rows;
        a->n_blocks = nb;
        return 0;
    }
    size_t rows = n_rows > a->cap_rows ? n_rows : a->cap_rows;
    size_t blocks = nb > a->cap_blocks ? nb : a->cap_blocks;
    size_t nblk, nq;
    if (sk_mul_size(rows, blocks, &nblk) || sk_mul_size(nblk, SK_QK8_0, &nq))
        return SKYCMD_E_NOMEM;
    float *xs = sk_malloc_array(nblk ? nblk : 1, sizeof(float));
    int8_t *q = malloc(nq ? nq : 1), *r = malloc(nq ? nq : 1);
    uint8_t *qb = malloc(nq ? nq : 1), *rb = malloc(nq ? nq : 1);
    if (!xs || !q || !r || !qb || !rb) {
        free(xs);
        free(q);
        free(r);
        free(qb);
        free(rb);
        return SKYCMD_E_NOMEM;
    }
    sk_q8_act_free(a);
    a->xs = xs;
    a->q = q;
    a->r = r;
    a->qb = qb;
    a->rb = rb;
    a->cap_rows = rows;
    a->cap_blocks = blocks;
    a->n_rows = n_rows;
    a->n_blocks = nb;
    return 0;
}

void sk_q8_act_free(sk_q8_act *a) {
    if (!a) return;
    free(a->xs);
    free(a->q);
    free(a->r);
    free(a->qb);
    free(a->rb);
    memset(a, 0, sizeof *a);
}

/* Round half to even (the SIMD conversion's rounding), for |v| < 2^22, in plain float
 * arithmetic: adding and subtracting 1.5 * 2^23 leaves the nearest integer. Clamped to
 * [-127, 127]; NaN gives 0. */
static int8_t q8_round(float v) {
    if (!(v == v)) return 0;
    if (v > 127.0f) return 127;
    if (v < -127.0f) return -127;
    const float magic = 12582912.0f;  /* C11 without fast-math never reassociates this */
    float r = (v + magic) - magic;
    return (int8_t)(int)r;
}

void sk_q8_quantize_act_ref(const float *x, size_t ldx, size_t n_rows, size_t k, int mode,
                            const uint8_t *zero_cols, sk_q8_act *a) {
    const size_t nb = k / SK_QK8_0;
    const int two = mode == SK_Q8_ACT_Q8X2 || mode == SK_Q8_ACT_ROW2;
    a->two_pass = two;
    a->n_rows = n_rows;
    a->n_blocks = nb;
    const int row = mode == SK_Q8_ACT_ROW || mode == SK_Q8_ACT_ROW2;
    for (size_t r = 0; r < n_rows; r++) {
        const float *xr = x + r * ldx;
        float row_max = 0.0f;
        for (size_t c = 0; row && c < nb * SK_QK8_0; c++) {
            const float av = zero_cols && zero_cols[c] ? 0.0f : fabsf(xr[c]);
            if (av > row_max) row_max = av;
        }
        for (size_t b = 0; b < nb; b++) {
            float v[SK_QK8_0];
            float amax = 0.0f;
            for (int j = 0; j < SK_QK8_0; j++) {
                const size_t c = b * SK_QK8_0 + (size_t)j;
                v[j] = zero_cols && zero_cols[c] ? 0.0f : xr[c];
                const float av = fabsf(v[j]);
                if (av > amax) amax = av;
            }
            if (row) amax = row_max;
            const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            const size_t off = (r * nb + b) * SK_QK8_0;
            int8_t *q = a->q + off, *rr = a->r + off;
            uint8_t *qb = a->qb + off, *rb = a->rb + off;
            for (int j = 0; j < SK_QK8_0; j++) {
                const float s = v[j] * id;
                q[j] = q8_round(s);
                qb[j] = (uint8_t)(q[j] + 128);
                if (two) {
                    rr[j] = q8_round((s - (float)q[j]) * 128.0f);
                    rb[j] = (uint8_t)(rr[j] + 128);
                }
            }
            a->xs[r * nb + b] = two ? d / 128.0f : d;
        }
    }
}

void sk_q8_quantize_act(const float *x, size_t ldx, size_t n_rows, size_t k, int mode,
                        const uint8_t *zero_cols, sk_q8_act *a) {
#if defined(__x86_64__)
    if (!zero_cols) {
        const int lv = sk_kernels_level();
        if (lv >= SK_LEVEL_AVX512 && (sk_cpu_features() & SK_CPU_AVX512BW)) {
            sk_q8_quantize_act_avx512(x, ldx, n_rows, k, mode, a);
            return;
        }
        if (lv >= SK_LEVEL_AVX2) {
            sk_q8_quantize_act_avx2(x, ldx, n_rows, k, mode, a);
            return;
        }
    }
#endif
#if defined(__aarch64__)
    if (!zero_cols && sk_kernels_level() >= SK_LEVEL_NEON) {
        sk_q8_quantize_act_neon(x, ldx, n_rows, k, mode, a);
        return;
    }
#endif
#if defined(__wasm_simd128__)
    if (sk_kernels_level() >= SK_LEVEL_SIMD128) {
        sk_q8_quantize_act_wasm(x, ldx, n_rows, k, mode, zero_cols, a);
        return;
    }
#endif
    sk_q8_quantize_act_ref(x, ldx, n_rows, k, mode, zero_cols, a);
}

size_t sk_q8_panel_bytes(size_t n_out, size_t n_in) {
    size_t panels = n_out / SK_Q8_PANEL + (n_out % SK_Q8_PANEL != 0), r;
    if (sk_mul_size(panels, n_in / SK_QK8_0, &r) || sk_mul_size(r, SK_Q8_CHUNK, &r)) return 0;
    return r;
}

void sk_q8_pack_panels(const uint8_t *kernel_order, size_t n_out, size_t n_in, uint8_t *out) {
    const size_t nb = n_in / SK_QK8_0, np = (n_out + SK_Q8_PANEL - 1) / SK_Q8_PANEL;
    for (size_t p = 0; p < np; p++)
        for (size_t b = 0; b < nb; b++) {
            uint8_t *ch = out + (p * nb + b) * SK_Q8_CHUNK;
            uint16_t wd[SK_Q8_PANEL];
            int16_t ws[SK_Q8_PANEL];
            for (size_t c = 0; c < SK_Q8_PANEL; c++) {
                const size_t o = p * SK_Q8_PANEL + c;
                int32_t sum = 0;
                wd[c] = 0;
                if (o < n_out) {
                    /* INPUT_BLOCK_MAJOR: block (o, b) at b * n_out + o */
                    const uint8_t *blk = kernel_order + (b * n_out + o) * SK_Q8_0_BLOCK_BYTES;
                    wd[c] = (uint16_t)(blk[0] | (blk[1] << 8));
                    for (int j = 0; j < SK_QK8_0; j++) {
                        ch[((size_t)(j / 4) * SK_Q8_PANEL + c) * 4 + (size_t)(j % 4)] = blk[2 + j];
                        sum += (int8_t)blk[2 + j];
                    }
                } else {
                    for (int j = 0; j < SK_QK8_0; j++)
                        ch[((size_t)(j / 4) * SK_Q8_PANEL + c) * 4 + (size_t)(j % 4)] = 0;
                }
                ws[c] = (int16_t)sum;   /* |sum| <= 32 * 128 */
            }
            memcpy(ch + SK_Q8_CHUNK_SCALES, wd, sizeof wd);
            memcpy(ch + SK_Q8_CHUNK_SUMS, ws, sizeof ws);
        }
}

/* Row-scaled weights (row_sum128 set): the exact int32 sum over the whole row of output o
 * (panel p, column c) with activation row r of one int8 plane (a->q, or a->r's second pass). */
static int32_t row_isum(const int8_t *plane, const sk_q8_packed *w, size_t nb, size_t r,
                        size_t p, size_t c) {
    int32_t isum = 0;
    for (size_t b = 0; b < nb; b++) {
        const uint8_t *ch = w->panels + sk_q8_quants_at(w, nb, p, b);
        const int8_t *xq = plane + (r * nb + b) * SK_QK8_0;
        for (int j = 0; j < SK_QK8_0; j++)
            isum += (int32_t)xq[j] * (int8_t)ch[((size_t)(j / 4) * SK_Q8_PANEL + c) * 4 + (size_t)(j % 4)];
    }
    return isum;
}

/* The row's weight scale (every block of a row-scaled row carries it; the first is read). */
static float row_scale(const sk_q8_packed *w, size_t nb, size_t p, size_t c) {
    uint16_t wbits;
    memcpy(&wbits, w->panels + sk_q8_meta_at(w, nb, p, 0) + c * 2, sizeof wbits);
    return sk_f16_to_f32(wbits);
}

void sk_q8_gemm_row2_ref(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                         float *y, size_t ldy) {
    const size_t nb = w->n_in / SK_QK8_0;
    for (size_t r = 0; r < a->n_rows; r++)
        for (size_t o = o0; o < o1; o++) {
            const size_t p = o / SK_Q8_PANEL, c = o % SK_Q8_PANEL;
            const int32_t iq = row_isum(a->q, w, nb, r, p, c), ir = row_isum(a->r, w, nb, r, p, c);
            const float wd = row_scale(w, nb, p, c), xs = a->xs[r * nb];
            const float yq = fmaf(xs * 128.0f * wd, (float)iq, w->bias ? w->bias[o] : 0.0f);
            y[r * ldy + o] = yq + fmaf(xs * wd, (float)ir, 0.0f);
        }
}

/* Row-scaled weights: the whole row's exact integer sum, then one float step. */
static void gemm_rows_ref(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1,
                          float *y, size_t ldy) {
    const size_t nb = w->n_in / SK_QK8_0;
    for (size_t r = 0; r < a->n_rows; r++)
        for (size_t o = o0; o < o1; o++) {
            const size_t p = o / SK_Q8_PANEL, c = o % SK_Q8_PANEL;
            y[r * ldy + o] = fmaf(a->xs[r * nb] * row_scale(w, nb, p, c),
                                  (float)row_isum(a->q, w, nb, r, p, c), w->bias ? w->bias[o] : 0.0f);
        }
}

void sk_q8_gemm_ref(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1, float *y,
                    size_t ldy) {
    const size_t nb = w->n_in / SK_QK8_0;
    if (w->row_sum128) {
        gemm_rows_ref(a, w, o0, o1, y, ldy);
        return;
    }
    for (size_t r = 0; r < a->n_rows; r++)
        for (size_t o = o0; o < o1; o++) {
            const size_t p = o / SK_Q8_PANEL, c = o % SK_Q8_PANEL;
            float acc = 0.0f;
            for (size_t b = 0; b < nb; b++) {
                const uint8_t *ch = w->panels + (p * nb + b) * SK_Q8_CHUNK;
                uint16_t wbits;
                memcpy(&wbits, ch + SK_Q8_CHUNK_SCALES + c * 2, sizeof wbits);
                const float wd = sk_f16_to_f32(wbits);
                const int8_t *xq = a->q + (r * nb + b) * SK_QK8_0;
                const int8_t *xr = a->r + (r * nb + b) * SK_QK8_0;
                int32_t dq = 0, dr = 0;
                for (int j = 0; j < SK_QK8_0; j++) {
                    const int32_t wq = (int8_t)ch[((size_t)(j / 4) * SK_Q8_PANEL + c) * 4 + (size_t)(j % 4)];
                    dq += (int32_t)xq[j] * wq;
                    if (a->two_pass) dr += (int32_t)xr[j] * wq;
                }
                const int32_t isum = a->two_pass ? dq * 128 + dr : dq;
                acc = fmaf(a->xs[r * nb + b] * wd, (float)isum, acc);
            }
            y[r * ldy + o] = w->bias ? acc + w->bias[o] : acc;
        }
}

/* ------------------------------------------------------------------ dispatch ---- */

static int g_force = -1;

/* x86-64: 0 scalar, 1 avx2, 2 vnni, 3 amx; aarch64: 0 scalar, 1 dotprod, 2 i8mm; wasm32
 * with SIMD128: 0 scalar, 1 simd128; else 0. */
static int q8_level(void) {
    int lv = 0;
#if defined(__aarch64__)
    if (sk_kernels_level() >= SK_LEVEL_NEON) {
        const int f = sk_cpu_features();
        if ((f & SK_CPU_DOTPROD) && SK_Q8_HAVE_DOTPROD) lv = 1;
        if (lv == 1 && (f & SK_CPU_I8MM) && SK_Q8_HAVE_I8MM) lv = 2;
    }
#elif defined(__wasm_simd128__)
    if (sk_kernels_level() >= SK_LEVEL_SIMD128) lv = 1;
#elif defined(__x86_64__)
    if (sk_kernels_level() >= SK_LEVEL_AVX2) {
        const int f = sk_cpu_features();
        lv = 1;
        if ((f & SK_CPU_AVX512VNNI) && (f & SK_CPU_AVX512BW) && sk_kernels_level() >= SK_LEVEL_AVX512)
            lv = 2;
        /* the AMX kernel hands its n_rows % 16 tail to the VNNI one */
        if (lv == 2 && (f & SK_CPU_AMX_INT8) && sk_amx_usable()) lv = 3;
    }
#endif
    const int force = __atomic_load_n(&g_force, __ATOMIC_RELAXED);
    return force >= 0 && force < lv ? force : lv;
}

void sk_q8_force_kernel(int which) { __atomic_store_n(&g_force, which, __ATOMIC_RELAXED); }

#if defined(__aarch64__)
int sk_q8_uses_tiles(void) { return 0; }

const char *sk_q8_kernel_name(void) {
    static const char *names[] = {"scalar", "dotprod", "i8mm"};
    return names[q8_level()];
}
#elif defined(__wasm_simd128__)
int sk_q8_uses_tiles(void) { return 0; }

const char *sk_q8_kernel_name(void) {
    static const char *names[] = {"scalar", "simd128"};
    return names[q8_level()];
}
#else
int sk_q8_uses_tiles(void) { return q8_level() == 3; }

const char *sk_q8_kernel_name(void) {
    static const char *names[] = {"scalar", "avx2", "vnni", "amx"};
    return names[q8_level()];
}
#endif

int sk_q8_relayout_pairs(sk_q8_packed *w, uint8_t *panels) {
    const size_t nb = w->n_in / SK_QK8_0, np = (w->n_out + SK_Q8_PANEL - 1) / SK_Q8_PANEL;
    if (!w->row_sum128 || w->pairs || nb % 2 || panels != w->panels) return 0;
    uint8_t tmp[2 * SK_Q8_CHUNK];
    for (size_t p = 0; p < np; p++)
        for (size_t b = 0; b < nb; b += 2) {
            uint8_t *c = panels + (p * nb + b) * SK_Q8_CHUNK;
            memcpy(tmp, c, 512);
            memcpy(tmp + 512, c + SK_Q8_CHUNK, 512);
            memcpy(tmp + 1024, c + 512, 64);
            memcpy(tmp + 1088, c + SK_Q8_CHUNK + 512, 64);
            memcpy(c, tmp, sizeof tmp);
        }
    w->pairs = 1;
    return 1;
}

void sk_q8_gemm(const sk_q8_act *a, const sk_q8_packed *w, size_t o0, size_t o1, float *y,
                size_t ldy) {
    switch (q8_level()) {
#if defined(__x86_64__)
    case 3: sk_q8_gemm_amx(a, w, o0, o1, y, ldy); break;
    case 2: sk_q8_gemm_vnni(a, w, o0, o1, y, ldy); break;
    case 1: sk_q8_gemm_avx2(a, w, o0, o1, y, ldy); break;
#elif defined(__aarch64__)
    case 2: sk_q8_gemm_i8mm(a, w, o0, o1, y, ldy); break;
    case 1: sk_q8_gemm_dotprod(a, w, o0, o1, y, ldy); break;
#elif defined(__wasm_simd128__)
    case 1: sk_q8_gemm_wasm(a, w, o0, o1, y, ldy); break;
#endif
    default: sk_q8_gemm_ref(a, w, o0, o1, y, ldy); break;
    }
}

/* ------------------------------------------------------------------ linear ------ */

void sk_q8_ws_free(sk_q8_ws *ws) {
    if (!ws) return;
    sk_q8_act_free(&ws->act);
    free(ws->xo);
    free(ws->xs_q);
    free(ws->y_r);
    ws->xo = ws->xs_q = ws->y_r = NULL;
    ws->xo_cap = ws->xs_q_cap = ws->y_r_cap = 0;
}

/* Grow *buf to hold n floats (its contents need not survive). */
static int grow_floats(float **buf, size_t *cap, size_t n) {
    if (n <= *cap) return 0;
    float *p = sk_malloc_array(n, sizeof(float));
    if (!p) return SKYCMD_E_NOMEM;
    free(*buf);
    *buf = p;
    *cap = n;
    return 0;
}

typedef struct q8_job {
    const sk_q8_act *a;
    const sk_q8_weights *w;
    const float *xo;
    float *y;
    size_t ldy;
    /* two-pass row activations (q8.h): the two single-pass views of a, the r pass's
     * weights (no bias) and its output [rows][n_out] */
    sk_q8_act aq, ar;
    sk_q8_packed wr;
    float *y_r;
    int fused;      /* the AMX kernel takes both passes in one sweep */
    size_t next;    /* the next piece to claim (atomic): see pool.h */
} q8_job;

/* Outputs [o0, o1): the int8 product, then the outlier columns in f32. */
static void q8_part_range(const q8_job *j, size_t o0, size_t o1) {
    if (o0 >= o1) return;
    if (j->y_r && j->fused) {
        sk_q8_gemm_amx_row2(j->a, &j->w->p, o0, o1, j->y, j->ldy);
    } else if (j->y_r) {
        const size_t m = j->w->p.n_out;
        sk_q8_gemm(&j->aq, &j->w->p, o0, o1, j->y, j->ldy);
        sk_q8_gemm(&j->ar, &j->wr, o0, o1, j->y_r, m);
        for (size_t r = 0; r < j->a->n_rows; r++) {
            float *yr = j->y + r * j->ldy;
            const float *rr = j->y_r + r * m;
            for (size_t o = o0; o < o1; o++) yr[o] += rr[o];
        }
    } else {
        sk_q8_gemm(j->a, &j->w->p, o0, o1, j->y, j->ldy);
    }
    const size_t no = j->w->n_outl;
    if (!no) return;
    for (size_t r = 0; r < j->a->n_rows; r++) {
        const float *xo = j->xo + r * no;
        float *yr = j->y + r * j->ldy;
        for (size_t o = o0; o < o1; o++) {
            const float *wo = j->w->w_outl + o * no;
            float s = 0.0f;
            for (size_t c = 0; c < no; c++) s += xo[c] * wo[c];
            yr[o] += s;
        }
    }
}

/* pieces of output tiles claimed in turn (pool.h): 3 per thread, so a late helper takes one */
static void q8_part(void *ctx, int ith, int nth) {
    q8_job *j = ctx;
    (void)ith;
    const size_t m = j->w->p.n_out, tiles = (m + SK_Q8_PANEL - 1) / SK_Q8_PANEL;
    size_t pieces = 3 * (size_t)nth;
    if (pieces > tiles) pieces = tiles;
    for (;;) {
        size_t c = nth > 1 ? __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED) : j->next++;
        if (c >= pieces) return;
        size_t t0 = tiles * c / pieces, t1 = tiles * (c + 1) / pieces;
        size_t o0 = t0 * SK_Q8_PANEL, o1 = t1 * SK_Q8_PANEL < m ? t1 * SK_Q8_PANEL : m;
        q8_part_range(j, o0, o1);
    }
}

int sk_q8_linear(struct sk_pool *pool, sk_q8_ws *ws, const sk_q8_weights *w, int mode,
                 const float *x, size_t ldx, size_t n_rows, float *y, size_t ldy) {
    const size_t k = w->p.n_in, no = w->n_outl;
    if (n_rows == 0 || w->p.n_out == 0) return 0;
    if (sk_q8_act_reserve(&ws->act, n_rows, k)) return SKYCMD_E_NOMEM;
    if (no) {
        size_t need;
        if (sk_mul_size(n_rows, no, &need) || grow_floats(&ws->xo, &ws->xo_cap, need))
            return SKYCMD_E_NOMEM;
        for (size_t r = 0; r < n_rows; r++)
            for (size_t c = 0; c < no; c++) ws->xo[r * no + c] = x[r * ldx + w->outl[c]];
    }
    /* the only activations row-scaled weights take: one scale per row, two passes where
     * two were asked */
    if (w->p.row_sum128)
        mode = mode == SK_Q8_ACT_Q8X2 || mode == SK_Q8_ACT_ROW2 ? SK_Q8_ACT_ROW2 : SK_Q8_ACT_ROW;
    sk_q8_quantize_act(x, ldx, n_rows, k, mode, no ? w->is_outl : NULL, &ws->act);
    q8_job j;
    memset(&j, 0, sizeof j);
    j.a = &ws->act;
    j.w = w;
    j.xo = ws->xo;
    j.y = y;
    j.ldy = ldy;
    if (mode == SK_Q8_ACT_ROW2) {
        const size_t nxs = n_rows * ws->act.n_blocks;
        size_t ny;
        if (sk_mul_size(n_rows, w->p.n_out, &ny) || grow_floats(&ws->xs_q, &ws->xs_q_cap, nxs) ||
            grow_floats(&ws->y_r, &ws->y_r_cap, ny))
            return SKYCMD_E_NOMEM;
        /* the q pass's scale is d = 128 x the stored d / 128: exact */
        for (size_t i = 0; i < nxs; i++) ws->xs_q[i] = ws->act.xs[i] * 128.0f;
        j.aq = ws->act;
        j.aq.two_pass = 0;
        j.aq.xs = ws->xs_q;
        j.ar = j.aq;
        j.ar.xs = ws->act.xs;
        j.ar.q = ws->act.r;
        j.ar.qb = ws->act.rb;
        j.wr = w->p;
        j.wr.bias = NULL;
        j.y_r = ws->y_r;
        j.fused = sk_q8_uses_tiles();
    }
    const double work = (double)n_rows * (double)k * (double)w->p.n_out;
    if (sk_pool_size(pool) <= 1 || work < 524288.0 || w->p.n_out < 16)
        q8_part_range(&j, 0, w->p.n_out);
    else
        sk_pool_run(pool, q8_part, &j);
    return 0;
}
