// Package raw is the SWIG-generated layer over bindings/swig/skycmd.i. The generated files
// (skycmd.go, skycmd_wrap.c) are produced by `go generate` and never edited by hand or
// committed; this file only carries the cgo flags, which apply to the whole package.
package raw

// #cgo pkg-config: skycmd
// #cgo CFLAGS: -fno-strict-aliasing
import "C"

//go:generate swig -go -cgo -intgosize 64 -package raw -I../../../../include -outdir . -o skycmd_wrap.c ../../../swig/skycmd.i
