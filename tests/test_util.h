/*
 * test_util.h - helpers shared by the Criterion tests (tests/test_*.c): reading a whole
 * file, parsing a JSON fixture, writing a file, removing a scratch tree, one scratch
 * directory per test, counting leftover temporary files, FNV-1a digests, and the tokenizer
 * callback the prompt builder is driven with.
 *
 * Header-only (static functions) because every tests/test_*.c is its own executable.
 * Include it after `#define _POSIX_C_SOURCE 200809L` (mkdtemp) and after the system
 * headers. The asserting helpers (tu_slurp, tu_load_json, tu_scratch_make) fail the
 * current test with a message naming the file; the others report failure to the caller,
 * for the places (a .fini, an optional file) where an assertion is not wanted.
 */
#ifndef SKYCMD_TEST_UTIL_H
#define SKYCMD_TEST_UTIL_H

#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "prompt/prompt.h"
#include "tokenizer/tokenizer.h"

/* Larger than any fixture; a bound so that a wrong path cannot eat the memory. */
#define TU_MAX_FILE ((size_t)1 << 30)

/* The whole file, NUL-terminated (caller frees), or NULL when it cannot be read. */
static inline char *tu_read_file(const char *path, size_t *len) {
    char *d = NULL;
    sk_err e;
    sk_err_clear(&e);
    if (sk_read_file(path, &d, len, TU_MAX_FILE, &e) != SKYCMD_OK) return NULL;
    return d;
}

/* The whole file, NUL-terminated (caller frees); the test fails when it cannot be read.
 * void * so that binary fixtures can be taken as the element type they hold. */
static inline void *tu_slurp(const char *path, size_t *len) {
    char *d = NULL;
    sk_err e;
    sk_err_clear(&e);
    int st = sk_read_file(path, &d, len, TU_MAX_FILE, &e);
    cr_assert_eq(st, SKYCMD_OK, "cannot read %s: %s", path, e.msg);
    return d;
}

/* A JSON fixture, parsed (caller deletes); the test fails when it is missing or invalid. */
static inline cJSON *tu_load_json(const char *path) {
    size_t n = 0;
    char *t = tu_read_file(path, &n);
    cr_assert(t != NULL, "cannot read fixture %s", path);
    cJSON *j = cJSON_ParseWithLength(t, n);
    free(t);
    cr_assert(j != NULL, "fixture %s is not valid JSON", path);
    return j;
}

/* Write n bytes to path (created or truncated): 0, or -1 on any failure. */
static inline int tu_write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(data, 1, n, f) == n;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

/* Remove a file or a whole tree (rm -rf): 0, or -1 when it could not be removed. */
static inline int tu_rm_rf(const char *path) {
    char cmd[4200];
    int k = snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (k < 0 || (size_t)k >= sizeof cmd || strchr(path, '\'')) return -1;
    return system(cmd) == 0 ? 0 : -1;
}

/* One scratch directory per test (Criterion runs each test in its own process): the path
 * of the current one, "" when there is none. A static local, so that a test file which
 * does not use it gets no unused-variable warning. */
static inline char *tu_scratch_path(void) {
    static char path[1024];
    return path;
}

/* Make a fresh <build>/<prefix>-<tag>-XXXXXX (mkdtemp) and remember it as the scratch
 * directory; its path is copied to out. The test fails when it cannot be made. */
static inline void tu_scratch_make(char *out, size_t cap, const char *prefix, const char *tag) {
    snprintf(out, cap, "%s/%s-%s-XXXXXX", SKYCMD_BINARY_DIR, prefix, tag);
    cr_assert(mkdtemp(out) != NULL, "mkdtemp %s: %s", out, strerror(errno));
    snprintf(tu_scratch_path(), 1024, "%s", out);
}

/* Remove the scratch directory, if any. Meant as a test's or suite's .fini, so that it
 * also runs after a failed assertion: warns rather than asserts. */
static inline void tu_scratch_remove(void) {
    char *p = tu_scratch_path();
    if (p[0] && tu_rm_rf(p) != 0) fprintf(stderr, "test: could not remove %s\n", p);
    p[0] = '\0';
}

/* How many temporary files of an atomic write (<name>.skycmd-partial.<hex>, see sk_atomic_open) whose
 * name starts with prefix ("" for any) are in dir; the test fails when dir cannot be read. */
static inline int tu_count_tmp_files(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot list %s", dir);
    size_t np = strlen(prefix);
    int k = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strncmp(de->d_name, prefix, np) == 0 && strstr(de->d_name, SK_PARTIAL_SUFFIX)) k++;
    closedir(d);
    return k;
}

/* 64-bit FNV-1a of n bytes from the given offset basis (TU_FNV1A64_BASIS is the standard
 * one; a fixture generator may have used another, and the digest must match its). */
#define TU_FNV1A64_BASIS 0xCBF29CE484222325ull
static inline uint64_t tu_fnv1a64(const void *p, size_t n, uint64_t basis) {
    const uint8_t *b = p;
    uint64_t h = basis;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001B3ull;
    }
    return h;
}

#include "tok_encode.h"

/* xorshift64 (13, 7, 17): a test's reproducible random numbers from its own state. */
static inline uint32_t tu_rand32(uint64_t *state) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return (uint32_t)(*state >> 32);
}

#endif /* SKYCMD_TEST_UTIL_H */
