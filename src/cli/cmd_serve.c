/* cmd_serve.c - `skycmd serve` (placeholder until its issue lands). */
#include "cli.h"

int cmd_serve(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "skycmd serve: not available in this build yet\n");
    return 1;
}
