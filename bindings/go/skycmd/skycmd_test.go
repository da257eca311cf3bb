package skycmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skycmd/libskycmd/bindings/go/internal/raw"
)

// The tests need a random s1-pico model: $SKYCMD_TEST_MODEL, or one made here through
// RandomModel. If the library cannot make one yet (ErrUnsupported), model tests skip,
// unless SKYCMD_REQUIRE_MODEL=1 (run-tests.sh sets it), which turns the skip into a failure.

var (
	modelOnce sync.Once
	modelPath string
	modelErr  error
	tmpDir    string
)

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "skycmd-go-test-")
	if err != nil {
		panic(err)
	}
	tmpDir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

func testModel(t *testing.T) string {
	t.Helper()
	modelOnce.Do(func() {
		if p := os.Getenv("SKYCMD_TEST_MODEL"); p != "" {
			modelPath = p
			return
		}
		modelPath = filepath.Join(tmpDir, "s1-pico.gguf")
		modelErr = RandomModel("s1-pico", modelPath)
	})
	if modelErr != nil {
		if errors.Is(modelErr, ErrUnsupported) && os.Getenv("SKYCMD_REQUIRE_MODEL") != "1" {
			t.Skipf("no random model in this library build yet: %v", modelErr)
		}
		t.Fatalf("random s1-pico: %v", modelErr)
	}
	return modelPath
}

func exampleRequest(t *testing.T) string {
	t.Helper()
	p := os.Getenv("SKYCMD_EXAMPLE_REQUEST")
	if p == "" {
		p = filepath.Join("..", "..", "..", "examples", "flappy-drone.json")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("example request: %v", err)
	}
	return string(b)
}

func TestStatusValuesMatchHeader(t *testing.T) {
	pairs := []struct {
		ours Status
		c    raw.Skycmd_status
	}{
		{OK, raw.SKYCMD_OK}, {ErrInvalidArgument, raw.SKYCMD_E_INVALID_ARGUMENT},
		{ErrMisuse, raw.SKYCMD_E_MISUSE}, {ErrNoMem, raw.SKYCMD_E_NOMEM}, {ErrIO, raw.SKYCMD_E_IO},
		{ErrFormat, raw.SKYCMD_E_FORMAT}, {ErrUnsupported, raw.SKYCMD_E_UNSUPPORTED},
		{ErrBusy, raw.SKYCMD_E_BUSY}, {ErrJSON, raw.SKYCMD_E_JSON}, {ErrRequest, raw.SKYCMD_E_REQUEST},
		{ErrTooLarge, raw.SKYCMD_E_TOO_LARGE}, {ErrVersion, raw.SKYCMD_E_VERSION},
		{ErrNotFound, raw.SKYCMD_E_NOT_FOUND}, {ErrInternal, raw.SKYCMD_E_INTERNAL},
		{ErrCancelled, raw.SKYCMD_E_CANCELLED},
	}
	for _, p := range pairs {
		if int(p.ours) != int(p.c) {
			t.Errorf("%s: Go %d, header %d", p.ours.Name(), int(p.ours), int(p.c))
		}
	}
	if ErrIO.Name() != "SKYCMD_E_IO" || ErrIO.Error() == "" {
		t.Errorf("status strings: %q %q", ErrIO.Name(), ErrIO.Error())
	}
}

func TestVersionCheck(t *testing.T) {
	if int(HeaderVersionNumber) != raw.SKYCMD_VERSION_MAJOR*10000+raw.SKYCMD_VERSION_MINOR*100+raw.SKYCMD_VERSION_PATCH {
		t.Fatalf("header version number is %d", HeaderVersionNumber)
	}
	if err := CheckVersion(HeaderVersionNumber); err != nil {
		t.Fatalf("this build refuses its own library: %v", err)
	}
	if VersionNumber() < HeaderVersionNumber || Version() == "" {
		t.Fatalf("library %s (%d) older than header %d", Version(), VersionNumber(), HeaderVersionNumber)
	}
	// A binding built against a newer header (next patch, next minor, next major) refuses.
	for _, newer := range []uint{VersionNumber() + 1, VersionNumber() + 100, VersionNumber() + 10000} {
		err := CheckVersion(newer)
		var e *Error
		if !errors.As(err, &e) || e.Status != ErrVersion || !errors.Is(err, ErrVersion) || e.Message == "" {
			t.Fatalf("CheckVersion(%d) = %v, want ErrVersion with a message", newer, err)
		}
	}
	// Simulate loading against an older library: every entry point refuses.
	saved := loadErr
	loadErr = CheckVersion(VersionNumber() + 1)
	defer func() { loadErr = saved }()
	if _, err := Open("whatever.gguf"); !errors.Is(err, ErrVersion) {
		t.Fatalf("Open on an older library: %v", err)
	}
	if err := RandomModel("s1-pico", filepath.Join(tmpDir, "x.gguf")); !errors.Is(err, ErrVersion) {
		t.Fatalf("RandomModel on an older library: %v", err)
	}
}

func checkAnswers(t *testing.T, r *Response) {
	t.Helper()
	if len(r.Answers) != 3 {
		t.Fatalf("%d answers, want 3: %s", len(r.Answers), r.JSON)
	}
	if r.InputTokens <= 0 {
		t.Errorf("input tokens %d", r.InputTokens)
	}
	ids := []string{"action", "danger", "margin"}
	types := []AnswerType{AnswerChoice, AnswerNoul, AnswerScore}
	for i, a := range r.Answers {
		if a.ID != ids[i] || a.Type != types[i] {
			t.Fatalf("answer %d is %s/%s, want %s/%s", i, a.ID, a.Type, ids[i], types[i])
		}
		sum := 0.0
		for _, p := range a.Probabilities {
			if !(p.P >= 0 && p.P <= 1) {
				t.Errorf("%s: p(%s) = %v", a.ID, p.Key, p.P)
			}
			sum += p.P
		}
		if math.Abs(sum-1) > 1e-6 {
			t.Errorf("%s: probabilities sum to %v", a.ID, sum)
		}
	}
	act := r.Answers[0]
	if len(act.Probabilities) != 2 || act.Probabilities[0].Key != "thrust" || act.Probabilities[1].Key != "glide" {
		t.Fatalf("action options %+v", act.Probabilities)
	}
	best := act.Probabilities[0]
	if act.Probabilities[1].P > best.P {
		best = act.Probabilities[1]
	}
	if act.Choice != best.Key || act.Value != best.P || act.Confidence == nil || math.IsNaN(*act.Confidence) ||
		*act.Confidence < 0 || *act.Confidence > 1 || act.Legend != nil {
		t.Errorf("action: choice %q value %v confidence %v, best %+v", act.Choice, act.Value, act.Confidence, best)
	}
	dn := r.Answers[1]
	if len(dn.Probabilities) != 2 || dn.Probabilities[0].Key != "false" || dn.Probabilities[1].Key != "true" ||
		dn.Value != dn.Probabilities[1].P || dn.Confidence != nil || dn.Choice != "" || dn.Legend != nil {
		t.Errorf("danger: %+v", dn)
	}
	mg := r.Answers[2]
	if len(mg.Probabilities) != 3 {
		t.Fatalf("margin: %+v", mg)
	}
	exp := 0.0
	for i, p := range mg.Probabilities {
		if p.Key != strconv.Itoa(i) {
			t.Errorf("margin key %d = %q", i, p.Key)
		}
		exp += float64(i) * p.P
	}
	if math.Abs(exp-mg.Value) > 1e-9 || mg.Value < 0 || mg.Value > 2 || mg.Confidence == nil {
		t.Errorf("margin score %v, expected level %v, confidence %v", mg.Value, exp, mg.Confidence)
	}
	if want := []string{"none", "tight", "comfortable"}; strings.Join(mg.Legend, "|") != strings.Join(want, "|") {
		t.Errorf("margin legend %q, want %q", mg.Legend, want)
	}
	if r.Model != "s1-pico" {
		t.Errorf("response model %q", r.Model)
	}
	// The typed views (the Jev SDK's answer types).
	if c := r.Choices()["action"]; c.Choice != act.Choice || c.Confidence != *act.Confidence || c.Probabilities["glide"] != act.Probabilities[1].P {
		t.Errorf("typed choice %+v", c)
	}
	if s := r.Scores()["margin"]; s.Score != mg.Value || s.Confidence != *mg.Confidence || s.Legend[2] != "comfortable" || s.Probabilities[1] != mg.Probabilities[1].P {
		t.Errorf("typed score %+v", s)
	}
	if n := r.Nouls(); len(n) != 1 || n["danger"].Noul != dn.Value {
		t.Errorf("typed nouls %+v", n)
	}
	// The wire JSON carries the same answers (to its printed precision).
	var wire struct {
		Answers map[string]map[string]any `json:"answers"`
		Usage   struct {
			InputTokens int64 `json:"input_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(r.JSON), &wire); err != nil {
		t.Fatalf("response JSON: %v\n%s", err, r.JSON)
	}
	if wire.Usage.InputTokens != r.InputTokens || wire.Answers["action"]["choice"] != act.Choice {
		t.Errorf("wire JSON disagrees: %s", r.JSON)
	}
	if v, _ := wire.Answers["danger"]["noul"].(float64); math.Abs(v-dn.Value) > 1e-6 {
		t.Errorf("wire noul %v vs %v", v, dn.Value)
	}
}

// dump writes the canonical form used by run-tests.sh's cross-check: every double as the
// 16 hex digits of its IEEE-754 bits, so the bindings can be compared exactly; an absent
// confidence (noul) is "none". bindings/go/consumer/main.go writes the same form.
func dump(r *Response) string {
	var b strings.Builder
	bits := func(v float64) string { return fmt.Sprintf("%016x", math.Float64bits(v)) }
	fmt.Fprintf(&b, "input_tokens %d\n", r.InputTokens)
	for _, a := range r.Answers {
		conf := "none"
		if a.Confidence != nil {
			conf = bits(*a.Confidence)
		}
		fmt.Fprintf(&b, "answer %s %s choice=%s value=%s confidence=%s\n", a.ID, a.Type, a.Choice, bits(a.Value), conf)
		for _, p := range a.Probabilities {
			fmt.Fprintf(&b, "option %s %s\n", p.Key, bits(p.P))
		}
	}
	return b.String()
}

func TestExampleRequest(t *testing.T) {
	path := testModel(t)
	req := exampleRequest(t)
	m, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r, err := m.Decide(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	checkAnswers(t, r)
	if n, err := m.Int("decision.max_head_tokens"); err != nil || n <= 0 {
		t.Errorf("decision.max_head_tokens = %d, %v", n, err)
	}
	if _, err := m.Int("no.such.key"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing hyper-parameter: %v", err)
	}
	// A second call (pooled session) gives the very same bits.
	r2, err := m.Decide(context.Background(), req)
	if err != nil || dump(r2) != dump(r) {
		t.Fatalf("second decide differs: %v", err)
	}
	if d := os.Getenv("SKYCMD_DUMP_DIR"); d != "" {
		if err := os.WriteFile(filepath.Join(d, "go.txt"), []byte(dump(r)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestErrors(t *testing.T) {
	_, err := Open(filepath.Join(tmpDir, "does-not-exist.gguf"))
	var e *Error
	if !errors.As(err, &e) || e.Status != ErrIO || !strings.Contains(e.Message, "does-not-exist") {
		t.Fatalf("bad path: %v", err)
	}
	// A file that is not GGUF.
	junk := filepath.Join(tmpDir, "junk.gguf")
	os.WriteFile(junk, []byte("this is not a gguf file at all"), 0o644)
	if _, err := Open(junk); !errors.Is(err, ErrFormat) {
		t.Fatalf("junk file: %v", err)
	}
	if _, err := Inspect(filepath.Join(tmpDir, "nope.gguf")); !errors.Is(err, ErrIO) {
		t.Fatalf("inspect bad path: %v", err)
	}

	m, err := Open(testModel(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Decide(context.Background(), `{"state": "x", "questions": {`)
	if !errors.As(err, &e) || e.Status != ErrJSON || e.Message == "" {
		t.Fatalf("bad JSON: %v", err)
	}
	_, err = m.Decide(context.Background(), `{"state": "x", "questions": {"a": {"type": "choice", "instructions": "?", "criteria": {}}}}`)
	if !errors.As(err, &e) || e.Status != ErrRequest || !strings.Contains(e.Message, "criteria") {
		t.Fatalf("invalid request: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Decide(ctx, exampleRequest(t)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := m.Decide(context.Background(), exampleRequest(t)); !errors.Is(err, ErrMisuse) {
		t.Fatalf("decide after close: %v", err)
	}
	if !m.Closed() || m.Name() != "" {
		t.Fatal("closed model still looks open")
	}
	if err := RandomModel("no-such-preset", filepath.Join(tmpDir, "p.gguf")); err == nil {
		t.Fatal("unknown preset accepted")
	}
	if err := Convert(context.Background(), filepath.Join(tmpDir, "no-such-dir"), filepath.Join(tmpDir, "c.gguf")); err == nil {
		t.Fatal("convert of a missing directory succeeded")
	}
	if _, err := os.Stat(filepath.Join(tmpDir, "c.gguf")); !os.IsNotExist(err) {
		t.Fatal("failed convert left an output file")
	}
}

func TestFilesInspectQuantize(t *testing.T) {
	path := testModel(t)
	txt, err := Inspect(path)
	if err != nil || !strings.Contains(txt, "modern-bert") {
		t.Fatalf("inspect: %v\n%.300s", err, txt)
	}
	js, err := Inspect(path, WithJSON())
	if err != nil || !json.Valid([]byte(js)) {
		t.Fatalf("inspect --json: %v\n%.300s", err, js)
	}
	q := filepath.Join(tmpDir, "s1-pico-q8.gguf")
	if err := Quantize(context.Background(), path, q, WithType(TypeQ8_0)); err != nil {
		t.Fatal(err)
	}
	qm, err := Open(q)
	if err != nil {
		t.Fatal(err)
	}
	defer qm.Close()
	r, err := qm.Decide(context.Background(), exampleRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	checkAnswers(t, r)
	// A random model made here with a seed differs from the default-seed one only in weights.
	own := filepath.Join(tmpDir, "seeded.gguf")
	if err := RandomModel("s1-pico", own, WithSeed(7)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(own); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentDecide(t *testing.T) {
	m, err := Open(testModel(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	req := exampleRequest(t)
	ref, err := m.Decide(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := dump(ref)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				r, err := m.Decide(context.Background(), req)
				if err != nil {
					errs <- err
					return
				}
				if dump(r) != want {
					errs <- errors.New("concurrent answer differs")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Close while calls run: it waits for them; later calls fail cleanly with ErrMisuse.
	var wg2 sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			for i := 0; i < 5; i++ {
				r, err := m.Decide(context.Background(), req)
				if err == nil && dump(r) != want || err != nil && !errors.Is(err, ErrMisuse) {
					t.Errorf("decide racing Close: %v", err)
					return
				}
			}
		}()
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	wg2.Wait()
}

func rssKiB(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm")
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize()) / 1024
}

// TestOpenDecideCloseLoop is the leak check. 600 open/decide/close rounds, every tenth
// model dropped unclosed for the finalizer (each followed by a GC so dropped models do not
// pile up: a pile raises the malloc peak without leaking). Between round 300 and round 600:
//   - the C heap in use (glibc mallinfo2, all arenas) must not grow by 192 KiB. Measured
//     drift without any leak is 10-70 KiB per 300 rounds (new cgo threads and their malloc
//     arenas, pending finalizers); only leaks above ~650 bytes per round (a model or a
//     session with its scratch) are caught here. The exact C-side check is valgrind in run-tests.sh;
//   - the RSS must not grow by 16 MiB (headroom for the race detector): a leaked model
//     (~1.5 MB mapped) per round would be ~450 MiB.
//
// The loop stays on one OS thread: the library keeps a kernel scratch buffer per thread
// (freed when the thread exits; tens of KiB), and a goroutine moved onto new cgo threads
// would add one per thread, bounded by the thread count but counted here as growth.
func TestOpenDecideCloseLoop(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	path := testModel(t)
	req := exampleRequest(t)
	settle := func() {
		for i := 0; i < 3; i++ {
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
	}
	var heap300, rss300 int64
	for i := 0; i < 600; i++ {
		m, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Decide(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if i%10 != 0 {
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			runtime.GC() // queue the finalizer of the dropped model
		}
		if i == 299 {
			settle()
			heap300, rss300 = raw.SkyHeapInUse(), rssKiB(t)
		}
	}
	settle()
	heap600, rss600 := raw.SkyHeapInUse(), rssKiB(t)
	t.Logf("go loop: C heap in use after 300 rounds %d B, after 600 %d B (growth %d B); RSS %d -> %d KiB (growth %d KiB)",
		heap300, heap600, heap600-heap300, rss300, rss600, rss600-rss300)
	if heap300 >= 0 && heap600-heap300 > 192*1024 {
		t.Errorf("C heap grew by %d bytes over 300 open/decide/close rounds", heap600-heap300)
	}
	if rss600-rss300 > 16384 {
		t.Errorf("RSS grew by %d KiB over 300 open/decide/close rounds", rss600-rss300)
	}
}
