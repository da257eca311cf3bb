/*
 * numeric.h - number formats shared by the file formats and the kernels, below both: IEEE
 * half (f16) and bfloat16 (bf16) to and from f32, and the shape of a Q8_0 block (ggml's:
 * 32 weights, one f16 scale d then 32 int8 quants, 34 bytes). The kernels read these
 * without knowing about GGUF; src/gguf includes this header for its element types.
 *
 * Contract: f16 and bf16 round to nearest, ties to even, exactly as numpy's astype(float16)
 * and gguf.quants' BF16 (NaN stays NaN: f16 keeps the top payload bits and never becomes
 * infinity; bf16 sets the quiet bit like gguf.quants does). Widening is exact. The
 * functions are inline: they are the inner step of weight widening loops.
 */
#ifndef SK_NUMERIC_H
#define SK_NUMERIC_H

#include <stdint.h>
#include <string.h>

/* Q8_0: SK_QK8_0 weights per block, SK_Q8_0_BLOCK_BYTES bytes (f16 d + 32 x int8). */
#define SK_QK8_0 32
#define SK_Q8_0_BLOCK_BYTES 34

static inline uint32_t sk_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float sk_f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* f32 -> f16, round to nearest even. */
static inline uint16_t sk_f32_to_f16(float f) {
    uint32_t x = sk_f32_bits(f);
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
    float t = sk_f32_from_bits(ax) + 0.5f;
    return (uint16_t)(sign | (uint16_t)(sk_f32_bits(t) - 0x3f000000u));
}

/* f16 -> f32, exact. */
static inline float sk_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) return sk_f32_from_bits(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* subnormal: man * 2^-24, exact in f32 */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return sk_f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

/* f32 -> bf16, round to nearest even; NaN stays NaN. */
static inline uint16_t sk_f32_to_bf16(float f) {
    uint32_t x = sk_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* bf16 -> f32, exact. */
static inline float sk_bf16_to_f32(uint16_t h) { return sk_f32_from_bits((uint32_t)h << 16); }

#endif /* SK_NUMERIC_H */
