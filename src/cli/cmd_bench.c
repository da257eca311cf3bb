/*
 * cmd_bench.c - `skycmd bench`: time a decision model through the public API only.
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
 *  - the machine's f32 FMA peak, measured in-process (bench/peak_probe.h) with 1 thread and
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "serve_platform.h"
#include "../../bench/peak_probe.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: skycmd bench <MODEL.gguf | --random PRESET> [options]\n"
            "\n"
            "Time a decision model: load time, peak RSS, per-question latency (median, p90,\n"
            "p99), questions/s, tokens/s and achieved GFLOP/s against this machine's measured\n"
            "f32 FMA peak.\n"
            "\n"
            "model:\n"
            "  MODEL.gguf           a GGUF decision model\n"
            "  --random PRESET      a random model written to a temporary directory first:\n"
            "                       s1-pico, s1-nano, s1-micro, base (ModernBERT-base shape,\n"
            "                       ~150M params) or large (ModernBERT-large shape, ~400M; takes\n"
            "                       ~30 s to generate); removed afterwards\n"
            "  --seed N             seed of --random (default 42)\n"
            "  --type T             encoder matrix type of --random: f32 (default), f16, bf16, q8_0\n"
            "compute:\n"
            "  --q8                 Q8_0 weights (calibrated outlier columns), two-pass int8\n"
            "                       activations\n"
            "  --q8-fast            Q8_0 weights, single-pass int8 activations\n"
            "  --q8-row             int8 with one scale per weight row and per activation row\n"
            "                       (calibrated outlier columns; the fastest int8 mode)\n"
            "  --no-calib           Q8_0 weights without calibration (alone: two-pass activations)\n"
            "  --bf16x3             the default: matrix products on AMX-BF16 tiles (f32 weights\n"
            "                       as bf16 hi+lo, three products: within 1e-4 of laya); the f32\n"
            "                       path where the CPU has no AMX-BF16\n"
            "  --f32                f32 products on the FMA kernels everywhere (the exact path)\n"
            "  --threads N          compute threads of the session (0 = one per core; default 1)\n"
            "request:\n"
            "  --questions N        questions per request (default 3: the example's choice, noul\n"
            "                       and score; more cycle through the three kinds)\n"
            "  --tokens N           grow the state so each sequence is about N tokens (default:\n"
            "                       the example's short state)\n"
            "  --max-tokens N       sequence budget instead of the model's decision.max_tokens\n"
            "timing:\n"
            "  --drop-cache         evict the GGUF from the page cache before the load\n"
            "                       (posix_fadvise DONTNEED): a disk-cold load\n"
            "  --iters N            timed requests (default: as many as fit in --seconds,\n"
            "                       at least 5, at most 1000)\n"
            "  --seconds S          time budget of the automatic --iters (default 3)\n"
            "  --warmup N           untimed requests first (default 3)\n"
            "  --no-single          skip the one-question requests\n"
            "  --save-request FILE  write the request body (JSON) to FILE and stop: the\n"
            "                       side-by-side scripts send the same request elsewhere\n"
            "  --peak-ms N          duration of each peak probe in ms (default 200; 0 = skip)\n"
            "output:\n"
            "  --json               one JSON document on stdout\n"
            "  -h, --help           this help\n"
            "\n"
            "exit status: 0 done, 1 error (message on stderr), 2 usage error\n"
            "examples:\n"
            "  skycmd bench s1-pico.gguf --questions 1 --iters 1000\n"
            "  skycmd bench --random base --tokens 128 --threads 1 --json\n");
}

/* ------------------------------------------------------------------ helpers ---- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int parse_ll(const char *s, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
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

typedef struct stats {
    size_t n;
    double median, p90, p99, min, mean;
} stats;

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

/* The three question kinds of examples/flappy-drone.json. */
enum { KIND_CHOICE, KIND_NOUL, KIND_SCORE, N_KINDS };
static const char *const kind_name[N_KINDS] = {"choice", "noul", "score"};
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

typedef struct hyper {
    int64_t d, layers, ff, window, pattern, head_layers, params, head_dec;
} hyper;

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

static int is_preset(const char *p) {
    static const char *const names[] = {"s1-pico", "s1-nano", "s1-micro", "base", "large",
                                        "mmbert-small", "mmbert-base"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(p, names[i])) return 1;
    return 0;
}

static void json_str(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    }
    putchar('"');
}

/* JSON numbers: NaN/inf become null. */
static void json_num(const char *key, double v, int last) {
    if (isfinite(v)) printf("\"%s\":%.6g%s", key, v, last ? "" : ",");
    else printf("\"%s\":null%s", key, last ? "" : ",");
}

static void json_stats_ms(const char *key, const stats *s, int last) {
    printf("\"%s\":{\"n\":%zu,", key, s->n);
    json_num("median_ms", s->median * 1e3, 0);
    json_num("p90_ms", s->p90 * 1e3, 0);
    json_num("p99_ms", s->p99 * 1e3, 0);
    json_num("min_ms", s->min * 1e3, 0);
    json_num("mean_ms", s->mean * 1e3, 1);
    printf("}%s", last ? "" : ",");
}

static void text_stats(const char *label, const stats *s) {
    if (!s->n) return;
    printf("  %-22s median %9.3f ms  p90 %9.3f  p99 %9.3f  min %9.3f  (n=%zu)\n", label,
           s->median * 1e3, s->p90 * 1e3, s->p99 * 1e3, s->min * 1e3, s->n);
}

/* ------------------------------------------------------------------ main ------- */

typedef struct bench_args {
    const char *model_path, *preset, *save_request;
    long long seed, questions, tokens, iters, warmup, threads, peak_ms;
    double seconds;
    int type, q8, q8_fast, no_calib, json, single, drop_cache, bf16x3, q8_row, f32;
    long long max_tokens;  /* 0: the model's decision.max_tokens */
} bench_args;

static int parse_args(int argc, char **argv, bench_args *a) {
    *a = (bench_args){NULL, NULL, NULL, 42, 3, 0, 0, 3, 1, 200, 3.0, -1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0};
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (cli_is_help(s)) {
            usage(stdout);
            return -1;
        } else if (!strcmp(s, "--q8")) {
            a->q8 = 1;
        } else if (!strcmp(s, "--q8-fast")) {
            a->q8_fast = 1;
        } else if (!strcmp(s, "--no-calib")) {
            a->no_calib = 1;
        } else if (!strcmp(s, "--q8-row")) {
            a->q8_row = 1;
        } else if (!strcmp(s, "--bf16x3")) {
            a->bf16x3 = 1;
        } else if (!strcmp(s, "--f32")) {
            a->f32 = 1;
        } else if (!strcmp(s, "--json")) {
            a->json = 1;
        } else if (!strcmp(s, "--drop-cache")) {
            a->drop_cache = 1;
        } else if (!strcmp(s, "--no-single")) {
            a->single = 0;
        } else if (!strcmp(s, "--random") || !strcmp(s, "--seed") || !strcmp(s, "--type") ||
                   !strcmp(s, "--questions") || !strcmp(s, "--tokens") ||
                   !strcmp(s, "--iters") || !strcmp(s, "--warmup") ||
                   !strcmp(s, "--threads") || !strcmp(s, "--peak-ms") ||
                   !strcmp(s, "--seconds") || !strcmp(s, "--save-request") ||
                   !strcmp(s, "--max-tokens")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "skycmd bench: %s needs a value\n", s);
                return 2;
            }
            const char *v = argv[++i];
            long long x = 0;
            int bad = 0;
            if (!strcmp(s, "--save-request")) {
                a->save_request = v;
            } else if (!strcmp(s, "--random")) {
                if (!is_preset(v)) {
                    fprintf(stderr, "skycmd bench: --random: unknown preset '%s' (s1-pico, "
                            "s1-nano, s1-micro, base, large, mmbert-small, mmbert-base)\n", v);
                    return 2;
                }
                a->preset = v;
            } else if (!strcmp(s, "--type")) {
                if ((a->type = cli_parse_type(v)) < 0) {
                    fprintf(stderr, "skycmd bench: --type: unknown type '%s'\n", v);
                    return 2;
                }
            } else if (!strcmp(s, "--seconds")) {
                char *end;
                errno = 0;
                double t = strtod(v, &end);
                if (errno || end == v || *end || !(t > 0 && t <= 3600)) bad = 1;
                else a->seconds = t;
            } else if (!strcmp(s, "--seed")) {
                bad = parse_ll(v, 0, INT64_MAX, &a->seed);
            } else if (!strcmp(s, "--questions")) {
                bad = parse_ll(v, 1, 256, &a->questions);
            } else if (!strcmp(s, "--tokens")) {
                bad = parse_ll(v, 1, 1 << 20, &a->tokens);
            } else if (!strcmp(s, "--max-tokens")) {
                bad = parse_ll(v, 1, 1 << 20, &a->max_tokens);
            } else if (!strcmp(s, "--iters")) {
                bad = parse_ll(v, 1, 10000000, &a->iters);
            } else if (!strcmp(s, "--warmup")) {
                bad = parse_ll(v, 0, 1000000, &a->warmup);
            } else if (!strcmp(s, "--threads")) {
                bad = parse_ll(v, 0, 1024, &a->threads);
            } else if (!strcmp(s, "--peak-ms")) {
                bad = parse_ll(v, 0, 60000, &x);
                a->peak_ms = x;
            }
            if (bad) {
                fprintf(stderr, "skycmd bench: %s: bad value '%s'\n", s, v);
                return 2;
            }
        } else if (s[0] == '-' && s[1]) {
            fprintf(stderr, "skycmd bench: unknown option '%s'\n", s);
            usage(stderr);
            return 2;
        } else if (!a->model_path) {
            a->model_path = s;
        } else {
            fprintf(stderr, "skycmd bench: unexpected argument '%s'\n", s);
            usage(stderr);
            return 2;
        }
    }
    if (!a->model_path == !a->preset) {
        fprintf(stderr, "skycmd bench: give either MODEL.gguf or --random PRESET\n");
        usage(stderr);
        return 2;
    }
    if (a->type >= 0 && !a->preset) {
        fprintf(stderr, "skycmd bench: --type only applies to --random\n");
        return 2;
    }
    if (a->bf16x3 && (a->q8 || a->q8_fast || a->no_calib)) {
        fprintf(stderr, "skycmd bench: --bf16x3 excludes --q8, --q8-fast and --no-calib\n");
        return 2;
    }
    if (a->q8 && a->q8_fast) {
        fprintf(stderr, "skycmd bench: --q8 and --q8-fast exclude each other\n");
        return 2;
    }
    if (a->q8_row && (a->q8 || a->q8_fast || a->no_calib || a->bf16x3)) {
        fprintf(stderr, "skycmd bench: --q8-row excludes --q8, --q8-fast, --no-calib and --bf16x3\n");
        return 2;
    }
    if (a->f32 && (a->q8 || a->q8_fast || a->no_calib || a->bf16x3 || a->q8_row)) {
        fprintf(stderr, "skycmd bench: --f32 excludes --q8, --q8-fast, --q8-row, --no-calib and --bf16x3\n");
        return 2;
    }
    return 0;
}

typedef struct kind_result {
    int64_t tokens;   /* sequence length of this kind's question */
    size_t markers;
    double flops;
    double *samples;
    size_t n;
    stats st;
} kind_result;

int cmd_bench(int argc, char **argv) {
    bench_args A;
    int prc = parse_args(argc, argv, &A);
    if (prc) return prc < 0 ? 0 : prc;

    int rc = 1, st;
    char tmpdir[] = "/tmp/skycmd-bench-XXXXXX";
    char gguf[sizeof tmpdir + 32] = "";
    int have_tmp = 0;
    double gen_s = 0;
    skycmd_error *err = skycmd_error_new();
    skycmd_options *opts = skycmd_options_new();
    skycmd_model *model = NULL;
    skycmd_session *sess = NULL;
    skycmd_request *req = NULL, *single[N_KINDS] = {NULL, NULL, NULL};
    char *state = NULL, *body = NULL;
    double *samples = NULL;
    kind_result kr[N_KINDS];
    memset(kr, 0, sizeof kr);
    const char *path = A.model_path;
    int weights = A.f32 ? SKYCMD_WEIGHTS_F32 : SKYCMD_WEIGHTS_BF16X3, acts = -1;
    const char *mode = A.f32 ? "f32" : "bf16x3";
    if (A.q8 || A.q8_fast || A.no_calib) {
        weights = A.no_calib ? SKYCMD_WEIGHTS_Q8_PLAIN : SKYCMD_WEIGHTS_Q8;
        acts = A.q8_fast ? SKYCMD_ACT_Q8 : SKYCMD_ACT_Q8X2;
        mode = A.q8_fast ? (A.no_calib ? "q8-fast-no-calib" : "q8-fast")
                         : (A.no_calib ? "q8-no-calib" : "q8");
    } else if (A.q8_row) {
        weights = SKYCMD_WEIGHTS_Q8_ROW;
        mode = "q8-row";
    }
    double la0[3] = {-1, -1, -1}, la1[3] = {-1, -1, -1};
    if (getloadavg(la0, 3) < 0) la0[0] = -1;

    if (!err || !opts) {
        fprintf(stderr, "skycmd bench: out of memory\n");
        goto out;
    }
    if (A.preset) {
        if (!mkdtemp(tmpdir)) {
            fprintf(stderr, "skycmd bench: cannot create a temporary directory: %s\n",
                    strerror(errno));
            goto out;
        }
        have_tmp = 1;
        snprintf(gguf, sizeof gguf, "%s/%s.gguf", tmpdir, A.preset);
        if (!A.json) fprintf(stderr, "skycmd bench: writing a random %s model...\n", A.preset);
        if (make_random(A.preset, gguf, A.seed, A.type < 0 ? SKYCMD_TYPE_F32 : A.type, &gen_s))
            goto out;
        path = gguf;
    }
    struct stat sb;
    if (stat(path, &sb) != 0) {
        fprintf(stderr, "skycmd bench: %s: %s\n", path, strerror(errno));
        goto out;
    }
    long rss_before = rss_kb();
    if (A.drop_cache) {
        int fd = open(path, O_RDONLY);
        int dst = fd < 0 ? errno : sp_drop_file_cache(fd);
        if (fd >= 0) close(fd);
        if (dst) fprintf(stderr, "skycmd bench: warning: --drop-cache: %s\n", strerror(dst));
    }

    /* ---- load: open + first session ---- */
    if ((st = skycmd_options_set_int(opts, SKYCMD_OPT_WEIGHTS, weights))) {
        fprintf(stderr, "skycmd bench: weights mode %d: %s\n", weights, skycmd_strerror(st));
        goto out;
    }
    if (A.max_tokens > 0 &&
        (st = skycmd_options_set_int(opts, SKYCMD_OPT_MAX_TOKENS, A.max_tokens))) {
        fprintf(stderr, "skycmd bench: --max-tokens %lld: %s\n", A.max_tokens, skycmd_strerror(st));
        goto out;
    }
    double t0 = now_s();
    st = skycmd_model_open(path, opts, &model, err);
    double t_open = now_s() - t0;
    if (st) {
        if (weights != SKYCMD_WEIGHTS_F32 && weights != SKYCMD_WEIGHTS_BF16X3 &&
            (st == SKYCMD_E_UNSUPPORTED || st == SKYCMD_E_INVALID_ARGUMENT))
            fprintf(stderr, "skycmd bench: --%s: int8 weights are not available in this build "
                    "(%s: %s)\n", mode,
                    skycmd_status_name(st), skycmd_error_message(err));
        else
            cli_fail("bench", st, err);
        goto out;
    }
    /* the default (bf16x3) runs the f32 path where the CPU has no AMX-BF16 tiles */
    if (get_or(model, "weights", weights) == SKYCMD_WEIGHTS_F32) mode = "f32";
    if ((st = skycmd_session_new(model, &sess))) {
        fprintf(stderr, "skycmd bench: session: %s\n", skycmd_strerror(st));
        goto out;
    }
    if (A.threads != 1 && (st = skycmd_session_set_int(sess, SKYCMD_OPT_THREADS, A.threads))) {
        fprintf(stderr, "skycmd bench: --threads %lld: %s\n", A.threads, skycmd_session_errmsg(sess));
        goto out;
    }
    if (acts >= 0 && (st = skycmd_session_set_int(sess, SKYCMD_OPT_ACTIVATIONS, acts))) {
        fprintf(stderr, "skycmd bench: int8 activations are not available in this build (%s: %s)\n",
                skycmd_status_name(st), skycmd_session_errmsg(sess));
        goto out;
    }
    double t_load = now_s() - t0;
    long threads = A.threads ? (long)A.threads : sysconf(_SC_NPROCESSORS_ONLN);
    if (threads < 1) threads = 1;

    hyper hp = {get_or(model, "embedding_length", 0), get_or(model, "encoder.block_count", 0),
                get_or(model, "feed_forward_length", 0),
                get_or(model, "attention.sliding_window", -1),
                get_or(model, "attention.sliding_window_pattern", 1),
                get_or(model, "decision.block_count", 0), get_or(model, "parameters", -1),
                get_or(model, "decision.head_count", 1)};
    int64_t max_tokens = A.max_tokens > 0 ? A.max_tokens : get_or(model, "decision.max_tokens", -1);

    /* ---- the request ---- */
    const skycmd_tokenizer *tok = skycmd_model_tokenizer(model);
    if (A.tokens > 0) {
        /* each sequence = question + options + state + separators: measure the non-state
         * part with the short state, then grow the state to fill the rest */
        size_t s0 = count_tokens(tok, base_state, strlen(base_state));
        double rest = 0; /* mean non-state tokens of the three kinds */
        for (int k = 0; k < N_KINDS; k++) {
            char *b1 = build_request(base_state, 1, k);
            skycmd_request *r1 = NULL;
            skycmd_response *r1resp = NULL;
            double dt, ct;
            if (!b1 || !s0 || skycmd_request_parse(b1, strlen(b1), &r1) != SKYCMD_OK ||
                timed_decide(sess, r1, &dt, &ct, &r1resp) != SKYCMD_OK) {
                fprintf(stderr, "skycmd bench: cannot size the --tokens state\n");
                free(b1);
                skycmd_request_free(r1);
                goto out;
            }
            rest += (double)(skycmd_response_input_tokens(r1resp) - (int64_t)s0) / N_KINDS;
            skycmd_response_free(r1resp);
            skycmd_request_free(r1);
            free(b1);
        }
        size_t want = (double)A.tokens > rest + 1 ? (size_t)llround((double)A.tokens - rest) : 1;
        state = grow_state(tok, want);
        if (max_tokens > 0 && A.tokens > max_tokens)
            fprintf(stderr, "skycmd bench: warning: --tokens %lld exceeds the model's "
                    "sequence budget %lld; the state will be cut\n", A.tokens,
                    (long long)max_tokens);
    } else {
        state = strdup(base_state);
    }
    if (!state || !(body = build_request(state, (size_t)A.questions, -1))) {
        fprintf(stderr, "skycmd bench: out of memory building the request\n");
        goto out;
    }
    if ((st = skycmd_request_parse(body, strlen(body), &req)) != SKYCMD_OK) {
        fprintf(stderr, "skycmd bench: request: %s\n", skycmd_request_errmsg(req));
        goto out;
    }
    if (A.save_request) {
        FILE *f = fopen(A.save_request, "wb");
        if (!f || fprintf(f, "%s\n", body) < 0 || fclose(f) != 0) {
            fprintf(stderr, "skycmd bench: %s: %s\n", A.save_request, strerror(errno));
            goto out;
        }
        rc = 0;
        goto out;
    }
    for (int k = 0; k < N_KINDS; k++) {
        char *b = build_request(state, 1, k);
        st = b ? skycmd_request_parse(b, strlen(b), &single[k]) : SKYCMD_E_NOMEM;
        free(b);
        if (st) {
            fprintf(stderr, "skycmd bench: request: %s\n",
                    single[k] ? skycmd_request_errmsg(single[k]) : "out of memory");
            goto out;
        }
    }

    /* ---- first decide (cold caches), then each kind once for its size ---- */
    double t_first = 0, c_first = 0;
    skycmd_response *resp = NULL;
    if (timed_decide(sess, req, &t_first, &c_first, &resp)) goto out;
    int64_t req_tokens = skycmd_response_input_tokens(resp);
    skycmd_response_free(resp);
    double req_flops = 0;
    for (int k = 0; k < N_KINDS; k++) {
        double dt, ct;
        if (timed_decide(sess, single[k], &dt, &ct, &resp)) goto out;
        kr[k].tokens = skycmd_response_input_tokens(resp);
        kr[k].markers = skycmd_response_option_count(resp, 0);
        kr[k].flops = seq_flops(&hp, (double)kr[k].tokens, (double)kr[k].markers);
        skycmd_response_free(resp);
    }
    for (long long i = 0; i < A.questions; i++) req_flops += kr[i % N_KINDS].flops;

    /* ---- warm-up and the timed requests ---- */
    for (long long i = 0; i < A.warmup; i++) {
        double dt, ct;
        if (timed_decide(sess, req, &dt, &ct, NULL)) goto out;
    }
    size_t cap = A.iters ? (size_t)A.iters : 1000, n = 0;
    size_t min_iters = A.iters ? (size_t)A.iters : 5;
    if (!(samples = malloc(2 * cap * sizeof *samples))) goto out;
    double *csamples = samples + cap; /* CPU time of each timed request */
    double start = now_s();
    while (n < cap) {
        if (timed_decide(sess, req, &samples[n], &csamples[n], NULL)) goto out;
        n++;
        if (!A.iters && n >= min_iters && now_s() - start >= A.seconds) break;
    }
    stats req_st = summarize(samples, n), cpu_st = summarize(csamples, n);
    double *per_q = malloc(n * sizeof *per_q);
    if (!per_q) goto out;
    for (size_t i = 0; i < n; i++) per_q[i] = samples[i] / (double)A.questions;
    stats q_st = summarize(per_q, n);
    free(per_q);

    /* ---- single-question requests, kinds interleaved ---- */
    stats single_all = {0, NAN, NAN, NAN, NAN, NAN};
    if (A.single) {
        size_t scap = A.iters ? (size_t)A.iters : 1000;
        double *all = malloc(N_KINDS * scap * sizeof *all);
        for (int k = 0; k < N_KINDS && all; k++)
            if (!(kr[k].samples = malloc(scap * sizeof(double)))) {
                free(all);
                all = NULL;
            }
        if (!all) {
            fprintf(stderr, "skycmd bench: out of memory\n");
            goto out;
        }
        size_t na = 0;
        start = now_s();
        for (size_t i = 0; i < scap; i++) {
            for (int k = 0; k < N_KINDS; k++) {
                if (timed_decide(sess, single[k], &kr[k].samples[i], NULL, NULL)) {
                    free(all);
                    goto out;
                }
                all[na++] = kr[k].samples[i];
                kr[k].n = i + 1;
            }
            if (!A.iters && i + 1 >= min_iters && now_s() - start >= A.seconds) break;
        }
        for (int k = 0; k < N_KINDS; k++) kr[k].st = summarize(kr[k].samples, kr[k].n);
        single_all = summarize(all, na);
        free(all);
    }

    /* ---- peak probe (after the timing so it does not heat the other measurements) ---- */
    const char *feat = skycmd_cpu_features();
    const char *kernels = skycmd_kernels();
    peak_isa isa = strstr(feat, "avx512f") ? PEAK_AVX512
                   : strstr(feat, "avx2") ? PEAK_AVX2
                   : strstr(feat, "neon") ? PEAK_NEON : PEAK_SCALAR;
    if (!peak_isa_supported(isa)) isa = peak_best_isa();
    double peak1 = NAN, peakT = NAN;
    if (A.peak_ms > 0) {
        peak1 = peak_measure(isa, 1, (double)A.peak_ms * 1e-3);
        peakT = threads > 1 ? peak_measure(isa, (int)threads, (double)A.peak_ms * 1e-3) : peak1;
    }
    long rss = rss_kb();
    if (getloadavg(la1, 3) < 0) la1[0] = -1;

    double gflops = req_st.median > 0 ? req_flops / req_st.median * 1e-9 : NAN;
    /* per CPU-second of the process: robust to time slices lost on a shared machine */
    double gflops_cpu = cpu_st.median > 0 ? req_flops / cpu_st.median * 1e-9 : NAN;
    double qps = (double)A.questions / req_st.median;
    double tps = (double)req_tokens / req_st.median;
    double gguf_bytes = (double)sb.st_size;
    double rss_bytes = (double)rss * 1024.0;

    if (A.json) {
        printf("{\"model\":");
        json_str(skycmd_model_name(model));
        printf(",\"path\":");
        json_str(A.preset ? "" : path);
        printf(",\"random\":");
        if (A.preset) json_str(A.preset);
        else printf("null");
        printf(",\"mode\":\"%s\",\"threads\":%ld,\"questions\":%lld,\"build\":", mode, threads,
               A.questions);
        json_str(skycmd_build_id());
        printf(",\"cpu_features\":");
        json_str(feat);
        printf(",\"kernels\":");
        json_str(kernels);
        printf(",\"parameters\":%lld,\"gguf_bytes\":%lld,", (long long)hp.params,
               (long long)sb.st_size);
        printf("\"hparams\":{\"embedding_length\":%lld,\"encoder_blocks\":%lld,"
               "\"feed_forward_length\":%lld,\"sliding_window\":%lld,\"sliding_window_pattern\":"
               "%lld,\"head_blocks\":%lld,\"max_tokens\":%lld},",
               (long long)hp.d, (long long)hp.layers, (long long)hp.ff, (long long)hp.window,
               (long long)hp.pattern, (long long)hp.head_layers, (long long)max_tokens);
        if (A.preset) json_num("generate_s", gen_s, 0);
        json_num("open_ms", t_open * 1e3, 0);
        json_num("load_ms", t_load * 1e3, 0);
        json_num("first_decide_ms", t_first * 1e3, 0);
        printf("\"page_cache\":\"%s\",", A.drop_cache ? "dropped" : "as found");
        printf("\"peak_rss_bytes\":%.0f,\"rss_before_load_bytes\":%.0f,", rss_bytes,
               (double)rss_before * 1024.0);
        json_num("rss_over_gguf", rss_bytes / gguf_bytes, 0);
        printf("\"request_tokens\":%lld,", (long long)req_tokens);
        json_num("request_gflop", req_flops * 1e-9, 0);
        printf("\"kinds\":{");
        for (int k = 0; k < N_KINDS; k++) {
            printf("%s\"%s\":{\"tokens\":%lld,\"markers\":%zu,", k ? "," : "", kind_name[k],
                   (long long)kr[k].tokens, kr[k].markers);
            json_num("gflop", kr[k].flops * 1e-9, !A.single);
            if (A.single) {
                json_stats_ms("single", &kr[k].st, 0);
                json_num("single_gflops", kr[k].flops / kr[k].st.median * 1e-9, 1);
            }
            printf("}");
        }
        printf("},");
        json_stats_ms("request", &req_st, 0);
        json_stats_ms("per_question", &q_st, 0);
        if (A.single) json_stats_ms("single_question", &single_all, 0);
        json_num("questions_per_s", qps, 0);
        json_num("tokens_per_s", tps, 0);
        json_num("gflops", gflops, 0);
        json_stats_ms("request_cpu", &cpu_st, 0);
        json_num("gflops_per_cpu_s", gflops_cpu, 0);
        json_num("rss_added_bytes", rss_bytes - (double)rss_before * 1024.0, 0);
        printf("\"peak\":{\"isa\":\"%s\",", peak_isa_name(isa));
        json_num("ms", (double)A.peak_ms, 0);
        json_num("gflops_1_thread", peak1, 0);
        json_num("gflops_threads", peakT, 0);
        json_num("fraction_of_1_thread", gflops / peak1, 0);
        json_num("fraction_of_threads", gflops / peakT, 0);
        json_num("cpu_fraction_of_1_thread", gflops_cpu / peak1, 1);
        printf("},\"loadavg_start\":[%.2f,%.2f,%.2f],\"loadavg_end\":[%.2f,%.2f,%.2f]}\n",
               la0[0], la0[1], la0[2], la1[0], la1[1], la1[2]);
    } else {
        printf("skycmd bench: %s (%s%s%s), %s, %ld thread%s, %s\n", skycmd_model_name(model),
               A.preset ? "random " : path, A.preset ? A.preset : "", "", mode, threads,
               threads == 1 ? "" : "s", skycmd_build_id());
        printf("  cpu features           %s\n", feat);
        printf("  kernels                %s\n", kernels);
        printf("  parameters             %lld   GGUF %.1f MB   d=%lld layers=%lld+%lld ff=%lld "
               "window=%lld/%lld\n", (long long)hp.params, gguf_bytes / 1e6, (long long)hp.d,
               (long long)hp.layers, (long long)hp.head_layers, (long long)hp.ff,
               (long long)hp.window, (long long)hp.pattern);
        if (A.preset) printf("  generate               %.2f s (child process)\n", gen_s);
        printf("  load                   %.3f ms (open %.3f ms + first session; page cache %s)\n",
               t_load * 1e3, t_open * 1e3, A.drop_cache ? "dropped" : "as found");
        printf("  first decide           %.3f ms\n", t_first * 1e3);
        printf("  peak RSS               %.1f MB (%.2fx the GGUF; %.1f MB before the load)\n",
               rss_bytes / 1e6, rss_bytes / gguf_bytes, (double)rss_before * 1024.0 / 1e6);
        printf("  request                %lld questions, %lld tokens, %.3f GFLOP\n", A.questions,
               (long long)req_tokens, req_flops * 1e-9);
        for (int k = 0; k < N_KINDS; k++)
            printf("    %-8s             %lld tokens, %zu markers, %.4f GFLOP\n", kind_name[k],
                   (long long)kr[k].tokens, kr[k].markers, kr[k].flops * 1e-9);
        text_stats("request latency", &req_st);
        text_stats("per question", &q_st);
        if (A.single) {
            text_stats("single question (all)", &single_all);
            for (int k = 0; k < N_KINDS; k++) {
                char label[40];
                snprintf(label, sizeof label, "single %s", kind_name[k]);
                text_stats(label, &kr[k].st);
            }
        }
        printf("  throughput             %.1f questions/s, %.0f tokens/s\n", qps, tps);
        printf("  compute                %.2f GFLOP/s", gflops);
        if (A.peak_ms > 0) {
            printf(" = %.1f%% of 1-thread %s peak %.1f GFLOP/s", 100 * gflops / peak1,
                   peak_isa_name(isa), peak1);
            if (threads > 1)
                printf(", %.1f%% of %ld-thread peak %.1f", 100 * gflops / peakT, threads, peakT);
        }
        printf("\n  compute per CPU-s      %.2f GFLOP per CPU-second (CPU %.3f ms per request)",
               gflops_cpu, cpu_st.median * 1e3);
        if (A.peak_ms > 0) printf(" = %.1f%% of one core's peak", 100 * gflops_cpu / peak1);
        printf("\n  load average           %.2f at start, %.2f at end\n", la0[0], la1[0]);
    }
    rc = fflush(stdout) == 0 ? 0 : 1;
out:
    for (int k = 0; k < N_KINDS; k++) {
        free(kr[k].samples);
        skycmd_request_free(single[k]);
    }
    free(samples);
    free(body);
    free(state);
    skycmd_request_free(req);
    skycmd_session_free(sess);
    skycmd_model_free(model);
    skycmd_options_free(opts);
    skycmd_error_free(err);
    if (have_tmp) {
        if (gguf[0]) unlink(gguf);
        rmdir(tmpdir);
    }
    return rc;
}
