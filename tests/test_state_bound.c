/*
 * test_state_bound.c - sk_prompt_state_ids_bounded() gives exactly the ids the whole state's
 * tokenization gives where a sequence can use them (the first `need`, or the last `need`
 * for a list state), on the real tokenizer of the prompt fixtures, for random states made
 * of what could break a cut: words, runs of spaces, tabs and newlines, punctuation,
 * contractions, the mask text, digits, accented and combining characters, CJK, emoji.
 * The cuts inside a word (SK_CUT_CLASS, where letters, digits and other bytes meet): at every
 * cut a tokenizer allows, encode(a + b) == encode(a) + encode(b), on the byte-level fixtures
 * (one with added tokens that hold such pairs); and one-word states (base64, a hash dump)
 * are cut, with the same ids where used.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "prompt/prompt.h"
#include "test_util.h"

static const char *k_parts[] = {
    "drone", " ", "  ", "\t", "\n", " the", "'s", "'re", "'ll", "'", ",", ", ", ".", "[MASK]", " [MASK]",
    "[MASK] ", "12", " 345", "3.14", "caf\xc3\xa9", "e\xcc\x81", " \xcc\x81", "\xe6\x97\xa5\xe6\x9c\xac",
    "\xf0\x9f\x9a\x81", "-", "--", "\"x\"", "[", "]", "{\"a\": 1}", "vy", " dx", " 36", "  up", "\r\n", "?!",
    "[SEP]", "[CLS]", " [PAD] ", "\xc2\xa0", "A", "Z", "_", "~",
};
#define N_PARTS (sizeof k_parts / sizeof k_parts[0])

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next_u32(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}

static void random_state(sk_buf *b, size_t bytes) {
    b->len = 0;
    while (b->len < bytes) sk_buf_puts(b, k_parts[next_u32() % N_PARTS]);
}

Test(state_bound, identical_ids_where_used) {
    size_t tl, cl;
    char *tj = tu_slurp(SKYCMD_FIXTURES "/prompt/tokenizer.json", &tl);
    char *cj = tu_slurp(SKYCMD_FIXTURES "/prompt/tokenizer_config.json", &cl);
    skycmd_tokenizer *tok = NULL;
    sk_err e = {0};
    cr_assert_eq(sk_tokenizer_from_json(tj, tl, cj, cl, &tok, &e), 0, "%s", e.msg);
    sk_cut_rules rules;
    sk_tokenizer_cut_rules(tok, &rules);
    cr_assert(rules.cuts, "the fixture tokenizer should allow cuts (else this test checks nothing)");
    tu_tok_ctx ec = {tok, {0}};
    sk_prompt_tok pt = tu_prompt_tok(&ec);
    sk_prompt_ws ws = {0};
    sk_i32v full = {0}, part = {0};
    sk_buf st;
    sk_buf_init(&st);
    size_t cut_used = 0;
    for (int iter = 0; iter < 400; iter++) {
        size_t bytes = 200 + next_u32() % (iter < 300 ? 6000 : 60000);
        random_state(&st, bytes);
        size_t needs[] = {8, 64, 256, 512};
        size_t need = needs[next_u32() % 4];
        int keep_end = (int)(next_u32() & 1);
        cr_assert_eq(sk_prompt_state_ids(&pt, st.data, st.len, &ws, &full, &e), 0, "%s", e.msg);
        cr_assert_eq(sk_prompt_state_ids_bounded(&pt, &rules, st.data, st.len, keep_end, need, &ws, &part, &e), 0,
                     "%s", e.msg);
        if (part.n < full.n) cut_used++;
        cr_assert(part.n >= (need < full.n ? need : full.n), "iter %d: %zu ids, need %zu of %zu", iter, part.n,
                  need, full.n);
        /* every id returned is the whole state's (its first or its last ids), not only need */
        cr_assert(part.n <= full.n, "iter %d: %zu ids of %zu", iter, part.n, full.n);
        size_t k = part.n;
        for (size_t i = 0; i < k; i++) {
            size_t fi = keep_end ? full.n - k + i : i, pi = i;
            cr_assert_eq(part.v[pi], full.v[fi], "iter %d (%zu bytes, need %zu, keep_end %d): id %zu differs", iter,
                         st.len, need, keep_end, i);
        }
    }
    cr_assert(cut_used > 100, "only %zu of 400 states were cut", cut_used);
    sk_buf_free(&st);
    sk_i32v_free(&full);
    sk_i32v_free(&part);
    sk_prompt_ws_free(&ws);
    sk_ids_free(&ec.ids);
    sk_tokenizer_free(tok);
    free(tj);
    free(cj);
}

/* ---- cuts inside words (SK_CUT_CLASS) ---- */

/* plain_edge 1: the added tokens without single_word and rstrip; 2: no added tokens. */
static skycmd_tokenizer *load_tok(const char *dir, int plain_edge) {
    char p[512];
    snprintf(p, sizeof p, SKYCMD_FIXTURES "/%s/tokenizer.json", dir);
    size_t tl;
    char *tj = tu_slurp(p, &tl);
    cr_assert(tj, "cannot read %s", p);
    if (plain_edge) {
        /* the added-token rules fixture without its single_word and rstrip flags, so that
         * both kinds of cut are allowed, next to added tokens that hold class pairs */
        cJSON *root = cJSON_Parse(tj);
        cr_assert(root);
        cJSON *it;
        if (plain_edge == 2) cJSON_ReplaceItemInObjectCaseSensitive(root, "added_tokens", cJSON_CreateArray());
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(root, "added_tokens")) {
            cJSON_ReplaceItemInObjectCaseSensitive(it, "single_word", cJSON_CreateFalse());
            cJSON_ReplaceItemInObjectCaseSensitive(it, "rstrip", cJSON_CreateFalse());
        }
        free(tj);
        tj = cJSON_PrintUnformatted(root);
        tl = strlen(tj);
        cJSON_Delete(root);
    }
    skycmd_tokenizer *tok = NULL;
    sk_err e = {0};
    cr_assert_eq(sk_tokenizer_from_json(tj, tl, NULL, 0, &tok, &e), 0, "%s: %s", dir, e.msg);
    free(tj);
    return tok;
}

/* What the class cuts must survive: runs of each class, the apostrophe and contractions,
 * spaces, non-ASCII letters and marks, and the added tokens' texts of the fixtures. */
static const char *k_word_parts[] = {
    "a", "Zq", "x9", "0", "42", "7f3e", "+", "/", "==", "-", ".", "_", "'", "'s", "'ll", "s'", " ", "  ", "\t",
    "\xc3\xa9", "e\xcc\x81", "\xcc\x81", "\xe6\x97\xa5", "[MASK]", "[SEP]", "<|x|>", "caf\xc3\xa9", "drone", "!!",
    "<sep2>", "the", "|||IP_ADDRESS|||", "[unused0]", "\xc2\xa0", "A1b2", "9Z", "#", "$x",
};
#define N_WORD_PARTS (sizeof k_word_parts / sizeof k_word_parts[0])

/* At every cut the tokenizer allows, encode(a + b) == encode(a) + encode(b). */
Test(state_bound, class_cuts_split_the_encoding_exactly, .timeout = 120) {
    static const struct {
        const char *dir;
        int plain_edge;
        unsigned must; /* cuts the fixture must allow (else the test checks little) */
    } tk[] = {
        {"tokenizer/vocab1024", 0, SK_CUT_SPACE | SK_CUT_CLASS(0, 1) | SK_CUT_CLASS(1, 0) | SK_CUT_CLASS(1, 2)},
        {"tokenizer/vocab4096", 0, SK_CUT_SPACE | SK_CUT_CLASS(0, 1) | SK_CUT_CLASS(1, 0)},
        {"tokenizer/vocab1024_im", 0, SK_CUT_SPACE | SK_CUT_CLASS(0, 1)},
        {"tokenizer/vocab1024_edge", 1, SK_CUT_SPACE | SK_CUT_CLASS(1, 0) | SK_CUT_CLASS(2, 1)},
        {"prompt", 0, SK_CUT_SPACE | SK_CUT_CLASS(0, 1) | SK_CUT_CLASS(1, 0)},
        {"tokenizer/vocab4096", 2, SK_CUT_SPACE | SK_CUT_CLASS_ALL}, /* its merges hold 's 't 're 've 'll 'd */
    };
    sk_buf st;
    sk_buf_init(&st);
    for (size_t f = 0; f < sizeof tk / sizeof tk[0]; f++) {
        skycmd_tokenizer *tok = load_tok(tk[f].dir, tk[f].plain_edge);
        unsigned cuts = (unsigned)sk_tokenizer_space_cut_safe(tok);
        cr_assert_eq(cuts & tk[f].must, tk[f].must, "%s: cuts %#x", tk[f].dir, cuts);
        sk_cut_rules rules; /* and the pair cuts: none with ignore_merges (a piece is looked up whole) */
        sk_tokenizer_cut_rules(tok, &rules);
        cr_assert_eq(rules.pair_join == NULL, tok->ignore_merges != 0, "%s: pair cuts %s", tk[f].dir,
                     rules.pair_join ? "on" : "off");
        sk_ids whole = {0}, left = {0}, right = {0};
        sk_err e = {0};
        size_t checked = 0;
        for (int iter = 0; iter < 800; iter++) {
            st.len = 0;
            for (size_t k = 2 + next_u32() % 12; k; k--) sk_buf_puts(&st, k_word_parts[next_u32() % N_WORD_PARTS]);
            whole.n = 0;
            cr_assert_eq(sk_tokenizer_encode(tok, st.data, st.len, &whole, &e), 0, "%s", e.msg);
            for (size_t k = 1; k < st.len; k++) {
                if (!sk_cut_ok(cuts, st.data, k) && !sk_pair_cut_ok(&rules, st.data, k)) continue;
                left.n = right.n = 0;
                cr_assert_eq(sk_tokenizer_encode(tok, st.data, k, &left, &e), 0, "%s", e.msg);
                cr_assert_eq(sk_tokenizer_encode(tok, st.data + k, st.len - k, &right, &e), 0, "%s", e.msg);
                int same = left.n + right.n == whole.n && !memcmp(left.ids, whole.ids, left.n * sizeof *left.ids) &&
                           !memcmp(right.ids, whole.ids + left.n, right.n * sizeof *right.ids);
                cr_assert(same, "%s: \"%.*s\" cut before byte %zu (\"%.*s\" | \"%.*s\") changes the ids", tk[f].dir,
                          (int)st.len, st.data, k, (int)k, st.data, (int)(st.len - k), st.data + k);
                checked++;
            }
        }
        cr_assert(checked > 1000, "%s: only %zu cuts checked", tk[f].dir, checked);
        sk_ids_free(&whole);
        sk_ids_free(&left);
        sk_ids_free(&right);
        sk_tokenizer_free(tok);
    }
    sk_buf_free(&st);
}

/* A state that is one word (base64, a hash dump, digits, a mask text inside): the bounded
 * ids are the whole state's where they are used, and every one is cut: at class changes,
 * or inside a run of one class (a run cut). */
Test(state_bound, one_word_states, .timeout = 120) {
    skycmd_tokenizer *tok = load_tok("prompt", 0);
    sk_cut_rules rules;
    sk_tokenizer_cut_rules(tok, &rules);
    cr_assert(rules.run_margin[0] && rules.run_margin[1] && rules.run_margin[2] && rules.run_edge[0],
              "the fixture should allow run cuts in every class, letters' margin widened by its added tokens' "
              "texts: %u %u %u", rules.run_margin[0], rules.run_margin[1], rules.run_margin[2]);
    tu_tok_ctx ec = {tok, {0}};
    sk_prompt_tok pt = tu_prompt_tok(&ec);
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    sk_prompt_ws ws = {0};
    sk_i32v full = {0}, part = {0};
    sk_buf st;
    sk_buf_init(&st);
    sk_err e = {0};
    size_t cut_used = 0, cuttable = 0;
    for (int iter = 0; iter < 200; iter++) {
        int shape = iter % 5;
        size_t bytes = 2000 + next_u32() % (iter < 150 ? 20000 : 200000);
        st.len = 0;
        while (st.len < bytes) {
            uint32_t r = next_u32();
            switch (shape) {
            case 0: sk_buf_putc(&st, b64[r % 64]); break;                 /* base64 */
            case 1: sk_buf_putc(&st, "0123456789abcdef"[r % 16]); break;  /* a hash dump */
            case 2: sk_buf_putc(&st, "0123456789"[r % 10]); break;        /* one number: a run cut */
            case 3: sk_buf_putc(&st, "abc"[r % 3]); break;                /* one letter run: a run cut */
            default: /* base64 with the mask text and apostrophes in it */
                if (r % 50 == 0) sk_buf_puts(&st, "[MASK]");
                else if (r % 50 == 1) sk_buf_puts(&st, "'s");
                else sk_buf_putc(&st, b64[r % 64]);
                break;
            }
        }
        if (shape == 4 && (iter & 1)) sk_buf_puts(&st, "[MASK]");
        size_t needs[] = {8, 64, 256, 512};
        size_t need = needs[next_u32() % 4];
        int keep_end = (int)(next_u32() & 1);
        cr_assert_eq(sk_prompt_state_ids(&pt, st.data, st.len, &ws, &full, &e), 0, "%s", e.msg);
        cr_assert_eq(sk_prompt_state_ids_bounded(&pt, &rules, st.data, st.len, keep_end, need, &ws, &part, &e), 0,
                     "%s", e.msg);
        int cuttable_here = 1;
        if (cuttable_here) cuttable++;
        if (part.n < full.n) {
            cut_used++;
            cr_assert(cuttable_here, "iter %d (shape %d, keep_end %d): a word with no allowed cut was cut", iter, shape,
                      keep_end);
        }
        cr_assert(part.n >= (need < full.n ? need : full.n) && part.n <= full.n, "iter %d: %zu ids, need %zu of %zu",
                  iter, part.n, need, full.n);
        size_t k = part.n; /* every id returned is the whole state's, not only need */
        for (size_t i = 0; i < k; i++) {
            size_t fi = keep_end ? full.n - k + i : i, pi = i;
            cr_assert_eq(part.v[pi], full.v[fi], "iter %d (shape %d, %zu bytes, need %zu, keep_end %d): id %zu differs",
                         iter, shape, st.len, need, keep_end, i);
        }
    }
    cr_assert(cut_used == cuttable, "only %zu of %zu one-word states with class changes were cut", cut_used, cuttable);
    sk_buf_free(&st);
    sk_i32v_free(&full);
    sk_i32v_free(&part);
    sk_prompt_ws_free(&ws);
    sk_ids_free(&ec.ids);
    sk_tokenizer_free(tok);
}

/* ---- cuts inside a run of one class (sk_cut_rules.run_margin) ---- */

/* A run of `bytes` bytes of one class, drawn in one of several ways that stress the merges:
 * uniform over the class, a small alphabet, runs of one byte, a repeated short pattern. */
static void random_run(sk_buf *b, int cls, size_t bytes) {
    static const char *alpha[3] = {"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789",
                                   "!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~"};
    const char *a = alpha[cls];
    size_t na = strlen(a);
    int how = (int)(next_u32() % 4);
    char pat[8];
    size_t np = 1 + next_u32() % 7;
    for (size_t i = 0; i < np; i++) pat[i] = a[next_u32() % na];
    size_t small = 2 + next_u32() % 3;
    b->len = 0;
    while (b->len < bytes) {
        uint32_t r = next_u32();
        switch (how) {
        case 0: sk_buf_putc(b, a[r % na]); break;
        case 1: sk_buf_putc(b, a[r % small]); break;
        case 2:
            for (size_t k = 1 + r % 9; k; k--) sk_buf_putc(b, a[(r >> 8) % small]);
            break;
        default: sk_buf_append(b, pat, np); break;
        }
    }
    b->len = bytes;
}

/* At every run cut the rules allow, the ids of the text before it equal the whole text's
 * but within the margin; with no margin some would not (so the margin is needed and this
 * test can see a wrong one). On the byte-level fixtures and the built-in models' random
 * tokenizers, runs of each class, with a prefix and a suffix of other text. */
Test(state_bound, run_cuts_agree_outside_the_margin, .timeout = 300) {
    struct {
        const char *dir; /* NULL: sk_tokenizer_random_json(vocab) */
        uint32_t vocab;
    } tk[] = {{"tokenizer/vocab1024", 0}, {"tokenizer/vocab4096", 0}, {"prompt", 0},
              {"tokenizer/vocab4096", 2}, {NULL, 1024}, {NULL, 8192}};
    sk_buf st;
    sk_buf_init(&st);
    sk_buf run;
    sk_buf_init(&run);
    size_t checked_all = 0, differ_in_margin = 0;
    for (size_t f = 0; f < sizeof tk / sizeof tk[0]; f++) {
        skycmd_tokenizer *tok = NULL;
        sk_err e = {0};
        if (tk[f].dir) tok = load_tok(tk[f].dir, (int)tk[f].vocab);
        else {
            char *tj = NULL, *cj = NULL;
            cr_assert_eq(sk_tokenizer_random_json(tk[f].vocab, 7, &tj, &cj, &e), 0, "%s", e.msg);
            cr_assert_eq(sk_tokenizer_from_json(tj, strlen(tj), cj, strlen(cj), &tok, &e), 0, "%s", e.msg);
            free(tj);
            free(cj);
        }
        sk_cut_rules rules;
        sk_tokenizer_cut_rules(tok, &rules);
        cr_assert(rules.run_margin[1], "%s/%u: no run cuts in digits", tk[f].dir ? tk[f].dir : "random", tk[f].vocab);
        sk_ids whole = {0}, left = {0};
        size_t checked = 0;
        for (int iter = 0; iter < 300; iter++) {
            int cls = iter % 3;
            if (!rules.run_margin[cls]) continue;
            size_t margin = rules.run_margin[cls], lead = margin + rules.run_min;
            random_run(&run, cls, lead + 1 + next_u32() % (iter < 200 ? 400 : 4000));
            st.len = 0;
            if (iter & 1) sk_buf_puts(&st, k_parts[next_u32() % N_PARTS]); /* what comes before */
            if (iter & 2) sk_buf_putc(&st, ' ');
            size_t run_at = st.len;
            sk_buf_append(&st, run.data, run.len);
            if (iter & 4) sk_buf_puts(&st, k_parts[next_u32() % N_PARTS]); /* and after */
            whole.n = 0;
            cr_assert_eq(sk_tokenizer_encode(tok, st.data, st.len, &whole, &e), 0, "%s", e.msg);
            for (int c = 0; c < 8; c++) {
                /* a cut with at least lead bytes of the run before it, inside the run */
                size_t k = run_at + lead + next_u32() % (run.len - lead);
                left.n = 0;
                cr_assert_eq(sk_tokenizer_encode(tok, st.data, k, &left, &e), 0, "%s", e.msg);
                size_t keep = left.n > margin ? left.n - margin : 0;
                cr_assert(keep <= whole.n);
                for (size_t i = 0; i < keep; i++)
                    cr_assert_eq(left.ids[i], whole.ids[i],
                                 "%s/%u: class %d run of %zu bytes cut at %zu (margin %zu): id %zu of %zu differs",
                                 tk[f].dir ? tk[f].dir : "random", tk[f].vocab, cls, run.len, k - run_at, margin, i,
                                 keep);
                if (left.n > whole.n || memcmp(left.ids, whole.ids, left.n * sizeof *left.ids)) differ_in_margin++;
                checked++;
            }
        }
        cr_assert(checked >= 800, "%s: only %zu run cuts checked", tk[f].dir ? tk[f].dir : "random", checked);
        /* keeping the end: the bounded suffix's ids against the whole state's */
        tu_tok_ctx ec = {tok, {0}};
        sk_prompt_tok pt = tu_prompt_tok(&ec);
        sk_prompt_ws ws = {0};
        sk_i32v full = {0}, part = {0};
        size_t suffixes = 0, suffix_cut = 0;
        for (int iter = 0; iter < 120; iter++) {
            int cls = iter % 3;
            if (!rules.run_margin[cls]) continue;
            random_run(&run, cls, 3000 + next_u32() % 20000);
            st.len = 0;
            if (iter & 1) sk_buf_puts(&st, k_parts[next_u32() % N_PARTS]);
            sk_buf_append(&st, run.data, run.len);
            size_t needs[] = {8, 64, 256};
            size_t need = needs[next_u32() % 3];
            cr_assert_eq(sk_prompt_state_ids(&pt, st.data, st.len, &ws, &full, &e), 0, "%s", e.msg);
            cr_assert_eq(sk_prompt_state_ids_bounded(&pt, &rules, st.data, st.len, 1, need, &ws, &part, &e), 0, "%s",
                         e.msg);
            /* every id returned, not only the last need: they are the whole state's last ids */
            cr_assert(part.n >= (need < full.n ? need : full.n) && part.n <= full.n);
            for (size_t i = 0; i < part.n; i++)
                cr_assert_eq(part.v[i], full.v[full.n - part.n + i],
                             "%s/%u: class %d run of %zu bytes, need %zu: id %zu of the %zu returned differs",
                             tk[f].dir ? tk[f].dir : "random", tk[f].vocab, cls, run.len, need, i, part.n);
            suffixes++;
            if (part.n < full.n) suffix_cut++;
        }
        /* runs of one repeated token are not cut (their bound reaches the end): most others are */
        cr_assert(suffix_cut * 2 > suffixes, "%s: only %zu of %zu runs cut keeping the end",
                  tk[f].dir ? tk[f].dir : "random", suffix_cut, suffixes);
        sk_i32v_free(&full);
        sk_i32v_free(&part);
        sk_prompt_ws_free(&ws);
        sk_ids_free(&ec.ids);
        checked_all += checked;
        sk_ids_free(&whole);
        sk_ids_free(&left);
        sk_tokenizer_free(tok);
    }
    cr_assert(differ_in_margin > checked_all / 20,
              "only %zu of %zu cut texts end differently from the whole text's ids: the margin is not exercised",
              differ_in_margin, checked_all);
    sk_buf_free(&st);
    sk_buf_free(&run);
}

/* The rules allow no run cuts where the argument for them fails: merges that are not
 * monotone (a token made by a merge ranked after one that consumes it), an added token
 * holding two digits side by side (digits only), a single_word added token (none). */
Test(state_bound, no_run_cuts_where_they_could_split_wrong) {
    /* ab is made at rank 1, consumed at rank 0: not monotone */
    static const char non_monotone[] =
        "{\"version\":\"1.0\",\"added_tokens\":[],\"normalizer\":null,"
        "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":true},"
        "\"post_processor\":null,\"decoder\":{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"trim_offsets\":true,"
        "\"use_regex\":true},\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,"
        "\"continuing_subword_prefix\":null,\"end_of_word_suffix\":null,\"fuse_unk\":false,\"byte_fallback\":false,"
        "\"ignore_merges\":false,\"vocab\":{VOCAB},\"merges\":[\"ab c\",\"a b\"]}}";
    sk_buf j;
    sk_buf_init(&j);
    const char *v = strstr(non_monotone, "{VOCAB}");
    sk_buf_append(&j, non_monotone, (size_t)(v - non_monotone));
    sk_buf_putc(&j, '{');
    /* the 256 byte-level chars, then ab, abc */
    for (int b = 0; b < 256; b++) {
        uint32_t cp = sk_byte_to_cp((uint8_t)b);
        char u[3] = {0};
        if (cp < 0x80) u[0] = (char)cp;
        else u[0] = (char)(0xC0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3F));
        char item[32];
        if (cp == '"' || cp == '\\') snprintf(item, sizeof item, "\"\\%c\":%d,", (char)cp, b);
        else snprintf(item, sizeof item, "\"%s\":%d,", u, b);
        sk_buf_puts(&j, item);
    }
    sk_buf_puts(&j, "\"ab\":256,\"abc\":257}");
    sk_buf_puts(&j, v + 7);
    skycmd_tokenizer *tok = NULL;
    sk_err e = {0};
    cr_assert_eq(sk_tokenizer_from_json(j.data, j.len, NULL, 0, &tok, &e), 0, "%s", e.msg);
    sk_cut_rules rules;
    sk_tokenizer_cut_rules(tok, &rules);
    cr_expect(rules.cuts, "the exact cuts do not depend on the merges");
    cr_expect(!rules.run_margin[0] && !rules.run_margin[1] && !rules.run_margin[2], "run cuts with merges not monotone");
    sk_tokenizer_free(tok);
    sk_buf_free(&j);

    /* vocab1024_edge's added tokens: one is single_word; without that flag, whether any
     * pattern holds two digits decides the digits */
    tok = load_tok("tokenizer/vocab1024_edge", 0);
    int single_word = 0, digit_pair = 0;
    for (size_t i = 0; i < tok->n_added; i++) {
        single_word |= (tok->added[i].flags & SK_ADDED_SINGLE_WORD) != 0;
        for (size_t k = 1; k < tok->added[i].pattern_len; k++)
            digit_pair |= sk_cut_class((unsigned char)tok->added[i].pattern[k - 1]) == 1 &&
                          sk_cut_class((unsigned char)tok->added[i].pattern[k]) == 1;
    }
    cr_assert(single_word, "the fixture should hold a single_word added token");
    sk_tokenizer_cut_rules(tok, &rules);
    cr_expect(!rules.run_margin[0] && !rules.run_margin[1] && !rules.run_margin[2]);
    sk_tokenizer_free(tok);
    tok = load_tok("tokenizer/vocab1024_edge", 1);
    sk_tokenizer_cut_rules(tok, &rules);
    cr_expect_eq(rules.run_margin[1] != 0, !digit_pair, "digits: margin %u, a pattern with two digits: %d",
                 rules.run_margin[1], digit_pair);
    sk_tokenizer_free(tok);
}

/* ---- the SentencePiece-style pipelines: cuts before a space ---- */

/* gemma3000 (a Replace normalizer, the whole text BPE'd as one word) and its Metaspace
 * twin: at every space cut with SK_CUT_MIN_PIECE bytes or more on each side, encode(a + b)
 * == encode(a) + encode(b); and the bounded state ids are the whole state's, every one
 * returned, for states of words and for one-word states (pair cuts). The generator of the random mmBERT models' 256k vocabulary (here at 32k) gets
 * no cut: its entries join a space to what is before it. */
Test(state_bound, spm_space_cuts, .timeout = 300) {
    sk_buf st;
    sk_buf_init(&st);
    for (int f = 0; f < 3; f++) {
        skycmd_tokenizer *tok = NULL;
        const char *name = f == 0 ? "gemma3000" : f == 1 ? "gemma3000_metaspace" : "random_spm 32000";
        sk_err e = {0};
        if (f < 2) {
            char dir[64];
            snprintf(dir, sizeof dir, "gemma_tok/%s", name);
            tok = load_tok(dir, 0);
        } else {
            char *tj = NULL, *cj = NULL;
            cr_assert_eq(sk_tokenizer_random_spm_json(32000, 20261201u, &tj, &cj, &e), 0, "%s", e.msg);
            cr_assert_eq(sk_tokenizer_from_json(tj, strlen(tj), cj, strlen(cj), &tok, &e), 0, "%s", e.msg);
            free(tj);
            free(cj);
        }
        sk_cut_rules rules;
        sk_tokenizer_cut_rules(tok, &rules);
        if (f == 2) {
            /* the generator's random merges join a space to almost any character before it
             * ("`\u2581", "A\u2581"...): no cut */
            cr_assert_eq(rules.cuts, 0, "%s: cuts %#x", name, rules.cuts);
            sk_tokenizer_free(tok);
            continue;
        }
        cr_assert_eq(rules.cuts, SK_CUT_SPACE, "%s: cuts %#x", name, rules.cuts);
        sk_ids whole = {0}, left = {0}, right = {0};
        size_t checked = 0;
        for (int iter = 0; iter < 10; iter++) {
            random_state(&st, 2600 + next_u32() % 1000);
            whole.n = 0;
            if (sk_tokenizer_encode(tok, st.data, st.len, &whole, &e) != 0) continue;
            for (size_t k = SK_CUT_MIN_PIECE; k + SK_CUT_MIN_PIECE <= st.len; k++) {
                if (!sk_cut_ok(rules.cuts, st.data, k)) continue;
                left.n = right.n = 0;
                cr_assert_eq(sk_tokenizer_encode(tok, st.data, k, &left, &e), 0, "%s", e.msg);
                cr_assert_eq(sk_tokenizer_encode(tok, st.data + k, st.len - k, &right, &e), 0, "%s", e.msg);
                int same = left.n + right.n == whole.n && !memcmp(left.ids, whole.ids, left.n * sizeof *left.ids) &&
                           !memcmp(right.ids, whole.ids + left.n, right.n * sizeof *right.ids);
                cr_assert(same, "%s: a cut before byte %zu of a %zu-byte text changes the ids", name, k, st.len);
                checked++;
            }
        }
        cr_assert(checked > 200, "%s: only %zu cuts checked", name, checked);
        tu_tok_ctx ec = {tok, {0}};
        sk_prompt_tok pt = {tu_tok_encode, &ec, 0, 0, 0, sk_tokenizer_special_text(tok, SKYCMD_SPECIAL_MASK)};
        sk_prompt_ws ws = {0};
        sk_i32v full = {0}, part = {0};
        size_t cut_used = 0, states = 0;
        for (int iter = 0; iter < 60; iter++) {
            random_state(&st, 3000 + next_u32() % 40000);
            size_t needs[] = {8, 64, 256, 512};
            size_t need = needs[next_u32() % 4];
            int keep_end = (int)(next_u32() & 1);
            if (sk_prompt_state_ids(&pt, st.data, st.len, &ws, &full, &e) != 0) continue;
            cr_assert_eq(sk_prompt_state_ids_bounded(&pt, &rules, st.data, st.len, keep_end, need, &ws, &part, &e), 0,
                         "%s", e.msg);
            cr_assert(part.n >= (need < full.n ? need : full.n) && part.n <= full.n);
            for (size_t i = 0; i < part.n; i++)
                cr_assert_eq(part.v[i], full.v[keep_end ? full.n - part.n + i : i],
                             "%s: %zu bytes, need %zu, keep_end %d: id %zu of %zu returned differs", name, st.len,
                             need, keep_end, i, part.n);
            states++;
            if (part.n < full.n) cut_used++;
        }
        cr_assert(cut_used * 2 > states, "%s: only %zu of %zu states cut", name, cut_used, states);
        /* one-word states (base64, digits, a DNA sequence): no space, cut at pairs no merge
         * joins; Metaspace prepends its marker to a piece, so keeping the end is not cut */
        static const char *alpha[3] = {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", "0123456789",
                                       "ACGT"};
        for (int iter = 0; iter < 30; iter++) {
            const char *a = alpha[iter % 3];
            size_t na = strlen(a), bytes = 3000 + next_u32() % 40000;
            st.len = 0;
            while (st.len < bytes) sk_buf_putc(&st, a[next_u32() % na]);
            int keep_end = (iter / 3) & 1;
            size_t need = 64 + next_u32() % 400;
            cr_assert_eq(sk_prompt_state_ids(&pt, st.data, st.len, &ws, &full, &e), 0, "%s", e.msg);
            cr_assert_eq(sk_prompt_state_ids_bounded(&pt, &rules, st.data, st.len, keep_end, need, &ws, &part, &e), 0,
                         "%s", e.msg);
            cr_assert(part.n >= (need < full.n ? need : full.n) && part.n <= full.n);
            for (size_t i = 0; i < part.n; i++)
                cr_assert_eq(part.v[i], full.v[keep_end ? full.n - part.n + i : i],
                             "%s: one word of %zu bytes (%s), keep_end %d: id %zu of %zu returned differs", name,
                             st.len, a, keep_end, i, part.n);
            int expect_cut = !(f == 1 && keep_end) && full.n > need;
            cr_assert_eq(part.n < full.n, expect_cut, "%s: one word of %zu bytes (%s), keep_end %d: %zu of %zu ids",
                         name, st.len, a, keep_end, part.n, full.n);
        }
        sk_i32v_free(&full);
        sk_i32v_free(&part);
        sk_prompt_ws_free(&ws);
        sk_ids_free(&ec.ids);
        sk_ids_free(&whole);
        sk_ids_free(&left);
        sk_ids_free(&right);
        sk_tokenizer_free(tok);
    }
    sk_buf_free(&st);
}

/* vocab4096 with added tokens made of one class ("GATTACA", "777", "+-+"...), raw and
 * normalized; no_digit_merges leaves out the merges that make digit tokens (a digit run's
 * margin is then 1 byte). States: runs dense with those texts, the bounded ids at both ends
 * against the whole state's. Returns how many states got an id wrong; with drop_edge the
 * rules lose run_edge, else none may. */
static size_t added_token_runs(int no_digit_merges, int drop_edge) {
    size_t tl;
    char *tj = tu_slurp(SKYCMD_FIXTURES "/tokenizer/vocab4096/tokenizer.json", &tl);
    cr_assert(tj);
    cJSON *root = cJSON_Parse(tj);
    free(tj);
    cr_assert(root);
    cJSON *added = cJSON_CreateArray();
    static const char *contents[] = {"GATTACA", "777", "+-+", "GATTACAC", "7777", "-+-"};
    for (int i = 0; i < 6; i++) {
        cJSON *a = cJSON_CreateObject();
        cJSON_AddNumberToObject(a, "id", 4096 + i);
        cJSON_AddStringToObject(a, "content", contents[i]);
        cJSON_AddBoolToObject(a, "single_word", 0);
        cJSON_AddBoolToObject(a, "lstrip", 0);
        cJSON_AddBoolToObject(a, "rstrip", 0);
        cJSON_AddBoolToObject(a, "normalized", i >= 3);
        cJSON_AddBoolToObject(a, "special", 0);
        cJSON_AddItemToArray(added, a);
    }
    cJSON_ReplaceItemInObjectCaseSensitive(root, "added_tokens", added);
    if (no_digit_merges) {
        cJSON *merges = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "model"), "merges");
        for (int i = cJSON_GetArraySize(merges) - 1; i >= 0; i--) {
            cJSON *m = cJSON_GetArrayItem(merges, i);
            const char *a = cJSON_IsString(m) ? m->valuestring : cJSON_GetArrayItem(m, 0)->valuestring;
            const char *b = cJSON_IsString(m) ? strchr(a, ' ') + 1 : cJSON_GetArrayItem(m, 1)->valuestring;
            int digits = 1;
            for (const char *c = a; *c && c != b - (cJSON_IsString(m) ? 1 : 0); c++) digits &= *c >= '0' && *c <= '9';
            for (const char *c = b; *c; c++) digits &= *c >= '0' && *c <= '9';
            if (digits) cJSON_DeleteItemFromArray(merges, i);
        }
    }
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    skycmd_tokenizer *tok = NULL;
    sk_err e = {0};
    cr_assert_eq(sk_tokenizer_from_json(json, strlen(json), NULL, 0, &tok, &e), 0, "%s", e.msg);
    free(json);
    sk_cut_rules rules;
    sk_tokenizer_cut_rules(tok, &rules);
    cr_assert(rules.run_margin[0] && rules.run_margin[1] && rules.run_margin[2]);
    cr_assert(rules.run_edge[0] == 8 && rules.run_edge[1] == 4 && rules.run_edge[2] == 3, "edges %u %u %u",
              rules.run_edge[0], rules.run_edge[1], rules.run_edge[2]);
    if (no_digit_merges) cr_assert_eq(rules.run_margin[1], 1 + 4, "digits: margin %u", rules.run_margin[1]);
    if (drop_edge)
        for (int c = 0; c < 3; c++) {
            rules.run_margin[c] -= rules.run_edge[c];
            rules.run_edge[c] = 0;
        }
    tu_tok_ctx ec = {tok, {0}};
    sk_prompt_tok pt = tu_prompt_tok(&ec);
    sk_prompt_ws ws = {0};
    sk_i32v full = {0}, part = {0};
    sk_buf st;
    sk_buf_init(&st);
    static const char *alpha[3] = {"ACGT", "0177", "+-"};
    size_t states = 0, cut = 0, wrong = 0;
    for (int iter = 0; iter < 240; iter++) {
        int cls = iter % 3;
        st.len = 0;
        size_t bytes = 2500 + next_u32() % 6000;
        while (st.len < bytes) {
            uint32_t r = next_u32();
            if (r % 5 == 0) sk_buf_puts(&st, contents[cls]);
            else sk_buf_putc(&st, alpha[cls][(r >> 8) % strlen(alpha[cls])]);
        }
        size_t needs[] = {8, 64, 200};
        size_t need = needs[next_u32() % 3];
        int keep_end = (int)(next_u32() & 1);
        cr_assert_eq(sk_prompt_state_ids(&pt, st.data, st.len, &ws, &full, &e), 0, "%s", e.msg);
        cr_assert_eq(sk_prompt_state_ids_bounded(&pt, &rules, st.data, st.len, keep_end, need, &ws, &part, &e), 0, "%s",
                     e.msg);
        cr_assert(part.n >= (need < full.n ? need : full.n) && part.n <= full.n);
        states++;
        if (part.n < full.n) cut++;
        for (size_t i = 0; i < part.n; i++)
            if (part.v[i] != full.v[keep_end ? full.n - part.n + i : i]) {
                cr_assert(drop_edge, "class %d, %zu bytes, need %zu, keep_end %d: id %zu of %zu returned differs", cls,
                          st.len, need, keep_end, i, part.n);
                wrong++;
                break;
            }
    }
    cr_assert(cut * 2 > states, "only %zu of %zu states cut", cut, states);
    sk_buf_free(&st);
    sk_i32v_free(&full);
    sk_i32v_free(&part);
    sk_prompt_ws_free(&ws);
    sk_ids_free(&ec.ids);
    sk_tokenizer_free(tok);
    return wrong;
}

/* Around a run cut added tokens' matches can differ, so the margin is widened by their
 * length (run_edge): the ids are right with it; without it, where the merges' margin is
 * small, some are not. */
Test(state_bound, run_cuts_beside_added_tokens, .timeout = 300) {
    cr_assert_eq(added_token_runs(0, 0), 0);
    cr_assert_eq(added_token_runs(1, 0), 0);
    size_t wrong = added_token_runs(1, 1);
    cr_assert(wrong > 0, "no state went wrong without the edge: the test cannot see it");
    cr_log_info("without run_edge, %zu states got an id wrong", wrong);
}

/* A pair cut is never taken inside a contraction ("'re", "'ve", "'ll": one GPT-2 piece; cut
 * after "'r" the left part would be two), even where no merge joins the pair. */
Test(state_bound, no_pair_cut_inside_a_contraction) {
    static const uint64_t none_joined[256] = {0};
    sk_cut_rules r = {0};
    r.pair_join = none_joined;
    static const char *const texts[] = {"we're", "they've", "she'll", "it'll"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        const char *s = texts[i];
        const char *ap = strchr(s, '\'');
        size_t k = (size_t)(ap - s) + 2; /* just after the apostrophe's first letter */
        cr_expect(!sk_pair_cut_ok(&r, s, k), "\"%s\": cut before byte %zu", s, k);
        cr_expect(sk_pair_cut_ok(&r, s, 1), "\"%s\": a pair cut at 1 should be allowed here", s);
    }
}
