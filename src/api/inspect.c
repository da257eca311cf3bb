/* inspect.c - skycmd_inspect(): open a GGUF file (memory-mapped, validated) and describe it
 * as text or JSON (SKYCMD_OPT_MAX_ARRAY, SKYCMD_OPT_JSON). The formatting lives in
 * src/gguf/gguf_describe.c so the fuzz target and the tests can reach it on buffers. */
#include <stdlib.h>

#include "api.h"
#include "../gguf/gguf.h"

int skycmd_inspect(const char *gguf_path, const skycmd_options *opts, char **out,
                   skycmd_error *err) {
    if (out) *out = NULL;
    if (!gguf_path || !out)
        return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT, "inspect: path and out are required");
    if (!sk_opts_ok(opts)) return sk_api_fail(err, SKYCMD_E_MISUSE, "inspect: bad options handle");
    int64_t max_array = sk_opt_int(opts, SKYCMD_OPT_MAX_ARRAY, 8);
    int json = sk_opt_int(opts, SKYCMD_OPT_JSON, 0) != 0;
    sk_err e = {0};
    sk_gguf *g = NULL;
    int st = sk_gguf_open_file(gguf_path, &g, &e);
    if (st) return sk_api_report(err, &e, st);
    st = sk_gguf_describe(g, gguf_path, max_array < 0 ? 0 : (uint64_t)max_array, json, out, &e);
    sk_gguf_close(g);
    return sk_api_report(err, &e, st);
}
