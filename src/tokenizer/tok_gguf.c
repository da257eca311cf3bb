/*
 * tok_gguf.c - the tokenizer in GGUF metadata: the tokenizer.ggml.* keys llama.cpp reads
 * (written the way gguf-py's converter writes a gpt2/BERT-family vocabulary) plus
 * skycmd.tokenizer.* keys that carry what llama.cpp ignores but HF tokenizers applies (NFC,
 * added-token flags, ignore_merges, model entries shadowed by added tokens, and for the
 * SentencePiece-style pipelines skycmd.tokenizer.pipeline: the tokenizer.json normalizer,
 * pre_tokenizer and decoder objects, plus byte_fallback), so that
 * sk_tokenizer_from_gguf() rebuilds a tokenizer that encodes exactly like the tokenizer.json.
 *
 * Without the skycmd keys (a file from llama.cpp's converter) the tokenizer is rebuilt from
 * token types alone: CONTROL = special, USER_DEFINED = normalized added token, no NFC.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"

enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5, TT_BYTE = 6 };

static int looks_special(const char *s, size_t n) {
    if ((n == 5 && memcmp(s, "<pad>", 5) == 0) || (n == 6 && memcmp(s, "<mask>", 6) == 0)) return 1;
    if (n >= 4 && memcmp(s, "<|", 2) == 0 && memcmp(s + n - 2, "|>", 2) == 0) return 1;
    if (n >= 8 && memcmp(s, "<unused", 7) == 0 && s[n - 1] == '>') return 1;
    return 0;
}

static int all_metaspace(const char *s, size_t n) {
    if (n == 0 || n % 3) return 0;
    for (size_t i = 0; i < n; i += 3)
        if (memcmp(s + i, "\xE2\x96\x81", 3) != 0) return 0;
    return 1;
}

typedef struct mref {
    uint32_t rank;
    int32_t a, b;
} mref;

static int cmp_mref(const void *x, const void *y) {
    const mref *p = x, *q = y;
    return p->rank < q->rank ? -1 : p->rank > q->rank;
}

#define W(call)                                                                          \
    do {                                                                                 \
        int st_ = (call);                                                                \
        if (st_) {                                                                       \
            rc = sk_fail(e, st_, "tokenizer: cannot write GGUF key (%s)", #call);         \
            goto done;                                                                   \
        }                                                                                \
    } while (0)

int sk_tokenizer_write_gguf(const skycmd_tokenizer *t, sk_gguf_writer *w, const char *pre,
                            sk_err *e) {
    return sk_tokenizer_write_gguf_padded(t, w, pre, 0, e);
}

int sk_tokenizer_write_gguf_padded(const skycmd_tokenizer *t, sk_gguf_writer *w,
                                   const char *pre, size_t n_vocab, sk_err *e) {
    if (!t || !w) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "tokenizer: NULL argument");
    int rc = SKYCMD_OK;
    size_t n = n_vocab > t->n_ids ? n_vocab : t->n_ids;
    const char **toks = calloc(n + 1, sizeof *toks);
    int32_t *types = calloc(n + 1, sizeof *types);
    char **holes = calloc(n + 1, sizeof *holes);
    mref *mr = calloc((size_t)t->merges.n + 1, sizeof *mr);
    char **mstr = calloc((size_t)t->merges.n + 1, sizeof *mstr);
    int32_t *aid = calloc(t->n_added + 1, sizeof *aid), *afl = calloc(t->n_added + 1, sizeof *afl);
    int32_t *lst = calloc(t->n_added + 1, sizeof *lst), *rst = calloc(t->n_added + 1, sizeof *rst);
    int32_t *ovid = calloc(n + 1, sizeof *ovid);
    const char **ovtok = calloc(n + 1, sizeof *ovtok);
    size_t n_mr = 0, n_l = 0, n_r = 0, n_ov = 0;
    if (!toks || !types || !holes || !mr || !mstr || !aid || !afl || !lst || !rst || !ovid || !ovtok) {
        rc = sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
        goto done;
    }
    for (size_t id = 0; id < n; id++) {
        /* ids without a token (holes, and the padding up to n_vocab): "[PAD<id>]" of type
         * UNUSED, as llama.cpp's converter writes them (get_vocab_base); never matched */
        if (id >= t->n_ids || !t->piece[id]) {
            char buf[32];
            snprintf(buf, sizeof buf, "[PAD%zu]", id);
            if (!(holes[id] = sk_strdup(buf))) {
                rc = sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
                goto done;
            }
            toks[id] = holes[id];
            types[id] = TT_UNUSED;
            continue;
        }
        if (memchr(t->piece[id], 0, t->piece_len[id]) != NULL || strlen(t->piece[id]) != t->piece_len[id]) {
            rc = sk_fail(e, SKYCMD_E_UNSUPPORTED, "tokenizer: token %zu contains a NUL byte", id);
            goto done;
        }
        toks[id] = t->piece[id];
        int32_t ai = t->added_of_id[id];
        if (ai >= 0) {
            const sk_added_token *a = &t->added[ai];
            types[id] = (a->flags & SK_ADDED_SPECIAL) || looks_special(a->content, a->len) ? TT_CONTROL : TT_USER;
            /* llama.cpp's converter for pre "mmbert" (ModernBertModel.get_vocab_base): the
             * user tokens for runs of U+2581 are never matched by the reference tokenizer
             * (not normalized, so only literal U+2581 text): NORMAL tokens of BPE */
            if (types[id] == TT_USER && pre && strcmp(pre, "mmbert") == 0 && all_metaspace(a->content, a->len))
                types[id] = TT_NORMAL;
            if (t->model_tok[id] && (t->model_tok_len[id] != a->len ||
                                     memcmp(t->model_tok[id], a->content, a->len) != 0)) {
                ovid[n_ov] = (int32_t)id;
                ovtok[n_ov++] = t->model_tok[id];
            }
        } else {
            types[id] = TT_NORMAL;
        }
    }
    /* merges in rank order, "a b" */
    for (uint32_t i = 0; i <= t->merges.mask && t->merges.keys; i++) {
        uint64_t k = t->merges.keys[i];
        if (!k) continue;
        k--;
        mr[n_mr].rank = t->merges.rank[i];
        mr[n_mr].a = (int32_t)(k >> 32);
        mr[n_mr].b = (int32_t)(k & 0xffffffffu);
        n_mr++;
    }
    qsort(mr, n_mr, sizeof *mr, cmp_mref);
    for (size_t i = 0; i < n_mr; i++) {
        const char *a = t->model_tok[mr[i].a], *b = t->model_tok[mr[i].b];
        size_t al = t->model_tok_len[mr[i].a], bl = t->model_tok_len[mr[i].b];
        if (memchr(a, ' ', al) || memchr(b, ' ', bl)) {
            rc = sk_fail(e, SKYCMD_E_UNSUPPORTED, "tokenizer: merge %zu has a token with a space", i);
            goto done;
        }
        if (!(mstr[i] = malloc(al + bl + 2))) {
            rc = sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
            goto done;
        }
        memcpy(mstr[i], a, al);
        mstr[i][al] = ' ';
        memcpy(mstr[i] + al + 1, b, bl);
        mstr[i][al + 1 + bl] = 0;
    }
    for (size_t i = 0; i < t->n_added; i++) {
        aid[i] = t->added[i].id;
        afl[i] = (int32_t)t->added[i].flags;
        if (t->added[i].flags & SK_ADDED_LSTRIP) lst[n_l++] = t->added[i].id;
        if (t->added[i].flags & SK_ADDED_RSTRIP) rst[n_r++] = t->added[i].id;
    }
    W(sk_gguf_writer_add_str(w, "tokenizer.ggml.model", "gpt2"));
    W(sk_gguf_writer_add_str(w, "tokenizer.ggml.pre", pre ? pre : "gpt-2"));
    W(sk_gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", toks, n));
    W(sk_gguf_writer_add_arr(w, "tokenizer.ggml.token_type", SK_GGUF_I32, types, n));
    W(sk_gguf_writer_add_arr_str(w, "tokenizer.ggml.merges", (const char *const *)mstr, n_mr));
    /* SpecialVocab: bos falls back to cls and eos to sep (BERT-family converters) */
    int32_t cls = t->special[SKYCMD_SPECIAL_CLS], sep = t->special[SKYCMD_SPECIAL_SEP];
    if (cls >= 0) W(sk_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)cls));
    if (sep >= 0) W(sk_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)sep));
    if (t->special[SKYCMD_SPECIAL_UNK] >= 0)
        W(sk_gguf_writer_add_u32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)t->special[SKYCMD_SPECIAL_UNK]));
    if (sep >= 0) W(sk_gguf_writer_add_u32(w, "tokenizer.ggml.seperator_token_id", (uint32_t)sep));
    if (t->special[SKYCMD_SPECIAL_PAD] >= 0)
        W(sk_gguf_writer_add_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)t->special[SKYCMD_SPECIAL_PAD]));
    if (t->special[SKYCMD_SPECIAL_MASK] >= 0)
        W(sk_gguf_writer_add_u32(w, "tokenizer.ggml.mask_token_id", (uint32_t)t->special[SKYCMD_SPECIAL_MASK]));
    W(sk_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", 1));
    W(sk_gguf_writer_add_bool(w, "tokenizer.ggml.add_eos_token", 1));
    W(sk_gguf_writer_add_bool(w, "tokenizer.ggml.add_sep_token", 1));
    W(sk_gguf_writer_add_u32(w, "tokenizer.ggml.token_type_count", 3));
    /* what llama.cpp ignores */
    W(sk_gguf_writer_add_str(w, "skycmd.tokenizer.normalizer", t->nfc ? "nfc" : "none"));
    W(sk_gguf_writer_add_bool(w, "skycmd.tokenizer.ignore_merges", t->ignore_merges));
    W(sk_gguf_writer_add_str(w, "skycmd.tokenizer.decoder", t->byte_level_decoder ? "byte_level" : "none"));
    W(sk_gguf_writer_add_arr(w, "skycmd.tokenizer.lstrip_ids", SK_GGUF_I32, lst, n_l));
    W(sk_gguf_writer_add_arr(w, "skycmd.tokenizer.rstrip_ids", SK_GGUF_I32, rst, n_r));
    W(sk_gguf_writer_add_arr(w, "skycmd.tokenizer.added_ids", SK_GGUF_I32, aid, t->n_added));
    W(sk_gguf_writer_add_arr(w, "skycmd.tokenizer.added_flags", SK_GGUF_I32, afl, t->n_added));
    if (n_ov) {
        W(sk_gguf_writer_add_arr(w, "skycmd.tokenizer.model_override_ids", SK_GGUF_I32, ovid, n_ov));
        W(sk_gguf_writer_add_arr_str(w, "skycmd.tokenizer.model_override_tokens", ovtok, n_ov));
    }
    if (cls >= 0) W(sk_gguf_writer_add_u32(w, "skycmd.tokenizer.cls_token_id", (uint32_t)cls));
    if (t->pipeline_json && (t->pretok != SK_PRETOK_BYTELEVEL || t->n_dec || t->n_norm > t->nfc)) {
        W(sk_gguf_writer_add_str(w, "skycmd.tokenizer.pipeline", t->pipeline_json));
        W(sk_gguf_writer_add_bool(w, "skycmd.tokenizer.byte_fallback", t->byte_fallback));
    }
    if (t->bpe_unk) {
        W(sk_gguf_writer_add_str(w, "skycmd.tokenizer.bpe_unk_token", t->bpe_unk));
        W(sk_gguf_writer_add_bool(w, "skycmd.tokenizer.fuse_unk", t->fuse_unk));
    }
done:
    if (holes)
        for (size_t id = 0; id < n; id++) free(holes[id]);
    if (mstr)
        for (size_t i = 0; i < n_mr; i++) free(mstr[i]);
    free(toks);
    free(types);
    free(holes);
    free(mr);
    free(mstr);
    free(aid);
    free(afl);
    free(lst);
    free(rst);
    free(ovid);
    free(ovtok);
    return rc;
}

/* ------------------------------------------------------------------ reading ----- */

#define SK_TOK_MAX_IDS (1u << 24)

/* Read an integer array (I32/U32/I64...) into a malloc'ed int64 array. */
static int read_int_arr(const sk_gguf *g, const char *key, int64_t **out, size_t *n, sk_err *e) {
    *out = NULL;
    *n = 0;
    const sk_gguf_value *v;
    int st = sk_gguf_get_arr(g, key, &v);
    if (st == SKYCMD_E_NOT_FOUND) return SKYCMD_E_NOT_FOUND;
    if (st) return sk_fail(e, SKYCMD_E_FORMAT, "GGUF key %s: not an array", key);
    uint32_t et = v->v.arr.elem_type;
    if (et == SK_GGUF_STRING || et == SK_GGUF_ARRAY || et == SK_GGUF_F32 || et == SK_GGUF_F64 ||
        et == SK_GGUF_BOOL)
        return sk_fail(e, SKYCMD_E_FORMAT, "GGUF key %s: not an integer array", key);
    if (v->v.arr.count > SK_TOK_MAX_IDS)
        return sk_fail(e, SKYCMD_E_TOO_LARGE, "GGUF key %s: %llu elements is too many", key,
                       (unsigned long long)v->v.arr.count);
    int64_t *a = sk_malloc_array((size_t)v->v.arr.count + 1, sizeof *a);
    if (!a) return sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
    sk_gguf_iter it;
    sk_gguf_iter_init(&it, v);
    sk_gguf_value x;
    size_t i = 0;
    while (i < v->v.arr.count && sk_gguf_iter_next(&it, &x)) {
        if (x.type == SK_GGUF_I8 || x.type == SK_GGUF_I16 || x.type == SK_GGUF_I32 || x.type == SK_GGUF_I64)
            a[i++] = x.v.i;
        else
            a[i++] = x.v.u > INT64_MAX ? -1 : (int64_t)x.v.u;
    }
    *out = a;
    *n = i;
    return SKYCMD_OK;
}

static int get_id(const sk_gguf *g, const char *key, size_t n_ids, int32_t *out) {
    uint64_t v;
    if (sk_gguf_get_u64(g, key, &v) == SKYCMD_OK && v < n_ids) {
        *out = (int32_t)v;
        return 1;
    }
    return 0;
}

int sk_tokenizer_from_gguf(const sk_gguf *g, skycmd_tokenizer **out, sk_err *e) {
    if (!g || !out) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "tokenizer: NULL argument");
    *out = NULL;
    sk_str s;
    if (sk_gguf_get_str(g, "tokenizer.ggml.model", &s))
        return sk_fail(e, SKYCMD_E_FORMAT, "GGUF: tokenizer.ggml.model is missing");
    if (!sk_str_eq(s, "gpt2"))
        return sk_fail(e, SKYCMD_E_UNSUPPORTED, "GGUF: tokenizer.ggml.model \"%.*s\" is not supported (only gpt2)",
                       (int)(s.len > 32 ? 32 : s.len), s.ptr);
    const sk_gguf_value *tv;
    if (sk_gguf_get_arr(g, "tokenizer.ggml.tokens", &tv) || tv->v.arr.elem_type != SK_GGUF_STRING)
        return sk_fail(e, SKYCMD_E_FORMAT, "GGUF: tokenizer.ggml.tokens is missing or not a string array");
    if (tv->v.arr.count == 0 || tv->v.arr.count > SK_TOK_MAX_IDS)
        return sk_fail(e, SKYCMD_E_FORMAT, "GGUF: tokenizer.ggml.tokens has %llu entries",
                       (unsigned long long)tv->v.arr.count);
    size_t n = (size_t)tv->v.arr.count;
    int rc = SKYCMD_OK;
    int64_t *types = NULL, *aids = NULL, *afl = NULL, *lst = NULL, *rst = NULL, *ovid = NULL;
    size_t n_types = 0, n_aids = 0, n_afl = 0, n_l = 0, n_r = 0, n_ov = 0;
    const char **tokstr = NULL;
    uint32_t *toklen = NULL;
    skycmd_tokenizer *t = sk_tok_alloc();
    if (!t) return sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
    t->n_ids = n;
    t->piece = calloc(n, sizeof *t->piece);
    t->piece_len = calloc(n, sizeof *t->piece_len);
    t->model_tok = calloc(n, sizeof *t->model_tok);
    t->model_tok_len = calloc(n, sizeof *t->model_tok_len);
    t->added_of_id = sk_malloc_array(n, sizeof *t->added_of_id);
    tokstr = calloc(n, sizeof *tokstr);
    toklen = calloc(n, sizeof *toklen);
    if (!t->piece || !t->piece_len || !t->model_tok || !t->model_tok_len || !t->added_of_id || !tokstr || !toklen) {
        rc = sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
        goto done;
    }
    {
        sk_gguf_iter it;
        sk_gguf_iter_init(&it, tv);
        sk_gguf_value x;
        for (size_t i = 0; i < n && sk_gguf_iter_next(&it, &x); i++) {
            if (x.v.s.len >= UINT32_MAX || !sk_utf8_valid(x.v.s.ptr, (size_t)x.v.s.len)) {
                rc = sk_fail(e, SKYCMD_E_FORMAT, "GGUF: tokenizer.ggml.tokens[%zu] is not valid UTF-8", i);
                goto done;
            }
            if (!(tokstr[i] = sk_tok_strdup(t, x.v.s.ptr, (size_t)x.v.s.len))) {
                rc = sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
                goto done;
            }
            toklen[i] = (uint32_t)x.v.s.len;
        }
    }
    rc = read_int_arr(g, "tokenizer.ggml.token_type", &types, &n_types, e);
    if (rc == SKYCMD_E_NOT_FOUND) rc = SKYCMD_OK;
    if (rc) goto done;
    if (types && n_types != n) {
        rc = sk_fail(e, SKYCMD_E_FORMAT, "GGUF: tokenizer.ggml.token_type has %zu entries, tokens has %zu", n_types, n);
        goto done;
    }
    sk_str nz;
    if (sk_gguf_get_str(g, "skycmd.tokenizer.normalizer", &nz) == SKYCMD_OK) {
        if (sk_str_eq(nz, "nfc")) {
            t->nfc = 1;
            t->n_norm = 1;
            t->norm[0].kind = SK_STEP_NFC;
        } else if (!sk_str_eq(nz, "none")) {
            rc = sk_fail(e, SKYCMD_E_UNSUPPORTED, "GGUF: skycmd.tokenizer.normalizer \"%.*s\" is not supported",
                         (int)(nz.len > 32 ? 32 : nz.len), nz.ptr);
            goto done;
        }
    }
    int b;
    if (sk_gguf_get_bool(g, "skycmd.tokenizer.ignore_merges", &b) == SKYCMD_OK) t->ignore_merges = b;
    t->byte_level_decoder = 1;
    if (sk_gguf_get_str(g, "skycmd.tokenizer.decoder", &nz) == SKYCMD_OK && sk_str_eq(nz, "none"))
        t->byte_level_decoder = 0;
    /* the SentencePiece-style pipelines carry their tokenizer.json objects whole */
    if (sk_gguf_get_str(g, "skycmd.tokenizer.pipeline", &nz) == SKYCMD_OK) {
        if ((rc = sk_tok_parse_pipeline_json(t, nz.ptr, (size_t)nz.len, e))) goto done;
    }
    if (sk_gguf_get_bool(g, "skycmd.tokenizer.byte_fallback", &b) == SKYCMD_OK) t->byte_fallback = b;
    if (sk_gguf_get_str(g, "skycmd.tokenizer.bpe_unk_token", &nz) == SKYCMD_OK) {
        if (!(t->bpe_unk = sk_strndup(nz.ptr, (size_t)nz.len))) {
            rc = sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
            goto done;
        }
        if (sk_gguf_get_bool(g, "skycmd.tokenizer.fuse_unk", &b) == SKYCMD_OK) t->fuse_unk = b;
    }
    /* added tokens */
    for (size_t i = 0; i < n; i++) t->added_of_id[i] = -1;
    rc = read_int_arr(g, "skycmd.tokenizer.added_ids", &aids, &n_aids, e);
    if (rc == SKYCMD_OK) rc = read_int_arr(g, "skycmd.tokenizer.added_flags", &afl, &n_afl, e);
    if (rc == SKYCMD_OK && n_afl != n_aids) {
        rc = sk_fail(e, SKYCMD_E_FORMAT, "GGUF: skycmd.tokenizer.added_ids and added_flags differ in length");
        goto done;
    }
    if (rc == SKYCMD_E_NOT_FOUND) {
        rc = SKYCMD_OK;
        /* derive from token types (llama.cpp-converted file) */
        free(aids);
        free(afl);
        aids = sk_malloc_array(n + 1, sizeof *aids);
        afl = sk_malloc_array(n + 1, sizeof *afl);
        if (!aids || !afl) {
            rc = sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
            goto done;
        }
        n_aids = 0;
        for (size_t i = 0; types && i < n; i++) {
            if (types[i] == TT_CONTROL || types[i] == TT_USER) {
                aids[n_aids] = (int64_t)i;
                afl[n_aids++] = types[i] == TT_CONTROL ? SK_ADDED_SPECIAL : SK_ADDED_NORMALIZED;
            }
        }
        n_afl = n_aids;
        if (read_int_arr(g, "skycmd.tokenizer.lstrip_ids", &lst, &n_l, e) == SKYCMD_OK)
            for (size_t i = 0; i < n_l; i++)
                for (size_t j = 0; j < n_aids; j++)
                    if (aids[j] == lst[i]) afl[j] |= SK_ADDED_LSTRIP;
        if (read_int_arr(g, "skycmd.tokenizer.rstrip_ids", &rst, &n_r, e) == SKYCMD_OK)
            for (size_t i = 0; i < n_r; i++)
                for (size_t j = 0; j < n_aids; j++)
                    if (aids[j] == rst[i]) afl[j] |= SK_ADDED_RSTRIP;
    }
    if (rc) goto done;
    t->added = calloc(n_aids + 1, sizeof *t->added);
    if (!t->added) {
        rc = sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
        goto done;
    }
    for (size_t i = 0; i < n_aids; i++) {
        if (aids[i] < 0 || (uint64_t)aids[i] >= n || afl[i] < 0 || afl[i] > 63 ||
            t->added_of_id[aids[i]] >= 0) {
            rc = sk_fail(e, SKYCMD_E_FORMAT, "GGUF: skycmd.tokenizer.added_ids[%zu] = %lld is invalid", i,
                         (long long)aids[i]);
            goto done;
        }
        sk_added_token *a = &t->added[t->n_added];
        a->id = (int32_t)aids[i];
        a->flags = (uint32_t)afl[i];
        a->content = tokstr[a->id];
        a->len = toklen[a->id];
        if (a->len == 0) continue;
        t->added_of_id[a->id] = (int32_t)t->n_added++;
    }
    /* model vocabulary */
    for (size_t i = 0; i < n; i++) {
        int in_model;
        if (t->added_of_id[i] >= 0) in_model = (t->added[t->added_of_id[i]].flags & SK_ADDED_IN_MODEL) != 0;
        else in_model = !types || (types[i] != TT_UNUSED && types[i] != TT_CONTROL && types[i] != TT_USER);
        int hole = types && types[i] == TT_UNUSED && t->added_of_id[i] < 0;
        t->piece[i] = hole ? NULL : tokstr[i];
        t->piece_len[i] = hole ? 0 : toklen[i];
        if (in_model) {
            t->model_tok[i] = tokstr[i];
            t->model_tok_len[i] = toklen[i];
        }
    }
    rc = read_int_arr(g, "skycmd.tokenizer.model_override_ids", &ovid, &n_ov, e);
    if (rc == SKYCMD_E_NOT_FOUND) rc = SKYCMD_OK;
    else if (rc == SKYCMD_OK) {
        const sk_gguf_value *ov;
        if (sk_gguf_get_arr(g, "skycmd.tokenizer.model_override_tokens", &ov) || ov->v.arr.elem_type != SK_GGUF_STRING ||
            ov->v.arr.count != n_ov) {
            rc = sk_fail(e, SKYCMD_E_FORMAT, "GGUF: skycmd.tokenizer.model_override_tokens does not match the ids");
            goto done;
        }
        sk_gguf_iter it;
        sk_gguf_iter_init(&it, ov);
        sk_gguf_value x;
        for (size_t i = 0; i < n_ov && sk_gguf_iter_next(&it, &x); i++) {
            if (ovid[i] < 0 || (uint64_t)ovid[i] >= n || x.v.s.len >= UINT32_MAX ||
                !sk_utf8_valid(x.v.s.ptr, (size_t)x.v.s.len)) {
                rc = sk_fail(e, SKYCMD_E_FORMAT, "GGUF: skycmd.tokenizer.model_override %zu is invalid", i);
                goto done;
            }
            char *p = sk_tok_strdup(t, x.v.s.ptr, (size_t)x.v.s.len);
            if (!p) {
                rc = sk_fail(e, SKYCMD_E_NOMEM, "tokenizer: out of memory");
                goto done;
            }
            t->model_tok[ovid[i]] = p;
            t->model_tok_len[ovid[i]] = (uint32_t)x.v.s.len;
        }
    }
    if (rc) goto done;
    if ((rc = sk_tok_build_vocab(t, e))) goto done;
    if ((rc = sk_tok_set_patterns(t, e))) goto done;
    /* merges */
    {
        const sk_gguf_value *mv;
        if (sk_gguf_get_arr(g, "tokenizer.ggml.merges", &mv) == SKYCMD_OK) {
            if (mv->v.arr.elem_type != SK_GGUF_STRING || mv->v.arr.count > (1u << 26)) {
                rc = sk_fail(e, SKYCMD_E_FORMAT, "GGUF: tokenizer.ggml.merges is not a string array");
                goto done;
            }
            if ((rc = sk_tok_merge_init(t, (size_t)mv->v.arr.count, e))) goto done;
            sk_gguf_iter it;
            sk_gguf_iter_init(&it, mv);
            sk_gguf_value x;
            uint32_t rank = 0;
            while (sk_gguf_iter_next(&it, &x)) {
                const char *p = x.v.s.ptr;
                size_t l = (size_t)x.v.s.len;
                const char *sp = memchr(p, ' ', l);
                if (!sp || memchr(sp + 1, ' ', l - (size_t)(sp - p) - 1)) {
                    rc = sk_fail(e, SKYCMD_E_FORMAT, "GGUF: tokenizer.ggml.merges[%u] is not \"a b\"", rank);
                    goto done;
                }
                if ((rc = sk_tok_add_merge(t, p, (size_t)(sp - p), sp + 1, l - (size_t)(sp - p) - 1, rank, e)))
                    goto done;
                rank++;
            }
        } else if ((rc = sk_tok_merge_init(t, 0, e))) {
            goto done;
        }
    }
    if ((rc = sk_tok_finish(t, e))) goto done;
    /* specials */
    if (!get_id(g, "skycmd.tokenizer.cls_token_id", n, &t->special[SKYCMD_SPECIAL_CLS]))
        get_id(g, "tokenizer.ggml.bos_token_id", n, &t->special[SKYCMD_SPECIAL_CLS]);
    get_id(g, "tokenizer.ggml.seperator_token_id", n, &t->special[SKYCMD_SPECIAL_SEP]);
    get_id(g, "tokenizer.ggml.mask_token_id", n, &t->special[SKYCMD_SPECIAL_MASK]);
    get_id(g, "tokenizer.ggml.padding_token_id", n, &t->special[SKYCMD_SPECIAL_PAD]);
    get_id(g, "tokenizer.ggml.unknown_token_id", n, &t->special[SKYCMD_SPECIAL_UNK]);
done:
    free(types);
    free(aids);
    free(afl);
    free(lst);
    free(rst);
    free(ovid);
    free(tokstr);
    free(toklen);
    if (rc) {
        sk_tokenizer_free(t);
        return rc;
    }
    *out = t;
    return SKYCMD_OK;
}
