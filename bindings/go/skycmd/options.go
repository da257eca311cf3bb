package skycmd

import "github.com/skycmd/libskycmd/bindings/go/internal/raw"

// Type is a GGUF element type (ggml numbering).
type Type int

const (
	TypeF32  Type = 0
	TypeF16  Type = 1
	TypeQ8_0 Type = 8
	TypeBF16 Type = 30
)

// Weights says how an open model keeps its matrices.
type Weights int

const (
	WeightsF32     Weights = 0 // widened to f32 at load, FMA products (the exact path; default)
	WeightsQ8      Weights = 1 // Q8_0 with calibrated f32 outlier columns
	WeightsQ8Plain Weights = 2 // Q8_0 without calibration
	WeightsBF16x3  Weights = 3 // AMX-BF16 tiles (bf16 hi+lo, within 1e-4 of laya) where usable, else F32
	WeightsQ8Row   Weights = 4 // int8 with one scale per weight row and per activation row (fastest int8)
)

// Activations is the int8 activation mode of a session (used with Q8 weights).
type Activations int

const (
	ActivationsQ8x2 Activations = 0 // two int8 passes (default)
	ActivationsQ8   Activations = 1 // one int8 pass
)

// Layout is the output layout of RandomModel.
type Layout int

const (
	LayoutGGUF Layout = 0
	LayoutLaya Layout = 1
)

// Option sets one libskycmd option (skycmd_option). Calls ignore options they do not use.
type Option func(*optionSet)

type optionSet struct {
	ints     []intOpt
	strs     []strOpt
	session  []intOpt // options applied to each session rather than to the call
	progress func(done, total uint64)
}

type intOpt struct {
	key int
	val int64
}

type strOpt struct {
	key int
	val string
}

func intOption(key raw.Skycmd_option, v int64) Option {
	return func(s *optionSet) { s.ints = append(s.ints, intOpt{int(key), v}) }
}

func strOption(key raw.Skycmd_option, v string) Option {
	return func(s *optionSet) { s.strs = append(s.strs, strOpt{int(key), v}) }
}

// WithWeights chooses how Open keeps the matrices.
func WithWeights(w Weights) Option { return intOption(raw.SKYCMD_OPT_WEIGHTS, int64(w)) }

// WithMaxTokens overrides the model's sequence budget (Open).
func WithMaxTokens(n int) Option { return intOption(raw.SKYCMD_OPT_MAX_TOKENS, int64(n)) }

// WithModelName sets the "model" field reported in responses (Open).
func WithModelName(name string) Option { return strOption(raw.SKYCMD_OPT_MODEL_NAME, name) }

// WithThreads sets the compute threads of each session (Open; 0 = one per core).
func WithThreads(n int) Option {
	return func(s *optionSet) { s.session = append(s.session, intOpt{int(raw.SKYCMD_OPT_THREADS), int64(n)}) }
}

// WithActivations sets the int8 activation mode of each session (Open).
func WithActivations(a Activations) Option {
	return func(s *optionSet) {
		s.session = append(s.session, intOpt{int(raw.SKYCMD_OPT_ACTIVATIONS), int64(a)})
	}
}

// WithType sets the encoder matrix type (Convert, Quantize).
func WithType(t Type) Option { return intOption(raw.SKYCMD_OPT_TYPE, int64(t)) }

// WithHeadType sets the decision head type (Convert, Quantize).
func WithHeadType(t Type) Option { return intOption(raw.SKYCMD_OPT_HEAD_TYPE, int64(t)) }

// WithSeed sets the seed of RandomModel.
func WithSeed(seed int64) Option { return intOption(raw.SKYCMD_OPT_SEED, seed) }

// WithMassive sets the number of planted massive channels of RandomModel.
func WithMassive(n int) Option { return intOption(raw.SKYCMD_OPT_MASSIVE, int64(n)) }

// WithLayout sets the output layout of RandomModel.
func WithLayout(l Layout) Option { return intOption(raw.SKYCMD_OPT_LAYOUT, int64(l)) }

// WithMaxArray sets how many array items Inspect shows.
func WithMaxArray(n int) Option { return intOption(raw.SKYCMD_OPT_MAX_ARRAY, int64(n)) }

// WithJSON makes Inspect print one JSON document.
func WithJSON() Option { return intOption(raw.SKYCMD_OPT_JSON, 1) }

// WithName sets general.name written by Convert.
func WithName(name string) Option { return strOption(raw.SKYCMD_OPT_NAME, name) }

// WithPre sets tokenizer.ggml.pre written by Convert.
func WithPre(pre string) Option { return strOption(raw.SKYCMD_OPT_PRE, pre) }

// WithProgress has Convert and Quantize (and Open/OpenContext, where the library reports
// the load's progress) report their progress: fn(done, total) in the call's units (bytes or
// tensors), at most every 50 ms while it changes and once at the end, always from one
// goroutine of the binding (never from a C thread) and before the call returns. A panic in
// fn cancels the call (a call that completed anyway is undone: its output file removed, the
// model closed) and is re-raised with the same value on the goroutine that made the call.
func WithProgress(fn func(done, total uint64)) Option {
	return func(s *optionSet) { s.progress = fn }
}

// build applies the options to a fresh C options bag; the caller deletes it.
func build(op string, opts []Option) (raw.SkyOptions, *optionSet, error) {
	set := &optionSet{}
	for _, o := range opts {
		if o != nil {
			o(set)
		}
	}
	b := raw.NewSkyOptions()
	if b.Swigcptr() == 0 {
		return nil, nil, &Error{Op: op, Status: ErrNoMem}
	}
	for _, o := range set.ints {
		if st := b.SetInt(o.key, o.val); st != 0 {
			raw.DeleteSkyOptions(b)
			return nil, nil, &Error{Op: op, Status: Status(st),
				Message: "option " + optName(o.key) + " is out of range"}
		}
	}
	for _, o := range set.strs {
		// The value is a C string: a NUL byte would cut it short.
		if err := nulArgument(op, "option "+optName(o.key), o.val); err != nil {
			raw.DeleteSkyOptions(b)
			return nil, nil, err
		}
		if st := b.SetString(o.key, o.val); st != 0 {
			raw.DeleteSkyOptions(b)
			return nil, nil, &Error{Op: op, Status: Status(st), Message: "option " + optName(o.key) + " is invalid"}
		}
	}
	return b, set, nil
}

func optName(key int) string {
	switch raw.Skycmd_option(key) {
	case raw.SKYCMD_OPT_THREADS:
		return "threads"
	case raw.SKYCMD_OPT_WEIGHTS:
		return "weights"
	case raw.SKYCMD_OPT_ACTIVATIONS:
		return "activations"
	case raw.SKYCMD_OPT_TYPE:
		return "type"
	case raw.SKYCMD_OPT_HEAD_TYPE:
		return "head type"
	case raw.SKYCMD_OPT_SEED:
		return "seed"
	case raw.SKYCMD_OPT_MASSIVE:
		return "massive"
	case raw.SKYCMD_OPT_MAX_ARRAY:
		return "max array"
	case raw.SKYCMD_OPT_JSON:
		return "json"
	case raw.SKYCMD_OPT_MAX_TOKENS:
		return "max tokens"
	case raw.SKYCMD_OPT_LAYOUT:
		return "layout"
	case raw.SKYCMD_OPT_NAME:
		return "name"
	case raw.SKYCMD_OPT_PRE:
		return "pre"
	case raw.SKYCMD_OPT_MODEL_NAME:
		return "model name"
	}
	return "unknown"
}
