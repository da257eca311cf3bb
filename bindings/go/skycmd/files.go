package skycmd

import (
	"context"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skycmd/libskycmd/bindings/go/internal/raw"
)

// progressInterval is how often a running call's progress is looked at for WithProgress.
const progressInterval = 50 * time.Millisecond

// call runs one handle-less C call with its own error box and options bag. With a
// cancellable ctx or a WithProgress function, a watcher goroutine runs beside the C call:
// it raises the options box's cancel flag when ctx ends (the C progress callback reads it
// and the call fails with ErrCancelled) and hands the progress the box recorded to the
// function. No callback crosses from C into Go.
//
// A panic in the progress function (or runtime.Goexit, e.g. t.FailNow) happens on the
// watcher goroutine: it raises the cancel flag, and once the C call is over it is raised
// again on the calling goroutine, where the caller's recover sees it. A call that completed
// anyway is undone first: out (the output file, "" for none) is removed.
func call(ctx context.Context, op string, opts []Option, out string, fn func(c raw.SkyCall, o raw.SkyOptions) int) (raw.SkyCall, error) {
	if loadErr != nil {
		return nil, loadErr
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return nil, &Error{Op: op, Status: ErrCancelled, Message: "cancelled before it started", cause: err}
	}
	o, set, err := build(op, opts)
	if err != nil {
		return nil, err
	}
	defer raw.DeleteSkyOptions(o)
	c := raw.NewSkyCall()
	if c.Swigcptr() == 0 {
		return nil, &Error{Op: op, Status: ErrNoMem}
	}
	var st int
	var failed atomic.Pointer[callbackFailure]
	var undo func() // removes the output of a call completed despite a failed callback
	if out != "" && set.progress != nil {
		undo = outputRemover(out)
	}
	if ctx.Done() == nil && set.progress == nil {
		st = fn(c, o)
	} else {
		// A context that ended since the check above cancels before the C call starts.
		select {
		case <-ctx.Done():
			o.Cancel()
		default:
		}
		finished := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			watch(ctx, o, guardProgress(set.progress, o, &failed), finished)
		}()
		st = fn(c, o)
		close(finished)
		wg.Wait()
	}
	if f := failed.Load(); f != nil {
		raw.DeleteSkyCall(c)
		if st == int(OK) && undo != nil {
			undo()
		}
		f.rethrow()
	}
	if st != 0 {
		e := callError(op, st, c).(*Error)
		if st == int(ErrCancelled) && ctx.Err() != nil {
			e.cause = ctx.Err()
		}
		raw.DeleteSkyCall(c)
		return nil, e
	}
	return c, nil
}

// callbackFailure is how the caller's progress function ended on the binding's goroutine
// when it did not return: a panic (its value) or runtime.Goexit.
type callbackFailure struct {
	value  any
	goexit bool
}

// rethrow raises the failure on the calling goroutine: the same panic value (the binding's
// goroutine is not the caller's, so only this makes a recover of the caller see it), or
// runtime.Goexit.
func (f *callbackFailure) rethrow() {
	if f.goexit {
		runtime.Goexit()
	}
	panic(f.value)
}

// guardProgress wraps the caller's progress function for the watcher goroutine. When it
// panics or calls runtime.Goexit, the failure goes into *failed, o's cancel flag is raised
// (the library stops at its next progress report, leaving no output) and no further report
// is made; the goroutine that made the call re-raises it (callbackFailure.rethrow).
func guardProgress(progress func(done, total uint64), o raw.SkyOptions, failed *atomic.Pointer[callbackFailure]) func(done, total uint64) {
	if progress == nil {
		return nil
	}
	return func(done, total uint64) {
		if failed.Load() != nil {
			return
		}
		returned := false
		defer func() {
			if returned {
				return
			}
			f := &callbackFailure{}
			if r := recover(); r != nil {
				f.value = r
			} else {
				f.goexit = true // recover is nil during runtime.Goexit, which goes on
			}
			failed.Store(f)
			o.Cancel()
		}()
		progress(done, total)
		returned = true
	}
}

// watch cancels o when ctx ends and reports o's progress to progress (if any) every
// progressInterval while it changes, and once more when the call has finished.
func watch(ctx context.Context, o raw.SkyOptions, progress func(done, total uint64), finished <-chan struct{}) {
	var tick <-chan time.Time
	if progress != nil {
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		tick = t.C
	}
	var seen int64
	report := func() {
		if progress == nil {
			return
		}
		if n := o.ProgressCalls(); n != seen {
			seen = n
			progress(uint64(o.ProgressDone()), uint64(o.ProgressTotal()))
		}
	}
	cancelled := ctx.Done()
	for {
		select {
		case <-finished:
			report()
			return
		case <-cancelled:
			o.Cancel()
			cancelled = nil
		case <-tick:
			report()
		}
	}
}

func run(ctx context.Context, op string, opts []Option, out string, fn func(c raw.SkyCall, o raw.SkyOptions) int) error {
	c, err := call(ctx, op, opts, out, fn)
	if err == nil {
		raw.DeleteSkyCall(c)
	}
	return err
}

// Convert writes a Laya checkpoint directory as one GGUF file (WithType, WithHeadType,
// WithName, WithPre, WithProgress). When ctx ends the conversion stops at its next progress
// report with an *Error of ErrCancelled that also matches ctx.Err() (errors.Is). On any
// failure no partial output exists.
func Convert(ctx context.Context, layaDir, outPath string, opts ...Option) error {
	if err := firstError(nulArgument("convert", "laya dir", layaDir), nulArgument("convert", "out path", outPath)); err != nil {
		return err
	}
	return run(ctx, "convert", opts, outPath, func(c raw.SkyCall, o raw.SkyOptions) int {
		return c.Convert(layaDir, outPath, o)
	})
}

// RandomModel writes a deterministic random model of a preset ("s1-pico", "s1-nano",
// "s1-micro", "base", "large") (WithSeed, WithMassive, WithLayout).
func RandomModel(preset, outPath string, opts ...Option) error {
	if err := firstError(nulArgument("random model", "preset", preset), nulArgument("random model", "out path", outPath)); err != nil {
		return err
	}
	return run(context.Background(), "random model", opts, outPath, func(c raw.SkyCall, o raw.SkyOptions) int {
		return c.RandomModel(preset, outPath, o)
	})
}

// Quantize re-types the tensors of a GGUF file (WithType, WithHeadType, WithProgress);
// ctx cancels it as it does Convert.
func Quantize(ctx context.Context, inPath, outPath string, opts ...Option) error {
	if err := firstError(nulArgument("quantize", "in path", inPath), nulArgument("quantize", "out path", outPath)); err != nil {
		return err
	}
	return run(ctx, "quantize", opts, outPath, func(c raw.SkyCall, o raw.SkyOptions) int {
		return c.Quantize(inPath, outPath, o)
	})
}

// Inspect returns the printed header, metadata and tensor table of a GGUF file
// (WithMaxArray, WithJSON).
func Inspect(path string, opts ...Option) (string, error) {
	if err := nulArgument("inspect", "path", path); err != nil {
		return "", err
	}
	c, err := call(context.Background(), "inspect", opts, "", func(c raw.SkyCall, o raw.SkyOptions) int {
		return c.Inspect(path, o)
	})
	if err != nil {
		return "", err
	}
	defer raw.DeleteSkyCall(c)
	return c.TakeOutput(), nil
}

// outputRemover returns what removes the output a call is about to write at out: all of it
// when nothing was there before the call (a GGUF file, or a Laya directory), else only a
// regular file (which the call replaced); a directory that was there is left alone.
func outputRemover(out string) func() {
	before, err := os.Lstat(out)
	existed := err == nil
	return func() {
		if !existed {
			_ = os.RemoveAll(out)
		} else if before.Mode().IsRegular() {
			_ = os.Remove(out)
		}
	}
}

// firstError is the first non-nil error of errs.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
