/* plan.c - the request's plan (plan.h). */
#include <stdio.h>

#include "skycmd.h"
#include "plan.h"
#include "runner.h"

static int check_budget(const sk_plan_defaults *d, int64_t v, sk_jstr text, const char *key, sk_err *e) {
    if (v <= d->max_token_budget) return 0;
    return sk_fail(e, SKYCMD_E_REQUEST, "%s exceeds server limit (%.*s > %lld)", key,
                   (int)(text.n > 40 ? 40 : text.n), text.s, (long long)d->max_token_budget);
}

int sk_plan_make(const sk_plan_defaults *d, const sk_request *r, sk_plan *p, sk_err *e) {
    int rc;
    p->max_len = d->max_len ? d->max_len : d->model_max_len;
    p->head_max_len = d->head_max_len ? d->head_max_len : d->model_head_max_len;
    if (r->ctl_set & SK_CTL_MAX_LEN) {
        if ((rc = check_budget(d, r->ctl_max_len, r->ctl_max_len_text, "max_len", e))) return rc;
        p->max_len = (size_t)r->ctl_max_len;
    }
    if (r->ctl_set & SK_CTL_HEAD_MAX_LEN) {
        if ((rc = check_budget(d, r->ctl_head_max_len, r->ctl_head_max_len_text, "head_max_len", e))) return rc;
        p->head_max_len = (size_t)r->ctl_head_max_len;
    }
    p->is_long = d->is_long;
    p->truncation = d->truncation;
    p->window = d->window;
    p->stride = d->stride;
    p->group = d->group;
    if (r->ctl_set & SK_CTL_LONG) p->is_long = r->ctl_long;
    if (r->ctl_set & SK_CTL_WINDOW) p->window = r->ctl_window;
    if (r->ctl_set & SK_CTL_STRIDE) p->stride = r->ctl_stride;
    /* the body can only ask for the report on the wire; a session's "accessors only" (2, 3)
     * stays */
    if (r->ctl_set & SK_CTL_REPORT_TRUNCATION)
        p->truncation = r->ctl_report_truncation ? 1 : (p->truncation >= 2 ? p->truncation : 0);
    if (r->ctl_set & SK_CTL_TOURNAMENT_GROUP) p->group = r->ctl_tournament_group;
    if ((r->ctl_set & SK_CTL_LONG) && p->is_long && !(r->ctl_set & SK_CTL_TOURNAMENT_GROUP)) p->group = 0;
    if ((r->ctl_set & SK_CTL_TOURNAMENT_GROUP) && p->group > 0 && !(r->ctl_set & SK_CTL_LONG)) p->is_long = 0;
    if (!p->is_long) p->window = p->stride = 0;
    /* laya serve: the body's min_confidence over the deployment's */
    p->gate = r->gate.set ? &r->gate : d->gate;
    return 0;
}

int sk_plan_is_multipass(const sk_plan *p) { return p->is_long || p->truncation || p->group > 0; }

/* Whether choice q's markers all fit into one pass of plan p (its head alone decides: the
 * markers come before the state). */
static int choice_fits(const sk_run_ctx *cx, const sk_rquestion *q, const sk_plan *p, sk_i32v *ids,
                       sk_i32v *markers, int *fits, sk_err *e) {
    int rc = sk_prompt_build(&cx->pt, sk_qtype_names[q->type], q->ins.s, q->ins.n, &q->opts[0].text,
                             sizeof q->opts[0], q->n_opts, NULL, 0, 0, p->max_len, p->head_max_len, cx->ws, ids,
                             markers, e);
    *fits = rc == 0;
    if (rc == SKYCMD_E_REQUEST && markers->n < q->n_opts) return 0; /* the markers' refusal */
    return rc;
}

int sk_plan_overflow_tournament(const sk_run_ctx *cx, const sk_request *r, sk_plan *p, int64_t group,
                                sk_err *e) {
    if (group <= 0 || p->group > 0 || p->is_long || (r->ctl_set & (SK_CTL_TOURNAMENT_GROUP | SK_CTL_LONG)))
        return 0;
    sk_i32v ids = {0}, markers = {0};
    int rc = 0, fits = 1;
    for (size_t i = 0; i < r->nq && fits && !rc; i++) {
        const sk_rquestion *q = &r->q[i];
        if (q->type == SKYCMD_QTYPE_CHOICE && q->n_opts > (size_t)group)
            rc = choice_fits(cx, q, p, &ids, &markers, &fits, e);
    }
    sk_i32v_free(&ids);
    sk_i32v_free(&markers);
    if (!rc && !fits) p->group = group;
    return rc;
}
