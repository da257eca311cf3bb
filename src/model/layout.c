/*
 * layout.c - the option layouts of the encoder's attention (rl_agent_config.json
 * "option_layout").
 *
 * Contract: the sequential layout (positions 0..n-1, every token sees every token, local
 * layers a window of |i - j| <= W/2) is the fast path of forward.c's attention(). The
 * parallel layout (laya.common.parallel_layout / parallel_option_masks) gives each token a
 * position id and an option id (sk_seq.pos / .opt, from sk_prompt_parallel_layout): RoPE
 * uses the position ids (forward.c rope_rows), and sk_attention_parallel() applies its mask:
 * no attention between tokens of two different options, local windows measured in position
 * ids. The decision head is the same in both layouts. The result depends only on the
 * sequence, never on the batch or thread count.
 */
#include <math.h>
#include <stddef.h>

#include "model_internal.h"

/* Encoder attention of one sequence in the parallel option layout
 * (laya.common.parallel_option_masks): query t attends to key j unless both belong to
 * options and to different ones, and on local layers only when their position ids are at
 * most win apart (the window is measured in positions, which options share). Masks of this
 * shape are not key ranges, so this path computes every allowed score directly: f32
 * products, the softmax and the weighted sum of values accumulated in double. */
void sk_attention_parallel(sk_scratch *s, const seq_rows *sr, const float *qkv, size_t ld,
                           size_t H, size_t D, size_t d, size_t win, float scale, float *out,
                           size_t ldo) {
    const size_t n = sr->n;
    float *sc = s->tws[0].sc;   /* cap * SK_QB floats >= n */
    double acc[1024];           /* one head's output (D <= 1024, checked at load) */
    for (size_t h = 0; h < H; h++)
        for (size_t t = 0; t < n; t++) {
            const float *q = qkv + t * ld + h * D;
            const int32_t ot = sr->opt ? sr->opt[t] : 0;
            const long pt = sr->pos ? sr->pos[t] : (long)t;
            float mx = -INFINITY;
            for (size_t j = 0; j < n; j++) {
                const int32_t oj = sr->opt ? sr->opt[j] : 0;
                const long pj = sr->pos ? sr->pos[j] : (long)j;
                const long dist = pt > pj ? pt - pj : pj - pt;
                if ((ot > 0 && oj > 0 && ot != oj) || (win && (size_t)dist > win)) {
                    sc[j] = -INFINITY;
                    continue;
                }
                const float *k = qkv + j * ld + d + h * D;
                float dot = 0.0f;
                for (size_t c = 0; c < D; c++) dot += q[c] * k[c];
                sc[j] = dot * scale;
                if (sc[j] > mx) mx = sc[j];
            }
            double sum = 0.0;
            for (size_t c = 0; c < D; c++) acc[c] = 0.0;
            for (size_t j = 0; j < n; j++) {
                if (sc[j] == -INFINITY) continue;
                const double w = exp((double)sc[j] - (double)mx);
                sum += w;
                const float *v = qkv + j * ld + 2 * d + h * D;
                for (size_t c = 0; c < D; c++) acc[c] += w * (double)v[c];
            }
            float *o = out + t * ldo + h * D;
            for (size_t c = 0; c < D; c++) o[c] = (float)(acc[c] / sum);
        }
}
