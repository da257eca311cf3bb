/*
 * int8.c - the int8 weights modes (SKYCMD_WEIGHTS_Q8 and _Q8_PLAIN), applied after the load.
 *
 * Contract: sk_model_to_int8() picks the matrices that go int8 (Q8_0 in the file, already
 * packed at load, or what the converter's policy would make Q8_0: encoder matrices whose
 * rows split into blocks of 32; the decision head stays f32), calibrates on the built-in
 * prompts for SKYCMD_WEIGHTS_Q8 (max |x| per input channel, outlier columns kept in f32),
 * and replaces their f32/16-bit panels by Q8_0 panels (src/kernels/q8.h), logging each
 * matrix's relayout. A file that stores a calibrated int8 model (src/quant/int8_store.h)
 * is taken as it is under SKYCMD_WEIGHTS_Q8: its Q8_0 matrices get their outlier columns
 * and two-pass marks from its keys, nothing is calibrated or quantized here.
 * sk_model_int8_each() hands out the matrices quantized here with their ROW_MAJOR bytes
 * (kept when the calibration source asks), for skycmd_quantize to store. See
 * docs/quantization.md. Progress: its share of the load's, split by estimated cost
 * (model_internal.h's SK_COST_*), reported before every layer of the calibration's and the
 * probe's passes (the scratch's stop hook) and after each matrix quantized; a stop there
 * returns SKYCMD_E_CANCELLED, and the model's free takes what was made.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"
#include "../prompt/outlier_calib_seqs.h"
#include "../quant/int8_store.h"
#include "../quant/quant.h"

/* ------------------------------------------------------------------ int8 weights --- */

/* GPTQ budgets: second-moment memory (bytes) and rounding work (multiply-adds). */
#define SK_GPTQ_MEM_BUDGET (256.0 * 1024 * 1024)
#define SK_GPTQ_WORK_BUDGET 4e9

/* Every Linear of the model, encoder first, in a new array (free() it; NULL when out of
 * memory): *n of them, the first *n_enc the encoder's. */
static sk_linear **model_linears(sk_model *m, size_t *n, size_t *n_enc) {
    sk_linear **list = sk_malloc_array(4 * (size_t)m->hp.n_layer + 5 * (size_t)m->hp.n_head_layers + 2,
                                       sizeof *list);
    if (!list) return NULL;
    *n = 0;
    for (uint32_t l = 0; l < m->hp.n_layer; l++) {
        sk_enc_layer *L = &m->enc[l];
        list[(*n)++] = &L->qkv;
        list[(*n)++] = &L->out;
        list[(*n)++] = &L->up;
        list[(*n)++] = &L->down;
    }
    *n_enc = *n;
    for (uint32_t j = 0; j < m->hp.n_head_layers; j++) {
        sk_head_layer *H = &m->head[j];
        list[(*n)++] = &H->q;
        list[(*n)++] = &H->kv;
        list[(*n)++] = &H->out;
        list[(*n)++] = &H->up;
        list[(*n)++] = &H->down;
    }
    list[(*n)++] = &m->cls;
    list[(*n)++] = &m->cls_out;
    return list;
}

/* The calibration's input sequences, built on first use by the source handed down
 * (src/api/model.c: the model's own tokenizer, decoded once per load) or, without one, by
 * sk_calib_sequences on the file, and the passes' threads; shared by calibrate(),
 * probe_sites() and probe_rows() (model.h: sk_calib_inputs). */
struct sk_calib_inputs {
    const sk_calib_source *src;
    const sk_gguf *g;
    int built;
    sk_calib_seq v[SK_CALIB_N_SEQS];
    sk_pool *pool;  /* the passes' threads, or NULL for one */
    sk_pool *own;   /* pool when started here (sk_calib_source.threads) */
    skycmd_log_fn log;
    void *log_ud;
};

sk_calib_inputs *sk_calib_inputs_new(const sk_gguf *g, const sk_calib_source *calib, sk_pool *pool,
                                     skycmd_log_fn log, void *log_ud) {
    sk_calib_inputs *in = calloc(1, sizeof *in);
    if (!in) return NULL;
    in->src = calib;
    in->g = g;
    in->pool = pool;
    in->log = log;
    in->log_ud = log_ud;
    return in;
}

void sk_calib_inputs_free(sk_calib_inputs *in) {
    if (!in) return;
    if (in->built) sk_calib_sequences_free(in->v);
    sk_pool_free(in->own);
    free(in);
}

/* The sequences, built on first use; the threads of the passes that read them started then
 * too, where the source asks for more than one and no pool was lent. */
static int calib_seqs_get(const sk_model *m, sk_calib_inputs *cs, sk_err *e) {
    if (cs->built) return SKYCMD_OK;
    int rc = cs->src ? cs->src->build(cs->src->ud, m->hp.max_tokens, m->hp.max_head_tokens, cs->v, e)
                     : sk_calib_sequences(cs->g, m->hp.max_tokens, m->hp.max_head_tokens, cs->v, e);
    if (rc) return rc;
    cs->built = 1;
    const int threads = cs->src && cs->src->threads > 0 ? cs->src->threads : 1;
    if (!cs->pool && threads > 1 && !(cs->pool = cs->own = sk_pool_new(threads)))
        sk_model_log(cs->log, cs->log_ud, 1, "int8: no compute threads for the calibration (%d asked): one runs it",
                     threads);
    return SKYCMD_OK;
}

/* ------------------------------------------------------------------ progress ------- */

/* The conversion's progress (sk_model_to_int8's share, split by estimated cost into the
 * calibration, the sensitivity probe and the quantization). A forward pass reports from
 * its scratch's stop hook before every layer: pass_begin() sets the span [f0, f1] of the
 * current part that the pass covers, and each layer moves done through it, so the
 * calibration's seconds per sequence move the bar smoothly and a stop is seen within a
 * layer. */
typedef struct int8_prog {
    sk_share part;     /* the current part of the conversion */
    double f0, f1;     /* the span of part the current pass covers */
    unsigned k, n;     /* layers begun, of the pass's n */
} int8_prog;

static int pass_stop(void *ud) {
    int8_prog *p = ud;
    const double f = p->f0 + (p->f1 - p->f0) * (p->n ? (double)(p->k < p->n ? p->k : p->n) / p->n : 0.0);
    p->k++;
    return sk_share_report(p->part, f, NULL) != 0;
}

/* Attach the progress to a scratch of the conversion (nothing without a callback). */
static void prog_attach(sk_scratch *s, int8_prog *p) {
    if (!s || !sk_share_active(p->part)) return;
    s->stop = pass_stop;
    s->stop_ud = p;
}

static void pass_begin(const sk_model *m, int8_prog *p, double f0, double f1) {
    p->f0 = f0;
    p->f1 = f1;
    p->k = 0;
    p->n = m->hp.n_layer + m->hp.n_head_layers;  /* given_up() calls of one pass */
}

/* The multiply-adds of one token through every matrix of the model (its forward cost). */
static double model_macs(const sk_model *m) {
    const double d = m->hp.n_embd, ff = m->hp.n_ff, ffh = m->hp.n_ff_head;
    return (double)m->hp.n_layer * (3 * d * d + d * d + 2 * ff * d + ff * d) +
           (double)m->hp.n_head_layers * (3 * d * d + d * d + 2 * ffh * d) + d * d + d;
}

/* One calibration sequence through the model, every position a marker (so the last
 * decision block sees every row too); a model with the parallel option layout gets the
 * sequence's positions and options as a request would give them. */
static int forward_seq(const sk_model *m, sk_scratch *s, const sk_calib_seq *q, const int32_t *marks,
                       float *logits, sk_err *e) {
    const int par = m->hp.option_layout == SK_LAYOUT_PARALLEL;
    sk_seq one = {q->ids, q->n, q->qtype, marks, q->n, logits, par ? q->pos : NULL, par ? q->opt : NULL};
    return sk_model_forward_batch(m, s, &one, 1, e);
}

/* Whether L takes only some rows of its tensor (the decision head's q and kv, rows of one
 * attn_qkv). */
static int linear_is_part(const sk_linear *L) {
    return L->row0 != 0 || L->p.n_out != L->src->ne[1];
}

/* Which of the sites quantized here (to_q8[i] == 1) get second moments for GPTQ rounding
 * (gptq[i] = 1): in order, while their memory (k^2 floats) and rounding work (n_out k^2)
 * fit the budgets; the rest keep the per-block scale search. Returns their count. */
static size_t pick_gptq(sk_linear *const *sites, size_t n_sites, const uint8_t *to_q8,
                        uint8_t *gptq) {
    double mem = 0.0, work = 0.0;
    size_t n = 0;
    for (size_t i = 0; i < n_sites; i++) {
        gptq[i] = 0;
        if (to_q8[i] != 1) continue;
        const double kk = (double)sites[i]->p.n_in * (double)sites[i]->p.n_in;
        if (mem + 4.0 * kk > SK_GPTQ_MEM_BUDGET || work + kk * (double)sites[i]->p.n_out > SK_GPTQ_WORK_BUDGET)
            continue;
        mem += 4.0 * kk;
        work += kk * (double)sites[i]->p.n_out;
        gptq[i] = 1;
        n++;
    }
    return n;
}

/* The first encoder layer's second moments over the vocabulary (vocab_moments): whether
 * they are taken, and the tokens and multiply-adds they cost. */
#define SK_VOCAB_WORK 2e9
static int vocab_site(const sk_model *m, sk_linear *const *sites, const uint8_t *gptq) {
    return m->hp.n_layer > 0 && !m->enc[0].attn_norm && sites[0] == &m->enc[0].qkv && gptq[0] &&
           m->tok_embd && m->embd_norm;
}
static size_t vocab_stride(const sk_model *m, size_t k) {
    return (size_t)((double)m->hp.n_vocab * (double)k * (double)k / SK_VOCAB_WORK) + 1;
}
static double vocab_cost(const sk_model *m, size_t k) {
    const double tokens = (double)((m->hp.n_vocab + vocab_stride(m, k) - 1) / vocab_stride(m, k));
    return SK_COST_MAC * tokens * (double)k * (double)k / 2.0;
}

/* The calibration (docs/quantization.md §3): the f32 model on the calibration sequences
 * (sk_calib_sequences: questions laid out by the model's own template around the built-in
 * prompts and around vocabulary states), every position a marker (so the last decision
 * block sees every row too), max |x| per input channel at every matrix product; second
 * moments at the sites gptq marks. Progress: pr->part, the passes by tokens, then the
 * vocabulary's moments. */
static int vocab_moments(const sk_model *m, float *xtx, size_t k, sk_share prog, sk_err *e);
static int calibrate(sk_model *m, sk_calib_inputs *cs, sk_linear *const *sites, size_t n_sites,
                     const uint8_t *gptq, sk_calib *c, int8_prog *pr, sk_err *e) {
    size_t *k = sk_malloc_array(n_sites, sizeof(size_t));
    if (!k) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for calibration");
    for (size_t i = 0; i < n_sites; i++) k[i] = sites[i]->p.n_in;
    int rc = sk_calib_init(c, n_sites, k);
    free(k);
    if (rc) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for calibration");
    double xtx_macs = 0.0;   /* per token */
    for (size_t i = 0; i < n_sites; i++) {
        if (!gptq[i]) continue;
        if (sk_calib_want_xtx(c, i)) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for calibration");
        xtx_macs += (double)sites[i]->p.n_in * (double)sites[i]->p.n_in / 2.0;
    }
    rc = calib_seqs_get(m, cs, e);
    if (rc) {
        sk_err_prefix(e, "calibration prompts");
        return rc;
    }
    const sk_calib_seq *seqs = cs->v;
    size_t tokens = 0, before = 0;
    for (size_t i = 0; i < SK_CALIB_N_SEQS; i++) tokens += seqs[i].n;
    const int vocab = vocab_site(m, sites, gptq);
    const double c_pass = (SK_COST_FWD * model_macs(m) + SK_COST_MAC * xtx_macs) * (double)tokens;
    const double c_vocab = vocab ? vocab_cost(m, c->k[0]) : 0.0;
    const double passes = c_pass + c_vocab > 0.0 ? c_pass / (c_pass + c_vocab) : 1.0;
    sk_scratch *s = sk_scratch_new(m);
    sk_scratch_set_pool(s, cs->pool);
    prog_attach(s, pr);
    int32_t *marks = NULL;
    float *logits = NULL;
    if (!s) rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory for calibration");
    for (size_t i = 0; i < SK_CALIB_N_SEQS && !rc; i++) {
        const size_t n = seqs[i].n;
        free(marks);
        free(logits);
        marks = sk_malloc_array(n ? n : 1, sizeof(int32_t));
        logits = sk_malloc_array(n ? n : 1, sizeof(float));
        if (!marks || !logits) {
            rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory for calibration");
            break;
        }
        for (size_t t = 0; t < n; t++) marks[t] = (int32_t)t;
        s->calib = c;
        s->calib_sites = sites;
        s->n_calib_sites = n_sites;
        pass_begin(m, pr, passes * (double)before / (double)(tokens ? tokens : 1),
                   passes * (double)(before + n) / (double)(tokens ? tokens : 1));
        before += n;
        rc = forward_seq(m, s, &seqs[i], marks, logits, e);
        if (rc && rc != SKYCMD_E_CANCELLED) sk_err_prefix(e, "calibration sequence %zu", i);
    }
    free(marks);
    free(logits);
    sk_scratch_free(s);
    if (!rc) rc = sk_share_report(pr->part, passes, e);
    if (!rc && vocab)
        rc = vocab_moments(m, c->xtx[0], c->k[0], sk_share_part(pr->part, passes, 1.0), e);
    if (!rc) rc = sk_share_report(pr->part, 1.0, e);
    return rc;
}

/* The first encoder layer's attn_qkv reads LN(token embedding) (ModernBERT's layer 0 has
 * no attention norm), a function of the token alone: its second moments are taken over the
 * vocabulary (every token once, or every n-th when that would cost over SK_VOCAB_WORK
 * multiply-adds) instead of the prompts' few hundred tokens, so that GPTQ rounding fits
 * every input the site can ever see. Without this the rounding fitted the prompts' tokens
 * and was 3x worse than plain rounding on the trained model's own inputs. */
static int vocab_moments(const sk_model *m, float *xtx, size_t k, sk_share prog, sk_err *e) {
    const size_t nv = m->hp.n_vocab;
    const size_t stride = vocab_stride(m, k);
    float *row = sk_malloc_array(2 * k, sizeof(float));
    if (!row) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for calibration");
    memset(xtx, 0, k * k * sizeof(float));
    for (size_t t = 0, i = 0; t < nv; t += stride, i++) {
        /* progress and a stop every 64 tokens (a few ms each on a base-sized model) */
        if (i % 64 == 0 && sk_share_report(prog, (double)t / (double)nv, e)) {
            free(row);
            return SKYCMD_E_CANCELLED;
        }
        if (sk_ggml_to_f32(m->tok_embd->type, m->tok_embd->data + t * m->tok_row_bytes, row, k)) {
            free(row);
            return sk_fail(e, SKYCMD_E_FORMAT, "tensor token_embd.weight: cannot widen");
        }
        sk_layernorm(row, 1, k, m->embd_norm, NULL, m->hp.eps, row + k);
        const float *x = row + k;
        for (size_t i = 0; i < k; i++) {
            if (x[i] == 0.0f || !isfinite(x[i])) continue;
            for (size_t j = i; j < k; j++) xtx[i * k + j] += x[i] * (isfinite(x[j]) ? x[j] : 0.0f);
        }
    }
    free(row);
    return SKYCMD_OK;
}

/* The f32 weights [n_out][n_in] of a Linear read back from its f32 or 16-bit panels: exactly
 * the values the file's rows widen to (the panels are a copy of them, 16-bit ones widened
 * exactly), so the loader need not keep the file's bytes for this pass. */
static int unpack_linear(const sk_linear *L, float *w) {
    const sk_packed *p = &L->p;
    if (!p->data || sk_packed_rstride(p) != SK_PANEL ||
        (p->wtype != SK_PACK_F32 && p->wtype != SK_PACK_F16 && p->wtype != SK_PACK_BF16))
        return -1;
    const size_t n_in = p->n_in, n_out = p->n_out, esz = sk_pack_elem_size(p->wtype);
    float tmp[SK_PANEL];
    for (size_t o0 = 0; o0 < n_out; o0 += SK_PANEL) {
        const size_t nc = n_out - o0 < SK_PANEL ? n_out - o0 : SK_PANEL;
        const char *panel = (const char *)p->data + (o0 / SK_PANEL) * p->pstride * esz;
        for (size_t i = 0; i < n_in; i++) {
            const char *src = panel + i * SK_PANEL * esz;
            if (p->wtype == SK_PACK_F32) memcpy(tmp, src, sizeof tmp);
            else sk_widen16(p->wtype, src, tmp, SK_PANEL);
            for (size_t c = 0; c < nc; c++) w[(o0 + c) * n_in + i] = tmp[c];
        }
    }
    return 0;
}

/* The f32 weights of a Linear (rows row0.. of its file tensor) into *w (grown as needed). */
static int widen_linear(const sk_linear *L, float **w, size_t *w_cap, const char *name, sk_err *e) {
    const size_t n_in = L->p.n_in, n_out = L->p.n_out;
    if (n_out * n_in > *w_cap) {
        free(*w);
        *w_cap = n_out * n_in;
        *w = sk_malloc_array(*w_cap, sizeof(float));
        if (!*w) {
            *w_cap = 0;
            return sk_fail(e, SKYCMD_E_NOMEM, "out of memory quantizing %s", name);
        }
    }
    if (unpack_linear(L, *w) != 0)
        return sk_fail(e, SKYCMD_E_INTERNAL, "tensor %s: no f32 or 16-bit panels to widen", name);
    return SKYCMD_OK;
}

static void linear_name(const sk_linear *L, char *name, size_t cap) {
    snprintf(name, cap, "%.*s", (int)(L->src->name.len < 150 ? L->src->name.len : 150),
             L->src->name.ptr);
}

/* Calibration sequences through the model, every position a marker; logits one after another
 * (total positions in *n_logits). subset: only the six SK_PROBE_PROMPTS names (three built-in
 * prompt states: a game state, English and French prose; three vocabulary states; each
 * question type twice), which is what the per-site sensitivity pass uses to keep the load
 * short. */
#define SK_N_PROBE 6
static const size_t SK_PROBE_PROMPTS[SK_N_PROBE] = {0, 4, 8, SK_CALIB_N_PROMPTS,
                                                     SK_CALIB_N_PROMPTS + 1, SK_CALIB_N_PROMPTS + 2};
static size_t prompts_tokens(const sk_calib_seq *seqs, int subset) {
    size_t t = 0;
    for (size_t j = 0; j < (subset ? SK_N_PROBE : SK_CALIB_N_SEQS); j++)
        t += seqs[subset ? SK_PROBE_PROMPTS[j] : j].n;
    return t;
}
/* (The passes cover [f0, f1] of pr's part, by tokens.) */
static int run_prompts(sk_model *m, sk_scratch *s, const sk_calib_seq *seqs, int subset,
                       float *logits, size_t *n_logits, int8_prog *pr, double f0, double f1,
                       sk_err *e) {
    size_t off = 0, maxn = 1;
    for (size_t i = 0; i < SK_CALIB_N_SEQS; i++) maxn = seqs[i].n > maxn ? seqs[i].n : maxn;
    int32_t *marks = sk_malloc_array(maxn, sizeof(int32_t));
    if (!marks) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for calibration");
    for (size_t t = 0; t < maxn; t++) marks[t] = (int32_t)t;
    int rc = SKYCMD_OK;
    const size_t n = subset ? SK_N_PROBE : SK_CALIB_N_SEQS;
    const double per = (f1 - f0) / (double)(prompts_tokens(seqs, subset) ? prompts_tokens(seqs, subset) : 1);
    for (size_t j = 0; j < n && !rc; j++) {
        const size_t i = subset ? SK_PROBE_PROMPTS[j] : j;
        pass_begin(m, pr, f0 + per * (double)off, f0 + per * (double)(off + seqs[i].n));
        rc = forward_seq(m, s, &seqs[i], marks, logits + off, e);
        off += seqs[i].n;
    }
    free(marks);
    *n_logits = off;
    return rc;
}

/* Sensitivity of each site quantized at load: the model with only that site int8 (ggml's
 * scales refined by the calibrated scale search, outlier columns, Q8x2 activations) on the
 * six probe sequences, RMS of the scorer logits' change against f32 (sens[i]), and the same
 * product with single-pass activations against the two-pass one (sens_a[i]: what --q8-fast
 * adds at the site). The most sensitive quarter of the sites (at least one) stays f32
 * (keep[i] = 1); of the others, as many again with the largest sens_a keep two-pass
 * activations under --q8-fast (fast_x2[i] = 1). The attribution (tests/test_int8_attrib.c,
 * docs/quantization.md) found the weight error of a trained model concentrated in a few
 * sites (s1-pico-flappy: blk.0.attn_qkv alone gave more than the whole rest) and the
 * single-pass activation error in others (blk.0.ffn_down), so one choice per mode: with
 * one shared choice, keeping more sites f32 for --q8 moved --q8-fast from 2.9e-2 to 5.7e-2
 * (errors that cancelled no longer did). sens/sens_a are -1 for sites not probed. (Probing
 * with ggml's plain rounding instead saves 5 % of the load but picked sites that left
 * laya-parallel at 1.9e-2 instead of 1.6e-2, measured with the eighth of the time.) */
#define SK_SITE_KEEP_SHARE 4

/* Marks (mark[i] = 1) up to cap of the sites with the largest score, of those that have one
 * (score >= 0), are not marked yet and not excluded (exclude NULL: none); returns how many
 * it marked. Ties go to the first site. */
static size_t mark_largest(const double *score, const uint8_t *exclude, uint8_t *mark, size_t n,
                           size_t cap) {
    size_t marked = 0;
    while (marked < cap) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < n; i++)
            if (score[i] >= 0.0 && !mark[i] && !(exclude && exclude[i]) &&
                (best == SIZE_MAX || score[i] > score[best]))
                best = i;
        if (best == SIZE_MAX) break;
        mark[best] = 1;
        marked++;
    }
    return marked;
}
/* The probe's cost (SK_COST_* units): the reference pass, then per site quantized here a
 * quantization and two passes. */
static double probe_cost(const sk_model *m, size_t probe_tokens, sk_linear *const *all, size_t n,
                         const uint8_t *to_q8) {
    const double pass = SK_COST_FWD * model_macs(m) * (double)probe_tokens;
    double c = pass;
    for (size_t i = 0; i < n; i++)
        if (to_q8[i] == 1)
            c += SK_COST_Q8_ELEM * (double)all[i]->p.n_in * (double)all[i]->p.n_out + 2.0 * pass;
    return c;
}

static int probe_sites(sk_model *m, sk_calib_inputs *cs, sk_linear *const *all, size_t n,
                       const uint8_t *to_q8, const sk_calib *c, uint8_t *keep, double *sens,
                       size_t *n_keep, uint8_t *fast_x2, double *sens_a, size_t *n_x2,
                       int8_prog *pr, sk_err *e) {
    *n_keep = 0;
    int rc = calib_seqs_get(m, cs, e);
    if (rc) return rc;
    const sk_calib_seq *seqs = cs->v;
    size_t total = 0;
    for (size_t i = 0; i < SK_CALIB_N_SEQS; i++) total += seqs[i].n;
    float *ref = sk_malloc_array(total ? total : 1, sizeof(float));
    float *got = sk_malloc_array(total ? total : 1, sizeof(float));
    float *got1 = sk_malloc_array(total ? total : 1, sizeof(float));
    sk_scratch *s = sk_scratch_new(m);
    sk_scratch_set_pool(s, cs->pool);
    prog_attach(s, pr);
    *n_x2 = 0;
    float *w = NULL;
    size_t w_cap = 0, nl = 0, n_probed = 0;
    /* progress: fractions of the probe's estimated cost */
    const double pass = SK_COST_FWD * model_macs(m) * (double)prompts_tokens(seqs, 1);
    const double cost = probe_cost(m, prompts_tokens(seqs, 1), all, n, to_q8);
    double spent = pass;
    if (!ref || !got || !got1 || !s) rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory for calibration");
    if (!rc) rc = run_prompts(m, s, seqs, 1, ref, &nl, pr, 0.0, pass / cost, e);
    for (size_t i = 0; i < n && !rc; i++) {
        sens[i] = sens_a[i] = -1.0;
        if (to_q8[i] != 1) continue;
        sk_linear *L = all[i];
        const double qc = SK_COST_Q8_ELEM * (double)L->p.n_in * (double)L->p.n_out;
        if ((rc = sk_share_report(pr->part, spent / cost, e))) break;
        char name[160];
        linear_name(L, name, sizeof name);
        sk_q8_owned q;
        float *ms = sk_malloc_array(L->p.n_in, sizeof(float));
        if (!ms) rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory for calibration");
        for (size_t j = 0; !rc && j < L->p.n_in; j++)
            ms[j] = c->rows[i] ? (float)(c->sq[i][j] / (double)c->rows[i]) : 0.0f;
        if (!rc) rc = widen_linear(L, &w, &w_cap, name, e);
        if (!rc) rc = sk_q8_build(w, L->p.n_out, L->p.n_in, L->bias, c->mx[i], ms, NULL, 0,
                                  name, &q, NULL, NULL, e);
        free(ms);
        if (rc) break;
        L->q8 = &q;
        spent += qc;
        rc = run_prompts(m, s, seqs, 1, got, &nl, pr, spent / cost, (spent + pass) / cost, e);
        spent += pass;
        /* the same product with single-pass activations: what --q8-fast adds here */
        sk_scratch_set_activations(s, SK_Q8_ACT_Q8);
        if (!rc) rc = run_prompts(m, s, seqs, 1, got1, &nl, pr, spent / cost, (spent + pass) / cost, e);
        spent += pass;
        sk_scratch_set_activations(s, SK_Q8_ACT_Q8X2);
        L->q8 = NULL;
        sk_q8_owned_free(&q);
        double ss = 0.0, sa = 0.0;
        for (size_t t = 0; t < nl; t++) {
            ss += ((double)got[t] - ref[t]) * ((double)got[t] - ref[t]);
            sa += ((double)got1[t] - got[t]) * ((double)got1[t] - got[t]);
        }
        sens[i] = nl ? sqrt(ss / (double)nl) : 0.0;
        sens_a[i] = nl ? sqrt(sa / (double)nl) : 0.0;
        n_probed++;
    }
    if (!rc && n_probed > 1) {
        const size_t cap = n_probed / SK_SITE_KEEP_SHARE ? n_probed / SK_SITE_KEEP_SHARE : 1;
        *n_keep = mark_largest(sens, NULL, keep, n, cap);
        /* --q8-fast: the products of the same number of sites (of those left int8) whose
         * single-pass activations change the logits most keep two-pass activations */
        *n_x2 = mark_largest(sens_a, keep, fast_x2, n, cap);
    }
    free(w);
    free(ref);
    free(got);
    free(got1);
    sk_scratch_free(s);
    return rc;
}

/* Row-scaled int8's choice for single-pass activations (--q8-row --q8-fast): the model as
 * it will run (every site int8) answers the six probe sequences with two-pass activations
 * everywhere, then once per site with that site alone on one pass (the scratch's
 * one_pass_site: the model itself is not written); the RMS change of the scorer logits is
 * what one pass adds there (sens_a[i]), and the SK_ROW_X2_SHARE-th of the sites where it is
 * largest keep two passes under --q8-fast (x2[i] = 1). In context, so no f32 pass and no
 * second quantization: one int8 pass per site. The share: a third took a random base's
 * one-pass error at 128 tokens from 5.7e-2 to 3.3e-2 of laya (a quarter: 3.7e-2, a half:
 * 2.2e-2, two passes everywhere: 2.5e-2), s1-micro's from 6.2e-2 to 3.5e-2, at about the
 * speed of one pass (docs/quantization.md §5). */
#define SK_ROW_X2_SHARE 3
static double probe_rows_cost(const sk_model *m, double probe_tokens, size_t n_sites) {
    return SK_COST_FWD * SK_COST_INT8_PASS * model_macs(m) * (double)probe_tokens * (double)(n_sites + 1);
}

static int probe_rows(sk_model *m, sk_calib_inputs *cs, sk_linear *const *all, size_t n,
                      double *sens_a, uint8_t *x2, size_t *n_x2, int8_prog *pr, sk_err *e) {
    *n_x2 = 0;
    int rc = calib_seqs_get(m, cs, e);
    if (rc) return rc;
    const sk_calib_seq *seqs = cs->v;
    size_t total = 0, n_sites = 0, nl = 0;
    for (size_t i = 0; i < SK_CALIB_N_SEQS; i++) total += seqs[i].n;
    for (size_t i = 0; i < n; i++) {
        sens_a[i] = -1.0;
        x2[i] = 0;
        n_sites += all[i]->q8 != NULL;
    }
    float *ref = sk_malloc_array(total ? total : 1, sizeof(float));
    float *got = sk_malloc_array(total ? total : 1, sizeof(float));
    sk_scratch *s = sk_scratch_new(m);   /* two-pass activations: the reference */
    sk_scratch_set_pool(s, cs->pool);
    prog_attach(s, pr);
    if (!ref || !got || !s) rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory for the probe");
    const double per = 1.0 / (double)(n_sites + 1);
    size_t done = 0;
    if (!rc) rc = run_prompts(m, s, seqs, 1, ref, &nl, pr, 0.0, per, e);
    for (size_t i = 0; i < n && !rc; i++) {
        if (!all[i]->q8) continue;
        done++;
        s->one_pass_site = all[i]->q8;
        rc = run_prompts(m, s, seqs, 1, got, &nl, pr, per * (double)done, per * (double)(done + 1), e);
        s->one_pass_site = NULL;
        double sa = 0.0;
        for (size_t t = 0; t < nl; t++) sa += ((double)got[t] - ref[t]) * ((double)got[t] - ref[t]);
        sens_a[i] = nl ? sqrt(sa / (double)nl) : 0.0;
    }
    /* a third of the sites keep two passes (at least one where there are any) */
    const size_t n_keep_x2 = n_sites / SK_ROW_X2_SHARE ? n_sites / SK_ROW_X2_SHARE : n_sites ? 1 : 0;
    if (!rc) *n_x2 = mark_largest(sens_a, NULL, x2, n, n_keep_x2);
    free(ref);
    free(got);
    sk_scratch_free(s);
    return rc;
}

/* The log of a probe's findings, a line per site probed (sens_a >= 0): for --q8 (sens
 * given) the site alone against f32, then what single-pass activations add; the sites kept
 * in f32 (keep, or NULL) and those with two passes under --q8-fast (x2). */
static void log_probe(skycmd_log_fn log, void *log_ud, sk_linear *const *all, size_t n,
                      const double *sens, const double *sens_a, const uint8_t *keep,
                      const uint8_t *x2) {
    for (size_t i = 0; i < n; i++) {
        if (sens_a[i] < 0.0) continue;
        char name[160], alone[64] = "";
        linear_name(all[i], name, sizeof name);
        if (sens) snprintf(alone, sizeof alone, "sensitivity %.3g (RMS logit change, alone), ", sens[i]);
        sk_model_log(log, log_ud, 0, "int8: %s: %ssingle-pass activations change the logits by "
             "%.3g (RMS)%s%s", name, alone, sens_a[i],
             keep && keep[i] ? ": among the most sensitive, kept in f32" : "",
             x2[i] ? ": two-pass activations under --q8-fast" : "");
    }
}

int sk_model_row_choice(sk_model *m, sk_calib_inputs *in, skycmd_log_fn log, void *log_ud,
                        sk_share prog, sk_err *e) {
    if (!m || !m->row_choice_pending) return sk_share_report(prog, 1.0, e);
    size_t n, n_enc, n_x2 = 0;
    sk_linear **all = model_linears(m, &n, &n_enc);
    if (!all) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    int8_prog pr = {prog, 0.0, 0.0, 0, 0};
    const size_t cap = n ? n : 1;
    double *sens_a = sk_malloc_array(cap, sizeof(double));
    uint8_t *x2 = calloc(cap, 1);
    int rc = sens_a && x2 ? probe_rows(m, in, all, n, sens_a, x2, &n_x2, &pr, e)
                          : sk_fail(e, SKYCMD_E_NOMEM, "out of memory for the probe");
    if (rc == SKYCMD_E_CANCELLED) sk_err_prefix(e, "int8 sensitivity probe");
    if (!rc) {
        for (size_t i = 0; i < n; i++)
            if (all[i]->q8) all[i]->q8->fast_x2 = x2[i];
        m->row_choice_pending = 0;
        log_probe(log, log_ud, all, n, NULL, sens_a, NULL, x2);
        sk_model_log(log, log_ud, 1, "int8 rows: %zu of the matrices keep two-pass activations "
             "under --q8-fast (a probe of the six sequences, one int8 pass per matrix)", n_x2);
        rc = sk_share_report(prog, 1.0, e);
    }
    free(sens_a);
    free(x2);
    free(all);
    return rc;
}

/* Row-scaled int8 also takes the decision head's block Linears (a tenth of a base
 * question's products, and in f32 four times the cost of int8: ONNX Runtime's dynamic int8
 * quantizes them too), except the last block's kv (the folded attention reads its float
 * panels in place, load.c) and the scorer (cls, cls_out: marker rows only). Index i is
 * model_linears' order: per head block q, kv, out, up, down. */
static int row_head_linear(const sk_model *m, size_t i, size_t n_enc) {
    if (i < n_enc || i >= n_enc + 5 * (size_t)m->hp.n_head_layers) return 0;
    const size_t j = (i - n_enc) / 5, which = (i - n_enc) % 5;
    return !(which == 1 && j + 1 == m->hp.n_head_layers);
}

/* Quantizing site L at load (SK_COST_* units): the scale search, or one scale per row, and
 * GPTQ rounding where the calibration took its second moments. */
static double quant_cost(const sk_linear *L, int weights_mode, int gptq) {
    const double k = L->p.n_in, elems = k * (double)L->p.n_out;
    return (weights_mode == SKYCMD_WEIGHTS_Q8_ROW ? SK_COST_Q8_ROW_ELEM : SK_COST_Q8_ELEM) * elems +
           (gptq ? SK_COST_MAC * (elems * k + k * k * k / 3.0) : 0.0);
}

/* The guesses' tokens: about the same for every model (the calibration's prompts). */
static const double k_calib_tokens = SK_CALIB_N_SEQS * SK_GUESS_CALIB_SEQ_TOKENS;
static const double k_probe_tokens = SK_N_PROBE * SK_GUESS_CALIB_SEQ_TOKENS;

double sk_int8_cost_guess(const sk_model *m, int weights_mode) {
    const double d = m->hp.n_embd, ff = m->hp.n_ff, L = m->hp.n_layer;
    const double enc = L * (3 * d * d + d * d + 2 * ff * d + ff * d), macs = model_macs(m);
    switch (weights_mode) {
    case SKYCMD_WEIGHTS_Q8:
        /* calibration, the probe (a reference pass, and per encoder matrix a quantization
         * and two passes), the quantization */
        return SK_COST_FWD * macs * k_calib_tokens + (8.0 * L + 1.0) * SK_COST_FWD * macs * k_probe_tokens +
               2.0 * SK_COST_Q8_ELEM * enc;
    case SKYCMD_WEIGHTS_Q8_ROW:   /* calibration, the quantization */
        return SK_COST_FWD * macs * k_calib_tokens + SK_COST_Q8_ROW_ELEM * macs;
    default:
        return SK_COST_Q8_ELEM * enc;
    }
}

double sk_int8_row_choice_cost_guess(const sk_model *m) {
    /* its sites: the encoder's four matrices a layer, the head blocks' five but the last kv */
    const double L = m->hp.n_layer, H = m->hp.n_head_layers;
    return probe_rows_cost(m, k_probe_tokens, (size_t)(4.0 * L + (H > 0 ? 5.0 * H - 1.0 : 0.0)));
}

int sk_model_to_int8(sk_model *m, const sk_gguf *g, int weights_mode, sk_calib_inputs *in,
                     skycmd_log_fn log, void *log_ud, sk_share prog, sk_err *e) {
    const sk_calib_source *calib = in->src;
    size_t n, n_enc, n_quant = 0, n_file = 0;
    sk_linear **all = model_linears(m, &n, &n_enc);
    const size_t cap = all ? n : 1;
    uint8_t *to_q8 = calloc(cap, 1);
    if (!all || !to_q8) {
        free(all);
        free(to_q8);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    }
    /* A file that stores a calibrated int8 model (int8_store.h): its Q8_0 matrices are the
     * calibration's, with their outlier columns in keys, and the matrices it left F16/F32
     * were kept on purpose; --q8 then quantizes nothing here. A stored row-scaled model
     * (--q8-row's) does the same for --q8-row, except the head's q and kv (rows of one
     * tensor), quantized here per row with the columns its keys give: no calibration. */
    int stored = 0, stored_rows = 0;
    if (weights_mode == SKYCMD_WEIGHTS_Q8 || weights_mode == SKYCMD_WEIGHTS_Q8_ROW) {
        stored = sk_int8_store_version(g, e);
        if (stored > 0) stored_rows = sk_int8_store_row_scaled(g, e);
        if (stored < 0 || stored_rows < 0) {
            free(all);
            free(to_q8);
            return e ? e->status : SKYCMD_E_FORMAT;
        }
        /* --q8-row on a stored block-scaled model requantizes its matrices per row, as on
         * any Q8_0 file */
        if (weights_mode == SKYCMD_WEIGHTS_Q8_ROW && !stored_rows) stored = 0;
    }
    /* Which matrices go int8: Q8_0 in the file (already int8, packed at load), or what the
     * converter's policy would make Q8_0 (encoder matrices whose rows split into 32; the decision head stays f32). */
    for (size_t i = 0; i < n; i++) {
        const sk_linear *L = all[i];
        char name[160];
        snprintf(name, sizeof name, "%.*s", (int)(L->src->name.len < 150 ? L->src->name.len : 150),
                 L->src->name.ptr);
        if (L->src->type == SK_GGML_Q8_0 && (weights_mode != SKYCMD_WEIGHTS_Q8_ROW || stored)) {
            to_q8[i] = 2;
            n_file++;
        } else if (stored) {
            if (weights_mode == SKYCMD_WEIGHTS_Q8_ROW && row_head_linear(m, i, n_enc) &&
                linear_is_part(L) && L->p.n_in % SK_QK8_0 == 0) {
                to_q8[i] = 1;
                n_quant++;
            }
        } else if (sk_quant_policy(name, i >= n_enc, 2, L->p.n_in, SK_GGML_Q8_0, SK_GGML_F32) ==
                   SK_GGML_Q8_0 || (weights_mode == SKYCMD_WEIGHTS_Q8_ROW && row_head_linear(m, i, n_enc) &&
                    L->p.n_in % SK_QK8_0 == 0)) {
            to_q8[i] = 1;
            n_quant++;
        }
    }
    sk_calib c;
    memset(&c, 0, sizeof c);
    /* The calibration and the probe run forward passes, on the threads the caller lends
     * (their results are bitwise those of one thread: forward.c), so a stored int8 model
     * is the same file whatever the thread count. */
    sk_calib_inputs *cs = in;
    int rc = SKYCMD_OK;
    size_t n_gptq = 0, n_keep = 0, n_x2 = 0;
    uint8_t *keep = calloc(cap, 1), *fast_x2 = calloc(cap, 1), *gptq = calloc(cap, 1);
    double *sens = sk_malloc_array(cap, sizeof(double)), *sens_a = sk_malloc_array(cap, sizeof(double));
    if (!keep || !sens || !fast_x2 || !sens_a || !gptq) rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    /* GPTQ rounding for the matrices quantized here, with --q8 (calibrated block scales) */
    if (!rc && weights_mode == SKYCMD_WEIGHTS_Q8 && n_quant > 0) n_gptq = pick_gptq(all, n, to_q8, gptq);
    /* Progress: the calibration, the sensitivity probe (--q8) and the quantization, split by
     * their estimated cost (the calibration sequences are built first to count their
     * tokens; without a callback they are built where they were always built). */
    const int calibrated = (weights_mode == SKYCMD_WEIGHTS_Q8 || weights_mode == SKYCMD_WEIGHTS_Q8_ROW) &&
                           n_quant > 0 && !stored;
    /* the row probe (single-pass activations' choice), now or when a session first asks
     * for single-pass activations (sk_model_row_choice) */
    const int row_probe = weights_mode == SKYCMD_WEIGHTS_Q8_ROW && calibrated;
    int8_prog pr = {SK_SHARE_NONE, 0.0, 0.0, 0, 0};
    sk_share part_cal = SK_SHARE_NONE, part_probe = SK_SHARE_NONE, part_quant = SK_SHARE_NONE;
    if (!rc && sk_share_active(prog)) {
        double c_cal = 0.0, c_probe = 0.0, c_quant = 0.0;
        if (calibrated) {
            rc = calib_seqs_get(m, cs, e);
            if (rc) sk_err_prefix(e, "calibration prompts");
        }
        if (!rc && calibrated) {
            size_t tokens = 0;
            double xtx = 0.0;
            for (size_t i = 0; i < SK_CALIB_N_SEQS; i++) tokens += cs->v[i].n;
            for (size_t i = 0; i < n; i++)
                if (gptq[i]) xtx += (double)all[i]->p.n_in * (double)all[i]->p.n_in / 2.0;
            c_cal = (SK_COST_FWD * model_macs(m) + SK_COST_MAC * xtx) * (double)tokens;
            if (vocab_site(m, all, gptq)) c_cal += vocab_cost(m, all[0]->p.n_in);
            if (weights_mode == SKYCMD_WEIGHTS_Q8) c_probe = probe_cost(m, prompts_tokens(cs->v, 1), all, n, to_q8);
        }
        for (size_t i = 0; i < n; i++)
            if (to_q8[i] == 1) c_quant += quant_cost(all[i], weights_mode, gptq[i]);
        const double sum = c_cal + c_probe + c_quant > 0.0 ? c_cal + c_probe + c_quant : 1.0;
        part_cal = sk_share_part(prog, 0.0, c_cal / sum);
        part_probe = sk_share_part(prog, c_cal / sum, (c_cal + c_probe) / sum);
        part_quant = sk_share_part(prog, (c_cal + c_probe) / sum, 1.0);
    }
    if (!rc && weights_mode == SKYCMD_WEIGHTS_Q8 && n_quant > 0) {
        pr.part = part_cal;
        rc = calibrate(m, cs, all, n, gptq, &c, &pr, e);
        if (rc == SKYCMD_E_CANCELLED) sk_err_prefix(e, "int8 calibration");
        if (!rc)
            sk_model_log(log, log_ud, 1, "int8: calibrated %zu matrix products on %d templated sequences "
                 "(%zu with second moments for GPTQ rounding)", n, SK_CALIB_N_SEQS, n_gptq);
        pr.part = part_probe;
        if (!rc) rc = probe_sites(m, cs, all, n, to_q8, &c, keep, sens, &n_keep, fast_x2, sens_a, &n_x2, &pr, e);
        if (rc == SKYCMD_E_CANCELLED) sk_err_prefix(e, "int8 sensitivity probe");
        if (!rc) log_probe(log, log_ud, all, n, sens, sens_a, keep, fast_x2);
    }
    /* Row-scaled int8: the calibration's max |x| per channel picks the outlier columns (a
     * massive channel would otherwise set the scale of every activation row); no GPTQ (in
     * row scales it raised large's error at 128 tokens 2x: docs/quantization.md §5) and no
     * sensitivity probe. */
    if (!rc && weights_mode == SKYCMD_WEIGHTS_Q8_ROW && n_quant > 0 && !stored) {
        pr.part = part_cal;
        rc = calibrate(m, cs, all, n, gptq, &c, &pr, e);
        if (rc == SKYCMD_E_CANCELLED) sk_err_prefix(e, "int8 calibration");
        if (!rc)
            sk_model_log(log, log_ud, 1, "int8 rows: calibrated %zu matrix products on %d templated "
                 "sequences", n, SK_CALIB_N_SEQS);
    }
    float *w = NULL;
    size_t w_cap = 0, total_bytes = 0, total_pbytes = 0, total_outl = 0, n_pairs = 0;
    /* progress: the matrices quantized here, by their cost (the ones kept in f32 now known) */
    double q_cost = 0.0, q_done = 0.0;
    for (size_t i = 0; i < n; i++)
        if (to_q8[i] == 1 && !keep[i]) q_cost += quant_cost(all[i], weights_mode, gptq[i]);
    if (!rc) rc = sk_share_report(part_quant, 0.0, e);
    for (size_t i = 0; i < n && !rc; i++) {
        if (!to_q8[i] || keep[i]) continue;
        sk_linear *L = all[i];
        const size_t n_in = L->p.n_in, n_out = L->p.n_out;
        char name[160];
        snprintf(name, sizeof name, "%.*s", (int)(L->src->name.len < 150 ? L->src->name.len : 150),
                 L->src->name.ptr);
        if (L->q8) {   /* packed from the file's Q8_0 bytes at load */
            if (stored && !linear_is_part(L)) {
                uint32_t *outl;
                float *w_outl;
                size_t no;
                int two_pass;
                rc = sk_int8_store_get(g, name, n_out, n_in, &outl, &no, &w_outl, &two_pass, e);
                if (!rc && sk_q8_set_outliers(L->q8, outl, no, w_outl))
                    rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory reading the int8 keys of %s", name);
                free(outl);
                free(w_outl);
                if (rc) break;
                L->q8->fast_x2 = two_pass;
                total_outl += no;
                n_x2 += two_pass != 0;
            }
            /* a stored row-scaled model's matrices: row sums from the blocks, and where the
             * tiles run the products, their K = 64 order */
            if (stored_rows && weights_mode == SKYCMD_WEIGHTS_Q8_ROW) {
                if ((rc = sk_q8_rows_from_blocks(L->q8, name, e))) break;
                if (sk_q8_uses_tiles()) n_pairs += (size_t)sk_q8_relayout_pairs(&L->q8->w.p, L->q8->panels);
            }
            total_bytes += L->q8_bytes;
            total_pbytes += L->q8_pbytes;
            sk_model_log(log, log_ud, 0, "int8: %s rows %zu..%zu: Q8_0 from the file; relayout "
                 "ROW_MAJOR -> INPUT_BLOCK_MAJOR (kernel order) %zu bytes, then into %d-output "
                 "panels %zu bytes", name, L->row0, L->row0 + n_out, L->q8_bytes, SK_Q8_PANEL,
                 L->q8_pbytes);
            continue;
        }
        if ((rc = sk_q8_require_out_in(name, n_out, n_in, e))) break;
        sk_q8_owned *q = calloc(1, sizeof *q);
        if (!q) {
            rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
            break;
        }
        size_t bytes = 0, pbytes = 0;
        if (n_out * n_in > w_cap) {
            free(w);
            w_cap = n_out * n_in;
            w = sk_malloc_array(w_cap, sizeof(float));
            if (!w) {
                w_cap = 0;
                free(q);
                rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory quantizing %s", name);
                break;
            }
        }
        /* from the panels: the loader has given the file's bytes of the matrix back */
        if (unpack_linear(L, w) != 0)
            rc = sk_fail(e, SKYCMD_E_INTERNAL, "tensor %s: no f32 or 16-bit panels to widen", name);
        if (!rc) {
            float *ms = NULL;
            if (c.sq && c.rows[i] > 0 && (ms = sk_malloc_array(n_in, sizeof(float))))
                for (size_t j = 0; j < n_in; j++) ms[j] = (float)(c.sq[i][j] / (double)c.rows[i]);
            if (weights_mode == SKYCMD_WEIGHTS_Q8_ROW && stored) {
                /* a head part of a stored row-scaled model: its keys name the columns */
                char part[256];
                uint32_t *outl = NULL;
                size_t no = 0;
                int two_pass;
                sk_int8_store_part_name(part, sizeof part, L->src->name, L->row0);
                rc = sk_int8_store_get(g, part, n_out, n_in, &outl, &no, NULL, &two_pass, e);
                if (!rc && two_pass) {
                    fast_x2[i] = 1;
                    n_x2++;
                }
                if (!rc)
                    rc = sk_q8_build_rows_outl(w, n_out, n_in, L->bias, NULL, outl, no, 0, name, q,
                                               &bytes, &pbytes, e);
                free(outl);
            } else if (weights_mode == SKYCMD_WEIGHTS_Q8_ROW)
                rc = sk_q8_build_rows_outl(w, n_out, n_in, L->bias, c.mx ? c.mx[i] : NULL, NULL, 0,
                                           calib && calib->keep_rowmajor, name, q, &bytes, &pbytes, e);
            else
                rc = sk_q8_build(w, n_out, n_in, L->bias, c.mx ? c.mx[i] : NULL, ms,
                                 c.xtx ? c.xtx[i] : NULL, calib && calib->keep_rowmajor, name, q,
                                 &bytes, &pbytes, e);
            free(ms);
        }
        if (rc) {
            free(q);
            break;
        }
        /* where the tiles run the products, row-scaled panels take their K = 64 order */
        if (q->w.p.row_sum128 && sk_q8_uses_tiles())
            n_pairs += (size_t)sk_q8_relayout_pairs(&q->w.p, q->panels);
        q->fast_x2 = fast_x2 ? fast_x2[i] : 0;
        L->q8 = q;
        free(L->buf);
        L->buf = NULL;
        L->p.data = NULL;
        total_bytes += bytes;
        total_pbytes += pbytes;
        total_outl += q->w.n_outl;
        sk_model_log(log, log_ud, 0, "int8: %s rows %zu..%zu: %s, %zu outlier columns; relayout "
             "ROW_MAJOR -> INPUT_BLOCK_MAJOR (kernel order) %zu bytes, then into %d-output "
             "panels %zu bytes", name, L->row0, L->row0 + n_out,
             weights_mode == SKYCMD_WEIGHTS_Q8_ROW ? "int8 rows (one scale each) quantized at load" : "Q8_0 quantized at load",
             q->w.n_outl, bytes, SK_Q8_PANEL, pbytes);
        if (weights_mode == SKYCMD_WEIGHTS_Q8)
            sk_model_log(log, log_ud, 0, "int8: %s rounding: %s", name,
                 q->gptq ? "GPTQ" : "scale search");
        q_done += quant_cost(L, weights_mode, gptq[i]);
        if ((rc = sk_share_report(part_quant, q_cost > 0.0 ? q_done / q_cost : 1.0, e)))
            sk_err_prefix(e, "int8 quantization");
    }
    if (!rc) rc = sk_share_report(part_quant, 1.0, e);
    /* the row probe runs on the model as it runs, once loaded (sk_model_row_choice) */
    if (!rc && row_probe) m->row_choice_pending = 1;
    char x2_note[96];
    if (m->row_choice_pending)
        snprintf(x2_note, sizeof x2_note, "two-pass activations under --q8-fast chosen by a probe");
    else
        snprintf(x2_note, sizeof x2_note, "%zu with two-pass activations under --q8-fast", n_x2);
    if (!rc)
        sk_model_log(log, log_ud, 1, "int8: %zu matrices Q8_0 (%zu quantized at load%s, %zu from the "
             "file; %zu kept in f32 by sensitivity, %s), %zu outlier columns in f32; prepacked once: ROW_MAJOR -> INPUT_BLOCK_MAJOR "
             "%zu bytes, panels %zu bytes (%zu in the tiles' K = 64 order); kernel %s", n_quant + n_file - n_keep, n_quant - n_keep,
             stored ? " (the file stores its calibration)" :
             weights_mode == SKYCMD_WEIGHTS_Q8 ? " with calibration" : weights_mode == SKYCMD_WEIGHTS_Q8_ROW ? " per row, calibrated outlier columns" : " without calibration",
             n_file, n_keep, x2_note, total_outl, total_bytes, total_pbytes, n_pairs, sk_q8_kernel_name());
    free(w);
    free(keep);
    free(gptq);
    free(sens);
    free(fast_x2);
    free(sens_a);
    sk_calib_free(&c);
    free(all);
    free(to_q8);
    return rc;
}

int sk_model_int8_each(const sk_model *m, sk_int8_matrix_fn fn, void *ud) {
    size_t n, n_enc;
    sk_linear **all = model_linears((sk_model *)m, &n, &n_enc);
    if (!all) return SKYCMD_E_NOMEM;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const sk_linear *L = all[i];
        const sk_q8_owned *q = L->q8;
        if (!q || !q->rowmajor) continue;
        rc = fn(ud, L->src, L->row0, q->rowmajor, q->w.p.n_out, q->w.p.n_in, q->w.outl,
                q->w.n_outl, q->w.w_outl, q->fast_x2);
    }
    free(all);
    return rc;
}
