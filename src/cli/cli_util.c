/*
 * cli_util.c - what the subcommands share: the option-table parser (cli_parse), the
 * options/error/progress setup and failure report of a library call (cli_run), reading a
 * file or standard input, and temporary files. Public API only.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "progress_meter.h"
#include "serve_platform.h"

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

/* SIGINT, SIGTERM or SIGHUP during a call that writes a file: the next progress report
 * cancels the call, so the library removes its temporary output, and cli_end() then ends
 * the process by the same signal. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig) { stop_signal = sig; }

static void catch_stop_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++) sigaction(sigs[i], &sa, NULL);
}

int cli_stopping(void) { return stop_signal != 0; }

int cli_fail(const char *cmd, int status, const skycmd_error *err) {
    const char *msg = err ? skycmd_error_message(err) : "";
    fprintf(stderr, "skycmd %s: %s\n", cmd, (msg && msg[0]) ? msg : skycmd_strerror(status));
    return 1;
}

/* ------------------------------------------------------------ argument tables -- */

int cli_usage_error(const cli_cmd *cmd, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "skycmd %s: ", cmd->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\ntry 'skycmd %s --help' for its options\n", cmd->name);
    return 2;
}

static size_t edit_distance(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    if (na > 64 || nb > 64) return SIZE_MAX;
    size_t row[65];
    for (size_t j = 0; j <= nb; j++) row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[nb];
}

const char *cli_nearest(const char *word, const char *const *names, size_t n, size_t stride) {
    const char *best = NULL, *prefix_of = NULL;
    size_t best_d = 3, prefixes = 0, wn = strlen(word);
    for (size_t i = 0; i < n; i++) {
        const char *name = *(const char *const *)((const char *)names + i * stride);
        if (!name) continue;
        if (wn >= 3 && strncmp(name, word, wn) == 0) prefixes++, prefix_of = name;
        size_t d = edit_distance(word, name);
        if (d < best_d) best_d = d, best = name;
    }
    return best ? best : prefixes == 1 ? prefix_of : NULL;
}

/* "unknown option '--thread' (did you mean '--threads'?)" */
static int unknown_option(const cli_cmd *cmd, const char *arg) {
    char plain[64];
    snprintf(plain, sizeof plain, "%.*s", (int)strcspn(arg, "="), arg);
    const char *near = cli_nearest(plain, &cmd->opts[0].name, cmd->n_opts, sizeof cmd->opts[0]);
    if (near) return cli_usage_error(cmd, "unknown option '%s' (did you mean '%s'?)", arg, near);
    return cli_usage_error(cmd, "unknown option '%s'", arg);
}

int cli_unknown_option(const cli_cmd *cmd, const char *arg) { return unknown_option(cmd, arg); }

/* The option `arg` names: "--name", "--name=VALUE" (*inline_value set) or the alias. */
static const cli_opt *find_opt(const cli_cmd *cmd, const char *arg, const char **inline_value) {
    *inline_value = NULL;
    for (size_t k = 0; k < cmd->n_opts; k++) {
        const cli_opt *o = &cmd->opts[k];
        size_t n = strlen(o->name);
        if (strcmp(arg, o->name) == 0 || (o->alias && strcmp(arg, o->alias) == 0)) return o;
        if (o->kind != CLI_FLAG && strncmp(arg, o->name, n) == 0 && arg[n] == '=') {
            *inline_value = arg + n + 1;
            return o;
        }
    }
    return NULL;
}

/* A decimal integer in [lo, hi], nothing else (no sign games, no trailing bytes). */
static int parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    if (!s || !*s || (*s != '-' && (*s < '0' || *s > '9'))) return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* The bounds of a CLI_INT option: those of its skycmd_option, else [0, INT64_MAX]. */
static void int_bounds(const cli_opt *o, int64_t *lo, int64_t *hi) {
    int key = o->range ? o->range : o->option;
    *lo = 0;
    *hi = INT64_MAX;
    if (key && skycmd_option_bounds(key, lo, hi) != SKYCMD_OK) *lo = 0, *hi = INT64_MAX;
}

/* A CLI_NUM_SIZE value: unsigned decimal, k/m suffix, at most hi. */
static int parse_size(const char *s, int64_t hi, int64_t *out) {
    if (!s || !*s || *s == '-') return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return -1;
    uint64_t mul = 1;
    if (*end == 'k' || *end == 'K') mul = 1024, end++;
    else if (*end == 'm' || *end == 'M') mul = 1024 * 1024, end++;
    if (*end || hi < 0 || v > (uint64_t)hi / mul) return -1;
    *out = (int64_t)(v * mul);
    return 0;
}

static int parse_real(const char *s, const cli_number *n) {
    char *end = NULL;
    errno = 0;
    double t = strtod(s, &end);
    const double lo = (double)n->lo, hi = (double)n->hi;
    if (errno || end == s || *end) return CLI_BAD_VALUE;
    if (!((n->flags & CLI_NUM_ABOVE ? t > lo : t >= lo) && t <= hi)) return CLI_BAD_VALUE;
    *(double *)n->value = t;
    return 0;
}

int cli_number_take(const cli_number *n, const char *v) {
    if (n->flags & CLI_NUM_REAL) return parse_real(v, n);
    int64_t x = 0;
    if (n->flags & CLI_NUM_SIZE) {
        if (parse_size(v, n->hi, &x)) return CLI_BAD_VALUE;
    } else {
        char *end = NULL;
        errno = 0;
        long long ll = strtoll(v, &end, 10);
        if (errno || end == v || *end || ll > n->hi) return CLI_BAD_VALUE;
        x = ll;
    }
    if (x < n->lo || (x == n->lo && (n->flags & CLI_NUM_ABOVE))) return CLI_BAD_VALUE;
    if (n->size == sizeof(int32_t)) {
        const int32_t x32 = (int32_t)x;
        memcpy(n->value, &x32, sizeof x32);
    } else {
        memcpy(n->value, &x, sizeof x);
    }
    return 0;
}

/* Store v in o's variable: 0, CLI_BAD_VALUE, or the status of a CLI_CALL that printed. */
static int set_value(const cli_opt *o, const char *v) {
    switch (o->kind) {
    case CLI_FLAG:
        *(int *)o->dest = 1;
        return 0;
    case CLI_STRING:
        *(const char **)o->dest = v;
        return 0;
    case CLI_TYPE: {
        int t = cli_parse_type(v);
        if (t < 0) return CLI_BAD_VALUE;
        *(int *)o->dest = t;
        return 0;
    }
    case CLI_CHOICE:
        for (int k = 0; o->choices[k]; k++) {
            if (strcmp(v, o->choices[k]) == 0) {
                *(int *)o->dest = k;
                return 0;
            }
        }
        return CLI_BAD_VALUE;
    case CLI_INT: {
        int64_t lo, hi;
        int_bounds(o, &lo, &hi);
        return parse_int(v, lo, hi, (int64_t *)o->dest) ? CLI_BAD_VALUE : 0;
    }
    case CLI_NUMBER:
        return cli_number_take((const cli_number *)o->dest, v);
    case CLI_CALL: {
        const cli_call *c = (const cli_call *)o->dest;
        return c->take(c->ctx, v);
    }
    }
    return CLI_BAD_VALUE;
}

void cli_value_rule(const cli_opt *o, char *buf, size_t n) {
    buf[0] = '\0';
    switch (o->kind) {
    case CLI_TYPE:
        snprintf(buf, n, "a type (f32, f16, bf16, q8_0)");
        break;
    case CLI_CHOICE: {
        size_t used = (size_t)snprintf(buf, n, "one of ");
        for (int k = 0; o->choices[k] && used < n; k++)
            used += (size_t)snprintf(buf + used, n - used, "%s%s", k ? ", " : "", o->choices[k]);
        break;
    }
    case CLI_INT: {
        int64_t lo, hi;
        int_bounds(o, &lo, &hi);
        snprintf(buf, n, "an integer in [%lld, %lld]", (long long)lo, (long long)hi);
        break;
    }
    case CLI_NUMBER: {
        const cli_number *num = (const cli_number *)o->dest;
        snprintf(buf, n, "a%s in %c%lld, %lld]", num->flags & CLI_NUM_REAL ? " number" : "n integer",
                 num->flags & CLI_NUM_ABOVE ? '(' : '[', (long long)num->lo, (long long)num->hi);
        break;
    }
    default:
        break;
    }
}

/* The shared wording of a value that o's kind refuses. */
static int report_bad_value(const cli_cmd *cmd, const cli_opt *o, const char *v) {
    char rule[256];
    cli_value_rule(o, rule, sizeof rule);
    if (!rule[0]) return cli_usage_error(cmd, "%s: invalid value '%s'", o->name, v);
    return cli_usage_error(cmd, "%s: '%s' is not %s", o->name, v, rule);
}

int cli_check_preset(const cli_cmd *cmd, const char *what, const char *name) {
    static const char *const presets[] = {"s1-pico", "s1-nano", "s1-micro", "base", "large",
                                          "mmbert-small", "mmbert-base"};
    for (size_t k = 0; k < sizeof presets / sizeof presets[0]; k++) {
        size_t n = strlen(presets[k]);
        if (strncmp(name, presets[k], n) == 0 && (!name[n] || strcmp(name + n, "-xt") == 0))
            return 0;
    }
    return cli_usage_error(cmd, "%s: unknown preset '%s' (s1-pico, s1-nano, s1-micro, base, "
                           "large, mmbert-small, mmbert-base; add -xt for out-of-range "
                           "temperatures)", what, name);
}

static int fault(cli_error *e, cli_fault f, const char *arg, const cli_opt *o, const char *v) {
    e->fault = f;
    e->arg = arg;
    e->opt = o;
    e->value = v;
    return CLI_FAULT;
}

/* The option argv[*i] (and its value, which may be the next argument). */
static int take_option(const cli_cmd *cmd, int argc, char **argv, int *i, cli_error *e) {
    const char *a = argv[*i], *v = NULL;
    const cli_opt *o = find_opt(cmd, a, &v);
    if (!o) return fault(e, CLI_FAULT_UNKNOWN, a, NULL, NULL);
    const char *typed = v ? o->name : a;
    if (o->kind == CLI_FLAG) {
        *(int *)o->dest = 1;
        return CLI_CONTINUE;
    }
    if (!v) {
        if (*i + 1 >= argc) return fault(e, CLI_FAULT_NO_VALUE, typed, o, NULL);
        v = argv[++*i];
    }
    int rc = set_value(o, v);
    if (rc == CLI_BAD_VALUE) return fault(e, CLI_FAULT_BAD_VALUE, typed, o, v);
    return rc ? rc : CLI_CONTINUE;
}

int cli_scan(const cli_cmd *cmd, int argc, char **argv, const char **pos, int *n_pos, cli_error *e) {
    int np = 0, only_pos = 0;
    memset(e, 0, sizeof *e);
    *n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_pos && cli_is_help(a)) {
            cmd->usage(stdout);
            return 0;
        }
        if (!only_pos && strcmp(a, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (!only_pos && a[0] == '-' && a[1] != '\0') {
            int rc = take_option(cmd, argc, argv, &i, e);
            if (rc != CLI_CONTINUE) return rc;
            continue;
        }
        if (np >= cmd->max_pos) return fault(e, CLI_FAULT_EXTRA, a, NULL, NULL);
        if (!a[0] && !(cmd->empty_ok & (1u << np))) {
            e->index = np + 1;
            return fault(e, CLI_FAULT_EMPTY, a, NULL, NULL);
        }
        pos[np++] = a;
    }
    *n_pos = np;
    if (np < cmd->min_pos) return fault(e, CLI_FAULT_MISSING, NULL, NULL, NULL);
    return CLI_CONTINUE;
}

/* ------------------------------------------------------------ environment ------ */

void cli_env_name(const char *prefix, const cli_opt *o, char *buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "%s", prefix);
    for (const char *p = o->name + 2; *p && k + 1 < n; p++)
        buf[k++] = *p == '-' ? '_' : (*p >= 'a' && *p <= 'z') ? (char)(*p - 'a' + 'A') : *p;
    if (k < n) buf[k] = '\0';
}

/* Whether argv gives option `name` (or its alias), as "--name", "--name=V" or the alias. */
static int argv_gives(int argc, char **argv, const char *name, const char *alias) {
    size_t n = strlen(name);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) return 0;
        if ((strncmp(a, name, n) == 0 && (a[n] == '\0' || a[n] == '=')) || (alias && strcmp(a, alias) == 0))
            return 1;
    }
    return 0;
}

static const cli_opt *opt_named(const cli_cmd *cmd, const char *name) {
    for (size_t i = 0; i < cmd->n_opts; i++)
        if (strcmp(cmd->opts[i].name, name) == 0) return &cmd->opts[i];
    return NULL;
}

/* Whether a variable of option o may be used: argv gives neither o nor an option of a
 * group o belongs to. */
static int env_may_set(const cli_cmd *cmd, const cli_opt *o, const char *const *const *groups, int argc,
                       char **argv) {
    if (argv_gives(argc, argv, o->name, o->alias)) return 0;
    for (size_t g = 0; groups && groups[g]; g++) {
        int member = 0;
        for (const char *const *m = groups[g]; *m; m++) member |= strcmp(*m, o->name) == 0;
        if (!member) continue;
        for (const char *const *m = groups[g]; *m; m++) {
            const cli_opt *other = opt_named(cmd, *m);
            if (other && argv_gives(argc, argv, other->name, other->alias)) return 0;
        }
    }
    return 1;
}

static int flag_value(const char *v, int *on) {
    static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"", "0", "false", "no", "off"};
    for (size_t i = 0; i < 4; i++)
        if (strcasecmp(v, yes[i]) == 0) return *on = 1, 0;
    for (size_t i = 0; i < 5; i++)
        if (strcasecmp(v, no[i]) == 0) return *on = 0, 0;
    return -1;
}

static int push_arg(char ***v, int *n, int *cap, const char *s, size_t len) {
    if (*n + 1 >= *cap) {
        int c = *cap ? *cap * 2 : 16;
        char **nv = realloc(*v, (size_t)c * sizeof *nv);
        if (!nv) return -1;
        *v = nv;
        *cap = c;
    }
    char *copy = malloc(len + 1);
    if (!copy) return -1;
    memcpy(copy, s, len);
    copy[len] = '\0';
    (*v)[(*n)++] = copy;
    (*v)[*n] = NULL;
    return 0;
}

/* One option's variable as arguments: "--name" for a set flag, "--name VALUE" otherwise
 * (one pair per ','-separated value of a list option). */
static int env_push(char ***v, int *n, int *cap, const cli_opt *o, const char *var, const char *val,
                    int is_list) {
    if (o->kind == CLI_FLAG) {
        int on;
        if (flag_value(val, &on)) {
            fprintf(stderr, "skycmd: %s=%s: a flag's variable is 1/true/yes/on or 0/false/no/off\n", var, val);
            return -2;
        }
        return on ? push_arg(v, n, cap, o->name, strlen(o->name)) : 0;
    }
    if (!*val) return 0; /* VAR= means not set (as `docker run -e VAR=` is used) */
    for (const char *p = val;;) {
        const char *end = is_list ? strchr(p, ',') : NULL;
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (!is_list || len) /* a list's empty items (a trailing ',') are none */
            if (push_arg(v, n, cap, o->name, strlen(o->name)) || push_arg(v, n, cap, p, len)) return -1;
        if (!end) return 0;
        p = end + 1;
    }
}

char **cli_env_args(const cli_cmd *cmd, const char *prefix, const char *const *lists,
                    const char *const *const *groups, int argc, char **argv, int *argc_out) {
    char **v = NULL;
    int n = 0, cap = 0, rc = push_arg(&v, &n, &cap, argv[0], strlen(argv[0]));
    for (size_t i = 0; i < cmd->n_opts && !rc; i++) {
        const cli_opt *o = &cmd->opts[i];
        char var[96];
        cli_env_name(prefix, o, var, sizeof var);
        const char *val = getenv(var);
        if (!val || !env_may_set(cmd, o, groups, argc, argv)) continue;
        int is_list = 0;
        for (const char *const *l = lists; l && *l; l++) is_list |= strcmp(*l, o->name) == 0;
        rc = env_push(&v, &n, &cap, o, var, val, is_list);
    }
    for (int i = 1; i < argc && !rc; i++) rc = push_arg(&v, &n, &cap, argv[i], strlen(argv[i]));
    if (rc) {
        if (rc == -1) fprintf(stderr, "skycmd: out of memory reading the environment\n");
        cli_env_args_free(v, n);
        return NULL;
    }
    *argc_out = n;
    return v;
}

void cli_env_args_free(char **args, int argc) {
    if (!args) return;
    for (int i = 0; i < argc; i++) free(args[i]);
    free(args);
}

int cli_report(const cli_cmd *cmd, const cli_error *e) {
    switch (e->fault) {
    case CLI_FAULT_UNKNOWN:
        return unknown_option(cmd, e->arg);
    case CLI_FAULT_NO_VALUE:
        return cli_usage_error(cmd, "%s needs a value", e->opt->name);
    case CLI_FAULT_BAD_VALUE:
        return report_bad_value(cmd, e->opt, e->value);
    case CLI_FAULT_EXTRA:
        return cli_usage_error(cmd, "unexpected argument '%s'", e->arg);
    case CLI_FAULT_EMPTY:
        return cli_usage_error(cmd, "argument %d is empty", e->index);
    case CLI_FAULT_MISSING:
        break;
    }
    return cli_usage_error(cmd, "missing arguments");
}

int cli_parse(const cli_cmd *cmd, int argc, char **argv, const char **pos, int *n_pos) {
    cli_error e;
    int rc = cli_scan(cmd, argc, argv, pos, n_pos, &e);
    return rc == CLI_FAULT ? cli_report(cmd, &e) : rc;
}

/* ------------------------------------------------------------ library calls ---- */

int cli_begin(cli_run *run, const cli_cmd *cmd, const char *progress_label) {
    memset(run, 0, sizeof *run);
    run->spec = cmd;
    run->cmd = cmd->name;
    run->opts = skycmd_options_new();
    run->err = skycmd_error_new();
    int st = run->opts && run->err ? SKYCMD_OK : SKYCMD_E_NOMEM;
    if (!st && progress_label) {
        st = skycmd_options_set_progress(run->opts, cli_meter_progress, &run->meter);
        catch_stop_signals();
        if (!st) cli_meter_start(&run->meter, cmd->name, progress_label, CLI_METER_BYTES, CLI_METER_FRACTION);
    }
    if (st) {
        fprintf(stderr, "skycmd %s: %s\n", cmd->name, skycmd_strerror(st));
        return cli_abort(run, 1);
    }
    for (size_t k = 0; k < cmd->n_opts; k++) {
        const cli_opt *o = &cmd->opts[k];
        if (!o->option) continue;
        int64_t v = 0;
        switch (o->kind) {
        case CLI_FLAG:
            if (!*(const int *)o->dest) continue;
            v = 1;
            break;
        case CLI_TYPE:
        case CLI_CHOICE:
            if (*(const int *)o->dest == CLI_UNSET) continue;
            v = *(const int *)o->dest;
            break;
        case CLI_INT:
            if (*(const int64_t *)o->dest == CLI_UNSET) continue;
            v = *(const int64_t *)o->dest;
            break;
        case CLI_NUMBER: /* variables of the command's own */
        case CLI_CALL:
            continue;
        case CLI_STRING: {
            const char *s = *(const char *const *)o->dest;
            if (!s) continue;
            if ((st = skycmd_options_set_string(run->opts, o->option, s))) {
                fprintf(stderr, "skycmd %s: %s '%s': %s\n", cmd->name, o->name, s,
                        skycmd_strerror(st));
                return cli_abort(run, 2);
            }
            continue;
        }
        }
        if ((st = skycmd_options_set_int(run->opts, o->option, v))) {
            fprintf(stderr, "skycmd %s: %s %lld: %s\n", cmd->name, o->name, (long long)v,
                    skycmd_strerror(st));
            return cli_abort(run, 2);
        }
    }
    return 0;
}

void cli_put_text(const cli_run *run, const char *text, FILE *f) {
    const char *from[2] = {run->tmp.path, run->out.path}, *to[2] = {"<stdin>", "<stdout>"};
    for (;;) {
        const char *hit = NULL;
        int which = 0;
        for (int k = 0; k < 2; k++) {
            const char *p = from[k][0] ? strstr(text, from[k]) : NULL;
            if (p && (!hit || p < hit)) hit = p, which = k;
        }
        if (!hit) break;
        fwrite(text, 1, (size_t)(hit - text), f);
        fputs(to[which], f);
        text = hit + strlen(from[which]);
    }
    fputs(text, f);
}

static int stdout_reported; /* a failed write to stdout was reported (no second message) */
static int std_closed[3];   /* fds 0-2 were closed when the program started */

/* Copy the finished `-` output file to stdout. */
static int copy_to_stdout(cli_run *run) {
    FILE *in = fopen(run->out.path, "rb");
    if (!in) {
        fprintf(stderr, "skycmd %s: <stdout>: %s\n", run->cmd, strerror(errno));
        return 1;
    }
    char buf[1 << 16];
    size_t r;
    int failed = 0;
    /* a reader that stops early (| head) ends the copy with EPIPE, not the process: the
     * temporary file must still be removed */
    void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN);
    while (!failed && (r = fread(buf, 1, sizeof buf, in)) > 0) failed = fwrite(buf, 1, r, stdout) != r;
    failed |= ferror(in);
    fclose(in);
    if (!failed) failed = fflush(stdout) != 0;
    if (old_pipe != SIG_ERR) signal(SIGPIPE, old_pipe);
    if (failed) {
        fprintf(stderr, "skycmd %s: cannot write standard output: %s\n", run->cmd, strerror(errno));
        stdout_reported = 1;
        return 1;
    }
    return cli_flush_stdout(run->cmd);
}

int cli_end(cli_run *run, int status) {
    int rc = 0;
    cli_meter_clear(&run->meter); /* no summary (cli_end_written gives one) */
    if (status != SKYCMD_OK) {
        const char *msg = run->err ? skycmd_error_message(run->err) : "";
        fprintf(stderr, "skycmd %s: ", run->cmd);
        cli_put_text(run, (msg && msg[0]) ? msg : skycmd_strerror(status), stderr);
        fputc('\n', stderr);
        rc = 1;
    } else if (run->out.path[0]) {
        rc = copy_to_stdout(run);
    }
    skycmd_options_free(run->opts);
    skycmd_error_free(run->err);
    run->opts = NULL;
    run->err = NULL;
    cli_temp_free(&run->tmp);
    cli_temp_free(&run->out);
    if (stop_signal && status != SKYCMD_OK) {
        /* cancelled by a signal: no output was left; end as that signal would have */
        const int sig = stop_signal;
        signal(sig, SIG_DFL);
        raise(sig);
    }
    return rc;
}

/* Bytes of the regular files under path (a file, or a directory, 8 levels deep at most). */
static uint64_t bytes_under(const char *path, int depth) {
    struct stat sb;
    if (stat(path, &sb) != 0) return 0;
    if (S_ISREG(sb.st_mode)) return (uint64_t)sb.st_size;
    if (!S_ISDIR(sb.st_mode) || depth > 8) return 0;
    DIR *d = opendir(path);
    if (!d) return 0;
    uint64_t sum = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char sub[4096];
        int n = snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        if (n > 0 && (size_t)n < sizeof sub) sum += bytes_under(sub, depth + 1);
    }
    closedir(d);
    return sum;
}

int cli_end_written(cli_run *run, int status, const char *path) {
    if (status == SKYCMD_OK && run->meter.started && path)
        cli_meter_finish(&run->meter, bytes_under(path, 0), "written", NULL);
    return cli_end(run, status);
}

int cli_abort(cli_run *run, int rc) {
    cli_temp_free(&run->out); /* nothing to copy */
    cli_end(run, SKYCMD_OK);
    return rc;
}

int cli_stdout_file(cli_run *run, const char **path) {
    if (strcmp(*path, "-") != 0) return 0;
    if (isatty(STDOUT_FILENO))
        return cli_abort(run, cli_usage_error(run->spec, "will not write a binary file to a "
                                              "terminal (redirect stdout or name a file)"));
    if (cli_temp_new(&run->out, run->cmd, "stdout")) return cli_abort(run, 1);
    *path = run->out.path;
    return 0;
}


int cli_flush_stdout(const char *cmd) {
    if (fflush(stdout) == 0 && !ferror(stdout)) return 0;
    fprintf(stderr, "skycmd %s: cannot write standard output: %s\n", cmd, strerror(errno));
    stdout_reported = 1;
    return 1;
}

int cli_stdin_closed(const char *cmd) {
    if (std_closed[0]) fprintf(stderr, "skycmd %s: standard input is closed\n", cmd);
    return std_closed[0];
}

/* atexit: what a command printed to stdout without checking (help, version, reports)
 * reaches it, or the exit status says it did not (a full disk, a closed pipe). */
static void check_stdout_at_exit(void) {
    if (stdout_reported || std_closed[1]) return;
    if (fflush(stdout) == 0 && !ferror(stdout)) return;
    fprintf(stderr, "skycmd: cannot write standard output: %s\n", strerror(errno ? errno : EIO));
    _exit(1);
}

void cli_guard_std_fds(void) {
    /* A closed 0, 1 or 2 would be taken by the next file the program opens, and a model
     * file could then be read as stdin or written over by printf: hold each with
     * /dev/null, and remember a closed stdin so that reading "-" fails by name. */
    for (int fd = 0; fd < 3; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        const int got = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (got != fd) {
            if (got >= 0) close(got);
            _exit(127);
        }
        std_closed[fd] = 1;
    }
    atexit(check_stdout_at_exit);
}

/* ------------------------------------------------------------ files ------------ */

static int is_regular_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

int cli_default_model(const char *cmd, char *buf, size_t n) {
    const char *env = getenv("SKYCMD_DEFAULT_MODEL");
    if (env && env[0]) {
        if (is_regular_file(env) && strlen(env) < n) {
            snprintf(buf, n, "%s", env);
            return 0;
        }
        fprintf(stderr, "skycmd %s: SKYCMD_DEFAULT_MODEL=%s: not a readable file\n", cmd, env);
        return 1;
    }
    char exe[4096];
    const long len = sp_exe_path(exe, sizeof exe);
    char tried[2][4200];
    int n_tried = 0;
    if (len > 0) {
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        snprintf(tried[n_tried++], sizeof tried[0], "%s/../share/skycmd/models/" CLI_DEFAULT_MODEL_FILE, exe);
        snprintf(tried[n_tried++], sizeof tried[0], "%s/share/skycmd/models/" CLI_DEFAULT_MODEL_FILE, exe);
    }
    for (int i = 0; i < n_tried; i++) {
        if (is_regular_file(tried[i]) && strlen(tried[i]) < n) {
            snprintf(buf, n, "%s", tried[i]);
            return 0;
        }
    }
    /* Then where the library finds it: beside libskycmd (a program moved away from its
     * prefix still loads the prefix's library), then the configured data directory. */
    skycmd_error *err = skycmd_error_new();
    char *lib_path = NULL;
    const int st = skycmd_default_model_path(&lib_path, err);
    if (st == SKYCMD_OK && strlen(lib_path) < n) {
        snprintf(buf, n, "%s", lib_path);
        skycmd_string_free(lib_path);
        skycmd_error_free(err);
        return 0;
    }
    skycmd_string_free(lib_path);
    fprintf(stderr, "skycmd %s: the built-in model " CLI_DEFAULT_MODEL_FILE " is not installed "
            "(looked in", cmd);
    for (int i = 0; i < n_tried; i++) fprintf(stderr, "%s %s", i ? "," : "", tried[i]);
    fprintf(stderr, "%s); libskycmd: %s\n", n_tried ? "" : " nothing beside the program",
            err ? skycmd_error_message(err) : skycmd_strerror(st));
    skycmd_error_free(err);
    return 1;
}

int cli_looks_like_model(const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0) return 0;
    if (S_ISDIR(sb.st_mode)) return 1;
    /* a pipe or a device is read once, as the request: peeking at it would consume its
     * first bytes (or wait for a writer) */
    if (!S_ISREG(sb.st_mode)) return 0;
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char magic[4];
    int yes = fread(magic, 1, 4, f) == 4 && memcmp(magic, "GGUF", 4) == 0;
    fclose(f);
    return yes;
}

int cli_read_input(const char *cmd, const char *path, size_t max, char **buf, size_t *len) {
    int use_stdin = strcmp(path, "-") == 0;
    if (use_stdin && cli_stdin_closed(cmd)) {
        *buf = NULL;
        *len = 0;
        return 1;
    }
    const char *shown = use_stdin ? "standard input" : path;
    FILE *f = use_stdin ? stdin : fopen(path, "rb");
    *buf = NULL;
    *len = 0;
    if (!f) {
        fprintf(stderr, "skycmd %s: %s: %s\n", cmd, path, strerror(errno));
        return 1;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "skycmd %s: %s: is a directory\n", cmd, shown);
        if (!use_stdin) fclose(f);
        return 1;
    }
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    int failed = !b, too_big = 0, rd_errno = 0;
    while (!failed) {
        if (n + 1 >= cap) {
            if (cap > max) {
                too_big = failed = 1;
                break;
            }
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                failed = 1;
                break;
            }
            b = nb;
            cap *= 2;
        }
        size_t r = fread(b + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0) break;
    }
    if (!failed && ferror(f)) {
        rd_errno = errno;
        failed = 1;
    }
    if (!failed && n > max) too_big = failed = 1;
    if (!use_stdin) fclose(f);
    if (failed) {
        free(b);
        if (too_big)
            fprintf(stderr, "skycmd %s: %s: larger than %zu bytes\n", cmd, shown, max);
        else if (rd_errno)
            fprintf(stderr, "skycmd %s: %s: %s\n", cmd, shown, strerror(rd_errno));
        else
            fprintf(stderr, "skycmd %s: %s: cannot read (out of memory)\n", cmd, shown);
        return 1;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

int cli_temp_new(cli_temp *t, const char *cmd, const char *file) {
    const char *base = getenv("TMPDIR");
    if (!base || !*base || strlen(base) > 200) base = "/tmp";
    t->path[0] = '\0';
    int n = snprintf(t->dir, sizeof t->dir, "%s/skycmd-%s-XXXXXX", base, cmd);
    if (n < 0 || (size_t)n >= sizeof t->dir || !mkdtemp(t->dir)) {
        fprintf(stderr, "skycmd %s: cannot create a temporary directory in %s: %s\n", cmd, base,
                strerror(errno));
        t->dir[0] = '\0';
        return 1;
    }
    n = snprintf(t->path, sizeof t->path, "%s/%s", t->dir, file);
    if (n < 0 || (size_t)n >= sizeof t->path) {
        fprintf(stderr, "skycmd %s: temporary file name too long\n", cmd);
        cli_temp_free(t);
        return 1;
    }
    return 0;
}

void cli_temp_free(cli_temp *t) {
    if (t->path[0]) unlink(t->path);
    if (t->dir[0]) rmdir(t->dir);
    t->path[0] = t->dir[0] = '\0';
}

int cli_stdin_file(cli_run *run, const char **path) {
    if (strcmp(*path, "-") != 0) return 0;
    cli_temp *t = &run->tmp;
    const char *cmd = run->cmd;
    if (cli_stdin_closed(cmd)) return cli_abort(run, 1);
    if (cli_temp_new(t, cmd, "stdin")) return cli_abort(run, 1);
    FILE *out = fopen(t->path, "wb");
    if (!out) {
        fprintf(stderr, "skycmd %s: %s: %s\n", cmd, t->path, strerror(errno));
        return cli_abort(run, 1);
    }
    char buf[1 << 16];
    size_t r;
    int failed = 0;
    while ((r = fread(buf, 1, sizeof buf, stdin)) > 0)
        if (fwrite(buf, 1, r, out) != r) {
            failed = 1;
            break;
        }
    int rd_err = ferror(stdin);
    if (fclose(out) != 0) failed = 1;
    if (failed || rd_err) {
        fprintf(stderr, "skycmd %s: cannot copy standard input to %s: %s\n", cmd, t->path,
                strerror(errno));
        return cli_abort(run, 1);
    }
    *path = t->path;
    return 0;
}

void cli_note_int8_stored(const char *cmd, const skycmd_model *model, int weights_given) {
    int64_t stored = 0, weights = 0;
    if (weights_given || cli_is_quiet() || !isatty(STDERR_FILENO)) return;
    if (skycmd_model_get_int(model, "int8_stored", &stored) != SKYCMD_OK || !stored) return;
    const int64_t mode = stored == 2 ? SKYCMD_WEIGHTS_Q8_ROW : SKYCMD_WEIGHTS_Q8;
    if (skycmd_model_get_int(model, "weights", &weights) == SKYCMD_OK && weights == mode) return;
    fprintf(stderr, "skycmd %s: note: the model file stores a calibrated int8 model; %s runs "
            "it, this run computes in f32 on its Q8_0 values\n", cmd,
            stored == 2 ? "--int8 (or --q8-row)" : "--q8 (or --q8-fast)");
}

int cli_default_weights(void) {
    /* skycmd_cpu_features() lists AMX only where the kernels may use it (SKYCMD_KERNELS caps) */
    return strstr(skycmd_cpu_features(), "amx-bf16") ? SKYCMD_WEIGHTS_BF16X3 : SKYCMD_WEIGHTS_F32;
}

const char *cli_compute_resolve(cli_compute *c, int *weights, int *activations) {
    const int q8_block = c->q8 || c->q8_fast || c->no_calib;
    if (c->int8 && (q8_block || c->q8_row || c->bf16x3 || c->f32))
        return "--int8 excludes --q8, --q8-fast, --q8-row, --no-calib, --bf16x3 and --f32";
    if (c->q8 && c->q8_fast) return "--q8 and --q8-fast exclude each other";
    if (c->q8_row && (c->q8 || c->no_calib)) return "--q8-row excludes --q8 and --no-calib";
    if (c->bf16x3 && (q8_block || c->q8_row))
        return "--bf16x3 excludes --q8, --q8-fast, --q8-row and --no-calib";
    if (c->f32 && (q8_block || c->q8_row || c->bf16x3))
        return "--f32 excludes --q8, --q8-fast, --q8-row, --no-calib and --bf16x3";
    if (c->int8) c->q8_row = c->q8_fast = 1;
    *weights = c->f32 ? SKYCMD_WEIGHTS_F32 : c->bf16x3 ? SKYCMD_WEIGHTS_BF16X3 : cli_default_weights();
    *activations = CLI_UNSET;
    if (q8_block || c->q8_row) {
        *weights = c->q8_row ? SKYCMD_WEIGHTS_Q8_ROW : c->no_calib ? SKYCMD_WEIGHTS_Q8_PLAIN : SKYCMD_WEIGHTS_Q8;
        *activations = c->q8_fast ? SKYCMD_ACT_Q8 : SKYCMD_ACT_Q8X2;
    }
    return NULL;
}

int cli_compute_named(const cli_compute *c) {
    return c->int8 || c->q8 || c->q8_fast || c->q8_row || c->no_calib || c->bf16x3 || c->f32;
}
