/*
 * pyjson.h - a small JSON reader for untrusted request bodies and a writer that prints
 * values exactly as Python's json.dumps(v, ensure_ascii=False) does.
 *
 * Why our own reader and not cJSON: the Laya prompt is built from json.dumps of the parsed
 * request, and Python keeps integers exact (arbitrary precision) and prints floats with
 * repr (shortest round-trip digits). cJSON turns every number into a double and loses the
 * original text, so "12345678901234567890" or "1E5" could not be reproduced. This reader
 * keeps the lexeme of every number, keeps object key order and resolves duplicate keys the
 * way Python's dict (and nlohmann::ordered_json) do: the LAST value wins, at the position of
 * the FIRST occurrence.
 *
 * Contract:
 *  - Strict RFC 8259: no NaN/Infinity literals, no comments, no trailing commas, no raw
 *    control characters in strings, valid UTF-8 only, no unpaired surrogate escapes (Python
 *    would accept the last two; they cannot be represented in UTF-8 text). Integers longer
 *    than 4300 digits are refused like Python 3.11's json.loads does.
 *  - Limits: nesting depth (SK_JSON_MAX_DEPTH) and value count (SK_JSON_MAX_VALUES) ->
 *    SKYCMD_E_TOO_LARGE; any syntax error ->
 *    SKYCMD_E_JSON with the byte offset. Nothing recurses deeper than the depth limit.
 *  - Every value lives in one arena owned by the sk_jdoc; strings are decoded UTF-8 and
 *    NUL-terminated (they may contain NUL: always use the length).
 */
#ifndef SK_PYJSON_H
#define SK_PYJSON_H

#include <stddef.h>
#include <stdint.h>

#include "../util/util.h"

#define SK_JSON_MAX_DEPTH 64
/* Values per document: bounds memory (about 100 bytes per value while parsing). */
#define SK_JSON_MAX_VALUES ((size_t)1 << 20)

enum { SK_JNULL = 0, SK_JFALSE, SK_JTRUE, SK_JNUM, SK_JSTR, SK_JARR, SK_JOBJ };

typedef struct sk_jstr {
    const char *s;
    size_t n;
} sk_jstr;

typedef struct sk_jv sk_jv;
struct sk_jv {
    uint8_t type;
    uint8_t is_int;   /* SK_JNUM: the lexeme has neither fraction nor exponent */
    size_t n;         /* STR: bytes; NUM: lexeme bytes; ARR/OBJ: members */
    const char *s;    /* STR: decoded text; NUM: the lexeme as written */
    double num;       /* SK_JNUM: the value as Python's float() would read it */
    sk_jv *items;     /* ARR/OBJ members */
    sk_jstr *keys;    /* OBJ keys, parallel to items */
};

/* An arena: allocations are freed all at once. */
typedef struct sk_arena_chunk sk_arena_chunk;
typedef struct sk_arena {
    sk_arena_chunk *head;
    size_t total;
} sk_arena;
void *sk_arena_alloc(sk_arena *a, size_t n);
void sk_arena_free(sk_arena *a);

typedef struct sk_jdoc {
    sk_arena arena;
    sk_jv root;
} sk_jdoc;

/* Parse `len` bytes. On failure doc is emptied (safe to free) and e says where. */
int sk_json_parse(const char *text, size_t len, sk_jdoc *doc, sk_err *e);
void sk_jdoc_free(sk_jdoc *doc);

/* Member of an object by key (last-wins already resolved at parse), or NULL. */
const sk_jv *sk_jobj_get(const sk_jv *obj, const char *key);

/* json.dumps(v, ensure_ascii=False) with separators (", ", ": "). */
void sk_pyjson_dump(sk_buf *b, const sk_jv *v);
/* A JSON string literal of s (Python escaping, non-ASCII raw). */
void sk_pyjson_str(sk_buf *b, const char *s, size_t n);
/* Python str(v) of a scalar: strings as-is, True/False/None, int digits, float repr. */
void sk_py_str_scalar(sk_buf *b, const sk_jv *v);

/* Python repr(float) ("1.0", "1e-07", "1e+16", "inf", "nan"); json_style gives Infinity,
 * -Infinity and NaN instead, as json.dumps does. Returns the length written to out[32]. */
size_t sk_py_float_repr(double x, int json_style, char out[32]);
/* The same by the plain search (every candidate printed and parsed by the C library): the
 * reference the fast one is tested against. */
size_t sk_py_float_repr_ref(double x, int json_style, char out[32]);
/* Locale-independent strtod (the C locale, whatever the process uses). */
double sk_strtod_c(const char *s, char **end);

#endif
