/* cmd_decide.c - `skycmd decide [MODEL.gguf] REQUEST.json|-`: answer one /v1/systemone
 * request and print the response JSON (public API only). Without MODEL the built-in
 * default model answers (models/s1-pico-flappy.gguf, a trained Flappy Drone model). With
 * --random PRESET the model is a deterministic random one written to a temporary file
 * first (removed once loaded). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define DECIDE_MAX_BODY ((size_t)16 << 20)

static void usage(FILE *out) {
    fprintf(out,
            "usage: skycmd decide [MODEL.gguf | --random PRESET] REQUEST.json|- [options]\n"
            "       skycmd decide MODEL.gguf            (the request from stdin)\n"
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
            "  --q8               Q8_0 weights made at load (calibrated outlier columns),\n"
            "                     two-pass int8 activations\n"
            "  --q8-fast          Q8_0 weights, single-pass int8 activations (fastest)\n"
            "  --no-calib         Q8_0 weights without calibration (alone: two-pass activations)\n"
            "  --threads N        compute threads (0 = one per core; default 1)\n"
            "  --max-tokens N     sequence budget instead of the model's decision.max_tokens\n"
            "  --min-confidence X|JSON\n"
            "                     abstention gate (laya's min_confidence): a number in [0, 1] or\n"
            "                     a per-bucket map such as '{\"choice:2\": 0.6, \"default\": 0.5}';\n"
            "                     answers then carry \"abstention\" and \"abstention_threshold\"\n"
            "                     (a request's own \"min_confidence\" wins)\n"
            "output:\n"
            "  --model-name NAME  the \"model\" reported in the response\n"
            "  --pretty           indent the response\n"
            "  -h, --help         show this help\n"
            "\n"
            "exit status: 0 answered, 1 error (message on stderr), 2 usage error\n"
            "examples:\n"
            "  skycmd decide examples/flappy-drone.json --pretty\n"
            "  skycmd decide s1-pico.gguf examples/flappy-drone.json --pretty\n"
            "  skycmd decide --random s1-pico examples/flappy-drone.json --q8\n");
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

int cmd_decide(int argc, char **argv) {
    cli_model_args m = CLI_MODEL_ARGS_UNSET;
    const char *random = NULL, *name = NULL, *min_conf = NULL;
    int64_t threads = CLI_UNSET, max_tokens = CLI_UNSET;
    int pretty = 0, q8 = 0, q8_fast = 0, no_calib = 0;
    const cli_opt opts[] = {
        {"--random", NULL, CLI_STRING, &random, 0, 0, NULL},
        CLI_OPTS_SEED(m),
        CLI_OPTS_TYPE(m),
        {"--q8", NULL, CLI_FLAG, &q8, 0, 0, NULL},
        {"--q8-fast", NULL, CLI_FLAG, &q8_fast, 0, 0, NULL},
        {"--no-calib", NULL, CLI_FLAG, &no_calib, 0, 0, NULL},
        {"--max-tokens", NULL, CLI_INT, &max_tokens, SKYCMD_OPT_MAX_TOKENS, 0, NULL},
        {"--model-name", NULL, CLI_STRING, &name, SKYCMD_OPT_MODEL_NAME, 0, NULL},
        /* a session option: range checked here, set on the session below */
        {"--threads", NULL, CLI_INT, &threads, 0, SKYCMD_OPT_THREADS, NULL},
        {"--pretty", NULL, CLI_FLAG, &pretty, 0, 0, NULL},
        {"--min-confidence", NULL, CLI_STRING, &min_conf, 0, 0, NULL},
    };
    const cli_cmd cmd = {"decide", usage, opts, sizeof opts / sizeof opts[0], 0, 2, 0};
    const char *pos[2];
    int n_pos, rc = cli_parse(&cmd, argc, argv, pos, &n_pos);
    if (rc != CLI_CONTINUE) return rc;
    /* decide REQ | decide MODEL (request on stdin) | decide MODEL REQ | decide --random P [REQ] */
    char default_model[4300];
    const char *model_path = NULL, *req_path = "-";
    if (random) {
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
    if (random && n_pos > 1) return cli_usage_error(&cmd, "unexpected argument '%s'", pos[1]);
    if (random && (rc = cli_check_preset(&cmd, "--random", random))) return rc;
    if (!random && (m.seed != CLI_UNSET || m.massive != CLI_UNSET || m.type != CLI_UNSET ||
                    m.head_type != CLI_UNSET))
        return cli_usage_error(&cmd, "--seed, --massive, --type and --head-type only apply with --random");
    if (q8 && q8_fast) return cli_usage_error(&cmd, "--q8 and --q8-fast exclude each other");
    if (model_path && strcmp(model_path, "-") == 0 && strcmp(req_path, "-") == 0)
        return cli_usage_error(&cmd, "the model and the request cannot both come from stdin");

    /* read the request first: a bad path should not cost a model load */
    char *body = NULL;
    size_t len = 0;
    if (cli_read_input(cmd.name, req_path, DECIDE_MAX_BODY, &body, &len)) return 1;

    int weights = SKYCMD_WEIGHTS_F32, acts = CLI_UNSET;
    if (q8 || q8_fast || no_calib) {
        weights = no_calib ? SKYCMD_WEIGHTS_Q8_PLAIN : SKYCMD_WEIGHTS_Q8;
        acts = q8_fast ? SKYCMD_ACT_Q8 : SKYCMD_ACT_Q8X2;
    }
    skycmd_model *model = NULL;
    skycmd_session *sess = NULL;
    char *resp = NULL;
    cli_run run;
    if ((rc = cli_begin(&run, &cmd, random ? "random" : NULL))) {
        free(body);
        return rc;
    }
    int st = skycmd_options_set_int(run.opts, SKYCMD_OPT_WEIGHTS, weights);
    if (!st && random) {
        if (cli_temp_new(&run.tmp, cmd.name, "model.gguf")) {
            rc = cli_abort(&run, 1);
            goto out;
        }
        model_path = run.tmp.path;
        st = skycmd_random_model(random, model_path, run.opts, run.err);
    } else if (!st && cli_stdin_file(&run, &model_path)) {
        rc = 1; /* the run is released */
        goto out;
    }
    if (!st) st = skycmd_model_open(model_path, run.opts, &model, run.err);
    if (st) {
        rc = cli_end(&run, st);
        goto out;
    }
    cli_temp_free(&run.tmp); /* the model keeps its mapping; the name is not needed */
    rc = 1;
    if ((st = skycmd_session_new(model, &sess))) {
        fprintf(stderr, "skycmd decide: %s\n", skycmd_strerror(st));
    } else if (threads != CLI_UNSET &&
               (st = skycmd_session_set_int(sess, SKYCMD_OPT_THREADS, threads))) {
        fprintf(stderr, "skycmd decide: --threads %lld: %s\n", (long long)threads,
                skycmd_session_errmsg(sess));
    } else if (acts != CLI_UNSET &&
               (st = skycmd_session_set_int(sess, SKYCMD_OPT_ACTIVATIONS, acts))) {
        fprintf(stderr, "skycmd decide: int8 activations: %s\n", skycmd_session_errmsg(sess));
    } else if (min_conf &&
               (st = skycmd_session_set_string(sess, SKYCMD_OPT_MIN_CONFIDENCE, min_conf))) {
        fprintf(stderr, "skycmd decide: --min-confidence: %s\n", skycmd_session_errmsg(sess));
        rc = 2;
    } else if ((st = skycmd_decide_json(sess, body, len, &resp))) {
        fprintf(stderr, "skycmd decide: %s (%s)\n", skycmd_session_errmsg(sess),
                skycmd_status_name(st));
    } else {
        if (pretty) print_pretty(resp);
        else printf("%s\n", resp);
        rc = cli_flush_stdout(cmd.name);
    }
    cli_end(&run, SKYCMD_OK);
out:
    skycmd_string_free(resp);
    skycmd_session_free(sess);
    skycmd_model_free(model);
    free(body);
    return rc;
}
