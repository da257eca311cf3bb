/*
 * engine.h - the decide engine: a parsed request and its plan in, answers out, for every
 * decide path of the library (api/ keeps the handles and turns answers into responses).
 *
 * A request takes one way down: parse (decide/request_parse.c), plan (plan.h), run (the
 * plain path below or multipass.h, both on the one batch runner, runner.h), answer (the
 * sk_answer arrays here), respond (api/).
 *
 * Contract:
 *  - An sk_engine holds the reusable work buffers of one session (one thread); zero-init it,
 *    free it with sk_engine_free(). Nothing is allocated per call once they have grown.
 *  - sk_engine_plain() answers every question of nr requests in one pass each, their
 *    sequences sharing the runner's batches (each answer is what its request alone would
 *    get): request i's answers start at en->answers[en->q_off[i]], its input tokens are
 *    en->ntok[i]; they live until the next call. A failure's message names the question
 *    ("questions.<id>: ...", and "request <i>: " when nr > 1).
 *  - sk_multipass_decide() (multipass.h) answers a request whose plan needs more passes.
 */
#ifndef SK_ENGINE_H
#define SK_ENGINE_H

#include "plan.h"
#include "runner.h"

struct sk_multipass_ws;

typedef struct sk_engine {
    sk_runner runner;
    sk_prompt_ws ws;                    /* the prompt builder's reused buffers */
    sk_i32v state_ids;                  /* the state of the request being built */
    /* the plain path's results (see the contract) */
    double *probs;                      /* every question's probabilities, back to back */
    size_t probs_cap;
    sk_answer *answers;
    size_t answers_cap;
    size_t *p_off;                      /* where each question's probabilities start */
    size_t p_off_cap;
    struct sk_question_ref {
        size_t r, q;                    /* request, question in it */
    } *qref;                            /* of each question overall (the runner's tags) */
    size_t qref_cap;
    size_t *q_off;                      /* each request's first question (overall index) */
    size_t q_off_cap;
    int64_t *ntok;                      /* each request's input tokens */
    size_t ntok_cap;
    struct sk_multipass_ws *mp;         /* multipass.c's buffers, NULL until first needed */
} sk_engine;

void sk_engine_free(sk_engine *en);

/* The plain path (plain.c): one pass per request; see the contract. */
int sk_engine_plain(sk_engine *en, const sk_run_ctx *cx, const sk_request *const *rs, const sk_plan *plans,
                    size_t nr, sk_err *e);

#endif /* SK_ENGINE_H */
