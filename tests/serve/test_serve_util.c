/* test_serve_util.c - unit tests of the server's helpers (src/serve/serve_util.c): the
 * top-level "model" scanner on hostile input, JSON string escaping, the key compare. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve_util.h"

static int scan(const char *json, char *out, size_t cap) {
    /* an exact-size heap copy, so that a read past the end is caught by ASan */
    size_t n = strlen(json);
    char *copy = malloc(n ? n : 1);
    cr_assert_not_null(copy);
    memcpy(copy, json, n);
    int k = sj_find_model(copy, n, out, cap);
    free(copy);
    return k;
}

Test(serve_util, model_absent_or_null) {
    char m[64];
    cr_assert_eq(scan("{\"state\":\"x\",\"questions\":{}}", m, sizeof m), SJ_MODEL_ABSENT);
    cr_assert_eq(scan("{}", m, sizeof m), SJ_MODEL_ABSENT);
    cr_assert_eq(scan("{\"model\":null}", m, sizeof m), SJ_MODEL_NULL);
    cr_assert_eq(scan("  {  \"model\" :  null }", m, sizeof m), SJ_MODEL_NULL);
}

Test(serve_util, model_string_first_level_only) {
    char m[64];
    cr_assert_eq(scan("{\"state\":{\"model\":\"inner\"},\"model\":\"outer\"}", m, sizeof m), SJ_MODEL_STRING);
    cr_assert_str_eq(m, "outer");
    cr_assert_eq(scan("{\"state\":[{\"model\":\"x\"},\"]}\\\"\"],\"questions\":{\"model\":{}}}", m, sizeof m),
                 SJ_MODEL_ABSENT);
    cr_assert_eq(scan("{\"state\":\"\\\"model\\\": \\\"y\\\"\",\"model\":\"pico\"}", m, sizeof m), SJ_MODEL_STRING);
    cr_assert_str_eq(m, "pico");
    cr_assert_eq(scan("{\"a\":1.5e3,\"b\":true,\"c\":null,\"model\":\"z\"}", m, sizeof m), SJ_MODEL_STRING);
    cr_assert_str_eq(m, "z");
}

Test(serve_util, model_escapes_decoded) {
    char m[64];
    /* an escaped key is the same key; escaped values decode to UTF-8 */
    cr_assert_eq(scan("{\"mod\\u0065l\":\"sec\\u006fnd\"}", m, sizeof m), SJ_MODEL_STRING);
    cr_assert_str_eq(m, "second");
    cr_assert_eq(scan("{\"model\":\"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\/\"}", m, sizeof m), SJ_MODEL_STRING);
    cr_assert_str_eq(m, "caf\xc3\xa9 \xf0\x9f\x98\x80 \"q\" /");
    /* a lone surrogate or a bad escape is malformed: left to the real parser */
    cr_assert_eq(scan("{\"model\":\"\\ud83d\"}", m, sizeof m), SJ_MODEL_ABSENT);
    cr_assert_eq(scan("{\"model\":\"\\x\"}", m, sizeof m), SJ_MODEL_ABSENT);
}

Test(serve_util, model_other_types) {
    char m[64];
    cr_assert_eq(scan("{\"model\":7}", m, sizeof m), SJ_MODEL_OTHER);
    cr_assert_eq(scan("{\"model\":{\"name\":\"a\"}}", m, sizeof m), SJ_MODEL_OTHER);
    cr_assert_eq(scan("{\"model\":[\"a\"]}", m, sizeof m), SJ_MODEL_OTHER);
    cr_assert_eq(scan("{\"model\":true}", m, sizeof m), SJ_MODEL_OTHER);
}

Test(serve_util, model_last_key_wins) {
    /* the library's parser and Python's json keep the last duplicate: route by it too */
    char m[64];
    cr_assert_eq(scan("{\"model\":\"first\",\"state\":\"x\",\"model\":\"second\"}", m, sizeof m), SJ_MODEL_STRING);
    cr_assert_str_eq(m, "second");
    cr_assert_eq(scan("{\"model\":\"first\",\"model\":null}", m, sizeof m), SJ_MODEL_NULL);
    cr_assert_eq(scan("{\"model\":null,\"model\":\"b\"}", m, sizeof m), SJ_MODEL_STRING);
    cr_assert_str_eq(m, "b");
    cr_assert_eq(scan("{\"model\":\"a\",\"model\":7}", m, sizeof m), SJ_MODEL_OTHER);
    cr_assert_eq(scan("{\"model\":\"abcdefghijklmnopqrstuvwxyz\",\"model\":\"ok\"}", m, 8), SJ_MODEL_STRING);
    cr_assert_str_eq(m, "ok");
}

Test(serve_util, model_too_long) {
    char m[8];
    cr_assert_eq(scan("{\"model\":\"abcdefghij\"}", m, sizeof m), SJ_MODEL_TOO_LONG);
    cr_assert_eq(scan("{\"model\":\"abcdefg\"}", m, sizeof m), SJ_MODEL_STRING);
    cr_assert_str_eq(m, "abcdefg");
}

Test(serve_util, malformed_never_overreads) {
    static const char *docs[] = {
        "{\"state\":[[[{\"a\":\"b\\\"]\"}]]],\"model\":\"ok\\u0041\",\"questions\":{\"q\":{\"type\":\"noul\"}}}",
        "[\"model\",\"x\"]",
        "{\"model\"\"x\"}",
        "{\"model\":",
        "\"model\"",
        "{,\"model\":\"x\"}",
        "{\"a\":}",
        "{\"a\":]]]]]]}",
    };
    char m[64];
    for (size_t d = 0; d < sizeof docs / sizeof docs[0]; d++) {
        size_t n = strlen(docs[d]);
        for (size_t cut = 0; cut <= n; cut++) {
            char *copy = malloc(cut ? cut : 1);
            cr_assert_not_null(copy);
            memcpy(copy, docs[d], cut);
            int k = sj_find_model(copy, cut, m, sizeof m);
            cr_assert(k >= SJ_MODEL_ABSENT && k <= SJ_MODEL_TOO_LONG);
            if (k == SJ_MODEL_STRING) cr_assert(strlen(m) < sizeof m);
            free(copy);
        }
    }
    /* the complete first document does find its model */
    cr_assert_eq(scan(docs[0], m, sizeof m), SJ_MODEL_STRING);
    cr_assert_str_eq(m, "okA");
    /* every malformed one is "absent", never a guess */
    for (size_t d = 1; d < sizeof docs / sizeof docs[0]; d++)
        cr_assert_eq(scan(docs[d], m, sizeof m), SJ_MODEL_ABSENT, "doc %zu", d);
}

Test(serve_util, deep_nesting_is_iterative) {
    size_t depth = 1000000;
    size_t n = 2 * depth + 64;
    char *s = malloc(n);
    cr_assert_not_null(s);
    size_t k = 0;
    k += (size_t)sprintf(s + k, "{\"state\":");
    memset(s + k, '[', depth);
    k += depth;
    memset(s + k, ']', depth);
    k += depth;
    k += (size_t)sprintf(s + k, ",\"model\":\"deep\"}");
    char m[16];
    cr_assert_eq(sj_find_model(s, k, m, sizeof m), SJ_MODEL_STRING);
    cr_assert_str_eq(m, "deep");
    free(s);
}

static const char *esc(const char *s, size_t n) {
    static struct sbuf b;
    sbuf_reset(&b);
    sbuf_add_json_str(&b, s, n);
    return b.p;
}

Test(serve_util, json_string_escaping) {
    cr_assert_str_eq(esc("plain", 5), "\"plain\"");
    cr_assert_str_eq(esc("a\"b\\c", 5), "\"a\\\"b\\\\c\"");
    cr_assert_str_eq(esc("l1\nl2\tx\r", 8), "\"l1\\nl2\\tx\\r\"");
    cr_assert_str_eq(esc("\x01\x1f", 2), "\"\\u0001\\u001f\"");
    cr_assert_str_eq(esc("nul\0x", 5), "\"nul\\u0000x\"");
    /* valid UTF-8 is kept; each invalid byte becomes U+FFFD */
    cr_assert_str_eq(esc("caf\xc3\xa9 \xf0\x9f\x98\x80", 10), "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"");
    cr_assert_str_eq(esc("\xff", 1), "\"\\ufffd\"");
    cr_assert_str_eq(esc("\xc0\xaf", 2), "\"\\ufffd\\ufffd\"");        /* overlong */
    cr_assert_str_eq(esc("\xed\xa0\x80", 3), "\"\\ufffd\\ufffd\\ufffd\""); /* surrogate */
    cr_assert_str_eq(esc("\xe2\x82", 2), "\"\\ufffd\\ufffd\"");        /* truncated */
}

Test(serve_util, constant_time_compare) {
    const char *key = "s3cret";
    cr_assert(ct_equal("s3cret", 6, key, 6));
    cr_assert(!ct_equal("s3creT", 6, key, 6));
    cr_assert(!ct_equal("s3cre", 5, key, 6));
    cr_assert(!ct_equal("s3crett", 7, key, 6));
    cr_assert(!ct_equal("", 0, key, 6));
    cr_assert(!ct_equal("tttttt", 6, key, 6));
    /* the candidate repeated to the key's length must not match either */
    cr_assert(!ct_equal("s", 1, "ssssss", 6));
}

Test(serve_util, sbuf_formats_long_text) {
    struct sbuf b = {0};
    char big[1000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    sbuf_addf(&b, "%s|%d", big, 42);
    cr_assert_eq(b.len, 999 + 3);
    cr_assert_str_eq(b.p + 999, "|42");
    sbuf_free(&b);
}
