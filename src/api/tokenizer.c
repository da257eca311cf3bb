/*
 * tokenizer.c (api) - the public skycmd_tokenizer_* functions over src/tokenizer.
 *
 * A tokenizer handle is immutable, so the functions that take a const handle keep no error
 * message in it; they return a status only. skycmd_tokenizer_open_json() reports through the
 * caller's skycmd_error.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "../tokenizer/tokenizer.h"

#define SK_TOKENIZER_JSON_MAX ((size_t)1 << 30)

static int tok_ok(const skycmd_tokenizer *t) { return t && t->tag == SK_TAG_TOKENIZER; }

int skycmd_tokenizer_open_json(const char *path, skycmd_tokenizer **out, skycmd_error *err) {
    if (out) *out = NULL;
    if (!path || !out) return sk_api_fail(err, SKYCMD_E_INVALID_ARGUMENT, "tokenizer: NULL path or out");
    sk_err e;
    sk_err_clear(&e);
    char *json = NULL, *cfg = NULL;
    size_t len = 0, cfg_len = 0;
    int rc = sk_read_file(path, &json, &len, SK_TOKENIZER_JSON_MAX, &e);
    if (rc) return sk_api_report(err, &e, rc);
    /* tokenizer_config.json beside it names the special tokens (optional) */
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
    char *cpath = malloc(dir + sizeof "tokenizer_config.json");
    if (!cpath) {
        free(json);
        return sk_api_fail(err, SKYCMD_E_NOMEM, "tokenizer: out of memory");
    }
    memcpy(cpath, path, dir);
    memcpy(cpath + dir, "tokenizer_config.json", sizeof "tokenizer_config.json");
    sk_err ce;
    sk_err_clear(&ce);
    if (sk_read_file(cpath, &cfg, &cfg_len, SK_TOKENIZER_JSON_MAX, &ce) != SKYCMD_OK) cfg = NULL;
    rc = sk_tokenizer_from_json(json, len, cfg, cfg_len, out, &e);
    if (rc) sk_err_prefix(&e, "%s", path);
    free(json);
    free(cfg);
    free(cpath);
    if (rc) return sk_api_report(err, &e, rc);
    (*out)->tag = SK_TAG_TOKENIZER; /* a handle from here on */
    return sk_api_report(err, NULL, SKYCMD_OK);
}

int skycmd_tokenizer_free(skycmd_tokenizer *tok) {
    if (!tok) return SKYCMD_OK;
    if (!tok_ok(tok)) return SKYCMD_E_MISUSE;
    if (tok->owned_by_model) return SKYCMD_E_MISUSE;
    tok->tag = SK_TAG_DEAD;
    sk_tokenizer_free(tok);
    return SKYCMD_OK;
}

int skycmd_tokenizer_encode(const skycmd_tokenizer *tok, const char *text, size_t text_len,
                            int32_t *ids, size_t capacity, size_t *n_ids) {
    if (n_ids) *n_ids = 0;
    if (!tok_ok(tok)) return SKYCMD_E_MISUSE;
    if (!n_ids || (!text && text_len) || (!ids && capacity)) return SKYCMD_E_INVALID_ARGUMENT;
    sk_ids v = {0};
    int rc = sk_tokenizer_encode(tok, text ? text : "", text_len, &v, NULL);
    if (rc == SKYCMD_OK) {
        size_t k = v.n < capacity ? v.n : capacity;
        if (k) memcpy(ids, v.ids, k * sizeof *ids);
        *n_ids = v.n;
    }
    sk_ids_free(&v);
    return rc;
}

int skycmd_tokenizer_decode(const skycmd_tokenizer *tok, const int32_t *ids, size_t n_ids,
                            char **out) {
    if (out) *out = NULL;
    if (!tok_ok(tok)) return SKYCMD_E_MISUSE;
    if (!out || (!ids && n_ids)) return SKYCMD_E_INVALID_ARGUMENT;
    sk_buf b;
    sk_buf_init(&b);
    int rc = sk_tokenizer_decode(tok, ids, n_ids, &b, NULL);
    if (rc) {
        sk_buf_free(&b);
        return rc;
    }
    *out = sk_buf_detach(&b);
    return *out ? SKYCMD_OK : SKYCMD_E_NOMEM;
}

const char *skycmd_tokenizer_token(const skycmd_tokenizer *tok, int32_t id) {
    if (!tok_ok(tok)) return NULL;
    return sk_tokenizer_piece(tok, id);
}

size_t skycmd_tokenizer_vocab_size(const skycmd_tokenizer *tok) {
    return tok_ok(tok) ? sk_tokenizer_vocab_size(tok) : 0;
}

int32_t skycmd_tokenizer_special_id(const skycmd_tokenizer *tok, int which) {
    if (!tok_ok(tok)) return -1;
    return sk_tokenizer_special(tok, which);
}
