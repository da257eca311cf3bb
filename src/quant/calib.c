/* calib.c - built-in calibration prompts, their token sequences, the per-channel magnitude
 * record and the construction of int8 Linear weights (see calib.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "quant.h"
#include "../tokenizer/tokenizer.h"

/* Twelve short texts of the kinds a decision model reads: game states, English and French
 * prose, JSON. Written for this project. */
const char *const sk_calib_prompts[SK_CALIB_N_PROMPTS] = {
    "Turn 14. You hold 3 gold, 2 wood and a damaged sword. The enemy scout is two tiles "
    "north; your base has 40% health. Options: attack, retreat, build a wall, trade.",
    "Board: white king g1, rook f1, pawns f2 g2 h2; black king g8, queen d4, knight c6. "
    "Black to move. Material is even but the white back rank is weak.",
    "HP 12/30, MP 4/20. Inventory: potion x1, antidote x0, rope. Room 7: a locked chest, "
    "a sleeping troll, exits east and down. Last action: opened the north door.",
    "Score 2-1, 78th minute. Our striker is tired, the opponent presses high with four "
    "forwards; two substitutions left and a yellow card on the left back.",
    "The committee met on Tuesday to review the budget. After a long discussion, members "
    "agreed to postpone the decision until the auditors deliver their final report.",
    "She walked along the harbour at dusk, counting the boats that came back empty, and "
    "wondered whether the storm forecast for the weekend would finally keep them home.",
    "To replace the filter, switch off the pump, close both valves, unscrew the housing "
    "by hand and rinse the cartridge with clean water before putting it back.",
    "Le conseil municipal a voté hier soir la rénovation de l'école primaire ; les travaux "
    "commenceront en juillet et devraient durer un peu plus de six mois.",
    "Il pleuvait depuis le matin. Dans la cuisine, sa grand-mère épluchait des pommes en "
    "racontant l'hiver où la rivière avait gelé jusqu'au moulin.",
    "Pour réserver une salle, remplissez le formulaire en ligne au moins quarante-huit "
    "heures à l'avance et indiquez le nombre de participants prévus.",
    "{\"player\": {\"id\": 7, \"hp\": 18, \"pos\": [3, 9]}, \"enemies\": [{\"type\": "
    "\"orc\", \"hp\": 11}, {\"type\": \"archer\", \"hp\": 6}], \"turn\": 22}",
    "{\"order\": \"A-1043\", \"items\": [{\"sku\": \"tea-green\", \"qty\": 2, \"price\": "
    "4.5}], \"status\": \"pending\", \"express\": false, \"note\": null}",
};

int sk_calib_sequences(const sk_gguf *g, size_t max_len, sk_calib_seq *seqs, sk_err *e) {
    memset(seqs, 0, SK_CALIB_N_PROMPTS * sizeof *seqs);
    skycmd_tokenizer *tok = NULL;
    int rc = sk_tokenizer_from_gguf(g, &tok, e);
    if (rc) return rc;
    const int32_t cls = sk_tokenizer_special(tok, SKYCMD_SPECIAL_CLS);
    const int32_t sep = sk_tokenizer_special(tok, SKYCMD_SPECIAL_SEP);
    if (max_len < 3) max_len = 3;
    for (size_t i = 0; i < SK_CALIB_N_PROMPTS && !rc; i++) {
        sk_ids v = {0};
        if (cls >= 0) rc = sk_ids_push(&v, cls) ? SKYCMD_E_NOMEM : 0;
        if (!rc) rc = sk_tokenizer_encode(tok, sk_calib_prompts[i], strlen(sk_calib_prompts[i]),
                                          &v, e);
        if (!rc && v.n > max_len - 1) v.n = max_len - 1;
        if (!rc && sep >= 0) rc = sk_ids_push(&v, sep) ? SKYCMD_E_NOMEM : 0;
        if (rc) {
            sk_ids_free(&v);
            if (rc == SKYCMD_E_NOMEM) sk_fail(e, rc, "out of memory tokenizing calibration prompts");
            break;
        }
        seqs[i].ids = v.ids;
        seqs[i].n = v.n;
    }
    sk_tokenizer_free(tok);
    if (rc) sk_calib_sequences_free(seqs);
    return rc;
}

void sk_calib_sequences_free(sk_calib_seq *seqs) {
    for (size_t i = 0; i < SK_CALIB_N_PROMPTS; i++) {
        free(seqs[i].ids);
        seqs[i].ids = NULL;
        seqs[i].n = 0;
    }
}

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

int sk_q8_build(const float *W, size_t n_out, size_t n_in, const float *bias,
                const float *chan_max, const float *chan_ms, const float *xtx,
                const char *name, sk_q8_owned *out,
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
    if (chan_max) {
        out->outl = sk_malloc_array(n_in / 16 + 1, sizeof(uint32_t));
        if (!out->outl) goto nomem;
        no = sk_quant_pick_outliers(chan_max, n_in, SK_OUTLIER_RATIO, out->outl);
    }
    if (no) {
        out->is_outl = calloc(n_in, 1);
        out->w_outl = sk_malloc_array(n_out * no, sizeof(float));
        if (!out->is_outl || !out->w_outl) goto nomem;
        for (size_t c = 0; c < no; c++) out->is_outl[out->outl[c]] = 1;
        for (size_t o = 0; o < n_out; o++)
            for (size_t c = 0; c < no; c++) out->w_outl[o * no + c] = W[o * n_in + out->outl[c]];
    }
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
    rc = prepack(canon, n_out, n_in, nbytes, out, name, e);
    free(canon);
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
nomem:
    free(canon);
    sk_q8_owned_free(out);
    return sk_fail(e, SKYCMD_E_NOMEM, "out of memory quantizing tensor %s", name);
}
