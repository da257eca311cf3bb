/* cmd_random.c - `skycmd random` (placeholder until its issue lands). */
#include "cli.h"

int cmd_random(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "skycmd random: not available in this build yet\n");
    return 1;
}
