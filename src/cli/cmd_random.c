/* cmd_random.c - `skycmd random`: a deterministic random model as GGUF or a Laya directory. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: skycmd random <preset> <out> [--layout gguf|laya] [--seed N] [--massive N]\n"
            "                     [--type f32|f16|bf16|q8_0] [--head-type T] [--name NAME] [--pre NAME]\n"
            "\n"
            "Write a model with random weights, the same bytes for the same preset and seed.\n"
            "\n"
            "presets (params in the GGUF):\n"
            "  s1-pico   hidden 64,  1 head,  2 encoder layers, 1 head layer, vocab 1024   (202,305)\n"
            "  s1-nano   hidden 128, 2 heads, 4 encoder layers, 1 head layer, vocab 2048   (1,134,209)\n"
            "  s1-micro  hidden 256, 4 heads, 6 encoder layers, 2 head layers, vocab 4096  (6,630,913)\n"
            "  base      ModernBERT-base shape (768, 22 layers), vocab 4096, 2 head layers\n"
            "  large     ModernBERT-large shape (1024, 28 layers), vocab 4096, 2 head layers\n"
            "  Append -xt (e.g. s1-pico-xt) for temperatures outside the runtime clamp [0.5, 5].\n"
            "\n"
            "  --layout gguf   one GGUF file (default; --type/--head-type/--name/--pre as in convert)\n"
            "  --layout laya   a Laya checkpoint directory (F32 model.safetensors, encoder/config.json,\n"
            "                  rl_agent_config.json, config.json, tokenizer/) that the Python\n"
            "                  reference loads; `skycmd convert DIR` then gives the same GGUF bytes\n"
            "                  when DIR is named like the preset (or with the same --name)\n"
            "  --seed N        default 42\n"
            "  --massive N     plant N residual channels ~20x larger than the others (int8 tests)\n");
}

int cmd_random(int argc, char **argv) {
    const char *preset = NULL, *out = NULL, *name = NULL, *pre = NULL;
    int type = SKYCMD_TYPE_F16, head_type = SKYCMD_TYPE_F32, layout = SKYCMD_LAYOUT_GGUF;
    long long seed = 42, massive = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        }
        int has_val = i + 1 < argc;
        if ((strcmp(a, "--type") == 0 || strcmp(a, "--head-type") == 0)) {
            int t = has_val ? cli_parse_type(argv[++i]) : -1;
            if (t < 0) {
                fprintf(stderr, "skycmd random: %s needs one of f32, f16, bf16, q8_0\n", a);
                return 2;
            }
            if (a[2] == 't') type = t;
            else head_type = t;
        } else if (strcmp(a, "--layout") == 0 && has_val) {
            const char *v = argv[++i];
            if (strcmp(v, "gguf") == 0) layout = SKYCMD_LAYOUT_GGUF;
            else if (strcmp(v, "laya") == 0) layout = SKYCMD_LAYOUT_LAYA;
            else {
                fprintf(stderr, "skycmd random: --layout must be gguf or laya\n");
                return 2;
            }
        } else if ((strcmp(a, "--seed") == 0 || strcmp(a, "--massive") == 0) && has_val) {
            char *end;
            const char *v = argv[++i];
            long long x = strtoll(v, &end, 10);
            if (!*v || *end || x < 0) {
                fprintf(stderr, "skycmd random: %s needs a non-negative integer\n", a);
                return 2;
            }
            if (a[2] == 's') seed = x;
            else massive = x;
        } else if (strcmp(a, "--name") == 0 && has_val) {
            name = argv[++i];
        } else if (strcmp(a, "--pre") == 0 && has_val) {
            pre = argv[++i];
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "skycmd random: unknown or incomplete option '%s'\n\n", a);
            usage(stderr);
            return 2;
        } else if (!preset) {
            preset = a;
        } else if (!out) {
            out = a;
        } else {
            fprintf(stderr, "skycmd random: unexpected argument '%s'\n\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!preset || !out) {
        usage(stderr);
        return 2;
    }
    skycmd_options *opts = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    if (!opts || !err) {
        skycmd_options_free(opts);
        skycmd_error_free(err);
        fprintf(stderr, "skycmd random: out of memory\n");
        return 1;
    }
    int st = skycmd_options_set_int(opts, SKYCMD_OPT_TYPE, type);
    if (!st) st = skycmd_options_set_int(opts, SKYCMD_OPT_HEAD_TYPE, head_type);
    if (!st) st = skycmd_options_set_int(opts, SKYCMD_OPT_LAYOUT, layout);
    if (!st) st = skycmd_options_set_int(opts, SKYCMD_OPT_SEED, seed);
    if (!st) st = skycmd_options_set_int(opts, SKYCMD_OPT_MASSIVE, massive);
    if (!st && name) st = skycmd_options_set_string(opts, SKYCMD_OPT_NAME, name);
    if (!st && pre) st = skycmd_options_set_string(opts, SKYCMD_OPT_PRE, pre);
    if (!st) st = skycmd_options_set_progress(opts, cli_progress, (void *)"random");
    if (st) {
        fprintf(stderr, "skycmd random: invalid option value (%s)\n", skycmd_status_name(st));
        skycmd_options_free(opts);
        skycmd_error_free(err);
        return 2;
    }
    st = skycmd_random_model(preset, out, opts, err);
    int rc = st ? cli_fail("random", st, err) : 0;
    skycmd_options_free(opts);
    skycmd_error_free(err);
    return rc;
}
