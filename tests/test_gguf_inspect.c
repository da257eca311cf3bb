/*
 * test_gguf_inspect.c - skycmd_inspect() and `skycmd inspect`.
 * The text form must show the seed's gguf-inspect layout (header line, "N metadata keys:",
 * "key (type) = value", arrays cut to --max-array, the tensor rows with ggml dims, type and
 * byte size, and the totals); the JSON form must carry what gguf.GGUFReader saw in the
 * fixture (basic.json, written by the gguf package), so it is checked against that, not
 * against our own output. The CLI is run as a program (SKYCMD_CLI, set by ctest).
 */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "skycmd.h"
#include "gguf/gguf.h"
#include "test_util.h"

#define FIX SKYCMD_FIXTURES "/gguf/"

static char *inspect(const char *path, int64_t max_array, int json, int *status, char *msg) {
    skycmd_options *o = skycmd_options_new();
    skycmd_error *e = skycmd_error_new();
    if (max_array >= 0) cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_MAX_ARRAY, max_array), 0);
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_JSON, json), 0);
    char *out = NULL;
    *status = skycmd_inspect(path, o, &out, e);
    cr_assert_eq(skycmd_error_status(e), *status);
    if (msg) snprintf(msg, 512, "%s", skycmd_error_message(e));
    skycmd_options_free(o);
    skycmd_error_free(e);
    return out;
}

Test(inspect, text_layout_like_the_seed) {
    int st;
    char *s = inspect(FIX "basic.gguf", 4, 0, &st, NULL);
    cr_assert_eq(st, SKYCMD_OK);
    const char *expect_lines[] = {
        FIX "basic.gguf: GGUF v3, 1984 bytes, alignment 32\n\n21 metadata keys:\n",
        "\n  general.architecture (string) = \"modern-bert\"\n",
        "\n  modern-bert.block_count (u32) = 3\n",
        "\n  modern-bert.decision.temperature.choice.2 (f32) = 1.0647699\n",
        "\n  test.u64 (u64) = 18446744073709551615\n",
        "\n  test.i8 (i8) = -100\n",
        "\n  test.bool_true (bool) = true\n",
        "\n  test.arr_i32 (array[i32; 5]) = [-1, 0, 1, 2147483647, ...]\n",
        "\n  tokenizer.ggml.tokens (array[string; 10]) = [\"[CLS]\", \"[SEP]\", \"\xC4\xA0the\", \"a\\\"b\\\\c\", ...]\n",
        "\n  test.arr_nested (array[array; 3]) = [[1, 2, 3], [4], [5, 6]]\n",
        "\n6 tensors (ggml dims, ne[0] = innermost):\n",
        /* columns as in the seed: name 40, dims 22, type 6, bytes 10 */
        "\n  blk.0.f32.weight                         [8, 4]                 F32           128 bytes\n",
        "\n  blk.0.q8.weight                          [64, 3]                Q8_0          204 bytes\n",
        "\n  test.4d                                  [3, 2, 2, 2]           F32            96 bytes\n",
        /* 32+15+32+192+7+24 parameters; 128+30+64+204+28+96 bytes */
        "\ntotal: 302 parameters, 550 bytes of tensor data\n",
    };
    for (size_t i = 0; i < sizeof expect_lines / sizeof *expect_lines; i++)
        cr_assert(strstr(s, expect_lines[i]) != NULL, "missing:\n%s\nin:\n%s", expect_lines[i], s);
    cr_assert(strncmp(s, expect_lines[0], strlen(expect_lines[0])) == 0);
    skycmd_string_free(s);
    /* default --max-array is 8 */
    s = inspect(FIX "basic.gguf", -1, 0, &st, NULL);
    cr_assert(strstr(s, "\"tok6\", \"tok7\", ...]") != NULL, "%s", s);
    skycmd_string_free(s);
    s = inspect(FIX "align64.gguf", 0, 0, &st, NULL);
    cr_assert(strstr(s, "alignment 64\n") != NULL);
    cr_assert(strstr(s, "(array[u8; 4]) = [...]") != NULL, "%s", s);
    cr_assert(strstr(s, "general.alignment (u32) = 64\n") != NULL);
    skycmd_string_free(s);
}

Test(inspect, json_matches_gguf_reader_view) {
    int st;
    char *s = inspect(FIX "basic.gguf", 100, 1, &st, NULL);
    cr_assert_eq(st, SKYCMD_OK);
    cJSON *j = cJSON_Parse(s);
    cr_assert_not_null(j, "one JSON document: %s", s);
    char *es = NULL;
    sk_err e = {0};
    size_t n;
    cr_assert_eq(sk_read_file(FIX "basic.json", &es, &n, 1 << 20, &e), 0);
    cJSON *exp = cJSON_Parse(es);
    cr_assert_eq(cJSON_GetObjectItem(j, "version")->valuedouble, 3);
    cr_assert_eq(cJSON_GetObjectItem(j, "size")->valuedouble, cJSON_GetObjectItem(exp, "size")->valuedouble);
    cr_assert_eq(cJSON_GetObjectItem(j, "alignment")->valuedouble, 32);
    const cJSON *md = cJSON_GetObjectItem(j, "metadata");
    const cJSON *ek = cJSON_GetObjectItem(exp, "keys");
    cr_assert_eq(cJSON_GetArraySize(md), cJSON_GetArraySize(ek));
    for (int i = 0; i < cJSON_GetArraySize(md); i++) {
        const cJSON *a = cJSON_GetArrayItem(md, i), *b = cJSON_GetArrayItem(ek, i);
        cr_assert_str_eq(cJSON_GetObjectItem(a, "key")->valuestring, cJSON_GetObjectItem(b, "key")->valuestring);
        cr_assert_str_eq(cJSON_GetObjectItem(a, "type")->valuestring, cJSON_GetObjectItem(b, "type")->valuestring);
    }
    /* exact 64-bit integers and a nested array, as gguf wrote them */
    const char *txt = s;
    cr_assert(strstr(txt, "18446744073709551615") != NULL);
    cr_assert(strstr(txt, "-9223372036854775807") != NULL);
    const cJSON *nested = cJSON_GetArrayItem(md, 19);
    cr_assert_str_eq(cJSON_GetObjectItem(nested, "key")->valuestring, "test.arr_nested");
    char *nv = cJSON_PrintUnformatted(cJSON_GetObjectItem(nested, "value"));
    cr_assert_str_eq(nv, "[[1,2,3],[4],[5,6]]");
    free(nv);
    const cJSON *ts = cJSON_GetObjectItem(j, "tensors");
    const cJSON *et = cJSON_GetObjectItem(exp, "tensors");
    cr_assert_eq(cJSON_GetArraySize(ts), cJSON_GetArraySize(et));
    double total_bytes = 0, total_params = 0;
    for (int i = 0; i < cJSON_GetArraySize(ts); i++) {
        const cJSON *a = cJSON_GetArrayItem(ts, i), *b = cJSON_GetArrayItem(et, i);
        cr_assert_str_eq(cJSON_GetObjectItem(a, "name")->valuestring, cJSON_GetObjectItem(b, "name")->valuestring);
        cr_assert(cJSON_Compare(cJSON_GetObjectItem(a, "dims"), cJSON_GetObjectItem(b, "ne"), 1));
        cr_assert_eq(cJSON_GetObjectItem(a, "type_id")->valuedouble, cJSON_GetObjectItem(b, "type")->valuedouble);
        cr_assert_eq(cJSON_GetObjectItem(a, "bytes")->valuedouble, cJSON_GetObjectItem(b, "nbytes")->valuedouble);
        total_bytes += cJSON_GetObjectItem(b, "nbytes")->valuedouble;
        total_params += cJSON_GetObjectItem(b, "n_elements")->valuedouble;
    }
    cr_assert_eq(cJSON_GetObjectItem(j, "total_bytes")->valuedouble, total_bytes);
    cr_assert_eq(cJSON_GetObjectItem(j, "total_parameters")->valuedouble, total_params);
    cJSON_Delete(exp);
    free(es);
    cJSON_Delete(j);
    skycmd_string_free(s);
}

Test(inspect, unknown_type_shows_other) {
    sk_gguf_writer *w = sk_gguf_writer_new(0);
    float x[4] = {1, 2, 3, 4};
    uint64_t ne[1] = {4};
    sk_err e = {0};
    cr_assert_eq(sk_gguf_writer_add_str(w, "s", "bad\xff\x01"), 0);
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "x", 1, ne, SK_GGML_F32, x, 16, 0, &e), 0);
    uint8_t *out;
    size_t n;
    cr_assert_eq(sk_gguf_writer_write_mem(w, &out, &n, &e), 0);
    sk_gguf_writer_free(w);
    /* the tensor's type field: header 24, key "s" (8+1+4+8+5), alignment (8+17+4+4),
     * name (8+1), n_dims 4, ne 8 */
    size_t type_at = 24 + 26 + 33 + 9 + 4 + 8;
    cr_assert_eq(out[type_at], SK_GGML_F32);
    out[type_at] = 99;
    const char *path = SKYCMD_BINARY_DIR "/inspect_other.gguf";
    cr_assert_eq(tu_write_file(path, out, n), 0, "cannot write %s", path);
    free(out);
    int st;
    char *s = inspect(path, 8, 0, &st, NULL);
    cr_assert_eq(st, SKYCMD_OK);
    cr_assert(strstr(s, "  x                                        [4]                    other(99)          ? bytes\n") != NULL, "%s", s);
    cr_assert(strstr(s, "s (string) = \"bad\\xff\\u{1}\"") != NULL, "escaped: %s", s);
    cr_assert(strstr(s, "total: 4 parameters, 0 bytes") != NULL);
    skycmd_string_free(s);
    s = inspect(path, 8, 1, &st, NULL);
    cJSON *j = cJSON_Parse(s);
    cr_assert_not_null(j, "valid JSON even with bad UTF-8: %s", s);
    const cJSON *t = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tensors"), 0);
    cr_assert_str_eq(cJSON_GetObjectItem(t, "type")->valuestring, "other(99)");
    cr_assert(cJSON_IsNull(cJSON_GetObjectItem(t, "bytes")));
    cJSON_Delete(j);
    skycmd_string_free(s);
    remove(path);
}

Test(inspect, errors) {
    int st;
    char msg[512];
    char *s = inspect(FIX "damaged/overlap.gguf", 8, 0, &st, msg);
    cr_assert_eq(st, SKYCMD_E_FORMAT);
    cr_assert_null(s);
    cr_assert(strstr(msg, "overlap") && strstr(msg, "overlap.gguf"), "%s", msg);
    s = inspect(FIX "nope.gguf", 8, 0, &st, msg);
    cr_assert_eq(st, SKYCMD_E_IO);
    cr_assert_null(s);
    char *out = (char *)1;
    cr_assert_eq(skycmd_inspect(NULL, NULL, &out, NULL), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert_null(out);
    cr_assert_eq(skycmd_inspect(FIX "basic.gguf", NULL, NULL, NULL), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert_eq(skycmd_inspect(FIX "basic.gguf", NULL, &out, NULL), SKYCMD_OK, "NULL options = defaults");
    skycmd_string_free(out);
}

/* Run the CLI; returns the exit code, stdout in *out. */
static int run_cli(const char *args, char **out) {
    const char *cli = getenv("SKYCMD_CLI");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>/dev/null", cli, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t k;
    while ((k = fread(buf + n, 1, cap - n - 1, p)) > 0) n += k;
    buf[n] = '\0';
    int rc = pclose(p);
    *out = buf;
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

Test(inspect, cli) {
    if (!getenv("SKYCMD_CLI")) cr_skip_test("SKYCMD_CLI not set (run through ctest)");
    char *out;
    cr_assert_eq(run_cli("inspect --help", &out), 0);
    cr_assert(strstr(out, "usage: skycmd inspect FILE [--max-array N] [--json]") != NULL, "%s", out);
    free(out);
    cr_assert_eq(run_cli("inspect " FIX "basic.gguf --max-array 2", &out), 0);
    cr_assert(strstr(out, "total: 302 parameters, 550 bytes of tensor data\n") != NULL, "%s", out);
    cr_assert(strstr(out, "(array[u8; 4]) = [1, 2, ...]") != NULL, "%s", out);
    free(out);
    cr_assert_eq(run_cli("inspect --json " FIX "basic.gguf", &out), 0);
    cJSON *j = cJSON_Parse(out);
    cr_assert_not_null(j);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "tensors")), 6);
    cJSON_Delete(j);
    free(out);
    cr_assert_eq(run_cli("inspect " FIX "damaged/dup_key.gguf", &out), 1);
    free(out);
    cr_assert_eq(run_cli("inspect", &out), 2, "no file is a usage error");
    free(out);
    cr_assert_eq(run_cli("inspect a b", &out), 2);
    free(out);
    cr_assert_eq(run_cli("inspect --max-array x " FIX "basic.gguf", &out), 2);
    free(out);
    cr_assert_eq(run_cli("inspect --bogus " FIX "basic.gguf", &out), 2);
    free(out);
}

/* Names cannot forge output lines or reach the terminal raw. */
Test(inspect, control_characters_in_names_are_escaped) {
    sk_gguf_writer *w = sk_gguf_writer_new(0);
    float x[2] = {1, 2};
    uint64_t ne[1] = {2};
    sk_err e = {0};
    cr_assert_eq(sk_gguf_writer_add_u32(w, "evil\nkey", 1), 0);
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "t\x1b[2J", 1, ne, SK_GGML_F32, x, 8, 0, &e), 0);
    const char *path = SKYCMD_BINARY_DIR "/inspect_ctrl.gguf";
    cr_assert_eq(sk_gguf_writer_write(w, path, NULL, NULL, &e), 0, "%s", e.msg);
    sk_gguf_writer_free(w);
    int st;
    char *s = inspect(path, 8, 0, &st, NULL);
    cr_assert_eq(st, SKYCMD_OK);
    cr_assert(strstr(s, "  evil\\x0akey (u32) = 1\n") != NULL, "%s", s);
    cr_assert(strstr(s, "  t\\x1b[2J ") != NULL, "%s", s);
    cr_assert_null(strchr(s, 0x1b), "no raw ESC");
    cr_assert_null(strstr(s, "evil\n"));
    skycmd_string_free(s);
    s = inspect(path, 8, 1, &st, NULL);
    cJSON *j = cJSON_Parse(s);
    cr_assert_not_null(j);
    cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "metadata"), 0), "key")->valuestring,
                     "evil\nkey", "JSON keeps the exact key (escaped by JSON itself)");
    cJSON_Delete(j);
    skycmd_string_free(s);
    remove(path);
}
