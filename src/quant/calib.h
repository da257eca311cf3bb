/*
 * calib.h - calibration of int8 weights (seed: "int8 that keeps its accuracy"): the
 * built-in prompts, their token sequences for a model, the per-input-channel max |x| record
 * of every matrix product site, and the Q8_0 weights built from it.
 *
 * Contract:
 *  - sk_calib_sequences builds the calibration inputs the way the model reads its requests:
 *    each sequence is a question laid out by the model's own prompt template (laya's
 *    [CLS] question [SEP] options [SEP] state [SEP], sk_prompt_build, with the model's own
 *    tokenizer read from the GGUF), the question types in turn, and the state either one of
 *    the built-in prompts or a "vocabulary state": tokens drawn (fixed seed) from the
 *    tokens the model's tokenizer learned, the most frequent most often (BPE merge rank;
 *    id order without merges). A model trained on one domain with its own tokenizer
 *    (s1-pico-flappy's state tokenizer) reads the built-in English prompts as a run of
 *    single bytes it never saw; its vocabulary states are made of its own words.
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
 *    sk_q8_from_q8_0 takes a Q8_0 file's ROW_MAJOR bytes as they are (no outliers are
 *    possible: the exact weights are gone) and prepacks them the same way. Both report the
 *    byte counts of the two conversions (*relayout_bytes: ROW_MAJOR -> INPUT_BLOCK_MAJOR;
 *    *panel_bytes: the panels) for the caller to log.
 */
#ifndef SK_CALIB_H
#define SK_CALIB_H

#include <stddef.h>
#include <stdint.h>

#include "../gguf/gguf.h"
#include "../kernels/q8.h"

#define SK_CALIB_N_PROMPTS 12
extern const char *const sk_calib_prompts[SK_CALIB_N_PROMPTS];

/* Vocabulary states, and all calibration sequences (prompt states first). */
#define SK_CALIB_N_VOCAB 12
#define SK_CALIB_N_SEQS (SK_CALIB_N_PROMPTS + SK_CALIB_N_VOCAB)

typedef struct sk_calib_seq {
    int32_t *ids;
    size_t n;
    int qtype;        /* 0 choice, 1 score, 2 noul */
    int32_t *pos, *opt; /* laya.common.parallel_layout of the sequence (RoPE position and
                           option of each token), for models with the parallel layout */
} sk_calib_seq;

/* seqs[SK_CALIB_N_SEQS] (max_len, head_max_len: the model's decision.max_tokens and
 * max_head_tokens, 0 for the defaults 512 and 96); free with sk_calib_sequences_free. */
int sk_calib_sequences(const sk_gguf *g, size_t max_len, size_t head_max_len, sk_calib_seq *seqs,
                       sk_err *e);
void sk_calib_sequences_free(sk_calib_seq *seqs);

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
} sk_q8_owned;

int sk_q8_build(const float *W, size_t n_out, size_t n_in, const float *bias,
                const float *chan_max, const float *chan_ms, const float *xtx,
                const char *name, sk_q8_owned *out,
                size_t *relayout_bytes, size_t *panel_bytes, sk_err *e);
/* Row-scaled int8 (SKYCMD_WEIGHTS_Q8_ROW, q8.h): one scale per output row, d = f16(max |w|
 * / 127) over the row's columns that are not outliers (chan_max: picked as by sk_q8_build;
 * NULL = none), quants round(w / d) (half away from zero, clamped to +-127) in every block
 * of the row, stored as Q8_0 blocks that share d and prepacked the same way. n_in at most
 * SK_Q8_ROW_MAX_IN. */
int sk_q8_build_rows(const float *W, size_t n_out, size_t n_in, const float *bias,
                     const float *chan_max, const char *name, sk_q8_owned *out,
                     size_t *relayout_bytes, size_t *panel_bytes, sk_err *e);
int sk_q8_from_q8_0(const uint8_t *rowmajor, size_t n_out, size_t n_in, const float *bias,
                    const char *name, sk_q8_owned *out, size_t *relayout_bytes,
                    size_t *panel_bytes, sk_err *e);
void sk_q8_owned_free(sk_q8_owned *q);

#endif /* SK_CALIB_H */
