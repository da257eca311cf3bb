/* plain.c - the plain path (engine.h): every question of one or more requests in one pass
 * each, their sequences sharing the runner's batches. */
#include <stdlib.h>
#include <string.h>

#include "skycmd.h"
#include "engine.h"
#include "multipass.h"
#include "../tokenizer/tokenizer.h"

void sk_engine_free(sk_engine *en) {
    if (!en) return;
    sk_runner_free(&en->runner);
    sk_prompt_ws_free(&en->ws);
    sk_i32v_free(&en->state_ids);
    free(en->probs);
    free(en->answers);
    free(en->p_off);
    free(en->qref);
    free(en->q_off);
    free(en->ntok);
    sk_multipass_ws_free(en->mp);
    memset(en, 0, sizeof *en);
}

/* A question's failure, named as the caller sees it: "questions.<id>", and "request <i>"
 * when several requests were answered together. */
static int question_fail(sk_err *e, size_t ri, size_t nr, const sk_rquestion *q, int rc) {
    int n = sk_question_id_len(q->id);
    sk_err_prefix(e, "questions.%.*s", n, q->id.s);
    if (nr > 1) sk_err_prefix(e, "request %zu", ri);
    return rc;
}

static int runner_fail(sk_engine *en, const sk_request *const *rs, size_t nr, sk_err *e, int rc) {
    const struct sk_question_ref *at = &en->qref[sk_runner_failed_tag(&en->runner)];
    return question_fail(e, at->r, nr, &rs[at->r]->q[at->q], rc);
}

/* Every question of the nr requests: one job over its request's state (engine.h). */
int sk_engine_plain(sk_engine *en, const sk_run_ctx *cx, const sk_request *const *rs, const sk_plan *plans,
                    size_t nr, sk_err *e) {
    int rc;
    size_t total_opts = 0, total_q = 0;
    for (size_t ri = 0; ri < nr; ri++) {
        const sk_request *r = rs[ri];
        total_q += r->nq;
        for (size_t i = 0; i < r->nq; i++) total_opts += r->q[i].n_opts;
    }
    size_t nq1 = total_q ? total_q : 1, nr1 = nr ? nr : 1;
    if (sk_grow_array((void **)&en->probs, &en->probs_cap, total_opts ? total_opts : 1, sizeof(double)) ||
        sk_grow_array((void **)&en->answers, &en->answers_cap, nq1, sizeof(sk_answer)) ||
        sk_grow_array((void **)&en->p_off, &en->p_off_cap, nq1, sizeof(size_t)) ||
        sk_grow_array((void **)&en->qref, &en->qref_cap, nq1, sizeof *en->qref) ||
        sk_grow_array((void **)&en->q_off, &en->q_off_cap, nr1, sizeof(size_t)) ||
        sk_grow_array((void **)&en->ntok, &en->ntok_cap, nr1, sizeof(int64_t)))
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory answering the request");
    size_t off = 0, g = 0;
    for (size_t ri = 0; ri < nr; ri++) {
        en->q_off[ri] = g;
        for (size_t i = 0; i < rs[ri]->nq; i++, g++) {
            en->p_off[g] = off;
            en->qref[g] = (struct sk_question_ref){ri, i};
            off += rs[ri]->q[i].n_opts;
        }
    }
    sk_cut_rules cuts;
    sk_tokenizer_cut_rules(cx->tok, &cuts);
    sk_runner_clear(&en->runner);
    g = 0;
    for (size_t ri = 0; ri < nr; ri++) {
        const sk_request *r = rs[ri];
        /* laya's per-call budgets (Agent.system_one(max_len=, head_max_len=)) */
        const size_t max_len = plans[ri].max_len, head_max_len = plans[ri].head_max_len;
        /* A sequence holds at most max_len tokens: the state is tokenized only as far as
         * that can reach (identical ids; the cost no longer grows with the state's size). */
        if ((rc = sk_prompt_state_ids_bounded(&cx->pt, &cuts, r->state.s, r->state.n, r->state_is_list,
                                              max_len, cx->ws, &en->state_ids, e))) {
            sk_runner_clear(&en->runner);
            sk_err_prefix(e, "state");
            if (nr > 1) sk_err_prefix(e, "request %zu", ri);
            return rc;
        }
        int64_t ntok = 0;
        for (size_t i = 0; i < r->nq; i++, g++) {
            const sk_rquestion *q = &r->q[i];
            /* with an option_order the options are laid out in slot order */
            sk_job j = {q, q->order ? q->slot_text : &q->opts[0].text,
                        q->order ? sizeof(sk_jstr) : sizeof(sk_roption), q->n_opts, q->order != NULL,
                        en->state_ids.v, en->state_ids.n, r->state_is_list, max_len, head_max_len,
                        en->probs + en->p_off[g], g};
            if ((rc = sk_runner_add(&en->runner, cx, &j, e))) return runner_fail(en, rs, nr, e, rc);
            ntok += (int64_t)en->runner.built_tokens;
        }
        en->ntok[ri] = ntok;
    }
    if ((rc = sk_runner_finish(&en->runner, cx, e))) return runner_fail(en, rs, nr, e, rc);
    for (g = 0; g < total_q; g++) {
        const struct sk_question_ref *at = &en->qref[g];
        const sk_rquestion *q = &rs[at->r]->q[at->q];
        if ((rc = sk_answer_from_probs(q->type, en->probs + en->p_off[g], q->n_opts, &en->answers[g], e)))
            return question_fail(e, at->r, nr, q, rc);
    }
    return 0;
}

