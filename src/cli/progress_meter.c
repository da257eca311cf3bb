/*
 * progress_meter.c - the progress reporter of the long commands: a live line on a terminal
 * and a one-line summary (the contract is in progress_meter.h). Public API only.
 */
#define _POSIX_C_SOURCE 200809L
#include "progress_meter.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define METER_BAR 24            /* bar width in characters */
#define METER_REDRAW_S 0.1      /* at most 10 redraws a second */

static int quiet;

void cli_set_quiet(int q) { quiet = q != 0; }
int cli_is_quiet(void) { return quiet; }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* "286 MB", "16.7 MB", "1.23 GB", "512 B" (decimal units, three significant digits). */
static void fmt_bytes(char *buf, size_t n, double v) {
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (v >= 999.5 && u < 4) v /= 1000.0, u++;
    if (u == 0) snprintf(buf, n, "%.0f B", v);
    else snprintf(buf, n, v >= 99.95 ? "%.0f %s" : v >= 9.995 ? "%.1f %s" : "%.2f %s", v, units[u]);
}

/* An amount in the meter's unit: "286 MB" or "1200 requests". */
static void fmt_amount(const cli_meter *m, char *buf, size_t n, uint64_t v) {
    if (m->unit == CLI_METER_BYTES) fmt_bytes(buf, n, (double)v);
    else snprintf(buf, n, "%llu %s", (unsigned long long)v, m->unit);
}

/* A rate in the meter's unit: "98.7 MB/s" or "240/s". */
static void fmt_rate(const cli_meter *m, char *buf, size_t n, double per_s) {
    if (m->unit == CLI_METER_BYTES) {
        fmt_bytes(buf, n, per_s);
        strncat(buf, "/s", n - strlen(buf) - 1);
    } else {
        snprintf(buf, n, per_s >= 10 ? "%.0f/s" : "%.1f/s", per_s);
    }
}

static void fmt_seconds(char *buf, size_t n, double s) {
    snprintf(buf, n, s < 1.0 ? "%.2f s" : "%.1f s", s);
}

static void fmt_eta(char *buf, size_t n, double s) {
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, n, "%ld:%02ld", t / 60, t % 60);
}

static void draw(cli_meter *m, double t) {
    char line[192], a[32], b[32];
    size_t k = 0;
#define PUT(...)                                                                           \
    do {                                                                                   \
        int w_ = snprintf(line + k, sizeof line - k, __VA_ARGS__);                         \
        if (w_ > 0) k += (size_t)w_ < sizeof line - k ? (size_t)w_ : sizeof line - k - 1; \
    } while (0)
    PUT("%-10s", m->label);
    if (!m->updated) {
        PUT(" ...");
    } else {
        const double el = t - m->t_first;
        const double f = m->total ? (m->done >= m->total ? 1.0 : (double)m->done / (double)m->total) : -1.0;
        if (f >= 0) {
            int fill = (int)(f * METER_BAR);
            PUT(" [");
            for (int i = 0; i < METER_BAR; i++) PUT("%c", i < fill ? '#' : '.');
            PUT("] %3d%%", (int)(f * 100.0));
        }
        uint64_t amount = m->has_count ? m->count : m->done;
        if (!(m->flags & CLI_METER_FRACTION) || m->has_count) {
            fmt_amount(m, a, sizeof a, amount);
            if (!(m->flags & CLI_METER_FRACTION) && m->total && m->unit == CLI_METER_BYTES) {
                fmt_bytes(b, sizeof b, (double)m->total);
                /* "1.20/2.93 MB": the done part without its unit when both share it */
                const char *sp_a = strchr(a, ' '), *sp_b = strchr(b, ' ');
                if (sp_a && sp_b && strcmp(sp_a, sp_b) == 0) PUT("  %.*s/%s", (int)(sp_a - a), a, b);
                else PUT("  %s/%s", a, b);
            } else if (!(m->flags & CLI_METER_FRACTION) && m->total) { /* "1200/5000 requests" */
                PUT("  %llu/%llu %s", (unsigned long long)m->done, (unsigned long long)m->total, m->unit);
            } else {
                PUT("  %s", a);
            }
            /* the rate of what is counted since the first update */
            uint64_t since = amount >= m->first_done && !m->has_count ? amount - m->first_done : amount;
            if (el > 0.2) {
                fmt_rate(m, a, sizeof a, (double)since / el);
                PUT("  %s", a);
            }
        }
        if (f > 0 && f < 1 && el > 0.2 && m->done > m->first_done) {
            double rate = (double)(m->done - m->first_done) / el;
            fmt_eta(a, sizeof a, (double)(m->total - m->done) / rate);
            PUT("  ETA %s", a);
        }
    }
#undef PUT
    fprintf(stderr, "\r%s\033[K", line);
    fflush(stderr);
    m->on_screen = 1;
    m->t_drawn = t;
}

void cli_meter_start(cli_meter *m, const char *cmd, const char *label, const char *unit,
                     unsigned flags) {
    memset(m, 0, sizeof *m);
    m->cmd = cmd;
    m->label = label ? label : cmd;
    m->unit = unit;
    m->flags = flags;
    m->started = 1;
    const int tty = isatty(STDERR_FILENO);
    m->live = !quiet && tty;
    m->summary = !quiet && (tty || (flags & CLI_METER_ALWAYS));
    m->t_start = now_s();
    if (m->live) draw(m, m->t_start);
}

void cli_meter_update(cli_meter *m, uint64_t done, uint64_t total) {
    if (!m->started) return;
    const double t = now_s();
    if (!m->updated) {
        m->updated = 1;
        m->t_first = t;
        m->first_done = done;
    }
    m->done = done;
    m->total = total;
    if (m->live && (t - m->t_drawn >= METER_REDRAW_S || !m->on_screen)) draw(m, t);
}

void cli_meter_count(cli_meter *m, uint64_t amount) {
    m->count = amount;
    m->has_count = 1;
}

void cli_meter_erase(cli_meter *m) {
    if (!m->on_screen) return;
    fputs("\r\033[K", stderr);
    fflush(stderr);
    m->on_screen = 0;
}

void cli_meter_clear(cli_meter *m) {
    cli_meter_erase(m);
    m->started = 0;
}

void cli_meter_finish(cli_meter *m, uint64_t amount, const char *what, const char *fmt, ...) {
    if (!m->started) return;
    const double el = now_s() - m->t_start;
    cli_meter_clear(m);
    if (!m->summary) return;
    char a[48], t[32], r[32];
    fmt_seconds(t, sizeof t, el);
    if (amount == CLI_METER_UNKNOWN) {
        fprintf(stderr, "skycmd %s: done in %s", m->cmd, t);
    } else {
        fmt_amount(m, a, sizeof a, amount);
        fmt_rate(m, r, sizeof r, el > 0 ? (double)amount / el : 0.0);
        fprintf(stderr, "skycmd %s: done: %s%s%s in %s (%s)", m->cmd, a, what ? " " : "",
                what ? what : "", t, r);
    }
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
    fflush(stderr);
}

int cli_meter_progress(void *meter, uint64_t done, uint64_t total) {
    if (cli_stopping()) return 1;
    if (meter) cli_meter_update(meter, done, total);
    return 0;
}
