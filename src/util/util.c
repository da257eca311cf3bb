/* util.c - implementation of the shared internal helpers declared in util.h. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* madvise(MADV_PAGEOUT) */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int sk_fail(sk_err *e, int status, const char *fmt, ...) {
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        e->status = status;
    }
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

void sk_err_clear(sk_err *e) {
    if (!e) return;
    e->status = 0;
    e->msg[0] = '\0';
}

void *sk_malloc_array(size_t n, size_t size) {
    size_t total;
    if (sk_mul_size(n, size, &total)) return NULL;
    return malloc(total ? total : 1);
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
    if (fd < 0) return sk_fail(e, SKYCMD_E_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int er = errno;
        close(fd);
        return sk_fail(e, SKYCMD_E_IO, "%s: cannot stat: %s", path, strerror(er));
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
    void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int er = errno;
    close(fd);
    if (p == MAP_FAILED) return sk_fail(e, SKYCMD_E_IO, "%s: cannot map: %s", path, strerror(er));
    m->data = p;
    m->size = size;
    m->base_ = p;
    m->mapped_ = size;
    return SKYCMD_OK;
}

void sk_unmap(sk_map *m) {
    if (m->base_) munmap(m->base_, m->mapped_);
    memset(m, 0, sizeof *m);
}

int sk_read_file(const char *path, char **out, size_t *len, size_t max_len, sk_err *e) {
    *out = NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp) return sk_fail(e, SKYCMD_E_IO, "%s: cannot open: %s", path, strerror(errno));
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
    int bad = ferror(fp);
    fclose(fp);
    if (bad) {
        sk_buf_free(&b);
        return sk_fail(e, SKYCMD_E_IO, "%s: read error", path);
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
                     ((uint64_t)getpid() << 40) ^ (uint64_t)(counter++) * 0x9E3779B97F4A7C15u;
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

int sk_atomic_open(sk_atomic_file *f, const char *path, sk_err *e) {
    memset(f, 0, sizeof *f);
    int fd = -1;
    f->final_path = sk_strdup(path);
    if (!f->final_path) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
    if (sk_partial_create(path, create_exclusive_file, &fd, &f->tmp_path) != 0) {
        int er = errno;
        free(f->final_path);
        memset(f, 0, sizeof *f);
        if (er == ENOMEM) return sk_fail(e, SKYCMD_E_NOMEM, "out of memory");
        return sk_fail(e, SKYCMD_E_IO, "%s: cannot create: %s", path, strerror(er));
    }
    FILE *fp = fdopen(fd, "wb");
    if (!fp) {
        int er = errno;
        close(fd);
        remove(f->tmp_path);
        free(f->final_path);
        free(f->tmp_path);
        memset(f, 0, sizeof *f);
        return sk_fail(e, SKYCMD_E_IO, "%s: cannot create: %s", path, strerror(er));
    }
    f->fp = fp;
    return SKYCMD_OK;
}

int sk_atomic_write(sk_atomic_file *f, const void *data, size_t n, sk_err *e) {
    if (!f->fp) return sk_fail(e, SKYCMD_E_MISUSE, "write to a closed file");
    if (n && fwrite(data, 1, n, (FILE *)f->fp) != n)
        return sk_fail(e, SKYCMD_E_IO, "%s: write failed: %s", f->final_path, strerror(errno));
    return SKYCMD_OK;
}

int sk_atomic_close(sk_atomic_file *f, int status, sk_err *e) {
    if (f->fp) {
        FILE *fp = f->fp;
        if (status == 0) {
            if (fflush(fp) != 0 || fsync(fileno(fp)) != 0)
                status = sk_fail(e, SKYCMD_E_IO, "%s: write failed: %s", f->final_path,
                                 strerror(errno));
        }
        if (fclose(fp) != 0 && status == 0)
            status = sk_fail(e, SKYCMD_E_IO, "%s: close failed: %s", f->final_path,
                             strerror(errno));
        if (status == 0 && rename(f->tmp_path, f->final_path) != 0)
            status = sk_fail(e, SKYCMD_E_IO, "%s: rename failed: %s", f->final_path,
                             strerror(errno));
        if (status != 0) remove(f->tmp_path);
    }
    free(f->final_path);
    free(f->tmp_path);
    memset(f, 0, sizeof *f);
    return status;
}

int sk_utf8_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        if (c < 0x80) { i++; continue; }
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

void sk_release_pages(const void *p, size_t n) {
#if defined(__linux__) && defined(MADV_DONTNEED)
    long ps = sysconf(_SC_PAGESIZE);
    if (ps <= 0 || !p || n == 0) return;
    uintptr_t page = (uintptr_t)ps;
    uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1);
    uintptr_t b = ((uintptr_t)p + n) & ~(page - 1);
    /* The file is mapped read-only and private and never written, so its pages are never
     * copied: MADV_DONTNEED only drops them from this process (a later read maps the same
     * page-cache page again) and leaves the page cache alone, where MADV_PAGEOUT would
     * evict the file and make the next process that opens it read it from disk. */
    if (b > a) (void)madvise((void *)a, b - a, MADV_DONTNEED);
#else
    (void)p;
    (void)n;
#endif
}
