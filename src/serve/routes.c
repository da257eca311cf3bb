/*
 * routes.c - routes and endpoints of `skycmd serve`.
 *
 * Contract: check_headers() decides, from a request's method, path and headers alone, which
 * route it takes or which error it gets (auth, 404/405, 413 by Content-Length, 415, drain).
 * The GET endpoints (do_health, do_models, do_metrics) fill a result on the epoll thread.
 * prepare() and finish() run on a worker: body -> skycmd_request (model choice, limits),
 * skycmd_response -> result. Errors use llama-server's envelope (set_error).
 */
#define _GNU_SOURCE
#include "serve.h"

#ifdef SKYCMD_HAVE_MHD

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "serve_internal.h"

/* ---------------------------------------------------------------- responses -------- */

static const char *error_type(unsigned status) {
    switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 405: return "method_not_allowed_error";
    case 408: return "timeout_error";
    case 413: return "request_too_large_error";
    case 415: return "invalid_request_error";
    case 422: return "unprocessable_entity_error";
    case 429: return "rate_limit_error";
    case 501: return "not_supported_error";
    case 503: return "unavailable_error";
    default: return "server_error";
    }
}

/* Where a validation message points, for Jev's detail[].loc: the library's messages start
 * `questions.<id>: "<field>" ...`, `questions.<id>: ...`, `"<field>" ...` or `malformed JSON
 * at byte N` (docs/compat.md "Errors"). An id containing ": " is cut at its first ": ". */
static void add_loc(struct sbuf *b, const char *msg) {
    sbuf_adds(b, "[\"body\"");
    const char *p = msg;
    unsigned long long at;
    int used = 0;
    if (sscanf(msg, "malformed JSON at byte %llu%n", &at, &used) >= 1 && used > 0) {
        sbuf_addf(b, ",%llu]", at);
        return;
    }
    if (strncmp(p, "questions.", 10) == 0) {
        const char *id = p + 10, *end = strstr(id, ": ");
        if (end) {
            sbuf_adds(b, ",\"questions\",");
            sbuf_add_json_str(b, id, (size_t)(end - id));
            p = end + 2;
        }
    }
    if (*p == '"') {
        const char *end = strchr(p + 1, '"');
        if (end && end > p + 1) {
            sbuf_add(b, ",", 1);
            sbuf_add_json_str(b, p + 1, (size_t)(end - p - 1));
        }
    }
    sbuf_add(b, "]", 1);
}

/* Fill r's result with an error body that clients of both contracts parse: llama-server's
 * {"error": {"code", "message", "type"}} and Jev's "detail" beside it, a list of
 * {"loc", "msg", "type"} for a 422 (FastAPI's validation shape) and {"error_type",
 * "message"} otherwise (docs/serve.md "Errors"). */
void set_error(struct req *r, unsigned status, const char *msg) {
    const char *type = error_type(status);
    r->status = status;
    r->ctype = "application/json";
    sbuf_reset(&r->out);
    sbuf_addf(&r->out, "{\"error\":{\"code\":%u,\"message\":", status);
    sbuf_add_json_str(&r->out, msg, strlen(msg));
    sbuf_adds(&r->out, ",\"type\":");
    sbuf_add_json_str(&r->out, type, strlen(type));
    if (status == 422) {
        const char *vtype = strncmp(msg, "malformed JSON", 14) == 0 ? "json_invalid"
                            : strstr(msg, "must be provided")       ? "missing"
                                                                    : "value_error";
        sbuf_adds(&r->out, "},\"detail\":[{\"loc\":");
        add_loc(&r->out, msg);
        sbuf_adds(&r->out, ",\"msg\":");
        sbuf_add_json_str(&r->out, msg, strlen(msg));
        sbuf_addf(&r->out, ",\"type\":\"%s\"}]}", vtype);
    } else {
        sbuf_adds(&r->out, "},\"detail\":{\"error_type\":");
        sbuf_add_json_str(&r->out, type, strlen(type));
        sbuf_adds(&r->out, ",\"message\":");
        sbuf_add_json_str(&r->out, msg, strlen(msg));
        sbuf_adds(&r->out, "}}");
    }
    if (status == 429 || status == 503) r->retry_after = 1;
}

void set_errorf(struct req *r, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void set_errorf(struct req *r, unsigned status, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    set_error(r, status, msg);
}

void set_json(struct req *r, unsigned status, const char *json, size_t n) {
    r->status = status;
    r->ctype = "application/json";
    sbuf_reset(&r->out);
    sbuf_add(&r->out, json, n);
}

/* Send r's result. Runs on the epoll thread, inside the access handler. */

static void status_error(struct req *r, int st, const char *msg, const char *what) {
    switch (st) {
    case SKYCMD_E_JSON: set_error(r, 422, msg && *msg ? msg : "malformed JSON"); break;
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
skycmd_request *prepare(struct req *r, const struct model_set *set, int *mi) {
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
        *mi = find_model(set, mname);
        if (*mi < 0) {
            unknown_model(r, set, mname);
            return NULL;
        }
        break;
    case SJ_MODEL_OTHER: set_error(r, 422, "\"model\" must be a string"); return NULL;
    case SJ_MODEL_TOO_LONG: set_error(r, 422, "\"model\" is not a loaded model name (too long)"); return NULL;
    default: break;
    }

    /* --max-questions is checked before the library parses the body: a body far over it
     * costs no parse, and the 413 names this server's limit, not the library's own cap */
    size_t q_off = 0, q_len = 0;
    if (sj_member(body, len, "questions", &q_off, &q_len)) {
        long nq = sj_object_count(body + q_off, q_len);
        if (nq > 0 && (size_t)nq > cfg->max_questions) {
            set_errorf(r, 413, "too many questions (%ld), this server accepts at most %zu per request", nq,
                       cfg->max_questions);
            return NULL;
        }
    }
    skycmd_request *q = NULL;
    int st = skycmd_request_parse(body, len, &q);
    /* laya's per-request budgets (batch.c), checked once the body is known to be JSON */
    r->max_len = r->head_max_len = 0;
    if (st != SKYCMD_E_JSON && read_budgets(r, body, len)) {
        skycmd_request_free(q);
        return NULL;
    }
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
void finish(struct req *r, int st, const char *errmsg, skycmd_response *resp) {
    if (st != SKYCMD_OK) {
        status_error(r, st, errmsg ? errmsg : skycmd_strerror(st), "decision");
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

/* ---------------------------------------------------------------- GET endpoints ---- */

void do_health(struct req *r) {
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

void do_models(struct req *r) {
    /* Two shapes side by side: OpenAI/llama-server's {"object","data":[{"id"}]} and the
     * typesafe SDK's {"models":[{"name","description","release_date"}]}. */
    r->status = 200;
    r->ctype = "application/json";
    struct sbuf *o = &r->out;
    sbuf_reset(o);
    int ready = atomic_load(&S.ready);
    struct model_set *set = ready ? models_acquire() : NULL;
    int n = set ? set->n : 0;
    sbuf_adds(o, "{\"object\":\"list\",\"data\":[");
    for (int i = 0; i < n; i++) {
        int64_t params = 0, maxtok = 0;
        skycmd_model_get_int(set->m[i]->model, "parameters", &params);
        skycmd_model_get_int(set->m[i]->model, "decision.max_tokens", &maxtok);
        if (i) sbuf_adds(o, ",");
        sbuf_adds(o, "{\"id\":");
        sbuf_add_json_str(o, set->m[i]->name, strlen(set->m[i]->name));
        sbuf_addf(o, ",\"object\":\"model\",\"owned_by\":\"skycmd\",\"default\":%s,"
                     "\"meta\":{\"n_params\":%lld,\"max_tokens\":%lld}}",
                  i == 0 ? "true" : "false", (long long)params, (long long)maxtok);
    }
    sbuf_adds(o, "],\"models\":[");
    for (int i = 0; i < n; i++) {
        if (i) sbuf_adds(o, ",");
        sbuf_adds(o, "{\"name\":");
        sbuf_add_json_str(o, set->m[i]->name, strlen(set->m[i]->name));
        sbuf_adds(o, ",\"description\":");
        char desc[MODEL_NAME_MAX + 64];
        snprintf(desc, sizeof desc, "System One decision model%s", i == 0 ? " (default)" : "");
        sbuf_add_json_str(o, desc, strlen(desc));
        sbuf_addf(o, ",\"release_date\":\"%s\"}", set->m[i]->date);
    }
    sbuf_adds(o, "]}");
    models_release(set);
}

extern const unsigned char serve_openapi_json[];
extern const size_t serve_openapi_json_len;

void do_openapi(struct req *r) {
    set_json(r, 200, (const char *)serve_openapi_json, serve_openapi_json_len);
}

void do_metrics(struct req *r) {
    struct metrics_gauges g = {0};
    g.queue_depth = queue_depth();
    g.queue_capacity = S.qcap;
    g.workers = S.n_workers;
    g.workers_busy = atomic_load(&S.busy);
    const union MHD_DaemonInfo *di =
        S.daemon ? MHD_get_daemon_info(S.daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS) : NULL;
    g.connections = di ? di->num_connections : 0;
    g.models = atomic_load(&S.ready) ? S.cfg->n_models : 0;
    g.ready = atomic_load(&S.ready);
    g.draining = atomic_load(&S.draining);
    g.buffered_bytes = buffered_now();
    r->status = 200;
    r->ctype = "text/plain; version=0.0.4; charset=utf-8";
    sbuf_reset(&r->out);
    metrics_render(&r->out, &g);
}


static int route_of(const char *url, const char **allow) {
    if (strcmp(url, "/v1/systemone") == 0) {
        *allow = "POST";
        return ROUTE_SYSTEMONE;
    }
    if (strcmp(url, "/v1/systemone/batch") == 0) {
        *allow = "POST";
        return ROUTE_SYSTEMONE_BATCH;
    }
    *allow = "GET, HEAD";
    if (strcmp(url, "/health") == 0 || strcmp(url, "/v1/health") == 0 || strcmp(url, "/healthz") == 0)
        return ROUTE_HEALTH;
    if (strcmp(url, "/openapi.json") == 0) return ROUTE_OPENAPI;
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

/* Decide what a request gets once its headers are known. Returns 1 when r's result is
 * already decided (an error), 0 when the request proceeds. */
int check_headers(struct req *r, struct MHD_Connection *c, const char *url, const char *method) {
    const char *allow = NULL;
    r->route = route_of(url, &allow);
    int is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    int is_post = strcmp(method, "POST") == 0;
    if (r->route == ROUTE_OTHER) {
        set_errorf(r, 404, "File Not Found: no endpoint %s (try POST /v1/systemone)",
                   strlen(url) > 100 ? "at this path" : url);
        return 1;
    }
    if (S.cfg->cors_origin && strcmp(method, "OPTIONS") == 0) {
        /* a CORS preflight: answered without the key (browsers send none with it) */
        r->status = 204;
        r->preflight = 1;
        r->allow = allow;
        sbuf_reset(&r->out);
        return 1;
    }
    int post_route = r->route == ROUTE_SYSTEMONE || r->route == ROUTE_SYSTEMONE_BATCH;
    if ((post_route && !is_post) || (!post_route && !is_get)) {
        r->allow = allow;
        set_errorf(r, 405, "method %s is not allowed on %s (allowed: %s)", method, url, allow);
        return 1;
    }
    if (r->route != ROUTE_HEALTH && r->route != ROUTE_OPENAPI && !authorized(c)) {
        set_error(r, 401, "Invalid API Key");
        return 1;
    }
    if (post_route) {
        /* Draining: the first request of a connection accepted before the signal was sent
         * before it (in flight); a follow-up on a kept-alive connection is refused. */
        if (atomic_load(&S.draining) && r->nth > 1) {
            set_error(r, 503, "the server is shutting down");
            r->close_conn = 1;
            return 1;
        }
        const char *ce = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
        r->coding = coding_of(ce);
        if (r->coding < 0) {
            r->coding = CODING_IDENTITY;
            set_errorf(r, 415, "Content-Encoding '%.40s' is not supported; send zstd, gzip, deflate or identity",
                       ce);
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
            if (errno == 0 && end != cl && buffered_take((size_t)v) != 0) {
                set_errorf(r, 503, "the server holds --max-buffered (%zu bytes) of request bodies; retry later",
                           S.cfg->max_buffered);
                if (v > discard_max()) r->close_conn = 1;
                return 1;
            }
            if (errno == 0 && end != cl) buffered_give((size_t)v); /* taken as it arrives */
        }
    }
    return 0;
}


#endif /* SKYCMD_HAVE_MHD */
