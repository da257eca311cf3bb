/*
 * fuzz_serve_http.c - libFuzzer target for the HTTP layer of `skycmd serve`: a raw request
 * (request line, header fields, body) through the server's own access handler, on_request()
 * and on_completed() of src/serve/http.c, as libmicrohttpd would call them, and on through
 * routes.c (routing, methods, auth, Content-Length, Content-Encoding, the framing checks),
 * decode.c (compressed bodies), the body limits and --max-buffered, prepare() (the "model"
 * scan, the request parser, the budgets) and batch.c for POST /v1/systemone/batch. The
 * decision itself is not run (no session: it fails with SKYCMD_E_MISUSE, a 500). The
 * parsing libmicrohttpd does (request line, field lines, chunked framing) is not fuzzed
 * here: the harness splits the input the simple way (serve_stubs.c has the rest).
 *
 * Input: an optional first line "<digit>\n" choosing the configuration (serve_stubs.h: bit
 * 0 an API key, 1 CORS, 2 a 256-byte body limit, 3 loading, 4 draining: '0'..'9', then
 * 'a'..'v' for 10..31), then "METHOD URL VERSION\r\n", header lines "Name: value", an empty
 * line and the body, which is handed over in pieces of 1 + (body length % 61) bytes.
 *
 * Checks besides "no crash, no leak, no UB": at most one response per request, and one once
 * the body is complete; every response a status 200-599 with a JSON body that parses (the
 * error envelope for errors) and header values without CR/LF; the --max-buffered account
 * back at zero after every request.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve_stubs.h"

static const char *line_end(const char *p, const char *end) {
    const char *q = memchr(p, '\n', (size_t)(end - p));
    return q ? q : end;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *p = (const char *)data, *end = p + size;
    unsigned variant = 0;
    if (size >= 2 && p[1] == '\n') {
        if (p[0] >= '0' && p[0] <= '9') variant = (unsigned)(p[0] - '0');
        else if (p[0] >= 'a' && p[0] <= 'v') variant = (unsigned)(p[0] - 'a' + 10);
        p += 2;
    }
    fz_serve_setup(variant);

    /* request line */
    const char *le = line_end(p, end);
    size_t ll = (size_t)(le - p);
    if (ll && p[ll - 1] == '\r') ll--;
    char method[16], url[2048], version[16];
    const char *sp1 = memchr(p, ' ', ll);
    if (!sp1 || (size_t)(sp1 - p) >= sizeof method || sp1 == p) return 0;
    const char *sp2 = memchr(sp1 + 1, ' ', ll - (size_t)(sp1 + 1 - p));
    if (!sp2) return 0;
    size_t ul = (size_t)(sp2 - sp1 - 1), vl = ll - (size_t)(sp2 + 1 - p);
    if (ul == 0 || ul >= sizeof url || vl >= sizeof version) return 0;
    memcpy(method, p, (size_t)(sp1 - p));
    method[sp1 - p] = '\0';
    memcpy(url, sp1 + 1, ul);
    url[ul] = '\0';
    char *q = strchr(url, '?'); /* libmicrohttpd hands the path without its query */
    if (q) *q = '\0';
    memcpy(version, sp2 + 1, vl);
    version[vl] = '\0';
    if (strlen(method) != (size_t)(sp1 - p)) return 0;
    p = le < end ? le + 1 : end;

    struct MHD_Connection *c = fz_conn_new();
    if (!c) return 0;
    /* header fields up to an empty line */
    while (p < end) {
        le = line_end(p, end);
        ll = (size_t)(le - p);
        if (ll && p[ll - 1] == '\r') ll--;
        const char *next = le < end ? le + 1 : end;
        if (ll == 0) {
            p = next;
            break;
        }
        const char *colon = memchr(p, ':', ll);
        if (colon) {
            const char *v = colon + 1, *ve = p + ll;
            while (v < ve && (*v == ' ' || *v == '\t')) v++;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
            fz_conn_add_header(c, p, (size_t)(colon - p), v, (size_t)(ve - v));
        }
        p = next;
    }
    const char *body = p;
    size_t body_len = (size_t)(end - p);

    void *con_cls = NULL;
    size_t zero = 0;
    enum MHD_Result ok = on_request(NULL, c, url, method, version, NULL, &zero, &con_cls);
    int complete = 0;
    if (ok == MHD_YES && fz_conn_responses(c) == 0) {
        size_t piece = 1 + body_len % 61, off = 0;
        while (ok == MHD_YES && off < body_len && fz_conn_responses(c) == 0) {
            size_t n = body_len - off < piece ? body_len - off : piece;
            size_t left = n;
            ok = on_request(NULL, c, url, method, version, body + off, &left, &con_cls);
            if (ok == MHD_YES && left != 0) __builtin_trap(); /* every byte handed over is taken */
            off += n;
        }
        if (ok == MHD_YES && fz_conn_responses(c) == 0) {
            zero = 0;
            ok = on_request(NULL, c, url, method, version, NULL, &zero, &con_cls);
            complete = ok == MHD_YES;
        }
    }
    if (complete && fz_conn_responses(c) != 1) __builtin_trap(); /* a finished request is answered */
    if (fz_conn_responses(c)) {
        size_t n = 0;
        const char *b = fz_conn_body(c, &n);
        fz_check_result(fz_conn_status(c), fz_conn_content_type(c), b, n);
    }
    on_completed(NULL, c, &con_cls,
                 fz_conn_responses(c) ? MHD_REQUEST_TERMINATED_COMPLETED_OK : MHD_REQUEST_TERMINATED_WITH_ERROR);
    if (con_cls) __builtin_trap();
    if (buffered_now() != 0) __builtin_trap(); /* --max-buffered given back */
    free_list_release();
    fz_conn_free(c);
    return 0;
}
