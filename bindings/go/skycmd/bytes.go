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

import (
	"fmt"
	"strings"

	"github.com/skycmd/libskycmd/bindings/go/internal/raw"
)

// nulArgument refuses a C-string argument that holds a NUL byte (what names the argument).
func nulArgument(op, what, s string) error {
	if strings.IndexByte(s, 0) < 0 {
		return nil
	}
	return &Error{Op: op, Status: ErrInvalidArgument, Message: fmt.Sprintf("%s %q contains a NUL byte", what, s)}
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
	st, m := raw.RequestCheck(request)
	if st == int(OK) {
		st, m = int(ErrInvalidArgument), "the request contains a NUL byte"
	}
	return &Error{Op: op, Status: Status(st), Message: prefix + m}
}

// encodeText encodes all of text's bytes with the box's tokenizer. With keep, the ids are
// returned; else only their count (capacity 0).
func encodeText(b raw.SkyTokenizer, text string, keep bool) ([]int32, int, int) {
	var ids []int32
	if keep && len(text) > 0 {
		// A byte-level token covers at least one byte; the retry below covers any other case.
		ids = make([]int32, len(text))
	}
	n, st := raw.TokenizerEncode(b.Swigcptr(), text, ids)
	if st == int(OK) && keep && n > len(ids) {
		ids = make([]int32, n)
		n, st = raw.TokenizerEncode(b.Swigcptr(), text, ids)
	}
	if st != int(OK) {
		return nil, 0, st
	}
	if keep {
		ids = ids[:n]
	}
	return ids, n, st
}
