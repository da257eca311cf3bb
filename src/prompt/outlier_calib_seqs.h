/*
 * outlier_calib_seqs.h - the input sequences of the int8 outlier calibration
 * (src/quant/outlier_calib.h): questions laid out the way the model reads its requests.
 *
 * Contract:
 *  - sk_calib_sequences_tok builds SK_CALIB_N_SEQS sequences: each a question laid out by
 *    the model's own prompt template (laya's [CLS] question [SEP] options [SEP] state
 *    [SEP], sk_prompt_build, with the model's own tokenizer tok), the question types in
 *    turn, and the state either one of the built-in prompts or a "vocabulary state": tokens
 *    drawn (fixed seed) from the tokens the model's tokenizer learned, the most frequent
 *    most often (BPE merge rank, read from g's tokenizer.ggml.merges and token_type; id
 *    order without merges). A model trained on one domain with its own tokenizer
 *    (s1-pico-flappy's state tokenizer) reads the built-in English prompts as a run of
 *    single bytes it never saw; its vocabulary states are made of its own words. The same
 *    inputs always give the same sequences.
 *  - The loader does not decode the tokenizer for them: src/api/model.c builds them with
 *    the tokenizer it keeps for the model and hands them down (sk_calib_source,
 *    src/model/model.h). sk_calib_sequences decodes g's tokenizer itself (tests, tools, and
 *    sk_model_load without a source).
 */
#ifndef SK_OUTLIER_CALIB_SEQS_H
#define SK_OUTLIER_CALIB_SEQS_H

#include <stddef.h>
#include <stdint.h>

#include "../gguf/gguf.h"
#include "../tokenizer/tokenizer.h"

#define SK_CALIB_N_PROMPTS 12
extern const char *const sk_calib_prompts[SK_CALIB_N_PROMPTS];

/* Vocabulary states, and all calibration sequences (prompt states first). */
#define SK_CALIB_N_VOCAB 12
#define SK_CALIB_N_SEQS (SK_CALIB_N_PROMPTS + SK_CALIB_N_VOCAB)

typedef struct sk_calib_seq {
    int32_t *ids;
    size_t n;
    int qtype;        /* 0 choice, 1 score, 2 noul */
    int32_t *pos, *opt; /* laya.common.parallel_layout of the sequence (RoPE position and
                           option of each token), for models with the parallel layout */
} sk_calib_seq;

/* seqs[SK_CALIB_N_SEQS] (max_len, head_max_len: the model's decision.max_tokens and
 * max_head_tokens, 0 for the defaults 512 and 96); free with sk_calib_sequences_free. */
int sk_calib_sequences_tok(const sk_gguf *g, const skycmd_tokenizer *tok, size_t max_len,
                           size_t head_max_len, sk_calib_seq *seqs, sk_err *e);
/* The same with g's own tokenizer, decoded for the call. */
int sk_calib_sequences(const sk_gguf *g, size_t max_len, size_t head_max_len, sk_calib_seq *seqs,
                       sk_err *e);
void sk_calib_sequences_free(sk_calib_seq *seqs);

#endif /* SK_OUTLIER_CALIB_SEQS_H */
