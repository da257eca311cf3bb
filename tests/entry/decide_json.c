/*
 * decide_json.c - the library's own entry point for tests/serve/test_entry_points.py: opens
 * a model with the library's defaults (F32 products), answers one /v1/systemone body per
 * input line with skycmd_decide_json and prints, per line, the response JSON or
 *   ERROR <status name> <the session's message>
 * Usage: decide_json MODEL < bodies.jsonl
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "skycmd.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: decide_json MODEL < bodies.jsonl\n");
        return 2;
    }
    skycmd_error *err = skycmd_error_new();
    skycmd_model *model = NULL;
    skycmd_session *session = NULL;
    if (skycmd_model_open(argv[1], NULL, &model, err) != SKYCMD_OK ||
        skycmd_session_new(model, &session) != SKYCMD_OK) {
        fprintf(stderr, "decide_json: %s: %s\n", argv[1], skycmd_error_message(err));
        return 1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        if (line[n - 1] == '\n') line[--n] = '\0';
        char *out = NULL;
        int st = skycmd_decide_json(session, line, (size_t)n, &out);
        if (st == SKYCMD_OK) printf("%s\n", out);
        else printf("ERROR %s %s\n", skycmd_status_name(st), skycmd_session_errmsg(session));
        skycmd_string_free(out);
    }
    free(line);
    skycmd_session_free(session);
    skycmd_model_free(model);
    skycmd_error_free(err);
    return 0;
}
