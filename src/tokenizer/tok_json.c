/*
 * tok_json.c - load a Hugging Face tokenizer.json (+ tokenizer_config.json for the special
 * tokens) into a skycmd_tokenizer.
 *
 * Supported: the byte-level pipeline (normalizer NFC / none, pre-tokenizer ByteLevel with
 * use_regex and add_prefix_space false, decoder ByteLevel / none) and the SentencePiece-style
 * ones of Gemma/mmBERT (tok_spm.c: Replace normalizers, Split / Metaspace / no
 * pre-tokenizer, Replace/ByteFallback/Fuse/Metaspace/Strip decoders); BPE model (merges as
 * "a b" strings or [a, b] pairs, unk_token, fuse_unk, ignore_merges, byte_fallback). Anything else that changes
 * ids is refused with SKYCMD_E_UNSUPPORTED rather than tokenized differently.
 *
 * Added-token ids are assigned the way tokenizers 0.23 does when it deserializes (the "id"
 * fields of the file are only advisory there too): a content already in the added map or the
 * model vocabulary keeps that id; a new one gets the next id after the model vocabulary.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <utf8proc.h>

#include "../util/json_syntax.h"
#include "tokenizer.h"

#define SK_TOK_MAX_IDS (1u << 24)

static int jbool(const cJSON *o, const char *k, int dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v);
    return dflt;
}

static const char *jstr(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Content of a special-token entry of tokenizer_config.json: "text" or {"content": ...}. */
static const char *special_content(const cJSON *cfg, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (cJSON_IsString(v)) return v->valuestring;
    if (cJSON_IsObject(v)) return jstr(v, "content");
    return NULL;
}

typedef struct jadded {
    const char *content;
    uint32_t flags;
    int32_t id;
} jadded;

static int32_t lookup_any(const skycmd_tokenizer *t, const jadded *ad, size_t n_ad, const char *s) {
    if (!s) return -1;
    for (size_t i = 0; i < n_ad; i++)
        if (strcmp(ad[i].content, s) == 0) return ad[i].id;
    return sk_strmap_get(&t->vocab, s, strlen(s));
}

int sk_tokenizer_from_json(const char *json, size_t len, const char *config_json,
                           size_t config_len, skycmd_tokenizer **out, sk_err *e) {
    if (!out) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "tokenizer: NULL out");
    *out = NULL;
    if (!json) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "tokenizer: NULL json");
    /* cJSON says NULL both for text that is not JSON and when it runs out of memory */
    cJSON *root = cJSON_ParseWithLength(json, len), *cfg = NULL;
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        if (!root && sk_json_parse_failure(json, len, CJSON_NESTING_LIMIT, NULL) == SKYCMD_E_NOMEM)
            return sk_fail(e, SKYCMD_E_NOMEM, "tokenizer.json: out of memory parsing the JSON");
        return sk_fail(e, SKYCMD_E_FORMAT, "tokenizer.json: not a JSON object");
    }
    if (config_json) {
        cfg = cJSON_ParseWithLength(config_json, config_len);
        if (!cfg || !cJSON_IsObject(cfg)) {
            cJSON_Delete(root);
            cJSON_Delete(cfg);
            if (!cfg && sk_json_parse_failure(config_json, config_len, CJSON_NESTING_LIMIT, NULL) == SKYCMD_E_NOMEM)
                return sk_fail(e, SKYCMD_E_NOMEM, "tokenizer_config.json: out of memory parsing the JSON");
            return sk_fail(e, SKYCMD_E_FORMAT, "tokenizer_config.json: not a JSON object");
        }
    }
    int rc = SKYCMD_OK;
    jadded *ad = NULL;
    skycmd_tokenizer *t = sk_tok_alloc();
    if (!t) {
        rc = sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
        goto done;
    }
    const char *ver = jstr(root, "version");
    if (ver && strcmp(ver, "1.0") != 0) {
        rc = sk_fail(e, SKYCMD_E_UNSUPPORTED, "tokenizer.json: unknown version \"%s\"", ver);
        goto done;
    }
    if ((rc = sk_tok_parse_pipeline(t, cJSON_GetObjectItemCaseSensitive(root, "normalizer"),
                                    cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"),
                                    cJSON_GetObjectItemCaseSensitive(root, "decoder"), e)))
        goto done;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsObject(model)) {
        rc = sk_fail(e, SKYCMD_E_FORMAT, "tokenizer.json: missing \"model\"");
        goto done;
    }
    const char *mt = jstr(model, "type");
    if (mt && strcmp(mt, "BPE") != 0) {
        rc = sk_fail(e, SKYCMD_E_UNSUPPORTED, "tokenizer.json: model.type \"%s\" is not supported (only BPE)", mt);
        goto done;
    }
    {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(model, "dropout");
        if (cJSON_IsNumber(d) && d->valuedouble != 0.0) {
            rc = sk_fail(e, SKYCMD_E_UNSUPPORTED, "tokenizer.json: model.dropout is not supported");
            goto done;
        }
        const char *pfx = jstr(model, "continuing_subword_prefix"), *sfx = jstr(model, "end_of_word_suffix");
        if ((pfx && *pfx) || (sfx && *sfx)) {
            rc = sk_fail(e, SKYCMD_E_UNSUPPORTED,
                         "tokenizer.json: model.continuing_subword_prefix / end_of_word_suffix are not supported");
            goto done;
        }
        t->byte_fallback = jbool(model, "byte_fallback", 0);
        if (t->byte_fallback && t->pretok == SK_PRETOK_BYTELEVEL) {
            rc = sk_fail(e, SKYCMD_E_UNSUPPORTED, "tokenizer.json: model.byte_fallback with a ByteLevel pre_tokenizer is not supported");
            goto done;
        }
        t->ignore_merges = jbool(model, "ignore_merges", 0);
        t->fuse_unk = jbool(model, "fuse_unk", 0);
        const char *unk = jstr(model, "unk_token");
        if (unk && !(t->bpe_unk = sk_strdup(unk))) {
            rc = sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
            goto done;
        }
    }
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    if (!cJSON_IsObject(vocab) || !cJSON_IsArray(merges)) {
        rc = sk_fail(e, SKYCMD_E_FORMAT, "tokenizer.json: model.vocab (object) and model.merges (array) are required");
        goto done;
    }
    /* id space */
    size_t n_vocab = 0;
    int64_t max_id = -1;
    const cJSON *it;
    cJSON_ArrayForEach(it, vocab) {
        if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble >= SK_TOK_MAX_IDS ||
            it->valuedouble != (double)(int64_t)it->valuedouble) {
            rc = sk_fail(e, SKYCMD_E_FORMAT, "tokenizer.json: model.vocab[\"%.64s\"]: bad id", it->string);
            goto done;
        }
        if ((int64_t)it->valuedouble > max_id) max_id = (int64_t)it->valuedouble;
        n_vocab++;
    }
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added)) {
        rc = sk_fail(e, SKYCMD_E_FORMAT, "tokenizer.json: added_tokens must be an array");
        goto done;
    }
    size_t n_added_json = (size_t)cJSON_GetArraySize(added);
    if (n_added_json > SK_TOK_MAX_IDS) {
        rc = sk_fail(e, SKYCMD_E_TOO_LARGE, "tokenizer.json: too many added tokens");
        goto done;
    }
    /* Ids may have holes, but a tiny file must not make us allocate for millions of ids. */
    if (max_id >= 0 && (size_t)max_id >= 2 * (n_vocab + n_added_json) + 1024) {
        rc = sk_fail(e, SKYCMD_E_FORMAT, "tokenizer.json: model.vocab: id %lld is far beyond the %zu entries",
                     (long long)max_id, n_vocab);
        goto done;
    }
    /* first pass: vocabulary strings in a temporary id table */
    size_t cap_ids = (size_t)(max_id + 1) + n_added_json;
    t->n_ids = cap_ids;
    t->piece = calloc(cap_ids ? cap_ids : 1, sizeof *t->piece);
    t->piece_len = calloc(cap_ids ? cap_ids : 1, sizeof *t->piece_len);
    t->model_tok = calloc(cap_ids ? cap_ids : 1, sizeof *t->model_tok);
    t->model_tok_len = calloc(cap_ids ? cap_ids : 1, sizeof *t->model_tok_len);
    t->added_of_id = sk_malloc_array(cap_ids ? cap_ids : 1, sizeof *t->added_of_id);
    if (!t->piece || !t->piece_len || !t->model_tok || !t->model_tok_len || !t->added_of_id) {
        rc = sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
        goto done;
    }
    for (size_t i = 0; i < cap_ids; i++) t->added_of_id[i] = -1;
    cJSON_ArrayForEach(it, vocab) {
        size_t id = (size_t)it->valuedouble;
        if (t->model_tok[id]) {
            rc = sk_fail(e, SKYCMD_E_FORMAT, "tokenizer.json: model.vocab: id %zu is used by \"%.64s\" and \"%.64s\"",
                         id, t->model_tok[id], it->string);
            goto done;
        }
        size_t l = strlen(it->string);
        if (l >= UINT32_MAX || !sk_utf8_valid(it->string, l)) {
            rc = sk_fail(e, SKYCMD_E_FORMAT, "tokenizer.json: model.vocab: id %zu is not valid UTF-8", id);
            goto done;
        }
        if (!(t->model_tok[id] = sk_tok_strdup(t, it->string, l))) {
            rc = sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
            goto done;
        }
        t->model_tok_len[id] = (uint32_t)l;
    }
    t->n_ids = (size_t)(max_id + 1);
    if ((rc = sk_tok_build_vocab(t, e))) goto done;
    /* added tokens, ids assigned like AddedVocabulary::add_tokens */
    ad = calloc(n_added_json + 1, sizeof *ad);
    if (!ad) {
        rc = sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
        goto done;
    }
    size_t n_ad = 0;
    uint32_t next_id = (uint32_t)n_vocab;
    size_t k = 0;
    cJSON_ArrayForEach(it, added) {
        const char *content = jstr(it, "content");
        if (!cJSON_IsObject(it) || !content) {
            rc = sk_fail(e, SKYCMD_E_FORMAT, "tokenizer.json: added_tokens[%zu]: missing content", k);
            goto done;
        }
        k++;
        if (!*content) continue;
        if (!sk_utf8_valid(content, strlen(content))) {
            rc = sk_fail(e, SKYCMD_E_FORMAT, "tokenizer.json: added_tokens[%zu]: content is not valid UTF-8", k - 1);
            goto done;
        }
        uint32_t flags = 0;
        if (jbool(it, "special", 0)) flags |= SK_ADDED_SPECIAL;
        if (jbool(it, "normalized", !(flags & SK_ADDED_SPECIAL))) flags |= SK_ADDED_NORMALIZED;
        if (jbool(it, "lstrip", 0)) flags |= SK_ADDED_LSTRIP;
        if (jbool(it, "rstrip", 0)) flags |= SK_ADDED_RSTRIP;
        if (jbool(it, "single_word", 0)) flags |= SK_ADDED_SINGLE_WORD;
        size_t j = 0;
        for (; j < n_ad; j++)
            if (strcmp(ad[j].content, content) == 0) break;
        if (j < n_ad) { /* same content again: same id, new properties */
            ad[j].flags = flags;
            continue;
        }
        int32_t id = sk_strmap_get(&t->vocab, content, strlen(content));
        if (id < 0) {
            if (next_id >= cap_ids) {
                rc = sk_fail(e, SKYCMD_E_INTERNAL, "tokenizer: added id overflow");
                goto done;
            }
            id = (int32_t)next_id++;
        }
        /* an id taken by an earlier added token of other content: HF replaces it */
        for (size_t q = 0; q < n_ad; q++)
            if (ad[q].id == id) ad[q].id = -1;
        ad[n_ad].content = content;
        ad[n_ad].flags = flags;
        ad[n_ad].id = id;
        n_ad++;
        if ((size_t)id + 1 > t->n_ids) t->n_ids = (size_t)id + 1;
    }
    t->added = calloc(n_ad + 1, sizeof *t->added);
    if (!t->added) {
        rc = sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
        goto done;
    }
    for (size_t i = 0; i < n_ad; i++) {
        if (ad[i].id < 0) continue;
        sk_added_token *a = &t->added[t->n_added];
        size_t l = strlen(ad[i].content);
        a->id = ad[i].id;
        a->flags = ad[i].flags | (t->model_tok[a->id] ? SK_ADDED_IN_MODEL : 0);
        a->content = sk_tok_strdup(t, ad[i].content, l);
        a->len = (uint32_t)l;
        if (!a->content) {
            rc = sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
            goto done;
        }
        t->added_of_id[a->id] = (int32_t)t->n_added;
        t->n_added++;
    }
    if ((rc = sk_tok_set_patterns(t, e))) goto done;
    for (size_t id = 0; id < t->n_ids; id++) {
        if (t->added_of_id[id] >= 0) {
            const sk_added_token *a = &t->added[t->added_of_id[id]];
            t->piece[id] = a->content;
            t->piece_len[id] = a->len;
        } else if (t->model_tok[id]) {
            t->piece[id] = t->model_tok[id];
            t->piece_len[id] = t->model_tok_len[id];
        }
    }
    /* merges */
    size_t n_merges = (size_t)cJSON_GetArraySize(merges);
    if ((rc = sk_tok_merge_init(t, n_merges, e))) goto done;
    uint32_t rank = 0;
    cJSON_ArrayForEach(it, merges) {
        const char *a = NULL, *b = NULL;
        size_t al = 0, bl = 0;
        if (cJSON_IsString(it)) {
            const char *s = it->valuestring, *sp = strchr(s, ' ');
            if (!sp || strchr(sp + 1, ' ')) {
                rc = sk_fail(e, SKYCMD_E_FORMAT, "tokenizer.json: model.merges[%u]: \"%.64s\" is not \"a b\"", rank, s);
                goto done;
            }
            a = s;
            al = (size_t)(sp - s);
            b = sp + 1;
            bl = strlen(b);
        } else if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2 &&
                   cJSON_IsString(cJSON_GetArrayItem(it, 0)) && cJSON_IsString(cJSON_GetArrayItem(it, 1))) {
            a = cJSON_GetArrayItem(it, 0)->valuestring;
            b = cJSON_GetArrayItem(it, 1)->valuestring;
            al = strlen(a);
            bl = strlen(b);
        } else {
            rc = sk_fail(e, SKYCMD_E_FORMAT, "tokenizer.json: model.merges[%u]: not a string or a pair", rank);
            goto done;
        }
        if ((rc = sk_tok_add_merge(t, a, al, b, bl, rank, e))) goto done;
        rank++;
    }
    if ((rc = sk_tok_finish(t, e))) goto done;
    /* special tokens: tokenizer_config.json first, then well-known contents */
    {
        static const char *const keys[5] = {"cls_token", "sep_token", "mask_token", "pad_token", "unk_token"};
        static const char *const dflt[5][3] = {{"[CLS]", "<s>", "<cls>"},
                                               {"[SEP]", "</s>", "<sep>"},
                                               {"[MASK]", "<mask>", NULL},
                                               {"[PAD]", "<pad>", "<|padding|>"},
                                               {"[UNK]", "<unk>", NULL}};
        for (int w = 0; w < 5; w++) {
            int32_t id = -1;
            if (cfg) id = lookup_any(t, ad, n_ad, special_content(cfg, keys[w]));
            for (int d = 0; id < 0 && d < 3 && dflt[w][d]; d++) id = lookup_any(t, ad, n_ad, dflt[w][d]);
            t->special[w] = id;
        }
    }
done:
    free(ad);
    cJSON_Delete(root);
    cJSON_Delete(cfg);
    if (rc) {
        sk_tokenizer_free(t);
        return rc;
    }
    *out = t;
    return SKYCMD_OK;
}

/* Matching patterns: the normalizer applied to the content of normalized tokens. */
int sk_tok_set_patterns(skycmd_tokenizer *t, sk_err *e) {
    for (size_t i = 0; i < t->n_added; i++) {
        sk_added_token *a = &t->added[i];
        a->pattern = a->content;
        a->pattern_len = a->len;
        if (!(a->flags & SK_ADDED_NORMALIZED) || t->n_norm == 0) continue;
        sk_buf nb;
        sk_buf_init(&nb);
        if (sk_tok_normalize(t, a->content, a->len, &nb)) {
            sk_buf_free(&nb);
            return sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
        }
        if (nb.len != a->len || memcmp(nb.data, a->content, nb.len) != 0) {
            a->pattern = sk_tok_strdup(t, nb.data ? nb.data : "", nb.len);
            a->pattern_len = (uint32_t)nb.len;
        }
        sk_buf_free(&nb);
        if (!a->pattern) return sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
    }
    return SKYCMD_OK;
}
