/*
 * fuzz_serve_batch.c - libFuzzer target for the body of POST /v1/systemone/batch and laya
 * serve's request controls in `skycmd serve` (src/serve/batch.c): answer_batch() on the raw
 * body (the JSON check, the top-level scanner's "states"/"questions"/"model", the states
 * array walk and its 64-state cap, the refused hooks, max_len / head_max_len / batch_size /
 * sort_by_length / min_confidence, each state rebuilt as its own request and parsed), and
 * read_budgets() as /v1/systemone's prepare() calls it (when the body is JSON). The decision
 * has no session (SKYCMD_E_MISUSE, a 500 naming no state): only the body handling is under
 * test.
 *
 * Input: the body. Checks besides "no crash, no leak, no UB": every body gets a result, a
 * status 200-599 with a JSON error envelope.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve_stubs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_serve_setup(0);
    struct req r;
    memset(&r, 0, sizeof r);
    r.route = ROUTE_SYSTEMONE_BATCH;
    r.t_enq = now_us();
    /* the body in a buffer of exactly its size, as http.c's sbuf would hold it (not
     * NUL-terminated: a read past the end is an ASan report) */
    r.body.p = malloc(size ? size : 1);
    if (!r.body.p) return 0;
    if (size) memcpy(r.body.p, data, size);
    r.body.len = r.body.cap = size;
    answer_batch(&r, &fz_models, fz_sessions);
    if (r.status == 0 || r.status == 200) __builtin_trap(); /* no session: never a 200 */
    fz_check_result(r.status, r.ctype, r.out.p, r.out.len);

    /* read_budgets as prepare() calls it: on a body the library's parser took for JSON (the
     * top-level scanner is meant for such bodies only) */
    struct req r2;
    memset(&r2, 0, sizeof r2);
    skycmd_request *q = NULL;
    int st = skycmd_request_parse(r.body.p, r.body.len, &q);
    skycmd_request_free(q);
    if (st != SKYCMD_E_JSON) {
        if (read_budgets(&r2, r.body.p, r.body.len)) fz_check_result(r2.status, r2.ctype, r2.out.p, r2.out.len);
        else if (r2.max_len < 0 || r2.head_max_len < 0 || r2.max_len > 8192 || r2.head_max_len > 8192)
            __builtin_trap();
    }
    sbuf_free(&r2.out);
    sbuf_free(&r.out);
    sbuf_free(&r.body);
    return 0;
}
