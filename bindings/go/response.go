package skycmd

import (
	"math"

	"github.com/skycmd/libskycmd/bindings/go/internal/raw"
)

// AnswerType is the type of a question.
type AnswerType int

const (
	Choice AnswerType = 0
	Score  AnswerType = 1
	Noul   AnswerType = 2
)

func (t AnswerType) String() string {
	switch t {
	case Choice:
		return "choice"
	case Score:
		return "score"
	case Noul:
		return "noul"
	}
	return "unknown"
}

// Probability is one option of an answer: its key ("0".."n-1" for score, "false"/"true"
// for noul) and its probability.
type Probability struct {
	Key string
	P   float64
}

// Answer is the answer to one question.
type Answer struct {
	ID   string
	Type AnswerType
	// Choice is the chosen key of a choice question ("" otherwise).
	Choice string
	// Value is the expected level (score), P(true) (noul) or the chosen key's probability
	// (choice).
	Value float64
	// Confidence of a choice or score answer; NaN for noul (the wire has none).
	Confidence    float64
	Probabilities []Probability
}

// Response holds the answers of one Decide call, in request order.
type Response struct {
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
	return Answer{Confidence: math.NaN()}, false
}

// copyResponse copies every field out of the C response.
func copyResponse(b raw.SkyResponse) *Response {
	n := b.AnswerCount()
	r := &Response{Answers: make([]Answer, 0, n), InputTokens: b.InputTokens(), JSON: b.Json()}
	for i := int64(0); i < n; i++ {
		a := Answer{
			ID:         b.AnswerId(i),
			Type:       AnswerType(b.AnswerType(i)),
			Value:      b.AnswerValue(i),
			Confidence: b.AnswerConfidence(i),
		}
		if a.Type == Choice {
			a.Choice = b.AnswerChoice(i)
		}
		m := b.OptionCount(i)
		a.Probabilities = make([]Probability, 0, m)
		for j := int64(0); j < m; j++ {
			a.Probabilities = append(a.Probabilities, Probability{Key: b.OptionKey(i, j), P: b.OptionProbability(i, j)})
		}
		r.Answers = append(r.Answers, a)
	}
	return r
}
