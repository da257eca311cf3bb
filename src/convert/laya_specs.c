/* laya_specs.c - the tensor table of a Laya checkpoint (see laya_specs.h). */
#include "laya_specs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct spec_list {
    sk_laya_spec *v;
    size_t n, cap;
    int failed;
} spec_list;

static void add(spec_list *l, const char *hf, const char *gg, uint32_t nd, uint64_t s0,
                uint64_t s1, int is_head, int kind, int block) {
    if (l->failed) return;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 128;
        sk_laya_spec *nv = realloc(l->v, nc * sizeof *nv);
        if (!nv) {
            l->failed = 1;
            return;
        }
        l->v = nv;
        l->cap = nc;
    }
    sk_laya_spec *s = &l->v[l->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->hf, sizeof s->hf, "%s", hf);
    snprintf(s->gguf, sizeof s->gguf, "%s", gg ? gg : "");
    s->n_dims = nd;
    s->shape[0] = s0;
    s->shape[1] = s1;
    s->is_head = is_head;
    s->kind = kind;
    s->block = block;
}

int sk_laya_specs(const sk_laya_config *c, sk_laya_spec **out, size_t *n, sk_err *e) {
    *out = NULL;
    *n = 0;
    spec_list l = {0};
    const uint64_t d = c->hidden, I = c->intermediate, V = c->vocab_size;
    char hf[80], gg[48];
    add(&l, "encoder.embeddings.tok_embeddings.weight", "token_embd.weight", 2, V, d, 0,
        SK_LK_EMBED, -1);
    add(&l, "encoder.embeddings.norm.weight", "token_embd_norm.weight", 1, d, 0, 0, SK_LK_NORM,
        -1);
    for (uint32_t i = 0; i < c->n_layers; i++) {
        int b = (int)i;
#define ENC(suffix_hf, suffix_gg, nd, s0, s1, kind)                               \
    do {                                                                          \
        snprintf(hf, sizeof hf, "encoder.layers.%u.%s", i, suffix_hf);            \
        snprintf(gg, sizeof gg, "blk.%u.%s", i, suffix_gg);                       \
        add(&l, hf, gg, nd, s0, s1, 0, kind, b);                                  \
    } while (0)
        if (i > 0) ENC("attn_norm.weight", "attn_norm.weight", 1, d, 0, SK_LK_NORM);
        ENC("attn.Wqkv.weight", "attn_qkv.weight", 2, 3 * d, d, SK_LK_MAT_IN);
        ENC("attn.Wo.weight", "attn_output.weight", 2, d, d, SK_LK_MAT_OUT);
        ENC("mlp_norm.weight", "ffn_norm.weight", 1, d, 0, SK_LK_NORM);
        ENC("mlp.Wi.weight", "ffn_up.weight", 2, 2 * I, d, SK_LK_MAT_IN);
        ENC("mlp.Wo.weight", "ffn_down.weight", 2, d, I, SK_LK_MAT_OUT);
#undef ENC
    }
    add(&l, "encoder.final_norm.weight", "output_norm.weight", 1, d, 0, 0, SK_LK_NORM, -1);
    for (uint32_t j = 0; j < c->head_layers; j++) {
        uint32_t b = c->n_layers + j;
#define HEAD(suffix_hf, suffix_gg, nd, s0, s1, kind)                              \
    do {                                                                          \
        snprintf(hf, sizeof hf, "head.layers.%u.%s", j, suffix_hf);               \
        snprintf(gg, sizeof gg, "blk.%u.%s", b, suffix_gg);                       \
        add(&l, hf, gg, nd, s0, s1, 1, kind, (int)b);                             \
    } while (0)
        HEAD("norm1.weight", "attn_norm.weight", 1, d, 0, SK_LK_NORM);
        HEAD("norm1.bias", "attn_norm.bias", 1, d, 0, SK_LK_BIAS);
        HEAD("self_attn.in_proj_weight", "attn_qkv.weight", 2, 3 * d, d, SK_LK_MAT_IN);
        HEAD("self_attn.in_proj_bias", "attn_qkv.bias", 1, 3 * d, 0, SK_LK_BIAS);
        HEAD("self_attn.out_proj.weight", "attn_output.weight", 2, d, d, SK_LK_MAT_OUT);
        HEAD("self_attn.out_proj.bias", "attn_output.bias", 1, d, 0, SK_LK_BIAS);
        HEAD("norm2.weight", "ffn_norm.weight", 1, d, 0, SK_LK_NORM);
        HEAD("norm2.bias", "ffn_norm.bias", 1, d, 0, SK_LK_BIAS);
        HEAD("linear1.weight", "ffn_up.weight", 2, 4 * d, d, SK_LK_MAT_IN);
        HEAD("linear1.bias", "ffn_up.bias", 1, 4 * d, 0, SK_LK_BIAS);
        HEAD("linear2.weight", "ffn_down.weight", 2, d, 4 * d, SK_LK_MAT_OUT);
        HEAD("linear2.bias", "ffn_down.bias", 1, d, 0, SK_LK_BIAS);
#undef HEAD
    }
    add(&l, "type_emb.weight", "token_types.weight", 2, 3, d, 1, SK_LK_TYPE_EMB, -1);
    add(&l, "scorer.0.weight", "cls.norm.weight", 1, d, 0, 1, SK_LK_NORM, -1);
    add(&l, "scorer.0.bias", "cls.norm.bias", 1, d, 0, 1, SK_LK_BIAS, -1);
    add(&l, "scorer.1.weight", "cls.weight", 2, d, d, 1, SK_LK_MAT_IN, -1);
    add(&l, "scorer.1.bias", "cls.bias", 1, d, 0, 1, SK_LK_BIAS, -1);
    add(&l, "scorer.3.weight", "cls.output.weight", 2, 1, d, 1, SK_LK_SCORER_OUT, -1);
    add(&l, "scorer.3.bias", "cls.output.bias", 1, 1, 0, 1, SK_LK_BIAS, -1);
    add(&l, "act_head.0.weight", NULL, 2, 256, d + 4, 1, SK_LK_ACT, -1);
    add(&l, "act_head.0.bias", NULL, 1, 256, 0, 1, SK_LK_ACT, -1);
    add(&l, "act_head.2.weight", NULL, 2, c->n_act, 256, 1, SK_LK_ACT, -1);
    add(&l, "act_head.2.bias", NULL, 1, c->n_act, 0, 1, SK_LK_ACT, -1);
    add(&l, "temperature", NULL, 1, 3, 0, 1, SK_LK_TEMPERATURE, -1);
    if (l.failed) {
        free(l.v);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    }
    *out = l.v;
    *n = l.n;
    return SKYCMD_OK;
}
