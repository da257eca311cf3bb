/* pyjson.c - strict JSON reader keeping number lexemes and key order, and a writer that
 * reproduces Python's json.dumps(ensure_ascii=False). See pyjson.h for the contract. */
#define _GNU_SOURCE
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyjson.h"
#include "../util/platform.h"

/* ------------------------------------------------------------------ arena --------- */

struct sk_arena_chunk {
    sk_arena_chunk *next;
    size_t cap, used;
    max_align_t data[];
};

void *sk_arena_alloc(sk_arena *a, size_t n) {
    const size_t al = alignof(max_align_t);
    size_t need;
    if (sk_add_size(n, al - 1, &need)) return NULL;
    need &= ~(al - 1);
    if (need == 0) need = al;
    sk_arena_chunk *c = a->head;
    if (!c || c->cap - c->used < need) {
        size_t cap = need > 16384 ? need : 16384;
        if (a->total > cap && a->total < ((size_t)1 << 28)) cap = a->total; /* geometric */
        if (cap < need) cap = need;
        size_t bytes;
        if (sk_add_size(sizeof *c, cap, &bytes)) return NULL;
        c = malloc(bytes);
        if (!c) return NULL;
        c->cap = cap;
        c->used = 0;
        c->next = a->head;
        a->head = c;
        a->total += cap;
    }
    void *p = (char *)c->data + c->used;
    c->used += need;
    return p;
}

void sk_arena_free(sk_arena *a) {
    sk_arena_chunk *c = a->head;
    while (c) {
        sk_arena_chunk *n = c->next;
        free(c);
        c = n;
    }
    a->head = NULL;
    a->total = 0;
}

/* ------------------------------------------------------------------ locale -------- */

double sk_strtod_c(const char *s, char **end) { return sk_platform_strtod_c(s, end); }

/* ------------------------------------------------------------------ parser -------- */

typedef struct jparser {
    const char *p, *end, *start;
    sk_arena *arena;
    sk_err *e;
    /* A shared stack of members under construction: containers pop theirs when closed,
     * so parsing allocates only in the arena (plus this stack's growth). */
    sk_jv *stack;
    sk_jstr *kstack;
    size_t sp, scap;
    size_t n_values;
    sk_buf sbuf; /* scratch for decoding strings */
} jparser;

/* The byte offset for programs (the server's detail[].loc), the line and column (1-based,
 * the column in characters) for people, as jq reports them. */
static int jfail(jparser *jp, int status, const char *what) {
    size_t line = 1, col = 1;
    for (const char *q = jp->start; q < jp->p; q++) {
        if (*q == '\n') line++, col = 1;
        else if (((unsigned char)*q & 0xC0) != 0x80) col++;
    }
    return sk_fail(jp->e, status, "malformed JSON at byte %zu (line %zu, column %zu): %s",
                   (size_t)(jp->p - jp->start), line, col, what);
}

static void skip_ws(jparser *jp) {
    while (jp->p < jp->end &&
           (*jp->p == ' ' || *jp->p == '\t' || *jp->p == '\n' || *jp->p == '\r'))
        jp->p++;
}

static int push(jparser *jp, const sk_jv *v, sk_jstr k) {
    if (jp->sp == jp->scap) {
        size_t nc = jp->scap ? jp->scap * 2 : 64;
        sk_jv *ns = realloc(jp->stack, nc * sizeof *ns);
        if (!ns) return sk_fail(jp->e, SKYCMD_E_NOMEM, "out of memory parsing JSON");
        jp->stack = ns;
        sk_jstr *nk = realloc(jp->kstack, nc * sizeof *nk);
        if (!nk) return sk_fail(jp->e, SKYCMD_E_NOMEM, "out of memory parsing JSON");
        jp->kstack = nk;
        jp->scap = nc;
    }
    jp->stack[jp->sp] = *v;
    jp->kstack[jp->sp] = k;
    jp->sp++;
    return 0;
}

static char *arena_strndup(jparser *jp, const char *s, size_t n) {
    char *d = sk_arena_alloc(jp->arena, n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int read_u4(jparser *jp, unsigned *out) {
    if (jp->end - jp->p < 4) return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(jp->p[i]);
        if (h < 0) return -1;
        v = v * 16 + (unsigned)h;
    }
    jp->p += 4;
    *out = v;
    return 0;
}

static void put_utf8(sk_buf *b, unsigned cp) {
    char t[4];
    size_t n;
    if (cp < 0x80) { t[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { t[0] = (char)(0xC0 | (cp >> 6)); t[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
    else if (cp < 0x10000) {
        t[0] = (char)(0xE0 | (cp >> 12)); t[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        t[2] = (char)(0x80 | (cp & 0x3F)); n = 3;
    } else {
        t[0] = (char)(0xF0 | (cp >> 18)); t[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        t[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); t[3] = (char)(0x80 | (cp & 0x3F)); n = 4;
    }
    sk_buf_append(b, t, n);
}

/* Parse a string literal (jp->p at the opening quote) into decoded text. */
static int parse_string(jparser *jp, sk_jstr *out) {
    jp->p++; /* '"' */
    const char *run = jp->p;
    /* Fast path: no escapes. */
    jp->p += sk_json_plain_len(jp->p, (size_t)(jp->end - jp->p));
    if (jp->p >= jp->end) return jfail(jp, SKYCMD_E_JSON, "unterminated string");
    if (*jp->p == '"') {
        size_t n = (size_t)(jp->p - run);
        if (!sk_utf8_valid(run, n)) {
            jp->p = run;
            return jfail(jp, SKYCMD_E_JSON, "string is not valid UTF-8");
        }
        char *s = arena_strndup(jp, run, n);
        if (!s) return sk_fail(jp->e, SKYCMD_E_NOMEM, "out of memory parsing JSON");
        jp->p++;
        out->s = s;
        out->n = n;
        return 0;
    }
    sk_buf *b = &jp->sbuf;
    b->len = 0;
    b->failed = 0;
    sk_buf_append(b, run, (size_t)(jp->p - run));
    for (;;) {
        if (jp->p >= jp->end) return jfail(jp, SKYCMD_E_JSON, "unterminated string");
        unsigned char c = (unsigned char)*jp->p;
        if (c == '"') break;
        if (c < 0x20) return jfail(jp, SKYCMD_E_JSON, "control character in string");
        if (c != '\\') {
            const char *r = jp->p;
            jp->p += sk_json_plain_len(jp->p, (size_t)(jp->end - jp->p));
            sk_buf_append(b, r, (size_t)(jp->p - r));
            continue;
        }
        jp->p++;
        if (jp->p >= jp->end) return jfail(jp, SKYCMD_E_JSON, "unterminated string");
        char esc = *jp->p++;
        switch (esc) {
        case '"': sk_buf_putc(b, '"'); break;
        case '\\': sk_buf_putc(b, '\\'); break;
        case '/': sk_buf_putc(b, '/'); break;
        case 'b': sk_buf_putc(b, '\b'); break;
        case 'f': sk_buf_putc(b, '\f'); break;
        case 'n': sk_buf_putc(b, '\n'); break;
        case 'r': sk_buf_putc(b, '\r'); break;
        case 't': sk_buf_putc(b, '\t'); break;
        case 'u': {
            unsigned cp;
            if (read_u4(jp, &cp)) return jfail(jp, SKYCMD_E_JSON, "bad \\u escape");
            if (cp >= 0xDC00 && cp <= 0xDFFF)
                return jfail(jp, SKYCMD_E_JSON, "unpaired surrogate in \\u escape");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned lo;
                if (jp->end - jp->p < 2 || jp->p[0] != '\\' || jp->p[1] != 'u')
                    return jfail(jp, SKYCMD_E_JSON, "unpaired surrogate in \\u escape");
                jp->p += 2;
                if (read_u4(jp, &lo)) return jfail(jp, SKYCMD_E_JSON, "bad \\u escape");
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return jfail(jp, SKYCMD_E_JSON, "unpaired surrogate in \\u escape");
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            put_utf8(b, cp);
            break;
        }
        default:
            jp->p--;
            return jfail(jp, SKYCMD_E_JSON, "invalid escape in string");
        }
    }
    if (b->failed) return sk_fail(jp->e, SKYCMD_E_NOMEM, "out of memory parsing JSON");
    if (!sk_utf8_valid(b->data, b->len))
        return jfail(jp, SKYCMD_E_JSON, "string is not valid UTF-8");
    char *s = arena_strndup(jp, b->data ? b->data : "", b->len);
    if (!s) return sk_fail(jp->e, SKYCMD_E_NOMEM, "out of memory parsing JSON");
    jp->p++;
    out->s = s;
    out->n = b->len;
    return 0;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static int parse_number(jparser *jp, sk_jv *v) {
    const char *s = jp->p;
    int is_int = 1;
    if (jp->p < jp->end && *jp->p == '-') jp->p++;
    if (jp->p >= jp->end || !is_digit(*jp->p)) return jfail(jp, SKYCMD_E_JSON, "invalid number");
    if (*jp->p == '0') jp->p++;
    else while (jp->p < jp->end && is_digit(*jp->p)) jp->p++;
    size_t int_digits = (size_t)(jp->p - s) - (*s == '-');
    if (jp->p < jp->end && *jp->p == '.') {
        is_int = 0;
        jp->p++;
        if (jp->p >= jp->end || !is_digit(*jp->p))
            return jfail(jp, SKYCMD_E_JSON, "invalid number");
        while (jp->p < jp->end && is_digit(*jp->p)) jp->p++;
    }
    if (jp->p < jp->end && (*jp->p == 'e' || *jp->p == 'E')) {
        is_int = 0;
        jp->p++;
        if (jp->p < jp->end && (*jp->p == '+' || *jp->p == '-')) jp->p++;
        if (jp->p >= jp->end || !is_digit(*jp->p))
            return jfail(jp, SKYCMD_E_JSON, "invalid number");
        while (jp->p < jp->end && is_digit(*jp->p)) jp->p++;
    }
    if (is_int && int_digits > 4300) {
        jp->p = s;
        return jfail(jp, SKYCMD_E_JSON,
                     "integer with more than 4300 digits (Python refuses to convert it)");
    }
    size_t n = (size_t)(jp->p - s);
    char *lex = arena_strndup(jp, s, n);
    if (!lex) return sk_fail(jp->e, SKYCMD_E_NOMEM, "out of memory parsing JSON");
    memset(v, 0, sizeof *v);
    v->type = SK_JNUM;
    v->is_int = (uint8_t)is_int;
    v->s = lex;
    v->n = n;
    v->num = sk_strtod_c(lex, NULL);
    return 0;
}

static int key_eq(sk_jstr a, sk_jstr b) { return a.n == b.n && memcmp(a.s, b.s, a.n) == 0; }

static uint64_t key_hash(sk_jstr k) {
    return sk_fnv1a64(k.s, k.n);
}

/* Move the top `count` stack entries into the arena as an array or object. Objects drop
 * duplicate keys: the last value wins, at the first key's position (Python dict). */
static int close_container(jparser *jp, sk_jv *v, int type, size_t base) {
    size_t count = jp->sp - base;
    memset(v, 0, sizeof *v);
    v->type = (uint8_t)type;
    if (type == SK_JOBJ && count > 1) {
        sk_jv *it = jp->stack + base;
        sk_jstr *ks = jp->kstack + base;
        size_t kept = 0;
        if (count <= 16) {
            for (size_t j = 0; j < count; j++) {
                size_t i;
                for (i = 0; i < kept; i++)
                    if (key_eq(ks[i], ks[j])) break;
                if (i < kept) it[i] = it[j];
                else { it[kept] = it[j]; ks[kept] = ks[j]; kept++; }
            }
        } else {
            size_t cap = 32;
            while (cap < count * 2) cap *= 2;
            size_t *tab = malloc(cap * sizeof *tab);
            if (!tab) return sk_fail(jp->e, SKYCMD_E_NOMEM, "out of memory parsing JSON");
            for (size_t i = 0; i < cap; i++) tab[i] = SIZE_MAX;
            for (size_t j = 0; j < count; j++) {
                size_t h = (size_t)key_hash(ks[j]) & (cap - 1);
                while (tab[h] != SIZE_MAX && !key_eq(ks[tab[h]], ks[j])) h = (h + 1) & (cap - 1);
                if (tab[h] != SIZE_MAX) it[tab[h]] = it[j];
                else { it[kept] = it[j]; ks[kept] = ks[j]; tab[h] = kept; kept++; }
            }
            free(tab);
        }
        count = kept;
    }
    v->n = count;
    if (count) {
        size_t bytes;
        if (sk_mul_size(count, sizeof(sk_jv), &bytes)) return sk_fail(jp->e, SKYCMD_E_NOMEM, "JSON too large");
        v->items = sk_arena_alloc(jp->arena, bytes);
        if (!v->items) return sk_fail(jp->e, SKYCMD_E_NOMEM, "out of memory parsing JSON");
        memcpy(v->items, jp->stack + base, bytes);
        if (type == SK_JOBJ) {
            v->keys = sk_arena_alloc(jp->arena, count * sizeof(sk_jstr));
            if (!v->keys) return sk_fail(jp->e, SKYCMD_E_NOMEM, "out of memory parsing JSON");
            memcpy(v->keys, jp->kstack + base, count * sizeof(sk_jstr));
        }
    }
    jp->sp = base;
    return 0;
}

static int parse_value(jparser *jp, sk_jv *v, int depth) {
    if (++jp->n_values > SK_JSON_MAX_VALUES)
        return sk_fail(jp->e, SKYCMD_E_TOO_LARGE, "JSON has more than %zu values", SK_JSON_MAX_VALUES);
    skip_ws(jp);
    if (jp->p >= jp->end) return jfail(jp, SKYCMD_E_JSON, "unexpected end of input");
    char c = *jp->p;
    if (c == '{' || c == '[') {
        if (depth >= SK_JSON_MAX_DEPTH)
            return sk_fail(jp->e, SKYCMD_E_TOO_LARGE,
                           "JSON nested too deeply at byte %zu (the limit is %d levels)",
                           (size_t)(jp->p - jp->start), SK_JSON_MAX_DEPTH);
        int is_obj = c == '{';
        char close = is_obj ? '}' : ']';
        size_t base = jp->sp;
        jp->p++;
        skip_ws(jp);
        if (jp->p < jp->end && *jp->p == close) {
            jp->p++;
            return close_container(jp, v, is_obj ? SK_JOBJ : SK_JARR, base);
        }
        for (;;) {
            sk_jstr key = {NULL, 0};
            sk_jv item;
            int rc;
            if (is_obj) {
                skip_ws(jp);
                if (jp->p >= jp->end || *jp->p != '"')
                    return jfail(jp, SKYCMD_E_JSON, "expected a string key");
                if ((rc = parse_string(jp, &key))) return rc;
                skip_ws(jp);
                if (jp->p >= jp->end || *jp->p != ':')
                    return jfail(jp, SKYCMD_E_JSON, "expected ':' after a key");
                jp->p++;
            }
            if ((rc = parse_value(jp, &item, depth + 1))) return rc;
            if ((rc = push(jp, &item, key))) return rc;
            skip_ws(jp);
            if (jp->p < jp->end && *jp->p == ',') { jp->p++; continue; }
            if (jp->p < jp->end && *jp->p == close) { jp->p++; break; }
            return jfail(jp, SKYCMD_E_JSON, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
        }
        return close_container(jp, v, is_obj ? SK_JOBJ : SK_JARR, base);
    }
    if (c == '"') {
        sk_jstr s;
        int rc = parse_string(jp, &s);
        if (rc) return rc;
        memset(v, 0, sizeof *v);
        v->type = SK_JSTR;
        v->s = s.s;
        v->n = s.n;
        return 0;
    }
    if (c == '-' || is_digit(c)) return parse_number(jp, v);
    static const struct { const char *w; size_t n; int t; } lits[] = {
        {"null", 4, SK_JNULL}, {"true", 4, SK_JTRUE}, {"false", 5, SK_JFALSE}};
    for (size_t i = 0; i < 3; i++) {
        if ((size_t)(jp->end - jp->p) >= lits[i].n && memcmp(jp->p, lits[i].w, lits[i].n) == 0) {
            jp->p += lits[i].n;
            memset(v, 0, sizeof *v);
            v->type = (uint8_t)lits[i].t;
            return 0;
        }
    }
    return jfail(jp, SKYCMD_E_JSON, "unexpected character");
}

int sk_json_parse(const char *text, size_t len, sk_jdoc *doc, sk_err *e) {
    memset(doc, 0, sizeof *doc);
    if (!text) return sk_fail(e, SKYCMD_E_JSON, "malformed JSON: no body");
    jparser jp;
    memset(&jp, 0, sizeof jp);
    jp.p = jp.start = text;
    jp.end = text + len;
    jp.arena = &doc->arena;
    jp.e = e;
    sk_buf_init(&jp.sbuf);
    int rc = parse_value(&jp, &doc->root, 0);
    if (!rc) {
        skip_ws(&jp);
        if (jp.p != jp.end) rc = jfail(&jp, SKYCMD_E_JSON, "extra data after the JSON value");
    }
    free(jp.stack);
    free(jp.kstack);
    sk_buf_free(&jp.sbuf);
    if (rc) {
        sk_jdoc_free(doc);
        return rc;
    }
    return 0;
}

void sk_jdoc_free(sk_jdoc *doc) {
    if (!doc) return;
    sk_arena_free(&doc->arena);
    memset(&doc->root, 0, sizeof doc->root);
}

const sk_jv *sk_jobj_get(const sk_jv *obj, const char *key) {
    if (!obj || obj->type != SK_JOBJ) return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < obj->n; i++)
        if (obj->keys[i].n == n && memcmp(obj->keys[i].s, key, n) == 0) return &obj->items[i];
    return NULL;
}

/* ------------------------------------------------------------------ writer -------- */

/* Shortest digits that read back as x (what Python's repr uses, David Gay's mode 0):
 * the correctly rounded p-digit form for the smallest p that round-trips, or its neighbour
 * on the far side of x when the interval of x is lopsided (powers of two).
 *
 * Two implementations of one search. The reference prints and parses every candidate with
 * the C library. The fast one prints x once with 17 digits and derives each shorter
 * candidate by rounding that string; it reads a candidate back with one exact double
 * operation when Clinger's conditions hold (mantissa and power of ten both exact doubles)
 * and with strtod otherwise, and hands a p to the reference when the 17-digit string ends
 * in an exact half at p (where rounding twice could differ from rounding x once). Tests
 * hold the two to the same output. */

/* The reference round: the correctly rounded p-digit form of x or its neighbour, when one
 * reads back as x (returns its digit count), else 0. */
static int digits_round_ref(double x, int p, char digits[24], int *decpt) {
    char buf[40];
    snprintf(buf, sizeof buf, "%.*e", p - 1, x);
    /* buf: d[.ddd]e±XX, decimal point may be locale specific: take digits only */
    char d[24];
    int nd = 0;
    const char *q = buf;
    while (*q && *q != 'e') {
        if (*q >= '0' && *q <= '9') d[nd++] = *q;
        q++;
    }
    int ex = atoi(q + 1);
    /* try the candidate, then its neighbour on the other side of x */
    for (int attempt = 0; attempt < 2; attempt++) {
        char t[48];
        int tn = snprintf(t, sizeof t, "%c.%.*se%d", d[0], nd - 1, d + 1, ex);
        (void)tn;
        double y = sk_strtod_c(t, NULL);
        if (y == x) {
            while (nd > 1 && d[nd - 1] == '0') nd--;
            memcpy(digits, d, (size_t)nd);
            digits[nd] = '\0';
            *decpt = ex + 1;
            return nd;
        }
        if (attempt == 1) break;
        /* neighbour: +1 ulp of the last digit when y < x, -1 when y > x */
        int i = nd - 1;
        if (y < x) {
            while (i >= 0 && d[i] == '9') d[i--] = '0';
            if (i < 0) break; /* carried past the first digit: shorter form, seen before */
            d[i]++;
        } else {
            while (i >= 0 && d[i] == '0') d[i--] = '9';
            if (i < 0) break;
            d[i]--;
            if (d[0] == '0') break; /* lost the first digit: shorter form, seen before */
        }
    }
    return 0;
}

/* x's 17 significant digits (correctly rounded) and the exponent of the first. */
typedef struct digits17 {
    char d[17];
    int ex;
} digits17;

static void print17(double x, digits17 *s) {
    char buf[40];
    snprintf(buf, sizeof buf, "%.16e", x);
    int nd = 0;
    const char *q = buf;
    while (*q && *q != 'e') {
        if (*q >= '0' && *q <= '9' && nd < 17) s->d[nd++] = *q;
        q++;
    }
    s->ex = atoi(q + 1);
}

/* The double nearest to m * 10^k. */
static double decimal_value(uint64_t m, int k) {
    static const double p10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    if (m <= (UINT64_C(1) << 53) && k >= -22 && k <= 22)
        return k >= 0 ? (double)m * p10[k] : (double)m / p10[-k];
    char t[48];
    snprintf(t, sizeof t, "%llue%d", (unsigned long long)m, k);
    return sk_strtod_c(t, NULL);
}

static int digits_round(double x, int p, const digits17 *s, char digits[24], int *decpt) {
    uint64_t m = 0, pow_p = 1;
    for (int i = 0; i < p; i++) {
        m = m * 10 + (uint64_t)(s->d[i] - '0');
        pow_p *= 10;
    }
    int ex = s->ex;
    if (p < 17) {
        /* round the 17-digit string at p; an exact half there is the reference's case */
        int cmp = s->d[p] - '5';
        for (int i = p + 1; i < 17 && cmp == 0; i++)
            if (s->d[i] != '0') cmp = 1;
        if (cmp == 0) return digits_round_ref(x, p, digits, decpt);
        if (cmp > 0 && ++m == pow_p) {
            m = pow_p / 10;
            ex++;
        }
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        /* 17 correctly rounded digits always read back (DBL_DECIMAL_DIG) */
        const double y = p == 17 && attempt == 0 ? x : decimal_value(m, ex - (p - 1));
        if (y == x) {
            int nd = p;
            for (int i = p - 1; i >= 0; i--, m /= 10) digits[i] = (char)('0' + m % 10);
            while (nd > 1 && digits[nd - 1] == '0') nd--;
            digits[nd] = '\0';
            *decpt = ex + 1;
            return nd;
        }
        if (attempt == 1) break;
        /* neighbour: +1 in the last digit when y < x, -1 when y > x; a carry past the
         * first digit or the loss of it gives a shorter form, seen before */
        if (y < x) {
            if (++m == pow_p) break;
        } else {
            if (--m < pow_p / 10) break;
        }
    }
    return 0;
}

/* Any decimal of at most 15 significant digits that reads back as x is also what x prints
 * as with 15 digits (DBL_DIG = 15: such decimals survive the round trip through a double),
 * so when the 15-digit round fails no shorter form exists and the search can start at 16.
 * Most probabilities need 16 or 17 digits: this skips 14 rounds for them. The result is the
 * same as searching from 1. */
static int shortest_digits(double x, int fast, char digits[24], int *decpt) {
    digits17 s;
    if (fast) print17(x, &s);
#define ROUND(p) (fast ? digits_round(x, (p), &s, digits, decpt) \
                       : digits_round_ref(x, (p), digits, decpt))
    int p0 = ROUND(15) ? 1 : 16;
    for (int p = p0; p <= 17; p++) {
        int nd = ROUND(p);
        if (nd) return nd;
    }
#undef ROUND
    /* unreachable: 17 digits always round-trip */
    snprintf(digits, 24, "0");
    *decpt = 1;
    return 1;
}

static size_t float_repr(double x, int json_style, int fast, char out[32]) {
    if (isnan(x)) return (size_t)snprintf(out, 32, "%s", json_style ? "NaN" : "nan");
    if (isinf(x))
        return (size_t)snprintf(out, 32, "%s",
                                x > 0 ? (json_style ? "Infinity" : "inf")
                                      : (json_style ? "-Infinity" : "-inf"));
    if (x == 0) return (size_t)snprintf(out, 32, "%s", signbit(x) ? "-0.0" : "0.0");
    char d[24];
    int decpt;
    int nd = shortest_digits(fabs(x), fast, d, &decpt);
    size_t o = 0;
    if (x < 0) out[o++] = '-';
    if (decpt <= -4 || decpt > 16) {
        out[o++] = d[0];
        if (nd > 1) {
            out[o++] = '.';
            memcpy(out + o, d + 1, (size_t)nd - 1);
            o += (size_t)nd - 1;
        }
        int ex = decpt - 1;
        o += (size_t)snprintf(out + o, 32 - o, "e%c%02d", ex < 0 ? '-' : '+', ex < 0 ? -ex : ex);
    } else if (decpt <= 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = 0; i < -decpt; i++) out[o++] = '0';
        memcpy(out + o, d, (size_t)nd);
        o += (size_t)nd;
    } else if (decpt < nd) {
        memcpy(out + o, d, (size_t)decpt);
        o += (size_t)decpt;
        out[o++] = '.';
        memcpy(out + o, d + decpt, (size_t)(nd - decpt));
        o += (size_t)(nd - decpt);
    } else {
        memcpy(out + o, d, (size_t)nd);
        o += (size_t)nd;
        for (int i = nd; i < decpt; i++) out[o++] = '0';
        out[o++] = '.';
        out[o++] = '0';
    }
    out[o] = '\0';
    return o;
}

size_t sk_py_float_repr(double x, int json_style, char out[32]) {
    return float_repr(x, json_style, 1, out);
}

size_t sk_py_float_repr_ref(double x, int json_style, char out[32]) {
    return float_repr(x, json_style, 0, out);
}

void sk_pyjson_str(sk_buf *b, const char *s, size_t n) {
    sk_buf_putc(b, '"');
    size_t run = 0, i = 0;
    /* runs that need no escape are copied whole; i stops at each byte that does */
    while ((i += sk_json_plain_len(s + i, n - i)) < n) {
        unsigned char c = (unsigned char)s[i];
        const char *esc;
        char u[8];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default: snprintf(u, sizeof u, "\\u%04x", c); esc = u; break;
        }
        sk_buf_append(b, s + run, i - run);
        sk_buf_puts(b, esc);
        run = ++i;
    }
    sk_buf_append(b, s + run, n - run);
    sk_buf_putc(b, '"');
}

static void put_number(sk_buf *b, const sk_jv *v, int json_style) {
    if (v->is_int) {
        /* Python prints an int's digits; "-0" reads as 0 */
        if (v->n == 2 && v->s[0] == '-' && v->s[1] == '0') sk_buf_putc(b, '0');
        else sk_buf_append(b, v->s, v->n);
        return;
    }
    char t[32];
    size_t n = sk_py_float_repr(v->num, json_style, t);
    sk_buf_append(b, t, n);
}

void sk_pyjson_dump(sk_buf *b, const sk_jv *v) {
    switch (v->type) {
    case SK_JNULL: sk_buf_puts(b, "null"); break;
    case SK_JTRUE: sk_buf_puts(b, "true"); break;
    case SK_JFALSE: sk_buf_puts(b, "false"); break;
    case SK_JNUM: put_number(b, v, 1); break;
    case SK_JSTR: sk_pyjson_str(b, v->s, v->n); break;
    case SK_JARR:
        sk_buf_putc(b, '[');
        for (size_t i = 0; i < v->n; i++) {
            if (i) sk_buf_append(b, ", ", 2);
            sk_pyjson_dump(b, &v->items[i]);
        }
        sk_buf_putc(b, ']');
        break;
    case SK_JOBJ:
        sk_buf_putc(b, '{');
        for (size_t i = 0; i < v->n; i++) {
            if (i) sk_buf_append(b, ", ", 2);
            sk_pyjson_str(b, v->keys[i].s, v->keys[i].n);
            sk_buf_append(b, ": ", 2);
            sk_pyjson_dump(b, &v->items[i]);
        }
        sk_buf_putc(b, '}');
        break;
    default: break;
    }
}

void sk_py_str_scalar(sk_buf *b, const sk_jv *v) {
    switch (v->type) {
    case SK_JNULL: sk_buf_puts(b, "None"); break;
    case SK_JTRUE: sk_buf_puts(b, "True"); break;
    case SK_JFALSE: sk_buf_puts(b, "False"); break;
    case SK_JNUM: put_number(b, v, 0); break;
    case SK_JSTR: sk_buf_append(b, v->s, v->n); break;
    default: sk_pyjson_dump(b, v); break;
    }
}
