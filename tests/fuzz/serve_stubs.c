/*
 * serve_stubs.c - the server around http.c/routes.c/batch.c for the serve fuzz targets
 * (serve_stubs.h): libmicrohttpd's functions over a fake connection, the global server,
 * the configuration variants, a pool that answers on the calling thread, and the
 * --max-buffered account (checked to return to zero after every request).
 */
#define _GNU_SOURCE
#include "serve_stubs.h"

#include <cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct server S;
static struct serve_config g_cfg;
static struct loaded_model g_pico = {.name = "pico"}, g_nano = {.name = "nano"};
struct model_set fz_models = {.refs = 1, .generation = 1, .n = 2, .m = {&g_pico, &g_nano}};
skycmd_session *fz_sessions[SERVE_MAX_MODELS];
static size_t g_buffered;

void fz_serve_setup(unsigned variant) {
    memset(&g_cfg, 0, sizeof g_cfg);
    g_cfg.n_models = 2;
    g_cfg.workers = 1;
    g_cfg.api_key = (variant & FZ_API_KEY) ? "fuzz-key" : NULL;
    g_cfg.cors_origin = (variant & FZ_CORS) ? "https://example.org" : NULL;
    g_cfg.max_body = (variant & FZ_SMALL) ? 256 : 1u << 20;
    g_cfg.max_buffered = (variant & FZ_SMALL) ? 1024 : 64u << 20;
    g_cfg.max_questions = 16;
    g_cfg.timeout_s = 0; /* no queue-wait limit: the answer does not depend on the clock */
    g_cfg.queue = 4;
    g_cfg.batch_max = 1;
    g_cfg.max_token_budget = 8192;
    g_cfg.max_batch_tokens = 131072;
    S.cfg = &g_cfg;
    S.qcap = 4;
    S.n_workers = 1;
    S.current = &fz_models;
    atomic_store(&S.ready, (variant & FZ_LOADING) ? 0 : 1);
    atomic_store(&S.draining, (variant & FZ_DRAINING) ? 1 : 0);
    static int metrics_ready;
    if (!metrics_ready) {
        metrics_init();
        metrics_ready = 1;
    }
}

/* ---------------------------------------------------------------- the rest of the server */

void log_line(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char buf[256];
    vsnprintf(buf, sizeof buf, fmt, ap); /* formatted (so that a bad format is seen), dropped */
    va_end(ap);
}
void access_log(const struct req *r, uint64_t micros, unsigned status) {
    (void)r;
    (void)micros;
    (void)status;
}
void lib_log(void *ud, int level, const char *msg) {
    (void)ud;
    (void)level;
    (void)msg;
}
int conn_phase(struct MHD_Connection *c, int phase) {
    (void)c;
    (void)phase;
    return 0;
}
unsigned conn_open_count(void) { return 1; }
unsigned conn_arriving(void) { return 0; }
int conn_others_active(struct MHD_Connection *c) {
    (void)c;
    return 0;
}
int buffered_take(size_t n) {
    if (n > S.cfg->max_buffered || g_buffered > S.cfg->max_buffered - n) return -1;
    g_buffered += n;
    return 0;
}
void buffered_give(size_t n) {
    if (n > g_buffered) __builtin_trap(); /* more given back than taken */
    g_buffered -= n;
}
size_t buffered_now(void) { return g_buffered; }
void warm_after_response(void) {}
void workers_wake(void) {}
size_t queue_depth(void) { return 0; }
int enqueue(struct req *r) {
    (void)r;
    return -1;
}
/* The pool, on the calling thread: what a worker does with a request, with no session (the
 * decision itself fails with SKYCMD_E_MISUSE: only the HTTP side is under test). */
int answer_inline(struct req *r) {
    r->t_enq = now_us();
    if (r->route == ROUTE_SYSTEMONE_BATCH) {
        answer_batch(r, &fz_models, fz_sessions);
    } else {
        int mi = 0;
        skycmd_request *q = prepare(r, &fz_models, &mi);
        if (q) {
            if (mi < 0 || mi >= fz_models.n) __builtin_trap();
            skycmd_response *resp = NULL;
            int st = skycmd_decide(fz_sessions[mi], q, &resp);
            finish(r, st, skycmd_session_errmsg(fz_sessions[mi]), resp);
            skycmd_request_free(q);
        }
    }
    r->state = RS_DONE;
    return 1;
}
const unsigned char serve_openapi_json[] = "{\"openapi\":\"3.1.0\"}";
const size_t serve_openapi_json_len = sizeof serve_openapi_json - 1;

/* ---------------------------------------------------------------- libmicrohttpd ------- */

struct fz_header {
    char *key, *value;
    size_t key_size, value_size;
};

struct MHD_Connection {
    struct fz_header *h;
    size_t n, cap;
    int nth;
    int responses;
    unsigned status;
    char *body;
    size_t body_len;
    char ctype[128];
};

struct MHD_Response {
    char *body;
    size_t len;
    char ctype[128];
};

struct MHD_Connection *fz_conn_new(void) { return calloc(1, sizeof(struct MHD_Connection)); }

void fz_conn_free(struct MHD_Connection *c) {
    if (!c) return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->h[i].key);
        free(c->h[i].value);
    }
    free(c->h);
    free(c->body);
    free(c);
}

static char *dup_n(const char *s, size_t n) {
    char *p = malloc(n + 1);
    if (!p) abort();
    if (n) memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void fz_conn_add_header(struct MHD_Connection *c, const char *key, size_t key_size, const char *value,
                        size_t value_size) {
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 8;
        struct fz_header *nh = realloc(c->h, nc * sizeof *nh);
        if (!nh) abort();
        c->h = nh;
        c->cap = nc;
    }
    c->h[c->n++] = (struct fz_header){dup_n(key, key_size), dup_n(value, value_size), key_size, value_size};
}

int fz_conn_nth(const struct MHD_Connection *c) { return c->nth; }
int fz_conn_responses(const struct MHD_Connection *c) { return c->responses; }
unsigned fz_conn_status(const struct MHD_Connection *c) { return c->status; }
const char *fz_conn_body(const struct MHD_Connection *c, size_t *len) {
    *len = c->body_len;
    return c->body;
}
const char *fz_conn_content_type(const struct MHD_Connection *c) { return c->ctype; }

unsigned conn_request_started(struct MHD_Connection *c) { return (unsigned)++c->nth; }

int MHD_get_connection_values_n(struct MHD_Connection *connection, enum MHD_ValueKind kind,
                                MHD_KeyValueIteratorN iterator, void *iterator_cls) {
    if (kind != MHD_HEADER_KIND) return 0;
    int n = 0;
    for (size_t i = 0; i < connection->n; i++) {
        n++;
        if (iterator && iterator(iterator_cls, kind, connection->h[i].key, connection->h[i].key_size,
                                 connection->h[i].value, connection->h[i].value_size) != MHD_YES)
            break;
    }
    return n;
}

const char *MHD_lookup_connection_value(struct MHD_Connection *connection, enum MHD_ValueKind kind,
                                        const char *key) {
    if (kind != MHD_HEADER_KIND || !key) return NULL;
    for (size_t i = 0; i < connection->n; i++)
        if (strcasecmp(connection->h[i].key, key) == 0) return connection->h[i].value;
    return NULL;
}

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer, enum MHD_ResponseMemoryMode mode) {
    (void)mode;
    struct MHD_Response *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    if (size && !buffer) __builtin_trap();
    r->body = dup_n(buffer, size);
    r->len = size;
    return r;
}

enum MHD_Result MHD_add_response_header(struct MHD_Response *response, const char *header, const char *content) {
    if (!response || !header || !content || !header[0]) __builtin_trap();
    /* a header the server writes must not split the response (libmicrohttpd refuses them) */
    if (strpbrk(header, "\r\n:") || strpbrk(content, "\r\n")) __builtin_trap();
    if (strcasecmp(header, "Content-Type") == 0) snprintf(response->ctype, sizeof response->ctype, "%s", content);
    return MHD_YES;
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *connection, unsigned int status_code,
                                   struct MHD_Response *response) {
    if (!connection || !response) __builtin_trap();
    if (connection->responses++) __builtin_trap(); /* one response per request */
    connection->status = status_code;
    free(connection->body);
    connection->body = dup_n(response->body, response->len);
    connection->body_len = response->len;
    memcpy(connection->ctype, response->ctype, sizeof connection->ctype);
    return MHD_YES;
}

void MHD_destroy_response(struct MHD_Response *response) {
    if (!response) return;
    free(response->body);
    free(response);
}

const union MHD_DaemonInfo *MHD_get_daemon_info(struct MHD_Daemon *daemon, enum MHD_DaemonInfoType info_type, ...) {
    (void)daemon;
    (void)info_type;
    return NULL;
}

void fz_check_result(unsigned status, const char *ctype, const char *body, size_t len) {
    if (status < 200 || status > 599) __builtin_trap();
    if (status != 204 && ctype && strncmp(ctype, "application/json", 16) == 0) {
        cJSON *j = cJSON_ParseWithLength(body ? body : "", len);
        if (!j) __builtin_trap(); /* a JSON answer that is not JSON */
        if (status >= 400) {
            const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
            const cJSON *code = e ? cJSON_GetObjectItemCaseSensitive(e, "code") : NULL;
            const cJSON *msg = e ? cJSON_GetObjectItemCaseSensitive(e, "message") : NULL;
            if (!cJSON_IsNumber(code) || (unsigned)code->valuedouble != status || !cJSON_IsString(msg))
                __builtin_trap(); /* not llama-server's envelope */
        }
        cJSON_Delete(j);
    }
}
