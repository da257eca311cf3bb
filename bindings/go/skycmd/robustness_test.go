package skycmd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// catch runs f and returns what it panicked with (nil if it returned).
func catch(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// A panic in a WithProgress function happens on the binding's watcher goroutine; it must
// cancel the call, leave no output and reach the caller's recover with its own value
// (without the fix it killed the test binary with exit status 2).
func TestProgressPanicReachesTheCaller(t *testing.T) {
	path := testModel(t)
	boom := errors.New("boom")
	panicky := WithProgress(func(done, total uint64) { panic(boom) })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []context.Context{context.Background(), ctx} {
		out := filepath.Join(tmpDir, "panic-q8.gguf")
		var err error
		got := catch(func() { err = Quantize(c, path, out, WithType(TypeQ8_0), panicky) })
		if got != boom {
			t.Fatalf("quantize: recovered %v (err %v), want the progress function's panic", got, err)
		}
		if _, serr := os.Stat(out); !os.IsNotExist(serr) {
			t.Errorf("quantize whose progress panicked left %s", out)
		}
	}
	// A regular file that was there before is not left as the output either.
	out := filepath.Join(tmpDir, "panic-existing.gguf")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := catch(func() { _ = Quantize(context.Background(), path, out, panicky) }); got != boom {
		t.Fatalf("quantize over a file: recovered %v", got)
	}
	if b, err := os.ReadFile(out); err == nil && string(b) != "old" {
		t.Errorf("quantize whose progress panicked left its output at %s", out)
	}

	dir := filepath.Join(tmpDir, "laya-panic")
	if err := RandomModel("s1-pico", dir, WithLayout(LayoutLaya)); err != nil {
		t.Fatal(err)
	}
	conv := filepath.Join(tmpDir, "panic-converted.gguf")
	if got := catch(func() { _ = Convert(context.Background(), dir, conv, panicky) }); got != boom {
		t.Fatalf("convert: recovered %v", got)
	}
	if _, err := os.Stat(conv); !os.IsNotExist(err) {
		t.Errorf("convert whose progress panicked left %s", conv)
	}

	// runtime.Goexit in the function (t.FailNow does that) ends the calling goroutine.
	exited := make(chan bool, 1)
	goexitOut := filepath.Join(tmpDir, "goexit-q8.gguf")
	go func() {
		returned := false
		defer func() { exited <- !returned }()
		_ = Quantize(context.Background(), path, goexitOut, WithProgress(func(done, total uint64) { runtime.Goexit() }))
		returned = true
	}()
	select {
	case ok := <-exited:
		if !ok {
			t.Error("Quantize returned after its progress function called runtime.Goexit")
		}
	case <-time.After(time.Minute):
		t.Fatal("Quantize with a Goexit in its progress function did not end")
	}
	if _, err := os.Stat(goexitOut); !os.IsNotExist(err) {
		t.Errorf("quantize whose progress called Goexit left %s", goexitOut)
	}

	// An open whose progress function panics: the panic reaches the caller and the model,
	// if the load got that far, is closed. (Loads that report no progress just open.)
	reported := false
	got := catch(func() {
		m, err := OpenContext(ctx, path, WithProgress(func(done, total uint64) {
			reported = true
			panic(boom)
		}))
		if err == nil {
			m.Close()
		}
	})
	if reported && got != boom {
		t.Errorf("open: recovered %v", got)
	}

	// The binding is still fine afterwards.
	fine := filepath.Join(tmpDir, "after-panic-q8.gguf")
	calls := 0
	if err := Quantize(context.Background(), path, fine, WithProgress(func(done, total uint64) { calls++ })); err != nil || calls == 0 {
		t.Fatalf("quantize after the panics: %v (%d reports)", err, calls)
	}
}

func wantInvalid(t *testing.T, what string, err error, arg string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Status != ErrInvalidArgument || !strings.Contains(e.Message, arg) ||
		!strings.Contains(e.Message, "NUL") {
		t.Errorf("%s: %v, want ErrInvalidArgument naming %q and the NUL byte", what, err, arg)
	}
}

// Strings with a NUL byte are not cut at it: C-string arguments are refused, request bodies
// and tokenizer text go to the library with their full length.
func TestNULBytesAreNotCut(t *testing.T) {
	path := testModel(t)
	req := exampleRequest(t)
	ctx := context.Background()

	_, err := Open(path + "\x00xyz")
	wantInvalid(t, "open", err, "path")
	_, err = OpenContext(ctx, path+"\x00xyz")
	wantInvalid(t, "open context", err, "path")
	_, err = Open(path, WithModelName("a\x00b"))
	wantInvalid(t, "model name", err, "model name")
	_, err = Inspect(path + "\x00")
	wantInvalid(t, "inspect", err, "path")
	_, err = OpenTokenizer(filepath.Join(tmpDir, "laya-nul", "tokenizer", "tokenizer.json") + "\x00x")
	wantInvalid(t, "open tokenizer", err, "path")
	out := filepath.Join(tmpDir, "nul-q8.gguf")
	wantInvalid(t, "quantize out", Quantize(ctx, path, out+"\x00x"), "out path")
	wantInvalid(t, "quantize in", Quantize(ctx, path+"\x00x", out), "in path")
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused quantize wrote %s", out)
	}
	wantInvalid(t, "random preset", RandomModel("s1-pico\x00x", out), "preset")
	wantInvalid(t, "random out", RandomModel("s1-pico", out+"\x00x"), "out path")
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused random model wrote %s", out)
	}
	wantInvalid(t, "convert", Convert(ctx, tmpDir+"\x00x", out), "laya dir")
	wantInvalid(t, "convert name", Convert(ctx, tmpDir, out, WithName("n\x00m")), "name")

	m, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Int("block_count\x00zz"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Int with a NUL byte: %v", err)
	}
	// The library judges the whole body: the garbage after the NUL is "extra data".
	body := strings.TrimRight(req, " \n") + "\x00garbage"
	var e *Error
	_, err = m.Decide(ctx, body)
	if !errors.As(err, &e) || e.Status != ErrJSON || !strings.Contains(e.Message, "extra data") {
		t.Errorf("decide with trailing garbage after a NUL: %v", err)
	}
	_, err = m.Decide(ctx, strings.Replace(req, `"state": "`, "\"state\": \"\x00", 1))
	if !errors.As(err, &e) || e.Status != ErrJSON {
		t.Errorf("decide with a NUL byte in a string: %v", err)
	}
	_, err = m.DecideBatch(ctx, []string{req, body})
	if !errors.As(err, &e) || e.Status != ErrJSON || !strings.HasPrefix(e.Message, "request 1: ") ||
		!strings.Contains(e.Message, "extra data") {
		t.Errorf("decide batch with trailing garbage after a NUL: %v", err)
	}
	if _, err := m.Decide(ctx, req); err != nil {
		t.Fatalf("the request itself: %v", err)
	}

	tok, err := m.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	ab, err := tok.Encode("ab")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode("ab\x00cd")
	if err != nil || len(ids) <= len(ab) {
		t.Fatalf("encode of text with a NUL byte: %v %v (\"ab\" is %v)", ids, err, ab)
	}
	// The NUL byte is encoded (byte-level BPE writes byte 0 as "Ā"). Decoding cannot give it
	// back: skycmd_tokenizer_decode returns a NUL-terminated string.
	nul := false
	for _, id := range ids {
		if s, _ := tok.Token(id); strings.Contains(s, "Ā") {
			nul = true
		}
	}
	if !nul {
		t.Errorf("no token of %v holds the NUL byte", ids)
	}
	if n, err := tok.Count("ab\x00cd"); err != nil || n != len(ids) {
		t.Errorf("count of text with a NUL byte: %d %v, encode gave %d", n, err, len(ids))
	}
	if ids, err := tok.Encode(""); err != nil || ids == nil || len(ids) != 0 {
		t.Errorf("encode of empty text: %v %v", ids, err)
	}
	long := strings.Repeat("vy 0 dx 36 ünïcode — ", 50)
	if ids, err := tok.Encode(long); err != nil || len(ids) == 0 {
		t.Errorf("encode of a long text: %d ids, %v", len(ids), err)
	} else if back, _ := tok.Decode(ids); back != long {
		t.Errorf("long text does not round-trip")
	}
}
