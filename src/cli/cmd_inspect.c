/* cmd_inspect.c - `skycmd inspect FILE [--max-array N] [--json]`: print a GGUF file's
 * header, metadata and tensor table through skycmd_inspect() (public API only). */
#include "cli.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: skycmd inspect FILE [--max-array N] [--json]\n"
            "\n"
            "Print a GGUF file's version, size and alignment, every metadata key with its type\n"
            "and value, and every tensor with its ggml dims (ne[0] innermost), type and byte\n"
            "size, then the totals. FILE '-' reads standard input.\n"
            "\n"
            "options:\n"
            "  --max-array N  show at most N items of each array (default 8)\n"
            "  --json         print the same as one JSON document\n"
            "  -h, --help     show this help\n"
            "\n"
            "exit status: 0 printed, 1 error (message on stderr), 2 usage error\n");
}

int cmd_inspect(int argc, char **argv) {
    int64_t max_array = CLI_UNSET;
    int json = 0;
    const cli_opt opts[] = {
        {"--max-array", NULL, CLI_INT, &max_array, SKYCMD_OPT_MAX_ARRAY, 0, NULL},
        {"--json", NULL, CLI_FLAG, &json, SKYCMD_OPT_JSON, 0, NULL},
    };
    const cli_cmd cmd = {"inspect", usage, opts, sizeof opts / sizeof opts[0], 1, 1, 0};
    const char *pos[1], *path;
    int n_pos, rc = cli_parse(&cmd, argc, argv, pos, &n_pos);
    if (rc != CLI_CONTINUE) return rc;

    cli_run run;
    if ((rc = cli_begin(&run, &cmd, NULL))) return rc;
    path = pos[0];
    if (cli_stdin_file(&run, &path)) return 1;
    char *out = NULL;
    int st = skycmd_inspect(path, run.opts, &out, run.err);
    if (st == SKYCMD_OK) cli_put_text(&run, out, stdout);
    skycmd_string_free(out);
    rc = cli_end(&run, st);
    return rc ? rc : cli_flush_stdout(cmd.name);
}
