/*
 * seqbatch.c - packing sequences into one forward batch and scoring it (seqbatch.h).
 */
#include <stdlib.h>
#include <string.h>

#include "skycmd.h"
#include "seqbatch.h"

int sk_seqbatch_fits(const sk_seqbatch *b, size_t n_tokens) {
    return b->n == 0 || (b->n < SK_BATCH_SEQS && b->ids.n + n_tokens <= SK_BATCH_TOKENS);
}

int sk_seqbatch_add(sk_seqbatch *b, const sk_model *m, const sk_i32v *ids, const sk_i32v *markers,
                    size_t head_len, int qtype) {
    if (b->n >= SK_BATCH_SEQS) return SKYCMD_E_INTERNAL;
    sk_seq *sq = &b->seqs[b->n];
    memset(sq, 0, sizeof *sq);
    sq->n = ids->n;
    sq->n_markers = markers->n;
    sq->qtype = qtype;
    b->ids_off[b->n] = b->ids.n;
    b->mk_off[b->n] = b->markers.n;
    if (sk_i32v_append(&b->ids, ids->v, ids->n) || sk_i32v_append(&b->markers, markers->v, markers->n))
        return SKYCMD_E_NOMEM;
    if (sk_model_hparams(m)->option_layout == SK_LAYOUT_PARALLEL) {
        /* laya.common.parallel_layout of this sequence */
        if (sk_i32v_reserve(&b->pos, ids->n) || sk_i32v_reserve(&b->opt, ids->n)) return SKYCMD_E_NOMEM;
        sk_prompt_parallel_layout(markers->v, markers->n, head_len, ids->n, b->pos.v + b->pos.n,
                                  b->opt.v + b->opt.n);
        b->pos.n += ids->n;
        b->opt.n += ids->n;
    }
    b->n++;
    return 0;
}

int sk_seqbatch_run(sk_seqbatch *b, const sk_model *m, sk_scratch *scratch, sk_err *e) {
    if (!b->n) return 0;
    if (b->markers.n > b->logits_cap) {
        size_t cap = b->logits_cap ? b->logits_cap : 64;
        while (cap < b->markers.n) cap *= 2;
        float *l = sk_malloc_array(cap, sizeof *l);
        if (!l) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory answering the request");
        free(b->logits);
        b->logits = l;
        b->logits_cap = cap;
    }
    /* pointers are set only now: the buffers may have moved while they grew */
    int parallel = sk_model_hparams(m)->option_layout == SK_LAYOUT_PARALLEL;
    for (size_t k = 0; k < b->n; k++) {
        sk_seq *q = &b->seqs[k];
        q->ids = b->ids.v + b->ids_off[k];
        q->markers = b->markers.v + b->mk_off[k];
        if (parallel) {
            q->pos = b->pos.v + b->ids_off[k];
            q->opt = b->opt.v + b->ids_off[k];
        }
        q->logits = b->logits + b->mk_off[k];
    }
    return sk_model_forward_batch(m, scratch, b->seqs, b->n, e);
}

void sk_seqbatch_clear(sk_seqbatch *b) { b->n = b->ids.n = b->markers.n = b->pos.n = b->opt.n = 0; }

void sk_seqbatch_free(sk_seqbatch *b) {
    sk_i32v_free(&b->ids);
    sk_i32v_free(&b->markers);
    sk_i32v_free(&b->pos);
    sk_i32v_free(&b->opt);
    free(b->logits);
    memset(b, 0, sizeof *b);
}
