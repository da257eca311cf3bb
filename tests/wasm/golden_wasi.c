/*
 * golden_wasi.c - the golden suite's checks (tests/test_golden.c) without Criterion, so that
 * they run in WebAssembly under Node's WASI (tests/wasm/run.sh) and, built from the same
 * source, natively for the comparison:
 *
 *   golden-wasi MODEL.gguf REQUESTS.json FIXTURE.json [TOL]
 *
 * MODEL.gguf is the fixture's model converted to F32 (run.sh makes it with the native CLI);
 * REQUESTS.json and FIXTURE.json are tests/fixtures/golden/requests.json and <model>.json.
 * Per request, against the Python reference (laya): the token ids and markers of every
 * question (the prompt builder on the model's own tokenizer, exactly what skycmd_decide
 * runs), usage.input_tokens, the option keys, every probability within TOL (default 1e-4,
 * test_golden's F32 bound), and the refusals. Stdout: one line per request, the response
 * JSON or {"error": STATUS_NAME}, for comparing wasm with native (tests/wasm/compare.py).
 * Stderr: mismatches (the first 15) and a summary line. Exit 0 none, 1 mismatches or error.
 */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "skycmd.h"
#include "decide/request.h"
#include "prompt/prompt.h"
#include "tokenizer/tokenizer.h"
#include "../tok_encode.h"

static size_t g_fail;

static void mismatch(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void mismatch(const char *fmt, ...) {
    if (g_fail++ < 15) {
        va_list ap;
        va_start(ap, fmt);
        fputs("  mismatch: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (size_t r; buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
        n += r;
        if (n + 1 == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    *len = n;
    return buf;
}

static cJSON *load_json(const char *path) {
    size_t n = 0;
    char *t = slurp(path, &n);
    cJSON *j = t ? cJSON_ParseWithLength(t, n) : NULL;
    free(t);
    if (!j) fprintf(stderr, "golden-wasi: %s: cannot read or parse\n", path);
    return j;
}

static double jnum(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static int same_ints(const cJSON *arr, const sk_i32v *got) {
    size_t i = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, arr) {
        if (i >= got->n || got->v[i] != (int32_t)x->valuedouble) return 0;
        i++;
    }
    return i == got->n;
}

/* Bodies laya refuses that the Jev protocol answers (test_golden.c jev_answers). */
static int jev_answers(const char *name) {
    return !strcmp(name, "error-no-instructions") || !strcmp(name, "error-null-instructions") ||
           !strcmp(name, "error-markers-past-max-len");
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: golden-wasi MODEL.gguf REQUESTS.json FIXTURE.json [TOL]\n");
        return 2;
    }
    const double tol = argc > 4 ? strtod(argv[4], NULL) : 1e-4;
    size_t model_len = 0;
    char *model_bytes = slurp(argv[1], &model_len);
    cJSON *reqs = load_json(argv[2]), *fx = load_json(argv[3]);
    if (!model_bytes || !reqs || !fx) return 1;
    skycmd_error *err = skycmd_error_new();
    skycmd_model *model = NULL;
    skycmd_session *sess = NULL;
    if (skycmd_model_open_buffer(model_bytes, model_len, NULL, &model, err) != SKYCMD_OK ||
        skycmd_session_new(model, &sess) != SKYCMD_OK) {
        fprintf(stderr, "golden-wasi: %s: %s\n", argv[1], skycmd_error_message(err));
        return 1;
    }
    int64_t max_len = 0, head_max = 0;
    (void)skycmd_model_get_int(model, "decision.max_tokens", &max_len);
    (void)skycmd_model_get_int(model, "decision.max_head_tokens", &head_max);
    const skycmd_tokenizer *tok = skycmd_model_tokenizer(model);
    tu_tok_ctx tc = {tok, {0}};
    sk_prompt_tok pt = tu_prompt_tok(&tc);
    sk_prompt_ws ws = {0};
    sk_i32v sids = {0}, ids = {0}, marks = {0};
    size_t n_req = 0, n_q = 0, n_ids = 0, n_err = 0;
    double max_dp = 0;

    const cJSON *rq = cJSON_GetObjectItemCaseSensitive(fx, "cases");
    rq = rq ? rq->child : NULL;
    for (const cJSON *r = reqs->child; r && rq; r = r->next, rq = rq->next) {
        const char *name = cJSON_GetObjectItemCaseSensitive(r, "name")->valuestring;
        const char *body = cJSON_GetObjectItemCaseSensitive(r, "body")->valuestring;
        char *out = NULL;
        const int st = skycmd_decide_json(sess, body, strlen(body), &out);
        if (st != SKYCMD_OK) printf("{\"error\":\"%s\"}\n", skycmd_status_name(st));
        else puts(out);
        const int laya_refuses = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(rq, "error"));
        if (laya_refuses) {
            n_err++;
            if (jev_answers(name) && st != SKYCMD_OK)
                mismatch("%s: the Jev protocol answers this body: %s", name, skycmd_status_name(st));
            else if (!jev_answers(name) && st == SKYCMD_OK)
                mismatch("%s: laya refuses this body; we accepted it", name);
            skycmd_string_free(out);
            continue;
        }
        if (st != SKYCMD_OK) {
            mismatch("%s: %s: %s", name, skycmd_status_name(st), skycmd_session_errmsg(sess));
            continue;
        }
        n_req++;
        cJSON *resp = cJSON_Parse(out);
        skycmd_string_free(out);
        const cJSON *usage = cJSON_GetObjectItemCaseSensitive(resp, "usage");
        if (jnum(usage, "input_tokens") != jnum(rq, "input_tokens"))
            mismatch("%s: input_tokens %g, laya %g", name, jnum(usage, "input_tokens"),
                     jnum(rq, "input_tokens"));
        sk_request ir;
        sk_err ie = {0};
        if (sk_request_parse(body, strlen(body), &ir, &ie) != SKYCMD_OK ||
            sk_prompt_state_ids(&pt, ir.state.s, ir.state.n, &ws, &sids, &ie) != SKYCMD_OK) {
            mismatch("%s: request/state: %s", name, ie.msg);
            cJSON_Delete(resp);
            continue;
        }
        const cJSON *answers = cJSON_GetObjectItemCaseSensitive(resp, "answers");
        size_t qi = 0;
        const cJSON *q;
        cJSON_ArrayForEach(q, cJSON_GetObjectItemCaseSensitive(rq, "questions")) {
            const char *qid = cJSON_GetObjectItemCaseSensitive(q, "id")->valuestring;
            n_q++;
            if (qi >= ir.nq) {
                mismatch("%s/%s: question missing", name, qid);
                break;
            }
            const sk_rquestion *rq2 = &ir.q[qi++];
            int bst = sk_prompt_build(&pt, sk_qtype_names[rq2->type], rq2->ins.s, rq2->ins.n,
                                      rq2->order ? rq2->slot_text : &rq2->opts[0].text,
                                      rq2->order ? sizeof(sk_jstr) : sizeof(sk_roption), rq2->n_opts,
                                      sids.v, sids.n, ir.state_is_list,
                                      (ir.ctl_set & SK_CTL_MAX_LEN) ? (size_t)ir.ctl_max_len : (size_t)max_len,
                                      (ir.ctl_set & SK_CTL_HEAD_MAX_LEN) ? (size_t)ir.ctl_head_max_len
                                                                         : (size_t)head_max,
                                      &ws, &ids, &marks, &ie);
            if (bst != SKYCMD_OK) {
                mismatch("%s/%s: prompt: %s", name, qid, ie.msg);
            } else {
                if (!same_ints(cJSON_GetObjectItemCaseSensitive(q, "ids"), &ids))
                    mismatch("%s/%s: token ids differ from laya's", name, qid);
                else if (!same_ints(cJSON_GetObjectItemCaseSensitive(q, "markers"), &marks))
                    mismatch("%s/%s: markers differ from laya's", name, qid);
                else
                    n_ids++;
            }
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(answers, qid);
            const cJSON *probs = cJSON_GetObjectItemCaseSensitive(a, "probabilities");
            const cJSON *keys = cJSON_GetObjectItemCaseSensitive(q, "keys");
            const cJSON *pl = cJSON_GetObjectItemCaseSensitive(q, "probabilities");
            /* a noul answer has no probabilities in the response: laya's are of its two
             * internal options, checked through the value by test_golden */
            if (!probs) continue;
            if (cJSON_GetArraySize(probs) != cJSON_GetArraySize(pl)) {
                mismatch("%s/%s: %d options, laya %d", name, qid, cJSON_GetArraySize(probs),
                         cJSON_GetArraySize(pl));
                continue;
            }
            for (int j = 0; j < cJSON_GetArraySize(pl); j++) {
                const char *key = cJSON_GetArrayItem(keys, j)->valuestring;
                const cJSON *p = cJSON_GetObjectItemCaseSensitive(probs, key);
                const double d = p ? fabs(p->valuedouble - cJSON_GetArrayItem(pl, j)->valuedouble) : NAN;
                if (!(d <= tol)) mismatch("%s/%s: p[%s] |d| %.3g > %.0e", name, qid, key, d, tol);
                if (d > max_dp || d != d) max_dp = d;
            }
        }
        sk_request_free(&ir);
        cJSON_Delete(resp);
    }
    fprintf(stderr, "golden %s: %zu requests answered, %zu refused as laya does, %zu questions, ids and "
            "markers identical for %zu, max |dp| vs laya %.3g, %zu mismatches\n",
            cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(fx, "model")), n_req, n_err, n_q, n_ids,
            max_dp, g_fail);
    sk_i32v_free(&sids);
    sk_i32v_free(&ids);
    sk_i32v_free(&marks);
    sk_prompt_ws_free(&ws);
    sk_ids_free(&tc.ids);
    skycmd_session_free(sess);
    skycmd_model_free(model);
    skycmd_error_free(err);
    free(model_bytes);
    cJSON_Delete(reqs);
    cJSON_Delete(fx);
    return g_fail || n_ids != n_q || n_req < 40 ? 1 : 0;
}
