/* cmd_decide_batch.c - `skycmd decide [MODEL] --batch IN.jsonl [-o OUT.jsonl]`: answer one
 * /v1/systemone request per line of a file (public API only).
 *
 * Contract:
 *  - Streamed: the file is read in windows of at most `window` lines (and at most
 *    BATCH_WINDOW_BYTES of text), so memory does not grow with the file's size.
 *  - Within a window, requests are sorted by their length and cut into groups of
 *    BATCH_GROUP neighbours, each answered by one skycmd_decide_each call (shared batches,
 *    and each line its own answer or error). Answers are
 *    exactly those of single `skycmd decide` calls: the library's batches give each
 *    sequence the logits it would get alone.
 *  - One output line per non-blank input line, in the input's order (blank lines are skipped
 *    and give none, so a file without blank lines has output line k answering input line
 *    k): the response JSON, or for a bad line {"error":{"line":N,"status":"SKYCMD_E_...","message":"..."}}; bad
 *    lines are also reported on stderr as "skycmd decide: FILE:N: message (STATUS)".
 *  - -o FILE is written in place as the answers are made, opened (truncated) only once the
 *    input has given its first lines, so an unreadable input leaves it as it was; the
 *    input file itself is refused as the output.
 *  - --jobs N answers with N threads, one session each; the output is the same for any N.
 *  - Progress is the CLI's one meter (progress_meter.h): a live line (requests, requests/s,
 *    ETA from the bytes of the input file read) on stderr only when it is a terminal, and a
 *    summary line at the end ("skycmd decide: done: N requests in T s (R/s): A answered,
 *    F failed"), printed also when stderr is not a terminal, as it is the run's result;
 *    --quiet drops both. --fail-fast stops after the window that holds the first bad line,
 *    writing the output up to and including it.
 *  - Exit status: 0 every line answered, 1 a line failed (or the file could not be read or
 *    written).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define BATCH_LINE_MAX ((size_t)16 << 20)      /* as a single decide's request body */
#define BATCH_WINDOW_BYTES ((size_t)64 << 20)  /* text held at once, at most */
#define BATCH_GROUP 32                          /* requests per skycmd_decide_each call */

struct slot {
    char *text; /* the line (NUL-terminated), or NULL when it was too long */
    size_t len, cap;
    uint64_t line;
    char *out;  /* the output line (malloc), or NULL */
    char *msg;  /* a failed line's message (malloc), or NULL */
    int failed;
    int status;
};

struct batch_run {
    const char *cmd;
    const cli_batch_args *a;
    skycmd_model *model;
    struct slot *slots;
    size_t n_slots;   /* in this window */
    size_t *order;    /* slot indices by length */
    size_t n_groups;
    _Atomic size_t next_group;
    _Atomic size_t groups_done;
    _Atomic uint64_t bytes_done;
    /* the pool */
    pthread_mutex_t mu;
    pthread_cond_t cv, done_cv;
    uint64_t generation;
    int quit;
    size_t active;
    /* progress */
    cli_meter meter;
    uint64_t total_bytes; /* 0 = unknown (not a regular file) */
    uint64_t answered, failed, window_base_requests;
};

/* Append s as a JSON string literal; bytes >= 0x80 are copied (the library's messages are
 * UTF-8), control characters escaped. Returns 0, or -1 when out of memory. */
struct obuf {
    char *p;
    size_t n, cap;
};
static int ob_add(struct obuf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        while (c < b->n + n + 1) c *= 2;
        char *q = realloc(b->p, c);
        if (!q) return -1;
        b->p = q;
        b->cap = c;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}
static int ob_str(struct obuf *b, const char *s) {
    int rc = ob_add(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p && !rc; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            rc = ob_add(b, esc, 2);
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            rc = ob_add(b, esc, 6);
        } else {
            rc = ob_add(b, (const char *)p, 1);
        }
    }
    return rc ? rc : ob_add(b, "\"", 1);
}

/* Record line sl's failure: the stderr report waits for the ordered write, the output line
 * is the error object. */
static void slot_fail(struct slot *sl, int status, const char *msg) {
    struct obuf b = {0};
    char head[96];
    snprintf(head, sizeof head, "{\"error\":{\"line\":%llu,\"status\":", (unsigned long long)sl->line);
    int rc = ob_add(&b, head, strlen(head));
    if (!rc) rc = ob_str(&b, skycmd_status_name(status));
    if (!rc) rc = ob_add(&b, ",\"message\":", 11);
    if (!rc) rc = ob_str(&b, msg && *msg ? msg : skycmd_strerror(status));
    if (!rc) rc = ob_add(&b, "}}", 2);
    free(sl->out);
    sl->out = rc ? NULL : b.p;
    if (rc) free(b.p);
    free(sl->msg);
    sl->msg = strdup(msg && *msg ? msg : skycmd_strerror(status));
    sl->failed = 1;
    sl->status = status;
}

static void slot_answer(struct slot *sl, const skycmd_response *resp) {
    const char *json = skycmd_response_json(resp);
    free(sl->out);
    sl->out = json ? strdup(json) : NULL;
    if (!sl->out) slot_fail(sl, SKYCMD_E_NOMEM, "out of memory writing the response");
}

/* Answer the requests of group g (slots order[g*GROUP ..]) with session s. */
static void answer_group(struct batch_run *b, skycmd_session *s, size_t g) {
    size_t lo = g * BATCH_GROUP, hi = lo + BATCH_GROUP;
    if (hi > b->n_slots) hi = b->n_slots;
    skycmd_request *req[BATCH_GROUP] = {0}; /* (zeroed: GCC cannot see that k bounds the reads) */
    struct slot *who[BATCH_GROUP];
    size_t k = 0;
    uint64_t bytes = 0;
    for (size_t i = lo; i < hi; i++) {
        struct slot *sl = &b->slots[b->order[i]];
        bytes += sl->len + 1;
        if (!sl->text) {
            slot_fail(sl, SKYCMD_E_TOO_LARGE, "the line is longer than 16 MiB");
            continue;
        }
        skycmd_request *q = NULL;
        int st = skycmd_request_parse(sl->text, sl->len, &q);
        if (!q) { /* out of memory: nothing to hand on */
            slot_fail(sl, st, skycmd_strerror(st));
            continue;
        }
        req[k] = q; /* one that did not parse is refused in its slot by skycmd_decide_each */
        who[k++] = sl;
    }
    skycmd_response *out[BATCH_GROUP];
    int status[BATCH_GROUP];
    char *msg[BATCH_GROUP];
    int st = skycmd_decide_each(s, (const skycmd_request *const *)req, k, out, status, msg);
    for (size_t j = 0; j < k; j++) {
        if (st) slot_fail(who[j], st, skycmd_session_errmsg(s));
        else if (status[j]) slot_fail(who[j], status[j], msg[j] ? msg[j] : skycmd_strerror(status[j]));
        else slot_answer(who[j], out[j]);
        skycmd_response_free(out[j]);
        if (!st) skycmd_string_free(msg[j]);
        skycmd_request_free(req[j]);
    }
    atomic_fetch_add(&b->bytes_done, bytes);
    atomic_fetch_add(&b->groups_done, 1);
}

/* Tell the meter the requests answered and the input bytes read so far (main thread). */
static void show_progress(struct batch_run *b) {
    size_t done_groups = atomic_load(&b->groups_done);
    uint64_t reqs = b->window_base_requests +
                    (uint64_t)(done_groups * BATCH_GROUP < b->n_slots ? done_groups * BATCH_GROUP
                                                                       : b->n_slots);
    uint64_t bytes = atomic_load(&b->bytes_done);
    cli_meter_count(&b->meter, reqs);
    cli_meter_update(&b->meter, bytes < b->total_bytes || !b->total_bytes ? bytes : b->total_bytes,
                     b->total_bytes);
}

/* Take groups of the current window until none is left. */
static void work(struct batch_run *b, skycmd_session *s, int draws) {
    for (;;) {
        size_t g = atomic_fetch_add(&b->next_group, 1);
        if (g >= b->n_groups) break;
        answer_group(b, s, g);
        if (draws) show_progress(b);
    }
}

struct worker_arg {
    struct batch_run *b;
    skycmd_session *s;
};

static void *worker_main(void *p) {
    struct worker_arg *wa = p;
    struct batch_run *b = wa->b;
    uint64_t seen = 0;
    for (;;) {
        pthread_mutex_lock(&b->mu);
        while (!b->quit && b->generation == seen) pthread_cond_wait(&b->cv, &b->mu);
        if (b->quit) {
            pthread_mutex_unlock(&b->mu);
            return NULL;
        }
        seen = b->generation;
        pthread_mutex_unlock(&b->mu);
        work(b, wa->s, 0);
        pthread_mutex_lock(&b->mu);
        if (--b->active == 0) pthread_cond_signal(&b->done_cv);
        pthread_mutex_unlock(&b->mu);
    }
}

static const struct slot *g_sort_slots;
static int by_length(const void *x, const void *y) {
    size_t a = *(const size_t *)x, c = *(const size_t *)y;
    size_t la = g_sort_slots[a].len, lc = g_sort_slots[c].len;
    if (la != lc) return la < lc ? -1 : 1;
    return a < c ? -1 : a > c; /* stable */
}

/* Read one line into sl (without its '\n'). Returns 1 read, 0 at the end, -1 on a read
 * error. A line longer than BATCH_LINE_MAX is consumed and kept as text == NULL. Every byte
 * counts, a NUL too (the line then fails to parse, as JSON forbids it, and stays one line). */
static int read_line(FILE *f, struct slot *sl) {
    sl->len = 0;
    int got = 0, too_long = 0, end = 0, c = 0;
    char chunk[65536];
    while (!end && c != EOF) {
        size_t n = 0;
        while (n < sizeof chunk && (c = getc(f)) != EOF && c != '\n') chunk[n++] = (char)c;
        end = c == '\n';
        if (n == 0 && !end) break; /* the end of the input */
        got = 1;
        if (!too_long && sl->len + n > BATCH_LINE_MAX) too_long = 1;
        if (!too_long) {
            if (sl->len + n + 1 > sl->cap) {
                size_t c = sl->cap ? sl->cap : 1024;
                while (c < sl->len + n + 1) c *= 2;
                char *q = realloc(sl->text, c);
                if (!q) return -1;
                sl->text = q;
                sl->cap = c;
            }
            memcpy(sl->text + sl->len, chunk, n);
            sl->len += n;
            sl->text[sl->len] = '\0';
        }
    }
    if (ferror(f)) return -1;
    if (!got) return 0;
    if (too_long) {
        sl->len = BATCH_LINE_MAX + 1;
        return 2;
    }
    if (sl->len && sl->text[sl->len - 1] == '\r') sl->text[--sl->len] = '\0';
    return 1;
}

static int blank(const struct slot *sl) {
    for (size_t i = 0; i < sl->len; i++)
        if (sl->text[i] != ' ' && sl->text[i] != '\t') return 0;
    return 1;
}

static int make_session(const char *cmd, skycmd_model *model, const cli_batch_args *a,
                        skycmd_session **out) {
    int st = skycmd_session_new(model, out);
    if (st) {
        fprintf(stderr, "skycmd %s: %s\n", cmd, skycmd_strerror(st));
        return 1;
    }
    if (a->threads != CLI_UNSET && (st = skycmd_session_set_int(*out, SKYCMD_OPT_THREADS, a->threads))) {
        fprintf(stderr, "skycmd %s: --compute-threads %lld: %s\n", cmd, (long long)a->threads,
                skycmd_session_errmsg(*out));
        return 1;
    }
    if (a->token_budget != CLI_UNSET &&
        (st = skycmd_session_set_int(*out, SKYCMD_OPT_MAX_TOKEN_BUDGET, a->token_budget))) {
        fprintf(stderr, "skycmd %s: --max-token-budget: %s\n", cmd, skycmd_session_errmsg(*out));
        return 1;
    }
    if (a->activations != CLI_UNSET &&
        (st = skycmd_session_set_int(*out, SKYCMD_OPT_ACTIVATIONS, a->activations))) {
        fprintf(stderr, "skycmd %s: int8 activations: %s\n", cmd, skycmd_session_errmsg(*out));
        return 1;
    }
    return 0;
}

static FILE *open_output(const char *cmd, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) fprintf(stderr, "skycmd %s: cannot create %s: %s\n", cmd, path, strerror(errno));
    return f;
}

int cli_decide_batch(const char *cmd, skycmd_model *model, const cli_batch_args *a) {
    const char *in_name = strcmp(a->in_path, "-") == 0 ? "<stdin>" : a->in_path;
    if (strcmp(a->in_path, "-") == 0 && cli_stdin_closed(cmd)) return 1;
    FILE *in = strcmp(a->in_path, "-") == 0 ? stdin : fopen(a->in_path, "r");
    if (!in) {
        fprintf(stderr, "skycmd %s: cannot open %s: %s\n", cmd, a->in_path, strerror(errno));
        return 1;
    }
    /* -o FILE is written in place as the answers are made (a stream, so a long run can be
     * followed), but opened (and so truncated) only once the input has given its first
     * lines: an input that cannot be read leaves it as it was. The input itself (or a link
     * to it) is refused: the answers would replace the requests. */
    FILE *out = stdout;
    const char *out_file = a->out_path && strcmp(a->out_path, "-") != 0 ? a->out_path : NULL;
    if (out_file) {
        struct stat is, os;
        if (fstat(fileno(in), &is) == 0 && stat(out_file, &os) == 0 && S_ISREG(os.st_mode) &&
            is.st_dev == os.st_dev && is.st_ino == os.st_ino) {
            fprintf(stderr, "skycmd %s: -o %s is the input file: the answers would replace the "
                    "requests (name another file)\n", cmd, out_file);
            if (in != stdin) fclose(in);
            return 1;
        }
        out = NULL;
    }
    long jobs = a->jobs == CLI_UNSET ? 1 : a->jobs ? (long)a->jobs : sysconf(_SC_NPROCESSORS_ONLN);
    if (jobs < 1) jobs = 1;
    size_t window = a->window == CLI_UNSET ? 1024 : (size_t)a->window;

    struct batch_run b;
    memset(&b, 0, sizeof b);
    b.cmd = cmd;
    b.a = a;
    b.model = model;
    struct stat stt;
    if (fstat(fileno(in), &stt) == 0 && S_ISREG(stt.st_mode)) b.total_bytes = (uint64_t)stt.st_size;
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.cv, NULL);
    pthread_cond_init(&b.done_cv, NULL);

    int rc = 1;
    skycmd_session **sess = calloc((size_t)jobs, sizeof *sess);
    struct worker_arg *wa = calloc((size_t)jobs, sizeof *wa);
    pthread_t *tids = calloc((size_t)jobs, sizeof *tids);
    b.slots = calloc(window, sizeof *b.slots);
    b.order = calloc(window, sizeof *b.order);
    long started = 0;
    if (!sess || !wa || !tids || !b.slots || !b.order) {
        fprintf(stderr, "skycmd %s: out of memory\n", cmd);
        goto out;
    }
    for (long j = 0; j < jobs; j++)
        if (make_session(cmd, model, a, &sess[j])) goto out;
    for (long j = 1; j < jobs; j++) {
        wa[j].b = &b;
        wa[j].s = sess[j];
        if (pthread_create(&tids[j], NULL, worker_main, &wa[j]) != 0) {
            fprintf(stderr, "skycmd %s: cannot start %ld threads\n", cmd, jobs);
            goto out;
        }
        started = j;
    }

    if (!a->progress) cli_set_quiet(1);
    cli_meter_start(&b.meter, cmd, cmd, "requests", CLI_METER_FRACTION | CLI_METER_ALWAYS);
    show_progress(&b); /* rates count from here */
    uint64_t line = 0, first_bad = 0;
    int eof = 0, stop = 0, io_error = 0;
    while (!eof && !stop) {
        /* read a window */
        size_t n = 0, bytes = 0;
        while (n < window && bytes < BATCH_WINDOW_BYTES) {
            struct slot *sl = &b.slots[n];
            int r = read_line(in, sl);
            if (r < 0) {
                fprintf(stderr, "skycmd %s: reading %s: %s\n", cmd, in_name, strerror(errno ? errno : EIO));
                io_error = 1;
                eof = 1;
                break;
            }
            if (r == 0) {
                eof = 1;
                break;
            }
            line++;
            if (r == 1 && blank(sl)) continue;
            sl->line = line;
            sl->failed = 0;
            if (r == 2) { /* too long: keep no text */
                free(sl->text);
                sl->text = NULL;
                sl->cap = 0;
                bytes += BATCH_LINE_MAX;
            } else {
                bytes += sl->len;
            }
            b.order[n] = n;
            n++;
        }
        if (n == 0) break;
        if (!out && !(out = open_output(cmd, out_file))) {
            io_error = 1;
            break;
        }
        /* sort into length buckets and answer */
        g_sort_slots = b.slots;
        qsort(b.order, n, sizeof *b.order, by_length);
        b.n_slots = n;
        b.n_groups = (n + BATCH_GROUP - 1) / BATCH_GROUP;
        atomic_store(&b.next_group, 0);
        atomic_store(&b.groups_done, 0);
        pthread_mutex_lock(&b.mu);
        b.active = (size_t)started;
        b.generation++;
        pthread_cond_broadcast(&b.cv);
        pthread_mutex_unlock(&b.mu);
        work(&b, sess[0], 1);
        pthread_mutex_lock(&b.mu);
        while (b.active) pthread_cond_wait(&b.done_cv, &b.mu);
        pthread_mutex_unlock(&b.mu);
        /* write in input order (answers on the terminal: not through the live line) */
        if (out == stdout && isatty(STDOUT_FILENO)) cli_meter_erase(&b.meter);
        for (size_t i = 0; i < n; i++) {
            struct slot *sl = &b.slots[i];
            if (sl->failed) {
                b.failed++;
                if (!first_bad) first_bad = sl->line;
                cli_meter_erase(&b.meter);
                fprintf(stderr, "skycmd %s: %s:%llu: %s (%s)\n", cmd, in_name,
                        (unsigned long long)sl->line, sl->msg ? sl->msg : "out of memory",
                        skycmd_status_name(sl->status));
            } else {
                b.answered++;
            }
            if (sl->out) {
                fputs(sl->out, out);
                fputc('\n', out);
            }
            free(sl->out);
            free(sl->msg);
            sl->out = sl->msg = NULL;
            if (sl->cap > ((size_t)1 << 20)) { /* keep only ordinary buffers across windows */
                free(sl->text);
                sl->text = NULL;
                sl->cap = 0;
            }
            if (sl->failed && a->fail_fast) {
                stop = 1;
                break;
            }
        }
        b.window_base_requests += n;
        atomic_store(&b.groups_done, 0);
        b.n_slots = 0;
        show_progress(&b);
        if (ferror(out)) break;
    }
    cli_meter_erase(&b.meter);
    if (!out && !io_error && !(out = open_output(cmd, out_file))) io_error = 1; /* no lines */
    int write_error = out && (fflush(out) != 0 || ferror(out));
    if (write_error)
        fprintf(stderr, "skycmd %s: writing %s: %s\n", cmd, a->out_path ? a->out_path : "<stdout>",
                strerror(errno ? errno : EIO));
    char first[64] = "";
    if (first_bad) snprintf(first, sizeof first, " (first at line %llu)", (unsigned long long)first_bad);
    cli_meter_finish(&b.meter, b.answered + b.failed, NULL, ": %llu answered, %llu failed%s%s",
                     (unsigned long long)b.answered, (unsigned long long)b.failed, first,
                     stop ? "; stopped (--fail-fast)"
                     : io_error ? "; stopped: an error above"
                     : write_error ? "; the output could not be written" : "");
    rc = (b.failed || io_error || write_error) ? 1 : 0;
out:
    pthread_mutex_lock(&b.mu);
    b.quit = 1;
    pthread_cond_broadcast(&b.cv);
    pthread_mutex_unlock(&b.mu);
    for (long j = 1; j <= started; j++) pthread_join(tids[j], NULL);
    if (sess)
        for (long j = 0; j < jobs; j++) skycmd_session_free(sess[j]);
    if (b.slots)
        for (size_t i = 0; i < window; i++) {
            free(b.slots[i].text);
            free(b.slots[i].out);
            free(b.slots[i].msg);
        }
    free(b.slots);
    free(b.order);
    free(sess);
    free(wa);
    free(tids);
    pthread_mutex_destroy(&b.mu);
    pthread_cond_destroy(&b.cv);
    pthread_cond_destroy(&b.done_cv);
    if (in != stdin) fclose(in);
    if (out && out != stdout && fclose(out) != 0 && rc == 0) {
        fprintf(stderr, "skycmd %s: writing %s: %s\n", cmd, a->out_path, strerror(errno));
        rc = 1;
    }
    return rc;
}
