/*
 * test_int8_memory.c - what stays in RAM of a model's file bytes after the load (issue 38).
 *
 * The loader packs every matrix into panels of its own (f32/16-bit, or int8 with the int8
 * weights modes) and gives the pages of the bytes it packed them from back to the system
 * (load.c, sk_gguf_release_pages), when the model owns those bytes: a file's copy read at
 * open, or the GGUF image a Laya directory is converted to in memory. So after an int8 load
 * the f32 weights are not resident twice. Checked here with mincore
 * (sk_platform_resident_bytes) on the reader's bytes of each packed matrix: the whole pages
 * inside its range must be out of RAM, and the reader's bytes as a whole well under the
 * file's size. The reference is the tensor table itself (which bytes are matrices), not the
 * loader. A caller's buffer is never touched (test_model.c checks that). The models must
 * still answer exactly as one opened from a buffer, where nothing is released. Where the
 * system cannot say which pages are resident (no mincore) the tests are skipped, and say so.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp (test_util.h) */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "skycmd.h"
#include "api/handles.h"
#include "gguf/gguf.h"
#include "util/platform.h"
#include "test_util.h"

static const char *const BODY =
    "{\"state\":\"vy 0 dx 36\",\"questions\":{\"a\":{\"type\":\"noul\",\"instructions\":"
    "\"Will it crash?\"},\"b\":{\"type\":\"choice\",\"instructions\":\"Which?\",\"criteria\":"
    "{\"x\":\"up\",\"y\":\"down\"}}}}";

static void random_model_at(const char *preset, int layout, const char *path) {
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert(o && err);
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_TYPE, SKYCMD_TYPE_F32), SKYCMD_OK);
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_LAYOUT, layout), SKYCMD_OK);
    cr_assert_eq(skycmd_random_model(preset, path, o, err), SKYCMD_OK, "%s", skycmd_error_message(err));
    skycmd_options_free(o);
    skycmd_error_free(err);
}

static skycmd_model *open_model(const char *path, const void *buf, size_t size, int weights) {
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert(o && err);
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_WEIGHTS, weights), SKYCMD_OK);
    skycmd_model *m = NULL;
    int st = buf ? skycmd_model_open_buffer(buf, size, o, &m, err) : skycmd_model_open(path, o, &m, err);
    cr_assert_eq(st, SKYCMD_OK, "%s (weights %d): %s", path ? path : "buffer", weights,
                 skycmd_error_message(err));
    skycmd_options_free(o);
    skycmd_error_free(err);
    return m;
}

static char *answer_of(skycmd_model *m) {
    skycmd_session *s = NULL;
    cr_assert_eq(skycmd_session_new(m, &s), SKYCMD_OK);
    char *json = NULL;
    cr_assert_eq(skycmd_decide_json(s, BODY, strlen(BODY), &json), SKYCMD_OK, "%s", skycmd_session_errmsg(s));
    skycmd_session_free(s);
    return json;
}

/* The reader's bytes of a loaded model: resident bytes of the whole pages inside the packed
 * matrices (every tensor of two or more rows but the token embedding, read at every lookup,
 * and the three token-type rows, copied as a vector), those pages' total, and the resident
 * bytes of every tensor's range together. -1 in *matrix_resident where mincore says
 * nothing. */
typedef struct residency {
    int64_t matrix_resident, matrix_interior, all_resident, all_bytes;
} residency;

static residency measure(const sk_gguf *g) {
    residency r = {0, 0, 0, 0};
    const uintptr_t page = sk_platform_page_size();
    for (size_t i = 0; i < sk_gguf_n_tensors(g); i++) {
        const sk_gguf_tensor *t = sk_gguf_tensor_at(g, i);
        if (!t->data || !t->nbytes) continue;
        const int64_t all = sk_platform_resident_bytes(t->data, (size_t)t->nbytes);
        if (all < 0) {
            r.matrix_resident = -1;
            return r;
        }
        r.all_resident += all;
        r.all_bytes += (int64_t)t->nbytes;
        if (t->ne[1] < 2 || sk_str_eq(t->name, "token_embd.weight") || sk_str_eq(t->name, "token_types.weight"))
            continue;
        const uintptr_t a = ((uintptr_t)t->data + page - 1) & ~(page - 1);
        const uintptr_t b = ((uintptr_t)t->data + (size_t)t->nbytes) & ~(page - 1);
        if (b <= a) continue;
        r.matrix_interior += (int64_t)(b - a);
        r.matrix_resident += sk_platform_resident_bytes((const void *)a, b - a);
    }
    return r;
}

/* Open path with the weights mode, check what stays resident, and that it answers as the
 * same GGUF bytes opened from a buffer (reference, never released). */
static void check_released(const char *path, const void *gguf, size_t gguf_size, int weights) {
    skycmd_model *m = open_model(path, NULL, 0, weights);
    const residency r = measure(m->g);
    if (r.matrix_resident < 0) {
        skycmd_model_free(m);
        cr_skip_test("mincore is not available here: which pages are resident cannot be told");
    }
    fprintf(stderr, "%s weights %d: packed matrices' pages %lld of %lld bytes resident; all tensors' "
            "ranges %lld of %lld bytes\n", path, weights, (long long)r.matrix_resident,
            (long long)r.matrix_interior, (long long)r.all_resident, (long long)r.all_bytes);
    /* the test is only meaningful when the matrices are most of the model */
    cr_assert_gt(r.matrix_interior, r.all_bytes / 2, "%s: matrices %lld of %lld bytes", path,
                 (long long)r.matrix_interior, (long long)r.all_bytes);
    cr_expect_eq(r.matrix_resident, 0, "%s (weights %d): %lld bytes of the packed matrices' "
                 "pages are still resident", path, weights, (long long)r.matrix_resident);
    /* all that may stay: the other tensors, and the pages a matrix shares with them (each
     * tensor's range counts its partial first and last pages) */
    const int64_t bound = r.all_bytes - r.matrix_interior + 2 * (int64_t)sk_platform_page_size() *
                          (int64_t)sk_gguf_n_tensors(m->g);
    cr_expect_leq(r.all_resident, bound, "%s (weights %d): %lld of the tensors' %lld bytes "
                  "resident, over %lld", path, weights, (long long)r.all_resident,
                  (long long)r.all_bytes, (long long)bound);
    cr_expect_lt(bound, r.all_bytes, "%s: the bound is not below the file's tensors", path);
    skycmd_model *ref = open_model(NULL, gguf, gguf_size, weights);
    char *a = answer_of(m), *b = answer_of(ref);
    cr_expect_str_eq(a, b, "%s (weights %d): answers otherwise than the same bytes from a buffer:\n%s\n%s",
                     path, weights, a, b);
    skycmd_string_free(a);
    skycmd_string_free(b);
    skycmd_model_free(ref);
    skycmd_model_free(m);
}

/* A GGUF file, read into the reader's own memory at open. */
Test(int8_memory, file_int8_and_f32_loads_keep_no_matrix_bytes, .fini = tu_scratch_remove, .timeout = 600) {
    char dir[1024], path[1100];
    tu_scratch_make(dir, sizeof dir, "int8_memory", "file");
    snprintf(path, sizeof path, "%s/micro.gguf", dir);
    random_model_at("s1-micro", SKYCMD_LAYOUT_GGUF, path);
    size_t n = 0;
    void *bytes = tu_slurp(path, &n);
    check_released(path, bytes, n, SKYCMD_WEIGHTS_Q8_ROW);
    check_released(path, bytes, n, SKYCMD_WEIGHTS_Q8_PLAIN);
    check_released(path, bytes, n, SKYCMD_WEIGHTS_F32);
    free(bytes);
}

/* The calibrated mode (sensitivity probe, GPTQ) on a smaller model: it costs more. */
Test(int8_memory, file_q8_calibrated, .fini = tu_scratch_remove, .timeout = 600) {
    char dir[1024], path[1100];
    tu_scratch_make(dir, sizeof dir, "int8_memory", "q8");
    snprintf(path, sizeof path, "%s/pico.gguf", dir);
    random_model_at("s1-pico", SKYCMD_LAYOUT_GGUF, path);
    size_t n = 0;
    void *bytes = tu_slurp(path, &n);
    check_released(path, bytes, n, SKYCMD_WEIGHTS_Q8);
    free(bytes);
}

/* A Laya checkpoint directory: converted to a GGUF image in memory that the model owns. The
 * reference is the GGUF file skycmd_convert writes of it with the same (default) options:
 * the same bytes (skycmd.h). */
Test(int8_memory, laya_directory_keeps_no_matrix_bytes, .fini = tu_scratch_remove, .timeout = 600) {
    char dir[1024], ckpt[1100], path[1100];
    tu_scratch_make(dir, sizeof dir, "int8_memory", "laya");
    snprintf(ckpt, sizeof ckpt, "%s/s1-micro", dir);
    snprintf(path, sizeof path, "%s/micro.gguf", dir);
    random_model_at("s1-micro", SKYCMD_LAYOUT_LAYA, ckpt);
    skycmd_error *err = skycmd_error_new();
    cr_assert(err);
    cr_assert_eq(skycmd_convert(ckpt, path, NULL, err), SKYCMD_OK, "%s", skycmd_error_message(err));
    skycmd_error_free(err);
    size_t n = 0;
    void *bytes = tu_slurp(path, &n);
    check_released(ckpt, bytes, n, SKYCMD_WEIGHTS_Q8_ROW);
    check_released(ckpt, bytes, n, SKYCMD_WEIGHTS_F32);
    free(bytes);
}
