/* random_model.c - deterministic random Laya checkpoints (see random_model.h). */
#define _POSIX_C_SOURCE 200809L
#include "random_model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../gguf/gguf.h"
#include "../tokenizer/tokenizer.h"
#include "laya_specs.h"

/* The generator must give the same bits everywhere: no fused multiply-adds. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

static const sk_random_preset k_presets[] = {
    /* name       hidden heads layers inter vocab head_layers mmbert */
    {"s1-pico", 64, 1, 2, 128, 1024, 1, 0},
    {"s1-nano", 128, 2, 4, 256, 2048, 1, 0},
    {"s1-micro", 256, 4, 6, 512, 4096, 2, 0},
    /* ModernBERT-base and -large compute shapes with a small generated vocabulary. */
    {"base", 768, 12, 22, 1152, 4096, 2, 0},
    {"large", 1024, 16, 28, 2624, 4096, 2, 0},
    /* mmBERT-small / -base (Julia-1 / laya-multilingual): 22 layers, intermediate 1152, the
     * Gemma-sized vocabulary (256000) with a generated Gemma-style tokenizer */
    {"mmbert-small", 384, 6, 22, 1152, 256000, 2, 1},
    {"mmbert-base", 768, 12, 22, 1152, 256000, 2, 1},
};

#define R_MAX_LEN 256
#define R_HEAD_MAX_LEN 96
#define R_MAX_POSITION 8192
#define R_LOCAL_ATTENTION 64
#define R_GLOBAL_EVERY 3
#define R_MASSIVE_SCALE 20.0
/* Gains of the matrices that read a normalized residual stream (std = gain / sqrt(fan-in)).
 * They set how sharp the answers of these small random models are, and how much the models
 * amplify a perturbation of their weights. At 1.5 everywhere, F16's own rounding of the
 * encoder matrices moved the golden suite's probabilities by up to 1.9e-3 (bound 1e-3). The
 * encoder, which `convert --type f16` rounds, gets 1.1 (1.2 still reached 1.3e-3 on other
 * seeds); the decision head, which stays F32 there, keeps some more sharpness with 1.3. Worst
 * F16 case then 6.6e-4 over the suite's and six other models (docs/golden.md). */
#define R_GAIN_ENCODER 1.1
#define R_GAIN_HEAD 1.3

const sk_random_preset *sk_random_find_preset(const char *name, int *extreme) {
    if (extreme) *extreme = 0;
    if (!name) return NULL;
    size_t n = strlen(name);
    int xt = n > 3 && strcmp(name + n - 3, "-xt") == 0;
    if (xt) n -= 3;
    for (size_t i = 0; i < sizeof k_presets / sizeof k_presets[0]; i++)
        if (strlen(k_presets[i].name) == n && strncmp(k_presets[i].name, name, n) == 0) {
            if (extreme) *extreme = xt;
            return &k_presets[i];
        }
    return NULL;
}

/* ---- portable PRNG ---- */
typedef struct rng {
    uint64_t s;
} rng;

static uint64_t splitmix64(rng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform(rng *r) { return (double)(splitmix64(r) >> 11) * (1.0 / 9007199254740992.0); }

/* Irwin-Hall(4) rescaled to unit variance: close enough to a normal, and exact arithmetic. */
static double normal(rng *r) {
    double s = uniform(r);
    s = s + uniform(r);
    s = s + uniform(r);
    s = s + uniform(r);
    return (s - 2.0) * 1.7320508075688772;
}

static double inv_sqrt_u(uint64_t n) {
    /* 1/sqrt(n) by Newton iterations from a power-of-two guess: no libm. */
    double x = (double)n, y = 1.0;
    /* Newton's step y(1.5 - 0.5xy^2) converges only for xy^2 in (0, 3): start in [1/4, 1]. */
    while (x * y * y > 1.0) y *= 0.5;
    while (x * y * y < 0.25) y *= 2.0;
    for (int i = 0; i < 40; i++) y = y * (1.5 - 0.5 * x * y * y);
    return y;
}

static void put_f32(uint8_t *p, float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    p[0] = (uint8_t)b;
    p[1] = (uint8_t)(b >> 8);
    p[2] = (uint8_t)(b >> 16);
    p[3] = (uint8_t)(b >> 24);
}

void sk_random_free(sk_random_ckpt *c) {
    if (!c) return;
    free(c->rl_config);
    free(c->enc_config);
    free(c->config);
    free(c->tokenizer);
    free(c->tok_config);
    free(c->special_map);
    free(c->safetensors);
    memset(c, 0, sizeof *c);
}

static int is_massive(const uint32_t *ch, uint32_t n, uint64_t c) {
    for (uint32_t i = 0; i < n; i++)
        if (ch[i] == c) return 1;
    return 0;
}

/* Fill one tensor (PyTorch [rows, cols] or [n]) by its role. */
static void fill(uint8_t *dst, const sk_laya_spec *s, rng *r, const uint32_t *mch, uint32_t nm,
                 int is_emb_norm) {
    uint64_t rows = s->n_dims == 2 ? s->shape[0] : 1;
    uint64_t cols = s->n_dims == 2 ? s->shape[1] : s->shape[0];
    double std = 1.0;
    switch (s->kind) {
    case SK_LK_EMBED: std = 1.0; break;
    case SK_LK_NORM: std = 0.1; break;
    case SK_LK_BIAS: std = 0.1; break;
    case SK_LK_MAT_IN:
        std = (strncmp(s->hf, "encoder.", 8) == 0 ? R_GAIN_ENCODER : R_GAIN_HEAD) * inv_sqrt_u(cols);
        break;
    case SK_LK_MAT_OUT: std = 1.0 * inv_sqrt_u(cols); break;
    case SK_LK_TYPE_EMB: std = 1.0; break;
    case SK_LK_SCORER_OUT: std = 3.0 * inv_sqrt_u(cols); break;
    case SK_LK_ACT: std = inv_sqrt_u(s->n_dims == 2 ? cols : 256); break;
    default: std = 0.0; break;
    }
    for (uint64_t i = 0; i < rows; i++)
        for (uint64_t j = 0; j < cols; j++) {
            double v;
            if (s->kind == SK_LK_TEMPERATURE) {
                v = 1.0; /* the unused buffer keeps its initial ones */
            } else if (s->kind == SK_LK_NORM) {
                v = 1.0 + std * normal(r);
                if (is_emb_norm && nm && is_massive(mch, nm, j)) v = v * R_MASSIVE_SCALE;
            } else {
                v = std * normal(r);
                /* Matrices reading the residual stream see the massive channels through small
                 * weights, as in trained models (and the int8 issue they cause). */
                if (s->kind == SK_LK_MAT_IN && nm && is_massive(mch, nm, j))
                    v = v * (1.0 / R_MASSIVE_SCALE);
                /* ... and the layers keep writing them at the same scale, so that they stay
                 * ~20x the rest through the depth instead of fading as the others grow. */
                if (s->kind == SK_LK_MAT_OUT && nm && is_massive(mch, nm, i))
                    v = v * R_MASSIVE_SCALE;
            }
            put_f32(dst + 4 * (i * cols + j), (float)v);
        }
}

static void json_temp(sk_buf *b, const char *key, float t, int comma) {
    sk_buf_printf(b, "%s\n    \"%s\": %.9g", comma ? "," : "", key, (double)t);
}

int sk_random_build(const char *preset, uint64_t seed, uint32_t massive, sk_random_ckpt *out,
                    sk_err *e) {
    memset(out, 0, sizeof *out);
    int xt = 0;
    const sk_random_preset *p = sk_random_find_preset(preset, &xt);
    if (!p)
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT,
                       "unknown random preset \"%s\" (s1-pico, s1-nano, s1-micro, base, large, "
                       "mmbert-small, mmbert-base; "
                       "add -xt for out-of-range temperatures)",
                       preset ? preset : "(null)");
    if (massive > 64 || massive > p->hidden / 4)
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT,
                       "--massive %u: at most min(64, hidden/4 = %u) channels", massive,
                       p->hidden / 4);
    sk_laya_config c;
    memset(&c, 0, sizeof c);
    c.head_layers = p->head_layers;
    const uint32_t max_len = p->mmbert ? 1024 : R_MAX_LEN, head_max_len = p->mmbert ? 256 : R_HEAD_MAX_LEN;
    const uint32_t local_attention = p->mmbert ? 128 : R_LOCAL_ATTENTION;
    const double local_theta = p->mmbert ? 160000.0 : 10000.0;
    /* special ids of the tokenizer: Gemma's <bos> CLS / <eos> SEP, or [CLS]=2 [SEP]=3 */
    const unsigned cls_id = 2, sep_id = p->mmbert ? 1 : 3;
    c.max_len = max_len;
    c.head_max_len = head_max_len;
    c.n_act = 2;
    c.vocab_size = p->vocab;
    c.hidden = p->hidden;
    c.n_layers = p->layers;
    c.n_heads = p->heads;
    c.intermediate = p->intermediate;

    /* Independent streams: weights, temperatures, massive channels. */
    rng rw = {seed ^ 0x5EED0000000000A1ull}, rt = {seed ^ 0x7E3B000000000002ull},
        rm = {seed ^ 0x3A55000000000003ull};
    for (int k = 0; k < 4; k++) { splitmix64(&rw); splitmix64(&rt); splitmix64(&rm); }

    uint32_t mch[64];
    for (uint32_t i = 0; i < massive; i++) {
        uint32_t ch;
        do ch = (uint32_t)(splitmix64(&rm) % p->hidden);
        while (is_massive(mch, i, ch));
        mch[i] = ch;
    }

    int s = p->mmbert ? sk_tokenizer_random_spm_json(p->vocab, seed, &out->tokenizer, &out->tok_config, e)
                      : sk_tokenizer_random_json(p->vocab, seed, &out->tokenizer, &out->tok_config, e);
    if (s) return s;

    /* Temperatures: calibrated-looking values in [0.6, 2.5]. */
    float temp[3];
    for (int i = 0; i < 3; i++) temp[i] = (float)(0.6 + 1.9 * uniform(&rt));
    static const char *bk[5] = {"choice:2", "choice:3-5", "choice:6-10", "score:3-5", "noul:2"};
    float bv[5];
    for (int i = 0; i < 5; i++) bv[i] = (float)(0.6 + 1.9 * uniform(&rt));
    if (xt) bv[3] = 7.0f; /* score:3-5 above the clamp */

    sk_buf b;
    sk_buf_init(&b);
    sk_buf_printf(&b,
                  "{\n  \"encoder\": \"skycmd/random-%s\",\n  \"head_layers\": %u,\n"
                  "  \"max_len\": %u,\n  \"head_max_len\": %u,\n  \"max_prefixes\": 6,\n"
                  "  \"act_costs\": {\"escalate\": 0.5},\n  \"cost_wrong_act\": 3.0,\n"
                  "  \"amp_dtype\": \"bf16\",\n  \"model_name\": \"rl-agent\",\n"
                  "  \"temperature\": [%.9g, %.9g, %.9g],\n  \"temperature_by_options\": {",
                  p->name, p->head_layers, max_len, head_max_len, (double)temp[0],
                  (double)temp[1], (double)temp[2]);
    for (int i = 0; i < 5; i++) json_temp(&b, bk[i], bv[i], i > 0);
    if (xt) json_temp(&b, "choice:11+", 0.1f, 1); /* below the clamp */
    sk_buf_puts(&b, "\n  }\n}\n");
    out->rl_config = sk_buf_detach(&b);

    /* A transformers 5 ModernBertConfig, as `to_json_string()` writes it. */
    sk_buf_init(&b);
    sk_buf_printf(&b,
        "{\n  \"architectures\": [\n    \"ModernBertModel\"\n  ],\n"
        "  \"attention_bias\": false,\n  \"attention_dropout\": 0.0,\n  \"bos_token_id\": %u,\n"
        "  \"classifier_activation\": \"gelu\",\n  \"classifier_bias\": false,\n"
        "  \"classifier_dropout\": 0.0,\n  \"classifier_pooling\": \"cls\",\n"
        "  \"cls_token_id\": %u,\n  \"decoder_bias\": true,\n  \"deterministic_flash_attn\": false,\n"
        "  \"embedding_dropout\": 0.0,\n  \"eos_token_id\": %u,\n"
        "  \"global_attn_every_n_layers\": %u,\n  \"hidden_activation\": \"gelu\",\n"
        "  \"hidden_size\": %u,\n  \"initializer_cutoff_factor\": 2.0,\n"
        "  \"initializer_range\": 0.02,\n  \"intermediate_size\": %u,\n  \"layer_types\": [",
        cls_id, cls_id, sep_id, R_GLOBAL_EVERY, p->hidden, p->intermediate);
    for (uint32_t i = 0; i < p->layers; i++)
        sk_buf_printf(&b, "%s\n    \"%s\"", i ? "," : "",
                      i % R_GLOBAL_EVERY == 0 ? "full_attention" : "sliding_attention");
    sk_buf_printf(&b,
        "\n  ],\n  \"local_attention\": %u,\n  \"max_position_embeddings\": %u,\n"
        "  \"mlp_bias\": false,\n  \"mlp_dropout\": 0.0,\n  \"model_type\": \"modernbert\",\n"
        "  \"norm_bias\": false,\n  \"norm_eps\": 1e-05,\n  \"num_attention_heads\": %u,\n"
        "  \"num_hidden_layers\": %u,\n  \"pad_token_id\": 0,\n  \"rope_parameters\": {\n"
        "    \"full_attention\": {\n      \"rope_theta\": 160000.0,\n      \"rope_type\": \"default\"\n    },\n"
        "    \"sliding_attention\": {\n      \"rope_theta\": %.1f,\n      \"rope_type\": \"default\"\n    }\n  },\n"
        "  \"sep_token_id\": %u,\n  \"sparse_pred_ignore_index\": -100,\n  \"sparse_prediction\": false,\n"
        "  \"tie_word_embeddings\": true,\n  \"transformers_version\": \"5.23.0\",\n  \"vocab_size\": %u\n}\n",
        local_attention, R_MAX_POSITION, p->heads, p->layers, local_theta, sep_id, p->vocab);
    out->enc_config = sk_buf_detach(&b);

    sk_buf_init(&b);
    sk_buf_printf(&b,
                  "{\n  \"architectures\": [\"DecisionModel\"],\n  \"model_type\": \"laya\",\n"
                  "  \"encoder\": \"skycmd/random-%s\",\n  \"head_layers\": %u,\n"
                  "  \"skycmd_random\": {\"preset\": \"%s\", \"seed\": %llu, \"massive_channels\": [",
                  p->name, p->head_layers, preset, (unsigned long long)seed);
    for (uint32_t i = 0; i < massive; i++) sk_buf_printf(&b, "%s%u", i ? ", " : "", mch[i]);
    sk_buf_puts(&b, "]}\n}\n");
    out->config = sk_buf_detach(&b);
    out->special_map = sk_strdup(p->mmbert
        ? "{\n  \"cls_token\": \"<bos>\",\n  \"mask_token\": \"<mask>\",\n  \"pad_token\": \"<pad>\",\n"
          "  \"sep_token\": \"<eos>\",\n  \"unk_token\": \"<unk>\"\n}\n"
        : "{\n  \"cls_token\": \"[CLS]\",\n  \"mask_token\": \"[MASK]\",\n  \"pad_token\": \"[PAD]\",\n"
          "  \"sep_token\": \"[SEP]\",\n  \"unk_token\": \"[UNK]\"\n}\n");
    if (!out->rl_config || !out->enc_config || !out->config || !out->special_map) {
        sk_random_free(out);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    }

    /* Weights: lay the safetensors file out first, then fill it in place. */
    sk_laya_spec *sp = NULL;
    size_t n = 0;
    s = sk_laya_specs(&c, &sp, &n, e);
    sk_st_writer *w = s ? NULL : sk_st_writer_new();
    if (!s && !w) s = sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n && !s; i++) {
        uint64_t ne = sp[i].n_dims == 2 ? sp[i].shape[0] * sp[i].shape[1] : sp[i].shape[0];
        if (sp[i].gguf[0]) out->n_params += ne;
        s = sk_st_writer_add(w, sp[i].hf, SK_GGML_F32, sp[i].n_dims, sp[i].shape, NULL, ne * 4, e);
    }
    if (!s) s = sk_st_writer_write_mem(w, &out->safetensors, &out->safetensors_len, e);
    sk_st_writer_free(w);
    sk_safetensors *st = NULL;
    if (!s) s = sk_st_open_buffer(out->safetensors, out->safetensors_len, "random", &st, e);
    for (size_t i = 0; i < n && !s; i++) {
        const sk_st_tensor *t = sk_st_find(st, sp[i].hf);
        if (!t) {
            s = sk_fail(e, SKYCMD_E_INTERNAL, "random: %s missing", sp[i].hf);
            break;
        }
        uint8_t *dst = out->safetensors + (t->data - out->safetensors);
        fill(dst, &sp[i], &rw, mch, massive,
             strcmp(sp[i].hf, "encoder.embeddings.norm.weight") == 0);
    }
    sk_st_close(st);
    free(sp);
    if (s) sk_random_free(out);
    return s;
}

int sk_random_open(const sk_random_ckpt *c, sk_laya **out, sk_err *e) {
    sk_laya_sources src = {c->rl_config, strlen(c->rl_config), c->enc_config,
                           strlen(c->enc_config), c->tokenizer, strlen(c->tokenizer),
                           c->tok_config, strlen(c->tok_config), c->safetensors,
                           c->safetensors_len};
    return sk_laya_open_mem(&src, out, e);
}

/* Write path (inside the temporary directory); messages name `shown`, the member's name
 * in the directory asked for. */
static int write_file(const char *path, const char *shown, const void *data, size_t n,
                      sk_err *e) {
    FILE *fp = fopen(path, "wb");
    if (!fp) return sk_fail_errno(e, SKYCMD_E_IO, errno, "%s: cannot create: %s", shown, strerror(errno));
    /* the first failure's errno is the reason given (ENOSPC on a full disk, EIO, ...) */
    int er = 0;
    if (n && fwrite(data, 1, n, fp) != n) er = errno ? errno : EIO;
    if (fflush(fp) != 0 && !er) er = errno ? errno : EIO;
    if (!er && fsync(fileno(fp)) != 0) er = errno ? errno : EIO;
    if (fclose(fp) != 0 && !er) er = errno ? errno : EIO;
    if (er) return sk_fail_errno(e, SKYCMD_E_IO, er, "%s: write failed: %s", shown, strerror(er));
    return SKYCMD_OK;
}

static const char *k_files[7] = {"rl_agent_config.json",          "config.json",
                                 "encoder/config.json",           "tokenizer/tokenizer.json",
                                 "tokenizer/tokenizer_config.json",
                                 "tokenizer/special_tokens_map.json", "model.safetensors"};

static void remove_tree(const char *root) {
    char p[4400]; /* root (< 4200, see sk_random_write_dir) + the longest member name */
    for (int i = 0; i < 7; i++) {
        snprintf(p, sizeof p, "%s/%s", root, k_files[i]);
        remove(p);
    }
    snprintf(p, sizeof p, "%s/encoder", root);
    rmdir(p);
    snprintf(p, sizeof p, "%s/tokenizer", root);
    rmdir(p);
    rmdir(root);
}

static int make_dir(const char *name, void *ud) {
    (void)ud;
    return mkdir(name, 0755);
}

int sk_random_write_dir(const sk_random_ckpt *c, const char *dir, sk_err *e) {
    if (!dir || !dir[0]) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "no output directory");
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') dl--;
    if (dl > 4000) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "output path too long");
    char given[4100], root[4100], tmp[4200], p[4300], shown[4300];
    memcpy(given, dir, dl);
    given[dl] = '\0';
    /* the output's kind as every output judges it (src/util/util.h): a symbolic link is
     * followed to its target (the directory is built beside the target and renamed over
     * it); a file, a device, a FIFO or a socket is refused, never replaced */
    char *target = NULL;
    sk_out_kind kind;
    int s = sk_output_resolve(given, &target, &kind, e);
    if (s) return s;
    if (kind != SK_OUT_ABSENT && kind != SK_OUT_DIR) {
        free(target);
        return sk_fail(e, SKYCMD_E_IO, "%s: is %s, not a directory (a Laya checkpoint is a "
                       "directory)", given, sk_output_kind_name(kind));
    }
    if (strlen(target) > 4000) {
        free(target);
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "output path too long");
    }
    snprintf(root, sizeof root, "%s", target);
    free(target);
    char *made = NULL;
    if (sk_partial_create(root, make_dir, NULL, &made) != 0)
        return sk_fail(e, SKYCMD_E_IO, "%s: cannot create a temporary directory beside it: %s",
                       given, strerror(errno));
    snprintf(tmp, sizeof tmp, "%s", made);
    free(made);
    snprintf(p, sizeof p, "%s/encoder", tmp);
    if (mkdir(p, 0755) != 0)
        s = sk_fail_errno(e, SKYCMD_E_IO, errno, "%s: cannot create: %s", p, strerror(errno));
    snprintf(p, sizeof p, "%s/tokenizer", tmp);
    if (!s && mkdir(p, 0755) != 0)
        s = sk_fail_errno(e, SKYCMD_E_IO, errno, "%s: cannot create: %s", p, strerror(errno));
    const void *data[7] = {c->rl_config, c->config, c->enc_config, c->tokenizer, c->tok_config,
                           c->special_map, c->safetensors};
    for (int i = 0; i < 7 && !s; i++) {
        size_t n = i == 6 ? c->safetensors_len : strlen((const char *)data[i]);
        snprintf(p, sizeof p, "%s/%s", tmp, k_files[i]);
        snprintf(shown, sizeof shown, "%s/%s", given, k_files[i]);
        s = write_file(p, shown, data[i], n, e);
    }
    if (!s && rename(tmp, root) != 0) {
        int er = errno;
        s = sk_fail(e, SKYCMD_E_IO, "%s: cannot create the checkpoint directory: %s%s", given,
                    strerror(er),
                    (er == ENOTEMPTY || er == EEXIST) ? " (it exists and is not empty)" : "");
    }
    if (s) remove_tree(tmp);
    return s;
}
