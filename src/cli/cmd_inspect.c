/* cmd_inspect.c - `skycmd inspect FILE [--max-array N] [--json]`: print a GGUF file's
 * header, metadata and tensor table through skycmd_inspect() (public API only). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: skycmd inspect FILE [--max-array N] [--json]\n"
            "\n"
            "Print a GGUF file's version, size and alignment, every metadata key with its type\n"
            "and value, and every tensor with its ggml dims (ne[0] innermost), type and byte\n"
            "size, then the totals.\n"
            "\n"
            "options:\n"
            "  --max-array N  show at most N items of each array (default 8)\n"
            "  --json         print the same as one JSON document\n"
            "  -h, --help     show this help\n");
}

int cmd_inspect(int argc, char **argv) {
    const char *path = NULL;
    int64_t max_array = -1;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (strcmp(a, "--max-array") == 0 || strncmp(a, "--max-array=", 12) == 0) {
            const char *v = a[11] == '=' ? a + 12 : (i + 1 < argc ? argv[++i] : NULL);
            char *end = NULL;
            errno = 0;
            long long n = v ? strtoll(v, &end, 10) : -1;
            if (!v || !*v || *end || errno || n < 0) {
                fprintf(stderr, "skycmd inspect: --max-array needs a number >= 0\n\n");
                usage(stderr);
                return 2;
            }
            max_array = n;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "skycmd inspect: unknown option '%s'\n\n", a);
            usage(stderr);
            return 2;
        } else if (!path) {
            path = a;
        } else {
            fprintf(stderr, "skycmd inspect: more than one FILE given\n\n");
            usage(stderr);
            return 2;
        }
    }
    if (!path) {
        usage(stderr);
        return 2;
    }
    skycmd_options *opts = skycmd_options_new();
    skycmd_error *err = skycmd_error_new();
    if (!opts || !err) {
        skycmd_options_free(opts);
        skycmd_error_free(err);
        fprintf(stderr, "skycmd inspect: out of memory\n");
        return 1;
    }
    if (max_array >= 0) skycmd_options_set_int(opts, SKYCMD_OPT_MAX_ARRAY, max_array);
    skycmd_options_set_int(opts, SKYCMD_OPT_JSON, json);
    char *out = NULL;
    int st = skycmd_inspect(path, opts, &out, err);
    int rc = 0;
    if (st != SKYCMD_OK) {
        rc = cli_fail("inspect", st, err);
    } else {
        fputs(out, stdout);
        if (fflush(stdout) != 0) rc = 1;
    }
    skycmd_string_free(out);
    skycmd_options_free(opts);
    skycmd_error_free(err);
    return rc;
}
