/* cmd_random.c - `skycmd random`: a deterministic random model as GGUF or a Laya directory. */
#include <string.h>

#include "cli.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: skycmd random <preset> <out> [--layout gguf|laya] [--seed N] [--massive N]\n"
            "                     [--type f32|f16|bf16|q8_0] [--head-type T] [--name NAME] [--pre NAME]\n"
            "                     [-q]\n"
            "\n"
            "Write a model with random weights, the same bytes for the same preset and seed.\n"
            "\n"
            "presets (params in the GGUF):\n"
            "  s1-pico   hidden 64,  1 head,  2 encoder layers, 1 head layer, vocab 1024   (202,305)\n"
            "  s1-nano   hidden 128, 2 heads, 4 encoder layers, 1 head layer, vocab 2048   (1,134,209)\n"
            "  s1-micro  hidden 256, 4 heads, 6 encoder layers, 2 head layers, vocab 4096  (6,630,913)\n"
            "  base      ModernBERT-base shape (768, 22 layers), vocab 4096, 2 head layers\n"
            "  large     ModernBERT-large shape (1024, 28 layers), vocab 4096, 2 head layers\n"
            "  mmbert-small  mmBERT-small shape (384, 22 layers), Gemma-style tokenizer with\n"
            "                256000 tokens (<bos> CLS, <eos> SEP, <mask>), max_len 1024, 2 head layers\n"
            "  mmbert-base   mmBERT-base shape (768, 22 layers), the same tokenizer and budgets\n"
            "  Append -xt (e.g. s1-pico-xt) for temperatures outside the runtime clamp [0.5, 5].\n"
            "\n"
            "  --layout gguf   one GGUF file (default; --type/--head-type/--name/--pre as in convert)\n"
            "  --layout laya   a Laya checkpoint directory (F32 model.safetensors, encoder/config.json,\n"
            "                  rl_agent_config.json, config.json, tokenizer/) that the Python\n"
            "                  reference loads; `skycmd convert DIR` then gives the same GGUF bytes\n"
            "                  when DIR is named like the preset (or with the same --name)\n"
            "  --seed N        default 42\n"
            "  --massive N     plant N residual channels ~20x larger than the others (int8 tests)\n"
            "  <out> '-'       write the GGUF file to stdout\n"
            "  -q, --quiet     no progress line and no summary on stderr (errors still are)\n"
            "  -h, --help      show this help\n"
            "\n"
            "On a terminal a progress line (ETA) is drawn while the GGUF file is written, and a\n"
            "summary printed (size, time, rate).\n"
            "\n"
            "exit status: 0 written, 1 error (message on stderr), 2 usage error\n");
}

int cmd_random(int argc, char **argv) {
    static const char *const layouts[] = {"gguf", "laya", NULL}; /* = skycmd_layout values */
    cli_model_args m = CLI_MODEL_ARGS_UNSET;
    int quiet = 0;
    const cli_opt opts[] = {
        CLI_OPTS_TYPE(m),
        CLI_OPTS_NAME(m),
        CLI_OPTS_SEED(m),
        {"--layout", NULL, CLI_CHOICE, &m.layout, SKYCMD_OPT_LAYOUT, 0, layouts},
        CLI_OPT_QUIET(quiet),
    };
    const cli_cmd cmd = {"random", usage, opts, sizeof opts / sizeof opts[0], 2, 2, 0};
    const char *pos[2];
    int n_pos, rc = cli_parse(&cmd, argc, argv, pos, &n_pos);
    if (rc != CLI_CONTINUE) return rc;
    if ((rc = cli_check_preset(&cmd, "preset", pos[0]))) return rc;
    if (m.layout == SKYCMD_LAYOUT_LAYA && strcmp(pos[1], "-") == 0)
        return cli_usage_error(&cmd, "a Laya directory cannot be written to stdout");
    if (m.layout == SKYCMD_LAYOUT_LAYA) { /* the GGUF writer's options: refused, not ignored */
        const char *gguf_only = m.type != CLI_UNSET ? "--type" : m.head_type != CLI_UNSET ? "--head-type"
                                : m.name ? "--name" : m.pre ? "--pre" : NULL;
        if (gguf_only)
            return cli_usage_error(&cmd, "%s applies to --layout gguf only (a Laya directory holds "
                                   "F32 safetensors and its own tokenizer)", gguf_only);
    }

    cli_run run;
    const char *out = pos[1];
    cli_set_quiet(quiet);
    if ((rc = cli_begin(&run, &cmd, "random"))) return rc;
    if ((rc = cli_stdout_file(&run, &out))) return rc;
    return cli_end_written(&run, skycmd_random_model(pos[0], out, run.opts, run.err), out);
}
