/*
 * pool.h - a fixed team of compute threads, created once and reused for every parallel
 * step of a forward pass.
 *
 * Contract:
 *  - sk_pool_new(n) starts n - 1 worker threads; the caller of sk_pool_run() is thread 0.
 *    n == 1 starts no thread (sk_pool_run then just calls fn once).
 *  - sk_pool_run(pool, fn, ctx) calls fn(ctx, ith, nth) once for every ith in [0, nth) and
 *    returns when all calls have finished. It is not re-entrant and a pool serves one
 *    caller at a time: give each session (thread) its own pool.
 *  - Idle workers spin for a few microseconds after a job (the next step of a forward pass
 *    usually follows at once) and then sleep on a condition variable, so an idle pool costs
 *    no CPU.
 *  - Oversubscription rule: the threads of all pools together should not exceed the cores;
 *    with S concurrent sessions give each about cores / S threads.
 */
#ifndef SK_POOL_H
#define SK_POOL_H

typedef struct sk_pool sk_pool;
typedef void (*sk_pool_fn)(void *ctx, int ith, int nth);

sk_pool *sk_pool_new(int n_threads);   /* NULL on failure or n_threads < 1 */
void sk_pool_free(sk_pool *p);          /* joins the workers; NULL is OK */
int sk_pool_size(const sk_pool *p);     /* 1 for NULL */
void sk_pool_run(sk_pool *p, sk_pool_fn fn, void *ctx);

#endif /* SK_POOL_H */
