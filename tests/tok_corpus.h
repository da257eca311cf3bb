/*
 * tok_corpus.h - the corpus check shared by the tokenizer tests (test_tokenizer.c: byte-level
 * BPE; test_gemma_tok.c: SentencePiece-style BPE): every string of FIX/corpus.txt (hex UTF-8)
 * is encoded and decoded with the tokenizer of FIX/<name>/ loaded from tokenizer.json and with
 * the one rebuilt from a GGUF written by sk_tokenizer_write_gguf, and compared with
 * FIX/expected_<name>.txt (what Hugging Face `tokenizers` gave).
 *
 * The including file defines FIX (its fixture directory), TOK_CORPUS_PRE (the
 * tokenizer.ggml.pre written to the GGUF) and TOK_CORPUS_MIN_STRINGS (the corpus size it
 * requires), and includes criterion, skycmd.h, tokenizer/tokenizer.h and test_util.h first.
 */
#ifndef TOK_CORPUS_H
#define TOK_CORPUS_H

static skycmd_tokenizer *load_json_dir(const char *name) {
    char p1[512], p2[512];
    snprintf(p1, sizeof p1, FIX "/%s/tokenizer.json", name);
    snprintf(p2, sizeof p2, FIX "/%s/tokenizer_config.json", name);
    size_t l1 = 0, l2 = 0;
    char *j = tu_read_file(p1, &l1), *c = tu_read_file(p2, &l2);
    cr_assert(j && c, "cannot read fixture %s", name);
    skycmd_tokenizer *t = NULL;
    sk_err e;
    sk_err_clear(&e);
    int rc = sk_tokenizer_from_json(j, l1, c, l2, &t, &e);
    cr_assert_eq(rc, SKYCMD_OK, "load %s: %s", name, e.msg);
    free(j);
    free(c);
    return t;
}

/* Write t to an in-memory GGUF and rebuild it from there. */
static skycmd_tokenizer *via_gguf(const skycmd_tokenizer *t, uint8_t **mem, sk_gguf **g) {
    sk_err e;
    sk_err_clear(&e);
    sk_gguf_writer *w = sk_gguf_writer_new(0);
    cr_assert(w);
    cr_assert_eq(sk_tokenizer_write_gguf(t, w, TOK_CORPUS_PRE, &e), SKYCMD_OK, "%s", e.msg);
    size_t sz = 0;
    cr_assert_eq(sk_gguf_writer_write_mem(w, mem, &sz, &e), SKYCMD_OK, "%s", e.msg);
    sk_gguf_writer_free(w);
    cr_assert_eq(sk_gguf_open_buffer(*mem, sz, g, &e), SKYCMD_OK, "%s", e.msg);
    skycmd_tokenizer *t2 = NULL;
    cr_assert_eq(sk_tokenizer_from_gguf(*g, &t2, &e), SKYCMD_OK, "%s", e.msg);
    return t2;
}

static size_t unhex(const char *h, size_t n, char *out) {
    size_t k = 0;
    for (size_t i = 0; i + 1 < n; i += 2) {
        unsigned v;
        char tmp[3] = {h[i], h[i + 1], 0};
        sscanf(tmp, "%2x", &v);
        out[k++] = (char)v;
    }
    return k;
}

typedef struct counts {
    size_t strings, ids_ok_json, ids_ok_gguf, decode_ok;
} counts;

/* Every string of the corpus through tj (and tg, the same tokenizer rebuilt from a GGUF, when
 * not NULL) against the expected file: ids equal, and decode of the expected ids equal. */
static counts corpus_counts(const char *name, const char *expected, const skycmd_tokenizer *tj,
                            const skycmd_tokenizer *tg) {
    counts c = {0, 0, 0, 0};
    FILE *fe = fopen(expected, "r");
    FILE *fc = fopen(FIX "/corpus.txt", "r");
    cr_assert(fe && fc, "missing " FIX "/corpus.txt or %s", expected);
    char *le = NULL, *lc = NULL;
    size_t ce = 0, cc = 0;
    /* header: specials cls sep mask pad unk vocab_size */
    cr_assert(getline(&le, &ce, fe) > 0);
    int sp[5];
    size_t vs;
    cr_assert_eq(sscanf(le, "specials %d %d %d %d %d %zu", &sp[0], &sp[1], &sp[2], &sp[3], &sp[4], &vs), 6);
    for (int w = 0; w < 5; w++) {
        cr_expect_eq(sk_tokenizer_special(tj, w), sp[w], "%s special %d (json)", name, w);
        if (tg) cr_expect_eq(sk_tokenizer_special(tg, w), sp[w], "%s special %d (gguf)", name, w);
    }
    cr_expect_eq(sk_tokenizer_vocab_size(tj), vs, "%s vocab size", name);
    if (tg) cr_expect_eq(sk_tokenizer_vocab_size(tg), vs, "%s vocab size (gguf)", name);
    sk_ids a = {0}, b = {0}, exp = {0};
    sk_buf dec;
    sk_buf_init(&dec);
    int reported = 0;
    ssize_t nc;
    while ((nc = getline(&lc, &cc, fc)) > 0) {
        cr_assert(getline(&le, &ce, fe) > 0, "%s: expected file shorter than the corpus", name);
        while (nc > 0 && (lc[nc - 1] == '\n' || lc[nc - 1] == '\r')) lc[--nc] = 0;
        char *text = malloc((size_t)nc / 2 + 1);
        size_t tl = unhex(lc, (size_t)nc, text);
        exp.n = 0;
        char *p = le;
        while (*p && *p != '\t') {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p) break;
            sk_ids_push(&exp, (int32_t)v);
            p = end;
            while (*p == ' ') p++;
        }
        char *dh = strchr(le, '\t');
        cr_assert(dh, "%s: bad expected line", name);
        dh++;
        size_t dl = strcspn(dh, "\r\n");
        char *dtext = malloc(dl / 2 + 1);
        size_t dtl = unhex(dh, dl, dtext);
        a.n = b.n = 0;
        sk_err e;
        sk_err_clear(&e);
        int r1 = sk_tokenizer_encode(tj, text, tl, &a, &e);
        int ok1 = r1 == 0 && a.n == exp.n && (exp.n == 0 || memcmp(a.ids, exp.ids, exp.n * 4) == 0);
        int ok2 = 1;
        if (tg) {
            int r2 = sk_tokenizer_encode(tg, text, tl, &b, &e);
            ok2 = r2 == 0 && b.n == exp.n && (exp.n == 0 || memcmp(b.ids, exp.ids, exp.n * 4) == 0);
        }
        dec.len = 0;
        int r3 = sk_tokenizer_decode(tj, exp.ids, exp.n, &dec, &e);
        int ok3 = r3 == 0 && dec.len == dtl && memcmp(dec.data ? dec.data : "", dtext, dtl) == 0;
        c.strings++;
        c.ids_ok_json += ok1;
        c.ids_ok_gguf += ok2;
        c.decode_ok += ok3;
        if ((!ok1 || !ok2 || !ok3) && reported++ < 5)
            cr_log_error("%s: string %zu (%.60s): json %s gguf %s decode %s (got %zu/%zu ids, expected %zu)",
                         name, c.strings - 1, lc, ok1 ? "ok" : "DIFF", tg ? (ok2 ? "ok" : "DIFF") : "-",
                         ok3 ? "ok" : "DIFF", a.n, b.n, exp.n);
        free(text);
        free(dtext);
    }
    if (tg)
        fprintf(stderr, "%s: %zu strings, ids equal to tokenizers: json %zu, gguf %zu; decode equal %zu\n", name,
                c.strings, c.ids_ok_json, c.ids_ok_gguf, c.decode_ok);
    else
        fprintf(stderr, "%s: %zu strings, ids equal to tokenizers %zu, decode equal %zu (no GGUF round trip)\n",
                name, c.strings, c.ids_ok_json, c.decode_ok);
    free(le);
    free(lc);
    fclose(fe);
    fclose(fc);
    sk_ids_free(&a);
    sk_ids_free(&b);
    sk_ids_free(&exp);
    sk_buf_free(&dec);
    return c;
}

static counts run_corpus(const char *name) {
    skycmd_tokenizer *tj = load_json_dir(name);
    uint8_t *mem = NULL;
    sk_gguf *g = NULL;
    skycmd_tokenizer *tg = via_gguf(tj, &mem, &g);
    char path[512];
    snprintf(path, sizeof path, FIX "/expected_%s.txt", name);
    counts c = corpus_counts(name, path, tj, tg);
    sk_tokenizer_free(tj);
    sk_tokenizer_free(tg);
    sk_gguf_close(g);
    free(mem);
    return c;
}

static void check_corpus(const char *name) {
    counts c = run_corpus(name);
    cr_assert_geq(c.strings, TOK_CORPUS_MIN_STRINGS, "%s: corpus has only %zu strings", name, c.strings);
    cr_expect_eq(c.ids_ok_json, c.strings, "%s: %zu of %zu strings differ (json)", name,
                 c.strings - c.ids_ok_json, c.strings);
    cr_expect_eq(c.ids_ok_gguf, c.strings, "%s: %zu of %zu strings differ (gguf)", name,
                 c.strings - c.ids_ok_gguf, c.strings);
    cr_expect_eq(c.decode_ok, c.strings, "%s: %zu of %zu decodes differ", name, c.strings - c.decode_ok,
                 c.strings);
}

#endif
