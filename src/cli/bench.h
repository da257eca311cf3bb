/*
 * bench.h - the three parts of `skycmd bench` (internal to the CLI):
 *   cmd_bench.c     the usage and the arguments (the shared option table) -> bench_args,
 *                   then measure and report;
 *   bench_measure.c load the model and time it through the public API -> bench_run;
 *   bench_report.c  print a bench_run as text or as one JSON document on stdout.
 * A bench_run owns the model, session and buffers of the measurement; bench_free()
 * releases them (and the temporary random model), whatever bench_measure() returned.
 */
#ifndef SKYCMD_CLI_BENCH_H
#define SKYCMD_CLI_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "skycmd.h"

typedef struct bench_args {
    const char *model_path, *preset, *save_request;
    long long seed, questions, tokens, iters, warmup, threads, peak_ms;
    double seconds;
    int type, json, single, drop_cache;
    cli_compute compute;   /* the compute flags, resolved into: */
    int weights, acts;     /* skycmd_weights; skycmd_activations or CLI_UNSET */
    long long max_tokens;  /* 0: the model's decision.max_tokens */
} bench_args;

typedef struct bench_stats {
    size_t n;
    double median, p90, p99, min, mean;
} bench_stats;

/* The three question kinds of examples/flappy-drone.json. */
enum { BENCH_CHOICE, BENCH_NOUL, BENCH_SCORE, BENCH_KINDS };
extern const char *const bench_kind_name[BENCH_KINDS];

/* The hyper-parameters the FLOPs are counted from. */
typedef struct bench_hyper {
    int64_t d, layers, ff, window, pattern, head_layers, params, head_dec;
} bench_hyper;

typedef struct bench_kind {
    int64_t tokens;   /* sequence length of this kind's question */
    size_t markers;
    double flops;
    double *samples;
    size_t n;
    bench_stats st;
} bench_kind;

#define BENCH_TMPDIR "/tmp/skycmd-bench-XXXXXX"

typedef struct bench_run {
    /* resources (bench_free) */
    char tmpdir[sizeof BENCH_TMPDIR];
    char gguf[sizeof BENCH_TMPDIR + 32];
    int have_tmp;
    skycmd_error *err;
    skycmd_options *opts;
    skycmd_model *model;
    skycmd_session *sess;
    skycmd_request *req, *single[BENCH_KINDS];
    char *state, *body;
    double *samples;
    /* the model and how it runs */
    const char *path, *mode; /* the GGUF file (the temporary one of --random) */
    int weights, acts;
    long threads;
    long long gguf_size;
    bench_hyper hp;
    int64_t max_tokens;
    /* the figures */
    double gen_s, t_open, t_load, t_first;
    long rss_before, rss;  /* KiB: before the load, the peak */
    long rss_loaded;       /* KiB resident after the load (model, no session buffers), or -1 */
    long scratch;          /* KiB a session's buffers add for the request (resident), or -1 */
    int64_t req_tokens;
    double req_flops;
    bench_kind kind[BENCH_KINDS];
    bench_stats req_st, q_st, cpu_st, single_all;
    const char *feat, *kernels;
    const char *isa;      /* of the peak probe (peak_isa_name) */
    double peak1, peakT;  /* GFLOP/s, 1 thread and `threads` (NaN: not probed) */
    const char *int8_isa; /* int8 weights: the dot-product instruction probed, else NULL */
    double peak8_1, peak8_T; /* its GOP/s, 1 thread and `threads` (NaN: not probed) */
    double la0[3], la1[3];
} bench_run;

/* bench_measure() after --save-request wrote the request: nothing to report. */
#define BENCH_SAVED 3
/* Measure what a asks for: 0 with r filled, BENCH_SAVED, or 1 after printing why. */
int bench_measure(const bench_args *a, bench_run *r);
void bench_free(bench_run *r);
/* Print the report on stdout (one JSON line with --json, else text). */
void bench_report(const bench_args *a, const bench_run *r);

#endif
