/*
 * cmd_bench.c - `skycmd bench`: time a decision model through the public API only. This
 * file is the command: its usage, its arguments (the shared option table of cli.h, with
 * bench's own wording of usage errors) and their checks; bench_measure.c measures and
 * bench_report.c prints (bench.h). Exit status: 0 done, 1 error, 2 usage error.
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

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
            "  --int8               the int8 to use: one scale per weight row and per\n"
            "                       activation row (calibrated outlier columns), single-pass\n"
            "                       activations but at the third of the matrices where a\n"
            "                       probe finds one pass costs most; made at load (timed), or\n"
            "                       stored once by skycmd quantize --int8 (--q8-row --q8-fast)\n"
            "  --bf16x3             matrix products as bf16 hi+lo, three products (within 1e-4\n"
            "                       of laya) on AMX-BF16 tiles (the default there) or arm64\n"
            "                       BFMMLA (FEAT_BF16); the f32 path where the CPU has neither\n"
            "  --f32                f32 products on the FMA kernels everywhere (the exact path)\n"
            "other int8 modes (docs/quantization.md):\n"
            "  --q8                 calibrated Q8_0 weights (outlier columns in f32), two-pass\n"
            "                       activations: the int8 closest to laya, slower than --int8\n"
            "  --q8-fast            --q8's weights, single-pass activations\n"
            "  --q8-row             --int8's weights, two-pass activations everywhere\n"
            "  --no-calib           Q8_0 weights without calibration (alone: two-pass activations)\n"
            "  --compute-threads N  compute threads of the session (0 = one per core; default 1)\n"
            "  --threads N          alias of --compute-threads, kept for a release\n"
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
            "  skycmd bench --random base --tokens 128 --compute-threads 1 --json\n");
}

/* ------------------------------------------------------------------ arguments -- */

/* --random PRESET: one of the presets (no -xt variants). */
static int take_preset(void *ctx, const char *v) {
    static const char *const names[] = {"s1-pico", "s1-nano", "s1-micro", "base", "large",
                                        "mmbert-small", "mmbert-base"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!strcmp(v, names[i])) {
            *(const char **)ctx = v;
            return 0;
        }
    }
    fprintf(stderr, "skycmd bench: --random: unknown preset '%s' (s1-pico, "
            "s1-nano, s1-micro, base, large, mmbert-small, mmbert-base)\n", v);
    return 2;
}

/* --type T of --random. */
static int take_type(void *ctx, const char *v) {
    if ((*(int *)ctx = cli_parse_type(v)) < 0) {
        fprintf(stderr, "skycmd bench: --type: unknown type '%s'\n", v);
        return 2;
    }
    return 0;
}

/* bench's own wording of a usage error: a missing or bad value without the usage, and no
 * blank line before it otherwise. */
static int report(const cli_cmd *cmd, const cli_error *e) {
    switch (e->fault) {
    case CLI_FAULT_NO_VALUE:
        fprintf(stderr, "skycmd bench: %s needs a value\n", e->arg);
        return 2;
    case CLI_FAULT_BAD_VALUE:
        fprintf(stderr, "skycmd bench: %s: bad value '%s'\n", e->arg, e->value);
        return 2;
    case CLI_FAULT_UNKNOWN:
        return cli_unknown_option(cmd, e->arg);
    case CLI_FAULT_EXTRA:
        return cli_usage_error(cmd, "unexpected argument '%s'", e->arg);
    default:
        return cli_report(cmd, e);
    }
}

/* Fill a from the arguments: CLI_CONTINUE, or the exit status (0 after --help). */
static int parse_args(int argc, char **argv, bench_args *a) {
    *a = (bench_args){.seed = 42, .questions = 3, .warmup = 3, .threads = 1, .peak_ms = 200,
                      .seconds = 3.0, .type = -1, .single = 1};
    int no_single = 0;
    const cli_opt opts[] = {
        CLI_COMPUTE_OPTS(&a->compute),
        {"--json", NULL, CLI_FLAG, &a->json, 0, 0, NULL},
        {"--drop-cache", NULL, CLI_FLAG, &a->drop_cache, 0, 0, NULL},
        {"--no-single", NULL, CLI_FLAG, &no_single, 0, 0, NULL},
        CLI_OPT_CALL("--random", NULL, take_preset, &a->preset),
        CLI_OPT_NUM("--seed", NULL, a->seed, 0, INT64_MAX, 0),
        CLI_OPT_CALL("--type", NULL, take_type, &a->type),
        CLI_OPT_NUM("--questions", NULL, a->questions, 1, 256, 0),
        CLI_OPT_NUM("--tokens", NULL, a->tokens, 1, 1 << 20, 0),
        CLI_OPT_NUM("--iters", NULL, a->iters, 1, 10000000, 0),
        CLI_OPT_NUM("--warmup", NULL, a->warmup, 0, 1000000, 0),
        CLI_OPT_NUM("--compute-threads", NULL, a->threads, 0, 1024, 0),
        CLI_OPT_NUM("--threads", NULL, a->threads, 0, 1024, 0), /* the old name */
        CLI_OPT_NUM("--peak-ms", NULL, a->peak_ms, 0, 60000, 0),
        {"--seconds", NULL, CLI_NUMBER,
         &(cli_number){&a->seconds, sizeof a->seconds, 0, 3600, CLI_NUM_REAL | CLI_NUM_ABOVE}, 0, 0,
         NULL},
        {"--save-request", NULL, CLI_STRING, &a->save_request, 0, 0, NULL},
        CLI_OPT_NUM("--max-tokens", NULL, a->max_tokens, 1, 1 << 20, 0),
    };
    /* MODEL.gguf may be "" (then a missing file, exit 1) */
    const cli_cmd cmd = {"bench", usage, opts, sizeof opts / sizeof opts[0], 0, 1, 1u};
    const char *pos[1] = {NULL};
    int n_pos = 0;
    cli_error e;
    int rc = cli_scan(&cmd, argc, argv, pos, &n_pos, &e);
    if (rc == CLI_FAULT) return report(&cmd, &e);
    if (rc != CLI_CONTINUE) return rc;
    a->model_path = n_pos ? pos[0] : NULL;
    a->single = !no_single;
    if (!a->model_path == !a->preset) {
        return cli_usage_error(&cmd, "give either MODEL.gguf or --random PRESET");
    }
    const char *why = a->type >= 0 && !a->preset ? "--type only applies to --random"
                                                  : cli_compute_resolve(&a->compute, &a->weights, &a->acts);
    if (why) {
        fprintf(stderr, "skycmd bench: %s\n", why);
        return 2;
    }
    return CLI_CONTINUE;
}

int cmd_bench(int argc, char **argv) {
    bench_args A;
    int rc = parse_args(argc, argv, &A);
    if (rc != CLI_CONTINUE) return rc;
    bench_run R;
    rc = bench_measure(&A, &R);
    if (rc == 0) {
        bench_report(&A, &R);
        rc = fflush(stdout) == 0 ? 0 : 1;
    } else if (rc == BENCH_SAVED) {
        rc = 0;
    }
    bench_free(&R);
    return rc;
}
