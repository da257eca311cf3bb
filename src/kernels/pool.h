/*
 * pool.h - a fixed team of compute threads, created once and reused for every parallel
 * step of a forward pass, and the process-wide budget of compute threads.
 *
 * Contract:
 *  - sk_pool_new(n) starts n - 1 worker threads; the caller of sk_pool_run() is thread 0.
 *    n == 1 starts no thread (sk_pool_run then just calls fn once).
 *  - sk_pool_run(pool, fn, ctx) calls fn(ctx, ith, nth) once for every ith in [0, nth) and
 *    returns when all calls have finished, where 1 <= nth <= sk_pool_size(pool) is the
 *    number of threads the budget lends for this step (below). Callers must therefore
 *    split their work by the nth they are given, never by the pool size.
 *    sk_pool_run_all() always uses every thread (nth == sk_pool_size). Neither is
 *    re-entrant and a pool serves one caller at a time: give each session its own pool.
 *  - Idle workers spin for a few microseconds after a job (the next step of a forward pass
 *    usually follows at once) and then sleep on a condition variable, so an idle pool costs
 *    no CPU.
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

typedef struct sk_pool sk_pool;
typedef void (*sk_pool_fn)(void *ctx, int ith, int nth);

sk_pool *sk_pool_new(int n_threads);   /* NULL on failure or n_threads < 1 */
void sk_pool_free(sk_pool *p);          /* joins the workers; NULL is OK */
int sk_pool_size(const sk_pool *p);     /* 1 for NULL */
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

#endif /* SK_POOL_H */
