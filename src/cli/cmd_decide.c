/* cmd_decide.c - `skycmd decide MODEL.gguf [REQUEST.json|-]`: answer one /v1/systemone
 * request and print the response JSON (public API only). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define DECIDE_MAX_BODY ((size_t)16 << 20)

static void usage(FILE *out) {
    fprintf(out,
            "usage: skycmd decide MODEL.gguf [REQUEST.json|-] [options]\n"
            "\n"
            "Answer a /v1/systemone request (read from REQUEST.json, or stdin when it is '-'\n"
            "or absent) with a decision model and print the response JSON:\n"
            "  {\"model\", \"answers\", \"usage\": {\"input_tokens\", \"output_tokens\": 0}}\n"
            "\n"
            "options:\n"
            "  --threads N        compute threads (0 = one per core; default 1)\n"
            "  --max-tokens N     sequence budget instead of the model's decision.max_tokens\n"
            "  --model-name NAME  the \"model\" reported in the response\n"
            "  --pretty           indent the response\n"
            "  -h, --help         show this help\n"
            "\n"
            "exit status: 0 answered, 1 error (message on stderr), 2 usage error\n"
            "example: skycmd decide s1-pico.gguf examples/flappy-drone.json --pretty\n");
}

static char *read_all(FILE *f, size_t *len, int *too_big) {
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    for (;;) {
        if (n == cap) {
            if (cap > DECIDE_MAX_BODY) {
                *too_big = 1;
                free(buf);
                return NULL;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    if (ferror(f)) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* Re-indent compact JSON without touching any value (number text stays as printed). */
static void print_pretty(const char *s) {
    int depth = 0, in_str = 0, esc = 0;
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (in_str) {
            putchar(c);
            if (esc) esc = 0;
            else if (c == '\\') esc = 1;
            else if (c == '"') in_str = 0;
            continue;
        }
        switch (c) {
        case '"': in_str = 1; putchar(c); break;
        case '{': case '[':
            putchar(c);
            if (p[1] == '}' || p[1] == ']') { putchar(*++p); break; }
            depth++;
            printf("\n%*s", depth * 2, "");
            break;
        case '}': case ']':
            depth--;
            printf("\n%*s%c", depth * 2, "", c);
            break;
        case ',': printf(",\n%*s", depth * 2, ""); break;
        case ':': fputs(": ", stdout); break;
        default: putchar(c); break;
        }
    }
    putchar('\n');
}

static int parse_int(const char *s, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end) return -1;
    *out = v;
    return 0;
}

int cmd_decide(int argc, char **argv) {
    const char *model_path = NULL, *req_path = NULL, *name = NULL;
    long long threads = -1, max_tokens = -1;
    int pretty = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--pretty") == 0) {
            pretty = 1;
        } else if (strcmp(a, "--threads") == 0 || strcmp(a, "--max-tokens") == 0 ||
                   strcmp(a, "--model-name") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "skycmd decide: %s needs a value\n", a);
                usage(stderr);
                return 2;
            }
            const char *v = argv[++i];
            if (strcmp(a, "--model-name") == 0) {
                name = v;
            } else {
                long long x;
                if (parse_int(v, &x) || x < 0) {
                    fprintf(stderr, "skycmd decide: %s: '%s' is not a non-negative integer\n", a, v);
                    return 2;
                }
                if (strcmp(a, "--threads") == 0) threads = x;
                else max_tokens = x;
            }
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "skycmd decide: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (!model_path) {
            model_path = a;
        } else if (!req_path) {
            req_path = a;
        } else {
            fprintf(stderr, "skycmd decide: unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!model_path) {
        usage(stderr);
        return 2;
    }

    /* read the request first: a bad path should not cost a model load */
    FILE *f = (!req_path || strcmp(req_path, "-") == 0) ? stdin : fopen(req_path, "rb");
    if (!f) {
        fprintf(stderr, "skycmd decide: %s: %s\n", req_path, strerror(errno));
        return 1;
    }
    size_t len = 0;
    int too_big = 0;
    char *body = read_all(f, &len, &too_big);
    if (f != stdin) fclose(f);
    if (!body) {
        fprintf(stderr, "skycmd decide: %s: %s\n", req_path ? req_path : "stdin",
                too_big ? "request larger than 16 MiB" : "cannot read the request");
        return 1;
    }

    int rc = 1;
    skycmd_error *err = skycmd_error_new();
    skycmd_options *opts = skycmd_options_new();
    skycmd_model *model = NULL;
    skycmd_session *sess = NULL;
    char *resp = NULL;
    if (!err || !opts) {
        fprintf(stderr, "skycmd decide: out of memory\n");
        goto out;
    }
    if (max_tokens >= 0) {
        int st = skycmd_options_set_int(opts, SKYCMD_OPT_MAX_TOKENS, max_tokens);
        if (st) {
            fprintf(stderr, "skycmd decide: --max-tokens %lld: %s\n", max_tokens, skycmd_strerror(st));
            rc = 2;
            goto out;
        }
    }
    if (name) skycmd_options_set_string(opts, SKYCMD_OPT_MODEL_NAME, name);
    int st = skycmd_model_open(model_path, opts, &model, err);
    if (st) {
        rc = cli_fail("decide", st, err);
        goto out;
    }
    st = skycmd_session_new(model, &sess);
    if (st) {
        fprintf(stderr, "skycmd decide: %s\n", skycmd_strerror(st));
        goto out;
    }
    if (threads >= 0 && (st = skycmd_session_set_int(sess, SKYCMD_OPT_THREADS, threads))) {
        fprintf(stderr, "skycmd decide: --threads %lld: %s\n", threads, skycmd_session_errmsg(sess));
        rc = 2;
        goto out;
    }
    st = skycmd_decide_json(sess, body, len, &resp);
    if (st) {
        fprintf(stderr, "skycmd decide: %s (%s)\n", skycmd_session_errmsg(sess), skycmd_status_name(st));
        goto out;
    }
    if (pretty) print_pretty(resp);
    else printf("%s\n", resp);
    rc = fflush(stdout) == 0 ? 0 : 1;
out:
    skycmd_string_free(resp);
    skycmd_session_free(sess);
    skycmd_model_free(model);
    skycmd_options_free(opts);
    skycmd_error_free(err);
    free(body);
    return rc;
}
