/*
 * serve.h - `skycmd serve`: the /v1/systemone HTTP server, on the public API only.
 *
 * Contract: serve_run() loads the models, listens, answers until SIGTERM/SIGINT, then
 * drains (closes the listening socket, finishes the requests it has accepted) and returns
 * the process exit status (0 after a clean shutdown, 1 when a model or the socket could not
 * be opened). SIGHUP reloads every model from its file (a file that fails keeps the old).
 *
 * Design (see docs/serve.md): libmicrohttpd runs one internal epoll thread that does all
 * socket I/O and HTTP parsing for every connection; slow or stalled clients only cost that
 * thread a connection slot (bounded by --max-connections, cut by the header and body
 * deadlines and the idle --timeout). A request
 * whose body is complete is suspended and handed to a fixed pool of worker threads through a
 * bounded queue; each worker owns one skycmd_session per loaded model (models are shared
 * read-only). When the queue is full the request is refused at once with 429 + Retry-After.
 */
#ifndef SKYCMD_SERVE_H
#define SKYCMD_SERVE_H

#include <stddef.h>
#include <stdint.h>

#define SERVE_MAX_MODELS 16

struct serve_model_spec {
    const char *name; /* NULL: the model's own name */
    const char *path;
};

enum serve_log_format { SERVE_LOG_TEXT = 0, SERVE_LOG_JSON = 1 };

#define SERVE_COMPUTE_AUTO (-1) /* --compute-threads auto (the default) */

struct serve_config {
    struct serve_model_spec models[SERVE_MAX_MODELS];
    int n_models;
    const char *host;          /* "127.0.0.1" */
    int port;                  /* 8080; 0 = any free port (printed at start) */
    int workers;               /* worker threads (one session per model each) */
    int compute_threads;       /* SKYCMD_OPT_THREADS of each session; SERVE_COMPUTE_AUTO:
                                  chosen per batch from the idle cores (workers.c) */
    char *api_key;             /* NULL: no authentication */
    size_t max_body;           /* bytes */
    size_t max_questions;      /* per request */
    unsigned timeout_s;        /* idle keep-alive timeout and queue wait limit */
    unsigned header_timeout_s; /* a request's headers complete within this (408 + close) */
    unsigned body_timeout_s;   /* its body within this after the headers (408 + close) */
    unsigned drain_timeout_s;  /* SIGTERM: longest wait for requests in flight */
    size_t max_buffered;       /* request body bytes buffered across connections (503) */
    int batch_max;             /* requests a worker answers together (1 = no batching) */
    unsigned batch_window_us;  /* how long a worker waits for a batch to fill (0 = no wait) */
    unsigned inline_max_us;    /* a lone request whose model answered alone within this many
                                * us is answered on the I/O thread (0 = always a worker) */
    unsigned poll_us;          /* after each response, keep the I/O thread's core awake this
                                * many us (warm.c; 0 = off) */
    const char *cors_origin;   /* NULL: no CORS headers */
    size_t queue;              /* queued requests waiting for a worker */
    unsigned max_connections;  /* concurrent TCP connections */
    unsigned max_connections_per_ip; /* 0: no per-address cap */
    int weights;               /* skycmd_weights */
    int activations;           /* skycmd_activations, -1 = library default */
    int64_t max_tokens;        /* 0 = model default */
    int log_format;            /* serve_log_format */
    int access_log;            /* print one line per request */
    int verbose;               /* also library log events and startup details */
    int64_t tournament_group;  /* SKYCMD_OPT_TOURNAMENT_GROUP of each session (0 = off) */
    int64_t auto_tournament_group; /* SKYCMD_OPT_AUTO_TOURNAMENT_GROUP (0 = refuse) */
    int64_t max_token_budget;  /* cap on a request's max_len / head_max_len (laya: 8192) */
    int64_t max_batch_tokens;  /* /v1/systemone/batch: tokens one forward pass may collate,
                                  states x questions x max_len (laya: 131072) */
};

int serve_run(const struct serve_config *cfg);

/* One line naming the HTTP library this server runs on, its version and whether it rejects
 * obsolete line folding (printed by `skycmd --version` and logged at start). */
const char *serve_http_library(void);

#endif
