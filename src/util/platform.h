/*
 * platform.h - the library's portability layer: the few calls that differ between Linux
 * (glibc) and the other POSIX systems skycmd builds for (macOS), each behind one function
 * with a documented fallback. platform.c is the only file of the library that tests the
 * platform (#if __linux__ / __APPLE__); everything else calls these.
 *
 * Contract:
 *  - Feature-test macros: the sources ask glibc for what they use; CMake adds
 *    _DARWIN_C_SOURCE on macOS, where _POSIX_C_SOURCE would otherwise hide the rest of the
 *    system's API.
 *  - sk_platform_cpu_count(): the CPUs the calling thread may run on (Linux: its affinity
 *    mask, so a taskset/cgroup cpuset counts), falling back to the online CPUs
 *    (sysconf(_SC_NPROCESSORS_ONLN); macOS always), clamped to [1, SK_CPUSET_MAX].
 *  - sk_platform_current_cpu(): the CPU the calling thread runs on now (Linux sched_getcpu),
 *    in [0, SK_CPUSET_MAX); -1 where the system does not say (macOS) or on failure. Callers
 *    treat -1 as "unknown" and skip whatever depended on it.
 *  - sk_cpuset: a fixed set of CPU numbers [0, SK_CPUSET_MAX) with the helpers below.
 *    sk_platform_affinity_get() fills it with the calling thread's allowed CPUs and returns
 *    their count; 0 (the set empty) where thread affinity is unsupported (macOS) or on
 *    failure. sk_platform_affinity_set(thread, set) restricts a thread to set: 0 on
 *    success, -1 where unsupported (macOS: threads are placed by the kernel alone) or
 *    refused; the thread then keeps running where it could before.
 *  - sk_platform_strtod_c(): strtod in the C locale whatever the process's locale is
 *    (glibc strtod_l, macOS <xlocale.h> strtod_l, on a newlocale made once); plain strtod
 *    if that locale cannot be made.
 *  - sk_platform_file_id() / sk_platform_path_id(): a file's identity from fstat / stat as
 *    id[0..6] = device, inode, size, mtime seconds, mtime ns, ctime seconds, ctime ns
 *    (glibc st_mtim/st_ctim, macOS st_mtimespec/st_ctimespec); 0, or -1 with errno. A
 *    non-regular file gives -1 with errno EINVAL.
 *  - sk_platform_library_path(buf, n): the absolute path, symlinks resolved, of the file that
 *    holds the library's code: the shared library itself, or the program or module it was
 *    linked into statically (the Python extension, the JNI library, a Rust program). Found
 *    with dladdr on an object of the library (glibc, musl, macOS, the BSDs); on Linux, when
 *    that object is the main program, /proc/self/exe (glibc names the main program by its
 *    argv[0]). Returns the path's length, or -1 where the system cannot say (no dladdr) or
 *    it does not fit in n bytes; buf is "" then. Callers treat -1 as "unknown".
 *  - Threads: SKYCMD_THREADS (the CMake option of that name; 1 unless the build says 0) is 0
 *    where the system has no threads (wasm32-wasi): pthread.h is then not included, the
 *    compute pool runs every job on its caller (kernels/pool.c) and sk_platform_affinity_set
 *    does not exist. sk_platform_once(once, fn) calls fn exactly once over all the calls on
 *    the same once (initialised with SK_ONCE_INIT): pthread_once, or a flag without threads.
 *    sk_mutex: a lock (pthread_mutex_t; nothing without threads, where there is no other
 *    thread to exclude). sk_platform_mutex_init returns 0, or -1 when the system cannot
 *    make one; lock/unlock/destroy as pthread's, on an initialised mutex.
 *  - Memory that holds a file: sk_platform_map_read(fd, size) gives a read-only view of a
 *    file's first size bytes (mmap; where the system has no mmap (WASI) a heap copy read
 *    with pread), NULL with errno on failure. sk_platform_pages_alloc(size) gives size
 *    bytes of zeroed, page-aligned, writable memory (anonymous mmap; WASI: the heap), NULL on
 *    failure; sk_platform_pages_protect(p, size, writable) makes them read-only (writable 0)
 *    or writable again where the system can (mprotect; a no-op elsewhere).
 *    sk_platform_unmap(p, size) releases either (size as given).
 *    sk_platform_page_size(): the system's page size (4096 if it does not say).
 *    sk_platform_pages_discard(p, n) gives the whole pages inside [p, p + n) of private
 *    anonymous memory back to the system (Linux madvise MADV_DONTNEED: they read as zeros
 *    afterwards; other mmap systems MADV_FREE where defined: their contents are undefined
 *    afterwards); returns the bytes given back, 0 where the system cannot (WASI, or the call
 *    failed): the memory then stays as it was. The caller must own those pages (a heap
 *    block's interior, an sk_platform_pages_alloc range) and not read them again.
 *    sk_platform_map_discard(p, n): the whole pages inside [p, p + n) of a
 *    sk_platform_map_read view leave the process's resident set (madvise MADV_DONTNEED:
 *    read-only file pages, so a later read faults them in from the file again, unchanged);
 *    a no-op where the view is a heap copy (WASI).
 *    sk_platform_heap_trim(): gives the C heap's free pages back to the system (glibc
 *    malloc_trim(0): also free pages between live blocks, which free() keeps); a no-op
 *    where the C library has no such call (it returns them by itself, or never).
 *    sk_platform_resident_bytes(p, n): how many bytes of the pages that [p, p + n) touches
 *    are in RAM now (mincore), -1 where the system cannot say (WASI) or on failure.
 *    sk_platform_pages_huge(p, n, prefer): asks for (prefer 1) or against (0) huge pages
 *    for the whole pages inside [p, p + n) of private anonymous memory (Linux MADV_HUGEPAGE /
 *    MADV_NOHUGEPAGE, where transparent huge pages are on); a no-op elsewhere.
 *  - A read no writer may tear: sk_platform_read_guard_begin(fd), fd a regular file open
 *    read-only, asks the system to note any open for writing or truncation of the file from
 *    now on (Linux: a read lease, F_SETLEASE F_RDLCK). 1: the guard is on. 0: the system
 *    cannot guard this file (not Linux; leases off; not the file's owner and no CAP_LEASE; a
 *    file system without leases, NFS): read without one. -1: the file is open for writing
 *    right now, by this or any process (a writer at work): no guard; try again later.
 *    sk_platform_read_guard_end(fd) ends a guard begun on fd: 1 when no writer opened or
 *    truncated the file in between, 0 when one did (its open waited for this end: with a
 *    guard, the bytes read in between are the file's as no writer had it open). A writer's
 *    open breaks the lease; the kernel then signals the lease's owner, and since that
 *    cannot be switched off before the lease exists, the signal is SIGURG (ignored unless a
 *    handler is installed; Go's runtime takes spurious ones) and the owner is cleared right
 *    after the lease is taken, so at most a writer in that instant sends it.
 *  - sk_platform_pid(): the process id (getpid); 0 where the system has none (WASI).
 *  - sk_platform_fchmod(fd, mode): fchmod; -1 with errno ENOSYS where files have no
 *    permission bits (WASI).
 * All are thread-safe.
 */
#ifndef SK_PLATFORM_H
#define SK_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

#ifndef SKYCMD_THREADS
#define SKYCMD_THREADS 1
#endif
#if SKYCMD_THREADS
#include <pthread.h>
typedef pthread_once_t sk_once;
#define SK_ONCE_INIT PTHREAD_ONCE_INIT
typedef pthread_mutex_t sk_mutex;
#else
typedef int sk_once;
#define SK_ONCE_INIT 0
typedef int sk_mutex;
#endif

#define SK_CPUSET_MAX 1024 /* CPU numbers a set holds (the pool's thread limit) */

typedef struct sk_cpuset {
    uint64_t bits[SK_CPUSET_MAX / 64];
} sk_cpuset;

static inline void sk_cpuset_clear(sk_cpuset *s) {
    for (int i = 0; i < SK_CPUSET_MAX / 64; i++) s->bits[i] = 0;
}
static inline int sk_cpuset_has(const sk_cpuset *s, int cpu) {
    return cpu >= 0 && cpu < SK_CPUSET_MAX && ((s->bits[cpu / 64] >> (cpu % 64)) & 1u);
}
static inline void sk_cpuset_add(sk_cpuset *s, int cpu) {
    if (cpu >= 0 && cpu < SK_CPUSET_MAX) s->bits[cpu / 64] |= (uint64_t)1 << (cpu % 64);
}
static inline void sk_cpuset_del(sk_cpuset *s, int cpu) {
    if (cpu >= 0 && cpu < SK_CPUSET_MAX) s->bits[cpu / 64] &= ~((uint64_t)1 << (cpu % 64));
}
static inline int sk_cpuset_count(const sk_cpuset *s) {
    int n = 0;
    for (int i = 0; i < SK_CPUSET_MAX / 64; i++) n += __builtin_popcountll(s->bits[i]);
    return n;
}

int sk_platform_cpu_count(void);
int sk_platform_current_cpu(void);
int sk_platform_affinity_get(sk_cpuset *out);
#if SKYCMD_THREADS
int sk_platform_affinity_set(pthread_t thread, const sk_cpuset *set);
#endif
void sk_platform_once(sk_once *once, void (*fn)(void));
int sk_platform_mutex_init(sk_mutex *mu);
void sk_platform_mutex_lock(sk_mutex *mu);
void sk_platform_mutex_unlock(sk_mutex *mu);
void sk_platform_mutex_destroy(sk_mutex *mu);
double sk_platform_strtod_c(const char *s, char **end);
int sk_platform_file_id(int fd, uint64_t id[7]);
int sk_platform_path_id(const char *path, uint64_t id[7]);
long sk_platform_library_path(char *buf, size_t n);
void *sk_platform_map_read(int fd, size_t size);
void *sk_platform_pages_alloc(size_t size);
void sk_platform_pages_protect(void *p, size_t size, int writable);
void sk_platform_unmap(void *p, size_t size);
size_t sk_platform_page_size(void);
size_t sk_platform_pages_discard(void *p, size_t n);
int64_t sk_platform_resident_bytes(const void *p, size_t n);
void sk_platform_heap_trim(void);
void sk_platform_map_discard(const void *p, size_t n);
void sk_platform_pages_huge(void *p, size_t n, int prefer);
int sk_platform_read_guard_begin(int fd);
int sk_platform_read_guard_end(int fd);
long sk_platform_pid(void);
int sk_platform_fchmod(int fd, unsigned mode);

#endif
