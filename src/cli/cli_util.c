/* cli_util.c - helpers shared by the subcommands: type names, progress bar, errors. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cli_is_help(const char *arg) {
    return arg && (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0);
}

int cli_parse_type(const char *s) {
    if (!s) return -1;
    if (strcmp(s, "f32") == 0 || strcmp(s, "F32") == 0) return SKYCMD_TYPE_F32;
    if (strcmp(s, "f16") == 0 || strcmp(s, "F16") == 0) return SKYCMD_TYPE_F16;
    if (strcmp(s, "bf16") == 0 || strcmp(s, "BF16") == 0) return SKYCMD_TYPE_BF16;
    if (strcmp(s, "q8_0") == 0 || strcmp(s, "Q8_0") == 0) return SKYCMD_TYPE_Q8_0;
    return -1;
}

int cli_progress(void *user_data, uint64_t done, uint64_t total) {
    if (!isatty(STDERR_FILENO)) return 0;
    const char *label = user_data ? (const char *)user_data : "";
    int width = 30;
    int filled = total ? (int)(done * (uint64_t)width / total) : width;
    if (filled > width) filled = width;
    fprintf(stderr, "\r%-10s [", label);
    for (int i = 0; i < width; i++) fputc(i < filled ? '#' : '.', stderr);
    fprintf(stderr, "] %3d%%", total ? (int)(done * 100 / total) : 100);
    if (done >= total) fputc('\n', stderr);
    fflush(stderr);
    return 0;
}

int cli_fail(const char *cmd, int status, const skycmd_error *err) {
    const char *msg = err ? skycmd_error_message(err) : "";
    fprintf(stderr, "skycmd %s: %s\n", cmd, (msg && msg[0]) ? msg : skycmd_strerror(status));
    return 1;
}
