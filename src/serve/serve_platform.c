/* serve_platform.c - the programs' portability layer; the contract is in serve_platform.h.
 * The one file of src/cli and src/serve that asks which system it is built for. */
#define _GNU_SOURCE /* glibc: sched_getcpu, sched_getaffinity, pthread_setaffinity_np, SCHED_IDLE */
#include "serve_platform.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#if defined(__linux__)
#include <netinet/in.h>
#include <linux/tcp.h> /* struct tcp_info with tcpi_bytes_received */
#elif defined(__APPLE__)
#include <mach-o/dyld.h> /* _NSGetExecutablePath */
#include <mach/mach.h>   /* host_statistics */
#endif

#define SP_MAX_CPUS 1024

int sp_cpu_count(void) {
    long n = -1;
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t cs;
    if (sched_getaffinity(0, sizeof cs, &cs) == 0) n = CPU_COUNT(&cs);
#endif
    if (n < 1) n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > SP_MAX_CPUS ? SP_MAX_CPUS : (int)n;
}

int sp_current_cpu(void) {
#if defined(__linux__)
    return sched_getcpu();
#else
    return -1;
#endif
}

int sp_pin_thread(int cpu) {
#if defined(__linux__) && defined(CPU_SETSIZE)
    if (cpu < 0 || cpu >= CPU_SETSIZE) return -1;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0 ? 0 : -1;
#else
    (void)cpu;
    return -1;
#endif
}

int sp_idle_priority(void) {
#if defined(SCHED_IDLE)
    struct sched_param sp = {0};
    return pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
#else
    return ENOTSUP;
#endif
}

#if defined(__linux__)
static int stat_fd = -1;
static double stat_tick_s;
static pthread_once_t stat_once = PTHREAD_ONCE_INIT;
static void stat_open(void) {
    const long ticks = sysconf(_SC_CLK_TCK);
    if (ticks > 0) {
        stat_tick_s = 1.0 / (double)ticks;
        stat_fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
    }
}
#elif defined(__APPLE__)
static mach_port_t host_port;
static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static void host_open(void) { host_port = mach_host_self(); }
#endif

double sp_idle_seconds(void) {
#if defined(__linux__)
    pthread_once(&stat_once, stat_open);
    if (stat_fd < 0) return -1.0;
    char buf[256];  /* the first line, "cpu  user nice system idle iowait ...", fits */
    const ssize_t n = pread(stat_fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return -1.0;
    buf[n] = 0;
    unsigned long long v[5] = {0};  /* user nice system idle iowait */
    if (sscanf(buf, "cpu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4]) != 5)
        return -1.0;
    return (double)(v[3] + v[4]) * stat_tick_s;
#elif defined(__APPLE__)
    pthread_once(&host_once, host_open);
    host_cpu_load_info_data_t info;
    mach_msg_type_number_t count = HOST_CPU_LOAD_INFO_COUNT;
    if (host_port == MACH_PORT_NULL ||
        host_statistics(host_port, HOST_CPU_LOAD_INFO, (host_info_t)&info, &count) != KERN_SUCCESS)
        return -1.0;
    const long ticks = sysconf(_SC_CLK_TCK);
    if (ticks <= 0) return -1.0;
    return (double)info.cpu_ticks[CPU_STATE_IDLE] / (double)ticks;
#else
    return -1.0;
#endif
}

long sp_exe_path(char *buf, size_t n) {
    if (!buf || n == 0) return -1;
    buf[0] = '\0';
#if defined(__linux__)
    const ssize_t len = readlink("/proc/self/exe", buf, n - 1);
    if (len <= 0 || (size_t)len >= n - 1) {
        buf[0] = '\0';
        return -1;
    }
    buf[len] = '\0';
    return (long)len;
#elif defined(__APPLE__)
    char raw[PATH_MAX], real[PATH_MAX];
    uint32_t size = sizeof raw;
    if (_NSGetExecutablePath(raw, &size) != 0 || !realpath(raw, real)) return -1;
    const size_t len = strlen(real);
    if (len >= n) return -1;
    memcpy(buf, real, len + 1);
    return (long)len;
#else
    return -1;
#endif
}

int sp_sigtimedwait(const sigset_t *set, const struct timespec *timeout) {
#if defined(__linux__)
    siginfo_t si;
    const int got = sigtimedwait(set, &si, timeout);
    return got > 0 ? got : 0;
#else
    for (int pass = 0; pass < 2; pass++) {
        sigset_t pend;
        if (sigpending(&pend) == 0)
            for (int s = 1; s < NSIG; s++)
                if (sigismember(set, s) == 1 && sigismember(&pend, s) == 1) {
                    int sig = 0;  /* one is pending: sigwait returns at once */
                    return sigwait(set, &sig) == 0 ? sig : 0;
                }
        if (pass == 0) nanosleep(timeout, NULL);
    }
    return 0;
#endif
}

long sp_peak_rss_kb(void) {
#if defined(__linux__)
    FILE *f = fopen("/proc/self/status", "r");
    if (f) {
        char line[256];
        long kb = -1;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
        fclose(f);
        if (kb >= 0) return kb;
    }
#endif
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
#if defined(__APPLE__)
    return (long)(ru.ru_maxrss / 1024);  /* bytes there */
#else
    return ru.ru_maxrss;                 /* KiB on Linux and the BSDs */
#endif
}

long sp_rss_kb(void) {
#if defined(__linux__)
    FILE *f = fopen("/proc/self/status", "r");
    long kb = -1;
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
        fclose(f);
    }
    return kb;
#elif defined(__APPLE__)
    mach_task_basic_info_data_t info;
    mach_msg_type_number_t count = MACH_TASK_BASIC_INFO_COUNT;
    if (task_info(mach_task_self(), MACH_TASK_BASIC_INFO, (task_info_t)&info, &count) != KERN_SUCCESS)
        return -1;
    return (long)(info.resident_size / 1024);
#else
    return -1;
#endif
}

int sp_drop_file_cache(int fd) {
#if defined(__linux__)
    return posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
#else
    (void)fd;
    return ENOTSUP;
#endif
}

uint64_t sp_tcp_bytes_received(int fd) {
#if defined(__linux__)
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    memset(&ti, 0, sizeof ti);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) return 0;
    if (len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof ti.tcpi_bytes_received) return 0;
    return ti.tcpi_bytes_received;
#else
    (void)fd;
    return 0;
#endif
}
