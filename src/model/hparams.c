/*
 * hparams.c - the hyper-parameters of a System One GGUF (modern-bert.* keys).
 *
 * Contract: sk_read_hparams() fills an sk_hparams from the reader's metadata, applying the
 * documented defaults of optional keys (docs/format.md §3), and refuses, naming the key, every
 * value the forward pass cannot answer exactly: out-of-range sizes, per-layer sizes that
 * differ, head sizes that do not split, non-positive or non-finite floats. It reads no
 * tensor (the vocabulary size comes from token_embd.weight, in load.c).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"

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

/* inv_freq exactly as transformers computes it in float32:
 * 1 / (base ** (arange(0, D, 2).float() / D)). */
void sk_rope_inv_freq(float base, uint32_t D, float *out) {
    for (uint32_t i = 0; i < D / 2; i++) {
        float ex = (float)(2 * i) / (float)D;
        float p = (float)pow((double)base, (double)ex);
        out[i] = 1.0f / p;
    }
}

/* A string key that, when present, must have one of the values the forward pass computes. */
static int require_str(const sk_gguf *g, const char *key, const char *want, const char *why,
                       sk_err *e) {
    if (sk_gguf_find_key(g, key) < 0) return SKYCMD_OK;
    sk_str v;
    if (sk_gguf_get_str(g, key, &v) != SKYCMD_OK)
        return sk_fail(e, SKYCMD_E_FORMAT, "metadata key %s is not a string", key);
    if (!sk_str_eq(v, want))
        return sk_fail(e, SKYCMD_E_UNSUPPORTED, "metadata key %s is \"%.*s\"; %s", key,
                       (int)(v.len > 40 ? 40 : v.len), v.ptr, why);
    return SKYCMD_OK;
}

/* Settings a GGUF can state that this forward pass does not implement: refused at load with
 * the key named, never answered as if they were absent. */
static int refuse_unimplemented(const sk_gguf *g, const char *a, sk_err *e) {
    char key[160];
    int rc;
    snprintf(key, sizeof key, "%s.hidden_activation", a);
    if ((rc = require_str(g, key, "gelu", "only \"gelu\" (the erf GELU) is implemented", e)))
        return rc;
    snprintf(key, sizeof key, "%s.rope.scaling.type", a);
    if ((rc = require_str(g, key, "none", "RoPE scaling is not implemented", e))) return rc;
    snprintf(key, sizeof key, "%s.attention.causal", a);
    if (sk_gguf_find_key(g, key) >= 0) {
        int causal = 0;
        if (sk_gguf_get_bool(g, key, &causal) != SKYCMD_OK)
            return sk_fail(e, SKYCMD_E_FORMAT, "metadata key %s is not a bool", key);
        if (causal)
            return sk_fail(e, SKYCMD_E_UNSUPPORTED, "metadata key %s is true; the encoder of a "
                           "decision model attends in both directions", key);
    }
    return SKYCMD_OK;
}

int sk_read_hparams(const sk_gguf *g, sk_hparams *hp, sk_err *e) {
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
    if (!(hp->eps >= FLT_MIN && hp->eps < 1.0f))
        return sk_fail(e, SKYCMD_E_UNSUPPORTED, "%s.attention.layer_norm_epsilon = %g is outside "
                       "[%g, 1)", a, (double)hp->eps, (double)FLT_MIN);
    if ((rc = refuse_unimplemented(g, a, e))) return rc;
    {
        /* our key (llama.cpp does not read it): how the options sit in the sequence */
        char key[160];
        snprintf(key, sizeof key, "%s.decision.option_layout", a);
        sk_str v;
        hp->option_layout = SK_LAYOUT_SEQUENTIAL;
        if (sk_gguf_find_key(g, key) >= 0) {
            if (sk_gguf_get_str(g, key, &v) != SKYCMD_OK)
                return sk_fail(e, SKYCMD_E_FORMAT, "metadata key %s is not a string", key);
            if (sk_str_eq(v, "parallel")) hp->option_layout = SK_LAYOUT_PARALLEL;
            else if (!sk_str_eq(v, "sequential"))
                return sk_fail(e, SKYCMD_E_UNSUPPORTED, "metadata key %s is \"%.*s\"; only "
                               "\"sequential\" and \"parallel\" are implemented", key,
                               (int)(v.len > 40 ? 40 : v.len), v.ptr);
        }
    }
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

