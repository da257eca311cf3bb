/*
 * threads_stress.c - a plain C program (not Criterion, which cannot start under
 * ThreadSanitizer here) that runs the threaded code paths from several threads at once, so
 * that a TSan build (-DSKYCMD_TSAN=ON) checks them for data races:
 *   - sessions with SKYCMD_OPT_THREADS = 2 in three application threads at once, each
 *     deciding requests one by one (its thread count switched between 1 and 2 before each,
 *     as `skycmd serve` does per batch) and with skycmd_decide_batch; every response must be
 *     byte-identical to the single-thread one (bitwise promise);
 *   - the process thread budget: a monitor thread checks that the units in use never exceed
 *     concurrent forward passes + budget - 1 (docs/threads.md);
 *   - then one such session alone, whose helper the budget lends every pass (a small
 *     model's multi-question batch split by sequence, src/model/passes.c), once with
 *     helpers that are late for every group, whose groups the caller then publishes;
 *   - a row-scaled int8 model opened without single-pass activations: two threads' sessions
 *     ask for them at once (the first makes the model's choice of the products that keep
 *     two passes, the other waits) while a third decides with two passes; every answer
 *     must be the one of a model that made the choice in its open;
 *   - a bare sk_pool hammered with budgeted and all-thread jobs.
 * usage: threads_stress <work_dir>   exit status 0 = pass, 1 = failure (message on stderr).
 */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "skycmd.h"
#include "kernels/pool.h"
#include "model/model_internal.h"

#define NREQ 3
#define NTHR 3
#define ROUNDS 6

static skycmd_model *g_model;
static skycmd_request *g_req[NREQ];
static char *g_ref[NREQ];
static int g_fail;
static int g_stop;
static int g_max_in_use;

static void fail(const char *what, const char *detail) {
    fprintf(stderr, "threads_stress: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    __atomic_store_n(&g_fail, 1, __ATOMIC_RELAXED);
}

static char *request_json(int i) {
    static const char *const states[NREQ] = {
        "vy 0 dx 36 up 9 dn 7 nxt 10 alt 32",
        /* one literal (clang's -Wstring-concatenation reads a split one as a missing comma) */
        "the drone is low, the gap is high and the wall is near; vy 3 dx 12 up 2 dn 20 nxt 4 alt 8 and the wind pushes left while the next two gaps close fast",
        "short"};
    char *b = malloc(2048);
    snprintf(b, 2048,
             "{\"state\": \"%s\", \"questions\": {"
             "\"action\": {\"type\": \"choice\", \"instructions\": \"Which input keeps the drone "
             "flying?\", \"criteria\": {\"thrust\": \"fire\", \"glide\": \"fall\"}},"
             "\"danger\": {\"type\": \"noul\", \"instructions\": \"Crash soon?\"},"
             "\"margin\": {\"type\": \"score\", \"instructions\": \"Room left?\", "
             "\"criteria\": [\"none\", \"tight\", \"comfortable\"]}}}",
             states[i]);
    return b;
}

static char *decide_json(skycmd_session *s, const skycmd_request *r) {
    skycmd_response *resp = NULL;
    if (skycmd_decide(s, r, &resp) != SKYCMD_OK) {
        fail("decide", skycmd_session_errmsg(s));
        return NULL;
    }
    const char *j = skycmd_response_json(resp);
    char *c = malloc(strlen(j) + 1);
    strcpy(c, j);
    skycmd_response_free(resp);
    return c;
}

static void *app_thread(void *arg) {
    (void)arg;
    skycmd_session *s = NULL;
    if (skycmd_session_new(g_model, &s) != SKYCMD_OK ||
        skycmd_session_set_int(s, SKYCMD_OPT_THREADS, 2) != SKYCMD_OK) {
        fail("session", NULL);
        return NULL;
    }
    for (int r = 0; r < ROUNDS && !__atomic_load_n(&g_fail, __ATOMIC_RELAXED); r++) {
        for (int i = 0; i < NREQ; i++) {
            /* as `skycmd serve --compute-threads auto` does per batch: the count moves within
             * the team already started (its limit changes and it is woken, nothing restarts) */
            if (skycmd_session_set_int(s, SKYCMD_OPT_THREADS, 1 + (r + i) % 2) != SKYCMD_OK) {
                fail("set threads", skycmd_session_errmsg(s));
                break;
            }
            char *j = decide_json(s, g_req[i]);
            if (j && strcmp(j, g_ref[i]) != 0) fail("threaded decide differs from one thread", j);
            free(j);
        }
        skycmd_response *out[NREQ];
        if (skycmd_decide_batch(s, (const skycmd_request *const *)g_req, NREQ, out) != SKYCMD_OK) {
            fail("decide_batch", skycmd_session_errmsg(s));
            break;
        }
        for (int i = 0; i < NREQ; i++) {
            if (strcmp(skycmd_response_json(out[i]), g_ref[i]) != 0)
                fail("batched decide differs from one by one", skycmd_response_json(out[i]));
            skycmd_response_free(out[i]);
        }
    }
    skycmd_session_free(s);
    return NULL;
}

static void *monitor(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE)) {
        int u = sk_compute_in_use();
        if (u > g_max_in_use) g_max_in_use = u;
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* Section 3's threads: a session of g_row set to activation mode *arg, deciding every
 * request ROUNDS times against g_row_ref[mode]. */
static skycmd_model *g_row;
static char *g_row_ref[2][NREQ];

static void *row_thread(void *arg) {
    const int act = *(const int *)arg;
    skycmd_session *s = NULL;
    if (skycmd_session_new(g_row, &s) != SKYCMD_OK || skycmd_session_set_int(s, SKYCMD_OPT_THREADS, 2) != SKYCMD_OK) {
        fail("row session", NULL);
        skycmd_session_free(s);
        return NULL;
    }
    if (skycmd_session_set_int(s, SKYCMD_OPT_ACTIVATIONS, act) != SKYCMD_OK) {
        fail("row activations", skycmd_session_errmsg(s));
        skycmd_session_free(s);
        return NULL;
    }
    for (int r = 0; r < ROUNDS && !__atomic_load_n(&g_fail, __ATOMIC_RELAXED); r++)
        for (int i = 0; i < NREQ; i++) {
            char *j = decide_json(s, g_req[i]);
            if (j && strcmp(j, g_row_ref[act][i]) != 0)
                fail(act ? "row model: single-pass answer differs from the open's choice"
                         : "row model: two-pass answer differs", j);
            free(j);
        }
    skycmd_session_free(s);
    return NULL;
}

/* Opens the s1-nano at path as row-scaled int8, with single-pass activations named in the
 * options (eager) or not. */
static skycmd_model *open_rows(const char *path, int eager, skycmd_error *err) {
    skycmd_options *o = skycmd_options_new();
    skycmd_model *m = NULL;
    if (!o || skycmd_options_set_int(o, SKYCMD_OPT_WEIGHTS, SKYCMD_WEIGHTS_Q8_ROW) != SKYCMD_OK ||
        (eager && skycmd_options_set_int(o, SKYCMD_OPT_ACTIVATIONS, SKYCMD_ACT_Q8) != SKYCMD_OK) ||
        skycmd_model_open(path, o, &m, err) != SKYCMD_OK)
        fail("row model open", skycmd_error_message(err));
    skycmd_options_free(o);
    return m;
}

static void count(void *ctx, int ith, int nth) {
    int *c = ctx;
    if (ith < 0 || ith >= nth) fail("pool: thread index out of range", NULL);
    __atomic_add_fetch(&c[ith], 1, __ATOMIC_RELAXED);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: threads_stress <work_dir>\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/threads_stress_%d.gguf", argv[1], (int)getpid());
    skycmd_error *err = skycmd_error_new();
    if (skycmd_random_model("s1-micro", path, NULL, err) != SKYCMD_OK ||
        skycmd_model_open(path, NULL, &g_model, err) != SKYCMD_OK) {
        fprintf(stderr, "threads_stress: model: %s\n", skycmd_error_message(err));
        return 1;
    }
    unlink(path);
    skycmd_session *one = NULL;
    skycmd_session_new(g_model, &one);
    for (int i = 0; i < NREQ; i++) {
        char *j = request_json(i);
        if (skycmd_request_parse(j, strlen(j), &g_req[i]) != SKYCMD_OK) fail("parse", j);
        free(j);
        g_ref[i] = decide_json(one, g_req[i]);
    }
    skycmd_session_free(one);
    if (g_fail) return 1;

    /* 1. sessions in parallel (the budget is the real core count) */
    pthread_t mon, th[NTHR];
    pthread_create(&mon, NULL, monitor, NULL);
    for (int i = 0; i < NTHR; i++) pthread_create(&th[i], NULL, app_thread, NULL);
    for (int i = 0; i < NTHR; i++) pthread_join(th[i], NULL);
    __atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
    pthread_join(mon, NULL);
    /* helpers are lent only while the units in use are below the budget, and a borrower
     * holds a unit itself, so at most budget - 1 helpers are out at any time; callers that
     * start a pass meanwhile never wait, hence the bound callers + budget - 1 (reached only
     * until the borrower's current step ends) */
    int budget = sk_compute_budget(), bound = NTHR + budget - 1;
    if (g_max_in_use > bound) {
        char m[96];
        snprintf(m, sizeof m, "%d units in use, more than %d callers + budget %d - 1",
                 g_max_in_use, NTHR, budget);
        fail("oversubscription", m);
    }
    if (sk_compute_in_use() != 0) fail("budget units not returned", NULL);

    /* 1b. one session alone, so the budget lends its helper every pass: an s1-micro
     * request's questions then run one group of sequences per thread (src/model/passes.c),
     * the caller on the session's scratch and the helper on its own */
    app_thread(NULL);
    if (sk_compute_in_use() != 0) fail("budget units not returned after the lone session", NULL);

    /* 1c. the same with helpers that are late for every group they claim, so the caller runs
     * their groups too and publishes them while the helpers' passes give up midway: the
     * responses stay identical, and where a helper can join (two CPUs) the caller did publish */
    const size_t published = sk_split_caller_published();
    skycmd_session *lone = NULL;
    if (skycmd_session_new(g_model, &lone) != SKYCMD_OK) fail("session", NULL);
    /* late: ten times a whole one-thread decide (whatever this build's speed, TSan's too) */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    free(lone ? decide_json(lone, g_req[0]) : NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double one_us = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
    sk_split_set_helper_delay_us(one_us * 10 < 10000 ? 10000u : (unsigned)(one_us * 10));
    if (lone && skycmd_session_set_int(lone, SKYCMD_OPT_THREADS, 2) != SKYCMD_OK) fail("threads", NULL);
    /* a helper joins only when it wakes before the caller's share ends: a few tries */
    for (int k = 0; lone && k < 12 && sk_split_caller_published() == published; k++) {
        char *j = decide_json(lone, g_req[k % NREQ]);
        if (j && strcmp(j, g_ref[k % NREQ]) != 0) fail("late helpers: decide differs", j);
        free(j);
    }
    skycmd_session_free(lone);
    sk_split_set_helper_delay_us(0);
    if (sk_compute_budget() >= 2 && sk_split_caller_published() == published)
        fail("late helpers: the caller never published a helper's group", NULL);
    if (sk_compute_in_use() != 0) fail("budget units not returned after late helpers", NULL);

    /* 3. the deferred single-pass choice of a row-scaled model, asked for by two threads at
     * once beside a two-pass one */
    snprintf(path, sizeof path, "%s/threads_stress_rows_%d.gguf", argv[1], (int)getpid());
    if (skycmd_random_model("s1-nano", path, NULL, err) != SKYCMD_OK) fail("row model", skycmd_error_message(err));
    skycmd_model *eager = open_rows(path, 1, err);
    g_row = open_rows(path, 0, err);
    unlink(path);
    for (int act = 0; act < 2 && eager && g_row; act++) {
        skycmd_session *s = NULL;
        if (skycmd_session_new(eager, &s) != SKYCMD_OK || skycmd_session_set_int(s, SKYCMD_OPT_ACTIVATIONS, act) != SKYCMD_OK)
            fail("row reference session", NULL);
        for (int i = 0; i < NREQ && s; i++) g_row_ref[act][i] = decide_json(s, g_req[i]);
        skycmd_session_free(s);
    }
    if (!g_fail) {
        static const int acts[NTHR] = {SKYCMD_ACT_Q8, SKYCMD_ACT_Q8, SKYCMD_ACT_Q8X2};
        for (int i = 0; i < NTHR; i++) pthread_create(&th[i], NULL, row_thread, (void *)&acts[i]);
        for (int i = 0; i < NTHR; i++) pthread_join(th[i], NULL);
    }
    for (int act = 0; act < 2; act++)
        for (int i = 0; i < NREQ; i++) free(g_row_ref[act][i]);
    if (skycmd_model_free(eager) != SKYCMD_OK || skycmd_model_free(g_row) != SKYCMD_OK) fail("row model free", NULL);
    if (sk_compute_in_use() != 0) fail("budget units not returned after the row model", NULL);

    /* 2. a bare pool: budgeted and all-thread jobs */
    sk_pool *p = sk_pool_new(3);
    int hits[3] = {0};
    for (int r = 0; r < 2000; r++) {
        sk_pool_run(p, count, hits);
        sk_pool_run_all(p, count, hits);
    }
    if (hits[0] != 4000) fail("pool: thread 0 did not run every job", NULL);
    if (hits[1] < 2000 || hits[2] < 2000) fail("pool: run_all skipped a worker", NULL);
    sk_pool_free(p);

    for (int i = 0; i < NREQ; i++) {
        skycmd_request_free(g_req[i]);
        free(g_ref[i]);
    }
    if (skycmd_model_free(g_model) != SKYCMD_OK) fail("model_free", NULL);
    skycmd_error_free(err);
    if (g_fail) return 1;
    printf("threads_stress: ok (%d threads x %d rounds, budget %d, at most %d units in use)\n",
           NTHR, ROUNDS, budget, g_max_in_use);
    return 0;
}
