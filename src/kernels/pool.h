/*
 * pool.h - a fixed team of compute threads, created once and reused for every parallel
 * step of a forward pass, the process-wide budget of compute threads, and the per-thread
 * scratch of the kernels that need one.
 *
 * Contract:
 *  - sk_pool_new(n) starts n - 1 worker threads; the caller of sk_pool_run() is thread 0.
 *    n == 1 starts no thread (sk_pool_run then just calls fn once). Built without threads
 *    (SKYCMD_THREADS 0: wasm32-wasi, util/platform.h) every pool is of one thread whatever n.
 *  - sk_pool_run(pool, fn, ctx) calls fn(ctx, 0, nth) on the caller and fn(ctx, ith, nth)
 *    on each helper ith in [1, nth) that joins in time, and returns when all those calls
 *    have finished, where 1 <= nth <= sk_pool_size(pool) is the number of threads the
 *    budget lends for this step (below). A helper that is asleep or preempted when the
 *    caller has finished its call does not run at all, so the step never waits for a thread
 *    that has not started. fn must therefore claim its pieces of work from a counter shared
 *    through ctx (any subset of the calls, the caller's alone included, finishes the job),
 *    and may size the pieces by nth, which every call of the step gets alike.
 *    sk_pool_run_all() always runs fn once for every ith in [0, sk_pool_size) and waits for
 *    all. Neither is re-entrant and a pool serves one caller at a time: give each session
 *    its own pool.
 *  - sk_pool_set_limit(pool, n) caps the threads of later jobs at n (1..the threads
 *    started) without stopping any: sk_pool_size() then reports n. The extra threads sleep
 *    until the limit is raised again (a session's SKYCMD_OPT_THREADS changed within the
 *    pool's size, as `skycmd serve` does per batch).
 *  - Sleeping workers are woken off the CPU their caller runs on (where they would take
 *    turns with it): before a kick or a job that wakes them, their affinity becomes the
 *    creating thread's CPUs minus the caller's current one, when that leaves any.
 *  - Idle workers spin for a few microseconds after a job (the next step of a forward pass
 *    usually follows at once) and then sleep on a condition variable, so an idle pool costs
 *    no CPU. A budgeted step does not wait for a sleeper to wake: it kicks the sleepers
 *    (sk_pool_wake, also called when a forward pass starts) and goes on with the workers
 *    already spinning, so on a machine whose other cores are busy a step costs a few
 *    atomic operations more than on one thread, never a wake-up.
 *  - Oversubscription rule (docs/threads.md): the process has a budget of compute threads
 *    equal to the online cores. A thread running a forward pass holds one unit for the
 *    whole pass (sk_compute_begin/end); a pool's workers are borrowed per parallel step,
 *    only from the units nobody holds, and returned at the end of the step. So several
 *    sessions do not run more compute threads together than there are cores (beyond the
 *    end of a step already under way when another pass starts; and unless the
 *    application itself runs more forward passes at once than there are cores, which then
 *    run one thread each), and a lone session with N threads gets them all.
 */
#ifndef SK_POOL_H
#define SK_POOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct sk_pool sk_pool;
typedef void (*sk_pool_fn)(void *ctx, int ith, int nth);

sk_pool *sk_pool_new(int n_threads);   /* NULL on failure or n_threads < 1 */
void sk_pool_free(sk_pool *p);          /* joins the workers; NULL is OK */
int sk_pool_size(const sk_pool *p);     /* threads a job may use now; 1 for NULL */
int sk_pool_threads(const sk_pool *p);  /* threads started; 1 for NULL */
void sk_pool_set_limit(sk_pool *p, int n); /* clamped to [1, sk_pool_threads]; NULL is OK */
/* Wake sleeping workers so they spin for the coming steps (a forward pass about to start);
 * returns at once, and does nothing when none sleeps or the limit is 1. NULL is OK. */
void sk_pool_wake(sk_pool *p);
/* The steps are over for now (a forward pass ended): idle workers go to sleep at once
 * instead of spinning, so they leave the core to the rest of the process (the HTTP thread,
 * a client on the same machine). The next sk_pool_wake or job undoes it. NULL is OK. */
void sk_pool_rest(sk_pool *p);
/* Budgeted: nth = 1 + the helpers the process budget can lend now. */
void sk_pool_run(sk_pool *p, sk_pool_fn fn, void *ctx);
/* Every thread of the pool, whatever the budget (tests, non-compute work). */
void sk_pool_run_all(sk_pool *p, sk_pool_fn fn, void *ctx);

/* A forward pass starts / ends on the calling thread (holds one budget unit). */
void sk_compute_begin(void);
void sk_compute_end(void);
/* The budget (online cores, at least 1) and the units held right now (diagnostics, tests). */
int sk_compute_budget(void);
int sk_compute_in_use(void);
/* Test hook: set the budget to n units (n < 1 restores the core count). */
void sk_compute_set_budget(int n);
/* The per-thread buffers of the kernels, the only kernel memory that is not the caller's:
 * one slot per use, so a kernel never overwrites another's. */
typedef enum sk_scratch_slot {
    SK_SCRATCH_BF16_SPLIT,   /* the BF16 kernels' split activations (amx.c, bf16_neon.c) */
    SK_SCRATCH_WIDE_PANELS,  /* the x86 f32 GEMMs' 16-bit panels widened (gemm_x86.c) */
    SK_SCRATCH_SLOTS
} sk_scratch_slot;
/* A 64-byte aligned buffer of at least bytes, owned by the calling thread (grown on demand,
 * freed when the thread exits; the thread that ends the process, at exit or when the
 * library is unloaded, after which it is NULL), or NULL. */
void *sk_kernel_scratch(sk_scratch_slot slot, size_t bytes);

#endif /* SK_POOL_H */
