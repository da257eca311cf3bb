/*
 * test_state_bound.c - sk_prompt_state_ids_bounded() gives exactly the ids the whole state's
 * tokenization gives where a sequence can use them (the first `need`, or the last `need`
 * for a list state), on the real tokenizer of the prompt fixtures, for random states made
 * of what could break a cut: words, runs of spaces, tabs and newlines, punctuation,
 * contractions, the mask text, digits, accented and combining characters, CJK, emoji.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

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
    int cut_safe = sk_tokenizer_space_cut_safe(tok);
    cr_assert(cut_safe, "the fixture tokenizer should allow cuts (else this test checks nothing)");
    tu_tok_ctx ec = {tok, {0}};
    sk_prompt_tok pt = {tu_tok_encode, &ec, sk_tokenizer_special(tok, SKYCMD_SPECIAL_CLS),
                        sk_tokenizer_special(tok, SKYCMD_SPECIAL_SEP), sk_tokenizer_special(tok, SKYCMD_SPECIAL_MASK),
                        sk_tokenizer_special_text(tok, SKYCMD_SPECIAL_MASK)};
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
        cr_assert_eq(sk_prompt_state_ids_bounded(&pt, cut_safe, st.data, st.len, keep_end, need, &ws, &part, &e), 0,
                     "%s", e.msg);
        if (part.n < full.n) cut_used++;
        cr_assert(part.n >= (need < full.n ? need : full.n), "iter %d: %zu ids, need %zu of %zu", iter, part.n,
                  need, full.n);
        size_t k = need < full.n ? need : full.n;
        for (size_t i = 0; i < k; i++) {
            size_t fi = keep_end ? full.n - k + i : i, pi = keep_end ? part.n - k + i : i;
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
