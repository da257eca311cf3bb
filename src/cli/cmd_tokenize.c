/*
 * cmd_tokenize.c - `skycmd tokenize`: encode text with a model's tokenizer (GGUF) or a
 * tokenizer.json, exactly as HF tokenizers does with add_special_tokens=False.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: skycmd tokenize (MODEL.gguf | --json tokenizer.json) [--ids-only] [--] [TEXT | -]\n"
            "\n"
            "Encode TEXT (or standard input when TEXT is '-' or absent) with the tokenizer of a\n"
            "GGUF model or of a Hugging Face tokenizer.json (tokenizer_config.json beside it names\n"
            "the special tokens). Special tokens are not added; [MASK] etc. inside the text are\n"
            "matched as tokens, as Hugging Face tokenizers does.\n"
            "\n"
            "Output: one line per token, \"<id>\\t<piece>\" (the byte-level vocabulary entry), then\n"
            "\"<n> tokens\". With --ids-only: the ids on one line, separated by spaces.\n"
            "\n"
            "options:\n"
            "  --json PATH   use a tokenizer.json instead of a GGUF model\n"
            "  --ids-only    print only the ids\n"
            "  --            what follows is TEXT even if it starts with '-'\n"
            "  -h, --help    show this help\n");
}

static char *read_stdin(size_t *len) {
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    if (!b) return NULL;
    for (;;) {
        if (n == cap) {
            if (cap > ((size_t)1 << 30)) {
                free(b);
                return NULL;
            }
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                return NULL;
            }
            b = nb;
            cap *= 2;
        }
        size_t r = fread(b + n, 1, cap - n, stdin);
        if (r == 0) break;
        n += r;
    }
    *len = n;
    return b;
}

int cmd_tokenize(int argc, char **argv) {
    const char *json = NULL, *model_path = NULL, *text = NULL;
    int ids_only = 0, have_text = 0, no_more_opts = 0;
    for (int i = 1; i < argc; i++) {
        if (!no_more_opts && strcmp(argv[i], "--") == 0) {
            no_more_opts = 1; /* everything after is TEXT, even if it starts with '-' */
        } else if (no_more_opts) {
            if (!json && !model_path) model_path = argv[i];
            else if (!have_text) { text = argv[i]; have_text = 1; }
            else {
                fprintf(stderr, "skycmd tokenize: too many arguments\n");
                usage(stderr);
                return 2;
            }
        } else if (cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "skycmd tokenize: --json needs a path\n");
                usage(stderr);
                return 2;
            }
            json = argv[++i];
        } else if (strcmp(argv[i], "--ids-only") == 0) {
            ids_only = 1;
        } else if (argv[i][0] == '-' && argv[i][1] == '-') {
            fprintf(stderr, "skycmd tokenize: unknown option %s\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (!json && !model_path) {
            model_path = argv[i];
        } else if (!have_text) {
            text = argv[i];
            have_text = 1;
        } else {
            fprintf(stderr, "skycmd tokenize: too many arguments\n");
            usage(stderr);
            return 2;
        }
    }
    if (!json && !model_path) {
        usage(stderr);
        return 2;
    }
    skycmd_error *err = skycmd_error_new();
    skycmd_tokenizer *own = NULL;
    skycmd_model *model = NULL;
    const skycmd_tokenizer *tok = NULL;
    int rc, ret = 1;
    if (json) {
        rc = skycmd_tokenizer_open_json(json, &own, err);
        tok = own;
    } else {
        rc = skycmd_model_open(model_path, NULL, &model, err);
        if (rc == SKYCMD_OK) tok = skycmd_model_tokenizer(model);
    }
    if (rc != SKYCMD_OK || !tok) {
        ret = cli_fail("tokenize", rc ? rc : SKYCMD_E_INTERNAL, err);
        goto done;
    }
    char *buf = NULL;
    size_t len;
    if (!have_text || strcmp(text, "-") == 0) {
        buf = read_stdin(&len);
        if (!buf) {
            fprintf(stderr, "skycmd tokenize: cannot read standard input\n");
            goto done;
        }
        text = buf;
    } else {
        len = strlen(text);
    }
    size_t n = 0;
    rc = skycmd_tokenizer_encode(tok, text, len, NULL, 0, &n);
    int32_t *ids = NULL;
    if (rc == SKYCMD_OK && n) {
        ids = malloc(n * sizeof *ids);
        rc = ids ? skycmd_tokenizer_encode(tok, text, len, ids, n, &n) : SKYCMD_E_NOMEM;
    }
    if (rc != SKYCMD_OK) {
        fprintf(stderr, "skycmd tokenize: %s%s\n", skycmd_strerror(rc),
                rc == SKYCMD_E_INVALID_ARGUMENT ? " (the text is not valid UTF-8)" : "");
        free(ids);
        free(buf);
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        if (ids_only) {
            printf(i ? " %d" : "%d", (int)ids[i]);
        } else {
            const char *p = skycmd_tokenizer_token(tok, ids[i]);
            printf("%d\t", (int)ids[i]);
            for (const char *c = p ? p : ""; *c; c++) {
                unsigned char ch = (unsigned char)*c;
                if (ch == '\n') fputs("\\n", stdout);
                else if (ch == '\t') fputs("\\t", stdout);
                else if (ch == '\\') fputs("\\\\", stdout);
                else if (ch < 0x20) printf("\\x%02x", ch);
                else putchar(ch);
            }
            putchar('\n');
        }
    }
    if (ids_only) putchar('\n');
    else printf("%zu tokens\n", n);
    free(ids);
    free(buf);
    ret = 0;
done:
    skycmd_tokenizer_free(own);
    if (model) skycmd_model_free(model);
    skycmd_error_free(err);
    return ret;
}
