package skycmd

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/skycmd/libskycmd/bindings/go/internal/raw"
)

// Model is an open decision model. Safe for concurrent use by many goroutines.
type Model struct {
	// mu: Decide holds it shared, Close exclusively, so Close waits for running calls.
	mu      sync.RWMutex
	box     raw.SkyModel // nil once closed
	poolMu  sync.Mutex
	idle    []raw.SkySession // sessions not in use (each belongs to one call at a time)
	session []intOpt         // options set on every new session
	path    string
	tokMu   sync.Mutex
	tok     *Tokenizer // the model's tokenizer, made on first use, closed by Close
}

// Open opens a GGUF decision model (WithWeights, WithMaxTokens, WithModelName,
// WithThreads, WithActivations). Close it when done. A path that does not exist is an
// *Error of ErrIO that also matches fs.ErrNotExist.
func Open(path string, opts ...Option) (*Model, error) {
	return open(context.Background(), "open", path, opts, openPath(path))
}

// OpenContext is Open, returning early when ctx ends (an *Error of ErrCancelled that also
// matches ctx.Err()). The options' cancel flag is raised at once, which stops the load at
// the library's next progress report where it reports progress; otherwise the load finishes
// in the background and the model is closed. WithProgress reports the load's progress where
// the library gives it.
func OpenContext(ctx context.Context, path string, opts ...Option) (*Model, error) {
	return open(ctx, "open", path, opts, openPath(path))
}

// DefaultModelPath is where the library finds the built-in model s1-pico-flappy.gguf
// (skycmd_default_model_path): $SKYCMD_DEFAULT_MODEL, else beside the library (an installed
// prefix's share/skycmd/models, or a build tree's), else the library's configured data
// directory. When there is none: an *Error of ErrNotFound that matches fs.ErrNotExist and
// names the places looked in.
func DefaultModelPath() (string, error) {
	c, err := call(context.Background(), "default model", nil, "", func(c raw.SkyCall, _ raw.SkyOptions) int {
		return c.DefaultModelPath()
	})
	if err != nil {
		return "", err
	}
	defer raw.DeleteSkyCall(c)
	return c.TakeOutput(), nil
}

// OpenDefault opens the built-in model (DefaultModelPath) with the options of Open.
func OpenDefault(opts ...Option) (*Model, error) {
	return OpenDefaultContext(context.Background(), opts...)
}

// OpenDefaultContext is OpenDefault with the context of OpenContext.
func OpenDefaultContext(ctx context.Context, opts ...Option) (*Model, error) {
	path, err := DefaultModelPath()
	if err != nil {
		return nil, err
	}
	return open(ctx, "open", path, opts, openPath(path))
}

func openPath(path string) func(raw.SkyCall, raw.SkyOptions, raw.SkyModel) int {
	return func(c raw.SkyCall, o raw.SkyOptions, box raw.SkyModel) int {
		return c.OpenModel(path, o, box)
	}
}

// OpenBuffer opens a model from the bytes of a GGUF file (the same options as Open). The
// model keeps its own copy, so data may be reused or dropped as soon as OpenBuffer returns.
func OpenBuffer(data []byte, opts ...Option) (*Model, error) {
	if len(data) == 0 {
		return nil, &Error{Op: "open buffer", Status: ErrFormat, Message: "the buffer is empty"}
	}
	// No Go copy: the C side copies the bytes before this call returns.
	bytes := unsafe.String(unsafe.SliceData(data), len(data))
	m, err := open(context.Background(), "open buffer", "", opts, func(c raw.SkyCall, o raw.SkyOptions, box raw.SkyModel) int {
		return raw.SkyOpenModelBuffer(c, bytes, o, box)
	})
	runtime.KeepAlive(data)
	return m, err
}

type openFunc func(raw.SkyCall, raw.SkyOptions, raw.SkyModel) int

// open opens on the calling goroutine, or, for a ctx that can end, on a goroutine of its own
// while this one waits for it or for ctx (then the load is cancelled or abandoned, and a
// model that opens anyway is closed).
func open(ctx context.Context, op, path string, opts []Option, openInto openFunc) (*Model, error) {
	if loadErr != nil {
		return nil, loadErr
	}
	if err := nulArgument(op, "path", path); err != nil {
		return nil, err
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
	if ctx.Done() == nil && set.progress == nil {
		defer raw.DeleteSkyOptions(o)
		return openWith(op, path, o, set, openInto)
	}
	type result struct {
		m   *Model
		err error
	}
	// Progress reports stop when this call returns, also when it returns before the load ends.
	// A panic (or runtime.Goexit) in the progress function cancels the load and is raised
	// again on this goroutine (see call); it is recorded under progressMu, so the return
	// below cannot miss one.
	var progressMu sync.Mutex
	returned := false
	var failed atomic.Pointer[callbackFailure]
	progress := guardProgress(set.progress, o, &failed)
	if progress != nil {
		guarded := progress
		progress = func(done, total uint64) {
			progressMu.Lock()
			defer progressMu.Unlock()
			if !returned {
				guarded(done, total)
			}
		}
	}
	stopProgress := func() {
		progressMu.Lock()
		returned = true
		progressMu.Unlock()
	}
	defer stopProgress()
	ch := make(chan result, 1)
	go func() {
		// watch raises the options' cancel flag when ctx ends and reports progress; it is
		// done with o before o is freed.
		finished := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			watch(ctx, o, progress, finished)
		}()
		m, err := openWith(op, path, o, set, openInto)
		close(finished)
		wg.Wait()
		raw.DeleteSkyOptions(o)
		ch <- result{m, err}
	}()
	closeLater := func() {
		go func() {
			if r := <-ch; r.m != nil {
				_ = r.m.Close()
			}
		}()
	}
	select {
	case r := <-ch:
		if f := failed.Load(); f != nil {
			if r.m != nil {
				_ = r.m.Close()
			}
			f.rethrow()
		}
		var e *Error
		if r.err != nil && errors.As(r.err, &e) && e.Status == ErrCancelled && ctx.Err() != nil {
			e.cause = ctx.Err()
		}
		return r.m, r.err
	case <-ctx.Done():
		closeLater()
		stopProgress()
		if f := failed.Load(); f != nil {
			f.rethrow()
		}
		return nil, &Error{Op: op, Status: ErrCancelled, Message: "cancelled while the model was loading", cause: ctx.Err()}
	}
}

func openWith(op, path string, o raw.SkyOptions, set *optionSet, openInto openFunc) (*Model, error) {
	box := raw.NewSkyModel()
	if box.Swigcptr() == 0 {
		return nil, &Error{Op: op, Status: ErrNoMem}
	}
	c := raw.NewSkyCall()
	if c.Swigcptr() == 0 {
		raw.DeleteSkyModel(box)
		return nil, &Error{Op: op, Status: ErrNoMem}
	}
	defer raw.DeleteSkyCall(c)
	if st := openInto(c, o, box); st != 0 {
		raw.DeleteSkyModel(box)
		return nil, callError(op, st, c)
	}
	m := &Model{box: box, session: set.session, path: path}
	runtime.SetFinalizer(m, func(m *Model) { _ = m.Close() })
	return m, nil
}

var errClosed = func(op string) error {
	return &Error{Op: op, Status: ErrMisuse, Message: "model is closed"}
}

// Name is the model name reported in responses ("" after Close).
func (m *Model) Name() string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.box == nil {
		return ""
	}
	return m.box.Name()
}

// Int returns a hyper-parameter by GGUF-style name without the architecture prefix
// ("embedding_length", "block_count", "decision.max_tokens", "vocab_size", ...).
func (m *Model) Int(name string) (int64, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.box == nil {
		return 0, errClosed("model int")
	}
	if err := nulArgument("model int", "hyper-parameter name", name); err != nil {
		return 0, err
	}
	v := m.box.GetInt(name)
	if v < 0 {
		return 0, &Error{Op: "model int", Status: ErrNotFound, Message: "no hyper-parameter " + name}
	}
	return v, nil
}

// Closed reports whether Close has run.
func (m *Model) Closed() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.box == nil
}

// getSession takes an idle session or opens a new one; m.mu is held shared.
func (m *Model) getSession() (raw.SkySession, error) {
	m.poolMu.Lock()
	if n := len(m.idle); n > 0 {
		s := m.idle[n-1]
		m.idle = m.idle[:n-1]
		m.poolMu.Unlock()
		return s, nil
	}
	m.poolMu.Unlock()
	s := raw.NewSkySession()
	if s.Swigcptr() == 0 {
		return nil, &Error{Op: "decide", Status: ErrNoMem}
	}
	if st := s.Open(m.box); st != 0 {
		err := newError("session", st, s.Message())
		raw.DeleteSkySession(s)
		return nil, err
	}
	for _, o := range m.session {
		if st := s.SetInt(o.key, o.val); st != 0 {
			err := newError("session option "+optName(o.key), st, s.Message())
			raw.DeleteSkySession(s)
			return nil, err
		}
	}
	return s, nil
}

func (m *Model) putSession(s raw.SkySession) {
	m.poolMu.Lock()
	// Keep at most one idle session per CPU; more would only hold scratch memory.
	if len(m.idle) < runtime.GOMAXPROCS(0) {
		m.idle = append(m.idle, s)
		s = nil
	}
	m.poolMu.Unlock()
	if s != nil {
		raw.DeleteSkySession(s)
	}
}

// Decide answers every question of a /v1/systemone request (JSON text). A request error is
// an *Error with ErrJSON, ErrRequest or ErrTooLarge and the library's message. ctx is
// honoured before the call starts and while waiting for it; the C computation itself
// cannot be interrupted (it finishes in the background and its session is reused).
func (m *Model) Decide(ctx context.Context, request string) (*Response, error) {
	rs, err := waitFor(ctx, func() ([]*Response, error) {
		r, err := m.decide(request)
		return []*Response{r}, err
	})
	if err != nil {
		return nil, err
	}
	return rs[0], nil
}

// DecideRequest answers a request made with the typed builders (NewRequest, Choice, Score,
// Noul); otherwise it is Decide.
func (m *Model) DecideRequest(ctx context.Context, request *Request) (*Response, error) {
	if request == nil {
		return nil, requestError("the request is nil")
	}
	body, err := request.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return m.Decide(ctx, string(body))
}

// DecideBatch answers several requests together (skycmd_decide_batch): their sequences share
// the model's batches, which saves time when many small requests arrive at once, and each
// response is exactly what Decide gives for its request alone. All or nothing: an error names
// the failing request ("request 2: ..."). ctx is honoured as by Decide.
func (m *Model) DecideBatch(ctx context.Context, requests []string) ([]*Response, error) {
	return waitFor(ctx, func() ([]*Response, error) { return m.decideBatch(requests) })
}

// waitFor runs work, returning early (the work finishes in the background) when ctx ends.
func waitFor(ctx context.Context, work func() ([]*Response, error)) ([]*Response, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ctx.Done() == nil {
		return work()
	}
	type result struct {
		rs  []*Response
		err error
	}
	ch := make(chan result, 1)
	go func() {
		rs, err := work()
		ch <- result{rs, err}
	}()
	select {
	case res := <-ch:
		return res.rs, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (m *Model) decide(request string) (*Response, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.box == nil {
		return nil, errClosed("decide")
	}
	if err := requestBytesError("decide", "", request); err != nil {
		return nil, err
	}
	s, err := m.getSession()
	if err != nil {
		return nil, err
	}
	defer m.putSession(s)
	b := raw.NewSkyResponse()
	if b.Swigcptr() == 0 {
		return nil, &Error{Op: "decide", Status: ErrNoMem}
	}
	defer raw.DeleteSkyResponse(b)
	if st := s.Decide(request, b); st != 0 {
		return nil, newError("decide", st, s.Message())
	}
	return copyResponse(b), nil
}

func (m *Model) decideBatch(requests []string) ([]*Response, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.box == nil {
		return nil, errClosed("decide batch")
	}
	batch := raw.NewSkyBatch()
	if batch.Swigcptr() == 0 {
		return nil, &Error{Op: "decide batch", Status: ErrNoMem}
	}
	defer raw.DeleteSkyBatch(batch)
	for i, req := range requests {
		if err := requestBytesError("decide batch", fmt.Sprintf("request %d: ", i), req); err != nil {
			return nil, err
		}
		if st := batch.Add(req); st != 0 {
			return nil, newError("decide batch", st, batch.Message())
		}
	}
	s, err := m.getSession()
	if err != nil {
		return nil, err
	}
	defer m.putSession(s)
	if st := s.DecideBatch(batch); st != 0 {
		return nil, newError("decide batch", st, s.Message())
	}
	out := make([]*Response, len(requests))
	for i := range out {
		b := raw.NewSkyResponse()
		if b.Swigcptr() == 0 {
			return nil, &Error{Op: "decide batch", Status: ErrNoMem}
		}
		st := batch.TakeResponse(int64(i), b)
		if st == 0 {
			out[i] = copyResponse(b)
		}
		raw.DeleteSkyResponse(b)
		if st != 0 {
			return nil, newError("decide batch", st, batch.Message())
		}
	}
	return out, nil
}

// Close frees the model and its idle sessions. It waits for running Decide calls, and
// closing twice is a no-op returning nil.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.box == nil {
		return nil
	}
	m.tokMu.Lock()
	if m.tok != nil {
		m.tok.release()
		m.tok = nil
	}
	m.tokMu.Unlock()
	m.poolMu.Lock()
	for _, s := range m.idle {
		raw.DeleteSkySession(s)
	}
	m.idle = nil
	m.poolMu.Unlock()
	if st := m.box.Close(); st != 0 {
		return newError("close", st, "the model still has sessions")
	}
	raw.DeleteSkyModel(m.box)
	m.box = nil
	runtime.SetFinalizer(m, nil)
	return nil
}
