/* outlier_calib.c - the int8 outlier calibration: the per-channel magnitude record of every
 * matrix product site and the construction of int8 Linear weights from it (see
 * outlier_calib.h; the calibration's input sequences are src/prompt/outlier_calib_seqs.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "outlier_calib.h"
#include "quant.h"

int sk_calib_init(sk_calib *c, size_t n_sites, const size_t *k) {
    memset(c, 0, sizeof *c);
    c->k = sk_calloc_array(n_sites ? n_sites : 1, sizeof(size_t));
    c->mx = sk_calloc_array(n_sites ? n_sites : 1, sizeof(float *));
    c->sq = sk_calloc_array(n_sites ? n_sites : 1, sizeof(double *));
    c->rows = sk_calloc_array(n_sites ? n_sites : 1, sizeof(uint64_t));
    c->xtx = sk_calloc_array(n_sites ? n_sites : 1, sizeof(float *));
    if (!c->k || !c->mx || !c->sq || !c->rows || !c->xtx) {
        sk_calib_free(c);
        return SKYCMD_E_NOMEM;
    }
    c->n_sites = n_sites;
    for (size_t s = 0; s < n_sites; s++) {
        c->k[s] = k[s];
        c->mx[s] = sk_calloc_array(k[s] ? k[s] : 1, sizeof(float));
        c->sq[s] = sk_calloc_array(k[s] ? k[s] : 1, sizeof(double));
        if (!c->mx[s] || !c->sq[s]) {
            sk_calib_free(c);
            return SKYCMD_E_NOMEM;
        }
    }
    return 0;
}

void sk_calib_record(sk_calib *c, size_t site, const float *x, size_t ldx, size_t n_rows) {
    if (!c || site >= c->n_sites) return;
    float *mx = c->mx[site];
    double *sq = c->sq[site];
    const size_t k = c->k[site];
    for (size_t r = 0; r < n_rows; r++) {
        const float *xr = x + r * ldx;
        for (size_t i = 0; i < k; i++) {
            const float a = fabsf(xr[i]);
            if (a > mx[i]) mx[i] = a;  /* NaN compares false: ignored */
            if (a == a && a < INFINITY) sq[i] += (double)a * a;
        }
    }
    float *h = c->xtx[site];
    float *clean = h ? c->row_buf : NULL;
    for (size_t r = 0; clean && r < n_rows; r++) {
        const float *xr = x + r * ldx;
        for (size_t i = 0; i < k; i++) clean[i] = isfinite(xr[i]) ? xr[i] : 0.0f;
        for (size_t i = 0; i < k; i++) {
            const float xi = clean[i];
            if (xi == 0.0f) continue;
            float *hi = h + i * k;
            for (size_t j = i; j < k; j++) hi[j] += xi * clean[j];
        }
    }
    c->rows[site] += n_rows;
}

int sk_calib_want_xtx(sk_calib *c, size_t site) {
    if (!c || site >= c->n_sites || c->xtx[site]) return 0;
    size_t n;
    if (sk_mul_size(c->k[site], c->k[site], &n)) return SKYCMD_E_NOMEM;
    c->xtx[site] = sk_calloc_array(n ? n : 1, sizeof(float));
    if (c->k[site] > c->row_cap) {
        free(c->row_buf);
        c->row_buf = sk_malloc_array(c->k[site], sizeof(float));
        c->row_cap = c->row_buf ? c->k[site] : 0;
    }
    return c->xtx[site] && c->row_buf ? 0 : SKYCMD_E_NOMEM;
}

void sk_calib_free(sk_calib *c) {
    if (!c) return;
    if (c->mx)
        for (size_t s = 0; s < c->n_sites; s++) free(c->mx[s]);
    if (c->sq)
        for (size_t s = 0; s < c->n_sites; s++) free(c->sq[s]);
    if (c->xtx)
        for (size_t s = 0; s < c->n_sites; s++) free(c->xtx[s]);
    free(c->xtx);
    free(c->row_buf);
    free(c->mx);
    free(c->sq);
    free(c->k);
    free(c->rows);
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------------ int8 weights --- */

void sk_q8_owned_free(sk_q8_owned *q) {
    if (!q) return;
    free(q->panels);
    free(q->outl);
    free(q->is_outl);
    free(q->w_outl);
    free(q->bias);
    free(q->row_sum128);
    free(q->rowmajor);
    memset(q, 0, sizeof *q);
}

static int alloc_common(size_t n_out, size_t n_in, const float *bias, const char *name,
                        sk_q8_owned *out, size_t *nbytes, size_t *pbytes, sk_err *e) {
    memset(out, 0, sizeof *out);
    if (n_in == 0 || n_in % SK_QK8_0 != 0 || n_out == 0)
        return sk_fail(e, SKYCMD_E_FORMAT, "tensor %s: %zu inputs do not split into Q8_0 "
                       "blocks of %d", name, n_in, SK_QK8_0);
    size_t nblk;
    if (sk_mul_size(n_out, n_in / SK_QK8_0, &nblk) || sk_mul_size(nblk, SK_Q8_0_BLOCK_BYTES, nbytes))
        return sk_fail(e, SKYCMD_E_FORMAT, "tensor %s is too large", name);
    *pbytes = sk_q8_panel_bytes(n_out, n_in);
    if (*pbytes == 0 || *pbytes > SIZE_MAX - 64)
        return sk_fail(e, SKYCMD_E_FORMAT, "tensor %s is too large", name);
    out->panels = aligned_alloc(64, (*pbytes + 63) / 64 * 64);
    if (bias) {
        out->bias = sk_malloc_array(n_out, sizeof(float));
        if (out->bias) memcpy(out->bias, bias, n_out * sizeof(float));
    }
    if (!out->panels || (bias && !out->bias)) {
        sk_q8_owned_free(out);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory quantizing tensor %s", name);
    }
    out->w.p.panels = out->panels;
    out->w.p.n_in = n_in;
    out->w.p.n_out = n_out;
    out->w.p.bias = out->bias;
    return 0;
}

/* ROW_MAJOR bytes -> INPUT_BLOCK_MAJOR (the kernels' declared order) -> panels. */
static int prepack(const uint8_t *rowmajor, size_t n_out, size_t n_in, size_t nbytes,
                   sk_q8_owned *out, const char *name, sk_err *e) {
    uint8_t *kern = malloc(nbytes);
    if (!kern) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory packing tensor %s", name);
    sk_q8_to_kernel_order(rowmajor, kern, n_out, n_in);
    sk_q8_pack_panels(kern, n_out, n_in, out->panels);
    free(kern);
    return 0;
}

int sk_q8_from_q8_0(const uint8_t *rowmajor, size_t n_out, size_t n_in, const float *bias,
                    const char *name, sk_q8_owned *out, size_t *relayout_bytes,
                    size_t *panel_bytes, sk_err *e) {
    size_t nbytes, pbytes;
    int rc = alloc_common(n_out, n_in, bias, name, out, &nbytes, &pbytes, e);
    /* The file's scales are outside input: an infinite or NaN one would only surface as a
     * non-finite score much later, so name it here. */
    for (size_t i = 0; !rc && i < nbytes / SK_Q8_0_BLOCK_BYTES; i++) {
        const uint8_t *blk = rowmajor + i * SK_Q8_0_BLOCK_BYTES;
        if ((((unsigned)blk[1] << 8 | blk[0]) & 0x7c00u) == 0x7c00u)
            rc = sk_fail(e, SKYCMD_E_FORMAT, "tensor %s: Q8_0 block %zu (row %zu) has a "
                         "non-finite scale", name, i, i / (n_in / SK_QK8_0));
    }
    if (!rc) rc = prepack(rowmajor, n_out, n_in, nbytes, out, name, e);
    if (rc) {
        sk_q8_owned_free(out);
        return rc;
    }
    if (relayout_bytes) *relayout_bytes = nbytes;
    if (panel_bytes) *panel_bytes = pbytes;
    return 0;
}

int sk_q8_rows_from_blocks(sk_q8_owned *q, const char *name, sk_err *e) {
    const sk_q8_packed *w = &q->w.p;
    const size_t n_out = w->n_out, n_in = w->n_in, nb = n_in / SK_QK8_0;
    if (n_in > SK_Q8_ROW_MAX_IN)
        return sk_fail(e, SKYCMD_E_FORMAT, "tensor %s: %zu inputs are more than row-scaled int8 "
                       "sums exactly (%d)", name, n_in, SK_Q8_ROW_MAX_IN);
    if (w->pairs || w->row_sum128)
        return sk_fail(e, SKYCMD_E_INTERNAL, "tensor %s: already row-scaled", name);
    int32_t *rs = sk_malloc_array(n_out ? n_out : 1, sizeof(int32_t));
    if (!rs) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory reading tensor %s", name);
    for (size_t o = 0; o < n_out; o++) {
        const size_t p = o / SK_Q8_PANEL, c = o % SK_Q8_PANEL;
        uint16_t d0, d;
        int32_t sum = 0;
        memcpy(&d0, w->panels + sk_q8_meta_at(w, nb, p, 0) + c * 2, sizeof d0);
        for (size_t b = 0; b < nb; b++) {
            const uint8_t *meta = w->panels + sk_q8_meta_at(w, nb, p, b);
            int16_t s;
            memcpy(&d, meta + c * 2, sizeof d);
            memcpy(&s, meta + (SK_Q8_CHUNK_SUMS - SK_Q8_CHUNK_SCALES) + c * 2, sizeof s);
            if (d != d0) {
                free(rs);
                return sk_fail(e, SKYCMD_E_FORMAT, "tensor %s: row %zu: Q8_0 block %zu has another "
                               "scale than the row's first (the file says its matrices are "
                               "row-scaled)", name, o, b);
            }
            sum += s;
        }
        rs[o] = sum * 128;  /* |sum| <= 128 * 65536 */
    }
    q->row_sum128 = rs;
    q->w.p.row_sum128 = rs;
    return 0;
}

/* The outlier columns of W from the calibration's max |x| per channel (sk_quant_pick_outliers),
 * or the given ones (given: sorted, distinct, < n_in, at most n_in / 16; chan_max NULL),
 * with their exact f32 weights, into out; *n_outl of them. 0, or -1 out of memory. */
static int pick_outlier_columns(const float *W, size_t n_out, size_t n_in, const float *chan_max,
                                const uint32_t *given, size_t n_given, sk_q8_owned *out,
                                size_t *n_outl) {
    out->outl = sk_malloc_array(n_in / 16 + 1, sizeof(uint32_t));
    if (!out->outl) return -1;
    size_t no = n_given <= n_in / 16 ? n_given : n_in / 16;
    if (chan_max) no = sk_quant_pick_outliers(chan_max, n_in, SK_OUTLIER_RATIO, out->outl);
    else if (no) memcpy(out->outl, given, no * sizeof(uint32_t));
    *n_outl = no;
    if (!no) return 0;
    out->is_outl = calloc(n_in, 1);
    out->w_outl = sk_malloc_array(n_out * no, sizeof(float));
    if (!out->is_outl || !out->w_outl) return -1;
    for (size_t c = 0; c < no; c++) out->is_outl[out->outl[c]] = 1;
    for (size_t o = 0; o < n_out; o++)
        for (size_t c = 0; c < no; c++) out->w_outl[o * no + c] = W[o * n_in + out->outl[c]];
    return 0;
}

/* The canonical ROW_MAJOR Q8_0 bytes (freed here, or kept as out->rowmajor) into out's
 * panels, and out's outlier view; frees out on failure. */
static int finish_build(uint8_t *canon, int keep_rowmajor, size_t n_out, size_t n_in, size_t nbytes,
                        size_t pbytes, size_t no, const char *name, sk_q8_owned *out,
                        size_t *relayout_bytes, size_t *panel_bytes, sk_err *e) {
    const int rc = prepack(canon, n_out, n_in, nbytes, out, name, e);
    if (keep_rowmajor) out->rowmajor = canon;
    else free(canon);
    if (rc) {
        sk_q8_owned_free(out);
        return rc;
    }
    out->w.n_outl = no;
    out->w.outl = no ? out->outl : NULL;
    out->w.is_outl = out->is_outl;
    out->w.w_outl = out->w_outl;
    if (relayout_bytes) *relayout_bytes = nbytes;
    if (panel_bytes) *panel_bytes = pbytes;
    return 0;
}

int sk_q8_set_outliers(sk_q8_owned *q, const uint32_t *outl, size_t n_outl, const float *w_outl) {
    const size_t n_in = q->w.p.n_in, n_out = q->w.p.n_out;
    free(q->outl);
    free(q->is_outl);
    free(q->w_outl);
    q->outl = NULL;
    q->is_outl = NULL;
    q->w_outl = NULL;
    q->w.n_outl = 0;
    q->w.outl = NULL;
    q->w.is_outl = NULL;
    q->w.w_outl = NULL;
    if (n_outl == 0) return 0;
    q->outl = sk_malloc_array(n_outl, sizeof(uint32_t));
    q->is_outl = calloc(n_in, 1);
    q->w_outl = sk_malloc_array(n_out * n_outl, sizeof(float));
    if (!q->outl || !q->is_outl || !q->w_outl) return SKYCMD_E_NOMEM;
    memcpy(q->outl, outl, n_outl * sizeof(uint32_t));
    memcpy(q->w_outl, w_outl, n_out * n_outl * sizeof(float));
    for (size_t c = 0; c < n_outl; c++) q->is_outl[outl[c]] = 1;
    q->w.n_outl = n_outl;
    q->w.outl = q->outl;
    q->w.is_outl = q->is_outl;
    q->w.w_outl = q->w_outl;
    return 0;
}

int sk_q8_build(const float *W, size_t n_out, size_t n_in, const float *bias,
                const float *chan_max, const float *chan_ms, const float *xtx,
                int keep_rowmajor, const char *name, sk_q8_owned *out,
                size_t *relayout_bytes, size_t *panel_bytes, sk_err *e) {
    size_t nbytes, pbytes;
    int rc = alloc_common(n_out, n_in, bias, name, out, &nbytes, &pbytes, e);
    if (rc) return rc;
    uint8_t *canon = malloc(nbytes);
    if (!canon) {
        sk_q8_owned_free(out);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory quantizing tensor %s", name);
    }
    size_t no = 0;
    if (chan_max && pick_outlier_columns(W, n_out, n_in, chan_max, NULL, 0, out, &no)) goto nomem;
    const size_t row_bytes = n_in / SK_QK8_0 * SK_Q8_0_BLOCK_BYTES;
    float *colw = NULL;
    if (chan_ms) {
        colw = malloc(n_in * sizeof(float));
        if (!colw) goto nomem;
        for (size_t i = 0; i < n_in; i++) colw[i] = isfinite(chan_ms[i]) ? chan_ms[i] : 0.0f;
    }
    /* GPTQ rounding first where it can run; the scale search (or ggml's rounding) otherwise */
    if (xtx && sk_quantize_q8_0_gptq(W, n_out, n_in, xtx, no ? out->is_outl : NULL, canon) == 0)
        out->gptq = 1;
    for (size_t o = 0; o < n_out && !out->gptq; o++) {
        if (colw)
            sk_quantize_q8_0_weighted(W + o * n_in, no ? out->is_outl : NULL, colw, canon + o * row_bytes, n_in);
        else if (no)
            sk_quantize_q8_0_exact_cols(W + o * n_in, out->is_outl, canon + o * row_bytes, n_in);
        else
            sk_quantize_q8_0(W + o * n_in, canon + o * row_bytes, n_in);
    }
    free(colw);
    return finish_build(canon, keep_rowmajor, n_out, n_in, nbytes, pbytes, no, name, out,
                        relayout_bytes, panel_bytes, e);
nomem:
    free(canon);
    sk_q8_owned_free(out);
    return sk_fail(e, SKYCMD_E_NOMEM, "out of memory quantizing tensor %s", name);
}

int sk_q8_build_rows(const float *W, size_t n_out, size_t n_in, const float *bias,
                     const float *chan_max, const char *name, sk_q8_owned *out,
                     size_t *relayout_bytes, size_t *panel_bytes, sk_err *e) {
    return sk_q8_build_rows_outl(W, n_out, n_in, bias, chan_max, NULL, 0, 0, name, out,
                                 relayout_bytes, panel_bytes, e);
}

int sk_q8_build_rows_outl(const float *W, size_t n_out, size_t n_in, const float *bias,
                          const float *chan_max, const uint32_t *outl, size_t n_outl,
                          int keep_rowmajor, const char *name, sk_q8_owned *out,
                          size_t *relayout_bytes, size_t *panel_bytes, sk_err *e) {
    if (n_in > SK_Q8_ROW_MAX_IN)
        return sk_fail(e, SKYCMD_E_UNSUPPORTED, "tensor %s: %zu inputs are more than row-scaled "
                       "int8 sums exactly (%d)", name, n_in, SK_Q8_ROW_MAX_IN);
    size_t nbytes, pbytes;
    int rc = alloc_common(n_out, n_in, bias, name, out, &nbytes, &pbytes, e);
    if (rc) return rc;
    uint8_t *canon = malloc(nbytes);
    out->row_sum128 = sk_malloc_array(n_out, sizeof(int32_t));
    size_t no = 0;
    if (!canon || !out->row_sum128) goto nomem;
    if ((chan_max || n_outl) && pick_outlier_columns(W, n_out, n_in, chan_max, outl, n_outl, out, &no))
        goto nomem;
    const size_t nb = n_in / SK_QK8_0, row_bytes = nb * SK_Q8_0_BLOCK_BYTES;
    for (size_t o = 0; o < n_out; o++) {
        const float *w0 = W + o * n_in;
        float amax = 0.0f;
        for (size_t i = 0; i < n_in; i++) {
            const float av = no && out->is_outl[i] ? 0.0f : fabsf(w0[i]);
            if (av > amax) amax = av;  /* NaN never wins: refused at load before this */
        }
        const uint16_t dbits = sk_f32_to_f16(amax / 127.0f);
        const float d = sk_f16_to_f32(dbits);
        int32_t sum = 0;
        for (size_t b = 0; b < nb; b++) {
            uint8_t *blk = canon + o * row_bytes + b * SK_Q8_0_BLOCK_BYTES;
            blk[0] = (uint8_t)(dbits & 0xff);
            blk[1] = (uint8_t)(dbits >> 8);
            for (int j = 0; j < SK_QK8_0; j++) {
                const size_t i = b * SK_QK8_0 + (size_t)j;
                float v = (no && out->is_outl[i]) || d == 0.0f ? 0.0f : roundf(w0[i] / d);
                v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
                blk[2 + j] = (uint8_t)(int8_t)v;
                sum += (int8_t)v;
            }
        }
        out->row_sum128[o] = sum * 128;  /* |sum| <= 127 * 65536 */
    }
    out->w.p.row_sum128 = out->row_sum128;
    return finish_build(canon, keep_rowmajor, n_out, n_in, nbytes, pbytes, no, name, out,
                        relayout_bytes, panel_bytes, e);
nomem:
    free(canon);
    sk_q8_owned_free(out);
    return sk_fail(e, SKYCMD_E_NOMEM, "out of memory quantizing tensor %s", name);
}
