#define _GNU_SOURCE
/* fuzz_request.c - libFuzzer target for untrusted /v1/systemone bodies: the JSON reader,
 * request validation, text rendering and the prompt builder (driven by a byte tokenizer).
 * Invariants checked besides "no crash, no leak, no UB":
 *  - a parsed document re-serialized with json.dumps rules parses again and serializes to
 *    the same text (unless a float overflowed to Infinity, which strict JSON refuses);
 *  - every built sequence has one marker per option, each inside the sequence. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decide/request.h"
#include "prompt/prompt.h"
#include "prompt/pyjson.h"

static int bytes_cb(void *ctx, const char *text, size_t len, sk_i32v *out, sk_err *e) {
    (void)ctx;
    (void)e;
    for (size_t i = 0; i < len; i++)
        if (sk_i32v_push(out, 10 + (unsigned char)text[i])) return SKYCMD_E_NOMEM;
    return 0;
}

static void check_roundtrip(const sk_jv *root) {
    sk_buf a, b;
    sk_buf_init(&a);
    sk_buf_init(&b);
    sk_pyjson_dump(&a, root);
    if (!a.failed && a.len && !memmem(a.data, a.len, "Infinity", 8)) {
        sk_jdoc d2;
        sk_err e = {0};
        if (sk_json_parse(a.data, a.len, &d2, &e) != 0) abort();
        sk_pyjson_dump(&b, &d2.root);
        if (b.len != a.len || memcmp(a.data, b.data, a.len) != 0) abort();
        sk_jdoc_free(&d2);
    }
    sk_buf_free(&a);
    sk_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sk_request r;
    sk_err e = {0};
    if (sk_request_parse((const char *)data, size, &r, &e) != 0) {
        sk_jdoc d;
        if (sk_json_parse((const char *)data, size, &d, &e) == 0) {
            check_roundtrip(&d.root);
            sk_jdoc_free(&d);
        }
        return 0;
    }
    check_roundtrip(&r.doc.root);
    sk_prompt_tok pt = {bytes_cb, NULL, 1, 2, 3, "[MASK]"};
    sk_prompt_ws ws = {0};
    sk_i32v st = {0}, ids = {0}, markers = {0};
    if (sk_prompt_state_ids(&pt, r.state.s, r.state.n, &ws, &st, &e) == 0) {
        size_t limit = r.nq < 8 ? r.nq : 8;
        for (size_t i = 0; i < limit; i++) {
            const sk_rquestion *q = &r.q[i];
            int rc = sk_prompt_build(&pt, sk_qtype_names[q->type], q->ins.s, q->ins.n, &q->opts[0].text,
                                     sizeof(sk_roption), q->n_opts, st.v, st.n, r.state_is_list,
                                     96 + i * 40, 24 + i * 8, &ws, &ids, &markers, &e);
            if (rc == 0) {
                if (markers.n != q->n_opts) abort();
                for (size_t j = 0; j < markers.n; j++)
                    if ((size_t)markers.v[j] >= ids.n || ids.v[markers.v[j]] != 3) abort();
            }
        }
    }
    sk_prompt_ws_free(&ws);
    sk_i32v_free(&st);
    sk_i32v_free(&ids);
    sk_i32v_free(&markers);
    sk_request_free(&r);
    return 0;
}
