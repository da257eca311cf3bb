/*
 * handles.h - definitions of the decide-side public handles: model, session, request and
 * response (model.c, session.c, request.c, response.c).
 *
 *  - skycmd_model: immutable after open (weights, tokenizer, temperatures, limits, name),
 *    but for the atomic session count, so skycmd_model_free can refuse (SKYCMD_E_BUSY)
 *    while sessions exist, and a row-scaled int8 model's deferred single-pass choice
 *    (sk_model_row_choice), made under row_mu by the first session that asks for
 *    single-pass activations (sk_api_model_row_choice).
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
#include "../util/platform.h"
#include "../engine/engine.h"
#include "../engine/multipass.h"

#define SK_DEFAULT_MAX_TOKENS 512

struct skycmd_model {
    uint32_t tag;
    sk_gguf *g;                 /* the file (its bytes read at open, or the caller's buffer) */
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
    sk_mutex row_mu;            /* serialises sk_api_model_row_choice */
    int row_mu_ok;
};

/* model.c: the model's deferred single-pass choice made now, if its load left it
 * (SKYCMD_WEIGHTS_Q8_ROW opened without SKYCMD_ACT_Q8 in its options), on pool's threads
 * (NULL: one); at once otherwise. Called by a session before it switches to SKYCMD_ACT_Q8,
 * so no single-pass forward call runs before the choice exists. */
int sk_api_model_row_choice(skycmd_model *mod, sk_pool *pool, sk_err *e);

struct skycmd_session {
    uint32_t tag;
    skycmd_model *model;
    sk_scratch *scratch;
    sk_pool *pool;              /* SKYCMD_OPT_THREADS > 1: the scratch's compute threads */
    int64_t threads, activations;
    size_t max_len, head_max_len;      /* SKYCMD_OPT_MAX_LEN / _HEAD_MAX_LEN; 0 = the model's */
    int64_t max_token_budget;          /* SKYCMD_OPT_MAX_TOKEN_BUDGET: cap on a body's budgets */
    char errmsg[SK_ERR_MSG_MAX];
    sk_engine engine;                   /* the decide engine's reused buffers */
    const sk_request **rbatch;          /* skycmd_decide_batch's requests */
    size_t rbatch_cap;
    struct sk_plan *plans;              /* ... and their plans */
    size_t plans_cap;
    size_t *each_slot;                  /* skycmd_decide_each: the slot of each plain request */
    size_t each_slot_cap;
    sk_ids tokbuf;
    struct sk_tok_entry *tokcache;      /* recent texts' token ids (session.c), or NULL */
    /* the options of long states, tournaments and the truncation report */
    int64_t long_on, long_window, long_stride, report_truncation, tournament_group;
    int64_t auto_tournament_group;     /* SKYCMD_OPT_AUTO_TOURNAMENT_GROUP */
    sk_gate gate;               /* SKYCMD_OPT_MIN_CONFIDENCE; a request's min_confidence wins */
    /* calibrate.c: receives each question's raw marker logits (before temperature, in
     * marker order), g = the question's overall index in the decide call */
    void (*logit_sink)(void *ud, size_t g, int qtype, const float *z, size_t k);
    void *logit_sink_ud;
};

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
    sk_response_extra x; /* multipass additions (windows, truncation, tournament); zero = none */
};

/* Build a response of answers a to request r (copies everything it needs). */
int sk_response_new(const sk_request *r, const sk_answer *a, const char *model_name,
                    int64_t input_tokens, skycmd_response **out, sk_err *e);

/* session.c's tokenizer callback (through the session's cache), for sk_prompt_tok. */
int sk_session_encode_cb(void *ctx, const char *text, size_t len, sk_i32v *out, sk_err *e);
/* What the session's runner runs with (its model, scratch, tokenizer through the cache,
 * prompt buffers and logit sink). */
sk_run_ctx sk_session_run_ctx(skycmd_session *s);

#endif
