package skycmd

import (
	"strconv"

	"github.com/skycmd/libskycmd/bindings/go/internal/raw"
)

// AnswerType is the type of a question and of its answer.
type AnswerType int

// The question types (skycmd_qtype). The request builders of the same names are the
// structs Choice, Score and Noul (request.go).
const (
	AnswerChoice AnswerType = 0
	AnswerScore  AnswerType = 1
	AnswerNoul   AnswerType = 2
)

func (t AnswerType) String() string {
	switch t {
	case AnswerChoice:
		return "choice"
	case AnswerScore:
		return "score"
	case AnswerNoul:
		return "noul"
	}
	return "unknown"
}

// Probability is one option of an answer: its key ("0".."n-1" for score, "false"/"true"
// for noul, the criteria key for choice) and its probability.
type Probability struct {
	Key string
	P   float64
}

// Answer is the answer to one question, in a form common to the three types. The typed
// views Response.Choices, Response.Scores and Response.Nouls mirror the Jev SDK's answers.
type Answer struct {
	ID   string
	Type AnswerType
	// Choice is the chosen key of a choice question ("" otherwise).
	Choice string
	// Value is the expected level (score), P(true) (noul) or the chosen key's probability
	// (choice).
	Value float64
	// Confidence of a choice or score answer; nil for a noul answer, which has none (the
	// wire has no such field). Never NaN.
	Confidence    *float64
	Probabilities []Probability
	// Legend of a score answer: the criteria text of each level, Legend[j] for level j (a
	// non-string criterion as its JSON text); nil for other types.
	Legend []string
}

// ChoiceAnswer is the typed view of a choice answer (the Jev SDK's ChoiceAnswer).
type ChoiceAnswer struct {
	Choice        string
	Confidence    float64
	Probabilities map[string]float64
}

// ScoreAnswer is the typed view of a score answer (the Jev SDK's ScoreAnswer): Legend and
// Probabilities are keyed by the integer level.
type ScoreAnswer struct {
	Score         float64
	Confidence    float64
	Legend        map[int]string
	Probabilities map[int]float64
}

// NoulAnswer is the typed view of a noul answer (the Jev SDK's NoulAnswer): P(true).
type NoulAnswer struct {
	Noul float64
}

// Response holds the answers of one Decide call, in request order.
type Response struct {
	// Model is the name of the model that answered (the wire's "model": the file's
	// general.name, or WithModelName).
	Model string
	// Answers are in request order (a slice: Go maps are unordered); Answer(id) finds one by
	// question id, and All() ranges over (id, answer) pairs in request order (Go 1.23).
	Answers     []Answer
	InputTokens int64
	// JSON is the library's wire form: {"model", "answers", "usage"}.
	JSON string
}

// Answer finds an answer by question id.
func (r *Response) Answer(id string) (Answer, bool) {
	for _, a := range r.Answers {
		if a.ID == id {
			return a, true
		}
	}
	return Answer{}, false
}

// Choices are the choice answers keyed by question id.
func (r *Response) Choices() map[string]ChoiceAnswer {
	out := map[string]ChoiceAnswer{}
	for _, a := range r.Answers {
		if a.Type != AnswerChoice {
			continue
		}
		c := ChoiceAnswer{Choice: a.Choice, Probabilities: make(map[string]float64, len(a.Probabilities))}
		if a.Confidence != nil {
			c.Confidence = *a.Confidence
		}
		for _, p := range a.Probabilities {
			c.Probabilities[p.Key] = p.P
		}
		out[a.ID] = c
	}
	return out
}

// Scores are the score answers keyed by question id.
func (r *Response) Scores() map[string]ScoreAnswer {
	out := map[string]ScoreAnswer{}
	for _, a := range r.Answers {
		if a.Type != AnswerScore {
			continue
		}
		s := ScoreAnswer{Score: a.Value, Legend: make(map[int]string, len(a.Legend)),
			Probabilities: make(map[int]float64, len(a.Probabilities))}
		if a.Confidence != nil {
			s.Confidence = *a.Confidence
		}
		for j, l := range a.Legend {
			s.Legend[j] = l
		}
		for _, p := range a.Probabilities {
			if level, err := strconv.Atoi(p.Key); err == nil {
				s.Probabilities[level] = p.P
			}
		}
		out[a.ID] = s
	}
	return out
}

// Nouls are the noul answers keyed by question id.
func (r *Response) Nouls() map[string]NoulAnswer {
	out := map[string]NoulAnswer{}
	for _, a := range r.Answers {
		if a.Type == AnswerNoul {
			out[a.ID] = NoulAnswer{Noul: a.Value}
		}
	}
	return out
}

// copyResponse copies every field out of the C response.
func copyResponse(b raw.SkyResponse) *Response {
	n := b.AnswerCount()
	r := &Response{Model: b.Model(), Answers: make([]Answer, 0, n), InputTokens: b.InputTokens(), JSON: b.Json()}
	for i := int64(0); i < n; i++ {
		a := Answer{
			ID:    b.AnswerId(i),
			Type:  AnswerType(b.AnswerType(i)),
			Value: b.AnswerValue(i),
		}
		if b.AnswerHasConfidence(i) {
			c := b.AnswerConfidence(i)
			a.Confidence = &c
		}
		if a.Type == AnswerChoice {
			a.Choice = b.AnswerChoice(i)
		}
		m := b.OptionCount(i)
		a.Probabilities = make([]Probability, 0, m)
		for j := int64(0); j < m; j++ {
			a.Probabilities = append(a.Probabilities, Probability{Key: b.OptionKey(i, j), P: b.OptionProbability(i, j)})
		}
		if a.Type == AnswerScore {
			a.Legend = make([]string, 0, m)
			for j := int64(0); j < m; j++ {
				a.Legend = append(a.Legend, b.OptionLegend(i, j))
			}
		}
		r.Answers = append(r.Answers, a)
	}
	return r
}
