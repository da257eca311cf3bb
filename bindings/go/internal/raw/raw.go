// Package raw is the SWIG-generated layer over bindings/swig/skycmd.i. The generated files
// (skycmd.go, skycmd_wrap.c) are committed, so a module that depends on this one builds with
// cgo and the installed libskycmd alone (found by `pkg-config skycmd`), without SWIG. They
// are made by bindings/generate.sh (pinned SWIG 4.5.1), never edited by hand; its --check
// mode (run by bindings/run-tests.sh) fails when they are stale. This file only carries the
// cgo flags, which apply to the whole package; bytes.go holds the two hand-written calls that
// pass a string with its length.
package raw

// #cgo pkg-config: skycmd
// #cgo CFLAGS: -fno-strict-aliasing
import "C"
