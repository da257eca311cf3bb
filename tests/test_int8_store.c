/*
 * test_int8_store.c - a calibrated int8 model stored by `skycmd quantize --calibrated`
 * (skycmd_quantize with SKYCMD_OPT_WEIGHTS = SKYCMD_WEIGHTS_Q8; src/quant/int8_store.h).
 *
 * The reference is the library's own --q8 at load on the source file: a stored file opened
 * with SKYCMD_WEIGHTS_Q8 must answer every golden request byte for byte as the source opened
 * with SKYCMD_WEIGHTS_Q8 does, under two-pass (--q8) and single-pass (--q8-fast)
 * activations, on models of every kind the golden set has (the trained built-in model,
 * checkpoints made by laya's classes with sequential and parallel option layouts, BPE and
 * SentencePiece tokenizers, a random model with planted massive channels, so outlier
 * columns exist). The same for the row-scaled int8 (quantize --calibrated --q8-row,
 * SKYCMD_WEIGHTS_Q8_ROW) against --q8-row at load, whose decision-head q and kv (rows of one
 * tensor) stay F16/F32 in the file and are quantized at load with the columns their keys
 * name. Besides:
 *  - the stored file's load calibrates nothing (its log has no calibration event, and says
 *    the file stores its calibration), the source's does; skycmd_model_get_int's
 *    "int8_stored" tells the two apart;
 *  - the file is standard: opened with SKYCMD_WEIGHTS_F32 it answers (keys ignored), and
 *    every outlier column's Q8_0 quant holds round(w / d) within +-127 (what a reader that
 *    does not know the keys, llama.cpp, then computes with);
 *  - a stored file is refused as the input of another --calibrated run, and so is a plain
 *    Q8_0 file (nothing left to calibrate); a plain re-typing drops the skycmd.int8.* keys;
 *  - hostile keys (a version from the future, unsorted or out-of-range columns, a wrong
 *    count, non-finite weights, wrong types) are refused by an int8 load with a message
 *    naming the key, and ignored by an f32 load; a file that says row-scaled over blocks
 *    that are not is refused by a --q8-row load naming the row.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp (test_util.h) */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "skycmd.h"
#include "gguf/gguf.h"
#include "quant/int8_store.h"
#include "test_util.h"

#define N_REQUESTS 24

static char g_dir[1024];

static void setup(void) { tu_scratch_make(g_dir, sizeof g_dir, "int8_store", "t"); }
static void teardown(void) { tu_scratch_remove(); }

typedef struct logbook {
    int calibrated, stored;
} logbook;

static void on_log(void *ud, int level, const char *msg) {
    logbook *b = ud;
    (void)level;
    if (strstr(msg, "calibrated") && strstr(msg, "matrix products on")) b->calibrated++;
    if (strstr(msg, "the file stores its calibration")) b->stored++;
}

static skycmd_model *open_with(const char *path, int weights, logbook *book) {
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert(o && err);
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_WEIGHTS, weights), SKYCMD_OK);
    if (book) cr_assert_eq(skycmd_options_set_log(o, on_log, book), SKYCMD_OK);
    skycmd_model *m = NULL;
    int st = skycmd_model_open(path, o, &m, err);
    cr_assert_eq(st, SKYCMD_OK, "%s (weights %d): %s", path, weights, skycmd_error_message(err));
    skycmd_options_free(o);
    skycmd_error_free(err);
    return m;
}

/* The open's status and message (the model, if any, closed). */
static int open_status(const char *path, int weights, char *msg, size_t cap) {
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert(o && err);
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_WEIGHTS, weights), SKYCMD_OK);
    skycmd_model *m = NULL;
    int st = skycmd_model_open(path, o, &m, err);
    snprintf(msg, cap, "%s", st ? skycmd_error_message(err) : "");
    skycmd_model_free(m);
    skycmd_options_free(o);
    skycmd_error_free(err);
    return st;
}

/* calibrated: 0 re-type to Q8_0, else calibrate on that many compute threads, the int8 of
 * g_weights (SKYCMD_WEIGHTS_Q8 or _Q8_ROW) */
static int g_weights = SKYCMD_WEIGHTS_Q8;
static int quantize(const char *in, const char *out, int calibrated, char *msg, size_t cap) {
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert(o && err);
    if (calibrated) cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_WEIGHTS, g_weights), SKYCMD_OK);
    if (calibrated > 1) cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_THREADS, calibrated), SKYCMD_OK);
    int st = skycmd_quantize(in, out, o, err);
    if (msg) snprintf(msg, cap, "%s", st ? skycmd_error_message(err) : "");
    skycmd_options_free(o);
    skycmd_error_free(err);
    return st;
}

static void convert_dir(const char *dir, const char *out) {
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert_eq(skycmd_convert(dir, out, o, err), SKYCMD_OK, "%s: %s", dir, skycmd_error_message(err));
    skycmd_options_free(o);
    skycmd_error_free(err);
}

static void random_model(const char *preset, int massive, const char *out) {
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_TYPE, SKYCMD_TYPE_F16), SKYCMD_OK);
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_SEED, 23), SKYCMD_OK);
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_MASSIVE, massive), SKYCMD_OK);
    cr_assert_eq(skycmd_random_model(preset, out, o, err), SKYCMD_OK, "%s", skycmd_error_message(err));
    skycmd_options_free(o);
    skycmd_error_free(err);
}

/* Every answer (or refusal) of the first N_REQUESTS golden requests, one per line. */
static char *answers(skycmd_model *m, int activations) {
    cJSON *reqs = tu_load_json(SKYCMD_FIXTURES "/golden/requests.json");
    skycmd_session *s = NULL;
    cr_assert_eq(skycmd_session_new(m, &s), SKYCMD_OK);
    cr_assert_eq(skycmd_session_set_int(s, SKYCMD_OPT_ACTIVATIONS, activations), SKYCMD_OK);
    sk_buf all;
    sk_buf_init(&all);
    int i = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, reqs) {
        if (i++ >= N_REQUESTS) break;
        const char *body = cJSON_GetObjectItem(r, "body")->valuestring;
        char *json = NULL;
        int st = skycmd_decide_json(s, body, strlen(body), &json);
        sk_buf_printf(&all, "%d %s\n", st, st ? skycmd_session_errmsg(s) : json);
        skycmd_string_free(json);
    }
    skycmd_session_free(s);
    cJSON_Delete(reqs);
    char *out = sk_buf_detach(&all);
    cr_assert(out != NULL);
    return out;
}

static int count_outliers(const char *path, size_t *with_outliers, size_t *two_pass) {
    sk_gguf *g = NULL;
    sk_err e;
    sk_err_clear(&e);
    cr_assert_eq(sk_gguf_open_file(path, &g, &e), SKYCMD_OK, "%s", e.msg);
    *with_outliers = *two_pass = 0;
    int version = sk_int8_store_version(g, &e);
    for (size_t i = 0; i < sk_gguf_n_kv(g); i++) {
        sk_str k = sk_gguf_kv_key(g, i);
        if (k.len > 16 && memcmp(k.ptr + k.len - 16, ".outlier_columns", 16) == 0) (*with_outliers)++;
        if (k.len > 9 && memcmp(k.ptr + k.len - 9, ".two_pass", 9) == 0) (*two_pass)++;
    }
    sk_gguf_close(g);
    return version;
}

/* The stored file against --q8 (g_weights: or --q8-row) at load on its source. */
static void check_model(const char *src, const char *label) {
    char out[1200], msg[512];
    const int rows = g_weights == SKYCMD_WEIGHTS_Q8_ROW;
    snprintf(out, sizeof out, "%s/%s-cal%s.gguf", g_dir, label, rows ? "-rows" : "");
    cr_assert_eq(quantize(src, out, 1, msg, sizeof msg), SKYCMD_OK, "%s: %s", label, msg);
    size_t n_outl, n_x2;
    cr_assert_eq(count_outliers(out, &n_outl, &n_x2), (int)SK_INT8_STORE_VERSION, "%s", label);

    logbook at_load = {0, 0}, stored = {0, 0};
    skycmd_model *a = open_with(src, g_weights, &at_load);
    skycmd_model *b = open_with(out, g_weights, &stored);
    int64_t v = -1;
    cr_assert_eq(skycmd_model_get_int(a, "int8_stored", &v), SKYCMD_OK);
    cr_assert_eq(v, 0, "%s: the source stores no int8", label);
    cr_assert_eq(skycmd_model_get_int(b, "int8_stored", &v), SKYCMD_OK);
    cr_assert_eq(v, rows ? 2 : 1, "%s: the stored file's int8_stored", label);
    cr_assert_gt(at_load.calibrated, 0, "%s: the source's --q8 load calibrates", label);
    cr_assert_eq(stored.calibrated, 0, "%s: the stored file's load calibrated again", label);
    cr_assert_eq(stored.stored, 1, "%s: the stored load's summary", label);
    for (int act = 0; act < 2; act++) {
        const int mode = act ? SKYCMD_ACT_Q8 : SKYCMD_ACT_Q8X2;
        char *x = answers(a, mode), *y = answers(b, mode);
        cr_assert_str_eq(y, x, "%s (activations %d): the stored file answers otherwise", label, mode);
        cr_assert(strstr(x, "\"answers\"") != NULL, "%s: no request was answered", label);
        free(x);
        free(y);
    }
    skycmd_model_free(a);
    skycmd_model_free(b);
    /* the plain f32 path reads the stored file as standard Q8_0 */
    skycmd_model *c = open_with(out, SKYCMD_WEIGHTS_F32, NULL);
    char *z = answers(c, SKYCMD_ACT_Q8X2);
    cr_assert(strstr(z, "\"answers\"") != NULL);
    free(z);
    skycmd_model_free(c);
    fprintf(stderr, "int8_store %s%s: %zu matrices with outlier columns, %zu two-pass under --q8-fast\n",
            label, rows ? " (rows)" : "", n_outl, n_x2);
}

/* The row-scaled int8 stored (--calibrated --q8-row) against --q8-row at load. */
static void check_model_rows(const char *src, const char *label) {
    g_weights = SKYCMD_WEIGHTS_Q8_ROW;
    check_model(src, label);
    g_weights = SKYCMD_WEIGHTS_Q8;
}

TestSuite(int8_store, .init = setup, .fini = teardown, .timeout = 600);

Test(int8_store, trained_flappy) {
    check_model(SKYCMD_BINARY_DIR "/share/skycmd/models/s1-pico-flappy.gguf", "flappy");
    check_model_rows(SKYCMD_BINARY_DIR "/share/skycmd/models/s1-pico-flappy.gguf", "flappy");
}

Test(int8_store, laya_parallel_checkpoint) {
    char gguf[1200];
    snprintf(gguf, sizeof gguf, "%s/parallel.gguf", g_dir);
    convert_dir(SKYCMD_FIXTURES "/golden/ckpt/laya-parallel", gguf);
    check_model(gguf, "laya-parallel");
    check_model_rows(gguf, "laya-parallel");
}

Test(int8_store, mmbert_spm_checkpoint) {
    char gguf[1200];
    snprintf(gguf, sizeof gguf, "%s/mmbert.gguf", g_dir);
    convert_dir(SKYCMD_FIXTURES "/golden/ckpt/mmbert-tiny", gguf);
    check_model(gguf, "mmbert-tiny");
    check_model_rows(gguf, "mmbert-tiny");
}

Test(int8_store, random_massive_channels) {
    char gguf[1200];
    snprintf(gguf, sizeof gguf, "%s/nano.gguf", g_dir);
    random_model("s1-nano", 4, gguf);
    check_model(gguf, "s1-nano-massive");
    size_t n_outl, n_x2;
    char out[1200];
    snprintf(out, sizeof out, "%s/s1-nano-massive-cal.gguf", g_dir);
    count_outliers(out, &n_outl, &n_x2);
    cr_assert_gt(n_outl, 0, "planted massive channels give outlier columns");
    /* the calibration's passes on three threads write the same file */
    char out3[1200], msg[512];
    snprintf(out3, sizeof out3, "%s/s1-nano-massive-cal3.gguf", g_dir);
    cr_assert_eq(quantize(gguf, out3, 3, msg, sizeof msg), SKYCMD_OK, "%s", msg);
    size_t n1, n3;
    char *b1 = tu_read_file(out, &n1), *b3 = tu_read_file(out3, &n3);
    cr_assert(b1 && b3);
    cr_assert(n1 == n3 && memcmp(b1, b3, n1) == 0, "3 compute threads wrote another file");
    free(b1);
    free(b3);
    /* the row-scaled one: outlier columns in the encoder's keys and in the head's parts */
    check_model_rows(gguf, "s1-nano-massive");
    snprintf(out, sizeof out, "%s/s1-nano-massive-cal-rows.gguf", g_dir);
    count_outliers(out, &n_outl, &n_x2);
    cr_assert_gt(n_outl, 0, "row-scaled: planted massive channels give outlier columns");
    /* the probe's sites for --q8-row --q8-fast: a third of them (int8.c probe_rows) */
    cr_assert_gt(n_x2, 0, "row-scaled: the two-pass sites of --q8-fast are stored");
    sk_gguf *g = NULL;
    sk_err e;
    sk_err_clear(&e);
    cr_assert_eq(sk_gguf_open_file(out, &g, &e), SKYCMD_OK, "%s", e.msg);
    cr_assert_eq(sk_int8_store_row_scaled(g, &e), 1);
    size_t parts = 0, part_weights = 0;
    for (size_t i = 0; i < sk_gguf_n_kv(g); i++) {
        sk_str k = sk_gguf_kv_key(g, i);
        const int part = memchr(k.ptr, '@', (size_t)k.len) != NULL;
        parts += part;
        part_weights += part && k.len > 16 && memcmp(k.ptr + k.len - 16, ".outlier_weights", 16) == 0;
    }
    sk_gguf_close(g);
    cr_assert_gt(parts, 0, "row-scaled: the head's q keeps its columns under tensor@row");
    cr_assert_eq(part_weights, 0, "row-scaled: a head part's weights are its tensor's, not keys");
}

/* Every outlier column's quant is round(w / d) clamped to +-127 in its block's scale. */
Test(int8_store, outlier_quants_for_other_readers) {
    char gguf[1200], out[1200];
    snprintf(gguf, sizeof gguf, "%s/nano.gguf", g_dir);
    snprintf(out, sizeof out, "%s/nano-cal.gguf", g_dir);
    random_model("s1-nano", 4, gguf);
    cr_assert_eq(quantize(gguf, out, 1, NULL, 0), SKYCMD_OK);
    sk_gguf *g = NULL;
    sk_err e;
    sk_err_clear(&e);
    cr_assert_eq(sk_gguf_open_file(out, &g, &e), SKYCMD_OK, "%s", e.msg);
    size_t checked = 0;
    for (size_t i = 0; i < sk_gguf_n_tensors(g); i++) {
        const sk_gguf_tensor *t = sk_gguf_tensor_at(g, i);
        if (t->type != SK_GGML_Q8_0) continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        const size_t n_in = (size_t)t->ne[0], n_out = (size_t)t->ne[1];
        uint32_t *outl;
        float *w;
        size_t no;
        int x2;
        cr_assert_eq(sk_int8_store_get(g, name, n_out, n_in, &outl, &no, &w, &x2, &e), SKYCMD_OK, "%s", e.msg);
        const size_t row_bytes = n_in / 32 * 34;
        for (size_t o = 0; o < n_out; o++)
            for (size_t c = 0; c < no; c++) {
                const uint8_t *blk = t->data + o * row_bytes + outl[c] / 32 * 34;
                const float d = sk_f16_to_f32((uint16_t)(blk[0] | blk[1] << 8));
                const int q = (int8_t)blk[2 + outl[c] % 32];
                float want = d > 0.0f ? roundf(w[o * no + c] / d) : 0.0f;
                want = want > 127.0f ? 127.0f : want < -127.0f ? -127.0f : want;
                cr_assert_eq(q, (int)want, "%s row %zu column %u: quant %d, w %g, d %g", name, o,
                             outl[c], q, w[o * no + c], d);
                checked++;
            }
        free(outl);
        free(w);
    }
    sk_gguf_close(g);
    cr_assert_gt(checked, 0, "no outlier column was checked");
}

Test(int8_store, requantizing) {
    char gguf[1200], out[1200], again[1200], plain[1200], msg[512];
    snprintf(gguf, sizeof gguf, "%s/pico.gguf", g_dir);
    snprintf(out, sizeof out, "%s/pico-cal.gguf", g_dir);
    snprintf(again, sizeof again, "%s/pico-cal2.gguf", g_dir);
    snprintf(plain, sizeof plain, "%s/pico-plain.gguf", g_dir);
    random_model("s1-pico", 2, gguf);
    cr_assert_eq(quantize(gguf, out, 1, NULL, 0), SKYCMD_OK);
    cr_assert_eq(quantize(out, again, 1, msg, sizeof msg), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert(strstr(msg, "already stores a calibrated int8 model"), "%s", msg);
    cr_assert_eq(quantize(out, plain, 0, msg, sizeof msg), SKYCMD_OK, "%s", msg);
    /* a plain Q8_0 file has nothing left to calibrate */
    cr_assert_eq(quantize(plain, again, 1, msg, sizeof msg), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert(strstr(msg, "no matrix to calibrate"), "%s", msg);
    size_t n_outl, n_x2;
    cr_assert_eq(count_outliers(plain, &n_outl, &n_x2), 0, "a plain re-typing keeps skycmd.int8.version");
    cr_assert_eq(n_outl + n_x2, 0);
    /* the types that go with it are refused */
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_WEIGHTS, SKYCMD_WEIGHTS_Q8), SKYCMD_OK);
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_TYPE, SKYCMD_TYPE_F16), SKYCMD_OK);
    cr_assert_eq(skycmd_quantize(gguf, again, o, err), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_WEIGHTS, SKYCMD_WEIGHTS_Q8_ROW), SKYCMD_OK);
    cr_assert_eq(skycmd_quantize(gguf, again, o, err), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_TYPE, SKYCMD_TYPE_Q8_0), SKYCMD_OK);
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_WEIGHTS, SKYCMD_WEIGHTS_BF16X3), SKYCMD_OK);
    cr_assert_eq(skycmd_quantize(gguf, again, o, err), SKYCMD_E_INVALID_ARGUMENT);
    /* a row-scaled stored file is no input for another --calibrated run either */
    g_weights = SKYCMD_WEIGHTS_Q8_ROW;
    snprintf(out, sizeof out, "%s/pico-cal-rows.gguf", g_dir);
    cr_assert_eq(quantize(gguf, out, 1, msg, sizeof msg), SKYCMD_OK, "%s", msg);
    cr_assert_eq(quantize(out, again, 1, msg, sizeof msg), SKYCMD_E_INVALID_ARGUMENT);
    g_weights = SKYCMD_WEIGHTS_Q8;
    cr_assert(strstr(msg, "already stores a calibrated int8 model"), "%s", msg);
    skycmd_options_free(o);
    skycmd_error_free(err);
}

/* ------------------------------------------------------------ hostile keys --- */

/* BAD_ROWS_*: the row-scaled key added, over block scales that differ within a row (a
 * --q8-row load must refuse the file naming the row), or as a u32 */
typedef enum { BAD_VERSION, BAD_VERSION_TYPE, BAD_UNSORTED, BAD_RANGE, BAD_COUNT, BAD_NAN,
               BAD_COLS_TYPE, BAD_ONLY_COLS, BAD_TWO_PASS_TYPE, BAD_TOO_MANY, BAD_ROWS_BLOCKS,
               BAD_ROWS_TYPE, N_BAD } bad_kind;

/* The file at in (*g) and a writer of its alignment for a copy: keys first, then
 * write_with_tensors. */
static sk_gguf_writer *copy_begin(const char *in, sk_gguf **g) {
    sk_err e;
    sk_err_clear(&e);
    cr_assert_eq(sk_gguf_open_file(in, g, &e), SKYCMD_OK, "%s", e.msg);
    sk_gguf_writer *w = sk_gguf_writer_new((uint32_t)sk_gguf_alignment(*g));
    cr_assert(w);
    return w;
}

/* Write w (keys added) to out with every tensor of g, then free both. */
static void write_with_tensors(sk_gguf *g, sk_gguf_writer *w, const char *out) {
    sk_err e;
    sk_err_clear(&e);
    for (size_t i = 0; i < sk_gguf_n_tensors(g); i++) {
        const sk_gguf_tensor *t = sk_gguf_tensor_at(g, i);
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        cr_assert_eq(sk_gguf_writer_add_tensor(w, name, t->n_dims, t->ne, t->type, t->data, t->nbytes, 0, &e), 0);
    }
    cr_assert_eq(sk_gguf_writer_write(w, out, NULL, NULL, &e), SKYCMD_OK, "%s", e.msg);
    sk_gguf_writer_free(w);
    sk_gguf_close(g);
}

/* A copy of the stored file at in with one of its int8 keys spoiled as kind says. */
static void spoil(const char *in, const char *out, bad_kind kind) {
    sk_gguf *g = NULL;
    sk_gguf_writer *w = copy_begin(in, &g);
    int done = 0;
    for (size_t i = 0; i < sk_gguf_n_kv(g); i++) {
        sk_str k = sk_gguf_kv_key(g, i);
        const sk_gguf_value *v = sk_gguf_kv_value(g, i);
        char key[320];
        snprintf(key, sizeof key, "%.*s", (int)k.len, k.ptr);
        const int is_version = strcmp(key, SK_INT8_STORE_VERSION_KEY) == 0;
        const int is_cols = strstr(key, ".outlier_columns") != NULL;
        const int is_w = strstr(key, ".outlier_weights") != NULL;
        if (is_version && kind == BAD_VERSION) {
            cr_assert_eq(sk_gguf_writer_add_u32(w, key, SK_INT8_STORE_VERSION + 1), 0);
            done = 1;
            continue;
        }
        if (is_version && kind == BAD_VERSION_TYPE) {
            cr_assert_eq(sk_gguf_writer_add_str(w, key, "1"), 0);
            done = 1;
            continue;
        }
        if (!done && is_cols && v->v.arr.count >= 2) {
            uint32_t c[64];
            const size_t n = v->v.arr.count < 64 ? (size_t)v->v.arr.count : 64;
            for (size_t j = 0; j < n; j++) memcpy(&c[j], v->v.arr.first + 4 * j, 4);
            if (kind == BAD_UNSORTED || kind == BAD_RANGE || kind == BAD_COUNT || kind == BAD_COLS_TYPE ||
                kind == BAD_ONLY_COLS) {
                if (kind == BAD_UNSORTED) c[1] = c[0];
                if (kind == BAD_RANGE) c[n - 1] = 1u << 30;
                if (kind == BAD_COLS_TYPE)
                    cr_assert_eq(sk_gguf_writer_add_arr(w, key, SK_GGUF_I32, c, n), 0);
                else
                    cr_assert_eq(sk_gguf_writer_add_arr(w, key, SK_GGUF_U32, c, kind == BAD_COUNT ? n - 1 : n), 0);
                done = kind;  /* the weights of these columns: dropped for BAD_ONLY_COLS */
                continue;
            }
        }
        if (is_w && done == BAD_ONLY_COLS) {
            done = 1;
            continue;
        }
        if (!done && is_w && kind == BAD_NAN) {
            float *f = malloc((size_t)v->v.arr.count * sizeof(float));
            memcpy(f, v->v.arr.first, (size_t)v->v.arr.count * sizeof(float));
            f[v->v.arr.count - 1] = NAN;
            cr_assert_eq(sk_gguf_writer_add_arr(w, key, SK_GGUF_F32, f, v->v.arr.count), 0);
            free(f);
            done = 1;
            continue;
        }
        if (!done && strstr(key, ".two_pass") && kind == BAD_TWO_PASS_TYPE) {
            cr_assert_eq(sk_gguf_writer_add_u32(w, key, 1), 0);
            done = 1;
            continue;
        }
        cr_assert_eq(sk_gguf_writer_add_value(w, k, v), 0);
    }
    if (kind == BAD_ROWS_BLOCKS || kind == BAD_ROWS_TYPE) {
        cr_assert_eq(kind == BAD_ROWS_BLOCKS ? sk_gguf_writer_add_bool(w, SK_INT8_STORE_ROWS_KEY, 1)
                                             : sk_gguf_writer_add_u32(w, SK_INT8_STORE_ROWS_KEY, 1), 0);
        done = 1;
    }
    if (kind == BAD_TOO_MANY) {
        /* as many columns as inputs (the bound is n_in / 16) on the first Q8_0 matrix */
        for (size_t i = 0; i < sk_gguf_n_tensors(g) && !done; i++) {
            const sk_gguf_tensor *t = sk_gguf_tensor_at(g, i);
            if (t->type != SK_GGML_Q8_0) continue;
            char key[320];
            snprintf(key, sizeof key, "skycmd.int8.%.*s.outlier_columns", (int)t->name.len, t->name.ptr);
            if (sk_gguf_find_key(g, key) >= 0) continue;
            const size_t n_in = (size_t)t->ne[0], n_out = (size_t)t->ne[1];
            uint32_t *c = malloc(n_in * sizeof *c);
            float *f = calloc(n_in * n_out, sizeof *f);
            for (size_t j = 0; j < n_in; j++) c[j] = (uint32_t)j;
            cr_assert_eq(sk_gguf_writer_add_arr(w, key, SK_GGUF_U32, c, n_in), 0);
            snprintf(key, sizeof key, "skycmd.int8.%.*s.outlier_weights", (int)t->name.len, t->name.ptr);
            cr_assert_eq(sk_gguf_writer_add_arr(w, key, SK_GGUF_F32, f, n_in * n_out), 0);
            free(c);
            free(f);
            done = 1;
        }
    }
    cr_assert(done, "kind %d: nothing to spoil in %s", (int)kind, in);
    write_with_tensors(g, w, out);
}

Test(int8_store, hostile_keys) {
    char gguf[1200], cal[1200], bad[1200], msg[512];
    snprintf(gguf, sizeof gguf, "%s/nano.gguf", g_dir);
    snprintf(cal, sizeof cal, "%s/nano-cal.gguf", g_dir);
    random_model("s1-nano", 4, gguf);
    cr_assert_eq(quantize(gguf, cal, 1, NULL, 0), SKYCMD_OK);
    static const char *const names[N_BAD] = {"version", "version type", "unsorted", "range", "count",
                                             "nan", "columns type", "columns alone", "two_pass type",
                                             "too many", "row-scaled over blocks", "row-scaled type"};
    static const char *const expect[N_BAD] = {SK_INT8_STORE_VERSION_KEY, SK_INT8_STORE_VERSION_KEY,
                                              "outlier_columns", "outlier_columns", "outlier_weights",
                                              "outlier_weights", "outlier_columns", "outlier_columns",
                                              "two_pass", "outlier_columns",
                                              "another scale than the row's first", SK_INT8_STORE_ROWS_KEY};
    for (int k = 0; k < N_BAD; k++) {
        snprintf(bad, sizeof bad, "%s/bad-%d.gguf", g_dir, k);
        spoil(cal, bad, (bad_kind)k);
        const int rows = k == BAD_ROWS_BLOCKS || k == BAD_ROWS_TYPE;
        const int st = open_status(bad, rows ? SKYCMD_WEIGHTS_Q8_ROW : SKYCMD_WEIGHTS_Q8, msg, sizeof msg);
        cr_assert(st == SKYCMD_E_FORMAT || (k == BAD_VERSION && st == SKYCMD_E_UNSUPPORTED),
                  "%s: status %d (%s)", names[k], st, msg);
        cr_assert(strstr(msg, expect[k]) != NULL, "%s: the message does not name %s: %s", names[k],
                  expect[k], msg);
        cr_assert_eq(open_status(bad, SKYCMD_WEIGHTS_F32, msg, sizeof msg), SKYCMD_OK,
                     "%s: the f32 load reads the keys: %s", names[k], msg);
    }
}

/* A head part's two_pass key (tensor@row, which the probe writes when it picks the part) is
 * read: with every part of a stored row-scaled file given one, two-pass activations answer
 * as before, and single-pass ones differ (those parts now run two passes). */
Test(int8_store, row_part_two_pass_read) {
    char gguf[1200], rows[1200], marked[1200];
    snprintf(gguf, sizeof gguf, "%s/nano.gguf", g_dir);
    snprintf(rows, sizeof rows, "%s/nano-rows.gguf", g_dir);
    snprintf(marked, sizeof marked, "%s/nano-rows-x2.gguf", g_dir);
    random_model("s1-nano", 4, gguf);
    g_weights = SKYCMD_WEIGHTS_Q8_ROW;
    cr_assert_eq(quantize(gguf, rows, 1, NULL, 0), SKYCMD_OK);
    g_weights = SKYCMD_WEIGHTS_Q8;
    sk_gguf *g = NULL;
    sk_gguf_writer *w = copy_begin(rows, &g);
    size_t added = 0;
    for (size_t i = 0; i < sk_gguf_n_kv(g); i++)
        cr_assert_eq(sk_gguf_writer_add_value(w, sk_gguf_kv_key(g, i), sk_gguf_kv_value(g, i)), 0);
    for (size_t i = 0; i < sk_gguf_n_kv(g); i++) {
        sk_str k = sk_gguf_kv_key(g, i);
        const char *at = memchr(k.ptr, '@', (size_t)k.len);
        if (!at || k.len < 16 || memcmp(k.ptr + k.len - 16, ".outlier_columns", 16) != 0) continue;
        char key[320];
        snprintf(key, sizeof key, "%.*s.two_pass", (int)(k.len - 16), k.ptr);
        if (sk_gguf_find_key(g, key) >= 0) continue;
        cr_assert_eq(sk_gguf_writer_add_bool(w, key, 1), 0);
        added++;
    }
    cr_assert_gt(added, 0, "no head part without a two_pass key to mark");
    write_with_tensors(g, w, marked);
    skycmd_model *a = open_with(rows, SKYCMD_WEIGHTS_Q8_ROW, NULL);
    skycmd_model *b = open_with(marked, SKYCMD_WEIGHTS_Q8_ROW, NULL);
    char *a2 = answers(a, SKYCMD_ACT_Q8X2), *b2 = answers(b, SKYCMD_ACT_Q8X2);
    char *a1 = answers(a, SKYCMD_ACT_Q8), *b1 = answers(b, SKYCMD_ACT_Q8);
    cr_expect_str_eq(a2, b2, "two-pass activations changed by a two_pass key");
    cr_expect_str_neq(a1, b1, "single-pass activations: %zu head parts' two_pass keys ignored", added);
    free(a2);
    free(b2);
    free(a1);
    free(b1);
    skycmd_model_free(a);
    skycmd_model_free(b);
}
