/*
 * decode.c - Content-Encoding of request bodies: zstd (libzstd), gzip and deflate (zlib).
 *
 * Contract: coding_of() maps a Content-Encoding header to a coding (-1: not one we decode,
 * the caller answers 415). A body_decoder decompresses a body as it streams in: each
 * decoder_feed() appends what its input decodes to, and stops with DEC_OVER_LIMIT as soon
 * as the decoded size would pass the caller's limit, so a compression bomb costs at most
 * `limit` bytes of output and the input read so far. decoder_finish() says whether the
 * stream ended cleanly. Memory per decoder is bounded: zlib's 32 KiB window, and zstd's
 * window capped at 8 MiB as RFC 9659 allows (ZSTD_d_windowLogMax), not zstd's 128 MiB;
 * decoder_memory() tells the caller how much, so that it counts against --max-buffered.
 * No libmicrohttpd types here.
 */
#define _GNU_SOURCE
#include "decode.h"

#ifdef SKYCMD_HAVE_MHD /* built with the server, which requires libzstd and zlib */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>
#include <zstd.h>

struct body_decoder {
    int coding;
    int started, ended;
    z_stream z;
    ZSTD_DCtx *zd;
    size_t zstd_last; /* last ZSTD_decompressStream result: 0 at a frame's end */
};

int coding_of(const char *header) {
    if (!header) return CODING_IDENTITY;
    while (*header == ' ' || *header == '\t') header++;
    size_t n = strlen(header);
    while (n && (header[n - 1] == ' ' || header[n - 1] == '\t')) n--;
    if (n == 0 || (n == 8 && strncasecmp(header, "identity", 8) == 0)) return CODING_IDENTITY;
    if ((n == 4 && strncasecmp(header, "gzip", 4) == 0) || (n == 6 && strncasecmp(header, "x-gzip", 6) == 0))
        return CODING_GZIP;
    if (n == 7 && strncasecmp(header, "deflate", 7) == 0) return CODING_DEFLATE;
    if (n == 4 && strncasecmp(header, "zstd", 4) == 0) return CODING_ZSTD;
    return -1;
}

const char *coding_name(int coding) {
    switch (coding) {
    case CODING_GZIP: return "gzip";
    case CODING_DEFLATE: return "deflate";
    case CODING_ZSTD: return "zstd";
    default: return "identity";
    }
}

size_t decoder_memory(const struct body_decoder *d) {
    if (!d) return 0;
    if (d->coding == CODING_ZSTD) return sizeof *d + ZSTD_sizeof_DCtx(d->zd);
    /* inflate's state and its 32 KiB window (zlib's documented 1 << windowBits + ~7 KiB) */
    return sizeof *d + (d->started ? (1u << MAX_WBITS) + 7168u : 0u);
}

struct body_decoder *decoder_new(int coding, size_t limit) {
    (void)limit;
    struct body_decoder *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->coding = coding;
    if (coding == CODING_ZSTD) {
        d->zd = ZSTD_createDCtx();
        if (!d->zd) {
            free(d);
            return NULL;
        }
        /* RFC 9659 §3: zstd in HTTP uses windows of at most 8 MiB, and decoders may refuse
         * larger ones (zstd itself would allow 128 MiB). */
        ZSTD_DCtx_setParameter(d->zd, ZSTD_d_windowLogMax, 23);
        d->zstd_last = 1;
    }
    return d;
}

void decoder_free(struct body_decoder *d) {
    if (!d) return;
    if (d->zd) ZSTD_freeDCtx(d->zd);
    if (d->started && d->coding != CODING_ZSTD) inflateEnd(&d->z);
    free(d);
}

/* zlib's framing for "deflate": RFC 9110 means the zlib format (RFC 1950), but some
 * clients send raw deflate (RFC 1951); a zlib header is recognisable by its checksum. */
static int zlib_init(struct body_decoder *d, const unsigned char *in, size_t n) {
    int bits;
    if (d->coding == CODING_GZIP) bits = 16 + MAX_WBITS;
    else if (n >= 2 && (in[0] & 0x0f) == 8 && ((in[0] << 8) | in[1]) % 31 == 0) bits = MAX_WBITS;
    else bits = -MAX_WBITS;
    memset(&d->z, 0, sizeof d->z);
    if (inflateInit2(&d->z, bits) != Z_OK) return -1;
    d->started = 1;
    return 0;
}

int decoder_feed(struct body_decoder *d, const char *in, size_t n, struct sbuf *out, size_t limit) {
    unsigned char buf[16384];
    if (n == 0) return DEC_OK;
    if (d->coding == CODING_ZSTD) {
        ZSTD_inBuffer ib = {in, n, 0};
        while (ib.pos < ib.size || d->zstd_last > 0) {
            ZSTD_outBuffer ob = {buf, sizeof buf, 0};
            size_t rc = ZSTD_decompressStream(d->zd, &ob, &ib);
            if (ZSTD_isError(rc)) return DEC_ERROR;
            d->zstd_last = rc;
            if (ob.pos > limit || out->len > limit - ob.pos) return DEC_OVER_LIMIT;
            sbuf_add(out, (const char *)buf, ob.pos);
            if (out->oom) return DEC_OOM;
            if (ob.pos < ob.size && ib.pos == ib.size) break; /* needs more input */
        }
        return DEC_OK;
    }
    if (d->ended) return DEC_ERROR; /* bytes after the end of the stream */
    if (!d->started && zlib_init(d, (const unsigned char *)in, n) != 0) return DEC_OOM;
    d->z.next_in = (unsigned char *)(uintptr_t)in;
    d->z.avail_in = (uInt)n; /* n is a network read, far below 4 GiB */
    for (;;) {
        d->z.next_out = buf;
        d->z.avail_out = sizeof buf;
        int rc = inflate(&d->z, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) return rc == Z_MEM_ERROR ? DEC_OOM : DEC_ERROR;
        size_t got = sizeof buf - d->z.avail_out;
        if (got > limit || out->len > limit - got) return DEC_OVER_LIMIT;
        sbuf_add(out, (const char *)buf, got);
        if (out->oom) return DEC_OOM;
        if (rc == Z_STREAM_END) {
            d->ended = 1;
            return d->z.avail_in ? DEC_ERROR : DEC_OK;
        }
        if (d->z.avail_in == 0 && d->z.avail_out != 0) return DEC_OK;
        if (rc == Z_BUF_ERROR && (d->z.avail_in == 0 || got == 0)) return DEC_OK;
    }
}

int decoder_finish(struct body_decoder *d) {
    if (d->coding == CODING_ZSTD) return d->zstd_last == 0 ? DEC_OK : DEC_ERROR;
    return d->ended ? DEC_OK : DEC_ERROR;
}

#endif /* SKYCMD_HAVE_MHD */
