package skycmd

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The built-in model: DefaultModelPath/OpenDefault follow $SKYCMD_DEFAULT_MODEL (the C
// library reads the environment Go's os.Setenv writes under cgo) and answer like Open of
// that path; a missing one is ErrNotFound and fs.ErrNotExist. Without the variable the
// library looks beside itself (run-tests.sh: the build tree's share/skycmd/models).
func TestDefaultModel(t *testing.T) {
	path := testModel(t)
	req := exampleRequest(t)
	m, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.Decide(context.Background(), req)
	m.Close()
	if err != nil {
		t.Fatal(err)
	}

	t.Setenv("SKYCMD_DEFAULT_MODEL", path)
	if p, err := DefaultModelPath(); err != nil || p != path {
		t.Fatalf("DefaultModelPath = %q, %v; want %q", p, err, path)
	}
	for _, open := range []func() (*Model, error){
		func() (*Model, error) { return OpenDefault() },
		func() (*Model, error) { return OpenDefaultContext(context.Background(), WithThreads(1)) },
	} {
		d, err := open()
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.Decide(context.Background(), req)
		d.Close()
		if err != nil || dump(got) != dump(want) || got.JSON != want.JSON {
			t.Fatalf("the default model answers differently: %v", err)
		}
	}

	missing := filepath.Join(tmpDir, "no-default.gguf")
	t.Setenv("SKYCMD_DEFAULT_MODEL", missing)
	_, err = DefaultModelPath()
	var e *Error
	if !errors.As(err, &e) || e.Status != ErrNotFound || e.Code() != "SKYCMD_E_NOT_FOUND" ||
		!errors.Is(err, fs.ErrNotExist) || !strings.Contains(e.Message, missing) {
		t.Fatalf("missing default model: %#v", err)
	}
	if _, err := OpenDefault(); !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("OpenDefault of a missing default model: %v", err)
	}

	t.Setenv("SKYCMD_DEFAULT_MODEL", "") // empty: as if unset
	p, err := DefaultModelPath()
	if err != nil {
		if !errors.Is(err, ErrNotFound) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "looked in") {
			t.Fatalf("no built-in model: %v", err)
		}
		t.Logf("no built-in model beside the library: %v", err)
		return
	}
	if filepath.Base(p) != "s1-pico-flappy.gguf" || !filepath.IsAbs(p) {
		t.Fatalf("built-in model path %q", p)
	}
	d, err := OpenDefault()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Name() != "s1-pico-flappy" {
		t.Fatalf("the built-in model %s is named %q", p, d.Name())
	}
}

// Error naming: the code is the status name, the number is int(Status); a file that does not
// exist also matches fs.ErrNotExist (with the errno), other failures do not.
func TestErrorCodesAndNotExist(t *testing.T) {
	missing := filepath.Join(tmpDir, "does-not-exist.gguf")
	_, err := Open(missing)
	var e *Error
	if !errors.As(err, &e) || e.Code() != "SKYCMD_E_IO" || int(e.Status) != 4 || e.Errno != syscall.ENOENT ||
		!errors.Is(err, ErrIO) || !errors.Is(err, fs.ErrNotExist) || !os.IsNotExist(errors.Unwrap(err)) {
		t.Fatalf("missing model: %#v", err)
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) || errno != syscall.ENOENT {
		t.Fatalf("errors.As errno: %v", errno)
	}
	if _, err := OpenContext(context.Background(), missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("OpenContext of a missing model: %v", err)
	}
	if _, err := Inspect(missing); !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, ErrIO) {
		t.Fatalf("inspect of a missing file: %v", err)
	}
	junk := filepath.Join(tmpDir, "junk-errno.gguf")
	os.WriteFile(junk, []byte("not a gguf file"), 0o644)
	_, err = Open(junk)
	if !errors.As(err, &e) || e.Code() != "SKYCMD_E_FORMAT" || e.Errno != 0 || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("junk file: %#v", err)
	}
}

// OpenContext answers like Open; a context ended before it starts is ErrCancelled matching
// ctx.Err(); one that ends while it loads either lets the model open or cancels the open.
func TestOpenContext(t *testing.T) {
	path := testModel(t)
	req := exampleRequest(t)
	m, err := OpenContext(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	r1, err := m.Decide(context.Background(), req)
	m.Close()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var calls int
	m, err = OpenContext(ctx, path, WithProgress(func(done, total uint64) { calls++ }))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := m.Decide(context.Background(), req)
	m.Close()
	if err != nil || dump(r1) != dump(r2) {
		t.Fatalf("OpenContext answers differently: %v", err)
	}
	cancel()
	if _, err := OpenContext(ctx, path); !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before it started: %v", err)
	}
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		go cancel()
		m, err := OpenContext(ctx, path)
		if err == nil {
			m.Close()
		} else if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled while loading: %v", err)
		}
	}
	t.Logf("open progress reports: %d", calls)
}
