/* inspect.c - skycmd_inspect(): open a GGUF file (memory-mapped, validated) and describe it
 * as text or JSON (SKYCMD_OPT_MAX_ARRAY, SKYCMD_OPT_JSON). The formatting lives in
 * src/gguf/gguf_describe.c so the fuzz target and the tests can reach it on buffers. */
#include <stdlib.h>
#include <string.h>

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
    sk_str layout;
    if (!st && !json &&
        sk_gguf_get_str(g, "modern-bert.decision.option_layout", &layout) == SKYCMD_OK &&
        sk_str_eq(layout, "parallel")) {
        /* our key: say what it means for the other runtime that reads these files */
        static const char note[] =
            "note: modern-bert.decision.option_layout = parallel is libskycmd's key (laya's "
            "parallel option layout); llama.cpp does not read it and answers this file with "
            "the sequential layout, i.e. wrongly\n";
        size_t n = strlen(*out);
        char *grown = realloc(*out, n + sizeof note);
        if (!grown) {
            free(*out);
            *out = NULL;
            st = sk_fail(&e, SKYCMD_E_NOMEM, "inspect: out of memory");
        } else {
            memcpy(grown + n, note, sizeof note);
            *out = grown;
        }
    }
    sk_gguf_close(g);
    return sk_api_report(err, &e, st);
}
