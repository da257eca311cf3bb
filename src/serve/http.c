/*
 * http.c - HTTP framing and limits of `skycmd serve`: libmicrohttpd's access handler.
 *
 * Contract: on_request() is libmicrohttpd's handler and on_completed() its completion
 * callback; both run on the epoll thread only. A request's context (struct req) comes from a
 * free list owned by that thread. The headers are checked once (check_headers, routes.c);
 * the body is collected up to --max-body (413 past it, the rest read and dropped up to
 * discard_max(), then the connection is closed); a complete POST /v1/systemone is handed to
 * the pool (enqueue, workers.c) and its result sent when the worker resumes the connection.
 */
#define _GNU_SOURCE
#include "serve.h"

#ifdef SKYCMD_HAVE_MHD

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve_internal.h"

enum MHD_Result send_result(struct req *r) {
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

void free_list_release(void) {
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

/* How many body bytes are read and dropped after an early error before the connection is
 * cut instead: enough for ordinary over-limit bodies, bounded against endless streams. */
size_t discard_max(void) {
    size_t m = S.cfg->max_body > SIZE_MAX / 4 ? SIZE_MAX : S.cfg->max_body * 4;
    if (m < 8u * 1024u * 1024u) m = 8u * 1024u * 1024u;
    if (m > 64u * 1024u * 1024u) m = 64u * 1024u * 1024u;
    return m;
}
enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
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

void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
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


#endif /* SKYCMD_HAVE_MHD */
