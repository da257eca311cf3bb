package skycmd

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Typed request builders, mirroring the Jev SDK (PyPI typesafe-sdk) Choice, Score and Noul,
// so that a /v1/systemone body need not be written by hand:
//
//	req := skycmd.NewRequest("vy 0 dx 36 up 9 dn 7 nxt 10 alt 32").
//		Ask("action", skycmd.Choice{Instructions: "Which input keeps the drone flying?",
//			Criteria: skycmd.Labels("thrust", "fire the rotors", "glide", "let gravity pull")}).
//		Ask("danger", skycmd.Noul{Instructions: "Will the drone crash?"}).
//		Ask("margin", skycmd.Score{Instructions: "How much room is left?",
//			Criteria: []skycmd.Content{"none", "tight", "comfortable"}})
//	r, err := model.DecideRequest(ctx, req)
//
// Order is kept everywhere (questions, choice labels, score levels): it is the order of the
// answers and of their probabilities. The builders check what the SDK's types enforce (a
// non-empty criteria list, a noul with instructions or a described outcome); everything
// else is the library's request validation (ErrRequest with its message).

// Content is a state, an instruction or a criterion: a string, or any value encoding/json
// turns into a JSON object or array (a map, a struct, a slice, a json.RawMessage).
type Content = any

// Question is one of Choice, Score, Noul.
type Question interface {
	questionJSON(name string) (json.RawMessage, error)
}

// Label is one alternative of a choice question: its name and what it means (nil: the
// name alone, sent as JSON null).
type Label struct {
	Name        string
	Description Content
}

// Labels builds choice criteria from name, description pairs (an odd count panics, as it is
// a programming error).
func Labels(nameDescription ...string) []Label {
	if len(nameDescription)%2 != 0 {
		panic("skycmd.Labels: names and descriptions must come in pairs")
	}
	out := make([]Label, 0, len(nameDescription)/2)
	for i := 0; i < len(nameDescription); i += 2 {
		out = append(out, Label{Name: nameDescription[i], Description: nameDescription[i+1]})
	}
	return out
}

// Choice selects one of named alternatives (the SDK's Choice).
type Choice struct {
	// Instructions: the question (optional, nil to leave it out).
	Instructions Content
	// Criteria: at least one label, in order.
	Criteria []Label
}

// Score rates against an ordered rubric (the SDK's Score): level j is Criteria[j].
type Score struct {
	Instructions Content
	// Criteria: at least one level description, from level 0 up.
	Criteria []Content
}

// Noul is a yes/no question or statement (the SDK's Noul). It needs Instructions or at
// least one described outcome.
type Noul struct {
	Instructions Content
	// True and False describe the yes and no outcomes (optional).
	True, False Content
}

func requestError(format string, args ...any) error {
	return &Error{Op: "request", Status: ErrRequest, Message: fmt.Sprintf(format, args...)}
}

// object writes {"k": v, ...} in the given key order, leaving out nil values.
func object(keys []string, values []any) (json.RawMessage, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for i, k := range keys {
		if values[i] == nil {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(values[i])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (q Choice) questionJSON(name string) (json.RawMessage, error) {
	if len(q.Criteria) == 0 {
		return nil, requestError("questions.%s: a choice needs at least one label", name)
	}
	keys := make([]string, len(q.Criteria))
	vals := make([]any, len(q.Criteria))
	for i, l := range q.Criteria {
		keys[i] = l.Name
		if l.Description == nil {
			vals[i] = json.RawMessage("null")
		} else {
			vals[i] = l.Description
		}
	}
	crit, err := object(keys, vals)
	if err != nil {
		return nil, err
	}
	return object([]string{"type", "instructions", "criteria"}, []any{"choice", q.Instructions, crit})
}

func (q Score) questionJSON(name string) (json.RawMessage, error) {
	if len(q.Criteria) == 0 {
		return nil, requestError("questions.%s: a score needs at least one level", name)
	}
	return object([]string{"type", "instructions", "criteria"}, []any{"score", q.Instructions, q.Criteria})
}

func (q Noul) questionJSON(name string) (json.RawMessage, error) {
	if q.Instructions == nil && q.True == nil && q.False == nil {
		return nil, requestError("questions.%s: a noul needs instructions or a described outcome", name)
	}
	var crit any
	if q.True != nil || q.False != nil {
		c, err := object([]string{"true", "false"}, []any{q.True, q.False})
		if err != nil {
			return nil, err
		}
		crit = c
	}
	return object([]string{"type", "instructions", "criteria"}, []any{"noul", q.Instructions, crit})
}

// Request is a /v1/systemone request body built from typed questions.
type Request struct {
	// Model is the optional "model" field (a server routes by it; Response.Model names the
	// model that answered).
	Model string
	// State is the content every question refers to.
	State     Content
	names     []string
	questions []Question
}

// NewRequest starts a request about state.
func NewRequest(state Content) *Request { return &Request{State: state} }

// Ask adds a question under a name of your choice (the answer's ID) and returns r.
func (r *Request) Ask(name string, q Question) *Request {
	r.names = append(r.names, name)
	r.questions = append(r.questions, q)
	return r
}

// MarshalJSON writes the request body, questions in the order they were asked.
func (r *Request) MarshalJSON() ([]byte, error) {
	if r.State == nil {
		return nil, requestError("the request has no state")
	}
	if len(r.questions) == 0 {
		return nil, requestError("the request asks no question")
	}
	seen := make(map[string]bool, len(r.names))
	qs := make([]any, len(r.questions))
	for i, q := range r.questions {
		if q == nil {
			return nil, requestError("questions.%s: nil question", r.names[i])
		}
		if seen[r.names[i]] {
			return nil, requestError("questions.%s: asked twice", r.names[i])
		}
		seen[r.names[i]] = true
		b, err := q.questionJSON(r.names[i])
		if err != nil {
			return nil, err
		}
		qs[i] = b
	}
	questions, err := object(r.names, qs)
	if err != nil {
		return nil, err
	}
	var model any
	if r.Model != "" {
		model = r.Model
	}
	return object([]string{"model", "state", "questions"}, []any{model, r.State, questions})
}

// JSON is the request body as text.
func (r *Request) JSON() (string, error) {
	b, err := r.MarshalJSON()
	return string(b), err
}
