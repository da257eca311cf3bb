/* request_parse.c - validate a /v1/systemone body and render its texts like the Python Laya
 * runtime (agent._to_internal + common.render_options). See request.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request.h"

const char *const sk_qtype_names[3] = {"choice", "score", "noul"};

typedef struct rctx {
    sk_request *r;
    sk_err *e;
    sk_buf tmp;
} rctx;

/* Copy a rendered text into the request's arena. */
static int keep(rctx *c, const char *s, size_t n, sk_jstr *out) {
    char *d = sk_arena_alloc(&c->r->doc.arena, n + 1);
    if (!d) return sk_fail(c->e, SKYCMD_E_NOMEM, "out of memory building the request");
    if (n) memcpy(d, s, n);
    d[n] = '\0';
    out->s = d;
    out->n = n;
    return 0;
}

static int keep_buf(rctx *c, sk_jstr *out) {
    if (c->tmp.failed) return sk_fail(c->e, SKYCMD_E_NOMEM, "out of memory building the request");
    return keep(c, c->tmp.data ? c->tmp.data : "", c->tmp.len, out);
}

int sk_question_id_len(sk_jstr id) {
    size_t n = id.n;
    if (n > 96) {
        n = 96;
        while (n > 0 && ((unsigned char)id.s[n] & 0xC0) == 0x80) n--;
    }
    return (int)n;
}

#define QFAIL(c, q, status, ...) qfail((c), (q), (status), __VA_ARGS__)
static int qfail(rctx *c, sk_jstr id, int status, const char *fmt, ...) SK_PRINTF(4, 5);
static int qfail(rctx *c, sk_jstr id, int status, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int n = sk_question_id_len(id);
    return sk_fail(c->e, status, "questions.%.*s%s: %s", n, id.s, (size_t)n < id.n ? "..." : "",
                   msg);
}

/* render_criterion: strings as they are, anything else as json.dumps. */
static void render_criterion(sk_buf *b, const sk_jv *v) {
    if (v->type == SK_JSTR) sk_buf_append(b, v->s, v->n);
    else sk_pyjson_dump(b, v);
}

static int is_empty_desc(const sk_jv *v) {
    return !v || v->type == SK_JNULL || (v->type == SK_JSTR && v->n == 0);
}

/* Python's str.isspace() set, for str.strip() of noul labels. */
static int py_space(unsigned cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 ||
           cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

static size_t utf8_decode(const unsigned char *s, size_t n, unsigned *cp) {
    unsigned c = s[0];
    if (c < 0x80) { *cp = c; return 1; }
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (len > n) { *cp = 0xFFFD; return 1; }
    unsigned v = c & (0x3Fu >> (len - 1));
    for (size_t i = 1; i < len; i++) v = (v << 6) | (s[i] & 0x3F);
    *cp = v;
    return len;
}

/* The [start, end) range of s after Python's str.strip(). */
static sk_jstr py_strip(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t a = 0, z = n;
    while (a < z) {
        unsigned cp;
        size_t l = utf8_decode(u + a, z - a, &cp);
        if (!py_space(cp)) break;
        a += l;
    }
    while (z > a) {
        size_t b = z - 1;
        while (b > a && (u[b] & 0xC0) == 0x80) b--;
        unsigned cp;
        utf8_decode(u + b, z - b, &cp);
        if (!py_space(cp)) break;
        z = b;
    }
    sk_jstr r = {s + a, z - a};
    return r;
}

/* Python treats 1, 1.0 and True as one dict key; strings only equal strings. */
static int labels_equal(const sk_jv *a, const sk_jv *b) {
    int as = a->type == SK_JSTR, bs = b->type == SK_JSTR;
    if (as || bs) return as && bs && a->n == b->n && memcmp(a->s, b->s, a->n) == 0;
    if (a->type == SK_JNUM && b->type == SK_JNUM && a->is_int && b->is_int) {
        const char *x = a->s, *y = b->s;
        int neg_x = x[0] == '-', neg_y = y[0] == '-';
        if (strcmp(x + neg_x, "0") == 0 && strcmp(y + neg_y, "0") == 0) return 1;
        return neg_x == neg_y && strcmp(x + neg_x, y + neg_y) == 0;
    }
    double da = a->type == SK_JNUM ? a->num : a->type == SK_JTRUE ? 1.0 : 0.0;
    double db = b->type == SK_JNUM ? b->num : b->type == SK_JTRUE ? 1.0 : 0.0;
    return da == db;
}

/* The answer key of a list label: what json.dumps makes of it as a dict key. */
static void label_key(sk_buf *b, const sk_jv *v) {
    if (v->type == SK_JSTR) sk_buf_append(b, v->s, v->n);
    else if (v->type == SK_JTRUE) sk_buf_puts(b, "true");
    else if (v->type == SK_JFALSE) sk_buf_puts(b, "false");
    else sk_pyjson_dump(b, v); /* numbers: int digits or float repr (Infinity) */
}

static int alloc_opts(rctx *c, sk_rquestion *q, size_t n) {
    q->opts = sk_arena_alloc(&c->r->doc.arena, n * sizeof *q->opts);
    if (!q->opts) return sk_fail(c->e, SKYCMD_E_NOMEM, "out of memory building the request");
    memset(q->opts, 0, n * sizeof *q->opts);
    q->n_opts = n;
    return 0;
}

static int too_many_options(rctx *c, sk_jstr id, size_t n) {
    if (n > SK_REQUEST_MAX_OPTIONS)
        return QFAIL(c, id, SKYCMD_E_REQUEST, "too many options (%zu), this model supports at most %d",
                     n, SK_REQUEST_MAX_OPTIONS);
    return 0;
}

static int parse_choice(rctx *c, sk_rquestion *q, const sk_jv *crit) {
    int rc;
    if (crit && crit->type == SK_JOBJ && crit->n > 0) {
        if ((rc = too_many_options(c, q->id, crit->n))) return rc;
        if ((rc = alloc_opts(c, q, crit->n))) return rc;
        for (size_t i = 0; i < crit->n; i++) {
            sk_roption *o = &q->opts[i];
            const sk_jv *v = &crit->items[i];
            o->key = crit->keys[i];
            o->desc = v;
            if (is_empty_desc(v)) {
                o->text = o->key;
            } else {
                c->tmp.len = 0;
                sk_buf_append(&c->tmp, o->key.s, o->key.n);
                sk_buf_append(&c->tmp, ": ", 2);
                render_criterion(&c->tmp, v);
                if ((rc = keep_buf(c, &o->text))) return rc;
            }
        }
        return 0;
    }
    if (crit && crit->type == SK_JARR && crit->n > 0) {
        /* The Laya runtime's form: a list of labels, each {label: None}. */
        if ((rc = too_many_options(c, q->id, crit->n))) return rc;
        for (size_t i = 0; i < crit->n; i++) {
            const sk_jv *l = &crit->items[i];
            if (l->type == SK_JNULL)
                return QFAIL(c, q->id, SKYCMD_E_REQUEST,
                             "\"criteria\" label %zu is null; a label must be a string, number or bool", i);
            if (l->type == SK_JARR || l->type == SK_JOBJ)
                return QFAIL(c, q->id, SKYCMD_E_REQUEST,
                             "\"criteria\" label %zu must be a string, number or bool", i);
            for (size_t j = 0; j < i; j++)
                if (labels_equal(&crit->items[j], l))
                    return QFAIL(c, q->id, SKYCMD_E_REQUEST,
                                 "\"criteria\" label %zu repeats label %zu", i, j);
        }
        if ((rc = alloc_opts(c, q, crit->n))) return rc;
        for (size_t i = 0; i < crit->n; i++) {
            const sk_jv *l = &crit->items[i];
            sk_roption *o = &q->opts[i];
            c->tmp.len = 0;
            label_key(&c->tmp, l);
            if ((rc = keep_buf(c, &o->key))) return rc;
            c->tmp.len = 0;
            sk_py_str_scalar(&c->tmp, l);
            if ((rc = keep_buf(c, &o->text))) return rc;
            o->desc = NULL;
        }
        /* The JSON keys of two distinct Python labels may still coincide ("1" and 1). */
        for (size_t i = 1; i < q->n_opts; i++)
            for (size_t j = 0; j < i; j++)
                if (q->opts[i].key.n == q->opts[j].key.n &&
                    memcmp(q->opts[i].key.s, q->opts[j].key.s, q->opts[i].key.n) == 0)
                    return QFAIL(c, q->id, SKYCMD_E_REQUEST,
                                 "\"criteria\" label %zu repeats label %zu", i, j);
        return 0;
    }
    return QFAIL(c, q->id, SKYCMD_E_REQUEST, "\"criteria\" must be a non-empty object");
}

static int parse_score(rctx *c, sk_rquestion *q, const sk_jv *crit) {
    int rc;
    if (!crit || crit->type != SK_JARR || crit->n == 0)
        return QFAIL(c, q->id, SKYCMD_E_REQUEST, "\"criteria\" must be a non-empty array of levels");
    if ((rc = too_many_options(c, q->id, crit->n))) return rc;
    if ((rc = alloc_opts(c, q, crit->n))) return rc;
    for (size_t i = 0; i < crit->n; i++) {
        sk_roption *o = &q->opts[i];
        char k[24];
        int kn = snprintf(k, sizeof k, "%zu", i);
        if ((rc = keep(c, k, (size_t)kn, &o->key))) return rc;
        c->tmp.len = 0;
        sk_buf_printf(&c->tmp, "level %zu: ", i);
        render_criterion(&c->tmp, &crit->items[i]);
        if ((rc = keep_buf(c, &o->text))) return rc;
        o->desc = &crit->items[i];
    }
    return 0;
}

static int parse_noul(rctx *c, sk_rquestion *q, const sk_jv *crit, const sk_jv *labels) {
    int rc;
    const sk_jv *d[2] = {NULL, NULL}; /* false, true */
    if (crit && crit->type != SK_JNULL) {
        if (crit->type != SK_JOBJ)
            return QFAIL(c, q->id, SKYCMD_E_REQUEST, "\"criteria\" must be an object");
        /* Python lower-cases the keys (last wins); other keys are ignored like llama-server. */
        for (size_t i = 0; i < crit->n; i++) {
            sk_jstr k = crit->keys[i];
            char low[6] = {0};
            if (k.n != 4 && k.n != 5) continue;
            for (size_t j = 0; j < k.n; j++) {
                char ch = k.s[j];
                low[j] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
            }
            if (strcmp(low, "false") == 0) d[0] = &crit->items[i];
            else if (strcmp(low, "true") == 0) d[1] = &crit->items[i];
        }
    }
    sk_jstr lab[2] = {{"false", 5}, {"true", 4}};
    if (labels && labels->type != SK_JNULL) {
        const char *msg = "\"labels\" must map exactly \"false\" and \"true\" to distinct non-empty strings";
        if (labels->type != SK_JOBJ || labels->n != 2) return QFAIL(c, q->id, SKYCMD_E_REQUEST, "%s", msg);
        const sk_jv *lf = sk_jobj_get(labels, "false"), *lt = sk_jobj_get(labels, "true");
        if (!lf || !lt || lf->type != SK_JSTR || lt->type != SK_JSTR)
            return QFAIL(c, q->id, SKYCMD_E_REQUEST, "%s", msg);
        lab[0] = py_strip(lf->s, lf->n);
        lab[1] = py_strip(lt->s, lt->n);
        if (lab[0].n == 0 || lab[1].n == 0 ||
            (lab[0].n == lab[1].n && memcmp(lab[0].s, lab[1].s, lab[0].n) == 0))
            return QFAIL(c, q->id, SKYCMD_E_REQUEST, "%s", msg);
    }
    static const char *dflt[2] = {"no, the statement does not hold", "yes, the statement holds"};
    if ((rc = alloc_opts(c, q, 2))) return rc;
    for (int i = 0; i < 2; i++) {
        sk_roption *o = &q->opts[i];
        o->key.s = i ? "true" : "false";
        o->key.n = i ? 4 : 5;
        o->desc = d[i];
        c->tmp.len = 0;
        sk_buf_append(&c->tmp, lab[i].s, lab[i].n);
        sk_buf_append(&c->tmp, ": ", 2);
        if (is_empty_desc(d[i])) sk_buf_puts(&c->tmp, dflt[i]);
        else render_criterion(&c->tmp, d[i]);
        if ((rc = keep_buf(c, &o->text))) return rc;
    }
    return 0;
}

/* laya Agent._check_question: a list of n ints (not bools, not floats such as 1.0) that is
 * a permutation of range(n). null counts as absent (the wire protocol's convention). */
static int parse_option_order(rctx *c, sk_rquestion *q, const sk_jv *v) {
    if (!v || v->type == SK_JNULL) return 0;
    const size_t n = q->n_opts;
    int ok = v->type == SK_JARR && v->n == n;
    uint8_t seen[SK_REQUEST_MAX_OPTIONS] = {0};
    for (size_t s = 0; ok && s < n; s++) {
        const sk_jv *x = &v->items[s];
        ok = x->type == SK_JNUM && x->is_int && x->num >= 0.0 && x->num < (double)n &&
             !seen[(size_t)x->num];
        if (ok) seen[(size_t)x->num] = 1;
    }
    if (!ok)
        return QFAIL(c, q->id, SKYCMD_E_REQUEST, "\"option_order\" must be a permutation of "
                     "range(%zu): one slot per option, each option once", n);
    q->order = sk_arena_alloc(&c->r->doc.arena, n * sizeof *q->order);
    q->slot_text = sk_arena_alloc(&c->r->doc.arena, n * sizeof *q->slot_text);
    if (!q->order || !q->slot_text)
        return sk_fail(c->e, SKYCMD_E_NOMEM, "out of memory building the request");
    for (size_t s = 0; s < n; s++) {
        q->order[s] = (uint16_t)v->items[s].num;
        q->slot_text[s] = q->opts[q->order[s]].text;
    }
    return 0;
}

static int parse_question(rctx *c, sk_rquestion *q, sk_jstr id, const sk_jv *qv) {
    int rc;
    q->id = id;
    if (qv->type != SK_JOBJ) return QFAIL(c, id, SKYCMD_E_REQUEST, "must be an object");
    const sk_jv *ins = sk_jobj_get(qv, "instructions");
    const sk_jv *type = sk_jobj_get(qv, "type");
    int t = -1;
    if (type && type->type == SK_JSTR)
        for (int i = 0; i < 3; i++)
            if (strlen(sk_qtype_names[i]) == type->n && memcmp(type->s, sk_qtype_names[i], type->n) == 0)
                t = i;
    /* Jev lets a noul go without instructions (its criteria say what is asked): it is read
     * with empty ones. laya and llama-server refuse it (docs/compat.md). */
    int bare_noul = t == SKYCMD_QTYPE_NOUL && (!ins || ins->type == SK_JNULL);
    if (!bare_noul && (!ins || ins->type == SK_JNULL))
        return QFAIL(c, id, SKYCMD_E_REQUEST, "\"instructions\" must be provided");
    if (t < 0) return QFAIL(c, id, SKYCMD_E_REQUEST, "\"type\" must be one of: choice, score, noul");
    q->type = t;
    if (bare_noul) {
        q->ins.s = "";
        q->ins.n = 0;
    } else if (ins->type == SK_JSTR) {
        q->ins.s = ins->s;
        q->ins.n = ins->n;
    } else {
        c->tmp.len = 0;
        sk_pyjson_dump(&c->tmp, ins);
        if ((rc = keep_buf(c, &q->ins))) return rc;
    }
    const sk_jv *labels = sk_jobj_get(qv, "labels");
    if (t != SKYCMD_QTYPE_NOUL && labels && labels->type != SK_JNULL)
        return QFAIL(c, id, SKYCMD_E_REQUEST, "\"labels\" is only supported for noul questions");
    const sk_jv *crit = sk_jobj_get(qv, "criteria");
    rc = t == SKYCMD_QTYPE_CHOICE  ? parse_choice(c, q, crit)
         : t == SKYCMD_QTYPE_SCORE ? parse_score(c, q, crit)
                                   : parse_noul(c, q, crit, labels);
    if (!rc) rc = parse_option_order(c, q, sk_jobj_get(qv, "option_order"));
    return rc;
}

static int nonempty(const sk_jv *v) {
    if (!v || v->type == SK_JNULL) return 0;
    if (v->type == SK_JARR || v->type == SK_JOBJ || v->type == SK_JSTR) return v->n > 0;
    return 1;
}

/* The opt-in controls "long", "window", "stride", "report_truncation", "tournament_group"
 * (null = not given). Refused: a wrong type, a value out of range, window/stride without
 * "long": true, "long" together with "tournament_group". */
static int parse_controls(sk_request *r, const sk_jv *root, sk_err *e) {
    static const struct { const char *name; unsigned bit; int is_bool; int64_t lo, hi; } k[] = {
        {"long", SK_CTL_LONG, 1, 0, 1},
        {"window", SK_CTL_WINDOW, 0, 0, SK_LONG_MAX_WINDOW},
        {"stride", SK_CTL_STRIDE, 0, 0, SK_LONG_MAX_WINDOW},
        {"report_truncation", SK_CTL_REPORT_TRUNCATION, 1, 0, 1},
        {"tournament_group", SK_CTL_TOURNAMENT_GROUP, 0, 0, SK_TOURNAMENT_MAX_GROUP},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        const sk_jv *v = sk_jobj_get(root, k[i].name);
        if (!v || v->type == SK_JNULL) continue;
        int64_t x;
        if (k[i].is_bool) {
            if (v->type != SK_JTRUE && v->type != SK_JFALSE)
                return sk_fail(e, SKYCMD_E_REQUEST, "\"%s\" must be a boolean", k[i].name);
            x = v->type == SK_JTRUE;
        } else {
            if (v->type != SK_JNUM || !v->is_int || v->num < (double)k[i].lo || v->num > (double)k[i].hi)
                return sk_fail(e, SKYCMD_E_REQUEST, "\"%s\" must be an integer in [%lld, %lld]%s",
                               k[i].name, (long long)k[i].lo, (long long)k[i].hi,
                               k[i].bit == SK_CTL_TOURNAMENT_GROUP ? " (0 = off; at least 2 when on)"
                                                                   : " (0 = the default)");
            x = (int64_t)v->num;
            if (k[i].bit == SK_CTL_TOURNAMENT_GROUP && x == 1)
                return sk_fail(e, SKYCMD_E_REQUEST, "\"tournament_group\" must be 0 (off) or at least %d",
                               SK_TOURNAMENT_MIN_GROUP);
        }
        r->ctl_set |= k[i].bit;
        switch (k[i].bit) {
        case SK_CTL_LONG: r->ctl_long = (int)x; break;
        case SK_CTL_WINDOW: r->ctl_window = x; break;
        case SK_CTL_STRIDE: r->ctl_stride = x; break;
        case SK_CTL_REPORT_TRUNCATION: r->ctl_report_truncation = (int)x; break;
        default: r->ctl_tournament_group = x; break;
        }
    }
    int is_long = (r->ctl_set & SK_CTL_LONG) && r->ctl_long;
    if ((r->ctl_set & (SK_CTL_WINDOW | SK_CTL_STRIDE)) && !is_long)
        return sk_fail(e, SKYCMD_E_REQUEST, "\"%s\" only applies with \"long\": true",
                       r->ctl_set & SK_CTL_WINDOW ? "window" : "stride");
    if (is_long && (r->ctl_set & SK_CTL_TOURNAMENT_GROUP) && r->ctl_tournament_group)
        return sk_fail(e, SKYCMD_E_REQUEST, "\"long\" and \"tournament_group\" cannot be combined");
    return 0;
}

/* laya serve's _validate_budget_param, without the cap (the session's, checked when the
 * request is answered): absent or null = not given; else a JSON integer (not a float, not a
 * bool) above 0. */
static int parse_budget(sk_request *r, const sk_jv *root, const char *key, unsigned bit,
                        int64_t *value, sk_jstr *text, sk_err *e) {
    const sk_jv *v = sk_jobj_get(root, key);
    if (!v || v->type == SK_JNULL) return 0;
    if (v->type != SK_JNUM || !v->is_int) return sk_fail(e, SKYCMD_E_REQUEST, "%s must be an integer", key);
    if (v->s[0] == '-' || v->num == 0)
        return sk_fail(e, SKYCMD_E_REQUEST, "%s must be a positive integer", key);
    int64_t x = 0;
    for (size_t i = 0; i < v->n; i++) {
        if (x > (INT64_MAX - 9) / 10) {
            x = INT64_MAX; /* only compared with the cap, which it exceeds */
            break;
        }
        x = x * 10 + (v->s[i] - '0');
    }
    r->ctl_set |= bit;
    *value = x;
    text->s = v->s;
    text->n = v->n;
    return 0;
}

int sk_request_parse(const char *json, size_t len, sk_request *r, sk_err *e) {
    memset(r, 0, sizeof *r);
    if (!json) return sk_fail(e, SKYCMD_E_JSON, "malformed JSON: the body is empty");
    if (len > SK_REQUEST_MAX_BYTES)
        return sk_fail(e, SKYCMD_E_TOO_LARGE, "request body too large (%zu bytes, the limit is %zu)",
                       len, SK_REQUEST_MAX_BYTES);
    int rc = sk_json_parse(json, len, &r->doc, e);
    if (rc) return rc;
    rctx c = {r, e, {0}};
    sk_buf_init(&c.tmp);
    const sk_jv *root = &r->doc.root;
    const sk_jv *v;
    if (root->type != SK_JOBJ) {
        rc = sk_fail(e, SKYCMD_E_REQUEST, "the request body must be a JSON object");
        goto done;
    }
    if ((v = sk_jobj_get(root, "model")) && v->type != SK_JSTR && v->type != SK_JNULL) {
        rc = sk_fail(e, SKYCMD_E_REQUEST, "\"model\" must be a string");
        goto done;
    }
    /* laya serve validates the budgets before it looks at the state and the questions */
    if ((rc = parse_budget(r, root, "max_len", SK_CTL_MAX_LEN, &r->ctl_max_len, &r->ctl_max_len_text, e)) ||
        (rc = parse_budget(r, root, "head_max_len", SK_CTL_HEAD_MAX_LEN, &r->ctl_head_max_len,
                           &r->ctl_head_max_len_text, e)))
        goto done;
    const sk_jv *state = sk_jobj_get(root, "state");
    if (!state || state->type == SK_JNULL) {
        rc = sk_fail(e, SKYCMD_E_REQUEST, "\"state\" must be provided");
        goto done;
    }
    if (nonempty(sk_jobj_get(root, "videos"))) {
        rc = sk_fail(e, SKYCMD_E_REQUEST, "\"videos\" is not supported");
        goto done;
    }
    if (nonempty(sk_jobj_get(root, "images")) || nonempty(sk_jobj_get(root, "files"))) {
        rc = sk_fail(e, SKYCMD_E_UNSUPPORTED, "this model cannot use images or files");
        goto done;
    }
    if ((rc = parse_controls(r, root, e))) goto done;
    /* laya serve's _validate_min_confidence: null is absent; refused before any work */
    if ((v = sk_jobj_get(root, "min_confidence")) && v->type != SK_JNULL &&
        (rc = sk_gate_from_jv(v, &r->gate, e)))
        goto done;
    const sk_jv *qs = sk_jobj_get(root, "questions");
    if (!qs || qs->type != SK_JOBJ || qs->n == 0) {
        rc = sk_fail(e, SKYCMD_E_REQUEST, "\"questions\" must be a non-empty object");
        goto done;
    }
    if (qs->n > SK_REQUEST_MAX_QUESTIONS) {
        rc = sk_fail(e, SKYCMD_E_TOO_LARGE, "too many questions (%zu), the maximum is %d", qs->n,
                     SK_REQUEST_MAX_QUESTIONS);
        goto done;
    }
    if (state->type == SK_JSTR) {
        r->state.s = state->s;
        r->state.n = state->n;
    } else {
        c.tmp.len = 0;
        sk_pyjson_dump(&c.tmp, state);
        if ((rc = keep_buf(&c, &r->state))) goto done;
    }
    r->state_is_list = state->type == SK_JARR;
    r->q = sk_arena_alloc(&r->doc.arena, qs->n * sizeof *r->q);
    if (!r->q) {
        rc = sk_fail(e, SKYCMD_E_NOMEM, "out of memory building the request");
        goto done;
    }
    memset(r->q, 0, qs->n * sizeof *r->q);
    for (size_t i = 0; i < qs->n; i++) {
        if ((rc = parse_question(&c, &r->q[i], qs->keys[i], &qs->items[i]))) goto done;
        if (r->q[i].n_opts > r->max_opts) r->max_opts = r->q[i].n_opts;
    }
    r->nq = qs->n;
done:
    sk_buf_free(&c.tmp);
    if (rc) {
        sk_request_free(r);
        return rc;
    }
    return 0;
}

void sk_request_free(sk_request *r) {
    if (!r) return;
    sk_jdoc_free(&r->doc);
    memset(r, 0, sizeof *r);
}
