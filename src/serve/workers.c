/*
 * workers.c - the worker pool of `skycmd serve`: a bounded queue, batching, the hand-off.
 *
 * Contract: enqueue() (epoll thread) suspends a complete request's connection and queues it,
 * or refuses at once when the queue is full. `workers` threads each own one skycmd_session
 * per model; a worker takes one request, or a fair share of a backlog (at most the batch
 * limit), answers them (same-model requests whose questions fit one forward batch go through
 * skycmd_decide_each; answers are exactly those of lone requests), marks each done and
 * resumes its connection, after which it touches it no more.
 *
 * Compute threads follow the queue depth (--compute-threads auto, the default): each session
 * has a team of one thread per core, and a worker sets its sessions' thread count per batch
 * to 1 + the cores no other worker is using when its take is all that is in flight, else
 * to 1. So a lone request computes on every idle core and, under load, each request
 * runs on its own core as with --compute-threads 1. "Lone" also means no two requests were
 * in flight together for the last LONE_QUIET_US, and "idle" that the machine left the core
 * free lately (available_cores: other processes' load counts too); and a core is lent only
 * to work big enough to pay for the hand-off (LEND_MIN_WORK_US). The library's process-wide budget
 * (docs/threads.md) still decides per parallel step: a request that starts on another
 * worker meanwhile takes its core back from the next step on.
 *
 * A small request alone skips the pool: answer_inline() answers it on the epoll thread
 * that read it (the hand-off's two thread wake-ups cost more than a small model's answer).
 */
#define _GNU_SOURCE
#include "serve.h"

#ifdef SKYCMD_HAVE_MHD

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "serve_internal.h"
#include "serve_platform.h"

/* Requests a worker takes from the queue at once (--batch-max, default 8, 1 = no batching)
 * and the questions such a batch may hold (one forward batch of the library). */
#define BATCH_MAX 32
#define BATCH_QUESTIONS 16

static int batch_limit(void) {
    int v = S.cfg->batch_max;
    return v < 1 ? 1 : v > BATCH_MAX ? BATCH_MAX : v;
}

/* One request on its own (q from prepare): the plain skycmd_decide path. Its compute time x
 * threads becomes its model's lone_answer_us, the measure answer_inline() goes by. */
static void decide_one(struct req *r, struct loaded_model *m, skycmd_session *s, skycmd_request *q,
                       int threads) {
    skycmd_response *resp = NULL;
    const uint64_t t0 = now_us();
    int st = skycmd_decide(s, q, &resp);
    atomic_store(&m->lone_answer_us, (now_us() - t0) * (uint64_t)threads);
    finish(r, st, skycmd_session_errmsg(s), resp);
}

/* Answer the n requests a worker took together. Those of the same model whose questions fit
 * in one forward batch run through skycmd_decide_each (each with its own body's budgets;
 * each answer, or error, exactly what it would be alone). A lone
 * request takes the plain skycmd_decide path. A POST /v1/systemone/batch is answered on its
 * own (batch.c). */
static void answer_all(struct worker *w, struct req **rs, int n, int threads) {
    skycmd_request *q[BATCH_MAX];
    int mi[BATCH_MAX], done[BATCH_MAX];
    size_t nq[BATCH_MAX];
    for (int i = 0; i < n; i++) {
        done[i] = 0;
        q[i] = NULL;
        if (rs[i]->route == ROUTE_SYSTEMONE_BATCH) {
            answer_batch(rs[i], w->set, w->sessions);
            done[i] = 1;
            continue;
        }
        q[i] = prepare(rs[i], w->set, &mi[i]);
        nq[i] = q[i] ? skycmd_request_question_count(q[i]) : 0;
        if (!q[i]) done[i] = 1;
    }
    for (int first = 0; first < n; first++) {
        if (done[first]) continue;
        /* the group: `first` and the later requests that can share its batches, in order */
        int idx[BATCH_MAX], k = 0;
        size_t questions = 0;
        for (int i = first; i < n; i++) {
            if (done[i] || mi[i] != mi[first]) continue;
            if (k && questions + nq[i] > BATCH_QUESTIONS) continue;
            idx[k++] = i;
            questions += nq[i];
            done[i] = 1;
        }
        skycmd_session *s = w->sessions[mi[first]];
        if (k == 1) {
            decide_one(rs[first], w->set->m[mi[first]], s, q[first], threads);
            continue;
        }
        skycmd_response *out[BATCH_MAX];
        const skycmd_request *list[BATCH_MAX];
        for (int j = 0; j < k; j++) list[j] = q[idx[j]];
        int status[BATCH_MAX];
        char *msgs[BATCH_MAX];
        int st = skycmd_decide_each(s, list, (size_t)k, out, status, msgs);
        for (int j = 0; j < k; j++) {
            if (st) finish(rs[idx[j]], st, skycmd_session_errmsg(s), NULL);
            else finish(rs[idx[j]], status[j], msgs[j], out[j]);
            if (!st) skycmd_string_free(msgs[j]);
        }
    }
    for (int i = 0; i < n; i++) skycmd_request_free(q[i]);
}

/* Sessions for every model of set, configured; 0, or -1 with nothing made. */
static int make_sessions(struct model_set *set, skycmd_session **out) {
    for (int m = 0; m < set->n; m++) {
        int st = skycmd_session_new(set->m[m]->model, &out[m]);
        /* auto: one thread until a lone batch big enough to share comes (set_threads starts
         * the team then; after that only its limit changes, which is cheap): a server of small
         * models never runs a team that would only compete with the other workers */
        int threads = S.cfg->compute_threads == SERVE_COMPUTE_AUTO ? 1 : S.cfg->compute_threads;
        if (st == SKYCMD_OK && threads > 1)
            st = skycmd_session_set_int(out[m], SKYCMD_OPT_THREADS, threads);
        if (st == SKYCMD_OK && S.cfg->activations >= 0)
            st = skycmd_session_set_int(out[m], SKYCMD_OPT_ACTIVATIONS, S.cfg->activations);
        /* the cap on a body's max_len / head_max_len, which the library checks */
        if (st == SKYCMD_OK && S.cfg->max_token_budget > 0)
            st = skycmd_session_set_int(out[m], SKYCMD_OPT_MAX_TOKEN_BUDGET, S.cfg->max_token_budget);
        if (st == SKYCMD_OK && S.cfg->tournament_group > 0)
            st = skycmd_session_set_int(out[m], SKYCMD_OPT_TOURNAMENT_GROUP, S.cfg->tournament_group);
        if (st == SKYCMD_OK)
            st = skycmd_session_set_int(out[m], SKYCMD_OPT_AUTO_TOURNAMENT_GROUP, S.cfg->auto_tournament_group);
        if (st != SKYCMD_OK) {
            log_line("skycmd serve: cannot create a session for '%s': %s", set->m[m]->name,
                     out[m] ? skycmd_session_errmsg(out[m]) : skycmd_strerror(st));
            for (int k = 0; k <= m; k++) {
                skycmd_session_free(out[k]);
                out[k] = NULL;
            }
            return -1;
        }
    }
    return 0;
}

static void drop_sessions(struct worker *w) {
    for (int m = 0; m < SERVE_MAX_MODELS; m++) {
        skycmd_session_free(w->sessions[m]);
        w->sessions[m] = NULL;
    }
    models_release(w->set);
    w->set = NULL;
}

/* Move w to the current model set when a reload made a new one. When the new sessions
 * cannot be made, w keeps answering with the old set (and tries again next time). */
static void follow_reload(struct worker *w) {
    if (w->set && w->set->generation == atomic_load(&S.generation)) return;
    struct model_set *set = models_acquire();
    if (!set) return;
    skycmd_session *fresh[SERVE_MAX_MODELS] = {0};
    if (make_sessions(set, fresh) != 0) {
        models_release(set);
        return;
    }
    drop_sessions(w);
    w->set = set;
    memcpy(w->sessions, fresh, sizeof fresh);
    w->threads_set = 0;
    w->last_work_us = 0; /* other models: measure again */
}

/* A request is alone only when no two requests have been in flight together for this long.
 * Under many connections the epoll thread parses the next requests one at a time, so the
 * in-flight count a worker sees at its take can be 1 while a dozen more wait unread in their
 * sockets: lending the second core then takes it from the epoll thread and the other worker
 * (one run under load average 8-12 had auto at 1062 requests/s vs 1610 for
 * --compute-threads 1 at 64 connections; later runs were within that machine's noise).
 * One keep-alive client never overlaps. */
#define LONE_QUIET_US 5000

/* The cores this process could have used lately: the machine's idle time (sp_idle_seconds:
 * Linux's /proc/stat idle + iowait, macOS's idle ticks) plus this process's own CPU time, per wall-clock second, over the interval since
 * the previous sample (taken at most every CPU_SAMPLE_US, by a lone batch, with S.qmu
 * held; a pread of ~10 us). A core that other processes keep busy is not idle: a helper
 * lent onto it can be preempted in the middle of its piece of a step, and the request then
 * waits a scheduler time slice for it. -1 when unknown (no idle time, first sample). */
#define CPU_SAMPLE_US 100000

static double available_cores(void) {
    static uint64_t last_wall, last_self;
    static double last_idle;
    static double avail = -1.0;
    uint64_t now = now_us();
    if (last_wall && now - last_wall < CPU_SAMPLE_US) return avail;
    const double idle = sp_idle_seconds();  /* -1 where the system does not say */
    if (idle < 0) return -1.0;
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return -1.0;
    uint64_t self = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    if (last_wall && now > last_wall && idle >= last_idle && self >= last_self)
        avail = ((idle - last_idle) + (double)(self - last_self) / 1e6) /
                ((double)(now - last_wall) / 1e6);
    last_wall = now;
    last_idle = idle;
    last_self = self;
    return avail;
}

/* A core is lent only to work that pays for the hand-off: each parallel step of a forward
 * pass wakes and joins the helper, which costs more than it saves when the whole batch is a
 * fraction of a millisecond (s1-pico on an idle 2-core Xeon, 2026-12-02: a lone question took
 * 0.330 ms with the second core and 0.291 ms without; base-sized models take tens of ms). The
 * measure is the worker's previous batch (its compute time times its threads), so it follows
 * the model and the request sizes being served, with no model internals. */
#define LEND_MIN_WORK_US 2000

/* --compute-threads auto: the thread count of w's next batch, from the state the queue lock
 * shows (called with S.qmu held, after the take): 1 while any other request is in flight,
 * requests overlapped within LONE_QUIET_US or the last batch was too small to share
 * (LEND_MIN_WORK_US), else 1 + the cores that no other worker is answering on, at most the
 * cores the machine left free lately (available_cores). */
static int batch_threads(const struct worker *w, size_t take) {
    /* other requests in flight (being read, queued, answered or written): not alone */
    if (S.qlen > 0 || atomic_load(&S.active) > (long)take) return 1;
    if (w->last_work_us < LEND_MIN_WORK_US) return 1; /* small, or not measured yet */
    if (now_us() - atomic_load(&S.overlap_us) < LONE_QUIET_US) return 1;
    int others = atomic_load(&S.busy);  /* this worker is not counted yet */
    int n = S.cores - others;
    double avail = available_cores();
    /* 0.4 of a core of slack: a quiet machine with a local client reads 1.6-2.0 of 2 (the
     * client's own time between requests, 10 ms ticks) */
    if (avail >= 0 && n > (int)(avail + 0.4)) n = (int)(avail + 0.4);
    return n < 1 ? 1 : n;
}

/* Setting a count within the team started also wakes its sleeping threads (session.c), so
 * they are spinning when this batch's forward pass begins: set it for every batch of more
 * than one thread. */
static void set_threads(struct worker *w, int n) {
    if (w->threads_set == n && n == 1) return;
    for (int m = 0; m < w->set->n; m++)
        if (skycmd_session_set_int(w->sessions[m], SKYCMD_OPT_THREADS, n) != SKYCMD_OK) return;
    w->threads_set = n;
}

/* The epoll thread's own sessions (it answers one request at a time, with one thread):
 * made at the first inline answer, so a server of large models never has them. Held under
 * inline_mu: a reload (workers_wake, on the main thread) drops them when they belong to
 * the replaced models, so those are released even if no request comes inline again. */
static struct worker inline_worker;
static pthread_mutex_t inline_mu = PTHREAD_MUTEX_INITIALIZER;

void workers_wake(void) {
    pthread_mutex_lock(&S.qmu);
    pthread_cond_broadcast(&S.qcv);
    pthread_mutex_unlock(&S.qmu);
    pthread_mutex_lock(&inline_mu);
    if (inline_worker.set && inline_worker.set->generation != atomic_load(&S.generation))
        drop_sessions(&inline_worker);
    pthread_mutex_unlock(&inline_mu);
}

static void *worker_main(void *arg) {
    struct worker *w = arg;
    struct req *rs[BATCH_MAX];
    for (;;) {
        pthread_mutex_lock(&S.qmu);
        while (S.qlen == 0 && !S.quit && w->set->generation == atomic_load(&S.generation))
            pthread_cond_wait(&S.qcv, &S.qmu);
        if (S.qlen == 0 && S.quit) {
            pthread_mutex_unlock(&S.qmu);
            break;
        }
        if (S.qlen == 0) { /* woken by a reload: move to the new models while idle */
            pthread_mutex_unlock(&S.qmu);
            follow_reload(w);
            continue;
        }
        /* One request, or, when a backlog has built up, a fair share of it: the queue is
         * split among the workers so that none idles while another holds a batch. */
        size_t take = 1;
        if (S.qlen > 1) {
            size_t nw = S.cfg->workers > 0 ? (size_t)S.cfg->workers : 1;
            size_t share = (S.qlen + nw - 1) / nw;
            size_t lim = (size_t)batch_limit();
            take = share < lim ? share : lim;
            if (take < 1) take = 1;
        }
        for (size_t i = 0; i < take; i++) {
            rs[i] = S.ring[S.qhead];
            S.qhead = (S.qhead + 1) % S.qcap;
            S.qlen--;
        }
        /* --batch-window-us: a batch that is not full waits that long for more requests
         * (throughput under load for a bounded extra latency; 0 = never wait). */
        if (S.cfg->batch_window_us && take < (size_t)batch_limit() && !S.quit) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            long ns = until.tv_nsec + (long)S.cfg->batch_window_us * 1000L;
            until.tv_sec += ns / 1000000000L;
            until.tv_nsec = ns % 1000000000L;
            while (take < (size_t)batch_limit() && !S.quit) {
                if (S.qlen > 0) {
                    rs[take++] = S.ring[S.qhead];
                    S.qhead = (S.qhead + 1) % S.qcap;
                    S.qlen--;
                    continue;
                }
                if (pthread_cond_timedwait(&S.qcv, &S.qmu, &until) != 0) break;
            }
        }
        const int threads = batch_threads(w, take);
        atomic_fetch_add(&S.busy, 1);
        pthread_mutex_unlock(&S.qmu);

        follow_reload(w);
        if (S.cfg->compute_threads == SERVE_COMPUTE_AUTO) set_threads(w, threads);
        const uint64_t t0 = now_us();
        answer_all(w, rs, (int)take, threads);
        w->last_work_us = (now_us() - t0) * (uint64_t)threads;
        atomic_fetch_sub(&S.busy, 1);
        for (size_t i = 0; i < take; i++) {
            struct req *r = rs[i];
            struct MHD_Connection *c = r->conn;
            r->state = RS_DONE;
            /* After this call the epoll thread owns r again: touch nothing. */
            MHD_resume_connection(c);
            /* Counted out only once resumed: the drain never stops the daemon while one of
             * its connections is still suspended (libmicrohttpd forbids that). */
            atomic_fetch_sub(&S.in_pool, 1);
        }
    }
    return NULL;
}

/* Whether a model of set answered alone lately within --inline-max-us */
static int has_small_model(const struct model_set *set) {
    for (int i = 0; set && i < set->n; i++) {
        uint64_t work = atomic_load(&set->m[i]->lone_answer_us);
        if (work > 0 && work <= S.cfg->inline_max_us) return 1;
    }
    return 0;
}

/* The threads of a lone request answered inline (--compute-threads auto): one per question,
 * at most one per core. A small model's questions then run as whole passes, one group of
 * sequences per thread (src/model/passes.c), one hand-off per request instead of one per
 * step, and this thread never waits for a helper that is late or slow: it runs a helper's
 * group itself once it has none left, and whichever pass finishes first answers. The
 * helper is woken off this thread's CPU (src/kernels/pool.c). On a 2-vCPU Sapphire Rapids
 * guest (2026-12-04, s1-pico, the three-question example in-process) two threads took
 * 0.14 ms back to back and 0.16 ms with 5 ms between requests, one thread 0.18 and 0.21 ms.
 * No cap by the machine's recent idle time (available_cores) as for the workers' batches:
 * a helper's share is a fraction of a millisecond (inline answers are at most
 * --inline-max-us of compute), and a helper whose core is taken adds at most a wake-up.
 * One question stays on one thread (a split by step costs more than it saves at this
 * size), as does every request with --compute-threads N. */
static int inline_threads(size_t questions) {
    if (S.cfg->compute_threads != SERVE_COMPUTE_AUTO || questions < 2) return 1;
    return S.cores < (int)questions ? S.cores : (int)questions;
}

/* Answer r on the calling (epoll) thread instead of handing it to a worker. The hand-off
 * wakes a worker and then the epoll thread again to send: for s1-pico at one keep-alive
 * client on a 2-core KVM Xeon (2026-12-02), futex and eventfd wake-ups and context switches
 * were ~30 % of the server's CPU time and the HTTP answer took 2.3x the in-process one.
 * Only when r is alone (nothing queued, no worker answering, no other request in flight or
 * arriving on another connection, none overlapped within LONE_QUIET_US) and its model's
 * last lone answer took at most
 * --inline-max-us (default 1000: while the epoll thread computes it reads and writes no
 * other connection; s1-pico answers one question in ~0.12 ms, base-sized models take tens
 * of ms and stay on the workers); a model not measured yet goes to the workers. Any
 * load therefore takes the pool as before. A body that fails to parse is answered here
 * too (its error needs no compute). 1 when r holds its result, 0 when it is to be queued. */
int answer_inline(struct req *r) {
    if (r->route != ROUTE_SYSTEMONE || S.cfg->inline_max_us == 0) return 0;
    pthread_mutex_lock(&S.qmu);
    int lone = !S.quit && S.qlen == 0 && atomic_load(&S.busy) == 0 && atomic_load(&S.active) == 1 &&
               now_us() - atomic_load(&S.overlap_us) >= LONE_QUIET_US;
    pthread_mutex_unlock(&S.qmu);
    /* Requests waiting unread in other connections do not count as in flight yet (the epoll
     * thread reads one at a time): without this, 8 busy clients were all answered here, one
     * after another on one thread. */
    if (!lone || conn_others_active(r->conn)) return 0;
    if (pthread_mutex_trylock(&inline_mu) != 0) return 0; /* a reload is dropping them */
    struct worker *w = &inline_worker;
    /* No model small enough (a server of large models, or none measured yet): neither
     * sessions made here nor a body parsed twice. */
    struct model_set *fresh =
        w->set && w->set->generation == atomic_load(&S.generation) ? NULL : models_acquire();
    int small = has_small_model(fresh ? fresh : w->set);
    models_release(fresh);
    if (small) follow_reload(w);
    if (!small || !w->set) {
        pthread_mutex_unlock(&inline_mu);
        return 0;
    }
    r->t_enq = now_us();
    int mi = 0;
    skycmd_request *q = prepare(r, w->set, &mi);
    if (q) {
        struct loaded_model *m = w->set->m[mi];
        uint64_t work = atomic_load(&m->lone_answer_us);
        if (work == 0 || work > S.cfg->inline_max_us) {
            skycmd_request_free(q);
            pthread_mutex_unlock(&inline_mu);
            return 0;
        }
        const int threads = inline_threads(skycmd_request_question_count(q));
        set_threads(w, threads);
        decide_one(r, m, w->sessions[mi], q, threads);
        skycmd_request_free(q);
    }
    pthread_mutex_unlock(&inline_mu);
    metrics_record_inline();
    r->state = RS_DONE;
    return 1;
}

/* Suspend r and queue it; 0 when queued, -1 when the queue is full. */
int enqueue(struct req *r) {
    pthread_mutex_lock(&S.qmu);
    if (S.qlen >= S.qcap) {
        pthread_mutex_unlock(&S.qmu);
        return -1;
    }
    r->state = RS_QUEUED;
    r->t_enq = now_us();
    atomic_fetch_add(&S.in_pool, 1);
    conn_phase(r->conn, CONN_BUSY);
    MHD_suspend_connection(r->conn);
    S.ring[(S.qhead + S.qlen) % S.qcap] = r;
    S.qlen++;
    pthread_cond_signal(&S.qcv);
    pthread_mutex_unlock(&S.qmu);
    return 0;
}

size_t queue_depth(void) {
    pthread_mutex_lock(&S.qmu);
    size_t n = S.qlen;
    pthread_mutex_unlock(&S.qmu);
    return n;
}

/* The cores this process may run on (the library's budget counts them the same way). */
static int online_cores(void) {
    const int n = sp_cpu_count();
    return n > 256 ? 256 : n;
}

int start_workers(void) {
    S.cores = online_cores();
    S.workers = calloc((size_t)S.cfg->workers, sizeof *S.workers);
    if (!S.workers) return -1;
    for (int i = 0; i < S.cfg->workers; i++) {
        struct worker *w = &S.workers[i];
        w->index = i;
        w->set = models_acquire();
        if (!w->set || make_sessions(w->set, w->sessions) != 0) return -1;
        if (pthread_create(&w->tid, NULL, worker_main, w) != 0) {
            fprintf(stderr, "skycmd serve: cannot start worker thread %d\n", i);
            return -1;
        }
        w->started = 1;
        S.n_workers = i + 1;
    }
    return 0;
}

void stop_workers(void) {
    pthread_mutex_lock(&S.qmu);
    S.quit = 1;
    pthread_cond_broadcast(&S.qcv);
    pthread_mutex_unlock(&S.qmu);
    pthread_mutex_lock(&inline_mu); /* the daemon has stopped: no epoll thread uses them */
    drop_sessions(&inline_worker);
    pthread_mutex_unlock(&inline_mu);
    if (!S.workers) return;
    for (int i = 0; i < S.cfg->workers; i++) {
        struct worker *w = &S.workers[i];
        if (w->started) pthread_join(w->tid, NULL);
        drop_sessions(w);
    }
    free(S.workers);
    S.workers = NULL;
}


#endif /* SKYCMD_HAVE_MHD */
