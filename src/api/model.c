/* model.c - skycmd_model: open a GGUF decision model (weights, tokenizer, temperatures,
 * sequence limits, reported name). Immutable after open; see handles.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../convert/laya.h"
#include "../prompt/outlier_calib_seqs.h"
#include "../quant/int8_store.h"
#include "handles.h"

static int model_ok(const skycmd_model *m) { return m && m->tag == SK_TAG_MODEL; }

/* A Laya checkpoint's conversion in memory costs about this many times reading its GGUF
 * (the progress of an open, see open_common). */
#define SK_CONVERT_READ_FACTOR 4.0

static void model_destroy(skycmd_model *m) {
    if (!m) return;
    if (m->tok) {
        m->tok->owned_by_model = 0;
        m->tok->tag = SK_TAG_DEAD;
        sk_tokenizer_free(m->tok);
    }
    sk_model_free(m->m);
    if (m->row_mu_ok) sk_platform_mutex_destroy(&m->row_mu);
    sk_gguf_close(m->g);
    free(m->gguf_buf);
    free(m->name);
    free(m->mask_text);
    m->tag = SK_TAG_DEAD;
    free(m);
}

static char *str_dup_sk(sk_str s) { return sk_strndup(s.ptr, (size_t)s.len); }

/* The int8 calibration's input sequences (SKYCMD_WEIGHTS_Q8, _Q8_ROW), built when the loader
 * asks, with the model's own tokenizer: decoded here once, and kept by model_init. */
static int calib_build(void *ud, size_t max_len, size_t head_max_len, sk_calib_seq *seqs, sk_err *e) {
    skycmd_model *mod = ud;
    int rc;
    if (!mod->tok && (rc = sk_tokenizer_from_gguf(mod->g, &mod->tok, e))) return rc;
    return sk_calib_sequences_tok(mod->g, mod->tok, max_len, head_max_len, seqs, e);
}

int sk_api_model_row_choice(skycmd_model *mod, sk_pool *pool, sk_err *e) {
    const sk_calib_source calib = {calib_build, mod, 0, 0, 0};
    sk_calib_inputs *in = sk_calib_inputs_new(mod->g, &calib, pool, NULL, NULL);
    if (!in) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    sk_platform_mutex_lock(&mod->row_mu);
    const int rc = sk_model_row_choice(mod->m, in, NULL, NULL, SK_SHARE_NONE, e);
    sk_platform_mutex_unlock(&mod->row_mu);
    sk_calib_inputs_free(in);
    return rc;
}

static int model_init(skycmd_model *mod, const char *path, const skycmd_options *opts,
                      sk_share prog, sk_err *e) {
    int rc;
    const sk_gguf *g = mod->g;
    sk_str arch = {0};
    if (sk_gguf_get_str(g, "general.architecture", &arch) != SKYCMD_OK)
        return sk_fail(e, SKYCMD_E_FORMAT, "general.architecture is missing: not a decision model GGUF");
    char archz[64];
    if (arch.len == 0 || arch.len >= sizeof archz)
        return sk_fail(e, SKYCMD_E_FORMAT, "general.architecture has an unusable value");
    memcpy(archz, arch.ptr, (size_t)arch.len);
    archz[arch.len] = '\0';

    int weights = (int)sk_opt_int(opts, SKYCMD_OPT_WEIGHTS, SKYCMD_WEIGHTS_F32);
    /* the row probe runs in the open (with its progress) when the options ask for
     * single-pass activations, else when a session first does (sk_api_model_row_choice) */
    const int defer = sk_opt_int(opts, SKYCMD_OPT_ACTIVATIONS, SKYCMD_ACT_Q8X2) != SKYCMD_ACT_Q8;
    const sk_calib_source calib = {calib_build, mod, 0, sk_opt_threads(opts), defer};
    if ((rc = sk_model_load_calib(g, weights, &calib, opts ? opts->log : NULL,
                                  opts ? opts->log_ud : NULL, prog, &mod->m, e)))
        return rc;
    if (!mod->tok && (rc = sk_tokenizer_from_gguf(g, &mod->tok, e))) return rc;
    mod->tok->tag = SK_TAG_TOKENIZER;
    mod->tok->owned_by_model = 1;
    /* Every id the tokenizer can produce must have an embedding row (llama.cpp's converter
     * pads the token list to the rows, never the other way round); refused here rather than
     * failing each request that meets such a token. */
    const uint32_t rows = sk_model_hparams(mod->m)->n_vocab;
    if (sk_tokenizer_vocab_size(mod->tok) > rows)
        return sk_fail(e, SKYCMD_E_FORMAT, "tokenizer.ggml.tokens has %zu tokens but "
                       "token_embd.weight has %u rows: ids from %u up have no embedding",
                       sk_tokenizer_vocab_size(mod->tok), rows, rows);

    mod->cls = sk_tokenizer_special(mod->tok, SKYCMD_SPECIAL_CLS);
    mod->sep = sk_tokenizer_special(mod->tok, SKYCMD_SPECIAL_SEP);
    mod->mask = sk_tokenizer_special(mod->tok, SKYCMD_SPECIAL_MASK);
    if (mod->cls < 0 || mod->sep < 0 || mod->mask < 0)
        return sk_fail(e, SKYCMD_E_FORMAT,
                       "the tokenizer lacks a [CLS], [SEP] or [MASK] token (ids %d, %d, %d)",
                       (int)mod->cls, (int)mod->sep, (int)mod->mask);
    const char *mt = sk_tokenizer_special_text(mod->tok, SKYCMD_SPECIAL_MASK);
    mod->mask_text = sk_strdup(mt ? mt : "");
    if (!mod->mask_text) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory opening the model");

    const sk_hparams *hp = sk_model_hparams(mod->m);
    mod->head_max_len = hp->max_head_tokens;
    if (mod->head_max_len == 0)
        return sk_fail(e, SKYCMD_E_FORMAT, "%s.decision.max_head_tokens is missing or zero", archz);
    int64_t mt_opt = sk_opt_int(opts, SKYCMD_OPT_MAX_TOKENS, 0);
    mod->max_len = mt_opt > 0 ? (size_t)mt_opt : hp->max_tokens ? hp->max_tokens : SK_DEFAULT_MAX_TOKENS;

    sk_temps_from_gguf(g, archz, &mod->temps);

    const char *name = sk_opt_str(opts, SKYCMD_OPT_MODEL_NAME, NULL);
    sk_str gname = {0};
    if (name && name[0] && !sk_utf8_valid(name, strlen(name)))
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "SKYCMD_OPT_MODEL_NAME is not valid UTF-8");
    if (name && name[0]) mod->name = sk_strdup(name);
    else if (sk_gguf_get_str(g, "general.name", &gname) == SKYCMD_OK && gname.len > 0 &&
             sk_utf8_valid(gname.ptr, (size_t)gname.len))
        mod->name = str_dup_sk(gname);
    else if (path) {
        const char *base = strrchr(path, '/');
        mod->name = sk_strdup(base ? base + 1 : path);
    } else
        mod->name = sk_strdup("model");
    if (!mod->name) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory opening the model");
    atomic_init(&mod->sessions, 0);
    sk_opt_log(opts, 1, "model %s: %u encoder + %u decision layers, d=%u, max_tokens=%zu, "
               "max_head_tokens=%zu", mod->name, hp->n_layer, hp->n_head_layers, hp->n_embd,
               mod->max_len, mod->head_max_len);
    return 0;
}

static int is_directory(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The converter's progress as a share of the open's. */
static int convert_progress(void *ud, uint64_t done, uint64_t total) {
    const sk_share *s = ud;
    return sk_share_report(*s, total ? (double)done / (double)total : 1.0, NULL) != 0;
}

/* A Laya checkpoint directory converted to GGUF in memory, exactly as skycmd_convert() with
 * the same options would write it (no temporary file); the model owns the bytes, and the
 * load gives the matrices' pages of them back once packed. */
static int convert_dir(skycmd_model *mod, const char *dir, const skycmd_options *opts,
                       const sk_share *prog, skycmd_error *err, sk_err *e) {
    sk_convert_opts o;
    int rc = sk_api_convert_opts(opts, &o, err);
    if (rc) return sk_fail(e, rc, "model open: an empty SKYCMD_OPT_NAME or SKYCMD_OPT_PRE");
    o.progress = sk_share_active(*prog) ? convert_progress : NULL;
    o.progress_ud = (void *)(uintptr_t)prog;
    sk_laya *l = NULL;
    rc = sk_laya_open_dir(dir, &l, e);
    size_t size = 0;
    if (!rc) {
        sk_opt_log(opts, 1, "converting the Laya checkpoint %s in memory", dir);
        rc = sk_laya_to_gguf_mem(l, &o, &mod->gguf_buf, &size, e);
    }
    sk_laya_free(l);
    /* the model owns these bytes, so the loader gives each packed matrix's pages back as
     * it does a file's copy (nothing reads them afterwards: calibrate refuses to write a
     * copy of a directory's model) */
    if (!rc) rc = sk_gguf_open_buffer_ex(mod->gguf_buf, size, SK_GGUF_RELEASABLE, &mod->g, e);
    return rc;
}

static int open_common(const char *path, const void *data, size_t size, const skycmd_options *opts,
                       skycmd_model **out, skycmd_error *err) {
    if (!out) return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT, "model open: out is NULL");
    *out = NULL;
    if (!sk_opts_ok(opts)) return sk_api_fail(err, SKYCMD_E_MISUSE, "model open: invalid options handle");
    sk_err e = {0};
    skycmd_model *mod = calloc(1, sizeof *mod);
    if (!mod) return sk_api_fail(err, SKYCMD_E_NOMEM, "out of memory opening the model");
    mod->tag = SK_TAG_MODEL;
    if (sk_platform_mutex_init(&mod->row_mu)) {
        free(mod);
        return sk_api_fail(err, SKYCMD_E_NOMEM, "model open: cannot make a lock");
    }
    mod->row_mu_ok = 1;
    const int dir = path && is_directory(path);
    /* Progress (none without a callback): one sequence over the whole open, the reading of
     * the file (or the checkpoint's conversion) first, then the load (model.h), each with
     * its estimated share; the first report is 0 before any work, the last the whole once
     * the model is complete, and a stop at any report frees everything. */
    sk_progress pg = {opts ? opts->progress : NULL, opts ? opts->progress_ud : NULL, 0, 0};
    const sk_share whole = sk_share_whole(&pg);
    const int weights = (int)sk_opt_int(opts, SKYCMD_OPT_WEIGHTS, SKYCMD_WEIGHTS_F32);
    const double first = !path ? 0.0 : sk_model_read_share(weights, dir ? SK_CONVERT_READ_FACTOR : 1.0);
    const sk_share read = sk_share_part(whole, 0.0, first), rest = sk_share_part(whole, first, 1.0);
    int rc = sk_share_report(whole, 0.0, &e);
    if (!rc && dir) {
        rc = convert_dir(mod, path, opts, &read, err, &e);
        if (rc == SKYCMD_E_CANCELLED) sk_err_prefix(&e, "%s", path);
    } else if (!rc) {
        /* A file is read into the reader's own memory (never mapped: rewriting it in place
         * later changes nothing), and the loader gives the pages of each packed matrix back. */
        rc = path ? sk_gguf_open_file_progress(path, SK_GGUF_RELEASABLE, read, &mod->g, &e)
                  : sk_gguf_open_buffer(data, size, &mod->g, &e);
    } else if (path)
        sk_err_prefix(&e, "%s", path);
    if (!rc) {
        rc = model_init(mod, path, opts, rest, &e);
        if (!rc) rc = sk_share_report(whole, 1.0, &e);
        if (rc && path) sk_err_prefix(&e, "%s", path);
    }
    if (rc) {
        model_destroy(mod);
        return sk_api_report(err, &e, rc);
    }
    *out = mod;
    return sk_api_report(err, NULL, SKYCMD_OK);
}

int skycmd_model_open(const char *gguf_path, const skycmd_options *opts, skycmd_model **out,
                      skycmd_error *err) {
    if (!gguf_path) {
        if (out) *out = NULL;
        return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT, "model open: path is NULL");
    }
    return open_common(gguf_path, NULL, 0, opts, out, err);
}

int skycmd_model_open_buffer(const void *data, size_t size, const skycmd_options *opts,
                             skycmd_model **out, skycmd_error *err) {
    if (!data) {
        if (out) *out = NULL;
        return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT, "model open: buffer is NULL");
    }
    return open_common(NULL, data, size, opts, out, err);
}

int skycmd_model_free(skycmd_model *model) {
    if (!model) return SKYCMD_OK;
    if (!model_ok(model)) return SKYCMD_E_MISUSE;
    if (atomic_load(&model->sessions) != 0) return SKYCMD_E_BUSY;
    model_destroy(model);
    return SKYCMD_OK;
}

const char *skycmd_model_name(const skycmd_model *model) {
    return model_ok(model) ? model->name : NULL;
}

const skycmd_tokenizer *skycmd_model_tokenizer(const skycmd_model *model) {
    return model_ok(model) ? model->tok : NULL;
}

int skycmd_model_get_int(const skycmd_model *model, const char *name, int64_t *value) {
    if (!model_ok(model)) return SKYCMD_E_MISUSE;
    if (!name || !value) return SKYCMD_E_INVALID_ARGUMENT;
    const sk_hparams *hp = sk_model_hparams(model->m);
    static const struct { const char *name; int which; } k[] = {
        {"embedding_length", 0}, {"block_count", 1}, {"decision.block_count", 2},
        {"decision.max_head_tokens", 3}, {"decision.max_tokens", 4}, {"vocab_size", 5},
        {"parameters", 6}, {"attention.head_count", 7}, {"feed_forward_length", 8},
        {"attention.sliding_window", 9}, {"attention.sliding_window_pattern", 10},
        {"encoder.block_count", 11}, {"decision.head_count", 12}, {"weights", 13},
        {"int8_stored", 14},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        if (strcmp(name, k[i].name) != 0) continue;
        switch (k[i].which) {
        case 0: *value = hp->n_embd; break;
        case 1: *value = (int64_t)hp->n_layer + hp->n_head_layers; break;
        case 2: *value = hp->n_head_layers; break;
        case 3: *value = (int64_t)model->head_max_len; break;
        case 4: *value = (int64_t)model->max_len; break;
        case 5: *value = (int64_t)sk_tokenizer_vocab_size(model->tok); break;
        case 6: *value = (int64_t)sk_model_n_params(model->m); break;
        case 7: *value = hp->n_head; break;
        case 8: *value = hp->n_ff; break;
        case 9: *value = hp->n_swa; break;
        case 10: *value = hp->swa_pattern; break;
        case 11: *value = hp->n_layer; break;
        case 12: *value = hp->n_head_dec; break;
        case 13: *value = sk_model_weights_mode(model->m); break;
        case 14:
            *value = sk_int8_store_version(model->g, NULL) > 0
                         ? 1 + (sk_int8_store_row_scaled(model->g, NULL) == 1) : 0;
            break;
        }
        return SKYCMD_OK;
    }
    /* Any other integer key of the architecture, e.g. "context_length". */
    sk_str arch;
    if (sk_gguf_get_str(model->g, "general.architecture", &arch) == SKYCMD_OK) {
        char key[256];
        int n = snprintf(key, sizeof key, "%.*s.%s", (int)arch.len, arch.ptr, name);
        if (n > 0 && (size_t)n < sizeof key && sk_gguf_get_i64(model->g, key, value) == SKYCMD_OK)
            return SKYCMD_OK;
    }
    return SKYCMD_E_NOT_FOUND;
}
