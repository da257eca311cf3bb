/*
 * test_tokenizer_long.c - the BPE merge loop on long words against a plain reference.
 *
 * HF tokenizers merges a word by taking, again and again, the adjacent pair whose merge has
 * the smallest rank, the leftmost one on a tie (Word::merge_all orders its entries by
 * (rank, position) and skips those whose pair has changed). The reference here does exactly
 * that by rescanning the word after every merge (quadratic: the algorithm the library does
 * not use), with a merge table of its own built from tokenizer.json's model.vocab and
 * model.merges (a later duplicate pair replaces the earlier one, as in HF's map). It is
 * compared with both queues of the library (sk_tok_bpe_merge: the binary heap of short
 * words, the rank buckets of long ones) on random symbol sequences of many shapes, with
 * sk_tokenizer_encode on long single words (which takes the buckets from BPE_BUCKET_MIN
 * symbols), and on a hand-made merge list whose merges of merged tokens rank before the
 * merges that make them (the buckets' low heap). Tokenizers: the byte-level fixtures
 * (tests/fixtures/tokenizer, tests/fixtures/prompt) and the SentencePiece-style ones
 * (tests/fixtures/gemma_tok), whose pipeline BPEs a whole text as one word.
 */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "skycmd.h"
#include "tokenizer/tokenizer.h"
#include "test_util.h"

/* ---- the reference: its own merge table, a rescan after every merge ---- */

typedef struct ref_merges {
    uint64_t *key; /* (a << 32 | b) + 1, 0 = empty */
    uint32_t *rank;
    int32_t *merged;
    size_t mask;
} ref_merges;

static size_t ref_slot(const ref_merges *m, uint64_t key) {
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & m->mask;
    while (m->key[i] && m->key[i] != key) i = (i + 1) & m->mask;
    return i;
}

static int ref_get(const ref_merges *m, int32_t a, int32_t b, uint32_t *rank, int32_t *merged) {
    size_t i = ref_slot(m, (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1);
    if (!m->key[i]) return 0;
    *rank = m->rank[i];
    *merged = m->merged[i];
    return 1;
}

static int32_t vocab_id(const cJSON *vocab, const char *s) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(vocab, s);
    return cJSON_IsNumber(v) ? (int32_t)v->valuedouble : -1;
}

static ref_merges ref_load(const char *json) {
    cJSON *root = cJSON_Parse(json);
    cr_assert(root, "tokenizer.json does not parse");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    cr_assert(cJSON_IsObject(vocab) && cJSON_IsArray(merges));
    size_t n = (size_t)cJSON_GetArraySize(merges), sz = 16;
    while (sz < 2 * n + 2) sz *= 2;
    ref_merges m = {calloc(sz, 8), calloc(sz, 4), calloc(sz, 4), sz - 1};
    cr_assert(m.key && m.rank && m.merged);
    uint32_t rank = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, merges) {
        char a[256], b[256], ab[512];
        if (cJSON_IsString(it)) {
            const char *sp = strchr(it->valuestring, ' ');
            cr_assert(sp);
            snprintf(a, sizeof a, "%.*s", (int)(sp - it->valuestring), it->valuestring);
            snprintf(b, sizeof b, "%s", sp + 1);
        } else {
            snprintf(a, sizeof a, "%s", cJSON_GetArrayItem(it, 0)->valuestring);
            snprintf(b, sizeof b, "%s", cJSON_GetArrayItem(it, 1)->valuestring);
        }
        snprintf(ab, sizeof ab, "%s%s", a, b);
        int32_t ia = vocab_id(vocab, a), ib = vocab_id(vocab, b), im = vocab_id(vocab, ab);
        cr_assert(ia >= 0 && ib >= 0 && im >= 0, "merge %u: %s %s", rank, a, b);
        size_t i = ref_slot(&m, (((uint64_t)(uint32_t)ia << 32) | (uint32_t)ib) + 1);
        m.key[i] = (((uint64_t)(uint32_t)ia << 32) | (uint32_t)ib) + 1;
        m.rank[i] = rank++; /* a later duplicate replaces the earlier one */
        m.merged[i] = im;
    }
    cJSON_Delete(root);
    return m;
}

static void ref_free(ref_merges *m) {
    free(m->key);
    free(m->rank);
    free(m->merged);
}

/* Merge the pair of smallest rank, the leftmost on a tie, until none has a merge. pr[i] is
 * the rank of the pair (v[i], v[i+1]) (UINT32_MAX: none), recomputed next to each merge. */
static size_t ref_merge(const ref_merges *m, int32_t *v, size_t n) {
    if (n < 2) return n;
    uint32_t *pr = malloc(n * sizeof *pr);
    int32_t *pm = malloc(n * sizeof *pm);
    cr_assert(pr && pm);
    for (size_t i = 0; i + 1 < n; i++)
        if (!ref_get(m, v[i], v[i + 1], &pr[i], &pm[i])) pr[i] = UINT32_MAX;
    for (;;) {
        size_t best = SIZE_MAX;
        uint32_t br = UINT32_MAX;
        for (size_t i = 0; i + 1 < n; i++)
            if (pr[i] < br) br = pr[best = i];
        if (best == SIZE_MAX) break;
        v[best] = pm[best];
        memmove(v + best + 1, v + best + 2, (n - best - 2) * sizeof *v);
        memmove(pr + best, pr + best + 1, (n - best - 2) * sizeof *pr);
        memmove(pm + best, pm + best + 1, (n - best - 2) * sizeof *pm);
        n--;
        if (best > 0 && !ref_get(m, v[best - 1], v[best], &pr[best - 1], &pm[best - 1])) pr[best - 1] = UINT32_MAX;
        if (best + 1 < n && !ref_get(m, v[best], v[best + 1], &pr[best], &pm[best])) pr[best] = UINT32_MAX;
    }
    free(pr);
    free(pm);
    return n;
}

/* ---- tokenizers ---- */

typedef struct tok_case {
    const char *name;
    skycmd_tokenizer *t;
    ref_merges ref;
    int32_t alpha[512]; /* initial-symbol ids words are made of */
    size_t n_alpha;
} tok_case;

static void load_case(tok_case *c, const char *name, const char *json, size_t len) {
    sk_err e;
    sk_err_clear(&e);
    c->name = name;
    c->t = NULL;
    cr_assert_eq(sk_tokenizer_from_json(json, len, NULL, 0, &c->t, &e), SKYCMD_OK, "%s: %s", name, e.msg);
    c->ref = ref_load(json);
    c->n_alpha = 0;
}

static void load_fixture(tok_case *c, const char *rel) {
    char p[512];
    snprintf(p, sizeof p, SKYCMD_FIXTURES "/%s/tokenizer.json", rel);
    size_t len = 0;
    char *j = tu_read_file(p, &len);
    cr_assert(j, "cannot read %s", p);
    load_case(c, rel, j, len);
    free(j);
    const skycmd_tokenizer *t = c->t;
    if (t->pretok == SK_PRETOK_BYTELEVEL) {
        for (int b = 0; b < 256; b++)
            if (t->byte_id[b] >= 0) c->alpha[c->n_alpha++] = t->byte_id[b];
    } else {
        /* the vocabulary's single characters (U+2581 among them), and byte fallback tokens */
        for (size_t id = 0; id < t->n_ids && c->n_alpha < 400; id++) {
            const char *s = t->model_tok[id];
            if (!s) continue;
            uint32_t cp;
            size_t l = sk_utf8_next(s, t->model_tok_len[id], 0, &cp);
            if (l == t->model_tok_len[id]) c->alpha[c->n_alpha++] = (int32_t)id;
        }
        for (int b = 0; b < 256 && c->n_alpha < 512; b += 7)
            if (t->fallback_id[b] >= 0) c->alpha[c->n_alpha++] = t->fallback_id[b];
    }
    cr_assert(c->n_alpha >= 20, "%s: %zu symbols", rel, c->n_alpha);
}

static void free_case(tok_case *c) {
    sk_tokenizer_free(c->t);
    ref_free(&c->ref);
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint32_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}

/* A random word of n initial symbols, of one of several shapes. */
static void make_word(const tok_case *c, int shape, int32_t *v, size_t n) {
    const skycmd_tokenizer *t = c->t;
    int32_t few[4];
    for (int k = 0; k < 4; k++) few[k] = c->alpha[rnd() % c->n_alpha];
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const char *words[] = {"the", " drone", " up", " 36", "vy", " alt", "ing", "tion", " a", "e"};
    size_t i = 0;
    switch (shape) {
    case 0: /* one symbol repeated ('aaaa...') */
        while (i < n) v[i++] = few[0];
        break;
    case 1: /* a short pattern repeated ("upupup", "ab ab ") */
        for (size_t p = 2 + rnd() % 3; i < n; i++) v[i] = few[i % p];
        break;
    case 2: /* any symbol */
        while (i < n) v[i++] = c->alpha[rnd() % c->n_alpha];
        break;
    case 3: /* runs of a few symbols */
        while (i < n) {
            int32_t x = few[rnd() % 4];
            for (size_t r = 1 + rnd() % 40; r && i < n; r--) v[i++] = x;
        }
        break;
    case 4: /* the symbols of merges (left then right operand): merges everywhere */
        while (i < n) {
            size_t s = rnd() % (c->ref.mask + 1);
            while (!c->ref.key[s]) s = (s + 1) & c->ref.mask;
            uint64_t k = c->ref.key[s] - 1;
            v[i++] = (int32_t)(k >> 32);
            if (i < n) v[i++] = (int32_t)(uint32_t)k;
        }
        break;
    default: /* base64 or text: bytes (byte-level), else characters found in the vocabulary */
        while (i < n) {
            const char *src = shape == 5 ? b64 + rnd() % 64 : words[rnd() % 10];
            size_t l = shape == 5 ? 1 : strlen(src);
            for (size_t k = 0; k < l && i < n; k++) {
                int32_t id = -1;
                if (t->pretok == SK_PRETOK_BYTELEVEL) id = t->byte_id[(unsigned char)src[k]];
                else if (src[k] == ' ') id = sk_strmap_get(&t->vocab, "\xe2\x96\x81", 3);
                else id = sk_strmap_get(&t->vocab, src + k, 1);
                v[i++] = id >= 0 ? id : few[0];
            }
        }
        break;
    }
}

/* The word through the reference and through both queues: the same tokens. */
static void check_word(const tok_case *c, const int32_t *w, size_t n, const char *what) {
    int32_t *ref = malloc((n + 1) * sizeof *ref), *q = malloc((n + 1) * sizeof *q);
    cr_assert(ref && q);
    memcpy(ref, w, n * sizeof *w);
    size_t nr = ref_merge(&c->ref, ref, n);
    for (int how = SK_BPE_HEAP; how <= SK_BPE_BUCKETS; how++) {
        memcpy(q, w, n * sizeof *w);
        size_t nq = n;
        cr_assert_eq(sk_tok_bpe_merge(c->t, q, &nq, how), SKYCMD_OK);
        cr_assert_eq(nq, nr, "%s, %s (%zu symbols), %s: %zu tokens, the reference %zu", c->name, what, n,
                     how == SK_BPE_HEAP ? "heap" : "buckets", nq, nr);
        for (size_t i = 0; i < nr; i++)
            cr_assert_eq(q[i], ref[i], "%s, %s (%zu symbols), %s: token %zu is %d, the reference's %d", c->name, what,
                         n, how == SK_BPE_HEAP ? "heap" : "buckets", i, q[i], ref[i]);
    }
    free(ref);
    free(q);
}

static const char *const k_fixtures[] = {
    "tokenizer/vocab1024", "tokenizer/vocab4096", "tokenizer/vocab1024_im", "prompt",
    "gemma_tok/gemma3000", "gemma_tok/gemma3000_metaspace",
};
#define N_FIXTURES (sizeof k_fixtures / sizeof k_fixtures[0])
static const char *const k_shape[] = {"one symbol repeated", "a pattern repeated", "any symbols", "runs",
                                      "merge operands", "base64", "text"};

Test(merge, both_queues_match_the_rescan, .timeout = 600) {
    for (size_t f = 0; f < N_FIXTURES; f++) {
        tok_case c;
        load_fixture(&c, k_fixtures[f]);
        int32_t *w = malloc(6000 * sizeof *w);
        cr_assert(w);
        for (int iter = 0; iter < 133; iter++) {
            int shape = iter % 7;
            /* mostly short, one of each shape past BPE_BUCKET_MIN (4096) */
            size_t n = iter < 126 ? rnd() % (iter < 63 ? 64 : 2500) : 4100 + rnd() % 1900;
            make_word(&c, shape, w, n);
            check_word(&c, w, n, k_shape[shape]);
        }
        free(w);
        free_case(&c);
    }
}

/* A merge list no BPE trainer writes: merges of merged tokens rank BEFORE the merges that
 * make them, so a merge's new pairs rank below the one taken (the buckets' low heap), and
 * two merges make the same token ("abc" = "ab c" = "a bc"). */
static const char k_odd_json[] =
    "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":[],"
    "\"normalizer\":null,\"pre_tokenizer\":null,\"post_processor\":null,\"decoder\":null,"
    "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,\"continuing_subword_prefix\":null,"
    "\"end_of_word_suffix\":null,\"fuse_unk\":false,\"byte_fallback\":false,\"ignore_merges\":false,"
    "\"vocab\":{\"a\":0,\"b\":1,\"c\":2,\"x\":3,\"ab\":4,\"bc\":5,\"abc\":6,\"xab\":7,\"cc\":8,\"xabc\":9,"
    "\"abcabc\":10,\"ccc\":11,\"xx\":12,\"bcx\":13},"
    "\"merges\":[\"x ab\",\"abc abc\",\"xab c\",\"ab c\",\"a bc\",\"cc c\",\"b c\",\"a b\",\"c c\",\"x x\","
    "\"bc x\",\"a b\"]}}";

Test(merge, merges_that_rank_before_their_operands, .timeout = 120) {
    tok_case c;
    load_case(&c, "hand-made merge list", k_odd_json, sizeof k_odd_json - 1);
    for (int32_t id = 0; id < 4; id++) c.alpha[c.n_alpha++] = id;
    int32_t *w = malloc(9000 * sizeof *w);
    cr_assert(w);
    for (int iter = 0; iter < 300; iter++) {
        int shape = iter % 5;
        size_t n = iter < 280 ? rnd() % 600 : 4000 + rnd() % 5000;
        make_word(&c, shape, w, n);
        check_word(&c, w, n, k_shape[shape]);
    }
    /* and through encode (no pre-tokenizer: the text is one word) */
    char text[6001];
    for (int iter = 0; iter < 6; iter++) {
        size_t n = 5000 + rnd() % 1000;
        for (size_t i = 0; i < n; i++) text[i] = "abcx"[iter & 1 ? rnd() % 4 : rnd() % 3];
        sk_ids out = {0};
        sk_err e;
        sk_err_clear(&e);
        cr_assert_eq(sk_tokenizer_encode(c.t, text, n, &out, &e), SKYCMD_OK, "%s", e.msg);
        for (size_t i = 0; i < n; i++) w[i] = text[i] == 'x' ? 3 : text[i] - 'a';
        size_t nr = ref_merge(&c.ref, w, n);
        cr_assert_eq(out.n, nr);
        cr_assert_eq(memcmp(out.ids, w, nr * sizeof *w), 0, "encode differs from the reference");
        sk_ids_free(&out);
    }
    free(w);
    free_case(&c);
}

/* Generated merge lists over {a, b}: every string of 2 to 6 letters is a token, made by
 * every split of it, so one token is made by different merges at different places and the
 * pairs of equal tokens overlap; sparse: a third of the merges left out, so that the order
 * of two merges shows in the result. ranked 1: by the merged token's length, then at random
 * (the shape of a trained list); 0: entirely at random. */
static char *ab_json(int ranked, int sparse) {
    char toks[130][8];
    size_t nt = 0;
    for (int len = 1; len <= 6; len++)
        for (int bits = 0; bits < (1 << len); bits++) {
            for (int k = 0; k < len; k++) toks[nt][k] = (bits >> k) & 1 ? 'b' : 'a';
            toks[nt++][len] = 0;
        }
    char (*mg)[16] = malloc(600 * sizeof *mg);
    uint32_t *key = malloc(600 * sizeof *key);
    cr_assert(mg && key);
    size_t nm = 0;
    for (size_t i = 2; i < nt; i++) {
        size_t len = strlen(toks[i]);
        for (size_t k = 1; k < len; k++) {
            if (sparse && rnd() % 3 == 0) continue;
            snprintf(mg[nm], sizeof mg[nm], "%.*s %s", (int)k, toks[i], toks[i] + k);
            key[nm++] = ranked ? (uint32_t)(len << 24) | (rnd() & 0xFFFFFF) : rnd();
        }
    }
    for (size_t i = 1; i < nm; i++) /* sort the merges by key */
        for (size_t j = i; j > 0 && key[j - 1] > key[j]; j--) {
            uint32_t tk = key[j];
            key[j] = key[j - 1];
            key[j - 1] = tk;
            char tm[16];
            memcpy(tm, mg[j], 16);
            memcpy(mg[j], mg[j - 1], 16);
            memcpy(mg[j - 1], tm, 16);
        }
    sk_buf b;
    sk_buf_init(&b);
    sk_buf_puts(&b, "{\"version\":\"1.0\",\"added_tokens\":[],\"normalizer\":null,\"pre_tokenizer\":null,"
                    "\"decoder\":null,\"model\":{\"type\":\"BPE\",\"unk_token\":null,\"fuse_unk\":false,"
                    "\"byte_fallback\":false,\"ignore_merges\":false,\"vocab\":{");
    for (size_t i = 0; i < nt; i++) {
        char item[1100]; /* toks[i] is at most a few bytes; the size keeps -Wformat-truncation quiet */
        snprintf(item, sizeof item, "%s\"%s\":%zu", i ? "," : "", toks[i], i);
        sk_buf_puts(&b, item);
    }
    sk_buf_puts(&b, "},\"merges\":[");
    for (size_t i = 0; i < nm; i++) {
        char item[64];
        snprintf(item, sizeof item, "%s\"%s\"", i ? "," : "", mg[i]);
        sk_buf_puts(&b, item);
    }
    sk_buf_puts(&b, "]}}");
    sk_buf_putc(&b, 0);
    cr_assert(!b.failed);
    free(mg);
    free(key);
    return b.data;
}

Test(merge, generated_merge_lists, .timeout = 300) {
    for (int ranked = 1; ranked >= 0; ranked--) {
        for (int list = 0; list < 4; list++) {
            char *j = ab_json(ranked, list & 1);
            tok_case c;
            load_case(&c, ranked ? "a, b: merges ranked by length" : "a, b: merges at random", j, strlen(j));
            c.alpha[c.n_alpha++] = 0; /* a */
            c.alpha[c.n_alpha++] = 1; /* b */
            int32_t *w = malloc(6000 * sizeof *w);
            cr_assert(w);
            for (int iter = 0; iter < 120; iter++) {
                int shape = iter % 5;
                size_t n = iter < 116 ? rnd() % 700 : 4100 + rnd() % 1900;
                make_word(&c, shape, w, n);
                check_word(&c, w, n, k_shape[shape]);
            }
            free(w);
            free_case(&c);
            free(j);
        }
    }
}

/* Long single words through sk_tokenizer_encode (the buckets, past BPE_BUCKET_MIN symbols):
 * letters only, so that the byte-level pre-tokenizer leaves one word; the initial symbols
 * are the bytes' (or, SentencePiece-style, the characters', a space being U+2581). */
Test(encode, long_words_match_the_rescan, .timeout = 600) {
    static const char *const fx[] = {"tokenizer/vocab1024", "tokenizer/vocab4096", "tokenizer/vocab1024_im",
                                     "prompt", "gemma_tok/gemma3000"};
    for (size_t f = 0; f < sizeof fx / sizeof fx[0]; f++) {
        tok_case c;
        load_fixture(&c, fx[f]);
        const int spm = c.t->pretok != SK_PRETOK_BYTELEVEL;
        const int32_t space = spm ? sk_strmap_get(&c.t->vocab, "\xe2\x96\x81", 3) : -1;
        size_t cap = 9000;
        char *text = malloc(cap);
        int32_t *w = malloc(cap * sizeof *w);
        cr_assert(text && w);
        for (int iter = 0; iter < 8; iter++) {
            size_t n = 4200 + rnd() % 1000;
            const char *alpha = iter % 4 == 0 ? "a" : iter % 4 == 1 ? "up" : iter % 4 == 2 ? "etaoinshr" : "qz";
            size_t al = strlen(alpha);
            for (size_t i = 0; i < n; i++) text[i] = iter % 4 == 1 ? alpha[i % 2] : alpha[rnd() % al];
            if (spm && iter >= 4) /* spaces too: the Gemma pipeline keeps the text one word */
                for (size_t i = 0; i < n; i += 1 + rnd() % 9) text[i] = ' ';
            size_t ns = 0;
            for (size_t i = 0; i < n; i++) {
                int32_t id = !spm ? c.t->byte_id[(unsigned char)text[i]]
                             : text[i] == ' ' ? space : sk_strmap_get(&c.t->vocab, text + i, 1);
                if (id < 0 && spm) id = c.t->fallback_id[(unsigned char)text[i]]; /* byte fallback: <0xNN> */
                cr_assert(id >= 0, "%s: '%c' is not in the vocabulary", fx[f], text[i]);
                w[ns++] = id;
            }
            size_t nr = ref_merge(&c.ref, w, ns);
            sk_ids out = {0};
            sk_err e;
            sk_err_clear(&e);
            cr_assert_eq(sk_tokenizer_encode(c.t, text, n, &out, &e), SKYCMD_OK, "%s", e.msg);
            cr_assert_eq(out.n, nr, "%s, word %d (%zu bytes): %zu tokens, the reference %zu", fx[f], iter, n, out.n, nr);
            for (size_t i = 0; i < nr; i++)
                cr_assert_eq(out.ids[i], w[i], "%s, word %d: token %zu", fx[f], iter, i);
            sk_ids_free(&out);
        }
        free(text);
        free(w);
        free_case(&c);
    }
}

/* Long words, too long for the rescan: the two queues against each other, through every
 * shape, up to 300k symbols. */
Test(merge, queues_agree_on_very_long_words, .timeout = 600) {
    for (size_t f = 0; f < N_FIXTURES; f++) {
        tok_case c;
        load_fixture(&c, k_fixtures[f]);
        size_t cap = 300000;
        int32_t *w = malloc(cap * sizeof *w), *a = malloc(cap * sizeof *a), *b = malloc(cap * sizeof *b);
        cr_assert(w && a && b);
        for (int shape = 0; shape < 7; shape++) {
            size_t n = 60000 + rnd() % (cap - 60000);
            make_word(&c, shape, w, n);
            memcpy(a, w, n * sizeof *w);
            memcpy(b, w, n * sizeof *w);
            size_t na = n, nb = n;
            cr_assert_eq(sk_tok_bpe_merge(c.t, a, &na, SK_BPE_HEAP), SKYCMD_OK);
            cr_assert_eq(sk_tok_bpe_merge(c.t, b, &nb, SK_BPE_BUCKETS), SKYCMD_OK);
            cr_assert_eq(na, nb, "%s, %s (%zu symbols): heap %zu tokens, buckets %zu", c.name, k_shape[shape], n, na, nb);
            cr_assert_eq(memcmp(a, b, na * sizeof *a), 0, "%s, %s (%zu symbols): the queues differ", c.name,
                         k_shape[shape], n);
        }
        free(w);
        free(a);
        free(b);
        free_case(&c);
    }
}
