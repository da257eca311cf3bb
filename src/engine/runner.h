/*
 * runner.h - the one batch runner every decide path uses.
 *
 * A decide, whatever its shape (one request, several requests answered together, the
 * windows of a long state, the rounds of a tournament, calibration records), comes down to
 * sequences to score: a question (or some of its options) against some state ids. The
 * caller describes each as an sk_job and hands it to sk_runner_add(), which builds the Laya
 * sequence (sk_prompt_build), packs it into the current forward batch (seqbatch.h) and runs
 * the batch when the next sequence would not fit; sk_runner_finish() runs what is left.
 * Running a batch turns each sequence's marker logits into the job's probabilities: the
 * temperature of the marker count's bucket, the softmax in double, and an option_order's
 * slot order put back into option order (laya's unpermute_probs). Each sequence gets exactly
 * the logits it would get alone, so how jobs are batched changes no number.
 *
 * Contract:
 *  - job->p must stay valid until the job's batch has run (sk_runner_finish returned).
 *  - After sk_runner_add() returns 0, cx->ws describes the sequence just built (head_len,
 *    option spans) and the runner's `built` its token and marker counts: the caller may read
 *    them for its usage figures before the next add.
 *  - On failure the status is returned with e set and sk_runner_failed_tag() names the job
 *    (its `tag`) the failure belongs to; the caller prefixes the message with what the tag
 *    means (a question id, a request index). The runner is then cleared.
 *  - No allocation per call once the buffers have grown to the largest batch seen.
 */
#ifndef SK_RUNNER_H
#define SK_RUNNER_H

#include "skycmd.h"
#include "../decide/decide.h"
#include "../decide/request.h"
#include "../model/model.h"
#include "../prompt/prompt.h"
#include "seqbatch.h"

/* What the runner runs with: the model, its scratch, temperatures and tokenizer. */
typedef struct sk_run_ctx {
    const sk_model *m;
    const skycmd_tokenizer *tok; /* the model's (long states decode their windows) */
    sk_scratch *scratch;
    const sk_temps *temps;
    sk_prompt_tok pt;
    sk_prompt_ws *ws;           /* the prompt builder's reused buffers */
    /* calibration: receives each sequence's raw marker logits (before the temperature, in
     * marker order) with its job's tag; NULL when nobody listens */
    void (*logit_sink)(void *ud, size_t tag, int qtype, const float *z, size_t k);
    void *logit_sink_ud;
} sk_run_ctx;

/* One sequence to score. */
typedef struct sk_job {
    const sk_rquestion *q;      /* the question (type, instructions) */
    const sk_jstr *texts;       /* the n option texts shown, in slot order ... */
    size_t text_stride;         /* ... `text_stride` bytes apart */
    size_t n;
    int unpermute;              /* 1: put the probabilities back through q->order */
    const int32_t *state;       /* the state ids the sequence reads (cut as laya cuts) */
    size_t n_state;
    int state_is_list;          /* a list state keeps its end when cut */
    size_t max_len, head_max_len;
    double *p;                  /* receives the n probabilities */
    size_t tag;                 /* the caller's name of this job (errors, logit sink) */
} sk_job;

typedef struct sk_runner {
    sk_seqbatch batch;
    sk_i32v ids, markers;       /* the sequence being built */
    struct sk_run_slot {
        double *p;
        const sk_rquestion *q;
        int unpermute;
        size_t tag;
    } slot[SK_BATCH_SEQS];      /* of batch.seqs[k] */
    size_t failed_tag;
    /* the sequence just added (see the contract) */
    size_t built_tokens, built_markers;
} sk_runner;

/* Build job j's sequence and add it, running the batch first when it would not fit. */
int sk_runner_add(sk_runner *rn, const sk_run_ctx *cx, const sk_job *j, sk_err *e);
/* Run the sequences still waiting. */
int sk_runner_finish(sk_runner *rn, const sk_run_ctx *cx, sk_err *e);
/* The tag of the job a failure belongs to. */
size_t sk_runner_failed_tag(const sk_runner *rn);
/* Drop what waits (after a failure elsewhere). */
void sk_runner_clear(sk_runner *rn);
void sk_runner_free(sk_runner *rn);

#endif /* SK_RUNNER_H */
