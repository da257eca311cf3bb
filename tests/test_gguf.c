/*
 * test_gguf.c - the GGUF reader against files written by llama.cpp's own Python package
 * (gguf==0.19.0, tools/golden/make_gguf_fixtures.py): every key, type, value (nested arrays
 * included) and every tensor's dims, type, absolute data offset and bytes must equal what
 * gguf.GGUFReader saw. Then hostile input: the committed damaged corpus (each file must fail
 * with SKYCMD_E_FORMAT and a message naming the defect), every truncation of a valid file,
 * and deterministic random byte corruption (no crash; run under ASan+UBSan too).
 */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "test_util.h"

#define FIX SKYCMD_FIXTURES "/gguf/"

static char *hex(const void *p, uint64_t n) {
    static const char digits[] = "0123456789abcdef";
    char *s = malloc((size_t)n * 2 + 1);
    const uint8_t *b = p;
    for (uint64_t i = 0; i < n; i++) {
        s[2 * i] = digits[b[i] >> 4];
        s[2 * i + 1] = digits[b[i] & 15];
    }
    s[n * 2] = '\0';
    return s;
}

/* Our value in the JSON form the generator writes (see enc_scalar there). */
static cJSON *enc_value(const sk_gguf_value *v) {
    char buf[64];
    switch (v->type) {
    case SK_GGUF_U8: case SK_GGUF_U16: case SK_GGUF_U32: case SK_GGUF_U64: case SK_GGUF_BOOL:
        snprintf(buf, sizeof buf, "%" PRIu64, v->v.u);
        return cJSON_CreateString(buf);
    case SK_GGUF_I8: case SK_GGUF_I16: case SK_GGUF_I32: case SK_GGUF_I64:
        snprintf(buf, sizeof buf, "%" PRId64, v->v.i);
        return cJSON_CreateString(buf);
    case SK_GGUF_F32: {
        float f = (float)v->v.f;
        uint32_t u;
        memcpy(&u, &f, 4);
        snprintf(buf, sizeof buf, "%08" PRIx32, u);
        return cJSON_CreateString(buf);
    }
    case SK_GGUF_F64: {
        uint64_t u;
        memcpy(&u, &v->v.f, 8);
        snprintf(buf, sizeof buf, "%016" PRIx64, u);
        return cJSON_CreateString(buf);
    }
    case SK_GGUF_STRING: {
        char *h = hex(v->v.s.ptr, v->v.s.len);
        cJSON *j = cJSON_CreateString(h);
        free(h);
        return j;
    }
    case SK_GGUF_ARRAY: {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "elem", sk_gguf_value_type_name(v->v.arr.elem_type));
        cJSON *items = cJSON_AddArrayToObject(o, "items");
        sk_gguf_iter it;
        sk_gguf_value el;
        sk_gguf_iter_init(&it, v);
        uint64_t n = 0;
        while (sk_gguf_iter_next(&it, &el)) {
            cJSON_AddItemToArray(items, enc_value(&el));
            n++;
        }
        cr_assert_eq(n, v->v.arr.count);
        cr_assert(it.p == v->v.arr.end, "iterator must end where the array ends");
        return o;
    }
    }
    cr_assert_fail("unknown value type %u", v->type);
    return NULL;
}

static void check_against(const sk_gguf *g, const cJSON *exp, uint32_t version) {
    cr_assert_eq(sk_gguf_version(g), version);
    cr_assert_eq(sk_gguf_alignment(g), (uint64_t)cJSON_GetObjectItem(exp, "alignment")->valuedouble);
    cr_assert_eq(sk_gguf_file_size(g), (uint64_t)cJSON_GetObjectItem(exp, "size")->valuedouble);
    const cJSON *keys = cJSON_GetObjectItem(exp, "keys");
    cr_assert_eq(sk_gguf_n_kv(g), (size_t)cJSON_GetArraySize(keys));
    size_t i = 0;
    const cJSON *k;
    cJSON_ArrayForEach(k, keys) {
        const char *key = cJSON_GetObjectItem(k, "key")->valuestring;
        sk_str got = sk_gguf_kv_key(g, i);
        cr_assert(sk_str_eq(got, key), "key %zu: expected %s", i, key);
        cr_assert_eq(sk_gguf_find_key(g, key), (int64_t)i);
        const sk_gguf_value *v = sk_gguf_kv_value(g, i);
        cr_assert_str_eq(sk_gguf_value_type_name(v->type),
                         cJSON_GetObjectItem(k, "type")->valuestring, "type of %s", key);
        cJSON *mine = enc_value(v);
        if (!cJSON_Compare(mine, cJSON_GetObjectItem(k, "value"), 1)) {
            char *a = cJSON_PrintUnformatted(mine);
            char *b = cJSON_PrintUnformatted(cJSON_GetObjectItem(k, "value"));
            cr_assert_fail("value of %s: ours %s, gguf %s", key, a, b);
        }
        cJSON_Delete(mine);
        i++;
    }
    const cJSON *ts = cJSON_GetObjectItem(exp, "tensors");
    cr_assert_eq(sk_gguf_n_tensors(g), (size_t)cJSON_GetArraySize(ts));
    i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, ts) {
        const sk_gguf_tensor *tt = sk_gguf_tensor_at(g, i);
        const char *name = cJSON_GetObjectItem(t, "name")->valuestring;
        cr_assert(sk_str_eq(tt->name, name), "tensor %zu name", i);
        cr_assert_eq(sk_gguf_find_tensor(g, name), tt);
        const cJSON *ne = cJSON_GetObjectItem(t, "ne");
        cr_assert_eq(tt->n_dims, (uint32_t)cJSON_GetArraySize(ne), "%s n_dims", name);
        for (uint32_t d = 0; d < tt->n_dims; d++)
            cr_assert_eq(tt->ne[d], (uint64_t)cJSON_GetArrayItem(ne, (int)d)->valuedouble,
                         "%s ne[%u]", name, d);
        for (uint32_t d = tt->n_dims; d < 4; d++) cr_assert_eq(tt->ne[d], 1);
        cr_assert_eq(tt->type, (uint32_t)cJSON_GetObjectItem(t, "type")->valuedouble);
        cr_assert_eq(tt->nbytes, (uint64_t)cJSON_GetObjectItem(t, "nbytes")->valuedouble, "%s", name);
        cr_assert_eq(tt->n_elements, (uint64_t)cJSON_GetObjectItem(t, "n_elements")->valuedouble);
        uint64_t abs_off = sk_gguf_data_offset(g) + tt->offset;
        cr_assert_eq(abs_off, (uint64_t)cJSON_GetObjectItem(t, "data_offset")->valuedouble, "%s", name);
        /* zero-copy: the data pointer is inside the caller's bytes */
        cr_assert(tt->data == sk_gguf_bytes(g) + abs_off);
        char *h = hex(tt->data, tt->nbytes);
        cr_assert_str_eq(h, cJSON_GetObjectItem(t, "hex")->valuestring, "bytes of %s", name);
        free(h);
        i++;
    }
}

static void check_file(const char *gguf_name, const char *json_name, uint32_t version) {
    char p[512], j[512];
    snprintf(p, sizeof p, FIX "%s", gguf_name);
    snprintf(j, sizeof j, FIX "%s", json_name);
    cJSON *exp = tu_load_json(j);
    sk_err e = {0};
    sk_gguf *g = NULL;
    cr_assert_eq(sk_gguf_open_file(p, &g, &e), 0, "%s", e.msg);
    check_against(g, exp, version);
    sk_gguf_close(g);
    /* and from a caller's buffer */
    size_t n;
    char *buf = tu_slurp(p, &n);
    cr_assert_eq(sk_gguf_open_buffer(buf, n, &g, &e), 0, "%s", e.msg);
    check_against(g, exp, version);
    const sk_gguf_tensor *t0 = sk_gguf_tensor_at(g, 0);
    cr_assert((const char *)t0->data >= buf && (const char *)t0->data < buf + n);
    sk_gguf_close(g);
    free(buf);
    cJSON_Delete(exp);
}

Test(gguf_reader, matches_gguf_package_basic) { check_file("basic.gguf", "basic.json", 3); }
Test(gguf_reader, matches_gguf_package_align64) { check_file("align64.gguf", "align64.json", 3); }
Test(gguf_reader, reads_version_2) { check_file("basic_v2.gguf", "basic.json", 2); }

Test(gguf_reader, typed_getters_and_shapes) {
    sk_gguf *g = NULL;
    sk_err e = {0};
    cr_assert_eq(sk_gguf_open_file(FIX "basic.gguf", &g, &e), 0, "%s", e.msg);
    uint32_t u32;
    uint64_t u64;
    int64_t i64;
    float f;
    int b;
    sk_str s;
    const sk_gguf_value *arr;
    cr_assert_eq(sk_gguf_get_u32(g, "modern-bert.block_count", &u32), SKYCMD_OK);
    cr_assert_eq(u32, 3);
    cr_assert_eq(sk_gguf_get_u32(g, "test.u64", &u32), SKYCMD_E_FORMAT, "does not fit u32");
    cr_assert_eq(sk_gguf_get_u64(g, "test.u64", &u64), SKYCMD_OK);
    cr_assert_eq(u64, UINT64_MAX);
    cr_assert_eq(sk_gguf_get_u64(g, "test.i8", &u64), SKYCMD_E_FORMAT, "negative");
    cr_assert_eq(sk_gguf_get_i64(g, "test.i8", &i64), SKYCMD_OK);
    cr_assert_eq(i64, -100);
    cr_assert_eq(sk_gguf_get_i64(g, "test.u64", &i64), SKYCMD_E_FORMAT);
    cr_assert_eq(sk_gguf_get_i64(g, "test.u16", &i64), SKYCMD_OK);
    cr_assert_eq(i64, 65000);
    cr_assert_eq(sk_gguf_get_f32(g, "modern-bert.decision.temperature.choice.2", &f), SKYCMD_OK);
    cr_assert_float_eq(f, 1.0647699f, 1e-7);
    cr_assert_eq(sk_gguf_get_bool(g, "test.bool_true", &b), SKYCMD_OK);
    cr_assert_eq(b, 1);
    cr_assert_eq(sk_gguf_get_bool(g, "test.u8", &b), SKYCMD_E_FORMAT);
    cr_assert_eq(sk_gguf_get_str(g, "general.architecture", &s), SKYCMD_OK);
    cr_assert(sk_str_eq(s, "modern-bert"));
    cr_assert_eq(sk_gguf_get_str(g, "no.such.key", &s), SKYCMD_E_NOT_FOUND);
    cr_assert_eq(sk_gguf_find_key(g, "no.such.key"), -1);
    cr_assert_eq(sk_gguf_get_arr(g, "tokenizer.ggml.tokens", &arr), SKYCMD_OK);
    cr_assert_eq(arr->v.arr.count, 10);
    cr_assert_eq(sk_gguf_get_arr(g, "general.name", &arr), SKYCMD_E_FORMAT);
    cr_assert_null(sk_gguf_find_tensor(g, "nope"));
    const sk_gguf_tensor *t = sk_gguf_find_tensor(g, "test.4d");
    cr_assert_not_null(t);
    uint64_t shape[4];
    cr_assert_eq(sk_gguf_tensor_shape(t, shape), 4);
    /* numpy shape (2,2,2,3) is ggml ne [3,2,2,2]; the PyTorch order gives back (2,2,2,3) */
    cr_assert(shape[0] == 2 && shape[1] == 2 && shape[2] == 2 && shape[3] == 3);
    t = sk_gguf_find_tensor(g, "blk.0.f32.weight");
    sk_gguf_tensor_shape(t, shape);
    cr_assert(shape[0] == 4 && shape[1] == 8);
    cr_assert_null(sk_gguf_tensor_at(g, 1000));
    cr_assert_null(sk_gguf_kv_value(g, 1000));
    sk_gguf_close(g);
}

Test(gguf_reader, damaged_corpus_fails_cleanly) {
    cJSON *man = tu_load_json(FIX "damaged/manifest.json");
    cr_assert_geq(cJSON_GetArraySize(man), 30, "the corpus has at least 30 files");
    const cJSON *c;
    cJSON_ArrayForEach(c, man) {
        const char *file = cJSON_GetObjectItem(c, "file")->valuestring;
        const char *expect = cJSON_GetObjectItem(c, "expect")->valuestring;
        char p[512];
        snprintf(p, sizeof p, FIX "damaged/%s", file);
        sk_err e = {0};
        sk_gguf *g = NULL;
        int st = sk_gguf_open_file(p, &g, &e);
        cr_assert_eq(st, SKYCMD_E_FORMAT, "%s: status %d (%s)", file, st, e.msg);
        cr_assert_null(g);
        cr_assert(strstr(e.msg, expect) != NULL, "%s: message \"%s\" lacks \"%s\"", file, e.msg,
                  expect);
        cr_assert(strstr(e.msg, p) == e.msg, "%s: message names the file: %s", file, e.msg);
        /* the same from a buffer */
        size_t n;
        char *buf = tu_slurp(p, &n);
        sk_err e2 = {0};
        cr_assert_eq(sk_gguf_open_buffer(buf, n, &g, &e2), SKYCMD_E_FORMAT, "%s", file);
        cr_assert(strstr(e2.msg, expect) != NULL, "%s: %s", file, e2.msg);
        free(buf);
    }
    cJSON_Delete(man);
}

Test(gguf_reader, every_truncation_fails) {
    size_t n;
    char *buf = tu_slurp(FIX "basic.gguf", &n);
    for (size_t len = 0; len < n; len++) {
        /* a fresh copy of exactly len bytes so that ASan catches any read past the end */
        char *cut = malloc(len ? len : 1);
        memcpy(cut, buf, len);
        sk_err e = {0};
        sk_gguf *g = NULL;
        int st = sk_gguf_open_buffer(cut, len, &g, &e);
        cr_assert_eq(st, SKYCMD_E_FORMAT, "prefix of %zu bytes: %d", len, st);
        cr_assert(e.msg[0] != '\0');
        free(cut);
    }
    free(buf);
}

Test(gguf_reader, random_corruption_never_crashes) {
    size_t n;
    char *buf = tu_slurp(FIX "basic.gguf", &n);
    char *m = malloc(n);
    uint64_t state = 0x9e3779b97f4a7c15ull;
    int ok = 0, bad = 0;
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(m, buf, n);
        int flips = 1 + iter % 4;
        for (int k = 0; k < flips; k++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            size_t pos = (size_t)(state >> 33) % n;
            m[pos] = (char)(state >> 13);
        }
        sk_err e = {0};
        sk_gguf *g = NULL;
        int st = sk_gguf_open_buffer(m, n, &g, &e);
        cr_assert(st == SKYCMD_OK || st == SKYCMD_E_FORMAT, "status %d", st);
        if (st == SKYCMD_OK) {
            ok++;
            /* walk everything the reader exposes */
            for (size_t i = 0; i < sk_gguf_n_kv(g); i++) {
                const sk_gguf_value *v = sk_gguf_kv_value(g, i);
                if (v->type == SK_GGUF_ARRAY) {
                    sk_gguf_iter it;
                    sk_gguf_value el;
                    sk_gguf_iter_init(&it, v);
                    while (sk_gguf_iter_next(&it, &el)) {}
                }
            }
            for (size_t i = 0; i < sk_gguf_n_tensors(g); i++) {
                const sk_gguf_tensor *t = sk_gguf_tensor_at(g, i);
                volatile uint8_t sink = 0;
                if (t->data && t->nbytes) sink ^= t->data[t->nbytes - 1];
                (void)sink;
            }
            sk_gguf_close(g);
        } else {
            bad++;
            cr_assert(e.msg[0] != '\0');
        }
    }
    cr_assert_gt(bad, 0);
    free(m);
    free(buf);
}

/* A file with a tensor of a type we do not know is still readable: other(N). */
Test(gguf_reader, unknown_tensor_type_is_kept) {
    sk_gguf_writer *w = sk_gguf_writer_new(0);
    float x[4] = {1, 2, 3, 4};
    uint64_t ne[1] = {4};
    sk_err e = {0};
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "x", 1, ne, SK_GGML_F32, x, 16, 0, &e), 0);
    uint8_t *out;
    size_t n;
    cr_assert_eq(sk_gguf_writer_write_mem(w, &out, &n, &e), 0);
    sk_gguf_writer_free(w);
    /* header 24 + general.alignment (8+17+4+4) + name (8+1) + n_dims 4 + ne 8 -> type */
    size_t type_at = 24 + 33 + 9 + 4 + 8;
    cr_assert_eq(out[type_at], SK_GGML_F32);
    out[type_at] = 99;
    sk_gguf *g = NULL;
    cr_assert_eq(sk_gguf_open_buffer(out, n, &g, &e), 0, "%s", e.msg);
    const sk_gguf_tensor *t = sk_gguf_tensor_at(g, 0);
    cr_assert_eq(t->type, 99);
    cr_assert_eq(t->nbytes, 0);
    cr_assert_null(t->data);
    cr_assert_eq(t->n_elements, 4);
    cr_assert_null(sk_ggml_type_name(99));
    sk_gguf_close(g);
    free(out);
}

Test(gguf_reader, missing_file_is_io_error) {
    sk_err e = {0};
    sk_gguf *g = NULL;
    cr_assert_eq(sk_gguf_open_file(FIX "does-not-exist.gguf", &g, &e), SKYCMD_E_IO);
    cr_assert(strstr(e.msg, "does-not-exist.gguf") != NULL);
    cr_assert_eq(sk_gguf_open_file(FIX, &g, &e), SKYCMD_E_IO, "a directory");
}

/* ---- the reader's own copy of a file (issue 37: model files written over in place) ---- */

/* A GGUF with one 64 KiB F32 tensor (whole pages inside it) written to path; its bytes. */
static uint8_t *write_paged_gguf(const char *path, size_t *size) {
    enum { N = 16384 };
    float *x = malloc(N * sizeof *x);
    cr_assert(x != NULL);
    for (size_t i = 0; i < N; i++) x[i] = (float)i * 0.25f - 7.0f;
    sk_gguf_writer *w = sk_gguf_writer_new(0);
    sk_err e = {0};
    const uint64_t ne[2] = {128, N / 128};
    cr_assert_eq(sk_gguf_writer_add_str(w, "general.name", "paged"), 0);
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "t.f32", 2, ne, SK_GGML_F32, x, N * sizeof *x, 1, &e),
                 0, "%s", e.msg);
    uint8_t *bytes = NULL;
    cr_assert_eq(sk_gguf_writer_write_mem(w, &bytes, size, &e), 0, "%s", e.msg);
    sk_gguf_writer_free(w);
    free(x);
    cr_assert_eq(tu_write_file(path, bytes, *size), 0);
    return bytes;
}

/* Overwrite the file's bytes in place (same inode, same size): what `cp`/dd conv=notrunc do. */
static void overwrite_in_place(const char *path, const uint8_t *bytes, size_t size) {
    FILE *f = fopen(path, "r+b");
    cr_assert(f != NULL);
    cr_assert_eq(fwrite(bytes, 1, size, f), size);
    cr_assert_eq(fclose(f), 0);
}

Test(gguf_reader, file_copy_is_immune_to_in_place_changes) {
    char path[512];
    snprintf(path, sizeof path, "%s/gguf_in_place_%d.gguf", SKYCMD_BINARY_DIR, (int)getpid());
    size_t size = 0;
    uint8_t *orig = write_paged_gguf(path, &size);
    sk_gguf *g = NULL;
    sk_err e = {0};
    cr_assert_eq(sk_gguf_open_file(path, &g, &e), 0, "%s", e.msg);
    const sk_gguf_tensor *t = sk_gguf_find_tensor(g, "t.f32");
    cr_assert(t != NULL && t->data != NULL);
    const size_t off = (size_t)(t->data - sk_gguf_bytes(g));
    /* written over with other bytes, then truncated: the reader still has what it read */
    uint8_t *other = malloc(size);
    memset(other, 0x5a, size);
    overwrite_in_place(path, other, size);
    cr_assert_eq(truncate(path, 0), 0);
    cr_expect_eq(memcmp(t->data, orig + off, (size_t)t->nbytes), 0, "the tensor changed with the file");
    cr_expect_eq(memcmp(sk_gguf_bytes(g), orig, size), 0, "the bytes changed with the file");
    sk_gguf_close(g);
    free(other);
    free(orig);
    remove(path);
}

Test(gguf_reader, released_pages_come_back_from_the_file) {
    char path[512];
    snprintf(path, sizeof path, "%s/gguf_release_%d.gguf", SKYCMD_BINARY_DIR, (int)getpid());
    size_t size = 0;
    uint8_t *orig = write_paged_gguf(path, &size);
    sk_gguf *g = NULL;
    sk_err e = {0};
    cr_assert_eq(sk_gguf_open_file_ex(path, SK_GGUF_RELEASABLE, &g, &e), 0, "%s", e.msg);
    const sk_gguf_tensor *t = sk_gguf_find_tensor(g, "t.f32");
    cr_assert(t != NULL);
    /* given back, then read back from the unchanged file: the same bytes */
    sk_gguf_release_pages(g, t->data, (size_t)t->nbytes);
    cr_expect_eq(memcmp(sk_gguf_bytes(g), orig, size), 0, "bytes not restored from the file");
    /* a non-releasable reader never gives pages back */
    sk_gguf *g2 = NULL;
    cr_assert_eq(sk_gguf_open_file(path, &g2, &e), 0, "%s", e.msg);
    const sk_gguf_tensor *t2 = sk_gguf_find_tensor(g2, "t.f32");
    sk_gguf_release_pages(g2, t2->data, (size_t)t2->nbytes);
    cr_expect_eq(memcmp(t2->data, orig + (t2->data - sk_gguf_bytes(g2)), (size_t)t2->nbytes), 0);
    sk_gguf_close(g2);
    /* the file changed after the reading: what cannot be restored is 0xff (NaN), never the
     * new file's bytes; the rest (header, metadata, partial pages) is the original */
    const size_t off = (size_t)(t->data - sk_gguf_bytes(g));
    sk_gguf_release_pages(g, t->data, (size_t)t->nbytes);
    uint8_t *other = malloc(size);
    memcpy(other, orig, size);
    for (size_t i = off; i < size; i++) other[i] ^= 0x11;
    overwrite_in_place(path, other, size);
    const uint8_t *b = sk_gguf_bytes(g);
    size_t n_ff = 0, n_new = 0;
    for (size_t i = 0; i < size; i++) {
        if (b[i] == orig[i]) continue;
        if (b[i] == 0xff) n_ff++;
        else if (b[i] == other[i]) n_new++;
    }
#if defined(__linux__)
    cr_expect(n_ff > 0, "released pages of a changed file are not poisoned");
#endif
    cr_expect_eq(n_new, 0, "%zu bytes of the changed file crept in", n_new);
    cr_expect_eq(memcmp(b, orig, off), 0, "the header changed");
    sk_gguf_close(g);
    free(other);
    free(orig);
    remove(path);
}
