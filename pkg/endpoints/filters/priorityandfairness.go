package filters

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/endpoints/request"
	"github.com/cronplane/cronplane/pkg/flowcontrol"
)

// The response headers naming a request's flow schema and priority
// level.
const (
	FlowSchemaUIDHeader    = "X-Kubernetes-PF-FlowSchema-UID"
	PriorityLevelUIDHeader = "X-Kubernetes-PF-PriorityLevel-UID"
)

// The same in their canonical form, as http.Header keeps them: setting
// them directly spares canonicalizing them for every request.
var (
	flowSchemaUIDKey    = http.CanonicalHeaderKey(FlowSchemaUIDHeader)
	priorityLevelUIDKey = http.CanonicalHeaderKey(PriorityLevelUIDHeader)
)

// Queue waits are bounded as kube bounds them: a quarter of the time
// left to the request, or defaultQueueWait for requests without a
// deadline (watches).
const defaultQueueWait = 15 * time.Second

// PriorityAndFairness admits requests through API Priority and Fairness,
// in place of MaxInFlight: each request is classified, waits in its
// level's queues if it must, and is answered 429 when rejected. It
// records into inflight's apiserver_current_inflight_requests and
// apiserver_dropped_requests_total as kube does with APF on.
type PriorityAndFairness struct {
	Controller *flowcontrol.Controller
	// Count tells the stored objects of a resource, for the seats of a
	// LIST.
	Count flowcontrol.ObjectCounter
	// LongRunning reports the requests left alone (all long-running ones
	// but watches).
	LongRunning func(*http.Request) bool
	Terminated  Terminated
	InFlight    *MaxInFlight

	readOnly, mutating atomic.Int64
}

// Handler applies priority and fairness in front of next.
func (p *PriorityAndFairness) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok := request.RequestInfoFrom(r.Context())
		u, uok := user.From(r.Context())
		if !ok || !uok {
			next.ServeHTTP(w, r)
			return
		}
		watch := info.Verb == "watch"
		if !watch && p.LongRunning(r) {
			next.ServeHTTP(w, r)
			return
		}
		d := flowcontrol.Digest{User: u, Info: info}
		cl, ok := p.Controller.Classify(d)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		// One array holds both values, each its own one-element slice.
		uids := [...]string{string(cl.FlowSchemaUID()), string(cl.PriorityLevelUID())}
		h := w.Header()
		h[flowSchemaUIDKey] = uids[0:1:1]
		h[priorityLevelUIDKey] = uids[1:2:2]
		width := 1
		if info.Verb == "list" {
			width = flowcontrol.Width(info, r.URL.Query(), p.Count, cl.MaxSeats)
		}
		ticket, _ := p.Controller.Admit(r.Context(), queueWaitDeadline, cl, d, width, watch)
		kind := verbKind(info.Verb)
		if ticket == nil {
			if p.InFlight != nil {
				p.InFlight.dropped.WithLabelValues(kind).Inc()
			}
			if p.Terminated != nil {
				p.Terminated(r, http.StatusTooManyRequests)
			}
			TooManyRequests(w)
			return
		}
		n := &p.readOnly
		if kind == MutatingKind {
			n = &p.mutating
		}
		p.observe(kind, n.Add(1))
		defer func() { p.observe(kind, n.Add(-1)) }()
		defer ticket.Finish()
		if watch {
			// A watch holds its seat only while it is set up: until the
			// server answers its header.
			w = &watchInitWriter{ResponseWriter: w, initialized: ticket.Finish}
		}
		next.ServeHTTP(w, r)
	})
}

func (p *PriorityAndFairness) observe(kind string, n int64) {
	if p.InFlight != nil {
		p.InFlight.observe(kind, int(n))
	}
}

// queueWaitDeadline bounds the wait in queue; the dispatcher asks only
// for requests that wait.
func queueWaitDeadline(ctx context.Context, arrival time.Time) time.Time {
	deadline, ok := ctx.Deadline()
	if !ok {
		return arrival.Add(defaultQueueWait)
	}
	return arrival.Add(deadline.Sub(arrival) / 4)
}

// watchInitWriter tells when a watch is set up: at its header.
type watchInitWriter struct {
	http.ResponseWriter
	initialized func()
	// told is set once initialized was called; the handler writes from
	// one goroutine.
	told bool
}

func (w *watchInitWriter) tell() {
	if !w.told {
		w.told = true
		w.initialized()
	}
}

func (w *watchInitWriter) WriteHeader(code int) {
	w.tell()
	w.ResponseWriter.WriteHeader(code)
}

func (w *watchInitWriter) Write(b []byte) (int, error) {
	w.tell()
	return w.ResponseWriter.Write(b)
}

// Flush lets the watch stream through.
func (w *watchInitWriter) Flush() {
	w.tell()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *watchInitWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
