/*
 * forward.c - the f32 (and int8) forward pass of a System One decision model.
 *
 * Contract (see model.h): sk_forward_pass() runs sequences (positions 0..n-1) and writes
 * the raw scorer logit of each marker position; each sequence gets bitwise the same logits
 * alone or in any batch, with any thread count. sk_model_forward_batch (passes.c) calls it
 * once for the batch, or once per group of sequences on each thread of the pool. It follows the PyTorch reference
 * operation by operation:
 *   encoder (transformers ModernBertModel): LN(emb) -> per layer [pre-LN (none on layer 0),
 *     fused QKV, NEOX RoPE with the global or local base, softmax attention (symmetric
 *     window |i-j| <= W/2 on local layers), Wo, residual, LN, GeGLU (erf GELU), Wo,
 *     residual] -> final LN;
 *   head (laya DecisionModel): + type_emb[qtype] everywhere, pre-norm TransformerEncoder
 *     layers (biases, max(1, d/64) heads, ReLU FFN, LayerNorm eps 1e-5), scorer
 *     LN -> Linear -> GELU -> Linear(d, 1) at the marker rows.
 * The last head layer only matters at the marker rows (nothing reads the others), so its
 * queries, output projection and FFN run on those rows only; keys and values still cover
 * every position, which gives the same numbers.
 * A batch packs its sequences' rows one after another so every matrix product runs once
 * over all of them; attention (units of sequence x head x run of query blocks, each with
 * the K and V^T of its key range packed, query blocks limited to the union of their
 * sliding windows), RoPE positions and the head's marker rows stay per sequence. Where the
 * model's products run on AMX-BF16 tiles (model.attn_tiles: the bf16x3 and int8 modes on
 * AMX) the attention products do too (attn_unit_tiles), with the same invariances.
 * With a thread pool, matrix products, attention units and row-wise steps are split over
 * the threads the process budget lends (src/kernels/pool.h, docs/threads.md).
 * Every output row is computed by the same arithmetic whatever the batch or thread count,
 * so results are bitwise independent of both.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

void sk_model_linear(sk_scratch *s, const sk_linear *L, const float *x, size_t ldx,
                     size_t n_rows, float *y, size_t ldy) {
    if (s->calib)
        for (size_t i = 0; i < s->n_calib_sites; i++)
            if (s->calib_sites[i] == L) sk_calib_record(s->calib, i, x, ldx, n_rows);
    if (L->q8) {
        /* fast_x2 is read only under single-pass activations: sessions with two passes
         * never read what a row probe (int8.c, sk_model_row_choice) sets at their side */
        const int mode = L->q8 == s->one_pass_site ||
                                 (s->act_mode == SK_Q8_ACT_Q8 && !L->q8->fast_x2)
                             ? SK_Q8_ACT_Q8
                             : SK_Q8_ACT_Q8X2;
        if (sk_q8_linear(s->pool, &s->q8ws, &L->q8->w, mode, x, ldx, n_rows, y, ldy))
            s->q8_oom = 1;
        return;
    }
    sk_gemm_pool(s->pool, x, ldx, n_rows, &L->p, y, ldy);
}


/* ------------------------------------------------------------------ parallel steps */

/* Row-wise steps (layer norms, residual adds, GeGLU, RoPE, ReLU) split by rows over the
 * pool when there is enough of them to pay for the hand-off; each row is computed by the
 * same code whatever the split, so results do not depend on the thread count. */
#define SK_ROWS_MT_MIN 32768  /* floats touched below which a step stays on one thread */

typedef void (*rows_fn)(void *ctx, size_t r0, size_t r1);
typedef struct rows_job {
    rows_fn fn;
    void *ctx;
    size_t n;
    size_t next;    /* the next piece to claim (atomic): see pool.h */
} rows_job;

/* pieces of rows claimed in turn: 2 per thread, so a helper that joins late takes one */
static void rows_part(void *ctx, int ith, int nth) {
    rows_job *j = ctx;
    (void)ith;
    size_t pieces = 2 * (size_t)nth;
    if (pieces > j->n) pieces = j->n;
    for (;;) {
        size_t c = nth > 1 ? __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED) : j->next++;
        if (c >= pieces) return;
        size_t r0 = j->n * c / pieces, r1 = j->n * (c + 1) / pieces;
        if (r0 < r1) j->fn(j->ctx, r0, r1);
    }
}

static void par_rows(sk_scratch *s, size_t n, size_t floats_per_row, rows_fn fn, void *ctx) {
    if (sk_pool_size(s->pool) <= 1 || n < 2 || (double)n * (double)floats_per_row < SK_ROWS_MT_MIN) {
        fn(ctx, 0, n);
        return;
    }
    rows_job j = {fn, ctx, n, 0};
    sk_pool_run(s->pool, rows_part, &j);
}

/* y = LN(x) (LayerNorm) and x += a then y = LN(x) */
typedef struct ln_ctx {
    float *x;
    const float *a;     /* NULL: no residual add first */
    size_t d;
    const float *w, *b;
    float eps;
    float *y;
} ln_ctx;

static void ln_rows(void *ctx, size_t r0, size_t r1) {
    const ln_ctx *c = ctx;
    float *x = c->x + r0 * c->d;
    const float *a = c->a ? c->a + r0 * c->d : NULL;
    if (c->w)
        sk_add_layernorm(x, a, r1 - r0, c->d, c->w, c->b, c->eps, c->y + r0 * c->d);
    else if (a)
        sk_add(x, a, (r1 - r0) * c->d);
}

/* x += a (rows of d), then (when w) y = LN(x) */
static void add_ln(sk_scratch *s, float *x, const float *a, size_t n, size_t d, const float *w,
                   const float *b, float eps, float *y) {
    ln_ctx c = {x, a, d, w, b, eps, y};
    par_rows(s, n, d, ln_rows, &c);
}

typedef struct geglu_ctx {
    float *ff;
    size_t I;
} geglu_ctx;

static void geglu_rows(void *ctx, size_t r0, size_t r1) {
    const geglu_ctx *c = ctx;
    const sk_geglu_fn geglu = sk_geglu_kernel();
    for (size_t t = r0; t < r1; t++) {
        float *row = c->ff + t * 2 * c->I;
        geglu(row, row + c->I, row, c->I);
    }
}

static void relu_rows(void *ctx, size_t r0, size_t r1) {
    const geglu_ctx *c = ctx;  /* ff rows of I values */
    float *x = c->ff + r0 * c->I;
    for (size_t i = 0, n = (r1 - r0) * c->I; i < n; i++) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

typedef struct rope_ctx {
    float *qkv;
    size_t ld, H, D;
    const float *cos, *sin;
    const seq_rows *sr;
    size_t ns;
} rope_ctx;

static void rope_rows(void *ctx, size_t r0, size_t r1) {
    const rope_ctx *c = ctx;
    const sk_rope_fn rope = sk_rope_kernel();
    const size_t half = c->D / 2;
    size_t q = 0;
    while (q + 1 < c->ns && c->sr[q].off + c->sr[q].n <= r0) q++;
    for (size_t r = r0; r < r1; r++) {
        while (r >= c->sr[q].off + c->sr[q].n) q++;
        const size_t t = r - c->sr[q].off;
        const size_t p = c->sr[q].pos ? (size_t)c->sr[q].pos[t] : t;  /* parallel layout */
        const float *co = c->cos + p * half, *sn = c->sin + p * half;
        /* q and then k: 2H heads side by side (d = H * D) with the same angles */
        rope(c->qkv + r * c->ld, 2 * c->H, c->D, co, sn);
    }
}

/* Multi-head softmax attention over the sequences of a batch. Sequence i: queries nq rows
 * of q (row stride ldq), keys/values n rows of k and v (row stride ldkv); head h uses
 * columns [h*hd, (h+1)*hd). win > 0 limits query t to keys |t - j| <= win (queries must
 * then be rows 0..n-1 in order); win == 0 is full attention. Output: out (row stride ldo).
 * Queries are cut in blocks of SK_QB; each block multiplies against the union of its rows'
 * key ranges only, so work outside the window is skipped up to block granularity.
 * The work units are (sequence, head, run of query blocks); the threads take them in turn
 * and each packs the K and V^T of the key range its unit needs. A query row's arithmetic
 * depends only on its block (the packed keys start at the block's 16-aligned first key), so
 * the result is the same for any split. */
typedef struct attn_job {
    sk_scratch *s;
    const attn_seq *seq;
    size_t ns, H, hd, win, chunks;
    float scale;
    size_t n_units;
    size_t next;    /* atomic: next unit */
} attn_job;

/* The keys of the query rows [r0, r0 + nr) (win > 0: the union of their windows, rows must
 * be positions; win == 0: all n): [*k0, *k1) with *k0 rounded down to a multiple of align,
 * and, when ka is not NULL, each row's own keys [ka[r], kb[r]) relative to *k0. A block's
 * keys depend only on its rows, so its arithmetic does not depend on the unit around it. */
static void block_keys(size_t win, size_t n, size_t r0, size_t nr, size_t align, size_t *k0,
                       size_t *k1, size_t *ka, size_t *kb) {
    size_t lo = 0, hi = n;
    if (win) {
        lo = r0 > win ? r0 - win : 0;
        hi = r0 + nr - 1 + win + 1 < n ? r0 + nr + win : n;
    }
    *k0 = lo / align * align;
    *k1 = hi;
    for (size_t r = 0; ka && r < nr; r++) {
        size_t a = lo, b = hi;
        if (win) {
            const size_t t = r0 + r;
            a = t > win ? t - win : 0;
            b = t + win + 1 < n ? t + win + 1 : n;
        }
        ka[r] = a - *k0;
        kb[r] = b - *k0;
    }
}

/* attn_unit on the AMX-BF16 tiles (the bf16x3 and int8 modes on AMX, model.attn_tiles):
 * the same blocks, with K and V as bf16 hi + lo tiles (sk_pack_amx_bf16_f32) and both
 * products as bf16x3 (~1e-5 relative per product, the class of the mode's other products).
 * The tiles take keys 32 at a time, so key ranges start at multiples of 32 here; the scores
 * of the keys that adds (outside every row's range) are zeros after the softmax. */
static void attn_unit_tiles(const attn_job *j, struct attn_ws *ws, const attn_seq *as,
                            size_t h, size_t b0, size_t b1) {
    const size_t hd = j->hd, win = j->win, n = as->n, ldsc = j->s->cap;
    const size_t rbeg = b0 * SK_QB, rend = b1 * SK_QB < as->nq ? b1 * SK_QB : as->nq;
    size_t K0, K1;   /* keys of the whole unit */
    block_keys(win, n, rbeg, rend - rbeg, 32, &K0, &K1, NULL, NULL);
    const size_t NK = K1 - K0;
    sk_pack(as->k + K0 * as->ldkv + h * hd, as->ldkv, NK, hd, ws->kpack);  /* 16 keys x hd */
    const sk_packed kf = {ws->kpack, NULL, hd, NK, hd * SK_PANEL, SK_PACK_F32, 0};
    sk_pack_amx_bf16_f32(&kf, SK_PACK_AMX_BF16X3, ws->kamx);
    /* V in place: panel p is columns 16p.. of the head, input j key K0 + j */
    const sk_packed vf = {as->v + K0 * as->ldkv + h * hd, NULL, NK, hd, SK_PANEL, SK_PACK_F32,
                          as->ldkv};
    sk_pack_amx_bf16_f32(&vf, SK_PACK_AMX_BF16X3, ws->vamx);
    const size_t kstride = (hd + 31) / 32 * 32 * SK_PANEL, vstride = (NK + 31) / 32 * 32 * SK_PANEL;
    sk_amx_bf16_begin();
    for (size_t r0 = rbeg; r0 < rend; r0 += SK_QB) {
        const size_t nr = rend - r0 < SK_QB ? rend - r0 : SK_QB;
        size_t lo32, hi, ka[SK_QB], kb[SK_QB];   /* each row's keys, relative to lo32 */
        block_keys(win, n, r0, nr, 32, &lo32, &hi, ka, kb);
        const size_t nk = hi - lo32;
        /* scores: keys lo32.. are panels (lo32 - K0) / 16.. of K (2 parts of kstride each) */
        const sk_packed kw = {ws->kamx + (lo32 - K0) / SK_PANEL * 2 * kstride, NULL, hd, nk,
                              kstride, SK_PACK_AMX_BF16X3, 0};
        sk_gemm_amx_bf16_run(as->q + r0 * as->ldq + h * hd, as->ldq, nr, &kw, ws->sc, ldsc);
        sk_attn_softmax_rows(ws->sc, ldsc, nr, nk, ka, kb, j->scale);
        /* values: inputs lo32.. are steps (lo32 - K0) / 32.. of each panel (1024 elements
         * a step: hi and lo tiles) */
        const sk_packed vw = {ws->vamx + (lo32 - K0) / 32 * 1024, NULL, nk, hd, vstride,
                              SK_PACK_AMX_BF16X3, 0};
        sk_gemm_amx_bf16_run(ws->sc, ldsc, nr, &vw, as->out + r0 * as->ldo + h * hd, as->ldo);
    }
    sk_amx_bf16_end();
}

static void attn_unit(const attn_job *j, struct attn_ws *ws, const attn_seq *as, size_t h,
                      size_t b0, size_t b1) {
    const size_t hd = j->hd, win = j->win, n = as->n, ldsc = j->s->cap;
    const size_t rbeg = b0 * SK_QB, rend = b1 * SK_QB < as->nq ? b1 * SK_QB : as->nq;
    size_t K0, K1;   /* keys of the whole unit, K0 16-aligned */
    block_keys(win, n, rbeg, rend - rbeg, SK_PANEL, &K0, &K1, NULL, NULL);
    const size_t NK = K1 - K0;
    sk_pack(as->k + K0 * as->ldkv + h * hd, as->ldkv, NK, hd, ws->kpack);  /* 16 keys x hd */
    /* V copied into the second product's panels, panel p holding V[K0 + j][h*hd + 16p + c]
     * at [j][c] (zero past hd), once per unit. Read in place, at V's row stride (3 d floats),
     * the k steps fall into the same L1 sets whenever that stride is a multiple of 4 KB:
     * at large's 12 KB the product alone ran at 89-91 GFLOP/s in place against 154-160
     * copied, the copy included (one thread, docs/performance.md §3). */
    const size_t vp = (hd + SK_PANEL - 1) / SK_PANEL;
    for (size_t p = 0; p < vp; p++) {
        float *dst = ws->vpack + p * NK * SK_PANEL;
        const size_t c0 = p * SK_PANEL, nc = hd - c0 < SK_PANEL ? hd - c0 : SK_PANEL;
        const float *src = as->v + K0 * as->ldkv + h * hd + c0;
        if (nc == SK_PANEL) {
            for (size_t jj = 0; jj < NK; jj++)
                memcpy(dst + jj * SK_PANEL, src + jj * as->ldkv, SK_PANEL * sizeof(float));
        } else {
            for (size_t jj = 0; jj < NK; jj++) {
                float *dr = dst + jj * SK_PANEL;
                for (size_t c = 0; c < nc; c++) dr[c] = src[jj * as->ldkv + c];
                for (size_t c = nc; c < SK_PANEL; c++) dr[c] = 0.0f;
            }
        }
    }
    for (size_t r0 = rbeg; r0 < rend; r0 += SK_QB) {
        const size_t nr = rend - r0 < SK_QB ? rend - r0 : SK_QB;
        size_t lo16, hi, ka[SK_QB], kb[SK_QB];   /* each row's keys, relative to lo16 */
        block_keys(win, n, r0, nr, SK_PANEL, &lo16, &hi, ka, kb);
        const size_t nk = hi - lo16;
        sk_packed kw = {ws->kpack + ((lo16 - K0) / SK_PANEL) * hd * SK_PANEL, NULL, hd, nk,
                        hd * SK_PANEL, SK_PACK_F32, 0};
        sk_gemm(as->q + r0 * as->ldq + h * hd, as->ldq, nr, &kw, ws->sc, ldsc);
        sk_attn_softmax_rows(ws->sc, ldsc, nr, nk, ka, kb, j->scale);
        const sk_packed vw = {ws->vpack + (lo16 - K0) * SK_PANEL, NULL, nk, hd, NK * SK_PANEL,
                              SK_PACK_F32, 0};
        sk_gemm(ws->sc, ldsc, nr, &vw, as->out + r0 * as->ldo + h * hd, as->ldo);
    }
}

static void attn_part(void *ctx, int ith, int nth) {
    attn_job *j = ctx;
    struct attn_ws *ws = &j->s->tws[ith];
    for (;;) {
        size_t u = nth > 1 ? __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED) : j->next++;
        if (u >= j->n_units) return;
        const size_t c = u % j->chunks, sh = u / j->chunks, h = sh % j->H, i = sh / j->H;
        const attn_seq *as = &j->seq[i];
        const size_t nb = (as->nq + SK_QB - 1) / SK_QB;
        const size_t b0 = nb * c / j->chunks, b1 = nb * (c + 1) / j->chunks;
        if (b0 < b1) {
            if (j->s->attn_tiles)
                attn_unit_tiles(j, ws, as, h, b0, b1);
            else
                attn_unit(j, ws, as, h, b0, b1);
        }
    }
}

static void attention(sk_scratch *s, const attn_seq *seq, size_t ns, size_t H, size_t hd,
                      size_t win, float scale) {
    const int nt = sk_pool_size(s->pool);
    size_t chunks = 1, maxb = 1, work = 0;
    for (size_t i = 0; i < ns; i++) {
        size_t nb = (seq[i].nq + SK_QB - 1) / SK_QB;
        if (nb > maxb) maxb = nb;
        work += seq[i].nq * (win ? 2 * win + 1 < seq[i].n ? 2 * win + 1 : seq[i].n : seq[i].n);
    }
    work *= H * hd;
    const int par = nt > 1 && (double)work >= 65536.0;
    if (par && ns * H < 4 * (size_t)nt) {
        chunks = (4 * (size_t)nt + ns * H - 1) / (ns * H);
        if (chunks > maxb) chunks = maxb;
    }
    attn_job j = {s, seq, ns, H, hd, win, chunks, scale, ns * H * chunks, 0};
    if (par)
        sk_pool_run(s->pool, attn_part, &j);
    else
        attn_part(&j, 0, 1);
}

/* One encoder layer on the rows of s->h. The layer's last residual step, h += MLP output,
 * is left to the caller (the output stays in s->a), which fuses it into the LayerNorm that
 * comes next; the layer itself first adds `pending` (the previous layer's), the same way. */
static void encoder_layer(const sk_model *m, sk_scratch *s, const sk_enc_layer *L,
                          const seq_rows *sr, size_t ns, size_t N, const float *pending) {
    const size_t d = m->hp.n_embd, D = m->head_dim, H = m->hp.n_head;
    const size_t ld = 3 * d, I = m->hp.n_ff;
    const float *src = s->h;
    if (L->attn_norm) {
        add_ln(s, s->h, pending, N, d, L->attn_norm, NULL, m->hp.eps, s->a);
        src = s->a;
    } else if (pending) {
        add_ln(s, s->h, pending, N, d, NULL, NULL, 0.0f, NULL);
    }
    sk_model_linear(s, &L->qkv, src, d, N, s->qkv, ld);
    const int b = L->global ? 0 : 1;
    rope_ctx rc = {s->qkv, ld, H, D, s->rope_cos[b], s->rope_sin[b], sr, ns};
    par_rows(s, N, 2 * d, rope_rows, &rc);
    const size_t win = L->global ? 0 : m->hp.n_swa / 2;
    if (m->hp.option_layout == SK_LAYOUT_PARALLEL) {
        for (size_t q = 0; q < ns; q++)
            sk_attention_parallel(s, &sr[q], s->qkv + sr[q].off * ld, ld, H, D, d, win,
                               1.0f / sqrtf((float)D), s->att + sr[q].off * d, d);
    } else {
        attn_seq *as = s->aseq;
        for (size_t q = 0; q < ns; q++) {
            const float *base = s->qkv + sr[q].off * ld;
            as[q] = (attn_seq){base, base + d, base + 2 * d, ld, sr[q].n, ld, sr[q].n,
                               s->att + sr[q].off * d, d};
        }
        attention(s, as, ns, H, D, win, 1.0f / sqrtf((float)D));
    }
    sk_model_linear(s, &L->out, s->att, d, N, s->a, d);
    add_ln(s, s->h, s->a, N, d, L->ffn_norm, NULL, m->hp.eps, s->a);
    sk_model_linear(s, &L->up, s->a, d, N, s->ff, 2 * I);
    geglu_ctx gc = {s->ff, I};
    par_rows(s, N, 2 * I, geglu_rows, &gc);
    sk_model_linear(s, &L->down, s->ff, 2 * I, N, s->a, d);
}

/* A decision block over all rows (every row's output is needed by the next block). */
static void head_layer_full(const sk_model *m, sk_scratch *s, const sk_head_layer *Hl,
                            const seq_rows *sr, size_t ns, size_t N) {
    const size_t d = m->hp.n_embd, H = m->hp.n_head_dec, hd = m->head_dim_dec, ld = 3 * d;
    const size_t F = m->hp.n_ff_head;
    add_ln(s, s->h, NULL, N, d, Hl->norm1_w, Hl->norm1_b, SK_HEAD_EPS, s->a);
    sk_model_linear(s, &Hl->q, s->a, d, N, s->qkv, ld);
    sk_model_linear(s, &Hl->kv, s->a, d, N, s->qkv + d, ld);
    attn_seq *as = s->aseq;
    for (size_t q = 0; q < ns; q++) {
        const float *base = s->qkv + sr[q].off * ld;
        as[q] = (attn_seq){base, base + d, base + 2 * d, ld, sr[q].n, ld, sr[q].n,
                           s->att + sr[q].off * d, d};
    }
    attention(s, as, ns, H, hd, 0, 1.0f / sqrtf((float)hd));
    sk_model_linear(s, &Hl->out, s->att, d, N, s->a, d);
    add_ln(s, s->h, s->a, N, d, Hl->norm2_w, Hl->norm2_b, SK_HEAD_EPS, s->a);
    sk_model_linear(s, &Hl->up, s->a, d, N, s->ff, F);
    geglu_ctx rc = {s->ff, F};
    par_rows(s, N, F, relu_rows, &rc);
    sk_model_linear(s, &Hl->down, s->ff, F, N, s->a, d);
    add_ln(s, s->h, s->a, N, d, NULL, NULL, 0.0f, NULL);
}

/* The last decision block evaluated only at the K marker rows (global row indices in
 * rows[]); the result goes to s->mh. */
static void head_layer_markers(const sk_model *m, sk_scratch *s, const sk_head_layer *Hl,
                               const seq_rows *sr, size_t ns, size_t N, const size_t *rows,
                               size_t K) {
    const size_t d = m->hp.n_embd, H = m->hp.n_head_dec, hd = m->head_dim_dec;
    const size_t F = m->hp.n_ff_head;
    add_ln(s, s->h, NULL, N, d, Hl->norm1_w, Hl->norm1_b, SK_HEAD_EPS, s->a);
    for (size_t r = 0; r < K; r++) memcpy(s->ma + r * d, s->a + rows[r] * d, d * sizeof(float));
    sk_model_linear(s, &Hl->q, s->ma, d, K, s->mq, d);
    attn_seq *as = s->aseq;
    if (Hl->kt && !s->unfolded) {
        /* Folded: with A the block's normalized input rows, head h's keys are A Wk_h^T + bk_h
         * and its values A Wv_h^T + bv_h. So q.k_j = (q Wk_h).a_j + q.bk_h, where the last
         * term is the same for every key and cancels in the softmax, and sum_j p_j v_j =
         * (sum_j p_j a_j) Wv_h^T + bv_h, the p_j summing to 1. Attending over A itself with
         * u = q Wk_h costs O(K d^2 + K H n d) instead of projecting all n rows, O(n d^2). */
        const size_t elem = sk_pack_elem_size(Hl->kv.p.wtype);
        for (size_t h = 0; h < H; h++) {
            const sk_packed kt = {Hl->kt + h * Hl->kt_floats, NULL, hd, d, hd * SK_PANEL,
                                  SK_PACK_F32, 0};
            sk_gemm(s->mq + h * hd, d, K, &kt, s->mu + h * d, H * d);
        }
        for (size_t q = 0; q < ns; q++) {
            const float *a = s->a + sr[q].off * d;
            as[q] = (attn_seq){s->mu + sr[q].koff * H * d, a, a, d, sr[q].k * H, d, sr[q].n,
                               s->mz + sr[q].koff * H * d, d};
        }
        attention(s, as, ns, 1, d, 0, 1.0f / sqrtf((float)hd));
        for (size_t h = 0; h < H; h++) {
            const size_t panel = (d + h * hd) / SK_PANEL;
            const sk_packed wv = {(const char *)Hl->kv.p.data + panel * Hl->kv.p.pstride * elem,
                                  Hl->kv.p.bias ? Hl->kv.p.bias + d + h * hd : NULL, d, hd,
                                  Hl->kv.p.pstride, Hl->kv.p.wtype, 0};
            sk_gemm(s->mz + h * d, H * d, K, &wv, s->matt + h * hd, d);
        }
    } else {
        sk_model_linear(s, &Hl->kv, s->a, d, N, s->qkv, 2 * d);  /* keys and values for every row */
        for (size_t q = 0; q < ns; q++) {
            const float *kv = s->qkv + sr[q].off * 2 * d;
            as[q] = (attn_seq){s->mq + sr[q].koff * d, kv, kv + d, d, sr[q].k, 2 * d, sr[q].n,
                               s->matt + sr[q].koff * d, d};
        }
        attention(s, as, ns, H, hd, 0, 1.0f / sqrtf((float)hd));
    }
    sk_model_linear(s, &Hl->out, s->matt, d, K, s->ma, d);
    for (size_t r = 0; r < K; r++) {
        const float *hr = s->h + rows[r] * d;
        for (size_t i = 0; i < d; i++) s->mh[r * d + i] = hr[i] + s->ma[r * d + i];
    }
    sk_layernorm(s->mh, K, d, Hl->norm2_w, Hl->norm2_b, SK_HEAD_EPS, s->ma);
    sk_model_linear(s, &Hl->up, s->ma, d, K, s->mff, F);
    for (size_t i = 0; i < K * F; i++) s->mff[i] = s->mff[i] > 0.0f ? s->mff[i] : 0.0f;
    sk_model_linear(s, &Hl->down, s->mff, F, K, s->ma, d);
    for (size_t i = 0; i < K * d; i++) s->mh[i] += s->ma[i];
}

int sk_model_check_seq(const sk_model *m, const sk_seq *q, size_t qi, sk_err *e) {
    if (!q->ids || (q->n_markers && (!q->markers || !q->logits)))
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sequence %zu: NULL argument", qi);
    if (q->n == 0)
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sequence %zu: empty token sequence", qi);
    if (q->qtype < 0 || q->qtype > 2)
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sequence %zu: question type %d is not 0, "
                       "1 or 2", qi, q->qtype);
    for (size_t t = 0; t < q->n; t++)
        if (q->ids[t] < 0 || (uint32_t)q->ids[t] >= m->hp.n_vocab)
            return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sequence %zu: token id %d at position "
                           "%zu is outside the vocabulary (%u)", qi, (int)q->ids[t], t,
                           m->hp.n_vocab);
    if (m->hp.option_layout == SK_LAYOUT_PARALLEL && (!q->pos) != (!q->opt))
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sequence %zu: position ids without "
                       "option ids, or the reverse", qi);
    for (size_t t = 0; m->hp.option_layout == SK_LAYOUT_PARALLEL && q->pos && t < q->n; t++)
        if (q->pos[t] < 0 || (size_t)q->pos[t] >= q->n || q->opt[t] < 0)
            return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sequence %zu: position or option id "
                           "at %zu out of range", qi, t);
    for (size_t r = 0; r < q->n_markers; r++)
        if (q->markers[r] < 0 || (size_t)q->markers[r] >= q->n)
            return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sequence %zu: marker %zu at position "
                           "%d is outside the %zu-token sequence", qi, r, (int)q->markers[r],
                           q->n);
    return SKYCMD_OK;
}


/* A pass run for a contested group of a split (passes.c) stops once another pass of the
 * same group has published it: checked before every layer, a few microseconds apart for
 * the small models that are split by sequence (SKYCMD_E_CANCELLED, no message: nobody
 * reads it). A pass of the int8 conversion at load stops when the load's progress callback
 * asks (the scratch's stop hook, int8.c), with a message. */
static int given_up(const sk_scratch *s, sk_err *e) {
    if (s->race && atomic_load_explicit(&s->race->done, memory_order_acquire)) return SKYCMD_E_CANCELLED;
    if (s->stop && s->stop(s->stop_ud))
        return sk_fail(e, SKYCMD_E_CANCELLED, "cancelled by the progress callback");
    return SKYCMD_OK;
}

int sk_forward_pass(const sk_model *m, sk_scratch *s, const sk_seq *seqs, size_t n_seqs,
                    sk_err *e) {
    if (!m || !s || (n_seqs && !seqs))
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sk_model_forward: NULL argument");
    if (s->d != m->hp.n_embd || s->D != m->head_dim)
        return sk_fail(e, SKYCMD_E_MISUSE, "sk_model_forward: scratch made for another model");
    size_t N = 0, K = 0, ns = 0;
    for (size_t i = 0; i < n_seqs; i++) {
        int rc = sk_model_check_seq(m, &seqs[i], i, e);
        if (rc) return rc;
        if (seqs[i].n_markers == 0) continue;  /* nothing reads it */
        if (sk_add_size(N, seqs[i].n, &N) || sk_add_size(K, seqs[i].n_markers, &K))
            return sk_fail(e, SKYCMD_E_TOO_LARGE, "batch too large");
        ns++;
    }
    int rc = sk_scratch_reserve(m, s, N ? N : 1, e);
    if (!rc) rc = sk_scratch_reserve_markers(s, K ? K : 1, e);
    if (!rc) rc = sk_scratch_reserve_seqs(s, ns ? ns : 1, K ? K : 1, e);
    if (rc) return rc;
    if (ns == 0) return SKYCMD_OK;
    const size_t d = m->hp.n_embd;
    seq_rows *sr = s->seqs;
    size_t *rows = s->mrows;
    {
        size_t off = 0, koff = 0, q = 0;
        for (size_t i = 0; i < n_seqs; i++) {
            const sk_seq *sq = &seqs[i];
            if (sq->n_markers == 0) continue;
            const int par = m->hp.option_layout == SK_LAYOUT_PARALLEL;
            sr[q] = (seq_rows){off, sq->n, koff, sq->n_markers, par ? sq->pos : NULL,
                               par ? sq->opt : NULL};
            for (size_t r = 0; r < sq->n_markers; r++) rows[koff + r] = off + (size_t)sq->markers[r];
            for (size_t t = 0; t < sq->n; t++) {
                float *row = s->h + (off + t) * d;
                const uint8_t *src = m->tok_embd->data + (size_t)sq->ids[t] * m->tok_row_bytes;
                if (m->tok_embd->type == SK_GGML_F16)
                    sk_widen16(SK_PACK_F16, src, row, d);
                else if (m->tok_embd->type == SK_GGML_BF16)
                    sk_widen16(SK_PACK_BF16, src, row, d);
                else
                    sk_ggml_to_f32(m->tok_embd->type, src, row, d);
            }
            off += sq->n;
            koff += sq->n_markers;
            q++;
        }
    }
    if (!sk_all_finite(s->h, N * d)) { /* a damaged file: name the token */
        for (size_t i = 0, q = 0; i < n_seqs; i++) {
            if (seqs[i].n_markers == 0) continue;
            for (size_t t = 0; t < sr[q].n; t++)
                if (!sk_all_finite(s->h + (sr[q].off + t) * d, d))
                    return sk_fail(e, SKYCMD_E_FORMAT, "tensor token_embd.weight: row %d "
                                   "has a non-finite value", (int)seqs[i].ids[t]);
            q++;
        }
    }
    add_ln(s, s->h, NULL, N, d, m->embd_norm, NULL, m->hp.eps, s->h);
    for (uint32_t l = 0; l < m->hp.n_layer; l++) {
        if ((rc = given_up(s, e))) return rc;
        encoder_layer(m, s, &m->enc[l], sr, ns, N, l ? s->a : NULL);
    }
    if ((rc = given_up(s, e))) return rc;
    {
        /* the final norm, then + the question type's embedding: the norm's bias */
        const float *pending = m->hp.n_layer ? s->a : NULL;
        size_t q = 0;
        for (size_t i = 0; i < n_seqs; i++) {
            if (seqs[i].n_markers == 0) continue;
            const size_t o = sr[q].off * d;
            add_ln(s, s->h + o, pending ? pending + o : NULL, sr[q].n, d, m->out_norm,
                   m->type_emb + (size_t)seqs[i].qtype * d, m->hp.eps, s->h + o);
            q++;
        }
    }
    const uint32_t L = m->hp.n_head_layers;
    for (uint32_t j = 0; j + 1 < L; j++) {
        head_layer_full(m, s, &m->head[j], sr, ns, N);
        if ((rc = given_up(s, e))) return rc;
    }
    if (L > 0) {
        head_layer_markers(m, s, &m->head[L - 1], sr, ns, N, rows, K);
    } else {
        for (size_t r = 0; r < K; r++) memcpy(s->mh + r * d, s->h + rows[r] * d, d * sizeof(float));
    }
    /* scorer: LN -> Linear -> GELU -> Linear(d, 1) */
    sk_layernorm(s->mh, K, d, m->cls_norm_w, m->cls_norm_b, SK_HEAD_EPS, s->ma);
    sk_model_linear(s, &m->cls, s->ma, d, K, s->mff, d);
    sk_gelu(s->mff, K * d);
    sk_model_linear(s, &m->cls_out, s->mff, d, K, s->mlogits, 1);
    if (s->q8_oom) {
        s->q8_oom = 0;
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for the int8 activations");
    }
    for (size_t r = 0; r < K; r++)
        if (!isfinite(s->mlogits[r]))
            return sk_fail(e, SKYCMD_E_INTERNAL, "the model produced a non-finite score");
    if (s->race) return SKYCMD_OK;  /* in mlogits, for the publisher of the group (passes.c) */
    {
        size_t koff = 0;
        for (size_t i = 0; i < n_seqs; i++) {
            if (seqs[i].n_markers == 0) continue;
            memcpy(seqs[i].logits, s->mlogits + koff, seqs[i].n_markers * sizeof(float));
            koff += seqs[i].n_markers;
        }
    }
    return SKYCMD_OK;
}
