/*
 * server.c - `skycmd serve`'s setup, signals, logging and drain (libmicrohttpd).
 *
 * Threads:
 *  - the main thread starts the daemon (/health answers 503 while loading), has a loader
 *    thread open the models (and, on SIGHUP, open them again), and waits for signals:
 *    SIGTERM/SIGINT drains; during the first load they stop the load and end the process
 *    (below);
 *  - one libmicrohttpd epoll thread does all socket I/O, HTTP parsing, routing, auth and
 *    body collection for every connection (http.c, routes.c). It never runs a model;
 *  - `workers` pool threads each own one skycmd_session per model (workers.c). A complete
 *    POST /v1/systemone is suspended, queued (bounded), answered by a worker into the
 *    request's own buffers, and resumed; the epoll thread then sends the response.
 * The parts share serve_internal.h; see its head for the map.
 */
#define _GNU_SOURCE
#include "serve.h"

#ifdef SKYCMD_HAVE_MHD

#include <pthread.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "serve_internal.h"
#include "serve_platform.h"

struct server S;

/* ---------------------------------------------------------------- logging ---------- */

void log_line(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&S.logmu);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fflush(stderr);
    pthread_mutex_unlock(&S.logmu);
    va_end(ap);
}

static void iso_time(char *buf, size_t cap) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, cap - n, ".%03ldZ", ts.tv_nsec / 1000000L);
}

void access_log(const struct req *r, uint64_t micros, unsigned status) {
    if (!S.cfg->access_log) return;
    char ts[40];
    iso_time(ts, sizeof ts);
    struct sbuf b = {0};
    const char *path = r->path.p ? r->path.p : "";
    if (S.cfg->log_format == SERVE_LOG_JSON) {
        sbuf_addf(&b, "{\"ts\":\"%s\",\"request_id\":", ts);
        sbuf_add_json_str(&b, r->rid, strlen(r->rid));
        sbuf_adds(&b, ",\"method\":");
        sbuf_add_json_str(&b, r->method, strlen(r->method));
        sbuf_adds(&b, ",\"path\":");
        sbuf_add_json_str(&b, path, r->path.len);
        sbuf_addf(&b, ",\"status\":%u,\"questions\":%zu,\"tokens\":%lld,\"micros\":%llu}", status,
                  r->questions, (long long)r->tokens, (unsigned long long)micros);
    } else {
        sbuf_addf(&b, "%s %s %s ", ts, r->rid, r->method);
        for (size_t i = 0; i < r->path.len; i++) {
            unsigned char c = (unsigned char)path[i];
            char ch = (c > 0x20 && c < 0x7F) ? (char)c : '?';
            sbuf_add(&b, &ch, 1);
        }
        sbuf_addf(&b, " %u questions=%zu tokens=%lld micros=%llu", status, r->questions,
                  (long long)r->tokens, (unsigned long long)micros);
    }
    if (!b.oom && b.p) log_line("%s", b.p);
    sbuf_free(&b);
}

void lib_log(void *ud, int level, const char *msg) {
    (void)ud;
    static const char *names[] = {"debug", "info", "warning"};
    if (level < 0 || level > 2) level = 1;
    log_line("skycmd serve: [%s] %s", names[level], msg);
}

/* libmicrohttpd's last message, kept even when not verbose: MHD_start_daemon() says why it
 * failed only here (errno after it is not ours to read: it closes the socket it made). */
static char mhd_last_error[512];
static pthread_mutex_t mhd_last_error_lock = PTHREAD_MUTEX_INITIALIZER;

static void mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    size_t n = strlen(buf);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) buf[--n] = '\0';
    pthread_mutex_lock(&mhd_last_error_lock);
    memcpy(mhd_last_error, buf, n + 1);
    pthread_mutex_unlock(&mhd_last_error_lock);
    if (S.cfg->verbose) log_line("skycmd serve: [http] %s", buf);
}

/* ---------------------------------------------------------------- setup ------------ */

static int resolve_host(const char *host, int port, int *ipv6) {
    memset(&S.addr, 0, sizeof S.addr);
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int rc = getaddrinfo(host, ps, &hints, &res);
    if (rc != 0 || !res) {
        fprintf(stderr, "skycmd serve: cannot resolve --host '%s': %s\n", host, gai_strerror(rc));
        return -1;
    }
    memcpy(&S.addr, res->ai_addr, res->ai_addrlen);
    *ipv6 = res->ai_family == AF_INET6;
    freeaddrinfo(res);
    return 0;
}

/* How strictly libmicrohttpd parses requests. From 1.0 on, discipline level 1 is "strict
 * within what RFC 9112 lets a server do": obsolete line folding, whitespace before a colon,
 * bare CR/LF and the like get 400 and a close. 0.9.75 (Debian bookworm) has only the older
 * boolean, and it merges a folded line into the previous header whatever the setting: the
 * one framing case src/serve/http.c cannot see (docs/serve.md, "Request framing"). */
#if MHD_VERSION < 0x01000100
/* CMakeLists.txt refuses it too: 0.9.x stalls under load (wrk -c256: the epoll thread sleeps
 * while requests wait, until the 408 deadline cuts every connection) */
#error "skycmd serve needs libmicrohttpd >= 1.0.1: tools/build-mhd.sh PREFIX, then PKG_CONFIG_PATH=PREFIX/lib/pkgconfig"
#endif
#define SERVE_MHD_STRICTNESS MHD_OPTION_CLIENT_DISCIPLINE_LVL, 1
#define SERVE_MHD_OBS_FOLD "rejected"

const char *serve_http_library(void) {
    static char text[96];
    /* the version actually loaded, not the one compiled against: a shared libmicrohttpd may
     * be upgraded under us, which changes nothing of the options this binary was built with */
    snprintf(text, sizeof text, "HTTP: libmicrohttpd %s, obsolete line folding %s", MHD_get_version(),
             SERVE_MHD_OBS_FOLD);
    return text;
}

/* ---------------------------------------------------------------- loading ---------- */

/* The models are opened on a loader thread, so that the main thread keeps taking signals
 * while a load runs (a large model, or --q8's calibration, takes seconds to minutes). Each
 * load passes the library a progress callback that asks it to stop once S.load_cancel is
 * set (models.c); skycmd_model_open checks it while it reads the file, between tensors and
 * before every layer of the int8 calibration's passes, so a stopped load returns
 * SKYCMD_E_CANCELLED within milliseconds and has freed what it made. A SIGTERM/SIGINT
 * during the first load therefore stops it, tears the server down cleanly, and ends the
 * process by that signal (nothing was served; the status an interrupted command gives);
 * one during a reload drains as usual while the reload stops, and the models loaded
 * before are freed with the rest. A load that does not stop within LOAD_STOP_WAIT_MS (a
 * long step between two checks) is abandoned to the exit instead, as before the library
 * could stop one. */
#define LOAD_STOP_WAIT_MS 5000
static struct {
    pthread_t tid;
    int running;    /* main thread only */
    int initial;    /* load_models (1) or reload_models (0) */
    int result;     /* written by the loader, read after the join */
    _Atomic int done;
} L;

static void *loader_main(void *arg) {
    (void)arg;
    L.result = L.initial ? load_models() : reload_models();
    atomic_store(&L.done, 1);
    return NULL;
}

static int loader_start(int initial) {
    L.initial = initial;
    L.result = 0;
    atomic_store(&L.done, 0);
    atomic_store(&S.load_cancel, 0);
    if (pthread_create(&L.tid, NULL, loader_main, NULL) != 0) return -1;
    L.running = 1;
    return 0;
}

static int loader_join(void) {
    pthread_join(L.tid, NULL);
    L.running = 0;
    return L.result;
}

/* Wait up to ms for a load that was asked to stop (skycmd_model_open returns
 * SKYCMD_E_CANCELLED at its next check); 1 when it returned (joined), 0 when it is still
 * loading. With `set`, a SIGTERM/SIGINT that arrives meanwhile (a second one: the operator
 * insists) ends the wait at once. */
static int loader_wait_cancelled(int ms, const sigset_t *set) {
    atomic_store(&S.load_cancel, 1);
    for (int i = 0; i < ms && !atomic_load(&L.done); i++) {
        struct timespec t = {0, 1000000L};
        if (!set) {
            nanosleep(&t, NULL);
            continue;
        }
        int got = sp_sigtimedwait(set, &t);
        if (got > 0 && got != SIGHUP) break;
    }
    if (!atomic_load(&L.done)) return 0;
    loader_join();
    return 1;
}

static const char *signal_name(int sig) {
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "signal";
}

/* End the process by sig, as an interrupted CLI command does (the shell sees 128 + sig:
 * 130 for SIGINT, 143 for SIGTERM). */
static _Noreturn void die_by_signal(int sig) {
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    raise(sig); /* pending while blocked; delivered by the unblock */
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    _exit(128 + sig); /* not reached */
}

/* The first load, while the main thread takes the signals (the loader logs how far it is,
 * models.c). 0 once the loader is joined; else the SIGTERM/SIGINT that came first (the load
 * still runs). */
static int wait_first_load(const sigset_t *set) {
    struct timespec tick = {0, 20 * 1000000L};
    while (!atomic_load(&L.done)) {
        int got = sp_sigtimedwait(set, &tick);
        if (got == SIGHUP) {
            log_line("skycmd serve: SIGHUP while the models load: ignored (they are being read now)");
        } else if (got > 0) {
            return got;
        }
    }
    loader_join();
    return 0;
}

/* SIGTERM/SIGINT during the first load: stop it and end the process by that signal (130
 * or 143 in the shell, as an interrupted command; nothing was served, so there is no drain
 * whose success an exit 0 would report). */
static _Noreturn void stop_first_load(int sig, const sigset_t *set) {
    int i = atomic_load(&S.loading);
    if (i >= S.cfg->n_models) i = S.cfg->n_models - 1;
    log_line("skycmd serve: %s while loading model %d of %d (%s): stopping", signal_name(sig), i + 1,
             S.cfg->n_models, S.cfg->models[i].path);
    atomic_store(&S.draining, 1);
    uint64_t t0 = now_us();
    if (loader_wait_cancelled(LOAD_STOP_WAIT_MS, set)) {
        /* the library stopped the load and freed it: a clean teardown */
        MHD_stop_daemon(S.daemon);
        S.daemon = NULL;
        conn_reaper_stop();
        free_models();
        free_list_release();
        free(S.ring);
        log_line("skycmd serve: stopped before serving (load cancelled in %.1f ms)", (double)(now_us() - t0) / 1000.0);
    } else {
        /* still inside skycmd_model_open between two of its checks (or a second signal
         * came): leave it to the kernel */
        log_line("skycmd serve: stopped before serving (the load in progress is abandoned)");
    }
    die_by_signal(sig);
}

int serve_run(const struct serve_config *cfg) {
    memset(&S, 0, sizeof S);
    S.cfg = cfg;
    pthread_mutex_init(&S.qmu, NULL);
    pthread_cond_init(&S.qcv, NULL);
    pthread_mutex_init(&S.logmu, NULL);
    pthread_mutex_init(&S.setmu, NULL);
    metrics_init();
    S.qcap = cfg->queue ? cfg->queue : 1;
    S.ring = calloc(S.qcap, sizeof *S.ring);
    if (!S.ring) {
        fprintf(stderr, "skycmd serve: out of memory\n");
        return 1;
    }
    {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        S.rid_boot = (uint32_t)((uint64_t)ts.tv_nsec * 2654435761u ^ (uint64_t)ts.tv_sec ^ (uint32_t)getpid());
    }

    /* Signals are taken synchronously by the main thread; every thread made from here on
     * inherits the mask. SIGPIPE is ignored (libmicrohttpd also sends with MSG_NOSIGNAL). */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    int ipv6 = 0;
    if (resolve_host(cfg->host, cfg->port, &ipv6) != 0) {
        free(S.ring);
        return 1;
    }
    log_line("skycmd serve: %s", serve_http_library());
    /* The best internal polling the platform has: libmicrohttpd picks epoll on Linux, poll
     * elsewhere (macOS has no epoll). */
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (ipv6) flags |= MHD_USE_IPv6;
    /* The daemon's own connection limit is above ours: at its limit libmicrohttpd stops
     * accepting and clients hang in the backlog, while conn_admit() closes them at once. */
    S.daemon = MHD_start_daemon(
        flags, (uint16_t)cfg->port, conn_admit, NULL, on_request, NULL, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&S.addr, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)cfg->max_connections + 64u, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->timeout_s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_NOTIFY_CONNECTION, conn_notify, NULL,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, SERVE_MHD_STRICTNESS, MHD_OPTION_END);
    if (!S.daemon) {
        fprintf(stderr, "skycmd serve: cannot listen on %s port %d: %s\n", cfg->host, cfg->port,
                mhd_last_error[0] ? mhd_last_error : "libmicrohttpd refused to start");
        free(S.ring);
        return 1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(S.daemon, MHD_DAEMON_INFO_BIND_PORT);
    int port = di ? (int)di->port : cfg->port;
    log_line("skycmd serve: listening on http://%s%s%s:%d (loading %d model%s)", ipv6 ? "[" : "", cfg->host,
             ipv6 ? "]" : "", port, cfg->n_models, cfg->n_models == 1 ? "" : "s");

    int rc = 0;
    int failed_start = conn_reaper_start() != 0 || loader_start(1) != 0;
    if (!failed_start) {
        int sig = wait_first_load(&set);
        if (sig) stop_first_load(sig, &set); /* does not return */
        failed_start = L.result != 0;
    }
    if (failed_start || start_workers() != 0 || warm_start() != 0) {
        rc = 1;
        atomic_store(&S.draining, 1);
        MHD_stop_daemon(S.daemon);
        S.daemon = NULL;
        conn_reaper_stop();
        warm_stop();
        stop_workers();
        free_models();
        free_list_release();
        free(S.ring);
        return rc;
    }
    atomic_store(&S.ready, 1);
    {
        struct sbuf names = {0};
        struct model_set *ms = models_acquire();
        for (int i = 0; ms && i < ms->n; i++) {
            if (i) sbuf_adds(&names, ", ");
            sbuf_adds(&names, ms->m[i]->name);
        }
        models_release(ms);
        log_line("skycmd serve: ready: %s; %d workers, queue %zu, auth %s", names.p ? names.p : "",
                 S.n_workers, S.qcap, cfg->api_key ? "on" : "off");
        sbuf_free(&names);
    }

    int sig = 0, reload_again = 0;
    for (;;) {
        /* while a reload runs, wake up to join it; else sleep until a signal */
        struct timespec tick = {0, 20 * 1000000L};
        int got = L.running ? sp_sigtimedwait(&set, &tick) : (sigwait(&set, &sig) == 0 ? sig : 0);
        if (L.running && atomic_load(&L.done)) {
            metrics_record_reload(loader_join() == 0);
            if (reload_again && got <= 0) got = SIGHUP; /* a SIGHUP came during that reload */
            reload_again = 0;
        }
        if (got <= 0) continue;
        if (got != SIGHUP) {
            sig = got;
            break;
        }
        if (L.running) { /* the files may have changed after that reload read them */
            reload_again = 1;
            continue;
        }
        log_line("skycmd serve: SIGHUP: reloading %d model%s", cfg->n_models, cfg->n_models == 1 ? "" : "s");
        if (loader_start(0) != 0) {
            log_line("skycmd serve: SIGHUP: cannot start the reload thread; keeping the models loaded");
            metrics_record_reload(0);
        }
    }
    if (L.running)
        log_line("skycmd serve: %s during a reload: the reload is cancelled, the models loaded before finish "
                 "the requests in flight", signal_name(sig));
    if (L.running) atomic_store(&S.load_cancel, 1); /* the library stops the load at its next check */
    log_line("skycmd serve: %s: finishing requests in flight, refusing new ones",
             sig == SIGINT ? "SIGINT" : "SIGTERM");
    atomic_store(&S.draining, 1);
    /* New connections are refused from now on: the listening socket is shut down at once
     * (Linux then stops listening and resets what waits in its backlog). It is closed only
     * once the daemon has stopped, since MHD's epoll thread may still hold it in its set. */
    MHD_socket lfd = MHD_quiesce_daemon(S.daemon);
    if (lfd != MHD_INVALID_SOCKET) shutdown(lfd, SHUT_RDWR);

    /* Requests in the pool are always finished. Connections still sending a body get until
     * the drain deadline; a second signal cuts that wait short. */
    uint64_t deadline = now_us() + (uint64_t)cfg->drain_timeout_s * 1000000u;
    struct timespec tick = {0, 10 * 1000000L};
    for (;;) {
        if (L.running && atomic_load(&L.done)) metrics_record_reload(loader_join() == 0);
        long act = atomic_load(&S.active), pool = atomic_load(&S.in_pool);
        if (act <= 0 && pool <= 0 && conn_arriving() == 0) break;
        if (pool <= 0 && now_us() > deadline) break;
        int got = sp_sigtimedwait(&set, &tick);  /* 0: none within the tick */
        if (got > 0 && got != SIGHUP) { /* a second SIGTERM/SIGINT; a reload no longer matters */
            if (pool <= 0) break;
            deadline = 0;
        }
    }
    /* When the deadline cut the wait, give the epoll thread a moment to send the answers
     * the workers just handed back. */
    for (int i = 0; i < 50 && atomic_load(&S.active) > 0 && atomic_load(&S.in_pool) <= 0; i++) {
        struct timespec ms = {0, 1000000L};
        nanosleep(&ms, NULL);
    }
    MHD_stop_daemon(S.daemon);
    if (lfd != MHD_INVALID_SOCKET) close(lfd);
    S.daemon = NULL;
    if (L.running && !loader_wait_cancelled(LOAD_STOP_WAIT_MS, &set)) {
        /* every request is answered; the cancelled reload is still inside skycmd_model_open
         * between two of its checks: exit without waiting for it */
        log_line("skycmd serve: stopped (the cancelled reload was still loading)");
        _exit(rc);
    }
    conn_reaper_stop();
    warm_stop();
    stop_workers();
    free_models();
    free_list_release();
    free(S.ring);
    log_line("skycmd serve: stopped");
    return rc;
}

#else /* !SKYCMD_HAVE_MHD */

#include <stdio.h>

int serve_run(const struct serve_config *cfg) {
    (void)cfg;
    fprintf(stderr, "skycmd serve: this build has no HTTP server: it was configured without libmicrohttpd "
                    ">= 1.0.1 (tools/build-mhd.sh PREFIX, then configure with "
                    "PKG_CONFIG_PATH=PREFIX/lib/pkgconfig; docs/serve.md)\n");
    return 1;
}

const char *serve_http_library(void) { return "HTTP: none (built without libmicrohttpd >= 1.0.1)"; }

#endif
