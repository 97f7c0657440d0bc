// Package instrumentation owns the apiserver's request metrics, under
// kube's names and labels so that existing dashboards and alerts work:
// apiserver_request_total and _duration_seconds, response sizes,
// long-running requests, watchers and watch events, and the requests to
// deprecated APIs. A filter records the requests kube records once
// RequestInfo is known: those to a served resource and to the health
// endpoints, under labels from bounded sets only, so that no caller can
// grow the series with made-up paths, versions, methods or dryRun values;
// the watch handler reports its watchers and events.
package instrumentation

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cronplane/cronplane/pkg/endpoints/request"
	"github.com/cronplane/cronplane/pkg/metrics"
)

// latencyBuckets are kube's request latency buckets, in seconds.
var latencyBuckets = []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60}

// Metrics are the request metrics of one server.
type Metrics struct {
	requests           *prometheus.CounterVec
	latency            *prometheus.HistogramVec
	sizes              *prometheus.HistogramVec
	longRunning        *prometheus.GaugeVec
	deprecated         *prometheus.GaugeVec
	registeredWatchers *prometheus.GaugeVec
	watchEvents        *prometheus.CounterVec
	watchEventSizes    *prometheus.HistogramVec

	// served reports the resources (and subresources) served: the
	// resource requests recorded.
	served func(gvr schema.GroupVersionResource, subresource string) bool

	// series holds the request series of resource requests (a bounded
	// set) by their labels and code, so that a request does not hash and
	// check nine label values three times over.
	series sync.Map
	// watchSeries holds the watch event series by kind.
	watchSeries sync.Map
}

type seriesKey struct {
	labels
	code int
}

type requestSeries struct {
	requests prometheus.Counter
	latency  prometheus.Observer
	// sizes is nil but for reads.
	sizes prometheus.Observer
}

func (m *Metrics) requestSeries(l labels, code int) *requestSeries {
	k := seriesKey{l, code}
	if s, ok := m.series.Load(k); ok {
		return s.(*requestSeries)
	}
	s := &requestSeries{
		requests: m.requests.WithLabelValues(l.verb, l.dryRun, l.group, l.version, l.resource, l.subresource, l.scope, l.component, strconv.Itoa(code)),
		latency:  m.latency.WithLabelValues(l.verb, l.dryRun, l.group, l.version, l.resource, l.subresource, l.scope, l.component),
	}
	if isRead(l.verb) {
		s.sizes = m.sizes.WithLabelValues(l.verb, l.group, l.version, l.resource, l.subresource, l.scope, l.component)
	}
	m.series.Store(k, s)
	return s
}

// isRead reports the verbs whose response sizes kube records: reads.
func isRead(verb string) bool {
	return verb == "GET" || verb == "LIST" || verb == "WATCH"
}

type watchSeries struct {
	events prometheus.Counter
	sizes  prometheus.Observer
}

// New registers the request metrics in r. served reports the resources
// and subresources the server serves, at the time of a request: as kube,
// which records the requests its routes serve, a resource request is
// recorded only if it names one of them.
func New(r *metrics.Registry, served func(gvr schema.GroupVersionResource, subresource string) bool) *Metrics {
	exp := func(start, factor float64, n int) []float64 { return prometheus.ExponentialBuckets(start, factor, n) }
	return &Metrics{
		served: served,
		requests: r.Counter(metrics.Opts{Name: "apiserver_request_total", Stability: metrics.Stable,
			Help: "Requests answered, by verb, dry run, group, version, resource, subresource, scope, component and HTTP code."},
			"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component", "code"),
		latency: r.Histogram(metrics.Opts{Name: "apiserver_request_duration_seconds", Stability: metrics.Stable, Buckets: latencyBuckets,
			Help: "Time to answer a request, in seconds, by verb, dry run, group, version, resource, subresource, scope and component."},
			"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"),
		sizes: r.Histogram(metrics.Opts{Name: "apiserver_response_sizes", Stability: metrics.Stable, Buckets: exp(1000, 10, 7),
			Help: "Size of the response bodies, in bytes, by verb, group, version, resource, subresource, scope and component."},
			"verb", "group", "version", "resource", "subresource", "scope", "component"),
		longRunning: r.Gauge(metrics.Opts{Name: "apiserver_longrunning_requests", Stability: metrics.Stable,
			Help: "Long-running requests (watches) being served, by verb, group, version, resource, subresource, scope and component."},
			"verb", "group", "version", "resource", "subresource", "scope", "component"),
		deprecated: r.Gauge(metrics.Opts{Name: "apiserver_requested_deprecated_apis", Stability: metrics.Stable,
			Help: "1 for each deprecated API requested since the start, by group, version, resource, subresource and the release that removes it."},
			"group", "version", "resource", "subresource", "removed_release"),
		registeredWatchers: r.Gauge(metrics.Opts{Name: "apiserver_registered_watchers",
			Help: "Watchers open, by group, version and kind."}, "group", "version", "kind"),
		watchEvents: r.Counter(metrics.Opts{Name: "apiserver_watch_events_total",
			Help: "Events sent to watchers, by group, version and kind."}, "group", "version", "kind"),
		watchEventSizes: r.Histogram(metrics.Opts{Name: "apiserver_watch_events_sizes", Buckets: exp(1024, 2, 8),
			Help: "Size of the events sent to watchers, in bytes."}, "group", "version", "kind"),
	}
}

// labels are what a request is recorded under.
type labels struct {
	verb, dryRun, group, version, resource, subresource, scope, component string
}

// healthPaths are the paths outside the APIs that kube records (its
// health endpoints, not their checks), the path as subresource.
var healthPaths = map[string]bool{"/healthz": true, "/livez": true, "/readyz": true}

// methods are the methods kube records by name; it records the others
// as "other".
var methods = map[string]bool{
	http.MethodGet: true, http.MethodPost: true, http.MethodPut: true, http.MethodPatch: true,
	http.MethodDelete: true, http.MethodConnect: true,
}

// requestLabels reads a request's labels as kube reports them: resource
// requests by their API verb in capitals (LIST, WATCH, POST, PUT, PATCH,
// APPLY, DELETE, DELETECOLLECTION), the health endpoints by method and
// path. It reports false for the requests kube does not record: other
// paths, and resource requests for a resource, version or subresource
// not served or with a method no verb maps to.
func (m *Metrics) requestLabels(r *http.Request, info *request.RequestInfo) (labels, bool) {
	if info == nil || !info.IsResourceRequest {
		if !healthPaths[r.URL.Path] {
			return labels{}, false
		}
		return labels{verb: method(r.Method), subresource: r.URL.Path}, true
	}
	if info.Verb == "" || !m.served(info.GroupVersionResource(), info.Subresource) {
		return labels{}, false
	}
	l := labels{
		verb: apiVerb(r, info), dryRun: dryRun(r.URL), group: info.APIGroup, version: info.APIVersion,
		resource: info.Resource, subresource: info.Subresource, component: "apiserver",
	}
	switch {
	case info.Name != "" || info.Verb == "create":
		l.scope = "resource"
	case info.Namespace != "":
		l.scope = "namespace"
	default:
		l.scope = "cluster"
	}
	return l, true
}

// method is how kube records a request's method: HEAD as GET, methods
// outside its list as "other".
func method(m string) string {
	switch {
	case m == http.MethodHead:
		return http.MethodGet
	case methods[m]:
		return m
	}
	return "other"
}

func apiVerb(r *http.Request, info *request.RequestInfo) string {
	switch info.Verb {
	case "create":
		return "POST"
	case "update":
		return "PUT"
	case "patch":
		if r.Header.Get("Content-Type") == string(types.ApplyPatchType) {
			return "APPLY"
		}
		return "PATCH"
	}
	return strings.ToUpper(info.Verb)
}

// dryRun is the request's dryRun value as kube records it: All (however
// often it is repeated), or "invalid" when a value is not one the API
// takes.
func dryRun(u *url.URL) string {
	if !strings.Contains(u.RawQuery, "dryRun") {
		return ""
	}
	values := u.Query()["dryRun"]
	for _, v := range values {
		if v != metav1.DryRunAll {
			return "invalid"
		}
	}
	if len(values) == 0 {
		return ""
	}
	return metav1.DryRunAll
}

// recorder captures a response's code and size.
type recorder struct {
	http.ResponseWriter
	code int
	size int
}

func (w *recorder) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.size += n
	return n, err
}

// Flush lets watches stream through the recorder.
func (w *recorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type refusedKey struct{}

// Refused marks a request refused before it was routed (by
// authentication, impersonation or authorization): as kube, which
// records its request metrics once a request is routed, WithRequestMetrics
// then leaves it out. The handler may call it from its own goroutine.
func Refused(ctx context.Context) {
	if refused, ok := ctx.Value(refusedKey{}).(*atomic.Bool); ok {
		refused.Store(true)
	}
}

// WithRequestMetrics records the requests kube records (see
// requestLabels) but those Refused: its count by code, its latency, a
// read's response size, and (for watches) that it is in progress.
// It goes after the RequestInfo filter, before the deadline and the
// in-flight limits, so that their 504s and 429s count too.
func (m *Metrics) WithRequestMetrics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, _ := request.RequestInfoFrom(r.Context())
		l, recorded := m.requestLabels(r, info)
		if !recorded {
			next.ServeHTTP(w, r)
			return
		}
		start := time.Now()
		if l.verb == "WATCH" {
			g := m.longRunning.WithLabelValues(l.verb, l.group, l.version, l.resource, l.subresource, l.scope, l.component)
			g.Inc()
			defer g.Dec()
		}
		rec := &recorder{ResponseWriter: w}
		refused := new(atomic.Bool)
		r = r.WithContext(context.WithValue(r.Context(), refusedKey{}, refused))
		defer func() {
			if refused.Load() {
				return
			}
			code := rec.code
			if code == 0 {
				code = http.StatusOK
			}
			if info == nil || !info.IsResourceRequest {
				m.requests.WithLabelValues(l.verb, l.dryRun, l.group, l.version, l.resource, l.subresource, l.scope, l.component, strconv.Itoa(code)).Inc()
				m.latency.WithLabelValues(l.verb, l.dryRun, l.group, l.version, l.resource, l.subresource, l.scope, l.component).Observe(time.Since(start).Seconds())
				if isRead(l.verb) {
					m.sizes.WithLabelValues(l.verb, l.group, l.version, l.resource, l.subresource, l.scope, l.component).Observe(float64(rec.size))
				}
				return
			}
			// A watch's latency is its whole length, as kube records it.
			s := m.requestSeries(l, code)
			s.requests.Inc()
			s.latency.Observe(time.Since(start).Seconds())
			if s.sizes != nil {
				s.sizes.Observe(float64(rec.size))
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// WatchStarted counts an open watcher of gvk; the function it returns
// counts it closed.
func (m *Metrics) WatchStarted(gvk schema.GroupVersionKind) func() {
	g := m.registeredWatchers.WithLabelValues(gvk.Group, gvk.Version, gvk.Kind)
	g.Inc()
	return g.Dec
}

// WatchEvent records an event of size bytes sent to a watcher of gvk.
func (m *Metrics) WatchEvent(gvk schema.GroupVersionKind, size int) {
	v, ok := m.watchSeries.Load(gvk)
	if !ok {
		v = &watchSeries{
			events: m.watchEvents.WithLabelValues(gvk.Group, gvk.Version, gvk.Kind),
			sizes:  m.watchEventSizes.WithLabelValues(gvk.Group, gvk.Version, gvk.Kind),
		}
		m.watchSeries.Store(gvk, v)
	}
	s := v.(*watchSeries)
	s.events.Inc()
	s.sizes.Observe(float64(size))
}

// DeprecatedRequested records that a deprecated API was requested.
func (m *Metrics) DeprecatedRequested(gvr schema.GroupVersionResource, subresource, removedRelease string) {
	m.deprecated.WithLabelValues(gvr.Group, gvr.Version, gvr.Resource, subresource, removedRelease).Set(1)
}
