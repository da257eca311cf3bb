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
#include <strings.h>

#include "serve_internal.h"

enum MHD_Result send_result(struct req *r) {
    if (r->out.oom) set_error(r, 500, "out of memory");
    if (r->out.oom) {
        /* even the error did not fit: a static body */
        static const char k_oom[] =
            "{\"error\":{\"code\":500,\"message\":\"out of memory\",\"type\":\"server_error\"},"
            "\"detail\":{\"error_type\":\"server_error\",\"message\":\"out of memory\"}}";
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
        conn_phase(r->conn, CONN_BUSY);
        return ok;
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(r->out.len, r->out.p ? r->out.p : (void *)"", MHD_RESPMEM_MUST_COPY);
    if (!resp) return MHD_NO;
    if (r->status != 204) MHD_add_response_header(resp, "Content-Type", r->ctype ? r->ctype : "application/json");
    MHD_add_response_header(resp, "x-request-id", r->rid);
    MHD_add_response_header(resp, "x-typesafe-request-id", r->rid);
    if (S.cfg->cors_origin) {
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", S.cfg->cors_origin);
        MHD_add_response_header(resp, "Vary", "Origin");
        if (r->preflight) {
            MHD_add_response_header(resp, "Access-Control-Allow-Methods", r->allow ? r->allow : "GET, HEAD, POST");
            MHD_add_response_header(resp, "Access-Control-Allow-Headers",
                                    "Authorization, Content-Type, Content-Encoding, X-Request-Id");
            MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
        } else {
            MHD_add_response_header(resp, "Access-Control-Expose-Headers",
                                    "x-request-id, x-typesafe-request-id, Retry-After");
        }
    }
    if (r->retry_after > 0) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", r->retry_after);
        MHD_add_response_header(resp, "Retry-After", ra);
    }
    if (r->status == 401) MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
    if ((r->status == 405 || r->preflight) && r->allow) MHD_add_response_header(resp, "Allow", r->allow);
    if (r->close_conn || atomic_load(&S.draining)) MHD_add_response_header(resp, "Connection", "close");
    enum MHD_Result ok = MHD_queue_response(r->conn, r->status, resp);
    MHD_destroy_response(resp);
    r->state = RS_RESPONDED;
    conn_phase(r->conn, CONN_BUSY);
    return ok;
}

/* libmicrohttpd 1.0 takes a response only before a body or after all of it
 * (MHD_queue_response refuses one while the body arrives, and the handler's MHD_NO then
 * closes the connection without a word: curl saw "Empty reply" or "Broken pipe" instead of
 * its 413). A refusal in the middle of a body is therefore written straight to the socket
 * by conns.c, with Connection: close (libmicrohttpd writes nothing while a body arrives),
 * and the connection ends; conns.c keeps reading and dropping what the client still sends
 * for a moment, so that its close does not reset the connection before the client has read
 * the answer. The status is logged and counted as if sent. */
static enum MHD_Result refuse_mid_body(struct req *r) {
    r->close_conn = 1;
    S.refusing = r;
    conn_phase(r->conn, CONN_REFUSE);
    S.refusing = NULL;
    r->state = RS_RESPONDED;
    return MHD_NO;
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
    r->buffered = 0;
    r->coding = CODING_IDENTITY;
    r->dec = NULL;
    r->preflight = 0;
    r->nth = 0;
    return r;
}

static void shrink(struct sbuf *b) {
    if (b->cap > KEEP_BUF_MAX) sbuf_free(b);
}

static void req_put(struct req *r) {
    decoder_free(r->dec);
    r->dec = NULL;
    buffered_give(r->buffered);
    r->buffered = 0;
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
/* ---------------------------------------------------------------- framing --------- */

/* What the header scan found. libmicrohttpd 0.9.75 parses the message; these are the
 * ambiguities of RFC 9112 it lets through, detected from the headers it hands us (see
 * docs/serve.md, "Request framing", for what it does with each and what cannot be seen). */
struct framing_scan {
    int n_content_length, n_transfer_encoding;
    int n_host;           /* RFC 9112 §3.2: more than one Host line is a 400 */
    int te_not_chunked;   /* a Transfer-Encoding other than exactly "chunked" */
    int cl_not_digits;    /* a Content-Length that is not 1*DIGIT */
    int bad_name;         /* a field name that is not a token: whitespace before the colon */
    int folded_framing;   /* a name that starts with Content-Length/Transfer-Encoding and goes on */
    int nul;
};

static int is_tchar(unsigned char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

static int name_starts(const char *key, size_t n, const char *name) {
    size_t m = strlen(name);
    return n >= m && strncasecmp(key, name, m) == 0;
}

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
                                   const char *value, size_t value_size) {
    (void)kind;
    struct framing_scan *f = cls;
    if (!key) return MHD_YES;
    if (memchr(key, 0, key_size) || (value && memchr(value, 0, value_size))) f->nul = 1;
    int token = key_size > 0;
    for (size_t i = 0; i < key_size; i++) token = token && is_tchar((unsigned char)key[i]);
    if (!token) f->bad_name = 1;
    const char *v = value ? value : "";
    if (key_size == 4 && strncasecmp(key, "Host", 4) == 0) f->n_host++;
    if (key_size == 14 && strncasecmp(key, "Content-Length", 14) == 0) {
        f->n_content_length++;
        int digits = value_size > 0;
        for (size_t i = 0; i < value_size; i++) digits = digits && v[i] >= '0' && v[i] <= '9';
        if (!digits) f->cl_not_digits = 1;
    } else if (key_size == 17 && strncasecmp(key, "Transfer-Encoding", 17) == 0) {
        f->n_transfer_encoding++;
        if (value_size != 7 || strncasecmp(v, "chunked", 7) != 0) f->te_not_chunked = 1;
    } else if (name_starts(key, key_size, "Content-Length") || name_starts(key, key_size, "Transfer-Encoding")) {
        /* What libmicrohttpd 0.9.75 makes of an obsolete line folding of these headers
         * ("Content-Length:\r\n 13" arrives as a field named "Content-Length13"). */
        f->folded_framing = 1;
    }
    return MHD_YES;
}

/* RFC 9112 §6.3: a message whose length is ambiguous must be refused and the connection
 * closed, since a proxy in front may have framed it otherwise. Returns 1 with r's 400 set. */
static int framing_error(struct req *r, struct MHD_Connection *c) {
    struct framing_scan f = {0};
    MHD_get_connection_values_n(c, MHD_HEADER_KIND, scan_header, &f);
    const char *why = NULL;
    if (f.nul) why = "a request header holds a NUL byte";
    else if (f.bad_name) why = "a header field name holds whitespace or a character not allowed in a token (RFC 9112 §5.1)";
    else if (f.folded_framing) why = "a Content-Length or Transfer-Encoding header is malformed (obsolete line folding?)";
    else if (f.n_content_length > 1) why = "several Content-Length headers (RFC 9112 §6.3)";
    else if (f.n_content_length && f.cl_not_digits) why = "Content-Length is not a decimal number";
    else if (f.n_transfer_encoding && f.n_content_length) why = "both Content-Length and Transfer-Encoding (RFC 9112 §6.3)";
    else if (f.n_transfer_encoding > 1 || f.te_not_chunked) why = "the only Transfer-Encoding accepted is exactly \"chunked\"";
    else if (f.n_host > 1) why = "several Host headers (RFC 9112 §3.2)";
    if (!why) return 0;
    set_error(r, 400, why);
    r->close_conn = 1;
    return 1;
}

/* RFC 9112 §3.2.2: a server must accept a request target in absolute-form
 * ("POST http://host/v1/systemone") and route it by its path, as the origin-form; the
 * authority in it replaces Host, which nothing here uses. "http://host" alone is "/". */
static const char *origin_form(const char *url) {
    size_t skip = strncasecmp(url, "http://", 7) == 0 ? 7 : strncasecmp(url, "https://", 8) == 0 ? 8 : 0;
    if (!skip) return url;
    const char *path = strchr(url + skip, '/');
    return path ? path : "/";
}

enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
    (void)cls;
    (void)version;
    struct req *r = *con_cls;
    /* Headers are complete from the first call on: the body deadline runs until the
     * request is answered or queued. -1: the reaper already cut the connection (408). */
    if ((!r || r->state == RS_RECEIVING) && conn_phase(c, CONN_BODY) < 0) return MHD_NO;
    if (!r) {
        r = req_get();
        if (!r) return MHD_NO; /* out of memory: MHD closes the connection */
        *con_cls = r;
        r->conn = c;
        if (atomic_fetch_add(&S.active, 1) > 0) atomic_store(&S.overlap_us, now_us());
        snprintf(r->method, sizeof r->method, "%.7s", method);
        url = origin_form(url);
        sbuf_adds(&r->path, url);
        make_rid(r, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-request-id"));
        r->nth = conn_request_started(c);
        if (framing_error(r, c)) {
            r->discard = 1;
            return send_result(r); /* before any body byte: nothing after it is read */
        }
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
            if (r->dropped > discard_max()) return refuse_mid_body(r);
            return MHD_YES;
        }
        if (n > S.cfg->max_body || r->body.len > S.cfg->max_body - n) {
            set_errorf(r, 413, "request body is over the limit of %zu bytes", S.cfg->max_body);
            r->discard = 1;
            r->dropped = r->body.len + n;
            sbuf_reset(&r->body);
            buffered_give(r->buffered);
            r->buffered = 0;
            return MHD_YES;
        }
        size_t before = r->body.len + decoder_memory(r->dec);
        if (r->coding != CODING_IDENTITY) {
            if (!r->dec) r->dec = decoder_new(r->coding, S.cfg->max_body);
            int st = r->dec ? decoder_feed(r->dec, upload_data, n, &r->body, S.cfg->max_body) : DEC_OOM;
            if (st == DEC_OVER_LIMIT || st == DEC_ERROR) {
                if (st == DEC_OVER_LIMIT)
                    set_errorf(r, 413, "the decoded (%s) request body is over the limit of %zu bytes",
                               coding_name(r->coding), S.cfg->max_body);
                else
                    set_errorf(r, 400, "the request body is not valid %s data", coding_name(r->coding));
                /* the rest of the body is read and dropped (bounded by discard_max) */
                r->discard = 1;
                r->dropped = n;
                sbuf_reset(&r->body);
                decoder_free(r->dec);
                r->dec = NULL;
                buffered_give(r->buffered);
                r->buffered = 0;
                return MHD_YES;
            }
            if (st == DEC_OOM) r->body.oom = 1;
        } else {
            sbuf_add(&r->body, upload_data, n);
        }
        /* decoded bytes and the decoder's own memory count against --max-buffered */
        size_t now = r->body.len + decoder_memory(r->dec);
        size_t grew = now > before ? now - before : 0;
        if (!r->body.oom && buffered_take(grew) != 0) {
            set_errorf(r, 503, "the server holds --max-buffered (%zu bytes) of request bodies; retry later",
                       S.cfg->max_buffered);
            r->discard = 1;
            return refuse_mid_body(r);
        }
        if (!r->body.oom) r->buffered += grew;
        if (r->body.oom) {
            set_error(r, 503, "the server is out of memory, retry later");
            r->discard = 1;
            return refuse_mid_body(r);
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
        case ROUTE_OPENAPI: do_openapi(r); return send_result(r);
        default: break;
        }
        if (!atomic_load(&S.ready)) {
            set_error(r, 503, "Loading model");
            return send_result(r);
        }
        if (r->coding != CODING_IDENTITY && (!r->dec || decoder_finish(r->dec) != DEC_OK)) {
            set_errorf(r, 400, "the %s request body is truncated", coding_name(r->coding));
            return send_result(r);
        }
        if (r->coding != CODING_IDENTITY) metrics_record_decoded(r->coding);
        if (r->body.len == 0) {
            set_error(r, 422, "request body is empty: send a JSON object with \"state\" and \"questions\"");
            return send_result(r);
        }
        if (answer_inline(r)) return send_result(r);
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
    struct req *r = *con_cls;
    conn_phase(c, CONN_IDLE);
    if (!r) return;
    *con_cls = NULL;
    uint64_t micros = now_us() - r->t0;
    unsigned status = r->state == RS_RESPONDED ? r->status : 0;
    if (status) {
        metrics_record(r->route, status, micros, r->questions, r->tokens);
    } else if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) {
        status = 499; /* client went away (or timed out) before an answer: logged only */
    }
    if (status) {
        access_log(r, micros, status);
        warm_after_response();
    }
    atomic_fetch_sub(&S.active, 1);
    req_put(r);
}


#endif /* SKYCMD_HAVE_MHD */
