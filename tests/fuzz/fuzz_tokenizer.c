/*
 * fuzz_tokenizer.c - libFuzzer target for the tokenizer: encoding of arbitrary bytes,
 * hostile tokenizer.json files and hostile GGUF tokenizer metadata, and decoding of
 * arbitrary ids.
 *
 * The first byte picks the mode:
 *   0: encode the rest with the random 1024-token vocabulary loaded from JSON and from GGUF;
 *      both must succeed or both refuse (invalid UTF-8), and give the same ids; decoding
 *      the ids must succeed. A disagreement traps.
 *   1: load the rest as tokenizer.json; if accepted, encode a few fixed strings, write it
 *      to GGUF, reload and compare ids (trap on disagreement).
 *   2: load the rest as a GGUF file's tokenizer; if accepted, encode fixed strings.
 *   3: decode the rest as little-endian int32 ids.
 *   4: encode the rest with a small Gemma-style vocabulary (Replace normalizer, Split
 *      pre-tokenizer, BPE byte_fallback, Replace/ByteFallback/Fuse decoder) and with a
 *      Metaspace one, each from JSON and from GGUF: same rules as mode 0.
 *   5: decode the rest as int32 ids with the Gemma-style vocabulary (byte-fallback decoder).
 * Modes 0 and 1 also compare the prompt's bounded state ids (cut at exact and run cuts)
 * with the whole text's: mode 0 on the input, mode 1 on long runs of each class under the
 * hostile vocabulary (same_bounded).
 * Modes 0, 1 and 4 also run the BPE merge loop's two queues (the heap of short words, the
 * rank buckets of long ones: sk_tok_bpe_merge) on the same symbols, the merges' operands
 * picked by the input's bytes, and trap when their tokens differ: for a hostile merge list
 * (mode 1: duplicates, merges ranked before their operands) too.
 * Seeds: corpus/tokenizer/.
 *
 * Speed: the fixed tokenizers are built once (LLVMFuzzerInitialize). Modes 0 and 4 encode
 * only the first ENCODE_MAX bytes: each input is encoded four to eight times (two or four
 * tokenizers, then decoded), and once the corpus had grown to -max_len's 16 KB (the largest
 * seed) every encode cost milliseconds under ASan + UBSan + comparison tracing, ~70 exec/s.
 * 2 KiB still takes words past the BPE's 256-symbol stack buffers onto the heap path.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "prompt/prompt.h"
#include "tokenizer/tokenizer.h"
#include "../tok_encode.h"

static skycmd_tokenizer *g_json, *g_gguf;
static uint8_t *g_mem;
static sk_gguf *g_file;
static skycmd_tokenizer *g_spm[2], *g_spm_gguf[2];
static uint8_t *g_spm_mem[2];
static sk_gguf *g_spm_file[2];

/* A Gemma-shaped tokenizer.json: <pad> <eos> <bos> <unk> <mask>, a whitespace-run piece, the
 * 256 byte tokens, a few pieces and their merges. metaspace: the Metaspace pipeline. */
static char *spm_json(int metaspace) {
    sk_buf b;
    sk_buf_init(&b);
    static const char *const pieces[] = {"\u2581", "a", "b", "c", "\u2581a", "ab", "\u2581ab", "\u4e2d", "\u2581\u2581"};
    sk_buf_puts(&b, "{\"version\":\"1.0\",\"added_tokens\":[");
    static const char *const specials[] = {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>"};
    for (int i = 0; i < 5; i++)
        sk_buf_printf(&b, "%s{\"id\":%d,\"content\":\"%s\",\"single_word\":false,\"lstrip\":%s,\"rstrip\":false,"
                      "\"normalized\":false,\"special\":true}", i ? "," : "", i, specials[i],
                      metaspace && i == 4 ? "true" : "false");
    sk_buf_puts(&b, ",{\"id\":5,\"content\":\"\u2581\u2581\u2581\",\"single_word\":false,\"lstrip\":false,"
                    "\"rstrip\":false,\"normalized\":false,\"special\":false}],");
    if (metaspace)
        sk_buf_puts(&b, "\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"\u2581\","
                        "\"prepend_scheme\":\"first\",\"split\":true},\"decoder\":{\"type\":\"Sequence\",\"decoders\":["
                        "{\"type\":\"Metaspace\",\"replacement\":\"\u2581\",\"prepend_scheme\":\"first\",\"split\":true},"
                        "{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"}]},");
    else
        sk_buf_puts(&b, "\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\u2581\"},"
                        "\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":"
                        "\"MergedWithPrevious\",\"invert\":false},\"decoder\":{\"type\":\"Sequence\",\"decoders\":["
                        "{\"type\":\"Replace\",\"pattern\":{\"String\":\"\u2581\"},\"content\":\" \"},"
                        "{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"}]},");
    sk_buf_puts(&b, "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":\"<unk>\",\"fuse_unk\":true,"
                    "\"byte_fallback\":true,\"ignore_merges\":false,\"vocab\":{");
    for (int i = 0; i < 5; i++) sk_buf_printf(&b, "\"%s\":%d,", specials[i], i);
    sk_buf_puts(&b, "\"\u2581\u2581\u2581\":5");
    int id = 6;
    for (int v = 0; v < 256; v++) sk_buf_printf(&b, ",\"<0x%02X>\":%d", v, id++);
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) sk_buf_printf(&b, ",\"%s\":%d", pieces[i], id++);
    sk_buf_puts(&b, "},\"merges\":[[\"\u2581\",\"a\"],[\"a\",\"b\"],[\"\u2581a\",\"b\"],[\"\u2581\",\"\u2581\"],"
                    "[\"\u2581\u2581\",\"\u2581\"]]}}");
    return sk_buf_detach(&b);
}

static skycmd_tokenizer *roundtrip(const skycmd_tokenizer *t, uint8_t **mem, sk_gguf **g) {
    sk_gguf_writer *w = sk_gguf_writer_new(0);
    size_t sz = 0;
    skycmd_tokenizer *t2 = NULL;
    *mem = NULL;
    *g = NULL;
    if (w && sk_tokenizer_write_gguf(t, w, NULL, NULL) == SKYCMD_OK &&
        sk_gguf_writer_write_mem(w, mem, &sz, NULL) == SKYCMD_OK &&
        sk_gguf_open_buffer(*mem, sz, g, NULL) == SKYCMD_OK)
        sk_tokenizer_from_gguf(*g, &t2, NULL);
    sk_gguf_writer_free(w);
    return t2;
}

static void setup(void) {
    if (g_json) return;
    char *j = NULL, *c = NULL;
    if (sk_tokenizer_random_json(1024, 1, &j, &c, NULL) != SKYCMD_OK) __builtin_trap();
    if (sk_tokenizer_from_json(j, strlen(j), c, strlen(c), &g_json, NULL) != SKYCMD_OK) __builtin_trap();
    free(j);
    free(c);
    g_gguf = roundtrip(g_json, &g_mem, &g_file);
    if (!g_gguf) __builtin_trap();
    for (int k = 0; k < 2; k++) {
        char *sj = spm_json(k);
        if (!sj || sk_tokenizer_from_json(sj, strlen(sj), NULL, 0, &g_spm[k], NULL) != SKYCMD_OK) __builtin_trap();
        free(sj);
        if (!(g_spm_gguf[k] = roundtrip(g_spm[k], &g_spm_mem[k], &g_spm_file[k]))) __builtin_trap();
    }
}

static void same_ids(const skycmd_tokenizer *a, const skycmd_tokenizer *b, const char *s, size_t n) {
    sk_ids x = {0}, y = {0};
    int r1 = sk_tokenizer_encode(a, s, n, &x, NULL);
    int r2 = sk_tokenizer_encode(b, s, n, &y, NULL);
    if (r1 != r2) __builtin_trap();
    if (r1 == SKYCMD_OK) {
        if (x.n != y.n || (x.n && memcmp(x.ids, y.ids, x.n * sizeof *x.ids) != 0)) __builtin_trap();
        sk_buf d;
        sk_buf_init(&d);
        if (sk_tokenizer_decode(a, x.ids, x.n, &d, NULL) != SKYCMD_OK) __builtin_trap();
        sk_buf_free(&d);
    }
    sk_ids_free(&x);
    sk_ids_free(&y);
}

#define ENCODE_MAX 2048

/* The merges' operands (up to 256) as symbols picked by p's bytes, merged by both queues. */
static void same_merges(const skycmd_tokenizer *t, const uint8_t *p, size_t n) {
    int32_t ops[256];
    size_t k = 0;
    for (uint32_t i = 0; t->merges.keys && i <= t->merges.mask && k + 2 <= 256; i++)
        if (t->merges.keys[i]) {
            uint64_t key = t->merges.keys[i] - 1;
            ops[k++] = (int32_t)(key >> 32);
            ops[k++] = (int32_t)(uint32_t)key;
        }
    if (!k || !n) return;
    int32_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    if (a && b) {
        for (size_t i = 0; i < n; i++) a[i] = b[i] = ops[p[i] % k];
        size_t na = n, nb = n;
        int ra = sk_tok_bpe_merge(t, a, &na, SK_BPE_HEAP), rb = sk_tok_bpe_merge(t, b, &nb, SK_BPE_BUCKETS);
        if (ra == SKYCMD_OK && rb == SKYCMD_OK && (na != nb || memcmp(a, b, na * sizeof *a) != 0)) __builtin_trap();
    }
    free(a);
    free(b);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    setup();
    return 0;
}

/* The prompt's bounded state ids (src/prompt/prompt.c: exact cuts and run cuts, whose
 * margins rest on the argument in tok_finish.c's run_margins) against the whole text's: every
 * id returned is the whole encoding's first (or, keeping the end, last), and at least need
 * of them. A text the whole encoding refuses is not compared (a piece may hold none of
 * what it refused). */
static void same_bounded(const skycmd_tokenizer *t, const char *s, size_t n, size_t need) {
    tu_tok_ctx bc = {t, {0}};
    sk_prompt_tok pt = {tu_tok_encode, &bc, 0, 0, 0, sk_tokenizer_special_text(t, SKYCMD_SPECIAL_MASK)};
    sk_cut_rules rules;
    sk_tokenizer_cut_rules(t, &rules);
    sk_prompt_ws ws = {0};
    sk_i32v whole = {0}, part = {0};
    if (sk_prompt_state_ids(&pt, s, n, &ws, &whole, NULL) == SKYCMD_OK) {
        for (int keep_end = 0; keep_end < 2; keep_end++) {
            if (sk_prompt_state_ids_bounded(&pt, &rules, s, n, keep_end, need, &ws, &part, NULL) != SKYCMD_OK)
                __builtin_trap();
            if (part.n > whole.n || part.n < (need < whole.n ? need : whole.n)) __builtin_trap();
            if (part.n && memcmp(part.v, whole.v + (keep_end ? whole.n - part.n : 0), part.n * sizeof *part.v))
                __builtin_trap();
        }
    }
    sk_i32v_free(&whole);
    sk_i32v_free(&part);
    sk_prompt_ws_free(&ws);
    sk_ids_free(&bc.ids);
}

/* Long texts for the bounded ids of a hostile vocabulary: runs of each class, with and
 * without repeats (runs of one token are where a suffix's bound gives up). */
static const char *long_text(int i) {
    static char buf[4][1600];
    static const char *alpha[4] = {"0123456789", "abcdefghijklmnopqrstuvwxyz", "!#$%&()*+,-./:;<=>?@[]^_`{|}~", "00001"};
    char *b = buf[i];
    if (!b[0]) {
        uint32_t x = 2463534242u + (uint32_t)i;
        size_t na = strlen(alpha[i]);
        for (size_t k = 0; k + 1 < sizeof buf[i]; k++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            b[k] = alpha[i][x % na];
        }
        b[sizeof buf[i] - 1] = 0;
    }
    return b;
}

static const char *const k_probe[] = {"hello world", "a  [MASK] b", "caf\xC3\xA9 e\xCC\x81", "  \t\n x", "'s 123 !!"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    if (size == 0) return 0;
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    switch (data[0] % 6) {
    case 0:
        same_ids(g_json, g_gguf, s, n < ENCODE_MAX ? n : ENCODE_MAX);
        same_merges(g_json, data + 1, n < ENCODE_MAX ? n : ENCODE_MAX);
        same_bounded(g_json, s, n < ENCODE_MAX ? n : ENCODE_MAX, n ? 1 + (size_t)data[1] % 96 : 8);
        break;
    case 1: {
        skycmd_tokenizer *t = NULL;
        if (sk_tokenizer_from_json(s, n, NULL, 0, &t, NULL) == SKYCMD_OK) {
            uint8_t *mem;
            sk_gguf *g;
            skycmd_tokenizer *t2 = roundtrip(t, &mem, &g);
            for (size_t i = 0; i < sizeof k_probe / sizeof k_probe[0]; i++) {
                sk_ids x = {0};
                sk_tokenizer_encode(t, k_probe[i], strlen(k_probe[i]), &x, NULL);
                sk_ids_free(&x);
                if (t2) same_ids(t, t2, k_probe[i], strlen(k_probe[i]));
            }
            same_merges(t, data + 1, n < ENCODE_MAX ? n : ENCODE_MAX);
            for (int i = 0; i < 4; i++) same_bounded(t, long_text(i), strlen(long_text(i)), 16);
            sk_tokenizer_free(t2);
            sk_gguf_close(g);
            free(mem);
            sk_tokenizer_free(t);
        }
        break;
    }
    case 2: {
        uint8_t *copy = malloc(n ? n : 1);
        if (!copy) return 0;
        if (n) memcpy(copy, s, n);
        sk_gguf *g = NULL;
        if (sk_gguf_open_buffer(copy, n, &g, NULL) == SKYCMD_OK) {
            skycmd_tokenizer *t = NULL;
            if (sk_tokenizer_from_gguf(g, &t, NULL) == SKYCMD_OK) {
                for (size_t i = 0; i < sizeof k_probe / sizeof k_probe[0]; i++) {
                    sk_ids x = {0};
                    sk_tokenizer_encode(t, k_probe[i], strlen(k_probe[i]), &x, NULL);
                    sk_ids_free(&x);
                }
                sk_tokenizer_free(t);
            }
            sk_gguf_close(g);
        }
        free(copy);
        break;
    }
    case 4:
        if (n > ENCODE_MAX) n = ENCODE_MAX;
        same_ids(g_spm[0], g_spm_gguf[0], s, n);
        same_ids(g_spm[1], g_spm_gguf[1], s, n);
        same_merges(g_spm[0], data + 1, n);
        break;
    default: {
        size_t k = n / 4;
        int32_t *ids = malloc((k ? k : 1) * sizeof *ids);
        if (!ids) return 0;
        if (k) memcpy(ids, s, k * sizeof *ids);
        sk_buf d;
        sk_buf_init(&d);
        sk_tokenizer_decode(data[0] % 6 == 5 ? g_spm[0] : g_json, ids, k, &d, NULL);
        sk_buf_free(&d);
        free(ids);
        break;
    }
    }
    return 0;
}
