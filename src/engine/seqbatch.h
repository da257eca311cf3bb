/*
 * seqbatch.h - the sequences of one forward batch, packed back to back.
 *
 * The batch runner (runner.h) builds sequences one by one and scores them in batches
 * (sk_model_forward_batch: the rows of a batch share every matrix product, and each sequence
 * gets exactly the logits it would get alone). A batch holds at most SK_BATCH_SEQS sequences
 * and SK_BATCH_TOKENS tokens so the scratch stays bounded; the sequences are packed without
 * padding, so a batch costs exactly the work of its sequences run one by one.
 *
 * Use: sk_seqbatch_fits() before sk_seqbatch_add(); sk_seqbatch_run() scores what was added
 * (sequence k's n_markers logits at b->seqs[k].logits), then sk_seqbatch_clear(). The buffers
 * grow to the largest batch seen and are reused.
 */
#ifndef SK_SEQBATCH_H
#define SK_SEQBATCH_H

#include "../model/model.h"
#include "../prompt/prompt.h"
#include "../util/util.h"

#define SK_BATCH_SEQS 16
#define SK_BATCH_TOKENS 4096

typedef struct sk_seqbatch {
    sk_i32v ids, markers;          /* every sequence's, back to back */
    sk_i32v pos, opt;              /* parallel option layout only: parallel to ids */
    sk_seq seqs[SK_BATCH_SEQS];
    size_t ids_off[SK_BATCH_SEQS], mk_off[SK_BATCH_SEQS];
    size_t n;                      /* sequences added */
    float *logits;
    size_t logits_cap;
} sk_seqbatch;

/* 1 when a sequence of n_tokens can join the batch (an empty batch takes any). */
int sk_seqbatch_fits(const sk_seqbatch *b, size_t n_tokens);
/* Append one sequence (ids, markers; head_len = the prompt head, for the parallel layout);
 * it becomes b->seqs[b->n - 1]. 0 or SKYCMD_E_NOMEM. */
int sk_seqbatch_add(sk_seqbatch *b, const sk_model *m, const sk_i32v *ids, const sk_i32v *markers,
                    size_t head_len, int qtype);
/* Score the batch: 0, or the forward pass's status with e set. */
int sk_seqbatch_run(sk_seqbatch *b, const sk_model *m, sk_scratch *scratch, sk_err *e);
void sk_seqbatch_clear(sk_seqbatch *b);
void sk_seqbatch_free(sk_seqbatch *b);

#endif /* SK_SEQBATCH_H */
