/*
 * test_safetensors.c - the safetensors reader against files written by the Python
 * `safetensors` package (tests/fixtures/convert/st_*.safetensors, made by
 * tools/golden/check_convert.py fixtures), the writer round trip, and a corpus of damaged
 * headers that must each fail with SKYCMD_E_FORMAT and a message naming the problem.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "safetensors/safetensors.h"

#define FX SKYCMD_FIXTURES "/convert/"

Test(safetensors, python_numpy_file) {
    sk_err e = {0};
    sk_safetensors *st = NULL;
    cr_assert_eq(sk_st_open_file(FX "st_numpy.safetensors", &st, &e), SKYCMD_OK, "%s", e.msg);
    cr_assert_eq(sk_st_n_tensors(st), 5); /* __metadata__ is not a tensor */
    const sk_st_tensor *a = sk_st_find(st, "a");
    cr_assert(a);
    cr_assert_str_eq(a->dtype, "F32");
    cr_assert_eq(a->n_dims, 2);
    cr_assert_eq(a->shape[0], 2);
    cr_assert_eq(a->shape[1], 3);
    float v[6];
    cr_assert_eq(sk_st_to_f32(a, v, &e), SKYCMD_OK);
    for (int i = 0; i < 6; i++) cr_assert_eq(v[i], i * 0.5f - 1.0f);
    const sk_st_tensor *b = sk_st_find(st, "b");
    cr_assert(b);
    cr_assert_str_eq(b->dtype, "F16");
    float w[4];
    cr_assert_eq(sk_st_to_f32(b, w, &e), SKYCMD_OK);
    cr_assert_eq(w[0], 1.5f);
    cr_assert_eq(w[1], -2.25f);
    cr_assert_eq(w[2], 65504.0f);
    cr_assert_eq(w[3], 6.103515625e-05f);
    const sk_st_tensor *sc = sk_st_find(st, "scalar");
    cr_assert(sc);
    cr_assert_eq(sc->n_dims, 0);
    cr_assert_eq(sc->n_elements, 1);
    float s1;
    cr_assert_eq(sk_st_to_f32(sc, &s1, &e), SKYCMD_OK);
    cr_assert_eq(s1, 3.0f);
    const sk_st_tensor *em = sk_st_find(st, "empty");
    cr_assert(em);
    cr_assert_eq(em->n_elements, 0);
    cr_assert_eq(em->nbytes, 0);
    const sk_st_tensor *in = sk_st_find(st, "ints");
    cr_assert(in);
    cr_assert_eq(in->supported, 0);
    cr_assert_str_eq(in->dtype, "I64");
    int64_t dummy[3];
    cr_assert_eq(sk_st_to_f32(in, (float *)dummy, &e), SKYCMD_E_UNSUPPORTED);
    cr_assert(strstr(e.msg, "ints") && strstr(e.msg, "I64"), "%s", e.msg);
    cr_assert_null(sk_st_find(st, "__metadata__"));
    sk_st_close(st);
}

Test(safetensors, python_torch_bf16) {
    sk_err e = {0};
    sk_safetensors *st = NULL;
    cr_assert_eq(sk_st_open_file(FX "st_torch_bf16.safetensors", &st, &e), SKYCMD_OK, "%s", e.msg);
    const sk_st_tensor *t = sk_st_find(st, "bf");
    cr_assert(t);
    cr_assert_str_eq(t->dtype, "BF16");
    float v[4];
    cr_assert_eq(sk_st_to_f32(t, v, &e), SKYCMD_OK);
    cr_assert_eq(v[0], 1.0f);
    cr_assert_eq(v[1], -0.5f);
    cr_assert_eq(v[2], 3.140625f);
    cr_assert_eq(v[3], 0.00099945068359375f); /* torch's bf16 rounding of 1e-3 */
    sk_st_close(st);
}

Test(safetensors, writer_round_trip_and_python_layout) {
    sk_err e = {0};
    sk_st_writer *w = sk_st_writer_new();
    float a[6] = {1, 2, 3, 4, 5, -6.5f};
    uint16_t h[2] = {sk_f32_to_f16(0.5f), sk_f32_to_f16(-1.0f)};
    uint64_t sa[2] = {3, 2}, sh[1] = {2};
    cr_assert_eq(sk_st_writer_add(w, "x.weight", SK_GGML_F32, 2, sa, a, sizeof a, &e), 0);
    cr_assert_eq(sk_st_writer_add(w, "y", SK_GGML_F16, 1, sh, h, sizeof h, &e), 0);
    cr_assert_neq(sk_st_writer_add(w, "y", SK_GGML_F16, 1, sh, h, sizeof h, &e), 0);
    cr_assert_neq(sk_st_writer_add(w, "z", SK_GGML_F16, 1, sh, h, 3, &e), 0);
    uint8_t *buf;
    size_t n;
    cr_assert_eq(sk_st_writer_write_mem(w, &buf, &n, &e), 0);
    sk_st_writer_free(w);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | buf[i];
    cr_assert_eq((8 + hl) % 8, 0, "data must start 8-byte aligned");
    sk_safetensors *st;
    cr_assert_eq(sk_st_open_buffer(buf, n, "mem", &st, &e), 0, "%s", e.msg);
    const sk_st_tensor *x = sk_st_find(st, "x.weight");
    cr_assert(x && x->shape[0] == 3 && x->shape[1] == 2);
    float v[6];
    sk_st_to_f32(x, v, &e);
    cr_assert_eq(memcmp(v, a, sizeof a), 0);
    const sk_st_tensor *y = sk_st_find(st, "y");
    sk_st_to_f32(y, v, &e);
    cr_assert_eq(v[0], 0.5f);
    cr_assert_eq(v[1], -1.0f);
    sk_st_close(st);
    free(buf);
}

/* Build a file from a header string and `data_len` bytes of data. */
static uint8_t *mk(const char *hdr, size_t data_len, size_t *n) {
    size_t hl = strlen(hdr);
    *n = 8 + hl + data_len;
    uint8_t *b = calloc(1, *n);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, hdr, hl);
    return b;
}

static void expect_bad(const char *hdr, size_t data_len, const char *needle) {
    size_t n;
    uint8_t *b = mk(hdr, data_len, &n);
    sk_err e = {0};
    sk_safetensors *st = (sk_safetensors *)1;
    int s = sk_st_open_buffer(b, n, "bad.safetensors", &st, &e);
    cr_expect_eq(s, SKYCMD_E_FORMAT, "header %s: status %d", hdr, s);
    cr_expect_null(st);
    cr_expect(strstr(e.msg, needle) != NULL, "header %s: message '%s' lacks '%s'", hdr, e.msg,
              needle);
    cr_expect(strstr(e.msg, "bad.safetensors") != NULL, "message names the file: %s", e.msg);
    free(b);
}

Test(safetensors, damaged_headers) {
    expect_bad("[1,2]", 0, "JSON object");
    expect_bad("{\"a\":", 0, "JSON");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}xx", 8, "trailing");
    expect_bad("{\"a\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "unknown dtype");
    expect_bad("{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "dtype");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8, "shape");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "data_offsets");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, "truncated");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "needs 12");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "shape[0]");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", 8, "shape[0]");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "outside");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,9]}}", 8,
               "data_offsets");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],"
               "\"data_offsets\":[0,8]}}",
               8, "overflow");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
               "dimensions");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
               12, "overlap");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
               16, "twice");
    expect_bad("{\"a\":3}", 0, "not an object");
    expect_bad("{\"\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}", 4, "empty name");
}

Test(safetensors, damaged_lengths) {
    sk_err e = {0};
    sk_safetensors *st;
    uint8_t small[4] = {0};
    cr_assert_eq(sk_st_open_buffer(small, 4, "f", &st, &e), SKYCMD_E_FORMAT);
    uint8_t huge[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '{', '}'};
    cr_assert_eq(sk_st_open_buffer(huge, sizeof huge, "f", &st, &e), SKYCMD_E_FORMAT);
    cr_assert(strstr(e.msg, "header length"), "%s", e.msg);
    uint8_t past[12] = {100, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' '};
    cr_assert_eq(sk_st_open_buffer(past, sizeof past, "f", &st, &e), SKYCMD_E_FORMAT);
    cr_assert(strstr(e.msg, "truncated"), "%s", e.msg);
    /* An empty header object is a valid file with no tensors. */
    uint8_t empty[10] = {2, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    cr_assert_eq(sk_st_open_buffer(empty, sizeof empty, "f", &st, &e), SKYCMD_OK, "%s", e.msg);
    cr_assert_eq(sk_st_n_tensors(st), 0);
    sk_st_close(st);
    /* Invalid UTF-8 in the header. */
    uint8_t bad8[12] = {4, 0, 0, 0, 0, 0, 0, 0, '{', 0xff, 0xfe, '}'};
    cr_assert_eq(sk_st_open_buffer(bad8, sizeof bad8, "f", &st, &e), SKYCMD_E_FORMAT);
    /* Missing file: an I/O error naming the path. */
    cr_assert_eq(sk_st_open_file("/nonexistent/x.safetensors", &st, &e), SKYCMD_E_IO);
    cr_assert(strstr(e.msg, "/nonexistent/x.safetensors"), "%s", e.msg);
}
