/*
 * cli.h - the `skycmd` command-line program. Every subcommand lives in its own file,
 * uses only the public API (skycmd.h) and follows the same conventions: `--help` prints
 * usage to stdout and exits 0; a usage error prints usage to stderr and returns 2; a
 * library failure prints "skycmd <cmd>: <message>" to stderr and returns 1.
 */
#ifndef SKYCMD_CLI_H
#define SKYCMD_CLI_H

#include <stdio.h>
#include "skycmd.h"

typedef int (*cli_cmd_fn)(int argc, char **argv);

int cmd_inspect(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_random(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_decide(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_serve(int argc, char **argv);

/* Shared helpers (cli_util.c). */
int cli_is_help(const char *arg);
/* Parse f32|f16|bf16|q8_0 into a skycmd_type; -1 if unknown. */
int cli_parse_type(const char *s);
/* A progress callback that draws a bar on stderr when it is a terminal (user_data: label). */
int cli_progress(void *user_data, uint64_t done, uint64_t total);
/* Print "skycmd <cmd>: <message>" for a failed call and return 1. */
int cli_fail(const char *cmd, int status, const skycmd_error *err);

#endif
