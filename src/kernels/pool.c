/* pool.c - the compute thread team of pool.h: a generation counter announces each job;
 * workers spin briefly on it, then sleep on a condition variable; a pending counter tells
 * the caller when every worker has finished. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "pool.h"

#define SK_POOL_SPIN 20000  /* polls before sleeping (a few microseconds) */

struct sk_pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned gen;       /* job generation, atomic */
    int pending;        /* workers still running the current job, atomic */
    int stop;
    sk_pool_fn fn;
    void *ctx;
};

typedef struct worker_arg {
    sk_pool *p;
    int ith;
} worker_arg;

static void *worker(void *arg) {
    worker_arg wa = *(worker_arg *)arg;
    free(arg);
    sk_pool *p = wa.p;
    unsigned seen = 0;
    for (;;) {
        unsigned g = __atomic_load_n(&p->gen, __ATOMIC_ACQUIRE);
        for (int i = 0; g == seen && i < SK_POOL_SPIN; i++)
            g = __atomic_load_n(&p->gen, __ATOMIC_ACQUIRE);
        if (g == seen) {
            pthread_mutex_lock(&p->mu);
            while ((g = __atomic_load_n(&p->gen, __ATOMIC_ACQUIRE)) == seen && !p->stop)
                pthread_cond_wait(&p->cv, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) return NULL;
        seen = g;
        p->fn(p->ctx, wa.ith, p->n);
        __atomic_sub_fetch(&p->pending, 1, __ATOMIC_ACQ_REL);
    }
}

sk_pool *sk_pool_new(int n_threads) {
    if (n_threads < 1 || n_threads > 1024) return NULL;
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
        __atomic_add_fetch(&p->gen, 1, __ATOMIC_ACQ_REL);
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

void sk_pool_run(sk_pool *p, sk_pool_fn fn, void *ctx) {
    if (!p || p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    __atomic_store_n(&p->pending, p->n - 1, __ATOMIC_RELEASE);
    pthread_mutex_lock(&p->mu);
    __atomic_add_fetch(&p->gen, 1, __ATOMIC_ACQ_REL);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    fn(ctx, 0, p->n);
    /* the workers are running or about to wake: poll, yielding the core now and then in
     * case a worker shares it */
    for (unsigned i = 1; __atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) != 0; i++)
        if (i % 1024 == 0) sched_yield();
}
