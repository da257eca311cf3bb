/*
 * tok_random_spm.c - a deterministic Gemma-style (mmBERT) vocabulary of any size up to 2^20,
 * written as a real Hugging Face tokenizer.json + tokenizer_config.json with the pipeline
 * transformers 5.23 gives Gemma's tokenizer (normalizer Replace " " -> U+2581, pre-tokenizer
 * Split " " merged_with_previous, BPE byte_fallback + fuse_unk with unk <unk>, decoder
 * Replace/ByteFallback/Fuse). For random mmBERT-shaped models and for the 256k-vocabulary
 * tokenizer test (a SentencePiece model of that size needs a corpus far larger than a test
 * can carry; tools/golden/make_gemma_tokenizer.py trains the small real one).
 *
 * Layout: 0 <pad>, 1 <eos>, 2 <bos>, 3 <unk>, 4 <mask> (special added tokens), 5..11 runs of
 * 2..8 U+2581 and 12 "\n\n" (non-special, not normalized added tokens that are also in the
 * vocabulary, like Gemma's user-defined pieces), then the 256 <0xNN> byte tokens, then single
 * characters (U+2581, printable ASCII and letters of 20+ scripts), then merged tokens: each
 * joins two existing tokens into a new one (at most 24 bytes), with its merge listed in
 * creation order, until vocab_size. The same (vocab_size, seed) always gives the same bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"

static uint64_t next_u64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* code point ranges of the single-character tokens: scripts of the multilingual corpus */
static const uint32_t k_ranges[][2] = {
    {0x21, 0x7E},     {0xC0, 0x17F},   {0x391, 0x3C9},   {0x410, 0x44F},   {0x5D0, 0x5EA},
    {0x621, 0x64A},   {0x905, 0x939},  {0x93E, 0x94D},   {0x985, 0x9B9},   {0xB85, 0xBB9},
    {0xC05, 0xC39},   {0xE01, 0xE3A},  {0xE40, 0xE4E},   {0x10D0, 0x10F0}, {0x531, 0x556},
    {0x1200, 0x1248}, {0x1780, 0x17B3}, {0x3041, 0x3096}, {0x30A1, 0x30FA}, {0x4E00, 0x4FFF},
    {0xAC00, 0xAD00}, {0x1000, 0x102A}, {0xE81, 0xEAE},   {0xA85, 0xAB9},   {0x2000, 0x2027},
};

static size_t put_utf8(char *o, uint32_t cp) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* JSON string body of s (valid UTF-8; no quotes around) */
static void json_escape(sk_buf *b, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            sk_buf_putc(b, '\\');
            sk_buf_putc(b, (char)c);
        } else if (c < 0x20) sk_buf_printf(b, "\\u%04x", c);
        else sk_buf_putc(b, (char)c);
    }
}

typedef struct tokset {
    char **s;
    uint32_t *len;
    size_t n, cap;
    /* open addressing: index+1 */
    uint32_t *slots;
    size_t mask;
} tokset;

static uint64_t h64(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h ^ (h >> 31);
}

static int ts_has(const tokset *t, const char *s, size_t n) {
    for (size_t i = h64(s, n) & t->mask;; i = (i + 1) & t->mask) {
        uint32_t k = t->slots[i];
        if (!k) return 0;
        if (t->len[k - 1] == n && memcmp(t->s[k - 1], s, n) == 0) return 1;
    }
}

static int ts_add(tokset *t, const char *s, size_t n) {
    if (t->n >= t->cap || ts_has(t, s, n)) return -1;
    char *c = malloc(n + 1);
    if (!c) return -1;
    memcpy(c, s, n);
    c[n] = 0;
    t->s[t->n] = c;
    t->len[t->n] = (uint32_t)n;
    size_t i = h64(s, n) & t->mask;
    while (t->slots[i]) i = (i + 1) & t->mask;
    t->slots[i] = (uint32_t)++t->n;
    return 0;
}

int sk_tokenizer_random_spm_json(uint32_t vocab_size, uint64_t seed, char **tokenizer_json,
                                 char **tokenizer_config_json, sk_err *e) {
    if (!tokenizer_json || !tokenizer_config_json)
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "random tokenizer: NULL out");
    *tokenizer_json = *tokenizer_config_json = NULL;
    if (vocab_size < 2048 || vocab_size > (1u << 20))
        return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "random tokenizer: vocab_size %u not in [2048, 1048576]",
                       vocab_size);
    tokset T = {0};
    T.cap = vocab_size;
    size_t sz = 1024;
    while (sz < (size_t)vocab_size * 2) sz *= 2;
    T.mask = sz - 1;
    T.s = calloc(T.cap, sizeof *T.s);
    T.len = calloc(T.cap, sizeof *T.len);
    T.slots = calloc(sz, sizeof *T.slots);
    uint32_t *ma = malloc(sizeof *ma * vocab_size), *mb = malloc(sizeof *mb * vocab_size);
    size_t n_merges = 0;
    int rc = SKYCMD_OK;
    sk_buf b, c;
    sk_buf_init(&b);
    sk_buf_init(&c);
    if (!T.s || !T.len || !T.slots || !ma || !mb) {
        rc = sk_fail(e, SKYCMD_E_NOMEM, "random tokenizer: out of memory");
        goto done;
    }
    static const char *const specials[5] = {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>"};
    for (int i = 0; i < 5; i++) ts_add(&T, specials[i], strlen(specials[i]));
    const char *meta = "\xE2\x96\x81";
    char buf[64];
    for (int r = 2; r <= 8; r++) {
        for (int k = 0; k < r; k++) memcpy(buf + 3 * k, meta, 3);
        ts_add(&T, buf, (size_t)(3 * r));
    }
    ts_add(&T, "\n\n", 2);
    const size_t n_user_end = T.n;
    for (int v = 0; v < 256; v++) {
        snprintf(buf, sizeof buf, "<0x%02X>", v);
        ts_add(&T, buf, 6);
    }
    const size_t first_char = T.n;
    ts_add(&T, meta, 3);
    for (size_t r = 0; r < sizeof k_ranges / sizeof k_ranges[0] && T.n < vocab_size / 2; r++)
        for (uint32_t cp = k_ranges[r][0]; cp <= k_ranges[r][1] && T.n < vocab_size / 2; cp++)
            ts_add(&T, buf, put_utf8(buf, cp));
    const size_t n_chars = T.n - first_char;
    /* merges for the runs of U+2581 (the user tokens are also reachable by BPE, as Gemma's) */
    for (int r = 2; r <= 8; r++) {
        ma[n_merges] = (uint32_t)(r == 2 ? first_char : (size_t)r + 2); /* the run of r-1 (id 5 holds 2) */
        mb[n_merges] = (uint32_t)first_char;
        n_merges++;
    }
    uint64_t rng = seed ^ 0x6E6D6D626572ull;
    uint64_t tries = 0;
    while (T.n < vocab_size && tries < (uint64_t)vocab_size * 64) {
        tries++;
        uint64_t x = next_u64(&rng);
        /* left: mostly "▁" or a recent token (words grow), right: mostly a single character */
        size_t a, bb;
        uint32_t pick = (uint32_t)(x & 15);
        if (pick < 3) a = first_char;
        else if (pick < 9 && T.n > first_char + n_chars) {
            size_t lo = first_char + n_chars, span = T.n - lo;
            a = lo + (size_t)((x >> 8) % (span < 4096 ? span : 4096)) + (span > 4096 ? span - 4096 : 0);
        } else a = first_char + (size_t)((x >> 8) % (T.n - first_char));
        if ((x >> 40) % 4 == 0) bb = first_char + (size_t)((x >> 44) % (T.n - first_char));
        else bb = first_char + 1 + (size_t)((x >> 44) % (n_chars - 1));
        size_t la = T.len[a], lb = T.len[bb];
        if (la + lb > 24) continue;
        memcpy(buf, T.s[a], la);
        memcpy(buf + la, T.s[bb], lb);
        if (ts_has(&T, buf, la + lb)) continue;
        if (ts_add(&T, buf, la + lb)) {
            rc = sk_fail(e, SKYCMD_E_NOMEM, "random tokenizer: out of memory");
            goto done;
        }
        ma[n_merges] = (uint32_t)a;
        mb[n_merges] = (uint32_t)bb;
        n_merges++;
    }
    if (T.n < vocab_size) {
        rc = sk_fail(e, SKYCMD_E_INTERNAL, "random tokenizer: only %zu of %u tokens", T.n, vocab_size);
        goto done;
    }
    /* tokenizer.json */
    sk_buf_puts(&b, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [");
    for (size_t i = 0; i < n_user_end; i++) {
        sk_buf_printf(&b, "%s\n    {\"id\": %zu, \"content\": \"", i ? "," : "", i);
        json_escape(&b, T.s[i], T.len[i]);
        sk_buf_printf(&b, "\", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, \"normalized\": false, "
                          "\"special\": %s}", i < 5 ? "true" : "false");
    }
    sk_buf_puts(&b, "\n  ],\n"
                    "  \"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\xE2\x96\x81\"},\n"
                    "  \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": "
                    "\"MergedWithPrevious\", \"invert\": false},\n"
                    "  \"post_processor\": null,\n"
                    "  \"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": "
                    "{\"String\": \"\xE2\x96\x81\"}, \"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}]},\n"
                    "  \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": \"<unk>\", "
                    "\"continuing_subword_prefix\": null, \"end_of_word_suffix\": null, \"fuse_unk\": true, "
                    "\"byte_fallback\": true, \"ignore_merges\": false,\n    \"vocab\": {");
    for (size_t i = 0; i < T.n; i++) {
        sk_buf_puts(&b, i ? ", \"" : "\"");
        json_escape(&b, T.s[i], T.len[i]);
        sk_buf_printf(&b, "\": %zu", i);
    }
    sk_buf_puts(&b, "},\n    \"merges\": [");
    for (size_t i = 0; i < n_merges; i++) {
        sk_buf_puts(&b, i ? ", [\"" : "[\"");
        json_escape(&b, T.s[ma[i]], T.len[ma[i]]);
        sk_buf_puts(&b, "\", \"");
        json_escape(&b, T.s[mb[i]], T.len[mb[i]]);
        sk_buf_puts(&b, "\"]");
    }
    sk_buf_puts(&b, "]\n  }\n}\n");
    sk_buf_puts(&c, "{\n  \"tokenizer_class\": \"PreTrainedTokenizerFast\",\n  \"bos_token\": \"<bos>\",\n"
                    "  \"eos_token\": \"<eos>\",\n  \"unk_token\": \"<unk>\",\n  \"pad_token\": \"<pad>\",\n"
                    "  \"mask_token\": \"<mask>\",\n  \"cls_token\": \"<bos>\",\n  \"sep_token\": \"<eos>\",\n"
                    "  \"clean_up_tokenization_spaces\": false,\n  \"model_max_length\": 8192\n}\n");
    if (b.failed || c.failed) {
        rc = sk_fail(e, SKYCMD_E_NOMEM, "random tokenizer: out of memory");
        goto done;
    }
    *tokenizer_json = sk_buf_detach(&b);
    *tokenizer_config_json = sk_buf_detach(&c);
done:
    for (size_t i = 0; i < T.n; i++) free(T.s[i]);
    free(T.s);
    free(T.len);
    free(T.slots);
    free(ma);
    free(mb);
    sk_buf_free(&b);
    sk_buf_free(&c);
    return rc;
}
