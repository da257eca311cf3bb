/* long.c - what laya 0.4.15 users rely on beyond one pass (issue 18, items 1-3), opt-in:
 *
 *  - long states (laya Agent.predict_long, laya.common.window_budget): the state is
 *    tokenized once and read in overlapping token windows, every window scored for every
 *    question in shared batches, then per question noul takes the window of highest P(true),
 *    choice and score the window of highest max(p) (laya's answer_confidence), both compared
 *    at laya's 4 decimals with the first window winning a tie, as Python's max() does. The
 *    deciding window is reported (index, token_start, token_end, count) with usage.windows.
 *    A window is a slice of the state's token ids, never decoded and re-tokenized (laya does,
 *    and its own comment says the boundaries may shift): the span reported is the one read.
 *    Cost: each state token is read by about window/stride windows, so linear in the state.
 *  - tournaments (laya serve _tournament_plan, _predict_with_tournament; laya.shortlist
 *    predict_tournament): a choice over `group` options is cut, in criteria order, into
 *    near-equal groups, each group answered as its own question (one shared pass per round),
 *    the winners go on until no choice is over `group`; the final pass answers every question
 *    with the narrowed choices cut to their finalists. Eliminated options get probability 0,
 *    confidence is the final round's, usage.input_tokens sums every pass.
 *  - the truncation report (laya's usage.state_tokens, state_tokens_dropped, truncated,
 *    truncated_questions, and usage.options for options whose token spans collapsed).
 *
 * Every sequence is built by sk_prompt_build and run by sk_model_forward_batch exactly as
 * the plain path does (session.c), so each gets the logits it would get alone; only what is
 * built and how answers are combined differ. docs/compat.md lists the controls and the
 * deliberate differences from laya. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handles.h"

#define LJ_MAX_CHOICE_OPTIONS 100
/* Sequences one long request may cost (windows x questions): the work stays linear in the
 * state, but a body should not buy an unbounded number of forward passes (413 past it). */
#define LJ_MAX_LONG_SEQUENCES 65536 /* laya serve MAX_CHOICE_OPTIONS: past it an order is dropped */

/* One sequence to score: a question (or a subset of its options) against a state slice. */
typedef struct lj {
    size_t q;                 /* question index in the request */
    int gathered;             /* option texts at w->texts[text_off..+n), else the question's */
    size_t text_off, n;       /* n options shown */
    size_t state_off, n_state;
    int left;                 /* a list state keeps its end */
    size_t p_off;             /* n probabilities at w->probs + p_off (shown-option order) */
    /* results */
    size_t n_tokens, state_used;
    int64_t distinct, per_option; /* option spans after the head budget; per_option -1 = None */
} lj;

struct sk_long_ws {
    sk_i32v state_ids, ids, markers;
    sk_seqbatch batch;        /* the plain path's batches (seqbatch.h) */
    size_t seq_job[SK_BATCH_SEQS]; /* the job of batch.seqs[k] */
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

_Static_assert(SK_LONG_MAX_WINDOW == (int64_t)1 << 20 && SK_TOURNAMENT_MAX_GROUP == 100,
               "core.c's option bounds of SKYCMD_OPT_WINDOW/_STRIDE/_TOURNAMENT_GROUP");

int sk_long_is_option(int option) {
    return option == SKYCMD_OPT_LONG || option == SKYCMD_OPT_WINDOW || option == SKYCMD_OPT_STRIDE ||
           option == SKYCMD_OPT_REPORT_TRUNCATION || option == SKYCMD_OPT_TOURNAMENT_GROUP;
}

int sk_long_set_option(skycmd_session *s, int option, int64_t value) {
    switch (option) {
    case SKYCMD_OPT_LONG: s->long_on = value; break;
    case SKYCMD_OPT_WINDOW: s->long_window = value; break;
    case SKYCMD_OPT_STRIDE: s->long_stride = value; break;
    case SKYCMD_OPT_REPORT_TRUNCATION: s->report_truncation = value; break;
    default:
        if (value == 1) {
            snprintf(s->errmsg, sizeof s->errmsg,
                     "SKYCMD_OPT_TOURNAMENT_GROUP must be 0 (off) or at least %d", SK_TOURNAMENT_MIN_GROUP);
            return -1;
        }
        s->tournament_group = value;
        break;
    }
    return 0;
}

void sk_long_ws_free(struct sk_long_ws *w) {
    if (!w) return;
    sk_i32v_free(&w->state_ids);
    sk_i32v_free(&w->ids);
    sk_i32v_free(&w->markers);
    sk_seqbatch_free(&w->batch);
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

/* The effective controls of request r: the body's where it gave them, else the session's. */
typedef struct lctl {
    int is_long, truncation;  /* truncation: 0 off, 1 wire, 2 accessors only */
    int64_t window, stride, group;
} lctl;

static lctl controls(const skycmd_session *s, const sk_request *r) {
    lctl c = {(int)s->long_on, (int)s->report_truncation, s->long_window, s->long_stride,
              s->tournament_group};
    if (r->ctl_set & SK_CTL_LONG) c.is_long = r->ctl_long;
    if (r->ctl_set & SK_CTL_WINDOW) c.window = r->ctl_window;
    if (r->ctl_set & SK_CTL_STRIDE) c.stride = r->ctl_stride;
    /* the body can only ask for the report on the wire; a session's "accessors only" stays */
    if ((r->ctl_set & SK_CTL_REPORT_TRUNCATION))
        c.truncation = r->ctl_report_truncation ? 1 : (c.truncation == 2 ? 2 : 0);
    if (r->ctl_set & SK_CTL_TOURNAMENT_GROUP) c.group = r->ctl_tournament_group;
    /* the two do not combine: what the body asks for wins over the session's other one (a
     * server's --tournament-group does not refuse a body's "long"); both from the session
     * are refused when the request is answered */
    if ((r->ctl_set & SK_CTL_LONG) && c.is_long && !(r->ctl_set & SK_CTL_TOURNAMENT_GROUP)) c.group = 0;
    if ((r->ctl_set & SK_CTL_TOURNAMENT_GROUP) && c.group > 0 && !(r->ctl_set & SK_CTL_LONG)) c.is_long = 0;
    if (!c.is_long) c.window = c.stride = 0;
    return c;
}

int sk_long_wanted(const skycmd_session *s, const sk_request *r) {
    lctl c = controls(s, r);
    return c.is_long || c.truncation || c.group > 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need) n *= 2;
    if (n > SIZE_MAX / elem) return -1;
    void *q = realloc(*p, n * elem);
    if (!q) return -1;
    *p = q;
    *cap = n;
    return 0;
}

static int oom(sk_err *e) { return sk_fail(e, SKYCMD_E_NOMEM, "out of memory answering the request"); }

static int question_fail(sk_err *e, const sk_rquestion *q, int rc) {
    sk_err_prefix(e, "questions.%.*s", sk_question_id_len(q->id), q->id.s);
    return rc;
}

/* Add a job; its probabilities are reserved at once. NULL when out of memory. */
static lj *add_job(struct sk_long_ws *w, size_t q, size_t n, size_t state_off, size_t n_state, int left) {
    if (grow((void **)&w->jobs, &w->jobs_cap, w->n_jobs + 1, sizeof *w->jobs) ||
        grow((void **)&w->probs, &w->probs_cap, w->n_probs + n, sizeof *w->probs))
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

/* Run the batched sequences, softmax their logits into the jobs' probabilities. */
static int flush(skycmd_session *s, const sk_request *r, struct sk_long_ws *w, sk_err *e) {
    const skycmd_model *m = s->model;
    sk_seqbatch *b = &w->batch;
    int rc = sk_seqbatch_run(b, m->m, s->scratch, e);
    if (rc) return question_fail(e, &r->q[w->jobs[w->seq_job[0]].q], rc);
    for (size_t k = 0; k < b->n; k++) {
        const lj *j = &w->jobs[w->seq_job[k]];
        const sk_rquestion *q = &r->q[j->q];
        double *p = w->probs + j->p_off;
        double T = sk_temp_for(&m->temps, q->type, b->seqs[k].n_markers);
        sk_softmax(b->seqs[k].logits, b->seqs[k].n_markers, T, p);
        if (!j->gathered && q->order) { /* slot order back to option order (unpermute_probs) */
            double slot[SK_REQUEST_MAX_OPTIONS];
            memcpy(slot, p, j->n * sizeof *p);
            for (size_t sl = 0; sl < j->n; sl++) p[q->order[sl]] = slot[sl];
        }
        for (size_t i = 0; i < j->n; i++)
            if (isnan(p[i]))
                return question_fail(e, q, sk_fail(e, SKYCMD_E_INTERNAL,
                                                   "the model could not evaluate the decision"));
    }
    sk_seqbatch_clear(b);
    return 0;
}

/* Build and score every job of w (their probabilities land at w->probs + p_off). */
static int run_jobs(skycmd_session *s, const sk_request *r, struct sk_long_ws *w, int want_stats,
                    sk_err *e) {
    const skycmd_model *m = s->model;
    int rc;
    sk_prompt_tok pt = {sk_session_encode_cb, s, m->cls, m->sep, m->mask, m->mask_text};
    sk_seqbatch_clear(&w->batch);
    for (size_t ji = 0; ji < w->n_jobs; ji++) {
        lj *j = &w->jobs[ji];
        const sk_rquestion *q = &r->q[j->q];
        const sk_jstr *texts;
        size_t stride;
        if (j->gathered) {
            texts = w->texts + j->text_off;
            stride = sizeof(sk_jstr);
        } else if (q->order) {
            texts = q->slot_text;
            stride = sizeof(sk_jstr);
        } else {
            texts = &q->opts[0].text;
            stride = sizeof(sk_roption);
        }
        rc = sk_prompt_build(&pt, sk_qtype_names[q->type], q->ins.s, q->ins.n, texts, stride, j->n,
                             w->state_ids.v + j->state_off, j->n_state, j->left, sk_session_max_len(s),
                             sk_session_head_max_len(s), &s->ws, &w->ids, &w->markers, e);
        if (rc) return question_fail(e, q, rc);
        size_t head_len = s->ws.head_len;
        size_t room = sk_session_max_len(s) > head_len + 1 ? sk_session_max_len(s) - head_len - 1 : 0;
        j->state_used = j->n_state < room ? j->n_state : room;
        j->n_tokens = w->ids.n;
        if (want_stats) option_stats(&s->ws, j->n, sk_session_head_max_len(s), &j->per_option, &j->distinct);
        if (!sk_seqbatch_fits(&w->batch, w->ids.n) && (rc = flush(s, r, w, e))) return rc;
        w->seq_job[w->batch.n] = ji;
        if (sk_seqbatch_add(&w->batch, m->m, &w->ids, &w->markers, head_len, q->type)) return oom(e);
    }
    return flush(s, r, w, e);
}

/* Python's round(x, 4) as an integer count of 1e-4 (ties to even), laya's comparison key. */
static long long round4(double x) { return (long long)nearbyint(x * 10000.0); }

/* The truncation report of one pass: jobs [j0, j0 + nq) answer questions 0..nq-1. */
static void pass_truncation(const struct sk_long_ws *w, size_t j0, size_t nq, sk_answer_extra *ax,
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
static int window_budget(const skycmd_session *s, size_t room, int64_t window, int64_t stride,
                         size_t *size_out, size_t *step_out, sk_err *e) {
    int64_t dflt = (int64_t)sk_session_max_len(s) - (int64_t)sk_session_head_max_len(s) - 8;
    int64_t requested = window > 0 ? window : (dflt > 64 ? dflt : 64);
    int64_t size = requested;
    if (room == 0)
        return sk_fail(e, SKYCMD_E_REQUEST,
                       "long: the questions' options fill the whole sequence (max_len=%zu, "
                       "head_max_len=%zu), leaving no room for the state; no window can carry any of it",
                       sk_session_max_len(s), sk_session_head_max_len(s));
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

/* One job per question against the whole state (laya system_one). */
static int plain_jobs(struct sk_long_ws *w, const sk_request *r) {
    for (size_t i = 0; i < r->nq; i++)
        if (!add_job(w, i, r->q[i].n_opts, 0, w->state_ids.n, r->state_is_list)) return -1;
    return 0;
}

/* The final probabilities of question i = job j's. */
static void take_job(struct sk_long_ws *w, const sk_request *r, size_t i, const lj *j) {
    memcpy(w->final + w->final_off[i], w->probs + j->p_off, r->q[i].n_opts * sizeof(double));
}

int sk_long_decide(skycmd_session *s, const sk_request *r, skycmd_response **out, sk_err *e) {
    const skycmd_model *m = s->model;
    *out = NULL;
    int rc;
    lctl c = controls(s, r);
    if (c.is_long && c.group > 0)
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "long states and tournaments cannot be combined "
                                            "(SKYCMD_OPT_LONG with SKYCMD_OPT_TOURNAMENT_GROUP)");
    if (!s->lws && !(s->lws = calloc(1, sizeof *s->lws))) return oom(e);
    struct sk_long_ws *w = s->lws;
    w->n_jobs = w->n_probs = w->n_texts = 0;

    /* per question: final probabilities, answers, extras */
    size_t total = 0, nq1 = r->nq ? r->nq : 1;
    if (grow((void **)&w->final_off, &w->final_off_cap, nq1, sizeof(size_t)) ||
        grow((void **)&w->answers, &w->answers_cap, nq1, sizeof(sk_answer)) ||
        grow((void **)&w->ax, &w->ax_cap, nq1, sizeof(sk_answer_extra)) ||
        grow((void **)&w->n_labels, &w->n_labels_cap, nq1, sizeof(size_t)))
        return oom(e);
    for (size_t i = 0; i < r->nq; i++) {
        w->final_off[i] = total;
        total += r->q[i].n_opts;
    }
    if (grow((void **)&w->final, &w->final_cap, total ? total : 1, sizeof(double)) ||
        grow((void **)&w->labels, &w->labels_cap, total ? total : 1, sizeof(size_t)))
        return oom(e);
    memset(w->ax, 0, nq1 * sizeof *w->ax);
    for (size_t i = 0; i < r->nq; i++) {
        w->ax[i].truncated = -1;
        w->ax[i].options_distinct = w->ax[i].tokens_per_option = -1;
    }

    /* the state, tokenized once, whole (a long scan and the truncation report need its length) */
    sk_prompt_tok pt = {sk_session_encode_cb, s, m->cls, m->sep, m->mask, m->mask_text};
    if ((rc = sk_prompt_state_ids(&pt, r->state.s, r->state.n, &s->ws, &w->state_ids, e))) {
        sk_err_prefix(e, "state");
        return rc;
    }
    const size_t n_state = w->state_ids.n;
    const int want_stats = c.truncation != 0;
    int64_t input_tokens = 0, windows = 0, truncated = 0, state_tokens = 0, dropped = 0;
    int truncated_is_count = 0;

    if (c.is_long) {
        /* the room every question leaves for the state: its head built alone */
        size_t room = SIZE_MAX;
        for (size_t i = 0; i < r->nq; i++) {
            const sk_rquestion *q = &r->q[i];
            const sk_jstr *texts = q->order ? q->slot_text : &q->opts[0].text;
            size_t stride = q->order ? sizeof(sk_jstr) : sizeof(sk_roption);
            rc = sk_prompt_build(&pt, sk_qtype_names[q->type], q->ins.s, q->ins.n, texts, stride,
                                 q->n_opts, NULL, 0, 0, sk_session_max_len(s), sk_session_head_max_len(s), &s->ws, &w->ids,
                                 &w->markers, e);
            if (rc) return question_fail(e, q, rc);
            size_t hl = s->ws.head_len, rq = sk_session_max_len(s) > hl + 1 ? sk_session_max_len(s) - hl - 1 : 0;
            if (rq < room) room = rq;
        }
        size_t size = 0, step = 1;
        if ((rc = window_budget(s, room, c.window, c.stride, &size, &step, e))) return rc;
        if (n_state <= (c.window > 0 ? size : room)) {
            /* fits: exactly the one-pass answer (laya calls system_one), usage.windows 1 */
            if (plain_jobs(w, r)) return oom(e);
            if ((rc = run_jobs(s, r, w, want_stats, e))) return rc;
            for (size_t i = 0; i < r->nq; i++) {
                take_job(w, r, i, &w->jobs[i]);
                input_tokens += (int64_t)w->jobs[i].n_tokens;
            }
            pass_truncation(w, 0, r->nq, w->ax, &state_tokens, &dropped);
            truncated = dropped > 0;
            windows = 1;
        } else {
            size_t nw = 0;
            for (size_t i = 0;; i += step) {
                if (grow((void **)&w->starts, &w->starts_cap, nw + 1, sizeof(size_t))) return oom(e);
                w->starts[nw++] = i;
                if (i + size >= n_state) break;
            }
            if (nw > LJ_MAX_LONG_SEQUENCES / (r->nq ? r->nq : 1))
                return sk_fail(e, SKYCMD_E_TOO_LARGE,
                               "long: %zu windows x %zu questions is more than %d sequences; use a "
                               "larger window or stride, or a shorter state", nw, r->nq, LJ_MAX_LONG_SEQUENCES);
            for (size_t k = 0; k < nw; k++) {
                size_t len = n_state - w->starts[k] < size ? n_state - w->starts[k] : size;
                for (size_t i = 0; i < r->nq; i++)
                    if (!add_job(w, i, r->q[i].n_opts, w->starts[k], len, 0)) return oom(e);
            }
            if ((rc = run_jobs(s, r, w, want_stats, e))) return rc;
            truncated_is_count = 1;
            for (size_t k = 0; k < nw; k++) {
                int64_t st, dr;
                pass_truncation(w, k * r->nq, r->nq, w->ax, &st, &dr);
                state_tokens += st;
                dropped += dr;
                truncated += dr > 0;
                for (size_t i = 0; i < r->nq; i++) input_tokens += (int64_t)w->jobs[k * r->nq + i].n_tokens;
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
                const sk_rquestion *q = &r->q[i];
                size_t best = 0;
                long long best_key = 0;
                for (size_t k = 0; k < nw; k++) {
                    const double *p = w->probs + w->jobs[k * r->nq + i].p_off;
                    double v;
                    if (q->type == SKYCMD_QTYPE_NOUL) {
                        v = p[1];
                    } else {
                        v = p[0];
                        for (size_t o = 1; o < q->n_opts; o++)
                            if (p[o] > v) v = p[o];
                    }
                    long long key = round4(v);
                    if (k == 0 || key > best_key) {
                        best = k;
                        best_key = key;
                    }
                }
                take_job(w, r, i, &w->jobs[best * r->nq + i]);
                sk_answer_extra *x = &w->ax[i];
                x->has_window = 1;
                x->w_index = (int64_t)best;
                x->w_start = (int64_t)w->starts[best];
                x->w_end = (int64_t)(w->starts[best] + size < n_state ? w->starts[best] + size : n_state);
                x->w_count = (int64_t)nw;
            }
            windows = (int64_t)nw;
        }
    } else {
        /* tournament plan (laya serve _tournament_plan), then the rounds */
        int any_large = 0, over_cap = 0, ordered = 0;
        for (size_t i = 0; i < r->nq; i++) {
            const sk_rquestion *q = &r->q[i];
            w->n_labels[i] = 0;
            if (c.group > 0 && q->type == SKYCMD_QTYPE_CHOICE && q->n_opts > (size_t)c.group) {
                any_large = 1;
                over_cap |= q->n_opts > LJ_MAX_CHOICE_OPTIONS;
                ordered |= q->order != NULL;
            }
        }
        int narrow = any_large && (over_cap || !ordered);
        for (size_t i = 0; narrow && i < r->nq; i++) {
            const sk_rquestion *q = &r->q[i];
            if (q->type == SKYCMD_QTYPE_CHOICE && q->n_opts > (size_t)c.group) {
                w->n_labels[i] = q->n_opts;
                for (size_t o = 0; o < q->n_opts; o++) w->labels[w->final_off[i] + o] = o;
            }
        }
        for (;;) {
            w->n_jobs = w->n_probs = w->n_texts = 0;
            for (size_t i = 0; narrow && i < r->nq; i++) {
                size_t L = w->n_labels[i];
                size_t parts = L ? (L + (size_t)c.group - 1) / (size_t)c.group : 0;
                if (parts <= 1) continue;
                const size_t *lab = w->labels + w->final_off[i];
                for (size_t g = 0; g < parts; g++) {
                    size_t a = g * L / parts, b = (g + 1) * L / parts;
                    if (grow((void **)&w->texts, &w->texts_cap, w->n_texts + (b - a), sizeof(sk_jstr)))
                        return oom(e);
                    lj *j = add_job(w, i, b - a, 0, n_state, r->state_is_list);
                    if (!j) return oom(e);
                    j->gathered = 1;
                    j->text_off = w->n_texts;
                    j->state_off = a; /* (reused below: the group's first label) */
                    for (size_t k = a; k < b; k++) w->texts[w->n_texts++] = r->q[i].opts[lab[k]].text;
                }
            }
            if (!w->n_jobs) break;
            /* the group's first label was parked in state_off: move it out before building */
            size_t *first = malloc(w->n_jobs * sizeof *first);
            if (!first) return oom(e);
            for (size_t ji = 0; ji < w->n_jobs; ji++) {
                first[ji] = w->jobs[ji].state_off;
                w->jobs[ji].state_off = 0;
            }
            rc = run_jobs(s, r, w, 0, e);
            if (rc) {
                free(first);
                return rc;
            }
            /* the winners, in group order, become each question's labels */
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
                    input_tokens += (int64_t)j->n_tokens;
                    lab[kept++] = lab[first[ji] + best]; /* kept <= first[ji]: in place is safe */
                }
                w->n_labels[i] = kept;
                w->ax[i].rounds++;
            }
            free(first);
        }
        /* the final pass: every question, the narrowed ones cut to their finalists */
        w->n_jobs = w->n_probs = w->n_texts = 0;
        for (size_t i = 0; i < r->nq; i++) {
            const sk_rquestion *q = &r->q[i];
            if (w->ax[i].rounds > 0) {
                size_t L = w->n_labels[i];
                if (grow((void **)&w->texts, &w->texts_cap, w->n_texts + L, sizeof(sk_jstr))) return oom(e);
                lj *j = add_job(w, i, L, 0, n_state, r->state_is_list);
                if (!j) return oom(e);
                j->gathered = 1;
                j->text_off = w->n_texts;
                for (size_t k = 0; k < L; k++)
                    w->texts[w->n_texts++] = q->opts[w->labels[w->final_off[i] + k]].text;
            } else if (!add_job(w, i, q->n_opts, 0, n_state, r->state_is_list)) {
                return oom(e);
            }
        }
        if ((rc = run_jobs(s, r, w, want_stats, e))) return rc;
        for (size_t i = 0; i < r->nq; i++) input_tokens += (int64_t)w->jobs[i].n_tokens;
        pass_truncation(w, 0, r->nq, w->ax, &state_tokens, &dropped);
        truncated = dropped > 0;
        for (size_t i = 0; i < r->nq; i++) {
            const lj *j = &w->jobs[i];
            if (w->ax[i].rounds == 0) take_job(w, r, i, j);
        }
    }

    /* answers (a narrowed choice: from its finalists, then spread over every option) */
    for (size_t i = 0; i < r->nq; i++) {
        const sk_rquestion *q = &r->q[i];
        double *p = w->final + w->final_off[i];
        sk_answer *a = &w->answers[i];
        sk_answer_extra *x = &w->ax[i];
        if (x->rounds > 0) {
            const lj *j = &w->jobs[i];
            const double *pf = w->probs + j->p_off;
            if ((rc = sk_answer_from_probs(q->type, pf, j->n, a, e))) return question_fail(e, q, rc);
            const size_t *lab = w->labels + w->final_off[i];
            for (size_t o = 0; o < q->n_opts; o++) p[o] = 0.0;
            for (size_t k = 0; k < j->n; k++) p[lab[k]] = pf[k];
            a->best = lab[a->best];
            a->n = q->n_opts;
            a->p = p;
            x->n_finalists = j->n;
            x->finalists = w->labels + w->final_off[i]; /* copied into the response below */
            x->order_dropped = q->order != NULL;
        } else if ((rc = sk_answer_from_probs(q->type, p, q->n_opts, a, e))) {
            return question_fail(e, q, rc);
        }
    }
    if (!want_stats)
        for (size_t i = 0; i < r->nq; i++) {
            w->ax[i].truncated = -1;
            w->ax[i].options_distinct = w->ax[i].tokens_per_option = -1;
        }

    skycmd_response *resp = NULL;
    if ((rc = sk_response_new(r, w->answers, m->name, input_tokens, &resp, e))) return rc;
    /* the abstention gate on the aggregated answers (laya applies it to the final answers) */
    sk_answers_gate(resp->a, resp->n, r->gate.set ? &r->gate : &s->gate);
    sk_answer_extra *ax = sk_arena_alloc(&resp->arena, nq1 * sizeof *ax);
    if (!ax) {
        skycmd_response_free(resp);
        return oom(e);
    }
    memcpy(ax, w->ax, r->nq * sizeof *ax);
    for (size_t i = 0; i < r->nq; i++) {
        if (!ax[i].n_finalists) continue;
        size_t *f = sk_arena_alloc(&resp->arena, ax[i].n_finalists * sizeof *f);
        if (!f) {
            skycmd_response_free(resp);
            return oom(e);
        }
        memcpy(f, ax[i].finalists, ax[i].n_finalists * sizeof *f);
        ax[i].finalists = f;
    }
    resp->x = (sk_response_extra){.a = ax, .windows_on = c.is_long, .windows = windows,
                                  .truncation = c.truncation, .truncated_is_count = truncated_is_count,
                                  .truncated = truncated, .state_tokens = state_tokens,
                                  .state_tokens_dropped = dropped};
    *out = resp;
    return 0;
}
