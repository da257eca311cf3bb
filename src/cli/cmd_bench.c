/* cmd_bench.c - `skycmd bench` (placeholder until its issue lands). */
#include "cli.h"

int cmd_bench(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "skycmd bench: not available in this build yet\n");
    return 1;
}
