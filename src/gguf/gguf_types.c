/*
 * gguf_types.c - ggml element types: sizes and names of F32, F16, BF16 and Q8_0, and their
 * conversions to and from f32.
 *
 * Contract: f16 and bf16 convert as src/numeric/numeric.h says (round to nearest even).
 * Q8_0 produces exactly the bytes of ggml's quantize_row_q8_0_ref: per block of 32,
 * d = amax / 127 (f32), stored as f16, id = 1/d (0 when d = 0), q = roundf(x * id), ties
 * away from zero. Non-finite inputs, which the reference leaves to undefined casts, give
 * q = 0 here rather than undefined behaviour.
 */
#include <math.h>
#include <string.h>

#include "gguf.h"

const char *sk_ggml_type_name(uint32_t type) {
    switch (type) {
    case SK_GGML_F32: return "F32";
    case SK_GGML_F16: return "F16";
    case SK_GGML_Q8_0: return "Q8_0";
    case SK_GGML_BF16: return "BF16";
    default: return NULL;
    }
}

int sk_ggml_type_known(uint32_t type) { return sk_ggml_type_name(type) != NULL; }

uint64_t sk_ggml_block_size(uint32_t type) { return type == SK_GGML_Q8_0 ? SK_QK8_0 : 1; }

uint64_t sk_ggml_row_size(uint32_t type, uint64_t n) {
    uint64_t out;
    switch (type) {
    case SK_GGML_F32: return sk_mul_u64(n, 4, &out) ? 0 : out;
    case SK_GGML_F16:
    case SK_GGML_BF16: return sk_mul_u64(n, 2, &out) ? 0 : out;
    case SK_GGML_Q8_0:
        if (n % SK_QK8_0) return 0;
        return sk_mul_u64(n / SK_QK8_0, SK_Q8_0_BLOCK_BYTES, &out) ? 0 : out;
    default: return 0;
    }
}

/* f16 and bf16 to and from f32: src/numeric/numeric.h. */

void sk_quantize_q8_0(const float *x, uint8_t *out, size_t n) {
    size_t nb = n / SK_QK8_0;
    for (size_t b = 0; b < nb; b++) {
        const float *xb = x + b * SK_QK8_0;
        uint8_t *ob = out + b * SK_Q8_0_BLOCK_BYTES;
        float amax = 0.0f;
        for (int j = 0; j < SK_QK8_0; j++) {
            float a = fabsf(xb[j]);
            if (a > amax) amax = a;
        }
        float d = amax / 127.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        uint16_t dh = sk_f32_to_f16(d);
        ob[0] = (uint8_t)(dh & 0xff);
        ob[1] = (uint8_t)(dh >> 8);
        for (int j = 0; j < SK_QK8_0; j++) {
            float v = roundf(xb[j] * id);
            int q;
            if (!(v == v)) q = 0;
            else if (v > 127.0f) q = 127;
            else if (v < -128.0f) q = -128;
            else q = (int)v;
            ob[2 + j] = (uint8_t)(int8_t)q;
        }
    }
}

void sk_dequantize_q8_0(const uint8_t *in, float *y, size_t n) {
    size_t nb = n / SK_QK8_0;
    for (size_t b = 0; b < nb; b++) {
        const uint8_t *ib = in + b * SK_Q8_0_BLOCK_BYTES;
        float d = sk_f16_to_f32((uint16_t)(ib[0] | (ib[1] << 8)));
        for (int j = 0; j < SK_QK8_0; j++) y[b * SK_QK8_0 + j] = d * (float)(int8_t)ib[2 + j];
    }
}

int sk_ggml_to_f32(uint32_t type, const void *src, float *dst, size_t n) {
    const uint8_t *s = src;
    switch (type) {
    case SK_GGML_F32: memcpy(dst, src, n * 4); return SKYCMD_OK;
    case SK_GGML_F16:
        for (size_t i = 0; i < n; i++) dst[i] = sk_f16_to_f32((uint16_t)(s[2 * i] | (s[2 * i + 1] << 8)));
        return SKYCMD_OK;
    case SK_GGML_BF16:
        for (size_t i = 0; i < n; i++) dst[i] = sk_bf16_to_f32((uint16_t)(s[2 * i] | (s[2 * i + 1] << 8)));
        return SKYCMD_OK;
    case SK_GGML_Q8_0:
        if (n % SK_QK8_0) return SKYCMD_E_INVALID_ARGUMENT;
        sk_dequantize_q8_0(s, dst, n);
        return SKYCMD_OK;
    default: return SKYCMD_E_UNSUPPORTED;
    }
}

int sk_ggml_from_f32(uint32_t type, const float *src, void *dst, size_t n) {
    uint8_t *d = dst;
    switch (type) {
    case SK_GGML_F32: memcpy(dst, src, n * 4); return SKYCMD_OK;
    case SK_GGML_F16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h = sk_f32_to_f16(src[i]);
            d[2 * i] = (uint8_t)(h & 0xff);
            d[2 * i + 1] = (uint8_t)(h >> 8);
        }
        return SKYCMD_OK;
    case SK_GGML_BF16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h = sk_f32_to_bf16(src[i]);
            d[2 * i] = (uint8_t)(h & 0xff);
            d[2 * i + 1] = (uint8_t)(h >> 8);
        }
        return SKYCMD_OK;
    case SK_GGML_Q8_0:
        if (n % SK_QK8_0) return SKYCMD_E_INVALID_ARGUMENT;
        sk_quantize_q8_0(src, d, n);
        return SKYCMD_OK;
    default: return SKYCMD_E_UNSUPPORTED;
    }
}
