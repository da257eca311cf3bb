//go:build go1.23

package skycmd

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"
)

// counting yields the strings of in (nil-free) and counts how many were taken.
func counting(in []string, taken *int) iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, s := range in {
			*taken++
			if !yield(s) {
				return
			}
		}
	}
}

func TestResponseAllInRequestOrder(t *testing.T) {
	m, err := Open(testModel(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r, err := m.Decide(context.Background(), exampleRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for id, a := range r.All() {
		if a.ID != id {
			t.Fatalf("All: key %q for answer %q", id, a.ID)
		}
		ids = append(ids, id)
	}
	if !slices.Equal(ids, []string{"action", "danger", "margin"}) {
		t.Fatalf("All: %v", ids)
	}
	for id := range r.All() { // stopping early is honoured
		if id != "action" {
			t.Fatalf("All went on after break: %q", id)
		}
		break
	}
	if a, ok := r.Answer("danger"); !ok || a.Type != AnswerNoul {
		t.Fatalf("Answer(danger) = %v %v", a, ok)
	}
	if _, ok := r.Answer("nope"); ok {
		t.Fatal("Answer(nope) found something")
	}
	// Another order in the request is another order of All.
	swapped, err := m.DecideRequest(context.Background(), NewRequest("alt 3").
		Ask("zeta", Noul{Instructions: "Crash?"}).Ask("alpha", Noul{Instructions: "Gap above?"}))
	if err != nil {
		t.Fatal(err)
	}
	ids = ids[:0]
	for id := range swapped.All() {
		ids = append(ids, id)
	}
	if !slices.Equal(ids, []string{"zeta", "alpha"}) {
		t.Fatalf("All of a zeta, alpha request: %v", ids)
	}
}

func TestDecideEach(t *testing.T) {
	m, err := Open(testModel(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	req := exampleRequest(t)
	other := strings.Replace(req, "vy 0 dx 36", "vy 3 dx 12", 1)
	r1, _ := m.Decide(ctx, req)
	r2, _ := m.Decide(ctx, other)
	want := []string{dump(r1), dump(r2)}

	// 70 requests (three groups of at most 32), bad ones in each group.
	in := make([]string, 70)
	for i := range in {
		in[i] = []string{req, other}[i%2]
	}
	in[1] = "{not json"
	in[33] = `{"state": 1}`
	in[69] = ""
	taken, i := 0, 0
	for r, err := range m.DecideEach(ctx, counting(in, &taken)) {
		if i == 0 && taken != 32 {
			t.Fatalf("first pair after %d requests read, want one group (32)", taken)
		}
		if i == 32 && taken != 64 {
			t.Fatalf("pair 32 after %d requests read, want 64", taken)
		}
		var e *Error
		switch i {
		case 1, 69:
			if r != nil || !errors.As(err, &e) || e.Status != ErrJSON || e.Code() != "SKYCMD_E_JSON" || e.Message == "" {
				t.Fatalf("pair %d: %v %v, want ErrJSON", i, r, err)
			}
		case 33:
			if r != nil || !errors.Is(err, ErrRequest) {
				t.Fatalf("pair 33: %v %v, want ErrRequest", r, err)
			}
		default:
			if err != nil || r == nil || dump(r) != want[i%2] {
				t.Fatalf("pair %d: %v (answer differs: %v)", i, err, r != nil)
			}
		}
		i++
	}
	if i != 70 || taken != 70 {
		t.Fatalf("%d pairs, %d read; want 70", i, taken)
	}

	// Breaking out stops reading: an endless source is read one group ahead at most.
	endless, n := 0, 0
	forever := func(yield func(string) bool) {
		for {
			endless++
			if !yield(req) {
				return
			}
		}
	}
	for _, err := range m.DecideEach(ctx, forever) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 40 {
			break
		}
	}
	if endless != 64 {
		t.Fatalf("endless source: %d read for 40 pairs, want 64", endless)
	}

	// Typed requests: a nil one and one without questions are their own pairs' errors.
	var got []error
	reqs := slices.Values([]*Request{builtExample(), nil, NewRequest("s"), builtExample()})
	for r, err := range m.DecideEachRequest(ctx, reqs) {
		if err == nil && dump(r) != want[0] {
			t.Fatal("a typed request answers differently")
		}
		got = append(got, err)
	}
	if len(got) != 4 || got[0] != nil || !errors.Is(got[1], ErrRequest) || !errors.Is(got[2], ErrRequest) || got[3] != nil {
		t.Fatalf("typed pairs: %v", got)
	}
	for range m.DecideEach(ctx, slices.Values([]string(nil))) {
		t.Fatal("an empty source yields nothing")
	}

	// A context ended between groups: one last (nil, ctx.Err()) pair, then the end.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n = 0
	var last error
	for r, err := range m.DecideEach(cctx, slices.Values(slices.Repeat([]string{req}, 40))) {
		if n++; n == 32 {
			cancel()
		}
		if n <= 32 && (err != nil || r == nil) {
			t.Fatalf("pair %d before the cancel: %v", n, err)
		}
		last = err
	}
	if n != 33 || !errors.Is(last, context.Canceled) {
		t.Fatalf("after cancel: %d pairs, last %v; want 33 ending in context.Canceled", n, last)
	}

	// The model closed between groups: the next group's pairs are ErrMisuse, in order.
	n = 0
	for r, err := range m.DecideEach(ctx, slices.Values(slices.Repeat([]string{req}, 40))) {
		if n++; n == 32 {
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if n > 32 && (r != nil || !errors.Is(err, ErrMisuse)) {
			t.Fatalf("pair %d after Close: %v %v", n, r, err)
		}
	}
	if n != 40 {
		t.Fatalf("%d pairs with a close between groups, want 40", n)
	}
}

// A body with a NUL byte is that item's own error, judged by the library on all its bytes
// (not cut at the NUL and answered), and the stream goes on.
func TestDecideEachNULByte(t *testing.T) {
	m, err := Open(testModel(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	req := exampleRequest(t)
	in := []string{req, strings.TrimRight(req, " \n") + "\x00garbage", req}
	var got []error
	for r, err := range m.DecideEach(context.Background(), slices.Values(in)) {
		if (r == nil) == (err == nil) {
			t.Fatalf("pair (%v, %v)", r, err)
		}
		got = append(got, err)
	}
	var e *Error
	if len(got) != 3 || got[0] != nil || got[2] != nil || !errors.As(got[1], &e) || e.Status != ErrJSON ||
		!strings.Contains(e.Message, "extra data") {
		t.Fatalf("errors %v", got)
	}
}
