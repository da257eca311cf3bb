/*
 * metrics.h - the server's counters and their Prometheus text rendering (GET /metrics).
 * All counters are lock-free atomics: any thread may record, any thread may render.
 */
#ifndef SKYCMD_SERVE_METRICS_H
#define SKYCMD_SERVE_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "serve_util.h"

enum serve_route {
    ROUTE_SYSTEMONE = 0,
    ROUTE_HEALTH = 1,
    ROUTE_MODELS = 2,
    ROUTE_METRICS = 3,
    ROUTE_OPENAPI = 4,
    ROUTE_OTHER = 5,
    ROUTE_SYSTEMONE_BATCH = 6,
    ROUTE_COUNT = 7
};

struct metrics_gauges {
    size_t queue_depth, queue_capacity;
    int workers, workers_busy;
    unsigned connections;
    int models, ready, draining;
    size_t buffered_bytes;
};

void metrics_init(void);
/* One finished request: its route, HTTP status, duration, questions and input tokens. */
void metrics_record(int route, unsigned status, uint64_t micros, size_t questions, int64_t tokens);
void metrics_record_inline(void); /* a request answered on the epoll thread (workers.c) */
void metrics_refused_connection(void);
void metrics_record_timeout(void);
void metrics_record_reload(int ok);
void metrics_record_decoded(int coding); /* a body decoded in full (enum body_coding) */
void metrics_render(struct sbuf *out, const struct metrics_gauges *g);
const char *route_label(int route);

#endif
