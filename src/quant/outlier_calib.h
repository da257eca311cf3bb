/*
 * outlier_calib.h - the int8 outlier calibration (seed: "int8 that keeps its accuracy"; not
 * to be confused with the temperature fit, src/decide/temperature_fit.h): the
 * per-input-channel max |x| record of every matrix product site, and the Q8_0 weights built
 * from it. The sequences the model runs while recording are built above this module, from
 * the model's own tokenizer and prompt template (src/prompt/outlier_calib_seqs.h), and
 * handed down to the loader (src/model/model.h, sk_calib_source).
 *
 * Contract:
 *  - sk_calib_record keeps, per site and input channel, the largest |x| seen (NaN ignored).
 *    Not thread-safe: calibration runs on one thread.
 *  - sk_q8_build quantizes an [n_out][n_in] f32 matrix to Q8_0 (with chan_max: outlier
 *    columns picked by sk_quant_pick_outliers and scales by sk_quantize_q8_0_exact_cols;
 *    with chan_ms, the calibrated mean square per channel, the other blocks' scales by
 *    sk_quantize_q8_0_weighted; with xtx, the calibrated second moments, the rounding of
 *    sk_quantize_q8_0_gptq instead (a hold-out check between the two, GPTQ fitted on half
 *    the prompts against the scale search on the other half, was tried and rejected GPTQ
 *    where it helped the golden requests: six prompts judge too noisily); without any:
 *    ggml's plain quantizer), then prepacks the ROW_MAJOR bytes into the kernels'
 *    INPUT_BLOCK_MAJOR order once, and that into the kernels' panels (src/kernels/q8.h).
 *    sk_q8_from_q8_0 takes a Q8_0 file's ROW_MAJOR bytes as they are and prepacks them the
 *    same way; a plain Q8_0 file has no outlier columns (the exact weights are gone), a file
 *    that stores a calibrated int8 model (skycmd quantize --calibrated) gives them back with
 *    sk_q8_set_outliers. Both report the
 *    byte counts of the two conversions (*relayout_bytes: ROW_MAJOR -> INPUT_BLOCK_MAJOR;
 *    *panel_bytes: the panels) for the caller to log.
 */
#ifndef SK_OUTLIER_CALIB_H
#define SK_OUTLIER_CALIB_H

#include <stddef.h>
#include <stdint.h>

#include "../gguf/gguf.h"
#include "../kernels/q8.h"

typedef struct sk_calib {
    size_t n_sites;
    size_t *k;        /* channels per site */
    float **mx;       /* [site][k] max |x| */
    double **sq;      /* [site][k] sum of x^2 (mean square = sq / rows) */
    uint64_t *rows;   /* rows recorded per site */
    float **xtx;      /* [site][k][k] sum of x_i x_j (upper triangle), or NULL for the site
                         (sk_calib_want_xtx) */
    float *row_buf;   /* one input row, non-finite values zeroed */
    size_t row_cap;
} sk_calib;

int sk_calib_init(sk_calib *c, size_t n_sites, const size_t *k);
void sk_calib_record(sk_calib *c, size_t site, const float *x, size_t ldx, size_t n_rows);
/* Also record the input second moments of site (for GPTQ rounding): 0 or SKYCMD_E_NOMEM. */
int sk_calib_want_xtx(sk_calib *c, size_t site);
void sk_calib_free(sk_calib *c);

/* An int8 Linear that owns its memory. */
typedef struct sk_q8_owned {
    sk_q8_weights w;
    uint8_t *panels;   /* 64-byte aligned */
    uint32_t *outl;
    uint8_t *is_outl;
    float *w_outl;
    float *bias;
    int32_t *row_sum128; /* sk_q8_build_rows: 128 * each row's quant sum (w.p.row_sum128) */
    int gptq;          /* sk_q8_build: rounded by GPTQ */
    int fast_x2;       /* under single-pass activations (--q8-fast) this product still
                          quantizes its activations in two passes (src/model/int8.c) */
    uint8_t *rowmajor; /* the canonical ROW_MAJOR Q8_0 bytes, kept only when the builder was
                          asked to (sk_q8_build's keep_rowmajor: a calibrated int8 model being
                          stored by skycmd_quantize), else NULL */
} sk_q8_owned;

int sk_q8_build(const float *W, size_t n_out, size_t n_in, const float *bias,
                const float *chan_max, const float *chan_ms, const float *xtx,
                int keep_rowmajor, const char *name, sk_q8_owned *out,
                size_t *relayout_bytes, size_t *panel_bytes, sk_err *e);
/* Give a Q8_0 matrix made from a file its outlier columns (sorted, distinct, < n_in; at most
 * n_in / 16) with their exact weights w_outl [n_out][n_outl], as sk_q8_build would have
 * them: 0, or SKYCMD_E_NOMEM. */
int sk_q8_set_outliers(sk_q8_owned *q, const uint32_t *outl, size_t n_outl, const float *w_outl);
/* Row-scaled int8 (SKYCMD_WEIGHTS_Q8_ROW, q8.h): one scale per output row, d = f16(max |w|
 * / 127) over the row's columns that are not outliers (chan_max: picked as by sk_q8_build;
 * NULL = none), quants round(w / d) (half away from zero, clamped to +-127) in every block
 * of the row, stored as Q8_0 blocks that share d and prepacked the same way. n_in at most
 * SK_Q8_ROW_MAX_IN. */
int sk_q8_build_rows(const float *W, size_t n_out, size_t n_in, const float *bias,
                     const float *chan_max, const char *name, sk_q8_owned *out,
                     size_t *relayout_bytes, size_t *panel_bytes, sk_err *e);
/* The same with the outlier columns given (outl: sorted, distinct, < n_in, n_outl at most
 * n_in / 16; a stored row-scaled model's keys) when chan_max is NULL, and keep_rowmajor as
 * sk_q8_build's. */
int sk_q8_build_rows_outl(const float *W, size_t n_out, size_t n_in, const float *bias,
                          const float *chan_max, const uint32_t *outl, size_t n_outl,
                          int keep_rowmajor, const char *name, sk_q8_owned *out,
                          size_t *relayout_bytes, size_t *panel_bytes, sk_err *e);
/* Make a Q8_0 matrix from a file (sk_q8_from_q8_0, not in pair order) row-scaled: every block
 * of a row must carry the row's first scale (SKYCMD_E_FORMAT naming the row otherwise: a
 * file is hostile input), and row_sum128 is taken from the panels' block sums. 0 or an
 * error; q is unchanged on error. */
int sk_q8_rows_from_blocks(sk_q8_owned *q, const char *name, sk_err *e);
int sk_q8_from_q8_0(const uint8_t *rowmajor, size_t n_out, size_t n_in, const float *bias,
                    const char *name, sk_q8_owned *out, size_t *relayout_bytes,
                    size_t *panel_bytes, sk_err *e);
void sk_q8_owned_free(sk_q8_owned *q);

#endif /* SK_OUTLIER_CALIB_H */
