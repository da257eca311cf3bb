/* cmd_convert.c - `skycmd convert`: a Laya checkpoint directory (or a random preset) to GGUF. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: skycmd convert <laya_dir | --random s1-pico|s1-nano|s1-micro|base|large> <out.gguf>\n"
            "                      [--type f32|f16|bf16|q8_0] [--head-type f32|f16|bf16|q8_0]\n"
            "                      [--pre NAME] [--name NAME] [--seed N] [--massive N]\n"
            "\n"
            "Convert a Laya checkpoint (rl_agent_config.json, model.safetensors, encoder/config.json,\n"
            "tokenizer/) to one GGUF file that skycmd and llama.cpp load.\n"
            "\n"
            "  --type T       encoder matrices (default f16; with q8_0 the token embeddings stay f16)\n"
            "  --head-type T  decision head: head blocks, token_types, cls.* (default f32)\n"
            "  --pre NAME     tokenizer.ggml.pre (default gpt-2)\n"
            "  --name NAME    general.name (default: the directory name, or the preset)\n"
            "  --random P     convert a deterministic random model instead of a directory;\n"
            "                 --seed N (default 42) and --massive N (planted massive channels)\n"
            "                 apply. P-xt (e.g. s1-pico-xt) stores out-of-range temperatures.\n"
            "\n"
            "1-D tensors are always f32; a q8_0 tensor whose rows are not a multiple of 32 falls\n"
            "back to f16. The output is written to a temporary file and renamed: on failure\n"
            "nothing is left behind.\n");
}

static int parse_u64(const char *s, int64_t *out) {
    if (!s || !*s) return -1;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end || v < 0) return -1;
    *out = v;
    return 0;
}

int cmd_convert(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *random = NULL, *name = NULL, *pre = NULL;
    int type = SKYCMD_TYPE_F16, head_type = SKYCMD_TYPE_F32;
    int64_t seed = -1, massive = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        }
        int has_val = i + 1 < argc;
        if (strcmp(a, "--type") == 0 || strcmp(a, "--head-type") == 0) {
            int t = has_val ? cli_parse_type(argv[++i]) : -1;
            if (t < 0) {
                fprintf(stderr, "skycmd convert: %s needs one of f32, f16, bf16, q8_0\n", a);
                return 2;
            }
            if (a[2] == 't') type = t;
            else head_type = t;
        } else if (strcmp(a, "--random") == 0 && has_val) {
            random = argv[++i];
        } else if (strcmp(a, "--name") == 0 && has_val) {
            name = argv[++i];
        } else if (strcmp(a, "--pre") == 0 && has_val) {
            pre = argv[++i];
        } else if (strcmp(a, "--seed") == 0 && has_val) {
            if (parse_u64(argv[++i], &seed)) {
                fprintf(stderr, "skycmd convert: --seed needs a non-negative integer\n");
                return 2;
            }
        } else if (strcmp(a, "--massive") == 0 && has_val) {
            if (parse_u64(argv[++i], &massive)) {
                fprintf(stderr, "skycmd convert: --massive needs a non-negative integer\n");
                return 2;
            }
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "skycmd convert: unknown or incomplete option '%s'\n\n", a);
            usage(stderr);
            return 2;
        } else if (!random && !in) {
            in = a;
        } else if (!out) {
            out = a;
        } else {
            fprintf(stderr, "skycmd convert: unexpected argument '%s'\n\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (random && in && !out) { /* `--random P out` parsed `out` as the input */
        out = in;
        in = NULL;
    }
    if ((!in && !random) || !out || (in && random)) {
        usage(stderr);
        return 2;
    }
    if (!random && (seed >= 0 || massive >= 0)) {
        fprintf(stderr, "skycmd convert: --seed and --massive only apply with --random\n");
        return 2;
    }
    skycmd_options *opts = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    if (!opts || !err) {
        skycmd_options_free(opts);
        skycmd_error_free(err);
        fprintf(stderr, "skycmd convert: out of memory\n");
        return 1;
    }
    int st = skycmd_options_set_int(opts, SKYCMD_OPT_TYPE, type);
    if (!st) st = skycmd_options_set_int(opts, SKYCMD_OPT_HEAD_TYPE, head_type);
    if (!st && name) st = skycmd_options_set_string(opts, SKYCMD_OPT_NAME, name);
    if (!st && pre) st = skycmd_options_set_string(opts, SKYCMD_OPT_PRE, pre);
    if (!st && seed >= 0) st = skycmd_options_set_int(opts, SKYCMD_OPT_SEED, seed);
    if (!st && massive >= 0) st = skycmd_options_set_int(opts, SKYCMD_OPT_MASSIVE, massive);
    if (!st) st = skycmd_options_set_progress(opts, cli_progress, (void *)"convert");
    if (st) {
        fprintf(stderr, "skycmd convert: invalid option value (%s)\n", skycmd_status_name(st));
        skycmd_options_free(opts);
        skycmd_error_free(err);
        return 2;
    }
    if (random) {
        st = skycmd_options_set_int(opts, SKYCMD_OPT_LAYOUT, SKYCMD_LAYOUT_GGUF);
        if (!st) st = skycmd_random_model(random, out, opts, err);
    } else {
        st = skycmd_convert(in, out, opts, err);
    }
    int rc = st ? cli_fail("convert", st, err) : 0;
    skycmd_options_free(opts);
    skycmd_error_free(err);
    return rc;
}
