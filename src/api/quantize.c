/*
 * quantize.c - the public skycmd_quantize(): re-type a GGUF file's tensors under the
 * converter's type policy (src/quant/quant.h), keeping every metadata key; or, with
 * SKYCMD_OPT_WEIGHTS = SKYCMD_WEIGHTS_Q8 or SKYCMD_WEIGHTS_Q8_ROW, store the calibrated int8
 * model that weights mode makes at load (src/quant/int8_store.h): the file is loaded once
 * as --q8 (or --q8-row) loads it, its matrices quantized there are written as their Q8_0
 * bytes with their outlier columns in keys (a part of a tensor, the row mode's head q and
 * kv: only its keys, the tensor as it is), every other tensor as it is. The output is
 * written atomically.
 */
#include <stdlib.h>
#include <string.h>

#include "../gguf/gguf.h"
#include "../model/model.h"
#include "../prompt/outlier_calib_seqs.h"
#include "../quant/int8_store.h"
#include "../quant/quant.h"
#include "../tokenizer/tokenizer.h"
#include "api.h"

static int type_ok(int64_t t) {
    return t == SKYCMD_TYPE_F32 || t == SKYCMD_TYPE_F16 || t == SKYCMD_TYPE_BF16 ||
           t == SKYCMD_TYPE_Q8_0;
}

/* ------------------------------------------------------------ the stored int8 --- */

typedef struct stored_matrix {
    const sk_gguf_tensor *t;
    size_t row0;            /* its first row in t */
    int part;               /* rows of t, not all of it: keys only, t written as it is */
    const uint8_t *bytes;   /* ROW_MAJOR Q8_0, the model's */
    uint64_t nbytes;
    size_t n_out;
    const uint32_t *outl;
    size_t n_outl;
    const float *w_outl;
    int two_pass;
} stored_matrix;

typedef struct stored_int8 {
    const sk_gguf *g;
    int rows;         /* the row-scaled int8 (SKYCMD_WEIGHTS_Q8_ROW) */
    skycmd_tokenizer *tok;
    stored_matrix *v;
    size_t n, cap;
    sk_share write;   /* the writing's share of the progress */
} stored_int8;

/* The calibration's sequences, from the file's own tokenizer (as skycmd_model_open builds
 * them, src/api/model.c), so the file stores exactly what --q8 would make. */
static int stored_calib_build(void *ud, size_t max_len, size_t head_max_len, sk_calib_seq *seqs,
                              sk_err *e) {
    stored_int8 *s = ud;
    int rc;
    if (!s->tok && (rc = sk_tokenizer_from_gguf(s->g, &s->tok, e))) return rc;
    return sk_calib_sequences_tok(s->g, s->tok, max_len, head_max_len, seqs, e);
}

static int stored_collect(void *ud, const sk_gguf_tensor *t, size_t row0, uint8_t *rowmajor,
                          size_t n_out, size_t n_in, const uint32_t *outl, size_t n_outl,
                          const float *w_outl, int two_pass) {
    stored_int8 *s = ud;
    if (s->n == s->cap) {
        const size_t cap = s->cap ? 2 * s->cap : 16;
        stored_matrix *v = realloc(s->v, cap * sizeof *v);
        if (!v) return SKYCMD_E_NOMEM;
        s->v = v;
        s->cap = cap;
    }
    const int part = row0 != 0 || (uint64_t)n_out != t->ne[1];
    /* readers that do not know the keys (llama.cpp) see the outlier weights in the blocks */
    if (!part) sk_int8_store_fill_outliers(rowmajor, n_out, n_in, outl, n_outl, w_outl);
    stored_matrix m = {t, row0, part, rowmajor, sk_ggml_row_size(SK_GGML_Q8_0, n_in) * n_out,
                       n_out, outl, n_outl, w_outl, two_pass};
    s->v[s->n++] = m;
    return 0;
}

static int stored_tensor(void *ud, const sk_gguf_tensor *t, const char *name, uint32_t *type,
                         const void **data, uint64_t *nbytes, sk_err *e) {
    const stored_int8 *s = ud;
    (void)name;
    (void)e;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].t == t && !s->v[i].part) {
            *type = SK_GGML_Q8_0;
            *data = s->v[i].bytes;
            *nbytes = s->v[i].nbytes;
            return 1;
        }
    /* everything else as it is: the head, the norms, the embeddings and the matrices the
     * sensitivity probe kept are what --q8 computes with */
    *type = t->type;
    *data = t->data;
    *nbytes = t->nbytes;
    return 1;
}

static int stored_keys(void *ud, sk_gguf_writer *w, sk_err *e) {
    const stored_int8 *s = ud;
    int rc = sk_gguf_writer_add_u32(w, SK_INT8_STORE_VERSION_KEY, SK_INT8_STORE_VERSION);
    if (rc) return sk_fail(e, rc, "cannot write " SK_INT8_STORE_VERSION_KEY);
    if (s->rows && (rc = sk_gguf_writer_add_bool(w, SK_INT8_STORE_ROWS_KEY, 1)))
        return sk_fail(e, rc, "cannot write " SK_INT8_STORE_ROWS_KEY);
    for (size_t i = 0; i < s->n && !rc; i++) {
        const stored_matrix *m = &s->v[i];
        char name[256];
        if (m->t->name.len >= 200)
            return sk_fail(e, SKYCMD_E_UNSUPPORTED, "a tensor name longer than 199 bytes");
        if (m->part) {
            sk_int8_store_part_name(name, sizeof name, m->t->name, m->row0);
        } else {
            memcpy(name, m->t->name.ptr, (size_t)m->t->name.len);
            name[m->t->name.len] = '\0';
        }
        /* a part's exact weights are its tensor's own, which stays F16/F32 */
        rc = sk_int8_store_put(w, name, m->n_out, m->outl, m->n_outl, m->part ? NULL : m->w_outl,
                               m->two_pass, e);
    }
    return rc;
}

static int stored_write_progress(void *ud, uint64_t done, uint64_t total) {
    const stored_int8 *s = ud;
    return sk_share_report(s->write, total ? (double)done / (double)total : 1.0, NULL) != 0;
}

/* Load in_path as weights (SKYCMD_WEIGHTS_Q8 or _Q8_ROW) loads it, keeping the quantized
 * matrices' bytes, and write them with the rest of the file as it is. Progress: the reading
 * and the load (the calibration is nearly all of it), then the writing. */
static int quantize_stored(const char *in_path, const char *out_path, int weights,
                           const skycmd_options *opts, sk_err *e) {
    sk_progress pg = {opts ? opts->progress : NULL, opts ? opts->progress_ud : NULL, 0, 0};
    const sk_share whole = sk_share_whole(&pg);
    const double first = sk_model_read_share(weights, 1.0);
    const sk_share read = sk_share_part(whole, 0.0, 0.95 * first),
                   load = sk_share_part(whole, 0.95 * first, 0.95);
    stored_int8 s;
    memset(&s, 0, sizeof s);
    s.write = sk_share_part(whole, 0.95, 1.0);
    s.rows = weights == SKYCMD_WEIGHTS_Q8_ROW;
    sk_gguf *g = NULL;
    sk_model *m = NULL;
    int rc = sk_share_report(whole, 0.0, e);
    /* not releasable: the writer reads the tensors the load packed */
    if (!rc) rc = sk_gguf_open_file_progress(in_path, 0, read, &g, e);
    if (!rc) {
        s.g = g;
        const int v = sk_int8_store_version(g, e);
        if (v > 0)
            rc = sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "already stores a calibrated int8 model "
                         "(quantize its F16 or F32 source instead)");
        else if (v < 0)
            rc = e->status;
    }
    if (!rc) {
        const sk_calib_source calib = {stored_calib_build, &s, 1, sk_opt_threads(opts), 0};
        sk_opt_log(opts, 1, "quantizing %s: the int8 of %s, calibrated once and stored", in_path,
                   s.rows ? "SKYCMD_WEIGHTS_Q8_ROW" : "SKYCMD_WEIGHTS_Q8");
        rc = sk_model_load_calib(g, weights, &calib, opts ? opts->log : NULL,
                                 opts ? opts->log_ud : NULL, load, &m, e);
    }
    if (!rc && (rc = sk_model_int8_each(m, stored_collect, &s)))
        rc = sk_fail(e, rc, "out of memory collecting the int8 matrices");
    if (!rc && s.n == 0)
        rc = sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "no matrix to calibrate: the encoder's "
                     "matrices are Q8_0 already, their exact weights gone (quantize its F16 or "
                     "F32 source instead)");
    if (!rc) {
        const sk_quantize_override over = {stored_tensor, stored_keys, &s};
        sk_quantize_opts o;
        memset(&o, 0, sizeof o);
        o.type = SK_GGML_Q8_0;
        o.head_type = SK_GGML_F32;
        o.progress = sk_share_active(whole) ? stored_write_progress : NULL;
        o.progress_ud = &s;
        o.over = &over;
        rc = sk_quantize_gguf(g, &o, out_path, e);
        if (!rc)
            sk_opt_log(opts, 1, "%s: %zu matrices stored as calibrated %sQ8_0", out_path, s.n,
                       s.rows ? "row-scaled " : "");
    }
    if (!rc) rc = sk_share_report(whole, 1.0, e);
    sk_model_free(m);
    if (s.tok) sk_tokenizer_free(s.tok);
    free(s.v);
    sk_gguf_close(g);
    return rc;
}

/* ------------------------------------------------------------------- quantize --- */

int skycmd_quantize(const char *in_path, const char *out_path, const skycmd_options *opts,
                    skycmd_error *err) {
    if (!sk_opts_ok(opts)) return sk_api_fail(err, SKYCMD_E_MISUSE, "invalid options handle");
    if (!in_path || !out_path || !in_path[0] || !out_path[0])
        return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT,
                           "quantize: an input and an output path are required");
    int64_t type = sk_opt_int(opts, SKYCMD_OPT_TYPE, SKYCMD_TYPE_Q8_0);
    int64_t head = sk_opt_int(opts, SKYCMD_OPT_HEAD_TYPE, SKYCMD_TYPE_F32);
    if (!type_ok(type) || !type_ok(head))
        return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT,
                           "quantize: type must be F32, F16, BF16 or Q8_0");
    const int64_t weights = sk_opt_int(opts, SKYCMD_OPT_WEIGHTS, SKYCMD_WEIGHTS_F32);
    if (weights != SKYCMD_WEIGHTS_F32 && weights != SKYCMD_WEIGHTS_Q8 &&
        weights != SKYCMD_WEIGHTS_Q8_ROW)
        return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT, "quantize: SKYCMD_OPT_WEIGHTS must "
                           "be SKYCMD_WEIGHTS_Q8 or _Q8_ROW (store that calibrated int8) or "
                           "SKYCMD_WEIGHTS_F32 (re-type under the policy, the default)");
    if (weights == SKYCMD_WEIGHTS_Q8 || weights == SKYCMD_WEIGHTS_Q8_ROW) {
        if (type != SKYCMD_TYPE_Q8_0 || head != SKYCMD_TYPE_F32)
            return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT, "quantize: the calibrated int8 "
                               "(SKYCMD_WEIGHTS_Q8 or _Q8_ROW) writes Q8_0 and keeps every other "
                               "tensor's type: no SKYCMD_OPT_TYPE or _HEAD_TYPE with it");
        sk_err e = {0};
        int s = quantize_stored(in_path, out_path, (int)weights, opts, &e);
        /* the input's errors named once (the reader's already start with its path), the
         * output's by the writer */
        const size_t on = strlen(out_path), in = strlen(in_path);
        if (s && !(strncmp(e.msg, out_path, on) == 0 && e.msg[on] == ':') &&
            !(strncmp(e.msg, in_path, in) == 0 && e.msg[in] == ':'))
            sk_err_prefix(&e, "%s", in_path);
        return sk_api_report(err, &e, s);
    }
    sk_quantize_opts o;
    memset(&o, 0, sizeof o);
    o.type = (uint32_t)type;
    o.head_type = (uint32_t)head;
    if (opts) {
        o.progress = opts->progress;
        o.progress_ud = opts->progress_ud;
    }
    sk_err e = {0};
    sk_gguf *g = NULL;
    int s = sk_gguf_open_file(in_path, &g, &e);
    if (!s) {
        sk_opt_log(opts, 1, "quantizing %s: %zu tensors to %s (head %s)", in_path,
                   sk_gguf_n_tensors(g), sk_ggml_type_name(o.type), sk_ggml_type_name(o.head_type));
        s = sk_quantize_gguf(g, &o, out_path, &e);
        /* an error of the input is prefixed with its name; the output's own errors (full
         * disk, a directory given as the output) already start with the output's name */
        const size_t on = strlen(out_path);
        if (s && !(strncmp(e.msg, out_path, on) == 0 && e.msg[on] == ':'))
            sk_err_prefix(&e, "%s", in_path);
    }
    sk_gguf_close(g);
    return sk_api_report(err, &e, s);
}
