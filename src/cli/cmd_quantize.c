/* cmd_quantize.c - `skycmd quantize`: re-type the tensors of a GGUF file. */
#include "cli.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: skycmd quantize <in.gguf> <out.gguf> [--type f32|f16|bf16|q8_0]\n"
            "                       [--head-type f32|f16|bf16|q8_0] [-q]\n"
            "       skycmd quantize <in.gguf> <out.gguf> --int8 [--compute-threads N] [-q]\n"
            "       skycmd quantize <in.gguf> <out.gguf> --calibrated [--q8-row]\n"
            "                       [--compute-threads N] [-q]\n"
            "\n"
            "Re-type the tensors of a GGUF file with the converter's type policy; every\n"
            "metadata key is kept (general.file_type is updated). <in.gguf> '-' reads standard\n"
            "input, <out.gguf> '-' writes to standard output.\n"
            "\n"
            "  --type T       encoder matrices (default q8_0; token embeddings stay f16 under q8_0)\n"
            "  --head-type T  decision head: head blocks, token_types, cls.* (default f32)\n"
            "  --int8         store the int8 that decide/serve/bench --int8 make at load\n"
            "                 (row-scaled, calibrated, with the probe's choice of two-pass\n"
            "                 matrices), so that their loads skip it (--calibrated --q8-row)\n"
            "  --calibrated   store the int8 model that decide's q8 mode makes at load:\n"
            "                 calibrated Q8_0 matrices with their outlier columns (in\n"
            "                 skycmd.int8.* keys), the most sensitive matrices and every other\n"
            "                 tensor as they are (<in.gguf>: an F16 or F32 file)\n"
            "  --q8-row       with --calibrated: the int8 of --q8-row instead (one scale per\n"
            "                 row, its outlier columns), for decide/serve/bench --q8-row\n"
            "  --compute-threads N  threads of --calibrated's forward passes (0 = one per\n"
            "                 core; default 1); the output is the same file for any N\n"
            "  -q, --quiet    no progress line and no summary on stderr (errors still are)\n"
            "  -h, --help     show this help\n"
            "\n"
            "1-D tensors stay f32; a q8_0 tensor whose rows are not a multiple of 32 falls back\n"
            "to f16. Q8_0 bytes are those of ggml's reference quantizer; a tensor that already\n"
            "has its target type is copied unchanged. The output is written to a temporary file\n"
            "and renamed: on failure nothing is left behind. On a terminal a progress line (ETA)\n"
            "is drawn and a summary printed (size written, time, rate).\n"
            "\n"
            "Int8 deployment: quantize --int8, then decide/serve/bench --int8 on its output\n"
            "(or --q8-row). For the int8 closest to laya, slower: quantize --calibrated, then\n"
            "--q8 (or --q8-fast). The calibration runs once, here (half a minute for a\n"
            "base-sized --int8, minutes for --calibrated); the loads take well under a second\n"
            "and answer exactly as the same flags on the source. A plain q8_0 file has lost\n"
            "the exact weights of the outlier columns and is less accurate\n"
            "(docs/quantization.md).\n"
            "\n"
            "exit status: 0 written, 1 error (message on stderr), 2 usage error\n");
}

int cmd_quantize(int argc, char **argv) {
    cli_model_args m = CLI_MODEL_ARGS_UNSET;
    int quiet = 0, calibrated = 0, q8_row = 0, int8 = 0;
    int64_t threads = CLI_UNSET;
    const cli_opt opts[] = {CLI_OPTS_TYPE(m), {"--int8", NULL, CLI_FLAG, &int8, 0, 0, NULL},
                            {"--calibrated", NULL, CLI_FLAG, &calibrated, 0, 0, NULL},
                            {"--q8-row", NULL, CLI_FLAG, &q8_row, 0, 0, NULL},
                            {"--compute-threads", NULL, CLI_INT, &threads, SKYCMD_OPT_THREADS, 0, NULL},
                            CLI_OPT_QUIET(quiet)};
    const cli_cmd cmd = {"quantize", usage, opts, sizeof opts / sizeof opts[0], 2, 2, 0};
    const char *pos[2];
    int n_pos, rc = cli_parse(&cmd, argc, argv, pos, &n_pos);
    if (rc != CLI_CONTINUE) return rc;
    if (int8 && (calibrated || q8_row))
        return cli_usage_error(&cmd, "--int8 is --calibrated --q8-row: not with either");
    if (int8) calibrated = q8_row = 1;
    if (calibrated && (m.type != CLI_UNSET || m.head_type != CLI_UNSET))
        return cli_usage_error(&cmd, "--calibrated and --int8 write int8 matrices and keep every other "
                               "tensor's type: no --type or --head-type with it");
    if (q8_row && !calibrated)
        return cli_usage_error(&cmd, "--q8-row is for --calibrated (it stores --q8-row's "
                               "calibrated int8)");
    if (threads != CLI_UNSET && !calibrated)
        return cli_usage_error(&cmd, "--compute-threads is for --calibrated (re-typing runs no "
                               "forward pass)");
    if (m.type == CLI_UNSET) m.type = SKYCMD_TYPE_Q8_0;
    if (m.head_type == CLI_UNSET) m.head_type = SKYCMD_TYPE_F32;

    cli_run run;
    cli_set_quiet(quiet);
    if ((rc = cli_begin(&run, &cmd, "quantize"))) return rc;
    if (calibrated && skycmd_options_set_int(run.opts, SKYCMD_OPT_WEIGHTS,
                                             q8_row ? SKYCMD_WEIGHTS_Q8_ROW : SKYCMD_WEIGHTS_Q8)) {
        fprintf(stderr, "skycmd quantize: cannot set the int8 mode\n");
        return 1;
    }
    const char *in = pos[0], *out = pos[1];
    if (cli_stdin_file(&run, &in)) return 1;
    if ((rc = cli_stdout_file(&run, &out))) return rc;
    return cli_end_written(&run, skycmd_quantize(in, out, run.opts, run.err), out);
}
