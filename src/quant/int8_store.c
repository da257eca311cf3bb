/* int8_store.c - a calibrated int8 model stored in a GGUF file; the contract is in
 * int8_store.h. */
#include "int8_store.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../numeric/numeric.h"

static int key_name(char *buf, size_t cap, const char *tensor, const char *field) {
    const int n = snprintf(buf, cap, SK_INT8_STORE_PREFIX "%s.%s", tensor, field);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

static uint32_t rd_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int sk_int8_store_is_key(sk_str key) {
    const size_t n = sizeof SK_INT8_STORE_PREFIX - 1;
    return key.len >= n && memcmp(key.ptr, SK_INT8_STORE_PREFIX, n) == 0;
}

int sk_int8_store_version(const sk_gguf *g, sk_err *e) {
    if (sk_gguf_find_key(g, SK_INT8_STORE_VERSION_KEY) < 0) return 0;
    uint32_t v;
    if (sk_gguf_get_u32(g, SK_INT8_STORE_VERSION_KEY, &v) != SKYCMD_OK) {
        sk_fail(e, SKYCMD_E_FORMAT, SK_INT8_STORE_VERSION_KEY " is not an unsigned integer");
        return -1;
    }
    if (v != SK_INT8_STORE_VERSION) {
        sk_fail(e, SKYCMD_E_UNSUPPORTED, SK_INT8_STORE_VERSION_KEY " is %u: a stored int8 model "
                "of a later version than this library reads (%u)", v, SK_INT8_STORE_VERSION);
        return -1;
    }
    return (int)v;
}

int sk_int8_store_row_scaled(const sk_gguf *g, sk_err *e) {
    if (sk_gguf_find_key(g, SK_INT8_STORE_ROWS_KEY) < 0) return 0;
    int v = 0;
    if (sk_gguf_get_bool(g, SK_INT8_STORE_ROWS_KEY, &v) != SKYCMD_OK) {
        sk_fail(e, SKYCMD_E_FORMAT, SK_INT8_STORE_ROWS_KEY " is not a bool");
        return -1;
    }
    return v != 0;
}

void sk_int8_store_part_name(char *buf, size_t cap, sk_str tensor, size_t row0) {
    snprintf(buf, cap, "%.*s@%zu", (int)(tensor.len < 200 ? tensor.len : 200), tensor.ptr, row0);
}

int sk_int8_store_put(sk_gguf_writer *w, const char *tensor, size_t n_out, const uint32_t *outl,
                      size_t n_outl, const float *w_outl, int two_pass, sk_err *e) {
    char key[320];
    int rc = SKYCMD_OK;
    if (n_outl) {
        if (key_name(key, sizeof key, tensor, "outlier_columns"))
            return sk_fail(e, SKYCMD_E_UNSUPPORTED, "tensor %s: name too long for its int8 keys", tensor);
        rc = sk_gguf_writer_add_arr(w, key, SK_GGUF_U32, outl, n_outl);
        if (!rc && w_outl && key_name(key, sizeof key, tensor, "outlier_weights") == 0)
            rc = sk_gguf_writer_add_arr(w, key, SK_GGUF_F32, w_outl, (uint64_t)n_out * n_outl);
    }
    if (!rc && two_pass) {
        if (key_name(key, sizeof key, tensor, "two_pass"))
            return sk_fail(e, SKYCMD_E_UNSUPPORTED, "tensor %s: name too long for its int8 keys", tensor);
        rc = sk_gguf_writer_add_bool(w, key, 1);
    }
    if (rc) return sk_fail(e, rc, "cannot write the int8 keys of tensor %s", tensor);
    return SKYCMD_OK;
}

/* A present array key of elem_type and count elements: SKYCMD_OK with *first, or
 * SKYCMD_E_FORMAT (named in e). */
static int get_array(const sk_gguf *g, const char *key, uint32_t elem_type, uint64_t count,
                     const uint8_t **first, sk_err *e) {
    const sk_gguf_value *v;
    /* the caller has found the key: any failure here is the key's type */
    if (sk_gguf_get_arr(g, key, &v) != SKYCMD_OK || v->v.arr.elem_type != elem_type)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: not an array of %s", key,
                       sk_gguf_value_type_name(elem_type));
    if (v->v.arr.count != count)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: %llu elements, the matrix needs %llu", key,
                       (unsigned long long)v->v.arr.count, (unsigned long long)count);
    *first = v->v.arr.first;
    return SKYCMD_OK;
}

int sk_int8_store_get(const sk_gguf *g, const char *tensor, size_t n_out, size_t n_in,
                      uint32_t **outl, size_t *n_outl, float **w_outl, int *two_pass, sk_err *e) {
    *outl = NULL;
    if (w_outl) *w_outl = NULL;
    *n_outl = 0;
    *two_pass = 0;
    char kc[320], kw[320], kt[320];
    if (key_name(kc, sizeof kc, tensor, "outlier_columns") ||
        key_name(kw, sizeof kw, tensor, "outlier_weights") || key_name(kt, sizeof kt, tensor, "two_pass"))
        return sk_fail(e, SKYCMD_E_UNSUPPORTED, "tensor %s: name too long for its int8 keys", tensor);
    if (sk_gguf_find_key(g, kt) >= 0 && sk_gguf_get_bool(g, kt, two_pass) != SKYCMD_OK)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: not a bool", kt);
    /* a part's weights are its tensor's own: its weights key, if any, is not read */
    const int has_cols = sk_gguf_find_key(g, kc) >= 0;
    const int has_w = w_outl && sk_gguf_find_key(g, kw) >= 0;
    if (!has_cols && !has_w) return SKYCMD_OK;
    if (w_outl && (!has_cols || !has_w))
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: present without %s", has_cols ? kc : kw,
                       has_cols ? kw : kc);
    const sk_gguf_value *v;
    if (sk_gguf_get_arr(g, kc, &v) != SKYCMD_OK || v->v.arr.elem_type != SK_GGUF_U32)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: not an array of u32", kc);
    const uint64_t no = v->v.arr.count;
    if (no == 0 || no > n_in / 16)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: %llu columns (1 to %zu for %zu inputs)", kc,
                       (unsigned long long)no, n_in / 16, n_in);
    const uint8_t *cols = v->v.arr.first, *ws = NULL;
    if (w_outl) {
        const int rc = get_array(g, kw, SK_GGUF_F32, (uint64_t)n_out * no, &ws, e);
        if (rc) return rc;
    }
    uint32_t *o = sk_malloc_array((size_t)no, sizeof(uint32_t));
    float *w = w_outl ? sk_malloc_array(n_out * (size_t)no, sizeof(float)) : NULL;
    if (!o || (w_outl && !w)) {
        free(o);
        free(w);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory reading the int8 keys of %s", tensor);
    }
    int rc = SKYCMD_OK;
    for (size_t c = 0; c < no && !rc; c++) {
        o[c] = rd_u32(cols + 4 * c);
        if (o[c] >= n_in || (c > 0 && o[c] <= o[c - 1]))
            rc = sk_fail(e, SKYCMD_E_FORMAT, "%s: element %zu (%u) is not an input channel "
                         "above the one before it (the matrix has %zu inputs)", kc, c, o[c], n_in);
    }
    for (size_t i = 0; w && i < n_out * no && !rc; i++) {
        const uint32_t bits = rd_u32(ws + 4 * i);
        memcpy(&w[i], &bits, sizeof bits);
        if (!isfinite(w[i]))
            rc = sk_fail(e, SKYCMD_E_FORMAT, "%s: element %zu is not finite", kw, i);
    }
    if (rc) {
        free(o);
        free(w);
        return rc;
    }
    *outl = o;
    if (w_outl) *w_outl = w;
    *n_outl = (size_t)no;
    return SKYCMD_OK;
}

void sk_int8_store_fill_outliers(uint8_t *rowmajor, size_t n_out, size_t n_in, const uint32_t *outl,
                                 size_t n_outl, const float *w_outl) {
    const size_t row_bytes = n_in / SK_QK8_0 * SK_Q8_0_BLOCK_BYTES;
    for (size_t o = 0; o < n_out; o++)
        for (size_t c = 0; c < n_outl; c++) {
            uint8_t *blk = rowmajor + o * row_bytes + outl[c] / SK_QK8_0 * SK_Q8_0_BLOCK_BYTES;
            const float d = sk_f16_to_f32((uint16_t)(blk[0] | blk[1] << 8));
            float q = d > 0.0f && isfinite(d) ? roundf(w_outl[o * n_outl + c] / d) : 0.0f;
            q = q > 127.0f ? 127.0f : q < -127.0f ? -127.0f : q;
            blk[2 + outl[c] % SK_QK8_0] = (uint8_t)(int8_t)q;
        }
}
