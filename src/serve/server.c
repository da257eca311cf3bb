/*
 * server.c - `skycmd serve`'s setup, signals, logging and drain (libmicrohttpd).
 *
 * Threads:
 *  - the main thread loads the models, then waits for SIGTERM/SIGINT and drains;
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
#if MHD_VERSION >= 0x01000000
#define SERVE_MHD_STRICTNESS MHD_OPTION_CLIENT_DISCIPLINE_LVL, 1
#define SERVE_MHD_OBS_FOLD "rejected"
#else
#define SERVE_MHD_STRICTNESS MHD_OPTION_STRICT_FOR_CLIENT, 1
#define SERVE_MHD_OBS_FOLD "merged (libmicrohttpd < 1.0)"
#endif

const char *serve_http_library(void) {
    static char text[96];
    /* the version actually loaded, not the one compiled against: a shared libmicrohttpd may
     * be upgraded under us, which changes nothing of the options this binary was built with */
    snprintf(text, sizeof text, "HTTP: libmicrohttpd %s, obsolete line folding %s", MHD_get_version(),
             SERVE_MHD_OBS_FOLD);
    return text;
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
    if (conn_reaper_start() != 0 || load_models() != 0 || start_workers() != 0 || warm_start() != 0) {
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

    int sig = 0;
    for (;;) {
        if (sigwait(&set, &sig) != 0) continue;
        if (sig != SIGHUP) break;
        log_line("skycmd serve: SIGHUP: reloading %d model%s", cfg->n_models, cfg->n_models == 1 ? "" : "s");
        int failed = reload_models();
        metrics_record_reload(failed == 0);
    }
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
    fprintf(stderr, "skycmd serve: this build has no HTTP server (libmicrohttpd was not found)\n");
    return 1;
}

const char *serve_http_library(void) { return "HTTP: none (built without libmicrohttpd)"; }

#endif
