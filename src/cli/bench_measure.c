/*
 * bench_measure.c - the measuring part of `skycmd bench` (bench.h): write the --random
 * model in a child process, load the model (open + first session), build the request of
 * --questions questions (the state grown to --tokens), time the first call, the warm-up,
 * the timed requests and the single-question requests, then probe the FMA peak
 * (peak_probe.h). Public API only; every figure goes into the bench_run, nothing is
 * printed but errors and warnings (stderr).
 *
 * What it measures (see docs/performance.md for how to read it):
 *  - load: skycmd_model_open + the first session (cold for the process; the file may sit in
 *    the page cache), and the first decide call separately;
 *  - a request of --questions N questions of the example kinds (choice with 2 options,
 *    noul, score with 3 levels, cycling) answered by one skycmd_decide call: its latency
 *    divided by N gives the per-question latency (median/p90/p99 over the iterations),
 *    questions/s, tokens/s and achieved GFLOP/s;
 *  - single-question requests of each kind, interleaved, timed the same way;
 *  - peak RSS (VmHWM, else getrusage ru_maxrss) against the GGUF size; a random model is
 *    generated in a child process so its generator's memory does not count;
 *  - the machine's f32 FMA peak, measured in-process (peak_probe.h) with 1 thread and
 *    with the session's thread count, for the ISA the library's kernels dispatch to.
 * FLOPs are counted from the hyper-parameters (skycmd_model_get_int) and each question's
 * token count (skycmd_response_input_tokens of a one-question request): the matrix
 * products and attention the forward pass has to do (the last head layer only at the marker
 * rows and with its key/value projections folded into the queries, attention keys limited
 * to the sliding window on local layers).
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "peak_probe.h"
#include "serve_platform.h"

#define N_KINDS BENCH_KINDS
typedef bench_stats stats;
typedef bench_hyper hyper;

/* ------------------------------------------------------------------ helpers ---- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples. */
static double pct(const double *sorted, size_t n, double p) {
    if (n == 0) return NAN;
    size_t k = (size_t)ceil(p / 100.0 * (double)n);
    if (k < 1) k = 1;
    if (k > n) k = n;
    return sorted[k - 1];
}

static stats summarize(double *v, size_t n) {
    stats s = {n, NAN, NAN, NAN, NAN, NAN};
    if (!n) return s;
    qsort(v, n, sizeof *v, cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += v[i];
    s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    s.p90 = pct(v, n, 90);
    s.p99 = pct(v, n, 99);
    s.min = v[0];
    s.mean = sum / (double)n;
    return s;
}

/* A growable string for the request bodies. */
typedef struct sbuf {
    char *p;
    size_t n, cap;
    int failed;
} sbuf;

static void sb_add(sbuf *b, const char *s) {
    size_t k = strlen(s);
    if (b->failed) return;
    if (b->n + k + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + k + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->failed = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, k + 1);
    b->n += k;
}

/* The three question kinds of examples/flappy-drone.json (bench.h). */
const char *const bench_kind_name[BENCH_KINDS] = {"choice", "noul", "score"};
static const char *const kind_id[N_KINDS] = {"action", "danger", "margin"};
static const char *const kind_json[N_KINDS] = {
    "{\"type\":\"choice\",\"instructions\":\"Which input keeps the drone flying through the "
    "next gap?\",\"criteria\":{\"thrust\":\"fire the rotors for an upward impulse\",\"glide\":"
    "\"let gravity pull the drone down\"}}",
    "{\"type\":\"noul\",\"instructions\":\"Will the drone crash within the next half second if "
    "it keeps gliding?\"}",
    "{\"type\":\"score\",\"instructions\":\"How much room is left above and below the drone?\","
    "\"criteria\":[\"none\",\"tight\",\"comfortable\"]}",
};
static const char *const base_state = "vy 0 dx 36 up 9 dn 7 nxt 10 alt 32";

/* {"state": state, "questions": {...}} with n questions cycling through the kinds, or only
 * kind `only` (when >= 0, one question). The state is plain ASCII without quotes. */
static char *build_request(const char *state, size_t n, int only) {
    sbuf b = {0};
    char id[64];
    sb_add(&b, "{\"state\":\"");
    sb_add(&b, state);
    sb_add(&b, "\",\"questions\":{");
    for (size_t i = 0; i < n; i++) {
        int k = only >= 0 ? only : (int)(i % N_KINDS);
        if (i < N_KINDS || only >= 0) snprintf(id, sizeof id, "\"%s\":", kind_id[k]);
        else snprintf(id, sizeof id, "\"%s_%zu\":", kind_id[k], i / N_KINDS + 1);
        if (i) sb_add(&b, ",");
        sb_add(&b, id);
        sb_add(&b, kind_json[k]);
    }
    sb_add(&b, "}}");
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* The example state extended with later frames, cut at a word boundary to the shortest
 * prefix that has at least `want` tokens (binary search over the word ends). */
static size_t count_tokens(const skycmd_tokenizer *tok, const char *s, size_t n) {
    size_t k = 0;
    return skycmd_tokenizer_encode(tok, s, n, NULL, 0, &k) == SKYCMD_OK ? k : 0;
}

static char *grow_state(const skycmd_tokenizer *tok, size_t want) {
    sbuf b = {0};
    sb_add(&b, base_state);
    for (int t = 1; !b.failed && t < 1000000; t++) {
        if (t % 64 == 1 && count_tokens(tok, b.p, b.n) >= want) break;
        char frame[96];
        snprintf(frame, sizeof frame, " | t%d vy %d dx %d up %d dn %d nxt %d alt %d", t,
                 (t * 7) % 11 - 5, 36 - t % 30, 9 + t % 5, 7 + t % 3, 10 + t % 4, 32 + t % 9);
        sb_add(&b, frame);
    }
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    /* word ends: positions of the spaces, and the end */
    size_t nw = 0, *ends = malloc((b.n + 1) * sizeof *ends);
    if (!ends) {
        free(b.p);
        return NULL;
    }
    for (size_t i = 1; i < b.n; i++)
        if (b.p[i] == ' ' && b.p[i - 1] != ' ') ends[nw++] = i;
    ends[nw++] = b.n;
    size_t lo = 0, hi = nw - 1; /* the first end whose prefix reaches `want` */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (count_tokens(tok, b.p, ends[mid]) >= want) hi = mid;
        else lo = mid + 1;
    }
    b.p[ends[lo]] = '\0';
    free(ends);
    return b.p;
}

/* ------------------------------------------------------------------ FLOPs ------ */

static int64_t get_or(const skycmd_model *m, const char *name, int64_t dflt) {
    int64_t v;
    return skycmd_model_get_int(m, name, &v) == SKYCMD_OK ? v : dflt;
}

/* Keys the queries of an n-token sequence see with a symmetric window |i-j| <= h. */
static double window_pairs(double n, int64_t h) {
    if (h < 0 || (double)h >= n) return n * n;
    double H = (double)h;
    /* each row sees 2h+1 keys minus the ones cut at both ends: h(h+1) on each side */
    return n * (2 * H + 1) - H * (H + 1);
}

/* FLOPs of one sequence of n tokens with k markers (one FMA = 2 FLOPs). */
static double seq_flops(const hyper *h, double n, double k) {
    const double d = (double)h->d, I = (double)h->ff, F = 4.0 * d;
    double f = 0;
    for (int64_t l = 0; l < h->layers; l++) {
        int global = h->pattern <= 0 || l % h->pattern == 0;
        f += 2 * n * (d * 3 * d + d * d + d * 2 * I + I * d);
        f += 4 * d * (global ? n * n : window_pairs(n, h->window / 2));
    }
    for (int64_t j = 0; j < h->head_layers; j++) {
        if (j + 1 < h->head_layers) {
            f += 2 * n * (3 * d * d + d * d + 2 * d * F) + 4 * d * n * n;
        } else if (h->head_dec > 0 && (h->d / h->head_dec) % 16 == 0 && h->d % 16 == 0) {
            /* the last head layer, folded (model.c, head_layer_markers): Q, output and FFN
             * at the markers; per marker and head q.Wk_h and the value product (2 d hd each)
             * and attention over the block's n input rows (4 n d) */
            const double H = (double)h->head_dec;
            f += 2 * k * (2 * d * d + 2 * d * F) + k * (4 * d * d + 4 * H * n * d);
        } else { /* unfolded: K, V over every row; the rest at the markers */
            f += 2 * n * (2 * d * d) + 2 * k * (2 * d * d + 2 * d * F) + 4 * d * k * n;
        }
    }
    f += 2 * k * (d * d + d); /* scorer */
    return f;
}

/* ------------------------------------------------------------------ timing ----- */

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One decide call: its wall time and, when ct is given, the process's CPU time (every
 * thread) in seconds. The CPU clock is a system call; loops that do not use it pass NULL,
 * so nothing but the clock of the vDSO runs between their calls. */
static int timed_decide(skycmd_session *s, const skycmd_request *req, double *dt, double *ct,
                        skycmd_response **keep) {
    skycmd_response *resp = NULL;
    double c0 = ct ? cpu_s() : 0, t0 = now_s();
    int st = skycmd_decide(s, req, &resp);
    double t1 = now_s(), c1 = ct ? cpu_s() : 0;
    if (st) {
        fprintf(stderr, "skycmd bench: decide: %s (%s)\n", skycmd_session_errmsg(s),
                skycmd_status_name(st));
        return st;
    }
    *dt = t1 - t0;
    if (ct) *ct = c1 - c0;
    if (keep) *keep = resp;
    else skycmd_response_free(resp);
    return SKYCMD_OK;
}

/* Peak RSS in KiB. Linux's VmHWM belongs to this process's own address space; ru_maxrss is
 * kept across fork + execve, so a bench started by a big parent (a Python driver) would
 * report the parent's peak. ru_maxrss is the fallback elsewhere (sp_peak_rss_kb: in bytes on macOS). */
static long rss_kb(void) { return sp_peak_rss_kb(); }

/* Write the random model in a child process so its memory stays out of our ru_maxrss. */
static int make_random(const char *preset, const char *path, long long seed, int type,
                       double *seconds) {
    double t0 = now_s();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "skycmd bench: fork: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        skycmd_error *err = skycmd_error_new();
        skycmd_options *o = skycmd_options_new();
        int st = o ? skycmd_options_set_int(o, SKYCMD_OPT_SEED, seed) : SKYCMD_E_NOMEM;
        if (!st && type >= 0) st = skycmd_options_set_int(o, SKYCMD_OPT_TYPE, type);
        if (!st) st = skycmd_random_model(preset, path, o, err);
        if (st) cli_fail("bench", st, err);
        skycmd_options_free(o);
        skycmd_error_free(err);
        fflush(NULL);
        _exit(st ? 1 : 0);
    }
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    *seconds = now_s() - t0;
    return WIFEXITED(ws) && WEXITSTATUS(ws) == 0 ? 0 : 1;
}


/* ------------------------------------------------------------------ stages ----- */

/* The --random model (in a child process), the file's size, --drop-cache, then the load:
 * open + first session, with the weights mode, --threads and the activations. */
static int load_model(const bench_args *A, bench_run *r) {
    int st;
    if (A->preset) {
        if (!mkdtemp(r->tmpdir)) {
            fprintf(stderr, "skycmd bench: cannot create a temporary directory: %s\n",
                    strerror(errno));
            return 1;
        }
        r->have_tmp = 1;
        snprintf(r->gguf, sizeof r->gguf, "%s/%s.gguf", r->tmpdir, A->preset);
        if (!A->json) fprintf(stderr, "skycmd bench: writing a random %s model...\n", A->preset);
        if (make_random(A->preset, r->gguf, A->seed, A->type < 0 ? SKYCMD_TYPE_F32 : A->type,
                        &r->gen_s))
            return 1;
        r->path = r->gguf;
    }
    struct stat sb;
    if (stat(r->path, &sb) != 0) {
        fprintf(stderr, "skycmd bench: %s: %s\n", r->path, strerror(errno));
        return 1;
    }
    r->gguf_size = (long long)sb.st_size;
    r->rss_before = rss_kb();
    if (A->drop_cache) {
        int fd = open(r->path, O_RDONLY);
        int dst = fd < 0 ? errno : sp_drop_file_cache(fd);
        if (fd >= 0) close(fd);
        if (dst) fprintf(stderr, "skycmd bench: warning: --drop-cache: %s\n", strerror(dst));
    }

    /* ---- load: open + first session ---- */
    if ((st = skycmd_options_set_int(r->opts, SKYCMD_OPT_WEIGHTS, r->weights))) {
        fprintf(stderr, "skycmd bench: weights mode %d: %s\n", r->weights, skycmd_strerror(st));
        return 1;
    }
    if (r->acts >= 0 && (st = skycmd_options_set_int(r->opts, SKYCMD_OPT_ACTIVATIONS, r->acts))) {
        fprintf(stderr, "skycmd bench: int8 activations: %s\n", skycmd_strerror(st));
        return 1;
    }
    if (A->max_tokens > 0 &&
        (st = skycmd_options_set_int(r->opts, SKYCMD_OPT_MAX_TOKENS, A->max_tokens))) {
        fprintf(stderr, "skycmd bench: --max-tokens %lld: %s\n", A->max_tokens, skycmd_strerror(st));
        return 1;
    }
    /* the load's progress on a terminal (an int8 mode's calibration takes minutes on a
     * base-sized model); the callback's cost is within the timed load, as a caller's is */
    cli_meter meter;
    if (!A->json) {
        skycmd_options_set_progress(r->opts, cli_meter_progress, &meter);
        cli_meter_start(&meter, "bench", "load", CLI_METER_BYTES, CLI_METER_FRACTION);
    }
    double t0 = now_s();
    st = skycmd_model_open(r->path, r->opts, &r->model, r->err);
    r->t_open = now_s() - t0;
    if (!A->json) {
        cli_meter_clear(&meter);
        skycmd_options_set_progress(r->opts, NULL, NULL);
    }
    if (st) {
        if (r->weights != SKYCMD_WEIGHTS_F32 && r->weights != SKYCMD_WEIGHTS_BF16X3 &&
            (st == SKYCMD_E_UNSUPPORTED || st == SKYCMD_E_INVALID_ARGUMENT))
            fprintf(stderr, "skycmd bench: --%s: int8 weights are not available in this build "
                    "(%s: %s)\n", r->mode,
                    skycmd_status_name(st), skycmd_error_message(r->err));
        else
            cli_fail("bench", st, r->err);
        return 1;
    }
    if (!A->json)
        cli_note_int8_stored("bench", r->model, cli_compute_named(&A->compute));
    /* the default (bf16x3) runs the f32 path where the CPU has no BF16 matrix unit (AMX-BF16
     * tiles, FEAT_BF16) */
    if (get_or(r->model, "weights", r->weights) == SKYCMD_WEIGHTS_F32) r->mode = "f32";
    if ((st = skycmd_session_new(r->model, &r->sess))) {
        fprintf(stderr, "skycmd bench: session: %s\n", skycmd_strerror(st));
        return 1;
    }
    if (A->threads != 1 && (st = skycmd_session_set_int(r->sess, SKYCMD_OPT_THREADS, A->threads))) {
        fprintf(stderr, "skycmd bench: --compute-threads %lld: %s\n", A->threads, skycmd_session_errmsg(r->sess));
        return 1;
    }
    if (r->acts >= 0 && (st = skycmd_session_set_int(r->sess, SKYCMD_OPT_ACTIVATIONS, r->acts))) {
        fprintf(stderr, "skycmd bench: int8 activations are not available in this build (%s: %s)\n",
                skycmd_status_name(st), skycmd_session_errmsg(r->sess));
        return 1;
    }
    r->t_load = now_s() - t0;
    r->rss_loaded = sp_rss_kb();   /* (the session's buffers are made by its first decide) */
    r->threads = A->threads ? (long)A->threads : sysconf(_SC_NPROCESSORS_ONLN);
    if (r->threads < 1) r->threads = 1;
    return 0;
}

/* The state of about --tokens tokens per sequence: each sequence = question + options +
 * state + separators; measure the non-state part with the short state, then grow the
 * state to fill the rest. */
static int size_state(const bench_args *A, bench_run *r, const skycmd_tokenizer *tok) {
    size_t s0 = count_tokens(tok, base_state, strlen(base_state));
    double rest = 0; /* mean non-state tokens of the three kinds */
    for (int k = 0; k < N_KINDS; k++) {
        char *b1 = build_request(base_state, 1, k);
        skycmd_request *r1 = NULL;
        skycmd_response *r1resp = NULL;
        double dt, ct;
        if (!b1 || !s0 || skycmd_request_parse(b1, strlen(b1), &r1) != SKYCMD_OK ||
            timed_decide(r->sess, r1, &dt, &ct, &r1resp) != SKYCMD_OK) {
            fprintf(stderr, "skycmd bench: cannot size the --tokens state\n");
            free(b1);
            skycmd_request_free(r1);
            return 1;
        }
        rest += (double)(skycmd_response_input_tokens(r1resp) - (int64_t)s0) / N_KINDS;
        skycmd_response_free(r1resp);
        skycmd_request_free(r1);
        free(b1);
    }
    size_t want = (double)A->tokens > rest + 1 ? (size_t)llround((double)A->tokens - rest) : 1;
    r->state = grow_state(tok, want);
    if (r->max_tokens > 0 && A->tokens > r->max_tokens)
        fprintf(stderr, "skycmd bench: warning: --tokens %lld exceeds the model's "
                "sequence budget %lld; the state will be cut\n", A->tokens,
                (long long)r->max_tokens);
    return 0;
}

/* The timed request (and --save-request), and one single-question request per kind. */
static int make_requests(const bench_args *A, bench_run *r) {
    skycmd_model *model = r->model;
    int st;
    r->hp = (hyper){get_or(model, "embedding_length", 0), get_or(model, "encoder.block_count", 0),
                    get_or(model, "feed_forward_length", 0),
                    get_or(model, "attention.sliding_window", -1),
                    get_or(model, "attention.sliding_window_pattern", 1),
                    get_or(model, "decision.block_count", 0), get_or(model, "parameters", -1),
                    get_or(model, "decision.head_count", 1)};
    r->max_tokens = A->max_tokens > 0 ? A->max_tokens : get_or(model, "decision.max_tokens", -1);

    /* ---- the request ---- */
    const skycmd_tokenizer *tok = skycmd_model_tokenizer(model);
    if (A->tokens > 0) {
        if (size_state(A, r, tok)) return 1;
    } else {
        r->state = strdup(base_state);
    }
    if (!r->state || !(r->body = build_request(r->state, (size_t)A->questions, -1))) {
        fprintf(stderr, "skycmd bench: out of memory building the request\n");
        return 1;
    }
    if ((st = skycmd_request_parse(r->body, strlen(r->body), &r->req)) != SKYCMD_OK) {
        fprintf(stderr, "skycmd bench: request: %s\n", skycmd_request_errmsg(r->req));
        return 1;
    }
    if (A->save_request) {
        FILE *f = fopen(A->save_request, "wb");
        if (!f || fprintf(f, "%s\n", r->body) < 0 || fclose(f) != 0) {
            fprintf(stderr, "skycmd bench: %s: %s\n", A->save_request, strerror(errno));
            return 1;
        }
        return BENCH_SAVED;
    }
    for (int k = 0; k < N_KINDS; k++) {
        char *b = build_request(r->state, 1, k);
        st = b ? skycmd_request_parse(b, strlen(b), &r->single[k]) : SKYCMD_E_NOMEM;
        free(b);
        if (st) {
            fprintf(stderr, "skycmd bench: request: %s\n",
                    r->single[k] ? skycmd_request_errmsg(r->single[k]) : "out of memory");
            return 1;
        }
    }
    return 0;
}

/* The first decide (cold caches), then each kind once for its size and FLOPs. */
static int first_calls(const bench_args *A, bench_run *r) {
    skycmd_response *resp = NULL;
    double c_first = 0;
    if (timed_decide(r->sess, r->req, &r->t_first, &c_first, &resp)) return 1;
    r->req_tokens = skycmd_response_input_tokens(resp);
    skycmd_response_free(resp);
    r->req_flops = 0;
    for (int k = 0; k < N_KINDS; k++) {
        bench_kind *kr = &r->kind[k];
        double dt, ct;
        if (timed_decide(r->sess, r->single[k], &dt, &ct, &resp)) return 1;
        kr->tokens = skycmd_response_input_tokens(resp);
        kr->markers = skycmd_response_option_count(resp, 0);
        kr->flops = seq_flops(&r->hp, (double)kr->tokens, (double)kr->markers);
        skycmd_response_free(resp);
    }
    for (long long i = 0; i < A->questions; i++) r->req_flops += r->kind[i % N_KINDS].flops;
    return 0;
}

/* The warm-up and the timed requests: wall and CPU time of each. */
static int time_requests(const bench_args *A, bench_run *r) {
    for (long long i = 0; i < A->warmup; i++) {
        double dt, ct;
        if (timed_decide(r->sess, r->req, &dt, &ct, NULL)) return 1;
    }
    size_t cap = A->iters ? (size_t)A->iters : 1000, n = 0;
    size_t min_iters = A->iters ? (size_t)A->iters : 5;
    if (!(r->samples = malloc(2 * cap * sizeof *r->samples))) return 1;
    double *samples = r->samples, *csamples = samples + cap; /* CPU time of each */
    double start = now_s();
    while (n < cap) {
        if (timed_decide(r->sess, r->req, &samples[n], &csamples[n], NULL)) return 1;
        n++;
        if (!A->iters && n >= min_iters && now_s() - start >= A->seconds) break;
    }
    r->req_st = summarize(samples, n);
    r->cpu_st = summarize(csamples, n);
    double *per_q = malloc(n * sizeof *per_q);
    if (!per_q) return 1;
    for (size_t i = 0; i < n; i++) per_q[i] = samples[i] / (double)A->questions;
    r->q_st = summarize(per_q, n);
    free(per_q);
    return 0;
}

/* The resident memory of a session's buffers for the timed request: a second session on the
 * model, set as the first, answers it once while the first keeps its own, and the resident
 * set grows by what it made (a figure for the "int8 weights plus scratch"). -1 where
 * the system does not say, or the second session cannot be made. */
static void measure_scratch(const bench_args *A, bench_run *r) {
    r->scratch = -1;
    skycmd_session *s = NULL;
    skycmd_response *resp = NULL;
    const long before = sp_rss_kb();
    if (before < 0 || skycmd_session_new(r->model, &s) != SKYCMD_OK) return;
    const int ok = (A->threads == 1 || skycmd_session_set_int(s, SKYCMD_OPT_THREADS, A->threads) == SKYCMD_OK) &&
                   (r->acts < 0 || skycmd_session_set_int(s, SKYCMD_OPT_ACTIVATIONS, r->acts) == SKYCMD_OK) &&
                   skycmd_decide(s, r->req, &resp) == SKYCMD_OK;
    const long after = sp_rss_kb();
    skycmd_response_free(resp);
    skycmd_session_free(s);
    if (ok && after >= 0) r->scratch = after - before;
}

/* The single-question requests, kinds interleaved. */
static int time_singles(const bench_args *A, bench_run *r) {
    size_t scap = A->iters ? (size_t)A->iters : 1000;
    size_t min_iters = A->iters ? (size_t)A->iters : 5;
    double *all = malloc(N_KINDS * scap * sizeof *all);
    for (int k = 0; k < N_KINDS && all; k++)
        if (!(r->kind[k].samples = malloc(scap * sizeof(double)))) {
            free(all);
            all = NULL;
        }
    if (!all) {
        fprintf(stderr, "skycmd bench: out of memory\n");
        return 1;
    }
    size_t na = 0;
    double start = now_s();
    for (size_t i = 0; i < scap; i++) {
        for (int k = 0; k < N_KINDS; k++) {
            bench_kind *kr = &r->kind[k];
            if (timed_decide(r->sess, r->single[k], &kr->samples[i], NULL, NULL)) {
                free(all);
                return 1;
            }
            all[na++] = kr->samples[i];
            kr->n = i + 1;
        }
        if (!A->iters && i + 1 >= min_iters && now_s() - start >= A->seconds) break;
    }
    for (int k = 0; k < N_KINDS; k++) r->kind[k].st = summarize(r->kind[k].samples, r->kind[k].n);
    r->single_all = summarize(all, na);
    free(all);
    return 0;
}

/* The int8 products of the int8 kernel named in kernels ("... int8=NAME"): vpdpbusd under
 * the VNNI and AMX kernels (the AMX one's tails and row sums are VNNI), the AVX2 sequence,
 * sdot; PEAK_SCALAR for the scalar kernel or one this CPU cannot probe. */
static peak_isa int8_peak_isa(const char *kernels) {
    const char *k = kernels ? strstr(kernels, "int8=") : NULL;
    peak_isa isa = PEAK_SCALAR;
    if (k) {
        k += strlen("int8=");
        if (!strncmp(k, "vnni", 4) || !strncmp(k, "amx", 3)) isa = PEAK_VNNI512;
        else if (!strncmp(k, "avx2", 4)) isa = PEAK_MADDUBS;
        else if (!strncmp(k, "dotprod", 7) || !strncmp(k, "i8mm", 4)) isa = PEAK_SDOT;
    }
    return peak_isa_supported(isa) ? isa : PEAK_SCALAR;
}

/* The FMA peak of the ISA the kernels dispatch to (after the timing so it does not heat the
 * other measurements), the peak RSS and the load average at the end. */
static void probe_peak(const bench_args *A, bench_run *r) {
    r->feat = skycmd_cpu_features();
    r->kernels = skycmd_kernels();
    const char *feat = r->feat;
    peak_isa isa = strstr(feat, "avx512f") ? PEAK_AVX512
                   : strstr(feat, "avx2") ? PEAK_AVX2
                   : strstr(feat, "neon") ? PEAK_NEON : PEAK_SCALAR;
    if (!peak_isa_supported(isa)) isa = peak_best_isa();
    r->isa = peak_isa_name(isa);
    r->peak1 = r->peakT = NAN;
    if (A->peak_ms > 0) {
        r->peak1 = peak_measure(isa, 1, (double)A->peak_ms * 1e-3);
        r->peakT = r->threads > 1 ? peak_measure(isa, (int)r->threads, (double)A->peak_ms * 1e-3)
                                  : r->peak1;
    }
    /* a model computing with int8 weights is held against the peak of the int8 products its
     * kernel runs (skycmd_kernels: "int8=NAME") */
    int64_t w = -1;
    const peak_isa i8 = int8_peak_isa(r->kernels);
    r->int8_isa = NULL;
    r->peak8_1 = r->peak8_T = NAN;
    if (skycmd_model_get_int(r->model, "weights", &w) == SKYCMD_OK &&
        (w == SKYCMD_WEIGHTS_Q8 || w == SKYCMD_WEIGHTS_Q8_PLAIN || w == SKYCMD_WEIGHTS_Q8_ROW) &&
        i8 != PEAK_SCALAR) {
        r->int8_isa = peak_isa_name(i8);
        if (A->peak_ms > 0) {
            r->peak8_1 = peak_measure(i8, 1, (double)A->peak_ms * 1e-3);
            r->peak8_T = r->threads > 1 ? peak_measure(i8, (int)r->threads, (double)A->peak_ms * 1e-3)
                                        : r->peak8_1;
        }
    }
    r->rss = rss_kb();
    /* Linux brings its high-water mark up to date only at some events (an unmap, a zap):
     * file pages the system reclaims leave the resident set without it, so the peak it
     * reports can be below a resident set read earlier. The peak is at least that. */
    if (r->rss >= 0 && r->rss_loaded > r->rss) r->rss = r->rss_loaded;
    if (getloadavg(r->la1, 3) < 0) r->la1[0] = -1;
}

/* The weights mode and activations the flags ask for, and the mode's name. */
static void pick_mode(const bench_args *A, bench_run *r) {
    const cli_compute *c = &A->compute;
    r->weights = A->weights;
    r->acts = A->acts;
    r->mode = r->weights == SKYCMD_WEIGHTS_F32 ? "f32" : "bf16x3";
    if (c->q8_row)
        r->mode = c->q8_fast ? "q8-row-fast" : "q8-row";
    else if (c->q8 || c->q8_fast || c->no_calib)
        r->mode = c->q8_fast ? (c->no_calib ? "q8-fast-no-calib" : "q8-fast") : (c->no_calib ? "q8-no-calib" : "q8");
}

int bench_measure(const bench_args *A, bench_run *r) {
    memset(r, 0, sizeof *r);
    memcpy(r->tmpdir, BENCH_TMPDIR, sizeof BENCH_TMPDIR);
    r->err = skycmd_error_new();
    r->opts = skycmd_options_new();
    r->path = A->model_path;
    pick_mode(A, r);
    r->la0[0] = r->la0[1] = r->la0[2] = -1;
    r->la1[0] = r->la1[1] = r->la1[2] = -1;
    if (getloadavg(r->la0, 3) < 0) r->la0[0] = -1;
    if (!r->err || !r->opts) {
        fprintf(stderr, "skycmd bench: out of memory\n");
        return 1;
    }
    int rc = load_model(A, r);
    if (!rc) rc = make_requests(A, r);
    if (!rc) rc = first_calls(A, r);
    if (!rc) rc = time_requests(A, r);
    if (!rc && A->single) rc = time_singles(A, r);
    if (!rc) probe_peak(A, r);   /* (reads the peak RSS: before the second session below) */
    if (!rc) measure_scratch(A, r);
    return rc;
}

void bench_free(bench_run *r) {
    for (int k = 0; k < N_KINDS; k++) {
        free(r->kind[k].samples);
        skycmd_request_free(r->single[k]);
    }
    free(r->samples);
    free(r->body);
    free(r->state);
    skycmd_request_free(r->req);
    skycmd_session_free(r->sess);
    skycmd_model_free(r->model);
    skycmd_options_free(r->opts);
    skycmd_error_free(r->err);
    if (r->have_tmp) {
        if (r->gguf[0]) unlink(r->gguf);
        rmdir(r->tmpdir);
    }
    memset(r, 0, sizeof *r);
}
