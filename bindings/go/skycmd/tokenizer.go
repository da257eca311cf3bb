package skycmd

import (
	"runtime"
	"sync"
	"syscall"

	"github.com/skycmd/libskycmd/bindings/go/internal/raw"
)

// Special names a special token of a vocabulary.
type Special int

// The special tokens (skycmd_special).
const (
	SpecialCLS  Special = 0
	SpecialSEP  Special = 1
	SpecialMASK Special = 2
	SpecialPAD  Special = 3
	SpecialUNK  Special = 4
)

// Tokenizer is a byte-level BPE tokenizer: a model's (Model.Tokenizer) or one loaded from a
// Hugging Face tokenizer.json (OpenTokenizer). Safe for concurrent use (calls are
// serialized). A model's tokenizer lives as long as its model: after Model.Close its calls
// return ErrMisuse.
type Tokenizer struct {
	mu    sync.Mutex
	box   raw.SkyTokenizer // nil once closed
	model *Model           // the lender, or nil for a loaded tokenizer
}

// Tokenizer returns the model's tokenizer (the same one on every call).
func (m *Model) Tokenizer() (*Tokenizer, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.box == nil {
		return nil, errClosed("tokenizer")
	}
	m.tokMu.Lock()
	defer m.tokMu.Unlock()
	if m.tok != nil {
		return m.tok, nil
	}
	box := raw.NewSkyTokenizer()
	if box.Swigcptr() == 0 {
		return nil, &Error{Op: "tokenizer", Status: ErrNoMem}
	}
	if st := box.FromModel(m.box); st != 0 {
		err := newError("tokenizer", st, box.Message())
		raw.DeleteSkyTokenizer(box)
		return nil, err
	}
	m.tok = &Tokenizer{box: box, model: m}
	return m.tok, nil
}

// OpenTokenizer loads a Hugging Face tokenizer.json (byte-level BPE). Close it when done (a
// finalizer closes a forgotten one). A file that does not exist is an *Error of ErrIO that
// also matches fs.ErrNotExist (its Errno is syscall.ENOENT), as for Open.
func OpenTokenizer(path string) (*Tokenizer, error) {
	if loadErr != nil {
		return nil, loadErr
	}
	if err := nulArgument("open tokenizer", "path", path); err != nil {
		return nil, err
	}
	box := raw.NewSkyTokenizer()
	if box.Swigcptr() == 0 {
		return nil, &Error{Op: "open tokenizer", Status: ErrNoMem}
	}
	if st := box.OpenJson(path); st != 0 {
		err := &Error{Op: "open tokenizer", Status: Status(st), Message: box.Message(), Errno: syscall.Errno(box.OsError())}
		raw.DeleteSkyTokenizer(box)
		return nil, err
	}
	t := &Tokenizer{box: box}
	runtime.SetFinalizer(t, func(t *Tokenizer) { t.release() })
	return t, nil
}

// Close frees a tokenizer from OpenTokenizer; idempotent. A model's tokenizer is closed by
// Model.Close, and its Close does nothing.
func (t *Tokenizer) Close() error {
	if t.model == nil {
		t.release()
		runtime.SetFinalizer(t, nil)
	}
	return nil
}

func (t *Tokenizer) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.box != nil {
		t.box.Close()
		raw.DeleteSkyTokenizer(t.box)
		t.box = nil
	}
}

// use runs fn with the box locked (and the lending model held open).
func (t *Tokenizer) use(op string, fn func(b raw.SkyTokenizer) error) error {
	if t.model != nil {
		t.model.mu.RLock()
		defer t.model.mu.RUnlock()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.box == nil {
		return &Error{Op: op, Status: ErrMisuse, Message: "tokenizer is closed"}
	}
	return fn(t.box)
}

// Encode returns the ids of UTF-8 text, exactly as Hugging Face tokenizers encodes it with
// add_special_tokens=False. Invalid UTF-8 is ErrInvalidArgument. All of text's bytes are
// encoded, NUL bytes included (skycmd_tokenizer_encode takes the length).
func (t *Tokenizer) Encode(text string) ([]int32, error) {
	var ids []int32
	err := t.use("encode", func(b raw.SkyTokenizer) error {
		got, _, st := encodeText(b, text, true)
		if st != 0 {
			return newError("encode", st, Status(st).Error())
		}
		ids = got
		if ids == nil {
			ids = []int32{}
		}
		return nil
	})
	return ids, err
}

// Count returns how many tokens Encode would return, without building the list.
func (t *Tokenizer) Count(text string) (int, error) {
	var n int
	err := t.use("count tokens", func(b raw.SkyTokenizer) error {
		_, got, st := encodeText(b, text, false)
		if st != 0 {
			return newError("count tokens", st, Status(st).Error())
		}
		n = got
		return nil
	})
	return n, err
}

// Decode turns ids back into UTF-8 text (byte-level decoding).
func (t *Tokenizer) Decode(ids []int32) (string, error) {
	var text string
	err := t.use("decode", func(b raw.SkyTokenizer) error {
		b.ClearIds()
		for _, id := range ids {
			if st := b.AppendId(int(id)); st != 0 {
				return newError("decode", st, b.Message())
			}
		}
		if st := b.Decode(); st != 0 {
			return newError("decode", st, b.Message())
		}
		text = b.DecodedText()
		return nil
	})
	return text, err
}

// Token returns the vocabulary entry of an id in its byte-level form (e.g. "Ġthe"); false
// when the id is out of range.
func (t *Tokenizer) Token(id int32) (string, bool) {
	var s string
	_ = t.use("token", func(b raw.SkyTokenizer) error {
		s = b.Token(int(id))
		return nil
	})
	return s, s != ""
}

// VocabSize is the number of ids (0 once closed).
func (t *Tokenizer) VocabSize() int {
	var n int
	_ = t.use("vocab size", func(b raw.SkyTokenizer) error {
		n = int(b.VocabSize())
		return nil
	})
	return n
}

// SpecialID returns the id of a special token; false if the vocabulary has none.
func (t *Tokenizer) SpecialID(which Special) (int32, bool) {
	id := -1
	_ = t.use("special id", func(b raw.SkyTokenizer) error {
		id = b.SpecialId(int(which))
		return nil
	})
	return int32(id), id >= 0
}
