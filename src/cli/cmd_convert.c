/* cmd_convert.c - `skycmd convert`: a Laya checkpoint directory (or a random preset) to GGUF. */
#include <string.h>

#include "cli.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: skycmd convert <laya_dir | --random s1-pico|s1-nano|s1-micro|base|large|mmbert-small|mmbert-base> <out.gguf>\n"
            "                      [--type f32|f16|bf16|q8_0] [--head-type f32|f16|bf16|q8_0]\n"
            "                      [--pre NAME] [--name NAME] [--seed N] [--massive N] [-q]\n"
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
            "  -q, --quiet    no progress line and no summary on stderr (errors still are)\n"
            "  -h, --help     show this help\n"
            "\n"
            "1-D tensors are always f32; a q8_0 tensor whose rows are not a multiple of 32 falls\n"
            "back to f16. The output is written to a temporary file and renamed: on failure\n"
            "nothing is left behind. <out.gguf> '-' writes the file to stdout. On a terminal a\n"
            "progress line (ETA) is drawn and a summary printed (size, time, rate).\n"
            "\n"
            "exit status: 0 written, 1 error (message on stderr), 2 usage error\n");
}

int cmd_convert(int argc, char **argv) {
    cli_model_args m = CLI_MODEL_ARGS_UNSET;
    const char *random = NULL;
    int quiet = 0;
    const cli_opt opts[] = {
        CLI_OPTS_TYPE(m),
        CLI_OPTS_NAME(m),
        CLI_OPTS_SEED(m),
        {"--random", NULL, CLI_STRING, &random, 0, 0, NULL},
        CLI_OPT_QUIET(quiet),
    };
    const cli_cmd cmd = {"convert", usage, opts, sizeof opts / sizeof opts[0], 1, 2, 0};
    const char *pos[2];
    int n_pos, rc = cli_parse(&cmd, argc, argv, pos, &n_pos);
    if (rc != CLI_CONTINUE) return rc;
    if (random && n_pos != 1)
        return cli_usage_error(&cmd, "with --random give only the output path");
    if (!random && n_pos != 2)
        return cli_usage_error(&cmd, "give a checkpoint directory and an output path");
    if (!random && (m.seed != CLI_UNSET || m.massive != CLI_UNSET))
        return cli_usage_error(&cmd, "--seed and --massive only apply with --random");
    if (random && (rc = cli_check_preset(&cmd, "--random", random))) return rc;

    if (!random && strcmp(pos[0], "-") == 0)
        return cli_usage_error(&cmd, "a checkpoint directory cannot be read from stdin");

    cli_run run;
    const char *out = pos[n_pos - 1];
    cli_set_quiet(quiet);
    if ((rc = cli_begin(&run, &cmd, "convert"))) return rc;
    if ((rc = cli_stdout_file(&run, &out))) return rc;
    int st = random ? skycmd_random_model(random, out, run.opts, run.err)
                    : skycmd_convert(pos[0], out, run.opts, run.err);
    return cli_end_written(&run, st, out);
}
