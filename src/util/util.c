/* util.c - implementation of the shared internal helpers declared in util.h. */
#define _POSIX_C_SOURCE 200809L
#include "util.h"
#include "platform.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int fail_v(sk_err *e, int status, int errnum, const char *fmt, va_list ap) SK_PRINTF(4, 0);
static int fail_v(sk_err *e, int status, int errnum, const char *fmt, va_list ap) {
    if (e) {
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        e->status = status;
        e->sys_errno = errnum;
    }
    return status;
}

int sk_fail(sk_err *e, int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fail_v(e, status, 0, fmt, ap);
    va_end(ap);
    return status;
}

int sk_fail_errno(sk_err *e, int status, int errnum, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fail_v(e, status, errnum, fmt, ap);
    va_end(ap);
    return status;
}

void sk_err_prefix(sk_err *e, const char *fmt, ...) {
    if (!e) return;
    char head[SK_ERR_MSG_MAX];
    char old[SK_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof old);
    /* Both halves are cut to fit: a message is for people, losing its tail is fine. */
    size_t hl = strnlen(head, sizeof e->msg - 3);
    memcpy(e->msg, head, hl);
    memcpy(e->msg + hl, ": ", 2);
    size_t room = sizeof e->msg - hl - 3;
    size_t ol = strnlen(old, room);
    memcpy(e->msg + hl + 2, old, ol);
    e->msg[hl + 2 + ol] = '\0';
}

int sk_share_report_(sk_share s, double f, sk_err *e) {
    sk_progress *p = s.p;
    if (!p->stopped) {
        if (!(f > 0.0)) f = 0.0;  /* and NaN */
        if (f > 1.0) f = 1.0;
        const double x = s.lo + f * (s.hi - s.lo);
        uint64_t done = x >= 1.0 ? SK_PROGRESS_TOTAL
                        : x > 0.0 ? (uint64_t)(x * (double)SK_PROGRESS_TOTAL) : 0;
        if (done < p->last) done = p->last;
        p->last = done;
        if (p->fn(p->ud, done, SK_PROGRESS_TOTAL) != 0) p->stopped = 1;
    }
    return p->stopped ? sk_fail(e, SKYCMD_E_CANCELLED, "cancelled by the progress callback") : 0;
}

void sk_err_clear(sk_err *e) {
    if (!e) return;
    e->status = 0;
    e->sys_errno = 0;
    e->msg[0] = '\0';
}

void *sk_malloc_array(size_t n, size_t size) {
    size_t total;
    if (sk_mul_size(n, size, &total)) return NULL;
    return malloc(total ? total : 1);
}

int sk_grow_array(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 16, bytes;
    while (n < need) {
        if (n > SIZE_MAX / 2) return -1;
        n *= 2;
    }
    if (sk_mul_size(n, elem, &bytes)) return -1;
    void *q = realloc(*p, bytes);
    if (!q) return -1;
    *p = q;
    *cap = n;
    return 0;
}

void *sk_calloc_array(size_t n, size_t size) {
    if (n == 0 || size == 0) return calloc(1, 1);
    size_t total;
    if (sk_mul_size(n, size, &total)) return NULL;
    return calloc(n, size);
}

char *sk_strndup(const char *s, size_t n) {
    char *r = malloc(n + 1);
    if (!r) return NULL;
    memcpy(r, s, n);
    r[n] = '\0';
    return r;
}

char *sk_strdup(const char *s) { return s ? sk_strndup(s, strlen(s)) : NULL; }

void sk_buf_init(sk_buf *b) { memset(b, 0, sizeof *b); }

void sk_buf_free(sk_buf *b) {
    free(b->data);
    sk_buf_init(b);
}

int sk_buf_reserve(sk_buf *b, size_t extra) {
    if (b->failed) return -1;
    size_t need;
    if (sk_add_size(b->len, extra, &need) || sk_add_size(need, 1, &need)) {
        b->failed = 1;
        return -1;
    }
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) { cap = need; break; }
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

void sk_buf_append(sk_buf *b, const void *data, size_t n) {
    if (sk_buf_reserve(b, n)) return;
    if (n) memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void sk_buf_puts(sk_buf *b, const char *s) { sk_buf_append(b, s, strlen(s)); }

void sk_buf_putc(sk_buf *b, char c) { sk_buf_append(b, &c, 1); }

void sk_buf_printf(sk_buf *b, const char *fmt, ...) {
    if (b->failed) return;
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || sk_buf_reserve(b, (size_t)n)) {
        b->failed = 1;
        va_end(ap2);
        return;
    }
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    b->len += (size_t)n;
}

char *sk_buf_detach(sk_buf *b) {
    if (b->failed) {
        sk_buf_free(b);
        return NULL;
    }
    if (!b->data && sk_buf_reserve(b, 0)) return NULL;
    b->data[b->len] = '\0';
    char *r = b->data;
    sk_buf_init(b);
    return r;
}

int sk_map_file(const char *path, sk_map *m, sk_err *e) {
    memset(m, 0, sizeof *m);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return sk_fail_errno(e, SKYCMD_E_IO, errno, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int er = errno;
        close(fd);
        return sk_fail_errno(e, SKYCMD_E_IO, er, "%s: cannot stat: %s", path, strerror(er));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return sk_fail(e, SKYCMD_E_IO, "%s: not a regular file", path);
    }
    if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX) {
        close(fd);
        return sk_fail(e, SKYCMD_E_IO, "%s: file too large to map", path);
    }
    size_t size = (size_t)st.st_size;
    if (size == 0) {
        close(fd);
        static const uint8_t empty[1];
        m->data = empty;
        return SKYCMD_OK;
    }
    void *p = sk_platform_map_read(fd, size);
    int er = errno;
    close(fd);
    if (!p) return sk_fail_errno(e, SKYCMD_E_IO, er, "%s: cannot map: %s", path, strerror(er));
    m->data = p;
    m->size = size;
    m->base_ = p;
    m->mapped_ = size;
    return SKYCMD_OK;
}

void sk_unmap(sk_map *m) {
    if (m->base_) sk_platform_unmap(m->base_, m->mapped_);
    memset(m, 0, sizeof *m);
}

/* pread() n bytes at `at` into dst through interruptions and short reads: 0 with *got the
 * bytes read (fewer than n only where the file ends), -1 with errno on a read error. */
static int pread_full(int fd, uint8_t *dst, size_t n, size_t at, size_t *got) {
    *got = 0;
    while (*got < n) {
        ssize_t r = pread(fd, dst + *got, n - *got, (off_t)(at + *got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break;
        *got += (size_t)r;
    }
    return 0;
}

/* pread() size bytes at 0 into dst, then make sure the file ends there: 0, 1 when the file
 * is shorter or longer than size (a writer at work), -1 with errno on a read error, 2 when
 * the progress callback asked to stop (between two chunks of 8 MiB; 1 GiB without one). */
static int read_exactly(int fd, uint8_t *dst, size_t size, sk_share prog, sk_err *e) {
    const size_t chunk = sk_share_active(prog) ? ((size_t)1 << 23) : ((size_t)1 << 30);
    size_t done = 0, got;
    while (done < size) {
        const size_t want = size - done > chunk ? chunk : size - done;
        if (pread_full(fd, dst + done, want, done, &got) != 0) return -1;
        done += got;
        if (got < want) return 1;
        if (sk_share_report(prog, (double)done / (double)size, e)) return 2;
    }
    uint8_t extra;
    if (pread_full(fd, &extra, 1, size, &got) != 0) return -1;
    return got > 0;
}

/* Whether the file still holds what the copy holds, at pages spread over it: 1 yes, 0 no
 * (or unreadable). The file's identity (size, times, inode) cannot tell an in-place
 * rewrite made within one clock tick (the kernel stamps times at a tick's granularity, and
 * a small model is rewritten within one), so a copy torn between two contents would pass
 * it; such a copy differs from the file as it now is at one of these pages unless the two
 * contents agree there. 64 pages of 4 KiB: nothing beside a model's read. */
static int copy_matches_file(int fd, const uint8_t *copy, size_t size) {
    enum { SAMPLES = 64, PAGE = 4096 };
    uint8_t page[PAGE];
    if (size == 0) return 1;
    for (size_t k = 0; k <= SAMPLES; k++) {
        const size_t at = (size - 1) / SAMPLES * k / PAGE * PAGE;
        const size_t n = size - at < PAGE ? size - at : PAGE;
        size_t got;
        if (pread_full(fd, page, n, at, &got) != 0 || got < n || memcmp(page, copy + at, n) != 0)
            return 0;
    }
    return 1;
}

/* Wait for the writers of fd's file to close it, for up to about 2 s (a cp of a model takes
 * milliseconds): 1 a read guard is on, 0 none (the system has none for this file, or the
 * writers stayed: the reading is then checked by copy_matches_file alone). */
static int read_guard_wait(int fd) {
    for (int tries = 0; tries < 200; tries++) {
        const int g = sk_platform_read_guard_begin(fd);
        if (g >= 0) return g;
        const struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    return 0;
}

int sk_file_copy_read(const char *path, int keep_fd, sk_share prog, sk_file_copy *f, sk_err *e) {
    memset(f, 0, sizeof *f);
    f->fd = -1;
    const size_t page = sk_platform_page_size();
    for (int attempt = 0; attempt < 3; attempt++) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return sk_fail_errno(e, SKYCMD_E_IO, errno, "%s: cannot open: %s", path, strerror(errno));
        uint64_t id0[7], id1[7], idp[7];
        if (sk_platform_file_id(fd, id0) != 0) {
            int er = errno;
            close(fd);
            if (er == EINVAL) return sk_fail(e, SKYCMD_E_IO, "%s: not a regular file", path);
            return sk_fail_errno(e, SKYCMD_E_IO, er, "%s: cannot stat: %s", path, strerror(er));
        }
        /* with a guard on, no writer can open the file until the bytes are read: a file
         * rewritten in place (cp over it) is read whole before or after, never torn */
        const int guarded = read_guard_wait(fd);
        int status = SKYCMD_OK;
        if (guarded && sk_platform_file_id(fd, id0) != 0)  /* the size as the guard found it */
            status = sk_fail_errno(e, SKYCMD_E_IO, errno, "%s: cannot stat: %s", path, strerror(errno));
        else if (id0[2] > (uint64_t)(SIZE_MAX - page))
            status = sk_fail(e, SKYCMD_E_IO, "%s: file too large to read", path);
        const size_t size = status == SKYCMD_OK ? (size_t)id0[2] : 0;
        const size_t mapped = size ? (size + page - 1) / page * page : 0;
        static uint8_t empty[1];
        uint8_t *buf = empty;
        if (mapped && !(buf = sk_platform_pages_alloc(mapped)))
            status = sk_fail(e, SKYCMD_E_NOMEM, "%s: out of memory for its %zu bytes", path, size);
        if (status != SKYCMD_OK) {
            if (guarded) (void)sk_platform_read_guard_end(fd);
            close(fd);
            return status;
        }
        /* 2 MiB pages where the system allows them: a model is read in a few hundred page
         * faults instead of one per 4 KiB (the faults cost more than the copy) */
        if (mapped) sk_platform_pages_huge(buf, mapped, 1);
        int r = read_exactly(fd, buf, size, prog, e);
        int er = errno;
        const int intact = guarded ? sk_platform_read_guard_end(fd) : 1;
        if (r == 2) {
            if (mapped) sk_platform_unmap(buf, mapped);
            close(fd);
            return SKYCMD_E_CANCELLED;
        }
        int changed = r == 1 || (r == 0 && (!intact || sk_platform_file_id(fd, id1) != 0 ||
                                            memcmp(id0, id1, sizeof id0) != 0 ||
                                            sk_platform_path_id(path, idp) != 0 ||
                                            memcmp(idp, id1, sizeof idp) != 0 ||
                                            (!guarded && !copy_matches_file(fd, buf, size))));
        if (r < 0 || changed) {
            if (mapped) sk_platform_unmap(buf, mapped);
            close(fd);
            if (r < 0) return sk_fail_errno(e, SKYCMD_E_IO, er, "%s: read error: %s", path, strerror(er));
            continue;
        }
        if (mapped) sk_platform_pages_protect(buf, mapped, 0);
        f->data = buf;
        f->size = size;
        f->mapped_ = mapped;
        memcpy(f->id_, id1, sizeof id1);
        if (keep_fd) f->fd = fd;
        else close(fd);
        return SKYCMD_OK;
    }
    return sk_fail(e, SKYCMD_E_IO, "%s: the model file changed while it was being read (three "
                   "times in a row); write a new file beside it and rename it into place instead",
                   path);
}

void sk_file_copy_free(sk_file_copy *f) {
    if (f->mapped_) sk_platform_unmap((void *)f->data, f->mapped_);
    if (f->fd >= 0) close(f->fd);
    memset(f, 0, sizeof *f);
    f->fd = -1;
}

void sk_file_copy_drop(sk_file_copy *f, const void *p, size_t n, size_t *off, size_t *len) {
    *off = 0;
    *len = 0;
    const uintptr_t page = sk_platform_page_size(), lo = (uintptr_t)f->data, hi = lo + f->mapped_;
    if (!f->mapped_ || !p || n == 0 || (uintptr_t)p < lo || (uintptr_t)p > hi) return;
    uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1);
    uintptr_t b = ((uintptr_t)p + (n < hi - (uintptr_t)p ? n : hi - (uintptr_t)p)) & ~(page - 1);
    if (b <= a) return;
    /* The copy asked for huge pages (for the read): without taking that back on the range,
     * khugepaged collapses a 2 MiB range that still has one page in it into a whole huge
     * page again, so a load of minutes (--q8's calibration) found most of the released
     * bytes resident again (180 MB of a base F16 file's 286). */
    sk_platform_pages_huge((void *)a, b - a, 0);
    /* where the system cannot give pages back (WASI), nothing is dropped and the bytes stay */
    if (sk_platform_pages_discard((void *)a, b - a) == b - a) {
        *off = a - lo;
        *len = b - a;
    }
}

int sk_file_copy_refill(sk_file_copy *f, size_t off, size_t len) {
    if (len == 0) return 0;
    if (off > f->mapped_ || len > f->mapped_ - off) return -1;
    uint8_t *dst = f->data + off;
    sk_platform_pages_protect(dst, len, 1);
    uint64_t id[7];
    /* as in the first reading: a guard where the system has one, so no writer tears it */
    const int guarded = f->fd >= 0 ? read_guard_wait(f->fd) : 0;
    int ok = f->fd >= 0 && sk_platform_file_id(f->fd, id) == 0 && memcmp(id, f->id_, sizeof id) == 0;
    /* the copy's last page runs past the end of the file: those bytes stay zero */
    const size_t want = off >= f->size ? 0 : (len < f->size - off ? len : f->size - off);
    size_t got;
    if (ok && (pread_full(f->fd, dst, want, off, &got) != 0 || got < want)) ok = 0;
    if (want < len) memset(dst + want, 0, len - want);
    if (guarded && !sk_platform_read_guard_end(f->fd)) ok = 0;
    if (ok) ok = sk_platform_file_id(f->fd, id) == 0 && memcmp(id, f->id_, sizeof id) == 0;
    if (!ok) memset(dst, 0xff, len);
    sk_platform_pages_protect(dst, len, 0);
    return ok ? 0 : -1;
}

int sk_read_file(const char *path, char **out, size_t *len, size_t max_len, sk_err *e) {
    *out = NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp) return sk_fail_errno(e, SKYCMD_E_IO, errno, "%s: cannot open: %s", path, strerror(errno));
    sk_buf b;
    sk_buf_init(&b);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0) {
        if (b.len + n > max_len) {
            fclose(fp);
            sk_buf_free(&b);
            return sk_fail(e, SKYCMD_E_TOO_LARGE, "%s: larger than %zu bytes", path, max_len);
        }
        sk_buf_append(&b, chunk, n);
    }
    const int bad = ferror(fp), er = errno;
    fclose(fp);
    if (bad) {
        sk_buf_free(&b);
        return sk_fail_errno(e, SKYCMD_E_IO, er, "%s: read error: %s", path, strerror(er));
    }
    size_t l = b.len;
    char *d = sk_buf_detach(&b);
    if (!d) return sk_fail(e, SKYCMD_E_NOMEM, "%s: out of memory", path);
    *out = d;
    if (len) *len = l;
    return SKYCMD_OK;
}

size_t sk_first_nonfinite(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return i;
    return n;
}

void sk_random_hex12(char hex[13]) {
    static const char digits[] = "0123456789abcdef";
    unsigned char r[6];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, r, sizeof r) : -1;
    if (fd >= 0) close(fd);
    if (got != (ssize_t)sizeof r) {
        static unsigned counter;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
                     ((uint64_t)sk_platform_pid() << 40) ^ (uint64_t)(counter++) * 0x9E3779B97F4A7C15u;
        for (size_t i = 0; i < sizeof r; i++) r[i] = (unsigned char)(x >> (8 * i));
    }
    for (size_t i = 0; i < sizeof r; i++) {
        hex[2 * i] = digits[r[i] >> 4];
        hex[2 * i + 1] = digits[r[i] & 15];
    }
    hex[12] = '\0';
}

int sk_partial_create(const char *base, int (*make)(const char *name, void *ud), void *ud,
                      char **out) {
    *out = NULL;
    const size_t n = strlen(base) + sizeof SK_PARTIAL_SUFFIX + 13;
    char *name = malloc(n);
    if (!name) {
        errno = ENOMEM;
        return -1;
    }
    for (int attempt = 0; attempt < 64; attempt++) {
        char hex[13];
        sk_random_hex12(hex);
        snprintf(name, n, "%s" SK_PARTIAL_SUFFIX "%s", base, hex);
        if (make(name, ud) == 0) {
            *out = name;
            return 0;
        }
        if (errno != EEXIST) break;
    }
    int er = errno;
    free(name);
    errno = er;
    return -1;
}

static int create_exclusive_file(const char *name, void *ud) {
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) return -1;
    *(int *)ud = fd;
    return 0;
}

/* ------------------------------------------------------------ outputs ---------- */

static sk_out_kind kind_of(mode_t m) {
    if (S_ISREG(m)) return SK_OUT_REGULAR;
    if (S_ISDIR(m)) return SK_OUT_DIR;
    if (S_ISCHR(m)) return SK_OUT_CHAR;
    if (S_ISFIFO(m)) return SK_OUT_FIFO;
    if (S_ISBLK(m)) return SK_OUT_BLOCK;
    if (S_ISSOCK(m)) return SK_OUT_SOCKET;
    return SK_OUT_OTHER;
}

/* The contents of the symbolic link at path, malloc'ed and NUL-terminated (NULL with errno;
 * the size is not taken from lstat: /proc's links report 0). */
static char *read_link(const char *path) {
    for (size_t cap = 256;; cap *= 2) {
        char *b = malloc(cap);
        if (!b) {
            errno = ENOMEM;
            return NULL;
        }
        ssize_t n = readlink(path, b, cap);
        if (n < 0) {
            int er = errno;
            free(b);
            errno = er;
            return NULL;
        }
        if ((size_t)n < cap) {
            b[n] = '\0';
            return b;
        }
        free(b);
        if (cap >= ((size_t)1 << 20)) {
            errno = ENAMETOOLONG;
            return NULL;
        }
    }
}

/* Where the link named link_path, holding `to`, leads: `to` itself when absolute (or when
 * the link is in the current directory), else `to` in the link's directory. */
static char *link_next(const char *link_path, const char *to) {
    const char *slash = strrchr(link_path, '/');
    if (to[0] == '/' || !slash) return sk_strdup(to);
    size_t dl = (size_t)(slash - link_path) + 1, tl = strlen(to), n;
    if (sk_add_size(dl, tl, &n) || sk_add_size(n, 1, &n)) return NULL;
    char *r = malloc(n);
    if (!r) return NULL;
    memcpy(r, link_path, dl);
    memcpy(r + dl, to, tl + 1);
    return r;
}

int sk_output_resolve(const char *path, char **target, sk_out_kind *kind, sk_err *e) {
    *target = NULL;
    *kind = SK_OUT_ABSENT;
    if (!path || !path[0]) return sk_fail(e, SKYCMD_E_INVALID_ARGUMENT, "no output path");
    struct stat st;
    if (stat(path, &st) == 0) {
        const sk_out_kind k = kind_of(st.st_mode);
        if (k != SK_OUT_REGULAR && k != SK_OUT_DIR) {
            /* a device, a FIFO or a socket is opened (or refused) by the name given: opening
             * follows the links, /proc/self/fd/N's too, whose text is no path */
            *target = sk_strdup(path);
            if (!*target) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
            *kind = k;
            return SKYCMD_OK;
        }
    } else if (errno != ENOENT) {
        return sk_fail_errno(e, SKYCMD_E_IO, errno, "%s: %s", path, strerror(errno));
    }
    /* a regular file, a directory or nothing (an absent path or a dangling link): the
     * directory entry to rename over is where the last component's links end */
    char *cur = sk_strdup(path);
    for (int hops = 0;; hops++) {
        if (!cur) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
        struct stat ls;
        if (lstat(cur, &ls) != 0) {
            const int er = errno;
            if (er == ENOENT) {
                *target = cur;
                return SKYCMD_OK;
            }
            free(cur);
            return sk_fail_errno(e, SKYCMD_E_IO, er, "%s: %s", path, strerror(er));
        }
        if (!S_ISLNK(ls.st_mode)) {
            *target = cur;
            *kind = kind_of(ls.st_mode);
            return SKYCMD_OK;
        }
        if (hops == 40) {
            free(cur);
            return sk_fail_errno(e, SKYCMD_E_IO, ELOOP, "%s: %s", path, strerror(ELOOP));
        }
        char *to = read_link(cur);
        if (!to) {
            const int er = errno;
            free(cur);
            if (er == ENOMEM) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
            return sk_fail_errno(e, SKYCMD_E_IO, er, "%s: cannot read the link: %s", path, strerror(er));
        }
        char *next = link_next(cur, to);
        free(to);
        free(cur);
        cur = next;
    }
}

const char *sk_output_refusal(sk_out_kind kind) {
    switch (kind) {
    case SK_OUT_ABSENT:
    case SK_OUT_REGULAR:
    case SK_OUT_CHAR:
    case SK_OUT_FIFO:
        return NULL;
    case SK_OUT_DIR:
        return "is a directory";
    case SK_OUT_BLOCK:
        return "is a block device: refusing to write over it (a model is not a disk image; "
               "write a file and copy it there if that is meant)";
    case SK_OUT_SOCKET:
        return "is a socket: it cannot be written as a file";
    case SK_OUT_OTHER:
        break;
    }
    return "is not a regular file, a character device or a FIFO";
}

const char *sk_output_kind_name(sk_out_kind kind) {
    switch (kind) {
    case SK_OUT_ABSENT: return "nothing";
    case SK_OUT_REGULAR: return "a regular file";
    case SK_OUT_DIR: return "a directory";
    case SK_OUT_CHAR: return "a character device";
    case SK_OUT_FIFO: return "a FIFO";
    case SK_OUT_BLOCK: return "a block device";
    case SK_OUT_SOCKET: return "a socket";
    case SK_OUT_OTHER: break;
    }
    return "a special file";
}

/* Open a character device or a FIFO for writing into *fd; 0, or an errno value. A FIFO
 * waits for its reader, as `cat > fifo` does, but not in a blocking open(): that one is
 * restarted after a signal whose handler has SA_RESTART (the CLI's SIGINT/SIGTERM/SIGHUP),
 * so the process could not be stopped. The wait is a non-blocking open every 10 ms, and a
 * signal that lands in the sleep (nanosleep is never restarted) ends it with EINTR. */
static int open_stream(const char *path, int is_fifo, int *fd) {
    for (;;) {
        *fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
        if (*fd >= 0) break;
        if (!is_fifo || errno != ENXIO) return errno; /* ENXIO: no reader yet */
        const struct timespec ten_ms = {0, 10 * 1000 * 1000};
        if (nanosleep(&ten_ms, NULL) != 0 && errno == EINTR) return EINTR;
    }
    const int fl = fcntl(*fd, F_GETFL);
    if (fl == -1 || fcntl(*fd, F_SETFL, fl & ~O_NONBLOCK) == -1) {
        const int er = errno;
        close(*fd);
        *fd = -1;
        return er;
    }
    return 0;
}

static void atomic_clear(sk_atomic_file *f) {
    free(f->final_path);
    free(f->tmp_path);
    free(f->shown);
    memset(f, 0, sizeof *f);
}

int sk_atomic_open(sk_atomic_file *f, const char *path, sk_err *e) {
    memset(f, 0, sizeof *f);
    sk_out_kind kind;
    int st = sk_output_resolve(path, &f->final_path, &kind, e);
    if (st) return st;
    const char *refused = sk_output_refusal(kind);
    if (refused) {
        atomic_clear(f);
        return sk_fail(e, SKYCMD_E_IO, "%s: %s", path, refused);
    }
    f->shown = sk_strdup(path);
    if (!f->shown) {
        atomic_clear(f);
        return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    }
    int fd = -1;
    if (kind == SK_OUT_CHAR || kind == SK_OUT_FIFO) {
        /* written in place */
        f->stream = 1;
        int rc = open_stream(f->final_path, kind == SK_OUT_FIFO, &fd);
        if (rc != 0) {
            atomic_clear(f);
            if (rc == EINTR)
                return sk_fail(e, SKYCMD_E_CANCELLED,
                               "%s: interrupted while waiting for a reader", path);
            return sk_fail_errno(e, SKYCMD_E_IO, rc, "%s: cannot open: %s", path, strerror(rc));
        }
        struct stat sb;
        if (fstat(fd, &sb) != 0 || kind_of(sb.st_mode) != kind) {
            /* replaced between the look and the open: write nothing rather than guess */
            close(fd);
            atomic_clear(f);
            return sk_fail(e, SKYCMD_E_IO, "%s: changed while it was being opened", path);
        }
        if (isatty(fd)) {
            /* the CLI's rule for `-` on a terminal, for a terminal named as the output */
            close(fd);
            atomic_clear(f);
            return sk_fail(e, SKYCMD_E_IO, "%s: is a terminal: refusing to write a binary "
                           "file to it", path);
        }
    } else {
        struct stat old;
        const int keep_mode = kind == SK_OUT_REGULAR && stat(f->final_path, &old) == 0;
        if (sk_partial_create(f->final_path, create_exclusive_file, &fd, &f->tmp_path) != 0) {
            int er = errno;
            atomic_clear(f);
            if (er == ENOMEM) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
            return sk_fail_errno(e, SKYCMD_E_IO, er, "%s: cannot create: %s", path, strerror(er));
        }
        /* the replaced file's permission bits carry over, as they do when cp overwrites; a
         * failure keeps the new file's default ones */
        if (keep_mode && sk_platform_fchmod(fd, old.st_mode & 0777) != 0) errno = 0;
    }
    FILE *fp = fdopen(fd, "wb");
    if (!fp) {
        int er = errno;
        close(fd);
        if (f->tmp_path) remove(f->tmp_path);
        atomic_clear(f);
        return sk_fail_errno(e, SKYCMD_E_IO, er, "%s: cannot create: %s", path, strerror(er));
    }
    f->fp = fp;
    return SKYCMD_OK;
}

int sk_atomic_write(sk_atomic_file *f, const void *data, size_t n, sk_err *e) {
    if (!f->fp) return sk_fail(e, SKYCMD_E_MISUSE, "write to a closed file");
    if (n && fwrite(data, 1, n, (FILE *)f->fp) != n)
        return sk_fail_errno(e, SKYCMD_E_IO, errno, "%s: write failed: %s", f->shown, strerror(errno));
    return SKYCMD_OK;
}

int sk_atomic_close(sk_atomic_file *f, int status, sk_err *e) {
    if (f->fp) {
        FILE *fp = f->fp;
        if (status == 0) {
            /* a device or a FIFO has nothing to sync (fsync fails there with EINVAL) */
            if (fflush(fp) != 0 || (!f->stream && fsync(fileno(fp)) != 0))
                status = sk_fail_errno(e, SKYCMD_E_IO, errno, "%s: write failed: %s", f->shown,
                                 strerror(errno));
        }
        if (fclose(fp) != 0 && status == 0)
            status = sk_fail_errno(e, SKYCMD_E_IO, errno, "%s: close failed: %s", f->shown, strerror(errno));
        if (!f->stream) {
            if (status == 0 && rename(f->tmp_path, f->final_path) != 0)
                status = sk_fail_errno(e, SKYCMD_E_IO, errno, "%s: rename failed: %s", f->shown,
                                 strerror(errno));
            if (status != 0) remove(f->tmp_path);
        }
    }
    atomic_clear(f);
    return status;
}

size_t sk_json_plain_len(const char *s, size_t n) {
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, s + i, 8);
        /* a byte below 0x20, or one equal to '"' or '\\' (the usual SWAR tests: exact) */
        uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');
        if ((((v - ones * 0x20) & ~v) | ((q - ones) & ~q) | ((b - ones) & ~b)) & highs) break;
    }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\' || c < 0x20) break;
    }
    return i;
}

int sk_utf8_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        if (c < 0x80) {
            /* ASCII eight bytes at a time (states are mostly ASCII and can be megabytes) */
            uint64_t v;
            while (i + 8 <= n && (memcpy(&v, p + i, 8), (v & 0x8080808080808080ull) == 0)) i += 8;
            if (i < n && p[i] < 0x80) i++;
            continue;
        }
        size_t len;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
        else return 0;
        if (n - i < len) return 0;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += len;
    }
    return 1;
}

