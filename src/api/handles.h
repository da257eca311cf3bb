/*
 * handles.h - definitions of the decide-side public handles: model, session, request and
 * response (model.c, session.c, request.c, response.c).
 *
 *  - skycmd_model: immutable after open (weights, tokenizer, temperatures, limits, name);
 *    the only mutable field is the atomic session count, so skycmd_model_free can refuse
 *    (SKYCMD_E_BUSY) while sessions exist.
 *  - skycmd_session: one thread's scratch, prompt work buffers and error message. Buffers
 *    grow to the largest request seen and are reused: a warm session allocates only the
 *    response it returns.
 *  - skycmd_response owns copies of everything it reports, so it outlives its request.
 */
#ifndef SK_HANDLES_H
#define SK_HANDLES_H

#include <stdatomic.h>

#include "api.h"
#include "../decide/decide.h"
#include "../decide/request.h"
#include "../gguf/gguf.h"
#include "../kernels/pool.h"
#include "../model/model.h"
#include "../prompt/prompt.h"
#include "../tokenizer/tokenizer.h"
#include "seqbatch.h"

#define SK_DEFAULT_MAX_TOKENS 512

struct skycmd_model {
    uint32_t tag;
    sk_gguf *g;                 /* the file (mapped or the caller's buffer) */
    uint8_t *gguf_buf;          /* a Laya directory converted in memory (owned), else NULL */
    sk_model *m;
    skycmd_tokenizer *tok;      /* owned_by_model = 1 */
    sk_temps temps;
    char *name;
    size_t max_len;             /* decision.max_tokens or SKYCMD_OPT_MAX_TOKENS */
    size_t head_max_len;        /* decision.max_head_tokens */
    int32_t cls, sep, mask;
    char *mask_text;
    atomic_size_t sessions;
};

struct skycmd_session {
    uint32_t tag;
    skycmd_model *model;
    sk_scratch *scratch;
    sk_pool *pool;              /* SKYCMD_OPT_THREADS > 1: the scratch's compute threads */
    int64_t threads, activations;
    size_t max_len, head_max_len;      /* SKYCMD_OPT_MAX_LEN / _HEAD_MAX_LEN; 0 = the model's */
    char errmsg[SK_ERR_MSG_MAX];
    /* reused work buffers */
    sk_prompt_ws ws;
    sk_i32v state_ids, ids, markers;
    sk_seqbatch batch;                 /* several questions' sequences, back to back */
    struct sk_seq_meta {
        size_t r, q, g;                 /* request, question in it, question overall */
    } seq_meta[SK_BATCH_SEQS];          /* of batch.seqs[k] */
    size_t *p_off;                      /* where each question's probabilities start */
    size_t p_off_cap;
    size_t *q_off;                      /* each request's first question (overall index) */
    size_t q_off_cap;
    int64_t *ntok;                      /* each request's input tokens */
    size_t ntok_cap;
    const sk_request **rbatch;          /* skycmd_decide_batch's requests */
    size_t rbatch_cap;
    sk_ids tokbuf;
    struct sk_tok_entry *tokcache;      /* recent texts' token ids (session.c), or NULL */
    double *probs;              /* every question's probabilities, back to back */
    size_t probs_cap;
    sk_answer *answers;
    size_t answers_cap;
    /* long.c: long states, tournaments, the truncation report (session options and work
     * buffers, NULL until first needed) */
    int64_t long_on, long_window, long_stride, report_truncation, tournament_group;
    struct sk_long_ws *lws;
    sk_gate gate;               /* SKYCMD_OPT_MIN_CONFIDENCE; a request's min_confidence wins */
    /* calibrate.c: receives each question's raw marker logits (before temperature, in
     * marker order), g = the question's overall index in the decide call */
    void (*logit_sink)(void *ud, size_t g, int qtype, const float *z, size_t k);
    void *logit_sink_ud;
};

/* The budgets a decide call runs with: the session's SKYCMD_OPT_MAX_LEN / _HEAD_MAX_LEN
 * (laya's per-call max_len / head_max_len) when set, else the model's. */
static inline size_t sk_session_max_len(const struct skycmd_session *s) {
    return s->max_len ? s->max_len : s->model->max_len;
}
static inline size_t sk_session_head_max_len(const struct skycmd_session *s) {
    return s->head_max_len ? s->head_max_len : s->model->head_max_len;
}

struct skycmd_request {
    uint32_t tag;
    int status;
    char errmsg[SK_ERR_MSG_MAX];
    sk_request r;
};

struct skycmd_response {
    uint32_t tag;
    char *json;          /* written at the first skycmd_response_json() */
    const char *model;   /* the "model" of the JSON */
    int64_t input_tokens;
    size_t n;
    sk_answer_json *a;
    sk_arena arena;      /* model name, ids, keys, legends, probabilities */
    sk_response_extra x; /* long.c's additions (windows, truncation, tournament); zero = none */
};

/* Build a response of answers a to request r (copies everything it needs). */
int sk_response_new(const sk_request *r, const sk_answer *a, const char *model_name,
                    int64_t input_tokens, skycmd_response **out, sk_err *e);

/* session.c's tokenizer callback (through the session's cache), for sk_prompt_tok. */
int sk_session_encode_cb(void *ctx, const char *text, size_t len, sk_i32v *out, sk_err *e);

/* long.c: long states (laya Agent.predict_long), tournaments (laya serve
 * _predict_with_tournament) and the truncation report. */
int sk_long_is_option(int option);
int sk_long_set_option(skycmd_session *s, int option, int64_t value); /* 0 or -1 (errmsg set) */
void sk_long_ws_free(struct sk_long_ws *w);
/* Whether request r (with the session's options) needs long.c rather than the plain path. */
int sk_long_wanted(const skycmd_session *s, const sk_request *r);
/* Answer r through long.c: *out receives the response. */
int sk_long_decide(skycmd_session *s, const sk_request *r, skycmd_response **out, sk_err *e);
#endif
