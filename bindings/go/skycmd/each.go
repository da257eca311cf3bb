//go:build go1.23

// The iterator forms (range-over-func, package iter) need Go 1.23; the build constraint
// raises this file's language version while the module stays usable with Go 1.22, where
// everything but Model.DecideEach, Model.DecideEachRequest and Response.All builds.

package skycmd

import (
	"context"
	"iter"

	"github.com/skycmd/libskycmd/bindings/go/internal/raw"
)

// eachGroup is how many requests DecideEach answers with one skycmd_decide_each call.
const eachGroup = 32

// All iterates over the answers keyed by question id, in request order:
//
//	for id, a := range r.All() { ... }
//
// (Answers keeps the slice in request order; Answer(id) looks one up.)
func (r *Response) All() iter.Seq2[string, Answer] {
	return func(yield func(string, Answer) bool) {
		for _, a := range r.Answers {
			if !yield(a.ID, a) {
				return
			}
		}
	}
}

// DecideEach is a streaming batch: it reads requests (JSON text) from requests as the
// returned sequence is ranged over, answers them in groups of 32 that share the model's
// batches (one skycmd_decide_each call per group), and yields one (response, error) pair per
// request in input order: the response, or the *Error that request alone failed with (bad
// JSON: ErrJSON; an invalid request: ErrRequest, ErrTooLarge). A failed request does not stop
// the sequence; breaking out of the range loop does, and nothing more is read. At most one
// group is read ahead, so requests may be endless (lines of a file, a channel).
//
// ctx is checked before each group: once it is done, one last pair (nil, ctx.Err()) is
// yielded and the sequence ends. A failure of a whole group (the model closed meanwhile: an
// ErrMisuse; out of memory) is each of its requests' error. The model is held only while a
// group is answered, so Close does not wait for a sequence that is not being ranged over.
func (m *Model) DecideEach(ctx context.Context, requests iter.Seq[string]) iter.Seq2[*Response, error] {
	return m.each(ctx, func(yield func(eachItem) bool) {
		for r := range requests {
			// A body with a NUL byte gets the library's verdict on all its bytes here (the
			// group's C call would see it cut at the NUL).
			if !yield(eachItem{json: r, err: requestBytesError("decide each", "", r)}) {
				return
			}
		}
	})
}

// DecideEachRequest is DecideEach for requests made with the typed builders (NewRequest,
// Choice, Score, Noul); a nil or incomplete request is its own pair's error (ErrRequest).
func (m *Model) DecideEachRequest(ctx context.Context, requests iter.Seq[*Request]) iter.Seq2[*Response, error] {
	return m.each(ctx, func(yield func(eachItem) bool) {
		for r := range requests {
			it := eachItem{}
			if r == nil {
				it.err = requestError("the request is nil")
			} else if body, err := r.MarshalJSON(); err != nil {
				it.err = err
			} else {
				it.json = string(body)
			}
			if !yield(it) {
				return
			}
		}
	})
}

// eachItem is one request of a stream: its JSON text, or the error it already has.
type eachItem struct {
	json string
	err  error
}

func (m *Model) each(ctx context.Context, items iter.Seq[eachItem]) iter.Seq2[*Response, error] {
	if ctx == nil {
		ctx = context.Background()
	}
	return func(yield func(*Response, error) bool) {
		group := make([]eachItem, 0, eachGroup)
		// flush answers the group and yields its pairs; false when the sequence must end.
		flush := func() bool {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return false
			}
			rs, errs := m.decideGroup(group)
			group = group[:0]
			for i := range rs {
				if !yield(rs[i], errs[i]) {
					return false
				}
			}
			return true
		}
		for it := range items {
			group = append(group, it)
			if len(group) == eachGroup && !flush() {
				return
			}
		}
		if len(group) > 0 {
			flush()
		}
	}
}

// decideGroup answers one group: a response or an error per item, in order.
func (m *Model) decideGroup(group []eachItem) ([]*Response, []error) {
	rs := make([]*Response, len(group))
	errs := make([]error, len(group))
	if err := m.answerGroup(group, rs, errs); err != nil {
		// The whole group failed: every item gets that error, unless it had its own.
		for i, it := range group {
			rs[i] = nil
			errs[i] = err
			if it.err != nil {
				errs[i] = it.err
			}
		}
	}
	return rs, errs
}

func (m *Model) answerGroup(group []eachItem, rs []*Response, errs []error) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.box == nil {
		return errClosed("decide each")
	}
	each := raw.NewSkyEach()
	if each.Swigcptr() == 0 {
		return &Error{Op: "decide each", Status: ErrNoMem}
	}
	defer raw.DeleteSkyEach(each)
	slot := make([]int64, len(group))
	for i, it := range group {
		slot[i] = -1
		if it.err != nil {
			continue
		}
		if st := each.Add(it.json); st != 0 {
			return newError("decide each", st, each.Message())
		}
		slot[i] = each.Count() - 1
	}
	if each.Count() > 0 {
		s, err := m.getSession()
		if err != nil {
			return err
		}
		st := each.Decide(s)
		m.putSession(s)
		if st != 0 {
			return newError("decide each", st, each.Message())
		}
	}
	for i, it := range group {
		if slot[i] < 0 {
			errs[i] = it.err
			continue
		}
		if st := each.SlotStatus(slot[i]); st != 0 {
			errs[i] = newError("decide each", st, each.SlotMessage(slot[i]))
			continue
		}
		b := raw.NewSkyResponse()
		if b.Swigcptr() == 0 {
			return &Error{Op: "decide each", Status: ErrNoMem}
		}
		st := each.TakeResponse(slot[i], b)
		if st == 0 {
			rs[i] = copyResponse(b)
		}
		raw.DeleteSkyResponse(b)
		if st != 0 {
			return newError("decide each", st, each.Message())
		}
	}
	return nil
}
