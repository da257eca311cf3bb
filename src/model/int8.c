/*
 * int8.c - the int8 weights modes (SKYCMD_WEIGHTS_Q8 and _Q8_PLAIN), applied after the load.
 *
 * Contract: sk_model_to_int8() picks the matrices that go int8 (Q8_0 in the file, already
 * packed at load, or what the converter's policy would make Q8_0: encoder matrices whose
 * rows split into blocks of 32; the decision head stays f32), calibrates on the built-in
 * prompts for SKYCMD_WEIGHTS_Q8 (max |x| per input channel, outlier columns kept in f32),
 * and replaces their f32/16-bit panels by Q8_0 panels (src/kernels/q8.h), logging each
 * matrix's relayout. See docs/quantization.md.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"
#include "../quant/quant.h"

/* ------------------------------------------------------------------ int8 weights --- */

/* Every Linear of the model, encoder first; *n_enc of them belong to the encoder. */
static size_t model_linears(sk_model *m, sk_linear **list, size_t *n_enc) {
    size_t n = 0;
    for (uint32_t l = 0; l < m->hp.n_layer; l++) {
        sk_enc_layer *L = &m->enc[l];
        list[n++] = &L->qkv;
        list[n++] = &L->out;
        list[n++] = &L->up;
        list[n++] = &L->down;
    }
    *n_enc = n;
    for (uint32_t j = 0; j < m->hp.n_head_layers; j++) {
        sk_head_layer *H = &m->head[j];
        list[n++] = &H->q;
        list[n++] = &H->kv;
        list[n++] = &H->out;
        list[n++] = &H->up;
        list[n++] = &H->down;
    }
    list[n++] = &m->cls;
    list[n++] = &m->cls_out;
    return n;
}

static void mlog(skycmd_log_fn log, void *ud, int level, const char *fmt, ...) SK_PRINTF(4, 5);
static void mlog(skycmd_log_fn log, void *ud, int level, const char *fmt, ...) {
    if (!log) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log(ud, level, msg);
}

/* The calibration of the seed: the f32 model on the built-in prompts, every position a
 * marker (so the last decision block sees every row too), max |x| per input channel at
 * every matrix product. */
static int calibrate(sk_model *m, const sk_gguf *g, sk_linear *const *sites, size_t n_sites,
                     sk_calib *c, sk_err *e) {
    size_t *k = sk_malloc_array(n_sites, sizeof(size_t));
    if (!k) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for calibration");
    for (size_t i = 0; i < n_sites; i++) k[i] = sites[i]->p.n_in;
    int rc = sk_calib_init(c, n_sites, k);
    free(k);
    if (rc) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for calibration");
    sk_calib_seq seqs[SK_CALIB_N_PROMPTS];
    const size_t max_len = m->hp.max_tokens ? m->hp.max_tokens : 512;
    rc = sk_calib_sequences(g, max_len, seqs, e);
    if (rc) {
        sk_err_prefix(e, "calibration prompts");
        return rc;
    }
    sk_scratch *s = sk_scratch_new(m);
    int32_t *marks = NULL;
    float *logits = NULL;
    if (!s) rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory for calibration");
    for (size_t i = 0; i < SK_CALIB_N_PROMPTS && !rc; i++) {
        const size_t n = seqs[i].n;
        free(marks);
        free(logits);
        marks = sk_malloc_array(n ? n : 1, sizeof(int32_t));
        logits = sk_malloc_array(n ? n : 1, sizeof(float));
        if (!marks || !logits) {
            rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory for calibration");
            break;
        }
        for (size_t t = 0; t < n; t++) marks[t] = (int32_t)t;
        s->calib = c;
        s->calib_sites = sites;
        s->n_calib_sites = n_sites;
        rc = sk_model_forward(m, s, seqs[i].ids, n, (int)(i % 3), marks, n, logits, e);
        if (rc) sk_err_prefix(e, "calibration prompt %zu", i);
    }
    free(marks);
    free(logits);
    sk_scratch_free(s);
    sk_calib_sequences_free(seqs);
    return rc;
}

int sk_model_to_int8(sk_model *m, const sk_gguf *g, int weights_mode, skycmd_log_fn log,
                         void *log_ud, sk_err *e) {
    const size_t cap = 4 * (size_t)m->hp.n_layer + 5 * (size_t)m->hp.n_head_layers + 2;
    sk_linear **all = sk_malloc_array(cap, sizeof *all);
    uint8_t *to_q8 = calloc(cap, 1);
    if (!all || !to_q8) {
        free(all);
        free(to_q8);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    }
    size_t n_enc, n = model_linears(m, all, &n_enc), n_quant = 0, n_file = 0;
    /* Which matrices go int8: Q8_0 in the file (already int8, packed at load), or what the
     * converter's policy would make Q8_0 (encoder matrices whose rows split into 32; the decision head stays f32). */
    for (size_t i = 0; i < n; i++) {
        const sk_linear *L = all[i];
        char name[160];
        snprintf(name, sizeof name, "%.*s", (int)(L->src->name.len < 150 ? L->src->name.len : 150),
                 L->src->name.ptr);
        if (L->src->type == SK_GGML_Q8_0) {
            to_q8[i] = 2;
            n_file++;
        } else if (sk_quant_policy(name, i >= n_enc, 2, L->p.n_in, SK_GGML_Q8_0, SK_GGML_F32) ==
                   SK_GGML_Q8_0) {
            to_q8[i] = 1;
            n_quant++;
        }
    }
    sk_calib c;
    memset(&c, 0, sizeof c);
    int rc = SKYCMD_OK;
    if (weights_mode == SKYCMD_WEIGHTS_Q8 && n_quant > 0) {
        rc = calibrate(m, g, all, n, &c, e);
        if (!rc)
            mlog(log, log_ud, 1, "int8: calibrated %zu matrix products on %d built-in prompts",
                 n, SK_CALIB_N_PROMPTS);
    }
    float *w = NULL;
    size_t w_cap = 0, total_bytes = 0, total_pbytes = 0, total_outl = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (!to_q8[i]) continue;
        sk_linear *L = all[i];
        const size_t n_in = L->p.n_in, n_out = L->p.n_out;
        char name[160];
        snprintf(name, sizeof name, "%.*s", (int)(L->src->name.len < 150 ? L->src->name.len : 150),
                 L->src->name.ptr);
        if (L->q8) {   /* packed from the file's Q8_0 bytes at load */
            total_bytes += L->q8_bytes;
            total_pbytes += L->q8_pbytes;
            mlog(log, log_ud, 0, "int8: %s rows %zu..%zu: Q8_0 from the file; relayout "
                 "ROW_MAJOR -> INPUT_BLOCK_MAJOR (kernel order) %zu bytes, then into %d-output "
                 "panels %zu bytes", name, L->row0, L->row0 + n_out, L->q8_bytes, SK_Q8_PANEL,
                 L->q8_pbytes);
            continue;
        }
        if ((rc = sk_q8_require_out_in(name, n_out, n_in, e))) break;
        sk_q8_owned *q = calloc(1, sizeof *q);
        if (!q) {
            rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
            break;
        }
        const uint64_t row_bytes = sk_ggml_row_size(L->src->type, n_in);
        const uint8_t *rows = L->src->data + L->row0 * row_bytes;
        size_t bytes = 0, pbytes = 0;
        if (n_out * n_in > w_cap) {
            free(w);
            w_cap = n_out * n_in;
            w = sk_malloc_array(w_cap, sizeof(float));
            if (!w) {
                w_cap = 0;
                free(q);
                rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory quantizing %s", name);
                break;
            }
        }
        rc = sk_ggml_to_f32(L->src->type, rows, w, n_out * n_in);
        if (rc) rc = sk_fail(e, SKYCMD_E_FORMAT, "tensor %s: cannot widen", name);
        if (!rc) {
            float *ms = NULL;
            if (c.sq && c.rows[i] > 0 && (ms = sk_malloc_array(n_in, sizeof(float))))
                for (size_t j = 0; j < n_in; j++) ms[j] = (float)(c.sq[i][j] / (double)c.rows[i]);
            rc = sk_q8_build(w, n_out, n_in, L->bias, c.mx ? c.mx[i] : NULL, ms, name, q, &bytes,
                             &pbytes, e);
            free(ms);
        }
        if (rc) {
            free(q);
            break;
        }
        L->q8 = q;
        free(L->buf);
        L->buf = NULL;
        L->p.data = NULL;
        total_bytes += bytes;
        total_pbytes += pbytes;
        total_outl += q->w.n_outl;
        mlog(log, log_ud, 0, "int8: %s rows %zu..%zu: %s, %zu outlier columns; relayout "
             "ROW_MAJOR -> INPUT_BLOCK_MAJOR (kernel order) %zu bytes, then into %d-output "
             "panels %zu bytes", name, L->row0, L->row0 + n_out, "Q8_0 quantized at load",
             q->w.n_outl, bytes, SK_Q8_PANEL, pbytes);
    }
    if (!rc)
        mlog(log, log_ud, 1, "int8: %zu matrices Q8_0 (%zu quantized at load%s, %zu from the "
             "file), %zu outlier columns in f32; prepacked once: ROW_MAJOR -> INPUT_BLOCK_MAJOR "
             "%zu bytes, panels %zu bytes; kernel %s", n_quant + n_file, n_quant,
             weights_mode == SKYCMD_WEIGHTS_Q8 ? " with calibration" : " without calibration",
             n_file, total_outl, total_bytes, total_pbytes, sk_q8_kernel_name());
    free(w);
    sk_calib_free(&c);
    free(all);
    free(to_q8);
    return rc;
}

