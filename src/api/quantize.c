/*
 * quantize.c - the public skycmd_quantize(): re-type a GGUF file's tensors under the
 * converter's type policy (src/quant/quant.h), keeping every metadata key; the output is
 * written atomically.
 */
#include <string.h>

#include "../gguf/gguf.h"
#include "../quant/quant.h"
#include "api.h"

static int type_ok(int64_t t) {
    return t == SKYCMD_TYPE_F32 || t == SKYCMD_TYPE_F16 || t == SKYCMD_TYPE_BF16 ||
           t == SKYCMD_TYPE_Q8_0;
}

int skycmd_quantize(const char *in_path, const char *out_path, const skycmd_options *opts,
                    skycmd_error *err) {
    if (!sk_opts_ok(opts)) return sk_api_fail(err, SKYCMD_E_MISUSE, "invalid options handle");
    if (!in_path || !out_path || !in_path[0] || !out_path[0])
        return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT,
                           "quantize: an input and an output path are required");
    int64_t type = sk_opt_int(opts, SKYCMD_OPT_TYPE, SKYCMD_TYPE_Q8_0);
    int64_t head = sk_opt_int(opts, SKYCMD_OPT_HEAD_TYPE, SKYCMD_TYPE_F32);
    if (!type_ok(type) || !type_ok(head))
        return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT,
                           "quantize: type must be F32, F16, BF16 or Q8_0");
    sk_quantize_opts o;
    memset(&o, 0, sizeof o);
    o.type = (uint32_t)type;
    o.head_type = (uint32_t)head;
    if (opts) {
        o.progress = opts->progress;
        o.progress_ud = opts->progress_ud;
    }
    sk_err e = {0};
    sk_gguf *g = NULL;
    int s = sk_gguf_open_file(in_path, &g, &e);
    if (!s) {
        sk_opt_log(opts, 1, "quantizing %s: %zu tensors to %s (head %s)", in_path,
                   sk_gguf_n_tensors(g), sk_ggml_type_name(o.type), sk_ggml_type_name(o.head_type));
        s = sk_quantize_gguf(g, &o, out_path, &e);
        /* an error of the input is prefixed with its name; the output's own errors (full
         * disk, a directory given as the output) already start with the output's name */
        const size_t on = strlen(out_path);
        if (s && !(strncmp(e.msg, out_path, on) == 0 && e.msg[on] == ':'))
            sk_err_prefix(&e, "%s", in_path);
    }
    sk_gguf_close(g);
    return sk_api_report(err, &e, s);
}
