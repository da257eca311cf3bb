/*
 * test_gemma_tok.c - the SentencePiece-style (Gemma / mmBERT) tokenizer pipelines against
 * Hugging Face `tokenizers` 0.23.3.
 *
 * Fixtures (tests/fixtures/gemma_tok/, made by tools/golden/make_gemma_tokenizer.py): a
 * SentencePiece BPE model with byte fallback trained on a 26-script corpus and converted the
 * way transformers 5.23 converts Gemma's tokenizer.model (normalizer Replace " "->"\u2581",
 * Split pre-tokenizer, BPE byte_fallback + fuse_unk, decoder Replace/ByteFallback/Fuse), a
 * Metaspace variant (the pipeline llama.cpp's mmbert pre-tokenizer describes), corpus.txt
 * (>= 3000 hex UTF-8 strings: CJK, Arabic, Devanagari, Thai, Cyrillic, emoji, combining marks,
 * whitespace runs, characters outside the vocabulary, special-token text) and
 * expected_<name>.txt (ids and decode by `tokenizers`, special ids by AutoTokenizer). Every
 * string is checked with the tokenizer loaded from tokenizer.json and with the one rebuilt
 * from a GGUF written by sk_tokenizer_write_gguf.
 */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "skycmd.h"
#include "tokenizer/tokenizer.h"
#include "test_util.h"

#define FIX SKYCMD_FIXTURES "/gemma_tok"

#define TOK_CORPUS_PRE "mmbert"
#define TOK_CORPUS_MIN_STRINGS 3000
#include "tok_corpus.h"

Test(corpus, gemma3000, .timeout = 120) { check_corpus("gemma3000"); }
Test(corpus, gemma3000_metaspace, .timeout = 120) { check_corpus("gemma3000_metaspace"); }

/* ---- the 256k vocabulary: generated here (sk_tokenizer_random_spm_json), ids by tokenizers ----
 * A SentencePiece model of mmBERT's size needs far more text than a test carries, so the 256k
 * tokenizer is the deterministic Gemma-shaped generator's; tools/golden/make_gemma_tokenizer.py
 * --test-bin runs this binary with SKYCMD_WRITE_GEMMA_FIXTURES=<dir> to get the same files,
 * and commits only the ids `tokenizers` gives (expected_spm256k.txt). */
#define SPM256K_VOCAB 256000u
#define SPM256K_SEED 20261201u

static skycmd_tokenizer *spm256k(double *load_ms) {
    char *j = NULL, *c = NULL;
    sk_err e;
    sk_err_clear(&e);
    cr_assert_eq(sk_tokenizer_random_spm_json(SPM256K_VOCAB, SPM256K_SEED, &j, &c, &e), SKYCMD_OK, "%s", e.msg);
    const char *dir = getenv("SKYCMD_WRITE_GEMMA_FIXTURES");
    if (dir && *dir) {
        char p[1024];
        snprintf(p, sizeof p, "%s/tokenizer.json", dir);
        FILE *f = fopen(p, "wb");
        cr_assert(f && fwrite(j, 1, strlen(j), f) == strlen(j) && fclose(f) == 0, "cannot write %s", p);
        snprintf(p, sizeof p, "%s/tokenizer_config.json", dir);
        f = fopen(p, "wb");
        cr_assert(f && fwrite(c, 1, strlen(c), f) == strlen(c) && fclose(f) == 0, "cannot write %s", p);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    skycmd_tokenizer *t = NULL;
    cr_assert_eq(sk_tokenizer_from_json(j, strlen(j), c, strlen(c), &t, &e), SKYCMD_OK, "%s", e.msg);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *load_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    fprintf(stderr, "spm256k: tokenizer.json %zu bytes, %zu ids, parsed in %.0f ms\n", strlen(j),
            sk_tokenizer_vocab_size(t), *load_ms);
    free(j);
    free(c);
    return t;
}

Test(corpus, spm256k, .timeout = 300) {
    double ms;
    skycmd_tokenizer *t = spm256k(&ms);
    cr_assert_eq(sk_tokenizer_vocab_size(t), SPM256K_VOCAB);
    const char *dir = getenv("SKYCMD_WRITE_GEMMA_FIXTURES");
    if (dir && *dir) {
        sk_tokenizer_free(t);
        return;
    }
    /* the GGUF round trip is the small tokenizers' part of the corpus check; here it is the
     * 256k table's parse, encode and decode against tokenizers */
    counts c = corpus_counts("spm256k", FIX "/expected_spm256k.txt", t, NULL);
    cr_expect_geq(c.strings, 3000);
    cr_expect_eq(c.ids_ok_json, c.strings, "%zu of %zu strings differ", c.strings - c.ids_ok_json, c.strings);
    cr_expect_eq(c.decode_ok, c.strings, "%zu of %zu decodes differ", c.strings - c.decode_ok, c.strings);
    sk_tokenizer_free(t);
}

/* ---- behaviour the corpus cannot show ---- */

static int load_str(const char *json, skycmd_tokenizer **t, sk_err *e) {
    return sk_tokenizer_from_json(json, strlen(json), NULL, 0, t, e);
}

Test(pipeline, refuses_what_it_does_not_implement) {
    static const char *const bad[] = {
        /* a Regex Replace normalizer */
        "{\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"Regex\":\" +\"},\"content\":\"_\"},\"pre_tokenizer\":null,"
        "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}",
        /* an inverted Split */
        "{\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"Removed\",\"invert\":true},"
        "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}",
        /* a decoder chain step we do not know */
        "{\"pre_tokenizer\":null,\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"CTC\"}]},"
        "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}",
        /* a Unigram model */
        "{\"pre_tokenizer\":null,\"model\":{\"type\":\"Unigram\",\"vocab\":[[\"a\",0.0]]}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        skycmd_tokenizer *t = NULL;
        sk_err e;
        sk_err_clear(&e);
        cr_expect_eq(load_str(bad[i], &t, &e), SKYCMD_E_UNSUPPORTED, "case %zu: %s", i, e.msg);
        cr_expect_null(t);
    }
    /* a Metaspace replacement of two characters is malformed */
    skycmd_tokenizer *t = NULL;
    sk_err e;
    sk_err_clear(&e);
    cr_expect_eq(load_str("{\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":\"ab\"},"
                          "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}", &t, &e),
                 SKYCMD_E_FORMAT, "%s", e.msg);
}

Test(pipeline, gemma_space_cuts_only_where_no_entry_joins_a_space) {
    /* the Gemma pipeline BPEs a whole text as one word: a cut before a space splits it only
     * because no entry holds U+2581 after another character (test_state_bound checks the
     * splits); one such entry, and the prompt code must not cut */
    skycmd_tokenizer *t = load_json_dir("gemma3000");
    cr_expect_eq(sk_tokenizer_space_cut_safe(t), SK_CUT_SPACE);
    skycmd_tokenizer *m = load_json_dir("gemma3000_metaspace");
    cr_expect_eq(sk_tokenizer_space_cut_safe(m), SK_CUT_SPACE);
    sk_tokenizer_free(m);
    size_t jl = 0;
    char *j = tu_slurp(SKYCMD_FIXTURES "/gemma_tok/gemma3000/tokenizer.json", &jl);
    cr_assert(j);
    const char *v = strstr(j, "\"vocab\": {");
    if (!v) v = strstr(j, "\"vocab\":{");
    cr_assert(v, "no vocab in the fixture");
    const char *brace = strchr(v, '{');
    sk_buf b;
    sk_buf_init(&b);
    sk_buf_append(&b, j, (size_t)(brace + 1 - j));
    sk_buf_puts(&b, "\"x\xe2\x96\x81\": 3000, ");
    sk_buf_puts(&b, brace + 1);
    sk_err e;
    sk_err_clear(&e);
    skycmd_tokenizer *joined = NULL;
    cr_assert_eq(sk_tokenizer_from_json(b.data, b.len, NULL, 0, &joined, &e), SKYCMD_OK, "%s", e.msg);
    cr_expect_eq(sk_tokenizer_space_cut_safe(joined), 0, "an entry \"x\u2581\" joins a space to what is before it");
    sk_tokenizer_free(joined);
    sk_buf_free(&b);
    free(j);
    sk_ids a = {0};
    sk_err_clear(&e);
    cr_expect_eq(sk_tokenizer_encode(t, "a\xff", 2, &a, &e), SKYCMD_E_INVALID_ARGUMENT);
    int32_t bad_id = 3000;
    sk_buf d;
    sk_buf_init(&d);
    cr_expect_eq(sk_tokenizer_decode(t, &bad_id, 1, &d, &e), SKYCMD_E_INVALID_ARGUMENT);
    sk_buf_free(&d);
    sk_ids_free(&a);
    sk_tokenizer_free(t);
}

/* Pair cuts under ignore_merges: the word looked up whole must stay longer than any entry.
 * gemma3000 BPEs the whole text, whose pieces a cut leaves at SK_CUT_MIN_PIECE bytes or
 * more: kept. Its Metaspace twin splits at every space, and a pair cut leaves a short word:
 * none. */
Test(pipeline, pair_cuts_under_ignore_merges) {
    static const char *const dirs[] = {"gemma3000", "gemma3000_metaspace"};
    for (int d = 0; d < 2; d++) {
        for (int im = 0; im < 2; im++) {
            char p[512];
            snprintf(p, sizeof p, SKYCMD_FIXTURES "/gemma_tok/%s/tokenizer.json", dirs[d]);
            size_t l = 0;
            char *j = tu_read_file(p, &l);
            cr_assert(j);
            char *at = strstr(j, "\"ignore_merges\": false");
            cr_assert(at, "%s: no ignore_merges key", dirs[d]);
            if (im) memcpy(at, "\"ignore_merges\":  true", strlen("\"ignore_merges\": false"));
            skycmd_tokenizer *t = NULL;
            sk_err e;
            sk_err_clear(&e);
            cr_assert_eq(sk_tokenizer_from_json(j, l, NULL, 0, &t, &e), SKYCMD_OK, "%s", e.msg);
            sk_cut_rules r;
            sk_tokenizer_cut_rules(t, &r);
            int want = !im || d == 0;
            cr_expect_eq(r.pair_join != NULL, want, "%s, ignore_merges %d: pair cuts %s", dirs[d], im,
                         r.pair_join ? "on" : "off");
            sk_tokenizer_free(t);
            free(j);
        }
    }
}
