/*
 * serve_platform.h - the programs' portability layer (the `skycmd` CLI and its HTTP server,
 * src/cli and src/serve): the calls that differ between Linux and the other POSIX systems
 * skycmd builds for (macOS), each behind one function with a documented fallback.
 * serve_platform.c is the only file of the programs that tests the platform; the library
 * has its own layer (src/util/platform.h), which the programs may not use (they are built
 * on the public API only). No libmicrohttpd types here: it builds everywhere.
 *
 * Contract (sp_ = skycmd program):
 *  - sp_cpu_count(): the CPUs this process may run on (Linux: its affinity mask), else the
 *    online CPUs (macOS); in [1, 1024].
 *  - sp_current_cpu(): the CPU the calling thread runs on now (Linux sched_getcpu); -1 where
 *    the system does not say (macOS) or on failure.
 *  - sp_pin_thread(cpu): binds the calling thread to that one CPU: 0, or -1 where thread
 *    affinity is unsupported (macOS), refused, or cpu is out of range (it then runs where
 *    it could before).
 *  - sp_idle_priority(): the calling thread runs only when its CPU would otherwise idle
 *    (Linux SCHED_IDLE): 0, or an errno value when refused or unsupported (ENOTSUP on
 *    macOS, which has no such class); the thread's priority is then unchanged.
 *  - sp_idle_seconds(): the machine's idle CPU time since boot, in seconds summed over all
 *    CPUs (Linux /proc/stat idle + iowait; macOS host_statistics(HOST_CPU_LOAD_INFO) idle
 *    ticks); non-decreasing from one call to the next; -1.0 where unknown.
 *  - sp_exe_path(buf, n): the running program's absolute path (Linux /proc/self/exe; macOS
 *    _NSGetExecutablePath resolved with realpath): its length, or -1 (buf then "") when
 *    unknown or longer than n - 1.
 *  - sp_sigtimedwait(set, timeout): waits at most timeout for one of the (blocked) signals
 *    in set and takes it: the signal number, or 0 on timeout or interruption. Linux
 *    sigtimedwait; macOS (which lacks it) takes a pending one with sigwait, else sleeps
 *    timeout and looks again once.
 *  - sp_peak_rss_kb(): the process's peak resident set in KiB (Linux VmHWM, which a parent
 *    does not leave behind across fork + execve; elsewhere getrusage's ru_maxrss, in bytes
 *    on macOS); -1 when unknown.
 *  - sp_rss_kb(): the process's resident set now, in KiB (Linux VmRSS, macOS the task's
 *    resident_size); -1 when unknown.
 *  - sp_drop_file_cache(fd): asks the system to drop fd's file from the page cache (Linux
 *    posix_fadvise DONTNEED): 0, or an errno value (ENOTSUP on macOS).
 *  - sp_tcp_bytes_received(fd): the kernel's count of bytes received on a TCP socket (Linux
 *    TCP_INFO tcpi_bytes_received); 0 when unknown, and always 0 elsewhere.
 * All are thread-safe.
 */
#ifndef SKYCMD_SERVE_PLATFORM_H
#define SKYCMD_SERVE_PLATFORM_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

int sp_cpu_count(void);
int sp_current_cpu(void);
int sp_pin_thread(int cpu);
int sp_idle_priority(void);
double sp_idle_seconds(void);
long sp_exe_path(char *buf, size_t n);
int sp_sigtimedwait(const sigset_t *set, const struct timespec *timeout);
long sp_peak_rss_kb(void);
long sp_rss_kb(void);
int sp_drop_file_cache(int fd);
uint64_t sp_tcp_bytes_received(int fd);

#endif
