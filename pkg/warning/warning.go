// Package warning carries the warnings a request collects on its way
// (unknown fields under fieldValidation=Warn, a strategy's advice on a
// name) to the response, where they become `Warning: 299 - "<text>"`
// headers as kube sends them. Code that finds a warning only needs the
// request's context; code without a recorder in its context (a controller
// calling the store directly) drops them.
package warning

import (
	"context"
	"fmt"
	"net/http"
	"sync"
)

// Recorder collects a request's warnings, each once, in order.
type Recorder struct {
	mu    sync.Mutex
	seen  map[string]bool
	texts []string
}

type recorderKey struct{}

// WithRecorder returns ctx carrying r.
func WithRecorder(ctx context.Context, r *Recorder) context.Context {
	return context.WithValue(ctx, recorderKey{}, r)
}

// Add records a warning for the request of ctx.
func Add(ctx context.Context, text string) {
	r, ok := ctx.Value(recorderKey{}).(*Recorder)
	if !ok || text == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[text] {
		return
	}
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	r.seen[text] = true
	r.texts = append(r.texts, text)
}

// Texts returns the warnings recorded so far.
func (r *Recorder) Texts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.texts...)
}

// WriteHeaders adds the recorded warnings to h as Warning headers with
// code 299 and agent "-".
func (r *Recorder) WriteHeaders(h http.Header) {
	for _, t := range r.Texts() {
		h.Add("Warning", fmt.Sprintf("299 - %q", t))
	}
}
