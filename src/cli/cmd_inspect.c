/* cmd_inspect.c - `skycmd inspect` (placeholder until its issue lands). */
#include "cli.h"

int cmd_inspect(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "skycmd inspect: not available in this build yet\n");
    return 1;
}
