/*
 * laya_to_gguf.c - a validated Laya checkpoint to one GGUF file, key by key as llama.cpp's
 * ModernBertDecisionModel converter writes it (docs/format.md §2, §3 and §6), with the tensor
 * renames of docs/format.md §4, the systemone template of §6.3 and the type policy of §5.2
 * (which src/quant/type_policy.c holds).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gguf/gguf.h"
#include "../quant/quant.h"
#include "../tokenizer/tokenizer.h"
#include "laya.h"
#include "laya_specs.h"

#define ARCH "modern-bert"

uint32_t sk_convert_tensor_type(const char *gguf_name, int is_head, uint32_t n_dims,
                                uint64_t ne0, const sk_convert_opts *o) {
    return sk_quant_policy(gguf_name, is_head, n_dims, ne0, o->type, o->head_type);
}

int sk_laya_systemone_template(const char *cls, const char *sep, const char *mask, char **out) {
    /* One line, exactly the converter's _systemone_template for Laya, with the checkpoint's
     * own special token texts. */
#define TJ(x) "{{ " x " if " x " is string else " x " | tojson }}"
    sk_buf b;
    sk_buf_init(&b);
    sk_buf_printf(&b, "%s{{ type }} question: " TJ("instructions") "%s{%% for o in options %%}%s ",
                  cls, sep, mask);
    sk_buf_puts(&b,
                "{% if type == 'choice' %}{{ o.key }}{% if o.description %}: " TJ("o.description")
                "{% endif %}{% elif type == 'score' %}level {{ o.key }}: " TJ("o.description")
                "{% else %}{{ o.key }}: {% if o.description %}" TJ("o.description")
                "{% elif o.key == 'true' %}yes, the statement holds{% else %}no, the statement "
                "does not hold{% endif %}{% endif %}{% endfor %}");
    sk_buf_printf(&b, "%s" TJ("state") "%s", sep, sep);
#undef TJ
    *out = sk_buf_detach(&b);
    return *out ? SKYCMD_OK : SKYCMD_E_NOMEM;
}

static uint32_t file_type(uint32_t t) {
    switch (t) {
    case SK_GGML_F32: return 0;   /* LLAMA_FTYPE_ALL_F32 */
    case SK_GGML_F16: return 1;   /* MOSTLY_F16 */
    case SK_GGML_Q8_0: return 7;  /* MOSTLY_Q8_0 */
    case SK_GGML_BF16: return 32; /* MOSTLY_BF16 */
    default: return 0;
    }
}

static int valid_type(uint32_t t) {
    return t == SK_GGML_F32 || t == SK_GGML_F16 || t == SK_GGML_BF16 || t == SK_GGML_Q8_0;
}

/* Metadata of docs/format.md §2-§3 (the tokenizer part, §6, comes from the tokenizer
 * module). */
static int add_metadata(sk_gguf_writer *w, const sk_laya *l, const sk_convert_opts *o,
                        sk_err *e) {
    const sk_laya_config *c = &l->cfg;
    const char *name = o->name ? o->name : (l->dir_name && l->dir_name[0] ? l->dir_name : "model");
    uint32_t n_blocks = c->n_layers + c->head_layers;
    uint32_t *ff = sk_malloc_array(n_blocks, sizeof *ff);
    if (!ff) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    for (uint32_t i = 0; i < n_blocks; i++) {
        uint32_t v = i < c->n_layers ? c->intermediate : 4 * c->hidden;
        uint8_t *p = (uint8_t *)&ff[i]; /* little-endian, whatever the host */
        p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
    }
    int s = 0;
#define CK(call) do { if (!s) s = (call); } while (0)
    CK(sk_gguf_writer_add_str(w, "general.architecture", ARCH));
    CK(sk_gguf_writer_add_str(w, "general.type", "model"));
    CK(sk_gguf_writer_add_str(w, "general.name", name));
    CK(sk_gguf_writer_add_u32(w, "general.file_type", file_type(o->type)));
    CK(sk_gguf_writer_add_u32(w, "general.quantization_version", 2));
    CK(sk_gguf_writer_add_u32(w, ARCH ".block_count", n_blocks));
    CK(sk_gguf_writer_add_u32(w, ARCH ".context_length", c->max_position));
    CK(sk_gguf_writer_add_u32(w, ARCH ".embedding_length", c->hidden));
    CK(sk_gguf_writer_add_arr(w, ARCH ".feed_forward_length", SK_GGUF_U32, ff, n_blocks));
    CK(sk_gguf_writer_add_u32(w, ARCH ".attention.head_count", c->n_heads));
    CK(sk_gguf_writer_add_f32(w, ARCH ".attention.layer_norm_epsilon", c->norm_eps));
    CK(sk_gguf_writer_add_bool(w, ARCH ".attention.causal", 0));
    CK(sk_gguf_writer_add_u32(w, ARCH ".attention.sliding_window", c->local_attention));
    CK(sk_gguf_writer_add_u32(w, ARCH ".attention.sliding_window_pattern", c->global_every));
    CK(sk_gguf_writer_add_f32(w, ARCH ".rope.freq_base", c->global_theta));
    CK(sk_gguf_writer_add_f32(w, ARCH ".rope.freq_base_swa", c->local_theta));
    CK(sk_gguf_writer_add_str(w, ARCH ".rope.scaling.type", "none"));
    CK(sk_gguf_writer_add_u32(w, ARCH ".vocab_size", c->vocab_size));
    CK(sk_gguf_writer_add_str(w, ARCH ".hidden_activation", c->hidden_activation));
    CK(sk_gguf_writer_add_str(w, ARCH ".decision.type", "laya"));
    CK(sk_gguf_writer_add_u32(w, ARCH ".decision.block_count", c->head_layers));
    CK(sk_gguf_writer_add_u32(w, ARCH ".decision.max_head_tokens", c->head_max_len));
    /* not read by llama.cpp: the Laya max_len, the sequence budget of the Python runtime */
    CK(sk_gguf_writer_add_u32(w, ARCH ".decision.max_tokens", c->max_len));
    /* not read by llama.cpp either (which therefore answers such a file with the sequential
     * layout, wrongly): laya's parallel option layout */
    if (c->option_layout == 1)
        CK(sk_gguf_writer_add_str(w, ARCH ".decision.option_layout", "parallel"));
    static const char *tn[3] = {"choice", "score", "noul"};
    char key[96];
    for (int i = 0; i < 3; i++) {
        snprintf(key, sizeof key, ARCH ".decision.temperature.%s", tn[i]);
        CK(sk_gguf_writer_add_f32(w, key, c->temperature[i]));
    }
    for (size_t i = 0; i < c->n_buckets; i++) {
        snprintf(key, sizeof key, ARCH ".decision.temperature.%s", c->buckets[i].key);
        CK(sk_gguf_writer_add_f32(w, key, c->buckets[i].value));
    }
#undef CK
    free(ff);
    if (s) return sk_fail(e, s, "cannot add GGUF metadata (%s)", skycmd_status_name(s));
    return SKYCMD_OK;
}

static int add_tokenizer(sk_gguf_writer *w, const sk_laya *l, const sk_convert_opts *o,
                         sk_err *e) {
    skycmd_tokenizer *tok = NULL;
    int s = sk_tokenizer_from_json(l->tokenizer, l->tokenizer_len, l->tok_config,
                                   l->tok_config_len, &tok, e);
    if (s) {
        sk_err_prefix(e, "%stokenizer", l->label);
        return s;
    }
    /* An embedding table may have more rows than the tokenizer has ids (ModernBERT pads its
     * vocabulary to a multiple of 64): laya never looks the extra rows up, and the GGUF token
     * list is padded to the rows as llama.cpp's converter pads it. Fewer rows than ids would
     * leave tokens without an embedding. */
    size_t nv = sk_tokenizer_vocab_size(tok);
    if (nv > l->cfg.vocab_size) {
        sk_tokenizer_free(tok);
        return sk_fail(e, SKYCMD_E_UNSUPPORTED,
                       "%stokenizer/tokenizer.json has %zu tokens but encoder/config.json "
                       "\"vocab_size\" is %u (the embedding rows): ids from %u up would have "
                       "no embedding", l->label, nv, l->cfg.vocab_size, l->cfg.vocab_size);
    }
    static const struct { int which; const char *key; } need[3] = {
        {SKYCMD_SPECIAL_CLS, "cls_token"}, {SKYCMD_SPECIAL_SEP, "sep_token"},
        {SKYCMD_SPECIAL_MASK, "mask_token"}};
    const char *txt[3];
    for (int i = 0; i < 3; i++) {
        txt[i] = sk_tokenizer_special_text(tok, need[i].which);
        if (!txt[i] || !txt[i][0] || sk_tokenizer_special(tok, need[i].which) < 0) {
            sk_tokenizer_free(tok);
            return sk_fail(e, SKYCMD_E_FORMAT,
                           "%stokenizer/tokenizer_config.json: no usable \"%s\" (a Laya model "
                           "needs [CLS], [SEP] and [MASK] tokens)",
                           l->label, need[i].key);
        }
    }
    /* The llama.cpp pre-tokenizer (llama-vocab.cpp, build 11434) that runs this pipeline as
     * tokenizers does. "mmbert" is a Metaspace one: every fragment between special tokens
     * starts with U+2581 and words split at each U+2581 (its converter also makes the
     * all-U+2581 user tokens normal), so it fits a Metaspace tokenizer.json. The Gemma
     * converter's shape (normalizer Replace " " -> U+2581, no prefix, BPE over the whole
     * text) is what "gemma4" runs: spaces escaped, split only at newlines. Measured with
     * bench/compare/llama_tokenize_compare.py on tests/fixtures/gemma_tok: "gemma4" gives
     * tokenizers' ids for 100 % of the 256k generated tokenizer's corpus and 99.6 % of
     * gemma3000's (the rest: BPE merges across a newline), "mmbert" 5-6 % (a U+2581 prefix
     * tokenizers never adds); "mmbert" on the Metaspace variant 86 % (docs/compat.md). */
    const char *pre = o->pre ? o->pre
                      : tok->pretok == SK_PRETOK_BYTELEVEL  ? "gpt-2"
                      : tok->pretok == SK_PRETOK_METASPACE ? "mmbert"
                                                            : "gemma4";
    s = sk_tokenizer_write_gguf_padded(tok, w, pre, l->cfg.vocab_size, e);
    if (!s) {
        /* One token type per question type; llama.cpp's loader requires 3. The tokenizer
         * module may already have written it (then the add reports a duplicate). */
        int r = sk_gguf_writer_add_u32(w, "tokenizer.ggml.token_type_count", 3);
        if (r && r != SKYCMD_E_INVALID_ARGUMENT) s = sk_fail(e, r, "cannot add token_type_count");
    }
    char *tmpl = NULL;
    if (!s && sk_laya_systemone_template(txt[0], txt[1], txt[2], &tmpl))
        s = sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    if (!s) {
        static const char *names[1] = {"systemone"};
        int r = sk_gguf_writer_add_str(w, "tokenizer.chat_template.systemone", tmpl);
        if (!r) r = sk_gguf_writer_add_arr_str(w, "tokenizer.chat_templates", names, 1);
        if (r) s = sk_fail(e, r, "cannot add the systemone chat template");
    }
    free(tmpl);
    sk_tokenizer_free(tok);
    return s;
}

/* Progress covers two phases of equal weight: converting the tensors (output bytes made)
 * and writing them (the writer's byte count), so the bar moves during both. */
typedef struct conv_progress {
    skycmd_progress_fn fn;
    void *ud;
    uint64_t half;  /* output tensor bytes */
} conv_progress;

static int write_progress(void *ud, uint64_t done, uint64_t total) {
    conv_progress *p = ud;
    uint64_t x = total ? (uint64_t)((double)done / (double)total * (double)p->half) : p->half;
    return p->fn(p->ud, p->half + x, 2 * p->half);
}

typedef struct conv_state {
    sk_gguf_writer *w;
    void **bufs;
    size_t n_bufs;
    conv_progress prog;
    int to_mem;   /* sk_laya_to_gguf_mem: no writing phase, progress is the tensors alone */
} conv_state;

static void conv_free(conv_state *cs) {
    sk_gguf_writer_free(cs->w);
    for (size_t i = 0; i < cs->n_bufs; i++) free(cs->bufs[i]);
    free(cs->bufs);
    memset(cs, 0, sizeof *cs);
}

static int add_tensors(conv_state *cs, const sk_laya *l, const sk_convert_opts *o, sk_err *e) {
    sk_laya_spec *sp;
    size_t n;
    int s = sk_laya_specs(&l->cfg, &sp, &n, e);
    if (s) return s;
    cs->bufs = sk_calloc_array(n, sizeof *cs->bufs);
    if (!cs->bufs) {
        free(sp);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    }
    /* total output bytes first, for the progress callback */
    cs->prog.half = 0;
    for (size_t i = 0; i < n; i++) {
        if (!sp[i].gguf[0]) continue;
        uint64_t ne0 = sp[i].n_dims == 2 ? sp[i].shape[1] : sp[i].shape[0];
        uint64_t rows = sp[i].n_dims == 2 ? sp[i].shape[0] : 1;
        uint32_t ty = sk_convert_tensor_type(sp[i].gguf, sp[i].is_head, sp[i].n_dims, ne0, o);
        cs->prog.half += sk_ggml_row_size(ty, ne0) * rows;
    }
    uint64_t made = 0;
    float *f32 = NULL;
    size_t f32_cap = 0;
    for (size_t i = 0; i < n && !s; i++) {
        if (!sp[i].gguf[0]) continue; /* act_head.*, temperature: not part of the GGUF model */
        const sk_st_tensor *t = sk_st_find(l->st, sp[i].hf);
        if (!t) {
            s = sk_fail(e, SKYCMD_E_INTERNAL, "tensor %s vanished", sp[i].hf);
            break;
        }
        size_t ne = (size_t)t->n_elements;
        if ((uint64_t)ne != t->n_elements) {
            s = sk_fail(e, SKYCMD_E_TOO_LARGE, "tensor %s too large", sp[i].hf);
            break;
        }
        if (ne > f32_cap) {
            free(f32);
            f32 = sk_malloc_array(ne, sizeof *f32);
            f32_cap = f32 ? ne : 0;
            if (!f32) {
                s = sk_fail(e, SKYCMD_E_NOMEM, "out of memory converting %s", sp[i].hf);
                break;
            }
        }
        s = sk_st_to_f32(t, f32, e);
        if (s) break;
        /* the checkpoint's mapped bytes of it are not read again: out of the resident set, so
         * a conversion holds the file once (as its output), not twice */
        sk_st_release(l->st, t);
        size_t bad = sk_first_nonfinite(f32, ne);
        if (bad < ne) {
            s = sk_fail(e, SKYCMD_E_FORMAT, "tensor %s: element %zu is %s; a model with "
                        "non-finite weights cannot answer", sp[i].hf, bad,
                        isnan(f32[bad]) ? "NaN" : "infinite");
            break;
        }
        uint64_t ne_g[2];
        uint32_t nd = sp[i].n_dims;
        if (nd == 2) {
            ne_g[0] = sp[i].shape[1];
            ne_g[1] = sp[i].shape[0];
        } else {
            ne_g[0] = sp[i].shape[0];
            ne_g[1] = 1;
        }
        uint32_t ty = sk_convert_tensor_type(sp[i].gguf, sp[i].is_head, nd, ne_g[0], o);
        uint64_t row = sk_ggml_row_size(ty, ne_g[0]);
        uint64_t nbytes;
        if (!row || sk_mul_u64(row, nd == 2 ? ne_g[1] : 1, &nbytes) ||
            (uint64_t)(size_t)nbytes != nbytes) {
            s = sk_fail(e, SKYCMD_E_INTERNAL, "tensor %s: cannot size type %u", sp[i].gguf, ty);
            break;
        }
        void *buf = malloc(nbytes ? (size_t)nbytes : 1);
        if (!buf) {
            s = sk_fail(e, SKYCMD_E_NOMEM, "out of memory converting %s", sp[i].hf);
            break;
        }
        cs->bufs[cs->n_bufs++] = buf;
        s = sk_ggml_from_f32(ty, f32, buf, ne);
        if (s) {
            s = sk_fail(e, s, "tensor %s: conversion to %s failed", sp[i].gguf,
                        sk_ggml_type_name(ty) ? sk_ggml_type_name(ty) : "?");
            break;
        }
        s = sk_gguf_writer_add_tensor(cs->w, sp[i].gguf, nd, ne_g, ty, buf, nbytes, 0, e);
        made += nbytes;
        if (!s && o->progress &&
            o->progress(o->progress_ud, made, cs->to_mem ? cs->prog.half : 2 * cs->prog.half))
            s = sk_fail(e, SKYCMD_E_CANCELLED, "conversion cancelled");
    }
    free(f32);
    free(sp);
    return s;
}

static int build(conv_state *cs, const sk_laya *l, const sk_convert_opts *o, int to_mem, sk_err *e) {
    memset(cs, 0, sizeof *cs);
    cs->to_mem = to_mem;
    if (!valid_type(o->type) || !valid_type(o->head_type))
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "convert: unsupported tensor type");
    cs->w = sk_gguf_writer_new(0);
    if (!cs->w) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    int s = add_metadata(cs->w, l, o, e);
    if (!s) s = add_tokenizer(cs->w, l, o, e);
    if (!s) s = add_tensors(cs, l, o, e);
    return s;
}

int sk_laya_to_gguf(const sk_laya *l, const sk_convert_opts *o, const char *out_path, sk_err *e) {
    conv_state cs;
    int s = build(&cs, l, o, 0, e);
    if (!s) {
        cs.prog.fn = o->progress;
        cs.prog.ud = o->progress_ud;
        s = sk_gguf_writer_write(cs.w, out_path, o->progress ? write_progress : NULL, &cs.prog, e);
    }
    conv_free(&cs);
    return s;
}

int sk_laya_to_gguf_mem(const sk_laya *l, const sk_convert_opts *o, uint8_t **out,
                        size_t *size, sk_err *e) {
    conv_state cs;
    *out = NULL;
    *size = 0;
    int s = build(&cs, l, o, 1, e);
    if (!s) s = sk_gguf_writer_write_mem(cs.w, out, size, e);
    conv_free(&cs);
    return s;
}
