/*
 * tok_spm.c - the parts of HF `tokenizers` that SentencePiece-style tokenizer.json files
 * (Gemma, mmBERT) use besides the BPE model: normalizer chains (NFC, Replace of a literal),
 * the Split (literal pattern) and Metaspace pre-tokenizers, and the decoder chains (Replace,
 * ByteFallback, Fuse, Metaspace, Strip). Each follows tokenizers 0.23.3's Rust code:
 *
 *  - Replace (normalizer/decoder) with a String pattern replaces every non-overlapping
 *    occurrence, left to right. A Regex pattern is refused (SKYCMD_E_UNSUPPORTED).
 *  - Split with a String pattern and one of the five behaviors; empty pieces are dropped.
 *  - Metaspace: ' ' -> replacement, then the replacement is prepended when the piece does not
 *    start with it (prepend_scheme "always"; "first": only for the piece at offset 0 of the
 *    input), then (split) every replacement starts a new word.
 *  - ByteFallback decoder: a run of "<0xNN>" tokens becomes its bytes when they are valid
 *    UTF-8, else one U+FFFD per byte token (NN parsed like Rust's u8::from_str_radix(_, 16),
 *    which also accepts "+N").
 *  - Metaspace decoder: the replacement becomes ' ', except in the first token, where it is
 *    dropped (prepend_scheme other than "never").
 *  - Strip decoder: up to `start` leading and `stop` trailing chars equal to content removed.
 *
 * Contract: everything parsed here comes from a hostile file; unknown types and options that
 * change ids are SKYCMD_E_UNSUPPORTED with the key named.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../util/json_syntax.h"
#include "tokenizer.h"

static const char *jstr(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int jbool(const cJSON *o, const char *k, int dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v);
    return dflt;
}

/* {"String": "x"} -> "x"; a Regex pattern or anything else -> NULL */
static const char *string_pattern(const cJSON *o) {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "pattern");
    return cJSON_IsObject(p) ? jstr(p, "String") : NULL;
}

static int add_step(skycmd_tokenizer *t, sk_step *steps, int *n, int kind, const char *a, const char *b,
                    int opt, int opt2, const char *what, sk_err *e) {
    if (*n >= SK_MAX_STEPS)
        return sk_fail(e, SKYCMD_E_UNSUPPORTED, "tokenizer.json: %s: more than %d steps", what, SK_MAX_STEPS);
    sk_step *s = &steps[(*n)++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->opt = opt;
    s->opt2 = opt2;
    if (a) {
        size_t l = strlen(a);
        if (l >= UINT32_MAX || !sk_utf8_valid(a, l) || !(s->a = sk_tok_strdup(t, a, l)))
            return sk_fail(e, SKYCMD_E_FORMAT, "tokenizer.json: %s: bad string", what);
        s->a_len = (uint32_t)l;
    }
    if (b) {
        size_t l = strlen(b);
        if (l >= UINT32_MAX || !sk_utf8_valid(b, l) || !(s->b = sk_tok_strdup(t, b, l)))
            return sk_fail(e, SKYCMD_E_FORMAT, "tokenizer.json: %s: bad string", what);
        s->b_len = (uint32_t)l;
    }
    return SKYCMD_OK;
}

static int parse_prepend(const cJSON *o, int *scheme, sk_err *e) {
    const char *ps = jstr(o, "prepend_scheme");
    if (!ps) *scheme = jbool(o, "add_prefix_space", 1) ? SK_PREPEND_ALWAYS : SK_PREPEND_NEVER;
    else if (strcmp(ps, "always") == 0) *scheme = SK_PREPEND_ALWAYS;
    else if (strcmp(ps, "never") == 0) *scheme = SK_PREPEND_NEVER;
    else if (strcmp(ps, "first") == 0) *scheme = SK_PREPEND_FIRST;
    else return sk_fail(e, SKYCMD_E_UNSUPPORTED, "tokenizer.json: Metaspace prepend_scheme \"%.32s\"", ps);
    return SKYCMD_OK;
}

static int one_char(const char *s, uint32_t *len) {
    if (!s || !*s) return 0;
    size_t n = strlen(s);
    uint32_t cp;
    if (!sk_utf8_valid(s, n)) return 0;
    size_t l = sk_utf8_next(s, n, 0, &cp);
    if (l != n) return 0;
    *len = (uint32_t)l;
    return 1;
}

static int parse_normalizer(skycmd_tokenizer *t, const cJSON *n, sk_err *e) {
    if (!n || cJSON_IsNull(n)) return SKYCMD_OK;
    const char *type = jstr(n, "type");
    if (type && strcmp(type, "Sequence") == 0) {
        const cJSON *x;
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(n, "normalizers")) {
            int rc = parse_normalizer(t, x, e);
            if (rc) return rc;
        }
        return SKYCMD_OK;
    }
    if (type && strcmp(type, "NFC") == 0) {
        t->nfc = 1;
        return add_step(t, t->norm, &t->n_norm, SK_STEP_NFC, NULL, NULL, 0, 0, "normalizer", e);
    }
    if (type && strcmp(type, "Replace") == 0) {
        const char *pat = string_pattern(n), *content = jstr(n, "content");
        if (!pat || !content)
            return sk_fail(e, SKYCMD_E_UNSUPPORTED, "tokenizer.json: normalizer Replace needs a String pattern and content");
        if (!*pat) return SKYCMD_OK; /* an empty pattern matches nothing useful; tokenizers leaves text as is */
        return add_step(t, t->norm, &t->n_norm, SK_STEP_REPLACE, pat, content, 0, 0, "normalizer", e);
    }
    return sk_fail(e, SKYCMD_E_UNSUPPORTED,
                   "tokenizer.json: normalizer \"%s\" is not supported (NFC, Replace, Sequence)", type ? type : "?");
}

static int parse_pretok(skycmd_tokenizer *t, const cJSON *p, sk_err *e) {
    if (!p || cJSON_IsNull(p)) {
        t->pretok = SK_PRETOK_NONE;
        return SKYCMD_OK;
    }
    const char *type = jstr(p, "type");
    if (type && strcmp(type, "Sequence") == 0) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(p, "pretokenizers");
        if (cJSON_GetArraySize(arr) != 1)
            return sk_fail(e, SKYCMD_E_UNSUPPORTED, "tokenizer.json: pre_tokenizer Sequence must hold exactly one pre-tokenizer");
        return parse_pretok(t, cJSON_GetArrayItem(arr, 0), e);
    }
    if (type && strcmp(type, "ByteLevel") == 0) {
        if (jbool(p, "add_prefix_space", 1))
            return sk_fail(e, SKYCMD_E_UNSUPPORTED, "tokenizer.json: pre_tokenizer.add_prefix_space = true is not supported");
        if (!jbool(p, "use_regex", 1))
            return sk_fail(e, SKYCMD_E_UNSUPPORTED, "tokenizer.json: pre_tokenizer.use_regex = false is not supported");
        t->pretok = SK_PRETOK_BYTELEVEL;
        return SKYCMD_OK;
    }
    if (type && strcmp(type, "Split") == 0) {
        const char *pat = string_pattern(p), *beh = jstr(p, "behavior");
        if (!pat || !*pat || jbool(p, "invert", 0))
            return sk_fail(e, SKYCMD_E_UNSUPPORTED, "tokenizer.json: pre_tokenizer Split needs a non-empty String pattern, invert false");
        static const char *const names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
        int b = -1;
        for (int i = 0; i < 5; i++)
            if (beh && strcmp(beh, names[i]) == 0) b = i;
        if (b < 0) return sk_fail(e, SKYCMD_E_UNSUPPORTED, "tokenizer.json: pre_tokenizer Split behavior \"%.32s\"", beh ? beh : "?");
        size_t l = strlen(pat);
        if (l >= UINT32_MAX || !sk_utf8_valid(pat, l) || !(t->split_pat = sk_tok_strdup(t, pat, l)))
            return sk_fail(e, SKYCMD_E_FORMAT, "tokenizer.json: pre_tokenizer Split: bad pattern");
        t->split_len = (uint32_t)l;
        t->split_behavior = b;
        t->pretok = SK_PRETOK_SPLIT;
        return SKYCMD_OK;
    }
    if (type && strcmp(type, "Metaspace") == 0) {
        const char *rep = jstr(p, "replacement");
        uint32_t rl;
        if (!one_char(rep, &rl))
            return sk_fail(e, SKYCMD_E_FORMAT, "tokenizer.json: pre_tokenizer Metaspace replacement must be one char");
        memcpy(t->meta_rep, rep, rl);
        t->meta_rep_len = rl;
        int rc = parse_prepend(p, &t->meta_prepend, e);
        if (rc) return rc;
        t->meta_split = jbool(p, "split", 1);
        t->pretok = SK_PRETOK_METASPACE;
        return SKYCMD_OK;
    }
    return sk_fail(e, SKYCMD_E_UNSUPPORTED,
                   "tokenizer.json: pre_tokenizer \"%s\" is not supported (ByteLevel, Split, Metaspace)", type ? type : "?");
}

static int parse_decoder(skycmd_tokenizer *t, const cJSON *d, int top, sk_err *e) {
    if (!d || cJSON_IsNull(d)) return SKYCMD_OK;
    const char *type = jstr(d, "type");
    if (type && strcmp(type, "Sequence") == 0) {
        const cJSON *x;
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(d, "decoders")) {
            int rc = parse_decoder(t, x, 0, e);
            if (rc) return rc;
        }
        return SKYCMD_OK;
    }
    if (type && strcmp(type, "ByteLevel") == 0) {
        if (!top || t->n_dec)
            return sk_fail(e, SKYCMD_E_UNSUPPORTED, "tokenizer.json: a ByteLevel decoder inside a Sequence is not supported");
        t->byte_level_decoder = 1;
        return SKYCMD_OK;
    }
    if (t->byte_level_decoder)
        return sk_fail(e, SKYCMD_E_UNSUPPORTED, "tokenizer.json: a ByteLevel decoder inside a Sequence is not supported");
    if (type && strcmp(type, "Replace") == 0) {
        const char *pat = string_pattern(d), *content = jstr(d, "content");
        if (!pat || !content)
            return sk_fail(e, SKYCMD_E_UNSUPPORTED, "tokenizer.json: decoder Replace needs a String pattern and content");
        if (!*pat) return SKYCMD_OK;
        return add_step(t, t->dec, &t->n_dec, SK_STEP_REPLACE, pat, content, 0, 0, "decoder", e);
    }
    if (type && strcmp(type, "ByteFallback") == 0)
        return add_step(t, t->dec, &t->n_dec, SK_STEP_BYTE_FALLBACK, NULL, NULL, 0, 0, "decoder", e);
    if (type && strcmp(type, "Fuse") == 0)
        return add_step(t, t->dec, &t->n_dec, SK_STEP_FUSE, NULL, NULL, 0, 0, "decoder", e);
    if (type && strcmp(type, "Metaspace") == 0) {
        const char *rep = jstr(d, "replacement");
        uint32_t rl;
        int scheme;
        if (!one_char(rep, &rl))
            return sk_fail(e, SKYCMD_E_FORMAT, "tokenizer.json: decoder Metaspace replacement must be one char");
        int rc = parse_prepend(d, &scheme, e);
        if (rc) return rc;
        return add_step(t, t->dec, &t->n_dec, SK_STEP_METASPACE, rep, NULL, scheme, 0, "decoder", e);
    }
    if (type && strcmp(type, "Strip") == 0) {
        const char *content = jstr(d, "content");
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(d, "start"), *sp = cJSON_GetObjectItemCaseSensitive(d, "stop");
        uint32_t rl;
        if (!one_char(content, &rl) || !cJSON_IsNumber(st) || !cJSON_IsNumber(sp) || st->valuedouble < 0 ||
            sp->valuedouble < 0 || st->valuedouble > 1e6 || sp->valuedouble > 1e6)
            return sk_fail(e, SKYCMD_E_FORMAT, "tokenizer.json: decoder Strip needs one content char, start and stop");
        return add_step(t, t->dec, &t->n_dec, SK_STEP_STRIP, content, NULL, (int)st->valuedouble, (int)sp->valuedouble,
                        "decoder", e);
    }
    return sk_fail(e, SKYCMD_E_UNSUPPORTED,
                   "tokenizer.json: decoder \"%s\" is not supported (ByteLevel, Replace, ByteFallback, Fuse, Metaspace, Strip)",
                   type ? type : "?");
}

int sk_tok_parse_pipeline(skycmd_tokenizer *t, const void *normalizer, const void *pre_tokenizer,
                          const void *decoder, sk_err *e) {
    const cJSON *n = normalizer, *p = pre_tokenizer, *d = decoder;
    int rc;
    t->n_norm = t->n_dec = 0;
    t->nfc = t->byte_level_decoder = 0;
    if ((rc = parse_normalizer(t, n, e)) || (rc = parse_pretok(t, p, e)) || (rc = parse_decoder(t, d, 1, e))) return rc;
    /* keep the three objects for the GGUF (skycmd.tokenizer.pipeline) */
    cJSON *o = cJSON_CreateObject();
    if (!o) return sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
    const char *keys[3] = {"normalizer", "pre_tokenizer", "decoder"};
    const cJSON *vals[3] = {n, p, d};
    for (int i = 0; i < 3; i++) {
        cJSON *c = vals[i] ? cJSON_Duplicate(vals[i], 1) : cJSON_CreateNull();
        if (!c || !cJSON_AddItemToObject(o, keys[i], c)) {
            cJSON_Delete(c);
            cJSON_Delete(o);
            return sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
        }
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s) return sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
    t->pipeline_json = sk_tok_strdup(t, s, strlen(s));
    cJSON_free(s);
    if (!t->pipeline_json) return sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
    return SKYCMD_OK;
}

int sk_tok_parse_pipeline_json(skycmd_tokenizer *t, const char *json, size_t len, sk_err *e) {
    cJSON *o = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        if (!o && sk_json_parse_failure(json, len, CJSON_NESTING_LIMIT, NULL) == SKYCMD_E_NOMEM)
            return sk_fail(e, SKYCMD_E_NOMEM, "GGUF: skycmd.tokenizer.pipeline: out of memory parsing the JSON");
        return sk_fail(e, SKYCMD_E_FORMAT, "GGUF: skycmd.tokenizer.pipeline is not a JSON object");
    }
    int rc = sk_tok_parse_pipeline(t, cJSON_GetObjectItemCaseSensitive(o, "normalizer"),
                                   cJSON_GetObjectItemCaseSensitive(o, "pre_tokenizer"),
                                   cJSON_GetObjectItemCaseSensitive(o, "decoder"), e);
    cJSON_Delete(o);
    return rc;
}

void sk_tok_set_fallback_ids(skycmd_tokenizer *t) {
    static const char hex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; b++) {
        char s[7] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>', 0};
        t->fallback_id[b] = sk_strmap_get(&t->vocab, s, 6);
    }
}
