/*
 * model_internal.h - what the files of src/model share: the model's and the scratch's
 * layout and the functions one file provides to another. Not a public interface (model.h
 * is); nothing outside src/model includes it.
 *
 * Who does what (each file's contract is at its top):
 *   hparams.c  the hyper-parameters of a GGUF (sk_read_hparams) and what is refused there;
 *   load.c     tensors: checks, prepacking into kernel panels, sk_model_load/_free;
 *   scratch.c  per-thread buffers and their growth;
 *   forward.c  the forward pass (encoder, decision head, scorer), single and batched;
 *   layout.c   the option layouts: the parallel layout's attention mask;
 *   int8.c     the int8 weights modes: calibration and the Q8_0 relayout after the load.
 */
#ifndef SK_MODEL_INTERNAL_H
#define SK_MODEL_INTERNAL_H

#include <stdatomic.h>

#include "model.h"
#include "../kernels/kernels.h"
#include "../kernels/pool.h"
#include "../kernels/q8.h"
#include "../quant/outlier_calib.h"

/* Query rows per attention block: the block's keys are the union of its rows' windows. */
#define SK_QB 16

/* Python's nn.TransformerEncoderLayer and nn.LayerNorm default; the head and scorer always
 * use it whatever the encoder's epsilon is. */
#define SK_HEAD_EPS 1e-5f

/* Sanity limits on hyper-parameters read from a file (far above any real model). */
#define SK_MAX_EMBD 65536u
#define SK_MAX_LAYERS 1024u
#define SK_MAX_FF (1u << 20)
#define SK_MAX_VOCAB (1u << 24)

/* A Linear layer, prepacked for sk_gemm (see kernels.h); buf/bias own the memory. */
typedef struct sk_linear {
    sk_packed p;
    void *buf;
    float *bias;
    /* int8 weights (SKYCMD_WEIGHTS_Q8*): when set, the product runs on them and buf is freed */
    sk_q8_owned *q8;
    const sk_gguf_tensor *src;   /* the file's tensor and the first row this Linear holds */
    size_t row0;
    size_t q8_bytes, q8_pbytes;  /* prepack sizes, for the load log */
} sk_linear;

typedef struct sk_enc_layer {
    float *attn_norm;   /* NULL on layer 0 */
    sk_linear qkv, out;
    float *ffn_norm;
    sk_linear up, down;
    int global;         /* full attention, global RoPE base */
} sk_enc_layer;

typedef struct sk_head_layer {
    float *norm1_w, *norm1_b;
    sk_linear q, kv, out;   /* in_proj split: the last block needs K and V on every row but
                               Q only at the markers */
    float *norm2_w, *norm2_b;
    sk_linear up, down;
    /* The last block only: per head h, Wk_h^T ([d][hd], the keys' rows of the in_proj
     * weight transposed) packed as a Linear of hd inputs and d outputs, one after another
     * (kt_floats each). Built at the end of the load (build_key_transposes); NULL before
     * that (int8 calibration runs unfolded) and when the block cannot be folded. */
    float *kt;
    size_t kt_floats;
} sk_head_layer;

struct sk_model {
    sk_hparams hp;
    uint64_t n_params;
    int weights_mode;   /* SKYCMD_WEIGHTS_*: with an int8 mode, Q8_0 matrices of the file are
                           packed straight into int8 panels (no f32 stage; SKYCMD_WEIGHTS_Q8_ROW
                           only on a file that stores its row-scaled int8: q8_file_rows) */
    int q8_file_rows;   /* the file stores --q8-row's int8 and the mode is _Q8_ROW */
    int row_choice_pending; /* row-scaled int8 quantized at load whose single-pass choice
                               (the row probe) is deferred: sk_model_row_choice makes it */
    /* token_embd.weight stays in the file (any supported type): only the rows of a
     * sequence are widened, at lookup, so a large vocabulary costs no f32 copy. */
    const sk_gguf_tensor *tok_embd;
    uint64_t tok_row_bytes;
    float *embd_norm;
    sk_enc_layer *enc;
    float *out_norm;
    sk_head_layer *head;
    float *type_emb;     /* [3][d] */
    float *cls_norm_w, *cls_norm_b;
    sk_linear cls;       /* d -> d */
    sk_linear cls_out;   /* d -> 1 */
    uint32_t head_dim;       /* encoder D */
    uint32_t head_dim_dec;   /* decision head hd */
    float inv_freq[2][512];  /* [0] global, [1] local; D/2 entries, as HF computes them */
    int attn_tiles;          /* attention products on AMX-BF16 tiles as bf16x3 (bf16x3.c) */
    /* during the load only (load.c): the share of its progress that the tensors take, and
     * the bytes of them checked so far of load_total */
    sk_share load_share;
    uint64_t load_done, load_total;
};

struct sk_scratch {
    size_t cap;          /* rows the buffers hold */
    size_t cap_markers;
    float *h, *a, *qkv, *att, *ff;
    struct attn_ws {                   /* one per compute thread */
        float *sc;                     /* attention probabilities [SK_QB][cap] */
        float *kpack, *vpack;          /* one head's K and V^T, packed for sk_gemm */
        uint16_t *kamx, *vamx;         /* the same as bf16x3 tiles (attn_tiles only) */
    } *tws;
    int n_tws;
    int pool_threads;                  /* the pool's threads (set_pool): tws's size */
    float *rope_cos[2], *rope_sin[2];  /* [cap][D/2] per base */
    float *mh, *ma, *mq, *matt, *mff;  /* marker rows */
    uint32_t d, D, Dmax, n_qkv, n_ff_max, n_ff_head;
    sk_pool *pool;                     /* borrowed; NULL = one thread */
    struct seq_rows *seqs;             /* batch layout */
    struct attn_seq *aseq;             /* attention arguments per sequence */
    size_t cap_seqs, cap_rows;
    size_t *mrows;                     /* global row of each marker */
    float *mlogits;                    /* scorer outputs before scattering */
    float *mu, *mz;                    /* folded last block: [marker][head][d] */
    int unfolded;                      /* sk_scratch_set_unfolded */
    int attn_tiles;                    /* the model's attn_tiles when the scratch was made */
    uint32_t Hdec;                     /* decision heads */
    /* the int8 conversion's passes only (int8.c): asked before every layer; non-zero stops
     * the pass with SKYCMD_E_CANCELLED (the load's progress callback asked to stop) */
    int (*stop)(void *ud);
    void *stop_ud;
    /* int8 path */
    int act_mode;                      /* SK_Q8_ACT_* */
    /* the row probe's (int8.c): this product alone runs one int8 pass whatever act_mode
     * and its fast_x2 say (NULL: none), so the probe never writes the shared model */
    const sk_q8_owned *one_pass_site;
    sk_q8_ws q8ws;
    int q8_oom;                        /* a workspace could not grow during a forward call */
    sk_calib *calib;                   /* load-time calibration record, else NULL */
    struct sk_linear *const *calib_sites;
    size_t n_calib_sites;
    /* passes split by sequence (passes.c) */
    struct sk_scratch **sub;           /* helper ith's scratch at sub[ith - 1], made on use */
    int n_sub;
    sk_seq *gseqs;                     /* [2 * cap_gseqs]: by length, then by group */
    size_t *gid;                       /* [cap_gseqs]: the group of each, by length */
    size_t cap_gseqs;
    struct split_group {               /* [cap_groups] */
        size_t start, end;             /* its sequences: gseqs[start .. end) */
        size_t load;                   /* rows dealt to it */
        int rc;                        /* its pass's status and error (the publisher's) */
        sk_err err;
        atomic_int won;                /* a pass of it finished first and publishes (0 -> 1) */
        atomic_int done;               /* published (or run by the caller): logits, rc, err final */
    } *groups;
    int cap_groups;
    /* The group a helper's pass or the caller's second pass of it runs for (passes.c): the
     * pass stops at the next layer once the group is published, and leaves its logits in
     * mlogits for the publisher to copy. NULL otherwise (the pass writes its sequences'). */
    struct split_group *race;
};

/* Sequence boundaries of the rows in the scratch (a batch packs sequences one after
 * another; attention and RoPE positions stay within a sequence). */
typedef struct seq_rows {
    size_t off, n;      /* rows [off, off + n) */
    size_t koff, k;     /* marker rows [koff, koff + k) */
    const int32_t *pos, *opt;  /* parallel option layout (sk_seq), else NULL */
} seq_rows;

/* The arguments of one sequence's attention (see attention() in forward.c). */
typedef struct attn_seq {
    const float *q, *k, *v;
    size_t ldq, nq, ldkv, n;
    float *out;
    size_t ldo;
} attn_seq;


/* hparams.c */
int sk_read_hparams(const sk_gguf *g, sk_hparams *hp, sk_err *e);
/* inv_freq exactly as transformers computes it in float32 (D/2 entries). */
void sk_rope_inv_freq(float base, uint32_t D, float *out);

/* scratch.c: grow the per-position buffers to n rows (and the RoPE tables with them), the
 * marker rows to k, the per-sequence arrays to ns sequences and K markers. */
int sk_scratch_reserve(const sk_model *m, sk_scratch *s, size_t n, sk_err *e);
int sk_scratch_reserve_markers(sk_scratch *s, size_t k, sk_err *e);
int sk_scratch_reserve_seqs(sk_scratch *s, size_t ns, size_t K, sk_err *e);

/* forward.c: one pass over a batch on the scratch's pool (sk_model_forward_batch's
 * contract), and the argument check of sequence qi that it starts with. */
int sk_forward_pass(const sk_model *m, sk_scratch *s, const sk_seq *seqs, size_t n_seqs,
                    sk_err *e);
int sk_model_check_seq(const sk_model *m, const sk_seq *q, size_t qi, sk_err *e);

/* passes.c test hooks: helpers of a split by sequence sleep us microseconds before each
 * group they claim (0: never), so the caller's second pass publishes their groups; and how
 * many groups a caller has published for a helper since the process started. */
void sk_split_set_helper_delay_us(unsigned us);
size_t sk_split_caller_published(void);

/* forward.c: y = x W^T + b for n_rows rows, on the scratch's pool (f32, 16-bit or int8
 * panels), recording the input's statistics while a calibration runs. */
void sk_model_linear(sk_scratch *s, const sk_linear *L, const float *x, size_t ldx,
                     size_t n_rows, float *y, size_t ldy);

/* layout.c: one sequence's encoder attention in the parallel option layout; qkv rows of
 * ld floats (q, k, v at 0, d, 2d; head h at h * D), out rows of ldo; win 0 = a global layer. */
void sk_attention_parallel(sk_scratch *s, const seq_rows *sr, const float *qkv, size_t ld,
                           size_t H, size_t D, size_t d, size_t win, float scale, float *out,
                           size_t ldo);

/* int8.c: replace the encoder matrices the converter's policy makes Q8_0 by int8 panels
 * (weights_mode SKYCMD_WEIGHTS_Q8: calibrated first on in's sequences, on its threads).
 * Reports its progress to prog (calibration passes by tokens and
 * layers, the sensitivity probe and the quantization by matrices) and stops with
 * SKYCMD_E_CANCELLED when its callback asks, between two layers of a pass or two matrices;
 * what it made is then freed with the model. */
int sk_model_to_int8(sk_model *m, const sk_gguf *g, int weights_mode, sk_calib_inputs *in,
                     skycmd_log_fn log, void *log_ud, sk_share prog, sk_err *e);
/* int8.c: the estimated cost (SK_COST_* units) of sk_model_to_int8 on m, from its
 * hyper-parameters alone (the calibration sequences are not built yet), and that of a
 * row-scaled model's single-pass choice (sk_model_row_choice): how the load's progress
 * splits between the tensors, the int8 conversion and the probe. */
double sk_int8_cost_guess(const sk_model *m, int weights_mode);
double sk_int8_row_choice_cost_guess(const sk_model *m);

/* The load's progress is split by estimated cost, in nanoseconds of one core as measured on
 * an AMD EPYC (Zen 4, a shared 2-vCPU guest) with `skycmd_model_open` of a random base
 * model (286 MB, F16): only the ratios matter (done/total then moves about evenly with
 * time), and none changes what is loaded. */
#define SK_COST_READ_BYTE 0.5          /* reading the file, per byte (0.26-2.5 measured) */
#define SK_COST_LOAD_BYTE 0.8          /* checking and packing a tensor, per byte */
#define SK_COST_AMX_ELEM 2.0           /* the AMX-BF16 relayout, per matrix element (a guess) */
#define SK_COST_FWD 0.025              /* a forward pass, per token and multiply-add */
#define SK_COST_INT8_PASS 0.2         /* ... of an int8 model, as a share of SK_COST_FWD (0.19 on base, AMX) */
#define SK_COST_Q8_ELEM 6.0            /* quantizing a matrix (scale search), per element */
#define SK_COST_Q8_ROW_ELEM 9.0        /* ... one scale per row, per element */
#define SK_COST_MAC 0.5                /* second moments and GPTQ, per multiply-add */
/* the tokens of a calibration sequence, on average, before they are built (2430 and 3973
 * over the 24 for a base and an mmbert-small random model) */
#define SK_GUESS_CALIB_SEQ_TOKENS 110.0
/* per byte of the file, the int8 conversion after the load (sk_model_read_share's guess
 * before the file is parsed; a base-sized model: 390, 28 and 0.66 s) */
#define SK_COST_GUESS_Q8_BYTE 1360.0
#define SK_COST_GUESS_Q8_ROW_BYTE 97.0
#define SK_COST_GUESS_Q8_PLAIN_BYTE 2.3

/* load.c: one event to the options' log callback (nothing without one), formatted into at
 * most 511 bytes. */
void sk_model_log(skycmd_log_fn log, void *ud, int level, const char *fmt, ...) SK_PRINTF(4, 5);
/* bf16x3.c: SKYCMD_WEIGHTS_BF16X3: the encoder and decision-head matrices on the CPU's BF16
 * matrix unit where one is usable (else unchanged, logged). */
int sk_model_to_bf16x3(sk_model *m, skycmd_log_fn log, void *log_ud, sk_err *e);
/* The BF16 unit SKYCMD_WEIGHTS_BF16X3 takes here: the AMX tiles, else BFMMLA, else none. */
enum { SK_BF16_UNIT_NONE = 0, SK_BF16_UNIT_AMX = 1, SK_BF16_UNIT_NEON = 2 };
int sk_bf16x3_unit(void);
/* bf16x3.c: the int8 modes on AMX: the float matrices they leave (the decision head's, the
 * encoder's kept in f32) on bf16x3 tiles (no-op where the tiles are not usable). */
int sk_model_int8_floats_to_amx_bf16(sk_model *m, skycmd_log_fn log, void *log_ud, sk_err *e);

#endif /* SK_MODEL_INTERNAL_H */
