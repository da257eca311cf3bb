/*
 * test_types.c - element-type conversions against independent references:
 *  - all 65,536 f16 bit patterns survive f16 -> f32 -> f16 unchanged (NaN payloads too);
 *  - f32 -> f16 and f32 -> bf16 equal gguf.quants (numpy, round-to-nearest-even) byte for
 *    byte on fixed random arrays plus crafted halfway/overflow/subnormal/inf/NaN cases;
 *  - Q8_0 bytes equal gguf.quants' bit-exact port of ggml's quantize_row_q8_0_ref, and our
 *    dequantization equals gguf.quants.dequantize;
 *  - row sizes and type names.
 */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "test_util.h"

#define FIX SKYCMD_FIXTURES "/gguf/"

static uint32_t fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

Test(types, f16_all_patterns_round_trip) {
    int nan_count = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = sk_f16_to_f32((uint16_t)h);
        uint16_t back = sk_f32_to_f16(f);
        cr_assert_eq(back, h, "f16 0x%04x -> %a -> 0x%04x", h, (double)f, back);
        if (isnan(f)) nan_count++;
    }
    cr_assert_eq(nan_count, 2 * 1023);
    /* spot values */
    cr_assert_eq(fbits(sk_f16_to_f32(0x3c00)), fbits(1.0f));
    cr_assert_eq(fbits(sk_f16_to_f32(0x7bff)), fbits(65504.0f));
    cr_assert_eq(fbits(sk_f16_to_f32(0x0001)), fbits(5.9604644775390625e-8f));
    cr_assert_eq(fbits(sk_f16_to_f32(0x8000)), fbits(-0.0f));
    cr_assert(isinf(sk_f16_to_f32(0xfc00)) && sk_f16_to_f32(0xfc00) < 0);
}

Test(types, bf16_all_patterns_round_trip) {
    for (uint32_t h = 0; h < 65536; h++) {
        float f = sk_bf16_to_f32((uint16_t)h);
        uint16_t back = sk_f32_to_bf16(f);
        if (isnan(f))
            cr_assert_eq(back, (uint16_t)(h | 0x40), "NaN 0x%04x stays NaN (quieted)", h);
        else
            cr_assert_eq(back, h, "bf16 0x%04x", h);
    }
}

Test(types, f16_bf16_match_gguf_quants) {
    size_t n_in, n16, nb16;
    const float *x = tu_slurp(FIX "conv_input.f32.bin", &n_in);
    const uint8_t *f16 = tu_slurp(FIX "conv_f16.bin", &n16);
    const uint8_t *bf16 = tu_slurp(FIX "conv_bf16.bin", &nb16);
    size_t n = n_in / 4;
    cr_assert_eq(n16, n * 2);
    cr_assert_eq(nb16, n * 2);
    cr_assert_gt(n, 3000);
    uint8_t *mine = malloc(n * 2);
    cr_assert_eq(sk_ggml_from_f32(SK_GGML_F16, x, mine, n), 0);
    for (size_t i = 0; i < n; i++)
        cr_assert(mine[2 * i] == f16[2 * i] && mine[2 * i + 1] == f16[2 * i + 1],
                  "f16 of element %zu (%a): ours %02x%02x, numpy %02x%02x", i, (double)x[i],
                  mine[2 * i + 1], mine[2 * i], f16[2 * i + 1], f16[2 * i]);
    cr_assert_eq(sk_ggml_from_f32(SK_GGML_BF16, x, mine, n), 0);
    for (size_t i = 0; i < n; i++)
        cr_assert(mine[2 * i] == bf16[2 * i] && mine[2 * i + 1] == bf16[2 * i + 1],
                  "bf16 of element %zu (%a)", i, (double)x[i]);
    /* back to f32: f16 widening is exact, compare with the bytes' meaning */
    float *y = malloc(n * 4);
    cr_assert_eq(sk_ggml_to_f32(SK_GGML_BF16, bf16, y, n), 0);
    for (size_t i = 0; i < n; i++) {
        uint32_t expect = (uint32_t)(bf16[2 * i] | (bf16[2 * i + 1] << 8)) << 16;
        cr_assert_eq(fbits(y[i]), expect);
    }
    free(y);
    free(mine);
    free((void *)x);
    free((void *)f16);
    free((void *)bf16);
}

Test(types, q8_0_matches_ggml_reference) {
    size_t n_in, nq, nd;
    const float *x = tu_slurp(FIX "conv_input.f32.bin", &n_in);
    const uint8_t *q = tu_slurp(FIX "conv_q8_0.bin", &nq);
    const float *deq = tu_slurp(FIX "conv_q8_0_deq.f32.bin", &nd);
    size_t n = nd / 4; /* the finite prefix that was quantized */
    cr_assert_eq(n % 32, 0);
    cr_assert_eq(nq, n / 32 * 34);
    cr_assert_eq(sk_ggml_row_size(SK_GGML_Q8_0, n), nq);
    uint8_t *mine = malloc(nq);
    cr_assert_eq(sk_ggml_from_f32(SK_GGML_Q8_0, x, mine, n), 0);
    for (size_t i = 0; i < nq; i++)
        cr_assert_eq(mine[i], q[i], "Q8_0 byte %zu (block %zu, slot %zu): ours %u, ggml %u", i,
                     i / 34, i % 34, mine[i], q[i]);
    float *y = malloc(n * 4);
    cr_assert_eq(sk_ggml_to_f32(SK_GGML_Q8_0, q, y, n), 0);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(fbits(y[i]), fbits(deq[i]), "dequantized element %zu", i);
    /* the crafted tie block: amax 127 -> id 1 -> x.5 rounds away from zero */
    float ties[32] = {127.0f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f};
    uint8_t blk[34];
    sk_quantize_q8_0(ties, blk, 32);
    cr_assert_eq((int8_t)blk[2 + 1], 1);
    cr_assert_eq((int8_t)blk[2 + 2], -1);
    cr_assert_eq((int8_t)blk[2 + 5], 3);
    cr_assert_eq((int8_t)blk[2 + 6], -3);
    cr_assert_eq(sk_ggml_from_f32(SK_GGML_Q8_0, x, mine, 33), SKYCMD_E_INVALID_ARGUMENT);
    free(y);
    free(mine);
    free((void *)x);
    free((void *)q);
    free((void *)deq);
}

Test(types, non_finite_q8_0_input_is_defined) {
    float x[32];
    for (int i = 0; i < 32; i++) x[i] = (float)i;
    x[3] = NAN;
    x[7] = INFINITY;
    uint8_t blk[34];
    sk_quantize_q8_0(x, blk, 32); /* must not trip UBSan's float-cast-overflow */
    float y[32];
    sk_dequantize_q8_0(blk, y, 32);
    cr_assert_eq(blk[2 + 3], 0);
}

Test(types, sizes_and_names) {
    cr_assert_str_eq(sk_ggml_type_name(SK_GGML_F32), "F32");
    cr_assert_str_eq(sk_ggml_type_name(SK_GGML_F16), "F16");
    cr_assert_str_eq(sk_ggml_type_name(SK_GGML_BF16), "BF16");
    cr_assert_str_eq(sk_ggml_type_name(SK_GGML_Q8_0), "Q8_0");
    cr_assert_null(sk_ggml_type_name(2));
    cr_assert_eq(sk_ggml_row_size(SK_GGML_F32, 10), 40);
    cr_assert_eq(sk_ggml_row_size(SK_GGML_F16, 10), 20);
    cr_assert_eq(sk_ggml_row_size(SK_GGML_BF16, 10), 20);
    cr_assert_eq(sk_ggml_row_size(SK_GGML_Q8_0, 64), 68);
    cr_assert_eq(sk_ggml_row_size(SK_GGML_Q8_0, 48), 0);
    cr_assert_eq(sk_ggml_row_size(99, 64), 0);
    cr_assert_eq(sk_ggml_row_size(SK_GGML_F32, UINT64_MAX / 2), 0, "overflow is 0");
    cr_assert_eq(sk_ggml_block_size(SK_GGML_Q8_0), 32);
    cr_assert_eq(sk_ggml_block_size(SK_GGML_F16), 1);
    float f = 1.0f;
    uint8_t b[4];
    cr_assert_eq(sk_ggml_from_f32(77, &f, b, 1), SKYCMD_E_UNSUPPORTED);
    cr_assert_eq(sk_ggml_to_f32(77, b, &f, 1), SKYCMD_E_UNSUPPORTED);
}
