/*
 * test_long.c - long states, tournaments and the truncation report against laya 0.4.15
 * itself (fixtures: tests/fixtures/long/, written by tools/golden/make_long_golden.py from
 * laya's Agent.predict_long and laya serve's _predict_with_tournament).
 *
 * For every model of the manifest (s1-pico regenerated with skycmd_random_model, the
 * committed laya-built checkpoint laya-5x-f32-d128; both opened as F32) and every case:
 *   - long: the state's token ids equal laya's; every window's slice decoded and tokenized
 *     again (as laya reads a window) gives laya's ids, and every window laya scored, for every
 *     question, is built by our prompt builder into laya's ids and markers (head + those ids,
 *     cut at the question's room + [SEP]);
 *     skycmd_decide with the body's controls gives laya's window count, the deciding window
 *     of every answer (index, token_start, token_end, count; none when the state fit), its
 *     probabilities within 1e-4, laya's choice, input_tokens and truncation figures; a body
 *     laya refuses is refused (SKYCMD_E_REQUEST);
 *   - tournament: the final pass's ids and markers equal laya's (narrowed choices cut to the
 *     finalists), the answers' probabilities (0 for eliminated options) within 1e-4, choice,
 *     finalists and rounds (accessor and wire) and the summed input_tokens equal laya serve's;
 *     with a body's min_confidence, the abstention laya serve reports (the final pass's bucket);
 *     past laya serve's cap (255 options) a tournament is refused, as laya refuses it.
 * Plus properties of the opt-in: a request without controls keeps today's wire byte for
 * byte; the one-pass answer through the multipass path is the plain path's exactly.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>

#include "test_util.h"

#include "skycmd.h"
#include "decide/request.h"

#define TOL 1e-4

static double jnum(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    cr_assert(cJSON_IsNumber(v), "fixture: \"%s\" missing", k);
    return v->valuedouble;
}

static const cJSON *jget(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

/* ints of arr == got[0..n) ? else a message naming the first difference */
static int same_ints(const cJSON *arr, const int32_t *got, size_t n, char *why, size_t cap) {
    size_t i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, arr) {
        if (i >= n) {
            snprintf(why, cap, "length %zu, laya %d", n, cJSON_GetArraySize(arr));
            return 0;
        }
        if ((int32_t)x->valuedouble != got[i]) {
            snprintf(why, cap, "index %zu: %d, laya %d", i, got[i], (int)x->valuedouble);
            return 0;
        }
        i++;
    }
    if (i != n) {
        snprintf(why, cap, "length %zu, laya %zu", n, i);
        return 0;
    }
    return 1;
}

typedef struct lmodel {
    skycmd_model *model;
    sk_prompt_tok pt;
    tu_tok_ctx tc;
    int64_t max_len, head_max;
} lmodel;

/* The sha256 of the fixture's model must be the one the golden suite checks the generator
 * (or the committed checkpoint) against, so test_golden vouches for the weights. */
static void check_same_weights(const char *name, const char *sha) {
    char path[1200];
    snprintf(path, sizeof path, "%s/golden/manifest.json", SKYCMD_FIXTURES);
    cJSON *gm = tu_load_json(path);
    const cJSON *m;
    int found = 0;
    cJSON_ArrayForEach(m, jget(gm, "models")) {
        if (strcmp(jget(m, "model")->valuestring, name) == 0) {
            cr_assert_str_eq(jget(m, "model_safetensors_sha256")->valuestring, sha,
                             "%s: the long fixtures were made from other weights than the golden suite's", name);
            found = 1;
        }
    }
    cr_assert(found, "%s: not in tests/fixtures/golden/manifest.json", name);
    cJSON_Delete(gm);
}

static void open_model(const cJSON *entry, lmodel *lm, char *scratch, size_t cap) {
    const char *name = jget(entry, "model")->valuestring;
    check_same_weights(name, jget(entry, "model_safetensors_sha256")->valuestring);
    char dir[1400];
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert(o && err);
    const cJSON *preset = jget(entry, "preset");
    if (preset) {
        tu_scratch_make(scratch, cap, "long", name);
        snprintf(dir, sizeof dir, "%s/laya", scratch);
        cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_SEED, (int64_t)jnum(entry, "seed")), SKYCMD_OK);
        cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_LAYOUT, SKYCMD_LAYOUT_LAYA), SKYCMD_OK);
        int st = skycmd_random_model(preset->valuestring, dir, o, err);
        cr_assert_eq(st, SKYCMD_OK, "%s: skycmd_random_model: %s", name, skycmd_error_message(err));
        cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_LAYOUT, SKYCMD_LAYOUT_GGUF), SKYCMD_OK);
    } else {
        snprintf(dir, sizeof dir, "%s/%s", SKYCMD_FIXTURES, jget(entry, "checkpoint")->valuestring);
    }
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_TYPE, SKYCMD_TYPE_F32), SKYCMD_OK);
    int st = skycmd_model_open(dir, o, &lm->model, err);
    cr_assert_eq(st, SKYCMD_OK, "%s: skycmd_model_open(%s): %s", name, dir, skycmd_error_message(err));
    skycmd_options_free(o);
    skycmd_error_free(err);
    const skycmd_tokenizer *tok = skycmd_model_tokenizer(lm->model);
    lm->tc = (tu_tok_ctx){tok, {0}};
    lm->pt = (sk_prompt_tok){tu_tok_encode, &lm->tc, skycmd_tokenizer_special_id(tok, SKYCMD_SPECIAL_CLS),
                             skycmd_tokenizer_special_id(tok, SKYCMD_SPECIAL_SEP),
                             skycmd_tokenizer_special_id(tok, SKYCMD_SPECIAL_MASK),
                             sk_tokenizer_special_text(tok, SKYCMD_SPECIAL_MASK)};
    cr_assert_eq(skycmd_model_get_int(lm->model, "decision.max_tokens", &lm->max_len), SKYCMD_OK);
    cr_assert_eq(skycmd_model_get_int(lm->model, "decision.max_head_tokens", &lm->head_max), SKYCMD_OK);
}

typedef struct counts {
    size_t cases, windows_built, answers, probs, errors, retokenized_differently, gated;
    double max_dp;
    char where[200];
} counts;

static void check_probs(const skycmd_response *resp, size_t i, const cJSON *q, const char *where, counts *n) {
    const cJSON *p = jget(q, "probabilities"), *keys = jget(q, "keys");
    size_t k = skycmd_response_option_count(resp, i);
    cr_assert_eq(k, (size_t)cJSON_GetArraySize(p), "%s: option count", where);
    size_t j = 0;
    const cJSON *x, *key = keys->child;
    cJSON_ArrayForEach(x, p) {
        cr_assert_str_eq(skycmd_response_option_key(resp, i, j), key->valuestring, "%s: key %zu", where, j);
        double d = fabs(skycmd_response_option_probability(resp, i, j) - x->valuedouble);
        if (x->valuedouble == 0.0)  /* an eliminated option: exactly 0 */
            cr_assert_eq(skycmd_response_option_probability(resp, i, j), 0.0, "%s: eliminated %s", where,
                         key->valuestring);
        cr_assert_leq(d, TOL, "%s: p[%s] %.9g, laya %.9g", where, key->valuestring,
                      skycmd_response_option_probability(resp, i, j), x->valuedouble);
        if (d > n->max_dp) {
            n->max_dp = d;
            snprintf(n->where, sizeof n->where, "%s/%s", where, key->valuestring);
        }
        n->probs++;
        j++;
        key = key->next;
    }
    if (strcmp(jget(q, "type")->valuestring, "choice") == 0) {
        /* laya's choice: the first argmax of its probabilities */
        size_t best = 0, jj = 0;
        double bv = -1;
        cJSON_ArrayForEach(x, p) {
            if (x->valuedouble > bv) {
                bv = x->valuedouble;
                best = jj;
            }
            jj++;
        }
        cr_assert_str_eq(skycmd_response_answer_choice(resp, i), cJSON_GetArrayItem(keys, (int)best)->valuestring,
                         "%s: choice", where);
    }
    n->answers++;
}

/* What every case runner starts from: the body parsed by the library's request parser (for
 * the prompt builder), the state tokenized once, and the public decide of the same body. */
typedef struct {
    const char *cname, *body;
    sk_request ir;
    sk_err ie;
    sk_prompt_ws ws;
    sk_i32v sids, ids, marks, wids;
    sk_buf text;
    skycmd_request *req;
    skycmd_response *resp;
    cJSON *wire;
} lcase;

static void case_open(lmodel *lm, const cJSON *c, lcase *k) {
    memset(k, 0, sizeof *k);
    k->cname = jget(c, "name")->valuestring;
    k->body = jget(c, "body")->valuestring;
    cr_assert_eq(sk_request_parse(k->body, strlen(k->body), &k->ir, &k->ie), SKYCMD_OK, "%s: %s", k->cname,
                 k->ie.msg);
    cr_assert_eq(sk_prompt_state_ids(&lm->pt, k->ir.state.s, k->ir.state.n, &k->ws, &k->sids, &k->ie), SKYCMD_OK);
}

static void case_decide(skycmd_session *sess, const char *mname, lcase *k) {
    cr_assert_eq(skycmd_request_parse(k->body, strlen(k->body), &k->req), SKYCMD_OK);
    int st = skycmd_decide(sess, k->req, &k->resp);
    cr_assert_eq(st, SKYCMD_OK, "%s %s: decide: %s", mname, k->cname, skycmd_session_errmsg(sess));
    k->wire = cJSON_Parse(skycmd_response_json(k->resp));
    cr_assert(k->wire);
}

/* Question rq's sequence over the state tokens [s0, s1), every option in the body's order. */
static int case_build(lmodel *lm, lcase *k, const sk_rquestion *rq, size_t s0, size_t s1, int state_is_list) {
    const sk_jstr *texts = rq->order ? rq->slot_text : &rq->opts[0].text;
    size_t stride = rq->order ? sizeof(sk_jstr) : sizeof(sk_roption);
    return sk_prompt_build(&lm->pt, sk_qtype_names[rq->type], rq->ins.s, rq->ins.n, texts, stride, rq->n_opts,
                           k->sids.v + s0, s1 - s0, state_is_list, (size_t)lm->max_len, (size_t)lm->head_max,
                           &k->ws, &k->ids, &k->marks, &k->ie);
}

static void case_close(lcase *k) {
    cJSON_Delete(k->wire);
    skycmd_response_free(k->resp);
    skycmd_request_free(k->req);
    sk_request_free(&k->ir);
    sk_prompt_ws_free(&k->ws);
    sk_i32v_free(&k->sids);
    sk_i32v_free(&k->ids);
    sk_i32v_free(&k->marks);
    sk_i32v_free(&k->wids);
    sk_buf_free(&k->text);
}

static void run_long_case(lmodel *lm, skycmd_session *sess, const cJSON *c, const char *mname, counts *n) {
    char where[300], why[200];
    lcase k;
    case_open(lm, c, &k);
    const char *cname = k.cname;
    cr_assert(same_ints(jget(c, "state_ids"), k.sids.v, k.sids.n, why, sizeof why), "%s %s: state ids: %s", mname,
              cname, why);
    /* every window laya scored, for every question: head + slice + [SEP] */
    const cJSON *starts = jget(c, "starts"), *ends = jget(c, "ends");
    const int64_t windows = (int64_t)jnum(c, "windows");
    const cJSON *qs = jget(c, "questions");
    for (int w = 0; w < cJSON_GetArraySize(starts); w++) {
        size_t s0 = (size_t)cJSON_GetArrayItem(starts, w)->valuedouble;
        size_t s1 = (size_t)cJSON_GetArrayItem(ends, w)->valuedouble;
        /* a window as laya reads it: the slice decoded, then tokenized as a string state */
        const int32_t *win = k.sids.v + s0;
        size_t win_n = s1 - s0;
        if (windows > 1) {
            k.text.len = 0;
            cr_assert_eq(sk_tokenizer_decode(lm->tc.tok, k.sids.v + s0, s1 - s0, &k.text, &k.ie), SKYCMD_OK);
            cr_assert_eq(sk_prompt_state_ids(&lm->pt, k.text.data, k.text.len, &k.ws, &k.wids, &k.ie), SKYCMD_OK);
            cr_assert(same_ints(cJSON_GetArrayItem(jget(c, "window_ids"), w), k.wids.v, k.wids.n, why, sizeof why),
                      "%s %s window %d: re-tokenized ids: %s", mname, cname, w, why);
            n->retokenized_differently += k.wids.n != win_n || memcmp(k.wids.v, win, win_n * sizeof *win) != 0;
            win = k.wids.v;
            win_n = k.wids.n;
        }
        size_t qi = 0;
        const cJSON *q;
        cJSON_ArrayForEach(q, qs) {
            const sk_rquestion *rq = &k.ir.q[qi++];
            const sk_jstr *texts = rq->order ? rq->slot_text : &rq->opts[0].text;
            int st = sk_prompt_build(&lm->pt, sk_qtype_names[rq->type], rq->ins.s, rq->ins.n, texts,
                                     rq->order ? sizeof(sk_jstr) : sizeof(sk_roption), rq->n_opts, win, win_n,
                                     windows == 1 && k.ir.state_is_list, (size_t)lm->max_len, (size_t)lm->head_max,
                                     &k.ws, &k.ids, &k.marks, &k.ie);
            cr_assert_eq(st, SKYCMD_OK, "%s %s: build: %s", mname, cname, k.ie.msg);
            const cJSON *head = jget(q, "head_ids");
            size_t hl = (size_t)cJSON_GetArraySize(head);
            snprintf(where, sizeof where, "%s %s/%s window %d", mname, cname, jget(q, "id")->valuestring, w);
            cr_assert(k.ids.n >= hl + 1 && same_ints(head, k.ids.v, hl, why, sizeof why), "%s: head ids: %s", where,
                      why);
            size_t used = k.ids.n - hl - 1;
            size_t room = (size_t)lm->max_len - hl - 1;
            cr_assert_eq(used, win_n < room ? win_n : room, "%s: %zu state tokens read", where, used);
            if (windows > 1 || !k.ir.state_is_list)
                cr_assert(memcmp(k.ids.v + hl, win, used * sizeof(int32_t)) == 0, "%s: state tokens", where);
            cr_assert_eq(k.ids.v[k.ids.n - 1], lm->pt.sep, "%s: closing [SEP]", where);
            cr_assert(same_ints(jget(q, "markers"), k.marks.v, k.marks.n, why, sizeof why), "%s: markers: %s",
                      where, why);
            n->windows_built++;
        }
    }
    /* the decide, with the body's own controls, and the truncation report for the accessors */
    cr_assert_eq(skycmd_session_set_int(sess, SKYCMD_OPT_REPORT_TRUNCATION, 2), SKYCMD_OK);
    case_decide(sess, mname, &k);
    const skycmd_response *resp = k.resp;
    cr_assert_eq(skycmd_response_windows(resp), windows, "%s %s: usage.windows", mname, cname);
    const cJSON *usage = jget(c, "usage");
    cr_assert_eq(skycmd_response_input_tokens(resp), (int64_t)jnum(usage, "input_tokens"), "%s %s: input_tokens",
                 mname, cname);
    cr_assert_eq(skycmd_response_state_tokens(resp), (int64_t)jnum(usage, "state_tokens"), "%s %s: state_tokens",
                 mname, cname);
    cr_assert_eq(skycmd_response_state_tokens_dropped(resp), (int64_t)jnum(usage, "state_tokens_dropped"),
                 "%s %s: state_tokens_dropped", mname, cname);
    const cJSON *tr = jget(usage, "truncated");
    cr_assert_eq(skycmd_response_truncated(resp), cJSON_IsBool(tr) ? (int64_t)cJSON_IsTrue(tr) : (int64_t)tr->valuedouble,
                 "%s %s: truncated", mname, cname);
    size_t i = 0;
    const cJSON *q;
    cJSON_ArrayForEach(q, qs) {
        snprintf(where, sizeof where, "%s %s/%s", mname, cname, jget(q, "id")->valuestring);
        int64_t wi, ws0, ws1, wc;
        int wst = skycmd_response_answer_window(resp, i, &wi, &ws0, &ws1, &wc);
        const cJSON *win = jget(q, "window");
        if (cJSON_IsNull(win) || !win) {
            cr_assert_eq(wst, SKYCMD_E_NOT_FOUND, "%s: laya names no deciding window", where);
        } else {
            cr_assert_eq(wst, SKYCMD_OK, "%s: no deciding window", where);
            cr_assert_eq(wi, (int64_t)jnum(win, "index"), "%s: deciding window %lld, laya %d", where, (long long)wi,
                         (int)jnum(win, "index"));
            cr_assert_eq(ws0, (int64_t)jnum(win, "token_start"), "%s: token_start", where);
            cr_assert_eq(ws1, (int64_t)jnum(win, "token_end"), "%s: token_end", where);
            cr_assert_eq(wc, (int64_t)jnum(win, "count"), "%s: count", where);
        }
        check_probs(resp, i, q, where, n);
        i++;
    }
    /* the wire: usage.windows and answers.<id>.window as laya names them */
    cr_assert_eq((int64_t)jnum(jget(k.wire, "usage"), "windows"), windows);
    cr_assert_null(jget(jget(k.wire, "usage"), "truncated"), "mode 2 keeps the truncation report off the wire");
    case_close(&k);
    cr_assert_eq(skycmd_session_set_int(sess, SKYCMD_OPT_REPORT_TRUNCATION, 0), SKYCMD_OK);
}

static void run_tournament_case(lmodel *lm, skycmd_session *sess, const cJSON *c, const char *mname, counts *n) {
    char where[300], why[200];
    lcase k;
    case_open(lm, c, &k);
    const char *cname = k.cname;
    case_decide(sess, mname, &k);
    cr_assert_eq(skycmd_response_input_tokens(k.resp), (int64_t)jnum(c, "input_tokens"),
                 "%s %s: input_tokens %lld (every pass), laya serve %d", mname, cname,
                 (long long)skycmd_response_input_tokens(k.resp), (int)jnum(c, "input_tokens"));
    size_t i = 0;
    const cJSON *q;
    cJSON_ArrayForEach(q, jget(c, "questions")) {
        const sk_rquestion *rq = &k.ir.q[i];
        const char *qid = jget(q, "id")->valuestring;
        snprintf(where, sizeof where, "%s %s/%s", mname, cname, qid);
        const cJSON *fin = jget(q, "finalists");
        int64_t rounds = (int64_t)jnum(q, "rounds");
        cr_assert_eq(skycmd_response_answer_rounds(k.resp, i), rounds, "%s: rounds", where);
        const cJSON *xa = jget(jget(jget(k.wire, "answers"), qid), "x_tournament");
        int st;
        if (rounds > 0) {
            /* the final pass's sequence: narrowed choices show their finalists, in criteria order */
            sk_jstr texts[SK_REQUEST_MAX_OPTIONS];
            size_t nt = 0;
            cr_assert(xa, "%s: no x_tournament on the wire", where);
            cr_assert_eq(cJSON_GetArraySize(jget(xa, "finalists")), cJSON_GetArraySize(fin), "%s: finalists", where);
            cr_assert_eq((int64_t)jnum(xa, "rounds"), rounds);
            cr_assert_eq(cJSON_IsTrue(jget(xa, "option_order_dropped")),
                         cJSON_IsTrue(jget(q, "option_order_dropped")), "%s: option_order_dropped", where);
            const cJSON *f, *g = jget(xa, "finalists")->child;
            cJSON_ArrayForEach(f, fin) {
                cr_assert_str_eq(g->valuestring, f->valuestring, "%s: finalist", where);
                g = g->next;
                for (size_t o = 0; o < rq->n_opts; o++)
                    if (rq->opts[o].key.n == strlen(f->valuestring) &&
                        memcmp(rq->opts[o].key.s, f->valuestring, rq->opts[o].key.n) == 0)
                        texts[nt++] = rq->opts[o].text;
            }
            cr_assert_eq(nt, (size_t)cJSON_GetArraySize(fin));
            st = sk_prompt_build(&lm->pt, sk_qtype_names[rq->type], rq->ins.s, rq->ins.n, texts, sizeof(sk_jstr),
                                 nt, k.sids.v, k.sids.n, k.ir.state_is_list, (size_t)lm->max_len,
                                 (size_t)lm->head_max, &k.ws, &k.ids, &k.marks, &k.ie);
        } else {
            cr_assert_null(xa, "%s: x_tournament on a choice that played no round", where);
            st = case_build(lm, &k, rq, 0, k.sids.n, k.ir.state_is_list);
        }
        cr_assert_eq(st, SKYCMD_OK, "%s: build: %s", where, k.ie.msg);
        cr_assert(same_ints(jget(q, "ids"), k.ids.v, k.ids.n, why, sizeof why), "%s: final ids: %s", where, why);
        cr_assert(same_ints(jget(q, "markers"), k.marks.v, k.marks.n, why, sizeof why), "%s: final markers: %s",
                  where, why);
        n->windows_built++;
        check_probs(k.resp, i, q, where, n);
        /* the abstention laya serve reports: gated in the final pass, over the finalists */
        const cJSON *ab = jget(q, "abstention");
        if (ab && cJSON_IsString(ab)) {
            static const char *const names[] = {"none", "passed", "abstained", "unevaluated"};
            int got = skycmd_response_answer_abstention(k.resp, i);
            cr_assert(got >= 0 && got <= 3 && strcmp(names[got], ab->valuestring) == 0, "%s: abstention %s, laya %s",
                      where, got >= 0 && got <= 3 ? names[got] : "?", ab->valuestring);
            cr_assert(fabs(skycmd_response_answer_abstention_threshold(k.resp, i) - jnum(q, "abstention_threshold")) <
                          1e-12, "%s: abstention_threshold", where);
            const cJSON *wa = jget(jget(k.wire, "answers"), qid);
            cr_assert_eq(cJSON_IsTrue(jget(wa, "low_confidence")), cJSON_IsTrue(jget(q, "low_confidence")),
                         "%s: low_confidence", where);
            n->gated++;
        }
        i++;
    }
    case_close(&k);
}

/* The report of one pass: the wire's usage is laya system_one's usage, key for key. */
/* The bounded accessors-only report (SKYCMD_OPT_REPORT_TRUNCATION 3, what `skycmd decide`
 * warns from) of the same body without its report_truncation control, against laya's
 * exact usage: the same answers and the same questions cut, and counts that are lower
 * bounds of laya's (a cut state's ids past what a sequence can hold are not counted), with
 * something dropped exactly when laya drops something. The wire stays without the report. */
static void bounded_report_agrees(skycmd_session *sess, const cJSON *c, const char *body, const char *mname,
                                  const char *cname, counts *n) {
    char where[300];
    cJSON *b = cJSON_Parse(body);
    cr_assert(b);
    cJSON_DeleteItemFromObjectCaseSensitive(b, "report_truncation");
    char *plain = cJSON_PrintUnformatted(b);
    cJSON_Delete(b);
    skycmd_request *req = NULL;
    skycmd_response *resp = NULL;
    cr_assert_eq(skycmd_request_parse(plain, strlen(plain), &req), SKYCMD_OK);
    cr_assert_eq(skycmd_session_set_int(sess, SKYCMD_OPT_REPORT_TRUNCATION, 3), SKYCMD_OK);
    cr_assert_eq(skycmd_decide(sess, req, &resp), SKYCMD_OK, "%s %s: bounded report: %s", mname, cname,
                 skycmd_session_errmsg(sess));
    const cJSON *laya = jget(c, "usage"), *tr = jget(laya, "truncated");
    const int64_t dropped = skycmd_response_state_tokens_dropped(resp), all = skycmd_response_state_tokens(resp);
    const int64_t laya_dropped = (int64_t)jnum(laya, "state_tokens_dropped");
    cr_assert_eq(skycmd_response_truncated(resp), (int64_t)cJSON_IsTrue(tr), "%s %s: bounded: truncated", mname,
                 cname);
    cr_assert(dropped >= 0 && dropped <= laya_dropped && (dropped > 0) == (laya_dropped > 0),
              "%s %s: bounded: %lld dropped, laya %lld", mname, cname, (long long)dropped, (long long)laya_dropped);
    cr_assert(all >= 0 && all <= (int64_t)jnum(laya, "state_tokens") && all - dropped == (int64_t)jnum(laya, "state_tokens") - laya_dropped,
              "%s %s: bounded: %lld state tokens (%lld read), laya %d", mname, cname, (long long)all,
              (long long)(all - dropped), (int)jnum(laya, "state_tokens"));
    cJSON *wire = cJSON_Parse(skycmd_response_json(resp));
    cr_assert_null(jget(jget(wire, "usage"), "truncated"), "%s %s: mode 3 keeps the report off the wire", mname, cname);
    cJSON_Delete(wire);
    size_t i = 0;
    const cJSON *q;
    cJSON_ArrayForEach(q, jget(c, "questions")) {
        snprintf(where, sizeof where, "%s %s/%s (bounded report)", mname, cname, jget(q, "id")->valuestring);
        int listed = 0;
        const cJSON *t;
        cJSON_ArrayForEach(t, jget(laya, "truncated_questions")) listed |= strcmp(t->valuestring, jget(q, "id")->valuestring) == 0;
        cr_assert_eq(skycmd_response_answer_truncated(resp, i), listed, "%s: answer truncated", where);
        check_probs(resp, i, q, where, n);
        i++;
    }
    cr_assert_eq(skycmd_session_set_int(sess, SKYCMD_OPT_REPORT_TRUNCATION, 0), SKYCMD_OK);
    skycmd_response_free(resp);
    skycmd_request_free(req);
    cJSON_free(plain);
}

static void run_truncation_case(lmodel *lm, skycmd_session *sess, const cJSON *c, const char *mname, counts *n) {
    char where[300], why[200];
    lcase k;
    case_open(lm, c, &k);
    const char *cname = k.cname;
    case_decide(sess, mname, &k);
    const cJSON *ours = jget(k.wire, "usage"), *laya = jget(c, "usage");
    char *a = cJSON_PrintUnformatted(ours), *b = cJSON_PrintUnformatted(laya);
    cr_assert(cJSON_Compare(ours, laya, 1), "%s %s: usage %s, laya %s", mname, cname, a, b);
    free(a);
    free(b);
    size_t i = 0;
    const cJSON *q;
    cJSON_ArrayForEach(q, jget(c, "questions")) {
        snprintf(where, sizeof where, "%s %s/%s", mname, cname, jget(q, "id")->valuestring);
        cr_assert_eq(case_build(lm, &k, &k.ir.q[i], 0, k.sids.n, k.ir.state_is_list), SKYCMD_OK);
        cr_assert(same_ints(jget(q, "ids"), k.ids.v, k.ids.n, why, sizeof why), "%s: ids: %s", where, why);
        int listed = 0;
        const cJSON *t;
        cJSON_ArrayForEach(t, jget(laya, "truncated_questions")) listed |= strcmp(t->valuestring, jget(q, "id")->valuestring) == 0;
        cr_assert_eq(skycmd_response_answer_truncated(k.resp, i), listed, "%s: answer truncated", where);
        n->windows_built++;
        check_probs(k.resp, i, q, where, n);
        i++;
    }
    bounded_report_agrees(sess, c, k.body, mname, cname, n);
    case_close(&k);
}

/* Every model of the manifest whose tokenizer is (sentencepiece = 1) or is not (0) the
 * SentencePiece one; returns how many ran. */
static size_t run_golden_models(int sentencepiece) {
    char path[1200];
    snprintf(path, sizeof path, "%s/long/manifest.json", SKYCMD_FIXTURES);
    cJSON *man = tu_load_json(path);
    const cJSON *entry;
    size_t n_models = 0;
    cJSON_ArrayForEach(entry, jget(man, "models")) {
        const char *mname = jget(entry, "model")->valuestring;
        if ((strcmp(mname, "mmbert-tiny") == 0) != sentencepiece) continue;
        char scratch[1000] = "";
        lmodel lm = {0};
        open_model(entry, &lm, scratch, sizeof scratch);
        snprintf(path, sizeof path, "%s/long/%s", SKYCMD_FIXTURES, jget(entry, "fixture")->valuestring);
        cJSON *fx = tu_load_json(path);
        cr_assert_eq((int64_t)jnum(fx, "max_len"), lm.max_len, "%s: max_len", mname);
        cr_assert_eq((int64_t)jnum(fx, "head_max_len"), lm.head_max, "%s: head_max_len", mname);
        skycmd_session *sess = NULL;
        cr_assert_eq(skycmd_session_new(lm.model, &sess), SKYCMD_OK);
        counts n = {0};
        const cJSON *c;
        cJSON_ArrayForEach(c, jget(fx, "cases")) {
            const char *cname = jget(c, "name")->valuestring, *kind = jget(c, "kind")->valuestring;
            n.cases++;
            if (jget(c, "error")) {
                const char *body = jget(c, "body")->valuestring;
                /* refused by the parser (an option count past the cap) or by the decide (a
                 * window and stride laya refuses) */
                skycmd_request *req = NULL;
                skycmd_response *resp = NULL;
                int st = skycmd_request_parse(body, strlen(body), &req);
                const char *why_ours = st == SKYCMD_OK ? "" : skycmd_request_errmsg(req);
                if (st == SKYCMD_OK) {
                    st = skycmd_decide(sess, req, &resp);
                    why_ours = skycmd_session_errmsg(sess);
                }
                cr_assert_eq(st, SKYCMD_E_REQUEST, "%s %s: laya refuses this (%s); we gave %s", mname, cname,
                             jget(c, "error")->valuestring, skycmd_status_name(st));
                cr_assert(strlen(why_ours) > 0, "%s %s: a refusal says why", mname, cname);
                cr_assert_null(resp);
                skycmd_request_free(req);
                n.errors++;
            } else if (strcmp(kind, "long") == 0) {
                run_long_case(&lm, sess, c, mname, &n);
            } else if (strcmp(kind, "truncation") == 0) {
                run_truncation_case(&lm, sess, c, mname, &n);
            } else {
                run_tournament_case(&lm, sess, c, mname, &n);
            }
        }
        printf("long golden %s F32: %zu cases (%zu refused) | %zu sequences' ids+markers equal laya's, %zu windows "
               "re-tokenized to other ids than their slice | %zu answers, %zu probabilities, max|dp| %.3g (at %s) | "
               "%zu gated tournament answers\n",
               mname, n.cases, n.errors, n.windows_built, n.retokenized_differently, n.answers, n.probs, n.max_dp,
               n.where, n.gated);
        cr_assert_gt(n.answers, 0);
        /* the cases that matter must be there: windows that read other ids than their slice
         * (the SentencePiece checkpoint), and a gated tournament (every model) */
        cr_assert_gt(n.gated, 0, "%s: no gated tournament case", mname);
        if (strcmp(mname, "mmbert-tiny") == 0)
            cr_assert_gt(n.retokenized_differently, 0, "%s: no window re-tokenized differently", mname);
        skycmd_session_free(sess);
        cr_assert_eq(skycmd_model_free(lm.model), SKYCMD_OK);
        sk_ids_free(&lm.tc.ids);
        cJSON_Delete(fx);
        if (scratch[0]) tu_rm_rf(scratch);
        n_models++;
    }
    cJSON_Delete(man);
    return n_models;
}

/* byte-level BPE checkpoints: s1-pico and laya-5x-f32-d128 */
Test(long_golden, agrees_with_laya) { cr_assert_eq(run_golden_models(0), 2, "both BPE fixture models ran"); }

/* the Gemma-style SentencePiece checkpoint, multilingual states whose windows re-tokenize
 * to other ids than their slices (1024-token sequences: slow under emulation) */
Test(long_golden, sentencepiece_agrees_with_laya) {
    cr_assert_eq(run_golden_models(1), 1, "the SentencePiece fixture model ran");
}

/* ------------------------------------------------------------------ opt-in ---------- */

static skycmd_model *pico(char *scratch, size_t cap) {
    tu_scratch_make(scratch, cap, "long", "optin");
    char dir[1400];
    snprintf(dir, sizeof dir, "%s/m.gguf", scratch);
    skycmd_options *o = skycmd_options_new();
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_SEED, 7), SKYCMD_OK);
    cr_assert_eq(skycmd_random_model("s1-pico", dir, o, NULL), SKYCMD_OK);
    skycmd_model *m = NULL;
    cr_assert_eq(skycmd_model_open(dir, NULL, &m, NULL), SKYCMD_OK);
    skycmd_options_free(o);
    return m;
}

static char *decide_json(skycmd_session *s, const char *body) {
    char *out = NULL;
    int st = skycmd_decide_json(s, body, strlen(body), &out);
    cr_assert_eq(st, SKYCMD_OK, "%s: %s", body, skycmd_session_errmsg(s));
    return out;
}

#define PLAIN_Q "\"questions\":{\"n\":{\"type\":\"noul\",\"instructions\":\"Is it?\"}," \
    "\"c\":{\"type\":\"choice\",\"instructions\":\"Pick\",\"criteria\":{\"a\":\"x\",\"b\":\"y\"}}}"

Test(long_optin, default_wire_is_unchanged) {
    char scratch[1000];
    skycmd_model *m = pico(scratch, sizeof scratch);
    skycmd_session *s = NULL;
    cr_assert_eq(skycmd_session_new(m, &s), SKYCMD_OK);
    const char *plain = "{\"state\":\"a short state\"," PLAIN_Q "}";
    const char *off = "{\"state\":\"a short state\",\"long\":false,\"report_truncation\":false,"
                      "\"tournament_group\":0," PLAIN_Q "}";
    char *a = decide_json(s, plain), *b = decide_json(s, off);
    cr_assert_str_eq(a, b, "controls that are off change nothing");
    cJSON *j = cJSON_Parse(a);
    cr_assert_eq(cJSON_GetArraySize(jget(j, "usage")), 2, "usage keeps input_tokens and output_tokens only: %s", a);
    cr_assert_null(jget(jget(jget(j, "answers"), "c"), "window"));
    cJSON_Delete(j);
    /* the one-pass answer through the multipass path (long on, state fits; report on) is the plain one */
    const char *lng = "{\"state\":\"a short state\",\"long\":true,\"report_truncation\":true," PLAIN_Q "}";
    char *c = decide_json(s, lng);
    cJSON *ja = cJSON_Parse(a), *jc = cJSON_Parse(c);
    cr_assert(cJSON_Compare(jget(ja, "answers"), jget(jc, "answers"), 1), "%s\nvs\n%s", a, c);
    cr_assert_eq(jnum(jget(jc, "usage"), "windows"), 1);
    cr_assert_eq(jnum(jget(jc, "usage"), "input_tokens"), jnum(jget(ja, "usage"), "input_tokens"));
    cr_assert(cJSON_IsFalse(jget(jget(jc, "usage"), "truncated")));
    cJSON_Delete(ja);
    cJSON_Delete(jc);
    /* session options do the same as the body */
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_LONG, 1), SKYCMD_OK);
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_REPORT_TRUNCATION, 1), SKYCMD_OK);
    char *d = decide_json(s, plain);
    cr_assert_str_eq(c, d);
    /* and the body can turn them off again */
    char *e = decide_json(s, off);
    cr_assert_str_eq(a, e);
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_TOURNAMENT_GROUP, 1), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_TOURNAMENT_GROUP, 101), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_REPORT_TRUNCATION, 4), SKYCMD_E_INVALID_ARGUMENT);
    skycmd_string_free(a);
    skycmd_string_free(b);
    skycmd_string_free(c);
    skycmd_string_free(d);
    skycmd_string_free(e);
    skycmd_session_free(s);
    cr_assert_eq(skycmd_model_free(m), SKYCMD_OK);
    tu_rm_rf(scratch);
}

Test(long_optin, bad_controls_are_refused) {
    static const char *bad[] = {
        "{\"state\":\"s\",\"long\":1," PLAIN_Q "}",
        "{\"state\":\"s\",\"window\":8," PLAIN_Q "}",
        "{\"state\":\"s\",\"long\":true,\"window\":-1," PLAIN_Q "}",
        "{\"state\":\"s\",\"long\":true,\"stride\":2.5," PLAIN_Q "}",
        "{\"state\":\"s\",\"tournament_group\":1," PLAIN_Q "}",
        "{\"state\":\"s\",\"tournament_group\":101," PLAIN_Q "}",
        "{\"state\":\"s\",\"tournament_group\":true," PLAIN_Q "}",
        "{\"state\":\"s\",\"long\":true,\"tournament_group\":4," PLAIN_Q "}",
        "{\"state\":\"s\",\"report_truncation\":\"yes\"," PLAIN_Q "}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        skycmd_request *r = NULL;
        int st = skycmd_request_parse(bad[i], strlen(bad[i]), &r);
        cr_assert_eq(st, SKYCMD_E_REQUEST, "%s: %s", bad[i], skycmd_status_name(st));
        cr_assert(strlen(skycmd_request_errmsg(r)) > 0);
        skycmd_request_free(r);
    }
}

Test(long_optin, accessors_are_null_safe) {
    int64_t a, b, c, d;
    cr_assert_eq(skycmd_response_windows(NULL), 0);
    cr_assert_eq(skycmd_response_answer_window(NULL, 0, &a, &b, &c, &d), SKYCMD_E_MISUSE);
    cr_assert_eq(skycmd_response_truncated(NULL), -1);
    cr_assert_eq(skycmd_response_state_tokens(NULL), -1);
    cr_assert_eq(skycmd_response_state_tokens_dropped(NULL), -1);
    cr_assert_eq(skycmd_response_answer_truncated(NULL, 0), -1);
    cr_assert_eq(skycmd_response_answer_options_distinct(NULL, 0), -1);
    cr_assert_eq(skycmd_response_answer_rounds(NULL, 0), -1);
}

/* skycmd_decide_batch (the server's batching) answers a long request, a tournament and a plain
 * one exactly as three lone skycmd_decide calls do. */
Test(long_optin, batch_equals_lone_decides) {
    char scratch[1000];
    skycmd_model *m = pico(scratch, sizeof scratch);
    skycmd_session *s = NULL;
    cr_assert_eq(skycmd_session_new(m, &s), SKYCMD_OK);
    char big[12000] = "{\"state\":\"";
    for (int i = 0; i < 300; i++) snprintf(big + strlen(big), sizeof big - strlen(big), "word%d is here. ", i);
    snprintf(big + strlen(big), sizeof big - strlen(big), "\",\"long\":true,\"window\":40," PLAIN_Q "}");
    char opts[4000] = "";
    for (int i = 0; i < 40; i++) snprintf(opts + strlen(opts), sizeof opts - strlen(opts), "%s\"o%d\":\"option %d\"",
                                          i ? "," : "", i, i);
    char tour[5000];
    snprintf(tour, sizeof tour, "{\"state\":\"s\",\"tournament_group\":6,\"questions\":{\"c\":{\"type\":\"choice\","
             "\"instructions\":\"Pick\",\"criteria\":{%s}}}}", opts);
    const char *bodies[3] = {big, tour, "{\"state\":\"plain\"," PLAIN_Q "}"};
    skycmd_request *reqs[3];
    skycmd_response *lone[3], *batch[3];
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(skycmd_request_parse(bodies[i], strlen(bodies[i]), &reqs[i]), SKYCMD_OK, "%s",
                     skycmd_request_errmsg(reqs[i]));
        cr_assert_eq(skycmd_decide(s, reqs[i], &lone[i]), SKYCMD_OK, "%s", skycmd_session_errmsg(s));
    }
    cr_assert_eq(skycmd_decide_batch(s, (const skycmd_request *const *)reqs, 3, batch), SKYCMD_OK, "%s",
                 skycmd_session_errmsg(s));
    for (int i = 0; i < 3; i++) {
        cr_assert_str_eq(skycmd_response_json(batch[i]), skycmd_response_json(lone[i]), "request %d", i);
        skycmd_response_free(lone[i]);
        skycmd_response_free(batch[i]);
        skycmd_request_free(reqs[i]);
    }
    cr_assert_gt(strlen(bodies[0]), 3000);
    skycmd_session_free(s);
    cr_assert_eq(skycmd_model_free(m), SKYCMD_OK);
    tu_rm_rf(scratch);
}

/* A null score level is rendered "null" (the text the prompt shows) in the legend and by the
 * accessor: never a JSON null, which the official SDK cannot parse. */
Test(request_path, null_score_level_legend_is_a_string) {
    char scratch[1000];
    skycmd_model *m = pico(scratch, sizeof scratch);
    skycmd_session *s = NULL;
    cr_assert_eq(skycmd_session_new(m, &s), SKYCMD_OK);
    const char *body = "{\"state\":\"s\",\"questions\":{\"q\":{\"type\":\"score\",\"instructions\":\"How?\","
                       "\"criteria\":[\"low\",null,\"high\"]}}}";
    char *out = decide_json(s, body);
    cJSON *j = cJSON_Parse(out);
    const cJSON *lg = jget(jget(jget(j, "answers"), "q"), "legend");
    cr_assert(cJSON_IsString(jget(lg, "1")) && strcmp(jget(lg, "1")->valuestring, "null") == 0, "%s", out);
    skycmd_request *req = NULL;
    skycmd_response *resp = NULL;
    cr_assert_eq(skycmd_request_parse(body, strlen(body), &req), SKYCMD_OK);
    cr_assert_eq(skycmd_decide(s, req, &resp), SKYCMD_OK);
    cr_assert_str_eq(skycmd_response_option_legend(resp, 0, 1), "null");
    cr_assert_str_eq(skycmd_response_option_legend(resp, 0, 2), "high");
    skycmd_response_free(resp);
    skycmd_request_free(req);
    cJSON_Delete(j);
    skycmd_string_free(out);
    skycmd_session_free(s);
    skycmd_model_free(m);
    tu_rm_rf(scratch);
}

/* A body's budgets are its request's (laya serve's max_len / head_max_len) in every decide
 * call, validated with laya serve's messages; the cap is SKYCMD_OPT_MAX_TOKEN_BUDGET. */
Test(request_path, body_budgets_apply_and_are_capped) {
    char scratch[1000];
    skycmd_model *m = pico(scratch, sizeof scratch);
    skycmd_session *s = NULL;
    cr_assert_eq(skycmd_session_new(m, &s), SKYCMD_OK);
    char body[4096];
    snprintf(body, sizeof body, "{\"state\":\"%s\",\"max_len\":64," PLAIN_Q "}",
             "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
             "seventeen eighteen nineteen twenty twenty-one twenty-two twenty-three twenty-four twenty-five");
    char *a = decide_json(s, body);
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_MAX_LEN, 64), SKYCMD_OK);
    char *plain = strstr(body, ",\"max_len\":64");
    memmove(plain, plain + strlen(",\"max_len\":64"), strlen(plain + strlen(",\"max_len\":64")) + 1);
    char *b = decide_json(s, body);
    cr_assert_str_eq(a, b, "a body's max_len is the session option's for that request");
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_MAX_LEN, 0), SKYCMD_OK);
    char *c = decide_json(s, body);
    cr_assert_str_neq(a, c, "the budget changes the answer of a long state");
    char *out = NULL;
    const char *big = "{\"state\":\"s\",\"max_len\":9000," PLAIN_Q "}";
    cr_assert_eq(skycmd_decide_json(s, big, strlen(big), &out), SKYCMD_E_REQUEST);
    cr_assert_str_eq(skycmd_session_errmsg(s), "max_len exceeds server limit (9000 > 8192)");
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_MAX_TOKEN_BUDGET, 9000), SKYCMD_OK);
    char *d = decide_json(s, big);
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_MAX_TOKEN_BUDGET, 0), SKYCMD_E_INVALID_ARGUMENT);
    const char *zero = "{\"state\":\"s\",\"head_max_len\":0," PLAIN_Q "}";
    cr_assert_eq(skycmd_decide_json(s, zero, strlen(zero), &out), SKYCMD_E_REQUEST);
    cr_assert_str_eq(skycmd_session_errmsg(s), "head_max_len must be a positive integer");
    skycmd_string_free(a);
    skycmd_string_free(b);
    skycmd_string_free(c);
    skycmd_string_free(d);
    skycmd_session_free(s);
    skycmd_model_free(m);
    tu_rm_rf(scratch);
}

/* A body of one choice over n options "Queue 001".., described, with `extra` fields. */
static char *many_options_body(size_t n, const char *extra) {
    size_t cap = 200 + n * 64 + strlen(extra);
    char *b = malloc(cap);
    cr_assert(b != NULL);
    size_t k = (size_t)snprintf(b, cap, "{\"state\":\"I was charged twice\",%s\"questions\":{\"queue\":"
                                "{\"type\":\"choice\",\"instructions\":\"Which queue?\",\"criteria\":{", extra);
    for (size_t i = 0; i < n; i++)
        k += (size_t)snprintf(b + k, cap - k, "%s\"Queue %03zu\":\"Tickets routed to queue %zu\"", i ? "," : "", i, i);
    snprintf(b + k, cap - k, "}}}}");
    return b;
}

/* A choice whose options do not fit one pass is answered by elimination in groups of 16
 * (SKYCMD_OPT_AUTO_TOURNAMENT_GROUP, default 16): exactly the answer the body gets with
 * "tournament_group": 16 (laya serve with LAYA_TOURNAMENT_GROUP=16, whose rounds
 * long_golden checks); a choice that fits keeps one pass; 0 refuses as laya's Agent does. */
Test(request_path, overflowing_choice_is_a_tournament_of_16) {
    char scratch[1000];
    skycmd_model *m = pico(scratch, sizeof scratch);
    skycmd_session *s = NULL;
    cr_assert_eq(skycmd_session_new(m, &s), SKYCMD_OK);
    int64_t lo = -1, hi = -1;
    cr_assert_eq(skycmd_option_bounds(SKYCMD_OPT_AUTO_TOURNAMENT_GROUP, &lo, &hi), SKYCMD_OK);
    cr_assert(lo == 0 && hi == 100);
    char *auto_body = many_options_body(64, ""), *group_body = many_options_body(64, "\"tournament_group\":16,");
    char *a = decide_json(s, auto_body), *g = decide_json(s, group_body);
    cr_assert_str_eq(a, g, "the automatic tournament is the group-16 one");
    cJSON *j = cJSON_Parse(a);
    const cJSON *ans = jget(jget(j, "answers"), "queue");
    cr_assert(jnum(jget(ans, "x_tournament"), "rounds") >= 1, "%s", a);
    cr_assert_eq(cJSON_GetArraySize(jget(ans, "probabilities")), 64);
    cJSON_Delete(j);
    skycmd_string_free(a);
    skycmd_string_free(g);
    /* 20 options that fit one pass: one pass, no x_tournament */
    char *fits = many_options_body(20, "");
    a = decide_json(s, fits);
    cr_assert(strstr(a, "x_tournament") == NULL, "%s", a);
    skycmd_string_free(a);
    /* off: laya's refusal */
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_AUTO_TOURNAMENT_GROUP, 1), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_AUTO_TOURNAMENT_GROUP, 0), SKYCMD_OK);
    char *out = NULL;
    cr_assert_eq(skycmd_decide_json(s, auto_body, strlen(auto_body), &out), SKYCMD_E_REQUEST);
    cr_assert(strstr(skycmd_session_errmsg(s), "option markers fit in max_len=") != NULL, "%s",
              skycmd_session_errmsg(s));
    free(auto_body);
    free(group_body);
    free(fits);
    skycmd_session_free(s);
    skycmd_model_free(m);
    tu_rm_rf(scratch);
}

/* Jev reads a noul without instructions by its criteria: answered as a noul with empty
 * instructions, null instructions the same; a choice or score without them is refused. */
Test(request_path, noul_without_instructions_is_answered) {
    char scratch[1000];
    skycmd_model *m = pico(scratch, sizeof scratch);
    skycmd_session *s = NULL;
    cr_assert_eq(skycmd_session_new(m, &s), SKYCMD_OK);
    char *a = decide_json(s, "{\"state\":\"s\",\"questions\":{\"t\":{\"type\":\"noul\",\"criteria\":{\"true\":\"a threat\"}}}}");
    char *b = decide_json(s, "{\"state\":\"s\",\"questions\":{\"t\":{\"type\":\"noul\",\"instructions\":null,"
                             "\"criteria\":{\"true\":\"a threat\"}}}}");
    char *c = decide_json(s, "{\"state\":\"s\",\"questions\":{\"t\":{\"type\":\"noul\",\"instructions\":\"\","
                             "\"criteria\":{\"true\":\"a threat\"}}}}");
    cr_assert_str_eq(a, b);
    cr_assert_str_eq(a, c, "absent instructions are empty ones");
    skycmd_request *req = NULL;
    const char *choice = "{\"state\":\"s\",\"questions\":{\"c\":{\"type\":\"choice\",\"criteria\":{\"x\":null,\"y\":null}}}}";
    cr_assert_eq(skycmd_request_parse(choice, strlen(choice), &req), SKYCMD_E_REQUEST);
    cr_assert(strstr(skycmd_request_errmsg(req), "\"instructions\" must be provided") != NULL);
    skycmd_request_free(req);
    skycmd_string_free(a);
    skycmd_string_free(b);
    skycmd_string_free(c);
    skycmd_session_free(s);
    skycmd_model_free(m);
    tu_rm_rf(scratch);
}
