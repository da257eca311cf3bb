/*
 * skycmd_wasi.c - a small WASI program on libskycmd's public API, built for wasm32-wasi by
 * tools/build-wasm.sh and run under Node's WASI (tests/wasm/run-wasi.mjs):
 *
 *   skycmd-wasi decide MODEL.gguf REQUEST.json [REPEAT [WEIGHTS]]
 *       the response JSON of REQUEST.json on one line; with REPEAT > 1 the request is
 *       answered REPEAT times more and the mean time per answer goes to stderr
 *       ("N answers, X us per answer (kernels K)"); one compute thread. WEIGHTS: how the
 *       model keeps its matrices (SKYCMD_OPT_WEIGHTS): f32, q8, q8-plain or q8-row; without
 *       it, the library's default
 *   skycmd-wasi decide-many MODEL.gguf REQUESTS.json
 *       REQUESTS.json is a JSON array of request bodies as strings (or of objects whose
 *       "body" is one, as tests/fixtures/golden/requests.json): one line per request, the
 *       response JSON or {"error": STATUS_NAME, "message": ...}
 *   skycmd-wasi tokenize MODEL.gguf TEXT
 *       the ids of TEXT (no special tokens) on one line, separated by spaces
 *
 * The model is read into memory and opened with skycmd_model_open_buffer (no mmap in WASI).
 * Exit status: 0 done, 1 error (message on stderr), 2 usage.
 */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "skycmd.h"

static int fail(const char *what, const char *msg) {
    fprintf(stderr, "skycmd-wasi: %s: %s\n", what, msg);
    return 1;
}

/* The whole file, NUL-terminated; NULL with a message on failure. */
static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (size_t r; buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
        n += r;
        if (cap - n - 1 == 0) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
            cap *= 2;
        }
    }
    const int err = ferror(f);
    fclose(f);
    if (!buf || err) {
        free(buf);
        fprintf(stderr, "skycmd-wasi: %s: read error or out of memory\n", path);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Answer one request body: its response JSON (or an error object) on one line. */
static int decide_one(skycmd_session *s, const char *body, size_t len) {
    char *out = NULL;
    const int st = skycmd_decide_json(s, body, len, &out);
    if (st != SKYCMD_OK) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "error", skycmd_status_name(st));
        cJSON_AddStringToObject(e, "message", skycmd_session_errmsg(s));
        char *txt = cJSON_PrintUnformatted(e);
        puts(txt ? txt : "{\"error\": \"NOMEM\"}");
        free(txt);
        cJSON_Delete(e);
        return st;
    }
    puts(out);
    skycmd_string_free(out);
    return SKYCMD_OK;
}

int main(int argc, char **argv) {
    if (argc < 4 || (strcmp(argv[1], "decide") && strcmp(argv[1], "decide-many") &&
                     strcmp(argv[1], "tokenize"))) {
        fprintf(stderr, "usage: skycmd-wasi decide MODEL.gguf REQUEST.json [REPEAT [f32|q8|q8-plain|q8-row]]\n"
                        "       skycmd-wasi decide-many MODEL.gguf REQUESTS.json\n"
                        "       skycmd-wasi tokenize MODEL.gguf TEXT\n");
        return 2;
    }
    size_t model_len = 0;
    char *model_bytes = slurp(argv[2], &model_len);
    if (!model_bytes) return 1;
    static const struct { const char *name; int value; } weights[] = {
        {"f32", SKYCMD_WEIGHTS_F32}, {"q8", SKYCMD_WEIGHTS_Q8}, {"q8-plain", SKYCMD_WEIGHTS_Q8_PLAIN},
        {"q8-row", SKYCMD_WEIGHTS_Q8_ROW}};
    int weights_value = -1; /* -1: the library's default (no options) */
    if (!strcmp(argv[1], "decide") && argc > 5) {
        size_t i = 0;
        while (i < sizeof weights / sizeof weights[0] && strcmp(argv[5], weights[i].name)) i++;
        if (i == sizeof weights / sizeof weights[0]) {
            free(model_bytes);
            fprintf(stderr, "skycmd-wasi: weights %s: not f32, q8, q8-plain or q8-row\n", argv[5]);
            return 2;
        }
        weights_value = weights[i].value;
    }
    skycmd_error *err = skycmd_error_new();
    skycmd_options *opts = NULL;
    skycmd_model *model = NULL;
    int rc = 1;
    if (weights_value >= 0 && (!(opts = skycmd_options_new()) ||
                               skycmd_options_set_int(opts, SKYCMD_OPT_WEIGHTS, weights_value) != SKYCMD_OK)) {
        fail("options", "cannot set the weights option");
        goto done;
    }
    if (skycmd_model_open_buffer(model_bytes, model_len, opts, &model, err) != SKYCMD_OK) {
        fail(argv[2], skycmd_error_message(err));
        goto done;
    }
    if (!strcmp(argv[1], "tokenize")) {
        const skycmd_tokenizer *tok = skycmd_model_tokenizer(model);
        size_t n = 0;
        int st = skycmd_tokenizer_encode(tok, argv[3], strlen(argv[3]), NULL, 0, &n);
        int32_t *ids = st == SKYCMD_OK ? malloc((n ? n : 1) * sizeof *ids) : NULL;
        if (ids) st = skycmd_tokenizer_encode(tok, argv[3], strlen(argv[3]), ids, n, &n);
        if (st != SKYCMD_OK || !ids) {
            free(ids);
            fail("tokenize", skycmd_strerror(st != SKYCMD_OK ? st : SKYCMD_E_NOMEM));
            goto done;
        }
        for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", (int)ids[i]);
        putchar('\n');
        free(ids);
        rc = 0;
        goto done;
    }
    skycmd_session *s = NULL;
    /* one compute thread: what wasm has, and the native build of this file (the timing's
     * comparison, tests/wasm/bench.sh) runs alike */
    if (skycmd_session_new(model, &s) != SKYCMD_OK ||
        skycmd_session_set_int(s, SKYCMD_OPT_THREADS, 1) != SKYCMD_OK) {
        fail("session", "cannot create a one-thread session");
        skycmd_session_free(s);
        goto done;
    }
    size_t len = 0;
    char *text = slurp(argv[3], &len);
    if (!text) {
        skycmd_session_free(s);
        goto done;
    }
    if (!strcmp(argv[1], "decide")) {
        const long repeat = argc > 4 ? strtol(argv[4], NULL, 10) : 1;
        rc = decide_one(s, text, len) == SKYCMD_OK ? 0 : 1;
        if (rc == 0 && repeat > 1) {
            char *out = NULL;
            const double t0 = now_us();
            for (long i = 0; i < repeat && rc == 0; i++) {
                rc = skycmd_decide_json(s, text, len, &out) == SKYCMD_OK ? 0 : 1;
                skycmd_string_free(out);
            }
            fprintf(stderr, "%ld answers, %.1f us per answer (kernels %s)\n", repeat,
                    (now_us() - t0) / (double)repeat, skycmd_kernels());
        }
    } else {
        cJSON *arr = cJSON_ParseWithLength(text, len);
        if (!cJSON_IsArray(arr)) {
            fail(argv[3], "not a JSON array");
        } else {
            rc = 0;
            const cJSON *it;
            cJSON_ArrayForEach(it, arr) {
                const cJSON *b = cJSON_IsObject(it) ? cJSON_GetObjectItemCaseSensitive(it, "body") : it;
                if (!cJSON_IsString(b)) {
                    rc = fail(argv[3], "an item is neither a string nor {\"body\": STRING}");
                    break;
                }
                (void)decide_one(s, b->valuestring, strlen(b->valuestring));
            }
        }
        cJSON_Delete(arr);
    }
    free(text);
    skycmd_session_free(s);
done:
    skycmd_model_free(model);
    skycmd_options_free(opts);
    skycmd_error_free(err);
    free(model_bytes);
    return rc;
}
