package skycmd

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The example request (examples/flappy-drone.json) made with the typed builders.
func builtExample() *Request {
	return NewRequest("vy 0 dx 36 up 9 dn 7 nxt 10 alt 32").
		Ask("action", Choice{
			Instructions: "Which input keeps the drone flying through the next gap?",
			Criteria: Labels("thrust", "fire the rotors for an upward impulse",
				"glide", "let gravity pull the drone down"),
		}).
		Ask("danger", Noul{Instructions: "Will the drone crash within the next half second if it keeps gliding?"}).
		Ask("margin", Score{
			Instructions: "How much room is left above and below the drone?",
			Criteria:     []Content{"none", "tight", "comfortable"},
		})
}

func TestTypedRequestMatchesTheJSONFile(t *testing.T) {
	m, err := Open(testModel(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want, err := m.Decide(context.Background(), exampleRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.DecideRequest(context.Background(), builtExample())
	if err != nil {
		t.Fatal(err)
	}
	if dump(got) != dump(want) {
		t.Fatalf("builder request answers differently:\n%s\nvs the file's\n%s", dump(got), dump(want))
	}
	checkAnswers(t, got)
	// The request's "model" is sent (a server routes by it); the response names the model
	// that answered.
	named := builtExample()
	named.Model = "my-drone-model"
	if js, _ := named.JSON(); !strings.HasPrefix(js, `{"model":"my-drone-model","state":`) {
		t.Fatalf("model field: %s", js)
	}
	r, err := m.DecideRequest(context.Background(), named)
	if err != nil || r.Model != "s1-pico" || dump(r) != dump(want) {
		t.Fatalf("named request: %v %q", err, r.Model)
	}
	// Builder checks and library checks.
	for name, req := range map[string]*Request{
		"no question":  NewRequest("x"),
		"no state":     (&Request{}).Ask("a", Noul{Instructions: "?"}),
		"empty choice": NewRequest("x").Ask("a", Choice{Instructions: "?"}),
		"empty score":  NewRequest("x").Ask("a", Score{Instructions: "?"}),
		"bare noul":    NewRequest("x").Ask("a", Noul{}),
		"asked twice":  NewRequest("x").Ask("a", Noul{Instructions: "?"}).Ask("a", Noul{Instructions: "?"}),
		"nil question": NewRequest("x").Ask("a", nil),
	} {
		if _, err := m.DecideRequest(context.Background(), req); !errors.Is(err, ErrRequest) {
			t.Errorf("%s: %v, want ErrRequest", name, err)
		}
	}
	// Described outcomes alone make a noul; JSON content and undescribed labels are sent as is.
	js, err := NewRequest(map[string]any{"vy": 0}).
		Ask("d", Noul{True: "it crashes"}).
		Ask("c", Choice{Criteria: []Label{{Name: "up"}, {Name: "down", Description: []string{"a", "b"}}}}).JSON()
	if err != nil || js != `{"state":{"vy":0},"questions":{"d":{"type":"noul","criteria":{"true":"it crashes"}},"c":{"type":"choice","criteria":{"up":null,"down":["a","b"]}}}}` {
		t.Fatalf("builder JSON %v\n%s", err, js)
	}
}

func TestDecideBatch(t *testing.T) {
	m, err := Open(testModel(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	req := exampleRequest(t)
	small, _ := NewRequest("alt 3").Ask("danger", Noul{Instructions: "Crash?"}).JSON()
	single, err := m.Decide(context.Background(), small)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := m.Decide(context.Background(), req)
	rs, err := m.DecideBatch(context.Background(), []string{req, small, req})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || dump(rs[0]) != dump(ref) || dump(rs[1]) != dump(single) || dump(rs[2]) != dump(ref) {
		t.Fatalf("batch answers differ from single decides")
	}
	if rs, err := m.DecideBatch(context.Background(), nil); err != nil || len(rs) != 0 {
		t.Fatalf("empty batch: %v %d", err, len(rs))
	}
	_, err = m.DecideBatch(context.Background(), []string{req, req, `{"state": "x"`})
	var e *Error
	if !errors.As(err, &e) || e.Status != ErrJSON || !strings.HasPrefix(e.Message, "request 2: ") {
		t.Fatalf("bad third request: %v", err)
	}
}

func TestOpenBuffer(t *testing.T) {
	data, err := os.ReadFile(testModel(t))
	if err != nil {
		t.Fatal(err)
	}
	m, err := OpenBuffer(data, WithModelName("from-memory"))
	if err != nil {
		t.Fatal(err)
	}
	// The model has its own copy: scribbling over the caller's buffer changes nothing.
	for i := range data {
		data[i] = 0xAA
	}
	r, err := m.Decide(context.Background(), exampleRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	checkAnswersNamed(t, r, "from-memory")
	f, _ := Open(testModel(t))
	rf, _ := f.Decide(context.Background(), exampleRequest(t))
	f.Close()
	if dump(r) != dump(rf) {
		t.Fatal("a model from memory answers differently from the file")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenBuffer([]byte("not a gguf file, certainly not")); !errors.Is(err, ErrFormat) {
		t.Fatalf("junk buffer: %v", err)
	}
	if _, err := OpenBuffer(nil); !errors.Is(err, ErrFormat) {
		t.Fatalf("empty buffer: %v", err)
	}
}

// checkAnswersNamed is checkAnswers for a model opened with WithModelName(name).
func checkAnswersNamed(t *testing.T, r *Response, name string) {
	t.Helper()
	if r.Model != name {
		t.Errorf("response model %q, want %q", r.Model, name)
	}
	c := *r
	c.Model = "s1-pico"
	checkAnswers(t, &c)
}

func TestTokenizer(t *testing.T) {
	m, err := Open(testModel(t))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := m.Tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := m.Tokenizer(); again != tok {
		t.Error("Tokenizer() made a second tokenizer")
	}
	text := "vy 0 dx 36 up 9 dn 7 nxt 10 alt 32 — ünïcode"
	ids, err := tok.Encode(text)
	if err != nil || len(ids) == 0 {
		t.Fatalf("encode: %v %v", ids, err)
	}
	if n, err := tok.Count(text); err != nil || n != len(ids) {
		t.Errorf("count %d, %v; encode gave %d", n, err, len(ids))
	}
	back, err := tok.Decode(ids)
	if err != nil || back != text {
		t.Errorf("decode %q, %v", back, err)
	}
	if v := tok.VocabSize(); int64(v) != mustInt(t, m, "vocab_size") {
		t.Errorf("vocab size %d", v)
	}
	for _, id := range ids {
		if s, ok := tok.Token(id); !ok || s == "" {
			t.Errorf("token %d: %q %v", id, s, ok)
		}
	}
	if _, ok := tok.Token(-1); ok {
		t.Error("token -1 exists")
	}
	cls, ok := tok.SpecialID(SpecialCLS)
	if !ok || cls < 0 || int(cls) >= tok.VocabSize() {
		t.Errorf("CLS id %d %v", cls, ok)
	}
	if _, err := tok.Encode("bad \xff utf-8"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("invalid UTF-8: %v", err)
	}
	if _, err := tok.Decode([]int32{1 << 30}); err == nil {
		t.Error("decode of an id out of range succeeded")
	}
	// The tokenizer lives as long as the model.
	if err := m.Close(); err != nil {
		t.Fatalf("close with a tokenizer in use: %v", err)
	}
	if _, err := tok.Encode("x"); !errors.Is(err, ErrMisuse) {
		t.Errorf("encode after the model closed: %v", err)
	}
	if _, err := m.Tokenizer(); !errors.Is(err, ErrMisuse) {
		t.Errorf("tokenizer of a closed model: %v", err)
	}

	// A tokenizer.json (the Laya directory's) encodes like the model made from it.
	dir := filepath.Join(tmpDir, "laya-tok")
	if err := RandomModel("s1-pico", dir, WithLayout(LayoutLaya)); err != nil {
		t.Fatal(err)
	}
	jt, err := OpenTokenizer(filepath.Join(dir, "tokenizer", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	jids, err := jt.Encode(text)
	if err != nil || len(jids) != len(ids) {
		t.Fatalf("tokenizer.json encode: %v %v", jids, err)
	}
	for i := range ids {
		if ids[i] != jids[i] {
			t.Fatalf("tokenizer.json ids %v differ from the model's %v", jids, ids)
		}
	}
	jt.Close()
	jt.Close()
	if _, err := jt.Count("x"); !errors.Is(err, ErrMisuse) {
		t.Errorf("count after close: %v", err)
	}
	// A missing file is ErrIO and fs.ErrNotExist (ENOENT), as for Open; another failure is not.
	if _, err := OpenTokenizer(filepath.Join(tmpDir, "nope.json")); !errors.Is(err, ErrIO) ||
		!errors.Is(err, fs.ErrNotExist) || !os.IsNotExist(errors.Unwrap(err)) {
		t.Errorf("missing tokenizer.json: %v", err)
	}
	if _, err := OpenTokenizer(testModel(t)); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a GGUF file as tokenizer.json: %v", err)
	}
}

// lateCancel is a cancelled context whose first Err() call still answers nil.
type lateCancel struct {
	context.Context
	mu    sync.Mutex
	asked bool
}

func newLateCancel() *lateCancel {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return &lateCancel{Context: ctx}
}

func (c *lateCancel) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.asked {
		c.asked = true
		return nil
	}
	return c.Context.Err()
}

func mustInt(t *testing.T, m *Model, name string) int64 {
	t.Helper()
	v, err := m.Int(name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestProgressAndCancel(t *testing.T) {
	path := testModel(t)
	var mu sync.Mutex
	var reports [][2]uint64
	out := filepath.Join(tmpDir, "progress-q8.gguf")
	err := Quantize(context.Background(), path, out, WithType(TypeQ8_0), WithProgress(func(done, total uint64) {
		mu.Lock()
		reports = append(reports, [2]uint64{done, total})
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) == 0 {
		t.Fatal("no progress reported")
	}
	last := reports[len(reports)-1]
	if last[1] == 0 || last[0] != last[1] {
		t.Errorf("last report %v: the work should be complete", last)
	}

	// A context that ends after the call has started stops it at its next progress report
	// (inside the C library, which then leaves no output). lateCancel's Err says "not yet"
	// to the check made before the call, so the cancellation has to travel through the
	// options box's flag.
	dir := filepath.Join(tmpDir, "laya-cancel")
	if err := RandomModel("s1-pico", dir, WithLayout(LayoutLaya)); err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"convert", "quantize"} {
		target := filepath.Join(tmpDir, "cancelled-"+op+".gguf")
		ctx := newLateCancel()
		var err error
		if op == "convert" {
			err = Convert(ctx, dir, target)
		} else {
			err = Quantize(ctx, path, target, WithType(TypeQ8_0))
		}
		var e *Error
		if !errors.As(err, &e) || e.Status != ErrCancelled || !errors.Is(err, context.Canceled) ||
			!errors.Is(err, ErrCancelled) || !strings.Contains(e.Message, "cancel") {
			t.Errorf("%s cancelled: %v", op, err)
		}
		if _, serr := os.Stat(target); !os.IsNotExist(serr) {
			t.Errorf("%s cancelled but left %s", op, target)
		}
	}
	// A context cancelled before the call refuses at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Quantize(ctx, path, filepath.Join(tmpDir, "never.gguf")); !errors.Is(err, context.Canceled) || !errors.Is(err, ErrCancelled) {
		t.Errorf("pre-cancelled quantize: %v", err)
	}
	// Convert with progress on the Laya directory gives the file `random` writes directly.
	conv := filepath.Join(tmpDir, "converted.gguf")
	n := 0
	if err := Convert(context.Background(), dir, conv, WithProgress(func(done, total uint64) { n++ })); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Error("convert reported no progress")
	}
}
