/* calib.c - built-in calibration prompts, their token sequences, the per-channel magnitude
 * record and the construction of int8 Linear weights (see calib.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "quant.h"
#include "../prompt/prompt.h"
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

/* Generic questions of the three types (written for this project), laid out by the prompt
 * template around every calibration state; option texts as the request parser renders
 * them (choice "key: description", score the criteria, noul "false" / "true"). */
typedef struct calib_question {
    const char *ins;
    const char *opts[3];
    size_t n_opts;
} calib_question;

static const calib_question calib_questions[3] = {
    {"Which option fits the current state best?",
     {"act: take the action now", "wait: hold and watch what happens next"}, 2},
    {"How good is the situation described by the state?", {"bad", "fair", "good"}, 3},
    {"Will this go wrong soon if nothing changes?", {"false", "true"}, 2},
};

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The tokens the model's tokenizer learned, most frequent first: with BPE merges, the
 * result of each merge in rank order (earlier merges join more frequent pairs); otherwise
 * the ordinary tokens in id order. Special, control and unused tokens
 * (tokenizer.ggml.token_type other than 1) never enter. At most cap ids into out. */
static size_t learned_tokens(const sk_gguf *g, const skycmd_tokenizer *tok, int32_t *out,
                             size_t cap) {
    const size_t nv = sk_tokenizer_vocab_size(tok);
    const sk_gguf_value *types = NULL;
    uint8_t *ok = calloc(nv ? nv : 1, 1);
    if (!ok) return 0;
    for (size_t i = 0; i < nv; i++) ok[i] = 1;
    if (sk_gguf_get_arr(g, "tokenizer.ggml.token_type", &types) == SKYCMD_OK && types &&
        types->v.arr.count == nv) {
        sk_gguf_iter it;
        sk_gguf_iter_init(&it, types);
        sk_gguf_value x;
        for (size_t i = 0; i < nv && sk_gguf_iter_next(&it, &x); i++) {
            const int64_t t = x.type == SK_GGUF_I8 || x.type == SK_GGUF_I16 || x.type == SK_GGUF_I32 ||
                              x.type == SK_GGUF_I64 ? x.v.i : (int64_t)x.v.u;
            ok[i] = t == 1;
        }
    }
    for (int w = 0; w < 5; w++) {
        const int32_t id = sk_tokenizer_special(tok, w);
        if (id >= 0 && (size_t)id < nv) ok[id] = 0;
    }
    size_t n = 0;
    const sk_gguf_value *merges = NULL;
    if (sk_gguf_get_arr(g, "tokenizer.ggml.merges", &merges) == SKYCMD_OK && merges &&
        merges->v.arr.count > 0 && tok->vocab.n > 0) {
        sk_gguf_iter it;
        sk_gguf_iter_init(&it, merges);
        sk_gguf_value x;
        char buf[256];
        while (n < cap && sk_gguf_iter_next(&it, &x)) {
            if (x.type != SK_GGUF_STRING || x.v.s.len >= sizeof buf) continue;
            /* "left right": the merged token is the two joined (the first space from the
             * second byte on separates them) */
            size_t len = 0;
            int joined = 0;
            for (uint64_t j = 0; j < x.v.s.len; j++) {
                if (!joined && j > 0 && x.v.s.ptr[j] == ' ') {
                    joined = 1;
                    continue;
                }
                buf[len++] = x.v.s.ptr[j];
            }
            const int32_t id = sk_strmap_get(&tok->vocab, buf, len);
            if (id >= 0 && (size_t)id < nv && ok[id]) {
                out[n++] = id;
                ok[id] = 0;
            }
        }
    }
    if (n == 0)
        for (size_t i = 0; i < nv && n < cap; i++)
            if (ok[i] && sk_tokenizer_piece(tok, (int32_t)i)) out[n++] = (int32_t)i;
    free(ok);
    return n;
}

static int encode_cb(void *ctx, const char *text, size_t len, sk_i32v *out, sk_err *e) {
    sk_ids v = {0};
    int rc = sk_tokenizer_encode((const skycmd_tokenizer *)ctx, text, len, &v, e);
    if (!rc && sk_i32v_append(out, v.ids, v.n)) rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    sk_ids_free(&v);
    return rc;
}

/* Length of a vocabulary state (tokens), drawn between these. */
#define SK_VOCAB_STATE_MIN 24
#define SK_VOCAB_STATE_MAX 64
/* How many learned tokens the vocabulary states draw from (the most frequent). */
#define SK_VOCAB_POOL 4096

int sk_calib_sequences(const sk_gguf *g, size_t max_len, size_t head_max_len, sk_calib_seq *seqs,
                       sk_err *e) {
    memset(seqs, 0, SK_CALIB_N_SEQS * sizeof *seqs);
    skycmd_tokenizer *tok = NULL;
    int rc = sk_tokenizer_from_gguf(g, &tok, e);
    if (rc) return rc;
    if (max_len == 0) max_len = 512;
    if (head_max_len == 0) head_max_len = 96;
    sk_prompt_tok pt = {encode_cb, tok, sk_tokenizer_special(tok, SKYCMD_SPECIAL_CLS),
                        sk_tokenizer_special(tok, SKYCMD_SPECIAL_SEP),
                        sk_tokenizer_special(tok, SKYCMD_SPECIAL_MASK),
                        sk_tokenizer_special_text(tok, SKYCMD_SPECIAL_MASK)};
    sk_prompt_ws ws;
    memset(&ws, 0, sizeof ws);
    sk_i32v state = {0}, ids = {0}, markers = {0};
    int32_t *pool = sk_malloc_array(SK_VOCAB_POOL, sizeof *pool);
    double *cum = sk_malloc_array(SK_VOCAB_POOL, sizeof *cum);
    size_t n_pool = 0;
    if (!pool || !cum) rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory for calibration");
    if (!rc) n_pool = learned_tokens(g, tok, pool, SK_VOCAB_POOL);
    /* Zipf-like weights over the pool's rank: frequent tokens often, the tail now and then */
    double total = 0.0;
    for (size_t r = 0; r < n_pool; r++) cum[r] = (total += 1.0 / ((double)r + 8.0));
    uint64_t seed = 0x5eed5eedull;
    for (size_t i = 0; i < SK_CALIB_N_SEQS && !rc; i++) {
        state.n = 0;
        if (i < SK_CALIB_N_PROMPTS) {
            sk_ids v = {0};
            rc = sk_tokenizer_encode(tok, sk_calib_prompts[i], strlen(sk_calib_prompts[i]), &v, e);
            if (!rc && sk_i32v_append(&state, v.ids, v.n)) rc = SKYCMD_E_NOMEM;
            sk_ids_free(&v);
        } else if (n_pool > 0) {
            const size_t len = SK_VOCAB_STATE_MIN +
                               (size_t)(splitmix64(&seed) % (SK_VOCAB_STATE_MAX - SK_VOCAB_STATE_MIN + 1));
            for (size_t t = 0; t < len && !rc; t++) {
                const double u = (double)(splitmix64(&seed) >> 11) * 0x1p-53 * total;
                size_t lo = 0, hi = n_pool - 1;
                while (lo < hi) {
                    const size_t mid = (lo + hi) / 2;
                    if (cum[mid] < u) lo = mid + 1;
                    else hi = mid;
                }
                if (sk_i32v_push(&state, pool[lo])) rc = SKYCMD_E_NOMEM;
            }
        }
        if (rc) break;
        const int qt = (int)(i % 3);
        const calib_question *q = &calib_questions[qt];
        sk_jstr opts[3];
        for (size_t j = 0; j < q->n_opts; j++) opts[j] = (sk_jstr){q->opts[j], strlen(q->opts[j])};
        rc = sk_prompt_build(&pt, qt == 0 ? "choice" : qt == 1 ? "score" : "noul", q->ins,
                             strlen(q->ins), opts, sizeof opts[0], q->n_opts, state.v, state.n, 0,
                             max_len, head_max_len, &ws, &ids, &markers, e);
        if (rc) break;
        seqs[i].ids = sk_malloc_array(ids.n ? ids.n : 1, sizeof(int32_t));
        seqs[i].pos = sk_malloc_array(ids.n ? ids.n : 1, sizeof(int32_t));
        seqs[i].opt = sk_malloc_array(ids.n ? ids.n : 1, sizeof(int32_t));
        if (!seqs[i].ids || !seqs[i].pos || !seqs[i].opt) {
            rc = SKYCMD_E_NOMEM;
            break;
        }
        memcpy(seqs[i].ids, ids.v, ids.n * sizeof(int32_t));
        sk_prompt_parallel_layout(markers.v, markers.n, ws.head_len, ids.n, seqs[i].pos, seqs[i].opt);
        seqs[i].n = ids.n;
        seqs[i].qtype = qt;
    }
    if (rc == SKYCMD_E_NOMEM) sk_fail(e, rc, "out of memory building calibration sequences");
    free(pool);
    free(cum);
    sk_i32v_free(&state);
    sk_i32v_free(&ids);
    sk_i32v_free(&markers);
    sk_prompt_ws_free(&ws);
    sk_tokenizer_free(tok);
    if (rc) sk_calib_sequences_free(seqs);
    return rc;
}

void sk_calib_sequences_free(sk_calib_seq *seqs) {
    for (size_t i = 0; i < SK_CALIB_N_SEQS; i++) {
        free(seqs[i].ids);
        free(seqs[i].pos);
        free(seqs[i].opt);
        seqs[i].ids = seqs[i].pos = seqs[i].opt = NULL;
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
    free(q->row_sum128);
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

/* The outlier columns of W from the calibration's max |x| per channel (sk_quant_pick_outliers)
 * with their exact f32 weights, into out; *n_outl of them. 0, or -1 out of memory. */
static int pick_outlier_columns(const float *W, size_t n_out, size_t n_in, const float *chan_max,
                                sk_q8_owned *out, size_t *n_outl) {
    out->outl = sk_malloc_array(n_in / 16 + 1, sizeof(uint32_t));
    if (!out->outl) return -1;
    const size_t no = sk_quant_pick_outliers(chan_max, n_in, SK_OUTLIER_RATIO, out->outl);
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

/* The canonical ROW_MAJOR Q8_0 bytes (freed here) into out's panels, and out's outlier view;
 * frees out on failure. */
static int finish_build(uint8_t *canon, size_t n_out, size_t n_in, size_t nbytes, size_t pbytes,
                        size_t no, const char *name, sk_q8_owned *out, size_t *relayout_bytes,
                        size_t *panel_bytes, sk_err *e) {
    const int rc = prepack(canon, n_out, n_in, nbytes, out, name, e);
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
    if (chan_max && pick_outlier_columns(W, n_out, n_in, chan_max, out, &no)) goto nomem;
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
    return finish_build(canon, n_out, n_in, nbytes, pbytes, no, name, out, relayout_bytes,
                        panel_bytes, e);
nomem:
    free(canon);
    sk_q8_owned_free(out);
    return sk_fail(e, SKYCMD_E_NOMEM, "out of memory quantizing tensor %s", name);
}

int sk_q8_build_rows(const float *W, size_t n_out, size_t n_in, const float *bias,
                     const float *chan_max, const char *name, sk_q8_owned *out,
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
    if (chan_max && pick_outlier_columns(W, n_out, n_in, chan_max, out, &no)) goto nomem;
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
    return finish_build(canon, n_out, n_in, nbytes, pbytes, no, name, out, relayout_bytes,
                        panel_bytes, e);
nomem:
    free(canon);
    sk_q8_owned_free(out);
    return sk_fail(e, SKYCMD_E_NOMEM, "out of memory quantizing tensor %s", name);
}
