/*
 * model.h - the System One decision model (ModernBERT encoder + Laya decision head) in f32.
 *
 * Contract:
 *  - sk_model_load() reads hyper-parameters and weights from an open GGUF reader (borrowed;
 *    it must outlive the model). Every required tensor is checked for presence, type and
 *    shape; a failure names the tensor or key, and non-finite weights are refused.
 *    Matrices are prepacked once for the GEMM kernels: F16 and BF16 ones keep their 16 bits
 *    (the kernels widen them exactly as they read), F32 and Q8_0 ones become f32, so compute
 *    is always f32 with exactly the file's values (SKYCMD_WEIGHTS_F32). With
 *    SKYCMD_WEIGHTS_Q8 / _Q8_PLAIN the encoder matrices run as int8 instead (see
 *    sk_model_load_ex and docs/quantization.md). token_embd.weight
 *    stays in the file: the rows a sequence uses are widened at lookup (the reader must
 *    therefore outlive the model).
 *  - An sk_model is immutable after load and may be shared by any number of threads.
 *  - An sk_scratch holds per-thread buffers; it grows to the longest sequence seen and is
 *    reused, so a warm forward call allocates nothing. One scratch per thread.
 *  - sk_model_forward() runs one sequence (positions 0..n-1, no padding) and writes the raw
 *    scorer logit (before temperature) of each marker position. It matches PyTorch fp32
 *    (transformers ModernBertModel + laya DecisionModel) to about 1e-5 relative.
 */
#ifndef SK_MODEL_H
#define SK_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "../gguf/gguf.h"

typedef struct sk_hparams {
    uint32_t n_embd;          /* d */
    uint32_t n_head;          /* encoder attention heads */
    uint32_t n_layer;         /* encoder layers */
    uint32_t n_head_layers;   /* decision blocks */
    uint32_t n_ff;            /* encoder intermediate size I (ffn_up has 2I rows) */
    uint32_t n_ff_head;       /* decision FFN size (4d) */
    uint32_t n_vocab;
    uint32_t n_swa;           /* local_attention window W (keys with |i-j| <= W/2); 0 = none */
    uint32_t swa_pattern;     /* layer l is global when l % P == 0 */
    uint32_t max_head_tokens;
    uint32_t max_tokens;      /* decision.max_tokens, 0 if absent */
    uint32_t n_head_dec;      /* max(1, n_embd/64): Python's head count for decision blocks */
    uint32_t option_layout;   /* SK_LAYOUT_SEQUENTIAL or _PARALLEL (decision.option_layout) */
    float eps;
    float rope_base;          /* global layers */
    float rope_base_swa;      /* local (sliding-window) layers */
} sk_hparams;

/* laya's option layouts (rl_agent_config.json "option_layout"): sequential, or parallel
 * (laya.common.parallel_layout: the options share positions and do not attend to each
 * other in the encoder; sequences then carry position and option ids, see sk_seq). */
enum { SK_LAYOUT_SEQUENTIAL = 0, SK_LAYOUT_PARALLEL = 1 };

typedef struct sk_model sk_model;      /* immutable after load, shareable by threads */
typedef struct sk_scratch sk_scratch;  /* per-thread buffers, grown on demand and reused */

/* Load weights from an open GGUF (g is borrowed and must outlive the model). weights_mode is
 * a skycmd_weights value (anything else: SKYCMD_E_UNSUPPORTED). */
int sk_model_load(const sk_gguf *g, int weights_mode, sk_model **out, sk_err *e);
/* The same with a log callback that receives the int8 conversion events (calibration, each
 * matrix's relayout to kernel order with its byte count, a summary). weights_mode
 * SKYCMD_WEIGHTS_Q8 / _Q8_PLAIN: encoder matrices the converter's policy makes Q8_0 are
 * quantized at load (Q8: calibrated outlier columns kept in f32), Q8_0 matrices of the file
 * are used as they are; the rest stays f32 (src/quant/quant.h, src/kernels/q8.h). */
int sk_model_load_ex(const sk_gguf *g, int weights_mode, skycmd_log_fn log, void *log_ud,
                     sk_model **out, sk_err *e);
/* Where the int8 calibration's input sequences come from (SKYCMD_WEIGHTS_Q8, _Q8_ROW): built
 * above the loader from the model's own tokenizer and prompt template
 * (src/prompt/outlier_calib_seqs.h, sk_calib_sequences_tok) and handed down on the loader's
 * request, at most once per load. build fills seqs[SK_CALIB_N_SEQS] for the model's
 * decision.max_tokens and max_head_tokens (0 when absent); the loader frees them with
 * sk_calib_sequences_free. */
struct sk_calib_seq;
typedef struct sk_calib_source {
    int (*build)(void *ud, size_t max_len, size_t head_max_len, struct sk_calib_seq *seqs,
                 sk_err *e);
    void *ud;
    int keep_rowmajor;  /* 1: each matrix quantized at load keeps its ROW_MAJOR Q8_0 bytes,
                           for sk_model_int8_each (skycmd_quantize storing the result) */
    int threads;        /* compute threads of the calibration's forward passes (0 or 1: one);
                           the result does not depend on it */
    int defer_row_choice; /* 1: SKYCMD_WEIGHTS_Q8_ROW quantized at load leaves its choice of
                             the products that keep two-pass activations under single-pass
                             ones (a probe: an int8 pass per matrix) to sk_model_row_choice;
                             0: the load makes it (and reports it as progress) */
} sk_calib_source;
/* sk_model_load_ex with the calibration sequences' source (NULL: the loader builds them
 * from g with sk_calib_sequences, decoding g's tokenizer itself; src/api/model.c hands its
 * own down so that a model's tokenizer is decoded once). */
int sk_model_load_calib(const sk_gguf *g, int weights_mode, const sk_calib_source *calib,
                        skycmd_log_fn log, void *log_ud, sk_share prog, sk_model **out,
                        sk_err *e);
/* Progress (prog; SK_SHARE_NONE for none, which costs nothing): the load reports its share
 * (util.h) as it goes, split by estimated time between the tensors' checks and packing
 * (reported after each tensor, by bytes) and, with an int8 mode, the conversion
 * (calibration passes reported before every layer, then each matrix probed and quantized);
 * its last report is the whole share. A stop of the callback at any report frees what was
 * made and returns SKYCMD_E_CANCELLED. sk_model_read_share() is the share of a whole open
 * (reading, then this load) that reading the file takes, for a weights mode; read_factor
 * scales the reading's cost per byte (1 for a GGUF file; more for a checkpoint converted in
 * memory). An estimate: only how evenly done/total moves with time depends on it. */
double sk_model_read_share(int weights_mode, double read_factor);
/* The matrices quantized at a load whose calibration source had keep_rowmajor, in the model's
 * order, each with its tensor and first row there (a matrix of n_out rows from row0: the
 * whole tensor, or a part of it such as the head's q and kv, rows of one attn_qkv), its
 * ROW_MAJOR Q8_0 bytes (the model's own; fn may rewrite the quants of outlier columns,
 * which the model's product never reads), its outlier columns and their exact weights, and
 * whether it keeps two-pass activations under --q8-fast. Stops at fn's first non-zero
 * return, which it returns. */
typedef int (*sk_int8_matrix_fn)(void *ud, const sk_gguf_tensor *t, size_t row0,
                                 uint8_t *rowmajor, size_t n_out, size_t n_in,
                                 const uint32_t *outl, size_t n_outl, const float *w_outl,
                                 int two_pass);
int sk_model_int8_each(const sk_model *m, sk_int8_matrix_fn fn, void *ud);
/* The int8 calibration's inputs for a load (int8.c): the sequences calib builds (NULL: the
 * file g's, sk_calib_sequences), built on first use, and the forward passes' threads: pool
 * (NULL: calib->threads of their own, started then; log says when they cannot be). The
 * conversion (sk_model_to_int8) and the row probe (sk_model_row_choice) share them, so a
 * load that runs both builds each once. NULL when out of memory. */
struct sk_pool;
typedef struct sk_calib_inputs sk_calib_inputs;
sk_calib_inputs *sk_calib_inputs_new(const sk_gguf *g, const sk_calib_source *calib, struct sk_pool *pool,
                                     skycmd_log_fn log, void *log_ud);
void sk_calib_inputs_free(sk_calib_inputs *in);
/* A row-scaled int8 model quantized at load makes its single-pass choice here: a probe of
 * in's sequences, an int8 pass per matrix, on its threads, on the model as it runs, so the choice is the same,
 * bitwise, whenever it is made. Then single-pass activations (SKYCMD_ACT_Q8) keep two
 * passes at the matrices where one pass changes the answers most; before it they run one
 * pass everywhere. The load calls it last unless calib->defer_row_choice. A no-op on any
 * other model, or once made. Logs each matrix's finding at level 0 and a summary at 1;
 * reports progress to prog (stopping with SKYCMD_E_CANCELLED when it asks). The caller
 * serialises calls on one model and keeps single-pass forward calls on m away until it
 * returns; two-pass ones may run meanwhile (the probe writes only what they do not read:
 * forward.c). */
int sk_model_row_choice(sk_model *m, sk_calib_inputs *in, skycmd_log_fn log, void *log_ud,
                        sk_share prog, sk_err *e);
void sk_model_free(sk_model *m);
const sk_hparams *sk_model_hparams(const sk_model *m);
/* Number of parameters stored in the file's model tensors. */
uint64_t sk_model_n_params(const sk_model *m);
/* The skycmd_weights mode the model computes with: the one asked for, except
 * SKYCMD_WEIGHTS_BF16X3 where the AMX-BF16 tiles are not usable (the F32 path runs). */
int sk_model_weights_mode(const sk_model *m);

sk_scratch *sk_scratch_new(const sk_model *m);   /* NULL when out of memory */
void sk_scratch_free(sk_scratch *s);
/* Let forward calls on this scratch split their work (matrix products, attention units,
 * row-wise steps) over the threads of pool (src/kernels/pool.h; borrowed, it must outlive
 * its use; NULL = one thread, the default). Each step uses as many of the pool's threads
 * as the process budget lends it then (docs/threads.md). The logits are bitwise identical
 * for any thread count. */
struct sk_pool;
void sk_scratch_set_pool(sk_scratch *s, struct sk_pool *pool);
/* Int8 activation mode of forward calls on this scratch (skycmd_activations: 0 Q8x2, the
 * default, or 1 Q8); only matters for int8 weights. */
void sk_scratch_set_activations(sk_scratch *s, int mode);
/* Evaluate the last decision block unfolded, as the reference writes it: keys and values
 * projected on every row (tests compare it with the default folded form, which attends over
 * the block's input rows directly; see head_layer_markers in forward.c). */
void sk_scratch_set_unfolded(sk_scratch *s, int unfolded);

/* One sequence: ids[0..n) (positions 0..n-1), question type qtype (0 choice, 1 score,
 * 2 noul), markers = positions of the [MASK] tokens (each < n); writes n_markers raw scorer
 * logits (float32, before temperature) to logits. Errors: SKYCMD_E_INVALID_ARGUMENT for an
 * id outside the vocabulary, a marker outside [0, n), qtype outside [0, 2] or n == 0;
 * SKYCMD_E_NOMEM when the scratch cannot grow. */
int sk_model_forward(const sk_model *m, sk_scratch *s, const int32_t *ids, size_t n, int qtype,
                     const int32_t *markers, size_t n_markers, float *logits, sk_err *e);

/* A batch: several sequences run together (their rows share every matrix product;
 * attention, RoPE positions and the decision head stay within each sequence). Each sequence
 * gets exactly the logits sk_model_forward() would give it alone (bitwise). A sequence
 * with n_markers == 0 is validated and skipped. Errors name the sequence index. */
typedef struct sk_seq {
    const int32_t *ids;
    size_t n;
    int qtype;
    const int32_t *markers;
    size_t n_markers;
    float *logits;        /* n_markers outputs */
    /* parallel option layout only (else NULL): per token its RoPE position and its option
     * (0 = shared, s + 1 = option s), as sk_prompt_parallel_layout computes them; NULL on a
     * parallel model means positions 0..n-1 and no options */
    const int32_t *pos, *opt;
} sk_seq;
int sk_model_forward_batch(const sk_model *m, sk_scratch *s, const sk_seq *seqs, size_t n_seqs,
                           sk_err *e);

#endif /* SK_MODEL_H */
