/* cmd_quantize.c - `skycmd quantize`: re-type the tensors of a GGUF file. */
#include <string.h>

#include "cli.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: skycmd quantize <in.gguf> <out.gguf> [--type f32|f16|bf16|q8_0]\n"
            "                       [--head-type f32|f16|bf16|q8_0]\n"
            "\n"
            "Re-type the tensors of a GGUF file with the converter's type policy; every\n"
            "metadata key is kept (general.file_type is updated).\n"
            "\n"
            "  --type T       encoder matrices (default q8_0; token embeddings stay f16 under q8_0)\n"
            "  --head-type T  decision head: head blocks, token_types, cls.* (default f32)\n"
            "\n"
            "1-D tensors stay f32; a q8_0 tensor whose rows are not a multiple of 32 falls back\n"
            "to f16. Q8_0 bytes are those of ggml's reference quantizer; a tensor that already\n"
            "has its target type is copied unchanged. The output is written to a temporary file\n"
            "and renamed: on failure nothing is left behind.\n"
            "\n"
            "Recommended int8 deployment: ship F16 and quantize at load (skycmd decide --q8),\n"
            "which keeps calibrated outlier columns in f32; a Q8_0 file cannot (see\n"
            "docs/quantization.md).\n");
}

int cmd_quantize(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    int type = SKYCMD_TYPE_Q8_0, head_type = SKYCMD_TYPE_F32;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--type") == 0 || strcmp(a, "--head-type") == 0) {
            int t = i + 1 < argc ? cli_parse_type(argv[++i]) : -1;
            if (t < 0) {
                fprintf(stderr, "skycmd quantize: %s needs one of f32, f16, bf16, q8_0\n", a);
                return 2;
            }
            if (a[2] == 't') type = t;
            else head_type = t;
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "skycmd quantize: unknown option '%s'\n\n", a);
            usage(stderr);
            return 2;
        } else if (!in) {
            in = a;
        } else if (!out) {
            out = a;
        } else {
            fprintf(stderr, "skycmd quantize: unexpected argument '%s'\n\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!in || !out) {
        usage(stderr);
        return 2;
    }
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    if (!o || !err) {
        skycmd_options_free(o);
        skycmd_error_free(err);
        fprintf(stderr, "skycmd quantize: out of memory\n");
        return 1;
    }
    skycmd_options_set_int(o, SKYCMD_OPT_TYPE, type);
    skycmd_options_set_int(o, SKYCMD_OPT_HEAD_TYPE, head_type);
    skycmd_options_set_progress(o, cli_progress, (void *)"quantize");
    int rc = skycmd_quantize(in, out, o, err);
    int ret = rc ? cli_fail("quantize", rc, err) : 0;
    skycmd_options_free(o);
    skycmd_error_free(err);
    return ret;
}
