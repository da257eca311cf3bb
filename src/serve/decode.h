/*
 * decode.h - streaming decompression of request bodies (Content-Encoding zstd, gzip,
 * deflate) with the body limit applied to the decoded size. See decode.c.
 */
#ifndef SKYCMD_SERVE_DECODE_H
#define SKYCMD_SERVE_DECODE_H

#include <stddef.h>

#include "serve_util.h"

enum body_coding { CODING_IDENTITY = 0, CODING_GZIP = 1, CODING_DEFLATE = 2, CODING_ZSTD = 3 };
enum decode_status { DEC_OK = 0, DEC_OVER_LIMIT = 1, DEC_ERROR = 2, DEC_OOM = 3 };

struct body_decoder;

/* The coding a Content-Encoding header names (NULL, "" or identity: CODING_IDENTITY);
 * -1 for anything else, lists included. */
int coding_of(const char *header);
const char *coding_name(int coding);
struct body_decoder *decoder_new(int coding, size_t limit);
/* Decode n more bytes of the body, appending to out; DEC_OVER_LIMIT when out would pass
 * limit bytes (out keeps what fitted). */
int decoder_feed(struct body_decoder *d, const char *in, size_t n, struct sbuf *out, size_t limit);
/* DEC_OK when the stream ended cleanly, DEC_ERROR when it is truncated. */
int decoder_finish(struct body_decoder *d);
/* Bytes the decoder holds (its state and window). */
size_t decoder_memory(const struct body_decoder *d);
void decoder_free(struct body_decoder *d);

#endif
