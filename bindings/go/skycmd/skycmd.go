// Package skycmd is the Go binding of libskycmd: it runs "System One" decision models
// (ModernBERT encoder + Laya head) stored in GGUF files.
//
// Import it as "github.com/skycmd/libskycmd/bindings/go/skycmd" (module
// github.com/skycmd/libskycmd/bindings/go; the package name is the last path element). It
// builds with cgo against the installed libskycmd (`pkg-config skycmd`); the SWIG-generated
// layer is committed, so no SWIG and no `go generate` is needed.
//
// Contract:
//   - Every failure is a *Error carrying the library's Status (its name is Code(), e.g.
//     "SKYCMD_E_IO"; the number is int(Status)) and message; errors.Is(err, skycmd.ErrIO)
//     (or any other Status) matches on the status. A file that does not exist (the library's
//     errno ENOENT: a missing model, the built-in model not installed) also matches
//     fs.ErrNotExist, and errors.As(err, &syscall.Errno) gives the errno.
//   - A *Model may be used from any number of goroutines at once (the C model is immutable);
//     each Decide call borrows a session from the model's pool, so sessions, which belong to
//     one thread at a time in C, are never shared between concurrent calls.
//   - Close is idempotent, waits for running Decide calls, and a finalizer closes a model
//     that was dropped without Close (a safety net, not a substitute).
//   - Responses are plain Go values copied out of the C response, which is freed at once.
//   - The package refuses to work (every call returns ErrVersion) on a libskycmd older than
//     the header it was built against.
package skycmd

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/skycmd/libskycmd/bindings/go/internal/raw"
)

// Status is a libskycmd status code (pinned values, see skycmd.h). A Status is itself an
// error so that errors.Is(err, skycmd.ErrIO) works.
type Status int

// The pinned status values of skycmd.h.
const (
	OK                 Status = 0
	ErrInvalidArgument Status = 1
	ErrMisuse          Status = 2
	ErrNoMem           Status = 3
	ErrIO              Status = 4
	ErrFormat          Status = 5
	ErrUnsupported     Status = 6
	ErrBusy            Status = 7
	ErrJSON            Status = 8
	ErrRequest         Status = 9
	ErrTooLarge        Status = 10
	ErrVersion         Status = 11
	ErrNotFound        Status = 12
	ErrInternal        Status = 13
	ErrCancelled       Status = 14
)

// Name is the C name of the status, e.g. "SKYCMD_E_IO".
func (s Status) Name() string { return raw.Skycmd_status_name(int(s)) }

// Error describes the status in English (from the C library, never re-mapped here).
func (s Status) Error() string { return raw.Skycmd_strerror(int(s)) }

// String is Name.
func (s Status) String() string { return s.Name() }

// Error is a failed libskycmd call: the operation, the status and the library's message.
type Error struct {
	Op      string // e.g. "open", "decide", "convert"
	Status  Status
	Message string
	// Errno is the operating system's error behind the failure when a system call failed
	// (skycmd_error_errno: syscall.ENOENT for a file that does not exist), else 0.
	Errno syscall.Errno
	cause error // what made the call stop (a context's error), for errors.Is
}

// Code is the status name, e.g. "SKYCMD_E_IO" (the same in every binding).
func (e *Error) Code() string { return e.Status.Name() }

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("skycmd %s: %s: %s", e.Op, e.Status.Name(), e.Status.Error())
	}
	return fmt.Sprintf("skycmd %s: %s: %s", e.Op, e.Status.Name(), e.Message)
}

// Is matches a Status target with the same value.
func (e *Error) Is(target error) bool {
	var s Status
	if errors.As(target, &s) {
		return s == e.Status
	}
	return false
}

// Unwrap is the context error of a call cancelled through its context, so that
// errors.Is(err, context.Canceled) holds for a cancelled Convert; else the Errno, so that
// errors.Is(err, fs.ErrNotExist) holds for a missing file; else nil.
func (e *Error) Unwrap() error {
	if e.cause != nil {
		return e.cause
	}
	if e.Errno != 0 {
		return e.Errno
	}
	return nil
}

func newError(op string, st int, msg string) error {
	if st == int(OK) {
		return nil
	}
	return &Error{Op: op, Status: Status(st), Message: msg}
}

// callError is the failure of a SkyCall: its status, message and errno.
func callError(op string, st int, c raw.SkyCall) error {
	if st == int(OK) {
		return nil
	}
	return &Error{Op: op, Status: Status(st), Message: c.Message(), Errno: syscall.Errno(c.OsError())}
}

// HeaderVersionNumber is SKYCMD_VERSION_NUMBER of the header this package was built with.
var HeaderVersionNumber = raw.SKYCMD_HEADER_VERSION_NUMBER

// loadErr is the result of the version check made once when the package loads.
var loadErr = CheckVersion(HeaderVersionNumber)

// CheckVersion reports whether the running library is at least version n (MAJOR*10000 +
// MINOR*100 + PATCH) with the same major; *Error with ErrVersion otherwise. The package
// calls it with HeaderVersionNumber when it loads.
func CheckVersion(n uint) error {
	c := raw.NewSkyCall()
	if c.Swigcptr() == 0 {
		return &Error{Op: "check version", Status: ErrNoMem}
	}
	defer raw.DeleteSkyCall(c)
	st := c.CheckVersion(n)
	return newError("check version", st, c.Message())
}

// Version is the running library's version string, e.g. "0.1.0".
func Version() string { return raw.Skycmd_version_string() }

// VersionNumber is the running library's MAJOR*10000 + MINOR*100 + PATCH.
func VersionNumber() uint { return raw.Skycmd_version_number() }

// BuildID identifies the library build, e.g. "git 1a2b3c4 Release".
func BuildID() string { return raw.Skycmd_build_id() }

// CPUFeatures lists the CPU features the kernels use.
func CPUFeatures() string { return raw.Skycmd_cpu_features() }
