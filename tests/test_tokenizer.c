/*
 * test_tokenizer.c - the tokenizer against Hugging Face `tokenizers` 0.23.3.
 *
 * Fixtures (tests/fixtures/tokenizer/, made by tools/golden/make_tokenizer_fixtures.py):
 * tokenizer directories written by our random vocabulary builder (plus two variants that
 * `tokenizers` derived: ignore_merges and extra added tokens), corpus.txt (hex UTF-8 strings)
 * and expected_<name>.txt (ids and decode computed by `tokenizers`, special ids by
 * transformers' AutoTokenizer). Every string is checked with the tokenizer loaded from
 * tokenizer.json and with the one rebuilt from a GGUF written by sk_tokenizer_write_gguf.
 */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "skycmd.h"
#include "tokenizer/tokenizer.h"
#include "util/json_syntax.h"
#include "test_util.h"

#define FIX SKYCMD_FIXTURES "/tokenizer"

#define TOK_CORPUS_PRE "gpt-2"
#define TOK_CORPUS_MIN_STRINGS 2000
#include "tok_corpus.h"

Test(corpus, vocab1024, .timeout = 120) { check_corpus("vocab1024"); }
Test(corpus, vocab4096, .timeout = 120) { check_corpus("vocab4096"); }
Test(corpus, vocab1024_ignore_merges, .timeout = 120) { check_corpus("vocab1024_im"); }
Test(corpus, vocab1024_added_token_rules, .timeout = 120) { check_corpus("vocab1024_edge"); }

/* ---- the random builder ---- */

static const struct {
    const char *dir;
    uint32_t size;
    uint64_t seed;
} k_random[] = {{"vocab1024", 1024, 1}, {"vocab4096", 4096, 7}};

/* With SKYCMD_WRITE_TOKENIZER_FIXTURES=<dir>, (re)write the builder's vocabularies there
 * (used by tools/golden/make_tokenizer_fixtures.py --test-bin). Otherwise check that the
 * committed fixtures are what the builder makes today: the fixtures' expected ids are only
 * evidence about the builder's output if the two are the same bytes. */
Test(fixtures, random_builder_matches_fixtures) {
    const char *wdir = getenv("SKYCMD_WRITE_TOKENIZER_FIXTURES");
    for (size_t i = 0; i < sizeof k_random / sizeof k_random[0]; i++) {
        char *j = NULL, *c = NULL;
        sk_err e;
        sk_err_clear(&e);
        cr_assert_eq(sk_tokenizer_random_json(k_random[i].size, k_random[i].seed, &j, &c, &e), SKYCMD_OK, "%s",
                     e.msg);
        char p1[600], p2[600];
        snprintf(p1, sizeof p1, "%s/%s/tokenizer.json", wdir ? wdir : FIX, k_random[i].dir);
        snprintf(p2, sizeof p2, "%s/%s/tokenizer_config.json", wdir ? wdir : FIX, k_random[i].dir);
        if (wdir) {
            char d[600];
            snprintf(d, sizeof d, "mkdir -p '%s/%s'", wdir, k_random[i].dir);
            cr_assert_eq(system(d), 0);
            cr_assert_eq(tu_write_file(p1, j, strlen(j)), 0, "cannot write %s", p1);
            cr_assert_eq(tu_write_file(p2, c, strlen(c)), 0, "cannot write %s", p2);
        } else {
            char *fj = tu_read_file(p1, NULL), *fc = tu_read_file(p2, NULL);
            cr_assert(fj && fc);
            cr_expect_str_eq(j, fj, "%s/tokenizer.json differs from the builder's output", k_random[i].dir);
            cr_expect_str_eq(c, fc, "%s/tokenizer_config.json differs from the builder's output", k_random[i].dir);
            free(fj);
            free(fc);
        }
        free(j);
        free(c);
    }
}

Test(random, layout_and_sizes) {
    static const uint32_t sizes[] = {512, 1024, 2048, 4096};
    for (size_t k = 0; k < 4; k++) {
        char *j = NULL, *c = NULL;
        sk_err e;
        sk_err_clear(&e);
        cr_assert_eq(sk_tokenizer_random_json(sizes[k], 3, &j, &c, &e), SKYCMD_OK, "%s", e.msg);
        skycmd_tokenizer *t = NULL;
        cr_assert_eq(sk_tokenizer_from_json(j, strlen(j), c, strlen(c), &t, &e), SKYCMD_OK, "%s", e.msg);
        cr_expect_eq(sk_tokenizer_vocab_size(t), sizes[k]);
        static const char *const sp[5] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
        for (int i = 0; i < 5; i++) cr_expect_str_eq(sk_tokenizer_piece(t, i), sp[i]);
        cr_expect_eq(sk_tokenizer_special(t, SKYCMD_SPECIAL_CLS), 2);
        cr_expect_eq(sk_tokenizer_special(t, SKYCMD_SPECIAL_SEP), 3);
        cr_expect_eq(sk_tokenizer_special(t, SKYCMD_SPECIAL_MASK), 4);
        cr_expect_eq(sk_tokenizer_special(t, SKYCMD_SPECIAL_PAD), 0);
        cr_expect_eq(sk_tokenizer_special(t, SKYCMD_SPECIAL_UNK), 1);
        cr_expect_str_eq(sk_tokenizer_special_text(t, SKYCMD_SPECIAL_MASK), "[MASK]");
        /* byte tokens in byte order */
        cr_expect_str_eq(sk_tokenizer_piece(t, 5 + 'a'), "a");
        cr_expect_str_eq(sk_tokenizer_piece(t, 5 + ' '), "\xC4\xA0"); /* Ġ */
        /* the last 7 ids are runs of 8..2 spaces */
        cr_expect_str_eq(sk_tokenizer_piece(t, (int32_t)sizes[k] - 1), "  ");
        cr_expect_str_eq(sk_tokenizer_piece(t, (int32_t)sizes[k] - 7), "        ");
        sk_ids v = {0};
        cr_assert_eq(sk_tokenizer_encode(t, "a  b", 4, &v, &e), SKYCMD_OK);
        cr_expect_eq(v.n, 3);
        cr_expect_eq(v.ids[1], (int32_t)sizes[k] - 1);
        sk_ids_free(&v);
        sk_tokenizer_free(t);
        free(j);
        free(c);
    }
    char *j = NULL, *c = NULL;
    cr_expect_eq(sk_tokenizer_random_json(100, 1, &j, &c, NULL), SKYCMD_E_INVALID_ARGUMENT);
    cr_expect_null(j);
}

/* ---- behaviour that the corpus cannot show ---- */

Test(encode, invalid_utf8_and_append) {
    skycmd_tokenizer *t = load_json_dir("vocab1024");
    sk_ids v = {0};
    sk_err e;
    sk_err_clear(&e);
    cr_assert_eq(sk_tokenizer_encode(t, "hi", 2, &v, &e), SKYCMD_OK);
    size_t n0 = v.n;
    cr_assert_gt(n0, 0);
    static const char *const bad[] = {"\xff", "a\xc3", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80", "ok\x80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_eq(sk_tokenizer_encode(t, bad[i], strlen(bad[i]), &v, &e), SKYCMD_E_INVALID_ARGUMENT);
        cr_expect_eq(v.n, n0, "a failed encode must leave the list as it was");
    }
    /* appends, never resets */
    cr_assert_eq(sk_tokenizer_encode(t, "hi", 2, &v, &e), SKYCMD_OK);
    cr_expect_eq(v.n, 2 * n0);
    cr_expect_eq(v.ids[0], v.ids[n0]);
    /* NUL bytes are characters: "a\0b" has a token for the NUL byte (Ā) */
    v.n = 0;
    cr_assert_eq(sk_tokenizer_encode(t, "a\0b", 3, &v, &e), SKYCMD_OK);
    cr_expect_eq(v.n, 3);
    cr_expect_eq(v.ids[1], 5 + 0);
    /* empty text */
    v.n = 0;
    cr_expect_eq(sk_tokenizer_encode(t, "", 0, &v, &e), SKYCMD_OK);
    cr_expect_eq(sk_tokenizer_encode(t, NULL, 0, &v, &e), SKYCMD_OK);
    cr_expect_eq(v.n, 0);
    sk_ids_free(&v);
    sk_tokenizer_free(t);
}

Test(encode, long_words_stay_fast_and_exact) {
    /* 200k-byte words: the heap-based merge loop must finish quickly and agree with the
     * result of the same word split in two halves at a point no merge can cross (a space). */
    skycmd_tokenizer *t = load_json_dir("vocab4096");
    size_t n = 200000;
    char *s = malloc(n);
    for (size_t i = 0; i < n; i++) s[i] = "abcdefgh"[(i * 7 + i / 3) % 8];
    sk_ids v = {0};
    sk_err e;
    sk_err_clear(&e);
    cr_assert_eq(sk_tokenizer_encode(t, s, n, &v, &e), SKYCMD_OK);
    cr_expect_gt(v.n, 0);
    sk_buf b;
    sk_buf_init(&b);
    cr_assert_eq(sk_tokenizer_decode(t, v.ids, v.n, &b, &e), SKYCMD_OK);
    cr_expect_eq(b.len, n);
    cr_expect(memcmp(b.data, s, n) == 0, "decode(encode(x)) == x for ASCII");
    sk_buf_free(&b);
    sk_ids_free(&v);
    free(s);
    sk_tokenizer_free(t);
}

Test(decode, bad_ids_and_lossy) {
    skycmd_tokenizer *t = load_json_dir("vocab1024");
    sk_buf b;
    sk_buf_init(&b);
    int32_t bad[] = {5 + 'a', 99999};
    cr_expect_eq(sk_tokenizer_decode(t, bad, 2, &b, NULL), SKYCMD_E_INVALID_ARGUMENT);
    int32_t neg[] = {-1};
    cr_expect_eq(sk_tokenizer_decode(t, neg, 1, &b, NULL), SKYCMD_E_INVALID_ARGUMENT);
    /* a lone continuation byte and a truncated 3-byte sequence become U+FFFD each */
    b.len = 0;
    int32_t lossy[] = {5 + 0x80, 5 + 'x', 5 + 0xE4, 5 + 0xB8};
    cr_assert_eq(sk_tokenizer_decode(t, lossy, 4, &b, NULL), SKYCMD_OK);
    cr_expect_eq(b.len, 7);
    cr_expect(memcmp(b.data, "\xEF\xBF\xBDx\xEF\xBF\xBD", 7) == 0);
    sk_buf_free(&b);
    sk_tokenizer_free(t);
}

/* ---- GGUF keys: what llama.cpp reads ---- */

Test(gguf, keys_llama_cpp_reads) {
    skycmd_tokenizer *t = load_json_dir("vocab1024");
    uint8_t *mem = NULL;
    sk_gguf *g = NULL;
    skycmd_tokenizer *t2 = via_gguf(t, &mem, &g);
    sk_str s;
    cr_assert_eq(sk_gguf_get_str(g, "tokenizer.ggml.model", &s), SKYCMD_OK);
    cr_expect(sk_str_eq(s, "gpt2"));
    cr_assert_eq(sk_gguf_get_str(g, "tokenizer.ggml.pre", &s), SKYCMD_OK);
    cr_expect(sk_str_eq(s, "gpt-2"));
    uint32_t u;
    cr_assert_eq(sk_gguf_get_u32(g, "tokenizer.ggml.mask_token_id", &u), SKYCMD_OK);
    cr_expect_eq(u, 4);
    cr_assert_eq(sk_gguf_get_u32(g, "tokenizer.ggml.seperator_token_id", &u), SKYCMD_OK);
    cr_expect_eq(u, 3);
    cr_assert_eq(sk_gguf_get_u32(g, "tokenizer.ggml.bos_token_id", &u), SKYCMD_OK);
    cr_expect_eq(u, 2);
    cr_assert_eq(sk_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &u), SKYCMD_OK);
    cr_expect_eq(u, 3);
    cr_assert_eq(sk_gguf_get_u32(g, "tokenizer.ggml.padding_token_id", &u), SKYCMD_OK);
    cr_expect_eq(u, 0);
    cr_assert_eq(sk_gguf_get_u32(g, "tokenizer.ggml.unknown_token_id", &u), SKYCMD_OK);
    cr_expect_eq(u, 1);
    cr_assert_eq(sk_gguf_get_u32(g, "tokenizer.ggml.token_type_count", &u), SKYCMD_OK);
    cr_expect_eq(u, 3);
    const sk_gguf_value *tt, *tk, *mg;
    cr_assert_eq(sk_gguf_get_arr(g, "tokenizer.ggml.token_type", &tt), SKYCMD_OK);
    cr_assert_eq(sk_gguf_get_arr(g, "tokenizer.ggml.tokens", &tk), SKYCMD_OK);
    cr_assert_eq(sk_gguf_get_arr(g, "tokenizer.ggml.merges", &mg), SKYCMD_OK);
    cr_expect_eq(tt->v.arr.count, 1024);
    cr_expect_eq(tk->v.arr.count, 1024);
    cr_expect_eq(tt->v.arr.elem_type, SK_GGUF_I32);
    /* gguf-py's gpt2 rules: specials CONTROL (3), whitespace runs USER_DEFINED (4), rest 1 */
    sk_gguf_iter it;
    sk_gguf_iter_init(&it, tt);
    sk_gguf_value x;
    for (int i = 0; sk_gguf_iter_next(&it, &x); i++) {
        int want = i < 5 ? 3 : i >= 1024 - 7 ? 4 : 1;
        cr_expect_eq((int)x.v.i, want, "token_type[%d]", i);
    }
    sk_gguf_iter_init(&it, mg);
    cr_assert(sk_gguf_iter_next(&it, &x));
    cr_expect(memchr(x.v.s.ptr, ' ', x.v.s.len) != NULL, "merges are \"a b\" strings");
    int b;
    cr_assert_eq(sk_gguf_get_bool(g, "skycmd.tokenizer.ignore_merges", &b), SKYCMD_OK);
    cr_expect_eq(b, 0);
    cr_assert_eq(sk_gguf_get_str(g, "skycmd.tokenizer.normalizer", &s), SKYCMD_OK);
    cr_expect(sk_str_eq(s, "nfc"));
    const sk_gguf_value *ls;
    cr_assert_eq(sk_gguf_get_arr(g, "skycmd.tokenizer.lstrip_ids", &ls), SKYCMD_OK);
    cr_expect_eq(ls->v.arr.count, 1);
    sk_tokenizer_free(t);
    sk_tokenizer_free(t2);
    sk_gguf_close(g);
    free(mem);
}

/* ---- hostile tokenizer.json ---- */

Test(json, hostile_inputs_fail_cleanly) {
    static const char *const bad[] = {
        "",
        "[]",
        "{\"model\": 3}",
        "{\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}, \"model\": {\"type\": \"BPE\"}}",
        "{\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}, \"model\": {\"type\": \"BPE\", "
        "\"vocab\": {\"a\": -1}, \"merges\": []}}",
        "{\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}, \"model\": {\"type\": \"BPE\", "
        "\"vocab\": {\"a\": 99999999999}, \"merges\": []}}",
        "{\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}, \"model\": {\"type\": \"BPE\", "
        "\"vocab\": {\"a\": 0, \"b\": 0}, \"merges\": []}}",
        "{\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}, \"model\": {\"type\": \"BPE\", "
        "\"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a b\"]}}",
        "{\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}, \"model\": {\"type\": \"BPE\", "
        "\"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [\"ab\"]}}",
        "{\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}, \"model\": {\"type\": \"BPE\", "
        "\"vocab\": {\"a\": 0}, \"merges\": [[\"a\"]]}}",
        "{\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}, \"model\": {\"type\": \"BPE\", "
        "\"vocab\": {\"a\": 0}, \"merges\": []}, \"added_tokens\": [{\"id\": 1}]}",
        "{\"pre_tokenizer\": {\"type\": \"Whitespace\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}}",
        "{\"normalizer\": {\"type\": \"Lowercase\"}, \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": "
        "false}, \"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}}",
        "{\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}, \"model\": {\"type\": \"WordPiece\"}}",
        "{\"version\": \"2.0\"}",
        "{\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}, \"model\": {\"type\": \"BPE\", "
        "\"vocab\": {\"a\": 16000000}, \"merges\": []}}",
        "{\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false}, \"model\": {\"type\": \"BPE\", "
        "\"vocab\": {\"a\": 0}, \"merges\": [], \"dropout\": 0.1}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        skycmd_tokenizer *t = (skycmd_tokenizer *)1;
        sk_err e;
        sk_err_clear(&e);
        int rc = sk_tokenizer_from_json(bad[i], strlen(bad[i]), NULL, 0, &t, &e);
        cr_expect_neq(rc, SKYCMD_OK, "case %zu must fail", i);
        cr_expect_null(t, "case %zu", i);
        cr_expect(e.msg[0] != 0, "case %zu has a message", i);
    }
    /* truncations of a real file never crash */
    size_t len = 0;
    char *j = tu_read_file(FIX "/vocab1024/tokenizer.json", &len);
    cr_assert(j);
    for (size_t cut = 0; cut < len; cut += len / 97 + 1) {
        skycmd_tokenizer *t = NULL;
        int rc = sk_tokenizer_from_json(j, cut, NULL, 0, &t, NULL);
        cr_expect_neq(rc, SKYCMD_OK);
    }
    free(j);
}

/* ---- the public API ---- */

Test(api, public_functions) {
    skycmd_error *err = skycmd_error_new();
    skycmd_tokenizer *t = NULL;
    cr_assert_eq(skycmd_tokenizer_open_json(FIX "/vocab1024/tokenizer.json", &t, err), SKYCMD_OK, "%s",
                 skycmd_error_message(err));
    cr_expect_eq(skycmd_tokenizer_vocab_size(t), 1024);
    cr_expect_eq(skycmd_tokenizer_special_id(t, SKYCMD_SPECIAL_MASK), 4);
    cr_expect_eq(skycmd_tokenizer_special_id(t, 99), -1);
    cr_expect_str_eq(skycmd_tokenizer_token(t, 2), "[CLS]");
    cr_expect_null(skycmd_tokenizer_token(t, 1024));
    cr_expect_null(skycmd_tokenizer_token(t, -1));
    const char *text = "choice question: which gate? [MASK] thrust";
    size_t n = 0;
    cr_assert_eq(skycmd_tokenizer_encode(t, text, strlen(text), NULL, 0, &n), SKYCMD_OK);
    cr_assert_gt(n, 3);
    int32_t small[2];
    size_t n2 = 0;
    cr_assert_eq(skycmd_tokenizer_encode(t, text, strlen(text), small, 2, &n2), SKYCMD_OK);
    cr_expect_eq(n2, n, "the full count is reported even when the buffer is small");
    int32_t *ids = malloc(n * sizeof *ids);
    cr_assert_eq(skycmd_tokenizer_encode(t, text, strlen(text), ids, n, &n2), SKYCMD_OK);
    cr_expect_eq(ids[0], small[0]);
    char *dec = NULL;
    cr_assert_eq(skycmd_tokenizer_decode(t, ids, n, &dec), SKYCMD_OK);
    /* [MASK] is lstrip: the space before it is absorbed */
    cr_expect_str_eq(dec, "choice question: which gate?[MASK] thrust");
    skycmd_string_free(dec);
    free(ids);
    cr_expect_eq(skycmd_tokenizer_encode(t, "\xff", 1, NULL, 0, &n), SKYCMD_E_INVALID_ARGUMENT);
    cr_expect_eq(skycmd_tokenizer_encode(NULL, "a", 1, NULL, 0, &n), SKYCMD_E_MISUSE);
    /* a tokenizer borrowed from a model cannot be freed by the caller */
    t->owned_by_model = 1;
    cr_expect_eq(skycmd_tokenizer_free(t), SKYCMD_E_MISUSE);
    t->owned_by_model = 0;
    cr_expect_eq(skycmd_tokenizer_free(t), SKYCMD_OK);
    cr_expect_eq(skycmd_tokenizer_free(NULL), SKYCMD_OK);
    cr_expect_neq(skycmd_tokenizer_open_json(FIX "/does-not-exist.json", &t, err), SKYCMD_OK);
    cr_expect_null(t);
    cr_expect(strlen(skycmd_error_message(err)) > 0);
    /* the next success clears it */
    cr_assert_eq(skycmd_tokenizer_open_json(FIX "/vocab1024/tokenizer.json", &t, err), SKYCMD_OK);
    cr_expect_eq(skycmd_error_status(err), SKYCMD_OK);
    cr_expect_str_eq(skycmd_error_message(err), "");
    skycmd_tokenizer_free(t);
    skycmd_error_free(err);
}

/* ---- one tokenizer, several threads ---- */

typedef struct thr_arg {
    const skycmd_tokenizer *t;
    const char *const *texts;
    size_t n;
    uint64_t sum;
    int rc;
} thr_arg;

static void *thr_main(void *p) {
    thr_arg *a = p;
    sk_ids v = {0};
    for (int rep = 0; rep < 20; rep++)
        for (size_t i = 0; i < a->n; i++) {
            v.n = 0;
            if (sk_tokenizer_encode(a->t, a->texts[i], strlen(a->texts[i]), &v, NULL)) a->rc = 1;
            for (size_t k = 0; k < v.n; k++) a->sum = a->sum * 31 + (uint64_t)v.ids[k];
        }
    sk_ids_free(&v);
    return NULL;
}

Test(encode, concurrent_threads_agree) {
    skycmd_tokenizer *t = load_json_dir("vocab4096");
    static const char *const texts[] = {
        "The drone hovers above the river.", "caf\xC3\xA9 cafe\xCC\x81 na\xC3\xAFve", "a  [MASK]  b\t\t\n",
        "\xD0\x94\xD1\x80\xD0\xBE\xD0\xBD \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80", "{\"vy\": -2.5, \"gap\": [120, 180]}"};
    thr_arg ref = {t, texts, 5, 0, 0};
    thr_main(&ref);
    pthread_t th[4];
    thr_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = ref;
        args[i].sum = 0;
        cr_assert_eq(pthread_create(&th[i], NULL, thr_main, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_expect_eq(args[i].rc, 0);
        cr_expect_eq(args[i].sum, ref.sum, "thread %d got other ids", i);
    }
    sk_tokenizer_free(t);
}

/* ---- GGUF metadata against what llama.cpp's converter (gguf-py) would write ---- */

static void check_gguf_expectation(const char *name) {
    char path[512];
    snprintf(path, sizeof path, FIX "/expected_gguf_%s.json", name);
    cJSON *x = tu_load_json(path);
    skycmd_tokenizer *t = load_json_dir(name);
    uint8_t *mem = NULL;
    sk_gguf *g = NULL;
    skycmd_tokenizer *t2 = via_gguf(t, &mem, &g);
    static const char *const keys[3] = {"tokens", "token_type", "merges"};
    static const char *const gkeys[3] = {"tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
                                         "tokenizer.ggml.merges"};
    for (int k = 0; k < 3; k++) {
        const cJSON *want = cJSON_GetObjectItemCaseSensitive(x, keys[k]);
        const sk_gguf_value *arr;
        cr_assert_eq(sk_gguf_get_arr(g, gkeys[k], &arr), SKYCMD_OK);
        cr_assert_eq(arr->v.arr.count, (uint64_t)cJSON_GetArraySize(want), "%s: %s count", name, gkeys[k]);
        sk_gguf_iter it;
        sk_gguf_iter_init(&it, arr);
        sk_gguf_value v;
        const cJSON *w = want ? want->child : NULL;
        int bad = 0;
        for (size_t i = 0; w && sk_gguf_iter_next(&it, &v); i++, w = w->next) {
            int ok;
            if (k == 1) ok = v.v.i == (int64_t)w->valuedouble;
            else ok = v.v.s.len == strlen(w->valuestring) && memcmp(v.v.s.ptr, w->valuestring, v.v.s.len) == 0;
            if (!ok && bad++ < 3)
                cr_log_error("%s: %s[%zu] differs from gguf-py's (%s)", name, gkeys[k], i,
                             k == 1 ? "type" : w->valuestring);
        }
        cr_expect_eq(bad, 0, "%s: %d entries of %s differ from gguf-py's", name, bad, gkeys[k]);
    }
    static const char *const sk[6][2] = {{"bos", "tokenizer.ggml.bos_token_id"},
                                         {"eos", "tokenizer.ggml.eos_token_id"},
                                         {"unk", "tokenizer.ggml.unknown_token_id"},
                                         {"sep", "tokenizer.ggml.seperator_token_id"},
                                         {"pad", "tokenizer.ggml.padding_token_id"},
                                         {"mask", "tokenizer.ggml.mask_token_id"}};
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(x, "special_ids");
    for (int i = 0; i < 6; i++) {
        const cJSON *want = cJSON_GetObjectItemCaseSensitive(sp, sk[i][0]);
        uint32_t got;
        int rc = sk_gguf_get_u32(g, sk[i][1], &got);
        if (want) {
            cr_expect_eq(rc, SKYCMD_OK, "%s: %s missing", name, sk[i][1]);
            cr_expect_eq(got, (uint32_t)want->valuedouble, "%s: %s", name, sk[i][1]);
        } else {
            cr_expect_eq(rc, SKYCMD_E_NOT_FOUND, "%s: %s should be absent", name, sk[i][1]);
        }
    }
    cJSON_Delete(x);
    sk_tokenizer_free(t);
    sk_tokenizer_free(t2);
    sk_gguf_close(g);
    free(mem);
}

Test(gguf, same_as_gguf_py_vocab1024) { check_gguf_expectation("vocab1024"); }
Test(gguf, same_as_gguf_py_vocab4096) { check_gguf_expectation("vocab4096"); }
Test(gguf, same_as_gguf_py_vocab1024_im) { check_gguf_expectation("vocab1024_im"); }
Test(gguf, same_as_gguf_py_vocab1024_edge) { check_gguf_expectation("vocab1024_edge"); }

/* ---------------------------------------------------------------- NFC, exhaustively */

/* Our NFC against tokenizers 0.23.3's own (tools/golden/make_nfc_fixtures.py), for every
 * code point U+0000..U+10FFFF but the surrogates, alone and in four contexts that exercise
 * composition with a following mark, with a preceding starter, canonical reordering and
 * Hangul LV+T; the fixture lists the results that are not the input, so every other one
 * must come out unchanged. Then every NFD form tokenizers produces must normalize back as
 * tokenizers normalizes it. U+11935 U+11930 (Dives Akuru, Unicode 13) stays two code
 * points, as tokenizers (Unicode 9.0 tables) leaves it. */
Test(tokenizer, nfc_matches_tokenizers_on_every_code_point) {
    static const char *ctx_names[5] = {"alone", "before_acute", "after_A", "after_a_dotbelow",
                                       "after_hangul_lv"};
    FILE *f = fopen(SKYCMD_FIXTURES "/tokenizer/nfc_tokenizers.txt", "r");
    cr_assert(f, "missing fixture");
    enum { NCP = 0x110000 };
    char **want[5];
    for (int c = 0; c < 5; c++) want[c] = calloc(NCP, sizeof(char *));
    static char line[512];
    size_t n_nfd = 0, bad_nfd = 0;
    uint32_t in[8], out[40];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        line[strcspn(line, "\n")] = 0;
        char *name = strtok(line, " ");
        char *cps = strtok(NULL, " ");
        char *rest = strtok(NULL, "");
        cr_assert(name && cps && rest);
        unsigned long cp = strtoul(cps, NULL, 16);
        if (strcmp(name, "nfd") == 0) {
            char *eq = strstr(rest, " = ");
            cr_assert(eq);
            *eq = 0;
            size_t n = 0, m = 0;
            for (char *t = strtok(rest, " "); t; t = strtok(NULL, " ")) in[n++] = (uint32_t)strtoul(t, NULL, 16);
            uint32_t exp[8];
            for (char *t = strtok(eq + 3, " "); t; t = strtok(NULL, " ")) exp[m++] = (uint32_t)strtoul(t, NULL, 16);
            size_t w = sk_nfc(in, n, out);
            if (w != m || memcmp(out, exp, m * sizeof *exp) != 0) {
                if (bad_nfd++ < 10) cr_log_error("NFC(NFD(U+%04lX)) differs from tokenizers", cp);
            }
            n_nfd++;
            continue;
        }
        int c = 0;
        while (c < 5 && strcmp(ctx_names[c], name) != 0) c++;
        cr_assert_lt(c, 5, "unknown context %s", name);
        want[c][cp] = strdup(rest);
    }
    fclose(f);
    cr_expect_gt(n_nfd, 10000);
    cr_expect_eq(bad_nfd, 0, "%zu NFD forms normalize differently", bad_nfd);
    size_t bad = 0, changed = 0;
    char got[512];
    for (int c = 0; c < 5; c++) {
        for (uint32_t cp = 0; cp < NCP; cp++) {
            if (cp >= 0xD800 && cp <= 0xDFFF) continue;
            size_t n = 0;
            switch (c) {
            case 0: in[n++] = cp; break;
            case 1: in[n++] = cp; in[n++] = 0x0301; break;
            case 2: in[n++] = 0x41; in[n++] = cp; break;
            case 3: in[n++] = 0x61; in[n++] = 0x0316; in[n++] = cp; break;
            default: in[n++] = 0xAC00; in[n++] = cp; break;
            }
            size_t w = sk_nfc(in, n, out);
            int same = w == n && memcmp(in, out, n * sizeof *in) == 0;
            if (!want[c][cp]) {
                if (!same && bad++ < 10)
                    cr_log_error("%s U+%04X: changed, tokenizers leaves it", ctx_names[c], cp);
                continue;
            }
            changed++;
            size_t k = 0;
            got[0] = 0;
            for (size_t i = 0; i < w; i++)
                k += (size_t)snprintf(got + k, sizeof got - k, "%s%X", i ? " " : "", out[i]);
            if (strcmp(got, want[c][cp]) != 0 && bad++ < 10)
                cr_log_error("%s U+%04X: %s, tokenizers %s", ctx_names[c], cp, got, want[c][cp]);
        }
        for (uint32_t cp = 0; cp < NCP; cp++) free(want[c][cp]);
        free(want[c]);
    }
    cr_expect_gt(changed, 5000);
    cr_expect_eq(bad, 0, "%zu results differ from tokenizers", bad);
    const uint32_t dives[2] = {0x11935, 0x11930};
    cr_expect_eq(sk_nfc(dives, 2, out), 2);
    cr_expect_str_eq(sk_nfc_unicode_version, "9.0.0");
}

/* ---- a cJSON parse that returns NULL: out of memory or not JSON (src/util/json_syntax.h) ----
 * The tokenizer loaders report SKYCMD_E_NOMEM when cJSON fails on text the syntax check
 * accepts, so the check must accept nothing cJSON refuses: every text it accepts here is
 * parsed by cJSON (which has memory in this test); and it accepts well-formed JSON. */

static int cjson_parses(const char *s, size_t n) {
    cJSON *j = cJSON_ParseWithLength(s, n);
    cJSON_Delete(j);
    return j != NULL;
}

Test(json_syntax, edge_cases) {
    static const struct {
        const char *text;
        int ok;
    } k[] = {
        {"{}", 1}, {"[]", 1}, {" \t\n\r{ \"a\" : [1, -2.5e+3, 0, 0.5, 1E-7, true, false, null, {}, []] }", 1},
        {"\"x\\u00e9\\ud83d\\ude00\\n\\/\\\\\\\"\"", 1}, {"\xEF\xBB\xBF{}", 1}, {"{} trailing", 1}, {"7", 1},
        {"\"raw \x01 \xff bytes\"", 1}, {"[1] x", 1},
        {"", 0}, {" ", 0}, {"{", 0}, {"[", 0}, {"{\"a\" 1}", 0}, {"{\"a\":}", 0}, {"[1,]", 0}, {"{,}", 0},
        {"[01]", 0}, {"[1.]", 0}, {"[.5]", 0}, {"[+1]", 0}, {"[1e]", 0}, {"[-]", 0}, {"[1.5.3]", 0},
        {"\"\\ud800\"", 0}, {"\"\\udc00\"", 0}, {"\"\\ud800\\u0041\"", 0}, {"\"\\u12\"", 0},
        {"\"\\uZZZZ\"", 0}, {"\"\\x\"", 0}, {"\"abc", 0}, {"\"abc\\", 0}, {"nul", 0}, {"tru", 0},
        {"{1:2}", 0}, {"[1 2]", 0}, {"]", 0}, {"{\"a\":1,}", 0},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        size_t n = strlen(k[i].text), at = 0;
        cr_expect_eq(sk_json_well_formed(k[i].text, n, CJSON_NESTING_LIMIT, &at), k[i].ok, "case %zu: %s", i,
                     k[i].text);
        if (k[i].ok) cr_expect(cjson_parses(k[i].text, n), "case %zu: cJSON refuses %s", i, k[i].text);
        cr_expect_eq(sk_json_parse_failure(k[i].text, n, CJSON_NESTING_LIMIT, NULL),
                     k[i].ok ? SKYCMD_E_NOMEM : SKYCMD_E_FORMAT, "case %zu", i);
    }
    /* cJSON's limits: 1000 nested containers, numbers of 63 characters */
    char buf[2100];
    for (int depth = 999; depth <= 1001; depth++) {
        memset(buf, '[', (size_t)depth);
        memset(buf + depth, ']', (size_t)depth);
        int ok = sk_json_well_formed(buf, 2 * (size_t)depth, CJSON_NESTING_LIMIT, NULL);
        cr_expect_eq(ok, depth <= CJSON_NESTING_LIMIT, "depth %d", depth);
        cr_expect_eq(cjson_parses(buf, 2 * (size_t)depth), ok, "depth %d: cJSON", depth);
    }
    for (int len = 62; len <= 66; len++) {
        buf[0] = '[';
        memset(buf + 1, '7', (size_t)len);
        buf[len + 1] = ']';
        int ok = sk_json_well_formed(buf, (size_t)len + 2, CJSON_NESTING_LIMIT, NULL);
        cr_expect_eq(ok, len <= 63, "a number of %d digits", len);
        if (ok) cr_expect(cjson_parses(buf, (size_t)len + 2), "a number of %d digits: cJSON", len);
    }
}

Test(json_syntax, accepts_only_what_cjson_parses, .timeout = 120) {
    /* small documents, whole (mutations of a part of a big file would nearly always be cut) */
    static const char synthetic[] =
        "{\"a\": [1, -0.5, 2e10, 3E-2, 0, true, false, null], \"s\": \"x\\u00e9\\ud83d\\ude00\\t\\\"\\/\", "
        "\"o\": {\"k\": {\"k\": [[], {}, [[1]]]}}, \"n\": 12345678901234567890}";
    char *docs[3] = {tu_read_file(FIX "/vocab1024/tokenizer_config.json", NULL),
                     tu_read_file(SKYCMD_FIXTURES "/gemma_tok/gemma3000/tokenizer_config.json", NULL), NULL};
    cr_assert(docs[0] && docs[1]);
    docs[2] = malloc(sizeof synthetic);
    cr_assert(docs[2]);
    memcpy(docs[2], synthetic, sizeof synthetic);
    static const char alphabet[] = "{}[],:\"\\ u0123456789.eE+-tfnlrsaDdxZ\x01\xef";
    uint64_t r = 0x9E3779B97F4A7C15ull;
    size_t accepted = 0, refused = 0;
    for (size_t f = 0; f < 3; f++) {
        size_t n = strlen(docs[f]);
        cr_assert(sk_json_well_formed(docs[f], n, CJSON_NESTING_LIMIT, NULL), "document %zu is well formed", f);
        char *m = malloc(n + 8);
        cr_assert(m);
        /* 1 to 3 mutations: a byte replaced by one JSON cares about, deleted or duplicated,
         * or the text cut short */
        for (int iter = 0; iter < 8000; iter++) {
            memcpy(m, docs[f], n);
            size_t len = n;
            for (int k = 1 + (int)((r >> 7) % 3); k && len > 1; k--) {
                r ^= r << 13, r ^= r >> 7, r ^= r << 17;
                size_t at = (size_t)(r >> 20) % len;
                switch (r % 4) {
                case 0: m[at] = alphabet[(r >> 40) % (sizeof alphabet - 1)]; break;
                case 1: memmove(m + at, m + at + 1, len - at - 1), len--; break;
                case 2:
                    if (len < n + 7) memmove(m + at + 1, m + at, len - at), len++;
                    break;
                default: len = at + 1; break;
                }
            }
            if (sk_json_well_formed(m, len, CJSON_NESTING_LIMIT, NULL)) {
                accepted++;
                cr_assert(cjson_parses(m, len), "document %zu, mutation %d: accepted but cJSON refuses \"%.*s\"", f,
                          iter, (int)len, m);
            } else {
                refused++;
            }
        }
        free(m);
        free(docs[f]);
    }
    cr_expect(accepted > 1000 && refused > 1000, "accepted %zu, refused %zu", accepted, refused);
}
