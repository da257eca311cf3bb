/*
 * load.c - a System One decision model's tensors from GGUF, checked and prepacked.
 *
 * Contract (see model.h): sk_model_load_ex() reads the hyper-parameters (hparams.c), then
 * every tensor the forward pass uses, checking presence, type, shape, byte size and that
 * each value is finite (a failure names the tensor and element); the model is immutable
 * afterwards and may be shared by threads.
 * Layout: matrices are prepacked at load into 16-output panels (kernels.h), F16/BF16 kept
 * 16-bit and widened exactly by the kernels, F32/Q8_0 as f32. With an int8 weights mode the
 * file's Q8_0 matrices go straight into int8 panels (never widened, so the int8 path holds no
 * f32 copy of them), and the other encoder matrices are replaced by Q8_0 panels after the
 * load (int8.c). token_embd.weight stays in the reader's bytes (its own copy of the file, read
 * and never mapped, or the caller's buffer): the rows a sequence uses are widened at lookup
 * (forward.c), so the reader must outlive the model; nothing else is read through the reader
 * after the load. The bytes of every matrix, once packed, are given back to the system
 * (sk_gguf_release_pages: a reader opened with SK_GGUF_RELEASABLE) as each is packed: the
 * int8 conversion reads the panels back, not the file's bytes.
 * With an int8 mode the C heap's free pages are given back at the end of the load
 * (sk_platform_heap_trim), so the replaced panels leave the resident set.
 * Progress (model.h): the share given is split between the tensors (reported after each,
 * by bytes) and the int8 / AMX conversion that follows, by estimated cost; a stop at any
 * report frees the partial model and returns SKYCMD_E_CANCELLED.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"
#include "../quant/int8_store.h"
#include "../quant/quant.h"
#include "../util/platform.h"

void sk_model_log(skycmd_log_fn log, void *ud, int level, const char *fmt, ...) {
    if (!log) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log(ud, level, msg);
}

/* Find a required tensor and check its type, shape (ggml order: ne0 innermost; ne1 = 1 for
 * vectors) and byte size. */
static int check_tensor(const sk_gguf *g, const char *name, uint64_t ne0, uint64_t ne1,
                        const sk_gguf_tensor **out, sk_err *e) {
    const sk_gguf_tensor *t = sk_gguf_find_tensor(g, name);
    *out = NULL;
    if (!t) return sk_fail(e, SKYCMD_E_FORMAT, "missing tensor %s", name);
    if (t->type != SK_GGML_F32 && t->type != SK_GGML_F16 && t->type != SK_GGML_BF16 &&
        t->type != SK_GGML_Q8_0) {
        const char *tn = sk_ggml_type_name(t->type);
        return sk_fail(e, SKYCMD_E_UNSUPPORTED, "tensor %s has type %s; expected F32, F16, BF16 "
                       "or Q8_0", name, tn ? tn : "unknown");
    }
    int shape_ok = t->ne[0] == ne0 && t->ne[1] == ne1 && t->ne[2] == 1 && t->ne[3] == 1;
    if (shape_ok && t->type == SK_GGML_Q8_0 && ne0 % SK_QK8_0 != 0)
        return sk_fail(e, SKYCMD_E_FORMAT, "tensor %s is Q8_0 but its rows (%llu) are not a "
                       "multiple of %d", name, (unsigned long long)ne0, SK_QK8_0);
    if (!shape_ok)
        return sk_fail(e, SKYCMD_E_FORMAT, "tensor %s has shape [%llu, %llu, %llu, %llu]; "
                       "expected [%llu, %llu]", name, (unsigned long long)t->ne[0],
                       (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
                       (unsigned long long)t->ne[3], (unsigned long long)ne0,
                       (unsigned long long)ne1);
    size_t n;
    if (sk_mul_size((size_t)ne0, (size_t)ne1, &n) != 0 || n != t->n_elements)
        return sk_fail(e, SKYCMD_E_FORMAT, "tensor %s: inconsistent element count", name);
    if (!t->data || t->nbytes == 0 || t->nbytes != sk_ggml_row_size(t->type, n))
        return sk_fail(e, SKYCMD_E_FORMAT, "tensor %s: data size does not match its type",
                       name);
    *out = t;
    return SKYCMD_OK;
}

/* The load's progress: bytes of tensors checked and packed (the token embedding's scan
 * counted at an eighth of its bytes: it only reads them), reported after each tensor. */
static int load_progress(sk_model *m, uint64_t bytes, sk_err *e) {
    if (!sk_share_active(m->load_share)) return SKYCMD_OK;
    m->load_done += bytes;
    return sk_share_report(m->load_share, m->load_total ? (double)m->load_done / (double)m->load_total : 1.0, e);
}

/* A small tensor as a freshly allocated f32 copy, checked finite; *out stays NULL when the
 * tensor is absent and not required. */
static int load_tensor(sk_model *m, const sk_gguf *g, const char *name, uint64_t ne0,
                       uint64_t ne1, int required, float **out, sk_err *e) {
    *out = NULL;
    if (!required && !sk_gguf_find_tensor(g, name)) return SKYCMD_OK;
    const sk_gguf_tensor *t;
    int rc = check_tensor(g, name, ne0, ne1, &t, e);
    if (rc) return rc;
    size_t n = (size_t)t->n_elements;
    float *buf = sk_malloc_array(n ? n : 1, sizeof(float));
    if (!buf) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory loading tensor %s", name);
    if (sk_ggml_to_f32(t->type, t->data, buf, n) != SKYCMD_OK) {
        free(buf);
        return sk_fail(e, SKYCMD_E_FORMAT, "tensor %s: cannot convert to f32", name);
    }
    for (size_t i = 0; i < n; i++)
        if (!isfinite(buf[i])) {
            free(buf);
            return sk_fail(e, SKYCMD_E_FORMAT, "tensor %s: element %zu is not finite", name, i);
        }
    m->n_params += n;
    *out = buf;
    return load_progress(m, t->nbytes, e);
}

/* Pack rows [row0, row0 + n_out) of a weight matrix ([*][n_in]; f32 in w, or the raw 16-bit
 * elements in w16 with wtype SK_PACK_F16/BF16) and the matching bias entries. */
#define SK_PACK_CHUNK_BYTES (1u << 20)

static int pack_linear(sk_linear *lin, const float *w, const uint16_t *w16, int wtype,
                       const float *b, size_t row0, size_t n_out, size_t n_in,
                       const sk_gguf *release_src,
                       const char *name, sk_err *e) {
    size_t nf = sk_packed_floats(n_out, n_in), panels = (n_out + SK_PANEL - 1) / SK_PANEL;
    size_t bytes;
    if (nf == 0 || sk_mul_size(nf, sk_pack_elem_size(wtype), &bytes) || bytes > SIZE_MAX - 64)
        return sk_fail(e, SKYCMD_E_FORMAT, "tensor %s is too large", name);
    bytes = (bytes + 63) / 64 * 64;
    lin->buf = aligned_alloc(64, bytes);
    lin->bias = b ? aligned_alloc(64, panels * SK_PANEL * sizeof(float)) : NULL;
    if (!lin->buf || (b && !lin->bias))
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory packing tensor %s", name);
    /* In chunks of whole panels, giving back the source rows' pages as each chunk is packed
     * when they are read in place from release_src's file mapping: the resident set then
     * never holds a whole matrix twice, only one chunk of it. */
    const size_t esz = sk_pack_elem_size(wtype), src_row = n_in * esz;
    size_t chunk = (SK_PACK_CHUNK_BYTES / (src_row ? src_row : 1)) / SK_PANEL * SK_PANEL;
    if (chunk < SK_PANEL) chunk = SK_PANEL;
    for (size_t r = 0; r < n_out; r += chunk) {
        const size_t nr = n_out - r < chunk ? n_out - r : chunk;
        char *dst = (char *)lin->buf + (r / SK_PANEL) * n_in * SK_PANEL * esz;
        if (wtype == SK_PACK_F32)
            sk_pack(w + (row0 + r) * n_in, n_in, nr, n_in, (float *)(void *)dst);
        else
            sk_pack_u16(w16 + (row0 + r) * n_in, n_in, nr, n_in, (uint16_t *)(void *)dst);
        if (release_src)
            sk_gguf_release_pages(release_src,
                                  wtype == SK_PACK_F32 ? (const void *)(w + (row0 + r) * n_in)
                                                       : (const void *)(w16 + (row0 + r) * n_in),
                                  nr * src_row);
    }
    if (b) {
        memset(lin->bias, 0, panels * SK_PANEL * sizeof(float));
        memcpy(lin->bias, b + row0, n_out * sizeof(float));
    }
    lin->p.data = lin->buf;
    lin->p.bias = lin->bias;
    lin->p.n_in = n_in;
    lin->p.n_out = n_out;
    lin->p.pstride = n_in * SK_PANEL;
    lin->p.wtype = wtype;
    return SKYCMD_OK;
}

/* A matrix's elements for packing, checked finite: F16/BF16 as their 16-bit values, F32 as
 * floats (both read in place from the file when suitably aligned, else copied to *owned),
 * Q8_0 dequantized to f32 (*owned). Sets exactly one of *w32 / *w16. */
static int load_matrix(const sk_gguf_tensor *t, const char *name, const float **w32,
                       const uint16_t **w16, void **owned, sk_err *e) {
    *w32 = NULL;
    *w16 = NULL;
    *owned = NULL;
    const size_t n = (size_t)t->n_elements;
    if (t->type == SK_GGML_F16 || t->type == SK_GGML_BF16) {
        const uint16_t *src = (const uint16_t *)(const void *)t->data;
        if ((uintptr_t)t->data % sizeof(uint16_t) != 0) {
            uint16_t *buf = sk_malloc_array(n ? n : 1, sizeof(uint16_t));
            if (!buf) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory loading tensor %s", name);
            memcpy(buf, t->data, n * sizeof(uint16_t));
            *owned = buf;
            src = buf;
        }
        const uint16_t mask = t->type == SK_GGML_F16 ? 0x7c00 : 0x7f80;
        for (size_t i = 0; i < n; i++)
            if ((src[i] & mask) == mask) {
                free(*owned);
                *owned = NULL;
                return sk_fail(e, SKYCMD_E_FORMAT, "tensor %s: element %zu is not finite", name, i);
            }
        *w16 = src;
        return SKYCMD_OK;
    }
    const float *src = (const float *)(const void *)t->data;
    if (t->type != SK_GGML_F32 || (uintptr_t)t->data % sizeof(float) != 0) {
        float *buf = sk_malloc_array(n ? n : 1, sizeof(float));
        if (!buf) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory loading tensor %s", name);
        if (sk_ggml_to_f32(t->type, t->data, buf, n) != SKYCMD_OK) {
            free(buf);
            return sk_fail(e, SKYCMD_E_FORMAT, "tensor %s: cannot convert to f32", name);
        }
        *owned = buf;
        src = buf;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &src[i], sizeof bits);
        if ((bits & 0x7f800000u) == 0x7f800000u) {
            free(*owned);
            *owned = NULL;
            return sk_fail(e, SKYCMD_E_FORMAT, "tensor %s: element %zu is not finite", name, i);
        }
    }
    *w32 = src;
    return SKYCMD_OK;
}

/* Load <prefix>.weight ([n_out][n_in] in PyTorch order) and optionally <prefix>.bias, and
 * pack it as one Linear, or as two (rows [0, split) and [split, n_out)) when lin2 != NULL.
 * F16 and BF16 matrices stay 16-bit in the panels (widened exactly by the kernels); F32 and
 * Q8_0 become f32. */
/* Rows [row0, row0 + n_out) of a Q8_0 matrix taken as int8 panels as they are in the file
 * (the int8 weights modes); the Linear gets no f32 panels at all. */
static int q8_linear_from_file(sk_linear *lin, const sk_gguf_tensor *t, const float *b,
                               size_t row0, size_t n_out, size_t n_in, const char *name,
                               sk_err *e) {
    sk_q8_owned *q = calloc(1, sizeof *q);
    if (!q) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory packing tensor %s", name);
    const uint64_t row_bytes = sk_ggml_row_size(t->type, n_in);
    int rc = sk_q8_from_q8_0(t->data + row0 * row_bytes, n_out, n_in, b ? b + row0 : NULL, name,
                             q, &lin->q8_bytes, &lin->q8_pbytes, e);
    if (rc) {
        free(q);
        return rc;
    }
    lin->q8 = q;
    lin->p.data = NULL;
    lin->p.bias = NULL;
    lin->p.n_in = n_in;
    lin->p.n_out = n_out;
    lin->p.pstride = n_in * SK_PANEL;
    lin->p.wtype = SK_PACK_F32;
    return SKYCMD_OK;
}

static int load_linear2(sk_model *m, const sk_gguf *g, const char *prefix /* < 128 chars */,
                        uint32_t n_in, uint32_t n_out, int with_bias, sk_linear *lin,
                        sk_linear *lin2, uint32_t split, sk_err *e) {
    char name[192], bname[192];
    snprintf(name, sizeof name, "%s.weight", prefix);
    snprintf(bname, sizeof bname, "%s.bias", prefix);
    const sk_gguf_tensor *t;
    int rc = check_tensor(g, name, n_in, n_out, &t, e);
    if (rc) return rc;
    /* With an int8 weights mode a Q8_0 matrix goes from the file's bytes to int8 panels;
     * anything else is packed as f32 or 16-bit panels. */
    const int q8_direct = (m->weights_mode == SKYCMD_WEIGHTS_Q8 ||
                           m->weights_mode == SKYCMD_WEIGHTS_Q8_PLAIN || m->q8_file_rows) &&
                          t->type == SK_GGML_Q8_0;
    const float *w = NULL;
    const uint16_t *w16 = NULL;
    void *owned = NULL;
    float *b = NULL;
    if (q8_direct)
        rc = sk_q8_require_out_in(name, n_out, n_in, e);
    else
        rc = load_matrix(t, name, &w, &w16, &owned, e);
    if (!rc) m->n_params += (uint64_t)n_in * n_out;
    if (!rc && with_bias) rc = load_tensor(m, g, bname, n_out, 1, 1, &b, e);
    const int wtype = !w16 ? SK_PACK_F32 : t->type == SK_GGML_F16 ? SK_PACK_F16 : SK_PACK_BF16;
    sk_linear *part[2] = {lin, lin2};
    const size_t row0[2] = {0, split}, rows[2] = {lin2 ? split : n_out, n_out - split};
    for (int i = 0; i < (lin2 ? 2 : 1) && !rc; i++) {
        rc = q8_direct ? q8_linear_from_file(part[i], t, b, row0[i], rows[i], n_in, name, e)
                       : pack_linear(part[i], w, w16, wtype, b, row0[i], rows[i], n_in,
                                     owned ? NULL : g, name, e);
        part[i]->src = t;
        part[i]->row0 = row0[i];
    }
    /* The panels are a copy: the file's pages of this matrix can leave the resident set. */
    if (!rc) sk_gguf_release_pages(g, t->data, (size_t)t->nbytes);
    free(owned);
    free(b);
    if (!rc) rc = load_progress(m, t->nbytes, e);
    return rc;
}

static int load_linear(sk_model *m, const sk_gguf *g, const char *prefix, uint32_t n_in,
                       uint32_t n_out, int with_bias, sk_linear *lin, sk_err *e) {
    return load_linear2(m, g, prefix, n_in, n_out, with_bias, lin, NULL, 0, e);
}

static void free_linear(sk_linear *l) {
    free(l->buf);
    free(l->bias);
    if (l->q8) {
        sk_q8_owned_free(l->q8);
        free(l->q8);
    }
}

void sk_model_free(sk_model *m) {
    if (!m) return;
    free(m->embd_norm);
    if (m->enc)
        for (uint32_t l = 0; l < m->hp.n_layer; l++) {
            sk_enc_layer *L = &m->enc[l];
            free(L->attn_norm);
            free_linear(&L->qkv);
            free_linear(&L->out);
            free(L->ffn_norm);
            free_linear(&L->up);
            free_linear(&L->down);
        }
    free(m->enc);
    free(m->out_norm);
    if (m->head)
        for (uint32_t j = 0; j < m->hp.n_head_layers; j++) {
            sk_head_layer *H = &m->head[j];
            free(H->norm1_w);
            free(H->norm1_b);
            free_linear(&H->q);
            free_linear(&H->kv);
            free_linear(&H->out);
            free(H->norm2_w);
            free(H->norm2_b);
            free_linear(&H->up);
            free_linear(&H->down);
            free(H->kt);
        }
    free(m->head);
    free(m->type_emb);
    free(m->cls_norm_w);
    free(m->cls_norm_b);
    free_linear(&m->cls);
    free_linear(&m->cls_out);
    free(m);
}


/* The transposed key matrices of the last decision block (sk_head_layer.kt), read back from
 * its K/V Linear's panels (outputs [0, d) are the keys; f32 or 16-bit elements, widened
 * exactly), once the model's matrices are final. Only when the block can be folded: the
 * K/V Linear kept float panels (not int8) and a head's keys fill whole panels; otherwise kt
 * stays NULL and the block runs unfolded. */
static int build_key_transposes(sk_model *m, sk_head_layer *Hl, sk_err *e) {
    const size_t d = m->hp.n_embd, H = m->hp.n_head_dec, hd = m->head_dim_dec;
    const sk_packed *kv = &Hl->kv.p;
    if (Hl->kv.q8 || !kv->data || hd % SK_PANEL != 0 || d % SK_PANEL != 0) return SKYCMD_OK;
    const size_t per = sk_packed_floats(d, hd), esz = sk_pack_elem_size(kv->wtype);
    size_t total;
    if (per == 0 || sk_mul_size(per, H, &total) || total > SIZE_MAX / sizeof(float) - 64)
        return sk_fail(e, SKYCMD_E_NOMEM, "decision head too large to fold");
    float *kt = aligned_alloc(64, (total * sizeof(float) + 63) / 64 * 64);
    float *tr = sk_malloc_array(d * hd, sizeof(float));   /* Wk_h^T, [d][hd] */
    if (!kt || !tr) {
        free(kt);
        free(tr);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    }
    for (size_t h = 0; h < H; h++) {
        /* panel p holds keys 16p..16p+15 at [input o][c]: one input's 16 keys are one run
         * of Wk_h^T's row o */
        for (size_t q = 0; q < hd / SK_PANEL; q++) {
            const size_t p = h * hd / SK_PANEL + q;
            for (size_t o = 0; o < d; o++) {
                const char *src = (const char *)kv->data + (p * kv->pstride + o * SK_PANEL) * esz;
                float *dst = tr + o * hd + q * SK_PANEL;
                if (kv->wtype == SK_PACK_F32)
                    memcpy(dst, src, SK_PANEL * sizeof(float));
                else
                    sk_widen16(kv->wtype, src, dst, SK_PANEL);
            }
        }
        sk_pack(tr, hd, d, hd, kt + h * per);
    }
    free(tr);
    Hl->kt = kt;
    Hl->kt_floats = per;
    return SKYCMD_OK;
}

/* token_embd.weight stays in the file and is widened row by row at lookup, so unlike the
 * other tensors it is never converted at load: scan it here, once, so that a row holding a
 * NaN or an infinity refuses the model instead of failing every request that uses the token.
 * Bit tests only (the exponent all ones), no conversion; Q8_0 rows can only go wrong in
 * their f16 block scales. Its pages stay: the lookups read them. */
/* Index of the first element of a[0..n) (elements of esz bytes, esz 2 or 4, unaligned
 * allowed) whose exponent bits `mask` are all ones, or SIZE_MAX. Chunks are tested without
 * an early exit, so the compiler vectorizes the test; only a chunk with a hit is searched. */
static size_t first_all_ones(const uint8_t *a, size_t n, size_t esz, uint32_t mask) {
    enum { CHUNK = 4096 };
    for (size_t c0 = 0; c0 < n; c0 += CHUNK) {
        const size_t c1 = n - c0 < CHUNK ? n : c0 + CHUNK;
        unsigned hits = 0;
        if (esz == 4)
            for (size_t i = c0; i < c1; i++) {
                uint32_t x;
                memcpy(&x, a + 4 * i, 4);
                hits |= (x & mask) == mask;
            }
        else
            for (size_t i = c0; i < c1; i++) {
                uint16_t x;
                memcpy(&x, a + 2 * i, 2);
                hits |= (uint32_t)(x & mask) == mask;
            }
        if (!hits) continue;
        for (size_t i = c0; i < c1; i++) {
            uint32_t x = 0;
            if (esz == 4) memcpy(&x, a + 4 * i, 4);
            else {
                uint16_t h;
                memcpy(&h, a + 2 * i, 2);
                x = h;
            }
            if ((x & mask) == mask) return i;
        }
    }
    return SIZE_MAX;
}

static int scan_embedding(const sk_gguf *g, const sk_gguf_tensor *t, size_t d, size_t rows,
                          sk_err *e) {
    const uint8_t *p = t->data;
    const size_t n = d * rows;
    size_t bad = SIZE_MAX;
    if (t->type == SK_GGML_F32)
        bad = first_all_ones(p, n, 4, 0x7f800000u);
    else if (t->type == SK_GGML_F16)
        bad = first_all_ones(p, n, 2, 0x7c00u);
    else if (t->type == SK_GGML_BF16)
        bad = first_all_ones(p, n, 2, 0x7f80u);
    else if (t->type == SK_GGML_Q8_0) {
        const size_t block = sk_ggml_row_size(SK_GGML_Q8_0, SK_QK8_0);  /* f16 scale + 32 int8 */
        for (size_t b = 0; b < n / SK_QK8_0 && bad == SIZE_MAX; b++) {
            uint16_t bits;
            memcpy(&bits, p + b * block, 2);
            if ((bits & 0x7c00) == 0x7c00) bad = b * SK_QK8_0;
        }
    }
    (void)g;
    if (bad != SIZE_MAX)
        return sk_fail(e, SKYCMD_E_FORMAT, "tensor token_embd.weight: row %zu (token id %zu) "
                       "holds a non-finite value at element %zu; a model with non-finite "
                       "weights cannot answer", bad / d, bad / d, bad % d);
    return SKYCMD_OK;
}

int sk_model_load(const sk_gguf *g, int weights_mode, sk_model **out, sk_err *e) {
    return sk_model_load_ex(g, weights_mode, NULL, NULL, out, e);
}

int sk_model_load_ex(const sk_gguf *g, int weights_mode, skycmd_log_fn log, void *log_ud,
                     sk_model **out, sk_err *e) {
    return sk_model_load_calib(g, weights_mode, NULL, log, log_ud, SK_SHARE_NONE, out, e);
}

double sk_model_read_share(int weights_mode, double read_factor) {
    /* reading vs. what follows, per byte of the file: the tensors' checks and packing, and
     * the int8 modes' work (forward passes and quantization, about proportional to the
     * weights for a given depth; the calibrated mode's sensitivity probe grows with the
     * depth too, so its share is a base-sized model's) */
    const double read = SK_COST_READ_BYTE * read_factor, load = SK_COST_LOAD_BYTE;
    double rest = load;
    switch (weights_mode) {
    case SKYCMD_WEIGHTS_Q8: rest += SK_COST_GUESS_Q8_BYTE; break;
    case SKYCMD_WEIGHTS_Q8_ROW: rest += SK_COST_GUESS_Q8_ROW_BYTE; break;
    case SKYCMD_WEIGHTS_Q8_PLAIN: rest += SK_COST_GUESS_Q8_PLAIN_BYTE; break;
    default: break;
    }
    return read / (read + rest);
}

/* Split the load's share between the tensors (check and pack, by bytes) and what follows
 * them (*post: the int8 conversion and the AMX-BF16 relayout, *post_int8, then a row-scaled
 * model's probe unless deferred, *post_probe: row_choice), by their estimated cost. */
static void plan_progress(sk_model *m, const sk_gguf *g, int weights_mode, int row_choice,
                          sk_share prog, sk_share *post, sk_share *post_int8, sk_share *post_probe) {
    uint64_t bytes = 0, matrix_elems = 0;
    for (size_t i = 0; i < sk_gguf_n_tensors(g); i++) {
        const sk_gguf_tensor *t = sk_gguf_tensor_at(g, i);
        if (t->data && t->nbytes && !sk_str_eq(t->name, "token_embd.weight")) {
            bytes += t->nbytes;
            if (t->ne[1] > 1) matrix_elems += t->n_elements;
        }
    }
    /* the token embedding is only scanned (see load_progress) */
    if (m->tok_embd) bytes += m->tok_embd->nbytes / 8;
    m->load_total = bytes;
    m->load_done = 0;
    const double c_load = SK_COST_LOAD_BYTE * (double)bytes;
    double c_post = 0.0, c_probe = 0.0;
    if (weights_mode == SKYCMD_WEIGHTS_BF16X3 && sk_bf16x3_unit())
        c_post += SK_COST_AMX_ELEM * (double)matrix_elems;
    if (weights_mode == SKYCMD_WEIGHTS_Q8 || weights_mode == SKYCMD_WEIGHTS_Q8_ROW ||
        weights_mode == SKYCMD_WEIGHTS_Q8_PLAIN) {
        c_post += sk_int8_cost_guess(m, weights_mode);
        if (row_choice && weights_mode == SKYCMD_WEIGHTS_Q8_ROW) c_probe = sk_int8_row_choice_cost_guess(m);
    }
    const double sum = c_load + c_post + c_probe;
    const double split = sum > 0.0 ? c_load / sum : 1.0, split2 = sum > 0.0 ? (c_load + c_post) / sum : 1.0;
    m->load_share = sk_share_part(prog, 0.0, split);
    *post = sk_share_part(prog, split, 1.0);
    *post_int8 = sk_share_part(prog, split, split2);
    *post_probe = sk_share_part(prog, split2, 1.0);
}

int sk_model_load_calib(const sk_gguf *g, int weights_mode, const sk_calib_source *calib,
                        skycmd_log_fn log, void *log_ud, sk_share prog, sk_model **out,
                        sk_err *e) {
    if (!out) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sk_model_load: out is NULL");
    *out = NULL;
    if (!g) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sk_model_load: no GGUF reader");
    if (weights_mode != SKYCMD_WEIGHTS_F32 && weights_mode != SKYCMD_WEIGHTS_Q8 &&
        weights_mode != SKYCMD_WEIGHTS_Q8_PLAIN && weights_mode != SKYCMD_WEIGHTS_BF16X3 &&
        weights_mode != SKYCMD_WEIGHTS_Q8_ROW)
        return sk_fail(e, SKYCMD_E_UNSUPPORTED, "weights mode %d is not one of "
                       "SKYCMD_WEIGHTS_F32, _Q8, _Q8_PLAIN, _BF16X3, _Q8_ROW", weights_mode);
    sk_model *m = calloc(1, sizeof *m);
    if (!m) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    m->weights_mode = weights_mode;
    /* (a key of the wrong type is reported by sk_model_to_int8, which reads them again) */
    m->q8_file_rows = weights_mode == SKYCMD_WEIGHTS_Q8_ROW && sk_int8_store_version(g, NULL) > 0 &&
                      sk_int8_store_row_scaled(g, NULL) == 1;
    int rc = sk_read_hparams(g, &m->hp, e);
    if (rc) {
        free(m);
        return rc;
    }
    sk_hparams *hp = &m->hp;
    const uint32_t d = hp->n_embd;
    /* The vocabulary size comes from the embedding table; vocab_size must agree if given. */
    const sk_gguf_tensor *te = sk_gguf_find_tensor(g, "token_embd.weight");
    if (!te) {
        free(m);
        return sk_fail(e, SKYCMD_E_FORMAT, "missing tensor token_embd.weight");
    }
    if (te->ne[1] == 0 || te->ne[1] > SK_MAX_VOCAB) {
        free(m);
        return sk_fail(e, SKYCMD_E_FORMAT, "tensor token_embd.weight has %llu rows",
                       (unsigned long long)te->ne[1]);
    }
    hp->n_vocab = (uint32_t)te->ne[1];
    uint32_t vk;
    if (sk_gguf_get_u32(g, "modern-bert.vocab_size", &vk) == SKYCMD_OK && vk != hp->n_vocab) {
        uint32_t rows = hp->n_vocab;
        free(m);
        return sk_fail(e, SKYCMD_E_FORMAT, "modern-bert.vocab_size = %u but token_embd.weight "
                       "has %u rows", vk, rows);
    }
    m->head_dim = d / hp->n_head;
    m->head_dim_dec = d / hp->n_head_dec;
    sk_rope_inv_freq(hp->rope_base, m->head_dim, m->inv_freq[0]);
    sk_rope_inv_freq(hp->rope_base_swa, m->head_dim, m->inv_freq[1]);

    m->enc = calloc(hp->n_layer, sizeof *m->enc);
    m->head = calloc(hp->n_head_layers ? hp->n_head_layers : 1, sizeof *m->head);
    if (!m->enc || !m->head) {
        sk_model_free(m);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    }
    char name[128];
    sk_share post = SK_SHARE_NONE, post_int8 = SK_SHARE_NONE, post_probe = SK_SHARE_NONE;
    rc = check_tensor(g, "token_embd.weight", d, hp->n_vocab, &m->tok_embd, e);
    if (!rc && sk_share_active(prog)) {
        plan_progress(m, g, weights_mode, !(calib && calib->defer_row_choice), prog, &post,
                      &post_int8, &post_probe);
        rc = sk_share_report(m->load_share, 0.0, e);
    }
    if (!rc) {
        m->tok_row_bytes = sk_ggml_row_size(m->tok_embd->type, d);
        m->n_params += m->tok_embd->n_elements;
        rc = scan_embedding(g, m->tok_embd, d, hp->n_vocab, e);
    }
    if (!rc) rc = load_progress(m, m->tok_embd->nbytes / 8, e);
    if (!rc) rc = load_tensor(m, g, "token_embd_norm.weight", d, 1, 1, &m->embd_norm, e);
    for (uint32_t l = 0; l < hp->n_layer && !rc; l++) {
        sk_enc_layer *L = &m->enc[l];
        L->global = (l % hp->swa_pattern == 0) || hp->n_swa == 0;
        snprintf(name, sizeof name, "blk.%u.attn_norm.weight", l);
        rc = load_tensor(m, g, name, d, 1, l > 0, &L->attn_norm, e);
        if (!rc && l == 0 && L->attn_norm)
            rc = sk_fail(e, SKYCMD_E_FORMAT, "tensor blk.0.attn_norm.weight is present, but "
                         "ModernBERT's first layer has no attention norm");
        snprintf(name, sizeof name, "blk.%u.attn_qkv", l);
        if (!rc) rc = load_linear(m, g, name, d, 3 * d, 0, &L->qkv, e);
        snprintf(name, sizeof name, "blk.%u.attn_output", l);
        if (!rc) rc = load_linear(m, g, name, d, d, 0, &L->out, e);
        snprintf(name, sizeof name, "blk.%u.ffn_norm.weight", l);
        if (!rc) rc = load_tensor(m, g, name, d, 1, 1, &L->ffn_norm, e);
        snprintf(name, sizeof name, "blk.%u.ffn_up", l);
        if (!rc) rc = load_linear(m, g, name, d, 2 * hp->n_ff, 0, &L->up, e);
        snprintf(name, sizeof name, "blk.%u.ffn_down", l);
        if (!rc) rc = load_linear(m, g, name, hp->n_ff, d, 0, &L->down, e);
    }
    if (!rc) rc = load_tensor(m, g, "output_norm.weight", d, 1, 1, &m->out_norm, e);
    for (uint32_t j = 0; j < hp->n_head_layers && !rc; j++) {
        sk_head_layer *H = &m->head[j];
        uint32_t b = hp->n_layer + j;
        snprintf(name, sizeof name, "blk.%u.attn_norm.weight", b);
        rc = load_tensor(m, g, name, d, 1, 1, &H->norm1_w, e);
        snprintf(name, sizeof name, "blk.%u.attn_norm.bias", b);
        if (!rc) rc = load_tensor(m, g, name, d, 1, 1, &H->norm1_b, e);
        snprintf(name, sizeof name, "blk.%u.attn_qkv", b);
        if (!rc) rc = load_linear2(m, g, name, d, 3 * d, 1, &H->q, &H->kv, d, e);
        snprintf(name, sizeof name, "blk.%u.attn_output", b);
        if (!rc) rc = load_linear(m, g, name, d, d, 1, &H->out, e);
        snprintf(name, sizeof name, "blk.%u.ffn_norm.weight", b);
        if (!rc) rc = load_tensor(m, g, name, d, 1, 1, &H->norm2_w, e);
        snprintf(name, sizeof name, "blk.%u.ffn_norm.bias", b);
        if (!rc) rc = load_tensor(m, g, name, d, 1, 1, &H->norm2_b, e);
        snprintf(name, sizeof name, "blk.%u.ffn_up", b);
        if (!rc) rc = load_linear(m, g, name, d, hp->n_ff_head, 1, &H->up, e);
        snprintf(name, sizeof name, "blk.%u.ffn_down", b);
        if (!rc) rc = load_linear(m, g, name, hp->n_ff_head, d, 1, &H->down, e);
    }
    if (!rc) rc = load_tensor(m, g, "token_types.weight", d, 3, 1, &m->type_emb, e);
    if (!rc) rc = load_tensor(m, g, "cls.norm.weight", d, 1, 1, &m->cls_norm_w, e);
    if (!rc) rc = load_tensor(m, g, "cls.norm.bias", d, 1, 1, &m->cls_norm_b, e);
    if (!rc) rc = load_linear(m, g, "cls", d, d, 1, &m->cls, e);
    if (!rc) rc = load_linear(m, g, "cls.output", d, 1, 1, &m->cls_out, e);
    if (!rc) rc = sk_share_report(m->load_share, 1.0, e);
    m->load_share = SK_SHARE_NONE;
    /* the calibration's sequences and threads, for the conversion and the row probe */
    sk_calib_inputs *in = NULL;
    if (!rc && weights_mode != SKYCMD_WEIGHTS_F32 && weights_mode != SKYCMD_WEIGHTS_BF16X3 &&
        !(in = sk_calib_inputs_new(g, calib, NULL, log, log_ud)))
        rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    if (!rc && weights_mode == SKYCMD_WEIGHTS_BF16X3)
        rc = sk_model_to_bf16x3(m, log, log_ud, e);
    else if (!rc && weights_mode != SKYCMD_WEIGHTS_F32) {
        rc = sk_model_to_int8(m, g, weights_mode, in, log, log_ud, post_int8, e);
        if (!rc) rc = sk_model_int8_floats_to_amx_bf16(m, log, log_ud, e);
    }
    if (!rc && hp->n_head_layers > 0)
        rc = build_key_transposes(m, &m->head[hp->n_head_layers - 1], e);
    /* a row-scaled model's single-pass choice, on the model as it runs */
    if (!rc && !(calib && calib->defer_row_choice))
        rc = sk_model_row_choice(m, in, log, log_ud, post_probe, e);
    sk_calib_inputs_free(in);
    /* The int8 modes freed every replaced matrix's f32/16-bit panels, blocks of a few MB
     * that glibc's free() keeps in the heap between the int8 blocks made after them (on a
     * base-sized model from a Laya directory: 140 MB kept). */
    if (!rc && weights_mode != SKYCMD_WEIGHTS_F32 && weights_mode != SKYCMD_WEIGHTS_BF16X3)
        sk_platform_heap_trim();
    if (!rc) rc = sk_share_report(post, 1.0, e);
    if (rc) {
        sk_model_free(m);
        return rc;
    }
    *out = m;
    return SKYCMD_OK;
}

const sk_hparams *sk_model_hparams(const sk_model *m) { return m ? &m->hp : NULL; }
uint64_t sk_model_n_params(const sk_model *m) { return m ? m->n_params : 0; }
int sk_model_weights_mode(const sk_model *m) { return m ? m->weights_mode : SKYCMD_WEIGHTS_F32; }
