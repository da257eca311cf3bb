/*
 * conns.c - connection admission, request deadlines and the buffered-bytes cap of
 * `skycmd serve`.
 *
 * Contract:
 *  - conn_admit() (libmicrohttpd's accept policy, epoll thread) closes a new connection at
 *    once when --max-connections are open, so that nothing waits in the backlog. The daemon's
 *    own limit is set above ours, so the listening socket keeps being accepted from. With
 *    --max-connections-per-ip, so is one from an address that already holds that many.
 *  - conn_notify() (epoll thread) tracks every open connection in a list (struct conn).
 *  - conn_phase() records where the connection's current request is: waiting for its headers
 *    (from the accept, or from the first byte after the previous response), receiving its
 *    body (from the end of its headers), or answered/in the pool (no deadline). It returns -1
 *    when the reaper has already cut the connection; the handler then returns MHD_NO.
 *  - A reaper thread ticks every 50 ms: a connection past --header-timeout in the headers
 *    phase, or past --body-timeout in the body phase, is sent a 408 with Connection: close
 *    and shut down (libmicrohttpd then sees the end of stream and closes it). libmicrohttpd
 *    0.9.75 has only an idle timeout, which any trickle of bytes resets; the kernel's count
 *    of bytes received (TCP_INFO) tells the reaper when an idle keep-alive connection starts
 *    its next request, without parsing anything.
 *  - conn_request_started() counts the requests of a connection (the drain answers the first
 *    one of a connection accepted before it, and refuses follow-ups with 503 + close);
 *    conn_arriving() counts connections whose next request has begun to arrive (the drain
 *    waits for them, within --drain-timeout); conn_others_active() says whether a connection
 *    but the caller's has a request arriving or under way (a few connections are looked at;
 *    past OTHERS_SCAN_MAX it says yes).
 *  - buffered_take()/buffered_give(): the bytes of request bodies held in memory across all
 *    connections, capped at --max-buffered (the handler answers 503 + Retry-After past it).
 *  - Lingering close: libmicrohttpd closes a connection right after its last response
 *    (shutdown(SHUT_WR), then close). When the client is still sending (a body past the
 *    413's discard limit, bytes after a framing 400), the close of a socket with unread
 *    bytes makes the kernel send a reset, and the client loses the response it had not read
 *    yet (curl: "Send failure: Broken pipe" instead of the 413). So when conn_notify() sees
 *    unread bytes on a closing connection it keeps a duplicate of the socket, and the reaper
 *    reads and drops what arrives until the client closes, for at most LINGER_US and
 *    LINGER_BYTES (at most LINGER_MAX sockets at once; past that, a plain close).
 * Locking: one mutex guards the list and every phase change; the reaper writes to a socket
 * only under it, while the connection is in a phase in which libmicrohttpd writes nothing.
 */
#define _GNU_SOURCE
#include "serve.h"

#ifdef SKYCMD_HAVE_MHD

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "serve_internal.h"
#include "serve_platform.h"

struct conn {
    struct conn *prev, *next;
    MHD_socket fd;
    int phase;
    uint64_t phase_start; /* now_us() when the phase began */
    uint64_t rx_mark;     /* bytes received when the connection went idle */
    int cut;              /* the reaper sent 408 and shut it down */
    unsigned requests;    /* requests whose headers arrived on it */
    unsigned char ip[16]; /* the client's address (IPv4 in the first 4 bytes), for the per-IP cap */
    int ip_len;
};

/* The address part of a socket address: 4 bytes for IPv4 (or IPv4-mapped IPv6), 16 for IPv6. */
static int ip_of(const struct sockaddr *a, unsigned char out[16]) {
    if (!a) return 0;
    if (a->sa_family == AF_INET) {
        memcpy(out, &((const struct sockaddr_in *)(const void *)a)->sin_addr, 4);
        return 4;
    }
    if (a->sa_family == AF_INET6) {
        const unsigned char *b = ((const struct sockaddr_in6 *)(const void *)a)->sin6_addr.s6_addr;
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(b, mapped, 12) == 0) {
            memcpy(out, b + 12, 4);
            return 4;
        }
        memcpy(out, b, 16);
        return 16;
    }
    return 0;
}

#define LINGER_MAX 64
#define LINGER_US (2u * 1000000u)
#define LINGER_BYTES ((uint64_t)64 << 20)

struct lingering {
    int fd; /* a duplicate of the closed connection's socket */
    uint64_t until;
    uint64_t dropped;
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct conn *head;
    struct lingering linger[LINGER_MAX]; /* under mu */
    int n_linger;
    _Atomic unsigned open;
    _Atomic size_t buffered;
    pthread_t reaper;
    int reaper_started, stop;
} C = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void linger_start(const struct conn *k);

unsigned conn_open_count(void) { return atomic_load(&C.open); }

enum MHD_Result conn_admit(void *cls, const struct sockaddr *addr, socklen_t addrlen) {
    (void)cls;
    (void)addrlen;
    if (atomic_load(&C.open) >= S.cfg->max_connections) {
        metrics_refused_connection();
        return MHD_NO; /* libmicrohttpd closes the socket at once */
    }
    if (S.cfg->max_connections_per_ip) {
        unsigned char ip[16];
        int n = ip_of(addr, ip);
        unsigned same = 0;
        pthread_mutex_lock(&C.mu);
        for (struct conn *k = C.head; k && n; k = k->next)
            if (k->ip_len == n && memcmp(k->ip, ip, (size_t)n) == 0) same++;
        pthread_mutex_unlock(&C.mu);
        if (n && same >= S.cfg->max_connections_per_ip) {
            metrics_refused_connection();
            return MHD_NO;
        }
    }
    return MHD_YES;
}

/* The kernel's count of bytes received on fd. Elsewhere than Linux: 0 always, so a kept-alive
 * connection's follow-up requests are held to --timeout only (first requests still to
 * the header deadline). */
static uint64_t bytes_received(MHD_socket fd) { return sp_tcp_bytes_received(fd); }

void conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                 enum MHD_ConnectionNotificationCode code) {
    (void)cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        struct conn *k = calloc(1, sizeof *k);
        *socket_context = k;
        if (!k) return; /* untracked: only the idle timeout applies to it */
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        k->fd = ci ? ci->connect_fd : MHD_INVALID_SOCKET;
        k->phase = CONN_HEADERS;
        k->phase_start = now_us();
        const union MHD_ConnectionInfo *ai = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        k->ip_len = ai ? ip_of(ai->client_addr, k->ip) : 0;
        pthread_mutex_lock(&C.mu);
        k->next = C.head;
        if (C.head) C.head->prev = k;
        C.head = k;
        pthread_mutex_unlock(&C.mu);
        atomic_fetch_add(&C.open, 1);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        struct conn *k = *socket_context;
        *socket_context = NULL;
        if (!k) return;
        /* libmicrohttpd closes the socket only after this callback: the reaper, which
         * holds the lock whenever it touches k->fd, never sees a closed or reused fd. */
        pthread_mutex_lock(&C.mu);
        linger_start(k);
        if (k->prev) k->prev->next = k->next;
        else C.head = k->next;
        if (k->next) k->next->prev = k->prev;
        pthread_mutex_unlock(&C.mu);
        free(k);
        atomic_fetch_sub(&C.open, 1);
    }
}

/* (C.mu held) Keep k's socket open while its client still sends: see the head. */
static void linger_start(const struct conn *k) {
    int unread = 0;
    if (k->fd == MHD_INVALID_SOCKET || C.n_linger >= LINGER_MAX) return;
    if (ioctl(k->fd, FIONREAD, &unread) != 0 || unread <= 0) return;
    int fd = fcntl(k->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return;
    shutdown(fd, SHUT_WR); /* libmicrohttpd did so already: the response is complete */
    C.linger[C.n_linger++] = (struct lingering){fd, now_us() + LINGER_US, 0};
}

/* (C.mu held) Read and drop what the lingering sockets received; close those whose client
 * closed, or that reached their time or byte bound. all: close every one (shutdown). */
static void linger_drain(uint64_t now, int all) {
    char buf[16384];
    for (int i = 0; i < C.n_linger;) {
        struct lingering *l = &C.linger[i];
        int done = all || now >= l->until;
        while (!done) {
            ssize_t got = recv(l->fd, buf, sizeof buf, MSG_DONTWAIT);
            if (got > 0) {
                l->dropped += (uint64_t)got;
                done = l->dropped >= LINGER_BYTES;
            } else {
                done = got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
                break;
            }
        }
        if (done) {
            close(l->fd);
            C.linger[i] = C.linger[--C.n_linger];
        } else {
            i++;
        }
    }
}

static struct conn *conn_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? (struct conn *)ci->socket_context : NULL;
}

static const char *reason(unsigned status) {
    switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 503: return "Service Unavailable";
    default: return "Error";
    }
}

/* (C.mu held; epoll thread, inside the handler, while k's body arrives: libmicrohttpd
 * writes nothing to the socket then) r's error, with Connection: close, straight on the
 * socket; then the write side is shut down and the connection counts as cut. */
static void refuse(struct conn *k, const struct req *r) {
    char head[512];
    char ra[32] = "";
    if (r->retry_after > 0) snprintf(ra, sizeof ra, "Retry-After: %d\r\n", r->retry_after);
    int hn = snprintf(head, sizeof head,
                      "HTTP/1.1 %u %s\r\nConnection: close\r\nContent-Type: application/json\r\n"
                      "x-request-id: %s\r\nx-typesafe-request-id: %s\r\n%sContent-Length: %zu\r\n\r\n",
                      r->status, reason(r->status), r->rid, r->rid, ra, r->out.len);
    if (hn > 0 && (size_t)hn < sizeof head && k->fd != MHD_INVALID_SOCKET) {
        struct iovec iov[2] = {{head, (size_t)hn}, {r->out.p ? r->out.p : (char *)"", r->out.len}};
        struct msghdr m;
        memset(&m, 0, sizeof m);
        m.msg_iov = iov;
        m.msg_iovlen = 2;
#ifdef MSG_NOSIGNAL
        ssize_t w = sendmsg(k->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
#else
        ssize_t w = sendmsg(k->fd, &m, MSG_DONTWAIT); /* SIGPIPE is ignored */
#endif
        (void)w; /* an error body fits the empty send buffer; best effort otherwise */
        shutdown(k->fd, SHUT_WR);
    }
    k->cut = 1;
}

int conn_phase(struct MHD_Connection *c, int phase) {
    struct conn *k = conn_of(c);
    if (!k) return 0;
    int rc = 0;
    pthread_mutex_lock(&C.mu);
    if (phase == CONN_REFUSE) {
        if (!k->cut && S.refusing) refuse(k, S.refusing);
        rc = -1;
    } else if (k->cut) {
        rc = -1;
    } else if (k->phase != phase) {
        k->phase = phase;
        k->phase_start = now_us();
        if (phase == CONN_IDLE) k->rx_mark = bytes_received(k->fd);
    }
    pthread_mutex_unlock(&C.mu);
    return rc;
}

unsigned conn_request_started(struct MHD_Connection *c) {
    struct conn *k = conn_of(c);
    if (!k) return 1;
    pthread_mutex_lock(&C.mu);
    unsigned n = ++k->requests;
    pthread_mutex_unlock(&C.mu);
    return n;
}

/* k's next request has begun to arrive (called with C.mu held) */
static int request_arriving(const struct conn *k) {
    return !k->cut && k->fd != MHD_INVALID_SOCKET &&
           ((k->phase == CONN_HEADERS && bytes_received(k->fd) > k->rx_mark) ||
            (k->phase == CONN_IDLE && bytes_received(k->fd) != k->rx_mark));
}

unsigned conn_arriving(void) {
    unsigned n = 0;
    pthread_mutex_lock(&C.mu);
    for (struct conn *k = C.head; k; k = k->next) n += (unsigned)request_arriving(k);
    pthread_mutex_unlock(&C.mu);
    return n;
}

/* More open connections than this and conn_others_active() does not look: it says 1. */
#define OTHERS_SCAN_MAX 8

int conn_others_active(struct MHD_Connection *c) {
    unsigned open = atomic_load(&C.open);
    if (open <= 1) return 0;
    if (open > OTHERS_SCAN_MAX) return 1;
    struct conn *me = conn_of(c);
    int active = 0;
    pthread_mutex_lock(&C.mu);
    for (struct conn *k = C.head; k && !active; k = k->next)
        active = k != me && !k->cut &&
                 (k->phase == CONN_BODY || k->phase == CONN_BUSY || request_arriving(k));
    pthread_mutex_unlock(&C.mu);
    return active;
}

int buffered_take(size_t n) {
    size_t cur = atomic_load(&C.buffered);
    for (;;) {
        if (n > S.cfg->max_buffered || cur > S.cfg->max_buffered - n) return -1;
        if (atomic_compare_exchange_weak(&C.buffered, &cur, cur + n)) return 0;
    }
}

void buffered_give(size_t n) {
    if (n) atomic_fetch_sub(&C.buffered, n);
}

size_t buffered_now(void) { return atomic_load(&C.buffered); }

/* A 408 written straight to the socket: the connection is between libmicrohttpd's writes
 * (no response is queued in these phases), and the body is a fixed envelope. */
static void cut(struct conn *k, const char *what, unsigned limit_s) {
    char body[512], msg[768];
    int bn = snprintf(body, sizeof body,
                      "{\"error\":{\"code\":408,\"message\":\"the request %s did not arrive within %u s\","
                      "\"type\":\"timeout_error\"},\"detail\":{\"error_type\":\"timeout_error\","
                      "\"message\":\"the request %s did not arrive within %u s\"}}",
                      what, limit_s, what, limit_s);
    int mn = snprintf(msg, sizeof msg,
                      "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: application/json\r\n"
                      "Content-Length: %d\r\n\r\n%s",
                      bn, body);
    if (mn > 0 && (size_t)mn < sizeof msg) {
#ifdef MSG_NOSIGNAL
        ssize_t w = send(k->fd, msg, (size_t)mn, MSG_DONTWAIT | MSG_NOSIGNAL);
#else
        ssize_t w = send(k->fd, msg, (size_t)mn, MSG_DONTWAIT); /* SIGPIPE is ignored */
#endif
        (void)w; /* best effort: the close below is what matters */
    }
    shutdown(k->fd, SHUT_RDWR);
    k->cut = 1;
    metrics_record_timeout();
}

static void *reaper_main(void *arg) {
    (void)arg;
    const uint64_t header_us = (uint64_t)S.cfg->header_timeout_s * 1000000u;
    const uint64_t body_us = (uint64_t)S.cfg->body_timeout_s * 1000000u;
    pthread_mutex_lock(&C.mu);
    while (!C.stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&C.cv, &C.mu, &ts);
        if (C.stop) break;
        uint64_t now = now_us();
        if (C.n_linger) linger_drain(now, 0);
        for (struct conn *k = C.head; k; k = k->next) {
            if (k->cut || k->fd == MHD_INVALID_SOCKET) continue;
            if (k->phase == CONN_IDLE) {
                /* the next request has begun once a byte of it arrived */
                if (bytes_received(k->fd) != k->rx_mark) {
                    k->phase = CONN_HEADERS;
                    k->phase_start = now;
                }
            } else if (k->phase == CONN_HEADERS && header_us && now - k->phase_start > header_us) {
                cut(k, "headers", S.cfg->header_timeout_s);
            } else if (k->phase == CONN_BODY && body_us && now - k->phase_start > body_us) {
                cut(k, "body", S.cfg->body_timeout_s);
            }
        }
    }
    linger_drain(0, 1);
    pthread_mutex_unlock(&C.mu);
    return NULL;
}

int conn_reaper_start(void) {
    C.stop = 0;
    if (pthread_create(&C.reaper, NULL, reaper_main, NULL) != 0) return -1;
    C.reaper_started = 1;
    return 0;
}

void conn_reaper_stop(void) {
    if (!C.reaper_started) return;
    pthread_mutex_lock(&C.mu);
    C.stop = 1;
    pthread_cond_signal(&C.cv);
    pthread_mutex_unlock(&C.mu);
    pthread_join(C.reaper, NULL);
    C.reaper_started = 0;
}

#endif /* SKYCMD_HAVE_MHD */
