/*
 * packed_layout.c - the block order of packed (Q8_0) weights, per the "Packed weight layout"
 * rules (docs/quantization.md §6): file bytes are ROW_MAJOR (block (o, b) at
 * o * blocks_per_row + b), the int8 kernels read INPUT_BLOCK_MAJOR (block (o, b) at
 * b * n_out + o), and this file holds the
 * only permutation between them and the transposed-weight guard. The published fixtures
 * built on them (skycmd_packed_fixture / skycmd_packed_disagreement) are in the API layer,
 * src/api/packed_fixture.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant.h"

void sk_q8_to_kernel_order(const uint8_t *src, uint8_t *dst, size_t n_out, size_t n_in) {
    const size_t nb = n_in / SK_QK8_0;
    for (size_t o = 0; o < n_out; o++)
        for (size_t b = 0; b < nb; b++)
            memcpy(dst + (b * n_out + o) * SK_Q8_0_BLOCK_BYTES,
                   src + (o * nb + b) * SK_Q8_0_BLOCK_BYTES, SK_Q8_0_BLOCK_BYTES);
}

void sk_q8_to_canonical_order(const uint8_t *src, uint8_t *dst, size_t n_out, size_t n_in) {
    const size_t nb = n_in / SK_QK8_0;
    for (size_t o = 0; o < n_out; o++)
        for (size_t b = 0; b < nb; b++)
            memcpy(dst + (o * nb + b) * SK_Q8_0_BLOCK_BYTES,
                   src + (b * n_out + o) * SK_Q8_0_BLOCK_BYTES, SK_Q8_0_BLOCK_BYTES);
}

int sk_q8_require_out_in(const char *name, uint64_t rows, uint64_t cols, sk_err *e) {
    if (cols % SK_QK8_0 != 0 && rows % SK_QK8_0 == 0)
        return sk_fail(e, SKYCMD_E_FORMAT,
                       "tensor %s looks transposed: [%llu, %llu] as [out, in] has inputs that "
                       "do not split into Q8_0 blocks of %d while its outputs do; GGUF stores "
                       "ne = [in, out], so reverse the dimensions at the load boundary (read "
                       "it as [ne1, ne0]) instead of relaying the bytes",
                       name, (unsigned long long)rows, (unsigned long long)cols, SK_QK8_0);
    return SKYCMD_OK;
}
