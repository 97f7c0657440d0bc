// Package filters owns the stages every request passes before it is
// routed: request deadlines and limits here, and the other cross-cutting
// filters (authentication, audit, authorization). A filter wraps an
// http.Handler and either passes the request on, changed only in its
// context, or answers it.
package filters

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/endpoints/responsewriters"
)

// Terminated is told of each request a filter ends in the server's
// defense (504 at the request timeout, 429 over the in-flight limits),
// for apiserver_request_terminations_total; nil records nothing.
type Terminated func(r *http.Request, code int)

// WithRequestDeadline bounds a request that is not long-running
// (longRunning reports watches) by max, or by its shorter ?timeout (a Go
// duration; a malformed one is kube's 400), and answers 504 when the
// bound passes, whatever the handler is doing: the handler runs in a
// goroutine of its own and what it writes after the deadline is dropped.
// A request whose body stalls thus ends at the deadline too; on HTTP/1.x
// its connection is closed, as the rest of the body can no longer be
// told from the next request.
func WithRequestDeadline(next http.Handler, max time.Duration, longRunning func(*http.Request) bool, terminated Terminated) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if longRunning(r) {
			next.ServeHTTP(w, r)
			return
		}
		timeout := max
		if v := r.URL.Query().Get("timeout"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				responsewriters.WriteError(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid timeout specified in the request URL - %v", err)))
				return
			}
			// 0 (or less) asks for no timeout of the client's own: the
			// server's applies.
			if d > 0 && d < max {
				timeout = d
			}
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		serveWithTimeout(w, r.WithContext(ctx), next, timeout, terminated)
	})
}

// HandlerPanic carries the panic of a handler that ran in a goroutine of
// its own to the request's goroutine, with the stack where it happened.
type HandlerPanic struct {
	Value interface{}
	Stack []byte
}

func (p *HandlerPanic) Error() string { return fmt.Sprint(p.Value) }

// timeoutStatus is kube's answer at the request timeout, byte for byte:
// the Status encoded without kind and apiVersion, as plain text.
func timeoutStatus() []byte {
	data, _ := json.Marshal(&apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0).ErrStatus)
	return append(data, '\n')
}

// handlerWorkers run the handlers below the request deadline.
var handlerWorkers = newWorkers(30 * time.Second)

func serveWithTimeout(w http.ResponseWriter, r *http.Request, next http.Handler, timeout time.Duration, terminated Terminated) {
	tw := &timeoutWriter{w: w, header: w.Header().Clone()}
	body := &trackedBody{ReadCloser: r.Body}
	// The handler gets a copy of the request and of its header, which it
	// may change while this goroutine still reads the original.
	inner := r.WithContext(r.Context())
	inner.Header = r.Header.Clone()
	inner.Body = body
	done := make(chan interface{}, 1)
	handlerWorkers.run(func() {
		defer func() {
			v := recover()
			if v != nil && v != http.ErrAbortHandler {
				v = &HandlerPanic{Value: v, Stack: debug.Stack()}
			}
			done <- v
		}()
		next.ServeHTTP(tw, inner)
	})
	finished := func(v interface{}) {
		if v != nil {
			panic(v)
		}
		tw.finish()
	}
	select {
	case v := <-done:
		finished(v)
		return
	case <-r.Context().Done():
		// A handler done at the deadline has its answer.
		select {
		case v := <-done:
			finished(v)
			return
		default:
		}
	}
	bodyRead := body.finished()
	if !tw.timeout(r, bodyRead) {
		// The handler is writing its answer: most often it met the same
		// deadline in its own calls and is answering that error. It is
		// given a moment to finish rather than having its answer cut.
		t := time.NewTimer(answerGrace)
		select {
		case v := <-done:
			t.Stop()
			finished(v)
			return
		case <-t.C:
		}
		tw.stop()
		klog.ErrorS(nil, "Request timed out while answering: answer cut", "method", r.Method, "path", r.URL.Path, "timeout", timeout)
		if terminated != nil {
			terminated(r, http.StatusGatewayTimeout)
		}
		go func() { afterTimeout(r, <-done) }()
		// Part of the answer is out: the connection (HTTP/1.x) or the
		// stream (HTTP/2) is cut, without a stack trace in the log.
		panic(http.ErrAbortHandler)
	}
	klog.ErrorS(nil, "Request timed out", "method", r.Method, "path", r.URL.Path, "timeout", timeout, "bodyRead", bodyRead)
	if terminated != nil {
		terminated(r, http.StatusGatewayTimeout)
	}
	if !bodyRead {
		// A handler reading the rest of the body fails now (its read
		// deadline has passed). It is given a moment to return: were the
		// read still pending when this request ends, net/http would lift
		// the deadline and wait on the stalled body itself.
		t := time.NewTimer(time.Second)
		select {
		case v := <-done:
			t.Stop()
			afterTimeout(r, v)
			return
		case <-t.C:
		}
	}
	// The handler runs on; what it writes is dropped.
	go func() { afterTimeout(r, <-done) }()
}

// answerGrace is how long a handler that has begun its answer when the
// request times out may take to finish it.
const answerGrace = time.Second

// afterTimeout logs a panic of a handler whose request timed out.
func afterTimeout(r *http.Request, v interface{}) {
	if v != nil && v != http.ErrAbortHandler {
		p := v.(*HandlerPanic)
		klog.ErrorS(nil, "Handler panicked after its request timed out", "method", r.Method, "path", r.URL.Path, "panic", p.Value, "stack", string(p.Stack))
	}
}

// timeoutWriter lets the handler write until the request times out. The
// handler has a header map of its own, copied over when it writes its
// header, so that the timeout can answer while the handler still runs.
type timeoutWriter struct {
	w      http.ResponseWriter
	header http.Header

	mu          sync.Mutex
	wroteHeader bool
	timedOut    bool
}

func (tw *timeoutWriter) Header() http.Header { return tw.header }

func (tw *timeoutWriter) WriteHeader(code int) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut || tw.wroteHeader {
		return
	}
	tw.writeHeaderLocked(code)
}

func (tw *timeoutWriter) writeHeaderLocked(code int) {
	dst := tw.w.Header()
	for k := range dst {
		if _, ok := tw.header[k]; !ok {
			delete(dst, k)
		}
	}
	for k, v := range tw.header {
		dst[k] = v
	}
	tw.wroteHeader = true
	tw.w.WriteHeader(code)
}

func (tw *timeoutWriter) Write(p []byte) (int, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut {
		return 0, http.ErrHandlerTimeout
	}
	if !tw.wroteHeader {
		tw.writeHeaderLocked(http.StatusOK)
	}
	return tw.w.Write(p)
}

func (tw *timeoutWriter) Flush() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.timedOut {
		return
	}
	if !tw.wroteHeader {
		tw.writeHeaderLocked(http.StatusOK)
	}
	if f, ok := tw.w.(http.Flusher); ok {
		f.Flush()
	}
}

// stop drops what the handler writes from now on.
func (tw *timeoutWriter) stop() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.timedOut = true
}

// finish hands on the header of a handler that wrote nothing.
func (tw *timeoutWriter) finish() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if !tw.wroteHeader && !tw.timedOut {
		dst := tw.w.Header()
		for k, v := range tw.header {
			dst[k] = v
		}
	}
}

// timeout stops the handler's writes and answers 504, unless the handler
// has already written its header: then it changes nothing and reports
// false.
func (tw *timeoutWriter) timeout(r *http.Request, bodyRead bool) bool {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.wroteHeader {
		return false
	}
	tw.timedOut = true
	h := tw.w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	if !bodyRead {
		if r.ProtoMajor == 1 {
			h.Set("Connection", "close")
		}
		// A handler blocked reading the rest of the body returns now.
		_ = http.NewResponseController(tw.w).SetReadDeadline(time.Now())
	}
	tw.w.WriteHeader(http.StatusGatewayTimeout)
	tw.w.Write(timeoutStatus())
	return true
}

// trackedBody knows whether the request body has been read to its end.
type trackedBody struct {
	io.ReadCloser
	mu   sync.Mutex
	done bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	if b.ReadCloser == nil {
		return 0, io.EOF
	}
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.mu.Lock()
		b.done = true
		b.mu.Unlock()
	}
	return n, err
}

func (b *trackedBody) Close() error {
	if b.ReadCloser == nil {
		return nil
	}
	return b.ReadCloser.Close()
}

// finished reports whether nothing of the body is left on the wire.
func (b *trackedBody) finished() bool {
	if b.ReadCloser == nil || b.ReadCloser == http.NoBody {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.done
}
