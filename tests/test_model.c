/*
 * test_model.c - the f32 forward pass against PyTorch.
 *
 * The fixtures in tests/fixtures/model/ come from tools/golden/make_forward_fixtures.py:
 * two small decision models built with transformers' ModernBertModel and laya's
 * DecisionModel, saved with the gguf package's GGUFWriter, and the raw scorer logits that
 * DecisionModel.forward computes in fp32 for sequences of 5 to 200 tokens (longer than the
 * sliding windows) in every question type. fx-a is all F32 with a per-block
 * feed_forward_length array and a decision head count (1) that differs from the encoder's
 * (2); fx-b mixes F16, BF16, Q8_0 and F32 tensors and has 2 decision heads.
 *
 * model_progress: the progress and cancel contract of skycmd_model_open / _open_buffer
 * (include/skycmd.h) on random models: F16 and F32 files, the int8 modes, a file larger
 * than one read chunk, a caller's buffer and a Laya directory.
 */
#define _GNU_SOURCE  /* sched_getaffinity */
#include <criterion/criterion.h>
#include <sched.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "model/model.h"
#include "model/model_internal.h"
#include "kernels/kernels.h"
#include "kernels/pool.h"
#include "test_util.h"

#define MAXN 512
#define MAXK 64

typedef struct fx_case {
    int qtype;
    size_t n, k;
    int32_t ids[MAXN];
    int32_t markers[MAXK];
    double logits[MAXK];
    double logits64[MAXK];
} fx_case;

static size_t read_ints(char *line, const char *tag, int32_t *out, size_t max) {
    size_t taglen = strlen(tag);
    cr_assert(strncmp(line, tag, taglen) == 0, "expected '%s' line, got: %.40s", tag, line);
    char *p = line + taglen, *end;
    size_t n = 0;
    for (;;) {
        long v = strtol(p, &end, 10);
        if (end == p) break;
        cr_assert(n < max);
        out[n++] = (int32_t)v;
        p = end;
    }
    return n;
}

static size_t read_doubles(char *line, const char *tag, double *out, size_t max) {
    size_t taglen = strlen(tag);
    cr_assert(strncmp(line, tag, taglen) == 0, "expected '%s' line, got: %.40s", tag, line);
    char *p = line + taglen, *end;
    size_t n = 0;
    for (;;) {
        double v = strtod(p, &end);
        if (end == p) break;
        cr_assert(n < max);
        out[n++] = v;
        p = end;
    }
    return n;
}

static size_t load_cases(const char *name, fx_case *cases, size_t max) {
    char path[1024];
    snprintf(path, sizeof path, "%s/model/%s.txt", SKYCMD_FIXTURES, name);
    FILE *f = fopen(path, "r");
    cr_assert(f, "cannot open %s", path);
    static char line[65536];
    size_t nc = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        if (strncmp(line, "case ", 5) != 0) continue;
        cr_assert(nc < max);
        fx_case *c = &cases[nc++];
        unsigned long n, k;
        cr_assert(sscanf(line, "case %d %lu %lu", &c->qtype, &n, &k) == 3);
        c->n = n;
        c->k = k;
        cr_assert(fgets(line, sizeof line, f));
        cr_assert_eq(read_ints(line, "ids ", c->ids, MAXN), c->n);
        cr_assert(fgets(line, sizeof line, f));
        cr_assert_eq(read_ints(line, "markers ", c->markers, MAXK), c->k);
        cr_assert(fgets(line, sizeof line, f));
        cr_assert_eq(read_doubles(line, "logits ", c->logits, MAXK), c->k);
        cr_assert(fgets(line, sizeof line, f));
        cr_assert_eq(read_doubles(line, "logits64 ", c->logits64, MAXK), c->k);
    }
    fclose(f);
    cr_assert(nc > 0, "no cases in %s", path);
    return nc;
}

static sk_gguf *open_fixture(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/model/%s.gguf", SKYCMD_FIXTURES, name);
    sk_gguf *g = NULL;
    sk_err e = {0};
    int rc = sk_gguf_open_file(path, &g, &e);
    cr_assert_eq(rc, SKYCMD_OK, "open %s: %s", path, e.msg);
    return g;
}

/* Tolerance: 1e-5 relative to max(1, |ref|). PyTorch fp32 itself sits ~1e-6 from the
 * float64 run of the same model on these fixtures. */
#define TOL 1e-5

static void check_model_level(const char *name, uint32_t want_dec_heads, int unfolded) {
    static fx_case cases[32];
    size_t nc = load_cases(name, cases, 32);
    sk_gguf *g = open_fixture(name);
    sk_model *m = NULL;
    sk_err e = {0};
    int rc = sk_model_load(g, SKYCMD_WEIGHTS_F32, &m, &e);
    cr_assert_eq(rc, SKYCMD_OK, "load %s: %s", name, e.msg);
    cr_assert_eq(sk_model_hparams(m)->n_head_dec, want_dec_heads);
    sk_scratch *s = sk_scratch_new(m);
    cr_assert(s);
    sk_scratch_set_unfolded(s, unfolded);
    double max_abs = 0, max_rel = 0, max_abs64 = 0;
    for (int pass = 0; pass < 2; pass++)  /* the second pass reuses a warm, larger scratch */
        for (size_t i = 0; i < nc; i++) {
            fx_case *c = &cases[i];
            float out[MAXK];
            rc = sk_model_forward(m, s, c->ids, c->n, c->qtype, c->markers, c->k, out, &e);
            cr_assert_eq(rc, SKYCMD_OK, "%s case %zu: %s", name, i, e.msg);
            for (size_t r = 0; r < c->k; r++) {
                double diff = fabs((double)out[r] - c->logits[r]);
                double rel = diff / fmax(1.0, fabs(c->logits[r]));
                if (diff > max_abs) max_abs = diff;
                if (rel > max_rel) max_rel = rel;
                double d64 = fabs((double)out[r] - c->logits64[r]);
                if (d64 > max_abs64) max_abs64 = d64;
                cr_expect(rel <= TOL, "%s case %zu (n=%zu, qtype %d) marker %zu: got %.9g, "
                          "PyTorch %.9g", name, i, c->n, c->qtype, r, (double)out[r],
                          c->logits[r]);
            }
        }
    fprintf(stderr, "%s [%s kernels%s]: %zu cases, max |diff| vs PyTorch fp32 %.3g (rel %.3g), "
            "vs float64 %.3g\n", name, sk_kernels_level_name(sk_kernels_level()),
            unfolded ? ", last decision block unfolded" : "", nc, max_abs, max_rel, max_abs64);
    sk_scratch_free(s);
    sk_model_free(m);
    sk_gguf_close(g);
}

/* Every kernel level this CPU can run: scalar, AVX2, AVX-512. */
static void check_model(const char *name, uint32_t want_dec_heads) {
    sk_kernels_force_level(-1);
    int top = sk_kernels_level();
    for (int lv = SK_LEVEL_SCALAR; lv <= top; lv++) {
        sk_kernels_force_level(lv);
        cr_assert_eq(sk_kernels_level(), lv);
        /* the last decision block both folded (the default) and as the reference writes it */
        check_model_level(name, want_dec_heads, 0);
        check_model_level(name, want_dec_heads, 1);
    }
    sk_kernels_force_level(-1);
}

Test(model, forward_fx_a_f32) { check_model("fx-a", 1); }
Test(model, forward_fx_b_mixed_types) { check_model("fx-b", 2); }

Test(model, hparams_from_gguf) {
    sk_gguf *g = open_fixture("fx-a");
    sk_model *m = NULL;
    sk_err e = {0};
    cr_assert_eq(sk_model_load(g, SKYCMD_WEIGHTS_F32, &m, &e), SKYCMD_OK, "%s", e.msg);
    const sk_hparams *hp = sk_model_hparams(m);
    cr_assert_eq(hp->n_embd, 64);
    cr_assert_eq(hp->n_head, 2);
    cr_assert_eq(hp->n_layer, 4);
    cr_assert_eq(hp->n_head_layers, 2);
    cr_assert_eq(hp->n_ff, 64);
    cr_assert_eq(hp->n_ff_head, 256);
    cr_assert_eq(hp->n_vocab, 100);
    cr_assert_eq(hp->n_swa, 16);
    cr_assert_eq(hp->swa_pattern, 3);
    cr_assert_eq(hp->max_head_tokens, 96);
    cr_assert_eq(hp->max_tokens, 0);
    cr_assert_float_eq(hp->rope_base, 160000.0f, 0.0f);
    cr_assert_float_eq(hp->rope_base_swa, 10000.0f, 0.0f);
    cr_assert_float_eq(hp->eps, 1e-5f, 0.0f);
    /* every tensor of the file is a model tensor */
    uint64_t total = 0;
    for (size_t i = 0; i < sk_gguf_n_tensors(g); i++) total += sk_gguf_tensor_at(g, i)->n_elements;
    cr_assert_eq(sk_model_n_params(m), total);
    sk_model_free(m);
    sk_gguf_close(g);

    g = open_fixture("fx-b");  /* scalar feed_forward_length, no freq_base_swa key */
    cr_assert_eq(sk_model_load(g, SKYCMD_WEIGHTS_F32, &m, &e), SKYCMD_OK, "%s", e.msg);
    hp = sk_model_hparams(m);
    cr_assert_eq(hp->n_ff, 64);
    cr_assert_eq(hp->n_ff_head, 512);
    cr_assert_eq(hp->n_head, 4);
    cr_assert_float_eq(hp->rope_base, 80000.0f, 0.0f);
    cr_assert_float_eq(hp->rope_base_swa, 10000.0f, 0.0f);
    sk_model_free(m);
    sk_gguf_close(g);
}

Test(model, bad_arguments) {
    sk_gguf *g = open_fixture("fx-a");
    sk_model *m = NULL;
    sk_err e = {0};
    cr_assert_eq(sk_model_load(g, SKYCMD_WEIGHTS_F32, &m, &e), SKYCMD_OK, "%s", e.msg);
    sk_scratch *s = sk_scratch_new(m);
    int32_t ids[4] = {1, 5, 6, 2}, mk[1] = {1};
    float out[2];
    cr_assert_eq(sk_model_forward(m, s, ids, 4, 3, mk, 1, out, &e), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert(strstr(e.msg, "question type"));
    cr_assert_eq(sk_model_forward(m, s, ids, 0, 0, mk, 1, out, &e), SKYCMD_E_INVALID_ARGUMENT);
    int32_t bad_mk[1] = {4};
    cr_assert_eq(sk_model_forward(m, s, ids, 4, 0, bad_mk, 1, out, &e),
                 SKYCMD_E_INVALID_ARGUMENT);
    cr_assert(strstr(e.msg, "marker"));
    int32_t bad_ids[4] = {1, 100, 6, 2};
    cr_assert_eq(sk_model_forward(m, s, bad_ids, 4, 0, mk, 1, out, &e),
                 SKYCMD_E_INVALID_ARGUMENT);
    cr_assert(strstr(e.msg, "token id 100"));
    bad_ids[1] = -1;
    cr_assert_eq(sk_model_forward(m, s, bad_ids, 4, 0, mk, 1, out, &e),
                 SKYCMD_E_INVALID_ARGUMENT);
    sk_model *m2 = NULL;
    cr_assert_eq(sk_model_load(g, 99, &m2, &e), SKYCMD_E_UNSUPPORTED);
    cr_assert_null(m2);
    sk_scratch_free(s);
    sk_model_free(m);
    sk_gguf_close(g);
}

/* The same marker twice and markers out of order give the same per-marker logits. */
Test(model, marker_order_and_duplicates) {
    sk_gguf *g = open_fixture("fx-a");
    sk_model *m = NULL;
    sk_err e = {0};
    cr_assert_eq(sk_model_load(g, SKYCMD_WEIGHTS_F32, &m, &e), SKYCMD_OK, "%s", e.msg);
    sk_scratch *s = sk_scratch_new(m);
    int32_t ids[40];
    for (int i = 0; i < 40; i++) ids[i] = 3 + (i * 7) % 90;
    int32_t mk1[3] = {5, 17, 30}, mk2[4] = {30, 5, 17, 5};
    float o1[3], o2[4];
    cr_assert_eq(sk_model_forward(m, s, ids, 40, 1, mk1, 3, o1, &e), SKYCMD_OK, "%s", e.msg);
    cr_assert_eq(sk_model_forward(m, s, ids, 40, 1, mk2, 4, o2, &e), SKYCMD_OK, "%s", e.msg);
    cr_assert_float_eq(o2[0], o1[2], 1e-6f);
    cr_assert_float_eq(o2[1], o1[0], 1e-6f);
    cr_assert_float_eq(o2[2], o1[1], 1e-6f);
    cr_assert_float_eq(o2[3], o1[0], 1e-6f);
    sk_scratch_free(s);
    sk_model_free(m);
    sk_gguf_close(g);
}

/* Copy fx-a into memory, dropping tensor `drop` and giving tensor `reshape` (if any) a
 * transposed shape, or replacing a u32 key's value; then try to load it. */
static const char *g_nan_tensor;  /* load_variant: tensor whose element 3 becomes NaN */
static void (*g_after_load)(sk_model *m);  /* load_variant: run on the loaded model */

/* load_variant: a key set to a string, bool or float instead (added when the file lacks it) */
static const char *g_set_key, *g_set_str;
static int g_set_type;   /* 's' string, 'b' bool, 'f' float */
static double g_set_num;

static int load_variant(const char *drop, const char *reshape, const char *key, uint32_t val,
                        char *msg, size_t msg_cap) {
    sk_gguf *g = open_fixture("fx-a");
    sk_gguf_writer *w = sk_gguf_writer_new(0);
    cr_assert(w);
    sk_err e = {0};
    for (size_t i = 0; i < sk_gguf_n_kv(g); i++) {
        sk_str k = sk_gguf_kv_key(g, i);
        if (sk_str_eq(k, "general.alignment")) continue;
        if (key && sk_str_eq(k, key)) {
            cr_assert_eq(sk_gguf_writer_add_u32(w, key, val), SKYCMD_OK);
            continue;
        }
        if (g_set_key && sk_str_eq(k, g_set_key)) continue;
        cr_assert_eq(sk_gguf_writer_add_value(w, k, sk_gguf_kv_value(g, i)), SKYCMD_OK);
    }
    if (g_set_key) {
        int r = g_set_type == 's'   ? sk_gguf_writer_add_str(w, g_set_key, g_set_str)
                : g_set_type == 'b' ? sk_gguf_writer_add_bool(w, g_set_key, g_set_num != 0.0)
                                    : sk_gguf_writer_add_f32(w, g_set_key, (float)g_set_num);
        cr_assert_eq(r, SKYCMD_OK);
    }
    for (size_t i = 0; i < sk_gguf_n_tensors(g); i++) {
        const sk_gguf_tensor *t = sk_gguf_tensor_at(g, i);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        if (drop && strcmp(name, drop) == 0) continue;
        uint64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
        if (reshape && strcmp(name, reshape) == 0) {
            ne[0] = t->ne[1];
            ne[1] = t->ne[0];
        }
        const void *data = t->data;
        static unsigned char patched[1 << 20];
        if (g_nan_tensor && strcmp(name, g_nan_tensor) == 0) {
            cr_assert(t->type == SK_GGML_F32 && t->nbytes <= sizeof patched);
            memcpy(patched, t->data, t->nbytes);
            float nanv = NAN;
            memcpy(patched + 3 * sizeof(float), &nanv, sizeof nanv);
            data = patched;
        }
        cr_assert_eq(sk_gguf_writer_add_tensor(w, name, t->n_dims < 2 && reshape &&
                                               strcmp(name, reshape) == 0 ? 2 : t->n_dims,
                                               ne, t->type, data, t->nbytes, 1, &e),
                     SKYCMD_OK, "%s", e.msg);
    }
    uint8_t *buf = NULL;
    size_t size = 0;
    cr_assert_eq(sk_gguf_writer_write_mem(w, &buf, &size, &e), SKYCMD_OK, "%s", e.msg);
    sk_gguf_writer_free(w);
    sk_gguf_close(g);
    sk_gguf *g2 = NULL;
    cr_assert_eq(sk_gguf_open_buffer(buf, size, &g2, &e), SKYCMD_OK, "%s", e.msg);
    sk_model *m = NULL;
    int rc = sk_model_load(g2, SKYCMD_WEIGHTS_F32, &m, &e);
    snprintf(msg, msg_cap, "%s", rc ? e.msg : "");
    if (rc == SKYCMD_OK) {
        cr_assert(m);
        if (g_after_load) g_after_load(m);
        sk_model_free(m);
    } else {
        cr_assert_null(m);
    }
    sk_gguf_close(g2);
    free(buf);
    return rc;
}

Test(model, load_validates_tensors_and_keys) {
    char msg[512];
    /* the unmodified copy loads */
    cr_assert_eq(load_variant(NULL, NULL, NULL, 0, msg, sizeof msg), SKYCMD_OK, "%s", msg);
    cr_assert_eq(load_variant("blk.2.ffn_down.weight", NULL, NULL, 0, msg, sizeof msg),
                 SKYCMD_E_FORMAT);
    cr_assert(strstr(msg, "blk.2.ffn_down.weight"), "%s", msg);
    cr_assert_eq(load_variant("blk.5.attn_qkv.bias", NULL, NULL, 0, msg, sizeof msg),
                 SKYCMD_E_FORMAT);
    cr_assert(strstr(msg, "blk.5.attn_qkv.bias"), "%s", msg);
    cr_assert_eq(load_variant("cls.output.bias", NULL, NULL, 0, msg, sizeof msg),
                 SKYCMD_E_FORMAT);
    cr_assert(strstr(msg, "cls.output.bias"), "%s", msg);
    cr_assert_eq(load_variant(NULL, "blk.1.attn_output.weight", NULL, 0, msg, sizeof msg),
                 SKYCMD_OK, "a square matrix transposed keeps its shape: %s", msg);
    cr_assert_eq(load_variant(NULL, "blk.1.ffn_up.weight", NULL, 0, msg, sizeof msg),
                 SKYCMD_E_FORMAT);
    cr_assert(strstr(msg, "blk.1.ffn_up.weight") && strstr(msg, "shape"), "%s", msg);
    cr_assert_eq(load_variant(NULL, "token_types.weight", NULL, 0, msg, sizeof msg),
                 SKYCMD_E_FORMAT);
    cr_assert(strstr(msg, "token_types.weight"), "%s", msg);
    /* head count must divide d into even head sizes */
    cr_assert_eq(load_variant(NULL, NULL, "modern-bert.attention.head_count", 3, msg, sizeof msg),
                 SKYCMD_E_FORMAT);
    cr_assert(strstr(msg, "head_count"), "%s", msg);
    /* a decision block count that leaves no encoder */
    cr_assert_eq(load_variant(NULL, NULL, "modern-bert.decision.block_count", 6, msg, sizeof msg),
                 SKYCMD_E_FORMAT);
    cr_assert(strstr(msg, "decision.block_count"), "%s", msg);
    /* one more decision block than the file has: the per-block FFN sizes then disagree */
    cr_assert_eq(load_variant(NULL, NULL, "modern-bert.decision.block_count", 3, msg, sizeof msg),
                 SKYCMD_E_UNSUPPORTED);
    cr_assert(strstr(msg, "feed_forward_length"), "%s", msg);
    cr_assert_eq(load_variant(NULL, NULL, "modern-bert.decision.block_count", 1, msg, sizeof msg),
                 SKYCMD_E_UNSUPPORTED);
    cr_assert_eq(load_variant(NULL, NULL, "modern-bert.attention.sliding_window_pattern", 0, msg,
                              sizeof msg), SKYCMD_E_FORMAT);
    cr_assert_eq(load_variant(NULL, NULL, "modern-bert.vocab_size", 101, msg, sizeof msg),
                 SKYCMD_E_FORMAT);
    cr_assert(strstr(msg, "vocab_size"), "%s", msg);
    /* non-finite weights are refused, naming the tensor and element */
    g_nan_tensor = "blk.1.ffn_up.weight";
    cr_assert_eq(load_variant(NULL, NULL, NULL, 0, msg, sizeof msg), SKYCMD_E_FORMAT);
    cr_assert(strstr(msg, "blk.1.ffn_up.weight") && strstr(msg, "element 3"), "%s", msg);
    g_nan_tensor = "cls.bias";
    cr_assert_eq(load_variant(NULL, NULL, NULL, 0, msg, sizeof msg), SKYCMD_E_FORMAT);
    cr_assert(strstr(msg, "cls.bias"), "%s", msg);
    g_nan_tensor = NULL;
}

static void use_row0(sk_model *m) {
    sk_scratch *s = sk_scratch_new(m);
    sk_err e = {0};
    int32_t ok_ids[3] = {1, 5, 2}, bad_ids[3] = {1, 0, 2}, mk[1] = {1};
    float out[1];
    cr_assert_eq(sk_model_forward(m, s, ok_ids, 3, 0, mk, 1, out, &e), SKYCMD_OK, "%s", e.msg);
    cr_assert_eq(sk_model_forward(m, s, bad_ids, 3, 0, mk, 1, out, &e), SKYCMD_E_FORMAT);
    cr_assert(strstr(e.msg, "token_embd.weight") && strstr(e.msg, "row 0"), "%s", e.msg);
    sk_scratch_free(s);
}

/* token_embd is widened lazily at lookup, but scanned once at load: a NaN in row 0 refuses
 * the model, naming the row and element, instead of failing every request that uses the
 * token (issue 16). */
Test(model, nan_embedding_row_is_refused_at_load) {
    char msg[512];
    g_nan_tensor = "token_embd.weight";  /* element 3 = row 0 */
    g_after_load = use_row0;
    cr_assert_eq(load_variant(NULL, NULL, NULL, 0, msg, sizeof msg), SKYCMD_E_FORMAT);
    cr_assert(strstr(msg, "token_embd.weight") && strstr(msg, "row 0") &&
              strstr(msg, "element 3"), "%s", msg);
    g_nan_tensor = NULL;
    g_after_load = NULL;
}

static void expect_refused(const char *key, int type, const char *str, double num,
                           int want_rc, const char *want_msg) {
    char msg[512];
    g_set_key = key;
    g_set_type = type;
    g_set_str = str;
    g_set_num = num;
    int rc = load_variant(NULL, NULL, NULL, 0, msg, sizeof msg);
    g_set_key = NULL;
    cr_expect_eq(rc, want_rc, "%s: rc %d, %s", key, rc, msg);
    if (want_msg) cr_expect(strstr(msg, key) && strstr(msg, want_msg), "%s: %s", key, msg);
}

/* Settings a GGUF can state that the forward pass does not compute are refused at load with
 * the key named (never answered as if absent); the values it does compute still load. */
Test(model, unimplemented_settings_are_refused_at_load) {
    expect_refused("modern-bert.hidden_activation", 's', "gelu_pytorch_tanh", 0,
                   SKYCMD_E_UNSUPPORTED, "gelu_pytorch_tanh");
    expect_refused("modern-bert.hidden_activation", 's', "gelu", 0, SKYCMD_OK, NULL);
    expect_refused("modern-bert.rope.scaling.type", 's', "yarn", 0, SKYCMD_E_UNSUPPORTED,
                   "RoPE scaling");
    expect_refused("modern-bert.rope.scaling.type", 's', "none", 0, SKYCMD_OK, NULL);
    expect_refused("modern-bert.decision.option_layout", 's', "grid", 0,
                   SKYCMD_E_UNSUPPORTED, "grid");
    expect_refused("modern-bert.decision.option_layout", 's', "parallel", 0, SKYCMD_OK, NULL);
    expect_refused("modern-bert.decision.option_layout", 's', "sequential", 0, SKYCMD_OK, NULL);
    expect_refused("modern-bert.attention.causal", 'b', NULL, 1, SKYCMD_E_UNSUPPORTED, "true");
    expect_refused("modern-bert.attention.causal", 'b', NULL, 0, SKYCMD_OK, NULL);
    expect_refused("modern-bert.attention.layer_norm_epsilon", 'f', NULL, 1e-40,
                   SKYCMD_E_UNSUPPORTED, "outside");
    expect_refused("modern-bert.attention.layer_norm_epsilon", 'f', NULL, 2.0,
                   SKYCMD_E_UNSUPPORTED, "outside");
    expect_refused("modern-bert.attention.layer_norm_epsilon", 'f', NULL, 1e-12, SKYCMD_OK,
                   NULL);
}

/* With a thread pool the logits are bitwise identical to one thread. */
Test(model, threads_give_identical_logits) {
    static fx_case cases[32];
    size_t nc = load_cases("fx-b", cases, 32);
    sk_gguf *g = open_fixture("fx-b");
    sk_model *m = NULL;
    sk_err e = {0};
    cr_assert_eq(sk_model_load(g, SKYCMD_WEIGHTS_F32, &m, &e), SKYCMD_OK, "%s", e.msg);
    sk_scratch *s1 = sk_scratch_new(m), *s2 = sk_scratch_new(m);
    for (int nth = 2; nth <= 3; nth++) {
        sk_pool *pool = sk_pool_new(nth);
        cr_assert(pool);
        sk_scratch_set_pool(s2, pool);
        for (size_t i = 0; i < nc; i++) {
            fx_case *c = &cases[i];
            float o1[MAXK], o2[MAXK];
            cr_assert_eq(sk_model_forward(m, s1, c->ids, c->n, c->qtype, c->markers, c->k, o1,
                                          &e), SKYCMD_OK, "%s", e.msg);
            cr_assert_eq(sk_model_forward(m, s2, c->ids, c->n, c->qtype, c->markers, c->k, o2,
                                          &e), SKYCMD_OK, "%s", e.msg);
            cr_assert(memcmp(o1, o2, c->k * sizeof(float)) == 0, "case %zu differs with %d "
                      "threads", i, nth);
        }
        sk_scratch_set_pool(s2, NULL);
        sk_pool_free(pool);
    }
    sk_scratch_free(s1);
    sk_scratch_free(s2);
    sk_model_free(m);
    sk_gguf_close(g);
}

/* A batch gives every sequence exactly its single-sequence logits. */
Test(model, batch_equals_one_at_a_time) {
    static fx_case cases[32];
    size_t nc = load_cases("fx-a", cases, 32);
    sk_gguf *g = open_fixture("fx-a");
    sk_model *m = NULL;
    sk_err e = {0};
    cr_assert_eq(sk_model_load(g, SKYCMD_WEIGHTS_F32, &m, &e), SKYCMD_OK, "%s", e.msg);
    sk_scratch *s1 = sk_scratch_new(m), *s2 = sk_scratch_new(m);
    static float single[32][MAXK], batched[32][MAXK];
    sk_seq seqs[33];
    size_t ns = 0;
    for (size_t i = 0; i < nc; i++) {
        fx_case *c = &cases[i];
        cr_assert_eq(sk_model_forward(m, s1, c->ids, c->n, c->qtype, c->markers, c->k,
                                      single[i], &e), SKYCMD_OK, "%s", e.msg);
        seqs[ns++] = (sk_seq){c->ids, c->n, c->qtype, c->markers, c->k, batched[i], NULL, NULL};
        if (i == 2) seqs[ns++] = (sk_seq){c->ids, c->n, 1, NULL, 0, NULL, NULL, NULL};  /* no markers */
    }
    cr_assert_eq(sk_model_forward_batch(m, s2, seqs, ns, &e), SKYCMD_OK, "%s", e.msg);
    for (size_t i = 0; i < nc; i++) {
        cr_assert(memcmp(single[i], batched[i], cases[i].k * sizeof(float)) == 0,
                  "case %zu differs in the batch", i);
        for (size_t r = 0; r < cases[i].k; r++)
            cr_assert(fabs(batched[i][r] - cases[i].logits[r]) <= TOL * fmax(1.0, fabs(cases[i].logits[r])));
    }
    /* errors name the sequence */
    int32_t bad[1] = {500};
    seqs[1].markers = bad;
    cr_assert_eq(sk_model_forward_batch(m, s2, seqs, ns, &e), SKYCMD_E_INVALID_ARGUMENT);
    cr_assert(strstr(e.msg, "sequence 1") && strstr(e.msg, "marker"), "%s", e.msg);
    cr_assert_eq(sk_model_forward_batch(m, s2, NULL, 0, &e), SKYCMD_OK);
    sk_scratch_free(s1);
    sk_scratch_free(s2);
    sk_model_free(m);
    sk_gguf_close(g);
}

/* fx-a's cases, its F32 model, and each case's logits from a pass of its own: what the
 * split tests compare a batch against. */
typedef struct split_fixture {
    fx_case cases[32];
    size_t nc;
    sk_gguf *g;
    sk_model *m;
    float single[32][MAXK];
} split_fixture;

static void split_fixture_open(split_fixture *f) {
    f->nc = load_cases("fx-a", f->cases, 32);
    cr_assert(f->nc >= 3, "the fixture has %zu cases", f->nc);
    f->g = open_fixture("fx-a");
    f->m = NULL;
    sk_err e = {0};
    cr_assert_eq(sk_model_load(f->g, SKYCMD_WEIGHTS_F32, &f->m, &e), SKYCMD_OK, "%s", e.msg);
    sk_scratch *s1 = sk_scratch_new(f->m);
    for (size_t i = 0; i < f->nc; i++) {
        const fx_case *c = &f->cases[i];
        cr_assert_eq(sk_model_forward(f->m, s1, c->ids, c->n, c->qtype, c->markers, c->k,
                                      f->single[i], &e), SKYCMD_OK, "%s", e.msg);
    }
    sk_scratch_free(s1);
}

static void split_fixture_close(split_fixture *f) {
    sk_model_free(f->m);
    sk_gguf_close(f->g);
}

/* On a pool, a batch of a small model's sequences runs one group of sequences per thread
 * (passes.c): every sequence still gets exactly its single-sequence logits, with two and
 * three threads, with a budget that lends no helper (the caller then runs the batch as one
 * pass), and with sequences that have no markers among them; an error still names the
 * caller's sequence. The fixture models are small enough for the split, which the scratch
 * shows by the helpers' scratches it made. */
Test(model, batch_split_by_sequence_equals_one_at_a_time) {
    static split_fixture f;
    split_fixture_open(&f);
    fx_case *cases = f.cases;
    const size_t nc = f.nc;
    sk_model *m = f.m;
    float (*single)[MAXK] = f.single;
    sk_err e = {0};
    sk_scratch *s2 = sk_scratch_new(m);
    static float batched[32][MAXK];
    for (int run = 0; run < 3; run++) {
        const int nth = run == 0 ? 2 : 3;
        if (run == 2) sk_compute_set_budget(1);  /* no helper can be lent */
        sk_pool *pool = sk_pool_new(nth);
        cr_assert(pool);
        sk_scratch_set_pool(s2, pool);
        sk_seq seqs[34];
        size_t ns = 0;
        for (size_t i = 0; i < nc; i++) {
            fx_case *c = &cases[i];
            seqs[ns++] = (sk_seq){c->ids, c->n, c->qtype, c->markers, c->k, batched[i], NULL, NULL};
            if (i == 0 || i == 2)  /* no markers: nothing reads them */
                seqs[ns++] = (sk_seq){c->ids, c->n, 1, NULL, 0, NULL, NULL, NULL};
        }
        memset(batched, 0, sizeof batched);
        cr_assert_eq(sk_model_forward_batch(m, s2, seqs, ns, &e), SKYCMD_OK, "%s", e.msg);
        for (size_t i = 0; i < nc; i++)
            cr_assert(memcmp(single[i], batched[i], cases[i].k * sizeof(float)) == 0,
                      "case %zu differs in a batch on %d threads (run %d)", i, nth, run);
        cr_assert_eq(s2->n_sub, nth - 1, "the batch was split with %d helper scratches, "
                     "not %d", s2->n_sub, nth - 1);
        /* errors name the caller's sequence: index 3 is case 2 (a marker-less one is 1) */
        int32_t bad[1] = {500};
        const int32_t *keep = seqs[3].markers;
        seqs[3].markers = bad;
        cr_assert_eq(sk_model_forward_batch(m, s2, seqs, ns, &e), SKYCMD_E_INVALID_ARGUMENT);
        cr_assert(strstr(e.msg, "sequence 3") && strstr(e.msg, "marker"), "%s", e.msg);
        seqs[3].markers = keep;
        sk_scratch_set_pool(s2, NULL);
        sk_pool_free(pool);
        if (run == 2) sk_compute_set_budget(0);
    }
    sk_scratch_free(s2);
    split_fixture_close(&f);
}

/* A helper that is late with its group of a split never holds the batch up: the caller runs
 * the group too once it has none left, and the first pass to finish publishes it (here the
 * caller's, as the helpers sleep 20 ms before each group they claim). The logits are
 * bitwise those of one sequence at a time either way. */
Test(model, batch_split_caller_takes_over_late_helpers_groups) {
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof cpus, &cpus) != 0 || CPU_COUNT(&cpus) < 2)
        cr_skip_test("needs 2 CPUs: a helper joins a split only while the caller still runs");
    static split_fixture f;
    split_fixture_open(&f);
    const fx_case *cases = f.cases;
    const size_t nc = f.nc;
    sk_model *m = f.m;
    sk_err e = {0};
    sk_scratch *s2 = sk_scratch_new(m);
    static float batched[32][MAXK];
    sk_split_set_helper_delay_us(20000);
    for (int nth = 2; nth <= 3; nth++) {
        sk_compute_set_budget(nth);  /* helpers can be lent whatever the machine */
        sk_pool *pool = sk_pool_new(nth);
        cr_assert(pool);
        sk_scratch_set_pool(s2, pool);
        sk_seq seqs[32];
        for (size_t i = 0; i < nc; i++)
            seqs[i] = (sk_seq){cases[i].ids, cases[i].n, cases[i].qtype, cases[i].markers,
                               cases[i].k, batched[i], NULL, NULL};
        const size_t before = sk_split_caller_published();
        int tries = 0;
        /* a helper joins only if it wakes before the caller's share ends: try until one did */
        for (; tries < 200 && sk_split_caller_published() == before; tries++) {
            memset(batched, 0, sizeof batched);
            cr_assert_eq(sk_model_forward_batch(m, s2, seqs, nc, &e), SKYCMD_OK, "%s", e.msg);
            for (size_t i = 0; i < nc; i++)
                cr_assert(memcmp(f.single[i], batched[i], cases[i].k * sizeof(float)) == 0,
                          "case %zu differs on %d threads (try %d)", i, nth, tries);
        }
        cr_assert(sk_split_caller_published() > before,
                  "no helper joined a split on %d threads in %d tries", nth, tries);
        sk_scratch_set_pool(s2, NULL);
        sk_pool_free(pool);
    }
    sk_split_set_helper_delay_us(0);
    sk_compute_set_budget(0);
    sk_scratch_free(s2);
    split_fixture_close(&f);
}

/* A model opened from a caller's buffer leaves that buffer as it was: the load gives pages
 * back to the system only for its own file mapping (on a caller's anonymous memory the same
 * madvise would zero them, and the embedding rows read later would be zeros). */
Test(model, load_from_buffer_leaves_the_buffer_intact) {
    char path[1024];
    snprintf(path, sizeof path, "%s/model/fx-b.gguf", SKYCMD_FIXTURES);
    size_t n = 0;
    uint8_t *file = tu_slurp(path, &n);
    cr_assert(file && n > 0);
    /* page-aligned, so every page the tensors span lies wholly inside the buffer */
    uint8_t *buf = aligned_alloc(1 << 16, (n + (1 << 16) - 1) / (1 << 16) * (1 << 16));
    cr_assert(buf);
    memcpy(buf, file, n);
    sk_err e = {0};
    sk_gguf *g = NULL;
    cr_assert_eq(sk_gguf_open_buffer(buf, n, &g, &e), SKYCMD_OK, "%s", e.msg);
    sk_model *m = NULL;
    cr_assert_eq(sk_model_load(g, SKYCMD_WEIGHTS_F32, &m, &e), SKYCMD_OK, "%s", e.msg);
    cr_expect(memcmp(buf, file, n) == 0, "the load changed the caller's buffer");
    sk_model_free(m);
    sk_gguf_close(g);
    free(buf);
    free(file);
}

/* ---------------------------------------------------------------- progress of an open */

/* skycmd_model_open / _open_buffer report their whole load through the options' progress
 * callback (include/skycmd.h): total is always the same, done starts at 0, never goes back
 * and ends at total; a non-zero return at any call (the first, one in the middle, the
 * last) fails the open with SKYCMD_E_CANCELLED, *out NULL and nothing left allocated (the
 * ASan build checks that). */
typedef struct prog_rec {
    size_t calls;
    size_t cancel_at;      /* return non-zero at this call (1-based); 0 = never */
    uint64_t cancel_done;  /* ... or at the first call with done >= this (0 = never) */
    uint64_t first, last, total;
    int bad;               /* a call broke the contract */
    char why[160];
} prog_rec;

static int record_progress(void *ud, uint64_t done, uint64_t total) {
    prog_rec *r = ud;
    r->calls++;
    if (r->calls == 1) {
        r->first = done;
        r->total = total;
    } else if (!r->bad && (done < r->last || total != r->total)) {
        r->bad = 1;
        snprintf(r->why, sizeof r->why, "call %zu: %llu/%llu after %llu/%llu", r->calls,
                 (unsigned long long)done, (unsigned long long)total,
                 (unsigned long long)r->last, (unsigned long long)r->total);
    }
    if (!r->bad && (done > total || total == 0)) {
        r->bad = 1;
        snprintf(r->why, sizeof r->why, "call %zu: %llu/%llu", r->calls,
                 (unsigned long long)done, (unsigned long long)total);
    }
    r->last = done;
    return (r->cancel_at && r->calls == r->cancel_at) ||
           (r->cancel_done && done >= r->cancel_done);
}

/* A random model of the preset, type and layout in the test's scratch directory. */
static void random_model_at(const char *preset, int type, int layout, const char *path) {
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert(o && err);
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_TYPE, type), SKYCMD_OK);
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_LAYOUT, layout), SKYCMD_OK);
    cr_assert_eq(skycmd_random_model(preset, path, o, err), SKYCMD_OK, "%s", skycmd_error_message(err));
    skycmd_options_free(o);
    skycmd_error_free(err);
}

static const char *const PROG_BODY =
    "{\"state\":\"vy 0 dx 36\",\"questions\":{\"a\":{\"type\":\"noul\",\"instructions\":"
    "\"Will it crash?\"},\"b\":{\"type\":\"choice\",\"instructions\":\"Which?\",\"criteria\":"
    "{\"x\":\"up\",\"y\":\"down\"}}}}";

/* The response JSON of PROG_BODY (caller frees). */
static char *answer_of(skycmd_model *m) {
    skycmd_session *s = NULL;
    cr_assert_eq(skycmd_session_new(m, &s), SKYCMD_OK);
    char *json = NULL;
    cr_assert_eq(skycmd_decide_json(s, PROG_BODY, strlen(PROG_BODY), &json), SKYCMD_OK, "%s",
                 skycmd_session_errmsg(s));
    skycmd_session_free(s);
    return json;
}

/* Open path (or, with buf, those bytes) with a recording callback: the status, the model
 * in *out (NULL on failure), the error message in msg. */
static int open_recorded(const char *path, const void *buf, size_t size, int weights, prog_rec *r,
                         skycmd_model **out, char *msg, size_t msg_cap) {
    skycmd_options *o = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    cr_assert(o && err);
    cr_assert_eq(skycmd_options_set_int(o, SKYCMD_OPT_WEIGHTS, weights), SKYCMD_OK);
    if (r) cr_assert_eq(skycmd_options_set_progress(o, record_progress, r), SKYCMD_OK);
    *out = (skycmd_model *)(uintptr_t)1;  /* must be overwritten */
    int st = buf ? skycmd_model_open_buffer(buf, size, o, out, err) : skycmd_model_open(path, o, out, err);
    snprintf(msg, msg_cap, "%s", skycmd_error_message(err));
    skycmd_options_free(o);
    skycmd_error_free(err);
    return st;
}

/* A whole open: the contract of the calls, the model answering as one opened without a
 * callback; returns the number of calls. */
static size_t check_full_open(const char *path, const void *buf, size_t size, int weights) {
    prog_rec r = {0};
    skycmd_model *m = NULL, *plain = NULL;
    char msg[600];
    int st = open_recorded(path, buf, size, weights, &r, &m, msg, sizeof msg);
    cr_assert_eq(st, SKYCMD_OK, "%s (weights %d): %s", path, weights, msg);
    cr_assert_not_null(m);
    cr_expect(!r.bad, "%s (weights %d): %s", path, weights, r.why);
    cr_expect_gt(r.calls, 2, "%s (weights %d): %zu calls", path, weights, r.calls);
    cr_expect_eq(r.first, 0, "the first call is done = 0");
    cr_expect_gt(r.total, 0);
    cr_expect_eq(r.last, r.total, "%s (weights %d): the last call is done = total (%llu of %llu)",
                 path, weights, (unsigned long long)r.last, (unsigned long long)r.total);
    /* the callback changes nothing of what is loaded */
    cr_assert_eq(open_recorded(path, buf, size, weights, NULL, &plain, msg, sizeof msg), SKYCMD_OK, "%s", msg);
    char *a = answer_of(m), *b = answer_of(plain);
    cr_expect_str_eq(a, b, "weights %d: the model opened with progress answers otherwise", weights);
    skycmd_string_free(a);
    skycmd_string_free(b);
    cr_expect_eq(skycmd_model_free(m), SKYCMD_OK);
    cr_expect_eq(skycmd_model_free(plain), SKYCMD_OK);
    return r.calls;
}

/* Cancelling at call `at` (or at the first with done >= at_done): SKYCMD_E_CANCELLED, *out
 * NULL, the message says so (and contains `where` when given). */
static void check_cancel(const char *path, const void *buf, size_t size, int weights, size_t at,
                         uint64_t at_done, const char *where) {
    prog_rec r = {0};
    r.cancel_at = at;
    r.cancel_done = at_done;
    skycmd_model *m = NULL;
    char msg[600];
    int st = open_recorded(path, buf, size, weights, &r, &m, msg, sizeof msg);
    cr_expect_eq(st, SKYCMD_E_CANCELLED, "%s (weights %d) cancelled at call %zu / done %llu: %s (%s)",
                 path, weights, at, (unsigned long long)at_done, skycmd_status_name(st), msg);
    cr_expect_null(m, "*out is NULL after a cancel");
    cr_expect(strstr(msg, "cancel"), "message: %s", msg);
    if (where) cr_expect(strstr(msg, where), "cancelled at call %zu: '%s' not in: %s", at, where, msg);
    cr_expect(!r.bad, "%s", r.why);
    if (at) cr_expect_eq(r.calls, at, "no call after the one that cancelled");
    if (m) skycmd_model_free(m);
}

static void check_cancels(const char *path, int weights, size_t n) {
    const size_t at[] = {1, 2, n / 4, n / 2, 3 * n / 4, n - 1, n};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
        if (at[i] >= 1) check_cancel(path, NULL, 0, weights, at[i], 0, NULL);
}

Test(model_progress, gguf_open_f16_and_f32, .fini = tu_scratch_remove) {
    char dir[1024], path[1100];
    tu_scratch_make(dir, sizeof dir, "test_model", "progress");
    const int types[2] = {SKYCMD_TYPE_F16, SKYCMD_TYPE_F32};
    for (int t = 0; t < 2; t++) {
        snprintf(path, sizeof path, "%s/pico-%d.gguf", dir, types[t]);
        random_model_at("s1-pico", types[t], SKYCMD_LAYOUT_GGUF, path);
        const size_t n = check_full_open(path, NULL, 0, SKYCMD_WEIGHTS_F32);
        check_full_open(path, NULL, 0, SKYCMD_WEIGHTS_BF16X3);
        check_cancels(path, SKYCMD_WEIGHTS_F32, n);
    }
    /* the first call comes before anything is read, the last once the model is complete */
    check_cancel(path, NULL, 0, SKYCMD_WEIGHTS_F32, 1, 0, path);
}

/* The int8 weights modes: the calibration, the sensitivity probe and the quantization report
 * too, and a cancel in each of them frees what it made. */
Test(model_progress, gguf_open_q8, .fini = tu_scratch_remove) {
    char dir[1024], path[1100];
    tu_scratch_make(dir, sizeof dir, "test_model", "progress-q8");
    snprintf(path, sizeof path, "%s/pico.gguf", dir);
    random_model_at("s1-pico", SKYCMD_TYPE_F16, SKYCMD_LAYOUT_GGUF, path);
    const size_t n = check_full_open(path, NULL, 0, SKYCMD_WEIGHTS_Q8);
    cr_expect_gt(n, 100, "--q8 reports its passes layer by layer (%zu calls)", n);
    check_cancels(path, SKYCMD_WEIGHTS_Q8, n);
    /* by where done is: the phases' shares are the estimates of model_internal.h */
    check_cancel(path, NULL, 0, SKYCMD_WEIGHTS_Q8, 0, SK_PROGRESS_TOTAL / 20, "int8 calibration");
    check_cancel(path, NULL, 0, SKYCMD_WEIGHTS_Q8, 0, SK_PROGRESS_TOTAL / 2, "int8 sensitivity probe");
    const size_t n_row = check_full_open(path, NULL, 0, SKYCMD_WEIGHTS_Q8_ROW);
    check_cancel(path, NULL, 0, SKYCMD_WEIGHTS_Q8_ROW, n_row / 2, 0, NULL);
    const size_t n_plain = check_full_open(path, NULL, 0, SKYCMD_WEIGHTS_Q8_PLAIN);
    check_cancel(path, NULL, 0, SKYCMD_WEIGHTS_Q8_PLAIN, n_plain - 1, 0, NULL);
}

/* A file larger than one read chunk (8 MiB): the reading reports each chunk, and a cancel
 * between two chunks frees the copy. */
Test(model_progress, cancel_while_reading, .fini = tu_scratch_remove) {
    char dir[1024], path[1100];
    tu_scratch_make(dir, sizeof dir, "test_model", "progress-read");
    snprintf(path, sizeof path, "%s/micro.gguf", dir);
    random_model_at("s1-micro", SKYCMD_TYPE_F32, SKYCMD_LAYOUT_GGUF, path);
    check_cancel(path, NULL, 0, SKYCMD_WEIGHTS_F32, 2, 0, "reading the file");
    check_full_open(path, NULL, 0, SKYCMD_WEIGHTS_F32);
}

/* From a caller's buffer: no reading, the same contract; a cancel leaves the buffer as is. */
Test(model_progress, buffer_open, .fini = tu_scratch_remove) {
    char dir[1024], path[1100];
    tu_scratch_make(dir, sizeof dir, "test_model", "progress-buf");
    snprintf(path, sizeof path, "%s/pico.gguf", dir);
    random_model_at("s1-pico", SKYCMD_TYPE_F16, SKYCMD_LAYOUT_GGUF, path);
    size_t size = 0;
    uint8_t *buf = tu_slurp(path, &size), *copy = malloc(size);
    cr_assert(copy);
    memcpy(copy, buf, size);
    const size_t n = check_full_open(NULL, buf, size, SKYCMD_WEIGHTS_F32);
    check_cancel(NULL, buf, size, SKYCMD_WEIGHTS_F32, 1, 0, NULL);
    check_cancel(NULL, buf, size, SKYCMD_WEIGHTS_F32, n / 2, 0, NULL);
    check_cancel(NULL, buf, size, SKYCMD_WEIGHTS_F32, n, 0, NULL);
    cr_expect(memcmp(buf, copy, size) == 0, "a cancelled open changed the caller's buffer");
    free(copy);
    free(buf);
}

/* A Laya checkpoint directory (converted in memory) opens as before and reports its
 * conversion and its load as one sequence; a cancel in either stops it. */
Test(model_progress, laya_directory_open, .fini = tu_scratch_remove) {
    char dir[1024], path[1100];
    tu_scratch_make(dir, sizeof dir, "test_model", "progress-laya");
    snprintf(path, sizeof path, "%s/laya", dir);
    random_model_at("s1-pico", SKYCMD_TYPE_F16, SKYCMD_LAYOUT_LAYA, path);
    skycmd_model *m = NULL;
    skycmd_error *err = skycmd_error_new();
    cr_assert_eq(skycmd_model_open(path, NULL, &m, err), SKYCMD_OK, "%s", skycmd_error_message(err));
    cr_expect_eq(skycmd_model_free(m), SKYCMD_OK);
    skycmd_error_free(err);
    const size_t n = check_full_open(path, NULL, 0, SKYCMD_WEIGHTS_F32);
    check_cancel(path, NULL, 0, SKYCMD_WEIGHTS_F32, 2, 0, "conversion cancelled");
    check_cancel(path, NULL, 0, SKYCMD_WEIGHTS_F32, n / 2, 0, NULL);
    check_cancel(path, NULL, 0, SKYCMD_WEIGHTS_F32, n, 0, NULL);
}
