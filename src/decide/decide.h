/*
 * decide.h - from raw scorer logits to answers and the response JSON.
 *
 *  - Temperatures: the GGUF keys <arch>.decision.temperature.<type>[.<bucket>] with the
 *    buckets "2" (k <= 2), "3_5", "6_10" and "11" (k >= 11), k being the number of markers.
 *    Lookup is Python's: the bucket, else the type, else 1.0; every stored value goes through
 *    laya's clamp_temperature (confined to [0.5, 5]; non-finite or non-number -> 1.0).
 *  - Probabilities: softmax(z / T), max-subtracted, in double.
 *  - Answers follow llama-server's format_answer (no rounding): choice = first argmax,
 *    score = sum i*p_i, noul = p[1] (options are [false, true]); confidences are the TypeSafe
 *    formulas llama.cpp uses (choice and score; noul has none: NaN).
 *  - The envelope is {"model", "answers", "usage": {"input_tokens", "output_tokens": 0}},
 *    answers in request order, numbers printed with the shortest round-trip digits.
 */
#ifndef SK_DECIDE_H
#define SK_DECIDE_H

#include <stddef.h>
#include <stdint.h>

#include "../gguf/gguf.h"
#include "request.h"

#define SK_TEMP_BUCKETS 5 /* [0] = the type's own, [1..4] = "2", "3_5", "6_10", "11" */

typedef struct sk_temps {
    double t[3][SK_TEMP_BUCKETS]; /* clamped values; NAN = key absent */
} sk_temps;

extern const char *const sk_temp_bucket_names[SK_TEMP_BUCKETS];

/* laya.common.clamp_temperature. */
double sk_clamp_temperature(double t);
/* 1..4 for k markers (laya.common.temp_bucket). */
int sk_temp_bucket(size_t k);
/* Read every <arch>.decision.temperature.* key (unknown suffixes are ignored). */
void sk_temps_from_gguf(const sk_gguf *g, const char *arch, sk_temps *out);
void sk_temps_init(sk_temps *t);
double sk_temp_for(const sk_temps *t, int qtype, size_t k);

/* p[i] = softmax(z / T) in double. */
void sk_softmax(const float *z, size_t k, double T, double *p);
/* decision_confidence_choice / _score of llama.cpp (TypeSafe's definitions). */
double sk_conf_choice(const double *p, size_t n);
double sk_conf_score(const double *p, size_t n);

typedef struct sk_answer {
    int type;          /* skycmd_qtype */
    size_t n;          /* options */
    const double *p;   /* n probabilities, request order (borrowed) */
    size_t best;       /* first argmax */
    double value;      /* choice: p[best]; score: expected level; noul: P(true) */
    double confidence; /* choice/score; NaN for noul */
} sk_answer;

/* Fill a from probabilities p (already softmaxed). SKYCMD_E_INTERNAL if p holds a NaN
 * (llama-server: "the model could not evaluate the decision"). */
int sk_answer_from_probs(int type, const double *p, size_t n, sk_answer *a, sk_err *e);

/* One answer as the response reports it, owning copies of the request's strings (so the
 * JSON can be written after the request is gone). Strings are NUL-terminated and carry
 * their lengths: a JSON key may hold U+0000. */
typedef struct sk_answer_json {
    const char *id;
    size_t id_len;
    int type;          /* skycmd_qtype */
    size_t best;
    double value, confidence;
    size_t n;          /* options */
    const char **keys;
    size_t *key_lens;
    double *p;
    const char *legend;  /* score: the JSON object {"key": description, ...}; else NULL */
    size_t legend_len;
    /* score: per level, its description as text (a string as decoded, any other value as
     * its compact JSON), NULL where the request gave none; NULL for other types. */
    const char **level_legends;
    int gate;            /* SK_GATE_*: the abstention state; SK_GATE_NONE writes nothing */
    double gate_thr;     /* its threshold (abstention_threshold) */
} sk_answer_json;

/* Copies of answers a[0..r->nq) with the request's ids, keys and legends, allocated in
 * arena; NULL when out of memory. */
sk_answer_json *sk_answer_json_copy(const sk_request *r, const sk_answer *a, sk_arena *arena);
/* What a multipass decide (engine/multipass.h) adds to an answer and to usage (docs/compat.md "Long states, truncation,
 * tournaments"). All zero = nothing added: the default wire. */
typedef struct sk_answer_extra {
    int has_window;              /* answers.<id>.window */
    int64_t w_index, w_start, w_end, w_count;
    int truncated;               /* in usage.truncated_questions (-1: not recorded) */
    int64_t options_distinct;    /* usage.options.<id>: -1 = no collapse (or not recorded) */
    int64_t tokens_per_option;   /*   its tokens_per_option, -1 = None */
    int64_t rounds;              /* x_tournament.rounds (0: no tournament) */
    size_t n_finalists;          /* x_tournament.finalists: indices into the answer's keys */
    size_t *finalists;
    int order_dropped;           /* x_tournament.option_order_dropped */
} sk_answer_extra;

typedef struct sk_response_extra {
    const sk_answer_extra *a;    /* per answer, or NULL: nothing added */
    int windows_on;              /* write usage.windows */
    int64_t windows;
    int truncation;              /* 0 not recorded, 1 recorded and on the wire, 2 recorded only
                                    * (3: recorded only, counts of a cut state are lower bounds) */
    int truncated_is_count;      /* usage.truncated is a window count (long), else a bool */
    int64_t truncated, state_tokens, state_tokens_dropped;
} sk_response_extra;

/* The response JSON for answers a[0..n), with x's additions (x NULL: none). */
void sk_response_json_write_ext(sk_buf *b, const char *model_name, const sk_answer_json *a,
                                size_t n, int64_t input_tokens, const sk_response_extra *x);
/* The response JSON for answers a[0..n). */
void sk_response_json_write(sk_buf *b, const char *model_name, const sk_answer_json *a,
                            size_t n, int64_t input_tokens);
/* Gate answers a[0..n) with g (nothing when g is unset): laya's apply_confidence_gate. */
void sk_answers_gate(sk_answer_json *a, size_t n, const sk_gate *g);
/* A double as JSON (shortest round-trip digits, Python repr style). Non-finite -> null. */
void sk_json_put_double(sk_buf *b, double x);

#endif
