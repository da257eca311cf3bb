/* response.c - skycmd_response: the answers of one decide call, through typed accessors (so
 * bindings need no JSON parser) and as JSON, written when first asked for. Owns copies of
 * every string it reports. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "handles.h"

int sk_response_new(const sk_request *r, const sk_answer *a, const char *model_name,
                    int64_t input_tokens, skycmd_response **out, sk_err *e) {
    *out = NULL;
    skycmd_response *resp = calloc(1, sizeof *resp);
    if (!resp) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory building the response");
    resp->tag = SK_TAG_RESPONSE;
    resp->input_tokens = input_tokens;
    resp->n = r->nq;
    const char *mn = model_name ? model_name : "";
    const size_t mlen = strlen(mn);
    char *model = sk_arena_alloc(&resp->arena, mlen + 1);
    if (model) memcpy(model, mn, mlen + 1);
    resp->model = model;
    resp->a = sk_answer_json_copy(r, a, &resp->arena);
    if (!resp->model || !resp->a) {
        skycmd_response_free(resp);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory building the response");
    }
    *out = resp;
    return 0;
}

static const sk_answer_json *answer_at(const skycmd_response *r, size_t i) {
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

/* Written on first use: callers that read the typed accessors never pay for it. A response
 * belongs to one thread at a time, so the lazily kept text needs no lock. */
const char *skycmd_response_json(const skycmd_response *resp) {
    if (!resp || resp->tag != SK_TAG_RESPONSE) return NULL;
    if (!resp->json) {
        sk_buf b;
        sk_buf_init(&b);
        sk_response_json_write_ext(&b, resp->model, resp->a, resp->n, resp->input_tokens, &resp->x);
        ((skycmd_response *)resp)->json = sk_buf_detach(&b); /* NULL: out of memory */
    }
    return resp->json;
}

size_t skycmd_response_answer_count(const skycmd_response *resp) {
    return resp && resp->tag == SK_TAG_RESPONSE ? resp->n : 0;
}

int64_t skycmd_response_input_tokens(const skycmd_response *resp) {
    return resp && resp->tag == SK_TAG_RESPONSE ? resp->input_tokens : -1;
}

const char *skycmd_response_answer_id(const skycmd_response *resp, size_t i) {
    const sk_answer_json *a = answer_at(resp, i);
    return a ? a->id : NULL;
}

int skycmd_response_answer_type(const skycmd_response *resp, size_t i) {
    const sk_answer_json *a = answer_at(resp, i);
    return a ? a->type : -1;
}

const char *skycmd_response_answer_choice(const skycmd_response *resp, size_t i) {
    const sk_answer_json *a = answer_at(resp, i);
    return a && a->type == SKYCMD_QTYPE_CHOICE ? a->keys[a->best] : NULL;
}

double skycmd_response_answer_value(const skycmd_response *resp, size_t i) {
    const sk_answer_json *a = answer_at(resp, i);
    return a ? a->value : NAN;
}

double skycmd_response_answer_confidence(const skycmd_response *resp, size_t i) {
    const sk_answer_json *a = answer_at(resp, i);
    return a ? a->confidence : NAN;
}

size_t skycmd_response_option_count(const skycmd_response *resp, size_t i) {
    const sk_answer_json *a = answer_at(resp, i);
    return a ? a->n : 0;
}

const char *skycmd_response_option_key(const skycmd_response *resp, size_t i, size_t j) {
    const sk_answer_json *a = answer_at(resp, i);
    return a && j < a->n ? a->keys[j] : NULL;
}

double skycmd_response_option_probability(const skycmd_response *resp, size_t i, size_t j) {
    const sk_answer_json *a = answer_at(resp, i);
    return a && j < a->n ? a->p[j] : NAN;
}

const char *skycmd_response_model(const skycmd_response *resp) {
    return resp && resp->tag == SK_TAG_RESPONSE ? resp->model : NULL;
}

const char *skycmd_response_option_legend(const skycmd_response *resp, size_t i, size_t j) {
    const sk_answer_json *a = answer_at(resp, i);
    return a && a->level_legends && j < a->n ? a->level_legends[j] : NULL;
}

/* ---- the multipass additions (windows, truncation, tournament) ---- */

static const sk_answer_extra *extra_at(const skycmd_response *r, size_t i) {
    if (!r || r->tag != SK_TAG_RESPONSE || i >= r->n || !r->x.a) return NULL;
    return &r->x.a[i];
}

int64_t skycmd_response_windows(const skycmd_response *resp) {
    if (!resp || resp->tag != SK_TAG_RESPONSE || !resp->x.windows_on) return 0;
    return resp->x.windows;
}

int skycmd_response_answer_window(const skycmd_response *resp, size_t i, int64_t *index,
                                  int64_t *token_start, int64_t *token_end, int64_t *count) {
    if (!resp || resp->tag != SK_TAG_RESPONSE) return SKYCMD_E_MISUSE;
    if (i >= resp->n || !index || !token_start || !token_end || !count)
        return SKYCMD_E_INVALID_ARGUMENT;
    const sk_answer_extra *x = extra_at(resp, i);
    if (!x || !x->has_window) return SKYCMD_E_NOT_FOUND;
    *index = x->w_index;
    *token_start = x->w_start;
    *token_end = x->w_end;
    *count = x->w_count;
    return SKYCMD_OK;
}

int64_t skycmd_response_truncated(const skycmd_response *resp) {
    if (!resp || resp->tag != SK_TAG_RESPONSE || !resp->x.truncation) return -1;
    return resp->x.truncated;
}

int64_t skycmd_response_state_tokens(const skycmd_response *resp) {
    if (!resp || resp->tag != SK_TAG_RESPONSE || !resp->x.truncation) return -1;
    return resp->x.state_tokens;
}

int64_t skycmd_response_state_tokens_dropped(const skycmd_response *resp) {
    if (!resp || resp->tag != SK_TAG_RESPONSE || !resp->x.truncation) return -1;
    return resp->x.state_tokens_dropped;
}

int skycmd_response_answer_truncated(const skycmd_response *resp, size_t i) {
    const sk_answer_extra *x = extra_at(resp, i);
    if (!x || !resp->x.truncation) return -1;
    return x->truncated == 1;
}

int64_t skycmd_response_answer_options_distinct(const skycmd_response *resp, size_t i) {
    const sk_answer_extra *x = extra_at(resp, i);
    if (!x || !resp->x.truncation) return -1;
    return x->options_distinct;
}

int64_t skycmd_response_answer_rounds(const skycmd_response *resp, size_t i) {
    if (!resp || resp->tag != SK_TAG_RESPONSE || i >= resp->n) return -1;
    const sk_answer_extra *x = extra_at(resp, i);
    return x ? x->rounds : 0;
}

int skycmd_response_answer_abstention(const skycmd_response *resp, size_t i) {
    const sk_answer_json *a = answer_at(resp, i);
    return a ? a->gate : -1;
}

double skycmd_response_answer_abstention_threshold(const skycmd_response *resp, size_t i) {
    const sk_answer_json *a = answer_at(resp, i);
    return a && a->gate != SK_GATE_NONE ? a->gate_thr : NAN;
}
