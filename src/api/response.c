/* response.c - skycmd_response: the answers of one decide call, as JSON and through typed
 * accessors (so bindings need no JSON parser). Owns copies of every string it reports. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "handles.h"

static char *arena_str(sk_arena *a, const char *s, size_t n) {
    char *d = sk_arena_alloc(a, n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

int sk_response_new(const sk_request *r, const sk_answer *a, const char *json, size_t json_len,
                    int64_t input_tokens, skycmd_response **out, sk_err *e) {
    *out = NULL;
    skycmd_response *resp = calloc(1, sizeof *resp);
    if (!resp) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory building the response");
    resp->tag = SK_TAG_RESPONSE;
    resp->input_tokens = input_tokens;
    resp->json = sk_strndup(json, json_len);
    resp->n = r->nq;
    resp->a = sk_arena_alloc(&resp->arena, r->nq * sizeof *resp->a);
    if (!resp->json || !resp->a) goto nomem;
    for (size_t i = 0; i < r->nq; i++) {
        const sk_rquestion *q = &r->q[i];
        sk_resp_answer *ra = &resp->a[i];
        ra->id = arena_str(&resp->arena, q->id.s, q->id.n);
        ra->type = q->type;
        ra->best = a[i].best;
        ra->value = a[i].value;
        ra->confidence = a[i].confidence;
        ra->n = q->n_opts;
        ra->keys = sk_arena_alloc(&resp->arena, q->n_opts * sizeof *ra->keys);
        ra->p = sk_arena_alloc(&resp->arena, q->n_opts * sizeof *ra->p);
        if (!ra->id || !ra->keys || !ra->p) goto nomem;
        for (size_t j = 0; j < q->n_opts; j++) {
            ra->keys[j] = arena_str(&resp->arena, q->opts[j].key.s, q->opts[j].key.n);
            if (!ra->keys[j]) goto nomem;
            ra->p[j] = a[i].p[j];
        }
    }
    *out = resp;
    return 0;
nomem:
    skycmd_response_free(resp);
    return sk_fail(e, SKYCMD_E_NOMEM, "out of memory building the response");
}

static const sk_resp_answer *answer_at(const skycmd_response *r, size_t i) {
    if (!r || r->tag != SK_TAG_RESPONSE || i >= r->n) return NULL;
    return &r->a[i];
}

void skycmd_response_free(skycmd_response *resp) {
    if (!resp || resp->tag != SK_TAG_RESPONSE) return;
    free(resp->json);
    sk_arena_free(&resp->arena);
    resp->tag = SK_TAG_DEAD;
    free(resp);
}

const char *skycmd_response_json(const skycmd_response *resp) {
    return resp && resp->tag == SK_TAG_RESPONSE ? resp->json : NULL;
}

size_t skycmd_response_answer_count(const skycmd_response *resp) {
    return resp && resp->tag == SK_TAG_RESPONSE ? resp->n : 0;
}

int64_t skycmd_response_input_tokens(const skycmd_response *resp) {
    return resp && resp->tag == SK_TAG_RESPONSE ? resp->input_tokens : -1;
}

const char *skycmd_response_answer_id(const skycmd_response *resp, size_t i) {
    const sk_resp_answer *a = answer_at(resp, i);
    return a ? a->id : NULL;
}

int skycmd_response_answer_type(const skycmd_response *resp, size_t i) {
    const sk_resp_answer *a = answer_at(resp, i);
    return a ? a->type : -1;
}

const char *skycmd_response_answer_choice(const skycmd_response *resp, size_t i) {
    const sk_resp_answer *a = answer_at(resp, i);
    return a && a->type == SKYCMD_QTYPE_CHOICE ? a->keys[a->best] : NULL;
}

double skycmd_response_answer_value(const skycmd_response *resp, size_t i) {
    const sk_resp_answer *a = answer_at(resp, i);
    return a ? a->value : NAN;
}

double skycmd_response_answer_confidence(const skycmd_response *resp, size_t i) {
    const sk_resp_answer *a = answer_at(resp, i);
    return a ? a->confidence : NAN;
}

size_t skycmd_response_option_count(const skycmd_response *resp, size_t i) {
    const sk_resp_answer *a = answer_at(resp, i);
    return a ? a->n : 0;
}

const char *skycmd_response_option_key(const skycmd_response *resp, size_t i, size_t j) {
    const sk_resp_answer *a = answer_at(resp, i);
    return a && j < a->n ? a->keys[j] : NULL;
}

double skycmd_response_option_probability(const skycmd_response *resp, size_t i, size_t j) {
    const sk_resp_answer *a = answer_at(resp, i);
    return a && j < a->n ? a->p[j] : NAN;
}
