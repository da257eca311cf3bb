/*
 * quant.h - re-typing GGUF files (skycmd quantize) and the int8 weight format the model uses
 * at run time: Q8_0 blocks prepacked into the kernels' block order, calibrated outlier
 * columns, and the calibration record that finds them.
 *
 * Contract:
 *  - The type policy is sk_quant_policy (type_policy.c): one function decides the type of a
 *    tensor for `convert` (src/convert's sk_convert_tensor_type applies it), `quantize` and
 *    the int8 weights modes alike. 1-D tensors
 *    stay F32, the decision head (head blocks, token_types, cls.*) gets head_type,
 *    token_embd.weight stays F16 under Q8_0, a Q8_0 row that does not split into 32 falls
 *    back to F16.
 *  - sk_quantize_file writes atomically (no partial output) and keeps every metadata key
 *    (general.file_type is rewritten to describe the new encoder type).
 *  - Block order (seed "Packed weight layout"): bytes from a file or a quantizer are
 *    ROW_MAJOR (block (o, b) at o * blocks_per_row + b); the int8 kernels read
 *    INPUT_BLOCK_MAJOR (block (o, b) at b * n_out + o). sk_q8_to_kernel_order() and
 *    sk_q8_to_canonical_order() are the only implementations of that permutation.
 */
#ifndef SK_QUANT_H
#define SK_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "../gguf/gguf.h"

/* ---- file re-typing ---- */
/* A caller's say over the output (the calibrated int8 of src/api/quantize.c): tensor()
 * returns 1 with the bytes a tensor is written with instead of the policy's (type and data;
 * data borrowed until the write), 0 to leave it to the policy, or a negative status (with
 * e); keys() adds keys after the source's (whose skycmd.int8.* keys are never copied: they
 * describe bytes a re-typing replaces, src/quant/int8_store.h). */
typedef struct sk_quantize_override {
    int (*tensor)(void *ud, const sk_gguf_tensor *t, const char *name, uint32_t *type,
                  const void **data, uint64_t *nbytes, sk_err *e);
    int (*keys)(void *ud, sk_gguf_writer *w, sk_err *e);
    void *ud;
} sk_quantize_override;

typedef struct sk_quantize_opts {
    uint32_t type;       /* SK_GGML_* for encoder matrices */
    uint32_t head_type;  /* for the decision head */
    skycmd_progress_fn progress;
    void *progress_ud;
    const sk_quantize_override *over;  /* NULL: the policy alone */
} sk_quantize_opts;

/* 1 when a GGUF tensor name belongs to the decision head: token_types.*, cls.*, or blk.N.*
 * with N >= first_head_block (block_count - decision.block_count). */
int sk_quant_is_head(const char *name, uint32_t first_head_block);
/* The type a tensor gets under the policy (see the contract above). */
uint32_t sk_quant_policy(const char *name, int is_head, uint32_t n_dims, uint64_t ne0,
                         uint32_t type, uint32_t head_type);
/* First head block index of a decision-model GGUF (UINT32_MAX when the file says nothing,
 * so only token_types / cls.* count as head). */
uint32_t sk_quant_first_head_block(const sk_gguf *g);

int sk_quantize_gguf(const sk_gguf *g, const sk_quantize_opts *o, const char *out_path,
                     sk_err *e);
/* The same into memory (tests). *out for free(). */
int sk_quantize_gguf_mem(const sk_gguf *g, const sk_quantize_opts *o, uint8_t **out,
                         size_t *size, sk_err *e);

/* ---- block order ---- */
enum { SK_ORDER_ROW_MAJOR = 0, SK_ORDER_INPUT_BLOCK_MAJOR = 1 };
/* Permute the 34-byte Q8_0 blocks of an [n_out][n_in] matrix (n_in % 32 == 0). src and dst
 * must not overlap. */
void sk_q8_to_kernel_order(const uint8_t *src, uint8_t *dst, size_t n_out, size_t n_in);
void sk_q8_to_canonical_order(const uint8_t *src, uint8_t *dst, size_t n_out, size_t n_in);

/* Refuse a weight that looks transposed: GGUF ne order gives [in, out]; a caller that
 * forgot to reverse it passes rows = ne[0]. Fires when cols is not a multiple of 32 but
 * rows is (see seed: requireOutIn). Returns SKYCMD_OK or SKYCMD_E_FORMAT naming the fix. */
int sk_q8_require_out_in(const char *name, uint64_t rows, uint64_t cols, sk_err *e);

/* ---- outlier-aware quantization ---- */
/* Outlier channels of one matrix product site from its calibrated per-channel max |x|
 * (k values): channels above ratio (3.0) x the median, the largest first, at most k / 16.
 * Writes their indices in ascending order to idx (capacity k / 16) and returns the count. */
size_t sk_quant_pick_outliers(const float *chan_max, size_t k, float ratio, uint32_t *idx);
#define SK_OUTLIER_RATIO 3.0f
#define SK_OUTLIER_WEIGHT 1e4f

/* Quantize one row of n values (n % 32 == 0) to Q8_0 bytes in canonical order. Columns
 * flagged in is_outlier (n entries, may be NULL) weigh SK_OUTLIER_WEIGHT times more: in each
 * block holding one, the scales that make an outlier weight an exact multiple without
 * clipping are tried and the one with the lowest weighted squared error kept (ggml's scale
 * is always a candidate). Without outliers the bytes equal sk_quantize_q8_0's. */
void sk_quantize_q8_0_exact_cols(const float *x, const uint8_t *is_outlier, uint8_t *out,
                                 size_t n);

/* sk_quantize_q8_0_exact_cols (or ggml's quantizer when is_outlier is NULL), then, in every
 * block without an outlier column, a search over the f16 scales amax / 127 * (1 - t / 512),
 * t = -16..32 step 2 (quants clamped to [-127, 127]), keeping the one with the lowest error weighted
 * by colw (the calibrated mean square of each input channel: the expected squared output
 * error of the column), the first candidate (ggml's scale) winning ties. Still standard
 * Q8_0 bytes. colw NULL: nothing more. */
void sk_quantize_q8_0_weighted(const float *x, const uint8_t *is_outlier, const float *colw,
                               uint8_t *out, size_t n);

/* GPTQ rounding (Frantar et al. 2022) of an [n_out][n_in] matrix to Q8_0 bytes (ROW_MAJOR):
 * columns are rounded in order and each one's rounding error is pushed onto the columns not
 * yet rounded, through the calibrated input second moments xtx ([n_in][n_in] sum of x_i x_j,
 * upper triangle read), so that the error of the product x . W^T on the calibration inputs,
 * not of W itself, is what the rounding minimizes. Each block's scale is ggml's rule
 * (max |w| / 127 as f16) on the weights as the earlier columns' updates left them; quants
 * within [-127, 127]. Channels flagged in is_outlier (may be NULL) leave the problem: their
 * activations never reach the int8 product (their quants are written as 0). H is damped
 * by SK_GPTQ_DAMP times its mean diagonal. Standard Q8_0 bytes; 0, or -1 (out of memory or
 * a non-positive-definite H: the caller falls back to another quantizer). */
#define SK_GPTQ_DAMP 0.1
int sk_quantize_q8_0_gptq(const float *W, size_t n_out, size_t n_in, const float *xtx,
                          const uint8_t *is_outlier, uint8_t *out);

#endif /* SK_QUANT_H */
