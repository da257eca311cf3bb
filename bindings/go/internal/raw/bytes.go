package raw

// Hand-written beside the generated layer: the two calls that must reach the C API with a
// length, where SWIG hands strings to C as NUL-terminated copies (package skycmd's
// bytes.go says why). They live in this package so that one cgo package links libskycmd
// (a second one would make some linkers, zig's for macOS among them, record the library
// twice in the executable).

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "skycmd.h"

static const char sky_go_empty[1] = "";

static char *sky_go_strdup(const char *s) {
    size_t n;
    char *p;
    if (!s) return NULL;
    n = strlen(s);
    p = (char *)malloc(n + 1);
    if (p) memcpy(p, s, n + 1);
    return p;
}

// The library's verdict on a request body of len bytes (NUL bytes included): its status and,
// on failure, a copy of its message in *msg (free()).
static int sky_go_request_check(const char *json, size_t len, char **msg) {
    skycmd_request *req = NULL;
    int st = skycmd_request_parse(json ? json : sky_go_empty, len, &req);
    *msg = NULL;
    if (st != SKYCMD_OK) *msg = sky_go_strdup(req ? skycmd_request_errmsg(req) : skycmd_strerror(st));
    skycmd_request_free(req);
    return st;
}

// skycmd_tokenizer_encode on the tokenizer of a SkyTokenizer box (bindings/swig/skycmd.i),
// whose first member is the tokenizer handle (NULL once closed): the text's len bytes, NUL
// bytes included, where the box's own encode() stops at the first NUL.
static int sky_go_encode(uintptr_t box, const char *text, size_t len, int32_t *ids, size_t cap,
                         size_t *n) {
    const skycmd_tokenizer *h = box ? *(const skycmd_tokenizer *const *)box : NULL;
    *n = 0;
    if (!h) return SKYCMD_E_MISUSE;
    return skycmd_tokenizer_encode(h, text ? text : sky_go_empty, len, ids, cap, n);
}
*/
import "C"

import "unsafe"

// bytesOf points at a string's bytes for a (pointer, length) C argument (nil when empty).
func bytesOf(s string) *C.char {
	if len(s) == 0 {
		return nil
	}
	return (*C.char)(unsafe.Pointer(unsafe.StringData(s)))
}

// RequestCheck parses all of request's bytes (NUL bytes included) with skycmd_request_parse:
// its status, and its message when it failed.
func RequestCheck(request string) (int, string) {
	var msg *C.char
	st := int(C.sky_go_request_check(bytesOf(request), C.size_t(len(request)), &msg))
	m := ""
	if msg != nil {
		m = C.GoString(msg)
		C.free(unsafe.Pointer(msg))
	}
	return st, m
}

// TokenizerEncode encodes all of text's bytes with the tokenizer of the SkyTokenizer box at
// address box into ids (nil: count only): the count (the full one even when ids is too small)
// and the status.
func TokenizerEncode(box uintptr, text string, ids []int32) (int, int) {
	var n C.size_t
	var p *C.int32_t
	if len(ids) > 0 {
		p = (*C.int32_t)(unsafe.Pointer(&ids[0]))
	}
	st := int(C.sky_go_encode(C.uintptr_t(box), bytesOf(text), C.size_t(len(text)), p, C.size_t(len(ids)), &n))
	return int(n), st
}
