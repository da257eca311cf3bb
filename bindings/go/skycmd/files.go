package skycmd

import (
	"context"
	"sync"
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
func call(ctx context.Context, op string, opts []Option, fn func(c raw.SkyCall, o raw.SkyOptions) int) (raw.SkyCall, error) {
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
			watch(ctx, o, set.progress, finished)
		}()
		st = fn(c, o)
		close(finished)
		wg.Wait()
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

func run(ctx context.Context, op string, opts []Option, fn func(c raw.SkyCall, o raw.SkyOptions) int) error {
	c, err := call(ctx, op, opts, fn)
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
	return run(ctx, "convert", opts, func(c raw.SkyCall, o raw.SkyOptions) int {
		return c.Convert(layaDir, outPath, o)
	})
}

// RandomModel writes a deterministic random model of a preset ("s1-pico", "s1-nano",
// "s1-micro", "base", "large") (WithSeed, WithMassive, WithLayout).
func RandomModel(preset, outPath string, opts ...Option) error {
	return run(context.Background(), "random model", opts, func(c raw.SkyCall, o raw.SkyOptions) int {
		return c.RandomModel(preset, outPath, o)
	})
}

// Quantize re-types the tensors of a GGUF file (WithType, WithHeadType, WithProgress);
// ctx cancels it as it does Convert.
func Quantize(ctx context.Context, inPath, outPath string, opts ...Option) error {
	return run(ctx, "quantize", opts, func(c raw.SkyCall, o raw.SkyOptions) int {
		return c.Quantize(inPath, outPath, o)
	})
}

// Inspect returns the printed header, metadata and tensor table of a GGUF file
// (WithMaxArray, WithJSON).
func Inspect(path string, opts ...Option) (string, error) {
	c, err := call(context.Background(), "inspect", opts, func(c raw.SkyCall, o raw.SkyOptions) int {
		return c.Inspect(path, o)
	})
	if err != nil {
		return "", err
	}
	defer raw.DeleteSkyCall(c)
	return c.TakeOutput(), nil
}
