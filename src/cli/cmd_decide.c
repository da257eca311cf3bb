/* cmd_decide.c - `skycmd decide [MODEL.gguf] REQUEST.json|-`: answer one /v1/systemone
 * request and print the response JSON (public API only). Without MODEL the built-in
 * default model answers (models/s1-pico-flappy.gguf, a trained Flappy Drone model). With
 * --random PRESET the model is a deterministic random one written to a temporary file
 * first (removed once loaded). */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

#define DECIDE_MAX_BODY ((size_t)16 << 20)

static void usage(FILE *out) {
    fprintf(out,
            "usage: skycmd decide [MODEL.gguf | --random PRESET] REQUEST.json|- [options]\n"
            "       skycmd decide MODEL.gguf            (the request from stdin)\n"
            "       skycmd decide [MODEL.gguf] --batch IN.jsonl [-o OUT.jsonl] [--jobs N]\n"
            "\n"
            "Answer a /v1/systemone request (read from REQUEST.json, or stdin when it is '-')\n"
            "with a decision model and print the response JSON:\n"
            "  {\"model\", \"answers\", \"usage\": {\"input_tokens\", \"output_tokens\": 0}}\n"
            "\n"
            "model:\n"
            "  (none)             the built-in model s1-pico-flappy, trained on Flappy Drone\n"
            "                     states (<datadir>/skycmd/models/; $SKYCMD_DEFAULT_MODEL\n"
            "                     overrides). A lone argument that is a GGUF file or a\n"
            "                     directory is the model, anything else the request\n"
            "  MODEL.gguf         a GGUF decision model; '-' reads it from stdin (the request\n"
            "                     then comes from a file); a Laya checkpoint directory is\n"
            "                     converted in memory, as `skycmd convert` would write it\n"
            "  --random PRESET    a deterministic random model instead: s1-pico, s1-nano,\n"
            "                     s1-micro, base or large (-xt variants too), the same bytes as\n"
            "                     `skycmd random PRESET`, written to a temporary file and removed\n"
            "  --seed N           seed of --random (default 42)\n"
            "  --massive N        planted massive channels of --random (default 0)\n"
            "  --type T           encoder matrix type of --random: f32, f16 (default), bf16, q8_0\n"
            "  --head-type T      decision head type of --random (default f32)\n"
            "compute:\n"
            "  --int8             the int8 to use: one scale per weight row and per activation\n"
            "                     row (calibrated outlier columns), single-pass activations but\n"
            "                     at the third of the matrices where a probe finds one pass\n"
            "                     costs most; made at load, or stored once by skycmd quantize\n"
            "                     --int8 so that loads skip the calibration (--q8-row --q8-fast)\n"
            "  --bf16x3           matrix products as bf16 hi+lo, three products (within 1e-4\n"
            "                     of laya) on AMX-BF16 tiles (the default there) or arm64\n"
            "                     BFMMLA (FEAT_BF16); plain f32 where the CPU has neither\n"
            "  --f32              f32 products on the FMA kernels everywhere (the exact path)\n"
            "other int8 modes (docs/quantization.md):\n"
            "  --q8               calibrated Q8_0 weights (outlier columns in f32), two-pass\n"
            "                     activations: the int8 closest to laya, slower than --int8\n"
            "  --q8-fast          --q8's weights, single-pass activations\n"
            "  --q8-row           --int8's weights, two-pass activations everywhere\n"
            "  --no-calib         Q8_0 weights without calibration (alone: two-pass activations)\n"
            "  --compute-threads N  compute threads (0 = one per core; default 1), also of\n"
            "                     the calibration an int8 mode runs at load\n"
            "  --threads N        alias of --compute-threads, kept for a release\n"
            "  --max-tokens N     sequence budget instead of the model's decision.max_tokens\n"
            "  --max-token-budget N  the largest max_len / head_max_len a request may set\n"
            "                     (default 8192, as laya serve's LAYA_MAX_TOKEN_BUDGET)\n"
            "long states and many options (laya's predict_long and LAYA_TOURNAMENT_GROUP):\n"
            "  --long             read a state longer than one sequence in overlapping windows\n"
            "                     (answers name their deciding window, usage.windows counts them)\n"
            "  --window N         state tokens per window (default: laya's, capped at the room\n"
            "                     the questions leave)\n"
            "  --stride N         tokens between window starts (default: half the window)\n"
            "  --tournament-group N  answer a choice over N options by elimination in groups\n"
            "                     of N (2..100)\n"
            "  --report-truncation  add laya's usage.truncated, state_tokens, state_tokens_dropped,\n"
            "                     truncated_questions (and usage.options) to the response\n"
            "                     (a warning on stderr names anything cut either way)\n"
            "batch (one request per line; one output line per non-blank input line, in order):\n"
            "  --batch FILE       answer every line of FILE ('-': stdin), streamed in windows;\n"
            "                     a bad line gets {\"error\":{\"line\",\"status\",\"message\"}}\n"
            "                     and is reported on stderr; blank lines are skipped. A\n"
            "                     progress line (requests/s, ETA) on a terminal, and a summary\n"
            "                     line (answered, failed) at the end, on stderr\n"
            "  -o, --output FILE  write the answers to FILE instead of stdout\n"
            "  --jobs N           answer with N threads, one session each (0 = one per core;\n"
            "                     default 1); --compute-threads sets each one's threads\n"
            "  --batch-window N   lines read, sorted by length and answered at once (default\n"
            "                     1024): memory stays bounded whatever the file's size\n"
            "  --fail-fast        stop at the first bad line (its window is still written)\n"
            "  --no-progress      alias of --quiet\n"
            "  --min-confidence X|JSON\n"
            "                     abstention gate (laya's min_confidence): a number in [0, 1] or\n"
            "                     a per-bucket map such as '{\"choice:2\": 0.6, \"default\": 0.5}';\n"
            "                     answers then carry \"abstention\" and \"abstention_threshold\"\n"
            "                     (a request's own \"min_confidence\" wins)\n"
            "output:\n"
            "  --model-name NAME  the \"model\" reported in the response\n"
            "  --pretty           indent the response\n"
            "  -q, --quiet        no progress line (the model's load, --random's model,\n"
            "                     --batch) and no --batch summary on stderr; errors and\n"
            "                     warnings are still printed\n"
            "  -h, --help         show this help\n"
            "\n"
            "exit status: 0 answered (with --batch: every line), 1 error (message on stderr;\n"
            "             with --batch: a line failed), 2 usage error; SIGINT/SIGTERM while\n"
            "             the model loads cancel the load and end by that signal (130, 143)\n"
            "examples:\n"
            "  skycmd decide examples/flappy-drone.json --pretty\n"
            "  skycmd decide s1-pico.gguf examples/flappy-drone.json --pretty\n"
            "  skycmd decide --random s1-pico examples/flappy-drone.json --q8\n"
            "  skycmd decide s1-pico.gguf --batch requests.jsonl -o answers.jsonl --jobs 2\n");
}

/* Re-indent compact JSON without touching any value (number text stays as printed). */
static void print_pretty(const char *s) {
    int depth = 0, in_str = 0, esc = 0;
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (in_str) {
            putchar(c);
            if (esc) esc = 0;
            else if (c == '\\') esc = 1;
            else if (c == '"') in_str = 0;
            continue;
        }
        switch (c) {
        case '"': in_str = 1; putchar(c); break;
        case '{': case '[':
            putchar(c);
            if (p[1] == '}' || p[1] == ']') { putchar(*++p); break; }
            depth++;
            printf("\n%*s", depth * 2, "");
            break;
        case '}': case ']':
            depth--;
            printf("\n%*s%c", depth * 2, "", c);
            break;
        case ',': printf(",\n%*s", depth * 2, ""); break;
        case ':': fputs(": ", stdout); break;
        default: putchar(c); break;
        }
    }
    putchar('\n');
}

/* The long-state, tournament and truncation options of the session. The truncation
 * report is always recorded so that a cut can be warned about: for the accessors only and
 * bounded (3: the output unchanged, and a huge state is tokenized only as far as a sequence
 * can use it, so the counts of a cut state are lower bounds); --report-truncation puts it
 * in the response with laya's exact counts (1). */
static int set_long_options(skycmd_session *sess, int is_long, int64_t window, int64_t stride,
                            int64_t group, int report_truncation) {
    int st = skycmd_session_set_int(sess, SKYCMD_OPT_REPORT_TRUNCATION, report_truncation ? 1 : 3);
    if (!st && is_long) st = skycmd_session_set_int(sess, SKYCMD_OPT_LONG, 1);
    if (!st && window != CLI_UNSET) st = skycmd_session_set_int(sess, SKYCMD_OPT_WINDOW, window);
    if (!st && stride != CLI_UNSET) st = skycmd_session_set_int(sess, SKYCMD_OPT_STRIDE, stride);
    if (!st && group != CLI_UNSET) st = skycmd_session_set_int(sess, SKYCMD_OPT_TOURNAMENT_GROUP, group);
    return st;
}

/* Decide, print one warning line on stderr for every cut (the state, or options that no
 * longer have a token span of their own), and hand back the response JSON. counts_exact:
 * the report's counts are the state's (1), or lower bounds (the bounded report, 3). */
static int decide_warn(skycmd_session *sess, const char *body, size_t len, int counts_exact, char **json) {
    skycmd_request *req = NULL;
    skycmd_response *resp = NULL;
    int st = skycmd_request_parse(body, len, &req);
    if (st) {
        fprintf(stderr, "skycmd decide: %s (%s)\n", req ? skycmd_request_errmsg(req) : skycmd_strerror(st),
                skycmd_status_name(st));
    } else if ((st = skycmd_decide(sess, req, &resp))) {
        fprintf(stderr, "skycmd decide: %s (%s)\n", skycmd_session_errmsg(sess), skycmd_status_name(st));
    } else {
        size_t n = skycmd_response_answer_count(resp);
        int64_t dropped = skycmd_response_state_tokens_dropped(resp);
        if (skycmd_response_truncated(resp) > 0 && dropped > 0) {
            if (counts_exact)
                fprintf(stderr, "skycmd decide: warning: the state was cut: %lld of its %lld tokens were not read "
                        "(questions:", (long long)dropped, (long long)skycmd_response_state_tokens(resp));
            else
                fprintf(stderr, "skycmd decide: warning: the state was cut: at least %lld of its tokens were not "
                        "read (questions:", (long long)dropped);
            for (size_t i = 0; i < n; i++)
                if (skycmd_response_answer_truncated(resp, i) == 1)
                    fprintf(stderr, " %s", skycmd_response_answer_id(resp, i));
            fprintf(stderr, "); --long reads all of it\n");
        }
        for (size_t i = 0; i < n; i++) {
            int64_t distinct = skycmd_response_answer_options_distinct(resp, i);
            if (distinct >= 0)
                fprintf(stderr, "skycmd decide: warning: question %s: its %zu options were cut to fit the "
                        "question's token budget and only %lld of them can still be told apart%s\n",
                        skycmd_response_answer_id(resp, i), skycmd_response_option_count(resp, i),
                        (long long)distinct,
                        skycmd_response_answer_type(resp, i) == SKYCMD_QTYPE_CHOICE
                            ? "; --tournament-group N reads them in groups" : "");
        }
        const char *j = skycmd_response_json(resp);
        size_t jn = j ? strlen(j) + 1 : 0;
        if (j && (*json = malloc(jn))) memcpy(*json, j, jn);
        if (!j || !*json) {
            fprintf(stderr, "skycmd decide: out of memory writing the response\n");
            st = SKYCMD_E_NOMEM;
        }
    }
    skycmd_response_free(resp);
    skycmd_request_free(req);
    return st;
}

/* A stop signal (SIGINT, SIGTERM, SIGHUP) while the model loads (a large model, or --q8's
 * calibration, takes seconds to minutes). The first one is only recorded: the load's
 * progress callback (load_progress) then asks the library to stop, skycmd_model_open
 * returns SKYCMD_E_CANCELLED within milliseconds with everything freed, and decide says
 * "interrupted while loading the model", removes the temporary model (--random, or a model
 * read from stdin) and ends the process by that signal, as an interrupted
 * random/convert/quantize and serve's first load do (the shell sees 128 + the signal: 130,
 * 143, 129). A second one (the operator insists, or the load is in a step between two of
 * the library's checks) says so, removes the temporary model and ends the process at once.
 * Only async-signal-safe calls in the handler. */
static cli_temp load_temp;
static struct sigaction load_saved[3];
static const int load_signals[3] = {SIGINT, SIGTERM, SIGHUP};
static volatile sig_atomic_t load_stop_signal;

static void say(const char *s) {
    ssize_t w = write(STDERR_FILENO, s, strlen(s));
    (void)w;
}

static const char *load_signal_name(int sig) {
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
}

static void on_load_signal(int sig) {
    if (!load_stop_signal) {
        load_stop_signal = sig; /* the next progress report cancels the load */
        return;
    }
    say("skycmd decide: ");
    say(load_signal_name(sig));
    say(" again while loading the model: stopped\n");
    if (load_temp.path[0]) unlink(load_temp.path);
    if (load_temp.dir[0]) rmdir(load_temp.dir);
    signal(sig, SIG_DFL);
    raise(sig); /* delivered when the handler returns: the process ends by sig */
}

/* The load's progress: the meter, and a stop once a signal came (non-zero: cancel). */
static int load_progress(void *meter, uint64_t done, uint64_t total) {
    if (load_stop_signal) return 1;
    return cli_meter_progress(meter, done, total);
}

static void load_guard(const cli_temp *tmp) {
    load_temp = *tmp;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_load_signal;
    sa.sa_flags = SA_RESTART; /* the first signal only records itself: reads go on */
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; i++) sigaddset(&sa.sa_mask, load_signals[i]);
    for (int i = 0; i < 3; i++) sigaction(load_signals[i], &sa, &load_saved[i]);
}

static void load_unguard(void) {
    for (int i = 0; i < 3; i++) sigaction(load_signals[i], &load_saved[i], NULL);
}

int cmd_decide(int argc, char **argv) {
    cli_model_args m = CLI_MODEL_ARGS_UNSET;
    const char *random = NULL, *name = NULL, *min_conf = NULL;
    int64_t threads = CLI_UNSET, max_tokens = CLI_UNSET, budget = CLI_UNSET;
    int pretty = 0, is_long = 0, report_truncation = 0;
    cli_compute compute = {0};
    int64_t window = CLI_UNSET, stride = CLI_UNSET, group = CLI_UNSET;
    const char *batch = NULL, *output = NULL;
    int64_t jobs = CLI_UNSET, batch_window = CLI_UNSET;
    int fail_fast = 0, quiet = 0;
    const cli_opt opts[] = {
        {"--random", NULL, CLI_STRING, &random, 0, 0, NULL},
        CLI_OPTS_SEED(m),
        CLI_OPTS_TYPE(m),
        CLI_COMPUTE_OPTS(&compute),
        {"--max-tokens", NULL, CLI_INT, &max_tokens, SKYCMD_OPT_MAX_TOKENS, 0, NULL},
        {"--max-token-budget", NULL, CLI_INT, &budget, 0, SKYCMD_OPT_MAX_TOKEN_BUDGET, NULL},
        {"--model-name", NULL, CLI_STRING, &name, SKYCMD_OPT_MODEL_NAME, 0, NULL},
        /* set on the open's options (the int8 calibration at load runs on these threads)
         * and on the session below */
        {"--compute-threads", NULL, CLI_INT, &threads, SKYCMD_OPT_THREADS, 0, NULL},
        {"--threads", NULL, CLI_INT, &threads, SKYCMD_OPT_THREADS, 0, NULL}, /* the old name */
        {"--pretty", NULL, CLI_FLAG, &pretty, 0, 0, NULL},
        {"--long", NULL, CLI_FLAG, &is_long, 0, 0, NULL},
        {"--window", NULL, CLI_INT, &window, 0, SKYCMD_OPT_WINDOW, NULL},
        {"--stride", NULL, CLI_INT, &stride, 0, SKYCMD_OPT_STRIDE, NULL},
        {"--tournament-group", NULL, CLI_INT, &group, 0, SKYCMD_OPT_TOURNAMENT_GROUP, NULL},
        {"--report-truncation", NULL, CLI_FLAG, &report_truncation, 0, 0, NULL},
        {"--batch", NULL, CLI_STRING, &batch, 0, 0, NULL},
        {"--output", "-o", CLI_STRING, &output, 0, 0, NULL},
        {"--jobs", NULL, CLI_INT, &jobs, 0, SKYCMD_OPT_THREADS, NULL},
        {"--batch-window", NULL, CLI_INT, &batch_window, 0, 0, NULL},
        {"--fail-fast", NULL, CLI_FLAG, &fail_fast, 0, 0, NULL},
        CLI_OPT_QUIET(quiet),
        {"--no-progress", NULL, CLI_FLAG, &quiet, 0, 0, NULL}, /* the old name */
        {"--min-confidence", NULL, CLI_STRING, &min_conf, 0, 0, NULL},
    };
    const cli_cmd cmd = {"decide", usage, opts, sizeof opts / sizeof opts[0], 0, 2, 0};
    const char *pos[2];
    int n_pos, rc = cli_parse(&cmd, argc, argv, pos, &n_pos);
    if (rc != CLI_CONTINUE) return rc;
    /* decide REQ | decide MODEL (request on stdin) | decide MODEL REQ | decide --random P [REQ] */
    char default_model[4300];
    const char *model_path = NULL, *req_path = "-";
    if (!batch && (output || jobs != CLI_UNSET || batch_window != CLI_UNSET || fail_fast))
        return cli_usage_error(&cmd, "-o, --jobs, --batch-window and --fail-fast only apply with --batch");
    cli_set_quiet(quiet);
    if (name && !name[0]) return cli_usage_error(&cmd, "--model-name is empty");
    if (batch && pretty) return cli_usage_error(&cmd, "--pretty does not apply with --batch (one JSON line per request)");
    if (batch && (is_long || report_truncation || window != CLI_UNSET || stride != CLI_UNSET || group != CLI_UNSET ||
                  min_conf))
        return cli_usage_error(&cmd, "--long, --window, --stride, --tournament-group, --report-truncation and "
                                     "--min-confidence do not apply with --batch: give them in each request line "
                                     "(\"long\": true, \"min_confidence\": 0.6, ...)");
    if (batch && batch_window != CLI_UNSET && (batch_window < 1 || batch_window > 1000000))
        return cli_usage_error(&cmd, "--batch-window %lld: give 1..1000000 lines", (long long)batch_window);
    if (batch) {
        /* decide [MODEL] --batch FILE: a positional argument is the model */
        if (random && n_pos > 0) return cli_usage_error(&cmd, "unexpected argument '%s' (the requests come from --batch)", pos[0]);
        if (n_pos > 1) return cli_usage_error(&cmd, "unexpected argument '%s' (the requests come from --batch)", pos[1]);
        if (!random && n_pos == 1) {
            model_path = pos[0];
        } else if (!random) {
            if (cli_default_model(cmd.name, default_model, sizeof default_model)) return 1;
            model_path = default_model;
        }
        req_path = NULL;
        if (model_path && strcmp(model_path, "-") == 0 && strcmp(batch, "-") == 0)
            return cli_usage_error(&cmd, "the model and the requests cannot both come from stdin");
    } else if (random) {
        req_path = n_pos > 0 ? pos[0] : "-";
    } else if (n_pos == 2) {
        model_path = pos[0];
        req_path = pos[1];
    } else if (n_pos == 1 && (strcmp(pos[0], "-") == 0 ? 0 : cli_looks_like_model(pos[0]))) {
        model_path = pos[0];
    } else if (n_pos == 1) {
        req_path = pos[0];
        if (cli_default_model(cmd.name, default_model, sizeof default_model)) return 1;
        model_path = default_model;
    } else {
        return cli_usage_error(&cmd, "give REQUEST.json (or '-'), MODEL.gguf REQUEST.json, or --random PRESET");
    }
    if (!batch && random && n_pos > 1) return cli_usage_error(&cmd, "unexpected argument '%s'", pos[1]);
    if (random && (rc = cli_check_preset(&cmd, "--random", random))) return rc;
    if (!random && (m.seed != CLI_UNSET || m.massive != CLI_UNSET || m.type != CLI_UNSET ||
                    m.head_type != CLI_UNSET))
        return cli_usage_error(&cmd, "--seed, --massive, --type and --head-type only apply with --random");
    int weights, acts;
    const char *clash = cli_compute_resolve(&compute, &weights, &acts);
    if (clash) return cli_usage_error(&cmd, "%s", clash);
    if (!is_long && (window != CLI_UNSET || stride != CLI_UNSET))
        return cli_usage_error(&cmd, "--window and --stride only apply with --long");
    if (is_long && group != CLI_UNSET && group != 0)
        return cli_usage_error(&cmd, "--long and --tournament-group cannot be combined");
    if (group == 1) return cli_usage_error(&cmd, "--tournament-group must be 0 (off) or at least 2");
    if (req_path && model_path && strcmp(model_path, "-") == 0 && strcmp(req_path, "-") == 0)
        return cli_usage_error(&cmd, "the model and the request cannot both come from stdin");

    /* read the request first: a bad path should not cost a model load */
    char *body = NULL;
    size_t len = 0;
    if (req_path && cli_read_input(cmd.name, req_path, DECIDE_MAX_BODY, &body, &len)) return 1;

    skycmd_model *model = NULL;
    skycmd_session *sess = NULL;
    char *resp = NULL;
    cli_run run;
    if ((rc = cli_begin(&run, &cmd, random ? "random" : NULL))) {
        free(body);
        return rc;
    }
    int st = skycmd_options_set_int(run.opts, SKYCMD_OPT_WEIGHTS, weights);
    /* single-pass activations named at the open: a row-scaled model's choice for them
     * is made in the load, with its progress */
    if (!st && acts != CLI_UNSET) st = skycmd_options_set_int(run.opts, SKYCMD_OPT_ACTIVATIONS, acts);
    if (!st && random) {
        if (cli_temp_new(&run.tmp, cmd.name, "model.gguf")) {
            rc = cli_abort(&run, 1);
            goto out;
        }
        model_path = run.tmp.path;
        st = skycmd_random_model(random, model_path, run.opts, run.err);
        cli_meter_clear(&run.meter); /* a step of decide: no summary */
    } else if (!st && cli_stdin_file(&run, &model_path)) {
        rc = 1; /* the run is released */
        goto out;
    }
    if (!st) {
        /* the load's progress on a terminal (an int8 mode's calibration takes minutes on a
         * base-sized model), a step of decide: no summary */
        st = skycmd_options_set_progress(run.opts, load_progress, &run.meter);
        cli_meter_start(&run.meter, cmd.name, "load", CLI_METER_BYTES, CLI_METER_FRACTION);
        load_guard(&run.tmp);
        if (!st) st = skycmd_model_open(model_path, run.opts, &model, run.err);
        load_unguard();
        cli_meter_clear(&run.meter);
        if (load_stop_signal) {
            /* interrupted: the library freed what it made (or the load had just finished) */
            const int sig = load_stop_signal;
            fprintf(stderr, "skycmd decide: %s: interrupted while loading the model\n", load_signal_name(sig));
            skycmd_model_free(model);
            cli_abort(&run, 1); /* removes the temporary model */
            free(body);
            fflush(NULL);
            signal(sig, SIG_DFL);
            raise(sig);
            return 128 + sig; /* not reached */
        }
    }
    if (st) {
        rc = cli_end(&run, st);
        goto out;
    }
    cli_temp_free(&run.tmp); /* the model keeps its mapping; the name is not needed */
    cli_note_int8_stored(cmd.name, model, cli_compute_named(&compute));
    rc = 1;
    if (batch) {
        const cli_batch_args ba = {batch, output, jobs, batch_window, threads, budget, acts, fail_fast, !quiet};
        rc = cli_decide_batch(cmd.name, model, &ba);
    } else if ((st = skycmd_session_new(model, &sess))) {
        fprintf(stderr, "skycmd decide: %s\n", skycmd_strerror(st));
    } else if (threads != CLI_UNSET &&
               (st = skycmd_session_set_int(sess, SKYCMD_OPT_THREADS, threads))) {
        fprintf(stderr, "skycmd decide: --compute-threads %lld: %s\n", (long long)threads,
                skycmd_session_errmsg(sess));
    } else if (acts != CLI_UNSET &&
               (st = skycmd_session_set_int(sess, SKYCMD_OPT_ACTIVATIONS, acts))) {
        fprintf(stderr, "skycmd decide: int8 activations: %s\n", skycmd_session_errmsg(sess));
    } else if (budget != CLI_UNSET &&
               (st = skycmd_session_set_int(sess, SKYCMD_OPT_MAX_TOKEN_BUDGET, budget))) {
        fprintf(stderr, "skycmd decide: --max-token-budget: %s\n", skycmd_session_errmsg(sess));
    } else if (min_conf &&
               (st = skycmd_session_set_string(sess, SKYCMD_OPT_MIN_CONFIDENCE, min_conf))) {
        fprintf(stderr, "skycmd decide: --min-confidence: %s\n", skycmd_session_errmsg(sess));
        rc = 2;
    } else if ((st = set_long_options(sess, is_long, window, stride, group, report_truncation))) {
        fprintf(stderr, "skycmd decide: %s\n", skycmd_session_errmsg(sess));
    } else if ((st = decide_warn(sess, body, len, report_truncation, &resp))) {
        /* the message is printed */
    } else {
        if (pretty) print_pretty(resp);
        else printf("%s\n", resp);
        rc = cli_flush_stdout(cmd.name);
    }
    cli_end(&run, SKYCMD_OK);
out:
    free(resp); /* from decide_warn's malloc */
    skycmd_session_free(sess);
    skycmd_model_free(model);
    free(body);
    return rc;
}
