/*
 * laya.h - a Laya checkpoint (spec section 1): rl_agent_config.json, encoder/config.json,
 * model.safetensors and tokenizer/{tokenizer.json, tokenizer_config.json}, read from a
 * directory or from memory, validated, and converted to one GGUF file the way llama.cpp's
 * converter (ModernBertDecisionModel) does it (spec sections 6.1, 6.2, 6.3 and 7).
 *
 * Contract:
 *  - Every file is outside input. A missing file, bad JSON, a missing or ill-typed key, a
 *    tensor with a wrong shape or dtype, a missing or unknown tensor: SKYCMD_E_IO /
 *    SKYCMD_E_FORMAT / SKYCMD_E_UNSUPPORTED with a message naming the file and key/tensor.
 *  - The safetensors file is memory-mapped and never copied; tensor values are widened to
 *    f32 one tensor at a time during conversion.
 *  - Temperatures are stored as given (the runtime clamps); only non-numbers, non-finite
 *    and non-positive values are refused, because llama.cpp refuses them at load.
 *  - The output is written atomically: on any failure no output file exists.
 */
#ifndef SK_LAYA_H
#define SK_LAYA_H

#include <stddef.h>
#include <stdint.h>

#include "../safetensors/safetensors.h"
#include "../util/util.h"

#define SK_LAYA_MAX_BUCKETS 32

typedef struct sk_laya_bucket {
    char laya[24];  /* "choice:3-5" as in rl_agent_config.json */
    char key[24];   /* "choice.3_5" as in GGUF */
    float value;
} sk_laya_bucket;

typedef struct sk_laya_config {
    /* rl_agent_config.json */
    uint32_t head_layers;
    uint32_t max_len;
    uint32_t head_max_len;
    uint32_t n_act;         /* len(act_costs) + 1 */
    uint32_t option_layout; /* 0 sequential, 1 parallel ("option_layout") */
    float temperature[3];   /* choice, score, noul */
    size_t n_buckets;
    sk_laya_bucket buckets[SK_LAYA_MAX_BUCKETS];
    /* encoder/config.json */
    uint32_t vocab_size;
    uint32_t hidden;
    uint32_t n_layers;
    uint32_t n_heads;
    uint32_t intermediate;
    uint32_t max_position;
    uint32_t local_attention;
    uint32_t global_every;
    float global_theta;
    float local_theta;
    float norm_eps;
    char hidden_activation[32];
} sk_laya_config;

/* The raw pieces of a checkpoint. Strings need not be NUL-terminated (lengths given). */
typedef struct sk_laya_sources {
    const char *rl_config;   size_t rl_config_len;
    const char *enc_config;  size_t enc_config_len;
    const char *tokenizer;   size_t tokenizer_len;
    const char *tok_config;  size_t tok_config_len;
    const uint8_t *safetensors; size_t safetensors_len;
} sk_laya_sources;

typedef struct sk_laya {
    sk_laya_config cfg;
    sk_safetensors *st;
    char *tokenizer;      size_t tokenizer_len;   /* owned copies */
    char *tok_config;     size_t tok_config_len;
    char *dir_name;       /* basename of the directory ("" from memory) */
    char *label;          /* "dir/" prefix used in messages */
} sk_laya;

/* Parse only the two config files (tests use this to probe error messages). */
int sk_laya_parse_rl_config(const char *json, size_t len, const char *label, sk_laya_config *c,
                            sk_err *e);
int sk_laya_parse_enc_config(const char *json, size_t len, const char *label, sk_laya_config *c,
                             sk_err *e);

int sk_laya_open_dir(const char *dir, sk_laya **out, sk_err *e);
/* The safetensors bytes are borrowed (must outlive the checkpoint); the rest is copied. */
int sk_laya_open_mem(const sk_laya_sources *src, sk_laya **out, sk_err *e);
void sk_laya_free(sk_laya *l);

/* "choice:3-5" -> "choice.3_5" (llama.cpp's rewrite: ':' -> '.', '-' -> '_', trailing '+'
 * dropped). Returns 0, or -1 when the name is not "<choice|score|noul>:<2|3-5|6-10|11+>". */
int sk_laya_bucket_key(const char *laya, char *key, size_t key_size);

/* Conversion options (the public skycmd_options map onto these). */
typedef struct sk_convert_opts {
    uint32_t type;        /* SK_GGML_F32/F16/BF16/Q8_0 for encoder matrices */
    uint32_t head_type;   /* for the decision head */
    const char *name;     /* general.name; NULL = directory name */
    const char *pre;      /* tokenizer.ggml.pre; NULL = "gpt-2" */
    skycmd_progress_fn progress;
    void *progress_ud;
} sk_convert_opts;

/* The GGUF type a tensor gets under the type policy of docs/format.md §5.2 (ne0 = innermost
 * dimension): sk_quant_policy (src/quant/type_policy.c) with o's type and head_type. */
uint32_t sk_convert_tensor_type(const char *gguf_name, int is_head, uint32_t n_dims,
                                uint64_t ne0, const sk_convert_opts *o);

/* The systemone chat template (docs/format.md §6.3) built from the special token texts. *out for
 * free(). */
int sk_laya_systemone_template(const char *cls, const char *sep, const char *mask, char **out);

/* Convert to GGUF at out_path (atomic). */
int sk_laya_to_gguf(const sk_laya *l, const sk_convert_opts *o, const char *out_path, sk_err *e);
/* Same, into memory (skycmd_model_open of a directory; tests). *out for free(). Progress:
 * the tensors' output bytes made, of all of them (there is no writing phase). */
int sk_laya_to_gguf_mem(const sk_laya *l, const sk_convert_opts *o, uint8_t **out,
                        size_t *size, sk_err *e);

#endif /* SK_LAYA_H */
