/*
 * plan.h - what one request is answered with: the body's controls over the caller's
 * defaults, resolved and checked once, before any work (docs/compat.md "One request path").
 *
 * Contract:
 *  - sk_plan_make() fills an sk_plan from a parsed request and the defaults of the session
 *    that answers it: the budgets (body "max_len" / "head_max_len", else the session's
 *    SKYCMD_OPT_MAX_LEN / _HEAD_MAX_LEN, else the model's), the long / tournament /
 *    truncation controls and the abstention gate. A body budget above the session's
 *    SKYCMD_OPT_MAX_TOKEN_BUDGET is SKYCMD_E_REQUEST with laya serve's message
 *    (`max_len exceeds server limit (9000 > 8192)`).
 *  - Every decide entry (skycmd_decide, _batch, _json, calibrate) makes its plans here, so a
 *    body means the same through the CLI, the library, the bindings and the server.
 *  - The long and tournament controls: the body's where it gave them, else the session's;
 *    what the body asks for wins over the session's other one (a server's
 *    --tournament-group does not refuse a body's "long").
 */
#ifndef SK_PLAN_H
#define SK_PLAN_H

#include "../decide/gate.h"
#include "../decide/request.h"

/* The session's side: its options and its model's budgets. */
typedef struct sk_plan_defaults {
    size_t model_max_len, model_head_max_len; /* decision.max_tokens / max_head_tokens */
    size_t max_len, head_max_len;             /* SKYCMD_OPT_MAX_LEN / _HEAD_MAX_LEN; 0 = the model's */
    int64_t max_token_budget;                 /* SKYCMD_OPT_MAX_TOKEN_BUDGET */
    int is_long, truncation;                  /* SKYCMD_OPT_LONG, _REPORT_TRUNCATION */
    int64_t window, stride, group;            /* SKYCMD_OPT_WINDOW, _STRIDE, _TOURNAMENT_GROUP */
    const sk_gate *gate;                      /* SKYCMD_OPT_MIN_CONFIDENCE */
} sk_plan_defaults;

typedef struct sk_plan {
    size_t max_len, head_max_len; /* laya's max_len / head_max_len of this request */
    int is_long, truncation;      /* truncation: 0 off, 1 on the wire, 2 accessors only,
                                   * 3 accessors only, the state read as far as used */
    int64_t window, stride, group;
    const sk_gate *gate;          /* the abstention gate (unset: nothing written) */
} sk_plan;

int sk_plan_make(const sk_plan_defaults *d, const sk_request *r, sk_plan *p, sk_err *e);
/* A plan that reads its request in one pass, and whose choices over `group` options do not
 * all fit their markers into it, becomes a tournament in groups of `group` (laya serve with
 * LAYA_TOURNAMENT_GROUP=group: the same rounds and answers). Not for a request whose body
 * set "tournament_group" or "long", nor when group is 0 (the session's
 * SKYCMD_OPT_AUTO_TOURNAMENT_GROUP). Builds the heads of those choices only. */
struct sk_run_ctx;
int sk_plan_overflow_tournament(const struct sk_run_ctx *cx, const sk_request *r, sk_plan *p, int64_t group,
                                sk_err *e);
/* Whether the plan needs more than one plain pass (long states, tournaments, the
 * truncation report: multipass.h). */
int sk_plan_is_multipass(const sk_plan *p);

#endif /* SK_PLAN_H */
