/*
 * serve_util.h - small helpers of the HTTP server: a growable text buffer with JSON string
 * escaping, the top-level "model" field scanner, a constant-time compare and clocks.
 * No libmicrohttpd types here, so this part builds (and is testable) everywhere.
 */
#ifndef SKYCMD_SERVE_UTIL_H
#define SKYCMD_SERVE_UTIL_H

#include <stddef.h>
#include <stdint.h>

struct sbuf {
    char *p;
    size_t len, cap;
    int oom; /* sticky: an append failed; the content is then incomplete */
};

void sbuf_free(struct sbuf *b);
void sbuf_reset(struct sbuf *b); /* keeps the capacity */
int sbuf_reserve(struct sbuf *b, size_t extra);
void sbuf_add(struct sbuf *b, const char *s, size_t n);
void sbuf_adds(struct sbuf *b, const char *s);
void sbuf_addf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s as a JSON string literal (quotes included). Bytes that are not valid UTF-8 are
 * written as U+FFFD so that the output is always valid JSON. */
void sbuf_add_json_str(struct sbuf *b, const char *s, size_t n);

/* What the top-level "model" member of a request body holds. */
enum sj_model_kind {
    SJ_MODEL_ABSENT = 0,  /* no such member, or the body is not a JSON object we can scan */
    SJ_MODEL_STRING = 1,  /* a string, decoded into out */
    SJ_MODEL_NULL = 2,    /* null: same as absent */
    SJ_MODEL_OTHER = 3,   /* a number, bool, object or array: a request error */
    SJ_MODEL_TOO_LONG = 4 /* a string longer than the caller's buffer */
};
/* Scan only the top level of a JSON object for "model" (first occurrence). Nested values
 * are skipped without recursion. Never reads past n; a malformed body gives SJ_MODEL_ABSENT
 * (the library's parser reports the real error afterwards). */
int sj_find_model(const char *json, size_t n, char *out, size_t cap);

/* The raw text of the top-level member `key` of a JSON object (the last one, which the
 * library and Python's json keep): 1 with s[*off .. *off + *len) the value's bytes, 0 when
 * absent or the body cannot be scanned. Meant for bodies the library's parser has already
 * accepted as JSON; never reads past n either way. */
int sj_member(const char *s, size_t n, const char *key, size_t *off, size_t *len);
/* The number of members of the JSON object s[0..n) (duplicate keys counted each time), or
 * -1 when s is not a well-formed object. Never reads past n. */
long sj_object_count(const char *s, size_t n);
/* The elements of the JSON array s[0..n): start with *pos = 0; 1 with the next element's
 * span, 0 after the last, -1 when s is not a well-formed array. */
int sj_array_next(const char *s, size_t n, size_t *pos, size_t *off, size_t *len);

/* 1 when a (len an) equals b (len bn); time depends only on bn (the secret's length). */
int ct_equal(const char *a, size_t an, const char *b, size_t bn);

uint64_t now_us(void);     /* CLOCK_MONOTONIC in microseconds */
double wall_time_s(void);  /* CLOCK_REALTIME in seconds */

#endif
