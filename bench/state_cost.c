/*
 * state_cost.c - what a long state costs skycmd_decide (docs/performance.md, "Long states").
 *
 * usage: skycmd-state-cost MODEL.gguf [REPEATS]
 *
 * Times skycmd_decide (the request already parsed) on the same one-question request with
 * three string states: one that just fits the model's sequence, and 200 KB and 2 MB ones
 * (the same words repeated), then the same as list states (which keep their end), and
 * prints the median of each and its ratio to the just-fitting state's. The sequences the
 * model reads are the same length in every case; only the state's size changes.
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

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A request whose state is `bytes` of telemetry words, as a string or as a list of them. */
static char *make_request(size_t bytes, int as_list) {
    static const char *words[] = {"vy", "0", "dx", "36", "up", "9", "dn", "7", "nxt", "10", "alt", "32"};
    size_t cap = bytes + 4096;
    char *b = malloc(cap);
    if (!b) return NULL;
    size_t n = (size_t)snprintf(b, cap, "{\"state\":%s", as_list ? "[" : "\"");
    for (size_t i = 0; n < bytes + 16; i++) {
        const char *w = words[i % 12];
        n += (size_t)snprintf(b + n, cap - n, as_list ? "%s\"%s\"" : "%s%s", i ? (as_list ? "," : " ") : "", w);
    }
    snprintf(b + n, cap - n,
             "%s,\"questions\":{\"danger\":{\"type\":\"noul\",\"instructions\":\"Will the drone crash?\"}}}",
             as_list ? "]" : "\"");
    return b;
}

static double median_decide(skycmd_session *s, const char *json, int repeats, long *tokens) {
    skycmd_request *q = NULL;
    if (skycmd_request_parse(json, strlen(json), &q) != SKYCMD_OK) {
        fprintf(stderr, "request does not parse: %s\n", q ? skycmd_request_errmsg(q) : "?");
        exit(1);
    }
    double *t = malloc((size_t)repeats * sizeof *t);
    for (int i = 0; i < repeats; i++) {
        skycmd_response *r = NULL;
        double t0 = now_s();
        if (skycmd_decide(s, q, &r) != SKYCMD_OK) {
            fprintf(stderr, "decide failed: %s\n", skycmd_session_errmsg(s));
            exit(1);
        }
        t[i] = now_s() - t0;
        *tokens = (long)skycmd_response_input_tokens(r);
        skycmd_response_free(r);
    }
    qsort(t, (size_t)repeats, sizeof *t, cmp_d);
    double m = t[repeats / 2];
    free(t);
    skycmd_request_free(q);
    return m;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [REPEATS]\n", argv[0]);
        return 2;
    }
    int repeats = argc > 2 ? atoi(argv[2]) : 21;
    if (repeats < 1) repeats = 1;
    skycmd_model *m = NULL;
    skycmd_error *err = skycmd_error_new();
    if (skycmd_model_open(argv[1], NULL, &m, err) != SKYCMD_OK) {
        fprintf(stderr, "%s\n", skycmd_error_message(err));
        return 1;
    }
    skycmd_session *s = NULL;
    skycmd_session_new(m, &s);
    int64_t max_tokens = 0;
    skycmd_model_get_int(m, "decision.max_tokens", &max_tokens);
    /* about 2.4 bytes a token for these words: this many bytes just fill the sequence */
    size_t fits = (size_t)max_tokens * 2;
    size_t sizes[] = {fits, 200 * 1000, 2 * 1000 * 1000};
    printf("model %s, max_tokens %lld, median of %d decides\n", argv[1], (long long)max_tokens, repeats);
    for (int list = 0; list < 2; list++) {
        double base = 0;
        for (int k = 0; k < 3; k++) {
            char *json = make_request(sizes[k], list);
            long tokens = 0;
            double t = median_decide(s, json, repeats, &tokens);
            if (k == 0) base = t;
            printf("%-6s state %8zu bytes: %8.3f ms  (%.2fx the fitting state; input_tokens %ld)\n",
                   list ? "list" : "string", strlen(json), t * 1e3, t / base, tokens);
            free(json);
        }
    }
    skycmd_session_free(s);
    skycmd_model_free(m);
    skycmd_error_free(err);
    return 0;
}
