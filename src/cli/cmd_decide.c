/* cmd_decide.c - `skycmd decide` (placeholder until its issue lands). */
#include "cli.h"

int cmd_decide(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "skycmd decide: not available in this build yet\n");
    return 1;
}
