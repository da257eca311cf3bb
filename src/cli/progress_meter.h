/*
 * progress_meter.h - the one progress reporter of skycmd's long commands (convert, random,
 * quantize, calibrate, decide --batch, and any library call given a progress label through
 * cli_begin()). Public API only.
 *
 * Contract:
 *  - A meter measures one piece of work from cli_meter_start() to cli_meter_finish() (a
 *    summary) or cli_meter_clear() (none: the work failed, or it was a step of another
 *    command, as decide --random's model). It is used from one thread.
 *  - What it counts: `done` of `total` (from the library's progress callback or the command)
 *    in the meter's unit, CLI_METER_BYTES or a count noun ("requests"). With
 *    CLI_METER_FRACTION the library's done/total are units of its own choosing (convert
 *    counts each output byte twice, once made and once written), so only the fraction is
 *    drawn; cli_meter_count() may still give an amount in the meter's unit (decide --batch:
 *    the fraction is bytes of the input file, the amount requests answered).
 *  - The live line, on stderr, only when stderr is a terminal and the program is not quiet
 *    (cli_set_quiet: --quiet/-q):
 *        convert    [##########..............]  41%  ETA 0:05
 *        calibrate  [##########..............]  41%  1.20/2.93 MB  3.10 MB/s  ETA 0:01
 *        decide     [##########..............]  41%  1200 requests  240/s  ETA 0:05
 *    (no bar, no ETA when the total is unknown). A start line ("random ...") is drawn at
 *    once, so a command whose library call reports late (or never) shows it is working.
 *    Updates are taken as often as they come; the line is redrawn at most 10 times a second.
 *    Rate and ETA count from the first update (not from the start, which may include work
 *    that reports nothing, such as building a random model before writing it).
 *    cli_meter_clear() erases it ("\r\033[K") before another message (a bad line's report)
 *    so lines never interleave, and before an error message.
 *  - The summary, one line on stderr:
 *        skycmd convert: done: 286 MB written in 2.9 s (98.7 MB/s)
 *        skycmd decide: done: 12 requests in 0.50 s (24/s): 12 answered, 0 failed
 *    printed when stderr is a terminal and the program is not quiet. When stderr is not a
 *    terminal nothing is printed: stderr is then a log or a pipe, a successful convert,
 *    random or quantize is already said by its exit status and its file, and a line per
 *    call would be noise in every script and build that makes models (the rule of
 *    silence). A meter started with CLI_METER_ALWAYS prints its summary also then: for a
 *    command whose summary is its result (decide --batch: how many lines were answered,
 *    how many failed, the first bad one), which a log needs. --quiet drops it too; errors
 *    are printed whatever the meter does.
 *  - Sizes are decimal (kB, MB, GB = 1000^n bytes) with three significant digits; times
 *    are seconds (two decimals under 1 s, one above), ETA m:ss (h:mm:ss from an hour).
 */
#ifndef SKYCMD_CLI_PROGRESS_METER_H
#define SKYCMD_CLI_PROGRESS_METER_H

#include <stdint.h>

/* The unit of a meter that counts bytes (shown as kB, MB, GB). */
#define CLI_METER_BYTES NULL

/* cli_meter_start() flags */
#define CLI_METER_FRACTION 1u /* done/total are the library's own units: draw the fraction only */
#define CLI_METER_ALWAYS 2u   /* the summary also when stderr is not a terminal (not when quiet) */

/* An amount not known (cli_meter_finish: the summary then gives only the time). */
#define CLI_METER_UNKNOWN UINT64_MAX

typedef struct cli_meter {
    const char *cmd;   /* "convert": the summary's "skycmd convert: "  */
    const char *label; /* what the live line starts with                */
    const char *unit;  /* CLI_METER_BYTES, or a count noun               */
    unsigned flags;
    int live;          /* the live line is drawn (a terminal, not quiet) */
    int summary;       /* the summary is printed                         */
    int on_screen;     /* a live line is on the terminal now             */
    int started;       /* between start and finish/clear                 */
    int updated;       /* an update came                                 */
    double t_start, t_first, t_drawn;
    uint64_t done, total, first_done;
    uint64_t count;    /* the amount in `unit` (FRACTION: cli_meter_count's) */
    int has_count;
} cli_meter;

/* Quiet (--quiet/-q): no live line, no summary, for every meter of the process. */
void cli_set_quiet(int quiet);
int cli_is_quiet(void);

/* Start measuring (draws the start line on a terminal). `label` NULL: cmd. */
void cli_meter_start(cli_meter *m, const char *cmd, const char *label, const char *unit,
                     unsigned flags);
/* The work so far: done of total (total 0: unknown). */
void cli_meter_update(cli_meter *m, uint64_t done, uint64_t total);
/* The amount so far in the meter's unit, for a CLI_METER_FRACTION meter. */
void cli_meter_count(cli_meter *m, uint64_t amount);
/* Erase the live line (before another message); the meter goes on (the next update
 * redraws it). */
void cli_meter_erase(cli_meter *m);
/* Erase the live line and stop, without a summary. Safe on a meter never started
 * (zero-initialised) and twice. */
void cli_meter_clear(cli_meter *m);
/* Stop and print the summary: "skycmd <cmd>: done: <amount>[ <what>] in <time> (<rate>)"
 * followed by the printf-style tail fmt (may be NULL). amount CLI_METER_UNKNOWN: "done in
 * <time>"; amount in the meter's unit. */
void cli_meter_finish(cli_meter *m, uint64_t amount, const char *what, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* A skycmd_progress_fn over a meter (user_data: the cli_meter): updates it, and returns 1
 * (cancel) once a stop signal has come (cli_stopping()). */
int cli_meter_progress(void *meter, uint64_t done, uint64_t total);

/* Whether SIGINT/SIGTERM/SIGHUP came since a cli_run with a progress label began
 * (cli_util.c): the progress callbacks then cancel the library's call. */
int cli_stopping(void);

#endif
