/* platform.c - the library's portability layer; the contract is in platform.h. The one file
 * of the library that asks which system it is built for. */
#define _GNU_SOURCE /* glibc: sched_getcpu, sched_getaffinity, pthread_setaffinity_np, strtod_l */
#include "platform.h"

#include <locale.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <xlocale.h> /* strtod_l */
#endif
/* dladdr: glibc (with _GNU_SOURCE; in libc since 2.34, libdl before), musl, macOS, the BSDs. */
#if defined(__linux__) || defined(__APPLE__) || defined(__FreeBSD__) || defined(__NetBSD__) || \
    defined(__OpenBSD__)
#define SK_HAVE_DLADDR 1
#include <dlfcn.h>
#else
#define SK_HAVE_DLADDR 0
#endif
#if defined(__GLIBC__)
#include <malloc.h> /* malloc_trim */
#endif
#if defined(__linux__)
#include <signal.h>   /* SIGURG, a read lease's break signal (WASI has no signal.h) */
#include <sys/auxv.h> /* getauxval(AT_PHDR): where the main program is mapped */
#endif
/* mmap: every POSIX system; WASI has none (wasi-libc only emulates it, on request). */
#if defined(__wasi__)
#define SK_HAVE_MMAP 0
#else
#define SK_HAVE_MMAP 1
#include <sys/mman.h>
#ifndef MAP_ANONYMOUS
#define MAP_ANONYMOUS MAP_ANON
#endif
#endif

/* The affinity calls exist on glibc (and musl) Linux: CPU_COUNT comes with them. */
#if defined(__linux__) && defined(CPU_COUNT)
#define SK_HAVE_AFFINITY 1
#else
#define SK_HAVE_AFFINITY 0
#endif

int sk_platform_affinity_get(sk_cpuset *out) {
    sk_cpuset_clear(out);
#if SK_HAVE_AFFINITY
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    for (int c = 0; c < CPU_SETSIZE && c < SK_CPUSET_MAX; c++)
        if (CPU_ISSET(c, &set)) sk_cpuset_add(out, c);
#endif
    return sk_cpuset_count(out);
}

#if SKYCMD_THREADS
int sk_platform_affinity_set(pthread_t thread, const sk_cpuset *s) {
#if SK_HAVE_AFFINITY
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c = 0; c < CPU_SETSIZE && c < SK_CPUSET_MAX; c++)
        if (sk_cpuset_has(s, c)) CPU_SET(c, &set);
    return pthread_setaffinity_np(thread, sizeof set, &set) == 0 ? 0 : -1;
#else
    (void)thread;
    (void)s;
    return -1;
#endif
}
#endif

void sk_platform_once(sk_once *once, void (*fn)(void)) {
#if SKYCMD_THREADS
    (void)pthread_once(once, fn);
#else
    if (!*once) {
        *once = 1;
        fn();
    }
#endif
}

int sk_platform_mutex_init(sk_mutex *mu) {
#if SKYCMD_THREADS
    return pthread_mutex_init(mu, NULL) ? -1 : 0;
#else
    *mu = 0;
    return 0;
#endif
}

void sk_platform_mutex_lock(sk_mutex *mu) {
#if SKYCMD_THREADS
    (void)pthread_mutex_lock(mu);
#else
    (void)mu;
#endif
}

void sk_platform_mutex_unlock(sk_mutex *mu) {
#if SKYCMD_THREADS
    (void)pthread_mutex_unlock(mu);
#else
    (void)mu;
#endif
}

void sk_platform_mutex_destroy(sk_mutex *mu) {
#if SKYCMD_THREADS
    (void)pthread_mutex_destroy(mu);
#else
    (void)mu;
#endif
}

int sk_platform_cpu_count(void) {
    sk_cpuset s;
    long n = sk_platform_affinity_get(&s);
    if (n < 1) n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > SK_CPUSET_MAX ? SK_CPUSET_MAX : (int)n;
}

int sk_platform_current_cpu(void) {
#if defined(__linux__)
    const int c = sched_getcpu();
    return c >= 0 && c < SK_CPUSET_MAX ? c : -1;
#else
    return -1;
#endif
}

static locale_t g_c_locale;
static sk_once g_c_locale_once = SK_ONCE_INIT;
static void init_c_locale(void) { g_c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0); }

double sk_platform_strtod_c(const char *s, char **end) {
    sk_platform_once(&g_c_locale_once, init_c_locale);
    if (g_c_locale) return strtod_l(s, end, g_c_locale);
    return strtod(s, end);
}

static int file_id(const struct stat *st, uint64_t id[7]) {
    if (!S_ISREG(st->st_mode)) {
        errno = EINVAL;
        return -1;
    }
#if defined(__APPLE__)
    const struct timespec m = st->st_mtimespec, c = st->st_ctimespec;
#else
    const struct timespec m = st->st_mtim, c = st->st_ctim;
#endif
    id[0] = (uint64_t)st->st_dev;
    id[1] = (uint64_t)st->st_ino;
    id[2] = (uint64_t)st->st_size;
    id[3] = (uint64_t)m.tv_sec;
    id[4] = (uint64_t)m.tv_nsec;
    id[5] = (uint64_t)c.tv_sec;
    id[6] = (uint64_t)c.tv_nsec;
    return 0;
}

int sk_platform_file_id(int fd, uint64_t id[7]) {
    struct stat st;
    return fstat(fd, &st) != 0 ? -1 : file_id(&st, id);
}

int sk_platform_path_id(const char *path, uint64_t id[7]) {
    struct stat st;
    return stat(path, &st) != 0 ? -1 : file_id(&st, id);
}

#if SK_HAVE_DLADDR
/* An object of the library: dladdr on its address names the file it was loaded from (a data
 * address, as ISO C has no conversion of a function pointer to void *). */
static const char g_library_anchor = 0;

/* The file (shared object or program) that holds this library's code, as dladdr names it;
 * NULL when dladdr cannot say. The main program comes as /proc/self/exe on Linux. */
static const char *library_file(void) {
    Dl_info info;
    if (!dladdr((const void *)&g_library_anchor, &info) || !info.dli_fname || !info.dli_fname[0])
        return NULL;
#if defined(__linux__)
    /* glibc names the main program by argv[0] (maybe relative, maybe a bare name found in
     * $PATH): recognise it by its program headers, which the kernel mapped. */
    Dl_info main_info;
    const void *phdr = (const void *)(uintptr_t)getauxval(AT_PHDR);
    if (info.dli_fname[0] != '/' && phdr && dladdr(phdr, &main_info) &&
        main_info.dli_fbase == info.dli_fbase)
        return "/proc/self/exe";
#endif
    return info.dli_fname;
}
#endif

long sk_platform_library_path(char *buf, size_t n) {
    if (!buf || n == 0) return -1;
    buf[0] = '\0';
#if SK_HAVE_DLADDR
    const char *file = library_file();
    if (!file) return -1;
    char *real = realpath(file, NULL);
    if (!real) return -1;
    const size_t len = strlen(real);
    if (len + 1 > n || real[0] != '/') {
        free(real);
        return -1;
    }
    memcpy(buf, real, len + 1);
    free(real);
    return (long)len;
#else
    return -1;
#endif
}

size_t sk_platform_page_size(void) {
    const long ps = sysconf(_SC_PAGESIZE);
    return ps > 0 ? (size_t)ps : 4096;
}

void *sk_platform_map_read(int fd, size_t size) {
#if SK_HAVE_MMAP
    void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    return p == MAP_FAILED ? NULL : p;
#else
    uint8_t *p = malloc(size ? size : 1);
    if (!p) return NULL;
    for (size_t got = 0; got < size;) {
        const ssize_t r = pread(fd, p + got, size - got, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            const int er = r < 0 ? errno : EIO;  /* a file shorter than size */
            free(p);
            errno = er;
            return NULL;
        }
        got += (size_t)r;
    }
    return p;
#endif
}

void *sk_platform_pages_alloc(size_t size) {
#if SK_HAVE_MMAP
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
#else
    const size_t page = sk_platform_page_size();
    if (size > SIZE_MAX - page) return NULL;
    void *p = aligned_alloc(page, (size + page - 1) / page * page);
    if (p) memset(p, 0, size);
    return p;
#endif
}

void sk_platform_pages_protect(void *p, size_t size, int writable) {
#if SK_HAVE_MMAP
    (void)mprotect(p, size, writable ? PROT_READ | PROT_WRITE : PROT_READ);
#else
    (void)p;
    (void)size;
    (void)writable;
#endif
}

void sk_platform_unmap(void *p, size_t size) {
#if SK_HAVE_MMAP
    if (p) (void)munmap(p, size);
#else
    (void)size;
    free(p);
#endif
}

size_t sk_platform_pages_discard(void *p, size_t n) {
#if SK_HAVE_MMAP && (defined(MADV_DONTNEED) || defined(MADV_FREE))
    const uintptr_t page = sk_platform_page_size();
    if (!p || n == 0 || (uintptr_t)p > UINTPTR_MAX - n) return 0;
    const uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1), b = ((uintptr_t)p + n) & ~(page - 1);
    if (b <= a) return 0;
#if defined(__linux__) && defined(MADV_DONTNEED)
    /* Linux: private anonymous pages are freed at once (a later touch maps a zero page) */
    const int advice = MADV_DONTNEED;
#elif defined(MADV_FREE)
    /* elsewhere MADV_DONTNEED may keep the pages: MADV_FREE lets the kernel take them */
    const int advice = MADV_FREE;
#else
    const int advice = MADV_DONTNEED;
#endif
    return madvise((void *)a, b - a, advice) == 0 ? (size_t)(b - a) : 0;
#else
    (void)p;
    (void)n;
    return 0;
#endif
}

int64_t sk_platform_resident_bytes(const void *p, size_t n) {
#if SK_HAVE_MMAP
    const uintptr_t page = sk_platform_page_size();
    if (!p || n == 0) return 0;
    if ((uintptr_t)p > UINTPTR_MAX - n - page) return -1;
    const uintptr_t a = (uintptr_t)p & ~(page - 1), b = ((uintptr_t)p + n + page - 1) & ~(page - 1);
    const size_t pages = (size_t)((b - a) / page);
#if defined(__linux__)
    unsigned char *vec = malloc(pages);
#else
    char *vec = malloc(pages); /* macOS and the BSDs declare mincore with char * */
#endif
    if (!vec) return -1;
    int64_t resident = -1;
    if (mincore((void *)a, b - a, vec) == 0) {
        resident = 0;
        for (size_t i = 0; i < pages; i++)
            if (vec[i] & 1) resident += (int64_t)page;
    }
    free(vec);
    return resident;
#else
    (void)p;
    (void)n;
    return -1;
#endif
}

void sk_platform_map_discard(const void *p, size_t n) {
#if SK_HAVE_MMAP && defined(MADV_DONTNEED)
    const uintptr_t page = sk_platform_page_size();
    if (!p || n == 0 || (uintptr_t)p > UINTPTR_MAX - n) return;
    const uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1), b = ((uintptr_t)p + n) & ~(page - 1);
    /* (posix_madvise's POSIX_MADV_DONTNEED is a no-op in glibc) */
    if (b > a) (void)madvise((void *)a, b - a, MADV_DONTNEED);
#else
    (void)p;
    (void)n;
#endif
}

void sk_platform_pages_huge(void *p, size_t n, int prefer) {
#if defined(__linux__) && defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
    const uintptr_t page = sk_platform_page_size();
    if (!p || n == 0 || (uintptr_t)p > UINTPTR_MAX - n) return;
    const uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1), b = ((uintptr_t)p + n) & ~(page - 1);
    if (b > a) (void)madvise((void *)a, b - a, prefer ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#else
    (void)p;
    (void)n;
    (void)prefer;
#endif
}

int sk_platform_read_guard_begin(int fd) {
#if defined(__linux__) && defined(F_SETLEASE) && defined(F_SETSIG)
    /* the signal of a lease break: SIGURG, not the default SIGIO (which ends a process) */
    if (fcntl(fd, F_SETSIG, SIGURG) != 0) return 0;
    int r;
    do r = fcntl(fd, F_SETLEASE, F_RDLCK);
    while (r != 0 && errno == EINTR);
    if (r != 0) return errno == EAGAIN || errno == EBUSY ? -1 : 0;
    /* no owner: a later break signals nobody (send_sigio skips a file without one) */
    (void)fcntl(fd, F_SETOWN, 0);
    return 1;
#else
    (void)fd;
    return 0;
#endif
}

int sk_platform_read_guard_end(int fd) {
#if defined(__linux__) && defined(F_SETLEASE) && defined(F_SETSIG)
    /* a lease being broken reads as the type it is broken to: F_UNLCK */
    const int held = fcntl(fd, F_GETLEASE) == F_RDLCK;
    (void)fcntl(fd, F_SETLEASE, F_UNLCK);
    return held;
#else
    (void)fd;
    return 1;
#endif
}

void sk_platform_heap_trim(void) {
#if defined(__GLIBC__)
    (void)malloc_trim(0);
#endif
}

long sk_platform_pid(void) {
#if defined(__wasi__)
    return 0;
#else
    return (long)getpid();
#endif
}

int sk_platform_fchmod(int fd, unsigned mode) {
#if defined(__wasi__)
    (void)fd;
    (void)mode;
    errno = ENOSYS;
    return -1;
#else
    return fchmod(fd, (mode_t)mode);
#endif
}
