/*
 * serve_internal.h - what the parts of `skycmd serve` share (libmicrohttpd builds only).
 *
 * The server is split by responsibility; each file states its contract at its top:
 *   server.c   setup, signals, logging, the drain: serve_run()
 *   http.c     HTTP framing and limits: request contexts, header checks, body collection,
 *              sending results (runs on libmicrohttpd's epoll thread only)
 *   routes.c   routes and endpoints: routing, auth, the error envelope, the GET endpoints,
 *              turning a body into a decision request and a response into a result
 *   workers.c  the worker pool: the bounded queue, batching, suspend/resume hand-off
 *   models.c   the model registry: loading (on server.c's loader thread), lookup by name,
 *              freeing
 *   warm.c     --poll-us: the I/O thread's core kept from halting after each response
 * Threads: a struct req belongs to one thread at a time (the epoll thread until queued, a
 * worker until it resumes the connection, then the epoll thread again; a small request
 * alone is answered on the epoll thread itself, workers.c answer_inline).
 */
#ifndef SKYCMD_SERVE_INTERNAL_H
#define SKYCMD_SERVE_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#include "decode.h"
#include "metrics.h"
#include "serve.h"
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
    size_t buffered; /* body bytes counted against --max-buffered */
    int coding;      /* Content-Encoding (decode.h) */
    int preflight;   /* a CORS preflight (OPTIONS with --cors-origin): 204 */
    unsigned nth;    /* 1 for its connection's first request, 2 for the next, ... */
    struct body_decoder *dec;
    int64_t max_len, head_max_len; /* the body's laya budgets (batch.c); 0 = the model's */
};

/* One opened model file, shared read-only by the sessions of every worker. Refcounted: held
 * by each model_set that lists it (a reload that fails for this file lists it again). */
struct loaded_model {
    _Atomic int refs;
    skycmd_model *model;
    char name[MODEL_NAME_MAX];
    const char *path;
    char date[16]; /* the file's modification date, YYYY-MM-DD (/v1/models release_date) */
    uint64_t generation; /* the reload that opened it */
    /* compute time x threads of its last request answered alone (0 = none yet): whether
     * the epoll thread may answer it inline (workers.c, answer_inline) */
    _Atomic uint64_t lone_answer_us;
};

/* The models served together, switched as a whole by a reload. Held by S.current and by
 * every worker whose sessions were made from it; freed with the last holder. */
struct model_set {
    int refs; /* under S.setmu */
    uint64_t generation;
    int n;
    struct loaded_model *m[SERVE_MAX_MODELS];
};

struct worker {
    pthread_t tid;
    int index;
    int started;
    struct model_set *set; /* the set its sessions belong to (a reference) */
    skycmd_session *sessions[SERVE_MAX_MODELS];
    int threads_set;       /* --compute-threads auto: SKYCMD_OPT_THREADS last set, 0 = none */
    uint64_t last_work_us; /* its last batch's compute time x its threads (0 = none yet) */
};

struct server {
    const struct serve_config *cfg;
    struct MHD_Daemon *daemon;
    pthread_mutex_t setmu;
    struct model_set *current; /* under setmu */
    _Atomic uint64_t generation; /* current->generation, readable without the lock */
    struct worker *workers;
    int n_workers;

    pthread_mutex_t qmu;
    pthread_cond_t qcv;
    struct req **ring;
    size_t qcap, qhead, qlen;
    int quit;

    _Atomic int ready;
    _Atomic int draining;
    _Atomic int load_cancel; /* a load in progress should stop (its progress callback says so) */
    _Atomic int loading;     /* the index of the model being opened (server.c logs it) */
    _Atomic int busy;      /* workers answering (changed under qmu) */
    int cores;             /* --compute-threads auto: the cores this process may run on */
    _Atomic long active;   /* requests started and not completed */
    _Atomic uint64_t overlap_us; /* now_us() when a request started while another was in
                                  * flight (--compute-threads auto: not alone lately) */
    _Atomic long in_pool;  /* requests queued or in a worker */
    _Atomic uint64_t rid_counter;
    uint32_t rid_boot;

    struct req *free_list; /* epoll thread only */
    const struct req *refusing; /* epoll thread only: the request conn_phase(CONN_REFUSE) answers */
    pthread_mutex_t logmu;
    struct sockaddr_storage addr;
};

extern struct server S;

/* conns.c: admission, deadlines, the buffered-bytes cap */
enum conn_phase { CONN_HEADERS = 0, CONN_BODY = 1, CONN_BUSY = 2, CONN_IDLE = 3,
                  /* not a phase: write S.refusing's error straight to the socket with
                   * Connection: close and end the connection there (http.c refuse_mid_body) */
                  CONN_REFUSE = 4 };
enum MHD_Result conn_admit(void *cls, const struct sockaddr *addr, socklen_t addrlen);
void conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                 enum MHD_ConnectionNotificationCode code);
int conn_phase(struct MHD_Connection *c, int phase); /* -1: the reaper cut it */
unsigned conn_open_count(void);
unsigned conn_request_started(struct MHD_Connection *c); /* 1 for a connection's first request */
unsigned conn_arriving(void); /* connections whose next request has begun to arrive */
int conn_others_active(struct MHD_Connection *c); /* another connection has a request coming */
int buffered_take(size_t n); /* 0 taken, -1 over --max-buffered */
void buffered_give(size_t n);
size_t buffered_now(void);
int conn_reaper_start(void);
void conn_reaper_stop(void);

/* warm.c: --poll-us, the I/O thread's core kept awake after each response */
int warm_start(void);
void warm_after_response(void); /* epoll thread */
void warm_stop(void);

/* server.c: logging */
void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void access_log(const struct req *r, uint64_t micros, unsigned status);
void lib_log(void *ud, int level, const char *msg);

/* http.c: framing, contexts, results (epoll thread) */
enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                           const char *version, const char *upload_data, size_t *upload_data_size,
                           void **con_cls);
void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe);
enum MHD_Result send_result(struct req *r);
void free_list_release(void);
size_t discard_max(void);

/* routes.c: routing, auth, envelopes, endpoints, request <-> decision */
void set_error(struct req *r, unsigned status, const char *msg);
void set_errorf(struct req *r, unsigned status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void set_json(struct req *r, unsigned status, const char *json, size_t n);
/* 1 when r's result is decided by its headers (an error), 0 when it proceeds */
int check_headers(struct req *r, struct MHD_Connection *c, const char *url, const char *method);
void do_health(struct req *r);
void do_models(struct req *r);
void do_metrics(struct req *r);
void do_openapi(struct req *r); /* docs/openapi.json, embedded at build time */
skycmd_request *prepare(struct req *r, const struct model_set *set, int *mi);
void finish(struct req *r, int st, const char *errmsg, skycmd_response *resp);

/* batch.c: laya serve's request controls and POST /v1/systemone/batch (on a worker) */
int read_budgets(struct req *r, const char *body, size_t len); /* 0, or 1 with r's 422 */
void answer_batch(struct req *r, const struct model_set *set, skycmd_session *const *sessions);

/* workers.c: the pool */
int enqueue(struct req *r); /* 0 queued (r suspended), -1 queue full */
int answer_inline(struct req *r); /* 1 answered on the calling thread (RS_DONE), 0 not */
size_t queue_depth(void);
int start_workers(void);
void stop_workers(void);

/* models.c: the registry */
int find_model(const struct model_set *set, const char *name);
void unknown_model(struct req *r, const struct model_set *set, const char *name);
int load_models(void);   /* at start: every file must load; 0 or -1 */
int reload_models(void); /* SIGHUP: returns the number of files that failed (kept) */
struct model_set *models_acquire(void); /* the current set, referenced */
void models_release(struct model_set *set);
void free_models(void);  /* drops the current set (after the workers are gone) */
void workers_wake(void); /* workers.c: let idle workers move to a new set */

#endif
