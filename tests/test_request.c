/* test_request.c - the request JSON reader, the Python json.dumps writer and /v1/systemone
 * validation.
 *
 * Expected serializations come from Python (tests/fixtures/prompt/pyjson.json, written by
 * tools/golden/make_prompt_fixtures.py with json.dumps(json.loads(text), ensure_ascii=False));
 * expected validation messages are llama-server's wording (spec 6.4) or the documented
 * leniencies (docs/compat.md). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "skycmd.h"
#include "decide/request.h"
#include "prompt/pyjson.h"
#include "test_util.h"

static char *dump(const char *text, int *status) {
    sk_jdoc d;
    sk_err e = {0};
    *status = sk_json_parse(text, strlen(text), &d, &e);
    if (*status) return NULL;
    sk_buf b;
    sk_buf_init(&b);
    sk_pyjson_dump(&b, &d.root);
    sk_jdoc_free(&d);
    return sk_buf_detach(&b);
}

Test(pyjson, matches_python_json_dumps) {
    cJSON *root = tu_load_json(SKYCMD_FIXTURES "/prompt/pyjson.json");
    cJSON *cases = cJSON_GetObjectItem(root, "cases");
    int n = 0, bad = 0;
    cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        const char *want = cJSON_GetObjectItem(c, "dumps")->valuestring;
        int st;
        char *got = dump(text, &st);
        if (st || strcmp(got, want) != 0) {
            bad++;
            cr_log_error("%s: got %s want %s (status %d)", text, got ? got : "-", want, st);
        }
        free(got);
        n++;
    }
    cr_assert_gt(n, 600);
    cr_assert_eq(bad, 0, "%d of %d serializations differ from Python", bad, n);
    cJSON_Delete(root);
}

Test(pyjson, float_repr_hand_values) {
    struct { double x; const char *py; } t[] = {
        {1.0, "1.0"}, {0.1, "0.1"}, {1e-7, "1e-07"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"},
        {0.0001, "0.0001"}, {0.00001, "1e-05"}, {-0.0, "-0.0"}, {1.5e300, "1.5e+300"},
        {123.456, "123.456"}, {5e-324, "5e-324"}, {0.30000000000000004, "0.30000000000000004"},
        {2.0 / 3.0, "0.6666666666666666"}, {9007199254740992.0, "9007199254740992.0"},
        {1e17, "1e+17"}, {-2.5, "-2.5"}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char out[32];
        sk_py_float_repr(t[i].x, 0, out);
        cr_expect_str_eq(out, t[i].py);
    }
    char out[32];
    sk_py_float_repr(INFINITY, 1, out);
    cr_expect_str_eq(out, "Infinity");
    sk_py_float_repr(-INFINITY, 0, out);
    cr_expect_str_eq(out, "-inf");
    sk_py_float_repr(NAN, 1, out);
    cr_expect_str_eq(out, "NaN");
}

Test(pyjson, float_repr_fast_matches_reference_search) {
    /* probabilities, random bit patterns, powers of two and ten, values near halves */
    uint64_t st = 0x9E3779B97F4A7C15u;
    size_t n = 0, bad = 0;
    for (int i = 0; i < 300000; i++) {
        st ^= st << 13;
        st ^= st >> 7;
        st ^= st << 17;
        double x;
        switch (i % 5) {
        case 0: x = (double)(st >> 11) * 0x1p-53; break;
        case 1: memcpy(&x, &st, sizeof x); break;
        case 2: x = ldexp(1.0, (int)(st % 2000) - 1000); break;
        case 3: x = (double)(st % 100000) / 1e5 + (double)(st % 7) * 1e-17; break;
        default: x = (double)(float)((double)(st >> 11) * 0x1p-53); break;
        }
        if (!isfinite(x)) continue;
        char a[32], b[32];
        sk_py_float_repr(x, 1, a);
        sk_py_float_repr_ref(x, 1, b);
        n++;
        if (strcmp(a, b) != 0 && bad++ < 10) cr_log_error("%a: fast %s, reference %s", x, a, b);
    }
    cr_assert_gt(n, 250000);
    cr_assert_eq(bad, 0, "%zu of %zu differ", bad, n);
}

Test(pyjson, strict_syntax) {
    const char *bad[] = {"", " ", "{", "[1,]", "{\"a\":1,}", "NaN", "Infinity", "-Infinity", "01",
                         "1.", ".5", "1e", "+1", "\"\\x\"", "\"\\ud800\"", "\"\\udc00x\"",
                         "\"a\nb\"", "{'a':1}", "[1] [2]", "tru", "nul", "\"\xff\"",
                         "\"\xc0\xaf\"", "{\"a\" 1}", "[1 2]", "// c\n1", "\"\\u12\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sk_jdoc d;
        sk_err e = {0};
        int st = sk_json_parse(bad[i], strlen(bad[i]), &d, &e);
        cr_expect_eq(st, SKYCMD_E_JSON, "'%s' gave %d", bad[i], st);
        cr_expect(strstr(e.msg, "malformed JSON") != NULL, "%s", e.msg);
    }
    /* depth limit: 64 levels pass, 65 are refused as too large */
    char deep[200];
    memset(deep, '[', 64);
    memset(deep + 64, ']', 64);
    deep[128] = 0;
    int st;
    char *got = dump(deep, &st);
    cr_expect_eq(st, 0);
    free(got);
    memset(deep, '[', 65);
    memset(deep + 65, ']', 65);
    deep[130] = 0;
    got = dump(deep, &st);
    cr_expect_eq(st, SKYCMD_E_TOO_LARGE);
    /* a huge int is refused like Python 3.11 (4300 digits) */
    char big[4400];
    memset(big, '7', 4301);
    big[4301] = 0;
    got = dump(big, &st);
    cr_expect_eq(st, SKYCMD_E_JSON);
    big[4300] = 0;
    got = dump(big, &st);
    cr_expect_eq(st, 0);
    cr_expect_str_eq(got, big);
    free(got);
}

Test(pyjson, duplicate_keys_last_wins_first_position) {
    int st;
    char *got = dump("{\"a\":1,\"b\":2,\"a\":3}", &st);
    cr_assert_eq(st, 0);
    cr_expect_str_eq(got, "{\"a\": 3, \"b\": 2}");
    free(got);
    /* many keys take the hashed path */
    sk_buf b;
    sk_buf_init(&b);
    sk_buf_putc(&b, '{');
    for (int i = 0; i < 100; i++) sk_buf_printf(&b, "%s\"k%d\":%d", i ? "," : "", i % 40, i);
    sk_buf_putc(&b, '}');
    char *in = sk_buf_detach(&b);
    got = dump(in, &st);
    cr_assert_eq(st, 0);
    cr_expect(strncmp(got, "{\"k0\": 80, \"k1\": 81,", 20) == 0, "%s", got);
    cr_expect(strstr(got, "\"k39\": 79}") != NULL, "%s", got);
    free(got);
    free(in);
}

/* ---------------------------------------------------------------- validation ---- */

static int parse_msg(const char *json, char *msg, size_t cap) {
    skycmd_request *r = NULL;
    int st = skycmd_request_parse(json, strlen(json), &r);
    cr_assert(r != NULL);
    snprintf(msg, cap, "%s", skycmd_request_errmsg(r));
    skycmd_request_free(r);
    return st;
}

#define EXPECT_ERR(json, status, text)                                                   \
    do {                                                                                 \
        char m_[600];                                                                    \
        int st_ = parse_msg((json), m_, sizeof m_);                                      \
        cr_expect_eq(st_, (status), "%s -> %d (%s)", (json), st_, m_);                   \
        cr_expect_str_eq(m_, (text), "%s", (json));                                      \
    } while (0)

Test(request, llama_server_wording) {
    EXPECT_ERR("[1]", SKYCMD_E_REQUEST, "the request body must be a JSON object");
    EXPECT_ERR("{\"questions\":{\"a\":{}}}", SKYCMD_E_REQUEST, "\"state\" must be provided");
    EXPECT_ERR("{\"state\":null,\"questions\":{}}", SKYCMD_E_REQUEST, "\"state\" must be provided");
    EXPECT_ERR("{\"state\":\"s\",\"questions\":{}}", SKYCMD_E_REQUEST, "\"questions\" must be a non-empty object");
    EXPECT_ERR("{\"state\":\"s\",\"questions\":[1]}", SKYCMD_E_REQUEST, "\"questions\" must be a non-empty object");
    EXPECT_ERR("{\"state\":\"s\",\"questions\":{\"act\":3}}", SKYCMD_E_REQUEST, "questions.act: must be an object");
    EXPECT_ERR("{\"state\":\"s\",\"questions\":{\"act\":{\"type\":\"choice\"}}}", SKYCMD_E_REQUEST,
               "questions.act: \"instructions\" must be provided");
    EXPECT_ERR("{\"state\":\"s\",\"questions\":{\"act\":{\"type\":\"choice\",\"instructions\":null}}}",
               SKYCMD_E_REQUEST, "questions.act: \"instructions\" must be provided");
    EXPECT_ERR("{\"state\":\"s\",\"questions\":{\"act\":{\"type\":\"pick\",\"instructions\":\"i\"}}}",
               SKYCMD_E_REQUEST, "questions.act: \"type\" must be one of: choice, score, noul");
    EXPECT_ERR("{\"state\":\"s\",\"questions\":{\"action\":{\"type\":\"choice\",\"instructions\":\"i\",\"criteria\":{}}}}",
               SKYCMD_E_REQUEST, "questions.action: \"criteria\" must be a non-empty object");
    EXPECT_ERR("{\"state\":\"s\",\"questions\":{\"action\":{\"type\":\"choice\",\"instructions\":\"i\"}}}",
               SKYCMD_E_REQUEST, "questions.action: \"criteria\" must be a non-empty object");
    EXPECT_ERR("{\"state\":\"s\",\"questions\":{\"m\":{\"type\":\"score\",\"instructions\":\"i\",\"criteria\":[]}}}",
               SKYCMD_E_REQUEST, "questions.m: \"criteria\" must be a non-empty array of levels");
    EXPECT_ERR("{\"state\":\"s\",\"questions\":{\"d\":{\"type\":\"noul\",\"instructions\":\"i\",\"criteria\":[1]}}}",
               SKYCMD_E_REQUEST, "questions.d: \"criteria\" must be an object");
    EXPECT_ERR("{\"state\":\"s\",\"model\":3,\"questions\":{\"d\":{\"type\":\"noul\",\"instructions\":\"i\"}}}",
               SKYCMD_E_REQUEST, "\"model\" must be a string");
    EXPECT_ERR("{\"state\":\"s\",\"videos\":[\"x\"],\"questions\":{\"d\":{\"type\":\"noul\",\"instructions\":\"i\"}}}",
               SKYCMD_E_REQUEST, "\"videos\" is not supported");
    EXPECT_ERR("{\"state\":\"s\",\"images\":[\"data:x\"],\"questions\":{\"d\":{\"type\":\"noul\",\"instructions\":\"i\"}}}",
               SKYCMD_E_UNSUPPORTED, "this model cannot use images or files");
    EXPECT_ERR("{\"state\":\"s\",\"questions\":{\"c\":{\"type\":\"choice\",\"instructions\":\"i\",\"labels\":{\"true\":\"y\",\"false\":\"n\"},\"criteria\":[\"a\"]}}}",
               SKYCMD_E_REQUEST, "questions.c: \"labels\" is only supported for noul questions");
    EXPECT_ERR("{\"state\":\"s\",\"questions\":{\"d\":{\"type\":\"noul\",\"instructions\":\"i\",\"labels\":{\"true\":\" y \",\"false\":\"y\"}}}}",
               SKYCMD_E_REQUEST, "questions.d: \"labels\" must map exactly \"false\" and \"true\" to distinct non-empty strings");
    EXPECT_ERR("{\"state\":\"s\",\"questions\":{\"c\":{\"type\":\"choice\",\"instructions\":\"i\",\"criteria\":[\"a\",null]}}}",
               SKYCMD_E_REQUEST, "questions.c: \"criteria\" label 1 is null; a label must be a string, number or bool");
    EXPECT_ERR("{\"state\":\"s\",\"questions\":{\"c\":{\"type\":\"choice\",\"instructions\":\"i\",\"criteria\":[1,1.0]}}}",
               SKYCMD_E_REQUEST, "questions.c: \"criteria\" label 1 repeats label 0");
    EXPECT_ERR("{\"state\":\"s\",\"questions\":{\"c\":{\"type\":\"choice\",\"instructions\":\"i\",\"criteria\":[true,1]}}}",
               SKYCMD_E_REQUEST, "questions.c: \"criteria\" label 1 repeats label 0");
    EXPECT_ERR("{\"state\":\"s\",\"questions\":{\"c\":{\"type\":\"choice\",\"instructions\":\"i\",\"criteria\":[[1]]}}}",
               SKYCMD_E_REQUEST, "questions.c: \"criteria\" label 0 must be a string, number or bool");
    EXPECT_ERR("{\"state\":\"s\",", SKYCMD_E_JSON, "malformed JSON at byte 13 (line 1, column 14): expected a string key");
    EXPECT_ERR("{\n  \"state\": \"\xc3\xa9\",\n  x", SKYCMD_E_JSON,
               "malformed JSON at byte 21 (line 3, column 3): expected a string key");
}

Test(request, leniencies_and_limits) {
    char m[600];
    /* choice criteria as an array of keys; any non-empty list of score levels */
    cr_expect_eq(parse_msg("{\"state\":\"s\",\"questions\":{\"c\":{\"type\":\"choice\",\"instructions\":\"i\",\"criteria\":[\"a\",\"b\"]}}}", m, sizeof m), 0, "%s", m);
    cr_expect_eq(parse_msg("{\"state\":\"s\",\"questions\":{\"s\":{\"type\":\"score\",\"instructions\":\"i\",\"criteria\":[\"only\"]}}}", m, sizeof m), 0, "%s", m);
    /* 255 options pass, 256 do not */
    sk_buf b;
    for (int n = 255; n <= 256; n++) {
        sk_buf_init(&b);
        sk_buf_puts(&b, "{\"state\":\"s\",\"questions\":{\"q\":{\"type\":\"score\",\"instructions\":\"i\",\"criteria\":[");
        for (int i = 0; i < n; i++) sk_buf_printf(&b, "%s\"l%d\"", i ? "," : "", i);
        sk_buf_puts(&b, "]}}}");
        char *j = sk_buf_detach(&b);
        int st = parse_msg(j, m, sizeof m);
        if (n == 255) cr_expect_eq(st, 0, "%s", m);
        else {
            cr_expect_eq(st, SKYCMD_E_REQUEST);
            cr_expect_str_eq(m, "questions.q: too many options (256), this model supports at most 255");
        }
        free(j);
    }
    /* 4096 questions pass, 4097 are too large */
    for (int n = 4096; n <= 4097; n++) {
        sk_buf_init(&b);
        sk_buf_puts(&b, "{\"state\":\"s\",\"questions\":{");
        for (int i = 0; i < n; i++) sk_buf_printf(&b, "%s\"q%d\":{\"type\":\"noul\",\"instructions\":\"i\"}", i ? "," : "", i);
        sk_buf_puts(&b, "}}");
        char *j = sk_buf_detach(&b);
        skycmd_request *r = NULL;
        int st = skycmd_request_parse(j, strlen(j), &r);
        if (n == 4096) {
            cr_expect_eq(st, 0);
            cr_expect_eq(skycmd_request_question_count(r), 4096);
        } else {
            cr_expect_eq(st, SKYCMD_E_TOO_LARGE);
            cr_expect_str_eq(skycmd_request_errmsg(r), "too many questions (4097), the maximum is 4096");
            cr_expect_eq(skycmd_request_question_count(r), 0);
        }
        skycmd_request_free(r);
        free(j);
    }
    /* body size */
    skycmd_request *r = NULL;
    cr_expect_eq(skycmd_request_parse("{}", ((size_t)16 << 20) + 1, &r), SKYCMD_E_TOO_LARGE);
    skycmd_request_free(r);
    /* NULL safety */
    cr_expect_eq(skycmd_request_parse("{}", 2, NULL), SKYCMD_E_INVALID_ARGUMENT);
    cr_expect_eq(skycmd_request_parse(NULL, 0, &r), SKYCMD_E_JSON);
    skycmd_request_free(r);
    skycmd_request_free(NULL);
    cr_expect_eq(skycmd_request_question_count(NULL), 0);
    cr_expect_str_eq(skycmd_request_errmsg(NULL), "invalid skycmd_request handle");
}

Test(request, rendered_texts) {
    const char *j =
        "{\"state\":[1, 2.50, {\"k\": \"v\"}],\"questions\":{"
        "\"c\":{\"type\":\"choice\",\"instructions\":{\"a\":1e5},\"criteria\":{\"x\":null,\"y\":\"\",\"z\":0,\"w\":{\"p\":[true]}}},"
        "\"l\":{\"type\":\"choice\",\"instructions\":\"i\",\"criteria\":[\"s\",7,2.5,false,1e400]},"
        "\"s\":{\"type\":\"score\",\"instructions\":\"i\",\"criteria\":[\"lo\",{\"d\":1},3]},"
        "\"n\":{\"type\":\"noul\",\"instructions\":\"i\",\"criteria\":{\"TRUE\":\"holds\"},\"labels\":{\"false\":\" no \",\"true\":\"yes\"}}}}";
    sk_request r;
    sk_err e = {0};
    cr_assert_eq(sk_request_parse(j, strlen(j), &r, &e), 0, "%s", e.msg);
    cr_expect_str_eq(r.state.s, "[1, 2.5, {\"k\": \"v\"}]");
    cr_expect_eq(r.state_is_list, 1);
    cr_assert_eq(r.nq, 4);
    cr_expect_str_eq(r.q[0].ins.s, "{\"a\": 100000.0}");
    const char *c_txt[] = {"x", "y", "z: 0", "w: {\"p\": [true]}"};
    for (int i = 0; i < 4; i++) cr_expect_str_eq(r.q[0].opts[i].text.s, c_txt[i]);
    const char *l_txt[] = {"s", "7", "2.5", "False", "inf"};
    const char *l_key[] = {"s", "7", "2.5", "false", "Infinity"};
    for (int i = 0; i < 5; i++) {
        cr_expect_str_eq(r.q[1].opts[i].text.s, l_txt[i]);
        cr_expect_str_eq(r.q[1].opts[i].key.s, l_key[i]);
    }
    const char *s_txt[] = {"level 0: lo", "level 1: {\"d\": 1}", "level 2: 3"};
    for (int i = 0; i < 3; i++) cr_expect_str_eq(r.q[2].opts[i].text.s, s_txt[i]);
    cr_expect_str_eq(r.q[3].opts[0].text.s, "no: no, the statement does not hold");
    cr_expect_str_eq(r.q[3].opts[1].text.s, "yes: holds");
    cr_expect_str_eq(r.q[3].opts[1].key.s, "true");
    sk_request_free(&r);
}

static char *array_of_zeros(size_t k) {
    char *b = malloc(2 * k + 2);
    b[0] = '[';
    for (size_t i = 0; i < k; i++) {
        b[1 + 2 * i] = '0';
        b[2 + 2 * i] = i + 1 < k ? ',' : ']';
    }
    b[2 * k + 1] = 0;
    return b;
}

Test(pyjson, value_count_limit) {
    const size_t limit = (size_t)1 << 20;
    sk_jdoc d;
    sk_err e = {0};
    char *ok = array_of_zeros(limit - 1); /* k zeros + the array = the limit exactly */
    cr_expect_eq(sk_json_parse(ok, strlen(ok), &d, &e), 0, "%s", e.msg);
    sk_jdoc_free(&d);
    char *over = array_of_zeros(limit);
    cr_expect_eq(sk_json_parse(over, strlen(over), &d, &e), SKYCMD_E_TOO_LARGE);
    cr_expect_str_eq(e.msg, "JSON has more than 1048576 values");
    free(ok);
    free(over);
}
