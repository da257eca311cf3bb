/*
 * gguf_types.c - ggml element types: sizes and names of F32, F16, BF16 and Q8_0, and their
 * conversions to and from f32.
 *
 * Contract: f16 and bf16 round to nearest, ties to even, exactly as numpy's astype(float16)
 * and gguf.quants' BF16 (NaN stays NaN: bf16 sets the quiet bit like gguf.quants does).
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

static uint32_t f2u(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float u2f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t sk_f32_to_f16(float f) {
    uint32_t x = f2u(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) {
        /* NaN: keep the top payload bits; never let it collapse to infinity. */
        uint16_t m = (uint16_t)(ax >> 13) & 0x3ffu;
        return (uint16_t)(sign | 0x7c00u | (m ? m : 0x200u));
    }
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to inf */
    if (ax >= 0x38800000u) {
        /* Normal half: rebias the exponent (127 -> 15) and round the 13 dropped bits to
         * nearest even in one add. */
        uint32_t odd = (ax >> 13) & 1u;
        ax += 0xc8000fffu + odd;
        return (uint16_t)(sign | (ax >> 13));
    }
    /* Subnormal half or zero: adding 0.5 lines the half's subnormal bits up with the f32
     * mantissa, and the FPU's own round-to-nearest-even does the rounding. */
    float t = u2f(ax) + 0.5f;
    return (uint16_t)(sign | (uint16_t)(f2u(t) - 0x3f000000u));
}

float sk_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) return u2f(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* subnormal: man * 2^-24, exact in f32 */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return u2f(sign | ((exp + 112u) << 23) | (man << 13));
}

uint16_t sk_f32_to_bf16(float f) {
    uint32_t x = f2u(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

float sk_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

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
