/* cmd_quantize.c - `skycmd quantize` (placeholder until its issue lands). */
#include "cli.h"

int cmd_quantize(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "skycmd quantize: not available in this build yet\n");
    return 1;
}
