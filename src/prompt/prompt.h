/*
 * prompt.h - the Laya token sequence, exactly as the Python reference builds it
 * (laya.common.build_head + build_sequence, agent._encode_state):
 *
 *   [CLS] "<type> question: <ins>" [SEP] ([MASK] " <option>")* [SEP] <state> [SEP]
 *
 *  - every piece is tokenized on its own (add_special_tokens=False) and the special ids are
 *    inserted directly, so BPE never runs across a special token;
 *  - the tokenizer's mask text ("[MASK]") is replaced by " " in the instructions, each option
 *    text and the serialized state (after serializing, so JSON keys too);
 *  - each option keeps at most 48 text tokens after its marker; if the options leave fewer
 *    than 16 tokens of head_max_len they are all cut to max(4, (head_max_len-16) // n)
 *    tokens (marker included); the question then keeps max(8, what is left) tokens;
 *  - the state fills the room left in max_len (list states keep their end), then [SEP],
 *    then everything is cut at max_len and markers past it are dropped (an error: the
 *    caller reports it like Python does).
 *
 * The tokenizer is reached through a callback so this module depends on no tokenizer
 * implementation (and tests can drive it with any tokenizer). Work buffers live in an
 * sk_prompt_ws that a session keeps, so a warm session builds prompts without allocating.
 */
#ifndef SK_PROMPT_H
#define SK_PROMPT_H

#include <stddef.h>
#include <stdint.h>

#include "../util/util.h"
#include "pyjson.h"

#define SK_PROMPT_OPTION_CAP 48
#define SK_PROMPT_MIN_QUESTION 8
#define SK_PROMPT_MIN_OPTION 4
#define SK_PROMPT_HEAD_RESERVE 16

typedef struct sk_i32v {
    int32_t *v;
    size_t n, cap;
} sk_i32v;

int sk_i32v_reserve(sk_i32v *a, size_t extra);
int sk_i32v_push(sk_i32v *a, int32_t x);
int sk_i32v_append(sk_i32v *a, const int32_t *x, size_t n);
void sk_i32v_free(sk_i32v *a);

/* Append the ids of `text` (HF tokenizers, add_special_tokens=False) to out. */
typedef int (*sk_encode_fn)(void *ctx, const char *text, size_t len, sk_i32v *out, sk_err *e);

typedef struct sk_prompt_tok {
    sk_encode_fn encode;
    void *ctx;
    int32_t cls, sep, mask;
    const char *mask_text; /* e.g. "[MASK]"; NULL or "" = nothing to remove */
} sk_prompt_tok;

typedef struct sk_prompt_ws {
    sk_buf text;       /* unmasked text being tokenized */
    sk_i32v head;      /* question tokens */
    sk_i32v opts;      /* every option's tokens, marker first, back to back */
    size_t *opt_end;   /* end offset of option i in opts */
    size_t opt_cap;
    size_t head_len;   /* the last sk_prompt_build's head length (through its closing [SEP]) */
} sk_prompt_ws;

void sk_prompt_ws_free(sk_prompt_ws *ws);

/* Python's s.replace(mask_text, " ") appended to out. */
void sk_prompt_unmask(sk_buf *out, const char *s, size_t n, const char *mask_text);

/* The state's ids, tokenized once per request: encode(unmask(state)). out is reset first. */
int sk_prompt_state_ids(const sk_prompt_tok *t, const char *state, size_t n, sk_prompt_ws *ws,
                        sk_i32v *out, sk_err *e);

/* The state's ids as far as a sequence of `need` tokens can use them: the first `need`
 * ids of sk_prompt_state_ids() (all of them when keep_end is 0), or its last `need` ids
 * (keep_end: a list state, which keeps its end). Identical ids, at a cost linear in what
 * is used rather than in the state's size: rules are sk_tokenizer_cut_rules() of the
 * tokenizer behind t->encode (src/util/util.h), and only a prefix (or suffix) of the
 * state that ends at such a cut (an ASCII space after a printable ASCII byte; a change of
 * letter / digit / other inside a word; no mask text touching it) is tokenized, doubled
 * until it yields `need` ids. A cut inside a long run of one class (a run of digits)
 * serves too, the ids near it dropped: the last run_margin ids of a prefix; for a suffix
 * as many as its bound on the text after the cut says (none where that run is one
 * repeated token). A state with no cut is tokenized whole. rules NULL: no cuts. out is
 * reset first. */
int sk_prompt_state_ids_bounded(const sk_prompt_tok *t, const sk_cut_rules *rules, const char *state, size_t n,
                                int keep_end, size_t need, sk_prompt_ws *ws, sk_i32v *out, sk_err *e);

/* One question. The rendered option texts are opts[i * stride bytes] for i < n_opts (so an
 * array of any struct holding an sk_jstr can be passed). ids and markers are reset
 * and filled; on success markers->n == n_opts. A question whose markers fall past max_len
 * fails with SKYCMD_E_REQUEST (Python's message, without the question id). */
int sk_prompt_build(const sk_prompt_tok *t, const char *type_name, const char *ins,
                    size_t ins_len, const sk_jstr *opts, size_t stride, size_t n_opts,
                    const int32_t *state_ids,
                    size_t n_state, int truncate_left, size_t max_len, size_t head_max_len,
                    sk_prompt_ws *ws, sk_i32v *ids, sk_i32v *markers, sk_err *e);

/* laya.common.parallel_layout: position ids and option ids of an n-token sequence whose k
 * markers and head length are given. Every option starts at the position of the first
 * marker; option_ids are s + 1 on option s's tokens (from its [MASK] to the next marker, the
 * last one to the head's closing [SEP]) and 0 elsewhere; the closing [SEP] and the state
 * continue after the longest option. */
void sk_prompt_parallel_layout(const int32_t *markers, size_t k, size_t head_len, size_t n,
                               int32_t *pos, int32_t *opt);

#endif
