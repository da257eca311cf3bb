/* cmd_serve.c - `skycmd serve`: parse the options, then run the HTTP server (src/serve). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "serve.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: skycmd serve [--model [NAME=]PATH [--model ...]] [options]\n"
            "\n"
            "Serve POST /v1/systemone (llama-server compatible envelope), GET /health (/healthz),\n"
            "GET /v1/models, GET /metrics and GET /openapi.json (the contract) over HTTP/1.1.\n"
            "SIGTERM/SIGINT: the listening socket closes, requests in flight are answered, then\n"
            "exit 0. SIGHUP: every --model is reloaded from its file (a failing file keeps the old).\n"
            "\n"
            "models:\n"
            "  -m, --model [NAME=]PATH  a GGUF decision model; repeat to load several. The request's\n"
            "                           \"model\" picks one by NAME (default NAME: the model's own\n"
            "                           name); absent, \"jev-latest\" or \"default\" = the first model.\n"
            "                           Without --model: the built-in s1-pico-flappy (as decide)\n"
            "      --q8                 keep matrices as Q8_0 at load (calibrated outlier columns)\n"
            "      --no-calib           with --q8: plain Q8_0, no outlier columns\n"
            "      --q8-fast            --q8 plus single-pass int8 activations\n"
            "      --q8-row             int8 with one scale per weight row and per activation\n"
            "                           row (calibrated outlier columns; the fastest int8 mode)\n"
            "      --bf16x3             the default: matrix products on AMX-BF16 tiles (f32\n"
            "                           weights as bf16 hi+lo, three products: within 1e-4 of\n"
            "                           laya); plain f32 where the CPU has no AMX-BF16\n"
            "      --f32                f32 products on the FMA kernels everywhere (exact path)\n"
            "      --max-tokens N       override decision.max_tokens (sequence budget)\n"
            "network:\n"
            "      --host HOST          address to bind (default 127.0.0.1, loopback only)\n"
            "      --port PORT          TCP port (default 8080; 0 = any free port, printed)\n"
            "      --api-key KEY        require 'Authorization: Bearer KEY' (all but /health)\n"
            "      --api-key-file F     read the key from file F (first line); or set SKYCMD_API_KEY\n"
            "      --max-connections N  open connections at most (default 512); past it new\n"
            "                           connections are closed at once\n"
            "      --max-connections-per-ip N  at most N of them from one client address\n"
            "                           (default 0 = no per-address cap)\n"
            "      --timeout S          idle keep-alive timeout and longest wait for a worker,\n"
            "                           seconds (default 30; 0 = none)\n"
            "      --header-timeout S   a request's headers must arrive within S s (default 10)\n"
            "      --body-timeout S     its body within S s after them (default 30); else 408\n"
            "      --drain-timeout S    SIGTERM: wait at most S s for requests in flight (default 30)\n"
            "      --cors-origin O      send Access-Control-Allow-Origin: O (and answer preflights)\n"
            "limits:\n"
            "      --max-body BYTES     largest request body (default 2097152; k/m suffixes)\n"
            "      --max-questions N    questions per request (default 256) -> 413 above\n"
            "      --queue N            requests waiting for a worker (default 256) -> 429 above\n"
            "      --max-buffered BYTES request bytes buffered across all connections (default:\n"
            "                           1/8 of the RAM, 64 MiB..4 GiB) -> 503 + Retry-After above\n"
            "      --batch-max N        requests one worker answers together (default 8, 1..32;\n"
            "                           1 = no batching)\n"
            "      --batch-window-us U  how long a worker waits for a batch to fill (default 0)\n"
            "      --inline-max-us U    a request alone whose model answers within U us of\n"
            "                           compute is answered on the I/O thread, without the\n"
            "                           hand-off to a worker (default 1000; 0 = never)\n"
            "      --tournament-group N answer a choice over N options by elimination in groups\n"
            "                           of N (2..100; laya serve's LAYA_TOURNAMENT_GROUP; default\n"
            "                           0 = off; a body's \"tournament_group\" overrides it)\n"
            "      --max-token-budget N a request's max_len / head_max_len at most (default 8192)\n"
            "                           -> 422 above (laya serve's LAYA_MAX_TOKEN_BUDGET)\n"
            "      --max-batch-tokens N POST /v1/systemone/batch: states x questions x max_len one\n"
            "                           pass may hold (default 131072, LAYA_MAX_BATCH_TOKENS)\n"
            "threads:\n"
            "  -t, --threads N          worker threads answering requests (default: CPU count)\n"
            "      --compute-threads N|auto  threads inside one request (default auto: a\n"
            "                           lone request uses the idle cores, under load each\n"
            "                           request runs on one core; N: always up to N)\n"
            "      --poll-us U          after each response keep the I/O thread's core awake\n"
            "                           (spinning at idle priority) for U us, so that a\n"
            "                           keep-alive client's next request finds it running: lower\n"
            "                           latency on virtual machines for a core's spin (default 0\n"
            "                           = off; at most 1000000)\n"
            "logging:\n"
            "      --access-log         one line per request on stderr (method, path, status,\n"
            "                           questions, tokens, micros); off by default\n"
            "      --log-format F       text (default) or json\n"
            "  -v, --verbose            access log plus model loading and HTTP diagnostics\n"
            "  -h, --help               this help\n"
            "\n"
            "example:\n"
            "  skycmd serve --model pico=s1-pico.gguf --port 8080 &\n"
            "  curl -s http://127.0.0.1:8080/v1/systemone -H 'Content-Type: application/json' \\\n"
            "       -d @examples/flappy-drone.json\n");
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out) {
    if (!s || !*s || *s == '-') return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return -1;
    uint64_t mul = 1;
    if (*end == 'k' || *end == 'K') mul = 1024, end++;
    else if (*end == 'm' || *end == 'M') mul = 1024 * 1024, end++;
    if (*end) return -1;
    if (v > max / mul) return -1;
    *out = (uint64_t)v * mul;
    return 0;
}

static char *read_key_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "skycmd serve: cannot open --api-key-file '%s': %s\n", path, strerror(errno));
        return NULL;
    }
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *nl = strpbrk(buf, "\r\n");
    if (nl) *nl = '\0';
    n = strlen(buf);
    while (n && (buf[n - 1] == ' ' || buf[n - 1] == '\t')) buf[--n] = '\0';
    char *s = buf;
    while (*s == ' ' || *s == '\t') s++;
    if (!*s) {
        fprintf(stderr, "skycmd serve: --api-key-file '%s' holds no key\n", path);
        return NULL;
    }
    return strdup(s);
}

#define NEED_ARG()                                                                  \
    do {                                                                            \
        if (i + 1 >= argc) {                                                        \
            fprintf(stderr, "skycmd serve: %s needs a value\n\n", a);               \
            usage(stderr);                                                          \
            return 2;                                                               \
        }                                                                           \
        v = argv[++i];                                                              \
    } while (0)

#define BAD_VALUE()                                                                 \
    do {                                                                            \
        fprintf(stderr, "skycmd serve: invalid value '%s' for %s\n", v, a);         \
        return 2;                                                                   \
    } while (0)

int cmd_serve(int argc, char **argv) {
    struct serve_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.host = "127.0.0.1";
    cfg.port = 8080;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cfg.workers = ncpu > 0 ? (int)(ncpu > 256 ? 256 : ncpu) : 1;
    cfg.compute_threads = SERVE_COMPUTE_AUTO;
    cfg.max_body = 2u * 1024u * 1024u;
    cfg.max_questions = 256;
    cfg.max_token_budget = 8192;
    cfg.max_batch_tokens = 131072;
    cfg.timeout_s = 30;
    cfg.queue = 256;
    cfg.max_connections = 512;
    cfg.header_timeout_s = 10;
    cfg.body_timeout_s = 30;
    cfg.drain_timeout_s = 30;
    cfg.batch_max = 8;
    cfg.inline_max_us = 1000;
    {
        long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
        uint64_t ram = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : (uint64_t)1 << 30;
        uint64_t b = ram / 8, lo = (uint64_t)64 << 20, hi = (uint64_t)4 << 30;
        cfg.max_buffered = (size_t)(b < lo ? lo : b > hi ? hi : b);
    }
    cfg.weights = SKYCMD_WEIGHTS_BF16X3;
    cfg.activations = -1;
    const char *key = NULL, *key_file = NULL;
    int q8 = 0, no_calib = 0, q8_fast = 0, q8_row = 0, bf16x3 = 0, f32 = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        uint64_t u = 0;
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--model") || !strcmp(a, "-m")) {
            NEED_ARG();
            if (cfg.n_models >= SERVE_MAX_MODELS) {
                fprintf(stderr, "skycmd serve: at most %d models\n", SERVE_MAX_MODELS);
                return 2;
            }
            const char *eq = strchr(v, '=');
            struct serve_model_spec *m = &cfg.models[cfg.n_models++];
            if (eq && eq != v && !memchr(v, '/', (size_t)(eq - v))) {
                char *name = strndup(v, (size_t)(eq - v)); /* lives for the process */
                if (!name) return 1;
                m->name = name;
                m->path = eq + 1;
            } else {
                m->name = NULL;
                m->path = v;
            }
            if (!*m->path) BAD_VALUE();
        } else if (!strcmp(a, "--host")) {
            NEED_ARG();
            if (!*v) BAD_VALUE();
            cfg.host = v;
        } else if (!strcmp(a, "--port")) {
            NEED_ARG();
            if (parse_u64(v, 65535, &u)) BAD_VALUE();
            cfg.port = (int)u;
        } else if (!strcmp(a, "--threads") || !strcmp(a, "-t")) {
            NEED_ARG();
            if (parse_u64(v, 1024, &u) || u == 0) BAD_VALUE();
            cfg.workers = (int)u;
        } else if (!strcmp(a, "--compute-threads")) {
            NEED_ARG();
            if (!strcmp(v, "auto")) {
                cfg.compute_threads = SERVE_COMPUTE_AUTO;
            } else {
                if (parse_u64(v, 256, &u) || u == 0) BAD_VALUE();
                cfg.compute_threads = (int)u;
            }
        } else if (!strcmp(a, "--api-key")) {
            NEED_ARG();
            if (!*v) BAD_VALUE();
            key = v;
        } else if (!strcmp(a, "--api-key-file")) {
            NEED_ARG();
            key_file = v;
        } else if (!strcmp(a, "--max-body")) {
            NEED_ARG();
            if (parse_u64(v, (uint64_t)1 << 30, &u) || u == 0) BAD_VALUE();
            cfg.max_body = (size_t)u;
        } else if (!strcmp(a, "--tournament-group")) {
            NEED_ARG();
            if (parse_u64(v, 100, &u) || u == 1) BAD_VALUE();
            cfg.tournament_group = (int64_t)u;
        } else if (!strcmp(a, "--max-questions")) {
            NEED_ARG();
            if (parse_u64(v, 1000000, &u) || u == 0) BAD_VALUE();
            cfg.max_questions = (size_t)u;
        } else if (!strcmp(a, "--max-token-budget")) {
            NEED_ARG();
            if (parse_u64(v, (uint64_t)1 << 20, &u) || u == 0) BAD_VALUE();
            cfg.max_token_budget = (int64_t)u;
        } else if (!strcmp(a, "--max-batch-tokens")) {
            NEED_ARG();
            if (parse_u64(v, (uint64_t)1 << 40, &u) || u == 0) BAD_VALUE();
            cfg.max_batch_tokens = (int64_t)u;
        } else if (!strcmp(a, "--timeout")) {
            NEED_ARG();
            if (parse_u64(v, 86400, &u)) BAD_VALUE();
            cfg.timeout_s = (unsigned)u;
        } else if (!strcmp(a, "--header-timeout") || !strcmp(a, "--body-timeout") ||
                   !strcmp(a, "--drain-timeout")) {
            NEED_ARG();
            if (parse_u64(v, 86400, &u) || u == 0) BAD_VALUE();
            if (a[2] == 'h') cfg.header_timeout_s = (unsigned)u;
            else if (a[2] == 'b') cfg.body_timeout_s = (unsigned)u;
            else cfg.drain_timeout_s = (unsigned)u;
        } else if (!strcmp(a, "--max-buffered")) {
            NEED_ARG();
            if (parse_u64(v, (uint64_t)1 << 40, &u) || u == 0) BAD_VALUE();
            cfg.max_buffered = (size_t)u;
        } else if (!strcmp(a, "--batch-max")) {
            NEED_ARG();
            if (parse_u64(v, 32, &u) || u == 0) BAD_VALUE();
            cfg.batch_max = (int)u;
        } else if (!strcmp(a, "--batch-window-us")) {
            NEED_ARG();
            if (parse_u64(v, 1000000, &u)) BAD_VALUE();
            cfg.batch_window_us = (unsigned)u;
        } else if (!strcmp(a, "--inline-max-us")) {
            NEED_ARG();
            if (parse_u64(v, 10000000, &u)) BAD_VALUE();
            cfg.inline_max_us = (unsigned)u;
        } else if (!strcmp(a, "--poll-us")) {
            NEED_ARG();
            if (parse_u64(v, 1000000, &u)) BAD_VALUE();
            cfg.poll_us = (unsigned)u;
        } else if (!strcmp(a, "--cors-origin")) {
            NEED_ARG();
            if (!*v || strpbrk(v, "\r\n")) BAD_VALUE();
            cfg.cors_origin = v;
        } else if (!strcmp(a, "--queue")) {
            NEED_ARG();
            if (parse_u64(v, 1000000, &u) || u == 0) BAD_VALUE();
            cfg.queue = (size_t)u;
        } else if (!strcmp(a, "--max-connections-per-ip")) {
            NEED_ARG();
            if (parse_u64(v, 65536, &u)) BAD_VALUE();
            cfg.max_connections_per_ip = (unsigned)u;
        } else if (!strcmp(a, "--max-connections")) {
            NEED_ARG();
            if (parse_u64(v, 65536, &u) || u == 0) BAD_VALUE();
            cfg.max_connections = (unsigned)u;
        } else if (!strcmp(a, "--max-tokens")) {
            NEED_ARG();
            if (parse_u64(v, INT32_MAX, &u) || u == 0) BAD_VALUE();
            cfg.max_tokens = (int64_t)u;
        } else if (!strcmp(a, "--q8")) {
            q8 = 1;
        } else if (!strcmp(a, "--no-calib")) {
            no_calib = 1;
        } else if (!strcmp(a, "--q8-fast")) {
            q8_fast = 1;
        } else if (!strcmp(a, "--q8-row")) {
            q8_row = 1;
        } else if (!strcmp(a, "--bf16x3")) {
            bf16x3 = 1;
        } else if (!strcmp(a, "--f32")) {
            f32 = 1;
        } else if (!strcmp(a, "--log-format")) {
            NEED_ARG();
            if (!strcmp(v, "text")) cfg.log_format = SERVE_LOG_TEXT;
            else if (!strcmp(v, "json")) cfg.log_format = SERVE_LOG_JSON;
            else BAD_VALUE();
        } else if (!strcmp(a, "--access-log")) {
            cfg.access_log = 1;
        } else if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) {
            cfg.verbose = 1;
            cfg.access_log = 1;
        } else {
            fprintf(stderr, "skycmd serve: unknown option '%s'\n\n", a);
            usage(stderr);
            return 2;
        }
    }
    static char default_model[4300]; /* lives for the process, like the --model paths */
    if (cfg.n_models == 0) { /* the built-in model (cli_default_model) */
        if (cli_default_model("serve", default_model, sizeof default_model)) return 1;
        cfg.models[cfg.n_models++] = (struct serve_model_spec){.path = default_model};
    }
    if (no_calib && !q8) {
        fprintf(stderr, "skycmd serve: --no-calib needs --q8\n");
        return 2;
    }
    if (q8_row && (q8 || q8_fast || no_calib)) {
        fprintf(stderr, "skycmd serve: --q8-row excludes --q8, --q8-fast and --no-calib\n");
        return 2;
    }
    if (bf16x3 && (q8 || q8_fast || no_calib || q8_row)) {
        fprintf(stderr, "skycmd serve: --bf16x3 excludes --q8, --q8-fast, --q8-row and --no-calib\n");
        return 2;
    }
    if (f32 && (q8 || q8_fast || no_calib || q8_row || bf16x3)) {
        fprintf(stderr, "skycmd serve: --f32 excludes --q8, --q8-fast, --q8-row, --no-calib and --bf16x3\n");
        return 2;
    }
    if (key && key_file) {
        fprintf(stderr, "skycmd serve: give --api-key or --api-key-file, not both\n");
        return 2;
    }
    if (q8 || q8_fast) cfg.weights = no_calib ? SKYCMD_WEIGHTS_Q8_PLAIN : SKYCMD_WEIGHTS_Q8;
    if (q8_fast) cfg.activations = SKYCMD_ACT_Q8;
    if (q8_row) cfg.weights = SKYCMD_WEIGHTS_Q8_ROW;
    if (f32) cfg.weights = SKYCMD_WEIGHTS_F32;
    if (key_file) {
        cfg.api_key = read_key_file(key_file);
        if (!cfg.api_key) return 2;
    } else if (key) {
        cfg.api_key = strdup(key);
    } else {
        const char *env = getenv("SKYCMD_API_KEY");
        if (env && *env) cfg.api_key = strdup(env);
    }
    int rc = serve_run(&cfg);
    if (cfg.api_key) {
        /* do not leave the secret in freed memory */
        volatile char *p = cfg.api_key;
        for (size_t i = 0; p[i]; i++) p[i] = 0;
        free(cfg.api_key);
    }
    for (int i = 0; i < cfg.n_models; i++) free((char *)cfg.models[i].name);
    return rc;
}
