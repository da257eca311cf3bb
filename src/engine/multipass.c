/* multipass.c - decides that take more than one plain pass (multipass.h), as laya 0.4.15 makes
 * them; opt-in:
 *
 *  - long states (laya Agent.predict_long, laya.common.window_budget): the state is
 *    tokenized once and read in overlapping token windows, every window scored for every
 *    question in shared batches, then per question noul takes the window of highest P(true),
 *    choice and score the window of highest max(p) (laya's answer_confidence), both compared
 *    at laya's 4 decimals with the first window winning a tie, as Python's max() does. The
 *    deciding window is reported (index, token_start, token_end, count) with usage.windows.
 *    A window is read as laya reads it: its slice of the state's ids decoded to text and
 *    tokenized again as a state of its own (with byte-fallback tokenizers that can change
 *    its ids and length, and a lengthened window is cut like any string state); the span
 *    reported is the slice's. Cost: each state token is read by about window/stride
 *    windows, so linear in the state.
 *  - tournaments (laya serve _tournament_plan, _predict_with_tournament; laya.shortlist
 *    predict_tournament): a choice over `group` options is cut, in criteria order, into
 *    near-equal groups, each group answered as its own question (one shared pass per round),
 *    the winners go on until no choice is over `group`; the final pass answers every question
 *    with the narrowed choices cut to their finalists. Eliminated options get probability 0,
 *    confidence is the final round's, usage.input_tokens sums every pass.
 *  - the truncation report (laya's usage.state_tokens, state_tokens_dropped, truncated,
 *    truncated_questions, and usage.options for options whose token spans collapsed); its
 *    accessors-only bounded form (SKYCMD_OPT_REPORT_TRUNCATION 3) tokenizes a one-pass state
 *    only as far as the plain path does, so a cut state's counts are lower bounds.
 *
 * Every sequence goes through the one batch runner (runner.h) exactly as the plain path's
 * (plain.c), so each gets the logits it would get alone; only what is built and how answers
 * are combined differ. docs/compat.md lists the controls and the deliberate differences
 * from laya. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "skycmd.h"
#include "multipass.h"
#include "../tokenizer/tokenizer.h"

#define LJ_MAX_CHOICE_OPTIONS 100
/* Sequences one long request may cost (windows x questions): the work stays linear in the
 * state, but a body should not buy an unbounded number of forward passes (413 past it). */
#define LJ_MAX_LONG_SEQUENCES 65536 /* laya serve MAX_CHOICE_OPTIONS: past it an order is dropped */

/* One sequence to score: a question (or a subset of its options) against a state slice. */
typedef struct lj {
    size_t q;                 /* question index in the request */
    int gathered;             /* option texts at w->texts[text_off..+n), else the question's */
    size_t text_off, n;       /* n options shown */
    size_t label_first;       /* tournament group: its first label's place in the question's labels */
    size_t state_off, n_state;
    int left;                 /* a list state keeps its end */
    size_t p_off;             /* n probabilities at w->probs + p_off (shown-option order) */
    /* results */
    size_t n_tokens, state_used;
    int64_t distinct, per_option; /* option spans after the head budget; per_option -1 = None */
} lj;

struct sk_multipass_ws {
    sk_i32v state_ids, ids, markers;
    sk_i32v window_ids;       /* one window's text re-tokenized */
    sk_buf window_text;       /* one window's ids decoded */
    lj *jobs;
    size_t n_jobs, jobs_cap;
    double *probs;
    size_t n_probs, probs_cap;
    sk_jstr *texts;
    size_t n_texts, texts_cap;
    /* per question of the request */
    double *final;            /* every question's probabilities, back to back */
    size_t final_cap;
    size_t *final_off;
    size_t final_off_cap;
    sk_answer *answers;
    size_t answers_cap;
    sk_answer_extra *ax;
    size_t ax_cap;
    size_t *labels;           /* tournament: each question's remaining options (indices) */
    size_t labels_cap;
    size_t *n_labels;
    size_t n_labels_cap;
    size_t *starts;           /* long: window starts */
    size_t starts_cap;
};

void sk_multipass_ws_free(struct sk_multipass_ws *w) {
    if (!w) return;
    sk_i32v_free(&w->state_ids);
    sk_i32v_free(&w->ids);
    sk_i32v_free(&w->markers);
    sk_i32v_free(&w->window_ids);
    sk_buf_free(&w->window_text);
    free(w->jobs);
    free(w->probs);
    free(w->texts);
    free(w->final);
    free(w->final_off);
    free(w->answers);
    free(w->ax);
    free(w->labels);
    free(w->n_labels);
    free(w->starts);
    free(w);
}

static int oom(sk_err *e) { return sk_fail(e, SKYCMD_E_NOMEM, "out of memory answering the request"); }

static int question_fail(sk_err *e, const sk_rquestion *q, int rc) {
    sk_err_prefix(e, "questions.%.*s", sk_question_id_len(q->id), q->id.s);
    return rc;
}

/* Add a job; its probabilities are reserved at once. NULL when out of memory. */
static lj *add_job(struct sk_multipass_ws *w, size_t q, size_t n, size_t state_off, size_t n_state, int left) {
    if (sk_grow_array((void **)&w->jobs, &w->jobs_cap, w->n_jobs + 1, sizeof *w->jobs) ||
        sk_grow_array((void **)&w->probs, &w->probs_cap, w->n_probs + n, sizeof *w->probs))
        return NULL;
    lj *j = &w->jobs[w->n_jobs++];
    memset(j, 0, sizeof *j);
    j->q = q;
    j->n = n;
    j->state_off = state_off;
    j->n_state = n_state;
    j->left = left;
    j->p_off = w->n_probs;
    w->n_probs += n;
    return j;
}

/* Python's a // b for b > 0. */
static long floordiv(long a, long b) {
    long q = a / b;
    if ((a % b != 0) && (a < 0)) q--;
    return q;
}

/* laya build_head's stats of the options just built (ws->opts, ws->opt_end): the per-option
 * cap (-1 = None) and how many options keep a token span of their own. */
static void option_stats(const sk_prompt_ws *ws, size_t n, size_t head_max_len, int64_t *per_out,
                         int64_t *distinct) {
    size_t total = ws->opts.n;
    size_t per = SIZE_MAX;
    *per_out = -1;
    if ((long)head_max_len - (long)total < SK_PROMPT_HEAD_RESERVE) {
        long p = floordiv((long)head_max_len - SK_PROMPT_HEAD_RESERVE, n ? (long)n : 1);
        per = (size_t)(p > SK_PROMPT_MIN_OPTION ? p : SK_PROMPT_MIN_OPTION);
        *per_out = (int64_t)per;
    }
    int64_t d = 0;
    for (size_t i = 0; i < n; i++) {
        size_t si = i ? ws->opt_end[i - 1] : 0, li = ws->opt_end[i] - si;
        if (li > per) li = per;
        int dup = 0;
        for (size_t k = 0; k < i && !dup; k++) {
            size_t sk = k ? ws->opt_end[k - 1] : 0, lk = ws->opt_end[k] - sk;
            if (lk > per) lk = per;
            dup = lk == li && memcmp(ws->opts.v + si, ws->opts.v + sk, li * sizeof(int32_t)) == 0;
        }
        d += !dup;
    }
    *distinct = d;
}

/* Build and score every job of w through the session's runner (their probabilities land at
 * w->probs + p_off), recording each sequence's token counts and, when asked, its head stats. */
static int run_jobs(sk_engine *en, const sk_run_ctx *cx, const sk_request *r, const sk_plan *pl, struct sk_multipass_ws *w,
                    int want_stats, sk_err *e) {
    int rc = 0;
    sk_runner_clear(&en->runner);
    for (size_t ji = 0; ji < w->n_jobs; ji++) {
        lj *j = &w->jobs[ji];
        const sk_rquestion *q = &r->q[j->q];
        sk_job job = {q, NULL, 0, j->n, !j->gathered && q->order != NULL, w->state_ids.v + j->state_off,
                      j->n_state, j->left, pl->max_len, pl->head_max_len, w->probs + j->p_off, ji};
        if (j->gathered) {
            job.texts = w->texts + j->text_off;
            job.text_stride = sizeof(sk_jstr);
        } else if (q->order) {
            job.texts = q->slot_text;
            job.text_stride = sizeof(sk_jstr);
        } else {
            job.texts = &q->opts[0].text;
            job.text_stride = sizeof(sk_roption);
        }
        if ((rc = sk_runner_add(&en->runner, cx, &job, e))) break;
        size_t head_len = cx->ws->head_len;
        size_t room = pl->max_len > head_len + 1 ? pl->max_len - head_len - 1 : 0;
        j->state_used = j->n_state < room ? j->n_state : room;
        j->n_tokens = en->runner.built_tokens;
        if (want_stats) option_stats(cx->ws, j->n, pl->head_max_len, &j->per_option, &j->distinct);
    }
    if (!rc) rc = sk_runner_finish(&en->runner, cx, e);
    if (rc) return question_fail(e, &r->q[w->jobs[sk_runner_failed_tag(&en->runner)].q], rc);
    return 0;
}

/* Python's round(x, 4) as an integer count of 1e-4 (ties to even), laya's comparison key. */
static long long round4(double x) { return (long long)nearbyint(x * 10000.0); }

/* The truncation report of one pass: jobs [j0, j0 + nq) answer questions 0..nq-1. */
static void pass_truncation(const struct sk_multipass_ws *w, size_t j0, size_t nq, sk_answer_extra *ax,
                            int64_t *state_tokens, int64_t *dropped) {
    *state_tokens = nq ? (int64_t)w->jobs[j0].n_state : 0;
    *dropped = 0;
    for (size_t i = 0; i < nq; i++) {
        const lj *j = &w->jobs[j0 + i];
        int64_t d = (int64_t)(j->n_state - j->state_used);
        if (d > *dropped) *dropped = d;
        ax[j->q].truncated = d > 0;
        ax[j->q].options_distinct = j->distinct < (int64_t)j->n ? j->distinct : -1;
        ax[j->q].tokens_per_option = j->per_option;
    }
}

/* laya.common.window_budget: window size and stride for these questions (rooms: the state
 * tokens each leaves). */
static int window_budget(const sk_plan *pl, size_t room, int64_t window, int64_t stride,
                         size_t *size_out, size_t *step_out, sk_err *e) {
    int64_t dflt = (int64_t)pl->max_len - (int64_t)pl->head_max_len - 8;
    int64_t requested = window > 0 ? window : (dflt > 64 ? dflt : 64);
    int64_t size = requested;
    if (room == 0)
        return sk_fail(e, SKYCMD_E_REQUEST,
                       "long: the questions' options fill the whole sequence (max_len=%zu, "
                       "head_max_len=%zu), leaving no room for the state; no window can carry any of it",
                       pl->max_len, pl->head_max_len);
    if (size > (int64_t)room) size = (int64_t)room;
    int64_t step = stride > 0 ? stride : (size / 2 > 1 ? size / 2 : 1);
    if (step > size) {
        if (size < requested && stride > 0 && stride <= requested) {
            step = size / 2 > 1 ? size / 2 : 1;
        } else {
            return sk_fail(e, SKYCMD_E_REQUEST,
                           "long: stride=%lld steps past the %lld-token window%s, so %lld tokens between "
                           "every pair of windows would be read by no window at all; pass stride <= %lld",
                           (long long)step, (long long)size,
                           size < requested ? " these questions leave room for" : "",
                           (long long)(step - size), (long long)size);
        }
    }
    *size_out = (size_t)size;
    *step_out = (size_t)step;
    return 0;
}

/* Window [start, start + len) of the state as laya's predict_long hands it on: its ids
 * decoded to text (tok.decode: the tokenizer's decoder, special tokens kept, invalid UTF-8
 * as U+FFFD) and that text tokenized as a string state (predict_batch -> _encode_state).
 * The ids are appended to w->state_ids: *off and *n say where. */
static int window_state(const sk_run_ctx *cx, struct sk_multipass_ws *w, size_t start, size_t len,
                        size_t *off, size_t *n, sk_err *e) {
    w->window_text.len = 0;
    int rc = sk_tokenizer_decode(cx->tok, w->state_ids.v + start, len, &w->window_text, e);
    if (!rc && w->window_text.failed) rc = oom(e);
    if (!rc) rc = sk_prompt_state_ids(&cx->pt, w->window_text.data, w->window_text.len, cx->ws, &w->window_ids, e);
    if (rc) {
        sk_err_prefix(e, "state window at token %zu", start);
        return rc;
    }
    *off = w->state_ids.n;
    *n = w->window_ids.n;
    if (sk_i32v_append(&w->state_ids, w->window_ids.v, w->window_ids.n)) return oom(e);
    return 0;
}

/* One job per question against the whole state (laya system_one). */
static int plain_jobs(struct sk_multipass_ws *w, const sk_request *r) {
    for (size_t i = 0; i < r->nq; i++)
        if (!add_job(w, i, r->q[i].n_opts, 0, w->state_ids.n, r->state_is_list)) return -1;
    return 0;
}

/* The final probabilities of question i = job j's. */
static void take_job(struct sk_multipass_ws *w, const sk_request *r, size_t i, const lj *j) {
    memcpy(w->final + w->final_off[i], w->probs + j->p_off, r->q[i].n_opts * sizeof(double));
}

/* The usage figures of one long decide, summed over its passes. */
typedef struct ltotals {
    int64_t input_tokens, windows, truncated, state_tokens, dropped;
    int truncated_is_count;   /* usage.truncated counts windows (a scan of several) */
} ltotals;

/* Size the per-question arrays of w for request r and reset them. */
static int prepare(struct sk_multipass_ws *w, const sk_request *r, sk_err *e) {
    w->n_jobs = w->n_probs = w->n_texts = 0;
    size_t total = 0, nq1 = r->nq ? r->nq : 1;
    if (sk_grow_array((void **)&w->final_off, &w->final_off_cap, nq1, sizeof(size_t)) ||
        sk_grow_array((void **)&w->answers, &w->answers_cap, nq1, sizeof(sk_answer)) ||
        sk_grow_array((void **)&w->ax, &w->ax_cap, nq1, sizeof(sk_answer_extra)) ||
        sk_grow_array((void **)&w->n_labels, &w->n_labels_cap, nq1, sizeof(size_t)))
        return oom(e);
    for (size_t i = 0; i < r->nq; i++) {
        w->final_off[i] = total;
        total += r->q[i].n_opts;
    }
    if (sk_grow_array((void **)&w->final, &w->final_cap, total ? total : 1, sizeof(double)) ||
        sk_grow_array((void **)&w->labels, &w->labels_cap, total ? total : 1, sizeof(size_t)))
        return oom(e);
    memset(w->ax, 0, nq1 * sizeof *w->ax);
    for (size_t i = 0; i < r->nq; i++) {
        w->ax[i].truncated = -1;
        w->ax[i].options_distinct = w->ax[i].tokens_per_option = -1;
        w->n_labels[i] = 0;
    }
    return 0;
}

/* The room every question leaves for the state (its head built alone): the smallest. */
static int state_room(const sk_run_ctx *cx, const sk_request *r, const sk_plan *pl, struct sk_multipass_ws *w,
                      size_t *room, sk_err *e) {
    *room = SIZE_MAX;
    for (size_t i = 0; i < r->nq; i++) {
        const sk_rquestion *q = &r->q[i];
        const sk_jstr *texts = q->order ? q->slot_text : &q->opts[0].text;
        size_t stride = q->order ? sizeof(sk_jstr) : sizeof(sk_roption);
        int rc = sk_prompt_build(&cx->pt, sk_qtype_names[q->type], q->ins.s, q->ins.n, texts, stride, q->n_opts,
                                 NULL, 0, 0, pl->max_len, pl->head_max_len, cx->ws, &w->ids, &w->markers, e);
        if (rc) return question_fail(e, q, rc);
        size_t hl = cx->ws->head_len, rq = pl->max_len > hl + 1 ? pl->max_len - hl - 1 : 0;
        if (rq < *room) *room = rq;
    }
    return 0;
}

/* One pass that answered every question over the whole state (jobs 0..nq-1). */
static void one_pass_totals(struct sk_multipass_ws *w, const sk_request *r, ltotals *t) {
    for (size_t i = 0; i < r->nq; i++) t->input_tokens += (int64_t)w->jobs[i].n_tokens;
    pass_truncation(w, 0, r->nq, w->ax, &t->state_tokens, &t->dropped);
    t->truncated = t->dropped > 0;
}

/* The window that decides question i (laya predict_long): noul the highest P(true), choice
 * and score the highest max(p), compared at laya's 4 decimals, the first winning a tie. */
static size_t deciding_window(const struct sk_multipass_ws *w, const sk_request *r, size_t i, size_t nw) {
    const sk_rquestion *q = &r->q[i];
    size_t best = 0;
    long long best_key = 0;
    for (size_t k = 0; k < nw; k++) {
        const double *p = w->probs + w->jobs[k * r->nq + i].p_off;
        double v = p[q->type == SKYCMD_QTYPE_NOUL ? 1 : 0];
        for (size_t o = 1; q->type != SKYCMD_QTYPE_NOUL && o < q->n_opts; o++)
            if (p[o] > v) v = p[o];
        long long key = round4(v);
        if (k == 0 || key > best_key) {
            best = k;
            best_key = key;
        }
    }
    return best;
}

/* A state longer than the room, read in windows of `size` tokens every `step` tokens: every
 * window scored for every question, then each answered from its deciding window. */
static int read_windows(sk_engine *en, const sk_run_ctx *cx, const sk_request *r, const sk_plan *pl, struct sk_multipass_ws *w,
                        size_t size, size_t step, ltotals *t, sk_err *e) {
    const size_t n_state = w->state_ids.n;
    int rc;
    size_t nw = 0;
    for (size_t i = 0;; i += step) {
        if (sk_grow_array((void **)&w->starts, &w->starts_cap, nw + 1, sizeof(size_t))) return oom(e);
        w->starts[nw++] = i;
        if (i + size >= n_state) break;
    }
    if (nw > LJ_MAX_LONG_SEQUENCES / (r->nq ? r->nq : 1))
        return sk_fail(e, SKYCMD_E_TOO_LARGE,
                       "long: %zu windows x %zu questions is more than %d sequences; use a "
                       "larger window or stride, or a shorter state", nw, r->nq, LJ_MAX_LONG_SEQUENCES);
    /* laya reads each window as a state of its own: the window's ids decoded to text and that
     * text tokenized again (a string state: cut at its end if it no longer fits). Their ids
     * follow the state's in w->state_ids. */
    for (size_t k = 0; k < nw; k++) {
        size_t len = n_state - w->starts[k] < size ? n_state - w->starts[k] : size;
        size_t off = 0, n_win = 0;
        if ((rc = window_state(cx, w, w->starts[k], len, &off, &n_win, e))) return rc;
        for (size_t i = 0; i < r->nq; i++)
            if (!add_job(w, i, r->q[i].n_opts, off, n_win, 0)) return oom(e);
    }
    if ((rc = run_jobs(en, cx, r, pl, w, pl->truncation != 0, e))) return rc;
    /* laya sums usage over the windows; usage.truncated counts the windows that were cut */
    t->truncated_is_count = 1;
    for (size_t k = 0; k < nw; k++) {
        int64_t st, dr;
        pass_truncation(w, k * r->nq, r->nq, w->ax, &st, &dr);
        t->state_tokens += st;
        t->dropped += dr;
        t->truncated += dr > 0;
        for (size_t i = 0; i < r->nq; i++) t->input_tokens += (int64_t)w->jobs[k * r->nq + i].n_tokens;
    }
    /* laya merges usage.options over the windows: any window's collapse stays */
    for (size_t k = 0; k + 1 < nw; k++)
        for (size_t i = 0; i < r->nq; i++) {
            const lj *j = &w->jobs[k * r->nq + i];
            if (j->distinct < (int64_t)j->n && w->ax[i].options_distinct < 0) {
                w->ax[i].options_distinct = j->distinct;
                w->ax[i].tokens_per_option = j->per_option;
            }
        }
    for (size_t i = 0; i < r->nq; i++) {
        size_t best = deciding_window(w, r, i, nw);
        take_job(w, r, i, &w->jobs[best * r->nq + i]);
        sk_answer_extra *x = &w->ax[i];
        x->has_window = 1;
        x->w_index = (int64_t)best;
        x->w_start = (int64_t)w->starts[best];
        x->w_end = (int64_t)(w->starts[best] + size < n_state ? w->starts[best] + size : n_state);
        x->w_count = (int64_t)nw;
    }
    t->windows = (int64_t)nw;
    return 0;
}

/* A long state (laya predict_long): one pass when it fits, else windows. */
static int read_long(sk_engine *en, const sk_run_ctx *cx, const sk_request *r, const sk_plan *pl, struct sk_multipass_ws *w,
                     ltotals *t, sk_err *e) {
    size_t room, size = 0, step = 1;
    int rc;
    if ((rc = state_room(cx, r, pl, w, &room, e)) ||
        (rc = window_budget(pl, room, pl->window, pl->stride, &size, &step, e)))
        return rc;
    if (w->state_ids.n > (pl->window > 0 ? size : room))
        return read_windows(en, cx, r, pl, w, size, step, t, e);
    /* fits: exactly the one-pass answer (laya calls system_one), usage.windows 1 */
    if (plain_jobs(w, r)) return oom(e);
    if ((rc = run_jobs(en, cx, r, pl, w, pl->truncation != 0, e))) return rc;
    for (size_t i = 0; i < r->nq; i++) take_job(w, r, i, &w->jobs[i]);
    one_pass_totals(w, r, t);
    t->windows = 1;
    return 0;
}

/* laya serve _tournament_plan: which choices are narrowed (their labels set to every option). */
static void tournament_plan(const sk_request *r, const sk_plan *pl, struct sk_multipass_ws *w) {
    int any_large = 0, over_cap = 0, ordered = 0;
    if (pl->group <= 0) return; /* the truncation report alone: one pass */
    for (size_t i = 0; i < r->nq; i++) {
        const sk_rquestion *q = &r->q[i];
        if (q->type == SKYCMD_QTYPE_CHOICE && q->n_opts > (size_t)pl->group) {
            any_large = 1;
            over_cap |= q->n_opts > LJ_MAX_CHOICE_OPTIONS;
            ordered |= q->order != NULL;
        }
    }
    if (!any_large || (!over_cap && ordered)) return; /* an option_order keeps one pass */
    for (size_t i = 0; i < r->nq; i++) {
        const sk_rquestion *q = &r->q[i];
        if (q->type == SKYCMD_QTYPE_CHOICE && q->n_opts > (size_t)pl->group) {
            w->n_labels[i] = q->n_opts;
            for (size_t o = 0; o < q->n_opts; o++) w->labels[w->final_off[i] + o] = o;
        }
    }
}

/* One elimination round: every narrowed choice still over the group cut into near-equal
 * groups (criteria order), one job each; the groups' winners become its labels. *played = 0
 * when no choice needed a round. */
static int tournament_round(sk_engine *en, const sk_run_ctx *cx, const sk_request *r, const sk_plan *pl, struct sk_multipass_ws *w,
                            ltotals *t, int *played, sk_err *e) {
    w->n_jobs = w->n_probs = w->n_texts = 0;
    for (size_t i = 0; i < r->nq; i++) {
        size_t L = w->n_labels[i];
        size_t parts = L ? (L + (size_t)pl->group - 1) / (size_t)pl->group : 0;
        if (parts <= 1) continue;
        const size_t *lab = w->labels + w->final_off[i];
        for (size_t g = 0; g < parts; g++) {
            size_t a = g * L / parts, b = (g + 1) * L / parts;
            if (sk_grow_array((void **)&w->texts, &w->texts_cap, w->n_texts + (b - a), sizeof(sk_jstr))) return oom(e);
            lj *j = add_job(w, i, b - a, 0, w->state_ids.n, r->state_is_list);
            if (!j) return oom(e);
            j->gathered = 1;
            j->text_off = w->n_texts;
            j->label_first = a;
            for (size_t k = a; k < b; k++) w->texts[w->n_texts++] = r->q[i].opts[lab[k]].text;
        }
    }
    *played = w->n_jobs > 0;
    if (!*played) return 0;
    int rc = run_jobs(en, cx, r, pl, w, 0, e);
    if (rc) return rc;
    /* the winners (first argmax), in group order, become each question's labels */
    size_t ji = 0;
    while (ji < w->n_jobs) {
        size_t i = w->jobs[ji].q, kept = 0;
        size_t *lab = w->labels + w->final_off[i];
        for (; ji < w->n_jobs && w->jobs[ji].q == i; ji++) {
            const lj *j = &w->jobs[ji];
            const double *p = w->probs + j->p_off;
            size_t best = 0;
            for (size_t o = 1; o < j->n; o++)
                if (p[o] > p[best]) best = o;
            t->input_tokens += (int64_t)j->n_tokens;
            lab[kept++] = lab[j->label_first + best]; /* kept <= label_first: in place is safe */
        }
        w->n_labels[i] = kept;
        w->ax[i].rounds++;
    }
    return 0;
}

/* A tournament (laya serve _predict_with_tournament): the rounds, then the final pass that
 * answers every question, the narrowed choices cut to their finalists. */
static int play_tournament(sk_engine *en, const sk_run_ctx *cx, const sk_request *r, const sk_plan *pl, struct sk_multipass_ws *w,
                           ltotals *t, sk_err *e) {
    int rc, played = 1;
    tournament_plan(r, pl, w);
    while (played)
        if ((rc = tournament_round(en, cx, r, pl, w, t, &played, e))) return rc;
    w->n_jobs = w->n_probs = w->n_texts = 0;
    for (size_t i = 0; i < r->nq; i++) {
        const sk_rquestion *q = &r->q[i];
        if (w->ax[i].rounds == 0) {
            if (!add_job(w, i, q->n_opts, 0, w->state_ids.n, r->state_is_list)) return oom(e);
            continue;
        }
        size_t L = w->n_labels[i];
        if (sk_grow_array((void **)&w->texts, &w->texts_cap, w->n_texts + L, sizeof(sk_jstr))) return oom(e);
        lj *j = add_job(w, i, L, 0, w->state_ids.n, r->state_is_list);
        if (!j) return oom(e);
        j->gathered = 1;
        j->text_off = w->n_texts;
        for (size_t k = 0; k < L; k++) w->texts[w->n_texts++] = q->opts[w->labels[w->final_off[i] + k]].text;
    }
    if ((rc = run_jobs(en, cx, r, pl, w, pl->truncation != 0, e))) return rc;
    one_pass_totals(w, r, t);
    for (size_t i = 0; i < r->nq; i++)
        if (w->ax[i].rounds == 0) take_job(w, r, i, &w->jobs[i]);
    return 0;
}

/* The answers: a narrowed choice from its finalists (the final pass), spread over every
 * option with 0 for the eliminated ones; the others from their final probabilities. */
static int make_answers(struct sk_multipass_ws *w, const sk_request *r, sk_err *e) {
    int rc;
    for (size_t i = 0; i < r->nq; i++) {
        const sk_rquestion *q = &r->q[i];
        double *p = w->final + w->final_off[i];
        sk_answer *a = &w->answers[i];
        sk_answer_extra *x = &w->ax[i];
        if (x->rounds == 0) {
            if ((rc = sk_answer_from_probs(q->type, p, q->n_opts, a, e))) return question_fail(e, q, rc);
            continue;
        }
        const lj *j = &w->jobs[i];
        const double *pf = w->probs + j->p_off;
        if ((rc = sk_answer_from_probs(q->type, pf, j->n, a, e))) return question_fail(e, q, rc);
        const size_t *lab = w->labels + w->final_off[i];
        for (size_t o = 0; o < q->n_opts; o++) p[o] = 0.0;
        for (size_t k = 0; k < j->n; k++) p[lab[k]] = pf[k];
        a->best = lab[a->best];
        a->n = q->n_opts;
        a->p = p;
        /* the wire's confidence is TypeSafe's formula of the probabilities it publishes, here
         * as everywhere (Jev's confidence.formula): over every option, the eliminated at 0 */
        a->confidence = sk_conf_choice(p, q->n_opts);
        x->n_finalists = j->n;
        x->finalists = w->labels + w->final_off[i]; /* copied into the response */
        x->order_dropped = q->order != NULL;
    }
    return 0;
}

int sk_multipass_decide(sk_engine *en, const sk_run_ctx *cx, const sk_request *r, const sk_plan *pl,
                        sk_multipass_result *out, sk_err *e) {
    memset(out, 0, sizeof *out);
    if (pl->is_long && pl->group > 0)
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "long states and tournaments cannot be combined "
                                            "(SKYCMD_OPT_LONG with SKYCMD_OPT_TOURNAMENT_GROUP)");
    if (!en->mp && !(en->mp = calloc(1, sizeof *en->mp))) return oom(e);
    struct sk_multipass_ws *w = en->mp;
    int rc = prepare(w, r, e);
    if (rc) return rc;
    /* the state, tokenized once, whole (a long scan and the truncation report need its
     * length); the accessors' bounded report (3) of a one-pass read takes it only as far as a
     * sequence can use it, as the plain path does: no sequence holds more than max_len
     * tokens, so a state that yields max_len ids is cut for every question whatever its
     * full length, and those ids are the full encoding's first (or, a list state, last) */
    sk_cut_rules cuts;
    sk_tokenizer_cut_rules(cx->tok, &cuts);
    if (pl->truncation == 3 && !pl->is_long)
        rc = sk_prompt_state_ids_bounded(&cx->pt, &cuts, r->state.s, r->state.n,
                                         r->state_is_list, pl->max_len, cx->ws, &w->state_ids, e);
    else
        rc = sk_prompt_state_ids(&cx->pt, r->state.s, r->state.n, cx->ws, &w->state_ids, e);
    if (rc) {
        sk_err_prefix(e, "state");
        return rc;
    }
    ltotals t = {0};
    rc = pl->is_long ? read_long(en, cx, r, pl, w, &t, e) : play_tournament(en, cx, r, pl, w, &t, e);
    if (!rc) rc = make_answers(w, r, e);
    if (rc) return rc;
    /* without the report nothing of it is recorded */
    if (!pl->truncation)
        for (size_t i = 0; i < r->nq; i++) {
            w->ax[i].truncated = -1;
            w->ax[i].options_distinct = w->ax[i].tokens_per_option = -1;
        }
    *out = (sk_multipass_result){w->answers, w->ax, t.input_tokens, t.windows, t.truncated, t.state_tokens,
                                 t.dropped, t.truncated_is_count};
    return 0;
}

const double *sk_multipass_final_pass(const sk_engine *en, size_t i, size_t *n) {
    const struct sk_multipass_ws *w = en->mp;
    *n = w->jobs[i].n;
    return w->probs + w->jobs[i].p_off;
}
