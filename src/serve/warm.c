/*
 * warm.c - --poll-us: keep the I/O thread's core awake for a while after each response.
 *
 * Contract: warm_start() starts one "warm" thread when --poll-us is above 0 (nothing
 * otherwise); warm_after_response() (epoll thread, once per answered request) opens a window
 * of --poll-us microseconds and names the core the epoll thread is on; warm_stop() ends the
 * thread. During a window the warm thread runs on that core at SCHED_IDLE, spinning: it
 * yields the core to every other thread at once, so it never delays the server or another
 * program, but the core does not halt. On a virtual machine a halted vCPU costs a wake-up of
 * the hypervisor when the next request arrives (tens of microseconds, a sixth of a small
 * model's round trip: docs/performance.md 16); a keep-alive client that sends its next
 * request within the window finds the core awake. The price is a core spinning for up to
 * --poll-us after each response (never while no request comes: one window per response),
 * which is why it is an option (llama-server's threads and ONNX Runtime's spin by default).
 * The thread spins only at SCHED_IDLE: where the system refuses that, it ends at once and
 * the server says so and runs without it. Pinning is best effort: a core outside the
 * process's CPU set is skipped.
 */
#ifdef SKYCMD_HAVE_MHD
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "serve_internal.h"
#include "serve_platform.h"

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() ((void)0)
#endif

static struct {
    pthread_t thread;
    _Atomic int started;    /* read by the epoll thread, which runs before warm_start() */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Atomic uint64_t until; /* now_us() at which the window closes */
    _Atomic int cpu;        /* the core the epoll thread answered on (-1: unknown) */
    _Atomic int sleeping;   /* the warm thread waits on cv (set before it rechecks until) */
    _Atomic int stop;
} W = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .cpu = -1};

static void *warm_main(void *arg) {
    (void)arg;
    /* SCHED_IDLE or no spinning at all: at normal priority the spinner would share the I/O
     * thread's core with it instead of yielding it (sp_idle_priority: ENOTSUP on macOS) */
    const int rc = sp_idle_priority();
    if (rc != 0) {  /* the windows then go on being opened, but nobody sleeps to be woken */
        log_line("skycmd serve: --poll-us: the system refused idle priority to the warm thread "
                 "(%s); going on without it", strerror(rc));
        return NULL;
    }
    int pinned = -1;
    for (;;) {
        pthread_mutex_lock(&W.mu);
        /* sleeping is published before until is read again, and the epoll thread writes until
         * before it reads sleeping: one of the two always sees the other (no lost window) */
        atomic_store(&W.sleeping, 1);
        while (!atomic_load(&W.stop) && now_us() >= atomic_load(&W.until))
            pthread_cond_wait(&W.cv, &W.mu);
        atomic_store(&W.sleeping, 0);
        pthread_mutex_unlock(&W.mu);
        if (atomic_load(&W.stop)) break;
        const int cpu = atomic_load(&W.cpu);
        if (cpu >= 0 && cpu != pinned && sp_pin_thread(cpu) == 0) pinned = cpu;
        while (!atomic_load(&W.stop) && now_us() < atomic_load(&W.until))
            for (int i = 0; i < 64; i++) cpu_relax();
    }
    return NULL;
}

int warm_start(void) {
    if (!S.cfg->poll_us) return 0;
    atomic_store(&W.stop, 0);
    atomic_store(&W.until, 0);
    if (pthread_create(&W.thread, NULL, warm_main, NULL) != 0) {
        log_line("skycmd serve: --poll-us: cannot start the warm thread; going on without it");
        return 0;
    }
    atomic_store(&W.started, 1);
    return 0;
}

void warm_after_response(void) {
    if (!atomic_load(&W.started)) return;
    atomic_store(&W.until, now_us() + S.cfg->poll_us);
    atomic_store(&W.cpu, sp_current_cpu());
    if (atomic_load(&W.sleeping)) {
        pthread_mutex_lock(&W.mu);
        pthread_cond_signal(&W.cv);
        pthread_mutex_unlock(&W.mu);
    }
}

void warm_stop(void) {
    if (!atomic_load(&W.started)) return;
    pthread_mutex_lock(&W.mu);
    atomic_store(&W.stop, 1);
    pthread_cond_signal(&W.cv);
    pthread_mutex_unlock(&W.mu);
    pthread_join(W.thread, NULL);
    atomic_store(&W.started, 0);
}

#endif /* SKYCMD_HAVE_MHD */
