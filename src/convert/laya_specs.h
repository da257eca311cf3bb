/*
 * laya_specs.h - the tensor list of a Laya checkpoint for a given configuration: HF name,
 * GGUF name (docs/format.md §4), PyTorch shape and role. One table drives validation,
 * conversion and random model generation, so the three cannot disagree.
 */
#ifndef SK_LAYA_SPECS_H
#define SK_LAYA_SPECS_H

#include "laya.h"

enum sk_laya_kind {
    SK_LK_EMBED,       /* token embeddings */
    SK_LK_NORM,        /* LayerNorm weight */
    SK_LK_BIAS,        /* LayerNorm bias or linear bias */
    SK_LK_MAT_IN,      /* matrix reading the residual stream (qkv, up, cls) */
    SK_LK_MAT_OUT,     /* matrix writing the residual stream (attn out, ffn down) */
    SK_LK_TYPE_EMB,    /* type_emb */
    SK_LK_SCORER_OUT,  /* scorer.3.weight */
    SK_LK_ACT,         /* act_head.* (dropped by the converter) */
    SK_LK_TEMPERATURE  /* the unused temperature buffer (dropped) */
};

typedef struct sk_laya_spec {
    char hf[80];
    char gguf[48];       /* "" when dropped */
    uint32_t n_dims;
    uint64_t shape[2];   /* PyTorch order */
    int is_head;         /* head block, token_types or cls.* */
    int kind;
    int block;           /* GGUF block index, -1 if none */
} sk_laya_spec;

/* Fills a malloc'ed array (*out for free()). */
int sk_laya_specs(const sk_laya_config *c, sk_laya_spec **out, size_t *n, sk_err *e);

#endif
