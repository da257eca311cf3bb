/*
 * test_platform.c - the portability layers behave as their contracts say, on whatever
 * system the tests run: the library's (src/util/platform.h) and the programs'
 * (src/serve/serve_platform.h, linked into this test by tests/CMakeLists.txt).
 *  - CPU count in [1, 1024], and on Linux equal to the affinity mask's size;
 *  - the current CPU within [0, count of online CPUs) or -1 (the documented "unknown"), and
 *    inside the thread's affinity set where the system has one;
 *  - affinity: a thread pinned to its current CPU runs there and can be freed again; where
 *    unsupported, the calls say so and change nothing;
 *  - idle time sampling non-decreasing, and growing at most by (CPUs x wall time);
 *  - the executable's path is absolute and names this test program; a buffer too small is
 *    refused with "";
 *  - sk_platform_once calls its function once among racing threads; a file view holds the
 *    file's bytes, pages come zeroed, aligned and writable (again after read-only), fchmod
 *    sets the bits, the pid is getpid's;
 *  - a read guard (Linux: a read lease): on for the file's owner; a writer's open during it is
 *    noted (a non-blocking open refused, a blocking one waiting for the guard's end), a
 *    file open for writing refuses one, the break's signal kills nothing; elsewhere the
 *    documented "cannot guard";
 *  - strtod in the C locale; sigtimedwait-like wait times out and takes a pending signal;
 *    peak RSS positive, the resident set now following 48 MiB mapped and unmapped; idle
 *    priority either granted or refused with an errno value.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "serve/serve_platform.h"
#include "util/platform.h"

static double wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

Test(platform, cpu_count) {
    const int n = sk_platform_cpu_count();
    cr_assert(n >= 1 && n <= SK_CPUSET_MAX, "cpu count %d", n);
    cr_assert_eq(sp_cpu_count(), n, "the library and the programs count alike");
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online >= 1) cr_assert(n <= online, "%d allowed CPUs, %ld online", n, online);
    sk_cpuset s;
    const int k = sk_platform_affinity_get(&s);
    cr_assert_eq(k, sk_cpuset_count(&s));
#if defined(__linux__)
    cr_assert(k >= 1, "Linux has thread affinity");
    cr_assert_eq(n, k, "the count is the affinity mask's");
#else
    cr_assert(k == 0 || k == n);
#endif
}

Test(platform, current_cpu_in_range) {
    const long online = sysconf(_SC_NPROCESSORS_CONF);
    sk_cpuset s;
    const int k = sk_platform_affinity_get(&s);
    for (int i = 0; i < 100; i++) {
        const int c = sk_platform_current_cpu(), p = sp_current_cpu();
        cr_assert(c == -1 || (c >= 0 && c < SK_CPUSET_MAX), "current cpu %d", c);
        cr_assert(p >= -1, "programs' current cpu %d", p);
        if (c >= 0 && online >= 1) cr_assert(c < online, "cpu %d of %ld", c, online);
        if (c >= 0 && k > 0) cr_assert(sk_cpuset_has(&s, c), "cpu %d outside the affinity set", c);
    }
#if defined(__linux__)
    cr_assert(sk_platform_current_cpu() >= 0, "Linux says which CPU");
#endif
}

Test(platform, cpuset_helpers) {
    sk_cpuset s;
    sk_cpuset_clear(&s);
    cr_assert_eq(sk_cpuset_count(&s), 0);
    sk_cpuset_add(&s, 0);
    sk_cpuset_add(&s, 63);
    sk_cpuset_add(&s, 64);
    sk_cpuset_add(&s, SK_CPUSET_MAX - 1);
    sk_cpuset_add(&s, SK_CPUSET_MAX);  /* out of range: ignored */
    sk_cpuset_add(&s, -1);
    cr_assert_eq(sk_cpuset_count(&s), 4);
    cr_assert(sk_cpuset_has(&s, 63) && sk_cpuset_has(&s, 64) && !sk_cpuset_has(&s, 65));
    cr_assert(!sk_cpuset_has(&s, -1) && !sk_cpuset_has(&s, SK_CPUSET_MAX));
    sk_cpuset_del(&s, 63);
    cr_assert(!sk_cpuset_has(&s, 63));
    cr_assert_eq(sk_cpuset_count(&s), 3);
}

Test(platform, affinity_pin_and_restore) {
    sk_cpuset all;
    const int k = sk_platform_affinity_get(&all);
    const int cpu = sk_platform_current_cpu();
    if (k == 0 || cpu < 0) {  /* unsupported: the setters say so */
        sk_cpuset one;
        sk_cpuset_clear(&one);
        sk_cpuset_add(&one, 0);
        cr_assert_eq(sk_platform_affinity_set(pthread_self(), &one), -1);
        cr_assert_eq(sp_pin_thread(0), -1);
        return;
    }
    sk_cpuset one;
    sk_cpuset_clear(&one);
    sk_cpuset_add(&one, cpu);
    cr_assert_eq(sk_platform_affinity_set(pthread_self(), &one), 0);
    sk_cpuset now;
    cr_assert_eq(sk_platform_affinity_get(&now), 1);
    cr_assert(sk_cpuset_has(&now, cpu));
    for (int i = 0; i < 20; i++) cr_assert_eq(sk_platform_current_cpu(), cpu);
    cr_assert_eq(sk_platform_affinity_set(pthread_self(), &all), 0);
    cr_assert_eq(sk_platform_affinity_get(&now), k);
    /* the programs' layer: pin to one CPU, refuse one out of range */
    cr_assert_eq(sp_pin_thread(cpu), 0);
    cr_assert_eq(sp_current_cpu(), cpu);
    cr_assert_eq(sp_pin_thread(-1), -1);
    cr_assert_eq(sp_pin_thread(1 << 20), -1);
    cr_assert_eq(sk_platform_affinity_set(pthread_self(), &all), 0);
}

Test(platform, idle_time_monotonic) {
    double prev = sp_idle_seconds();
#if defined(__linux__) || defined(__APPLE__)
    cr_assert(prev >= 0, "idle time known here: %f", prev);
#endif
    if (prev < 0) return;
    const double start = prev, t0 = wall_s();
    const int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 0; i < 50; i++) {
        struct timespec ms = {0, 2 * 1000000L};
        nanosleep(&ms, NULL);
        const double v = sp_idle_seconds();
        cr_assert(v >= prev, "idle time went back: %f after %f", v, prev);
        prev = v;
    }
    const double dt = wall_s() - t0;
    /* over the whole run: no more idle time than all CPUs idling all along (a tick of slack) */
    cr_assert(prev - start <= (cpus > 0 ? cpus : 1) * (dt + 0.02), "%f s idle in %f s", prev - start, dt);
}

Test(platform, exe_path) {
    char buf[4096];
    const long n = sp_exe_path(buf, sizeof buf);
#if defined(__linux__) || defined(__APPLE__)
    cr_assert(n > 0, "the executable's path is known here");
#endif
    if (n <= 0) {
        cr_assert_str_empty(buf);
        return;
    }
    cr_assert_eq((size_t)n, strlen(buf));
    cr_assert_eq(buf[0], '/', "absolute: %s", buf);
    struct stat sb;
    cr_assert_eq(stat(buf, &sb), 0, "%s exists", buf);
    cr_assert(S_ISREG(sb.st_mode) && (sb.st_mode & S_IXUSR), "%s is an executable file", buf);
    const char *base = strrchr(buf, '/') + 1;
    cr_assert_str_eq(base, "test_platform");
    char small[4];
    cr_assert_eq(sp_exe_path(small, sizeof small), -1);
    cr_assert_str_empty(small);
}

Test(platform, strtod_c_locale) {
    char *end = NULL;
    cr_assert_eq(sk_platform_strtod_c("1.5e3x", &end), 1500.0);
    cr_assert_eq(*end, 'x');
    cr_assert_eq(sk_platform_strtod_c("-0.25", NULL), -0.25);
}

static int g_once_calls;
static void once_fn(void) { g_once_calls++; }
static void *once_thread(void *o) {
    sk_platform_once(o, once_fn);
    return NULL;
}

Test(platform, once_runs_exactly_once) {
    static sk_once once = SK_ONCE_INIT;
    pthread_t t[4];
    for (int i = 0; i < 4; i++) cr_assert_eq(pthread_create(&t[i], NULL, once_thread, &once), 0);
    sk_platform_once(&once, once_fn);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    sk_platform_once(&once, once_fn);
    cr_assert_eq(g_once_calls, 1);
}

/* The file-memory helpers that replace mmap where there is none (WASI): a view of a file
 * holds its bytes; pages come zeroed, page-aligned, writable, and writable again after a
 * read-only spell; fchmod sets permission bits; the process id is this process's. */
Test(platform, file_memory_and_process) {
    char path[] = "/tmp/skycmd-platform-XXXXXX";
    const int fd = mkstemp(path);
    cr_assert(fd >= 0);
    unsigned char data[5000];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (unsigned char)(i * 7 + 3);
    cr_assert_eq(write(fd, data, sizeof data), (ssize_t)sizeof data);
    const unsigned char *view = sk_platform_map_read(fd, sizeof data);
    cr_assert(view != NULL);
    cr_assert_eq(memcmp(view, data, sizeof data), 0);
    sk_platform_unmap((void *)view, sizeof data);

    cr_assert_eq(sk_platform_fchmod(fd, 0640), 0);
    struct stat sb;
    cr_assert_eq(fstat(fd, &sb), 0);
    cr_assert_eq(sb.st_mode & 0777, 0640);
    close(fd);
    unlink(path);

    const size_t page = sk_platform_page_size();
    cr_assert(page >= 4096 && (page & (page - 1)) == 0, "page size %zu", page);
    const size_t n = 3 * page + 5;
    unsigned char *p = sk_platform_pages_alloc(n);
    cr_assert(p != NULL);
    cr_assert_eq((uintptr_t)p % page, 0);
    for (size_t i = 0; i < n; i++) cr_assert_eq(p[i], 0, "byte %zu not zero", i);
    memset(p, 0xab, n);
    sk_platform_pages_protect(p, n, 0);
    cr_assert_eq(p[n - 1], 0xab, "readable while read-only");
    sk_platform_pages_protect(p, n, 1);
    p[0] = 1;
    cr_assert_eq(p[0], 1);
    sk_platform_unmap(p, n);

    cr_assert_eq(sk_platform_pid(), (long)getpid());
}

static int leases_enabled(void) {
    FILE *f = fopen("/proc/sys/fs/leases-enable", "r");
    int on = 1;
    if (f) {
        if (fscanf(f, "%d", &on) != 1) on = 1;
        fclose(f);
    }
    return on;
}

Test(platform, read_guard) {
    char path[] = "/tmp/skycmd-guard-XXXXXX";
    const int wfd = mkstemp(path);
    cr_assert(wfd >= 0);
    cr_assert_eq(write(wfd, "GGUF", 4), 4);
    close(wfd);
    const int fd = open(path, O_RDONLY);
    cr_assert(fd >= 0);
#if defined(__linux__)
    if (!leases_enabled()) {
        unlink(path);
        cr_skip_test("fs.leases-enable is 0 on this system: no read guard to test");
    }
    /* no writer in between: the guard holds */
    cr_assert_eq(sk_platform_read_guard_begin(fd), 1, "the owner of a file on /tmp gets a lease");
    cr_assert_eq(sk_platform_read_guard_end(fd), 1);
    /* a file open for writing (here, by this very process) is refused a guard */
    int w = open(path, O_WRONLY);
    cr_assert(w >= 0);
    cr_assert_eq(sk_platform_read_guard_begin(fd), -1);
    close(w);
    /* a non-blocking writer is turned away and the guard knows it was broken */
    cr_assert_eq(sk_platform_read_guard_begin(fd), 1);
    w = open(path, O_WRONLY | O_NONBLOCK);
    cr_assert(w < 0 && errno == EWOULDBLOCK, "open for writing under a guard: %d (%s)", w,
              strerror(errno));
    cr_assert_eq(sk_platform_read_guard_end(fd), 0);
    /* a blocking writer (another process: cp over the file) waits for the guard's end */
    cr_assert_eq(sk_platform_read_guard_begin(fd), 1);
    const pid_t child = fork();
    cr_assert(child >= 0);
    if (child == 0) {
        const int cw = open(path, O_WRONLY | O_TRUNC);
        _exit(cw >= 0 && write(cw, "gguf", 4) == 4 ? 0 : 3);
    }
    const struct timespec pause = {0, 300 * 1000 * 1000};
    nanosleep(&pause, NULL);
    int status = 0;
    cr_assert_eq(waitpid(child, &status, WNOHANG), 0, "the writer did not wait for the guard");
    char head[4];
    cr_assert_eq(pread(fd, head, 4, 0), 4);
    cr_assert_eq(memcmp(head, "GGUF", 4), 0, "the file changed under the guard");
    cr_assert_eq(sk_platform_read_guard_end(fd), 0, "the writer's open broke the guard");
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the writer, once let through");
    cr_assert_eq(pread(fd, head, 4, 0), 4);
    cr_assert_eq(memcmp(head, "gguf", 4), 0);
#else
    cr_assert_eq(sk_platform_read_guard_begin(fd), 0, "no read guard on this system");
    cr_assert_eq(sk_platform_read_guard_end(fd), 1);
#endif
    close(fd);
    unlink(path);
}

Test(platform, sigtimedwait) {
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    cr_assert_eq(pthread_sigmask(SIG_BLOCK, &set, &old), 0);
    struct timespec tick = {0, 20 * 1000000L};
    const double t0 = wall_s();
    cr_assert_eq(sp_sigtimedwait(&set, &tick), 0, "nothing pending: a timeout");
    cr_assert(wall_s() - t0 >= 0.015, "waited the timeout");
    cr_assert_eq(pthread_kill(pthread_self(), SIGUSR1), 0);
    cr_assert_eq(sp_sigtimedwait(&set, &tick), SIGUSR1, "a pending signal is taken");
    cr_assert_eq(sp_sigtimedwait(&set, &tick), 0, "and only once");
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void *idle_thread(void *arg) {
    (void)arg;
    return (void *)(intptr_t)sp_idle_priority();
}

Test(platform, rss_priority_cache_tcp) {
    const long kb = sp_peak_rss_kb();
    cr_assert(kb > 100 && kb < 64L * 1024 * 1024, "peak RSS %ld KiB", kb);
    /* the resident set now: 48 MiB touched are in it, and unmapped are not (mmap, not
     * malloc: a sanitizer's allocator keeps freed blocks) */
    const size_t big = (size_t)48 << 20;
    const long r0 = sp_rss_kb();
    char *p = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(p != MAP_FAILED && r0 > 100, "RSS %ld KiB", r0);
    memset(p, 1, big);
    const long r1 = sp_rss_kb();
    cr_assert(r1 - r0 >= 46L * 1024 && r1 - r0 <= 56L * 1024, "RSS %ld -> %ld KiB after 48 MiB", r0, r1);
    cr_assert_leq(r1, sp_peak_rss_kb(), "the peak is at least the resident set now");
    cr_assert_eq(munmap(p, big), 0);
    const long r2 = sp_rss_kb();
    cr_assert(r1 - r2 >= 46L * 1024, "RSS %ld -> %ld KiB after freeing 48 MiB", r1, r2);
    /* idle priority: granted (Linux SCHED_IDLE) or refused with an errno value; either way
     * in a thread of its own, so that this test's thread keeps its priority */
    pthread_t t;
    void *rc = NULL;
    cr_assert_eq(pthread_create(&t, NULL, idle_thread, NULL), 0);
    pthread_join(t, &rc);
    const int r = (int)(intptr_t)rc;
#if defined(__linux__)
    cr_assert(r == 0 || r == EPERM, "SCHED_IDLE: %d", r);
#else
    cr_assert_neq(r, 0);
#endif
    cr_assert_eq(sp_tcp_bytes_received(-1), 0u, "not a socket: 0");
    char path[] = "/tmp/skycmd_platform_XXXXXX";
    const int fd = mkstemp(path);
    cr_assert(fd >= 0);
    const int d = sp_drop_file_cache(fd);
#if defined(__linux__)
    cr_assert_eq(d, 0);
#else
    cr_assert_neq(d, 0);
#endif
    close(fd);
    unlink(path);
}
