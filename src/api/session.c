/* session.c - skycmd_session, its options and the decide calls. A decide call parses (or
 * takes) its requests, plans each (engine/plan.h), has the engine answer them
 * (engine/engine.h: the plain path, or engine/multipass.h) and turns the answers into
 * responses. SKYCMD_OPT_THREADS gives the session a compute-thread pool (identical logits
 * for any count; docs/threads.md). One session per thread; its engine's buffers, and a small
 * cache of tokenized question and option texts, are reused across calls (see handles.h). */
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
    s->max_token_budget = 8192; /* laya serve's DEFAULT_MAX_TOKEN_BUDGET */
    s->auto_tournament_group = 16; /* laya's shortlist.DEFAULT_TOURNAMENT_GROUP */
    atomic_fetch_add(&model->sessions, 1);
    *out = s;
    return SKYCMD_OK;
}

void skycmd_session_free(skycmd_session *s) {
    if (!session_ok(s)) return;
    sk_scratch_free(s->scratch);
    sk_pool_free(s->pool);
    sk_engine_free(&s->engine);
    free(s->rbatch);
    free(s->plans);
    free(s->each_slot);
    sk_ids_free(&s->tokbuf);
    tokcache_free(s->tokcache);
    atomic_fetch_sub(&s->model->sessions, 1);
    s->tag = SK_TAG_DEAD;
    free(s);
}

_Static_assert(SK_LONG_MAX_WINDOW == (int64_t)1 << 20 && SK_TOURNAMENT_MAX_GROUP == 100,
               "core.c's option bounds of SKYCMD_OPT_WINDOW/_STRIDE/_TOURNAMENT_GROUP");

static int is_multipass_option(int option) {
    return option == SKYCMD_OPT_LONG || option == SKYCMD_OPT_WINDOW || option == SKYCMD_OPT_STRIDE ||
           option == SKYCMD_OPT_REPORT_TRUNCATION || option == SKYCMD_OPT_TOURNAMENT_GROUP ||
           option == SKYCMD_OPT_AUTO_TOURNAMENT_GROUP;
}

/* The options of long states, tournaments and the truncation report: 0, or -1 with the
 * session's message set. */
static int set_multipass_option(skycmd_session *s, int option, int64_t value) {
    switch (option) {
    case SKYCMD_OPT_LONG: s->long_on = value; break;
    case SKYCMD_OPT_WINDOW: s->long_window = value; break;
    case SKYCMD_OPT_STRIDE: s->long_stride = value; break;
    case SKYCMD_OPT_REPORT_TRUNCATION: s->report_truncation = value; break;
    default:
        if (value == 1) {
            snprintf(s->errmsg, sizeof s->errmsg, "%s must be 0 (off) or at least %d",
                     option == SKYCMD_OPT_TOURNAMENT_GROUP ? "SKYCMD_OPT_TOURNAMENT_GROUP"
                                                           : "SKYCMD_OPT_AUTO_TOURNAMENT_GROUP",
                     SK_TOURNAMENT_MIN_GROUP);
            return -1;
        }
        if (option == SKYCMD_OPT_TOURNAMENT_GROUP) s->tournament_group = value;
        else s->auto_tournament_group = value;
        break;
    }
    return 0;
}

int skycmd_session_set_int(skycmd_session *s, int option, int64_t value) {
    if (!session_ok(s)) return SKYCMD_E_MISUSE;
    int64_t lo, hi;
    if (skycmd_option_bounds(option, &lo, &hi) != SKYCMD_OK ||
        (option != SKYCMD_OPT_THREADS && option != SKYCMD_OPT_ACTIVATIONS &&
         option != SKYCMD_OPT_MAX_LEN && option != SKYCMD_OPT_HEAD_MAX_LEN &&
         option != SKYCMD_OPT_MAX_TOKEN_BUDGET &&
         !is_multipass_option(option))) {
        snprintf(s->errmsg, sizeof s->errmsg, "option %d is not a session option", option);
        return SKYCMD_E_INVALID_ARGUMENT;
    }
    if (value < lo || value > hi) {
        snprintf(s->errmsg, sizeof s->errmsg, "option %d: %lld is outside [%lld, %lld]", option,
                 (long long)value, (long long)lo, (long long)hi);
        return SKYCMD_E_INVALID_ARGUMENT;
    }
    if (is_multipass_option(option)) {
        if (set_multipass_option(s, option, value)) return SKYCMD_E_INVALID_ARGUMENT;
    } else if (option == SKYCMD_OPT_MAX_LEN || option == SKYCMD_OPT_HEAD_MAX_LEN) {
        /* the budgets of the calls that follow (laya's per-call max_len / head_max_len) */
        if (option == SKYCMD_OPT_MAX_LEN) s->max_len = (size_t)value;
        else s->head_max_len = (size_t)value;
    } else if (option == SKYCMD_OPT_MAX_TOKEN_BUDGET) {
        s->max_token_budget = value;
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
        /* a row-scaled model opened without single-pass activations in its options makes
         * their choice now, on this session's threads (the first session to ask waits) */
        sk_err e = {0};
        int rc;
        if (value == SKYCMD_ACT_Q8 && (rc = sk_api_model_row_choice(s->model, s->pool, &e))) {
            snprintf(s->errmsg, sizeof s->errmsg, "single-pass activations: %.*s",
                     (int)(sizeof s->errmsg - 32), e.msg);
            return rc;
        }
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

sk_run_ctx sk_session_run_ctx(skycmd_session *s) {
    const skycmd_model *m = s->model;
    return (sk_run_ctx){m->m, m->tok, s->scratch, &m->temps,
                        (sk_prompt_tok){sk_session_encode_cb, s, m->cls, m->sep, m->mask, m->mask_text},
                        &s->engine.ws, s->logit_sink, s->logit_sink_ud};
}

/* The session's side of a plan: its options and its model's budgets. */
static sk_plan_defaults plan_defaults(const skycmd_session *s) {
    return (sk_plan_defaults){s->model->max_len, s->model->head_max_len, s->max_len, s->head_max_len,
                              s->max_token_budget, (int)s->long_on, (int)s->report_truncation, s->long_window,
                              s->long_stride, s->tournament_group, &s->gate};
}

static int make_plan(skycmd_session *s, const sk_request *r, sk_plan *p, sk_err *e) {
    sk_plan_defaults d = plan_defaults(s);
    int rc = sk_plan_make(&d, r, p, e);
    if (rc || !s->auto_tournament_group) return rc;
    sk_run_ctx cx = sk_session_run_ctx(s);
    return sk_plan_overflow_tournament(&cx, r, p, s->auto_tournament_group, e);
}

/* The response to request ri of the last plain pass. */
static int plain_response(skycmd_session *s, const sk_request *r, const sk_plan *p, size_t ri,
                          skycmd_response **out, sk_err *e) {
    const sk_engine *en = &s->engine;
    int rc = sk_response_new(r, en->answers + en->q_off[ri], s->model->name, en->ntok[ri], out, e);
    if (!rc) sk_answers_gate((*out)->a, (*out)->n, p->gate);
    return rc;
}

/* The response of a multipass decide: answers, the gate, and what the wire adds (copied
 * into the response's arena). */
static int multipass_response(skycmd_session *s, const sk_request *r, const sk_plan *pl,
                              const sk_multipass_result *mr, skycmd_response **out, sk_err *e) {
    skycmd_response *resp = NULL;
    int rc = sk_response_new(r, mr->answers, s->model->name, mr->input_tokens, &resp, e);
    if (rc) return rc;
    /* the abstention gate on the aggregated answers (laya applies it to the final answers);
     * a narrowed choice is gated in the final pass, over its finalists (laya serve passes
     * min_confidence to every predict call of the tournament; the final call's answer, with
     * its bucket of the finalists' count, is the one returned) */
    sk_answers_gate(resp->a, resp->n, pl->gate);
    for (size_t i = 0; i < r->nq && pl->gate->set; i++)
        if (mr->ax[i].rounds > 0) {
            size_t n = 0;
            const double *p = sk_multipass_final_pass(&s->engine, i, &n);
            resp->a[i].gate = sk_gate_state(pl->gate, resp->a[i].type, p, n, &resp->a[i].gate_thr);
        }
    sk_answer_extra *ax = sk_arena_alloc(&resp->arena, (r->nq ? r->nq : 1) * sizeof *ax);
    for (size_t i = 0; ax && i < r->nq; i++) {
        ax[i] = mr->ax[i];
        if (!ax[i].n_finalists) continue;
        size_t *f = sk_arena_alloc(&resp->arena, ax[i].n_finalists * sizeof *f);
        if (f) memcpy(f, ax[i].finalists, ax[i].n_finalists * sizeof *f);
        else ax = NULL;
        if (ax) ax[i].finalists = f;
    }
    if (!ax) {
        skycmd_response_free(resp);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory answering the request");
    }
    resp->x = (sk_response_extra){.a = ax, .windows_on = pl->is_long, .windows = mr->windows,
                                  .truncation = pl->truncation, .truncated_is_count = mr->truncated_is_count,
                                  .truncated = mr->truncated, .state_tokens = mr->state_tokens,
                                  .state_tokens_dropped = mr->dropped};
    *out = resp;
    return 0;
}

/* Answer one request as its plan says: more passes, or the plain one. */
static int decide_planned(skycmd_session *s, const sk_request *r, const sk_plan *p, skycmd_response **out,
                          sk_err *e) {
    sk_run_ctx cx = sk_session_run_ctx(s);
    int rc;
    if (sk_plan_is_multipass(p)) {
        sk_multipass_result mr;
        rc = sk_multipass_decide(&s->engine, &cx, r, p, &mr, e);
        return rc ? rc : multipass_response(s, r, p, &mr, out, e);
    }
    rc = sk_engine_plain(&s->engine, &cx, &r, p, 1, e);
    return rc ? rc : plain_response(s, r, p, 0, out, e);
}

static int decide_one(skycmd_session *s, const sk_request *r, skycmd_response **out, sk_err *e) {
    sk_plan p;
    int rc = make_plan(s, r, &p, e);
    return rc ? rc : decide_planned(s, r, &p, out, e);
}

/* A request handle fit to answer; in a batch (n > 1) the message starts "request i: ", as
 * every other failure of the batch names its request. */
static int check_request(const skycmd_request *req, size_t i, size_t n, sk_err *e) {
    int rc = 0;
    if (!req || req->tag != SK_TAG_REQUEST)
        rc = sk_fail(e, SKYCMD_E_MISUSE, "decide: invalid skycmd_request handle");
    else if (req->status)
        rc = sk_fail(e, SKYCMD_E_MISUSE, "decide: the request did not parse: %s", req->errmsg);
    if (rc && n > 1) sk_err_prefix(e, "request %zu", i);
    return rc;
}

int skycmd_decide(skycmd_session *s, const skycmd_request *req, skycmd_response **out) {
    if (out) *out = NULL;
    if (!session_ok(s)) return SKYCMD_E_MISUSE;
    sk_err e = {0};
    if (!out) return set_err(s, &e, sk_fail(&e, SKYCMD_E_INVALID_ARGUMENT, "decide: out is NULL"));
    int rc = check_request(req, 0, 1, &e);
    if (rc) return set_err(s, &e, rc);
    return set_err(s, &e, decide_one(s, &req->r, out, &e));
}

int skycmd_decide_batch(skycmd_session *s, const skycmd_request *const *reqs, size_t n,
                        skycmd_response **out) {
    /* no array of more than SIZE_MAX / sizeof(sk_plan) requests can exist (nor the plans) */
    const int n_ok = n <= SIZE_MAX / sizeof(sk_plan);
    if (out && n_ok)
        for (size_t i = 0; i < n; i++) out[i] = NULL;
    if (!session_ok(s)) return SKYCMD_E_MISUSE;
    sk_err e = {0};
    if (!n_ok) return set_err(s, &e, sk_fail(&e, SKYCMD_E_INVALID_ARGUMENT, "decide_batch: n is %zu", n));
    if (n && (!out || !reqs))
        return set_err(s, &e, sk_fail(&e, SKYCMD_E_INVALID_ARGUMENT,
                                      "decide_batch: reqs or out is NULL"));
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) rc = check_request(reqs[i], i, n, &e);
    if (rc) return set_err(s, &e, rc);
    if (sk_grow_array((void **)&s->rbatch, &s->rbatch_cap, n ? n : 1, sizeof *s->rbatch) ||
        sk_grow_array((void **)&s->plans, &s->plans_cap, n ? n : 1, sizeof *s->plans))
        return set_err(s, &e, sk_fail(&e, SKYCMD_E_NOMEM, "out of memory answering the requests"));
    int any_multipass = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        s->rbatch[i] = &reqs[i]->r;
        if ((rc = make_plan(s, s->rbatch[i], &s->plans[i], &e)) && n > 1) sk_err_prefix(&e, "request %zu", i);
        any_multipass |= sk_plan_is_multipass(&s->plans[i]);
    }
    if (!rc && any_multipass) { /* one request at a time, each as skycmd_decide would answer it */
        for (size_t i = 0; i < n && !rc; i++)
            if ((rc = decide_planned(s, s->rbatch[i], &s->plans[i], &out[i], &e)) && n > 1)
                sk_err_prefix(&e, "request %zu", i);
    } else if (!rc) {
        sk_run_ctx cx = sk_session_run_ctx(s);
        rc = sk_engine_plain(&s->engine, &cx, s->rbatch, s->plans, n, &e);
        for (size_t i = 0; i < n && !rc; i++) rc = plain_response(s, s->rbatch[i], &s->plans[i], i, &out[i], &e);
    }
    if (rc)
        for (size_t i = 0; i < n; i++) {
            skycmd_response_free(out[i]);
            out[i] = NULL;
        }
    return set_err(s, &e, rc);
}

/* Record slot i's outcome: its status and, when it failed and the caller asked, a copy of
 * its message. */
static void each_record(size_t i, int rc, const char *msg, int *status, char **errmsg) {
    status[i] = rc;
    if (rc && errmsg) errmsg[i] = sk_strdup(msg && msg[0] ? msg : skycmd_strerror(rc));
}

/* One slot's request, or why it cannot be answered (the message skycmd_decide would leave). */
static int each_check(const skycmd_request *req, sk_err *e) {
    if (!req) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "decide: the request is NULL");
    if (req->tag != SK_TAG_REQUEST) return sk_fail(e, SKYCMD_E_MISUSE, "decide: invalid skycmd_request handle");
    if (req->status) return sk_fail(e, req->status, "%s", req->errmsg);
    return 0;
}

int skycmd_decide_each(skycmd_session *s, const skycmd_request *const *reqs, size_t n,
                       skycmd_response **out, int *status, char **errmsg) {
    const int n_ok = n <= SIZE_MAX / sizeof(sk_plan); /* as skycmd_decide_batch */
    if (out && n_ok)
        for (size_t i = 0; i < n; i++) out[i] = NULL;
    if (errmsg && n_ok)
        for (size_t i = 0; i < n; i++) errmsg[i] = NULL;
    if (!session_ok(s)) return SKYCMD_E_MISUSE;
    sk_err e = {0};
    if (!n_ok) return set_err(s, &e, sk_fail(&e, SKYCMD_E_INVALID_ARGUMENT, "decide_each: n is %zu", n));
    if (n && (!reqs || !out || !status))
        return set_err(s, &e, sk_fail(&e, SKYCMD_E_INVALID_ARGUMENT,
                                      "decide_each: reqs, out or status is NULL"));
    if (sk_grow_array((void **)&s->rbatch, &s->rbatch_cap, n ? n : 1, sizeof *s->rbatch) ||
        sk_grow_array((void **)&s->plans, &s->plans_cap, n ? n : 1, sizeof *s->plans) ||
        sk_grow_array((void **)&s->each_slot, &s->each_slot_cap, n ? n : 1, sizeof *s->each_slot))
        return set_err(s, &e, sk_fail(&e, SKYCMD_E_NOMEM, "out of memory answering the requests"));
    /* Plan every request; one that needs more passes is answered at once, on its own. The
     * plain ones are gathered (in slot order) for one shared pass. */
    size_t np = 0;
    for (size_t i = 0; i < n; i++) {
        sk_err ei = {0};
        sk_plan p;
        int rc = each_check(reqs[i], &ei);
        if (!rc) rc = make_plan(s, &reqs[i]->r, &p, &ei);
        if (!rc && sk_plan_is_multipass(&p)) rc = decide_planned(s, &reqs[i]->r, &p, &out[i], &ei);
        else if (!rc) {
            s->rbatch[np] = &reqs[i]->r;
            s->plans[np] = p;
            s->each_slot[np++] = i;
        }
        each_record(i, rc, ei.msg, status, errmsg);
    }
    /* The shared pass; if it fails, each plain request alone, so only the failing ones fail
     * (the message each gets is the one skycmd_decide would give it). */
    sk_run_ctx cx = sk_session_run_ctx(s);
    int shared = np > 1 && !sk_engine_plain(&s->engine, &cx, s->rbatch, s->plans, np, &e);
    for (size_t k = 0; k < np; k++) {
        size_t i = s->each_slot[k];
        sk_err ei = {0};
        int rc = shared ? plain_response(s, s->rbatch[k], &s->plans[k], k, &out[i], &ei)
                        : decide_planned(s, s->rbatch[k], &s->plans[k], &out[i], &ei);
        each_record(i, rc, ei.msg, status, errmsg);
    }
    return set_err(s, &e, 0);
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
    skycmd_response *resp = NULL;
    rc = decide_one(s, &r, &resp, &e);
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
