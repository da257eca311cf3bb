/*
 * json_syntax.c - the non-allocating JSON syntax check of json_syntax.h. Recursive descent
 * with an explicit depth count (no recursion: a hostile text cannot exhaust the stack); the
 * containers being parsed are tracked as one bit each in a small stack of words.
 */
#include "json_syntax.h"

#include <stdint.h>
#include <string.h>

#include "util.h"

typedef struct jcur {
    const unsigned char *s;
    size_t n, i;
} jcur;

static void skip_ws(jcur *c) {
    while (c->i < c->n && c->s[c->i] <= 0x20) c->i++; /* cJSON's whitespace: any byte <= 32 */
}

static int hex4(const unsigned char *p, unsigned *v) {
    unsigned x = 0;
    for (int k = 0; k < 4; k++) {
        unsigned char ch = p[k];
        unsigned d = 16;
        if (ch >= '0' && ch <= '9') d = (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f') d = (unsigned)(ch - 'a') + 10;
        else if (ch >= 'A' && ch <= 'F') d = (unsigned)(ch - 'A') + 10;
        if (d > 15) return 0;
        x = x << 4 | d;
    }
    *v = x;
    return 1;
}

/* A string at c->i (its opening quote). Any byte but the quote and the backslash stands for
 * itself, as in cJSON; escapes as RFC 8259, a \u high surrogate followed by \u low one. */
static int string(jcur *c) {
    size_t i = c->i + 1;
    for (;;) {
        if (i >= c->n) {
            c->i = i;
            return 0;
        }
        unsigned char ch = c->s[i];
        if (ch == '"') break;
        if (ch != '\\') {
            i++;
            continue;
        }
        if (i + 1 >= c->n) {
            c->i = i;
            return 0;
        }
        unsigned char e = c->s[i + 1];
        if (e == 'u') {
            unsigned v, w;
            if (c->n - i < 6 || !hex4(c->s + i + 2, &v) || (v >= 0xDC00 && v <= 0xDFFF)) {
                c->i = i;
                return 0;
            }
            if (v >= 0xD800 && v <= 0xDBFF) {
                if (c->n - i < 12 || c->s[i + 6] != '\\' || c->s[i + 7] != 'u' || !hex4(c->s + i + 8, &w) ||
                    w < 0xDC00 || w > 0xDFFF) {
                    c->i = i;
                    return 0;
                }
                i += 12;
            } else {
                i += 6;
            }
            continue;
        }
        if (!memchr("bfnrt\"\\/", e, 8) || e == 0) {
            c->i = i;
            return 0;
        }
        i += 2;
    }
    c->i = i + 1;
    return 1;
}

/* A number at c->i: RFC 8259, at most 63 characters (cJSON reads 63 into a buffer). */
static int number(jcur *c) {
    size_t i = c->i, start = i;
    if (i < c->n && c->s[i] == '-') i++;
    if (i >= c->n) goto bad;
    if (c->s[i] == '0') i++;
    else if (c->s[i] >= '1' && c->s[i] <= '9')
        while (i < c->n && c->s[i] >= '0' && c->s[i] <= '9') i++;
    else goto bad;
    if (i < c->n && c->s[i] == '.') {
        i++;
        if (i >= c->n || c->s[i] < '0' || c->s[i] > '9') goto bad;
        while (i < c->n && c->s[i] >= '0' && c->s[i] <= '9') i++;
    }
    if (i < c->n && (c->s[i] == 'e' || c->s[i] == 'E')) {
        i++;
        if (i < c->n && (c->s[i] == '+' || c->s[i] == '-')) i++;
        if (i >= c->n || c->s[i] < '0' || c->s[i] > '9') goto bad;
        while (i < c->n && c->s[i] >= '0' && c->s[i] <= '9') i++;
    }
    if (i - start > 63) goto bad;
    c->i = i;
    return 1;
bad:
    c->i = i;
    return 0;
}

static int literal(jcur *c, const char *w, size_t l) {
    if (c->n - c->i < l || memcmp(c->s + c->i, w, l) != 0) return 0;
    c->i += l;
    return 1;
}

/* Nesting: bit d of the stack is 1 when the container at depth d is an object. */
#define JS_WORDS 64
int sk_json_well_formed(const char *text, size_t len, size_t max_depth, size_t *err_at) {
    jcur c = {(const unsigned char *)text, text ? len : 0, 0};
    uint64_t stack[JS_WORDS];
    size_t depth = 0;
    if (max_depth > JS_WORDS * 64) max_depth = JS_WORDS * 64;
    if (c.n >= 5 && memcmp(c.s, "\xEF\xBB\xBF", 3) == 0) c.i = 3; /* cJSON skips a BOM */
    skip_ws(&c);
    for (;;) {
        /* a value */
        if (c.i >= c.n) goto bad;
        unsigned char ch = c.s[c.i];
        if (ch == '[' || ch == '{') {
            if (depth >= max_depth) goto bad;
            uint64_t bit = 1ull << (depth & 63);
            if (ch == '{') stack[depth >> 6] |= bit;
            else stack[depth >> 6] &= ~bit;
            depth++;
            c.i++;
            skip_ws(&c);
            if (c.i < c.n && c.s[c.i] == (ch == '[' ? ']' : '}')) {
                c.i++;
                depth--;
                goto after_value;
            }
            if (ch == '{') goto key;
            continue;
        }
        if (ch == '"') {
            if (!string(&c)) goto bad;
        } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
            if (!number(&c)) goto bad;
        } else if (!literal(&c, "null", 4) && !literal(&c, "true", 4) && !literal(&c, "false", 5)) {
            goto bad;
        }
    after_value:
        if (depth == 0) break;
        skip_ws(&c);
        if (c.i >= c.n) goto bad;
        {
            int in_object = (stack[(depth - 1) >> 6] >> ((depth - 1) & 63)) & 1;
            unsigned char d = c.s[c.i];
            if (d == (in_object ? '}' : ']')) {
                c.i++;
                depth--;
                goto after_value;
            }
            if (d != ',') goto bad;
            c.i++;
            skip_ws(&c);
            if (!in_object) continue;
        }
    key:
        if (c.i >= c.n || c.s[c.i] != '"' || !string(&c)) goto bad;
        skip_ws(&c);
        if (c.i >= c.n || c.s[c.i] != ':') goto bad;
        c.i++;
        skip_ws(&c);
    }
    if (err_at) *err_at = 0;
    return 1;
bad:
    if (err_at) *err_at = c.i < c.n ? c.i : (c.n ? c.n - 1 : 0);
    return 0;
}

int sk_json_parse_failure(const char *text, size_t len, size_t max_depth, size_t *err_at) {
    return sk_json_well_formed(text, len, max_depth, err_at) ? SKYCMD_E_NOMEM : SKYCMD_E_FORMAT;
}
