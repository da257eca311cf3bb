/*
 * packed_fixture.c - the published packed-layout fixtures (skycmd_packed_fixture /
 * skycmd_packed_disagreement) that let any test check a byte layout against the library's
 * own convention (src/quant/packed_layout.c holds the permutation they show; see quant.h).
 * Fixtures are three blocks wide on purpose: at one block per row both orders coincide and
 * a test could not tell them apart.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "../quant/quant.h"

/* ------------------------------------------------------------------ fixtures ---- */

#define FX_ROWS 4
#define FX_COLS 96 /* three Q8_0 blocks per row */
#define FX_NB (FX_COLS / SK_QK8_0)
#define FX_BYTES (FX_ROWS * FX_NB * SK_Q8_0_BLOCK_BYTES)

static uint8_t g_fx[2][FX_BYTES];
static int g_fx_ready;

/* The fixture matrix: block (o, b) has max |w| = (1 + 3o + b) / 8, so every block's scale
 * differs, and quant pattern t_j = ((29j + 7o + 13b) mod 255) - 127 with t_0 = 127, so it
 * quantizes back to exactly t (d = max / 127). */
static float fx_value(int o, int i) {
    const int b = i / SK_QK8_0, j = i % SK_QK8_0;
    const float amax = (float)(1 + 3 * o + b) / 8.0f;
    int t = j == 0 ? 127 : ((29 * j + 7 * o + 13 * b) % 255) - 127;
    return amax * (float)t / 127.0f;
}

static void fx_build(void) {
    if (__atomic_load_n(&g_fx_ready, __ATOMIC_ACQUIRE)) return;
    uint8_t canon[FX_BYTES], kern[FX_BYTES];
    float row[FX_COLS];
    for (int o = 0; o < FX_ROWS; o++) {
        for (int i = 0; i < FX_COLS; i++) row[i] = fx_value(o, i);
        sk_quantize_q8_0(row, canon + (size_t)o * FX_NB * SK_Q8_0_BLOCK_BYTES, FX_COLS);
    }
    sk_q8_to_kernel_order(canon, kern, FX_ROWS, FX_COLS);
    /* Same bytes whichever thread gets here first. */
    memcpy(g_fx[0], canon, FX_BYTES);
    memcpy(g_fx[1], kern, FX_BYTES);
    __atomic_store_n(&g_fx_ready, 1, __ATOMIC_RELEASE);
}

int skycmd_packed_fixture(int type, int kernel_order, const uint8_t **bytes, size_t *n_bytes,
                          int64_t *rows, int64_t *cols) {
    if (!bytes || !n_bytes || !rows || !cols || (kernel_order != 0 && kernel_order != 1))
        return SKYCMD_E_INVALID_ARGUMENT;
    if (type != SKYCMD_TYPE_Q8_0) return SKYCMD_E_UNSUPPORTED;
    fx_build();
    *bytes = g_fx[kernel_order ? 1 : 0];
    *n_bytes = FX_BYTES;
    *rows = FX_ROWS;
    *cols = FX_COLS;
    return SKYCMD_OK;
}

static int say(char **message, const char *fmt, ...) SK_PRINTF(2, 3);
static int say(char **message, const char *fmt, ...) {
    sk_buf b;
    sk_buf_init(&b);
    va_list ap;
    va_start(ap, fmt);
    char tmp[512];
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    sk_buf_puts(&b, tmp);
    *message = sk_buf_detach(&b);
    return *message ? SKYCMD_OK : SKYCMD_E_NOMEM;
}

int skycmd_packed_disagreement(int type, const void *bytes, size_t n_bytes, int64_t rows,
                               int64_t cols, int kernel_order, char **message) {
    if (!message) return SKYCMD_E_INVALID_ARGUMENT;
    *message = NULL;
    if (!bytes || (kernel_order != 0 && kernel_order != 1)) return SKYCMD_E_INVALID_ARGUMENT;
    if (type != SKYCMD_TYPE_Q8_0) return SKYCMD_E_UNSUPPORTED;
    fx_build();
    const char *order = kernel_order ? "INPUT_BLOCK_MAJOR (kernel order, block (o, b) at b*rows+o)"
                                     : "ROW_MAJOR (file order, block (o, b) at o*blocks_per_row+b)";
    if (rows != FX_ROWS || cols != FX_COLS)
        return say(message, "shape [%lld, %lld] is not the fixture's [%d, %d] ([out, in]); "
                   "a [%lld, %lld] label suggests GGUF ne order that was not reversed",
                   (long long)rows, (long long)cols, FX_ROWS, FX_COLS, (long long)rows,
                   (long long)cols);
    if (n_bytes != FX_BYTES)
        return say(message, "%zu bytes; a [%d, %d] Q8_0 matrix has %d", n_bytes, FX_ROWS,
                   FX_COLS, FX_BYTES);
    const uint8_t *want = g_fx[kernel_order ? 1 : 0], *have = bytes;
    for (int p = 0; p < FX_ROWS * FX_NB; p++) {
        const uint8_t *hb = have + (size_t)p * SK_Q8_0_BLOCK_BYTES;
        if (memcmp(hb, want + (size_t)p * SK_Q8_0_BLOCK_BYTES, SK_Q8_0_BLOCK_BYTES) == 0) continue;
        const int eo = kernel_order ? p % FX_ROWS : p / FX_NB;
        const int eb = kernel_order ? p / FX_ROWS : p % FX_NB;
        /* Which block did land here? Look it up in the canonical fixture. */
        int fo = -1, fb = -1;
        for (int q = 0; q < FX_ROWS * FX_NB; q++)
            if (memcmp(hb, g_fx[0] + (size_t)q * SK_Q8_0_BLOCK_BYTES, SK_Q8_0_BLOCK_BYTES) == 0) {
                fo = q / FX_NB;
                fb = q % FX_NB;
                break;
            }
        if (fo < 0)
            return say(message, "block %d (row %d, input block %d) in %s order holds bytes "
                       "that are no block of the fixture (damaged or differently quantized)",
                       p, eo, eb, order);
        const int other_p = kernel_order ? fo * FX_NB + fb : fb * FX_ROWS + fo;
        return say(message, "block %d should be row %d, input block %d in %s order, but holds "
                   "row %d, input block %d%s", p, eo, eb, order, fo, fb,
                   other_p == p ? kernel_order
                                      ? " (the bytes are in ROW_MAJOR file order: prepack them)"
                                      : " (the bytes are in INPUT_BLOCK_MAJOR kernel order)"
                                : "");
    }
    return SKYCMD_OK;
}
