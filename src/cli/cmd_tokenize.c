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
            "usage: skycmd tokenize (MODEL.gguf | --tokenizer-json tokenizer.json) [--ids-only]\n"
            "                       [--] [TEXT | -]\n"
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
            "  --tokenizer-json PATH  use a tokenizer.json instead of a GGUF model\n"
            "  --json PATH            deprecated alias of --tokenizer-json (elsewhere --json\n"
            "                         means JSON output); works, with a warning, for a release\n"
            "  --ids-only             print only the ids\n"
            "  --                     what follows is TEXT even if it starts with '-'\n"
            "  -h, --help             show this help\n"
            "\n"
            "MODEL.gguf or tokenizer.json '-' reads standard input (TEXT is then required).\n"
            "exit status: 0 printed, 1 error (message on stderr), 2 usage error\n");
}

int cmd_tokenize(int argc, char **argv) {
    const char *json = NULL, *old_json = NULL, *model_path = NULL, *text = "-";
    int ids_only = 0;
    const cli_opt opts[] = {
        {"--tokenizer-json", NULL, CLI_STRING, &json, 0, 0, NULL},
        {"--json", NULL, CLI_STRING, &old_json, 0, 0, NULL}, /* deprecated: the old name */
        {"--ids-only", NULL, CLI_FLAG, &ids_only, 0, 0, NULL},
    };
    /* TEXT may be empty (zero tokens); an empty MODEL.gguf is refused below */
    const cli_cmd cmd = {"tokenize", usage, opts, sizeof opts / sizeof opts[0], 0, 2, 3u};
    const char *pos[2];
    int n_pos, rc = cli_parse(&cmd, argc, argv, pos, &n_pos);
    if (rc != CLI_CONTINUE) return rc;
    if (old_json) {
        if (json) return cli_usage_error(&cmd, "give --tokenizer-json once (--json is its old name)");
        fprintf(stderr, "skycmd tokenize: warning: --json PATH is deprecated, use --tokenizer-json PATH\n");
        json = old_json;
    }
    if (json) {
        if (n_pos > 1) return cli_usage_error(&cmd, "too many arguments");
        if (n_pos == 1) text = pos[0];
        if (!*json) return cli_usage_error(&cmd, "--tokenizer-json needs a path");
    } else {
        if (n_pos == 0) return cli_usage_error(&cmd, "give MODEL.gguf or --tokenizer-json tokenizer.json");
        model_path = pos[0];
        if (!*model_path) return cli_usage_error(&cmd, "MODEL.gguf is an empty string");
        if (n_pos == 2) text = pos[1];
    }
    const char *src = json ? json : model_path;
    if (strcmp(src, "-") == 0 && strcmp(text, "-") == 0)
        return cli_usage_error(&cmd, "the tokenizer and the text cannot both come from stdin");

    cli_run run;
    if ((rc = cli_begin(&run, &cmd, NULL))) return rc;
    if (cli_stdin_file(&run, &src)) return 1;
    skycmd_tokenizer *own = NULL;
    skycmd_model *model = NULL;
    const skycmd_tokenizer *tok = NULL;
    int ret = 1;
    char *buf = NULL;
    size_t len = 0;
    if (json) {
        rc = skycmd_tokenizer_open_json(src, &own, run.err);
        tok = own;
    } else {
        rc = skycmd_model_open(src, NULL, &model, run.err);
        if (rc == SKYCMD_OK) tok = skycmd_model_tokenizer(model);
    }
    if (rc != SKYCMD_OK || !tok) {
        ret = cli_end(&run, rc ? rc : SKYCMD_E_INTERNAL);
        goto done;
    }
    if (strcmp(text, "-") == 0) {
        if (cli_read_input(cmd.name, "-", (size_t)1 << 30, &buf, &len)) {
            cli_end(&run, SKYCMD_OK);
            goto done;
        }
        text = buf;
    } else {
        len = strlen(text);
    }
    cli_end(&run, SKYCMD_OK);
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
    ret = cli_flush_stdout(cmd.name);
done:
    free(buf);
    skycmd_tokenizer_free(own);
    skycmd_model_free(model);
    return ret;
}
