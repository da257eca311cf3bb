/*
 * test_convert.c - Laya checkpoint reading, conversion to GGUF and random models.
 *
 * Independent references:
 *  - tests/fixtures/convert/pylaya/ and pylaya_expected.json, written by the Python packages
 *    (safetensors, tokenizers, transformers) in tools/golden/check_convert.py: the tensors
 *    (FNV-1a of their f32 values), vocabulary and encodings our reader must see, and the
 *    GGUF metadata and tensor table re-derived in Python from llama.cpp's converter rules;
 *  - the tables of spec sections 6.1-6.3, transcribed below by hand;
 *  - the parameter counts of the seed's s1-pico/nano/micro models.
 * A corpus of damaged checkpoints (made from a fresh random one, one defect each) must each
 * fail with a message naming the file and key/tensor, and leave no output file.
 */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "convert/laya.h"
#include "convert/laya_specs.h"
#include "convert/random_model.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "safetensors/safetensors.h"
#include "skycmd.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

#define FX SKYCMD_FIXTURES "/convert/"

/* ---------------------------------------------------------------- helpers ---- */

static void spit(const char *path, const void *d, size_t n) {
    cr_assert_eq(tu_write_file(path, d, n), 0, "cannot write %s", path);
}

static int exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* A scratch directory per test process, made on first use; the suite's .fini removes it. */
static const char *tmpdir(void) {
    char dir[1024];
    if (!tu_scratch_path()[0]) tu_scratch_make(dir, sizeof dir, "convert", "tmp");
    return tu_scratch_path();
}

static void rm_rf(const char *p) {
    cr_assert_eq(tu_rm_rf(p), 0, "cannot remove %s", p);
}

/* Dequantize a GGUF tensor to f32 (caller frees). */
static float *deq(const sk_gguf_tensor *t) {
    float *v = malloc(t->n_elements * sizeof *v + 4);
    cr_assert(v);
    cr_assert_eq(sk_ggml_to_f32(t->type, t->data, v, t->n_elements), 0, "type %u", t->type);
    return v;
}

static void write_random_laya(const char *preset, const char *dir, int64_t seed) {
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    skycmd_options_set_int(o, SKYCMD_OPT_LAYOUT, SKYCMD_LAYOUT_LAYA);
    skycmd_options_set_int(o, SKYCMD_OPT_SEED, seed);
    int s = skycmd_random_model(preset, dir, o, err);
    cr_assert_eq(s, SKYCMD_OK, "%s", skycmd_error_message(err));
    skycmd_options_free(o);
    skycmd_error_free(err);
}

/* Each test runs in its own process: remove its scratch directory when it ends. */
TestSuite(convert, .fini = tu_scratch_remove);

static cJSON *expected(void) {
    return tu_load_json(FX "pylaya_expected.json");
}

/* ---------------------------------------------------------------- reader ----- */

Test(convert, pylaya_reader_sees_python_tensors_and_vocab) {
    sk_err e = {0};
    sk_laya *l = NULL;
    cr_assert_eq(sk_laya_open_dir(FX "pylaya", &l, &e), 0, "%s", e.msg);
    const sk_laya_config *c = &l->cfg;
    cr_assert_eq(c->hidden, 64);
    cr_assert_eq(c->n_layers, 2);
    cr_assert_eq(c->head_layers, 1);
    cr_assert_eq(c->intermediate, 48);
    cr_assert_eq(c->max_len, 128);
    cr_assert_eq(c->head_max_len, 64);
    cr_assert_eq(c->local_attention, 32);
    cr_assert_eq(c->global_every, 2);
    cr_assert_eq(c->global_theta, 80000.0f); /* transformers 4.x keys */
    cr_assert_eq(c->local_theta, 20000.0f);
    cr_assert_eq(c->n_act, 2);
    cr_assert_eq(c->temperature[0], 1.25f);
    cr_assert_eq(c->temperature[2], 2.0f);
    cr_assert_eq(c->n_buckets, 3);
    cr_assert_str_eq(c->buckets[0].key, "choice.3_5");
    cr_assert_str_eq(c->buckets[1].key, "choice.11");
    cr_assert_eq(c->buckets[1].value, 0.1f); /* stored as given: the runtime clamps */
    cr_assert_str_eq(c->buckets[2].key, "noul.2");
    cr_assert_str_eq(l->dir_name, "pylaya");

    cJSON *ex = expected();
    cJSON *ts = cJSON_GetObjectItem(ex, "tensors");
    cr_assert_eq((size_t)cJSON_GetArraySize(ts), sk_st_n_tensors(l->st));
    for (cJSON *it = ts->child; it; it = it->next) {
        const sk_st_tensor *t = sk_st_find(l->st, it->string);
        cr_assert(t, "tensor %s not read", it->string);
        cr_assert_str_eq(t->dtype, cJSON_GetObjectItem(it, "dtype")->valuestring);
        cJSON *sh = cJSON_GetObjectItem(it, "shape");
        cr_assert_eq((int)t->n_dims, cJSON_GetArraySize(sh));
        int d = 0;
        for (cJSON *v = sh->child; v; v = v->next, d++) cr_assert_eq(t->shape[d], (uint64_t)v->valuedouble);
        float *f = malloc(t->n_elements * 4 + 4);
        cr_assert_eq(sk_st_to_f32(t, f, &e), 0);
        char hex[20];
        snprintf(hex, sizeof hex, "%016llx", (unsigned long long)tu_fnv1a64(f, t->n_elements * 4, TU_FNV1A64_BASIS));
        cr_assert_str_eq(hex, cJSON_GetObjectItem(it, "fnv_f32")->valuestring, "tensor %s", it->string);
        free(f);
    }

    skycmd_tokenizer *tok = NULL;
    cr_assert_eq(sk_tokenizer_from_json(l->tokenizer, l->tokenizer_len, l->tok_config,
                                        l->tok_config_len, &tok, &e), 0, "%s", e.msg);
    cJSON *vocab = cJSON_GetObjectItem(ex, "vocab");
    cr_assert_eq(sk_tokenizer_vocab_size(tok), (size_t)cJSON_GetArraySize(vocab));
    int32_t id = 0;
    for (cJSON *v = vocab->child; v; v = v->next, id++)
        cr_assert_str_eq(sk_tokenizer_piece(tok, id), v->valuestring, "id %d", id);
    cJSON *encs = cJSON_GetObjectItem(ex, "encodings");
    for (cJSON *en = encs->child; en; en = en->next) {
        const char *text = cJSON_GetObjectItem(en, "text")->valuestring;
        sk_ids ids = {0};
        cr_assert_eq(sk_tokenizer_encode(tok, text, strlen(text), &ids, &e), 0, "%s", e.msg);
        cJSON *want = cJSON_GetObjectItem(en, "ids");
        cr_assert_eq(ids.n, (size_t)cJSON_GetArraySize(want), "%s", text);
        size_t i = 0;
        for (cJSON *w = want->child; w; w = w->next, i++) cr_assert_eq(ids.ids[i], (int32_t)w->valuedouble);
        sk_ids_free(&ids);
    }
    cr_assert_str_eq(sk_tokenizer_special_text(tok, SKYCMD_SPECIAL_MASK), "[MASK]");
    sk_tokenizer_free(tok);
    cJSON_Delete(ex);
    sk_laya_free(l);
}

/* ---------------------------------------------------------------- conversion vs Python rules */

static void check_against_expected(uint32_t type, uint32_t head_type, const char *key) {
    sk_err e = {0};
    sk_laya *l = NULL;
    cr_assert_eq(sk_laya_open_dir(FX "pylaya", &l, &e), 0, "%s", e.msg);
    sk_convert_opts o = {type, head_type, NULL, NULL, NULL, NULL};
    uint8_t *buf;
    size_t n;
    cr_assert_eq(sk_laya_to_gguf_mem(l, &o, &buf, &n, &e), 0, "%s", e.msg);
    sk_gguf *g;
    cr_assert_eq(sk_gguf_open_buffer(buf, n, &g, &e), 0, "%s", e.msg);
    cJSON *ex = expected();
    /* tensor table: names, ggml shapes and types, nothing more, nothing less */
    cJSON *tl = cJSON_GetObjectItem(cJSON_GetObjectItem(ex, "gguf"), key);
    cr_assert(tl, "%s", key);
    cr_assert_eq(sk_gguf_n_tensors(g), (size_t)cJSON_GetArraySize(tl));
    for (cJSON *row = tl->child; row; row = row->next) {
        const char *name = cJSON_GetArrayItem(row, 0)->valuestring;
        const sk_gguf_tensor *t = sk_gguf_find_tensor(g, name);
        cr_assert(t, "%s: missing tensor %s", key, name);
        cJSON *ne = cJSON_GetArrayItem(row, 1);
        cr_assert_eq((int)t->n_dims, cJSON_GetArraySize(ne), "%s", name);
        int d = 0;
        for (cJSON *v = ne->child; v; v = v->next, d++) cr_assert_eq(t->ne[d], (uint64_t)v->valuedouble, "%s", name);
        const char *tn = cJSON_GetArrayItem(row, 2)->valuestring;
        cr_assert_str_eq(sk_ggml_type_name(t->type), tn, "%s/%s: %s", key, name, tn);
    }
    /* metadata: every key of the Python derivation with its value */
    cJSON *md = cJSON_GetObjectItem(ex, "metadata");
    for (cJSON *it = md->child; it; it = it->next) {
        const char *k = it->string;
        cr_assert(sk_gguf_find_key(g, k) >= 0, "missing key %s", k);
        if (cJSON_IsString(it)) {
            sk_str s;
            cr_assert_eq(sk_gguf_get_str(g, k, &s), 0, "%s", k);
            cr_assert(sk_str_eq(s, it->valuestring), "%s = %.*s", k, (int)s.len, s.ptr);
        } else if (cJSON_IsBool(it)) {
            int b;
            cr_assert_eq(sk_gguf_get_bool(g, k, &b), 0, "%s", k);
            cr_assert_eq(b, cJSON_IsTrue(it), "%s", k);
        } else if (cJSON_IsNumber(it)) {
            const sk_gguf_value *v = sk_gguf_kv_value(g, (size_t)sk_gguf_find_key(g, k));
            if (v->type == SK_GGUF_F32) {
                cr_assert_eq((float)v->v.f, (float)it->valuedouble, "%s", k);
            } else {
                cr_assert_eq(v->type, SK_GGUF_U32, "%s must be u32", k);
                cr_assert_eq(v->v.u, (uint64_t)it->valuedouble, "%s", k);
            }
        } else if (cJSON_IsArray(it)) {
            const sk_gguf_value *a;
            cr_assert_eq(sk_gguf_get_arr(g, k, &a), 0, "%s", k);
            cr_assert_eq(a->v.arr.count, (uint64_t)cJSON_GetArraySize(it), "%s", k);
            sk_gguf_iter iter;
            sk_gguf_iter_init(&iter, a);
            sk_gguf_value ev;
            for (cJSON *w = it->child; w; w = w->next) {
                cr_assert(sk_gguf_iter_next(&iter, &ev));
                if (cJSON_IsString(w)) cr_assert(sk_str_eq(ev.v.s, w->valuestring), "%s", k);
                else cr_assert_eq(ev.v.u, (uint64_t)w->valuedouble, "%s", k);
            }
            if (strcmp(k, "modern-bert.feed_forward_length") == 0) cr_assert_eq(a->v.arr.elem_type, SK_GGUF_U32);
        }
    }
    cJSON_Delete(ex);
    sk_gguf_close(g);
    free(buf);
    sk_laya_free(l);
}

Test(convert, pylaya_default_types_match_python_rules) { check_against_expected(SK_GGML_F16, SK_GGML_F32, "F16/F32"); }
Test(convert, pylaya_q8_0_types_match_python_rules) { check_against_expected(SK_GGML_Q8_0, SK_GGML_F32, "Q8_0/F32"); }
Test(convert, pylaya_bf16_head_types_match_python_rules) { check_against_expected(SK_GGML_F32, SK_GGML_BF16, "F32/BF16"); }

/* ---------------------------------------------------------------- spec 6.1-6.3 tables */

static const char *k_template_s1 =
    "[CLS]{{ type }} question: {{ instructions if instructions is string else instructions | tojson }}[SEP]"
    "{% for o in options %}[MASK] {% if type == 'choice' %}{{ o.key }}{% if o.description %}: "
    "{{ o.description if o.description is string else o.description | tojson }}{% endif %}"
    "{% elif type == 'score' %}level {{ o.key }}: {{ o.description if o.description is string else "
    "o.description | tojson }}{% else %}{{ o.key }}: {% if o.description %}{{ o.description if "
    "o.description is string else o.description | tojson }}{% elif o.key == 'true' %}yes, the statement "
    "holds{% else %}no, the statement does not hold{% endif %}{% endif %}{% endfor %}[SEP]{{ state if "
    "state is string else state | tojson }}[SEP]";

Test(convert, random_pico_has_every_key_and_tensor_of_the_spec) {
    char out[1200];
    snprintf(out, sizeof out, "%s/spec.gguf", tmpdir());
    skycmd_error *err = skycmd_error_new();
    cr_assert_eq(skycmd_random_model("s1-pico", out, NULL, err), 0, "%s", skycmd_error_message(err));
    skycmd_error_free(err);
    sk_err e = {0};
    sk_gguf *g;
    cr_assert_eq(sk_gguf_open_file(out, &g, &e), 0, "%s", e.msg);
    static const struct { const char *key; uint32_t type; } keys[] = {
        {"general.architecture", SK_GGUF_STRING}, {"general.name", SK_GGUF_STRING},
        {"modern-bert.block_count", SK_GGUF_U32}, {"modern-bert.context_length", SK_GGUF_U32},
        {"modern-bert.embedding_length", SK_GGUF_U32}, {"modern-bert.feed_forward_length", SK_GGUF_ARRAY},
        {"modern-bert.attention.head_count", SK_GGUF_U32},
        {"modern-bert.attention.layer_norm_epsilon", SK_GGUF_F32},
        {"modern-bert.attention.causal", SK_GGUF_BOOL}, {"modern-bert.attention.sliding_window", SK_GGUF_U32},
        {"modern-bert.attention.sliding_window_pattern", SK_GGUF_U32},
        {"modern-bert.rope.freq_base", SK_GGUF_F32}, {"modern-bert.rope.freq_base_swa", SK_GGUF_F32},
        {"modern-bert.rope.scaling.type", SK_GGUF_STRING}, {"modern-bert.vocab_size", SK_GGUF_U32},
        {"modern-bert.hidden_activation", SK_GGUF_STRING}, {"modern-bert.decision.type", SK_GGUF_STRING},
        {"modern-bert.decision.block_count", SK_GGUF_U32},
        {"modern-bert.decision.max_head_tokens", SK_GGUF_U32},
        {"modern-bert.decision.max_tokens", SK_GGUF_U32},
        {"modern-bert.decision.temperature.choice", SK_GGUF_F32},
        {"modern-bert.decision.temperature.score", SK_GGUF_F32},
        {"modern-bert.decision.temperature.noul", SK_GGUF_F32},
        {"modern-bert.decision.temperature.choice.3_5", SK_GGUF_F32},
        {"tokenizer.ggml.model", SK_GGUF_STRING}, {"tokenizer.ggml.pre", SK_GGUF_STRING},
        {"tokenizer.ggml.tokens", SK_GGUF_ARRAY}, {"tokenizer.ggml.token_type", SK_GGUF_ARRAY},
        {"tokenizer.ggml.merges", SK_GGUF_ARRAY}, {"tokenizer.ggml.seperator_token_id", SK_GGUF_U32},
        {"tokenizer.ggml.mask_token_id", SK_GGUF_U32}, {"tokenizer.ggml.padding_token_id", SK_GGUF_U32},
        {"tokenizer.ggml.token_type_count", SK_GGUF_U32},
        {"tokenizer.chat_template.systemone", SK_GGUF_STRING}, {"tokenizer.chat_templates", SK_GGUF_ARRAY},
        {"general.alignment", SK_GGUF_U32},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        int64_t k = sk_gguf_find_key(g, keys[i].key);
        cr_assert(k >= 0, "missing %s", keys[i].key);
        cr_assert_eq(sk_gguf_kv_value(g, (size_t)k)->type, keys[i].type, "%s", keys[i].key);
    }
    uint32_t u;
    sk_str s;
    cr_assert_eq(sk_gguf_get_str(g, "general.architecture", &s), 0);
    cr_assert(sk_str_eq(s, "modern-bert"));
    cr_assert_eq(sk_gguf_get_str(g, "modern-bert.decision.type", &s), 0);
    cr_assert(sk_str_eq(s, "laya"));
    cr_assert_eq(sk_gguf_get_str(g, "tokenizer.ggml.model", &s), 0);
    cr_assert(sk_str_eq(s, "gpt2"));
    cr_assert_eq(sk_gguf_get_str(g, "tokenizer.ggml.pre", &s), 0);
    cr_assert(sk_str_eq(s, "gpt-2"));
    cr_assert_eq(sk_gguf_get_str(g, "modern-bert.rope.scaling.type", &s), 0);
    cr_assert(sk_str_eq(s, "none"));
    cr_assert_eq(sk_gguf_get_str(g, "tokenizer.chat_template.systemone", &s), 0);
    cr_assert(sk_str_eq(s, k_template_s1), "template differs from spec 6.3: %.*s", (int)s.len, s.ptr);
    cr_assert_eq(sk_gguf_get_u32(g, "modern-bert.block_count", &u), 0);
    cr_assert_eq(u, 3);
    cr_assert_eq(sk_gguf_get_u32(g, "modern-bert.decision.block_count", &u), 0);
    cr_assert_eq(u, 1);
    cr_assert_eq(sk_gguf_get_u32(g, "modern-bert.decision.max_head_tokens", &u), 0);
    cr_assert_eq(u, 96);
    cr_assert_eq(sk_gguf_get_u32(g, "modern-bert.decision.max_tokens", &u), 0);
    cr_assert_eq(u, 256);
    cr_assert_eq(sk_gguf_get_u32(g, "tokenizer.ggml.token_type_count", &u), 0);
    cr_assert_eq(u, 3);
    cr_assert_eq(sk_gguf_get_u32(g, "tokenizer.ggml.mask_token_id", &u), 0);
    cr_assert_eq(u, 4);
    cr_assert_eq(sk_gguf_get_u32(g, "tokenizer.ggml.seperator_token_id", &u), 0);
    cr_assert_eq(u, 3);
    int b;
    cr_assert_eq(sk_gguf_get_bool(g, "modern-bert.attention.causal", &b), 0);
    cr_assert_eq(b, 0);
    const sk_gguf_value *ff;
    cr_assert_eq(sk_gguf_get_arr(g, "modern-bert.feed_forward_length", &ff), 0);
    cr_assert_eq(ff->v.arr.elem_type, SK_GGUF_U32);
    cr_assert_eq(ff->v.arr.count, 3);
    sk_gguf_iter it;
    sk_gguf_value v;
    sk_gguf_iter_init(&it, ff);
    uint64_t want_ff[3] = {128, 128, 256};
    for (int i = 0; i < 3; i++) {
        cr_assert(sk_gguf_iter_next(&it, &v));
        cr_assert_eq(v.v.u, want_ff[i]);
    }
    /* spec 6.2 (d = 64, vocab 1024, 2 encoder blocks, head block 2), ggml order and types */
    static const struct { const char *name; uint64_t ne0, ne1; uint32_t type; } tens[] = {
        {"token_embd.weight", 64, 1024, SK_GGML_F16}, {"token_embd_norm.weight", 64, 1, SK_GGML_F32},
        {"blk.0.attn_qkv.weight", 64, 192, SK_GGML_F16}, {"blk.0.attn_output.weight", 64, 64, SK_GGML_F16},
        {"blk.0.ffn_norm.weight", 64, 1, SK_GGML_F32}, {"blk.0.ffn_up.weight", 64, 256, SK_GGML_F16},
        {"blk.0.ffn_down.weight", 128, 64, SK_GGML_F16}, {"blk.1.attn_norm.weight", 64, 1, SK_GGML_F32},
        {"blk.1.attn_qkv.weight", 64, 192, SK_GGML_F16}, {"blk.1.attn_output.weight", 64, 64, SK_GGML_F16},
        {"blk.1.ffn_norm.weight", 64, 1, SK_GGML_F32}, {"blk.1.ffn_up.weight", 64, 256, SK_GGML_F16},
        {"blk.1.ffn_down.weight", 128, 64, SK_GGML_F16}, {"output_norm.weight", 64, 1, SK_GGML_F32},
        {"blk.2.attn_norm.weight", 64, 1, SK_GGML_F32}, {"blk.2.attn_norm.bias", 64, 1, SK_GGML_F32},
        {"blk.2.attn_qkv.weight", 64, 192, SK_GGML_F32}, {"blk.2.attn_qkv.bias", 192, 1, SK_GGML_F32},
        {"blk.2.attn_output.weight", 64, 64, SK_GGML_F32}, {"blk.2.attn_output.bias", 64, 1, SK_GGML_F32},
        {"blk.2.ffn_norm.weight", 64, 1, SK_GGML_F32}, {"blk.2.ffn_norm.bias", 64, 1, SK_GGML_F32},
        {"blk.2.ffn_up.weight", 64, 256, SK_GGML_F32}, {"blk.2.ffn_up.bias", 256, 1, SK_GGML_F32},
        {"blk.2.ffn_down.weight", 256, 64, SK_GGML_F32}, {"blk.2.ffn_down.bias", 64, 1, SK_GGML_F32},
        {"token_types.weight", 64, 3, SK_GGML_F32}, {"cls.norm.weight", 64, 1, SK_GGML_F32},
        {"cls.norm.bias", 64, 1, SK_GGML_F32}, {"cls.weight", 64, 64, SK_GGML_F32},
        {"cls.bias", 64, 1, SK_GGML_F32}, {"cls.output.weight", 64, 1, SK_GGML_F32},
        {"cls.output.bias", 1, 1, SK_GGML_F32},
    };
    size_t nt = sizeof tens / sizeof tens[0];
    cr_assert_eq(sk_gguf_n_tensors(g), nt);
    uint64_t params = 0;
    for (size_t i = 0; i < nt; i++) {
        const sk_gguf_tensor *t = sk_gguf_find_tensor(g, tens[i].name);
        cr_assert(t, "missing %s", tens[i].name);
        cr_assert_eq(t->ne[0], tens[i].ne0, "%s", tens[i].name);
        cr_assert_eq(t->ne[1], tens[i].ne1, "%s", tens[i].name);
        cr_assert_eq(t->type, tens[i].type, "%s", tens[i].name);
        params += t->n_elements;
    }
    cr_assert_eq(params, 202305); /* the seed's s1-pico */
    sk_gguf_close(g);
    remove(out);
}

Test(convert, bucket_rewrite_and_type_policy) {
    char k[24];
    cr_assert_eq(sk_laya_bucket_key("choice:3-5", k, sizeof k), 0);
    cr_assert_str_eq(k, "choice.3_5");
    cr_assert_eq(sk_laya_bucket_key("choice:11+", k, sizeof k), 0);
    cr_assert_str_eq(k, "choice.11");
    cr_assert_eq(sk_laya_bucket_key("noul:2", k, sizeof k), 0);
    cr_assert_str_eq(k, "noul.2");
    cr_assert_eq(sk_laya_bucket_key("score:6-10", k, sizeof k), 0);
    cr_assert_str_eq(k, "score.6_10");
    cr_assert_neq(sk_laya_bucket_key("choice:7", k, sizeof k), 0);
    cr_assert_neq(sk_laya_bucket_key("pick:2", k, sizeof k), 0);
    sk_convert_opts q = {SK_GGML_Q8_0, SK_GGML_F32, NULL, NULL, NULL, NULL};
    cr_assert_eq(sk_convert_tensor_type("token_embd.weight", 0, 2, 64, &q), SK_GGML_F16);
    cr_assert_eq(sk_convert_tensor_type("blk.0.ffn_down.weight", 0, 2, 48, &q), SK_GGML_F16);
    cr_assert_eq(sk_convert_tensor_type("blk.0.ffn_down.weight", 0, 2, 64, &q), SK_GGML_Q8_0);
    cr_assert_eq(sk_convert_tensor_type("blk.0.ffn_norm.weight", 0, 1, 64, &q), SK_GGML_F32);
    cr_assert_eq(sk_convert_tensor_type("cls.weight", 1, 2, 64, &q), SK_GGML_F32);
    sk_convert_opts h = {SK_GGML_F16, SK_GGML_Q8_0, NULL, NULL, NULL, NULL};
    cr_assert_eq(sk_convert_tensor_type("cls.output.weight", 1, 2, 64, &h), SK_GGML_Q8_0);
    cr_assert_eq(sk_convert_tensor_type("token_types.weight", 1, 2, 48, &h), SK_GGML_F16);
    cr_assert_eq(sk_convert_tensor_type("cls.output.bias", 1, 1, 1, &h), SK_GGML_F32);
}

/* ---------------------------------------------------------------- round trips ---- */

static void round_trip(int type) {
    char dir[1200], out[1200];
    snprintf(dir, sizeof dir, "%s/rt-%d", tmpdir(), type);
    snprintf(out, sizeof out, "%s/rt-%d.gguf", tmpdir(), type);
    rm_rf(dir);
    write_random_laya("s1-pico", dir, 7);
    skycmd_options *o = skycmd_options_new();
    skycmd_options_set_int(o, SKYCMD_OPT_TYPE, type);
    skycmd_error *err = skycmd_error_new();
    cr_assert_eq(skycmd_convert(dir, out, o, err), 0, "%s", skycmd_error_message(err));
    sk_err e = {0};
    sk_laya *l;
    cr_assert_eq(sk_laya_open_dir(dir, &l, &e), 0, "%s", e.msg);
    sk_gguf *g;
    cr_assert_eq(sk_gguf_open_file(out, &g, &e), 0, "%s", e.msg);
    sk_laya_spec *sp;
    size_t n;
    cr_assert_eq(sk_laya_specs(&l->cfg, &sp, &n, &e), 0);
    size_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (!sp[i].gguf[0]) continue;
        seen++;
        const sk_st_tensor *st = sk_st_find(l->st, sp[i].hf);
        const sk_gguf_tensor *t = sk_gguf_find_tensor(g, sp[i].gguf);
        cr_assert(st && t, "%s", sp[i].gguf);
        cr_assert_eq(t->n_elements, st->n_elements);
        float *a = malloc(st->n_elements * 4), *b = deq(t);
        sk_st_to_f32(st, a, &e);
        for (uint64_t j = 0; j < st->n_elements; j++) {
            if (t->type == SK_GGML_F32) {
                cr_assert_eq(a[j], b[j], "%s[%llu]", sp[i].gguf, (unsigned long long)j);
            } else if (t->type == SK_GGML_F16) {
                /* round to nearest: half an ulp of f16 (2^-11 relative), subnormals 2^-25 */
                cr_assert(fabsf(a[j] - b[j]) <= fabsf(a[j]) * 0.00048828125f + 2.98e-8f,
                          "%s[%llu]: %g vs %g", sp[i].gguf, (unsigned long long)j, a[j], b[j]);
                cr_assert_eq(sk_f32_to_f16(a[j]), sk_f32_to_f16(b[j]));
            } else {
                cr_assert_eq(t->type, SK_GGML_Q8_0);
                uint64_t blk = j / 32 * 32;
                float amax = 0;
                for (uint64_t q = blk; q < blk + 32; q++) amax = fmaxf(amax, fabsf(a[q]));
                /* half a step, plus the f16 rounding of the stored scale (127 steps x 2^-11) */
                cr_assert(fabsf(a[j] - b[j]) <= amax / 127.0f * 0.57f + 1e-7f, "%s", sp[i].gguf);
            }
        }
        free(a);
        free(b);
    }
    cr_assert_eq(seen, sk_gguf_n_tensors(g));
    free(sp);
    sk_gguf_close(g);
    sk_laya_free(l);
    skycmd_options_free(o);
    skycmd_error_free(err);
    remove(out);
    rm_rf(dir);
}

Test(convert, round_trip_f32_exact) { round_trip(SKYCMD_TYPE_F32); }
Test(convert, round_trip_f16_rounding) { round_trip(SKYCMD_TYPE_F16); }
Test(convert, round_trip_q8_0_blocks) { round_trip(SKYCMD_TYPE_Q8_0); }

Test(convert, random_gguf_equals_laya_dir_converted) {
    char dir[1200], a[1200], b[1200];
    snprintf(dir, sizeof dir, "%s/s1-pico", tmpdir());
    snprintf(a, sizeof a, "%s/direct.gguf", tmpdir());
    snprintf(b, sizeof b, "%s/via-dir.gguf", tmpdir());
    rm_rf(dir);
    write_random_laya("s1-pico", dir, 42);
    skycmd_error *err = skycmd_error_new();
    cr_assert_eq(skycmd_random_model("s1-pico", a, NULL, err), 0, "%s", skycmd_error_message(err));
    cr_assert_eq(skycmd_convert(dir, b, NULL, err), 0, "%s", skycmd_error_message(err));
    size_t na, nb;
    char *da = tu_slurp(a, &na), *db = tu_slurp(b, &nb);
    cr_assert_eq(na, nb);
    cr_assert_eq(memcmp(da, db, na), 0, "same model, same bytes");
    free(da);
    free(db);
    skycmd_error_free(err);
    remove(a);
    remove(b);
    rm_rf(dir);
}

Test(convert, random_presets_are_deterministic_and_sized) {
    static const struct { const char *p; uint64_t params; } presets[] = {
        {"s1-pico", 202305}, {"s1-nano", 1134209}, {"s1-micro", 6630913}};
    sk_err e = {0};
    for (int i = 0; i < 3; i++) {
        sk_random_ckpt a, b;
        cr_assert_eq(sk_random_build(presets[i].p, 42, 0, &a, &e), 0, "%s", e.msg);
        cr_assert_eq(a.n_params, presets[i].params, "%s", presets[i].p);
        cr_assert_eq(sk_random_build(presets[i].p, 42, 0, &b, &e), 0);
        cr_assert_eq(a.safetensors_len, b.safetensors_len);
        cr_assert_eq(memcmp(a.safetensors, b.safetensors, a.safetensors_len), 0);
        sk_random_free(&b);
        cr_assert_eq(sk_random_build(presets[i].p, 43, 0, &b, &e), 0);
        cr_assert_neq(memcmp(a.safetensors, b.safetensors, a.safetensors_len), 0);
        sk_random_free(&a);
        sk_random_free(&b);
    }
    sk_random_ckpt x;
    cr_assert_eq(sk_random_build("s1-giga", 1, 0, &x, &e), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert(strstr(e.msg, "s1-giga"));
    cr_assert_eq(sk_random_build("s1-pico", 1, 17, &x, &e), SKYCMD_E_INVALID_ARGUMENT);
}

/* The values must not be trivial: the embedding norm of a model with massive channels has
 * those channels ~20x the others, the -xt variant stores out-of-range temperatures. */
Test(convert, massive_channels_and_extreme_temperatures) {
    sk_err e = {0};
    sk_random_ckpt c;
    cr_assert_eq(sk_random_build("s1-nano-xt", 5, 3, &c, &e), 0, "%s", e.msg);
    sk_laya *l;
    cr_assert_eq(sk_random_open(&c, &l, &e), 0, "%s", e.msg);
    const sk_st_tensor *t = sk_st_find(l->st, "encoder.embeddings.norm.weight");
    float w[128];
    sk_st_to_f32(t, w, &e);
    int big = 0;
    for (int i = 0; i < 128; i++) {
        if (w[i] > 10.0f) big++;
        else cr_assert(w[i] > 0.5f && w[i] < 1.5f, "w[%d] = %g", i, w[i]);
    }
    cr_assert_eq(big, 3);
    int has7 = 0, has01 = 0;
    for (size_t i = 0; i < l->cfg.n_buckets; i++) {
        if (strcmp(l->cfg.buckets[i].key, "score.3_5") == 0 && l->cfg.buckets[i].value == 7.0f) has7 = 1;
        if (strcmp(l->cfg.buckets[i].key, "choice.11") == 0 && l->cfg.buckets[i].value == 0.1f) has01 = 1;
    }
    cr_assert(has7 && has01);
    for (int i = 0; i < 3; i++) cr_assert(l->cfg.temperature[i] >= 0.6f && l->cfg.temperature[i] <= 2.5f);
    sk_laya_free(l);
    sk_random_free(&c);
}

static int g_calls;
static uint64_t g_last;
static int cancel_after_two(void *ud, uint64_t done, uint64_t total) {
    (void)ud;
    cr_assert(done <= total);
    return ++g_calls > 2;
}
/* Cancels once the writing phase (second half) has begun: the temporary file exists then. */
static int cancel_while_writing(void *ud, uint64_t done, uint64_t total) {
    (void)ud;
    cr_assert(done <= total && done >= g_last, "progress must not go back");
    g_last = done;
    return done > total / 2 + 1000;
}
static int count_calls(void *ud, uint64_t done, uint64_t total) {
    (void)ud;
    cr_assert(done <= total && done >= g_last);
    g_last = done;
    g_calls++;
    return 0;
}

Test(convert, progress_and_cancel_leave_no_file) {
    char out[1200];
    snprintf(out, sizeof out, "%s/cancel.gguf", tmpdir());
    skycmd_options *o = skycmd_options_new();
    skycmd_options_set_progress(o, cancel_after_two, NULL);
    skycmd_error *err = skycmd_error_new();
    g_calls = 0;
    int s = skycmd_random_model("s1-pico", out, o, err);
    cr_assert_eq(s, SKYCMD_E_CANCELLED, "%s", skycmd_error_message(err));
    cr_assert(g_calls > 2);
    cr_assert(!exists(out));
    cr_assert_eq(tu_count_tmp_files(tmpdir(), ""), 0);
    skycmd_options_set_progress(o, cancel_while_writing, NULL);
    g_last = 0;
    cr_assert_eq(skycmd_random_model("s1-pico", out, o, err), SKYCMD_E_CANCELLED);
    cr_assert(!exists(out));
    cr_assert_eq(tu_count_tmp_files(tmpdir(), ""), 0);
    skycmd_options_set_progress(o, count_calls, NULL);
    g_last = 0;
    g_calls = 0;
    cr_assert_eq(skycmd_random_model("s1-pico", out, o, err), SKYCMD_OK, "%s", skycmd_error_message(err));
    cr_assert(g_calls > 33, "progress during both phases (%d calls)", g_calls);
    cr_assert(exists(out));
    remove(out);
    skycmd_options_free(o);
    skycmd_error_free(err);
}

/* ---------------------------------------------------------------- damaged checkpoints */

typedef void (*mutate_fn)(const char *dir);

static void path_in(char *out, size_t n, const char *dir, const char *rel) { snprintf(out, n, "%s/%s", dir, rel); }

static void m_rm(const char *dir, const char *rel) {
    char p[1400];
    path_in(p, sizeof p, dir, rel);
    cr_assert_eq(remove(p), 0, "%s", p);
}
static void m_write(const char *dir, const char *rel, const char *text) {
    char p[1400];
    path_in(p, sizeof p, dir, rel);
    spit(p, text, strlen(text));
}
/* Replace the first occurrence of `from` by `to` in a file. */
static void m_replace(const char *dir, const char *rel, const char *from, const char *to) {
    char p[1400];
    path_in(p, sizeof p, dir, rel);
    size_t n, fl = strlen(from);
    char *d = tu_slurp(p, &n);
    char *at = NULL; /* binary-safe search (safetensors starts with NUL bytes) */
    for (size_t i = 0; i + fl <= n && !at; i++)
        if (memcmp(d + i, from, fl) == 0) at = d + i;
    cr_assert(at, "%s not in %s", from, rel);
    size_t tl = strlen(to);
    char *o = malloc(n - fl + tl + 1);
    size_t pre = (size_t)(at - d);
    memcpy(o, d, pre);
    memcpy(o + pre, to, tl);
    memcpy(o + pre + tl, at + fl, n - pre - fl);
    spit(p, o, n - fl + tl);
    free(o);
    free(d);
}
/* Rewrite model.safetensors, dropping one tensor or renaming one or changing its shape. */
static void m_safetensors(const char *dir, const char *drop, const char *rename_to,
                          int reshape) {
    char p[1400];
    path_in(p, sizeof p, dir, "model.safetensors");
    size_t n;
    char *d = tu_slurp(p, &n);
    sk_err e = {0};
    sk_safetensors *st;
    cr_assert_eq(sk_st_open_buffer(d, n, "x", &st, &e), 0);
    sk_st_writer *w = sk_st_writer_new();
    for (size_t i = 0; i < sk_st_n_tensors(st); i++) {
        const sk_st_tensor *t = sk_st_tensor_at(st, i);
        if (drop && strcmp(t->name, drop) == 0) {
            if (rename_to) { /* keep it and add a copy under an unknown name */
                sk_st_writer_add(w, t->name, t->ggml_type, t->n_dims, t->shape, t->data, t->nbytes, &e);
                sk_st_writer_add(w, rename_to, t->ggml_type, t->n_dims, t->shape, t->data, t->nbytes, &e);
            } else if (reshape) {
                uint64_t sh[2] = {t->shape[1], t->shape[0]};
                cr_assert_eq(sk_st_writer_add(w, t->name, t->ggml_type, 2, sh, t->data, t->nbytes, &e), 0);
            }
            continue;
        }
        cr_assert_eq(sk_st_writer_add(w, t->name, t->ggml_type, t->n_dims, t->shape, t->data, t->nbytes, &e), 0);
    }
    uint8_t *buf;
    size_t bn;
    cr_assert_eq(sk_st_writer_write_mem(w, &buf, &bn, &e), 0);
    sk_st_writer_free(w);
    sk_st_close(st);
    free(d);
    spit(p, buf, bn);
    free(buf);
}
static void m_truncate(const char *dir) {
    char p[1400];
    path_in(p, sizeof p, dir, "model.safetensors");
    struct stat s;
    stat(p, &s);
    cr_assert_eq(truncate(p, s.st_size - 1000), 0);
}

static void expect_fail(int which, const char *n1, const char *n2) {
    char dir[1200], out[1200];
    snprintf(dir, sizeof dir, "%s/bad%d", tmpdir(), which);
    snprintf(out, sizeof out, "%s/bad%d.gguf", tmpdir(), which);
    rm_rf(dir);
    write_random_laya("s1-pico", dir, 3);
    switch (which) {
    case 0: m_rm(dir, "rl_agent_config.json"); break;
    case 1: m_rm(dir, "encoder/config.json"); break;
    case 2: m_rm(dir, "tokenizer/tokenizer.json"); break;
    case 3: m_rm(dir, "model.safetensors"); break;
    case 4: m_write(dir, "rl_agent_config.json", "{\"head_layers\": 1,"); break;
    case 5: m_replace(dir, "rl_agent_config.json", "\"head_layers\"", "\"head_layerz\""); break;
    case 6: m_replace(dir, "rl_agent_config.json", "\"head_layers\": 1", "\"head_layers\": \"one\""); break;
    case 7: m_replace(dir, "rl_agent_config.json", "\"temperature\": [", "\"temperature\": [1.0, "); break;
    case 8: m_replace(dir, "rl_agent_config.json", "\"choice:2\"", "\"choice:7\""); break;
    case 9: m_replace(dir, "rl_agent_config.json", "\"noul:2\": ", "\"noul:2\": -"); break;
    case 10: m_replace(dir, "encoder/config.json", "\"hidden_size\": 64", "\"hidden_size\": 32"); break;
    case 11: m_replace(dir, "encoder/config.json", "\"model_type\": \"modernbert\"", "\"model_type\": \"bert\""); break;
    case 12: m_replace(dir, "encoder/config.json", "\"sliding_attention\"\n", "\"full_attention\"\n"); break;
    case 13: m_replace(dir, "encoder/config.json", "\"vocab_size\": 1024", "\"vocab_size\": 1000"); break;
    case 14: m_truncate(dir); break;
    case 15: m_replace(dir, "model.safetensors", "\"dtype\":\"F32\"", "\"dtype\":\"I32\""); break;
    case 16: m_replace(dir, "model.safetensors", "\"dtype\":\"F32\"", "\"dtype\":\"X32\""); break;
    case 17: m_safetensors(dir, "scorer.3.bias", NULL, 0); break;
    case 18: m_safetensors(dir, "scorer.3.bias", "scorer.4.bias", 0); break;
    case 19: m_safetensors(dir, "encoder.layers.1.mlp.Wo.weight", NULL, 1); break;
    case 20: m_replace(dir, "model.safetensors", "{", "["); break;
    case 21: m_write(dir, "tokenizer/tokenizer.json", "{\"model\": {\"type\": \"BPE\"}}"); break;
    case 22: m_write(dir, "tokenizer/tokenizer_config.json", "not json"); break;
    case 23: m_replace(dir, "rl_agent_config.json", "\"head_max_len\": 96", "\"head_max_len\": 9999"); break;
    case 24: m_replace(dir, "encoder/config.json", "\"rope_theta\": 160000.0", "\"rope_theta\": \"big\""); break;
    /* settings the forward pass does not compute (issue 16): refused, naming the key */
    case 25: m_replace(dir, "encoder/config.json", "\"hidden_activation\": \"gelu\"", "\"hidden_activation\": \"gelu_pytorch_tanh\""); break;
    case 26: m_replace(dir, "encoder/config.json", "\"norm_eps\": 1e-05", "\"norm_eps\": 1e-45"); break;
    case 27: m_replace(dir, "encoder/config.json", "\"norm_eps\": 1e-05", "\"norm_eps\": 1.5"); break;
    case 28: m_replace(dir, "encoder/config.json", "\"mlp_bias\": false", "\"mlp_bias\": false, \"is_decoder\": true"); break;
    case 29: m_replace(dir, "encoder/config.json", "\"mlp_bias\": false", "\"mlp_bias\": false, \"is_causal\": true"); break;
    case 30: m_replace(dir, "encoder/config.json", "\"mlp_bias\": false", "\"mlp_bias\": false, \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0}"); break;
    case 31: m_replace(dir, "encoder/config.json", "\"rope_theta\": 10000.0,\n      \"rope_type\": \"default\"", "\"rope_theta\": 10000.0,\n      \"rope_type\": \"yarn\", \"factor\": 2.0"); break;
    case 32: m_replace(dir, "encoder/config.json", "\"rope_parameters\": {", "\"rope_parameters\": {\"rope_type\": \"linear\", \"factor\": 2.0, "); break;
    case 33: m_replace(dir, "encoder/config.json", "\"mlp_bias\": false", "\"mlp_bias\": false, \"dtype\": \"bfloat16\""); break;
    case 34: m_replace(dir, "encoder/config.json", "\"mlp_bias\": false", "\"mlp_bias\": false, \"head_dim\": 32"); break;
    case 35: m_replace(dir, "rl_agent_config.json", "\"head_layers\": 1", "\"head_layers\": 1, \"option_layout\": 2"); break;
    case 36: m_replace(dir, "rl_agent_config.json", "\"head_layers\": 1", "\"head_layers\": 1, \"option_layout\": \"grid\""); break;
    case 37: m_replace(dir, "rl_agent_config.json", "\"encoder\": \"skycmd/random-s1-pico\",", ""); break;
    case 38: m_replace(dir, "tokenizer/tokenizer_config.json", "\"cls_token\": \"[CLS]\",", ""); break;
    case 39: m_replace(dir, "tokenizer/tokenizer_config.json", "\"pad_token\": \"[PAD]\",", ""); break;
    case 40: m_replace(dir, "tokenizer/tokenizer_config.json", "\"PreTrainedTokenizerFast\"", "\"BertTokenizerFast\""); break;
    case 41: m_replace(dir, "encoder/config.json", "\"attention_bias\": false", "\"attention_bias\": true"); break;
    case 42: m_replace(dir, "encoder/config.json", "\"norm_bias\": false", "\"norm_bias\": true"); break;
    default: cr_assert_fail();
    }
    skycmd_error *err = skycmd_error_new();
    int s = skycmd_convert(dir, out, NULL, err);
    const char *msg = skycmd_error_message(err);
    cr_expect_neq(s, SKYCMD_OK, "case %d converted", which);
    cr_expect_eq(skycmd_error_status(err), s);
    cr_expect(strstr(msg, n1) != NULL, "case %d: '%s' lacks '%s'", which, msg, n1);
    if (n2) cr_expect(strstr(msg, n2) != NULL, "case %d: '%s' lacks '%s'", which, msg, n2);
    cr_expect(!exists(out), "case %d left %s", which, out);
    cr_expect_eq(tu_count_tmp_files(tmpdir(), ""), 0, "case %d left a temporary file", which);
    skycmd_error_free(err);
    rm_rf(dir);
}

Test(convert, damaged_checkpoints_fail_cleanly) {
    expect_fail(0, "rl_agent_config.json", "missing");
    expect_fail(1, "encoder/config.json", "missing");
    expect_fail(2, "tokenizer/tokenizer.json", NULL);
    expect_fail(3, "model.safetensors", NULL);
    expect_fail(4, "rl_agent_config.json", "JSON");
    expect_fail(5, "rl_agent_config.json", "head_layers");
    expect_fail(6, "rl_agent_config.json", "head_layers");
    expect_fail(7, "rl_agent_config.json", "temperature");
    expect_fail(8, "rl_agent_config.json", "choice:7");
    expect_fail(9, "rl_agent_config.json", "noul:2");
    expect_fail(10, "model.safetensors", "shape");
    expect_fail(11, "encoder/config.json", "model_type");
    expect_fail(12, "encoder/config.json", "layer_types");
    expect_fail(13, "model.safetensors", "tok_embeddings");
    expect_fail(14, "model.safetensors", "truncated");
    expect_fail(15, "model.safetensors", "I32");
    expect_fail(16, "model.safetensors", "unknown dtype");
    expect_fail(17, "model.safetensors", "scorer.3.bias");
    expect_fail(18, "model.safetensors", "unexpected tensor \"scorer.4.bias\"");
    expect_fail(19, "model.safetensors", "encoder.layers.1.mlp.Wo.weight\" has shape [128, 64]");
    expect_fail(20, "model.safetensors", "JSON");
    expect_fail(21, "tokenizer", NULL);
    expect_fail(22, "tokenizer/tokenizer_config.json", "JSON");
    expect_fail(23, "rl_agent_config.json", "head_max_len");
    expect_fail(24, "encoder/config.json", "rope_theta");
    expect_fail(25, "encoder/config.json", "\"hidden_activation\" is \"gelu_pytorch_tanh\"");
    expect_fail(26, "encoder/config.json", "\"norm_eps\" = 1e-45");
    expect_fail(27, "encoder/config.json", "\"norm_eps\" = 1.5");
    expect_fail(28, "encoder/config.json", "\"is_decoder\" must be false");
    expect_fail(29, "encoder/config.json", "\"is_causal\" must be false");
    expect_fail(30, "encoder/config.json", "\"rope_scaling\" is set");
    expect_fail(31, "encoder/config.json", "\"rope_parameters.sliding_attention.rope_type\" is \"yarn\"");
    expect_fail(32, "encoder/config.json", "\"rope_parameters\" has the key \"rope_type\"");
    expect_fail(33, "encoder/config.json", "\"dtype\" is \"bfloat16\"");
    expect_fail(34, "encoder/config.json", "\"head_dim\" must be");
    expect_fail(35, "rl_agent_config.json", "\"option_layout\" must be");
    expect_fail(36, "rl_agent_config.json", "\"option_layout\" must be");
    expect_fail(37, "rl_agent_config.json", "missing key \"encoder\"");
    expect_fail(38, "tokenizer/tokenizer_config.json", "no \"cls_token\"");
    expect_fail(39, "tokenizer/tokenizer_config.json", "no \"pad_token\"");
    expect_fail(40, "tokenizer/tokenizer_config.json", "\"tokenizer_class\" is \"BertTokenizerFast\"");
    expect_fail(41, "encoder/config.json", "\"attention_bias\" must be false");
    expect_fail(42, "encoder/config.json", "\"norm_bias\" must be false");
}

Test(convert, bad_arguments) {
    skycmd_error *err = skycmd_error_new();
    cr_assert_eq(skycmd_convert(NULL, "x.gguf", NULL, err), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert_eq(skycmd_convert("/nonexistent-dir", "/tmp/never.gguf", NULL, err), SKYCMD_E_IO);
    cr_assert(strstr(skycmd_error_message(err), "/nonexistent-dir"));
    cr_assert_eq(skycmd_error_errno(err), ENOENT, "the system's reason travels as errno too");
    cr_assert_eq(skycmd_random_model("s1-pico", "/nonexistent-dir/x.gguf", NULL, err), SKYCMD_E_IO);
    cr_assert_eq(skycmd_error_errno(err), ENOENT, "%s", skycmd_error_message(err));
    cr_assert(!exists("/tmp/never.gguf"));
    cr_assert_eq(skycmd_random_model("nope", "/tmp/never.gguf", NULL, err), SKYCMD_E_INVALID_ARGUMENT);
    skycmd_options *o = skycmd_options_new();
    skycmd_options_set_int(o, SKYCMD_OPT_LAYOUT, SKYCMD_LAYOUT_LAYA);
    /* an existing non-empty directory is not replaced */
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/full", tmpdir());
    mkdir(dir, 0755);
    char f[1300];
    snprintf(f, sizeof f, "%s/keep.txt", dir);
    spit(f, "x", 1);
    cr_assert_eq(skycmd_random_model("s1-pico", dir, o, err), SKYCMD_E_IO);
    cr_assert(exists(f));
    cr_assert(strstr(skycmd_error_message(err), "not empty"), "%s", skycmd_error_message(err));
    rm_rf(dir);
    skycmd_options_free(o);
    /* GGUF strings are UTF-8: a --name or --pre that is not is refused, nothing written */
    const char *bad_names[] = {"bad\xff\xfe", "\xc3"};
    for (int k = 0; k < 2; k++)
        for (int which = 0; which < 2; which++) {
            skycmd_options *u = skycmd_options_new();
            skycmd_options_set_string(u, which ? SKYCMD_OPT_PRE : SKYCMD_OPT_NAME, bad_names[k]);
            char out[1200];
            snprintf(out, sizeof out, "%s/bad-utf8.gguf", tmpdir());
            cr_expect_eq(skycmd_random_model("s1-pico", out, u, err), SKYCMD_E_INVALID_ARGUMENT);
            cr_expect(strstr(skycmd_error_message(err), "not valid UTF-8"), "%s", skycmd_error_message(err));
            cr_expect(!exists(out));
            skycmd_options_free(u);
        }
    skycmd_error_free(err);
}


/* Keys laya reads with a default: an absent key means laya's default, not ours
 * (laya 0.4.15 Agent: cfg.get("max_len", 512), cfg.get("head_max_len", 192),
 * cfg.get("temperature", [1.0, 1.0, 1.0])). */
Test(convert, absent_rl_keys_take_laya_defaults) {
    static const char json[] = "{\"encoder\": \"x\", \"head_layers\": 1}";
    sk_laya_config c;
    memset(&c, 0, sizeof c);
    sk_err e = {0};
    cr_assert_eq(sk_laya_parse_rl_config(json, strlen(json), "", &c, &e), 0, "%s", e.msg);
    cr_expect_eq(c.max_len, 512);
    cr_expect_eq(c.head_max_len, 192);
    cr_expect_eq(c.temperature[0], 1.0f);
    cr_expect_eq(c.temperature[1], 1.0f);
    cr_expect_eq(c.temperature[2], 1.0f);
    cr_expect_eq(c.n_act, 1);      /* len(cfg.get("act_costs", {})) + 1 */
    cr_expect_eq(c.n_buckets, 0);  /* cfg.get("temperature_by_options", {}) */
}

/* What laya refuses in rl_agent_config.json we refuse too, naming the key. */
Test(convert, rl_keys_laya_refuses_are_refused) {
    static const struct { const char *json, *key; } bad[] = {
        {"{\"head_layers\": 1}", "\"encoder\""},                 /* _verify_compatibility */
        {"{\"encoder\": \"x\"}", "\"head_layers\""},
        {"{\"encoder\": \"x\", \"head_layers\": 1, \"temperature\": null}", "\"temperature\""},
        {"{\"encoder\": \"x\", \"head_layers\": 1, \"temperature_by_options\": null}",
         "\"temperature_by_options\""},
        {"{\"encoder\": \"x\", \"head_layers\": 1, \"act_costs\": null}", "\"act_costs\""},
        {"{\"encoder\": \"x\", \"head_layers\": 1, \"option_layout\": \"grid\"}", "\"option_layout\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sk_laya_config c;
        memset(&c, 0, sizeof c);
        sk_err e = {0};
        cr_expect_neq(sk_laya_parse_rl_config(bad[i].json, strlen(bad[i].json), "rl", &c, &e), 0,
                      "%s accepted", bad[i].json);
        cr_expect(strstr(e.msg, bad[i].key), "%s: %s", bad[i].json, e.msg);
    }
}

/* encoder/config.json: absent keys are ModernBertConfig's defaults (transformers 5.23), as
 * AutoConfig hands them to laya. */
Test(convert, absent_encoder_keys_take_modernbert_defaults) {
    static const char json[] = "{\"model_type\": \"modernbert\"}";
    sk_laya_config c;
    memset(&c, 0, sizeof c);
    sk_err e = {0};
    cr_assert_eq(sk_laya_parse_enc_config(json, strlen(json), "", &c, &e), 0, "%s", e.msg);
    cr_expect_eq(c.vocab_size, 50368);
    cr_expect_eq(c.hidden, 768);
    cr_expect_eq(c.intermediate, 1152);
    cr_expect_eq(c.n_layers, 22);
    cr_expect_eq(c.n_heads, 12);
    cr_expect_eq(c.max_position, 8192);
    cr_expect_eq(c.local_attention, 128);
    cr_expect_eq(c.global_every, 3);
    cr_expect_eq(c.norm_eps, 1e-5f);
    cr_expect_eq(c.global_theta, 160000.0f);
    cr_expect_eq(c.local_theta, 10000.0f);
    cr_expect_str_eq(c.hidden_activation, "gelu");
    /* the default pad_token_id 50283 does not fit a smaller vocabulary: refused like
     * transformers' nn.Embedding refuses it */
    static const char small[] = "{\"vocab_size\": 1024}";
    cr_expect_neq(sk_laya_parse_enc_config(small, strlen(small), "enc", &c, &e), 0);
    cr_expect(strstr(e.msg, "pad_token_id"), "%s", e.msg);
    static const char pad[] = "{\"vocab_size\": 1024, \"pad_token_id\": 1024}";
    cr_expect_neq(sk_laya_parse_enc_config(pad, strlen(pad), "enc", &c, &e), 0);
    cr_expect(strstr(e.msg, "pad_token_id"), "%s", e.msg);
}

/* A checkpoint whose weights hold a NaN or an infinity is refused with the tensor and the
 * element named, and leaves no output (it could only fail every request later). */
Test(convert, non_finite_weights_are_refused) {
    char dir[1200], st_path[1300], out[1200];
    snprintf(dir, sizeof dir, "%s/nonfinite", tmpdir());
    snprintf(st_path, sizeof st_path, "%s/model.safetensors", dir);
    snprintf(out, sizeof out, "%s/nonfinite.gguf", tmpdir());
    const char *what[2] = {"NaN", "infinite"};
    for (int k = 0; k < 2; k++) {
        rm_rf(dir);
        write_random_laya("s1-pico", dir, 7);
        size_t n = 0;
        char *st = tu_slurp(st_path, &n);
        cr_assert(st && n > 8);
        uint64_t hlen = 0;
        for (int b = 7; b >= 0; b--) hlen = hlen << 8 | (unsigned char)st[b];
        cr_assert_lt(hlen, n - 8);
        cJSON *h = cJSON_ParseWithLength(st + 8, (size_t)hlen);
        cr_assert(h);
        /* the first F32 tensor (the random checkpoint stores float32) gets the bad value
         * in its fourth element */
        const char *name = NULL;
        size_t at = 0;
        for (cJSON *t = h->child; t && !name; t = t->next) {
            cJSON *dt = cJSON_GetObjectItem(t, "dtype");
            if (!cJSON_IsString(dt) || strcmp(dt->valuestring, "F32") != 0) continue;
            cJSON *off = cJSON_GetObjectItem(t, "data_offsets");
            if (cJSON_GetArraySize(off) != 2) continue;
            size_t lo = (size_t)cJSON_GetArrayItem(off, 0)->valuedouble;
            size_t hi = (size_t)cJSON_GetArrayItem(off, 1)->valuedouble;
            if (hi - lo < 16) continue;
            name = t->string;
            at = 8 + (size_t)hlen + lo + 3 * sizeof(float);
        }
        cr_assert(name, "no F32 tensor in the random checkpoint");
        char want[256];
        snprintf(want, sizeof want, "tensor %s: element 3 is %s", name, what[k]);
        float v = k == 0 ? NAN : INFINITY;
        memcpy(st + at, &v, sizeof v);
        cr_assert_eq(tu_write_file(st_path, st, n), 0);
        cJSON_Delete(h);
        free(st);
        skycmd_error *err = skycmd_error_new();
        remove(out);
        cr_expect_eq(skycmd_convert(dir, out, NULL, err), SKYCMD_E_FORMAT);
        cr_expect(strstr(skycmd_error_message(err), want), "%s (want: %s)",
                  skycmd_error_message(err), want);
        cr_expect(!exists(out), "a refused conversion leaves no output");
        skycmd_error_free(err);
    }
    rm_rf(dir);
}

/* ---------------------------------------------------------------- vocabulary padding */

/* Convert a checkpoint directory into memory with the default types. */
static uint8_t *convert_mem(const char *dir, size_t *size) {
    sk_err e = {0};
    sk_laya *l = NULL;
    cr_assert_eq(sk_laya_open_dir(dir, &l, &e), 0, "%s", e.msg);
    sk_convert_opts o = {SK_GGML_F32, SK_GGML_F32, NULL, NULL, NULL, NULL};
    uint8_t *buf = NULL;
    cr_assert_eq(sk_laya_to_gguf_mem(l, &o, &buf, size, &e), 0, "%s", e.msg);
    sk_laya_free(l);
    return buf;
}

/* An encoder whose embedding table has more rows than the tokenizer has tokens (ModernBERT
 * pads its vocabulary to a multiple of 64) converts: the GGUF token list is padded to the
 * rows with "[PAD<id>]" tokens of type UNUSED (5), as llama.cpp's converter pads it, so the
 * file still loads there; the tokenizer read back encodes exactly as before and the model
 * gives bitwise the logits of the unpadded checkpoint (the extra rows are never looked up). */
Test(convert, padded_vocabulary_converts_and_answers_unchanged) {
    char dir[1200], st_path[1300];
    snprintf(dir, sizeof dir, "%s/padded", tmpdir());
    snprintf(st_path, sizeof st_path, "%s/model.safetensors", dir);
    write_random_laya("s1-pico", dir, 11);
    size_t n_plain = 0;
    uint8_t *plain = convert_mem(dir, &n_plain);
    /* 1024 -> 1088 rows: 64 more, filled with large values that would show if used */
    const uint32_t V = 1024, VP = 1088, d = 64;
    size_t n;
    char *data = tu_slurp(st_path, &n);
    sk_err e = {0};
    sk_safetensors *st;
    cr_assert_eq(sk_st_open_buffer(data, n, "x", &st, &e), 0);
    sk_st_writer *w = sk_st_writer_new();
    float *big = NULL;
    for (size_t i = 0; i < sk_st_n_tensors(st); i++) {
        const sk_st_tensor *t = sk_st_tensor_at(st, i);
        if (strcmp(t->name, "encoder.embeddings.tok_embeddings.weight") == 0) {
            cr_assert_eq(t->shape[0], V);
            big = malloc((size_t)VP * d * sizeof(float));
            memcpy(big, t->data, (size_t)V * d * sizeof(float));
            for (size_t k = (size_t)V * d; k < (size_t)VP * d; k++) big[k] = 100.0f;
            uint64_t sh[2] = {VP, d};
            cr_assert_eq(sk_st_writer_add(w, t->name, t->ggml_type, 2, sh, big,
                                          (uint64_t)VP * d * sizeof(float), &e), 0, "%s", e.msg);
            continue;
        }
        cr_assert_eq(sk_st_writer_add(w, t->name, t->ggml_type, t->n_dims, t->shape, t->data,
                                      t->nbytes, &e), 0);
    }
    uint8_t *sbuf;
    size_t sn;
    cr_assert_eq(sk_st_writer_write_mem(w, &sbuf, &sn, &e), 0);
    sk_st_writer_free(w);
    sk_st_close(st);
    free(data);
    free(big);
    spit(st_path, sbuf, sn);
    free(sbuf);
    m_replace(dir, "encoder/config.json", "\"vocab_size\": 1024", "\"vocab_size\": 1088");

    size_t n_pad = 0;
    uint8_t *pad = convert_mem(dir, &n_pad);
    sk_gguf *gp = NULL, *gq = NULL;
    cr_assert_eq(sk_gguf_open_buffer(pad, n_pad, &gp, &e), 0, "%s", e.msg);
    cr_assert_eq(sk_gguf_open_buffer(plain, n_plain, &gq, &e), 0, "%s", e.msg);
    const sk_gguf_value *toks, *types;
    cr_assert_eq(sk_gguf_get_arr(gp, "tokenizer.ggml.tokens", &toks), 0);
    cr_assert_eq(sk_gguf_get_arr(gp, "tokenizer.ggml.token_type", &types), 0);
    cr_assert_eq(toks->v.arr.count, VP);
    cr_assert_eq(types->v.arr.count, VP);
    sk_gguf_iter it, ty;
    sk_gguf_iter_init(&it, toks);
    sk_gguf_iter_init(&ty, types);
    sk_gguf_value tv, yv;
    for (uint32_t i = 0; i < VP; i++) {
        cr_assert(sk_gguf_iter_next(&it, &tv) && sk_gguf_iter_next(&ty, &yv));
        if (i < V) {
            cr_expect_neq(yv.v.i, 5, "token %u of the tokenizer is UNUSED", i);
            continue;
        }
        char want[32];
        snprintf(want, sizeof want, "[PAD%u]", i);
        cr_expect(sk_str_eq(tv.v.s, want), "token %u is %.*s", i, (int)tv.v.s.len, tv.v.s.ptr);
        cr_expect_eq(yv.v.i, 5, "token %u has type %lld", i, (long long)yv.v.i);
    }
    uint32_t vk = 0;
    cr_assert_eq(sk_gguf_get_u32(gp, "modern-bert.vocab_size", &vk), 0);
    cr_expect_eq(vk, VP);
    /* the tokenizers agree on a text that uses many tokens, "[PAD1030]" included */
    skycmd_tokenizer *tp = NULL, *tq = NULL;
    cr_assert_eq(sk_tokenizer_from_gguf(gp, &tp, &e), 0, "%s", e.msg);
    cr_assert_eq(sk_tokenizer_from_gguf(gq, &tq, &e), 0, "%s", e.msg);
    cr_expect_eq(sk_tokenizer_vocab_size(tp), VP);
    static const char text[] = "The quick brown fox [PAD1030] jumps over 13 lazy dogs. [MASK] ok";
    sk_ids ip = {0}, iq = {0};
    cr_assert_eq(sk_tokenizer_encode(tp, text, strlen(text), &ip, &e), 0, "%s", e.msg);
    cr_assert_eq(sk_tokenizer_encode(tq, text, strlen(text), &iq, &e), 0, "%s", e.msg);
    cr_assert_eq(ip.n, iq.n);
    cr_assert(memcmp(ip.ids, iq.ids, ip.n * sizeof *ip.ids) == 0, "padded tokenizer encodes differently");
    for (size_t i = 0; i < ip.n; i++) cr_expect_lt(ip.ids[i], (int32_t)V);
    /* bitwise the same logits */
    sk_model *mp = NULL, *mq = NULL;
    cr_assert_eq(sk_model_load(gp, SKYCMD_WEIGHTS_F32, &mp, &e), 0, "%s", e.msg);
    cr_assert_eq(sk_model_load(gq, SKYCMD_WEIGHTS_F32, &mq, &e), 0, "%s", e.msg);
    sk_scratch *sp = sk_scratch_new(mp), *sq = sk_scratch_new(mq);
    int32_t marks[3] = {1, 4, (int32_t)ip.n - 1};
    float lp[3], lq[3];
    cr_assert_eq(sk_model_forward(mp, sp, ip.ids, ip.n, 0, marks, 3, lp, &e), 0, "%s", e.msg);
    cr_assert_eq(sk_model_forward(mq, sq, iq.ids, iq.n, 0, marks, 3, lq, &e), 0, "%s", e.msg);
    cr_expect(memcmp(lp, lq, sizeof lp) == 0, "logits differ: %g vs %g", (double)lp[0], (double)lq[0]);
    sk_scratch_free(sp);
    sk_scratch_free(sq);
    sk_model_free(mp);
    sk_model_free(mq);
    free(ip.ids);
    free(iq.ids);
    sk_tokenizer_free(tp);
    sk_tokenizer_free(tq);
    sk_gguf_close(gp);
    sk_gguf_close(gq);
    free(pad);
    free(plain);
    rm_rf(dir);
}
