/*
 * runner.c - the one batch runner (runner.h): build, pack, run, turn logits into
 * probabilities.
 */
#include <math.h>
#include <string.h>

#include "skycmd.h"
#include "runner.h"

size_t sk_runner_failed_tag(const sk_runner *rn) { return rn->failed_tag; }

void sk_runner_clear(sk_runner *rn) { sk_seqbatch_clear(&rn->batch); }

void sk_runner_free(sk_runner *rn) {
    if (!rn) return;
    sk_seqbatch_free(&rn->batch);
    sk_i32v_free(&rn->ids);
    sk_i32v_free(&rn->markers);
    memset(rn, 0, sizeof *rn);
}

static int fail_at(sk_runner *rn, size_t tag, int rc) {
    rn->failed_tag = tag;
    sk_seqbatch_clear(&rn->batch);
    return rc;
}

/* Run the batch: each sequence's logits -> temperature -> softmax -> option order. */
static int run_batch(sk_runner *rn, const sk_run_ctx *cx, sk_err *e) {
    sk_seqbatch *b = &rn->batch;
    if (b->n == 0) return 0;
    int rc = sk_seqbatch_run(b, cx->m, cx->scratch, e);
    if (rc) return fail_at(rn, rn->slot[0].tag, rc);
    for (size_t k = 0; k < b->n; k++) {
        const struct sk_run_slot *sl = &rn->slot[k];
        const sk_seq *sq = &b->seqs[k];
        if (cx->logit_sink) cx->logit_sink(cx->logit_sink_ud, sl->tag, sl->q->type, sq->logits, sq->n_markers);
        double T = sk_temp_for(cx->temps, sl->q->type, sq->n_markers);
        double *p = sl->p;
        sk_softmax(sq->logits, sq->n_markers, T, p);
        if (sl->unpermute) { /* slot order back to option order, as laya's unpermute_probs */
            double slot[SK_REQUEST_MAX_OPTIONS];
            memcpy(slot, p, sq->n_markers * sizeof *p);
            for (size_t s = 0; s < sq->n_markers; s++) p[sl->q->order[s]] = slot[s];
        }
        for (size_t i = 0; i < sq->n_markers; i++)
            if (isnan(p[i]))
                return fail_at(rn, sl->tag, sk_fail(e, SKYCMD_E_INTERNAL, "the model could not evaluate the decision"));
    }
    sk_seqbatch_clear(b);
    return 0;
}

int sk_runner_add(sk_runner *rn, const sk_run_ctx *cx, const sk_job *j, sk_err *e) {
    const sk_rquestion *q = j->q;
    int rc = sk_prompt_build(&cx->pt, sk_qtype_names[q->type], q->ins.s, q->ins.n, j->texts, j->text_stride, j->n,
                             j->state, j->n_state, j->state_is_list, j->max_len, j->head_max_len, cx->ws, &rn->ids,
                             &rn->markers, e);
    if (rc) return fail_at(rn, j->tag, rc);
    if (!sk_seqbatch_fits(&rn->batch, rn->ids.n) && (rc = run_batch(rn, cx, e))) return rc;
    rn->slot[rn->batch.n] = (struct sk_run_slot){j->p, q, j->unpermute, j->tag};
    if (sk_seqbatch_add(&rn->batch, cx->m, &rn->ids, &rn->markers, cx->ws->head_len, q->type))
        return fail_at(rn, j->tag, sk_fail(e, SKYCMD_E_NOMEM, "out of memory answering the request"));
    rn->built_tokens = rn->ids.n;
    rn->built_markers = rn->markers.n;
    return 0;
}

int sk_runner_finish(sk_runner *rn, const sk_run_ctx *cx, sk_err *e) { return run_batch(rn, cx, e); }
