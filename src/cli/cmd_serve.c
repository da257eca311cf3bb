/* cmd_serve.c - `skycmd serve`: parse the options with the shared option table (cli.h),
 * then run the HTTP server (src/serve). Usage errors keep serve's own wording (report()). */
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
            "Serve POST /v1/systemone (llama-server compatible envelope), GET /health (also\n"
            "/v1/health, /healthz), GET /v1/models (also /models), GET /metrics and GET\n"
            "/openapi.json (the contract) over HTTP/1.1.\n"
            "SIGTERM/SIGINT: the listening socket closes, requests in flight are answered, then\n"
            "exit 0; while the models load (/health: 503), the server stops at once, ending by\n"
            "the signal. SIGHUP: every --model is reloaded from its file (a failing file keeps\n"
            "the old).\n"
            "\n"
            "models:\n"
            "  -m, --model [NAME=]PATH  a GGUF decision model; repeat to load several. The request's\n"
            "                           \"model\" picks one by NAME (default NAME: the model's own\n"
            "                           name); absent, \"jev-latest\" or \"default\" = the first model.\n"
            "                           Without --model: the built-in s1-pico-flappy (as decide)\n"
            "      --int8               the int8 to use: one scale per weight row and per\n"
            "                           activation row (calibrated outlier columns),\n"
            "                           single-pass activations but at the third of the\n"
            "                           matrices where a probe finds one pass costs most;\n"
            "                           made at load, or stored once by skycmd quantize\n"
            "                           --int8 (the same as --q8-row --q8-fast)\n"
            "      --bf16x3             matrix products as bf16 hi+lo, three products (within\n"
            "                           1e-4 of laya) on AMX-BF16 tiles (the default there) or\n"
            "                           arm64 BFMMLA (FEAT_BF16); plain f32 where neither\n"
            "      --f32                f32 products on the FMA kernels everywhere (exact path)\n"
            "    other int8 modes (docs/quantization.md):\n"
            "      --q8                 calibrated Q8_0 matrices (outlier columns in f32),\n"
            "                           two-pass activations: the int8 closest to laya,\n"
            "                           slower than --int8\n"
            "      --no-calib           Q8_0 weights without calibration (alone: two-pass\n"
            "                           activations)\n"
            "      --q8-fast            --q8 plus single-pass int8 activations\n"
            "      --q8-row             --int8's weights, two-pass activations everywhere\n"
            "      --max-tokens N       override decision.max_tokens (sequence budget)\n"
            "network:\n"
            "      --host HOST          address to bind (default 127.0.0.1, loopback only)\n"
            "      --port PORT          TCP port (default 8080; 0 = any free port, printed)\n"
            "      --api-key KEY        require 'Authorization: Bearer KEY' (all but /health and\n"
            "                           /openapi.json)\n"
            "      --api-key-file F     read the key from file F (first line)\n"
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
            "      --auto-tournament-group N  a choice whose options do not fit one pass is\n"
            "                           answered in groups of N (default 16, laya's default\n"
            "                           group; 0 = refuse it with 422, as laya's Agent does)\n"
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
            "      --print-config       print the configuration (flags over environment over\n"
            "                           defaults) as JSON and exit, without serving\n"
            "  -h, --help               this help\n"
            "\n"
            "environment: every option can be set as SKYCMD_ + its long name upper-cased, '-'\n"
            "as '_' (SKYCMD_PORT=8080, SKYCMD_THREADS=4, SKYCMD_API_KEY=..., SKYCMD_Q8=1);\n"
            "SKYCMD_MODEL takes several [NAME=]PATH separated by ','. A flag's variable is\n"
            "1/true/yes/on or 0/false/no/off; an empty variable is unset. An option given on\n"
            "the command line wins over its variable (and over the variables of the options it\n"
            "excludes: the weights modes, --api-key and --api-key-file).\n"
            "\n"
            "example:\n"
            "  skycmd serve --model pico=s1-pico.gguf --port 8080 &\n"
            "  curl -s http://127.0.0.1:8080/v1/systemone -H 'Content-Type: application/json' \\\n"
            "       -d @examples/flappy-drone.json\n");
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

/* The options whose values are not plain numbers (each a CLI_CALL of the table). */
static int take_model(void *ctx, const char *v) {
    struct serve_config *cfg = ctx;
    if (cfg->n_models >= SERVE_MAX_MODELS) {
        fprintf(stderr, "skycmd serve: at most %d models\n", SERVE_MAX_MODELS);
        return 2;
    }
    const char *eq = strchr(v, '=');
    struct serve_model_spec *m = &cfg->models[cfg->n_models++];
    if (eq && eq != v && !memchr(v, '/', (size_t)(eq - v))) {
        char *name = strndup(v, (size_t)(eq - v)); /* lives for the process */
        if (!name) return 1;
        m->name = name;
        m->path = eq + 1;
    } else {
        m->name = NULL;
        m->path = v;
    }
    return *m->path ? 0 : CLI_BAD_VALUE;
}

/* A value that may not be empty (--host, --api-key). */
static int take_word(void *ctx, const char *v) {
    if (!*v) return CLI_BAD_VALUE;
    *(const char **)ctx = v;
    return 0;
}

/* A header value: not empty, no line breaks (--cors-origin). */
static int take_header(void *ctx, const char *v) {
    return strpbrk(v, "\r\n") ? CLI_BAD_VALUE : take_word(ctx, v);
}

/* --compute-threads auto|N (N in 1..256). */
static int take_compute(void *ctx, const char *v) {
    int *dest = ctx;
    if (!strcmp(v, "auto")) {
        *dest = SERVE_COMPUTE_AUTO;
        return 0;
    }
    return cli_number_take(&(cli_number){dest, sizeof *dest, 1, 256, CLI_NUM_SIZE}, v);
}

/* --tournament-group: 0 (off) or 2..100. */
static int take_group(void *ctx, const char *v) {
    int64_t g = 0;
    if (cli_number_take(&(cli_number){&g, sizeof g, 0, 100, CLI_NUM_SIZE}, v) || g == 1)
        return CLI_BAD_VALUE;
    *(int64_t *)ctx = g;
    return 0;
}

static void set_defaults(struct serve_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->host = "127.0.0.1";
    cfg->port = 8080;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->workers = ncpu > 0 ? (int)(ncpu > 256 ? 256 : ncpu) : 1;
    cfg->compute_threads = SERVE_COMPUTE_AUTO;
    cfg->max_body = 2u * 1024u * 1024u;
    cfg->max_questions = 256;
    cfg->max_token_budget = 8192;
    cfg->auto_tournament_group = 16;
    cfg->max_batch_tokens = 131072;
    cfg->timeout_s = 30;
    cfg->queue = 256;
    cfg->max_connections = 512;
    cfg->header_timeout_s = 10;
    cfg->body_timeout_s = 30;
    cfg->drain_timeout_s = 30;
    cfg->batch_max = 8;
    cfg->inline_max_us = 1000;
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    uint64_t ram = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : (uint64_t)1 << 30;
    uint64_t b = ram / 8, lo = (uint64_t)64 << 20, hi = (uint64_t)4 << 30;
    cfg->max_buffered = (size_t)(b < lo ? lo : b > hi ? hi : b);
    cfg->weights = cli_default_weights();
    cfg->activations = -1;
}

/* The flags that pick the weights mode, and the API key as given. */
typedef struct serve_flags {
    cli_compute compute;
    int print_config;
    const char *key, *key_file;
} serve_flags;

/* serve's own wording of a usage error: a bad value without the usage, and an argument
 * that is not an option (serve takes none) as an unknown option. */
/* A usage error; env_var: the SKYCMD_* variable the faulty option came from, or NULL. */
static int report(const cli_cmd *cmd, const cli_error *e, const char *env_var) {
    if (e->fault == CLI_FAULT_BAD_VALUE) {
        char rule[256];
        cli_value_rule(e->opt, rule, sizeof rule);
        if (env_var)
            fprintf(stderr, "skycmd serve: %s=%s: invalid value for %s%s%s\n", env_var, e->value,
                    e->opt->name, rule[0] ? ", which takes " : "", rule);
        else
            fprintf(stderr, "skycmd serve: invalid value '%s' for %s%s%s\n", e->value, e->arg,
                    rule[0] ? ", which takes " : "", rule);
        return 2;
    }
    if (e->fault == CLI_FAULT_NO_VALUE) return cli_usage_error(cmd, "%s needs a value", e->arg);
    return e->fault == CLI_FAULT_UNKNOWN ? cli_unknown_option(cmd, e->arg)
                                         : cli_usage_error(cmd, "unexpected argument '%s'", e->arg);
}

/* Fill cfg and f from the arguments: CLI_CONTINUE, or the exit status. */
static int parse_args(int argc, char **argv, struct serve_config *cfg, serve_flags *f, char ***args, int *n_args) {
    const int64_t M = (int64_t)1 << 20, T = (int64_t)1 << 40;
    static const char *const log_formats[] = {"text", "json", NULL}; /* = serve_log_format */
    const cli_opt opts[] = {
        CLI_OPT_CALL("--model", "-m", take_model, cfg),
        CLI_OPT_CALL("--host", NULL, take_word, &cfg->host),
        CLI_OPT_NUM("--port", NULL, cfg->port, 0, 65535, CLI_NUM_SIZE),
        CLI_OPT_NUM("--threads", "-t", cfg->workers, 1, 1024, CLI_NUM_SIZE),
        CLI_OPT_CALL("--compute-threads", NULL, take_compute, &cfg->compute_threads),
        CLI_OPT_CALL("--api-key", NULL, take_word, &f->key),
        {"--api-key-file", NULL, CLI_STRING, &f->key_file, 0, 0, NULL},
        CLI_OPT_NUM("--max-body", NULL, cfg->max_body, 1, (int64_t)1 << 30, CLI_NUM_SIZE),
        CLI_OPT_CALL("--tournament-group", NULL, take_group, &cfg->tournament_group),
        CLI_OPT_CALL("--auto-tournament-group", NULL, take_group, &cfg->auto_tournament_group),
        CLI_OPT_NUM("--max-questions", NULL, cfg->max_questions, 1, 1000000, CLI_NUM_SIZE),
        CLI_OPT_NUM("--max-token-budget", NULL, cfg->max_token_budget, 1, M, CLI_NUM_SIZE),
        CLI_OPT_NUM("--max-batch-tokens", NULL, cfg->max_batch_tokens, 1, T, CLI_NUM_SIZE),
        CLI_OPT_NUM("--timeout", NULL, cfg->timeout_s, 0, 86400, CLI_NUM_SIZE),
        CLI_OPT_NUM("--header-timeout", NULL, cfg->header_timeout_s, 1, 86400, CLI_NUM_SIZE),
        CLI_OPT_NUM("--body-timeout", NULL, cfg->body_timeout_s, 1, 86400, CLI_NUM_SIZE),
        CLI_OPT_NUM("--drain-timeout", NULL, cfg->drain_timeout_s, 1, 86400, CLI_NUM_SIZE),
        CLI_OPT_NUM("--max-buffered", NULL, cfg->max_buffered, 1, T, CLI_NUM_SIZE),
        CLI_OPT_NUM("--batch-max", NULL, cfg->batch_max, 1, 32, CLI_NUM_SIZE),
        CLI_OPT_NUM("--batch-window-us", NULL, cfg->batch_window_us, 0, 1000000, CLI_NUM_SIZE),
        CLI_OPT_NUM("--inline-max-us", NULL, cfg->inline_max_us, 0, 10000000, CLI_NUM_SIZE),
        CLI_OPT_NUM("--poll-us", NULL, cfg->poll_us, 0, 1000000, CLI_NUM_SIZE),
        CLI_OPT_CALL("--cors-origin", NULL, take_header, &cfg->cors_origin),
        CLI_OPT_NUM("--queue", NULL, cfg->queue, 1, 1000000, CLI_NUM_SIZE),
        CLI_OPT_NUM("--max-connections-per-ip", NULL, cfg->max_connections_per_ip, 0, 65536,
                    CLI_NUM_SIZE),
        CLI_OPT_NUM("--max-connections", NULL, cfg->max_connections, 1, 65536, CLI_NUM_SIZE),
        CLI_OPT_NUM("--max-tokens", NULL, cfg->max_tokens, 1, INT32_MAX, CLI_NUM_SIZE),
        CLI_COMPUTE_OPTS(&f->compute),
        {"--log-format", NULL, CLI_CHOICE, &cfg->log_format, 0, 0, log_formats},
        {"--access-log", NULL, CLI_FLAG, &cfg->access_log, 0, 0, NULL},
        {"--verbose", "-v", CLI_FLAG, &cfg->verbose, 0, 0, NULL},
        {"--print-config", NULL, CLI_FLAG, &f->print_config, 0, 0, NULL},
    };
    const cli_cmd cmd = {"serve", usage, opts, sizeof opts / sizeof opts[0], 0, 0, 0};
    /* every option also from SKYCMD_<NAME> (docs/serve.md "Configuration") */
    static const char *const lists[] = {"--model", NULL};
    static const char *const weights[] = {"--int8", "--q8", "--no-calib", "--q8-fast", "--q8-row", "--bf16x3", "--f32", NULL};
    static const char *const key[] = {"--api-key", "--api-key-file", NULL};
    static const char *const *const groups[] = {weights, key, NULL};
    *args = cli_env_args(&cmd, "SKYCMD_", lists, groups, argc, argv, n_args);
    if (!*args) return 2;
    const char *pos[1];
    int n_pos = 0;
    cli_error e;
    int rc = cli_scan(&cmd, *n_args, *args, pos, &n_pos, &e);
    if (rc == CLI_FAULT) {
        /* the environment's options come first, before argv[1..] */
        char var[96];
        const char *env_var = NULL;
        for (int i = 1; i <= *n_args - argc && e.fault == CLI_FAULT_BAD_VALUE; i++)
            if (e.value == (*args)[i]) {
                cli_env_name("SKYCMD_", e.opt, var, sizeof var);
                env_var = var;
            }
        return report(&cmd, &e, env_var);
    }
    if (cfg->verbose) cfg->access_log = 1;
    return rc;
}

/* The weights mode from the flags (after checking that they go together); the API key
 * from --api-key, --api-key-file or $SKYCMD_API_KEY. Returns 0, else the exit status. */
static int apply_flags(struct serve_config *cfg, serve_flags *f) {
    int acts;
    const char *clash = cli_compute_resolve(&f->compute, &cfg->weights, &acts);
    if (!clash && f->key && f->key_file) clash = "give --api-key or --api-key-file, not both";
    if (clash) {
        fprintf(stderr, "skycmd serve: %s\n", clash);
        return 2;
    }
    cfg->activations = acts == CLI_UNSET ? -1 : acts;
    if (f->key_file) cfg->api_key = read_key_file(f->key_file);
    else if (f->key && *f->key) cfg->api_key = strdup(f->key);
    return f->key_file && !cfg->api_key ? 2 : 0;
}

/* v as a JSON string (null for NULL). */
static void json_str(const char *v) {
    if (!v) {
        printf("null");
        return;
    }
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    putchar('"');
}

static void print_str(const char *key, const char *v, int last) {
    printf("  \"%s\": ", key);
    json_str(v);
    printf("%s\n", last ? "" : ",");
}

/* --print-config: the configuration the server would run with (flags over environment over
 * defaults), as JSON on stdout; the API key only as whether one is set. */
static int print_config(const struct serve_config *c) {
    static const char *const weights[] = {"f32", "q8", "q8-plain", "bf16x3", "q8-row"};
    printf("{\n  \"models\": [");
    for (int i = 0; i < c->n_models; i++) {
        printf("%s\n    {\"name\": ", i ? "," : "");
        json_str(c->models[i].name);
        printf(", \"path\": ");
        json_str(c->models[i].path);
        printf("}");
    }
    printf("\n  ],\n");
    print_str("host", c->host, 0);
    printf("  \"port\": %d,\n  \"threads\": %d,\n", c->port, c->workers);
    if (c->compute_threads == SERVE_COMPUTE_AUTO) print_str("compute_threads", "auto", 0);
    else printf("  \"compute_threads\": %d,\n", c->compute_threads);
    printf("  \"api_key\": %s,\n", c->api_key ? "\"set\"" : "null");
    print_str("weights", c->weights >= 0 && c->weights < 5 ? weights[c->weights] : "?", 0);
    printf("  \"activations\": %d,\n  \"max_tokens\": %lld,\n", c->activations, (long long)c->max_tokens);
    printf("  \"max_body\": %zu,\n  \"max_questions\": %zu,\n  \"queue\": %zu,\n  \"max_buffered\": %zu,\n",
           c->max_body, c->max_questions, c->queue, c->max_buffered);
    printf("  \"timeout\": %u,\n  \"header_timeout\": %u,\n  \"body_timeout\": %u,\n  \"drain_timeout\": %u,\n",
           c->timeout_s, c->header_timeout_s, c->body_timeout_s, c->drain_timeout_s);
    printf("  \"max_connections\": %u,\n  \"max_connections_per_ip\": %u,\n", c->max_connections,
           c->max_connections_per_ip);
    printf("  \"batch_max\": %d,\n  \"batch_window_us\": %u,\n  \"inline_max_us\": %u,\n  \"poll_us\": %u,\n",
           c->batch_max, c->batch_window_us, c->inline_max_us, c->poll_us);
    printf("  \"tournament_group\": %lld,\n  \"auto_tournament_group\": %lld,\n",
           (long long)c->tournament_group, (long long)c->auto_tournament_group);
    printf("  \"max_token_budget\": %lld,\n  \"max_batch_tokens\": %lld,\n", (long long)c->max_token_budget,
           (long long)c->max_batch_tokens);
    print_str("cors_origin", c->cors_origin, 0);
    print_str("log_format", c->log_format == SERVE_LOG_JSON ? "json" : "text", 0);
    printf("  \"access_log\": %s,\n  \"verbose\": %s\n}\n", c->access_log ? "true" : "false",
           c->verbose ? "true" : "false");
    return fflush(stdout) == 0 ? 0 : 1;
}

int cmd_serve(int argc, char **argv) {
    struct serve_config cfg;
    serve_flags f = {0};
    set_defaults(&cfg);
    char **args = NULL; /* argv with the environment's options: cfg points into it */
    int n_args = 0;
    int rc = parse_args(argc, argv, &cfg, &f, &args, &n_args);
    if (rc != CLI_CONTINUE) {
        cli_env_args_free(args, n_args);
        return rc;
    }
    static char default_model[4300]; /* lives for the process, like the --model paths */
    rc = 0;
    if (cfg.n_models == 0) { /* the built-in model (cli_default_model) */
        if (cli_default_model("serve", default_model, sizeof default_model)) rc = 1;
        else cfg.models[cfg.n_models++] = (struct serve_model_spec){.path = default_model};
    }
    if (!rc && !(rc = apply_flags(&cfg, &f))) rc = f.print_config ? print_config(&cfg) : serve_run(&cfg);
    if (cfg.api_key) {
        /* do not leave the secret in freed memory */
        volatile char *p = cfg.api_key;
        for (size_t i = 0; p[i]; i++) p[i] = 0;
        free(cfg.api_key);
    }
    for (int i = 0; i < cfg.n_models; i++) free((char *)cfg.models[i].name);
    cli_env_args_free(args, n_args);
    return rc;
}
