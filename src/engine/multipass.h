/*
 * multipass.h - decides that take more than one plain pass, as laya 0.4.15 makes them
 * (docs/compat.md "Long states, truncation made visible, many options"): a long state read
 * in windows (Agent.predict_long), a tournament over many options (laya serve
 * _predict_with_tournament), and the truncation report.
 *
 * Contract:
 *  - sk_multipass_decide() answers request r as plan pl says (sk_plan_is_multipass): the
 *    answers and what the wire adds to them (windows, truncation, tournament rounds and
 *    finalists) are in *out, borrowed from the engine until its next call.
 *  - sk_multipass_final_pass() gives the probabilities question i got in the last pass that
 *    scored it (a narrowed choice: over its n finalists), which laya's abstention gate sees.
 */
#ifndef SK_MULTIPASS_H
#define SK_MULTIPASS_H

#include "engine.h"

typedef struct sk_multipass_result {
    const sk_answer *answers;    /* per question of the request */
    const sk_answer_extra *ax;   /* per question: window, truncation, tournament */
    int64_t input_tokens, windows, truncated, state_tokens, dropped;
    int truncated_is_count;      /* usage.truncated counts windows (a scan of several) */
} sk_multipass_result;

int sk_multipass_decide(sk_engine *en, const sk_run_ctx *cx, const sk_request *r, const sk_plan *pl,
                        sk_multipass_result *out, sk_err *e);
const double *sk_multipass_final_pass(const sk_engine *en, size_t i, size_t *n);
void sk_multipass_ws_free(struct sk_multipass_ws *w);

#endif /* SK_MULTIPASS_H */
