/* leak_loop.c - the C-level leak check of the bindings: N rounds of
 * open -> session -> decide (typed + JSON) -> free, the same calls every binding makes, run under
 * valgrind by run-tests.sh. usage: leak_loop MODEL.gguf REQUEST.json [ROUNDS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "skycmd.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.gguf REQUEST.json [ROUNDS]\n", argv[0]);
        return 2;
    }
    int rounds = argc > 3 ? atoi(argv[3]) : 20;
    FILE *f = fopen(argv[2], "rb");
    if (!f) { perror(argv[2]); return 1; }
    static char req[1 << 16];
    size_t n = fread(req, 1, sizeof req - 1, f);
    fclose(f);
    req[n] = 0;
    skycmd_error *err = skycmd_error_new();
    if (skycmd_check_version(SKYCMD_VERSION_NUMBER, err) != SKYCMD_OK) {
        fprintf(stderr, "%s\n", skycmd_error_message(err));
        return 1;
    }
    for (int i = 0; i < rounds; i++) {
        skycmd_options *o = skycmd_options_new();
        skycmd_model *m = NULL;
        skycmd_session *s = NULL;
        skycmd_request *r = NULL;
        skycmd_response *resp = NULL;
        char *js = NULL;
        if (skycmd_model_open(argv[1], o, &m, err) != SKYCMD_OK) {
            fprintf(stderr, "open: %s\n", skycmd_error_message(err));
            return 1;
        }
        if (skycmd_session_new(m, &s) != SKYCMD_OK || skycmd_request_parse(req, n, &r) != SKYCMD_OK ||
            skycmd_decide(s, r, &resp) != SKYCMD_OK || skycmd_decide_json(s, req, n, &js) != SKYCMD_OK) {
            fprintf(stderr, "decide failed: %s\n", s ? skycmd_session_errmsg(s) : "no session");
            return 1;
        }
        /* the error paths the bindings exercise */
        skycmd_request *bad = NULL;
        skycmd_request_parse("{\"state\": ", 10, &bad);
        skycmd_request_free(bad);
        skycmd_model *none = NULL;
        skycmd_model_open("/nonexistent/x.gguf", NULL, &none, err);
        (void)skycmd_error_errno(err);
        char *builtin = NULL; /* found or not (SKYCMD_DEFAULT_MODEL, beside the library) */
        skycmd_default_model_path(&builtin, err);
        skycmd_string_free(builtin);
        skycmd_string_free(js);
        skycmd_response_free(resp);
        skycmd_request_free(r);
        if (skycmd_model_free(m) != SKYCMD_E_BUSY) { fprintf(stderr, "model_free with a session is not BUSY\n"); return 1; }
        skycmd_session_free(s);
        if (skycmd_model_free(m) != SKYCMD_OK) { fprintf(stderr, "model_free failed\n"); return 1; }
        skycmd_options_free(o);
    }
    skycmd_error_free(err);
    printf("leak_loop: %d rounds done\n", rounds);
    return 0;
}
