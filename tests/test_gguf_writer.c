/*
 * test_gguf_writer.c - the GGUF v3 writer.
 *  - ours_writer.gguf: the recipe below, written by our writer, must equal byte for byte the
 *    committed tests/fixtures/gguf/ours_writer.gguf, which tools/golden/make_gguf_fixtures.py
 *    read with gguf.GGUFReader and checked against the same recipe (ours_writer.check.json
 *    records the verdict and the file's FNV-1a hash). If the writer changes on purpose,
 *    copy build/ours_writer.gguf over the fixture and rerun the script.
 *  - our reader reads our writer's output back (keys, values, dims, bytes, alignment);
 *  - a copy of every key and tensor of a gguf-written file through add_value round-trips;
 *  - refusals (Q8_0 rows, duplicates, sizes, names, alignment) and atomicity (no partial or
 *    temporary file after a failure or a cancel; an existing file stays untouched).
 */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "test_util.h"

#define FIX SKYCMD_FIXTURES "/gguf/"

/* The offset basis tools/golden/make_gguf_fixtures.py hashes ours_writer.gguf from (not the
 * standard one; the digest only has to be the generator's). */
#define WRITER_CHECK_FNV_BASIS 1469598103934665603ull

/* Keep in step with ours_writer_expectation() in tools/golden/make_gguf_fixtures.py. */
static sk_gguf_writer *ours_recipe(float *ramp, uint8_t *f16, uint8_t *bf16, uint8_t *q8) {
    for (int i = 0; i < 128; i++) ramp[i] = (float)i / 16.0f - 4.0f;
    sk_ggml_from_f32(SK_GGML_F16, ramp, f16, 128);
    sk_ggml_from_f32(SK_GGML_BF16, ramp, bf16, 128);
    sk_ggml_from_f32(SK_GGML_Q8_0, ramp, q8, 128);
    sk_gguf_writer *w = sk_gguf_writer_new(0);
    cr_assert_not_null(w);
    cr_assert_eq(sk_gguf_writer_add_str(w, "general.architecture", "modern-bert"), 0);
    cr_assert_eq(sk_gguf_writer_add_str(w, "general.name", "ours"), 0);
    cr_assert_eq(sk_gguf_writer_add_u32(w, "test.u32", 7), 0);
    cr_assert_eq(sk_gguf_writer_add_i32(w, "test.i32", -7), 0);
    cr_assert_eq(sk_gguf_writer_add_u64(w, "test.u64", (uint64_t)1 << 40), 0);
    cr_assert_eq(sk_gguf_writer_add_f32(w, "test.f32", 0.25f), 0);
    cr_assert_eq(sk_gguf_writer_add_bool(w, "test.bool", 1), 0);
    int32_t arr[3] = {1, -2, 3};
    cr_assert_eq(sk_gguf_writer_add_arr(w, "test.arr_i32", SK_GGUF_I32, arr, 3), 0);
    const char *toks[3] = {"a", "bb", "ccc"};
    cr_assert_eq(sk_gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", toks, 3), 0);
    uint64_t ne[2] = {64, 2}, ne1[1] = {3};
    sk_err e = {0};
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "t.f32", 2, ne, SK_GGML_F32, ramp, 512, 0, &e), 0, "%s", e.msg);
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "t.f16", 2, ne, SK_GGML_F16, f16, 256, 0, &e), 0, "%s", e.msg);
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "t.bf16", 2, ne, SK_GGML_BF16, bf16, 256, 0, &e), 0, "%s", e.msg);
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "t.q8", 2, ne, SK_GGML_Q8_0, q8, 136, 0, &e), 0, "%s", e.msg);
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "t.odd", 1, ne1, SK_GGML_F32, ramp, 12, 1, &e), 0, "%s", e.msg);
    return w;
}

Test(gguf_writer, ours_writer_equals_fixture_checked_by_gguf_reader) {
    float ramp[128];
    uint8_t f16[256], bf16[256], q8[136];
    sk_gguf_writer *w = ours_recipe(ramp, f16, bf16, q8);
    sk_err e = {0};
    uint8_t *mem;
    size_t n;
    cr_assert_eq(sk_gguf_writer_write_mem(w, &mem, &n, &e), 0, "%s", e.msg);
    const char *out = SKYCMD_BINARY_DIR "/ours_writer.gguf";
    cr_assert_eq(sk_gguf_writer_write(w, out, NULL, NULL, &e), 0, "%s", e.msg);
    sk_gguf_writer_free(w);
    size_t nf;
    uint8_t *file = tu_slurp(out, &nf);
    cr_assert_eq(nf, n);
    cr_assert_eq(memcmp(file, mem, n), 0, "file and memory outputs are the same bytes");
    size_t nfix;
    uint8_t *fix = tu_slurp(FIX "ours_writer.gguf", &nfix);
    cr_assert_eq(nfix, n, "committed ours_writer.gguf differs in size: regenerate (see header)");
    cr_assert_eq(memcmp(fix, mem, n), 0, "committed ours_writer.gguf differs: regenerate");
    size_t nj;
    char *js = tu_slurp(FIX "ours_writer.check.json", &nj);
    cJSON *j = cJSON_Parse(js);
    cr_assert_not_null(j);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "ok")), "gguf.GGUFReader check failed: %s", js);
    char h[32];
    snprintf(h, sizeof h, "%016llx", (unsigned long long)tu_fnv1a64(mem, n, WRITER_CHECK_FNV_BASIS));
    cr_assert_str_eq(cJSON_GetObjectItem(j, "fnv1a64")->valuestring, h,
                     "the checked file is the one we write");
    cJSON_Delete(j);
    free(js);
    free(fix);
    free(file);
    free(mem);
}

Test(gguf_writer, reads_back_its_own_output) {
    float ramp[128];
    uint8_t f16[256], bf16[256], q8[136];
    sk_gguf_writer *w = ours_recipe(ramp, f16, bf16, q8);
    sk_err e = {0};
    uint8_t *mem;
    size_t n;
    cr_assert_eq(sk_gguf_writer_write_mem(w, &mem, &n, &e), 0, "%s", e.msg);
    sk_gguf_writer_free(w);
    sk_gguf *g = NULL;
    cr_assert_eq(sk_gguf_open_buffer(mem, n, &g, &e), 0, "%s", e.msg);
    cr_assert_eq(sk_gguf_version(g), 3);
    cr_assert_eq(sk_gguf_n_kv(g), 10, "9 keys + general.alignment");
    cr_assert(sk_str_eq(sk_gguf_kv_key(g, 9), "general.alignment"));
    uint32_t al;
    cr_assert_eq(sk_gguf_get_u32(g, "general.alignment", &al), 0);
    cr_assert_eq(al, 32);
    int64_t i64;
    cr_assert_eq(sk_gguf_get_i64(g, "test.i32", &i64), 0);
    cr_assert_eq(i64, -7);
    uint64_t u64;
    cr_assert_eq(sk_gguf_get_u64(g, "test.u64", &u64), 0);
    cr_assert_eq(u64, (uint64_t)1 << 40);
    const sk_gguf_value *arr;
    cr_assert_eq(sk_gguf_get_arr(g, "tokenizer.ggml.tokens", &arr), 0);
    sk_gguf_iter it;
    sk_gguf_value v;
    sk_gguf_iter_init(&it, arr);
    const char *toks[3] = {"a", "bb", "ccc"};
    for (int i = 0; i < 3; i++) {
        cr_assert(sk_gguf_iter_next(&it, &v));
        cr_assert(sk_str_eq(v.v.s, toks[i]));
    }
    cr_assert_not(sk_gguf_iter_next(&it, &v));
    cr_assert_eq(sk_gguf_n_tensors(g), 5);
    const sk_gguf_tensor *t = sk_gguf_find_tensor(g, "t.q8");
    cr_assert_eq(t->type, SK_GGML_Q8_0);
    cr_assert_eq(t->nbytes, 136);
    cr_assert_eq(memcmp(t->data, q8, 136), 0);
    for (size_t i = 0; i < 5; i++) {
        t = sk_gguf_tensor_at(g, i);
        cr_assert_eq((sk_gguf_data_offset(g) + t->offset) % 32, 0, "tensor %zu aligned", i);
    }
    t = sk_gguf_find_tensor(g, "t.odd");
    cr_assert_eq(memcmp(t->data, ramp, 12), 0);
    cr_assert_eq(t->offset + 32, n - sk_gguf_data_offset(g), "last tensor padded to 32");
    sk_gguf_close(g);
    free(mem);
}

/* Copy every key (nested arrays included) and tensor of a gguf-package file. */
static void copy_round_trip(const char *name, uint32_t expect_alignment) {
    sk_err e = {0};
    sk_gguf *g = NULL;
    cr_assert_eq(sk_gguf_open_file(name, &g, &e), 0, "%s", e.msg);
    sk_gguf_writer *w = sk_gguf_writer_new(0);
    for (size_t i = 0; i < sk_gguf_n_kv(g); i++)
        cr_assert_eq(sk_gguf_writer_add_value(w, sk_gguf_kv_key(g, i), sk_gguf_kv_value(g, i)), 0);
    char nm[128];
    for (size_t i = 0; i < sk_gguf_n_tensors(g); i++) {
        const sk_gguf_tensor *t = sk_gguf_tensor_at(g, i);
        snprintf(nm, sizeof nm, "%.*s", (int)t->name.len, t->name.ptr);
        cr_assert_eq(sk_gguf_writer_add_tensor(w, nm, t->n_dims, t->ne, t->type, t->data,
                                               t->nbytes, 0, &e), 0, "%s", e.msg);
    }
    uint8_t *mem;
    size_t n;
    cr_assert_eq(sk_gguf_writer_write_mem(w, &mem, &n, &e), 0, "%s", e.msg);
    sk_gguf_writer_free(w);
    sk_gguf *h = NULL;
    cr_assert_eq(sk_gguf_open_buffer(mem, n, &h, &e), 0, "%s", e.msg);
    cr_assert_eq(sk_gguf_alignment(h), expect_alignment);
    int had_alignment = sk_gguf_find_key(g, "general.alignment") >= 0;
    cr_assert_eq(sk_gguf_n_kv(h), sk_gguf_n_kv(g) + (had_alignment ? 0 : 1));
    for (size_t i = 0; i < sk_gguf_n_kv(g); i++) {
        sk_str k = sk_gguf_kv_key(g, i);
        cr_assert(k.len == sk_gguf_kv_key(h, i).len &&
                  memcmp(k.ptr, sk_gguf_kv_key(h, i).ptr, k.len) == 0);
        const sk_gguf_value *a = sk_gguf_kv_value(g, i), *b = sk_gguf_kv_value(h, i);
        cr_assert_eq(a->type, b->type);
        if (a->type == SK_GGUF_ARRAY) {
            cr_assert_eq(a->v.arr.count, b->v.arr.count);
            size_t la = (size_t)(a->v.arr.end - a->v.arr.first);
            cr_assert_eq(la, (size_t)(b->v.arr.end - b->v.arr.first));
            cr_assert_eq(memcmp(a->v.arr.first, b->v.arr.first, la), 0);
        } else if (a->type == SK_GGUF_STRING) {
            cr_assert(a->v.s.len == b->v.s.len && memcmp(a->v.s.ptr, b->v.s.ptr, a->v.s.len) == 0);
        } else {
            cr_assert_eq(memcmp(&a->v, &b->v, sizeof(uint64_t)), 0, "value of key %zu", i);
        }
    }
    for (size_t i = 0; i < sk_gguf_n_tensors(g); i++) {
        const sk_gguf_tensor *a = sk_gguf_tensor_at(g, i), *b = sk_gguf_tensor_at(h, i);
        cr_assert_eq(a->nbytes, b->nbytes);
        cr_assert_eq(memcmp(a->ne, b->ne, sizeof a->ne), 0);
        cr_assert_eq(memcmp(a->data, b->data, a->nbytes), 0);
    }
    sk_gguf_close(h);
    sk_gguf_close(g);
    free(mem);
}

Test(gguf_writer, copies_gguf_package_files) {
    copy_round_trip(FIX "basic.gguf", 32);
    copy_round_trip(FIX "align64.gguf", 64);
}

Test(gguf_writer, custom_alignment) {
    sk_gguf_writer *w = sk_gguf_writer_new(128);
    float x[5] = {1, 2, 3, 4, 5};
    uint64_t ne[1] = {5};
    sk_err e = {0};
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "a", 1, ne, SK_GGML_F32, x, 20, 0, &e), 0);
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "b", 1, ne, SK_GGML_F32, x, 20, 0, &e), 0);
    uint8_t *mem;
    size_t n;
    cr_assert_eq(sk_gguf_writer_write_mem(w, &mem, &n, &e), 0);
    sk_gguf_writer_free(w);
    sk_gguf *g = NULL;
    cr_assert_eq(sk_gguf_open_buffer(mem, n, &g, &e), 0, "%s", e.msg);
    cr_assert_eq(sk_gguf_alignment(g), 128);
    cr_assert_eq(sk_gguf_data_offset(g) % 128, 0);
    cr_assert_eq(sk_gguf_tensor_at(g, 1)->offset, 128);
    cr_assert_eq(n % 128, 0);
    sk_gguf_close(g);
    free(mem);
    cr_assert_null(sk_gguf_writer_new(48), "alignment must be a power of two");
}

Test(gguf_writer, refusals) {
    sk_gguf_writer *w = sk_gguf_writer_new(0);
    sk_err e = {0};
    float x[64] = {0};
    uint64_t ne48[2] = {48, 1}, ne64[2] = {64, 1};
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "q", 2, ne48, SK_GGML_Q8_0, x, 51, 0, &e),
                 SKYCMD_E_INVALID_ARGUMENT);
    cr_assert(strstr(e.msg, "multiple of 32") != NULL, "%s", e.msg);
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "f", 2, ne64, SK_GGML_F32, x, 255, 0, &e),
                 SKYCMD_E_INVALID_ARGUMENT, "wrong byte size");
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "f", 2, ne64, SK_GGML_F32, x, 256, 0, &e), 0);
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "f", 2, ne64, SK_GGML_F32, x, 256, 0, &e),
                 SKYCMD_E_INVALID_ARGUMENT, "duplicate name");
    cr_assert(strstr(e.msg, "twice") != NULL);
    char longname[80];
    memset(longname, 'a', 64);
    longname[64] = '\0';
    cr_assert_eq(sk_gguf_writer_add_tensor(w, longname, 2, ne64, SK_GGML_F32, x, 256, 0, &e),
                 SKYCMD_E_INVALID_ARGUMENT, "names must fit ggml's 64-byte limit");
    uint64_t ne0[1] = {0};
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "z", 1, ne0, SK_GGML_F32, x, 0, 0, &e),
                 SKYCMD_E_INVALID_ARGUMENT);
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "u", 1, ne64, 99, x, 64, 0, &e),
                 SKYCMD_E_INVALID_ARGUMENT, "unknown types are refused");
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "d", 5, ne64, SK_GGML_F32, x, 256, 0, &e),
                 SKYCMD_E_INVALID_ARGUMENT);
    cr_assert_eq(sk_gguf_writer_add_u32(w, "k", 1), 0);
    cr_assert_eq(sk_gguf_writer_add_str(w, "k", "x"), SKYCMD_E_INVALID_ARGUMENT, "duplicate key");
    cr_assert_eq(sk_gguf_writer_add_u32(w, "general.alignment", 48), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert_eq(sk_gguf_writer_add_u64(w, "general.alignment", 64), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert_eq(sk_gguf_writer_add_u32(w, "general.alignment", 64), 0);
    cr_assert_eq(sk_gguf_writer_add_u32(w, "general.alignment", 64), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert_eq(sk_gguf_writer_add_arr(w, "a", SK_GGUF_STRING, x, 1), SKYCMD_E_INVALID_ARGUMENT);
    uint8_t *mem;
    size_t n;
    cr_assert_eq(sk_gguf_writer_write_mem(w, &mem, &n, &e), 0);
    sk_gguf *g = NULL;
    cr_assert_eq(sk_gguf_open_buffer(mem, n, &g, &e), 0, "%s", e.msg);
    cr_assert_eq(sk_gguf_n_kv(g), 2, "the caller's general.alignment is not doubled");
    cr_assert_eq(sk_gguf_alignment(g), 64);
    sk_gguf_close(g);
    free(mem);
    sk_gguf_writer_free(w);
}

static int cancel_after_first(void *ud, uint64_t done, uint64_t total) {
    (void)total;
    int *calls = ud;
    (*calls)++;
    return done > 0;
}

Test(gguf_writer, atomic_no_partial_output) {
    float x[64];
    for (int i = 0; i < 64; i++) x[i] = (float)i;
    uint64_t ne[1] = {64};
    sk_err e = {0};
    sk_gguf_writer *w = sk_gguf_writer_new(0);
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "a", 1, ne, SK_GGML_F32, x, 256, 0, &e), 0);
    cr_assert_eq(sk_gguf_writer_add_tensor(w, "b", 1, ne, SK_GGML_F32, x, 256, 0, &e), 0);
    const char *path = SKYCMD_BINARY_DIR "/atomic_test.gguf";
    remove(path);
    int calls = 0;
    cr_assert_eq(sk_gguf_writer_write(w, path, cancel_after_first, &calls, &e), SKYCMD_E_CANCELLED);
    cr_assert_gt(calls, 1);
    struct stat st;
    cr_assert_neq(stat(path, &st), 0, "no output after a cancel");
    cr_assert_eq(tu_count_tmp_files(SKYCMD_BINARY_DIR, "atomic_test.gguf"), 0, "no temporary left");
    /* an existing file survives a failed write unchanged */
    cr_assert_eq(tu_write_file(path, "old", 3), 0, "cannot write %s", path);
    calls = 0;
    cr_assert_eq(sk_gguf_writer_write(w, path, cancel_after_first, &calls, &e), SKYCMD_E_CANCELLED);
    size_t n;
    char *old = tu_slurp(path, &n);
    cr_assert_eq(n, 3);
    cr_assert_eq(memcmp(old, "old", 3), 0);
    free(old);
    /* a full write replaces it */
    cr_assert_eq(sk_gguf_writer_write(w, path, NULL, NULL, &e), 0, "%s", e.msg);
    sk_gguf *g = NULL;
    cr_assert_eq(sk_gguf_open_file(path, &g, &e), 0, "%s", e.msg);
    cr_assert_eq(sk_gguf_n_tensors(g), 2);
    sk_gguf_close(g);
    cr_assert_eq(sk_gguf_writer_write(w, "/nonexistent-dir/x.gguf", NULL, NULL, &e), SKYCMD_E_IO);
    cr_assert(strstr(e.msg, "/nonexistent-dir/x.gguf") != NULL);
    sk_gguf_writer_free(w);
    remove(path);
}

/* ---- temporary names (issue 17): unguessable, exclusive, never following a symlink ---- */

static int refuse_n_times(const char *name, void *ud) {
    int *left = ud;
    (void)name;
    if ((*left)-- > 0) {
        errno = EEXIST;
        return -1;
    }
    return 0;
}

Test(gguf_writer, partial_names_are_random_and_exclusive) {
    char a[13], b[13];
    sk_random_hex12(a);
    sk_random_hex12(b);
    cr_expect_eq(strlen(a), 12);
    cr_expect_eq(strspn(a, "0123456789abcdef"), 12);
    cr_expect_str_neq(a, b, "two temporary names differ");
    /* a taken name (EEXIST) is retried with another; other errors end the attempt */
    int left = 3;
    char *name = NULL;
    cr_assert_eq(sk_partial_create("/x/out.gguf", refuse_n_times, &left, &name), 0);
    cr_expect_eq(left, -1, "three names taken, the fourth used");
    cr_expect_eq(strncmp(name, "/x/out.gguf" SK_PARTIAL_SUFFIX, strlen("/x/out.gguf" SK_PARTIAL_SUFFIX)), 0,
                 "%s", name);
    free(name);

    /* a symlink planted beside the output is neither followed nor touched; a symlink at
     * the output itself is written through, as cp does (issue 37): the link stays a link,
     * its target is replaced by rename (the temporary beside the target) */
    char victim[512], out[512], planted[600], linked[512];
    snprintf(victim, sizeof victim, "%s/partial_victim_%d", SKYCMD_BINARY_DIR, (int)getpid());
    snprintf(linked, sizeof linked, "%s/partial_linked_%d", SKYCMD_BINARY_DIR, (int)getpid());
    snprintf(out, sizeof out, "%s/partial_out_%d.gguf", SKYCMD_BINARY_DIR, (int)getpid());
    snprintf(planted, sizeof planted, "%s.tmp.%d", out, (int)getpid()); /* the old predictable name */
    cr_assert_eq(tu_write_file(victim, "keep", 4), 0);
    cr_assert_eq(tu_write_file(linked, "old", 3), 0);
    remove(planted);
    remove(out);
    cr_assert_eq(symlink(victim, planted), 0);
    cr_assert_eq(symlink(linked, out), 0);
    sk_atomic_file f;
    sk_err e = {0};
    cr_assert_eq(sk_atomic_open(&f, out, &e), 0, "%s", e.msg);
    cr_expect(strstr(f.tmp_path, SK_PARTIAL_SUFFIX) != NULL, "%s", f.tmp_path);
    cr_expect_eq(strncmp(f.tmp_path, linked, strlen(linked)), 0, "beside the target: %s", f.tmp_path);
    struct stat st;
    cr_assert_eq(lstat(f.tmp_path, &st), 0);
    cr_expect(S_ISREG(st.st_mode), "the temporary is a new regular file");
    cr_assert_eq(sk_atomic_write(&f, "new!", 4, &e), 0);
    cr_assert_eq(sk_atomic_close(&f, 0, &e), 0, "%s", e.msg);
    size_t n = 0;
    char *got = tu_slurp(victim, &n);
    cr_expect(n == 4 && memcmp(got, "keep", 4) == 0, "the planted symlink's target is untouched");
    free(got);
    cr_assert_eq(lstat(out, &st), 0);
    cr_expect(S_ISLNK(st.st_mode), "the output symlink stays a symlink");
    got = tu_slurp(linked, &n);
    cr_expect(n == 4 && memcmp(got, "new!", 4) == 0, "the symlink's target got the bytes");
    free(got);
    cr_expect_eq(tu_count_tmp_files(SKYCMD_BINARY_DIR, "partial_out_"), 0);
    cr_expect_eq(tu_count_tmp_files(SKYCMD_BINARY_DIR, "partial_linked_"), 0);
    remove(linked);
    remove(out);
    remove(planted);
    remove(victim);
}

/* What an output path names (sk_output_resolve, read-only: nothing is written here): the
 * kinds, the target a symlink chain leads to, and which kinds a file output refuses. */
Test(gguf_writer, output_kinds) {
    char dir[512], p[600], q[600];
    snprintf(dir, sizeof dir, "%s/output_kinds_%d", SKYCMD_BINARY_DIR, (int)getpid());
    cr_assert_eq(mkdir(dir, 0755), 0);
    char *target = NULL;
    sk_out_kind kind;
    sk_err e = {0};

    snprintf(p, sizeof p, "%s/absent", dir);
    cr_assert_eq(sk_output_resolve(p, &target, &kind, &e), 0, "%s", e.msg);
    cr_expect_eq(kind, SK_OUT_ABSENT);
    cr_expect_str_eq(target, p);
    free(target);

    cr_assert_eq(sk_output_resolve(dir, &target, &kind, &e), 0, "%s", e.msg);
    cr_expect_eq(kind, SK_OUT_DIR);
    cr_expect_str_eq(sk_output_refusal(kind), "is a directory");
    free(target);

    snprintf(p, sizeof p, "%s/fifo", dir);
    cr_assert_eq(mkfifo(p, 0600), 0);
    cr_assert_eq(sk_output_resolve(p, &target, &kind, &e), 0, "%s", e.msg);
    cr_expect_eq(kind, SK_OUT_FIFO);
    cr_expect_null(sk_output_refusal(kind), "a FIFO is written as a stream");
    free(target);
    remove(p);

    cr_assert_eq(sk_output_resolve("/dev/null", &target, &kind, &e), 0, "%s", e.msg);
    cr_expect_eq(kind, SK_OUT_CHAR);
    cr_expect_null(sk_output_refusal(kind), "a character device is written as a stream");
    cr_expect_str_eq(target, "/dev/null");
    free(target);
    cr_expect_not_null(sk_output_refusal(SK_OUT_BLOCK));
    cr_expect_not_null(sk_output_refusal(SK_OUT_SOCKET));

    /* a chain of two relative links, the second in a subdirectory, ends at a file */
    snprintf(p, sizeof p, "%s/sub", dir);
    cr_assert_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/sub/file", dir);
    cr_assert_eq(tu_write_file(p, "x", 1), 0);
    snprintf(p, sizeof p, "%s/sub/l2", dir);
    cr_assert_eq(symlink("file", p), 0);
    snprintf(p, sizeof p, "%s/l1", dir);
    cr_assert_eq(symlink("sub/l2", p), 0);
    cr_assert_eq(sk_output_resolve(p, &target, &kind, &e), 0, "%s", e.msg);
    cr_expect_eq(kind, SK_OUT_REGULAR);
    snprintf(q, sizeof q, "%s/sub/file", dir);
    cr_expect_str_eq(target, q);
    free(target);

    /* a dangling link: its target, absent */
    snprintf(p, sizeof p, "%s/dangling", dir);
    cr_assert_eq(symlink("sub/new", p), 0);
    cr_assert_eq(sk_output_resolve(p, &target, &kind, &e), 0, "%s", e.msg);
    cr_expect_eq(kind, SK_OUT_ABSENT);
    snprintf(q, sizeof q, "%s/sub/new", dir);
    cr_expect_str_eq(target, q);
    free(target);

    /* a loop: an error that says so */
    snprintf(p, sizeof p, "%s/loop", dir);
    cr_assert_eq(symlink("loop", p), 0);
    cr_expect_neq(sk_output_resolve(p, &target, &kind, &e), 0);
    cr_expect_null(target);
    cr_expect(strstr(e.msg, "symbolic links") != NULL, "%s", e.msg);

    const char *names[] = {"loop", "dangling", "l1", "sub/l2", "sub/file"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        remove(p);
    }
    snprintf(p, sizeof p, "%s/sub", dir);
    rmdir(p);
    rmdir(dir);
}
