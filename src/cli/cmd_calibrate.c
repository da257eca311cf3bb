/* cmd_calibrate.c - `skycmd calibrate`: refit a model's temperatures on labelled data
 * (laya.calibrate) and write a copy of the GGUF file with only those keys changed. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: skycmd calibrate MODEL.gguf LABELLED.jsonl -o OUT.gguf [options]\n"
            "\n"
            "Refit the per-type and per-option-count temperatures of a decision model exactly\n"
            "as laya 0.4.15's fit_temperature_map does (NLL + LBFGS on log T; a bucket needs\n"
            "2000 records, a type 10; fits clamped to [0.5, 5]), print the expected calibration\n"
            "error per type before and after, and write OUT.gguf: a copy of MODEL.gguf in which\n"
            "only the <arch>.decision.temperature.* keys differ.\n"
            "\n"
            "LABELLED.jsonl: one /v1/systemone request per line plus its labels, either\n"
            "  \"expected\": {\"<question>\": <choice key | score level | noul true/false>}\n"
            "or laya's \"targets\": {\"<question>\": [probability per option]} (docs/calibrate.md);\n"
            "'-' reads them from standard input.\n"
            "\n"
            "  -o, --output OUT.gguf  the model to write (omit with --dry-run)\n"
            "  --dry-run              fit and report only\n"
            "  --json                 print the report as one JSON document\n"
            "  --abstention           also fit per-bucket abstention thresholds\n"
            "                         (fit_abstention_thresholds; usable as --min-confidence)\n"
            "  --target-error X       error tolerated among accepted answers (default 0.1)\n"
            "  --min-bucket-n N       records a bucket needs for a threshold (default 100)\n"
            "  --no-conservative      no one-error margin in the thresholds\n"
            "  --compute-threads N    compute threads (0 = one per core; default 1)\n"
            "  --threads N            alias of --compute-threads, kept for a release\n"
            "  -q, --quiet            no progress line and no summary on stderr\n"
            "  -h, --help             show this help\n"
            "\n"
            "On a terminal a progress line (the labelled file read, rate, ETA) is drawn on\n"
            "stderr and a summary printed when the fit is done.\n"
            "\n"
            "exit status: 0 done, 1 error (message on stderr), 2 usage error\n");
}

int cmd_calibrate(int argc, char **argv) {
    const char *out = NULL, *target = NULL;
    int json = 0, dry = 0, abst = 0, no_cons = 0, quiet = 0;
    int64_t threads = CLI_UNSET, min_n = CLI_UNSET;
    const cli_opt opts[] = {
        {"--output", "-o", CLI_STRING, &out, 0, 0, NULL},
        {"--dry-run", NULL, CLI_FLAG, &dry, 0, 0, NULL},
        {"--json", NULL, CLI_FLAG, &json, SKYCMD_OPT_JSON, 0, NULL},
        {"--abstention", NULL, CLI_FLAG, &abst, 0, 0, NULL},
        {"--target-error", NULL, CLI_STRING, &target, SKYCMD_OPT_CALIB_TARGET_ERROR, 0, NULL},
        {"--min-bucket-n", NULL, CLI_INT, &min_n, SKYCMD_OPT_CALIB_ABSTAIN_MIN_N, 0, NULL},
        {"--no-conservative", NULL, CLI_FLAG, &no_cons, 0, 0, NULL},
        {"--compute-threads", NULL, CLI_INT, &threads, SKYCMD_OPT_THREADS, 0, NULL},
        {"--threads", NULL, CLI_INT, &threads, SKYCMD_OPT_THREADS, 0, NULL}, /* the old name */
        CLI_OPT_QUIET(quiet),
    };
    const cli_cmd cmd = {"calibrate", usage, opts, sizeof opts / sizeof opts[0], 2, 2, 0};
    const char *pos[2];
    int n_pos, rc = cli_parse(&cmd, argc, argv, pos, &n_pos);
    if (rc != CLI_CONTINUE) return rc;
    if (!out && !dry) return cli_usage_error(&cmd, "give -o OUT.gguf (or --dry-run)");
    if (out && dry) return cli_usage_error(&cmd, "-o and --dry-run exclude each other");
    if ((target || min_n != CLI_UNSET || no_cons) && !abst)
        return cli_usage_error(&cmd, "--target-error, --min-bucket-n and --no-conservative need --abstention");
    if (target) {
        char *end = NULL;
        double v = strtod(target, &end);
        if (!target[0] || *end || !(v >= 0.0 && v <= 1.0))
            return cli_usage_error(&cmd, "--target-error must be a number in [0, 1], got '%s'", target);
    }
    struct stat in_st, out_st; /* the same file by any name (./m.gguf, a link) */
    if (out && (strcmp(out, pos[0]) == 0 ||
                (stat(pos[0], &in_st) == 0 && stat(out, &out_st) == 0 && in_st.st_dev == out_st.st_dev &&
                 in_st.st_ino == out_st.st_ino)))
        return cli_usage_error(&cmd, "the output must not be the input model");
    cli_run run;
    cli_set_quiet(quiet);
    if ((rc = cli_begin(&run, &cmd, "calibrate"))) return rc;
    const char *labelled = pos[1];
    if ((rc = cli_stdin_file(&run, &labelled))) return rc; /* '-': the labelled lines from stdin */
    /* the library reports bytes of the labelled file: show them */
    cli_meter_start(&run.meter, cmd.name, NULL, CLI_METER_BYTES, 0);
    int st = SKYCMD_OK;
    if (abst) st = skycmd_options_set_int(run.opts, SKYCMD_OPT_CALIB_ABSTENTION, 1);
    if (!st && no_cons) st = skycmd_options_set_int(run.opts, SKYCMD_OPT_CALIB_CONSERVATIVE, 0);
    char *report = NULL;
    if (!st) st = skycmd_calibrate(pos[0], labelled, out, run.opts, &report, run.err);
    if (!st)
        cli_meter_finish(&run.meter, run.meter.updated ? run.meter.done : CLI_METER_UNKNOWN,
                         "of labelled requests", NULL);
    rc = cli_end(&run, st);
    if (!st && report) {
        fputs(report, stdout);
        if (!json && out) printf("wrote %s\n", out);
        rc = cli_flush_stdout(cmd.name);
    }
    skycmd_string_free(report);
    return rc;
}
