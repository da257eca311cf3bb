/*
 * cli.h - the `skycmd` command-line program. Every subcommand lives in its own file,
 * uses only the public API (skycmd.h) and follows the same conventions:
 *   - `-h`/`--help` prints usage to stdout and exits 0;
 *   - a usage error (unknown option, missing or bad value, missing or extra argument)
 *     prints "skycmd <cmd>: <what is wrong>" and the usage to stderr and returns 2;
 *   - a library failure prints "skycmd <cmd>: <message>" to stderr and returns 1;
 *   - where a file is read, `-` reads standard input.
 *
 * The shared mechanism (cli_util.c): a command describes its options in a table of
 * cli_opt (a cli_cmd); cli_parse() fills the variables the table points to (a variable
 * keeps its "not given" value when the option is absent) and the positional arguments;
 * cli_begin() then makes the command's cli_run (skycmd_options, skycmd_error, progress
 * meter, temporary file) and copies every given option that names a skycmd_option into
 * it; cli_end() reports a failed call and releases the run. cli_parse() is cli_scan(),
 * which describes a usage error (cli_error) without printing it, followed by
 * cli_report(), the shared wording; a command whose usage errors have their own
 * established wording (bench, serve) prints the cli_error itself.
 */
#ifndef SKYCMD_CLI_H
#define SKYCMD_CLI_H

#include <stddef.h>
#include <stdio.h>
#include "skycmd.h"
#include "progress_meter.h"

typedef int (*cli_cmd_fn)(int argc, char **argv);

int cmd_inspect(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_random(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_decide(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);

/* ------------------------------------------------------------ small helpers ---- */
int cli_is_help(const char *arg);
/* Parse f32|f16|bf16|q8_0 (either case) into a skycmd_type; -1 if unknown. */
int cli_parse_type(const char *s);
/* Print "skycmd <cmd>: <message>" for a failed call and return 1. */
int cli_fail(const char *cmd, int status, const skycmd_error *err);

/* ------------------------------------------------------------ argument tables -- */
typedef enum cli_kind {
    CLI_FLAG,   /* no value; int dest = 1                                        */
    CLI_STRING, /* const char * dest = the value                                 */
    CLI_INT,    /* int64_t dest = a decimal integer in range (see cli_opt.range)  */
    CLI_TYPE,   /* int dest = f32|f16|bf16|q8_0 as a skycmd_type                 */
    CLI_CHOICE, /* int dest = index of the value in `choices`                    */
    CLI_NUMBER, /* dest is a cli_number: a number with its own bounds and units  */
    CLI_CALL    /* dest is a cli_call: a function of the command takes the value
                   (values given more than once, values of several parts, ...)   */
} cli_kind;

/* The "not given" value of int and int64_t dests (NULL for strings, 0 for flags): a dest
 * keeps what the command stored before cli_parse(), and cli_begin() skips dests that
 * still hold the "not given" value. */
#define CLI_UNSET (-1)

typedef struct cli_opt {
    const char *name;  /* "--seed" (also accepted as "--seed=VALUE")                  */
    const char *alias; /* "-t", or NULL                                                */
    cli_kind kind;
    void *dest;        /* int *, int64_t * or const char ** by kind                    */
    int option;        /* skycmd_option that cli_begin() sets from dest (0: none; never
                          for CLI_NUMBER and CLI_CALL, whose variables are the command's) */
    int range;         /* CLI_INT: skycmd_option whose bounds apply (0: `option`'s, and
                          [0, INT64_MAX] when neither is set)                          */
    const char *const *choices; /* CLI_CHOICE: NULL-terminated names                   */
} cli_opt;

/* What a CLI_NUMBER option accepts and where the value goes. An integer is a whole
 * decimal strtoll() number (CLI_NUM_SIZE: an unsigned one, optionally followed by k/K
 * (x 1024) or m/M (x 1048576)) in [lo, hi], stored in the integer variable `value` of
 * `size` bytes (4 or 8: int, unsigned, int64_t, size_t, long long); CLI_NUM_REAL: a whole
 * strtod() number in [lo, hi] stored in the double `value`. CLI_NUM_ABOVE excludes lo. */
typedef struct cli_number {
    void *value;
    size_t size;
    int64_t lo, hi;
    unsigned flags;
} cli_number;
#define CLI_NUM_SIZE 1u
#define CLI_NUM_REAL 2u
#define CLI_NUM_ABOVE 4u
/* A CLI_NUMBER table entry for an integer variable `var`. */
#define CLI_OPT_NUM(name, alias, var, lo, hi, flags)                                       \
    {name, alias, CLI_NUMBER, &(cli_number){&(var), sizeof(var), lo, hi, flags}, 0, 0, NULL}
/* Parse v as n describes and store it: 0, or CLI_BAD_VALUE (nothing stored). For a
 * cli_call that takes numbers among other words. */
int cli_number_take(const cli_number *n, const char *v);

/* A CLI_CALL option: take(ctx, value) returns 0 when it took the value, CLI_BAD_VALUE when
 * the value is wrong (a usage error that the parser reports like any bad value), or an exit
 * status (1, 2) after printing why itself. */
#define CLI_BAD_VALUE (-3)
typedef struct cli_call {
    int (*take)(void *ctx, const char *value);
    void *ctx;
} cli_call;
#define CLI_OPT_CALL(name, alias, fn, ctx)                                                 \
    {name, alias, CLI_CALL, &(cli_call){fn, ctx}, 0, 0, NULL}

typedef struct cli_cmd {
    const char *name;           /* "convert" */
    void (*usage)(FILE *out);
    const cli_opt *opts;
    size_t n_opts;
    int min_pos, max_pos;       /* how many positional arguments */
    unsigned empty_ok;          /* bit i: positional i may be "" (else a usage error) */
} cli_cmd;

/* The options of a model that is written (convert, random, quantize, decide --random).
 * Each CLI_OPTS_* macro expands to table entries that fill one of these. */
typedef struct cli_model_args {
    int type, head_type;    /* skycmd_type, or CLI_UNSET (the call's default) */
    const char *name, *pre; /* or NULL */
    int64_t seed, massive;  /* or CLI_UNSET */
    int layout;             /* skycmd_layout, or CLI_UNSET */
} cli_model_args;
#define CLI_MODEL_ARGS_UNSET {CLI_UNSET, CLI_UNSET, NULL, NULL, CLI_UNSET, CLI_UNSET, CLI_UNSET}
#define CLI_OPTS_TYPE(m)                                                             \
    {"--type", NULL, CLI_TYPE, &(m).type, SKYCMD_OPT_TYPE, 0, NULL},                  \
    {"--head-type", NULL, CLI_TYPE, &(m).head_type, SKYCMD_OPT_HEAD_TYPE, 0, NULL}
#define CLI_OPTS_NAME(m)                                                             \
    {"--name", NULL, CLI_STRING, &(m).name, SKYCMD_OPT_NAME, 0, NULL},                \
    {"--pre", NULL, CLI_STRING, &(m).pre, SKYCMD_OPT_PRE, 0, NULL}
#define CLI_OPTS_SEED(m)                                                             \
    {"--seed", NULL, CLI_INT, &(m).seed, SKYCMD_OPT_SEED, 0, NULL},                   \
    {"--massive", NULL, CLI_INT, &(m).massive, SKYCMD_OPT_MASSIVE, 0, NULL}
/* --quiet/-q of the long commands: no progress line and no summary (cli_set_quiet). */
#define CLI_OPT_QUIET(var) {"--quiet", "-q", CLI_FLAG, &(var), 0, 0, NULL}
/* Whether `name` is a random-model preset (s1-pico, s1-nano, s1-micro, base, large, each
 * also with -xt). When it is not, a usage error naming the presets is printed (2 returned);
 * else 0. */
int cli_check_preset(const cli_cmd *cmd, const char *what, const char *name);

/* cli_parse() result when the command should go on. */
#define CLI_CONTINUE (-1)

/* Parse argv[1..argc-1]: options of the table anywhere (until "--"), positional arguments
 * into pos[0..max_pos-1] (*n_pos of them). Returns CLI_CONTINUE, 0 after printing the help
 * (-h/--help) or 2 after a usage error (a CLI_CALL's own failure: its status). */
int cli_parse(const cli_cmd *cmd, int argc, char **argv, const char **pos, int *n_pos);

/* A usage error that cli_scan() found, not yet printed. */
typedef enum cli_fault {
    CLI_FAULT_UNKNOWN,   /* arg: an option the table does not have                        */
    CLI_FAULT_NO_VALUE,  /* arg, opt: the option is the last argument, without its value  */
    CLI_FAULT_BAD_VALUE, /* arg, opt, value: a value the option's kind refuses            */
    CLI_FAULT_EXTRA,     /* arg: one positional argument more than max_pos                */
    CLI_FAULT_EMPTY,     /* index: positional argument `index` (from 1) is "" (empty_ok)  */
    CLI_FAULT_MISSING    /* fewer positional arguments than min_pos                       */
} cli_fault;
typedef struct cli_error {
    cli_fault fault;
    const char *arg;   /* as typed: "-t" for --threads' alias; the name of "--name=VALUE" */
    const cli_opt *opt;
    const char *value;
    int index;
} cli_error;
/* The fault return of cli_scan(): *e describes the usage error. */
#define CLI_FAULT (-2)
/* cli_parse() without printing a usage error: CLI_CONTINUE, 0 (help printed), CLI_FAULT
 * (*e filled) or the status a CLI_CALL returned after printing its own message. */
int cli_scan(const cli_cmd *cmd, int argc, char **argv, const char **pos, int *n_pos, cli_error *e);
/* Options from the environment (containers are configured that way): for every option of
 * cmd that argv does not give, the variable `prefix` + its long name without "--",
 * upper-cased, '-' -> '_' (SKYCMD_PORT for --port) acts as if it were typed before argv's
 * own arguments; so the command line wins. A CLI_FLAG's variable is 1/true/yes/on (given) or
 * 0/false/no/off/empty (not); an option named in `lists` takes several values separated by
 * ',' (each one occurrence); `groups` are NULL-terminated name lists, a NULL list ending
 * them: when argv gives one option of a group, no variable of that group is used (flags
 * that exclude each other). Returns the new argument vector (cli_env_args_free), or NULL
 * with a message on stderr (a variable a flag cannot be, out of memory). */
char **cli_env_args(const cli_cmd *cmd, const char *prefix, const char *const *lists,
                    const char *const *const *groups, int argc, char **argv, int *argc_out);
void cli_env_args_free(char **args, int argc);
/* The variable cli_env_args() reads for option o ("SKYCMD_PORT"): into buf of n bytes. */
void cli_env_name(const char *prefix, const cli_opt *o, char *buf, size_t n);
/* Print e in the shared wording ("skycmd <cmd>: <what is wrong>", a blank line and the
 * usage on stderr) and return 2. */
int cli_report(const cli_cmd *cmd, const cli_error *e);
/* What o accepts, for a message ("an integer in [1, 32]", "one of text, json"); "" when its
 * kind has no rule to state (a call's own parser). */
void cli_value_rule(const cli_opt *o, char *buf, size_t n);
/* The candidate nearest to `word` (at most two edits away, or `word` a prefix of only it),
 * or NULL: for "did you mean" (an unknown option, an unknown command). `names` is an array
 * of n strings `stride` bytes apart (so the names of a struct array can be passed). */
const char *cli_nearest(const char *word, const char *const *names, size_t n, size_t stride);
/* cli_usage_error() for an option cmd does not have, with a "did you mean" when one is near. */
int cli_unknown_option(const cli_cmd *cmd, const char *arg);
/* Print "skycmd <cmd>: <message>" and "try 'skycmd <cmd> --help'" on stderr; return 2. A
 * usage error is one line, not the whole help (which would scroll it away). */
int cli_usage_error(const cli_cmd *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ------------------------------------------------------------ files ------------ */
/* Read a whole file, or standard input when path is "-" (at most max bytes). Returns 0 with
 * *buf (NUL-terminated, for free()) and *len, or 1 after printing why. */
int cli_read_input(const char *cmd, const char *path, size_t max, char **buf, size_t *len);

/* The built-in default model (models/s1-pico-flappy.gguf of the source tree, installed as
 * <datadir>/skycmd/models/). Looked for, in order: $SKYCMD_DEFAULT_MODEL; beside the
 * running program, <exe dir>/../share/skycmd/models/ (an installed tree, wherever it was
 * moved) and <exe dir>/share/skycmd/models/ (the build tree); then where
 * skycmd_default_model_path() finds it: beside the libskycmd the program loaded, and the
 * data directory the library was configured with. Returns 0 with the path in buf, or 1
 * after printing where it looked. */
#define CLI_DEFAULT_MODEL_FILE "s1-pico-flappy.gguf"
int cli_default_model(const char *cmd, char *buf, size_t n);
/* Whether path names a GGUF file (its first four bytes are "GGUF") or a directory (a Laya
 * checkpoint): how `decide` tells a lone MODEL argument from a lone REQUEST argument. */
int cli_looks_like_model(const char *path);

/* A private temporary directory ($TMPDIR or /tmp) and one file path inside it, removed by
 * cli_temp_free(). Start from `cli_temp t = {0}` so cli_temp_free() is always safe. */
typedef struct cli_temp {
    char dir[256];
    char path[320];
} cli_temp;
/* Make the directory; `file` names the path inside it. Returns 0, or 1 after printing. */
int cli_temp_new(cli_temp *t, const char *cmd, const char *file);
void cli_temp_free(cli_temp *t);

/* ------------------------------------------------------------ library calls ---- */
/* What one command invocation holds for the library: options, error record, the
 * temporary file of a `-` input (or of a generated model) and that of a `-` output. */
typedef struct cli_run {
    const cli_cmd *spec;
    const char *cmd;
    skycmd_options *opts;
    skycmd_error *err;
    cli_temp tmp;
    cli_temp out;
    cli_meter meter; /* with a progress label: the call's progress (progress_meter.h) */
} cli_run;

/* Allocate the options and the error record, set every given option of cmd's table that
 * names a skycmd_option and, with a progress label, start the run's meter (bytes, the
 * library's units: CLI_METER_FRACTION) and hand the library cli_meter_progress() over it,
 * which also cancels the call after a stop signal. A command may start the meter again
 * with its own unit. Returns 0,
 * 1 (out of memory) or 2 (the library refused a value), after printing; on failure the
 * run is already released. */
int cli_begin(cli_run *run, const cli_cmd *cmd, const char *progress_label);
/* When *path is "-", copy standard input to the run's temporary file and point *path at
 * it (the library's file calls take paths). Returns 0, or 1 after printing (the run is
 * then released). */
int cli_stdin_file(cli_run *run, const char **path);
/* When *path is "-", point it at the run's temporary output file, which cli_end() copies
 * to stdout after a successful call. Refuses (usage error, 2) when stdout is a terminal.
 * On failure the run is released.
 * Returns 0, 1 or 2, after printing. */
int cli_stdout_file(cli_run *run, const char **path);
/* Report `status` (from a call that filled run->err) when it is not SKYCMD_OK; after a
 * success, copy a `-` output to stdout. Free the run (and its temporary files) and return
 * the exit code: 0 or 1. Messages name the temporary files "<stdin>" and "<stdout>". */
int cli_end(cli_run *run, int status);
/* cli_end() for a call that wrote `path` (a file, or a Laya directory): after a success the
 * meter's summary gives its size ("skycmd random: done: 286 MB written in 2.9 s (...)"). */
int cli_end_written(cli_run *run, int status, const char *path);
/* Write text to f with the run's temporary file paths shown as "<stdin>" / "<stdout>". */
void cli_put_text(const cli_run *run, const char *text, FILE *f);
/* Free the run without a report and return rc (a failure already printed). */
int cli_abort(cli_run *run, int rc);
/* Flush stdout; on failure (e.g. a full disk) print why and return 1, else 0. */
int cli_flush_stdout(const char *cmd);
/* 1 (after printing "standard input is closed") when fd 0 was closed at start, else 0. */
int cli_stdin_closed(const char *cmd);
/* First thing in main: hold a closed fd 0, 1 or 2 with /dev/null (so no file the program
 * opens lands on it) and check at exit that what went to stdout was written (exit 1 with a
 * message otherwise: --help into a full disk, a report into a closed pipe). */
void cli_guard_std_fds(void);
/* A note on stderr, when it is a terminal and the program is not quiet, that the model's
 * file stores a calibrated int8 model (quantize --calibrated) which this run does not use:
 * no weights flag was given (weights_given 0), so the default f32-class path runs on the
 * file's Q8_0 values widened. An explicit choice gets no note. */
void cli_note_int8_stored(const char *cmd, const skycmd_model *model, int weights_given);
/* The weights mode when no flag picks one: bf16x3 where the CPU has usable AMX-BF16 tiles
 * (there it is measured at 2.2-3.4x the f32 path: docs/performance.md), else f32. On arm64
 * with FEAT_BF16, --bf16x3 asks for the BFMMLA products explicitly: three of them per product
 * are not known to beat one FMLA chain (not measured here; docs/platforms.md), so they are
 * not the default. */
int cli_default_weights(void);

/* The compute flags of decide, bench and serve, under one set of rules: --int8 (the int8 to
 * use: --q8-row --q8-fast, and alone), --bf16x3, --f32, and the other int8 modes --q8,
 * --q8-fast, --q8-row and --no-calib (alone: plain Q8_0 weights, two-pass activations). */
typedef struct cli_compute {
    int int8, q8, q8_fast, q8_row, no_calib, bf16x3, f32;
} cli_compute;
#define CLI_COMPUTE_OPTS(c)                                                                  \
    {"--int8", NULL, CLI_FLAG, &(c)->int8, 0, 0, NULL},                                      \
        {"--q8", NULL, CLI_FLAG, &(c)->q8, 0, 0, NULL},                                      \
        {"--q8-fast", NULL, CLI_FLAG, &(c)->q8_fast, 0, 0, NULL},                            \
        {"--q8-row", NULL, CLI_FLAG, &(c)->q8_row, 0, 0, NULL},                              \
        {"--no-calib", NULL, CLI_FLAG, &(c)->no_calib, 0, 0, NULL},                          \
        {"--bf16x3", NULL, CLI_FLAG, &(c)->bf16x3, 0, 0, NULL},                              \
        {"--f32", NULL, CLI_FLAG, &(c)->f32, 0, 0, NULL}
/* Check that c's flags go together; when they do, expand --int8 into c->q8_row and
 * c->q8_fast and set *weights (skycmd_weights: cli_default_weights() when no flag names one)
 * and *activations (skycmd_activations of the int8 modes, else CLI_UNSET: the library's
 * default). Returns NULL, or the message naming the clash. */
const char *cli_compute_resolve(cli_compute *c, int *weights, int *activations);
/* Whether any compute flag was given (cli_note_int8_stored's weights_given). */
int cli_compute_named(const cli_compute *c);

/* ------------------------------------------------------------ decide --batch --- */
/* `skycmd decide --batch`: one request per line of in_path ("-": stdin), answers to
 * out_path (NULL or "-": stdout) in input order (cmd_decide_batch.c). Fields hold CLI_UNSET
 * when not given. Returns the exit status. */
typedef struct cli_batch_args {
    const char *in_path, *out_path;
    int64_t jobs, window, threads, token_budget; /* CLI_UNSET: the session's default */
    int activations;
    int fail_fast, progress;
} cli_batch_args;
int cli_decide_batch(const char *cmd, skycmd_model *model, const cli_batch_args *a);

#endif
