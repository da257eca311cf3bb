/* pool.c - the compute thread team of pool.h and the process-wide thread budget.
 *
 * A job is announced by one 64-bit word, (generation << 16) | nth, so a worker reads the
 * generation and the thread count of the same job together (a worker that is not part of
 * a step never touches its function or context, which the caller may already be
 * replacing). Workers spin briefly on the word, then sleep on a condition variable; a
 * pending counter tells the caller when every participating worker has finished. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "pool.h"

#define SK_POOL_SPIN 4096  /* polls (with a pause each) before sleeping: tens of microseconds */
#define SK_POOL_MAX 1024

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() ((void)0)
#endif

struct sk_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t job;       /* (generation << 16) | nth, atomic */
    int pending;        /* participating workers still running the current job, atomic */
    int stop;           /* atomic */
    sk_pool_fn fn;      /* written before the job word is published, read by participants */
    void *ctx;
};

typedef struct worker_arg {
    sk_pool *p;
    int ith;
} worker_arg;

/* ------------------------------------------------------------------ budget ------- */

static int g_cores;    /* the budget, computed once (atomic) */
static int g_in_use;   /* units held: forward passes running + helpers lent (atomic) */

int sk_compute_budget(void) {
    int c = __atomic_load_n(&g_cores, __ATOMIC_RELAXED);
    if (c > 0) return c;
    long n = -1;
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
#endif
    if (n < 1) n = sysconf(_SC_NPROCESSORS_ONLN);
    c = n < 1 ? 1 : n > SK_POOL_MAX ? SK_POOL_MAX : (int)n;
    __atomic_store_n(&g_cores, c, __ATOMIC_RELAXED);
    return c;
}

void sk_compute_set_budget(int n) {
    __atomic_store_n(&g_cores, n < 1 ? 0 : n > SK_POOL_MAX ? SK_POOL_MAX : n, __ATOMIC_RELAXED);
}

int sk_compute_in_use(void) { return __atomic_load_n(&g_in_use, __ATOMIC_RELAXED); }

void sk_compute_begin(void) { __atomic_add_fetch(&g_in_use, 1, __ATOMIC_ACQ_REL); }
void sk_compute_end(void) { __atomic_sub_fetch(&g_in_use, 1, __ATOMIC_ACQ_REL); }

/* Borrow up to `want` helper units; returns how many were lent (maybe 0). */
static int borrow(int want) {
    const int b = sk_compute_budget();
    int cur = __atomic_load_n(&g_in_use, __ATOMIC_RELAXED);
    for (;;) {
        int avail = b - cur;
        if (avail <= 0) return 0;
        int k = want < avail ? want : avail;
        if (__atomic_compare_exchange_n(&g_in_use, &cur, cur + k, 1, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            return k;
    }
}

/* ------------------------------------------------------------------ pool --------- */

static void *worker(void *arg) {
    worker_arg wa = *(worker_arg *)arg;
    free(arg);
    sk_pool *p = wa.p;
    uint64_t seen = 0;  /* generation of the last job seen */
    for (;;) {
        uint64_t j = __atomic_load_n(&p->job, __ATOMIC_ACQUIRE);
        /* spin only while the budget has a free unit: a spinning helper occupies a core
         * that a forward pass of another session may need */
        for (int i = 0; (j >> 16) == seen && i < SK_POOL_SPIN; i++) {
            if (i % 64 == 0 && sk_compute_in_use() >= sk_compute_budget()) break;
            cpu_relax();
            j = __atomic_load_n(&p->job, __ATOMIC_ACQUIRE);
        }
        if ((j >> 16) == seen) {
            pthread_mutex_lock(&p->mu);
            while (((j = __atomic_load_n(&p->job, __ATOMIC_ACQUIRE)) >> 16) == seen &&
                   !__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE))
                pthread_cond_wait(&p->cv, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) return NULL;
        seen = j >> 16;
        const int nth = (int)(j & 0xFFFF);
        if (wa.ith < nth) {
            p->fn(p->ctx, wa.ith, nth);
            __atomic_sub_fetch(&p->pending, 1, __ATOMIC_ACQ_REL);
        }
    }
}

sk_pool *sk_pool_new(int n_threads) {
    if (n_threads < 1 || n_threads > SK_POOL_MAX) return NULL;
    sk_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = n_threads;
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p);
        return NULL;
    }
    if (pthread_cond_init(&p->cv, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        free(p);
        return NULL;
    }
    if (n_threads > 1) {
        p->threads = calloc((size_t)n_threads - 1, sizeof(pthread_t));
        if (!p->threads) {
            sk_pool_free(p);
            return NULL;
        }
        for (int i = 1; i < n_threads; i++) {
            worker_arg *wa = malloc(sizeof *wa);
            if (wa) {
                wa->p = p;
                wa->ith = i;
            }
            if (!wa || pthread_create(&p->threads[i - 1], NULL, worker, wa) != 0) {
                free(wa);
                p->n = i;  /* only threads 1..i-1 exist: join those */
                sk_pool_free(p);
                return NULL;
            }
        }
    }
    return p;
}

void sk_pool_free(sk_pool *p) {
    if (!p) return;
    if (p->threads) {
        pthread_mutex_lock(&p->mu);
        __atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
        __atomic_add_fetch(&p->job, (uint64_t)1 << 16, __ATOMIC_ACQ_REL);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        for (int i = 1; i < p->n; i++) pthread_join(p->threads[i - 1], NULL);
        free(p->threads);
    }
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

int sk_pool_size(const sk_pool *p) { return p ? p->n : 1; }

/* Run fn on threads 0..nth-1 (2 <= nth <= p->n). */
static void run_n(sk_pool *p, int nth, sk_pool_fn fn, void *ctx) {
    p->fn = fn;
    p->ctx = ctx;
    __atomic_store_n(&p->pending, nth - 1, __ATOMIC_RELEASE);
    uint64_t j = __atomic_load_n(&p->job, __ATOMIC_RELAXED);
    uint64_t nj = (((j >> 16) + 1) << 16) | (uint64_t)nth;
    pthread_mutex_lock(&p->mu);
    __atomic_store_n(&p->job, nj, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    fn(ctx, 0, nth);
    /* the workers are running or about to wake: poll, yielding the core now and then in
     * case a worker shares it */
    for (unsigned i = 1; __atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) != 0; i++) {
        cpu_relax();
        if (i % 1024 == 0) sched_yield();
    }
}

void sk_pool_run_all(sk_pool *p, sk_pool_fn fn, void *ctx) {
    if (!p || p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    run_n(p, p->n, fn, ctx);
}

void sk_pool_run(sk_pool *p, sk_pool_fn fn, void *ctx) {
    int k = (p && p->n > 1) ? borrow(p->n - 1) : 0;
    if (k == 0) {
        fn(ctx, 0, 1);
        return;
    }
    run_n(p, k + 1, fn, ctx);
    __atomic_sub_fetch(&g_in_use, k, __ATOMIC_ACQ_REL);
}
