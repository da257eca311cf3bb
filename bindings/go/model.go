package skycmd

import (
	"context"
	"runtime"
	"sync"

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
}

// Open opens a GGUF decision model (WithWeights, WithMaxTokens, WithModelName,
// WithThreads, WithActivations). Close it when done.
func Open(path string, opts ...Option) (*Model, error) {
	if loadErr != nil {
		return nil, loadErr
	}
	o, set, err := build("open", opts)
	if err != nil {
		return nil, err
	}
	defer raw.DeleteSkyOptions(o)
	box := raw.NewSkyModel()
	if box.Swigcptr() == 0 {
		return nil, &Error{Op: "open", Status: ErrNoMem}
	}
	c := raw.NewSkyCall()
	if c.Swigcptr() == 0 {
		raw.DeleteSkyModel(box)
		return nil, &Error{Op: "open", Status: ErrNoMem}
	}
	defer raw.DeleteSkyCall(c)
	if st := c.OpenModel(path, o, box); st != 0 {
		raw.DeleteSkyModel(box)
		return nil, newError("open", st, c.Message())
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
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ctx.Done() == nil {
		return m.decide(request)
	}
	type result struct {
		r   *Response
		err error
	}
	ch := make(chan result, 1)
	go func() {
		r, err := m.decide(request)
		ch <- result{r, err}
	}()
	select {
	case res := <-ch:
		return res.r, res.err
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
	s, err := m.getSession()
	if err != nil {
		return nil, err
	}
	b := raw.NewSkyResponse()
	if b.Swigcptr() == 0 {
		m.putSession(s)
		return nil, &Error{Op: "decide", Status: ErrNoMem}
	}
	defer raw.DeleteSkyResponse(b)
	if st := s.Decide(request, b); st != 0 {
		err := newError("decide", st, s.Message())
		m.putSession(s)
		return nil, err
	}
	m.putSession(s)
	return copyResponse(b), nil
}

// Close frees the model and its idle sessions. It waits for running Decide calls, and
// closing twice is a no-op returning nil.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.box == nil {
		return nil
	}
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
