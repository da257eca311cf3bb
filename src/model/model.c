/*
 * model.c - loading a System One decision model from GGUF and its f32 forward pass.
 *
 * Contract (see model.h): the loader validates every hyper-parameter and tensor it uses and
 * widens matrices to f32; the model is immutable afterwards. The forward pass follows the
 * PyTorch reference operation by operation:
 *   encoder (transformers ModernBertModel): LN(emb) -> per layer [pre-LN (none on layer 0),
 *     fused QKV, NEOX RoPE with the global or local base, softmax attention (symmetric
 *     window |i-j| <= W/2 on local layers), Wo, residual, LN, GeGLU (erf GELU), Wo,
 *     residual] -> final LN;
 *   head (laya DecisionModel): + type_emb[qtype] everywhere, pre-norm TransformerEncoder
 *     layers (biases, max(1, d/64) heads, ReLU FFN, LayerNorm eps 1e-5), scorer
 *     LN -> Linear -> GELU -> Linear(d, 1) at the marker rows.
 * The last head layer only matters at the marker rows (nothing reads the others), so its
 * queries, output projection and FFN run on those rows only; keys and values still cover
 * every position, which gives the same numbers.
 *
 * Layout: matrices are prepacked at load into 16-output panels (kernels.h), F16/BF16 kept
 * 16-bit and widened exactly by the kernels, F32/Q8_0 as f32. With an int8 weights mode the
 * file's Q8_0 matrices go straight into int8 panels (never widened, so the int8 path holds no
 * f32 copy of them), and the other encoder matrices are replaced by Q8_0 panels after the
 * load (model_to_int8 at the end of this file: calibration on the built-in prompts, outlier
 * columns, prepack; src/kernels/q8.h).
 * A batch packs its sequences' rows one after another so every matrix product runs once
 * over all of them; attention (units of sequence x head x run of query blocks, each with
 * the K and V^T of its key range packed, query blocks limited to the union of their
 * sliding windows), RoPE positions and the head's marker rows stay per sequence.
 * With a thread pool, matrix products, attention units and row-wise steps are split over
 * the threads the process budget lends (src/kernels/pool.h, docs/threads.md).
 * Every output row is computed by the same arithmetic whatever the batch or thread count,
 * so results are bitwise independent of both.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "../kernels/kernels.h"
#include "../kernels/pool.h"
#include "../kernels/q8.h"
#include "../quant/calib.h"
#include "../quant/quant.h"

/* Python's nn.TransformerEncoderLayer and nn.LayerNorm default; the head and scorer always
 * use it whatever the encoder's epsilon is. */
#define SK_HEAD_EPS 1e-5f

/* Sanity limits on hyper-parameters read from a file (far above any real model). */
#define SK_MAX_EMBD 65536u
#define SK_MAX_LAYERS 1024u
#define SK_MAX_FF (1u << 20)
#define SK_MAX_VOCAB (1u << 24)

/* A Linear layer, prepacked for sk_gemm (see kernels.h); buf/bias own the memory. */
typedef struct sk_linear {
    sk_packed p;
    void *buf;
    float *bias;
    /* int8 weights (SKYCMD_WEIGHTS_Q8*): when set, the product runs on them and buf is freed */
    sk_q8_owned *q8;
    const sk_gguf_tensor *src;   /* the file's tensor and the first row this Linear holds */
    size_t row0;
    size_t q8_bytes, q8_pbytes;  /* prepack sizes, for the load log */
} sk_linear;

typedef struct sk_enc_layer {
    float *attn_norm;   /* NULL on layer 0 */
    sk_linear qkv, out;
    float *ffn_norm;
    sk_linear up, down;
    int global;         /* full attention, global RoPE base */
} sk_enc_layer;

typedef struct sk_head_layer {
    float *norm1_w, *norm1_b;
    sk_linear q, kv, out;   /* in_proj split: the last block needs K and V on every row but
                               Q only at the markers */
    float *norm2_w, *norm2_b;
    sk_linear up, down;
    /* The last block only: per head h, Wk_h^T ([d][hd], the keys' rows of the in_proj
     * weight transposed) packed as a Linear of hd inputs and d outputs, one after another
     * (kt_floats each). Built at the end of the load (build_key_transposes); NULL before
     * that (int8 calibration runs unfolded) and when the block cannot be folded. */
    float *kt;
    size_t kt_floats;
} sk_head_layer;

struct sk_model {
    sk_hparams hp;
    uint64_t n_params;
    int weights_mode;   /* SKYCMD_WEIGHTS_*: with an int8 mode, Q8_0 matrices of the file are
                           packed straight into int8 panels (no f32 stage) */
    /* token_embd.weight stays in the file (any supported type): only the rows of a
     * sequence are widened, at lookup, so a large vocabulary costs no f32 copy. */
    const sk_gguf_tensor *tok_embd;
    uint64_t tok_row_bytes;
    float *embd_norm;
    sk_enc_layer *enc;
    float *out_norm;
    sk_head_layer *head;
    float *type_emb;     /* [3][d] */
    float *cls_norm_w, *cls_norm_b;
    sk_linear cls;       /* d -> d */
    sk_linear cls_out;   /* d -> 1 */
    uint32_t head_dim;       /* encoder D */
    uint32_t head_dim_dec;   /* decision head hd */
    float inv_freq[2][512];  /* [0] global, [1] local; D/2 entries, as HF computes them */
};

struct sk_scratch {
    size_t cap;          /* rows the buffers hold */
    size_t cap_markers;
    float *h, *a, *qkv, *att, *ff;
    struct attn_ws {                   /* one per compute thread */
        float *sc;                     /* attention probabilities [SK_QB][cap] */
        float *kpack, *vpack;          /* one head's K and V^T, packed for sk_gemm */
    } *tws;
    int n_tws;
    float *rope_cos[2], *rope_sin[2];  /* [cap][D/2] per base */
    float *mh, *ma, *mq, *matt, *mff;  /* marker rows */
    uint32_t d, D, Dmax, n_qkv, n_ff_max, n_ff_head;
    sk_pool *pool;                     /* borrowed; NULL = one thread */
    struct seq_rows *seqs;             /* batch layout */
    struct attn_seq *aseq;             /* attention arguments per sequence */
    size_t cap_seqs, cap_rows;
    size_t *mrows;                     /* global row of each marker */
    float *mlogits;                    /* scorer outputs before scattering */
    float *mu, *mz;                    /* folded last block: [marker][head][d] */
    int unfolded;                      /* sk_scratch_set_unfolded */
    uint32_t Hdec;                     /* decision heads */
    /* int8 path */
    int act_mode;                      /* SK_Q8_ACT_* */
    sk_q8_ws q8ws;
    int q8_oom;                        /* a workspace could not grow during a forward call */
    sk_calib *calib;                   /* load-time calibration record, else NULL */
    struct sk_linear *const *calib_sites;
    size_t n_calib_sites;
};

/* ------------------------------------------------------------------ loading ------ */

static int key_name(char *buf, size_t cap, const char *arch, const char *suffix) {
    int k = snprintf(buf, cap, "%s.%s", arch, suffix);
    return (k < 0 || (size_t)k >= cap) ? -1 : 0;
}

/* A required or optional u32 hyper-parameter under the architecture prefix. */
static int get_u32(const sk_gguf *g, const char *arch, const char *suffix, uint32_t *out,
                   int required, uint32_t dflt, sk_err *e) {
    char key[160];
    if (key_name(key, sizeof key, arch, suffix) != 0)
        return sk_fail(e, SKYCMD_E_FORMAT, "architecture name too long");
    int rc = sk_gguf_get_u32(g, key, out);
    if (rc == SKYCMD_E_NOT_FOUND && !required) {
        *out = dflt;
        return SKYCMD_OK;
    }
    if (rc == SKYCMD_E_NOT_FOUND) return sk_fail(e, rc, "missing metadata key %s", key);
    if (rc != SKYCMD_OK)
        return sk_fail(e, SKYCMD_E_FORMAT, "metadata key %s is not a u32 value", key);
    return SKYCMD_OK;
}

static int get_f32(const sk_gguf *g, const char *arch, const char *suffix, float *out,
                   float dflt, sk_err *e) {
    char key[160];
    if (key_name(key, sizeof key, arch, suffix) != 0)
        return sk_fail(e, SKYCMD_E_FORMAT, "architecture name too long");
    int rc = sk_gguf_get_f32(g, key, out);
    if (rc == SKYCMD_E_NOT_FOUND) {
        *out = dflt;
        return SKYCMD_OK;
    }
    if (rc != SKYCMD_OK) return sk_fail(e, SKYCMD_E_FORMAT, "metadata key %s is not a float", key);
    if (!isfinite(*out) || *out <= 0.0f)
        return sk_fail(e, SKYCMD_E_FORMAT, "metadata key %s = %g is not a positive number", key,
                       (double)*out);
    return SKYCMD_OK;
}

/* A per-block u32 key that may be a scalar or an array of block_count values. Fills
 * vals[0..n). */
static int get_u32_per_block(const sk_gguf *g, const char *arch, const char *suffix,
                             uint32_t *vals, uint32_t n, int *is_array, sk_err *e) {
    char key[160];
    if (key_name(key, sizeof key, arch, suffix) != 0)
        return sk_fail(e, SKYCMD_E_FORMAT, "architecture name too long");
    int64_t idx = sk_gguf_find_key(g, key);
    if (idx < 0) return sk_fail(e, SKYCMD_E_NOT_FOUND, "missing metadata key %s", key);
    const sk_gguf_value *v = sk_gguf_kv_value(g, (size_t)idx);
    *is_array = 0;
    if (v->type == SK_GGUF_ARRAY) {
        if (v->v.arr.count != n)
            return sk_fail(e, SKYCMD_E_FORMAT, "metadata key %s has %llu values, expected %u "
                           "(one per block)", key, (unsigned long long)v->v.arr.count, n);
        sk_gguf_iter it;
        sk_gguf_iter_init(&it, v);
        sk_gguf_value el;
        for (uint32_t i = 0; i < n; i++) {
            if (!sk_gguf_iter_next(&it, &el))
                return sk_fail(e, SKYCMD_E_FORMAT, "metadata key %s: array too short", key);
            uint64_t x;
            if (el.type == SK_GGUF_U8 || el.type == SK_GGUF_U16 || el.type == SK_GGUF_U32 ||
                el.type == SK_GGUF_U64)
                x = el.v.u;
            else if (el.type == SK_GGUF_I8 || el.type == SK_GGUF_I16 || el.type == SK_GGUF_I32 ||
                     el.type == SK_GGUF_I64) {
                if (el.v.i < 0)
                    return sk_fail(e, SKYCMD_E_FORMAT, "metadata key %s[%u] is negative", key, i);
                x = (uint64_t)el.v.i;
            } else
                return sk_fail(e, SKYCMD_E_FORMAT, "metadata key %s is not an integer array", key);
            if (x > UINT32_MAX)
                return sk_fail(e, SKYCMD_E_FORMAT, "metadata key %s[%u] is too large", key, i);
            vals[i] = (uint32_t)x;
        }
        *is_array = 1;
        return SKYCMD_OK;
    }
    uint32_t x;
    if (sk_gguf_get_u32(g, key, &x) != SKYCMD_OK)
        return sk_fail(e, SKYCMD_E_FORMAT, "metadata key %s is neither a u32 nor an array", key);
    for (uint32_t i = 0; i < n; i++) vals[i] = x;
    return SKYCMD_OK;
}

/* Find a tensor, check its type and shape (ggml order: ne0 innermost; ne1 = 1 for vectors)
 * and return a freshly allocated f32 copy. *out stays NULL when the tensor is absent and
 * not required. */
/* Find a required tensor and check its type, shape and byte size. */
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
    return SKYCMD_OK;
}

/* Pack rows [row0, row0 + n_out) of a weight matrix ([*][n_in]; f32 in w, or the raw 16-bit
 * elements in w16 with wtype SK_PACK_F16/BF16) and the matching bias entries. */
#define SK_PACK_CHUNK_BYTES (1u << 20)

static int pack_linear(sk_linear *lin, const float *w, const uint16_t *w16, int wtype,
                       const float *b, size_t row0, size_t n_out, size_t n_in, int release_src,
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
     * when they are the file's own (release_src): the resident set then never holds a whole
     * matrix twice, only one chunk of it. */
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
            sk_release_pages(wtype == SK_PACK_F32 ? (const void *)(w + (row0 + r) * n_in)
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
    const int q8_direct = m->weights_mode != SKYCMD_WEIGHTS_F32 && t->type == SK_GGML_Q8_0;
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
                       : pack_linear(part[i], w, w16, wtype, b, row0[i], rows[i], n_in, !owned,
                                     name, e);
        part[i]->src = t;
        part[i]->row0 = row0[i];
    }
    /* The panels are a copy: the file's pages of this matrix can leave the resident set. */
    if (!rc && !owned) sk_release_pages(t->data, (size_t)t->nbytes);
    free(owned);
    free(b);
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

/* inv_freq exactly as transformers computes it in float32:
 * 1 / (base ** (arange(0, D, 2).float() / D)). */
static void rope_inv_freq(float base, uint32_t D, float *out) {
    for (uint32_t i = 0; i < D / 2; i++) {
        float ex = (float)(2 * i) / (float)D;
        float p = (float)pow((double)base, (double)ex);
        out[i] = 1.0f / p;
    }
}

static int read_hparams(const sk_gguf *g, sk_hparams *hp, sk_err *e) {
    sk_str arch_s;
    if (sk_gguf_get_str(g, "general.architecture", &arch_s) != SKYCMD_OK)
        return sk_fail(e, SKYCMD_E_FORMAT, "missing metadata key general.architecture");
    if (!sk_str_eq(arch_s, "modern-bert"))
        return sk_fail(e, SKYCMD_E_UNSUPPORTED, "general.architecture is \"%.*s\"; only "
                       "\"modern-bert\" decision models are supported",
                       (int)(arch_s.len > 64 ? 64 : arch_s.len), arch_s.ptr);
    const char *a = "modern-bert";
    uint32_t n_blocks;
    int rc;
    memset(hp, 0, sizeof *hp);
    if ((rc = get_u32(g, a, "block_count", &n_blocks, 1, 0, e))) return rc;
    if ((rc = get_u32(g, a, "decision.block_count", &hp->n_head_layers, 1, 0, e))) return rc;
    if (n_blocks > SK_MAX_LAYERS || hp->n_head_layers >= n_blocks)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s.block_count = %u and %s.decision.block_count = %u"
                       " leave no encoder layer (or exceed %u)", a, n_blocks, a,
                       hp->n_head_layers, SK_MAX_LAYERS);
    hp->n_layer = n_blocks - hp->n_head_layers;
    if ((rc = get_u32(g, a, "embedding_length", &hp->n_embd, 1, 0, e))) return rc;
    if (hp->n_embd == 0 || hp->n_embd > SK_MAX_EMBD)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s.embedding_length = %u is out of range", a,
                       hp->n_embd);
    uint32_t *heads = sk_malloc_array(n_blocks, sizeof(uint32_t));
    uint32_t *ff = sk_malloc_array(n_blocks, sizeof(uint32_t));
    if (!heads || !ff) {
        free(heads);
        free(ff);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    }
    int arr_h, arr_ff;
    rc = get_u32_per_block(g, a, "attention.head_count", heads, n_blocks, &arr_h, e);
    if (!rc) rc = get_u32_per_block(g, a, "feed_forward_length", ff, n_blocks, &arr_ff, e);
    if (rc) {
        free(heads);
        free(ff);
        return rc;
    }
    hp->n_head = heads[0];
    for (uint32_t l = 1; l < hp->n_layer && !rc; l++)
        if (heads[l] != heads[0])
            rc = sk_fail(e, SKYCMD_E_UNSUPPORTED, "%s.attention.head_count differs between "
                         "encoder layers 0 and %u", a, l);
    hp->n_ff = ff[0];
    for (uint32_t l = 1; l < hp->n_layer && !rc; l++)
        if (ff[l] != ff[0])
            rc = sk_fail(e, SKYCMD_E_UNSUPPORTED, "%s.feed_forward_length differs between "
                         "encoder layers 0 and %u", a, l);
    free(heads);
    if (rc) {
        free(ff);
        return rc;
    }
    /* The head's FFN is 4d in Python; a per-block array states it, a scalar does not. */
    hp->n_ff_head = 4 * hp->n_embd;
    if (arr_ff && hp->n_head_layers > 0) hp->n_ff_head = ff[hp->n_layer];
    for (uint32_t j = 1; arr_ff && j < hp->n_head_layers && !rc; j++)
        if (ff[hp->n_layer + j] != hp->n_ff_head)
            rc = sk_fail(e, SKYCMD_E_UNSUPPORTED, "%s.feed_forward_length differs between "
                         "decision blocks", a);
    free(ff);
    if (rc) return rc;
    if (hp->n_head == 0 || hp->n_embd % hp->n_head != 0 || (hp->n_embd / hp->n_head) % 2 != 0 ||
        hp->n_embd / hp->n_head > 1024)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s.attention.head_count = %u does not split "
                       "embedding_length %u into even head sizes", a, hp->n_head, hp->n_embd);
    if (hp->n_ff == 0 || hp->n_ff > SK_MAX_FF || hp->n_ff_head == 0 || hp->n_ff_head > SK_MAX_FF)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s.feed_forward_length is out of range", a);
    hp->n_head_dec = hp->n_embd / 64 > 1 ? hp->n_embd / 64 : 1;
    if (hp->n_embd % hp->n_head_dec != 0)
        return sk_fail(e, SKYCMD_E_UNSUPPORTED, "embedding_length %u is not divisible by the "
                       "decision head count max(1, d/64) = %u", hp->n_embd, hp->n_head_dec);
    if ((rc = get_f32(g, a, "attention.layer_norm_epsilon", &hp->eps, 1e-5f, e))) return rc;
    if ((rc = get_u32(g, a, "attention.sliding_window", &hp->n_swa, 0, 0, e))) return rc;
    if ((rc = get_u32(g, a, "attention.sliding_window_pattern", &hp->swa_pattern, 0, 3, e)))
        return rc;
    if (hp->swa_pattern == 0)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s.attention.sliding_window_pattern is 0", a);
    if ((rc = get_f32(g, a, "rope.freq_base", &hp->rope_base, 160000.0f, e))) return rc;
    if ((rc = get_f32(g, a, "rope.freq_base_swa", &hp->rope_base_swa, 10000.0f, e))) return rc;
    if ((rc = get_u32(g, a, "decision.max_head_tokens", &hp->max_head_tokens, 0, 0, e)))
        return rc;
    if ((rc = get_u32(g, a, "decision.max_tokens", &hp->max_tokens, 0, 0, e))) return rc;
    return SKYCMD_OK;
}

static int model_to_int8(sk_model *m, const sk_gguf *g, int weights_mode, skycmd_log_fn log,
                         void *log_ud, sk_err *e);

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

int sk_model_load(const sk_gguf *g, int weights_mode, sk_model **out, sk_err *e) {
    return sk_model_load_ex(g, weights_mode, NULL, NULL, out, e);
}

int sk_model_load_ex(const sk_gguf *g, int weights_mode, skycmd_log_fn log, void *log_ud,
                     sk_model **out, sk_err *e) {
    if (!out) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sk_model_load: out is NULL");
    *out = NULL;
    if (!g) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sk_model_load: no GGUF reader");
    if (weights_mode != SKYCMD_WEIGHTS_F32 && weights_mode != SKYCMD_WEIGHTS_Q8 &&
        weights_mode != SKYCMD_WEIGHTS_Q8_PLAIN)
        return sk_fail(e, SKYCMD_E_UNSUPPORTED, "weights mode %d is not one of "
                       "SKYCMD_WEIGHTS_F32, _Q8, _Q8_PLAIN", weights_mode);
    sk_model *m = calloc(1, sizeof *m);
    if (!m) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    m->weights_mode = weights_mode;
    int rc = read_hparams(g, &m->hp, e);
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
    rope_inv_freq(hp->rope_base, m->head_dim, m->inv_freq[0]);
    rope_inv_freq(hp->rope_base_swa, m->head_dim, m->inv_freq[1]);

    m->enc = calloc(hp->n_layer, sizeof *m->enc);
    m->head = calloc(hp->n_head_layers ? hp->n_head_layers : 1, sizeof *m->head);
    if (!m->enc || !m->head) {
        sk_model_free(m);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    }
    char name[128];
    rc = check_tensor(g, "token_embd.weight", d, hp->n_vocab, &m->tok_embd, e);
    if (!rc) {
        m->tok_row_bytes = sk_ggml_row_size(m->tok_embd->type, d);
        m->n_params += m->tok_embd->n_elements;
    }
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
    if (!rc && weights_mode != SKYCMD_WEIGHTS_F32)
        rc = model_to_int8(m, g, weights_mode, log, log_ud, e);
    if (!rc && hp->n_head_layers > 0)
        rc = build_key_transposes(m, &m->head[hp->n_head_layers - 1], e);
    if (rc) {
        sk_model_free(m);
        return rc;
    }
    *out = m;
    return SKYCMD_OK;
}

const sk_hparams *sk_model_hparams(const sk_model *m) { return m ? &m->hp : NULL; }
uint64_t sk_model_n_params(const sk_model *m) { return m ? m->n_params : 0; }

/* ------------------------------------------------------------------ scratch ------ */

/* Query rows per attention block: the block's keys are the union of its rows' windows. */
#define SK_QB 16

sk_scratch *sk_scratch_new(const sk_model *m) {
    if (!m) return NULL;
    sk_scratch *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->d = m->hp.n_embd;
    s->D = m->head_dim;
    s->Dmax = m->head_dim > m->head_dim_dec ? m->head_dim : m->head_dim_dec;
    s->Hdec = m->hp.n_head_dec;
    /* the folded last decision block attends with d-wide queries, keys and values */
    if (m->hp.n_head_layers > 0 && m->head[m->hp.n_head_layers - 1].kt) s->Dmax = s->d;
    s->n_qkv = 3 * s->d;
    s->n_ff_head = m->hp.n_ff_head;
    s->n_ff_max = 2 * m->hp.n_ff > m->hp.n_ff_head ? 2 * m->hp.n_ff : m->hp.n_ff_head;
    return s;
}

static void scratch_free_rows(sk_scratch *s) {
    free(s->h);
    free(s->a);
    free(s->qkv);
    free(s->att);
    free(s->ff);
    for (int t = 0; t < s->n_tws; t++) {
        free(s->tws[t].sc);
        free(s->tws[t].kpack);
        free(s->tws[t].vpack);
    }
    free(s->tws);
    s->tws = NULL;
    s->n_tws = 0;
    for (int b = 0; b < 2; b++) {
        free(s->rope_cos[b]);
        free(s->rope_sin[b]);
        s->rope_cos[b] = s->rope_sin[b] = NULL;
    }
    s->h = s->a = s->qkv = s->att = s->ff = NULL;
    s->cap = 0;
}

static void scratch_free_markers(sk_scratch *s) {
    free(s->mh);
    free(s->ma);
    free(s->mq);
    free(s->matt);
    free(s->mff);
    free(s->mu);
    free(s->mz);
    s->mh = s->ma = s->mq = s->matt = s->mff = s->mu = s->mz = NULL;
    s->cap_markers = 0;
}

void sk_scratch_free(sk_scratch *s) {
    if (!s) return;
    sk_q8_ws_free(&s->q8ws);
    free(s->seqs);
    free(s->aseq);
    free(s->mrows);
    free(s->mlogits);
    scratch_free_rows(s);
    scratch_free_markers(s);
    free(s);
}

static float *alloc_rows(size_t rows, size_t cols) {
    size_t n, bytes;
    if (sk_mul_size(rows, cols, &n) != 0 || sk_mul_size(n ? n : 1, sizeof(float), &bytes) ||
        bytes > SIZE_MAX - 64)
        return NULL;
    return aligned_alloc(64, (bytes + 63) / 64 * 64);
}

/* Grow the per-position buffers to hold n rows; fills the RoPE tables for positions below
 * the new capacity (cos/sin of pos * inv_freq with the angle rounded to f32, as
 * transformers computes them). */
static int scratch_reserve(const sk_model *m, sk_scratch *s, size_t n, sk_err *e) {
    if (n <= s->cap) return SKYCMD_OK;
    /* The rows asked for (whole panels), or a quarter more than before when growing, so a
     * creeping size does not reallocate every call: no power-of-two slack in the peak. */
    size_t cap = s->cap && s->cap + s->cap / 4 > n ? s->cap + s->cap / 4 : n;
    if (cap > SIZE_MAX - SK_PANEL) return sk_fail(e, SKYCMD_E_NOMEM, "%zu rows", n);
    cap = (cap + SK_PANEL - 1) / SK_PANEL * SK_PANEL;
    scratch_free_rows(s);
    const size_t half = s->D / 2, dpad = (s->Dmax + SK_PANEL - 1) / SK_PANEL * SK_PANEL;
    s->h = alloc_rows(cap, s->d);
    s->a = alloc_rows(cap, s->d);
    s->qkv = alloc_rows(cap, s->n_qkv);
    s->att = alloc_rows(cap, s->d);
    s->ff = alloc_rows(cap, s->n_ff_max);
    const int nt = sk_pool_size(s->pool);
    s->tws = calloc((size_t)nt, sizeof *s->tws);
    int ok = s->h && s->a && s->qkv && s->att && s->ff && s->tws;
    if (s->tws) s->n_tws = nt;
    for (int t = 0; ok && t < nt; t++) {
        s->tws[t].sc = alloc_rows(cap, SK_QB);
        s->tws[t].kpack = alloc_rows(cap + SK_PANEL, s->Dmax);
        s->tws[t].vpack = alloc_rows(cap + SK_PANEL, dpad);
        ok = s->tws[t].sc && s->tws[t].kpack && s->tws[t].vpack;
    }
    for (int b = 0; b < 2 && ok; b++) {
        s->rope_cos[b] = alloc_rows(cap, half);
        s->rope_sin[b] = alloc_rows(cap, half);
        ok = s->rope_cos[b] && s->rope_sin[b];
        for (size_t p = 0; ok && p < cap; p++)
            for (size_t i = 0; i < half; i++) {
                float ang = (float)p * m->inv_freq[b][i];
                s->rope_cos[b][p * half + i] = (float)cos((double)ang);
                s->rope_sin[b][p * half + i] = (float)sin((double)ang);
            }
    }
    if (!ok) {
        scratch_free_rows(s);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for a %zu-token sequence", n);
    }
    s->cap = cap;
    return SKYCMD_OK;
}

static int scratch_reserve_markers(sk_scratch *s, size_t k, sk_err *e) {
    if (k <= s->cap_markers) return SKYCMD_OK;
    size_t cap = s->cap_markers ? s->cap_markers : 16;
    while (cap < k) cap = cap > SIZE_MAX / 2 ? k : cap * 2;
    scratch_free_markers(s);
    s->mh = alloc_rows(cap, s->d);
    s->ma = alloc_rows(cap, s->d);
    s->mq = alloc_rows(cap, s->d);
    s->matt = alloc_rows(cap, s->d);
    s->mff = alloc_rows(cap, s->n_ff_max > s->d ? s->n_ff_max : s->d);
    size_t hrows;
    if (!sk_mul_size(cap, s->Hdec ? s->Hdec : 1, &hrows)) {
        s->mu = alloc_rows(hrows, s->d);
        s->mz = alloc_rows(hrows, s->d);
    }
    if (!s->mh || !s->ma || !s->mq || !s->matt || !s->mff || !s->mu || !s->mz) {
        scratch_free_markers(s);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for %zu markers", k);
    }
    s->cap_markers = cap;
    return SKYCMD_OK;
}

/* ------------------------------------------------------------------ forward ------ */

void sk_scratch_set_pool(sk_scratch *s, sk_pool *pool) {
    if (!s) return;
    /* the per-thread attention buffers follow the pool size: regrow them on next use */
    if (sk_pool_size(pool) != s->n_tws) scratch_free_rows(s);
    s->pool = pool;
}

void sk_scratch_set_unfolded(sk_scratch *s, int unfolded) {
    if (s) s->unfolded = unfolded != 0;
}

void sk_scratch_set_activations(sk_scratch *s, int mode) {
    if (s) s->act_mode = mode == SK_Q8_ACT_Q8 ? SK_Q8_ACT_Q8 : SK_Q8_ACT_Q8X2;
}

static void linear(sk_scratch *s, const sk_linear *L, const float *x, size_t ldx, size_t n_rows,
                   float *y, size_t ldy) {
    if (s->calib)
        for (size_t i = 0; i < s->n_calib_sites; i++)
            if (s->calib_sites[i] == L) sk_calib_record(s->calib, i, x, ldx, n_rows);
    if (L->q8) {
        if (sk_q8_linear(s->pool, &s->q8ws, &L->q8->w, s->act_mode, x, ldx, n_rows, y, ldy))
            s->q8_oom = 1;
        return;
    }
    sk_gemm_pool(s->pool, x, ldx, n_rows, &L->p, y, ldy);
}

/* ------------------------------------------------------------------ parallel steps */

/* Sequence boundaries of the rows in the scratch (a batch packs sequences one after
 * another; attention and RoPE positions stay within a sequence). */
typedef struct seq_rows {
    size_t off, n;      /* rows [off, off + n) */
    size_t koff, k;     /* marker rows [koff, koff + k) */
} seq_rows;

/* Row-wise steps (layer norms, residual adds, GeGLU, RoPE, ReLU) split by rows over the
 * pool when there is enough of them to pay for the hand-off; each row is computed by the
 * same code whatever the split, so results do not depend on the thread count. */
#define SK_ROWS_MT_MIN 32768  /* floats touched below which a step stays on one thread */

typedef void (*rows_fn)(void *ctx, size_t r0, size_t r1);
typedef struct rows_job {
    rows_fn fn;
    void *ctx;
    size_t n;
} rows_job;

static void rows_part(void *ctx, int ith, int nth) {
    const rows_job *j = ctx;
    size_t r0 = j->n * (size_t)ith / (size_t)nth, r1 = j->n * (size_t)(ith + 1) / (size_t)nth;
    if (r0 < r1) j->fn(j->ctx, r0, r1);
}

static void par_rows(sk_scratch *s, size_t n, size_t floats_per_row, rows_fn fn, void *ctx) {
    if (sk_pool_size(s->pool) <= 1 || n < 2 || (double)n * (double)floats_per_row < SK_ROWS_MT_MIN) {
        fn(ctx, 0, n);
        return;
    }
    rows_job j = {fn, ctx, n};
    sk_pool_run(s->pool, rows_part, &j);
}

/* y = LN(x) (LayerNorm) and x += a then y = LN(x) */
typedef struct ln_ctx {
    float *x;
    const float *a;     /* NULL: no residual add first */
    size_t d;
    const float *w, *b;
    float eps;
    float *y;
} ln_ctx;

static void ln_rows(void *ctx, size_t r0, size_t r1) {
    const ln_ctx *c = ctx;
    float *x = c->x + r0 * c->d;
    const float *a = c->a ? c->a + r0 * c->d : NULL;
    if (c->w)
        sk_add_layernorm(x, a, r1 - r0, c->d, c->w, c->b, c->eps, c->y + r0 * c->d);
    else if (a)
        sk_add(x, a, (r1 - r0) * c->d);
}

/* x += a (rows of d), then (when w) y = LN(x) */
static void add_ln(sk_scratch *s, float *x, const float *a, size_t n, size_t d, const float *w,
                   const float *b, float eps, float *y) {
    ln_ctx c = {x, a, d, w, b, eps, y};
    par_rows(s, n, d, ln_rows, &c);
}

typedef struct geglu_ctx {
    float *ff;
    size_t I;
} geglu_ctx;

static void geglu_rows(void *ctx, size_t r0, size_t r1) {
    const geglu_ctx *c = ctx;
    const sk_geglu_fn geglu = sk_geglu_kernel();
    for (size_t t = r0; t < r1; t++) {
        float *row = c->ff + t * 2 * c->I;
        geglu(row, row + c->I, row, c->I);
    }
}

static void relu_rows(void *ctx, size_t r0, size_t r1) {
    const geglu_ctx *c = ctx;  /* ff rows of I values */
    float *x = c->ff + r0 * c->I;
    for (size_t i = 0, n = (r1 - r0) * c->I; i < n; i++) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

typedef struct rope_ctx {
    float *qkv;
    size_t ld, H, D;
    const float *cos, *sin;
    const seq_rows *sr;
    size_t ns;
} rope_ctx;

static void rope_rows(void *ctx, size_t r0, size_t r1) {
    const rope_ctx *c = ctx;
    const sk_rope_fn rope = sk_rope_kernel();
    const size_t half = c->D / 2;
    size_t q = 0;
    while (q + 1 < c->ns && c->sr[q].off + c->sr[q].n <= r0) q++;
    for (size_t r = r0; r < r1; r++) {
        while (r >= c->sr[q].off + c->sr[q].n) q++;
        const size_t t = r - c->sr[q].off;
        const float *co = c->cos + t * half, *sn = c->sin + t * half;
        /* q and then k: 2H heads side by side (d = H * D) with the same angles */
        rope(c->qkv + r * c->ld, 2 * c->H, c->D, co, sn);
    }
}

/* Multi-head softmax attention over the sequences of a batch. Sequence i: queries nq rows
 * of q (row stride ldq), keys/values n rows of k and v (row stride ldkv); head h uses
 * columns [h*hd, (h+1)*hd). win > 0 limits query t to keys |t - j| <= win (queries must
 * then be rows 0..n-1 in order); win == 0 is full attention. Output: out (row stride ldo).
 * Queries are cut in blocks of SK_QB; each block multiplies against the union of its rows'
 * key ranges only, so work outside the window is skipped up to block granularity.
 * The work units are (sequence, head, run of query blocks); the threads take them in turn
 * and each packs the K and V^T of the key range its unit needs. A query row's arithmetic
 * depends only on its block (the packed keys start at the block's 16-aligned first key), so
 * the result is the same for any split. */
typedef struct attn_seq {
    const float *q, *k, *v;
    size_t ldq, nq, ldkv, n;
    float *out;
    size_t ldo;
} attn_seq;

typedef struct attn_job {
    sk_scratch *s;
    const attn_seq *seq;
    size_t ns, H, hd, win, chunks;
    float scale;
    size_t n_units;
    size_t next;    /* atomic: next unit */
} attn_job;

static void attn_unit(const attn_job *j, struct attn_ws *ws, const attn_seq *as, size_t h,
                      size_t b0, size_t b1) {
    const size_t hd = j->hd, win = j->win, n = as->n, ldsc = j->s->cap;
    const size_t rbeg = b0 * SK_QB, rend = b1 * SK_QB < as->nq ? b1 * SK_QB : as->nq;
    /* keys of the whole unit: [K0, K1) with K0 16-aligned */
    size_t K0 = 0, K1 = n;
    if (win) {
        K0 = (rbeg > win ? rbeg - win : 0) / SK_PANEL * SK_PANEL;
        K1 = rend - 1 + win + 1 < n ? rend + win : n;
    }
    const size_t NK = K1 - K0;
    sk_pack(as->k + K0 * as->ldkv + h * hd, as->ldkv, NK, hd, ws->kpack);  /* 16 keys x hd */
    /* V as the second product's panels: read in place (row stride ldkv) when hd is whole
     * panels; else copied, panel p holding V[K0 + j][h*hd + 16p + c] at [j][c] */
    const int v_in_place = hd % SK_PANEL == 0;
    const size_t vp = v_in_place ? 0 : (hd + SK_PANEL - 1) / SK_PANEL;
    for (size_t p = 0; p < vp; p++) {
        float *dst = ws->vpack + p * NK * SK_PANEL;
        const size_t c0 = p * SK_PANEL, nc = hd - c0 < SK_PANEL ? hd - c0 : SK_PANEL;
        const float *src = as->v + K0 * as->ldkv + h * hd + c0;
        if (nc == SK_PANEL) {
            for (size_t jj = 0; jj < NK; jj++)
                memcpy(dst + jj * SK_PANEL, src + jj * as->ldkv, SK_PANEL * sizeof(float));
        } else {
            for (size_t jj = 0; jj < NK; jj++) {
                float *dr = dst + jj * SK_PANEL;
                for (size_t c = 0; c < nc; c++) dr[c] = src[jj * as->ldkv + c];
                for (size_t c = nc; c < SK_PANEL; c++) dr[c] = 0.0f;
            }
        }
    }
    for (size_t r0 = rbeg; r0 < rend; r0 += SK_QB) {
        const size_t nr = rend - r0 < SK_QB ? rend - r0 : SK_QB;
        size_t lo = 0, hi = n;
        if (win) {
            lo = r0 > win ? r0 - win : 0;
            hi = r0 + nr - 1 + win + 1 < n ? r0 + nr + win : n;
        }
        const size_t lo16 = lo / SK_PANEL * SK_PANEL, nk = hi - lo16;
        sk_packed kw = {ws->kpack + ((lo16 - K0) / SK_PANEL) * hd * SK_PANEL, NULL, hd, nk,
                        hd * SK_PANEL, SK_PACK_F32, 0};
        sk_gemm(as->q + r0 * as->ldq + h * hd, as->ldq, nr, &kw, ws->sc, ldsc);
        size_t ka[SK_QB], kb[SK_QB];   /* each row's keys, relative to lo16 */
        for (size_t r = 0; r < nr; r++) {
            size_t a = lo, b = hi;
            if (win) {
                const size_t t = r0 + r;
                a = t > win ? t - win : 0;
                b = t + win + 1 < n ? t + win + 1 : n;
            }
            ka[r] = a - lo16;
            kb[r] = b - lo16;
        }
        sk_attn_softmax_rows(ws->sc, ldsc, nr, nk, ka, kb, j->scale);
        /* V in place (its rows as panel rows) when the head is whole panels wide */
        sk_packed vw = v_in_place
                           ? (sk_packed){as->v + lo16 * as->ldkv + h * hd, NULL, nk, hd, SK_PANEL,
                                         SK_PACK_F32, as->ldkv}
                           : (sk_packed){ws->vpack + (lo16 - K0) * SK_PANEL, NULL, nk, hd,
                                         NK * SK_PANEL, SK_PACK_F32, 0};
        sk_gemm(ws->sc, ldsc, nr, &vw, as->out + r0 * as->ldo + h * hd, as->ldo);
    }
}

static void attn_part(void *ctx, int ith, int nth) {
    attn_job *j = ctx;
    struct attn_ws *ws = &j->s->tws[ith];
    for (;;) {
        size_t u = nth > 1 ? __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED) : j->next++;
        if (u >= j->n_units) return;
        const size_t c = u % j->chunks, sh = u / j->chunks, h = sh % j->H, i = sh / j->H;
        const attn_seq *as = &j->seq[i];
        const size_t nb = (as->nq + SK_QB - 1) / SK_QB;
        const size_t b0 = nb * c / j->chunks, b1 = nb * (c + 1) / j->chunks;
        if (b0 < b1) attn_unit(j, ws, as, h, b0, b1);
    }
}

static void attention(sk_scratch *s, const attn_seq *seq, size_t ns, size_t H, size_t hd,
                      size_t win, float scale) {
    const int nt = sk_pool_size(s->pool);
    size_t chunks = 1, maxb = 1, work = 0;
    for (size_t i = 0; i < ns; i++) {
        size_t nb = (seq[i].nq + SK_QB - 1) / SK_QB;
        if (nb > maxb) maxb = nb;
        work += seq[i].nq * (win ? 2 * win + 1 < seq[i].n ? 2 * win + 1 : seq[i].n : seq[i].n);
    }
    work *= H * hd;
    const int par = nt > 1 && (double)work >= 65536.0;
    if (par && ns * H < 4 * (size_t)nt) {
        chunks = (4 * (size_t)nt + ns * H - 1) / (ns * H);
        if (chunks > maxb) chunks = maxb;
    }
    attn_job j = {s, seq, ns, H, hd, win, chunks, scale, ns * H * chunks, 0};
    if (par)
        sk_pool_run(s->pool, attn_part, &j);
    else
        attn_part(&j, 0, 1);
}

/* One encoder layer on the rows of s->h. The layer's last residual step, h += MLP output,
 * is left to the caller (the output stays in s->a), which fuses it into the LayerNorm that
 * comes next; the layer itself first adds `pending` (the previous layer's), the same way. */
static void encoder_layer(const sk_model *m, sk_scratch *s, const sk_enc_layer *L,
                          const seq_rows *sr, size_t ns, size_t N, const float *pending) {
    const size_t d = m->hp.n_embd, D = m->head_dim, H = m->hp.n_head;
    const size_t ld = 3 * d, I = m->hp.n_ff;
    const float *src = s->h;
    if (L->attn_norm) {
        add_ln(s, s->h, pending, N, d, L->attn_norm, NULL, m->hp.eps, s->a);
        src = s->a;
    } else if (pending) {
        add_ln(s, s->h, pending, N, d, NULL, NULL, 0.0f, NULL);
    }
    linear(s, &L->qkv, src, d, N, s->qkv, ld);
    const int b = L->global ? 0 : 1;
    rope_ctx rc = {s->qkv, ld, H, D, s->rope_cos[b], s->rope_sin[b], sr, ns};
    par_rows(s, N, 2 * d, rope_rows, &rc);
    attn_seq *as = s->aseq;
    for (size_t q = 0; q < ns; q++) {
        const float *base = s->qkv + sr[q].off * ld;
        as[q] = (attn_seq){base, base + d, base + 2 * d, ld, sr[q].n, ld, sr[q].n,
                           s->att + sr[q].off * d, d};
    }
    attention(s, as, ns, H, D, L->global ? 0 : m->hp.n_swa / 2, 1.0f / sqrtf((float)D));
    linear(s, &L->out, s->att, d, N, s->a, d);
    add_ln(s, s->h, s->a, N, d, L->ffn_norm, NULL, m->hp.eps, s->a);
    linear(s, &L->up, s->a, d, N, s->ff, 2 * I);
    geglu_ctx gc = {s->ff, I};
    par_rows(s, N, 2 * I, geglu_rows, &gc);
    linear(s, &L->down, s->ff, 2 * I, N, s->a, d);
}

/* A decision block over all rows (every row's output is needed by the next block). */
static void head_layer_full(const sk_model *m, sk_scratch *s, const sk_head_layer *Hl,
                            const seq_rows *sr, size_t ns, size_t N) {
    const size_t d = m->hp.n_embd, H = m->hp.n_head_dec, hd = m->head_dim_dec, ld = 3 * d;
    const size_t F = m->hp.n_ff_head;
    add_ln(s, s->h, NULL, N, d, Hl->norm1_w, Hl->norm1_b, SK_HEAD_EPS, s->a);
    linear(s, &Hl->q, s->a, d, N, s->qkv, ld);
    linear(s, &Hl->kv, s->a, d, N, s->qkv + d, ld);
    attn_seq *as = s->aseq;
    for (size_t q = 0; q < ns; q++) {
        const float *base = s->qkv + sr[q].off * ld;
        as[q] = (attn_seq){base, base + d, base + 2 * d, ld, sr[q].n, ld, sr[q].n,
                           s->att + sr[q].off * d, d};
    }
    attention(s, as, ns, H, hd, 0, 1.0f / sqrtf((float)hd));
    linear(s, &Hl->out, s->att, d, N, s->a, d);
    add_ln(s, s->h, s->a, N, d, Hl->norm2_w, Hl->norm2_b, SK_HEAD_EPS, s->a);
    linear(s, &Hl->up, s->a, d, N, s->ff, F);
    geglu_ctx rc = {s->ff, F};
    par_rows(s, N, F, relu_rows, &rc);
    linear(s, &Hl->down, s->ff, F, N, s->a, d);
    add_ln(s, s->h, s->a, N, d, NULL, NULL, 0.0f, NULL);
}

/* The last decision block evaluated only at the K marker rows (global row indices in
 * rows[]); the result goes to s->mh. */
static void head_layer_markers(const sk_model *m, sk_scratch *s, const sk_head_layer *Hl,
                               const seq_rows *sr, size_t ns, size_t N, const size_t *rows,
                               size_t K) {
    const size_t d = m->hp.n_embd, H = m->hp.n_head_dec, hd = m->head_dim_dec;
    const size_t F = m->hp.n_ff_head;
    add_ln(s, s->h, NULL, N, d, Hl->norm1_w, Hl->norm1_b, SK_HEAD_EPS, s->a);
    for (size_t r = 0; r < K; r++) memcpy(s->ma + r * d, s->a + rows[r] * d, d * sizeof(float));
    linear(s, &Hl->q, s->ma, d, K, s->mq, d);
    attn_seq *as = s->aseq;
    if (Hl->kt && !s->unfolded) {
        /* Folded: with A the block's normalized input rows, head h's keys are A Wk_h^T + bk_h
         * and its values A Wv_h^T + bv_h. So q.k_j = (q Wk_h).a_j + q.bk_h, where the last
         * term is the same for every key and cancels in the softmax, and sum_j p_j v_j =
         * (sum_j p_j a_j) Wv_h^T + bv_h, the p_j summing to 1. Attending over A itself with
         * u = q Wk_h costs O(K d^2 + K H n d) instead of projecting all n rows, O(n d^2). */
        const size_t elem = sk_pack_elem_size(Hl->kv.p.wtype);
        for (size_t h = 0; h < H; h++) {
            const sk_packed kt = {Hl->kt + h * Hl->kt_floats, NULL, hd, d, hd * SK_PANEL,
                                  SK_PACK_F32, 0};
            sk_gemm(s->mq + h * hd, d, K, &kt, s->mu + h * d, H * d);
        }
        for (size_t q = 0; q < ns; q++) {
            const float *a = s->a + sr[q].off * d;
            as[q] = (attn_seq){s->mu + sr[q].koff * H * d, a, a, d, sr[q].k * H, d, sr[q].n,
                               s->mz + sr[q].koff * H * d, d};
        }
        attention(s, as, ns, 1, d, 0, 1.0f / sqrtf((float)hd));
        for (size_t h = 0; h < H; h++) {
            const size_t panel = (d + h * hd) / SK_PANEL;
            const sk_packed wv = {(const char *)Hl->kv.p.data + panel * Hl->kv.p.pstride * elem,
                                  Hl->kv.p.bias ? Hl->kv.p.bias + d + h * hd : NULL, d, hd,
                                  Hl->kv.p.pstride, Hl->kv.p.wtype, 0};
            sk_gemm(s->mz + h * d, H * d, K, &wv, s->matt + h * hd, d);
        }
    } else {
        linear(s, &Hl->kv, s->a, d, N, s->qkv, 2 * d);  /* keys and values for every row */
        for (size_t q = 0; q < ns; q++) {
            const float *kv = s->qkv + sr[q].off * 2 * d;
            as[q] = (attn_seq){s->mq + sr[q].koff * d, kv, kv + d, d, sr[q].k, 2 * d, sr[q].n,
                               s->matt + sr[q].koff * d, d};
        }
        attention(s, as, ns, H, hd, 0, 1.0f / sqrtf((float)hd));
    }
    linear(s, &Hl->out, s->matt, d, K, s->ma, d);
    for (size_t r = 0; r < K; r++) {
        const float *hr = s->h + rows[r] * d;
        for (size_t i = 0; i < d; i++) s->mh[r * d + i] = hr[i] + s->ma[r * d + i];
    }
    sk_layernorm(s->mh, K, d, Hl->norm2_w, Hl->norm2_b, SK_HEAD_EPS, s->ma);
    linear(s, &Hl->up, s->ma, d, K, s->mff, F);
    for (size_t i = 0; i < K * F; i++) s->mff[i] = s->mff[i] > 0.0f ? s->mff[i] : 0.0f;
    linear(s, &Hl->down, s->mff, F, K, s->ma, d);
    for (size_t i = 0; i < K * d; i++) s->mh[i] += s->ma[i];
}

static int check_seq(const sk_model *m, const sk_seq *q, size_t qi, sk_err *e) {
    if (!q->ids || (q->n_markers && (!q->markers || !q->logits)))
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sequence %zu: NULL argument", qi);
    if (q->n == 0)
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sequence %zu: empty token sequence", qi);
    if (q->qtype < 0 || q->qtype > 2)
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sequence %zu: question type %d is not 0, "
                       "1 or 2", qi, q->qtype);
    for (size_t t = 0; t < q->n; t++)
        if (q->ids[t] < 0 || (uint32_t)q->ids[t] >= m->hp.n_vocab)
            return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sequence %zu: token id %d at position "
                           "%zu is outside the vocabulary (%u)", qi, (int)q->ids[t], t,
                           m->hp.n_vocab);
    for (size_t r = 0; r < q->n_markers; r++)
        if (q->markers[r] < 0 || (size_t)q->markers[r] >= q->n)
            return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sequence %zu: marker %zu at position "
                           "%d is outside the %zu-token sequence", qi, r, (int)q->markers[r],
                           q->n);
    return SKYCMD_OK;
}

/* Replace two parallel arrays (*a of sa-byte and *b of sb-byte elements) by ones of at
 * least `need` elements, all or nothing: on failure both keep their old buffers. The
 * contents are scratch and are not carried over. */
static int grow_pair(void **a, size_t sa, void **b, size_t sb, size_t *cap, size_t need,
                     size_t min_cap) {
    if (need <= *cap) return 0;
    size_t n = need < min_cap ? min_cap : need;
    void *na = sk_malloc_array(n, sa), *nb = sk_malloc_array(n, sb);
    if (!na || !nb) {
        free(na);
        free(nb);
        return -1;
    }
    free(*a);
    free(*b);
    *a = na;
    *b = nb;
    *cap = n;
    return 0;
}

static int scratch_reserve_seqs(sk_scratch *s, size_t ns, size_t K, sk_err *e) {
    void *seqs = s->seqs, *aseq = s->aseq, *mrows = s->mrows, *mlogits = s->mlogits;
    int bad_seqs = grow_pair(&seqs, sizeof *s->seqs, &aseq, sizeof *s->aseq, &s->cap_seqs, ns, 8);
    s->seqs = seqs;
    s->aseq = aseq;
    if (bad_seqs) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for %zu sequences", ns);
    int bad_rows = grow_pair(&mrows, sizeof *s->mrows, &mlogits, sizeof *s->mlogits,
                             &s->cap_rows, K, 16);
    s->mrows = mrows;
    s->mlogits = mlogits;
    if (bad_rows) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for %zu markers", K);
    return SKYCMD_OK;
}

static int forward_batch(const sk_model *m, sk_scratch *s, const sk_seq *seqs, size_t n_seqs,
                         sk_err *e) {
    if (!m || !s || (n_seqs && !seqs))
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "sk_model_forward: NULL argument");
    if (s->d != m->hp.n_embd || s->D != m->head_dim)
        return sk_fail(e, SKYCMD_E_MISUSE, "sk_model_forward: scratch made for another model");
    size_t N = 0, K = 0, ns = 0;
    for (size_t i = 0; i < n_seqs; i++) {
        int rc = check_seq(m, &seqs[i], i, e);
        if (rc) return rc;
        if (seqs[i].n_markers == 0) continue;  /* nothing reads it */
        if (sk_add_size(N, seqs[i].n, &N) || sk_add_size(K, seqs[i].n_markers, &K))
            return sk_fail(e, SKYCMD_E_TOO_LARGE, "batch too large");
        ns++;
    }
    int rc = scratch_reserve(m, s, N ? N : 1, e);
    if (!rc) rc = scratch_reserve_markers(s, K ? K : 1, e);
    if (!rc) rc = scratch_reserve_seqs(s, ns ? ns : 1, K ? K : 1, e);
    if (rc) return rc;
    if (ns == 0) return SKYCMD_OK;
    const size_t d = m->hp.n_embd;
    seq_rows *sr = s->seqs;
    size_t *rows = s->mrows;
    {
        size_t off = 0, koff = 0, q = 0;
        for (size_t i = 0; i < n_seqs; i++) {
            const sk_seq *sq = &seqs[i];
            if (sq->n_markers == 0) continue;
            sr[q] = (seq_rows){off, sq->n, koff, sq->n_markers};
            for (size_t r = 0; r < sq->n_markers; r++) rows[koff + r] = off + (size_t)sq->markers[r];
            for (size_t t = 0; t < sq->n; t++) {
                float *row = s->h + (off + t) * d;
                const uint8_t *src = m->tok_embd->data + (size_t)sq->ids[t] * m->tok_row_bytes;
                if (m->tok_embd->type == SK_GGML_F16)
                    sk_widen16(SK_PACK_F16, src, row, d);
                else if (m->tok_embd->type == SK_GGML_BF16)
                    sk_widen16(SK_PACK_BF16, src, row, d);
                else
                    sk_ggml_to_f32(m->tok_embd->type, src, row, d);
            }
            off += sq->n;
            koff += sq->n_markers;
            q++;
        }
    }
    if (!sk_all_finite(s->h, N * d)) { /* a damaged file: name the token */
        for (size_t i = 0, q = 0; i < n_seqs; i++) {
            if (seqs[i].n_markers == 0) continue;
            for (size_t t = 0; t < sr[q].n; t++)
                if (!sk_all_finite(s->h + (sr[q].off + t) * d, d))
                    return sk_fail(e, SKYCMD_E_FORMAT, "tensor token_embd.weight: row %d "
                                   "has a non-finite value", (int)seqs[i].ids[t]);
            q++;
        }
    }
    add_ln(s, s->h, NULL, N, d, m->embd_norm, NULL, m->hp.eps, s->h);
    for (uint32_t l = 0; l < m->hp.n_layer; l++)
        encoder_layer(m, s, &m->enc[l], sr, ns, N, l ? s->a : NULL);
    {
        /* the final norm, then + the question type's embedding: the norm's bias */
        const float *pending = m->hp.n_layer ? s->a : NULL;
        size_t q = 0;
        for (size_t i = 0; i < n_seqs; i++) {
            if (seqs[i].n_markers == 0) continue;
            const size_t o = sr[q].off * d;
            add_ln(s, s->h + o, pending ? pending + o : NULL, sr[q].n, d, m->out_norm,
                   m->type_emb + (size_t)seqs[i].qtype * d, m->hp.eps, s->h + o);
            q++;
        }
    }
    const uint32_t L = m->hp.n_head_layers;
    for (uint32_t j = 0; j + 1 < L; j++) head_layer_full(m, s, &m->head[j], sr, ns, N);
    if (L > 0) {
        head_layer_markers(m, s, &m->head[L - 1], sr, ns, N, rows, K);
    } else {
        for (size_t r = 0; r < K; r++) memcpy(s->mh + r * d, s->h + rows[r] * d, d * sizeof(float));
    }
    /* scorer: LN -> Linear -> GELU -> Linear(d, 1) */
    sk_layernorm(s->mh, K, d, m->cls_norm_w, m->cls_norm_b, SK_HEAD_EPS, s->ma);
    linear(s, &m->cls, s->ma, d, K, s->mff, d);
    sk_gelu(s->mff, K * d);
    linear(s, &m->cls_out, s->mff, d, K, s->mlogits, 1);
    if (s->q8_oom) {
        s->q8_oom = 0;
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory for the int8 activations");
    }
    for (size_t r = 0; r < K; r++)
        if (!isfinite(s->mlogits[r]))
            return sk_fail(e, SKYCMD_E_INTERNAL, "the model produced a non-finite score");
    {
        size_t koff = 0;
        for (size_t i = 0; i < n_seqs; i++) {
            if (seqs[i].n_markers == 0) continue;
            memcpy(seqs[i].logits, s->mlogits + koff, seqs[i].n_markers * sizeof(float));
            koff += seqs[i].n_markers;
        }
    }
    return SKYCMD_OK;
}

int sk_model_forward_batch(const sk_model *m, sk_scratch *s, const sk_seq *seqs, size_t n_seqs,
                           sk_err *e) {
    /* this thread holds one unit of the process's compute budget for the whole pass, so
     * pools of other sessions do not borrow its core (src/kernels/pool.h) */
    sk_compute_begin();
    int rc = forward_batch(m, s, seqs, n_seqs, e);
    sk_compute_end();
    return rc;
}

int sk_model_forward(const sk_model *m, sk_scratch *s, const int32_t *ids, size_t n, int qtype,
                     const int32_t *markers, size_t n_markers, float *logits, sk_err *e) {
    sk_seq q = {ids, n, qtype, markers, n_markers, logits};
    int rc = sk_model_forward_batch(m, s, &q, 1, e);
    if (rc && e && strncmp(e->msg, "sequence 0: ", 12) == 0)
        memmove(e->msg, e->msg + 12, strlen(e->msg + 12) + 1);
    return rc;
}

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

static int model_to_int8(sk_model *m, const sk_gguf *g, int weights_mode, skycmd_log_fn log,
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
