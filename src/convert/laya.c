/*
 * laya.c - reading and validating a Laya checkpoint (see laya.h). Config parsing follows
 * what the Python reference and llama.cpp's converter read, with their defaults; the
 * tensors are checked against the table of laya_specs.c (names and exact shapes), as
 * `load_state_dict(strict=True)` would.
 */
#include "laya.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "laya_specs.h"
#include "../util/json_syntax.h"

#define SK_CONFIG_MAX ((size_t)4 << 20)
#define SK_TOKENIZER_MAX ((size_t)256 << 20)

/* ---------------------------------------------------------------- JSON helpers ---- */

static cJSON *parse_json(const char *json, size_t len, const char *label, sk_err *e, int *st) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    if (!root) {
        /* cJSON says NULL for both: well-formed text means it ran out of memory */
        size_t at = 0;
        if (sk_json_parse_failure(json, len, CJSON_NESTING_LIMIT, &at) == SKYCMD_E_NOMEM)
            *st = sk_fail(e, SKYCMD_E_NOMEM, "%s: out of memory parsing the JSON", label);
        else
            *st = sk_fail(e, SKYCMD_E_FORMAT, "%s: not valid JSON (near byte %zu)", label, at);
        return NULL;
    }
    for (const char *q = end; q && q < json + len; q++)
        if (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r' && *q != '\0') {
            cJSON_Delete(root);
            *st = sk_fail(e, SKYCMD_E_FORMAT, "%s: not valid JSON (trailing data at byte %zu)",
                          label, (size_t)(q - json));
            return NULL;
        }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        *st = sk_fail(e, SKYCMD_E_FORMAT, "%s: top level is not a JSON object", label);
        return NULL;
    }
    *st = SKYCMD_OK;
    return root;
}

/* An unsigned integer key in [lo, hi]; absent => dflt (or an error when required). */
static int get_u32(const cJSON *o, const char *key, int required, uint32_t dflt, uint32_t lo,
                   uint32_t hi, const char *label, uint32_t *out, sk_err *e) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v)) {
        if (required) return sk_fail(e, SKYCMD_E_FORMAT, "%s: missing key \"%s\"", label, key);
        *out = dflt;
        return SKYCMD_OK;
    }
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!cJSON_IsNumber(v) || floor(d) != d || d < (double)lo || d > (double)hi)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: \"%s\" must be an integer in [%u, %u]", label,
                       key, lo, hi);
    *out = (uint32_t)d;
    return SKYCMD_OK;
}

static int get_num(const cJSON *v, const char *what, const char *label, double *out, sk_err *e) {
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: \"%s\" must be a finite number", label, what);
    *out = v->valuedouble;
    return SKYCMD_OK;
}

static int get_temp(const cJSON *v, const char *what, const char *label, float *out, sk_err *e) {
    double d = 0.0;
    int s = get_num(v, what, label, &d, e);
    if (s) return s;
    /* llama.cpp refuses temperatures <= 0 at load; Python would clamp them. */
    if (!(d > 0.0) || d > 3.0e38)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: \"%s\" = %g is not a positive temperature", label,
                       what, d);
    *out = (float)d;
    return SKYCMD_OK;
}

int sk_laya_bucket_key(const char *laya, char *key, size_t key_size) {
    static const char *types[] = {"choice", "score", "noul"};
    static const char *buckets[] = {"2", "3-5", "6-10", "11+"};
    const char *colon = strchr(laya, ':');
    if (!colon) return -1;
    size_t tl = (size_t)(colon - laya);
    int ok = 0;
    for (int i = 0; i < 3; i++)
        if (strlen(types[i]) == tl && strncmp(types[i], laya, tl) == 0) ok = 1;
    if (!ok) return -1;
    ok = 0;
    for (int i = 0; i < 4; i++)
        if (strcmp(colon + 1, buckets[i]) == 0) ok = 1;
    if (!ok) return -1;
    /* name.replace(":", ".").replace("-", "_").rstrip("+") */
    size_t n = 0;
    for (const char *p = laya; *p; p++) {
        char c = *p == ':' ? '.' : *p == '-' ? '_' : *p;
        if (n + 1 >= key_size) return -1;
        key[n++] = c;
    }
    while (n > 0 && key[n - 1] == '+') n--;
    key[n] = '\0';
    return 0;
}

int sk_laya_parse_rl_config(const char *json, size_t len, const char *label, sk_laya_config *c,
                            sk_err *e) {
    int st;
    cJSON *root = parse_json(json, len, label, e, &st);
    if (!root) return st;
    /* laya 0.4.15 Agent refuses a config without "head_layers" (_verify_compatibility) */
    st = get_u32(root, "head_layers", 1, 0, 1, 64, label, &c->head_layers, e);
    /* ... and one without "encoder" (the Hub id of the base encoder; it changes nothing once
     * encoder/config.json is there, but laya refuses the checkpoint without it) */
    if (!st && !cJSON_GetObjectItemCaseSensitive(root, "encoder"))
        st = sk_fail(e, SKYCMD_E_FORMAT, "%s: missing key \"encoder\" (laya refuses a "
                     "checkpoint without it)", label);
    if (!st) {
        /* laya.common.uses_parallel_layout: "sequential" (the default) or "parallel"; anything
         * else is a ValueError there. Stored as our decision.option_layout key. */
        const cJSON *ol = cJSON_GetObjectItemCaseSensitive(root, "option_layout");
        c->option_layout = 0;
        if (ol && !(cJSON_IsString(ol) && (strcmp(ol->valuestring, "sequential") == 0 ||
                                           strcmp(ol->valuestring, "parallel") == 0)))
            st = sk_fail(e, SKYCMD_E_FORMAT, "%s: \"option_layout\" must be \"sequential\" or "
                         "\"parallel\"", label);
        else if (ol && strcmp(ol->valuestring, "parallel") == 0)
            c->option_layout = 1;
    }
    if (!st) st = get_u32(root, "max_len", 0, 512, 8, 1u << 20, label, &c->max_len, e);
    /* Absent keys take the Python runtime's defaults (laya 0.4.15 Agent: cfg.get("max_len", 512),
     * cfg.get("head_max_len", 192)). */
    if (!st) st = get_u32(root, "head_max_len", 0, 192, 1, 1u << 20, label, &c->head_max_len, e);
    if (!st) {
        const cJSON *ac = cJSON_GetObjectItemCaseSensitive(root, "act_costs");
        /* len(cfg.get("act_costs", {})): null has no len() there */
        if (ac && !cJSON_IsObject(ac))
            st = sk_fail(e, SKYCMD_E_FORMAT, "%s: \"act_costs\" must be an object", label);
        else
            c->n_act = (uint32_t)(ac ? cJSON_GetArraySize(ac) : 0) + 1;
        if (!st && c->n_act > 1024)
            st = sk_fail(e, SKYCMD_E_FORMAT, "%s: \"act_costs\" has too many entries", label);
    }
    if (!st) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "temperature");
        c->temperature[0] = c->temperature[1] = c->temperature[2] = 1.0f;
        /* cfg.get("temperature", [1.0, 1.0, 1.0]): absent is the default, null is not a
         * list and laya refuses it */
        if (t) {
            if (!cJSON_IsArray(t) || cJSON_GetArraySize(t) != 3) {
                st = sk_fail(e, SKYCMD_E_FORMAT,
                             "%s: \"temperature\" must be a list of 3 numbers [choice, score, noul]",
                             label);
            } else {
                static const char *names[3] = {"temperature[0]", "temperature[1]",
                                               "temperature[2]"};
                int i = 0;
                for (const cJSON *v = t->child; v && !st; v = v->next, i++)
                    st = get_temp(v, names[i], label, &c->temperature[i], e);
            }
        }
    }
    if (!st) {
        const cJSON *tb = cJSON_GetObjectItemCaseSensitive(root, "temperature_by_options");
        c->n_buckets = 0;
        /* cfg.get("temperature_by_options", {}).items(): null fails there too */
        if (tb) {
            if (!cJSON_IsObject(tb)) {
                st = sk_fail(e, SKYCMD_E_FORMAT, "%s: \"temperature_by_options\" must be an object",
                             label);
            } else {
                for (const cJSON *v = tb->child; v && !st; v = v->next) {
                    const char *k = v->string ? v->string : "";
                    if (c->n_buckets >= SK_LAYA_MAX_BUCKETS) {
                        st = sk_fail(e, SKYCMD_E_FORMAT,
                                     "%s: \"temperature_by_options\" has more than %d entries",
                                     label, SK_LAYA_MAX_BUCKETS);
                        break;
                    }
                    sk_laya_bucket *b = &c->buckets[c->n_buckets];
                    if (strlen(k) >= sizeof b->laya ||
                        sk_laya_bucket_key(k, b->key, sizeof b->key) != 0) {
                        st = sk_fail(e, SKYCMD_E_FORMAT,
                                     "%s: \"temperature_by_options\" key \"%.40s\" is not "
                                     "<choice|score|noul>:<2|3-5|6-10|11+>",
                                     label, k);
                        break;
                    }
                    for (size_t j = 0; j < c->n_buckets && !st; j++)
                        if (strcmp(c->buckets[j].key, b->key) == 0)
                            st = sk_fail(e, SKYCMD_E_FORMAT,
                                         "%s: \"temperature_by_options\" repeats \"%s\"", label, k);
                    if (st) break;
                    snprintf(b->laya, sizeof b->laya, "%s", k);
                    char what[64];
                    snprintf(what, sizeof what, "temperature_by_options.%s", k);
                    st = get_temp(v, what, label, &b->value, e);
                    if (!st) c->n_buckets++;
                }
            }
        }
    }
    cJSON_Delete(root);
    return st;
}

static int get_theta(const cJSON *v, const char *what, const char *label, float *out,
                     sk_err *e) {
    double d = 0.0;
    int s = get_num(v, what, label, &d, e);
    if (s) return s;
    if (!(d > 0.0) || d > 1e30)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: \"%s\" must be positive", label, what);
    *out = (float)d;
    return SKYCMD_OK;
}

/* A rope_parameters dict (or one layer type's) must describe plain RoPE: its "rope_type"
 * (or the older "type") absent or "default"; yarn, linear, dynamic, llama3, longrope scale
 * the frequencies, which is not implemented. */
static int check_rope_type(const cJSON *o, const char *what, const char *label, sk_err *e) {
    static const char *keys[2] = {"rope_type", "type"};
    for (int i = 0; i < 2; i++) {
        const cJSON *rt = cJSON_GetObjectItemCaseSensitive(o, keys[i]);
        if (rt && !cJSON_IsNull(rt) &&
            (!cJSON_IsString(rt) || strcmp(rt->valuestring, "default") != 0))
            return sk_fail(e, SKYCMD_E_UNSUPPORTED, "%s: \"%s.%s\" is %s%.20s%s; only "
                           "\"default\" RoPE is implemented (no RoPE scaling)", label, what,
                           keys[i], cJSON_IsString(rt) ? "\"" : "",
                           cJSON_IsString(rt) ? rt->valuestring : "not a string",
                           cJSON_IsString(rt) ? "\"" : "");
    }
    return SKYCMD_OK;
}

int sk_laya_parse_enc_config(const char *json, size_t len, const char *label, sk_laya_config *c,
                             sk_err *e) {
    int st;
    cJSON *root = parse_json(json, len, label, e, &st);
    if (!root) return st;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    if (mt && (!cJSON_IsString(mt) || strcmp(mt->valuestring, "modernbert") != 0))
        st = sk_fail(e, SKYCMD_E_UNSUPPORTED,
                     "%s: \"model_type\" is %s%.40s%s, only \"modernbert\" is supported", label,
                     cJSON_IsString(mt) ? "\"" : "", cJSON_IsString(mt) ? mt->valuestring : "not a string",
                     cJSON_IsString(mt) ? "\"" : "");
    /* Absent sizes take ModernBertConfig's defaults (transformers 5.23), as AutoConfig gives
     * them to laya; the tensor shapes are then checked against them like load_state_dict. */
    if (!st) st = get_u32(root, "hidden_size", 0, 768, 1, 65536, label, &c->hidden, e);
    if (!st) st = get_u32(root, "num_hidden_layers", 0, 22, 1, 1024, label, &c->n_layers, e);
    if (!st) st = get_u32(root, "num_attention_heads", 0, 12, 1, 4096, label, &c->n_heads, e);
    if (!st)
        st = get_u32(root, "intermediate_size", 0, 1152, 1, 1u << 20, label, &c->intermediate, e);
    if (!st) st = get_u32(root, "vocab_size", 0, 50368, 1, 1u << 24, label, &c->vocab_size, e);
    /* nn.Embedding(vocab_size, hidden, padding_idx=pad_token_id) refuses a padding index
     * outside [-vocab_size, vocab_size): laya cannot build such a model (the index itself
     * changes no inference value). Default 50283, so an absent key is refused the same way
     * for a smaller vocabulary. */
    if (!st) {
        const cJSON *pad = cJSON_GetObjectItemCaseSensitive(root, "pad_token_id");
        double pv = pad ? (cJSON_IsNumber(pad) ? pad->valuedouble : NAN) : 50283.0;
        if (pad && cJSON_IsNull(pad)) pv = 0.0;
        if (!(pv >= -(double)c->vocab_size && pv < (double)c->vocab_size) || floor(pv) != pv)
            st = sk_fail(e, SKYCMD_E_FORMAT, "%s: \"pad_token_id\"%s must be an integer in "
                         "[-vocab_size, vocab_size) = [-%u, %u) (transformers' embedding refuses "
                         "it)", label, pad ? "" : " (absent: 50283)", c->vocab_size,
                         c->vocab_size);
    }
    if (!st)
        st = get_u32(root, "max_position_embeddings", 0, 8192, 1, 1u << 24, label,
                     &c->max_position, e);
    if (!st)
        st = get_u32(root, "local_attention", 0, 128, 0, 1u << 24, label, &c->local_attention, e);
    if (!st && c->hidden % c->n_heads != 0)
        st = sk_fail(e, SKYCMD_E_FORMAT,
                     "%s: \"hidden_size\" %u is not a multiple of \"num_attention_heads\" %u",
                     label, c->hidden, c->n_heads);
    if (!st && (c->hidden / c->n_heads) % 2 != 0)
        st = sk_fail(e, SKYCMD_E_FORMAT, "%s: the head size %u is odd (RoPE needs pairs)", label,
                     c->hidden / c->n_heads);
    /* Biases ModernBERT can have but Laya checkpoints never do: refuse them rather than
     * silently dropping weights. */
    static const char *no_bias[] = {"norm_bias", "attention_bias", "mlp_bias"};
    for (int i = 0; i < 3 && !st; i++) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(root, no_bias[i]);
        if (b && !cJSON_IsFalse(b) && !cJSON_IsNull(b))
            st = sk_fail(e, SKYCMD_E_UNSUPPORTED, "%s: \"%s\" must be false", label, no_bias[i]);
    }
    /* norm_eps (ModernBERT) or layer_norm_eps */
    c->norm_eps = 1e-5f;
    if (!st) {
        const cJSON *ne = cJSON_GetObjectItemCaseSensitive(root, "norm_eps");
        const char *nk = "norm_eps";
        if (!ne) {
            ne = cJSON_GetObjectItemCaseSensitive(root, "layer_norm_eps");
            nk = "layer_norm_eps";
        }
        double d = 0.0;
        if (ne) {
            st = get_num(ne, nk, label, &d, e);
            /* Below FLT_MIN the f32 epsilon is subnormal or zero (a zero-variance row then
             * divides by ~0); at 1 or more the norm no longer normalizes: neither is a trained
             * model, and f32 arithmetic could not follow PyTorch on them. */
            if (!st && !(d >= (double)FLT_MIN && d < 1.0))
                st = sk_fail(e, SKYCMD_E_UNSUPPORTED, "%s: \"%s\" = %g is outside [%g, 1)",
                             label, nk, d, (double)FLT_MIN);
            if (!st) c->norm_eps = (float)d;
        }
    }
    snprintf(c->hidden_activation, sizeof c->hidden_activation, "gelu");
    if (!st) {
        /* transformers applies ACT2FN[hidden_activation] in every MLP; the forward pass
         * implements the erf GELU ("gelu") only, so any other name is refused rather than
         * answered with the wrong function. */
        const cJSON *ha = cJSON_GetObjectItemCaseSensitive(root, "hidden_activation");
        if (ha && !cJSON_IsNull(ha)) {
            if (!cJSON_IsString(ha))
                st = sk_fail(e, SKYCMD_E_FORMAT, "%s: \"hidden_activation\" must be a string",
                             label);
            else if (strcmp(ha->valuestring, "gelu") != 0)
                st = sk_fail(e, SKYCMD_E_UNSUPPORTED,
                             "%s: \"hidden_activation\" is \"%.40s\"; only \"gelu\" (the erf "
                             "GELU) is implemented", label, ha->valuestring);
        }
    }
    /* Flags that would make the encoder attend causally. transformers' ModernBERT ignores
     * them (its attention is always bidirectional), so a checkpoint that sets one was made
     * for a model neither runtime computes: refused, never answered bidirectionally. */
    static const char *causal[] = {"is_decoder", "is_causal", "add_cross_attention"};
    for (int i = 0; i < 3 && !st; i++) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(root, causal[i]);
        if (b && !cJSON_IsFalse(b) && !cJSON_IsNull(b))
            st = sk_fail(e, SKYCMD_E_UNSUPPORTED, "%s: \"%s\" must be false (a causal or "
                         "decoder ModernBERT is not a System One encoder)", label, causal[i]);
    }
    /* RoPE scaling (transformers 4.x rope_scaling, merged by 5.x into every layer type's
     * rope_parameters) changes the rotary frequencies; only plain RoPE is implemented. */
    if (!st) {
        const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
        if (rs && !cJSON_IsNull(rs))
            st = sk_fail(e, SKYCMD_E_UNSUPPORTED, "%s: \"rope_scaling\" is set; RoPE scaling "
                         "(linear, dynamic, yarn, ...) is not implemented", label);
    }
    /* head_dim sizes the rotary frequencies in transformers (getattr(config, "head_dim") or
     * hidden_size / num_attention_heads) while attention always splits hidden_size evenly. */
    if (!st) {
        const cJSON *hd = cJSON_GetObjectItemCaseSensitive(root, "head_dim");
        if (hd && !cJSON_IsNull(hd) &&
            (!cJSON_IsNumber(hd) || hd->valuedouble != (double)(c->hidden / c->n_heads)))
            st = sk_fail(e, SKYCMD_E_UNSUPPORTED, "%s: \"head_dim\" must be hidden_size / "
                         "num_attention_heads = %u (RoPE over part of a head is not implemented)",
                         label, c->hidden / c->n_heads);
    }
    /* The encoder's compute precision: transformers builds the model in config.dtype
     * (from_config), so a bfloat16/float16 encoder config makes laya compute in that type. */
    static const char *dtype_keys[] = {"dtype", "torch_dtype"};
    for (int i = 0; i < 2 && !st; i++) {
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(root, dtype_keys[i]);
        if (dt && !cJSON_IsNull(dt) &&
            (!cJSON_IsString(dt) || strcmp(dt->valuestring, "float32") != 0))
            st = sk_fail(e, SKYCMD_E_UNSUPPORTED, "%s: \"%s\" is %s%.20s%s; the Python "
                         "runtime then computes the encoder in that precision, and only float32 "
                         "compute is implemented", label, dtype_keys[i],
                         cJSON_IsString(dt) ? "\"" : "", cJSON_IsString(dt) ? dt->valuestring : "not a string",
                         cJSON_IsString(dt) ? "\"" : "");
    }
    /* RoPE: transformers 4.x flat keys, overridden by the 5.x rope_parameters form. */
    c->global_theta = 160000.0f;
    c->local_theta = 10000.0f;
    if (!st) {
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(root, "global_rope_theta");
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(root, "local_rope_theta");
        if (g) st = get_theta(g, "global_rope_theta", label, &c->global_theta, e);
        if (!st && l) st = get_theta(l, "local_rope_theta", label, &c->local_theta, e);
    }
    if (!st) {
        const cJSON *rp = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
        if (rp && !cJSON_IsNull(rp)) {
            if (!cJSON_IsObject(rp)) {
                st = sk_fail(e, SKYCMD_E_FORMAT, "%s: \"rope_parameters\" must be an object", label);
            } else {
                static const char *lt[2] = {"full_attention", "sliding_attention"};
                /* transformers 5.23 types it dict[Literal[full_attention, sliding_attention],
                 * dict] and refuses anything else (a flat {"rope_theta": ...} included), so
                 * laya cannot load such a checkpoint: neither do we. */
                for (const cJSON *k = rp->child; k && !st; k = k->next)
                    if (!k->string || (strcmp(k->string, lt[0]) != 0 && strcmp(k->string, lt[1]) != 0))
                        st = sk_fail(e, SKYCMD_E_UNSUPPORTED, "%s: \"rope_parameters\" has the key "
                                     "\"%.40s\"; transformers 5 accepts only \"full_attention\" and "
                                     "\"sliding_attention\" there", label, k->string ? k->string : "");
                float *dst[2] = {&c->global_theta, &c->local_theta};
                for (int i = 0; i < 2 && !st; i++) {
                    const cJSON *p = cJSON_GetObjectItemCaseSensitive(rp, lt[i]);
                    const cJSON *th = NULL;
                    if (p && cJSON_IsObject(p)) th = cJSON_GetObjectItemCaseSensitive(p, "rope_theta");
                    else if (p && !cJSON_IsNull(p))
                        st = sk_fail(e, SKYCMD_E_FORMAT,
                                     "%s: \"rope_parameters.%s\" must be an object", label, lt[i]);
                    if (!st && th) {
                        char what[64];
                        snprintf(what, sizeof what, "rope_parameters.%s.rope_theta", lt[i]);
                        st = get_theta(th, what, label, dst[i], e);
                    }
                    if (!st && p && cJSON_IsObject(p)) {
                        char what[64];
                        snprintf(what, sizeof what, "rope_parameters.%s", lt[i]);
                        st = check_rope_type(p, what, label, e);
                    }
                }
            }
        }
    }
    /* Global layers: every P-th (transformers 4.x key), or as layer_types lists them. */
    const cJSON *lt = st ? NULL : cJSON_GetObjectItemCaseSensitive(root, "layer_types");
    const cJSON *ge = st ? NULL : cJSON_GetObjectItemCaseSensitive(root, "global_attn_every_n_layers");
    if (!st && lt && !cJSON_IsNull(lt) &&
        (!cJSON_IsArray(lt) || (uint32_t)cJSON_GetArraySize(lt) != c->n_layers))
        st = sk_fail(e, SKYCMD_E_FORMAT,
                     "%s: \"layer_types\" must be a list of num_hidden_layers (%u) strings", label,
                     c->n_layers);
    if (!st) {
        if (ge || !lt || cJSON_IsNull(lt)) {
            st = get_u32(root, "global_attn_every_n_layers", 0, 3, 1, 1024, label,
                         &c->global_every, e);
        } else { /* infer P: the first full-attention layer after layer 0 */
            c->global_every = c->n_layers;
            uint32_t i = 0;
            for (const cJSON *v = lt->child; v; v = v->next, i++)
                if (i > 0 && cJSON_IsString(v) && strcmp(v->valuestring, "full_attention") == 0) {
                    c->global_every = i;
                    break;
                }
        }
    }
    if (!st && lt && cJSON_IsArray(lt)) {
        uint32_t i = 0;
        for (const cJSON *v = lt->child; v && !st; v = v->next, i++) {
            const char *want = (i % c->global_every == 0) ? "full_attention" : "sliding_attention";
            if (!cJSON_IsString(v) || strcmp(v->valuestring, want) != 0)
                st = sk_fail(e, SKYCMD_E_UNSUPPORTED,
                             "%s: \"layer_types[%u]\" should be \"%s\" (global attention every %u "
                             "layers); other patterns cannot be stored in GGUF",
                             label, i, want, c->global_every);
        }
    }
    cJSON_Delete(root);
    return st;
}

/* ---------------------------------------------------------------- checkpoint ------ */

void sk_laya_free(sk_laya *l) {
    if (!l) return;
    sk_st_close(l->st);
    free(l->tokenizer);
    free(l->tok_config);
    free(l->dir_name);
    free(l->label);
    free(l);
}

/* Tensors: exactly the expected names with exactly the expected shapes and float dtypes. */
static int check_tensors(sk_laya *l, const char *file, sk_err *e) {
    sk_laya_spec *sp;
    size_t n;
    int s = sk_laya_specs(&l->cfg, &sp, &n, e);
    if (s) return s;
    for (size_t i = 0; i < n && !s; i++) {
        const sk_st_tensor *t = sk_st_find(l->st, sp[i].hf);
        if (!t) {
            s = sk_fail(e, SKYCMD_E_FORMAT, "%s: missing tensor \"%s\"", file, sp[i].hf);
            break;
        }
        int same = t->n_dims == sp[i].n_dims;
        for (uint32_t d = 0; same && d < sp[i].n_dims; d++) same = t->shape[d] == sp[i].shape[d];
        if (!same) {
            char got[96] = "", want[64];
            size_t p = 0;
            for (uint32_t d = 0; d < t->n_dims && p < sizeof got - 24; d++)
                p += (size_t)snprintf(got + p, sizeof got - p, "%s%llu", d ? ", " : "",
                                      (unsigned long long)t->shape[d]);
            if (sp[i].n_dims == 2)
                snprintf(want, sizeof want, "%llu, %llu", (unsigned long long)sp[i].shape[0],
                         (unsigned long long)sp[i].shape[1]);
            else
                snprintf(want, sizeof want, "%llu", (unsigned long long)sp[i].shape[0]);
            s = sk_fail(e, SKYCMD_E_FORMAT,
                        "%s: tensor \"%s\" has shape [%s], the configs give [%s]", file,
                        sp[i].hf, got, want);
            break;
        }
        if (!t->supported)
            s = sk_fail(e, SKYCMD_E_UNSUPPORTED,
                        "%s: tensor \"%s\" has dtype %s; only F32, F16 and BF16 are supported",
                        file, sp[i].hf, t->dtype);
    }
    /* Anything else would make the Python load (strict=True) fail as well. */
    for (size_t i = 0; i < sk_st_n_tensors(l->st) && !s; i++) {
        const sk_st_tensor *t = sk_st_tensor_at(l->st, i);
        int known = 0;
        for (size_t j = 0; j < n && !known; j++) known = strcmp(sp[j].hf, t->name) == 0;
        if (!known)
            s = sk_fail(e, SKYCMD_E_FORMAT,
                        "%s: unexpected tensor \"%s\" (not part of a Laya model with this config)",
                        file, t->name);
    }
    free(sp);
    return s;
}

static int cross_check(const sk_laya_config *c, const char *label, sk_err *e) {
    uint64_t x;
    if (sk_mul_u64((uint64_t)c->vocab_size, c->hidden, &x) || x > ((uint64_t)1 << 40))
        return sk_fail(e, SKYCMD_E_FORMAT, "%sencoder/config.json: vocab_size x hidden_size too large",
                       label);
    if ((uint64_t)c->n_layers + c->head_layers > 4096)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s: too many layers", label);
    if (c->head_max_len > c->max_len)
        return sk_fail(e, SKYCMD_E_FORMAT,
                       "%srl_agent_config.json: \"head_max_len\" (%u) exceeds \"max_len\" (%u)", label,
                       c->head_max_len, c->max_len);
    return SKYCMD_OK;
}

static int open_common(sk_laya *l, const sk_laya_sources *src, sk_err *e) {
    char lab[600];
    snprintf(lab, sizeof lab, "%srl_agent_config.json", l->label);
    int s = sk_laya_parse_rl_config(src->rl_config, src->rl_config_len, lab, &l->cfg, e);
    if (s) return s;
    snprintf(lab, sizeof lab, "%sencoder/config.json", l->label);
    s = sk_laya_parse_enc_config(src->enc_config, src->enc_config_len, lab, &l->cfg, e);
    if (s) return s;
    s = cross_check(&l->cfg, l->label, e);
    if (s) return s;
    /* Tokenizer files must at least be JSON objects here; the tokenizer module validates
     * their content during conversion. */
    static const char *tn[2] = {"tokenizer/tokenizer.json", "tokenizer/tokenizer_config.json"};
    const char *tj[2] = {src->tokenizer, src->tok_config};
    size_t tl[2] = {src->tokenizer_len, src->tok_config_len};
    for (int i = 0; i < 2; i++) {
        snprintf(lab, sizeof lab, "%s%s", l->label, tn[i]);
        cJSON *r = parse_json(tj[i], tl[i], lab, e, &s);
        if (!r) return s;
        /* transformers 5.23 takes [CLS], [SEP] and [MASK] from tokenizer_config.json only
         * (special_tokens_map.json is not read): without them laya's tok.cls_token_id etc.
         * are None and no sequence can be built, so we do not guess them either. */
        static const char *need[4] = {"cls_token", "sep_token", "mask_token", "pad_token"};
        for (int k = 0; i == 1 && k < 4 && !s; k++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(r, need[k]);
            if (v && cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
            if (!cJSON_IsString(v) || !v->valuestring[0])
                s = sk_fail(e, SKYCMD_E_FORMAT, "%s: no \"%s\" (laya reads the special tokens "
                            "from this file only)", lab, need[k]);
        }
        /* laya rewrites an absent or "TokenizersBackend" class to PreTrainedTokenizerFast,
         * which runs tokenizer.json as it is (what we implement). Another class (BertTokenizer,
         * GemmaTokenizer, ...) may rebuild the pipeline from its own options: refused rather
         * than tokenized differently. */
        const cJSON *cls = i == 1 ? cJSON_GetObjectItemCaseSensitive(r, "tokenizer_class") : NULL;
        if (!s && cls && !cJSON_IsNull(cls) &&
            !(cJSON_IsString(cls) && (strcmp(cls->valuestring, "PreTrainedTokenizerFast") == 0 ||
                                      strcmp(cls->valuestring, "TokenizersBackend") == 0)))
            s = sk_fail(e, SKYCMD_E_UNSUPPORTED, "%s: \"tokenizer_class\" is %s%.40s%s; only "
                        "PreTrainedTokenizerFast / TokenizersBackend (tokenizer.json as it is) "
                        "is implemented", lab, cJSON_IsString(cls) ? "\"" : "",
                        cJSON_IsString(cls) ? cls->valuestring : "not a string",
                        cJSON_IsString(cls) ? "\"" : "");
        cJSON_Delete(r);
        if (s) return s;
    }
    l->tokenizer = sk_strndup(src->tokenizer, src->tokenizer_len);
    l->tok_config = sk_strndup(src->tok_config, src->tok_config_len);
    if (!l->tokenizer || !l->tok_config) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    l->tokenizer_len = src->tokenizer_len;
    l->tok_config_len = src->tok_config_len;
    snprintf(lab, sizeof lab, "%smodel.safetensors", l->label);
    if (!l->st) {
        s = sk_st_open_buffer(src->safetensors, src->safetensors_len, lab, &l->st, e);
        if (s) return s;
    }
    return check_tensors(l, lab, e);
}

int sk_laya_open_mem(const sk_laya_sources *src, sk_laya **out, sk_err *e) {
    *out = NULL;
    sk_laya *l = calloc(1, sizeof *l);
    if (!l) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    l->dir_name = sk_strdup("");
    l->label = sk_strdup("");
    if (!l->dir_name || !l->label) {
        sk_laya_free(l);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    }
    int s = open_common(l, src, e);
    if (s) {
        sk_laya_free(l);
        return s;
    }
    *out = l;
    return SKYCMD_OK;
}

int sk_laya_open_dir(const char *dir, sk_laya **out, sk_err *e) {
    *out = NULL;
    if (!dir || !dir[0]) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "no checkpoint directory given");
    /* say what the path is before naming a file inside it */
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return sk_fail_errno(e, SKYCMD_E_IO, errno, "%s: %s (a Laya checkpoint is a directory)", dir,
                             strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT,
                       "%s is a file, not a Laya checkpoint directory (a .gguf file is already converted: "
                       "give it to decide or serve, or re-type it with quantize)", dir);
    sk_laya *l = calloc(1, sizeof *l);
    if (!l) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') dl--;
    const char *base = dir + dl;
    while (base > dir && base[-1] != '/') base--;
    l->dir_name = sk_strndup(base, (size_t)(dir + dl - base));
    l->label = malloc(dl + 2);
    if (!l->dir_name || !l->label) {
        sk_laya_free(l);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    }
    memcpy(l->label, dir, dl);
    l->label[dl] = '/';
    l->label[dl + 1] = '\0';

    static const char *files[4] = {"rl_agent_config.json", "encoder/config.json",
                                   "tokenizer/tokenizer.json", "tokenizer/tokenizer_config.json"};
    char *buf[4] = {0};
    size_t len[4] = {0};
    int s = SKYCMD_OK;
    char path[4200];
    for (int i = 0; i < 4 && !s; i++) {
        if (snprintf(path, sizeof path, "%s%s", l->label, files[i]) >= (int)sizeof path) {
            s = sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "checkpoint path too long");
            break;
        }
        s = sk_read_file(path, &buf[i], &len[i], i >= 2 ? SK_TOKENIZER_MAX : SK_CONFIG_MAX, e);
        if (s == SKYCMD_E_IO)
            s = sk_fail(e, SKYCMD_E_IO, "%s: missing or unreadable (a Laya checkpoint needs %s)",
                        path, files[i]);
    }
    if (!s) {
        snprintf(path, sizeof path, "%smodel.safetensors", l->label);
        s = sk_st_open_file(path, &l->st, e);
    }
    if (!s) {
        sk_laya_sources src = {buf[0], len[0], buf[1], len[1], buf[2], len[2], buf[3], len[3],
                               NULL, 0};
        s = open_common(l, &src, e);
    }
    for (int i = 0; i < 4; i++) free(buf[i]);
    if (s) {
        sk_laya_free(l);
        return s;
    }
    *out = l;
    return SKYCMD_OK;
}
