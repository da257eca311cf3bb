package skycmd

// Go strings may hold NUL bytes; the SWIG layer (internal/raw) hands every string to C as a
// NUL-terminated copy, so C would see only the part before the first NUL. This file keeps
// those bytes from being cut silently:
//   - arguments the C API takes as C strings (paths, option values, names) are refused with
//     ErrInvalidArgument when they hold a NUL byte, as os.Open refuses such a path;
//   - arguments the C API takes as (pointer, length) go to the library whole: a request body
//     holding a NUL byte is judged by skycmd_request_parse on all its bytes (never valid JSON:
//     the library's ErrJSON and message, e.g. "extra data after the JSON value"), and
//     tokenizer text is encoded by skycmd_tokenizer_encode with its full length.

/*
#cgo pkg-config: skycmd
#cgo CFLAGS: -fno-strict-aliasing
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

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/skycmd/libskycmd/bindings/go/internal/raw"
)

// nulArgument refuses a C-string argument that holds a NUL byte (what names the argument).
func nulArgument(op, what, s string) error {
	if strings.IndexByte(s, 0) < 0 {
		return nil
	}
	return &Error{Op: op, Status: ErrInvalidArgument, Message: fmt.Sprintf("%s %q contains a NUL byte", what, s)}
}

// bytesOf points at a string's bytes for a (pointer, length) C argument (nil when empty).
func bytesOf(s string) *C.char {
	if len(s) == 0 {
		return nil
	}
	return (*C.char)(unsafe.Pointer(unsafe.StringData(s)))
}

// requestBytesError is nil for a request body without NUL bytes (the SWIG layer passes it
// whole). One with a NUL byte is parsed by the library on all its bytes, and its error (the
// message after prefix, e.g. "request 2: ") is returned. JSON has no place for a raw NUL
// byte, so the parse cannot succeed; if it ever did, the body is refused as an invalid
// argument rather than sent on cut.
func requestBytesError(op, prefix, request string) error {
	if strings.IndexByte(request, 0) < 0 {
		return nil
	}
	var msg *C.char
	st := int(C.sky_go_request_check(bytesOf(request), C.size_t(len(request)), &msg))
	m := ""
	if msg != nil {
		m = C.GoString(msg)
		C.free(unsafe.Pointer(msg))
	}
	if st == int(OK) {
		st, m = int(ErrInvalidArgument), "the request contains a NUL byte"
	}
	return &Error{Op: op, Status: Status(st), Message: prefix + m}
}

// encodeText encodes all of text's bytes with the box's tokenizer. With keep, the ids are
// returned; else only their count (capacity 0).
func encodeText(b raw.SkyTokenizer, text string, keep bool) ([]int32, int, int) {
	var n C.size_t
	var ids []int32
	if keep && len(text) > 0 {
		// A byte-level token covers at least one byte; the retry below covers any other case.
		ids = make([]int32, len(text))
	}
	call := func() int {
		var p *C.int32_t
		if len(ids) > 0 {
			p = (*C.int32_t)(unsafe.Pointer(&ids[0]))
		}
		return int(C.sky_go_encode(C.uintptr_t(b.Swigcptr()), bytesOf(text), C.size_t(len(text)), p,
			C.size_t(len(ids)), &n))
	}
	st := call()
	if st == int(OK) && keep && int(n) > len(ids) {
		ids = make([]int32, int(n))
		st = call()
	}
	if st != int(OK) {
		return nil, 0, st
	}
	if keep {
		ids = ids[:int(n)]
	}
	return ids, int(n), st
}
