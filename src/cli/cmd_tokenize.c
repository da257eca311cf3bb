/* cmd_tokenize.c - `skycmd tokenize` (placeholder until its issue lands). */
#include "cli.h"

int cmd_tokenize(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "skycmd tokenize: not available in this build yet\n");
    return 1;
}
