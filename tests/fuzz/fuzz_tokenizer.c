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
 * Seeds: corpus/tokenizer/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

static skycmd_tokenizer *g_json, *g_gguf;
static uint8_t *g_mem;
static sk_gguf *g_file;

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

static const char *const k_probe[] = {"hello world", "a  [MASK] b", "caf\xC3\xA9 e\xCC\x81", "  \t\n x", "'s 123 !!"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    if (size == 0) return 0;
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    switch (data[0] % 4) {
    case 0:
        same_ids(g_json, g_gguf, s, n);
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
    default: {
        size_t k = n / 4;
        int32_t *ids = malloc((k ? k : 1) * sizeof *ids);
        if (!ids) return 0;
        if (k) memcpy(ids, s, k * sizeof *ids);
        sk_buf d;
        sk_buf_init(&d);
        sk_tokenizer_decode(g_json, ids, k, &d, NULL);
        sk_buf_free(&d);
        free(ids);
        break;
    }
    }
    return 0;
}
