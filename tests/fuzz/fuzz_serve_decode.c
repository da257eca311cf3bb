/*
 * fuzz_serve_decode.c - libFuzzer target for the request-body decoders of `skycmd serve`
 * (src/serve/decode.c): gzip, deflate (zlib and raw) and zstd bodies streamed in pieces,
 * with the decoded-size limit, and the Content-Encoding header parser.
 *
 * Input: byte 0 picks the coding (bits 0-1: identity-as-gzip, gzip, deflate, zstd) and the
 * limit (bits 2-4: 1 << (6 + 2 * k) bytes, 64 B to 64 KiB); byte 1 is the piece size
 * (1 + byte, so bodies arrive as a server might read them); the rest is the body. Inputs that
 * start with "CE:" are a Content-Encoding header value for coding_of() instead.
 *
 * Checks besides "no crash, no leak, no UB": the decoded bytes never pass the limit; after
 * DEC_OVER_LIMIT / DEC_ERROR / DEC_OOM nothing more is fed (as http.c does); decoder_memory()
 * stays within the documented bound (zstd's window capped at 8 MiB); a body that decoded
 * cleanly to the end decodes to the same bytes when fed in one piece.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"

static int run(int coding, const char *in, size_t n, size_t piece, size_t limit, struct sbuf *out, int *finished) {
    struct body_decoder *d = decoder_new(coding, limit);
    if (!d) return DEC_OOM;
    int st = DEC_OK;
    for (size_t off = 0; off < n && st == DEC_OK; off += piece) {
        size_t k = n - off < piece ? n - off : piece;
        st = decoder_feed(d, in + off, k, out, limit);
        if (out->len > limit) __builtin_trap();
        if (decoder_memory(d) > ((size_t)8 << 20) + ((size_t)4 << 20)) __builtin_trap();
    }
    *finished = st == DEC_OK && decoder_finish(d) == DEC_OK;
    decoder_free(d);
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size >= 3 && memcmp(data, "CE:", 3) == 0) {
        char h[256];
        size_t n = size - 3 < sizeof h - 1 ? size - 3 : sizeof h - 1;
        memcpy(h, data + 3, n);
        h[n] = '\0';
        int c = coding_of(h);
        if (c < -1 || c > CODING_ZSTD) __builtin_trap();
        if (c >= 0 && !coding_name(c)) __builtin_trap();
        return 0;
    }
    if (size < 2) return 0;
    static const int codings[4] = {CODING_GZIP, CODING_GZIP, CODING_DEFLATE, CODING_ZSTD};
    int coding = codings[data[0] & 3];
    size_t limit = (size_t)1 << (6 + 2 * ((data[0] >> 2) & 7));
    if (limit > ((size_t)64 << 10)) limit = (size_t)64 << 10; /* bombs cost time, not coverage */
    size_t piece = 1 + (size_t)data[1];
    const char *body = (const char *)data + 2;
    size_t n = size - 2;

    struct sbuf a = {0}, b = {0};
    int fin_a = 0, fin_b = 0;
    int st = run(coding, body, n, piece, limit, &a, &fin_a);
    if (st == DEC_OK && fin_a) {
        int st2 = run(coding, body, n, n ? n : 1, limit, &b, &fin_b);
        /* the same stream whole: the same bytes (a one-piece feed may only differ by OOM) */
        if (st2 != DEC_OOM && (st2 != DEC_OK || !fin_b || a.len != b.len || (a.len && memcmp(a.p, b.p, a.len) != 0)))
            __builtin_trap();
    }
    sbuf_free(&a);
    sbuf_free(&b);
    return 0;
}
