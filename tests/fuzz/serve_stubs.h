/*
 * serve_stubs.h - what the serve fuzz targets (fuzz_serve_*.c) share: the server's HTTP
 * layer (http.c, routes.c, batch.c, models.c, metrics.c, decode.c, serve_util.c) linked
 * without libmicrohttpd and without the worker pool, the I/O loop or the connection
 * manager. serve_stubs.c defines the libmicrohttpd functions those files call over a fake
 * connection (headers in, one recorded response out) and the rest of the server they need
 * (the global server S, its configuration, a model set of two names with no model behind
 * them, a worker pool that answers on the calling thread with no session).
 */
#ifndef SKYCMD_FUZZ_SERVE_STUBS_H
#define SKYCMD_FUZZ_SERVE_STUBS_H

#include <stddef.h>

#include "serve_internal.h"

/* The server's configuration variants (bits): an API key ("fuzz-key"), a CORS origin, a
 * 256-byte body limit with a 1 KiB --max-buffered, the server loading (not ready) and
 * draining. */
enum { FZ_API_KEY = 1, FZ_CORS = 2, FZ_SMALL = 4, FZ_LOADING = 8, FZ_DRAINING = 16 };
void fz_serve_setup(unsigned variant);

extern struct model_set fz_models;                 /* "pico" and "nano", no model */
extern skycmd_session *fz_sessions[SERVE_MAX_MODELS]; /* NULL: decide fails with MISUSE */

/* A fake connection: the request's header fields and what the server queued. */
struct MHD_Connection *fz_conn_new(void);
void fz_conn_free(struct MHD_Connection *c);
void fz_conn_add_header(struct MHD_Connection *c, const char *key, size_t key_size, const char *value,
                        size_t value_size);
int fz_conn_nth(const struct MHD_Connection *c); /* requests started on it so far */
int fz_conn_responses(const struct MHD_Connection *c);
unsigned fz_conn_status(const struct MHD_Connection *c);
const char *fz_conn_body(const struct MHD_Connection *c, size_t *len);
const char *fz_conn_content_type(const struct MHD_Connection *c);

/* Traps unless the response r holds is well formed: a status from 200 to 599, a JSON
 * body that parses when it says it is JSON. */
void fz_check_result(unsigned status, const char *ctype, const char *body, size_t len);

#endif
