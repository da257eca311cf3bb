/*
 * int8_store.h - a calibrated int8 model stored in a GGUF file (`skycmd quantize
 * --calibrated`, skycmd_quantize with SKYCMD_OPT_WEIGHTS = SKYCMD_WEIGHTS_Q8): the few keys
 * beside standard Q8_0 tensors that give back what SKYCMD_WEIGHTS_Q8 would make at load
 * (docs/quantization.md §3), so that a load repeats none of the calibration.
 *
 * Contract:
 *  - The keys (llama.cpp ignores keys it does not know; the tensors stay standard GGUF):
 *      skycmd.int8.version                    u32 SK_INT8_STORE_VERSION: the file holds a
 *                                             calibrated int8 model. The Q8_0 matrices are
 *                                             the calibration's (GPTQ or scale search), the
 *                                             matrices the sensitivity probe kept stay F16/F32.
 *      skycmd.int8.<tensor>.outlier_columns   u32 array, sorted and distinct, each < n_in, at
 *                                             most n_in / 16: the outlier input channels
 *      skycmd.int8.<tensor>.outlier_weights   f32 array [n_out][n_outl], finite: their exact
 *                                             weights (the product adds x[:, cols] . W^T)
 *      skycmd.int8.<tensor>.two_pass          bool true: under single-pass activations
 *                                             (--q8-fast) this product keeps two-pass ones
 *      skycmd.int8.row_scaled                 bool true: the model is the row-scaled int8
 *                                             of SKYCMD_WEIGHTS_Q8_ROW (quantize
 *                                             --calibrated --q8-row): every block of a row
 *                                             of its Q8_0 matrices carries the row's scale.
 *                                             A product that takes only some rows of a
 *                                             tensor (the decision head's q and kv, rows of
 *                                             one attn_qkv) keeps its tensor F16/F32 and
 *                                             its outlier keys under <tensor>@<first row>
 *                                             (sk_int8_store_part_name): the load quantizes
 *                                             it per row with those columns, no calibration.
 *                                             A part has no outlier_weights key: its exact
 *                                             weights are its tensor's own
 *    A matrix without outlier columns has neither outlier key; two_pass only when true.
 *  - sk_int8_store_version(g): 0 when the file has no stored int8, SK_INT8_STORE_VERSION when
 *    it has; -1 (with e: SKYCMD_E_UNSUPPORTED, or SKYCMD_E_FORMAT for a value that is not
 *    a u32) for a version this library cannot read.
 *  - sk_int8_store_put(w, tensor, ...) adds one matrix's keys to a writer (a part's: w_outl
 *    NULL, the columns alone).
 *  - sk_int8_store_get(g, tensor, n_out, n_in, ...) reads them back, checking every bound
 *    (a file is hostile input): SKYCMD_E_FORMAT naming the key. *outl and *w_outl are
 *    malloc'ed (NULL with *n_outl 0 when the matrix has none). A part's: w_outl NULL, the
 *    columns alone (a weights key beside them is not read).
 *  - sk_int8_store_fill_outliers(rowmajor, ...): the Q8_0 quants of the outlier columns set to
 *    their weights in the block's scale, round(w / d) clamped to +-127, for readers that do
 *    not know the keys (llama.cpp): the calibration leaves them 0 under GPTQ rounding, and
 *    skycmd's int8 product never reads them (it zeroes those activation channels and adds
 *    the exact weights in f32), so its answers do not change.
 *  - sk_int8_store_is_key(key): whether a metadata key belongs to the stored int8 (a re-typing
 *    quantize drops them: they describe the bytes it replaces).
 */
#ifndef SK_INT8_STORE_H
#define SK_INT8_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "../gguf/gguf.h"

#define SK_INT8_STORE_VERSION 1u
#define SK_INT8_STORE_PREFIX "skycmd.int8."
#define SK_INT8_STORE_VERSION_KEY "skycmd.int8.version"

int sk_int8_store_version(const sk_gguf *g, sk_err *e);
/* sk_int8_store_row_scaled(g): 1 when the file marks its stored int8 row-scaled, 0 when not;
 * -1 (with e: SKYCMD_E_FORMAT) when the key is not a bool. sk_int8_store_part_name: the
 * name a part of a tensor keeps its keys under (tensor@row0). */
#define SK_INT8_STORE_ROWS_KEY "skycmd.int8.row_scaled"
int sk_int8_store_row_scaled(const sk_gguf *g, sk_err *e);
void sk_int8_store_part_name(char *buf, size_t cap, sk_str tensor, size_t row0);
int sk_int8_store_put(sk_gguf_writer *w, const char *tensor, size_t n_out, const uint32_t *outl,
                      size_t n_outl, const float *w_outl, int two_pass, sk_err *e);
int sk_int8_store_get(const sk_gguf *g, const char *tensor, size_t n_out, size_t n_in,
                      uint32_t **outl, size_t *n_outl, float **w_outl, int *two_pass, sk_err *e);
void sk_int8_store_fill_outliers(uint8_t *rowmajor, size_t n_out, size_t n_in, const uint32_t *outl,
                                 size_t n_outl, const float *w_outl);
int sk_int8_store_is_key(sk_str key);

#endif /* SK_INT8_STORE_H */
