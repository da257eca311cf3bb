/*
 * passes.c - sk_model_forward_batch: a batch's forward pass on the threads of the scratch's
 * pool.
 *
 * Contract (model.h): each sequence gets bitwise the logits of a pass of its own, whatever
 * the batch and the thread count (forward.c holds every row to the same arithmetic). The
 * pool's threads serve a batch in one of two ways:
 *  - step by step (forward.c): one pass over the whole batch, each matrix product,
 *    attention and row-wise step split over the threads the process budget lends, so a
 *    hand-off per step, about eight per layer;
 *  - sequence by sequence: the sequences are dealt into one group per thread of the pool
 *    (longest first, each onto the group with the fewest rows so far), and every thread
 *    that joins runs whole one-thread passes over the groups it claims from a counter, on
 *    a scratch of its own (the caller on the session's, helper ith on sub[ith - 1]): one
 *    hand-off per batch. A helper that has not joined when the groups run out does nothing,
 *    so the batch never waits for a sleeping thread; and the caller never waits for a
 *    helper's whole group either: once it has none left to claim, it runs the helpers'
 *    unpublished groups too, and the first pass of a group to finish publishes it (see
 *    split_run), so a helper that joined late or runs on a cold core costs the batch at
 *    most about its one-thread time.
 * The second way is taken for two or more sequences whose matrix work per layer is at most
 * SPLIT_SEQS_MAX_MACS. There a step lasts microseconds and its hand-off costs about as much:
 * on a 2-vCPU Sapphire Rapids guest (2026-12-04, three-question requests, two threads vs
 * one) splitting steps was slower than one thread for s1-pico (0.341 vs 0.179 ms) and
 * s1-nano (1.57 vs 1.02 ms) and no faster for s1-micro (6.48 vs 5.90 ms), while whole
 * sequences per thread gave 0.140, 0.676 and 4.32 ms. A ModernBERT-base shape's steps
 * split well (87.8 ms by step, 96.2 ms by sequence, 145.5 ms on one thread): its three
 * sequences deal two to one, and the step split keeps both cores busy to the end.
 * Splitting by sequence is off under a calibration record (it wants the rows in batch
 * order). The scratches of the split are made on first use and kept: a warm call allocates
 * nothing.
 */
#define _POSIX_C_SOURCE 200809L  /* nanosleep (a test hook) */
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* Multiply-adds of the encoder's matrix products per layer, over the whole batch, up to
 * which a batch of several sequences is split by sequence rather than by step: s1-pico's
 * three-question request is 241 rows x 40960 = 9.9 M, s1-micro's with 128-token questions
 * 384 x 655360 = 252 M, a ModernBERT-base shape's three-question request 241 x 5.0 M =
 * 1.2 G. */
#define SPLIT_SEQS_MAX_MACS ((size_t)512 << 20)

static int split_by_sequence(const sk_model *m, const sk_scratch *s, size_t n_rows,
                             size_t n_marked, int threads) {
    if (threads < 2 || n_marked < 2 || s->calib) return 0;
    const size_t d = m->hp.n_embd, ff = m->hp.n_ff;
    const size_t per_row = 4 * d * d + 3 * d * ff;  /* Wqkv, Wo, the GeGLU's Wi, its Wo */
    return n_rows <= SPLIT_SEQS_MAX_MACS / (per_row ? per_row : 1);
}

/* Room for n sequences in up to g groups, and a scratch for each of the g - 1 helpers: all
 * or nothing for the arrays (a scratch made before a failure is kept for next time). */
static int reserve_split(const sk_model *m, sk_scratch *s, size_t n, int g, sk_err *e) {
    if (n > s->cap_gseqs) {
        sk_seq *gs = sk_malloc_array(n, 2 * sizeof *gs);
        size_t *gid = sk_malloc_array(n, sizeof *gid);
        if (!gs || !gid) {
            free(gs);
            free(gid);
            return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for %zu sequences", n);
        }
        free(s->gseqs);
        free(s->gid);
        s->gseqs = gs;
        s->gid = gid;
        s->cap_gseqs = n;
    }
    if (g > s->cap_groups) {
        struct split_group *groups = sk_malloc_array((size_t)g, sizeof *groups);
        sk_scratch **sub = sk_malloc_array((size_t)g, sizeof *sub);
        if (!groups || !sub) {
            free(groups);
            free(sub);
            return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for %d thread groups", g);
        }
        for (int i = 0; i < s->n_sub; i++) sub[i] = s->sub[i];
        free(s->groups);
        free(s->sub);
        s->groups = groups;
        s->sub = sub;
        s->cap_groups = g;
    }
    while (s->n_sub < g - 1) {
        sk_scratch *t = sk_scratch_new(m);
        if (!t) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for a thread's scratch");
        t->attn_tiles = s->attn_tiles;  /* before its buffers exist: they depend on it */
        s->sub[s->n_sub++] = t;
    }
    for (int i = 0; i < g - 1; i++) {  /* one thread each (no pool), the caller's modes */
        s->sub[i]->act_mode = s->act_mode;
        s->sub[i]->one_pass_site = s->one_pass_site;
        s->sub[i]->unfolded = s->unfolded;
    }
    return SKYCMD_OK;
}

/* Deal the n sequences with markers into at most g groups: longest first (ties in batch
 * order), each onto the group with the fewest rows so far (ties: the lowest group). Leaves
 * them grouped in s->gseqs[0 .. n), heaviest group first, in that order within a group,
 * with each group's range in s->groups; returns the number of groups. */
static size_t deal_groups(sk_scratch *s, const sk_seq *seqs, size_t n_seqs, size_t n, int g) {
    sk_seq *sorted = s->gseqs + s->cap_gseqs, *out = s->gseqs;
    size_t k = 0;
    for (size_t i = 0; i < n_seqs; i++) {
        if (seqs[i].n_markers == 0) continue;  /* nothing reads it */
        size_t j = k++;
        for (; j > 0 && sorted[j - 1].n < seqs[i].n; j--) sorted[j] = sorted[j - 1];
        sorted[j] = seqs[i];
    }
    const size_t ng = (size_t)g < n ? (size_t)g : n;
    struct split_group *gr = s->groups;
    for (size_t b = 0; b < ng; b++) gr[b].load = 0;
    for (size_t i = 0; i < n; i++) {
        size_t best = 0;
        for (size_t b = 1; b < ng; b++)
            if (gr[b].load < gr[best].load) best = b;
        gr[best].load += sorted[i].n;
        s->gid[i] = best;
    }
    /* the heaviest group first: the caller claims it at once, a helper that wakes later
     * takes a lighter one. The k-th emitted group's range goes to groups[k] (start, end),
     * the dealt group's load (used up: SIZE_MAX) stays where the deal put it. */
    size_t o = 0;
    for (size_t k = 0; k < ng; k++) {
        size_t b = 0;
        for (size_t c = 1; c < ng; c++)
            if (gr[c].load != SIZE_MAX && (gr[b].load == SIZE_MAX || gr[c].load > gr[b].load))
                b = c;
        gr[b].load = SIZE_MAX;
        gr[k].start = o;
        for (size_t i = 0; i < n; i++)
            if (s->gid[i] == b) out[o++] = sorted[i];
        gr[k].end = o;
    }
    return ng;
}

typedef struct split_job {
    const sk_model *m;
    sk_scratch *s;
    const sk_seq *seqs;
    size_t n_seqs, n_groups;
    atomic_size_t next;
} split_job;

/* Test hooks (model_internal.h): helpers sleep this long before each group they claim; the
 * count of groups a caller published for a helper. */
static atomic_uint helper_delay_us;
static atomic_size_t caller_published;

void sk_split_set_helper_delay_us(unsigned us) { atomic_store(&helper_delay_us, us); }
size_t sk_split_caller_published(void) { return atomic_load(&caller_published); }

/* Run group g on `mine` as a contested pass (see split_run) and publish it if this pass
 * finished first: the group's logits from mine->mlogits, its status and error. 1 when
 * this pass published it. */
static int run_contested(split_job *j, sk_scratch *mine, struct split_group *gr) {
    sk_err err = {0};
    mine->race = gr;
    int rc = sk_forward_pass(j->m, mine, j->s->gseqs + gr->start, gr->end - gr->start, &err);
    mine->race = NULL;
    if (rc == SKYCMD_E_CANCELLED) return 0;  /* published meanwhile: given up */
    int expect = 0;
    if (!atomic_compare_exchange_strong_explicit(&gr->won, &expect, 1, memory_order_acq_rel,
                                                 memory_order_acquire))
        return 0;
    if (rc == SKYCMD_OK) {
        size_t koff = 0;
        for (size_t i = gr->start; i < gr->end; i++) {
            const sk_seq *q = &j->s->gseqs[i];
            memcpy(q->logits, mine->mlogits + koff, q->n_markers * sizeof(float));
            koff += q->n_markers;
        }
    }
    gr->rc = rc;
    gr->err = err;
    atomic_store_explicit(&gr->done, 1, memory_order_release);
    return 1;
}

/* One thread of the split: whole passes over the groups it claims, on its own scratch:
 * the caller on the session's own (its pool set aside meanwhile: these passes run on one
 * thread, and the same buffers stay warm whether a batch is split or not), helper ith on
 * sub[ith - 1]. When the budget lends no helper (nth == 1), the caller runs the batch as
 * one pass.
 *
 * The caller never waits for a helper's whole pass: a helper that woke late, or runs on a
 * core with cold caches, can take longer over its group than the caller would. So the
 * groups that helpers claim are contested: when the caller runs out of groups to claim it
 * runs every helper's group not yet published too, and whichever pass of a group finishes
 * first publishes it (logits, status); the other stops at its next layer. A batch thus
 * takes at most about as long as on one thread, and shorter when the helpers are prompt.
 * The two passes of a group are the same one-thread pass, so the logits are bitwise the
 * same whichever publishes. */
/* Helper: the groups it claims, each as a contested pass on its own scratch. */
static void helper_groups(split_job *j, sk_scratch *mine) {
    for (;;) {
        const size_t g = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (g >= j->n_groups) return;
        const unsigned delay = atomic_load_explicit(&helper_delay_us, memory_order_relaxed);
        if (delay) {
            struct timespec ts = {(time_t)(delay / 1000000u), (long)(delay % 1000000u) * 1000L};
            nanosleep(&ts, NULL);
        }
        run_contested(j, mine, &j->s->groups[g]);
    }
}

/* Caller: the groups it claims, as plain passes (marked done: nobody else runs them), then
 * every helper group not yet published, contested. */
static void caller_groups(split_job *j) {
    sk_scratch *s = j->s;
    for (;;) {
        const size_t g = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (g >= j->n_groups) break;
        struct split_group *gr = &s->groups[g];
        gr->rc = sk_forward_pass(j->m, s, s->gseqs + gr->start, gr->end - gr->start, &gr->err);
        atomic_store_explicit(&gr->done, 1, memory_order_relaxed);
    }
    for (size_t g = 0; g < j->n_groups; g++) {
        struct split_group *gr = &s->groups[g];
        if (atomic_load_explicit(&gr->done, memory_order_acquire)) continue;
        if (run_contested(j, s, gr)) {
            atomic_fetch_add_explicit(&caller_published, 1, memory_order_relaxed);
            continue;
        }
        /* the helper published it, or is copying its logits now (yield now and then, in
         * case it was preempted on this CPU) */
        for (unsigned i = 1; !atomic_load_explicit(&gr->done, memory_order_acquire); i++) {
            cpu_relax();
            if (i % 1024 == 0) sched_yield();
        }
    }
}

static void split_run(void *ctx, int ith, int nth) {
    split_job *j = ctx;
    sk_scratch *s = j->s;
    if (ith) {
        helper_groups(j, s->sub[ith - 1]);
        return;
    }
    sk_pool *pool = s->pool;  /* the caller's alone: helpers never touch it */
    s->pool = NULL;
    if (nth == 1)
        s->groups[0].rc = sk_forward_pass(j->m, s, j->seqs, j->n_seqs, &s->groups[0].err);
    else
        caller_groups(j);
    s->pool = pool;
}

static int forward_split(const sk_model *m, sk_scratch *s, const sk_seq *seqs, size_t n_seqs,
                         size_t n_marked, int threads, sk_err *e) {
    int rc = reserve_split(m, s, n_marked, threads, e);
    if (rc) return rc;
    split_job job = {m, s, seqs, n_seqs, deal_groups(s, seqs, n_seqs, n_marked, threads), 0};
    for (size_t g = 0; g < job.n_groups; g++) {
        struct split_group *gr = &s->groups[g];
        gr->rc = SKYCMD_OK;
        atomic_store_explicit(&gr->won, 0, memory_order_relaxed);
        atomic_store_explicit(&gr->done, 0, memory_order_relaxed);
    }
    sk_pool_run(s->pool, split_run, &job);
    for (size_t g = 0; g < job.n_groups; g++)
        if (s->groups[g].rc != SKYCMD_OK) {
            if (e) *e = s->groups[g].err;
            return s->groups[g].rc;
        }
    return SKYCMD_OK;
}

static int forward_batch(const sk_model *m, sk_scratch *s, const sk_seq *seqs, size_t n_seqs,
                         sk_err *e) {
    if (!m || !s || (n_seqs && !seqs))
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sk_model_forward: NULL argument");
    if (s->d != m->hp.n_embd || s->D != m->head_dim)
        return sk_fail(e, SKYCMD_E_MISUSE, "sk_model_forward: scratch made for another model");
    const int threads = sk_pool_size(s->pool);
    size_t rows = 0, marked = 0;
    for (size_t i = 0; i < n_seqs; i++)
        if (seqs[i].n_markers) {
            marked++;
            rows = seqs[i].n > SIZE_MAX - rows ? SIZE_MAX : rows + seqs[i].n;
        }
    if (!split_by_sequence(m, s, rows, marked, threads))
        return sk_forward_pass(m, s, seqs, n_seqs, e);
    /* the checks of the whole batch first, so an error names the caller's sequence */
    for (size_t i = 0; i < n_seqs; i++) {
        int rc = sk_model_check_seq(m, &seqs[i], i, e);
        if (rc) return rc;
    }
    return forward_split(m, s, seqs, n_seqs, marked, threads, e);
}

int sk_model_forward_batch(const sk_model *m, sk_scratch *s, const sk_seq *seqs, size_t n_seqs,
                           sk_err *e) {
    /* this thread holds one unit of the process's compute budget for the whole pass, so
     * pools of other sessions do not borrow its core (src/kernels/pool.h) */
    sk_compute_begin();
    sk_pool *pool = s ? s->pool : NULL;
    sk_pool_wake(pool);  /* helpers start spinning while the first serial steps run */
    int rc = forward_batch(m, s, seqs, n_seqs, e);
    sk_pool_rest(pool);  /* no more steps until the next pass: helpers sleep */
    sk_compute_end();
    return rc;
}

int sk_model_forward(const sk_model *m, sk_scratch *s, const int32_t *ids, size_t n, int qtype,
                     const int32_t *markers, size_t n_markers, float *logits, sk_err *e) {
    sk_seq q = {ids, n, qtype, markers, n_markers, logits, NULL, NULL};
    int rc = sk_model_forward_batch(m, s, &q, 1, e);
    if (rc && e && strncmp(e->msg, "sequence 0: ", 12) == 0)
        memmove(e->msg, e->msg + 12, strlen(e->msg + 12) + 1);
    return rc;
}
