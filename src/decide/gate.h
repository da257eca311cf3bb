/*
 * gate.h - the opt-in abstention gate: laya.confidence's check_min_confidence (validation and
 * its messages), resolve_min_confidence (per-bucket lookup) and apply_confidence_gate (the
 * "abstention" / "abstention_threshold" / "low_confidence" fields), laya 0.4.15.
 *
 *  - A threshold is a number in [0, 1] (booleans, non-numbers and non-finite values refused),
 *    or a non-empty map whose keys are the twelve option-count buckets "<type>:<size>"
 *    (type choice|score|noul, size 2|3-5|6-10|11+) plus "default"; anything else is refused.
 *    Duplicate keys: the last value wins (Python's dict).
 *  - The number gated is laya's `answer_confidence`: max(p) clamped to [0, 1] and rounded to
 *    4 decimals as laya reports it (Python round(x, 4)), whatever the question type.
 *  - A map gates each answer at its bucket's entry, else "default", else 0.0 (gate nothing);
 *    the bucket's size counts the answer's options (noul: 2).
 *  - States: passed (confidence >= threshold), abstained (below; also "low_confidence":
 *    true), unevaluated (no usable confidence: a NaN). With no gate set nothing is written.
 */
#ifndef SK_GATE_H
#define SK_GATE_H

#include <stddef.h>

#include "../prompt/pyjson.h"

#define SK_GATE_KEYS 13 /* 3 types x 4 sizes, then "default" */
#define SK_GATE_DEFAULT 12

enum { SK_GATE_NONE = 0, SK_GATE_PASSED = 1, SK_GATE_ABSTAINED = 2, SK_GATE_UNEVALUATED = 3 };

typedef struct sk_gate {
    int set;                        /* 0: no gate (nothing is written) */
    int is_map;
    double scalar;
    double thr[SK_GATE_KEYS];
    unsigned char has[SK_GATE_KEYS];
} sk_gate;

/* The bucket key of index i ("choice:2", ..., "default"). */
extern const char *const sk_gate_key_names[SK_GATE_KEYS];
/* Index of a bucket key, -1 if it is none of them. */
int sk_gate_key_index(const char *s, size_t n);

/* check_min_confidence of a parsed JSON value (JSON null is the caller's "absent"). Errors:
 * SKYCMD_E_REQUEST with laya's message. */
int sk_gate_from_jv(const sk_jv *v, sk_gate *g, sk_err *e);
/* The same from JSON text ("0.7", "{\"choice:2\": 0.6}"); NULL, "" or "null" clear it. */
int sk_gate_from_text(const char *text, sk_gate *g, sk_err *e);

/* Python round(x, 4). */
double sk_round4(double x);
/* laya's answer_confidence of p[0..n): round(clamp(max p, 0, 1), 4); NaN if p holds one. */
double sk_answer_confidence(const double *p, size_t n);
/* The threshold an answer of `qtype` with n options is gated at. */
double sk_gate_threshold(const sk_gate *g, int qtype, size_t n);
/* The state of that answer (SK_GATE_PASSED/_ABSTAINED/_UNEVALUATED), its threshold in *thr. */
int sk_gate_state(const sk_gate *g, int qtype, const double *p, size_t n, double *thr);
/* "passed", "abstained", "unevaluated" (NULL for SK_GATE_NONE). */
const char *sk_gate_state_name(int state);

#endif
