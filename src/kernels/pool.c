/* pool.c - the compute thread team of pool.h and the process-wide thread budget.
 *
 * A job is announced by one 64-bit word, (generation << 16) | ALL? | nth, so a worker reads
 * the generation and the thread count of the same job together (a worker that is not part
 * of a step never touches its function or context, which the caller may already be
 * replacing). Workers spin briefly on the word, then sleep on a condition variable.
 *  - sk_pool_run_all (ALL set): every worker below nth runs the job; a pending counter
 *    tells the caller when all of them have finished.
 *  - sk_pool_run: helpers *join* the job through a gate word, (generation << 16) | OPEN |
 *    active helpers, and only while it is open. The caller runs its own share (the work
 *    functions claim their pieces from a shared counter, so the caller alone can finish
 *    everything), then closes the gate and waits only for the helpers that joined. A helper
 *    that wakes late (asleep, or preempted by another process) finds the gate closed and
 *    skips the job: the step never waits for a thread that has not started. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>

#include "pool.h"
#include "../util/platform.h"
#if SKYCMD_THREADS
#include <pthread.h>
#include <sched.h>
#endif

#define SK_POOL_MAX 1024

/* ------------------------------------------------------------------ budget ------- */

static int g_cores;    /* the budget, computed once (atomic) */
static int g_in_use;   /* units held: forward passes running + helpers lent (atomic) */

int sk_compute_budget(void) {
    int c = __atomic_load_n(&g_cores, __ATOMIC_RELAXED);
    if (c > 0) return c;
    const int n = sk_platform_cpu_count();
    c = n < 1 ? 1 : n > SK_POOL_MAX ? SK_POOL_MAX : n;
    __atomic_store_n(&g_cores, c, __ATOMIC_RELAXED);
    return c;
}

void sk_compute_set_budget(int n) {
    __atomic_store_n(&g_cores, n < 1 ? 0 : n > SK_POOL_MAX ? SK_POOL_MAX : n, __ATOMIC_RELAXED);
}

int sk_compute_in_use(void) { return __atomic_load_n(&g_in_use, __ATOMIC_RELAXED); }

void sk_compute_begin(void) { __atomic_add_fetch(&g_in_use, 1, __ATOMIC_ACQ_REL); }
void sk_compute_end(void) { __atomic_sub_fetch(&g_in_use, 1, __ATOMIC_ACQ_REL); }

/* ------------------------------------------------------------- per-thread scratch ------- */

typedef struct kernel_scratch {
    void *p[SK_SCRATCH_SLOTS];
    size_t cap[SK_SCRATCH_SLOTS];  /* bytes */
} kernel_scratch;

/* b's slot grown to at least bytes (64-byte aligned), or NULL (the slot unchanged). */
static void *scratch_grow(kernel_scratch *b, sk_scratch_slot slot, size_t bytes) {
    if ((unsigned)slot >= SK_SCRATCH_SLOTS || bytes > SIZE_MAX - 64) return NULL;
    if (b->cap[slot] < bytes) {
        void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
        if (!p) return NULL;
        free(b->p[slot]);
        b->p[slot] = p;
        b->cap[slot] = bytes;
    }
    return b->p[slot];
}

#if SKYCMD_THREADS
static pthread_key_t g_scratch_key;
static pthread_once_t g_scratch_once = PTHREAD_ONCE_INIT;
static int g_scratch_key_ok;
static void scratch_free(void *v) {
    kernel_scratch *b = v;
    if (b)
        for (int i = 0; i < SK_SCRATCH_SLOTS; i++) free(b->p[i]);
    free(b);
}
static void scratch_key_init(void) {
    g_scratch_key_ok = pthread_key_create(&g_scratch_key, scratch_free) == 0;
}
/* A key's destructor runs when a thread exits, never for the thread that ends the process
 * (main returning, exit()), so that thread's scratch would outlive the process reachable (a
 * leak checker's "still reachable"). At exit, and when the library is unloaded, the
 * calling thread's is freed here; the key is deleted too, so no later thread exit calls a
 * destructor in unloaded code (other threads' scratch is then left to the process). */
__attribute__((destructor)) static void scratch_at_unload(void) {
    if (!g_scratch_key_ok) return;
    kernel_scratch *b = pthread_getspecific(g_scratch_key);
    pthread_setspecific(g_scratch_key, NULL);
    scratch_free(b);
    pthread_key_delete(g_scratch_key);
    g_scratch_key_ok = 0;
}

void *sk_kernel_scratch(sk_scratch_slot slot, size_t bytes) {
    pthread_once(&g_scratch_once, scratch_key_init);
    if (!g_scratch_key_ok) return NULL;
    kernel_scratch *b = pthread_getspecific(g_scratch_key);
    if (!b) {
        b = calloc(1, sizeof *b);
        if (!b || pthread_setspecific(g_scratch_key, b)) {
            free(b);
            return NULL;
        }
    }
    return scratch_grow(b, slot, bytes);
}
#else
void *sk_kernel_scratch(sk_scratch_slot slot, size_t bytes) {
    static kernel_scratch one;  /* one thread */
    return scratch_grow(&one, slot, bytes);
}
#endif

#if !SKYCMD_THREADS
/* ------------------------------------------------- without threads (wasm32-wasi) ------- */

/* A pool of one thread whatever was asked: every job runs on its caller. */
struct sk_pool {
    int unused;
};

sk_pool *sk_pool_new(int n_threads) {
    if (n_threads < 1 || n_threads > SK_POOL_MAX) return NULL;
    return calloc(1, sizeof(sk_pool));
}
void sk_pool_free(sk_pool *p) { free(p); }
int sk_pool_size(const sk_pool *p) { return (void)p, 1; }
int sk_pool_threads(const sk_pool *p) { return (void)p, 1; }
void sk_pool_set_limit(sk_pool *p, int n) { (void)p, (void)n; }
void sk_pool_wake(sk_pool *p) { (void)p; }
void sk_pool_rest(sk_pool *p) { (void)p; }
void sk_pool_run(sk_pool *p, sk_pool_fn fn, void *ctx) {
    (void)p;
    fn(ctx, 0, 1);
}
void sk_pool_run_all(sk_pool *p, sk_pool_fn fn, void *ctx) {
    (void)p;
    fn(ctx, 0, 1);
}

#else
/* ------------------------------------------------------------------ threads ------ */

#define SK_POOL_SPIN 4096  /* polls (with a pause each) before sleeping: tens of microseconds */

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() ((void)0)
#endif

#define JOB_ALL 0x8000u   /* in the job word: every worker below nth runs the job */
#define GATE_OPEN 0x8000u  /* in the gate word: helpers may still join */
#define GATE_ACTIVE 0x7FFFu

struct sk_pool {
    int n;
    int limit;          /* threads a job may use (<= n; sk_pool_set_limit), caller only */
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t job;       /* (generation << 16) | nth, atomic */
    int pending;        /* run_all: participating workers still running the job, atomic */
    uint64_t gate;      /* run: (generation << 16) | GATE_OPEN | helpers inside, atomic */
    uint64_t kick;      /* bumped (under mu) to wake sleeping workers without a job */
    int sleepers;       /* workers waiting on cv (changed under mu), atomic */
    int woken;          /* a kick is on its way to the sleepers (cleared by them), atomic */
    int resting;        /* the forward pass ended (sk_pool_rest): stop spinning, atomic */
    /* caller only: budgeted steps of this pass, and passes left without kicking sleepers */
    int steps, backoff;
    int joins;          /* steps of this pass a helper joined, atomic */
    int stop;           /* atomic */
    sk_cpuset cpus;     /* the CPUs the creating thread could run on (empty: unknown) */
    int kept_off;       /* caller only: the CPU the workers' masks leave out, -1 none */
    sk_pool_fn fn;      /* written before the job word is published, read by participants */
    void *ctx;
};

typedef struct worker_arg {
    sk_pool *p;
    int ith;
} worker_arg;

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

/* Keep the sleeping workers off the caller's CPU before waking them. A worker woken onto its
 * caller's CPU takes turns with it instead of running alongside, and the scheduler does put
 * it there when the other CPU idles in a way it avoids: on a 2-vCPU KVM guest (2026-12-04),
 * after 5 ms of quiet nearly every kick woke the helper on the caller's vCPU, where it either
 * preempted the caller or waited behind it, and a 3-question s1-pico batch took 0.26 ms on
 * two threads against 0.20 ms on one (0.21 ms and 0.14 ms back to back with this). The mask
 * changes only when the caller has moved to another CPU: one syscall per worker then, none
 * in the steady state. */
static void keep_off_caller(sk_pool *p) {
    if (__atomic_load_n(&p->sleepers, __ATOMIC_ACQUIRE) == 0) return;  /* none to place */
    /* where the system neither says which CPU this is nor sets affinities (macOS), the
     * set is empty and the CPU -1: nothing to do */
    const int cpu = sk_platform_current_cpu();
    if (cpu < 0 || cpu == p->kept_off || !sk_cpuset_has(&p->cpus, cpu) || sk_cpuset_count(&p->cpus) < 2)
        return;
    sk_cpuset others = p->cpus;
    sk_cpuset_del(&others, cpu);
    for (int i = 1; i < p->n; i++) (void)sk_platform_affinity_set(p->threads[i - 1], &others);
    p->kept_off = cpu;
}

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
            if (i % 16 == 0 && __atomic_load_n(&p->resting, __ATOMIC_RELAXED)) break;
            if (i % 64 == 0 && sk_compute_in_use() >= sk_compute_budget()) break;
            cpu_relax();
            j = __atomic_load_n(&p->job, __ATOMIC_ACQUIRE);
        }
        if ((j >> 16) == seen) {
            /* sleep until a job of every thread, a kick (sk_pool_wake: spin again) or stop */
            pthread_mutex_lock(&p->mu);
            const uint64_t k0 = __atomic_load_n(&p->kick, __ATOMIC_RELAXED);
            __atomic_store_n(&p->woken, 0, __ATOMIC_RELAXED);
            __atomic_add_fetch(&p->sleepers, 1, __ATOMIC_ACQ_REL);
            while (((j = __atomic_load_n(&p->job, __ATOMIC_ACQUIRE)) >> 16) == seen &&
                   __atomic_load_n(&p->kick, __ATOMIC_RELAXED) == k0 &&
                   !__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE))
                pthread_cond_wait(&p->cv, &p->mu);
            __atomic_sub_fetch(&p->sleepers, 1, __ATOMIC_ACQ_REL);
            __atomic_store_n(&p->woken, 0, __ATOMIC_RELAXED);
            pthread_mutex_unlock(&p->mu);
        }
        if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) return NULL;
        if ((j >> 16) == seen) continue;  /* kicked: spin for the coming job */
        seen = j >> 16;
        const int nth = (int)(j & 0x7FFF);
        if (wa.ith >= nth) continue;
        if (j & JOB_ALL) {
            p->fn(p->ctx, wa.ith, nth);
            __atomic_sub_fetch(&p->pending, 1, __ATOMIC_ACQ_REL);
            continue;
        }
        /* join only while the caller has not closed this job's gate */
        uint64_t g = __atomic_load_n(&p->gate, __ATOMIC_ACQUIRE);
        int joined = 0;
        while ((g >> 16) == seen && (g & GATE_OPEN)) {
            if (__atomic_compare_exchange_n(&p->gate, &g, g + 1, 1, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
                joined = 1;
                break;
            }
        }
        if (!joined) continue;
        if (wa.ith == 1) __atomic_add_fetch(&p->joins, 1, __ATOMIC_RELAXED);
        p->fn(p->ctx, wa.ith, nth);
        __atomic_sub_fetch(&p->gate, 1, __ATOMIC_ACQ_REL);
    }
}

sk_pool *sk_pool_new(int n_threads) {
    if (n_threads < 1 || n_threads > SK_POOL_MAX) return NULL;
    sk_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = n_threads;
    p->limit = n_threads;
    p->kept_off = -1;
    (void)sk_platform_affinity_get(&p->cpus);
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

int sk_pool_size(const sk_pool *p) { return p ? p->limit : 1; }

int sk_pool_threads(const sk_pool *p) { return p ? p->n : 1; }

void sk_pool_set_limit(sk_pool *p, int n) {
    if (!p) return;
    p->limit = n < 1 ? 1 : n > p->n ? p->n : n;
}

/* Passes whose helpers joined fewer than half of the steps (their cores were busy with
 * other work: a loaded machine) make the next SK_POOL_BACKOFF passes run without waking
 * the sleepers; helpers that are awake anyway still join. Then it tries again. */
#define SK_POOL_BACKOFF 32

void sk_pool_rest(sk_pool *p) {
    if (!p || p->n <= 1) return;
    __atomic_store_n(&p->resting, 1, __ATOMIC_RELAXED);
    int joins = __atomic_exchange_n(&p->joins, 0, __ATOMIC_RELAXED);
    if (p->backoff > 0)
        p->backoff--;
    else if (p->steps >= 4 && 2 * joins < p->steps)
        p->backoff = SK_POOL_BACKOFF;
    p->steps = 0;
}

void sk_pool_wake(sk_pool *p) {
    if (!p || p->limit <= 1 || p->backoff > 0) return;
    __atomic_store_n(&p->resting, 0, __ATOMIC_RELAXED);
    if (__atomic_load_n(&p->sleepers, __ATOMIC_ACQUIRE) == 0) return;
    keep_off_caller(p);
    if (__atomic_exchange_n(&p->woken, 1, __ATOMIC_ACQ_REL)) return;  /* already on its way */
    pthread_mutex_lock(&p->mu);
    __atomic_add_fetch(&p->kick, 1, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* Publish a job of nth threads (2 <= nth <= p->n). A job of every thread wakes the
 * sleepers and is waited for; a budgeted one only kicks them (once until they are up) and
 * goes on with the helpers already spinning. */
static void publish(sk_pool *p, int nth, unsigned all, sk_pool_fn fn, void *ctx) {
    p->fn = fn;
    p->ctx = ctx;
    uint64_t j = __atomic_load_n(&p->job, __ATOMIC_RELAXED);
    uint64_t gen = (j >> 16) + 1;
    if (all) {
        keep_off_caller(p);
        __atomic_store_n(&p->pending, nth - 1, __ATOMIC_RELEASE);
        pthread_mutex_lock(&p->mu);
        __atomic_store_n(&p->job, (gen << 16) | all | (uint64_t)nth, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        return;
    }
    __atomic_store_n(&p->gate, (gen << 16) | GATE_OPEN, __ATOMIC_RELEASE);
    __atomic_store_n(&p->job, (gen << 16) | (uint64_t)nth, __ATOMIC_RELEASE);
    sk_pool_wake(p);
}

/* Wait, yielding the core now and then in case a worker shares it, until *word & mask is 0. */
static void wait_zero(void *word, int is64, uint64_t mask) {
    for (unsigned i = 1;; i++) {
        uint64_t v = is64 ? __atomic_load_n((uint64_t *)word, __ATOMIC_ACQUIRE)
                          : (uint64_t)(unsigned)__atomic_load_n((int *)word, __ATOMIC_ACQUIRE);
        if (!(v & mask)) return;
        cpu_relax();
        if (i % 1024 == 0) sched_yield();
    }
}

void sk_pool_run_all(sk_pool *p, sk_pool_fn fn, void *ctx) {
    if (!p || p->limit == 1) {
        fn(ctx, 0, 1);
        return;
    }
    __atomic_store_n(&p->resting, 0, __ATOMIC_RELAXED);
    publish(p, p->limit, JOB_ALL, fn, ctx);
    fn(ctx, 0, p->limit);
    wait_zero(&p->pending, 0, ~(uint64_t)0);
}

void sk_pool_run(sk_pool *p, sk_pool_fn fn, void *ctx) {
    int k = (p && p->limit > 1) ? borrow(p->limit - 1) : 0;
    if (k == 0) {
        fn(ctx, 0, 1);
        return;
    }
    p->steps++;
    publish(p, k + 1, 0, fn, ctx);
    fn(ctx, 0, k + 1);
    /* the caller's share ends when every piece is claimed: close the gate, then wait for
     * the helpers that joined (a late one sees the gate closed and never touches ctx) */
    __atomic_fetch_and(&p->gate, ~(uint64_t)GATE_OPEN, __ATOMIC_ACQ_REL);
    wait_zero(&p->gate, 1, GATE_ACTIVE);
    __atomic_sub_fetch(&g_in_use, k, __ATOMIC_ACQ_REL);
}
#endif /* SKYCMD_THREADS */
