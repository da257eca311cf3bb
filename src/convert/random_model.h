/*
 * random_model.h - deterministic random System One models ("s1-pico", "s1-nano",
 * "s1-micro", "base", "large", and mmBERT's "mmbert-small", "mmbert-base"), built as a complete Laya checkpoint (F32 safetensors, the
 * three configs and a real tokenizer.json: byte-level BPE, or for the mmbert presets the
 * Gemma-style SentencePiece BPE of sk_tokenizer_random_spm_json with 256000 tokens) that the Python reference loads,
 * and that converts to GGUF through the same path as a trained checkpoint.
 *
 * Contract:
 *  - Same preset + seed + options => the same bytes on every machine: the generator uses
 *    splitmix64 and an Irwin-Hall normal (sums and products only, no libm), so no platform
 *    rounding difference can creep in.
 *  - Weights are scaled so that answers are not uniform: residual updates of the order of
 *    the stream itself, scorer weights that spread logits by O(1), distinct type embeddings.
 *  - `massive` > 0 plants that many residual channels ~20x larger than the rest (via the
 *    embedding norm weight), with the matrices that read the stream shrunk by 1/20 on those
 *    input columns, as trained encoders do; Q8_0 then loses accuracy exactly as on real ones.
 *  - A preset name ending in "-xt" (e.g. "s1-pico-xt") stores temperatures outside the
 *    runtime clamp [0.5, 5] (choice:11+ = 0.1, score:3-5 = 7.0) to exercise the clamp.
 */
#ifndef SK_RANDOM_MODEL_H
#define SK_RANDOM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "laya.h"

typedef struct sk_random_preset {
    const char *name;
    uint32_t hidden, heads, layers, intermediate, vocab, head_layers;
    /* mmBERT shapes: a Gemma-style tokenizer (<pad>=0 <eos>=1 <bos>=2 <unk>=3 <mask>=4),
     * max_len 1024 / head_max_len 256, local window 128, local RoPE base 160000 */
    int mmbert;
} sk_random_preset;

/* NULL if unknown. `extreme` (may be NULL) is set for the "-xt" variants. */
const sk_random_preset *sk_random_find_preset(const char *name, int *extreme);

typedef struct sk_random_ckpt {
    char *rl_config;         /* rl_agent_config.json */
    char *enc_config;        /* encoder/config.json */
    char *config;            /* config.json (informational) */
    char *tokenizer;         /* tokenizer/tokenizer.json */
    char *tok_config;        /* tokenizer/tokenizer_config.json */
    char *special_map;       /* tokenizer/special_tokens_map.json */
    uint8_t *safetensors;    /* model.safetensors */
    size_t safetensors_len;
    uint64_t n_params;       /* parameters that go into the GGUF (act_head, temperature excluded) */
} sk_random_ckpt;

int sk_random_build(const char *preset, uint64_t seed, uint32_t massive, sk_random_ckpt *out,
                    sk_err *e);
void sk_random_free(sk_random_ckpt *c);

/* Write the checkpoint as a directory (built beside it and renamed into place: no partial
 * directory on failure; an existing empty directory is replaced, a non-empty one refused;
 * a symbolic link is followed to its target, as every output's is (src/util/util.h); a
 * file, a device, a FIFO or a socket is refused, never replaced). */
int sk_random_write_dir(const sk_random_ckpt *c, const char *dir, sk_err *e);
/* Open it as an sk_laya (borrowing c's safetensors bytes). */
int sk_random_open(const sk_random_ckpt *c, sk_laya **out, sk_err *e);

#endif
