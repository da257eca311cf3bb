/* test_prompt.c - the Laya token sequence against laya's own build_sequence.
 *
 * tests/fixtures/prompt/cases.json was written by tools/golden/make_prompt_fixtures.py: each
 * request went through laya.agent.Agent._check_question/_to_internal/_encode_state (which
 * calls laya.common.build_sequence) with a BPE tokenizer trained by HF `tokenizers`
 * (tests/fixtures/prompt/tokenizer.json). We rebuild every sequence with our request parser,
 * renderer and prompt builder (driven by our tokenizer loaded from the same tokenizer.json)
 * and require identical ids and markers, or the same error. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "skycmd.h"
#include "decide/request.h"
#include "prompt/prompt.h"
#include "tokenizer/tokenizer.h"
#include "test_util.h"

static int ids_equal(const sk_i32v *got, cJSON *want) {
    if ((size_t)cJSON_GetArraySize(want) != got->n) return 0;
    size_t i = 0;
    cJSON *x;
    cJSON_ArrayForEach(x, want) {
        if (got->v[i++] != (int32_t)x->valuedouble) return 0;
    }
    return 1;
}

static void print_ids(const char *what, const sk_i32v *v) {
    char line[4096];
    size_t o = 0;
    for (size_t i = 0; i < v->n && o + 16 < sizeof line; i++)
        o += (size_t)snprintf(line + o, sizeof line - o, "%d ", v->v[i]);
    line[o] = 0;
    cr_log_error("%s: %s", what, line);
}

Test(prompt, matches_laya_build_sequence) {
    size_t tl, cl;
    char *tj = tu_slurp(SKYCMD_FIXTURES "/prompt/tokenizer.json", &tl);
    char *cj = tu_slurp(SKYCMD_FIXTURES "/prompt/tokenizer_config.json", &cl);
    skycmd_tokenizer *tok = NULL;
    sk_err e = {0};
    cr_assert_eq(sk_tokenizer_from_json(tj, tl, cj, cl, &tok, &e), 0, "%s", e.msg);
    tu_tok_ctx ec = {tok, {0}};
    cJSON *root = tu_load_json(SKYCMD_FIXTURES "/prompt/cases.json");
    cJSON *meta = cJSON_GetObjectItem(root, "meta");
    sk_prompt_tok pt = {tu_tok_encode, &ec, (int32_t)cJSON_GetObjectItem(meta, "cls")->valuedouble,
                        (int32_t)cJSON_GetObjectItem(meta, "sep")->valuedouble,
                        (int32_t)cJSON_GetObjectItem(meta, "mask")->valuedouble,
                        cJSON_GetObjectItem(meta, "mask_text")->valuestring};
    cr_assert_eq(pt.cls, sk_tokenizer_special(tok, SKYCMD_SPECIAL_CLS));
    cr_assert_eq(pt.sep, sk_tokenizer_special(tok, SKYCMD_SPECIAL_SEP));
    cr_assert_eq(pt.mask, sk_tokenizer_special(tok, SKYCMD_SPECIAL_MASK));
    cr_assert_str_eq(pt.mask_text, sk_tokenizer_special_text(tok, SKYCMD_SPECIAL_MASK));

    sk_prompt_ws ws = {0};
    sk_i32v state = {0}, ids = {0}, markers = {0};
    int n_cases = 0, n_seq = 0, bad = 0, n_err = 0;
    cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases")) {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        const char *body = cJSON_GetObjectItem(c, "body")->valuestring;
        size_t max_len = (size_t)cJSON_GetObjectItem(c, "max_len")->valuedouble;
        size_t head = (size_t)cJSON_GetObjectItem(c, "head_max_len")->valuedouble;
        cJSON *err = cJSON_GetObjectItem(c, "error");
        n_cases++;
        sk_request r;
        int st = sk_request_parse(body, strlen(body), &r, &e);
        cr_assert_eq(st, 0, "%s: %s", name, e.msg);
        st = sk_prompt_state_ids(&pt, r.state.s, r.state.n, &ws, &state, &e);
        cr_assert_eq(st, 0, "%s: %s", name, e.msg);
        cJSON *qs = cJSON_GetObjectItem(c, "questions");
        long total = 0;
        for (size_t qi = 0; qi < r.nq; qi++) {
            const sk_rquestion *q = &r.q[qi];
            st = sk_prompt_build(&pt, sk_qtype_names[q->type], q->ins.s, q->ins.n, &q->opts[0].text,
                                 sizeof(sk_roption), q->n_opts, state.v, state.n, r.state_is_list,
                                 max_len, head, &ws, &ids, &markers, &e);
            if (err) {
                /* laya: "question 'q': only 5 of its 20 option markers fit in max_len=40 ..." */
                cr_expect_eq(st, SKYCMD_E_REQUEST, "%s: expected an error", name);
                char want[200];
                snprintf(want, sizeof want, "only %zu of its %zu option markers fit in max_len=%zu with head_max_len=%zu",
                         markers.n, q->n_opts, max_len, head);
                cr_expect(strstr(err->valuestring, want) != NULL, "%s: laya said '%s', we '%s'", name,
                          err->valuestring, e.msg);
                cr_expect(strstr(e.msg, want) != NULL, "%s: %s", name, e.msg);
                n_err++;
                break;
            }
            cr_assert_eq(st, 0, "%s: %s", name, e.msg);
            cJSON *wq = cJSON_GetArrayItem(qs, (int)qi);
            cr_assert(wq, "%s: question %zu missing in fixture", name, qi);
            cr_expect_str_eq(cJSON_GetObjectItem(wq, "id")->valuestring, q->id.s);
            cr_expect_eq((int)cJSON_GetObjectItem(wq, "qtype")->valuedouble, q->type);
            int ok = ids_equal(&ids, cJSON_GetObjectItem(wq, "ids")) &&
                     ids_equal(&markers, cJSON_GetObjectItem(wq, "markers"));
            if (!ok) {
                bad++;
                cr_log_error("%s: question %s differs", name, q->id.s);
                print_ids("ours ids", &ids);
                print_ids("ours markers", &markers);
                char *w = cJSON_PrintUnformatted(wq);
                cr_log_error("laya: %s", w);
                free(w);
            }
            total += (long)ids.n;
            n_seq++;
        }
        if (!err)
            cr_expect_eq(total, (long)cJSON_GetObjectItem(c, "input_tokens")->valuedouble,
                         "%s: input tokens", name);
        sk_request_free(&r);
    }
    cr_log_info("prompt: %d cases, %d sequences, %d errors, %d mismatches", n_cases, n_seq, n_err, bad);
    cr_expect_geq(n_cases, 30);
    cr_expect_geq(n_seq, 40);
    cr_expect_eq(n_err, 1);
    cr_expect_eq(bad, 0, "%d sequences differ from laya", bad);
    sk_prompt_ws_free(&ws);
    sk_i32v_free(&state);
    sk_i32v_free(&ids);
    sk_i32v_free(&markers);
    sk_ids_free(&ec.ids);
    sk_tokenizer_free(tok);
    cJSON_Delete(root);
    free(tj);
    free(cj);
}

/* The shrink and cut rules on a fake one-token-per-byte tokenizer, with hand-computed
 * expectations (Python's formulas worked by hand). */
static int bytes_cb(void *ctx, const char *text, size_t len, sk_i32v *out, sk_err *e) {
    (void)ctx;
    (void)e;
    for (size_t i = 0; i < len; i++)
        if (sk_i32v_push(out, 100 + (unsigned char)text[i])) return SKYCMD_E_NOMEM;
    return 0;
}

Test(prompt, budget_rules_by_hand) {
    sk_prompt_tok pt = {bytes_cb, NULL, 1, 2, 3, "[MASK]"};
    sk_prompt_ws ws = {0};
    sk_i32v ids = {0}, markers = {0};
    sk_err e = {0};
    /* 3 options of 99 chars: each " "+99 = 100 tokens, cut to 48 (+marker = 49). head 192:
     * 192 - 147 = 45 >= 16, no shrink; question "noul question: " + 40 = 55 tokens cut to 45. */
    char opt[100];
    memset(opt, 'o', 99);
    opt[99] = 0;
    sk_jstr opts[3] = {{opt, 99}, {opt, 99}, {opt, 99}};
    char ins[41];
    memset(ins, 'q', 40);
    ins[40] = 0;
    int32_t st_ids[10] = {9, 9, 9, 9, 9, 9, 9, 9, 9, 9};
    cr_assert_eq(sk_prompt_build(&pt, "noul", ins, 40, opts, sizeof(sk_jstr), 3, st_ids, 10, 0, 512,
                                 192, &ws, &ids, &markers, &e), 0, "%s", e.msg);
    cr_expect_eq(ids.n, 1 + 45 + 1 + 147 + 1 + 10 + 1);
    cr_expect_eq(markers.v[0], 47);
    cr_expect_eq(markers.v[1], 96);
    cr_expect_eq(markers.v[2], 145);
    /* head 100: budget 100 - 147 < 16 -> per = max(4, 84 // 3 = 28); options 3*28 = 84,
     * budget 16, question max(8, 16) = 16 tokens. */
    cr_assert_eq(sk_prompt_build(&pt, "noul", ins, 40, opts, sizeof(sk_jstr), 3, st_ids, 10, 0, 512,
                                 100, &ws, &ids, &markers, &e), 0);
    cr_expect_eq(markers.v[0], 18);
    cr_expect_eq(markers.v[1], 46);
    cr_expect_eq(ids.n, 1 + 16 + 1 + 84 + 1 + 10 + 1);
    /* head 10: per = max(4, (10-16)//3 = -2) = 4; budget 10-12 = -2, question keeps 8. */
    cr_assert_eq(sk_prompt_build(&pt, "noul", ins, 40, opts, sizeof(sk_jstr), 3, st_ids, 10, 0, 512,
                                 10, &ws, &ids, &markers, &e), 0);
    cr_expect_eq(markers.v[0], 10);
    cr_expect_eq(markers.v[2], 18);
    cr_expect_eq(ids.n, 1 + 8 + 1 + 12 + 1 + 10 + 1);
    /* max_len 30 leaves 30 - 23 - 1 = 6 state tokens: the first 6, or the last 6 for lists */
    int32_t st2[10] = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
    cr_assert_eq(sk_prompt_build(&pt, "noul", ins, 40, opts, sizeof(sk_jstr), 3, st2, 10, 0, 30,
                                 10, &ws, &ids, &markers, &e), 0);
    cr_expect_eq(ids.n, 30);
    cr_expect_eq(ids.v[23], 10);
    cr_expect_eq(ids.v[28], 15);
    cr_expect_eq(ids.v[29], 2);
    cr_assert_eq(sk_prompt_build(&pt, "noul", ins, 40, opts, sizeof(sk_jstr), 3, st2, 10, 1, 30,
                                 10, &ws, &ids, &markers, &e), 0);
    cr_expect_eq(ids.v[23], 14);
    cr_expect_eq(ids.v[28], 19);
    /* max_len 15 drops the last option's marker (position 18): an error like laya's */
    cr_expect_eq(sk_prompt_build(&pt, "noul", ins, 40, opts, sizeof(sk_jstr), 3, st2, 10, 1, 15,
                                 10, &ws, &ids, &markers, &e), SKYCMD_E_REQUEST);
    cr_expect(strstr(e.msg, "only 2 of its 3 option markers fit in max_len=15") != NULL, "%s", e.msg);
    /* [MASK] text becomes one space, also inside the question */
    sk_buf b;
    sk_buf_init(&b);
    sk_prompt_unmask(&b, "a[MASK]b[MASK][MASK[MASK]", 25, "[MASK]");
    char *u = sk_buf_detach(&b);
    cr_expect_str_eq(u, "a b [MASK ");
    free(u);
    sk_prompt_ws_free(&ws);
    sk_i32v_free(&ids);
    sk_i32v_free(&markers);
}

/* ---- the word-at-a-time scans of JSON strings and UTF-8, against byte loops ---- */

static uint64_t scan_rng = 0x243F6A8885A308D3ull;
static uint32_t scan_next(void) { return tu_rand32(&scan_rng); }

static size_t plain_len_ref(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n && s[i] != '"' && s[i] != '\\' && s[i] >= 0x20) i++;
    return i;
}

/* the byte loop sk_utf8_valid was before its ASCII fast path */
static int utf8_valid_ref(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
        else return 0;
        if (n - i < len) return 0;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += len;
    }
    return 1;
}

Test(scan, json_plain_len_and_utf8_valid_against_byte_loops) {
    /* bytes around every boundary the word tests use: the escapes, 0x1F/0x20, 0x7F/0x80,
     * UTF-8 lead and continuation bytes */
    static const unsigned char pick[] = {'a', 'Z', '0', ' ', '!', '"', '#', '[', '\\', ']', 0x00, 0x01, 0x0A, 0x1F,
                                         0x20, 0x21, 0x7E, 0x7F, 0x80, 0xBF, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0,
                                         0xF4, 0xF5, 0xFF, 0x9F, 0xA0, 0x90, 0x8F};
    unsigned char buf[80];
    size_t plain_checked = 0, invalid = 0;
    for (int iter = 0; iter < 200000; iter++) {
        size_t n = scan_next() % 72, off = scan_next() % 8;
        int ascii_bias = (int)(scan_next() % 4); /* mostly plain text, sometimes dense specials */
        for (size_t i = 0; i < n; i++) {
            uint32_t r = scan_next();
            buf[off + i] = (r % 8) < (uint32_t)(ascii_bias * 2) ? (unsigned char)('a' + r % 26)
                                                                 : pick[(r >> 8) % sizeof pick];
        }
        const unsigned char *s = buf + off;
        size_t got = sk_json_plain_len((const char *)s, n), want = plain_len_ref(s, n);
        cr_assert_eq(got, want, "iter %d: plain length %zu, byte loop %zu (n %zu)", iter, got, want, n);
        plain_checked += want;
        int v = sk_utf8_valid((const char *)s, n), vr = utf8_valid_ref(s, n);
        cr_assert_eq(v, vr, "iter %d: utf8 valid %d, byte loop %d (n %zu)", iter, v, vr, n);
        invalid += !vr;
    }
    cr_assert(plain_checked > 100000 && invalid > 1000 && invalid < 199000, "%zu %zu", plain_checked, invalid);
}
