/*
 * server.c - the HTTP side of `skycmd serve` (libmicrohttpd) and its worker pool.
 *
 * Threads:
 *  - the main thread loads the models, then waits for SIGTERM/SIGINT and drains;
 *  - one libmicrohttpd epoll thread does all socket I/O, HTTP parsing, routing, auth and
 *    body collection for every connection. It never runs a model;
 *  - `workers` pool threads each own one skycmd_session per model. A complete
 *    POST /v1/systemone is suspended, queued (bounded), answered by a worker into the
 *    request's own buffers, and resumed; the epoll thread then sends the response.
 * A request context (struct req) is touched by one thread at a time: the epoll thread until
 * it is queued, the worker until it calls MHD_resume_connection(), then the epoll thread
 * again. Contexts and their buffers are recycled through a free list (epoll thread only).
 */
#define _GNU_SOURCE
#include "serve.h"

#ifdef SKYCMD_HAVE_MHD

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "metrics.h"
#include "serve_util.h"
#include "skycmd.h"

#define MODEL_NAME_MAX 256
#define RID_MAX 72
#define KEEP_BUF_MAX (256u * 1024u) /* larger buffers are released, not recycled */

enum req_state { RS_RECEIVING = 0, RS_QUEUED = 1, RS_DONE = 2, RS_RESPONDED = 3 };

struct req {
    struct req *next; /* free list */
    struct MHD_Connection *conn;
    int state;
    int route;
    int method_ok;
    int discard;  /* the body is read but not kept (auth/route error already decided) */
    size_t dropped; /* body bytes read and dropped */
    uint64_t t0, t_enq;
    char rid[RID_MAX];
    char method[8];
    struct sbuf path;
    struct sbuf body;
    /* result */
    unsigned status;
    const char *ctype;
    struct sbuf out;
    int retry_after; /* seconds, 0 = none */
    int close_conn;
    const char *allow; /* for 405 */
    size_t questions;
    int64_t tokens;
};

struct model_slot {
    skycmd_model *model;
    char name[MODEL_NAME_MAX];
    const char *path;
    char date[16]; /* the file's modification date, YYYY-MM-DD (/v1/models release_date) */
};

struct worker {
    pthread_t tid;
    int index;
    int started;
    skycmd_session *sessions[SERVE_MAX_MODELS];
};

static struct server {
    const struct serve_config *cfg;
    struct MHD_Daemon *daemon;
    struct model_slot models[SERVE_MAX_MODELS];
    int n_models;
    struct worker *workers;
    int n_workers;

    pthread_mutex_t qmu;
    pthread_cond_t qcv;
    struct req **ring;
    size_t qcap, qhead, qlen;
    int quit;

    _Atomic int ready;
    _Atomic int draining;
    _Atomic int busy;
    _Atomic long active;   /* requests started and not completed */
    _Atomic long in_pool;  /* requests queued or in a worker */
    _Atomic uint64_t rid_counter;
    uint32_t rid_boot;

    struct req *free_list; /* epoll thread only */
    pthread_mutex_t logmu;
    struct sockaddr_storage addr;
} S;

/* ---------------------------------------------------------------- logging ---------- */

static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void log_line(const char *fmt, ...) {
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

static void access_log(const struct req *r, uint64_t micros, unsigned status) {
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

static void lib_log(void *ud, int level, const char *msg) {
    (void)ud;
    static const char *names[] = {"debug", "info", "warning"};
    if (level < 0 || level > 2) level = 1;
    log_line("skycmd serve: [%s] %s", names[level], msg);
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    if (!S.cfg->verbose) return;
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    size_t n = strlen(buf);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) buf[--n] = '\0';
    log_line("skycmd serve: [http] %s", buf);
}

/* ---------------------------------------------------------------- responses -------- */

static const char *error_type(unsigned status) {
    switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 405: return "method_not_allowed_error";
    case 413: return "request_too_large_error";
    case 415: return "invalid_request_error";
    case 422: return "unprocessable_entity_error";
    case 429: return "rate_limit_error";
    case 501: return "not_supported_error";
    case 503: return "unavailable_error";
    default: return "server_error";
    }
}

/* Fill r's result with the error envelope {"error": {"code", "message", "type"}}. */
static void set_error(struct req *r, unsigned status, const char *msg) {
    r->status = status;
    r->ctype = "application/json";
    sbuf_reset(&r->out);
    sbuf_addf(&r->out, "{\"error\":{\"code\":%u,\"message\":", status);
    sbuf_add_json_str(&r->out, msg, strlen(msg));
    sbuf_adds(&r->out, ",\"type\":");
    sbuf_add_json_str(&r->out, error_type(status), strlen(error_type(status)));
    sbuf_adds(&r->out, "}}");
    if (status == 429 || status == 503) r->retry_after = 1;
}

static void set_errorf(struct req *r, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_errorf(struct req *r, unsigned status, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    set_error(r, status, msg);
}

static void set_json(struct req *r, unsigned status, const char *json, size_t n) {
    r->status = status;
    r->ctype = "application/json";
    sbuf_reset(&r->out);
    sbuf_add(&r->out, json, n);
}

/* Send r's result. Runs on the epoll thread, inside the access handler. */
static enum MHD_Result send_result(struct req *r) {
    if (r->out.oom) set_error(r, 500, "out of memory");
    if (r->out.oom) {
        /* even the error did not fit: a static body */
        static const char k_oom[] =
            "{\"error\":{\"code\":500,\"message\":\"out of memory\",\"type\":\"server_error\"}}";
        sbuf_free(&r->out);
        r->out.p = NULL;
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(sizeof k_oom - 1, (void *)k_oom, MHD_RESPMEM_PERSISTENT);
        if (!resp) return MHD_NO;
        MHD_add_response_header(resp, "Content-Type", "application/json");
        MHD_add_response_header(resp, "x-request-id", r->rid);
        enum MHD_Result ok = MHD_queue_response(r->conn, 500, resp);
        MHD_destroy_response(resp);
        r->status = 500;
        r->state = RS_RESPONDED;
        return ok;
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(r->out.len, r->out.p ? r->out.p : (void *)"", MHD_RESPMEM_MUST_COPY);
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", r->ctype ? r->ctype : "application/json");
    MHD_add_response_header(resp, "x-request-id", r->rid);
    MHD_add_response_header(resp, "x-typesafe-request-id", r->rid);
    if (r->retry_after > 0) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", r->retry_after);
        MHD_add_response_header(resp, "Retry-After", ra);
    }
    if (r->status == 401) MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
    if (r->status == 405 && r->allow) MHD_add_response_header(resp, "Allow", r->allow);
    if (r->close_conn || atomic_load(&S.draining)) MHD_add_response_header(resp, "Connection", "close");
    enum MHD_Result ok = MHD_queue_response(r->conn, r->status, resp);
    MHD_destroy_response(resp);
    r->state = RS_RESPONDED;
    return ok;
}

/* ---------------------------------------------------------------- request contexts - */

static struct req *req_get(void) {
    struct req *r = S.free_list;
    if (r) {
        S.free_list = r->next;
    } else {
        r = calloc(1, sizeof *r);
        if (!r) return NULL;
    }
    r->next = NULL;
    r->conn = NULL;
    r->state = RS_RECEIVING;
    r->route = ROUTE_OTHER;
    r->method_ok = 0;
    r->discard = 0;
    r->dropped = 0;
    r->t0 = now_us();
    r->t_enq = 0;
    r->rid[0] = '\0';
    r->method[0] = '\0';
    sbuf_reset(&r->path);
    sbuf_reset(&r->body);
    r->status = 0;
    r->ctype = NULL;
    sbuf_reset(&r->out);
    r->retry_after = 0;
    r->close_conn = 0;
    r->allow = NULL;
    r->questions = 0;
    r->tokens = 0;
    return r;
}

static void shrink(struct sbuf *b) {
    if (b->cap > KEEP_BUF_MAX) sbuf_free(b);
}

static void req_put(struct req *r) {
    shrink(&r->body);
    shrink(&r->out);
    shrink(&r->path);
    r->next = S.free_list;
    S.free_list = r;
}

static void free_list_release(void) {
    while (S.free_list) {
        struct req *r = S.free_list;
        S.free_list = r->next;
        sbuf_free(&r->body);
        sbuf_free(&r->out);
        sbuf_free(&r->path);
        free(r);
    }
}

/* A caller's x-request-id is kept when it is short and plain; otherwise a new one. */
static void make_rid(struct req *r, const char *given) {
    if (given) {
        size_t n = strlen(given);
        int ok = n > 0 && n < 64;
        for (size_t i = 0; ok && i < n; i++) {
            char c = given[i];
            ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                 c == '_' || c == '.' || c == ':';
        }
        if (ok) {
            memcpy(r->rid, given, n + 1);
            return;
        }
    }
    uint64_t n = atomic_fetch_add(&S.rid_counter, 1);
    snprintf(r->rid, sizeof r->rid, "req-%08x%012llx", S.rid_boot, (unsigned long long)n);
}

/* ---------------------------------------------------------------- the worker pool --- */

static int find_model(const char *name) {
    for (int i = 0; i < S.n_models; i++)
        if (strcmp(S.models[i].name, name) == 0) return i;
    /* Clients default to the hosted aliases; they mean "the default model" here. */
    if (strcmp(name, "jev-latest") == 0 || strcmp(name, "default") == 0) return 0;
    return -1;
}

static void unknown_model(struct req *r, const char *name) {
    struct sbuf m = {0};
    sbuf_adds(&m, "model '");
    /* keep the echo short and printable */
    size_t n = strlen(name);
    sbuf_add(&m, name, n > 80 ? 80 : n);
    sbuf_adds(&m, n > 80 ? "...' is not loaded; available: " : "' is not loaded; available: ");
    for (int i = 0; i < S.n_models; i++) {
        if (i) sbuf_adds(&m, ", ");
        sbuf_adds(&m, S.models[i].name);
    }
    set_error(r, 422, m.p ? m.p : "model is not loaded");
    sbuf_free(&m);
}

static void status_error(struct req *r, int st, const char *msg, const char *what) {
    switch (st) {
    case SKYCMD_E_JSON: set_error(r, 400, msg && *msg ? msg : "malformed JSON"); break;
    case SKYCMD_E_REQUEST: set_error(r, 422, msg && *msg ? msg : "invalid request"); break;
    case SKYCMD_E_TOO_LARGE: set_error(r, 413, msg && *msg ? msg : "request too large"); break;
    case SKYCMD_E_UNSUPPORTED: set_error(r, 501, msg && *msg ? msg : "not supported"); break;
    case SKYCMD_E_NOMEM:
        set_error(r, 503, "the server is out of memory, retry later");
        break;
    default:
        /* Never a stack or a pointer: the status name only; details go to the log. */
        if (S.cfg->verbose)
            log_line("skycmd serve: %s %s failed: %s: %s", r->rid, what, skycmd_status_name(st),
                     msg ? msg : "");
        set_errorf(r, 500, "%s failed (%s)", what, skycmd_status_name(st));
        break;
    }
}

/* The part of answering that is per request: wait limit, model choice, parsing, limits.
 * Returns the parsed request (*mi = its model), or NULL when r already holds its error. */
static skycmd_request *prepare(struct req *r, int *mi) {
    const struct serve_config *cfg = S.cfg;
    uint64_t waited = now_us() - r->t_enq;
    if (cfg->timeout_s && waited > (uint64_t)cfg->timeout_s * 1000000u) {
        set_errorf(r, 503, "the request waited %.1f s for a worker (limit %u s)", (double)waited / 1e6,
                   cfg->timeout_s);
        return NULL;
    }
    const char *body = r->body.p ? r->body.p : "";
    size_t len = r->body.len;

    *mi = 0;
    char mname[MODEL_NAME_MAX];
    switch (sj_find_model(body, len, mname, sizeof mname)) {
    case SJ_MODEL_STRING:
        *mi = find_model(mname);
        if (*mi < 0) {
            unknown_model(r, mname);
            return NULL;
        }
        break;
    case SJ_MODEL_OTHER: set_error(r, 422, "\"model\" must be a string"); return NULL;
    case SJ_MODEL_TOO_LONG: set_error(r, 422, "\"model\" is not a loaded model name (too long)"); return NULL;
    default: break;
    }

    skycmd_request *q = NULL;
    int st = skycmd_request_parse(body, len, &q);
    if (st != SKYCMD_OK) {
        status_error(r, st, q ? skycmd_request_errmsg(q) : NULL, "request parsing");
        skycmd_request_free(q);
        return NULL;
    }
    size_t nq = skycmd_request_question_count(q);
    if (nq > cfg->max_questions) {
        set_errorf(r, 413, "too many questions (%zu), this server accepts at most %zu per request", nq,
                   cfg->max_questions);
        skycmd_request_free(q);
        return NULL;
    }
    return q;
}

/* Fill r from a decide result (resp may be NULL on failure) and free resp. */
static void finish(struct req *r, int st, skycmd_session *s, skycmd_response *resp) {
    if (st != SKYCMD_OK) {
        status_error(r, st, skycmd_session_errmsg(s), "decision");
    } else {
        const char *json = skycmd_response_json(resp);
        if (!json) {
            set_error(r, 500, "decision failed (no response body)");
        } else {
            set_json(r, 200, json, strlen(json));
            r->questions = skycmd_response_answer_count(resp);
            r->tokens = skycmd_response_input_tokens(resp);
        }
    }
    skycmd_response_free(resp);
}

/* Requests a worker takes from the queue at once (SKYCMD_SERVE_BATCH, default 8, 1 = no
 * batching) and the questions such a batch may hold (one forward batch of the library). */
#define BATCH_MAX 32
#define BATCH_QUESTIONS 16
static int g_batch = -1;

static int batch_limit(void) {
    if (g_batch < 0) {
        const char *env = getenv("SKYCMD_SERVE_BATCH");
        long v = env && *env ? strtol(env, NULL, 10) : 8;
        g_batch = v < 1 ? 1 : v > BATCH_MAX ? BATCH_MAX : (int)v;
    }
    return g_batch;
}

/* Answer the n requests a worker took together. Those of the same model whose questions fit
 * in one forward batch run through skycmd_decide_batch (each answer is exactly what it would
 * be alone); if such a batch fails, its requests are answered one by one so that each gets
 * its own error. A lone request takes the plain skycmd_decide path. */
static void answer_all(struct worker *w, struct req **rs, int n) {
    skycmd_request *q[BATCH_MAX];
    int mi[BATCH_MAX];
    size_t nq[BATCH_MAX];
    for (int i = 0; i < n; i++) {
        q[i] = prepare(rs[i], &mi[i]);
        nq[i] = q[i] ? skycmd_request_question_count(q[i]) : 0;
    }
    for (int m = 0; m < S.n_models; m++) {
        int idx[BATCH_MAX], k = 0;
        size_t questions = 0;
        for (int i = 0; i <= n; i++) {
            /* close the group at the end or when the next request would overflow it */
            int take = i < n && q[i] && mi[i] == m;
            if (k && (i == n || (take && questions + nq[i] > BATCH_QUESTIONS))) {
                skycmd_session *s = w->sessions[m];
                skycmd_response *out[BATCH_MAX];
                int st = SKYCMD_E_INVALID_ARGUMENT;
                if (k > 1) {
                    const skycmd_request *list[BATCH_MAX];
                    for (int j = 0; j < k; j++) list[j] = q[idx[j]];
                    st = skycmd_decide_batch(s, list, (size_t)k, out);
                }
                for (int j = 0; j < k; j++) {
                    if (st == SKYCMD_OK) {
                        finish(rs[idx[j]], SKYCMD_OK, s, out[j]);
                    } else {
                        skycmd_response *resp = NULL;
                        int st1 = skycmd_decide(s, q[idx[j]], &resp);
                        finish(rs[idx[j]], st1, s, resp);
                    }
                }
                k = 0;
                questions = 0;
            }
            if (take) {
                idx[k++] = i;
                questions += nq[i];
            }
        }
    }
    for (int i = 0; i < n; i++) skycmd_request_free(q[i]);
}

static void *worker_main(void *arg) {
    struct worker *w = arg;
    struct req *rs[BATCH_MAX];
    for (;;) {
        pthread_mutex_lock(&S.qmu);
        while (S.qlen == 0 && !S.quit) pthread_cond_wait(&S.qcv, &S.qmu);
        if (S.qlen == 0 && S.quit) {
            pthread_mutex_unlock(&S.qmu);
            break;
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
        pthread_mutex_unlock(&S.qmu);

        atomic_fetch_add(&S.busy, 1);
        answer_all(w, rs, (int)take);
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

/* Suspend r and queue it; 0 when queued, -1 when the queue is full. */
static int enqueue(struct req *r) {
    pthread_mutex_lock(&S.qmu);
    if (S.qlen >= S.qcap) {
        pthread_mutex_unlock(&S.qmu);
        return -1;
    }
    r->state = RS_QUEUED;
    r->t_enq = now_us();
    atomic_fetch_add(&S.in_pool, 1);
    MHD_suspend_connection(r->conn);
    S.ring[(S.qhead + S.qlen) % S.qcap] = r;
    S.qlen++;
    pthread_cond_signal(&S.qcv);
    pthread_mutex_unlock(&S.qmu);
    return 0;
}

static size_t queue_depth(void) {
    pthread_mutex_lock(&S.qmu);
    size_t n = S.qlen;
    pthread_mutex_unlock(&S.qmu);
    return n;
}

/* ---------------------------------------------------------------- GET endpoints ---- */

static void do_health(struct req *r) {
    if (atomic_load(&S.draining)) {
        set_json(r, 503, "{\"status\":\"shutting_down\",\"error\":{\"code\":503,\"message\":"
                         "\"Shutting down\",\"type\":\"unavailable_error\"}}",
                 strlen("{\"status\":\"shutting_down\",\"error\":{\"code\":503,\"message\":"
                        "\"Shutting down\",\"type\":\"unavailable_error\"}}"));
        r->retry_after = 1;
    } else if (!atomic_load(&S.ready)) {
        static const char k[] = "{\"status\":\"loading\",\"error\":{\"code\":503,\"message\":"
                                "\"Loading model\",\"type\":\"unavailable_error\"}}";
        set_json(r, 503, k, sizeof k - 1);
        r->retry_after = 1;
    } else {
        set_json(r, 200, "{\"status\":\"ok\"}", 15);
    }
}

static void do_models(struct req *r) {
    /* Two shapes side by side: OpenAI/llama-server's {"object","data":[{"id"}]} and the
     * typesafe SDK's {"models":[{"name","description","release_date"}]}. */
    r->status = 200;
    r->ctype = "application/json";
    struct sbuf *o = &r->out;
    sbuf_reset(o);
    int ready = atomic_load(&S.ready);
    int n = ready ? S.n_models : 0;
    sbuf_adds(o, "{\"object\":\"list\",\"data\":[");
    for (int i = 0; i < n; i++) {
        int64_t params = 0, maxtok = 0;
        skycmd_model_get_int(S.models[i].model, "parameters", &params);
        skycmd_model_get_int(S.models[i].model, "decision.max_tokens", &maxtok);
        if (i) sbuf_adds(o, ",");
        sbuf_adds(o, "{\"id\":");
        sbuf_add_json_str(o, S.models[i].name, strlen(S.models[i].name));
        sbuf_addf(o, ",\"object\":\"model\",\"owned_by\":\"skycmd\",\"default\":%s,"
                     "\"meta\":{\"n_params\":%lld,\"max_tokens\":%lld}}",
                  i == 0 ? "true" : "false", (long long)params, (long long)maxtok);
    }
    sbuf_adds(o, "],\"models\":[");
    for (int i = 0; i < n; i++) {
        if (i) sbuf_adds(o, ",");
        sbuf_adds(o, "{\"name\":");
        sbuf_add_json_str(o, S.models[i].name, strlen(S.models[i].name));
        sbuf_adds(o, ",\"description\":");
        char desc[MODEL_NAME_MAX + 64];
        snprintf(desc, sizeof desc, "System One decision model%s", i == 0 ? " (default)" : "");
        sbuf_add_json_str(o, desc, strlen(desc));
        sbuf_addf(o, ",\"release_date\":\"%s\"}", S.models[i].date);
    }
    sbuf_adds(o, "]}");
}

static void do_metrics(struct req *r) {
    struct metrics_gauges g = {0};
    g.queue_depth = queue_depth();
    g.queue_capacity = S.qcap;
    g.workers = S.n_workers;
    g.workers_busy = atomic_load(&S.busy);
    const union MHD_DaemonInfo *di =
        S.daemon ? MHD_get_daemon_info(S.daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS) : NULL;
    g.connections = di ? di->num_connections : 0;
    g.models = atomic_load(&S.ready) ? S.n_models : 0;
    g.ready = atomic_load(&S.ready);
    g.draining = atomic_load(&S.draining);
    r->status = 200;
    r->ctype = "text/plain; version=0.0.4; charset=utf-8";
    sbuf_reset(&r->out);
    metrics_render(&r->out, &g);
}

/* ---------------------------------------------------------------- the handler ------ */

/* How many body bytes are read and dropped after an early error before the connection is
 * cut instead: enough for ordinary over-limit bodies, bounded against endless streams. */
static size_t discard_max(void) {
    size_t m = S.cfg->max_body > SIZE_MAX / 4 ? SIZE_MAX : S.cfg->max_body * 4;
    if (m < 8u * 1024u * 1024u) m = 8u * 1024u * 1024u;
    if (m > 64u * 1024u * 1024u) m = 64u * 1024u * 1024u;
    return m;
}

static int route_of(const char *url, const char **allow) {
    if (strcmp(url, "/v1/systemone") == 0) {
        *allow = "POST";
        return ROUTE_SYSTEMONE;
    }
    *allow = "GET, HEAD";
    if (strcmp(url, "/health") == 0 || strcmp(url, "/v1/health") == 0) return ROUTE_HEALTH;
    if (strcmp(url, "/v1/models") == 0 || strcmp(url, "/models") == 0) return ROUTE_MODELS;
    if (strcmp(url, "/metrics") == 0) return ROUTE_METRICS;
    *allow = NULL;
    return ROUTE_OTHER;
}

static int authorized(struct MHD_Connection *c) {
    if (!S.cfg->api_key) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h) return 0;
    while (*h == ' ') h++;
    if (strncasecmp(h, "Bearer", 6) != 0 || (h[6] != ' ' && h[6] != '\t')) return 0;
    h += 6;
    while (*h == ' ' || *h == '\t') h++;
    size_t n = strlen(h);
    while (n && (h[n - 1] == ' ' || h[n - 1] == '\t')) n--;
    return ct_equal(h, n, S.cfg->api_key, strlen(S.cfg->api_key));
}

static enum MHD_Result header_nul(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                  const char *value, size_t value_size) {
    (void)kind;
    if ((key && memchr(key, 0, key_size)) || (value && memchr(value, 0, value_size))) {
        *(int *)cls = 1;
        return MHD_NO;
    }
    return MHD_YES;
}

/* Decide what a request gets once its headers are known. Returns 1 when r's result is
 * already decided (an error), 0 when the request proceeds. */
static int check_headers(struct req *r, struct MHD_Connection *c, const char *url, const char *method) {
    const char *allow = NULL;
    r->route = route_of(url, &allow);
    int nul = 0;
    MHD_get_connection_values_n(c, MHD_HEADER_KIND, header_nul, &nul);
    if (nul) {
        set_error(r, 400, "a request header holds a NUL byte");
        r->close_conn = 1;
        return 1;
    }
    int is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    int is_post = strcmp(method, "POST") == 0;
    if (r->route == ROUTE_OTHER) {
        set_errorf(r, 404, "File Not Found: no endpoint %s (try POST /v1/systemone)",
                   strlen(url) > 100 ? "at this path" : url);
        return 1;
    }
    if ((r->route == ROUTE_SYSTEMONE && !is_post) || (r->route != ROUTE_SYSTEMONE && !is_get)) {
        r->allow = allow;
        set_errorf(r, 405, "method %s is not allowed on %s (allowed: %s)", method, url, allow);
        return 1;
    }
    if (r->route != ROUTE_HEALTH && !authorized(c)) {
        set_error(r, 401, "Invalid API Key");
        return 1;
    }
    if (r->route == ROUTE_SYSTEMONE) {
        if (atomic_load(&S.draining)) {
            set_error(r, 503, "the server is shutting down");
            r->close_conn = 1;
            return 1;
        }
        const char *ce = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
        if (ce && strcasecmp(ce, "identity") != 0) {
            set_errorf(r, 415, "Content-Encoding '%.40s' is not supported; send the body uncompressed", ce);
            return 1;
        }
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl) {
            char *end = NULL;
            errno = 0;
            unsigned long long v = strtoull(cl, &end, 10);
            if (errno == 0 && end != cl && v > S.cfg->max_body) {
                set_errorf(r, 413, "request body is %llu bytes, the limit is %zu bytes", v, S.cfg->max_body);
                /* A client that waits for 100-continue, or announces a body too big to drain,
                 * is answered at once (and the connection closed); otherwise the body is read
                 * and dropped so that the answer reliably reaches the client. */
                if (v > discard_max() || MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Expect"))
                    r->close_conn = 1;
                return 1;
            }
        }
    }
    return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
    (void)cls;
    (void)version;
    struct req *r = *con_cls;
    if (!r) {
        r = req_get();
        if (!r) return MHD_NO; /* out of memory: MHD closes the connection */
        *con_cls = r;
        r->conn = c;
        atomic_fetch_add(&S.active, 1);
        snprintf(r->method, sizeof r->method, "%.7s", method);
        sbuf_adds(&r->path, url);
        make_rid(r, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-request-id"));
        if (check_headers(r, c, url, method)) {
            r->discard = 1;
            /* Errors decided before the body: answer now when the body is too big to read
             * (MHD then closes the connection), else read and drop the body, keep-alive. */
            if (r->close_conn) return send_result(r);
        }
        return MHD_YES;
    }

    if (r->state == RS_RECEIVING && *upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (r->discard) {
            /* Bounded even when discarding: past discard_max() the client is answered at
             * once and the connection closed. */
            r->dropped += n;
            if (r->dropped > discard_max()) {
                r->close_conn = 1;
                return send_result(r);
            }
            return MHD_YES;
        }
        if (n > S.cfg->max_body || r->body.len > S.cfg->max_body - n) {
            set_errorf(r, 413, "request body is over the limit of %zu bytes", S.cfg->max_body);
            r->discard = 1;
            r->dropped = r->body.len + n;
            sbuf_reset(&r->body);
            return MHD_YES;
        }
        sbuf_add(&r->body, upload_data, n);
        if (r->body.oom) {
            set_error(r, 503, "the server is out of memory, retry later");
            r->discard = 1;
            r->close_conn = 1;
            return send_result(r);
        }
        return MHD_YES;
    }

    if (*upload_data_size > 0) {
        /* body bytes after the answer was decided (not expected): drop them */
        *upload_data_size = 0;
        return MHD_YES;
    }
    switch (r->state) {
    case RS_RECEIVING:
        if (r->discard) return send_result(r);
        switch (r->route) {
        case ROUTE_HEALTH: do_health(r); return send_result(r);
        case ROUTE_MODELS: do_models(r); return send_result(r);
        case ROUTE_METRICS: do_metrics(r); return send_result(r);
        default: break;
        }
        if (!atomic_load(&S.ready)) {
            set_error(r, 503, "Loading model");
            return send_result(r);
        }
        if (r->body.len == 0) {
            set_error(r, 400, "request body is empty: send a JSON object with \"state\" and \"questions\"");
            return send_result(r);
        }
        if (enqueue(r) != 0) {
            set_errorf(r, 429, "the server is busy: %zu requests are already waiting, retry later", S.qcap);
            return send_result(r);
        }
        return MHD_YES;
    case RS_QUEUED: return MHD_YES; /* not expected: resumed only when done */
    case RS_DONE: return send_result(r);
    default: return MHD_YES;
    }
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)cls;
    (void)c;
    struct req *r = *con_cls;
    if (!r) return;
    *con_cls = NULL;
    uint64_t micros = now_us() - r->t0;
    unsigned status = r->state == RS_RESPONDED ? r->status : 0;
    if (status) {
        metrics_record(r->route, status, micros, r->questions, r->tokens);
    } else if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) {
        status = 499; /* client went away (or timed out) before an answer: logged only */
    }
    if (status) access_log(r, micros, status);
    atomic_fetch_sub(&S.active, 1);
    req_put(r);
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

static int load_models(void) {
    const struct serve_config *cfg = S.cfg;
    skycmd_error *err = skycmd_error_new();
    skycmd_options *opts = skycmd_options_new();
    if (!err || !opts) {
        fprintf(stderr, "skycmd serve: out of memory\n");
        skycmd_error_free(err);
        skycmd_options_free(opts);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < cfg->n_models && rc == 0; i++) {
        skycmd_options_set_int(opts, SKYCMD_OPT_WEIGHTS, cfg->weights);
        if (cfg->max_tokens > 0) skycmd_options_set_int(opts, SKYCMD_OPT_MAX_TOKENS, cfg->max_tokens);
        skycmd_options_set_string(opts, SKYCMD_OPT_MODEL_NAME, cfg->models[i].name);
        if (cfg->verbose) skycmd_options_set_log(opts, lib_log, NULL);
        uint64_t t = now_us();
        int st = skycmd_model_open(cfg->models[i].path, opts, &S.models[i].model, err);
        if (st != SKYCMD_OK) {
            fprintf(stderr, "skycmd serve: cannot load model '%s': %s\n", cfg->models[i].path,
                    skycmd_error_message(err)[0] ? skycmd_error_message(err) : skycmd_strerror(st));
            rc = -1;
            break;
        }
        const char *nm = cfg->models[i].name ? cfg->models[i].name : skycmd_model_name(S.models[i].model);
        if (!nm || !*nm) nm = cfg->models[i].path;
        snprintf(S.models[i].name, sizeof S.models[i].name, "%s", nm);
        S.models[i].path = cfg->models[i].path;
        struct stat sb;
        struct tm tm;
        snprintf(S.models[i].date, sizeof S.models[i].date, "1970-01-01");
        if (stat(cfg->models[i].path, &sb) == 0 && gmtime_r(&sb.st_mtime, &tm))
            strftime(S.models[i].date, sizeof S.models[i].date, "%Y-%m-%d", &tm);
        for (int k = 0; k < i; k++)
            if (strcmp(S.models[k].name, S.models[i].name) == 0) {
                fprintf(stderr, "skycmd serve: two models are named '%s'; name them with --model NAME=PATH\n",
                        S.models[i].name);
                rc = -1;
            }
        S.n_models = i + 1;
        if (cfg->verbose)
            log_line("skycmd serve: loaded model '%s' from %s in %.1f ms", S.models[i].name,
                     cfg->models[i].path, (double)(now_us() - t) / 1000.0);
    }
    skycmd_options_free(opts);
    skycmd_error_free(err);
    return rc;
}

static int start_workers(void) {
    S.workers = calloc((size_t)S.cfg->workers, sizeof *S.workers);
    if (!S.workers) return -1;
    for (int i = 0; i < S.cfg->workers; i++) {
        struct worker *w = &S.workers[i];
        w->index = i;
        for (int m = 0; m < S.n_models; m++) {
            int st = skycmd_session_new(S.models[m].model, &w->sessions[m]);
            if (st == SKYCMD_OK && S.cfg->compute_threads > 0)
                st = skycmd_session_set_int(w->sessions[m], SKYCMD_OPT_THREADS, S.cfg->compute_threads);
            if (st == SKYCMD_OK && S.cfg->activations >= 0)
                st = skycmd_session_set_int(w->sessions[m], SKYCMD_OPT_ACTIVATIONS, S.cfg->activations);
            if (st != SKYCMD_OK) {
                fprintf(stderr, "skycmd serve: cannot create a session for '%s': %s\n", S.models[m].name,
                        w->sessions[m] ? skycmd_session_errmsg(w->sessions[m]) : skycmd_strerror(st));
                return -1;
            }
        }
        if (pthread_create(&w->tid, NULL, worker_main, w) != 0) {
            fprintf(stderr, "skycmd serve: cannot start worker thread %d\n", i);
            return -1;
        }
        w->started = 1;
        S.n_workers = i + 1;
    }
    return 0;
}

static void stop_workers(void) {
    pthread_mutex_lock(&S.qmu);
    S.quit = 1;
    pthread_cond_broadcast(&S.qcv);
    pthread_mutex_unlock(&S.qmu);
    if (!S.workers) return;
    for (int i = 0; i < S.cfg->workers; i++) {
        struct worker *w = &S.workers[i];
        if (w->started) pthread_join(w->tid, NULL);
        for (int m = 0; m < SERVE_MAX_MODELS; m++) skycmd_session_free(w->sessions[m]);
    }
    free(S.workers);
    S.workers = NULL;
}

static void free_models(void) {
    for (int i = 0; i < S.n_models; i++) {
        skycmd_model_free(S.models[i].model);
        S.models[i].model = NULL;
    }
    S.n_models = 0;
}

int serve_run(const struct serve_config *cfg) {
    memset(&S, 0, sizeof S);
    S.cfg = cfg;
    pthread_mutex_init(&S.qmu, NULL);
    pthread_cond_init(&S.qcv, NULL);
    pthread_mutex_init(&S.logmu, NULL);
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
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    int ipv6 = 0;
    if (resolve_host(cfg->host, cfg->port, &ipv6) != 0) {
        free(S.ring);
        return 1;
    }
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (ipv6) flags |= MHD_USE_IPv6;
    S.daemon = MHD_start_daemon(
        flags, (uint16_t)cfg->port, NULL, NULL, on_request, NULL, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&S.addr, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)cfg->max_connections, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->timeout_s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u,
        MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_END);
    if (!S.daemon) {
        fprintf(stderr, "skycmd serve: cannot listen on %s port %d: %s\n", cfg->host, cfg->port,
                errno ? strerror(errno) : "libmicrohttpd refused to start");
        free(S.ring);
        return 1;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(S.daemon, MHD_DAEMON_INFO_BIND_PORT);
    int port = di ? (int)di->port : cfg->port;
    log_line("skycmd serve: listening on http://%s%s%s:%d (loading %d model%s)", ipv6 ? "[" : "", cfg->host,
             ipv6 ? "]" : "", port, cfg->n_models, cfg->n_models == 1 ? "" : "s");

    int rc = 0;
    if (load_models() != 0 || start_workers() != 0) {
        rc = 1;
        atomic_store(&S.draining, 1);
        MHD_stop_daemon(S.daemon);
        S.daemon = NULL;
        stop_workers();
        free_models();
        free_list_release();
        free(S.ring);
        return rc;
    }
    atomic_store(&S.ready, 1);
    {
        struct sbuf names = {0};
        for (int i = 0; i < S.n_models; i++) {
            if (i) sbuf_adds(&names, ", ");
            sbuf_adds(&names, S.models[i].name);
        }
        log_line("skycmd serve: ready: %s; %d workers, queue %zu, auth %s", names.p ? names.p : "",
                 S.n_workers, S.qcap, cfg->api_key ? "on" : "off");
        sbuf_free(&names);
    }

    int sig = 0;
    while (sigwait(&set, &sig) != 0) {
    }
    log_line("skycmd serve: %s: finishing requests in flight, refusing new ones",
             sig == SIGINT ? "SIGINT" : "SIGTERM");
    atomic_store(&S.draining, 1);
    /* MHD's epoll thread may still touch the listen socket after quiescing (it removes it
     * from its epoll set asynchronously), so the socket is closed only once the daemon has
     * stopped; until then MHD accepts nothing on it. */
    MHD_socket lfd = MHD_quiesce_daemon(S.daemon);

    /* Requests in the pool are always finished. Connections still sending a body get until
     * the drain deadline; a second signal cuts that wait short. */
    uint64_t deadline = now_us() + (uint64_t)(cfg->timeout_s ? cfg->timeout_s : 10) * 1000000u;
    struct timespec tick = {0, 10 * 1000000L};
    for (;;) {
        long act = atomic_load(&S.active), pool = atomic_load(&S.in_pool);
        if (act <= 0 && pool <= 0) break;
        if (pool <= 0 && now_us() > deadline) break;
        siginfo_t si;
        if (sigtimedwait(&set, &si, &tick) > 0) {
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

#endif
