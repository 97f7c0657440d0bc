package filters

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/endpoints/request"
	"github.com/cronplane/cronplane/pkg/metrics"
)

// The request kinds the in-flight limits count apart, as kube labels
// them.
const (
	ReadOnlyKind = "readOnly"
	MutatingKind = "mutating"
)

// MaxInFlight caps the requests served at once, read-only ones (get,
// list) and mutating ones apart, as kube-apiserver's
// --max-requests-inflight and --max-mutating-requests-inflight do without
// priority and fairness: a request over its limit is answered 429 with
// Retry-After: 1 at once, not queued. Exempt requests (watches, health
// checks) are neither counted nor limited, and a request of
// system:masters over the limit is still served, as kube serves it.
type MaxInFlight struct {
	readOnly, mutating chan struct{}
	exempt             func(*http.Request) bool
	terminated         Terminated

	// inflight is apiserver_current_inflight_requests: the most requests
	// of each kind served at once in the last second.
	inflight *prometheus.GaugeVec
	// dropped is apiserver_dropped_requests_total: the requests answered
	// 429, by kind.
	dropped   *prometheus.CounterVec
	mu        sync.Mutex
	watermark map[string]int
}

// NewMaxInFlight limits read-only requests to readOnly and mutating ones
// to mutating; 0 leaves a kind unlimited. exempt reports the requests
// left alone; terminated (if not nil) is told of each 429. The gauge
// apiserver_current_inflight_requests and the counter
// apiserver_dropped_requests_total are registered in reg.
func NewMaxInFlight(readOnly, mutating int, exempt func(*http.Request) bool, reg *metrics.Registry, terminated Terminated) *MaxInFlight {
	m := &MaxInFlight{
		exempt:     exempt,
		terminated: terminated,
		watermark:  map[string]int{},
		inflight: reg.Gauge(metrics.Opts{Name: "apiserver_current_inflight_requests", Stability: metrics.Stable,
			Help: "Most requests of each kind (readOnly, mutating) this apiserver served at once in the last second."}, "request_kind"),
		dropped: reg.Counter(metrics.Opts{Name: "apiserver_dropped_requests_total",
			Help: "Requests of each kind (readOnly, mutating) answered 429 because the in-flight limit of their kind was reached."}, "request_kind"),
	}
	if readOnly > 0 {
		m.readOnly = make(chan struct{}, readOnly)
	}
	if mutating > 0 {
		m.mutating = make(chan struct{}, mutating)
	}
	for _, kind := range []string{ReadOnlyKind, MutatingKind} {
		m.inflight.WithLabelValues(kind).Set(0)
		m.dropped.WithLabelValues(kind)
	}
	return m
}

// Run publishes the gauge every second until ctx ends.
func (m *MaxInFlight) Run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.publish()
		}
	}
}

// publish sets the gauge to each kind's high-water mark of the last
// period and starts the next period at the current count.
func (m *MaxInFlight) publish() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for kind, ch := range map[string]chan struct{}{ReadOnlyKind: m.readOnly, MutatingKind: m.mutating} {
		m.inflight.WithLabelValues(kind).Set(float64(m.watermark[kind]))
		m.watermark[kind] = len(ch)
	}
}

func (m *MaxInFlight) observe(kind string, n int) {
	m.mu.Lock()
	if n > m.watermark[kind] {
		m.watermark[kind] = n
	}
	m.mu.Unlock()
}

// RequestKind is readOnly for get, list and watch (kube's non-mutating
// verbs), mutating for anything else.
func RequestKind(r *http.Request) string {
	verb := strings.ToLower(r.Method)
	if info, ok := request.RequestInfoFrom(r.Context()); ok {
		verb = info.Verb
	}
	return verbKind(verb)
}

func verbKind(verb string) string {
	switch verb {
	case "get", "list", "watch":
		return ReadOnlyKind
	}
	return MutatingKind
}

// Handler applies the limits in front of next.
func (m *MaxInFlight) Handler(next http.Handler) http.Handler {
	if m.readOnly == nil && m.mutating == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.exempt != nil && m.exempt(r) {
			next.ServeHTTP(w, r)
			return
		}
		kind := RequestKind(r)
		ch := m.readOnly
		if kind == MutatingKind {
			ch = m.mutating
		}
		if ch == nil {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case ch <- struct{}{}:
			m.observe(kind, len(ch))
			defer func() { <-ch }()
			next.ServeHTTP(w, r)
			return
		default:
		}
		// The super-user always gets an answer.
		if u, ok := user.From(r.Context()); ok {
			for _, g := range u.Groups {
				if g == user.SystemPrivileged {
					next.ServeHTTP(w, r)
					return
				}
			}
		}
		m.dropped.WithLabelValues(kind).Inc()
		if m.terminated != nil {
			m.terminated(r, http.StatusTooManyRequests)
		}
		TooManyRequests(w)
	})
}

// TooManyRequests is kube's 429: plain text, to be retried after a second.
func TooManyRequests(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
}

// NewTerminations registers apiserver_request_terminations_total in reg
// and returns what records into it: the requests the server ended to
// defend itself, by the labels kube uses for its request metrics and the
// code answered.
func NewTerminations(reg *metrics.Registry) Terminated {
	c := reg.Counter(metrics.Opts{Name: "apiserver_request_terminations_total",
		Help: "Requests the apiserver ended in self-defense (timeouts, in-flight limits), by verb, group, version, resource, subresource, scope, component and HTTP code."},
		"verb", "group", "version", "resource", "subresource", "scope", "component", "code")
	return func(r *http.Request, code int) {
		l := terminationLabels(r)
		c.WithLabelValues(l.verb, l.group, l.version, l.resource, l.subresource, l.scope, "apiserver", strconv.Itoa(code)).Inc()
	}
}

type requestLabels struct {
	verb, group, version, resource, subresource, scope string
}

// terminationLabels names a request as kube's request metrics and
// request log do:
// resource requests by API verb in capitals (POST for create, PUT for
// update, APPLY for a server-side apply patch) and scope; other paths by
// method, with the path as the subresource.
func terminationLabels(r *http.Request) requestLabels {
	info, ok := request.RequestInfoFrom(r.Context())
	if !ok || !info.IsResourceRequest {
		return requestLabels{verb: r.Method, subresource: r.URL.Path}
	}
	l := requestLabels{group: info.APIGroup, version: info.APIVersion, resource: info.Resource, subresource: info.Subresource}
	switch info.Verb {
	case "create":
		l.verb = "POST"
	case "update":
		l.verb = "PUT"
	case "patch":
		l.verb = "PATCH"
		if r.Header.Get("Content-Type") == string(types.ApplyPatchType) {
			l.verb = "APPLY"
		}
	default:
		l.verb = strings.ToUpper(info.Verb)
	}
	switch {
	case info.Name != "" || info.Verb == "create":
		l.scope = "resource"
	case info.Namespace != "":
		l.scope = "namespace"
	default:
		l.scope = "cluster"
	}
	return l
}
