/* gate.c - laya.confidence's abstention gate. See gate.h for the rules and their source. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate.h"
#include "request.h"

const char *const sk_gate_key_names[SK_GATE_KEYS] = {
    "choice:2", "choice:3-5", "choice:6-10", "choice:11+",
    "score:2",  "score:3-5",  "score:6-10",  "score:11+",
    "noul:2",   "noul:3-5",   "noul:6-10",   "noul:11+",  "default"};

int sk_gate_key_index(const char *s, size_t n) {
    for (int i = 0; i < SK_GATE_KEYS; i++)
        if (strlen(sk_gate_key_names[i]) == n && memcmp(s, sk_gate_key_names[i], n) == 0) return i;
    return -1;
}

/* Python's %r of a JSON value, as laya's messages print it (strings quoted, true -> True). */
static void put_repr(sk_buf *b, const sk_jv *v) {
    switch (v->type) {
    case SK_JSTR: {
        sk_buf_putc(b, '\'');
        size_t n = v->n > 80 ? 80 : v->n;
        while (n > 0 && n < v->n && ((unsigned char)v->s[n] & 0xC0) == 0x80) n--;
        sk_buf_append(b, v->s, n);
        if (n < v->n) sk_buf_puts(b, "...");
        sk_buf_putc(b, '\'');
        break;
    }
    case SK_JNUM:
    case SK_JTRUE:
    case SK_JFALSE:
    case SK_JNULL: sk_py_str_scalar(b, v); break;
    default: {
        sk_buf t;
        sk_buf_init(&t);
        sk_pyjson_dump(&t, v);
        if (t.len > 80) {
            sk_buf_append(b, t.data, 80);
            sk_buf_puts(b, "...");
        } else if (t.data) {
            sk_buf_append(b, t.data, t.len);
        }
        sk_buf_free(&t);
    }
    }
}

static int bad_value(const sk_jv *v, sk_err *e) {
    sk_buf b;
    sk_buf_init(&b);
    put_repr(&b, v);
    int rc = sk_fail(e, SKYCMD_E_REQUEST, "min_confidence must be a float in [0.0, 1.0], got %.*s",
                     (int)b.len, b.data ? b.data : "");
    sk_buf_free(&b);
    return rc;
}

/* laya's _check_one_threshold */
static int one_threshold(const sk_jv *v, double *out, sk_err *e) {
    if (v->type != SK_JNUM || !isfinite(v->num) || v->num < 0.0 || v->num > 1.0)
        return bad_value(v, e);
    *out = v->num;
    return 0;
}

int sk_gate_from_jv(const sk_jv *v, sk_gate *g, sk_err *e) {
    memset(g, 0, sizeof *g);
    sk_gate t;
    memset(&t, 0, sizeof t);
    if (v->type == SK_JOBJ) {
        if (v->n == 0)
            return sk_fail(e, SKYCMD_E_REQUEST,
                           "a min_confidence map must be a non-empty dict of bucket -> float, got {}");
        for (size_t i = 0; i < v->n; i++) {
            int k = sk_gate_key_index(v->keys[i].s, v->keys[i].n);
            if (k < 0) {
                sk_jv key = {.type = SK_JSTR, .s = v->keys[i].s, .n = v->keys[i].n};
                sk_buf b;
                sk_buf_init(&b);
                put_repr(&b, &key);
                int rc = sk_fail(e, SKYCMD_E_REQUEST,
                                 "min_confidence map keys must be a bucket like 'choice:3-5' or "
                                 "'default', got %.*s", (int)b.len, b.data ? b.data : "");
                sk_buf_free(&b);
                return rc;
            }
            int rc = one_threshold(&v->items[i], &t.thr[k], e);
            if (rc) return rc;
            t.has[k] = 1;
        }
        t.is_map = 1;
    } else {
        int rc = one_threshold(v, &t.scalar, e);
        if (rc) return rc;
    }
    t.set = 1;
    *g = t;
    return 0;
}

int sk_gate_from_text(const char *text, sk_gate *g, sk_err *e) {
    memset(g, 0, sizeof *g);
    if (!text || !*text) return 0;
    sk_jdoc d;
    int rc = sk_json_parse(text, strlen(text), &d, e);
    if (rc) {
        sk_err_prefix(e, "min_confidence");
        return rc == SKYCMD_E_JSON ? SKYCMD_E_INVALID_ARGUMENT : rc;
    }
    if (d.root.type != SK_JNULL) rc = sk_gate_from_jv(&d.root, g, e);
    sk_jdoc_free(&d);
    return rc;
}

double sk_round4(double x) {
    if (!isfinite(x)) return x;
    /* glibc prints the exact binary value correctly rounded, as Python's round() decides */
    char t[64];
    snprintf(t, sizeof t, "%.4f", x);
    return sk_strtod_c(t, NULL);
}

double sk_answer_confidence(const double *p, size_t n) {
    if (n < 1) return 1.0;
    double mx = p[0];
    for (size_t i = 0; i < n; i++) {
        if (isnan(p[i])) return NAN;
        if (p[i] > mx) mx = p[i];
    }
    return sk_round4(mx < 0.0 ? 0.0 : mx > 1.0 ? 1.0 : mx);
}

double sk_gate_threshold(const sk_gate *g, int qtype, size_t n) {
    if (!g->set) return 0.0;
    if (!g->is_map) return g->scalar;
    if (qtype >= 0 && qtype <= 2) {
        int size = n <= 2 ? 0 : n <= 5 ? 1 : n <= 10 ? 2 : 3;
        int k = qtype * 4 + size;
        if (g->has[k]) return g->thr[k];
    }
    return g->has[SK_GATE_DEFAULT] ? g->thr[SK_GATE_DEFAULT] : 0.0;
}

int sk_gate_state(const sk_gate *g, int qtype, const double *p, size_t n, double *thr) {
    *thr = sk_gate_threshold(g, qtype, n);
    double c = sk_answer_confidence(p, n);
    if (!isfinite(c)) return SK_GATE_UNEVALUATED;
    return c < *thr ? SK_GATE_ABSTAINED : SK_GATE_PASSED;
}

const char *sk_gate_state_name(int state) {
    switch (state) {
    case SK_GATE_PASSED: return "passed";
    case SK_GATE_ABSTAINED: return "abstained";
    case SK_GATE_UNEVALUATED: return "unevaluated";
    default: return NULL;
    }
}
