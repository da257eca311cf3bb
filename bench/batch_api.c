/*
 * batch_api.c - skycmd-batch-api MODEL.gguf IN.jsonl [GROUP]: the in-process peer of
 * `skycmd decide --batch` (docs/performance.md). Reads the whole file into memory first
 * (not timed), then times what a program calling the library itself does per line: parse,
 * skycmd_decide_batch over GROUP (default 32) consecutive requests on one session, and the
 * response JSON. Prints "N requests in S s (R/s)". Bad lines are parsed and skipped.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "skycmd.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: skycmd-batch-api MODEL.gguf IN.jsonl [GROUP]\n");
        return 2;
    }
    size_t group = argc > 3 ? (size_t)atoi(argv[3]) : 32;
    if (group < 1 || group > 4096) group = 32;
    FILE *f = fopen(argv[2], "rb");
    if (!f) {
        perror(argv[2]);
        return 1;
    }
    char **lines = NULL;
    size_t n = 0, cap = 0;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t got;
    while ((got = getline(&line, &lcap, f)) >= 0) {
        if (got && line[got - 1] == '\n') line[--got] = '\0';
        if (!got) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 1024;
            lines = realloc(lines, cap * sizeof *lines);
            if (!lines) return 1;
        }
        lines[n++] = strdup(line);
    }
    free(line);
    fclose(f);
    skycmd_error *err = skycmd_error_new();
    skycmd_model *m = NULL;
    if (skycmd_model_open(argv[1], NULL, &m, err) != SKYCMD_OK) {
        fprintf(stderr, "%s\n", skycmd_error_message(err));
        return 1;
    }
    skycmd_session *s = NULL;
    if (skycmd_session_new(m, &s) != SKYCMD_OK) return 1;
    skycmd_request **q = calloc(group, sizeof *q);
    skycmd_response **out = calloc(group, sizeof *out);
    size_t answered = 0, bytes = 0;
    double t0 = now_s();
    for (size_t lo = 0; lo < n; lo += group) {
        size_t k = 0;
        for (size_t i = lo; i < n && i < lo + group; i++) {
            skycmd_request *r = NULL;
            if (skycmd_request_parse(lines[i], strlen(lines[i]), &r) == SKYCMD_OK) q[k++] = r;
            else skycmd_request_free(r);
        }
        if (k && skycmd_decide_batch(s, (const skycmd_request *const *)q, k, out) == SKYCMD_OK) {
            for (size_t j = 0; j < k; j++) {
                bytes += strlen(skycmd_response_json(out[j]));
                skycmd_response_free(out[j]);
            }
            answered += k;
        }
        for (size_t j = 0; j < k; j++) skycmd_request_free(q[j]);
    }
    double el = now_s() - t0;
    printf("%zu requests in %.2f s (%.0f/s), %zu response bytes\n", answered, el,
           el > 0 ? (double)answered / el : 0.0, bytes);
    for (size_t i = 0; i < n; i++) free(lines[i]);
    free(lines);
    free(q);
    free(out);
    skycmd_session_free(s);
    skycmd_model_free(m);
    skycmd_error_free(err);
    return 0;
}
