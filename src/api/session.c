/* session.c - skycmd_session and the decide calls: build each question's Laya sequence,
 * run the sequences through the model in batches (each gets the logits it would get alone),
 * turn the marker logits into answers and the response. skycmd_decide_batch runs the
 * questions of several requests through the same batches. SKYCMD_OPT_THREADS gives the
 * session a compute-thread pool (identical logits for any count; docs/threads.md).
 * One session per thread; its buffers, and a small cache of tokenized question and option
 * texts, are reused across calls (see handles.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "handles.h"

static void tokcache_free(struct sk_tok_entry *c);

static int session_ok(const skycmd_session *s) { return s && s->tag == SK_TAG_SESSION; }

static int set_err(skycmd_session *s, const sk_err *e, int rc) {
    if (rc == SKYCMD_OK) s->errmsg[0] = '\0';
    else snprintf(s->errmsg, sizeof s->errmsg, "%s", e && e->msg[0] ? e->msg : skycmd_strerror(rc));
    return rc;
}

int skycmd_session_new(skycmd_model *model, skycmd_session **out) {
    if (!out) return SKYCMD_E_INVALID_ARGUMENT;
    *out = NULL;
    if (!model || model->tag != SK_TAG_MODEL) return SKYCMD_E_MISUSE;
    skycmd_session *s = calloc(1, sizeof *s);
    if (!s) return SKYCMD_E_NOMEM;
    s->scratch = sk_scratch_new(model->m);
    if (!s->scratch) {
        free(s);
        return SKYCMD_E_NOMEM;
    }
    s->tag = SK_TAG_SESSION;
    s->model = model;
    s->threads = 1;
    s->activations = SKYCMD_ACT_Q8X2;
    atomic_fetch_add(&model->sessions, 1);
    *out = s;
    return SKYCMD_OK;
}

void skycmd_session_free(skycmd_session *s) {
    if (!session_ok(s)) return;
    sk_scratch_free(s->scratch);
    sk_pool_free(s->pool);
    sk_prompt_ws_free(&s->ws);
    sk_i32v_free(&s->state_ids);
    sk_i32v_free(&s->ids);
    sk_i32v_free(&s->markers);
    sk_seqbatch_free(&s->batch);
    free(s->p_off);
    free(s->q_off);
    free(s->ntok);
    free(s->rbatch);
    sk_ids_free(&s->tokbuf);
    tokcache_free(s->tokcache);
    sk_long_ws_free(s->lws);
    free(s->probs);
    free(s->answers);
    atomic_fetch_sub(&s->model->sessions, 1);
    s->tag = SK_TAG_DEAD;
    free(s);
}

int skycmd_session_set_int(skycmd_session *s, int option, int64_t value) {
    if (!session_ok(s)) return SKYCMD_E_MISUSE;
    int64_t lo, hi;
    if (skycmd_option_bounds(option, &lo, &hi) != SKYCMD_OK ||
        (option != SKYCMD_OPT_THREADS && option != SKYCMD_OPT_ACTIVATIONS &&
         option != SKYCMD_OPT_MAX_LEN && option != SKYCMD_OPT_HEAD_MAX_LEN &&
         !sk_long_is_option(option))) {
        snprintf(s->errmsg, sizeof s->errmsg, "option %d is not a session option", option);
        return SKYCMD_E_INVALID_ARGUMENT;
    }
    if (value < lo || value > hi) {
        snprintf(s->errmsg, sizeof s->errmsg, "option %d: %lld is outside [%lld, %lld]", option,
                 (long long)value, (long long)lo, (long long)hi);
        return SKYCMD_E_INVALID_ARGUMENT;
    }
    if (sk_long_is_option(option)) {
        if (sk_long_set_option(s, option, value)) return SKYCMD_E_INVALID_ARGUMENT;
    } else if (option == SKYCMD_OPT_MAX_LEN || option == SKYCMD_OPT_HEAD_MAX_LEN) {
        /* the budgets of the calls that follow (laya's per-call max_len / head_max_len) */
        if (option == SKYCMD_OPT_MAX_LEN) s->max_len = (size_t)value;
        else s->head_max_len = (size_t)value;
    } else if (option == SKYCMD_OPT_THREADS) {
        /* 0 = one thread per online core; the logits are identical for any count */
        long n = value ? (long)value : sysconf(_SC_NPROCESSORS_ONLN);
        if (n < 1) n = 1;
        if (s->pool && n <= sk_pool_threads(s->pool)) {
            /* within the team already started: only the limit changes, no thread stops or
             * starts (cheap enough to set per request, as `skycmd serve` does) */
            sk_pool_set_limit(s->pool, (int)n);
            sk_pool_wake(s->pool);  /* a decide usually follows: have the team spinning */
            s->threads = value;
            s->errmsg[0] = '\0';
            return SKYCMD_OK;
        }
        sk_pool *pool = NULL;
        if (n > 1 && !(pool = sk_pool_new((int)n))) {
            snprintf(s->errmsg, sizeof s->errmsg, "cannot start %ld compute threads", n);
            return SKYCMD_E_NOMEM;
        }
        sk_scratch_set_pool(s->scratch, pool);
        sk_pool_free(s->pool);
        s->pool = pool;
        s->threads = value;
    } else {
        s->activations = value;
        sk_scratch_set_activations(s->scratch, (int)value);
    }
    s->errmsg[0] = '\0';
    return SKYCMD_OK;
}

int skycmd_session_set_string(skycmd_session *s, int option, const char *value) {
    if (!session_ok(s)) return SKYCMD_E_MISUSE;
    if (option != SKYCMD_OPT_MIN_CONFIDENCE) {
        snprintf(s->errmsg, sizeof s->errmsg, "option %d is not a string session option", option);
        return SKYCMD_E_INVALID_ARGUMENT;
    }
    sk_err e = {0};
    sk_gate g;
    int rc = sk_gate_from_text(value, &g, &e);
    if (rc) return set_err(s, &e, rc == SKYCMD_E_REQUEST ? SKYCMD_E_INVALID_ARGUMENT : rc);
    s->gate = g;
    return set_err(s, &e, SKYCMD_OK);
}

const char *skycmd_session_errmsg(const skycmd_session *s) {
    if (!session_ok(s)) return "invalid skycmd_session handle";
    return s->errmsg;
}

/* A small direct-mapped cache of tokenized texts: a client usually asks the same questions
 * with the same options again and again (only the state changes), so their pieces are
 * tokenized once per session. Keyed by the exact bytes (hash, then a full compare); texts
 * longer than SK_TOKCACHE_TEXT are not kept, so the cache stays bounded. Tokenization is a
 * pure function of the text (the tokenizer is immutable), so a hit gives the same ids. */
#define SK_TOKCACHE_SLOTS 64
#define SK_TOKCACHE_TEXT 1024

struct sk_tok_entry {
    uint64_t h;
    int valid;
    char *text;
    size_t len, text_cap;
    int32_t *ids;
    size_t n, ids_cap;
};

static void tokcache_free(struct sk_tok_entry *c) {
    if (!c) return;
    for (size_t i = 0; i < SK_TOKCACHE_SLOTS; i++) {
        free(c[i].text);
        free(c[i].ids);
    }
    free(c);
}

static uint64_t text_hash(const char *t, size_t n) {
    uint64_t h = 1469598103934665603u;  /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)t[i]) * 1099511628211u;
    return h ^ n;
}

/* Remember ids for text; on allocation failure the slot is simply left empty. */
static void tokcache_put(struct sk_tok_entry *c, uint64_t h, const char *text, size_t len,
                         const int32_t *ids, size_t n) {
    c->valid = 0;
    if (len > c->text_cap) {
        char *t = malloc(len ? len : 1);
        if (!t) return;
        free(c->text);
        c->text = t;
        c->text_cap = len;
    }
    if (n > c->ids_cap) {
        int32_t *v = sk_malloc_array(n, sizeof *v);
        if (!v) return;
        free(c->ids);
        c->ids = v;
        c->ids_cap = n;
    }
    if (len) memcpy(c->text, text, len);
    if (n) memcpy(c->ids, ids, n * sizeof *ids);
    c->h = h;
    c->len = len;
    c->n = n;
    c->valid = 1;
}

/* The prompt builder's tokenizer callback: the model's tokenizer (through the cache) into a
 * reused buffer. */
int sk_session_encode_cb(void *ctx, const char *text, size_t len, sk_i32v *out, sk_err *e) {
    skycmd_session *s = ctx;
    struct sk_tok_entry *c = NULL;
    uint64_t h = 0;
    if (len <= SK_TOKCACHE_TEXT) {
        if (!s->tokcache) s->tokcache = calloc(SK_TOKCACHE_SLOTS, sizeof *s->tokcache);
        if (s->tokcache) {
            h = text_hash(text, len);
            c = &s->tokcache[h % SK_TOKCACHE_SLOTS];
            /* (len 0: an empty state's text may be NULL, and memcmp must not see NULL) */
            if (c->valid && c->h == h && c->len == len && (len == 0 || memcmp(c->text, text, len) == 0)) {
                if (sk_i32v_append(out, c->ids, c->n))
                    return sk_fail(e, SKYCMD_E_NOMEM, "out of memory tokenizing");
                return 0;
            }
        }
    }
    s->tokbuf.n = 0;
    int rc = sk_tokenizer_encode(s->model->tok, text, len, &s->tokbuf, e);
    if (rc) return rc;
    if (c) tokcache_put(c, h, text, len, s->tokbuf.ids, s->tokbuf.n);
    if (sk_i32v_append(out, s->tokbuf.ids, s->tokbuf.n))
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory tokenizing");
    return 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need) n *= 2;
    void *q = sk_malloc_array(n, elem);
    if (!q) return SKYCMD_E_NOMEM;
    free(*p);
    *p = q;
    *cap = n;
    return 0;
}

/* Questions are run in batches (seqbatch.h); several requests (skycmd_decide_batch) share
 * the same batches. */
static int question_fail(sk_err *e, size_t ri, size_t nr, const sk_rquestion *q, int rc) {
    int n = sk_question_id_len(q->id);
    sk_err_prefix(e, "questions.%.*s", n, q->id.s);
    if (nr > 1) sk_err_prefix(e, "request %zu", ri);
    return rc;
}

/* Run the batched sequences and turn their logits into answers. */
static int flush_batch(skycmd_session *s, const sk_request *const *rs, size_t nr, sk_err *e) {
    const skycmd_model *m = s->model;
    sk_seqbatch *b = &s->batch;
    int rc = sk_seqbatch_run(b, m->m, s->scratch, e);
    if (rc) {
        const struct sk_seq_meta *mt = &s->seq_meta[0];
        return question_fail(e, mt->r, nr, &rs[mt->r]->q[mt->q], rc);
    }
    for (size_t k = 0; k < b->n; k++) {
        const struct sk_seq_meta *mt = &s->seq_meta[k];
        const sk_rquestion *q = &rs[mt->r]->q[mt->q];
        double *p = s->probs + s->p_off[mt->g];
        if (s->logit_sink)
            s->logit_sink(s->logit_sink_ud, mt->g, q->type, b->seqs[k].logits, b->seqs[k].n_markers);
        double T = sk_temp_for(&m->temps, q->type, b->seqs[k].n_markers);
        sk_softmax(b->seqs[k].logits, b->seqs[k].n_markers, T, p);
        if (q->order) { /* slot order back to option order, as laya's unpermute_probs */
            double slot[SK_REQUEST_MAX_OPTIONS];
            memcpy(slot, p, q->n_opts * sizeof *p);
            for (size_t sl = 0; sl < q->n_opts; sl++) p[q->order[sl]] = slot[sl];
        }
        if ((rc = sk_answer_from_probs(q->type, p, q->n_opts, &s->answers[mt->g], e)))
            return question_fail(e, mt->r, nr, q, rc);
    }
    sk_seqbatch_clear(b);
    return 0;
}

/* Answer every question of the nr requests rs; request i's answers start at
 * s->answers[s->q_off[i]] and its input tokens land in s->ntok[i]. */
static int decide_multi(skycmd_session *s, const sk_request *const *rs, size_t nr, sk_err *e) {
    const skycmd_model *m = s->model;
    int rc;
    size_t total_opts = 0, total_q = 0;
    for (size_t ri = 0; ri < nr; ri++) {
        const sk_request *r = rs[ri];
        total_q += r->nq;
        for (size_t i = 0; i < r->nq; i++) total_opts += r->q[i].n_opts;
    }
    size_t nq1 = total_q ? total_q : 1, nr1 = nr ? nr : 1;
    if (grow((void **)&s->probs, &s->probs_cap, total_opts ? total_opts : 1, sizeof(double)) ||
        grow((void **)&s->answers, &s->answers_cap, nq1, sizeof(sk_answer)) ||
        grow((void **)&s->p_off, &s->p_off_cap, nq1, sizeof(size_t)) ||
        grow((void **)&s->q_off, &s->q_off_cap, nr1, sizeof(size_t)) ||
        grow((void **)&s->ntok, &s->ntok_cap, nr1, sizeof(int64_t)))
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory answering the request");
    size_t off = 0, g = 0;
    for (size_t ri = 0; ri < nr; ri++) {
        s->q_off[ri] = g;
        for (size_t i = 0; i < rs[ri]->nq; i++, g++) {
            s->p_off[g] = off;
            off += rs[ri]->q[i].n_opts;
        }
    }
    sk_prompt_tok pt = {sk_session_encode_cb, s, m->cls, m->sep, m->mask, m->mask_text};
    /* laya's per-call overrides (Agent.system_one(max_len=, head_max_len=)) */
    const size_t max_len = sk_session_max_len(s);
    const size_t head_max_len = sk_session_head_max_len(s);
    int cut_safe = sk_tokenizer_space_cut_safe(m->tok);
    sk_seqbatch_clear(&s->batch);
    g = 0;
    for (size_t ri = 0; ri < nr; ri++) {
        const sk_request *r = rs[ri];
        /* A sequence holds at most max_len tokens: the state is tokenized only as far as
         * that can reach (identical ids; the cost no longer grows with the state's size). */
        if ((rc = sk_prompt_state_ids_bounded(&pt, cut_safe, r->state.s, r->state.n, r->state_is_list,
                                              max_len, &s->ws, &s->state_ids, e))) {
            sk_err_prefix(e, "state");
            if (nr > 1) sk_err_prefix(e, "request %zu", ri);
            return rc;
        }
        int64_t ntok = 0;
        for (size_t i = 0; i < r->nq; i++, g++) {
            const sk_rquestion *q = &r->q[i];
            /* with an option_order the options are laid out in slot order */
            const sk_jstr *texts = q->order ? q->slot_text : &q->opts[0].text;
            const size_t stride = q->order ? sizeof(sk_jstr) : sizeof(sk_roption);
            rc = sk_prompt_build(&pt, sk_qtype_names[q->type], q->ins.s, q->ins.n,
                                 texts, stride, q->n_opts, s->state_ids.v,
                                 s->state_ids.n, r->state_is_list, max_len, head_max_len,
                                 &s->ws, &s->ids, &s->markers, e);
            if (rc) return question_fail(e, ri, nr, q, rc);
            if (!sk_seqbatch_fits(&s->batch, s->ids.n) && (rc = flush_batch(s, rs, nr, e))) return rc;
            s->seq_meta[s->batch.n] = (struct sk_seq_meta){ri, i, g};
            if (sk_seqbatch_add(&s->batch, m->m, &s->ids, &s->markers, s->ws.head_len, q->type))
                return sk_fail(e, SKYCMD_E_NOMEM, "out of memory answering the request");
            ntok += (int64_t)s->ids.n;
        }
        s->ntok[ri] = ntok;
    }
    return flush_batch(s, rs, nr, e);
}

/* The response to request ri of the last decide_multi. */
static int new_response(skycmd_session *s, const sk_request *r, size_t ri, skycmd_response **out,
                        sk_err *e) {
    int rc = sk_response_new(r, s->answers + s->q_off[ri], s->model->name, s->ntok[ri], out, e);
    /* the abstention gate (laya serve: the body's min_confidence over the deployment's) */
    if (!rc) sk_answers_gate((*out)->a, (*out)->n, r->gate.set ? &r->gate : &s->gate);
    return rc;
}

static int check_request(const skycmd_request *req, size_t i, size_t n, sk_err *e) {
    char at[32] = "";
    if (n > 1) snprintf(at, sizeof at, " %zu", i);
    if (!req || req->tag != SK_TAG_REQUEST)
        return sk_fail(e, SKYCMD_E_MISUSE, "decide: invalid skycmd_request handle%s", at);
    if (req->status)
        return sk_fail(e, SKYCMD_E_MISUSE, "decide: the request%s did not parse: %s", at,
                       req->errmsg);
    return 0;
}

int skycmd_decide(skycmd_session *s, const skycmd_request *req, skycmd_response **out) {
    if (out) *out = NULL;
    if (!session_ok(s)) return SKYCMD_E_MISUSE;
    sk_err e = {0};
    if (!out) return set_err(s, &e, sk_fail(&e, SKYCMD_E_INVALID_ARGUMENT, "decide: out is NULL"));
    int rc = check_request(req, 0, 1, &e);
    if (rc) return set_err(s, &e, rc);
    const sk_request *r = &req->r;
    if (sk_long_wanted(s, r)) return set_err(s, &e, sk_long_decide(s, r, out, &e));
    rc = decide_multi(s, &r, 1, &e);
    if (!rc) rc = new_response(s, r, 0, out, &e);
    return set_err(s, &e, rc);
}

int skycmd_decide_batch(skycmd_session *s, const skycmd_request *const *reqs, size_t n,
                        skycmd_response **out) {
    if (out)
        for (size_t i = 0; i < n; i++) out[i] = NULL;
    if (!session_ok(s)) return SKYCMD_E_MISUSE;
    sk_err e = {0};
    if (n && (!out || !reqs))
        return set_err(s, &e, sk_fail(&e, SKYCMD_E_INVALID_ARGUMENT,
                                      "decide_batch: reqs or out is NULL"));
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) rc = check_request(reqs[i], i, n, &e);
    if (rc) return set_err(s, &e, rc);
    if (grow((void **)&s->rbatch, &s->rbatch_cap, n ? n : 1, sizeof *s->rbatch))
        return set_err(s, &e, sk_fail(&e, SKYCMD_E_NOMEM, "out of memory answering the requests"));
    int any_long = 0;
    for (size_t i = 0; i < n; i++) {
        s->rbatch[i] = &reqs[i]->r;
        any_long |= sk_long_wanted(s, s->rbatch[i]);
    }
    if (any_long) { /* long.c answers one request at a time; the others as skycmd_decide would */
        for (size_t i = 0; i < n && !rc; i++) {
            if (sk_long_wanted(s, s->rbatch[i])) {
                rc = sk_long_decide(s, s->rbatch[i], &out[i], &e);
            } else {
                rc = decide_multi(s, &s->rbatch[i], 1, &e);
                if (!rc) rc = new_response(s, s->rbatch[i], 0, &out[i], &e);
            }
            if (rc && n > 1) sk_err_prefix(&e, "request %zu", i);
        }
    } else {
        rc = decide_multi(s, s->rbatch, n, &e);
        for (size_t i = 0; i < n && !rc; i++) rc = new_response(s, s->rbatch[i], i, &out[i], &e);
    }
    if (rc)
        for (size_t i = 0; i < n; i++) {
            skycmd_response_free(out[i]);
            out[i] = NULL;
        }
    return set_err(s, &e, rc);
}

int skycmd_decide_json(skycmd_session *s, const char *request_json, size_t len,
                       char **response_json) {
    if (response_json) *response_json = NULL;
    if (!session_ok(s)) return SKYCMD_E_MISUSE;
    sk_err e = {0};
    if (!response_json)
        return set_err(s, &e, sk_fail(&e, SKYCMD_E_INVALID_ARGUMENT, "decide: response_json is NULL"));
    sk_request r;
    int rc = sk_request_parse(request_json, len, &r, &e);
    if (rc) return set_err(s, &e, rc);
    const sk_request *rp = &r;
    skycmd_response *resp = NULL;
    if (sk_long_wanted(s, rp)) {
        rc = sk_long_decide(s, rp, &resp, &e);
    } else {
        rc = decide_multi(s, &rp, 1, &e);
        if (!rc) rc = new_response(s, &r, 0, &resp, &e);
    }
    if (!rc) {
        if (skycmd_response_json(resp)) { /* the caller takes the response's text */
            *response_json = resp->json;
            resp->json = NULL;
        } else {
            rc = sk_fail(&e, SKYCMD_E_NOMEM, "out of memory writing the response");
        }
    }
    skycmd_response_free(resp);
    sk_request_free(&r);
    return set_err(s, &e, rc);
}
