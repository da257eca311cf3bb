/*
 * scratch.c - per-thread buffers of the forward pass.
 *
 * Contract: an sk_scratch belongs to one thread at a time; its buffers grow to the largest
 * batch seen (rows, markers, sequences) and are reused, so a warm forward call allocates
 * nothing. Growth is all or nothing: on failure the scratch stays usable for what it held.
 * The RoPE cos/sin tables cover every position below the row capacity, computed as
 * transformers computes them (angle rounded to f32).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

/* ------------------------------------------------------------------ scratch ------ */

sk_scratch *sk_scratch_new(const sk_model *m) {
    if (!m) return NULL;
    sk_scratch *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->d = m->hp.n_embd;
    s->D = m->head_dim;
    s->Dmax = m->head_dim > m->head_dim_dec ? m->head_dim : m->head_dim_dec;
    s->Hdec = m->hp.n_head_dec;
    /* the folded last decision block attends with d-wide queries, keys and values */
    if (m->hp.n_head_layers > 0 && m->head[m->hp.n_head_layers - 1].kt) s->Dmax = s->d;
    s->n_qkv = 3 * s->d;
    s->n_ff_head = m->hp.n_ff_head;
    s->n_ff_max = 2 * m->hp.n_ff > m->hp.n_ff_head ? 2 * m->hp.n_ff : m->hp.n_ff_head;
    s->attn_tiles = m->attn_tiles;
    return s;
}

static void scratch_free_rows(sk_scratch *s) {
    free(s->h);
    free(s->a);
    free(s->qkv);
    free(s->att);
    free(s->ff);
    for (int t = 0; t < s->n_tws; t++) {
        free(s->tws[t].sc);
        free(s->tws[t].kpack);
        free(s->tws[t].vpack);
        free(s->tws[t].kamx);
        free(s->tws[t].vamx);
    }
    free(s->tws);
    s->tws = NULL;
    s->n_tws = 0;
    for (int b = 0; b < 2; b++) {
        free(s->rope_cos[b]);
        free(s->rope_sin[b]);
        s->rope_cos[b] = s->rope_sin[b] = NULL;
    }
    s->h = s->a = s->qkv = s->att = s->ff = NULL;
    s->cap = 0;
}

static void scratch_free_markers(sk_scratch *s) {
    free(s->mh);
    free(s->ma);
    free(s->mq);
    free(s->matt);
    free(s->mff);
    free(s->mu);
    free(s->mz);
    s->mh = s->ma = s->mq = s->matt = s->mff = s->mu = s->mz = NULL;
    s->cap_markers = 0;
}

void sk_scratch_free(sk_scratch *s) {
    if (!s) return;
    for (int i = 0; i < s->n_sub; i++) sk_scratch_free(s->sub[i]);
    free(s->sub);
    free(s->gseqs);
    free(s->gid);
    free(s->groups);
    sk_q8_ws_free(&s->q8ws);
    free(s->seqs);
    free(s->aseq);
    free(s->mrows);
    free(s->mlogits);
    scratch_free_rows(s);
    scratch_free_markers(s);
    free(s);
}

static float *alloc_rows(size_t rows, size_t cols) {
    size_t n, bytes;
    if (sk_mul_size(rows, cols, &n) != 0 || sk_mul_size(n ? n : 1, sizeof(float), &bytes) ||
        bytes > SIZE_MAX - 64)
        return NULL;
    return aligned_alloc(64, (bytes + 63) / 64 * 64);
}

/* Grow the per-position buffers to hold n rows; fills the RoPE tables for positions below
 * the new capacity (cos/sin of pos * inv_freq with the angle rounded to f32, as
 * transformers computes them). */
int sk_scratch_reserve(const sk_model *m, sk_scratch *s, size_t n, sk_err *e) {
    if (n <= s->cap) return SKYCMD_OK;
    /* The rows asked for (whole panels), or a quarter more than before when growing, so a
     * creeping size does not reallocate every call: no power-of-two slack in the peak. */
    size_t cap = s->cap && s->cap + s->cap / 4 > n ? s->cap + s->cap / 4 : n;
    if (cap > SIZE_MAX - SK_PANEL) return sk_fail(e, SKYCMD_E_NOMEM, "%zu rows", n);
    cap = (cap + SK_PANEL - 1) / SK_PANEL * SK_PANEL;
    scratch_free_rows(s);
    const size_t half = s->D / 2, dpad = (s->Dmax + SK_PANEL - 1) / SK_PANEL * SK_PANEL;
    s->h = alloc_rows(cap, s->d);
    s->a = alloc_rows(cap, s->d);
    s->qkv = alloc_rows(cap, s->n_qkv);
    s->att = alloc_rows(cap, s->d);
    s->ff = alloc_rows(cap, s->n_ff_max);
    /* every thread the pool started, whatever its limit (and whether or not a pass split
     * by sequence has set the pool aside for the caller's own group: passes.c) */
    const int nt = s->pool_threads > 1 ? s->pool_threads : 1;
    s->tws = calloc((size_t)nt, sizeof *s->tws);
    int ok = s->h && s->a && s->qkv && s->att && s->ff && s->tws;
    if (s->tws) s->n_tws = nt;
    for (int t = 0; ok && t < nt; t++) {
        s->tws[t].sc = alloc_rows(cap, SK_QB);
        /* a unit's keys start at a multiple of 16 (32 on the tiles) below its first query */
        s->tws[t].kpack = alloc_rows(cap + 2 * SK_PANEL, s->Dmax);
        s->tws[t].vpack = alloc_rows(cap + SK_PANEL, dpad);
        ok = s->tws[t].sc && s->tws[t].kpack && s->tws[t].vpack;
        if (ok && s->attn_tiles) {
            /* bf16 hi + lo tiles of up to cap + 32 keys by Dmax (K) and Dmax by them (V) */
            const size_t ke = sk_amx_bf16_packed_elems(cap + 2 * SK_PANEL, s->Dmax);
            const size_t ve = sk_amx_bf16_packed_elems(s->Dmax, cap + 2 * SK_PANEL);
            s->tws[t].kamx = ke ? (uint16_t *)alloc_rows(ke, 1) : NULL;
            s->tws[t].vamx = ve ? (uint16_t *)alloc_rows(ve, 1) : NULL;
            ok = s->tws[t].kamx && s->tws[t].vamx;
        }
    }
    for (int b = 0; b < 2 && ok; b++) {
        s->rope_cos[b] = alloc_rows(cap, half);
        s->rope_sin[b] = alloc_rows(cap, half);
        ok = s->rope_cos[b] && s->rope_sin[b];
        for (size_t p = 0; ok && p < cap; p++)
            for (size_t i = 0; i < half; i++) {
                float ang = (float)p * m->inv_freq[b][i];
                s->rope_cos[b][p * half + i] = (float)cos((double)ang);
                s->rope_sin[b][p * half + i] = (float)sin((double)ang);
            }
    }
    if (!ok) {
        scratch_free_rows(s);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for a %zu-token sequence", n);
    }
    s->cap = cap;
    return SKYCMD_OK;
}

int sk_scratch_reserve_markers(sk_scratch *s, size_t k, sk_err *e) {
    if (k <= s->cap_markers) return SKYCMD_OK;
    size_t cap = s->cap_markers ? s->cap_markers : 16;
    while (cap < k) cap = cap > SIZE_MAX / 2 ? k : cap * 2;
    scratch_free_markers(s);
    s->mh = alloc_rows(cap, s->d);
    s->ma = alloc_rows(cap, s->d);
    s->mq = alloc_rows(cap, s->d);
    s->matt = alloc_rows(cap, s->d);
    s->mff = alloc_rows(cap, s->n_ff_max > s->d ? s->n_ff_max : s->d);
    size_t hrows;
    if (!sk_mul_size(cap, s->Hdec ? s->Hdec : 1, &hrows)) {
        s->mu = alloc_rows(hrows, s->d);
        s->mz = alloc_rows(hrows, s->d);
    }
    if (!s->mh || !s->ma || !s->mq || !s->matt || !s->mff || !s->mu || !s->mz) {
        scratch_free_markers(s);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for %zu markers", k);
    }
    s->cap_markers = cap;
    return SKYCMD_OK;
}


void sk_scratch_set_pool(sk_scratch *s, sk_pool *pool) {
    if (!s) return;
    /* the per-thread attention buffers follow the pool size: regrow them on next use */
    if (sk_pool_threads(pool) != s->n_tws) scratch_free_rows(s);
    s->pool = pool;
    s->pool_threads = sk_pool_threads(pool);
}

void sk_scratch_set_unfolded(sk_scratch *s, int unfolded) {
    if (s) s->unfolded = unfolded != 0;
}

void sk_scratch_set_activations(sk_scratch *s, int mode) {
    if (s) s->act_mode = mode == SK_Q8_ACT_Q8 ? SK_Q8_ACT_Q8 : SK_Q8_ACT_Q8X2;
}

/* Replace two parallel arrays (*a of sa-byte and *b of sb-byte elements) by ones of at
 * least `need` elements, all or nothing: on failure both keep their old buffers. The
 * contents are scratch and are not carried over. */
static int grow_pair(void **a, size_t sa, void **b, size_t sb, size_t *cap, size_t need,
                     size_t min_cap) {
    if (need <= *cap) return 0;
    size_t n = need < min_cap ? min_cap : need;
    void *na = sk_malloc_array(n, sa), *nb = sk_malloc_array(n, sb);
    if (!na || !nb) {
        free(na);
        free(nb);
        return -1;
    }
    free(*a);
    free(*b);
    *a = na;
    *b = nb;
    *cap = n;
    return 0;
}

int sk_scratch_reserve_seqs(sk_scratch *s, size_t ns, size_t K, sk_err *e) {
    void *seqs = s->seqs, *aseq = s->aseq, *mrows = s->mrows, *mlogits = s->mlogits;
    int bad_seqs = grow_pair(&seqs, sizeof *s->seqs, &aseq, sizeof *s->aseq, &s->cap_seqs, ns, 8);
    s->seqs = seqs;
    s->aseq = aseq;
    if (bad_seqs) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for %zu sequences", ns);
    int bad_rows = grow_pair(&mrows, sizeof *s->mrows, &mlogits, sizeof *s->mlogits,
                             &s->cap_rows, K, 16);
    s->mrows = mrows;
    s->mlogits = mlogits;
    if (bad_rows) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for %zu markers", K);
    return SKYCMD_OK;
}
