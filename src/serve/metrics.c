/* metrics.c - see metrics.h. Prometheus text exposition format 0.0.4. */
#include "metrics.h"

#include <stdatomic.h>
#include <string.h>

#include "skycmd.h"

/* The statuses the server can send; anything else lands in "other". */
static const unsigned k_codes[] = {200, 204, 400, 401, 404, 405, 408, 413, 415, 422, 429, 431, 500, 501, 503};
#define N_CODES (sizeof k_codes / sizeof k_codes[0])

/* Latency buckets of POST /v1/systemone, in seconds (upper bounds). */
static const double k_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                  0.025,  0.05,    0.1,    0.25,  0.5,    1.0,   2.5, 10.0};
#define N_BOUNDS (sizeof k_bounds / sizeof k_bounds[0])

static _Atomic uint64_t g_req[ROUTE_COUNT][N_CODES + 1];
static _Atomic uint64_t g_hist[N_BOUNDS + 1]; /* non-cumulative; last = +Inf only */
static _Atomic uint64_t g_hist_sum_us;
static _Atomic uint64_t g_hist_count;
static _Atomic uint64_t g_questions;
static _Atomic uint64_t g_tokens;
static _Atomic uint64_t g_answered;
static _Atomic uint64_t g_refused_conns;
static _Atomic uint64_t g_timeouts;
static _Atomic uint64_t g_reloads, g_reload_failures;
static _Atomic uint64_t g_decoded[4]; /* by enum body_coding; [0] unused */
static _Atomic uint64_t g_inline;

void metrics_record_decoded(int coding) {
    if (coding > 0 && coding < 4) atomic_fetch_add_explicit(&g_decoded[coding], 1, memory_order_relaxed);
}

void metrics_record_inline(void) { atomic_fetch_add_explicit(&g_inline, 1, memory_order_relaxed); }
void metrics_refused_connection(void) { atomic_fetch_add_explicit(&g_refused_conns, 1, memory_order_relaxed); }
void metrics_record_timeout(void) { atomic_fetch_add_explicit(&g_timeouts, 1, memory_order_relaxed); }
void metrics_record_reload(int ok) {
    atomic_fetch_add_explicit(ok ? &g_reloads : &g_reload_failures, 1, memory_order_relaxed);
}

void metrics_init(void) {
    for (size_t r = 0; r < ROUTE_COUNT; r++)
        for (size_t c = 0; c <= N_CODES; c++) atomic_store(&g_req[r][c], 0);
    for (size_t b = 0; b <= N_BOUNDS; b++) atomic_store(&g_hist[b], 0);
    atomic_store(&g_hist_sum_us, 0);
    atomic_store(&g_hist_count, 0);
    atomic_store(&g_questions, 0);
    atomic_store(&g_tokens, 0);
    atomic_store(&g_answered, 0);
    atomic_store(&g_inline, 0);
    atomic_store(&g_refused_conns, 0);
    atomic_store(&g_timeouts, 0);
    atomic_store(&g_reloads, 0);
    atomic_store(&g_reload_failures, 0);
    for (int i = 0; i < 4; i++) atomic_store(&g_decoded[i], 0);
}

const char *route_label(int route) {
    switch (route) {
    case ROUTE_SYSTEMONE: return "/v1/systemone";
    case ROUTE_HEALTH: return "/health";
    case ROUTE_MODELS: return "/v1/models";
    case ROUTE_METRICS: return "/metrics";
    case ROUTE_OPENAPI: return "/openapi.json";
    case ROUTE_SYSTEMONE_BATCH: return "/v1/systemone/batch";
    default: return "other";
    }
}

void metrics_record(int route, unsigned status, uint64_t micros, size_t questions, int64_t tokens) {
    if (route < 0 || route >= ROUTE_COUNT) route = ROUTE_OTHER;
    size_t ci = N_CODES;
    for (size_t i = 0; i < N_CODES; i++)
        if (k_codes[i] == status) ci = i;
    atomic_fetch_add_explicit(&g_req[route][ci], 1, memory_order_relaxed);
    if (route != ROUTE_SYSTEMONE) return;
    double s = (double)micros / 1e6;
    size_t b = 0;
    while (b < N_BOUNDS && s > k_bounds[b]) b++;
    atomic_fetch_add_explicit(&g_hist[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_hist_sum_us, micros, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_hist_count, 1, memory_order_relaxed);
    if (status == 200) {
        atomic_fetch_add_explicit(&g_answered, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&g_questions, (uint64_t)questions, memory_order_relaxed);
        if (tokens > 0) atomic_fetch_add_explicit(&g_tokens, (uint64_t)tokens, memory_order_relaxed);
    }
}

void metrics_render(struct sbuf *o, const struct metrics_gauges *g) {
    sbuf_adds(o, "# HELP skycmd_http_requests_total HTTP requests answered, by endpoint and status.\n"
                 "# TYPE skycmd_http_requests_total counter\n");
    for (int r = 0; r < ROUTE_COUNT; r++)
        for (size_t c = 0; c <= N_CODES; c++) {
            uint64_t v = atomic_load_explicit(&g_req[r][c], memory_order_relaxed);
            if (!v) continue;
            if (c < N_CODES)
                sbuf_addf(o, "skycmd_http_requests_total{endpoint=\"%s\",code=\"%u\"} %llu\n",
                          route_label(r), k_codes[c], (unsigned long long)v);
            else
                sbuf_addf(o, "skycmd_http_requests_total{endpoint=\"%s\",code=\"other\"} %llu\n",
                          route_label(r), (unsigned long long)v);
        }
    sbuf_adds(o, "# HELP skycmd_request_duration_seconds Time from the request's first byte to "
                 "its response, POST /v1/systemone.\n"
                 "# TYPE skycmd_request_duration_seconds histogram\n");
    uint64_t cum = 0;
    for (size_t b = 0; b < N_BOUNDS; b++) {
        cum += atomic_load_explicit(&g_hist[b], memory_order_relaxed);
        sbuf_addf(o, "skycmd_request_duration_seconds_bucket{le=\"%g\"} %llu\n", k_bounds[b],
                  (unsigned long long)cum);
    }
    cum += atomic_load_explicit(&g_hist[N_BOUNDS], memory_order_relaxed);
    sbuf_addf(o, "skycmd_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
    sbuf_addf(o, "skycmd_request_duration_seconds_sum %.6f\n",
              (double)atomic_load_explicit(&g_hist_sum_us, memory_order_relaxed) / 1e6);
    sbuf_addf(o, "skycmd_request_duration_seconds_count %llu\n",
              (unsigned long long)atomic_load_explicit(&g_hist_count, memory_order_relaxed));
    sbuf_addf(o,
              "# HELP skycmd_decisions_total Requests answered with 200.\n"
              "# TYPE skycmd_decisions_total counter\nskycmd_decisions_total %llu\n"
              "# HELP skycmd_questions_total Questions answered.\n"
              "# TYPE skycmd_questions_total counter\nskycmd_questions_total %llu\n"
              "# HELP skycmd_input_tokens_total Prompt tokens evaluated (usage.input_tokens).\n"
              "# TYPE skycmd_input_tokens_total counter\nskycmd_input_tokens_total %llu\n"
              "# HELP skycmd_inline_answers_total POST /v1/systemone requests answered on the "
              "I/O thread (alone and small), not by a worker.\n"
              "# TYPE skycmd_inline_answers_total counter\nskycmd_inline_answers_total %llu\n",
              (unsigned long long)atomic_load_explicit(&g_answered, memory_order_relaxed),
              (unsigned long long)atomic_load_explicit(&g_questions, memory_order_relaxed),
              (unsigned long long)atomic_load_explicit(&g_tokens, memory_order_relaxed),
              (unsigned long long)atomic_load_explicit(&g_inline, memory_order_relaxed));
    sbuf_addf(o,
              "# HELP skycmd_queue_depth Requests waiting for a worker.\n"
              "# TYPE skycmd_queue_depth gauge\nskycmd_queue_depth %zu\n"
              "# HELP skycmd_queue_capacity Requests that may wait before 429.\n"
              "# TYPE skycmd_queue_capacity gauge\nskycmd_queue_capacity %zu\n"
              "# HELP skycmd_workers Worker threads.\n"
              "# TYPE skycmd_workers gauge\nskycmd_workers %d\n"
              "# HELP skycmd_workers_busy Workers answering a request now.\n"
              "# TYPE skycmd_workers_busy gauge\nskycmd_workers_busy %d\n"
              "# HELP skycmd_http_connections Open HTTP connections.\n"
              "# TYPE skycmd_http_connections gauge\nskycmd_http_connections %u\n"
              "# HELP skycmd_models_loaded Models loaded.\n"
              "# TYPE skycmd_models_loaded gauge\nskycmd_models_loaded %d\n"
              "# HELP skycmd_ready 1 when the models are loaded and requests are accepted.\n"
              "# TYPE skycmd_ready gauge\nskycmd_ready %d\n"
              "# HELP skycmd_draining 1 while shutting down.\n"
              "# TYPE skycmd_draining gauge\nskycmd_draining %d\n",
              g->queue_depth, g->queue_capacity, g->workers, g->workers_busy, g->connections,
              g->models, g->ready, g->draining);
    sbuf_addf(o,
              "# HELP skycmd_connections_refused_total Connections closed at once: --max-connections open.\n"
              "# TYPE skycmd_connections_refused_total counter\nskycmd_connections_refused_total %llu\n"
              "# HELP skycmd_request_timeouts_total Connections cut with 408 by the header or body deadline.\n"
              "# TYPE skycmd_request_timeouts_total counter\nskycmd_request_timeouts_total %llu\n"
              "# HELP skycmd_buffered_bytes Request body bytes held in memory.\n"
              "# TYPE skycmd_buffered_bytes gauge\nskycmd_buffered_bytes %zu\n"
              "# HELP skycmd_reloads_total SIGHUP reloads, by result.\n"
              "# TYPE skycmd_reloads_total counter\nskycmd_reloads_total{result=\"ok\"} %llu\n"
              "skycmd_reloads_total{result=\"failed\"} %llu\n"
              "# HELP skycmd_decoded_bodies_total Compressed request bodies decoded, by Content-Encoding.\n"
              "# TYPE skycmd_decoded_bodies_total counter\n"
              "skycmd_decoded_bodies_total{coding=\"gzip\"} %llu\n"
              "skycmd_decoded_bodies_total{coding=\"deflate\"} %llu\n"
              "skycmd_decoded_bodies_total{coding=\"zstd\"} %llu\n",
              (unsigned long long)atomic_load(&g_refused_conns), (unsigned long long)atomic_load(&g_timeouts),
              g->buffered_bytes, (unsigned long long)atomic_load(&g_reloads),
              (unsigned long long)atomic_load(&g_reload_failures), (unsigned long long)atomic_load(&g_decoded[1]),
              (unsigned long long)atomic_load(&g_decoded[2]), (unsigned long long)atomic_load(&g_decoded[3]));
    sbuf_addf(o, "# HELP skycmd_build_info Library version.\n# TYPE skycmd_build_info gauge\n"
                 "skycmd_build_info{version=\"%s\"} 1\n",
              skycmd_version_string());
}
