/*
 * batch.c - laya serve's request controls and its batch endpoint, on the public API.
 *
 * Contract:
 *  - read_budgets() reads a body's top-level "max_len" / "head_max_len" (laya serve's
 *    BODY_CONTROLS, `_validate_budget_param`): absent or null = the model's value; otherwise
 *    a positive JSON integer at most --max-token-budget, else 422 with laya's message. The library
 *    applies them (a body's budgets belong to its request); the server reads them first only
 *    to refuse in laya serve's order, and the batch route to size its passes.
 *  - answer_batch() answers POST /v1/systemone/batch: {"states": [...], "questions": {...}}
 *    plus "model", "max_len", "head_max_len", "batch_size", "sort_by_length" and
 *    "min_confidence", validated as laya serve validates them (same statuses and messages).
 *    Every state is answered as a /v1/systemone request {"state": S, "questions": Q} would
 *    be (byte-identical answers), and the response is laya's:
 *      {"results": [<response of state 0>, ...], "total_usage": {"input_tokens", "output_tokens"}}
 *    The states are answered in passes of at most --max-batch-tokens tokens (laya's
 *    `_batch_chunk_size`: states x questions x (max_len or 512)), or fewer when the request's
 *    batch_size asks; sort_by_length orders the states by length before they are cut into
 *    passes (results stay in request order). Passes change only the speed: each answer is
 *    exactly what the state would get alone.
 *  - min_confidence goes into every state's request: the library validates it (laya's
 *    check_min_confidence messages, 422) and gates each result's answers.
 */
#define _GNU_SOURCE
#include "serve.h"

#ifdef SKYCMD_HAVE_MHD

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve_internal.h"

/* laya serve's MAX_BATCH_STATES and _BATCH_ROW_TOKENS_ASSUMED */
#define BATCH_MAX_STATES 64
#define BATCH_ROW_TOKENS_ASSUMED 512

enum json_kind { JK_ABSENT, JK_NULL, JK_INT, JK_NUMBER, JK_BOOL, JK_OTHER };

/* What the raw member value v (n bytes) is; for JK_INT, *neg and the digits' span. */
static int kind_of(const char *v, size_t n, int *neg, const char **digits, size_t *nd) {
    if (!v) return JK_ABSENT;
    if (n == 4 && memcmp(v, "null", 4) == 0) return JK_NULL;
    if ((n == 4 && memcmp(v, "true", 4) == 0) || (n == 5 && memcmp(v, "false", 5) == 0))
        return JK_BOOL;
    if (n && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9'))) {
        for (size_t i = 0; i < n; i++)
            if (v[i] == '.' || v[i] == 'e' || v[i] == 'E') return JK_NUMBER;
        *neg = v[0] == '-';
        *digits = v + *neg;
        *nd = n - (size_t)*neg;
        return JK_INT;
    }
    return JK_OTHER;
}

/* A JSON integer's digits as a value; INT64_MAX when they do not fit (only compared). */
static int64_t digits_value(const char *d, size_t nd) {
    int64_t v = 0;
    for (size_t i = 0; i < nd; i++) {
        if (v > (INT64_MAX - 9) / 10) return INT64_MAX;
        v = v * 10 + (d[i] - '0');
    }
    return v;
}

static int digits_zero(const char *d, size_t nd) {
    for (size_t i = 0; i < nd; i++)
        if (d[i] != '0') return 0;
    return 1;
}

/* One of laya's integer controls. *out = 0 when absent or null. Returns 0, or 1 with r's
 * 422 set. batch_size words its errors as laya's _validate_batch_size_param, the budgets as
 * _validate_budget_param (with the server's cap). */
static int read_int_control(struct req *r, const char *body, size_t len, const char *key,
                            int64_t cap, int64_t *out) {
    size_t off = 0, n = 0;
    *out = 0;
    const char *v = sj_member(body, len, key, &off, &n) ? body + off : NULL;
    int neg = 0;
    const char *d = NULL;
    size_t nd = 0;
    int k = kind_of(v, n, &neg, &d, &nd);
    int is_batch_size = strcmp(key, "batch_size") == 0;
    if (k == JK_ABSENT || k == JK_NULL) return 0;
    if (k != JK_INT) {
        set_errorf(r, 422, "%s must be an integer", key);
        return 1;
    }
    if (neg || digits_zero(d, nd)) {
        if (is_batch_size) /* Python's %r of the int: -0 is 0 */
            set_errorf(r, 422, "batch_size must be a positive integer, got %s%.*s",
                       neg && !digits_zero(d, nd) ? "-" : "", digits_zero(d, nd) ? 1 : (int)(nd > 40 ? 40 : nd), d);
        else
            set_errorf(r, 422, "%s must be a positive integer", key);
        return 1;
    }
    int64_t val = digits_value(d, nd);
    if (cap > 0 && val > cap) {
        set_errorf(r, 422, "%s exceeds server limit (%.*s > %lld)", key, (int)(nd > 40 ? 40 : nd), d,
                   (long long)cap);
        return 1;
    }
    *out = val;
    return 0;
}

int read_budgets(struct req *r, const char *body, size_t len) {
    int64_t cap = S.cfg->max_token_budget > 0 ? S.cfg->max_token_budget : 8192;
    if (read_int_control(r, body, len, "max_len", cap, &r->max_len)) return 1;
    if (read_int_control(r, body, len, "head_max_len", cap, &r->head_max_len)) return 1;
    return 0;
}

/* laya serve's BODY_REFUSALS and BATCH_BODY_OUT_PARAMETERS: told, not ignored. */
static int refuse_controls(struct req *r, const char *body, size_t len) {
    static const char *const hooks[] = {"hooks", "hooks_raise", "hooks_timeout", "on_predict_end",
                                        "on_predict_start"};
    char given[128] = "";
    for (size_t i = 0; i < sizeof hooks / sizeof hooks[0]; i++) {
        size_t off, n;
        if (sj_member(body, len, hooks[i], &off, &n) && !(n == 4 && memcmp(body + off, "null", 4) == 0)) {
            if (given[0]) strcat(given, ", ");
            strcat(given, hooks[i]);
        }
    }
    if (given[0]) {
        set_errorf(r, 422, "%s run inside the server process and cannot be sent to this endpoint; "
                           "install them where laya-serve runs, or drop them", given);
        return 1;
    }
    size_t off, n;
    if (sj_member(body, len, "diagnostics", &off, &n) && !(n == 4 && memcmp(body + off, "null", 4) == 0)) {
        set_error(r, 422, "diagnostics is filled in place for an in-process caller and cannot be "
                          "returned over HTTP; read the per-group report from the CLI or a local Router");
        return 1;
    }
    return 0;
}

struct state_ref {
    size_t off, len; /* the state's raw JSON in the body */
    size_t index;    /* its place in the request */
};

static int by_state_length(const void *a, const void *b) {
    const struct state_ref *x = a, *y = b;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

void answer_batch(struct req *r, const struct model_set *set, skycmd_session *const *sessions) {
    const struct serve_config *cfg = S.cfg;
    uint64_t waited = now_us() - r->t_enq;
    if (cfg->timeout_s && waited > (uint64_t)cfg->timeout_s * 1000000u) {
        set_errorf(r, 503, "the request waited %.1f s for a worker (limit %u s)", (double)waited / 1e6,
                   cfg->timeout_s);
        return;
    }
    const char *body = r->body.p ? r->body.p : "";
    size_t len = r->body.len;

    /* well-formed JSON first: the library's parser is the judge (a batch body has no
     * "state", so it stops right after the syntax) */
    skycmd_request *whole = NULL;
    int st = skycmd_request_parse(body, len, &whole);
    if (st == SKYCMD_E_JSON || st == SKYCMD_E_TOO_LARGE || st == SKYCMD_E_NOMEM) {
        if (st == SKYCMD_E_NOMEM) set_error(r, 503, "the server is out of memory, retry later");
        else set_error(r, st == SKYCMD_E_JSON ? 400 : 413, whole ? skycmd_request_errmsg(whole) : "malformed JSON");
        skycmd_request_free(whole);
        return;
    }
    skycmd_request_free(whole);

    size_t s_off = 0, s_len = 0, q_off = 0, q_len = 0;
    if (!sj_member(body, len, "states", &s_off, &s_len) || !sj_member(body, len, "questions", &q_off, &q_len)) {
        set_error(r, 400, "request body must be an object with 'states' and 'questions' fields");
        return;
    }
    /* the states: a non-empty array of at most BATCH_MAX_STATES */
    struct state_ref refs[BATCH_MAX_STATES];
    size_t n_states = 0, pos = 0, e_off, e_len;
    int more;
    while ((more = sj_array_next(body + s_off, s_len, &pos, &e_off, &e_len)) == 1) {
        if (n_states == BATCH_MAX_STATES) {
            n_states++;
            break;
        }
        refs[n_states] = (struct state_ref){s_off + e_off, e_len, n_states};
        n_states++;
    }
    if (more < 0 || (n_states == 0)) {
        set_error(r, 400, "'states' must be a non-empty list");
        return;
    }
    if (n_states > BATCH_MAX_STATES) {
        size_t total = n_states;
        while (sj_array_next(body + s_off, s_len, &pos, &e_off, &e_len) == 1) total++;
        set_errorf(r, 413, "too many states in batch (%zu > %d)", total, BATCH_MAX_STATES);
        return;
    }
    if (refuse_controls(r, body, len)) return;
    /* --max-questions before the library parses any state (as on /v1/systemone): the 413
     * names this server's limit, not the library's own cap */
    long n_questions = sj_object_count(body + q_off, q_len);
    if (n_questions > 0 && (size_t)n_questions > cfg->max_questions) {
        set_errorf(r, 413, "too many questions (%ld), this server accepts at most %zu per request", n_questions,
                   cfg->max_questions);
        return;
    }

    /* the model, as on /v1/systemone */
    int mi = 0;
    char mname[MODEL_NAME_MAX];
    switch (sj_find_model(body, len, mname, sizeof mname)) {
    case SJ_MODEL_STRING:
        mi = find_model(set, mname);
        if (mi < 0) {
            unknown_model(r, set, mname);
            return;
        }
        break;
    case SJ_MODEL_OTHER: set_error(r, 422, "\"model\" must be a string"); return;
    case SJ_MODEL_TOO_LONG: set_error(r, 422, "\"model\" is not a loaded model name (too long)"); return;
    default: break;
    }
    if (read_budgets(r, body, len)) return;
    size_t off, n;
    /* min_confidence (laya: apply_confidence_gate on every result): handed on to each state's
     * request, whose parser validates it as laya does (422 with its message) and gates the
     * answers */
    size_t mc_off = 0, mc_len = 0;
    if (sj_member(body, len, "min_confidence", &off, &n) && !(n == 4 && memcmp(body + off, "null", 4) == 0)) {
        mc_off = off;
        mc_len = n;
    }
    int64_t batch_size = 0;
    if (read_int_control(r, body, len, "batch_size", 0, &batch_size)) return;
    int sort_by_length = 0;
    if (sj_member(body, len, "sort_by_length", &off, &n)) {
        if (n == 4 && memcmp(body + off, "true", 4) == 0) sort_by_length = 1;
        else if (!(n == 5 && memcmp(body + off, "false", 5) == 0) && !(n == 4 && memcmp(body + off, "null", 4) == 0)) {
            set_error(r, 422, "sort_by_length must be a boolean");
            return;
        }
    }

    /* every state as its own /v1/systemone request */
    skycmd_request *q[BATCH_MAX_STATES] = {0};
    struct sbuf one = {0};
    size_t nq = 0;
    for (size_t i = 0; i < n_states; i++) {
        sbuf_reset(&one);
        sbuf_adds(&one, "{\"state\":");
        sbuf_add(&one, body + refs[i].off, refs[i].len);
        sbuf_adds(&one, ",\"questions\":");
        sbuf_add(&one, body + q_off, q_len);
        if (mc_len) {
            sbuf_adds(&one, ",\"min_confidence\":");
            sbuf_add(&one, body + mc_off, mc_len);
        }
        /* the budgets too: the library applies a body's budgets to its request */
        static const char *const budgets[] = {"max_len", "head_max_len"};
        for (size_t b = 0; b < 2; b++) {
            size_t bo, bn;
            if (sj_member(body, len, budgets[b], &bo, &bn)) {
                sbuf_adds(&one, ",\"");
                sbuf_adds(&one, budgets[b]);
                sbuf_adds(&one, "\":");
                sbuf_add(&one, body + bo, bn);
            }
        }
        sbuf_adds(&one, "}");
        if (one.oom) {
            set_error(r, 503, "the server is out of memory, retry later");
            goto out;
        }
        st = skycmd_request_parse(one.p, one.len, &q[i]);
        if (st != SKYCMD_OK) {
            char msg[700];
            snprintf(msg, sizeof msg, "states[%zu]: %s", i, q[i] ? skycmd_request_errmsg(q[i]) : skycmd_strerror(st));
            switch (st) {
            case SKYCMD_E_JSON: set_error(r, 400, msg); break;
            case SKYCMD_E_TOO_LARGE: set_error(r, 413, msg); break;
            case SKYCMD_E_UNSUPPORTED: set_error(r, 501, msg); break;
            case SKYCMD_E_NOMEM: set_error(r, 503, "the server is out of memory, retry later"); break;
            default: set_error(r, 422, msg); break;
            }
            goto out;
        }
        nq = skycmd_request_question_count(q[i]);
        if (nq > cfg->max_questions) {
            set_errorf(r, 413, "too many questions (%zu), this server accepts at most %zu per request", nq,
                       cfg->max_questions);
            goto out;
        }
    }

    /* passes: laya serve's _batch_chunk_size, then the caller's batch_size if smaller */
    int64_t width = r->max_len > 0 ? r->max_len : BATCH_ROW_TOKENS_ASSUMED;
    int64_t budget = cfg->max_batch_tokens > 0 ? cfg->max_batch_tokens : 131072;
    size_t per_pass = n_states; /* laya's None: everything in one pass */
    if ((int64_t)n_states * (int64_t)nq * width > budget) {
        int64_t rows = budget / width;
        if (rows < 1) rows = 1;
        int64_t k = rows / (int64_t)(nq ? nq : 1);
        if (k > (int64_t)n_states) k = (int64_t)n_states;
        per_pass = k < 1 ? 1 : (size_t)k;
    }
    if (batch_size > 0 && (size_t)batch_size < per_pass) per_pass = (size_t)batch_size;
    if (sort_by_length) qsort(refs, n_states, sizeof refs[0], by_state_length);

    skycmd_session *s = sessions[mi];
    skycmd_response *resp[BATCH_MAX_STATES] = {0};
    for (size_t lo = 0; st == SKYCMD_OK && lo < n_states; lo += per_pass) {
        size_t k = n_states - lo < per_pass ? n_states - lo : per_pass;
        const skycmd_request *list[BATCH_MAX_STATES];
        skycmd_response *out[BATCH_MAX_STATES];
        for (size_t j = 0; j < k; j++) list[j] = q[refs[lo + j].index];
        int status[BATCH_MAX_STATES];
        char *msgs[BATCH_MAX_STATES];
        st = skycmd_decide_each(s, list, k, out, status, msgs);
        if (st != SKYCMD_OK) { /* misuse or no memory: nothing was answered */
            if (st == SKYCMD_E_NOMEM) set_error(r, 503, "the server is out of memory, retry later");
            else set_errorf(r, 500, "decision failed (%s)", skycmd_status_name(st));
            break;
        }
        /* all or nothing, as laya serve's batch route: the first state that failed names the
         * error (each state's message is what a lone decide would give) */
        for (size_t j = 0; j < k && st == SKYCMD_OK; j++) {
            if (status[j] == SKYCMD_OK) continue;
            char msg[700];
            snprintf(msg, sizeof msg, "states[%zu]: %s", refs[lo + j].index,
                     msgs[j] ? msgs[j] : skycmd_strerror(status[j]));
            st = status[j];
            switch (st) {
            case SKYCMD_E_REQUEST: set_error(r, 422, msg); break;
            case SKYCMD_E_TOO_LARGE: set_error(r, 413, msg); break;
            case SKYCMD_E_UNSUPPORTED: set_error(r, 501, msg); break;
            case SKYCMD_E_NOMEM: set_error(r, 503, "the server is out of memory, retry later"); break;
            default:
                if (cfg->verbose) log_line("skycmd serve: %s batch decision failed: %s", r->rid, msg);
                set_errorf(r, 500, "decision failed (%s)", skycmd_status_name(st));
                break;
            }
        }
        for (size_t j = 0; j < k; j++) skycmd_string_free(msgs[j]);
        if (st != SKYCMD_OK) {
            for (size_t j = 0; j < k; j++) skycmd_response_free(out[j]);
            break;
        }
        for (size_t j = 0; j < k; j++) resp[refs[lo + j].index] = out[j];
    }
    if (st == SKYCMD_OK) {
        struct sbuf *o = &r->out;
        sbuf_reset(o);
        sbuf_adds(o, "{\"results\":[");
        int64_t tokens = 0;
        size_t answers = 0;
        for (size_t i = 0; i < n_states && st == SKYCMD_OK; i++) {
            const char *json = skycmd_response_json(resp[i]);
            if (!json) {
                st = SKYCMD_E_NOMEM;
                break;
            }
            if (i) sbuf_adds(o, ",");
            sbuf_adds(o, json);
            tokens += skycmd_response_input_tokens(resp[i]);
            answers += skycmd_response_answer_count(resp[i]);
        }
        sbuf_addf(o, "],\"total_usage\":{\"input_tokens\":%lld,\"output_tokens\":0}}", (long long)tokens);
        if (st != SKYCMD_OK || o->oom) {
            set_error(r, 503, "the server is out of memory, retry later");
        } else {
            r->status = 200;
            r->ctype = "application/json";
            r->questions = answers;
            r->tokens = tokens;
        }
    }
    for (size_t i = 0; i < n_states; i++) skycmd_response_free(resp[i]);
out:
    for (size_t i = 0; i < n_states; i++) skycmd_request_free(q[i]);
    sbuf_free(&one);
}

#endif /* SKYCMD_HAVE_MHD */
