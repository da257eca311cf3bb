/*
 * tok_encode.h - the prompt builder's encode callback over a real tokenizer, for the tests,
 * the fuzz targets and the WASI golden program (no Criterion here).
 */
#ifndef SKYCMD_TOK_ENCODE_H
#define SKYCMD_TOK_ENCODE_H

#include "prompt/prompt.h"
#include "tokenizer/tokenizer.h"

/* The prompt builder's encode callback over a real tokenizer: ctx is a tu_tok_ctx whose
 * `ids` is reused between calls (free it with sk_ids_free). */
typedef struct tu_tok_ctx {
    const skycmd_tokenizer *tok;
    sk_ids ids;
} tu_tok_ctx;

static inline int tu_tok_encode(void *ctx, const char *text, size_t len, sk_i32v *out, sk_err *e) {
    tu_tok_ctx *c = ctx;
    c->ids.n = 0;
    int st = sk_tokenizer_encode(c->tok, text, len, &c->ids, e);
    if (st) return st;
    return sk_i32v_append(out, c->ids.ids, c->ids.n);
}

/* The prompt builder's view of c's tokenizer: the callback above and its special tokens. */
static inline sk_prompt_tok tu_prompt_tok(tu_tok_ctx *c) {
    sk_prompt_tok pt = {tu_tok_encode, c, sk_tokenizer_special(c->tok, SKYCMD_SPECIAL_CLS),
                        sk_tokenizer_special(c->tok, SKYCMD_SPECIAL_SEP),
                        sk_tokenizer_special(c->tok, SKYCMD_SPECIAL_MASK),
                        sk_tokenizer_special_text(c->tok, SKYCMD_SPECIAL_MASK)};
    return pt;
}

#endif /* SKYCMD_TOK_ENCODE_H */
