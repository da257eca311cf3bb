/* cmd_convert.c - `skycmd convert` (placeholder until its issue lands). */
#include "cli.h"

int cmd_convert(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "skycmd convert: not available in this build yet\n");
    return 1;
}
