// Package metrics owns how both binaries expose their metrics: kube's
// stability classes written into each metric's HELP text ("[ALPHA] ...",
// "[STABLE] ..."), deprecation ("(Deprecated from 1.x) ...") and hiding
// of metrics deprecated long enough ago, which
// --show-hidden-metrics-for-version shows again for one more release. A
// Registry holds the metrics of one process and serves them in the
// Prometheus text format; the metrics themselves are plain
// prometheus/client_golang collectors, so instrumented code records into
// them as usual.
package metrics

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Stability is a metric's stability class.
type Stability string

const (
	Alpha  Stability = "ALPHA"
	Beta   Stability = "BETA"
	Stable Stability = "STABLE"
)

// Opts describe one metric.
type Opts struct {
	// Name is the full name, such as apiserver_request_total.
	Name string
	Help string
	// Stability defaults to Alpha.
	Stability Stability
	// DeprecatedVersion ("1.27") marks the metric deprecated since that
	// minor release.
	DeprecatedVersion string
	// Buckets of a histogram; nil means prometheus.DefBuckets.
	Buckets []float64
}

// Registry holds the metrics of one process.
type Registry struct {
	reg *prometheus.Registry
	// currentMinor is the Kubernetes minor version served; showHidden
	// the minor version whose hidden metrics are shown, or -1.
	currentMinor, showHidden int
	// names are the metrics registered through Counter, Gauge, Histogram
	// and GaugeFunc and shown.
	mu    sync.Mutex
	names []string
}

// CurrentMinor is the minor version of the Kubernetes release served.
const CurrentMinor = 29

// NewRegistry returns a registry with the Go runtime and process
// collectors.
func NewRegistry() *Registry {
	r := &Registry{reg: prometheus.NewRegistry(), currentMinor: CurrentMinor, showHidden: -1}
	r.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// ShowHiddenMetricsForVersion shows again the metrics hidden in the
// previous minor release ("1.28" for 1.29), as kube's flag of that name
// does; any other version is an error. It must be called before metrics
// are registered.
func (r *Registry) ShowHiddenMetricsForVersion(v string) error {
	if v == "" {
		return nil
	}
	minor, err := parseMinor(v)
	if err != nil {
		return err
	}
	if minor != r.currentMinor-1 {
		return fmt.Errorf("--show-hidden-metrics-for-version must be omitted or have the value 1.%d; only the previous minor version is allowed", r.currentMinor-1)
	}
	r.showHidden = minor
	return nil
}

func parseMinor(v string) (int, error) {
	major, minor, ok := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	if !ok || major != "1" {
		return 0, fmt.Errorf("version %q is not 1.<minor>", v)
	}
	minor, _, _ = strings.Cut(minor, ".")
	return strconv.Atoi(minor)
}

// hiddenAfter is how many minor releases after its deprecation a metric
// is hidden.
const hiddenAfter = 3

// describe returns the HELP text, and whether the metric is hidden.
func (r *Registry) describe(o Opts) (string, bool) {
	st := o.Stability
	if st == "" {
		st = Alpha
	}
	help := fmt.Sprintf("[%s] %s", st, o.Help)
	if o.DeprecatedVersion == "" {
		return help, false
	}
	help = fmt.Sprintf("(Deprecated from %s) %s", o.DeprecatedVersion, help)
	deprecated, err := parseMinor(o.DeprecatedVersion)
	if err != nil {
		panic(fmt.Sprintf("metrics: %s: %v", o.Name, err))
	}
	hidden := deprecated <= r.currentMinor-hiddenAfter
	if hidden && r.showHidden >= 0 && deprecated == r.showHidden-hiddenAfter+1 {
		hidden = false
	}
	return help, hidden
}

// register registers c unless the metric is hidden; a hidden metric still
// records, unseen.
func (r *Registry) register(o Opts, c prometheus.Collector, hidden bool) {
	if !hidden {
		r.reg.MustRegister(c)
		r.mu.Lock()
		r.names = append(r.names, o.Name)
		r.mu.Unlock()
	}
}

// Names returns the names of the metrics registered through Counter,
// Gauge, Histogram and GaugeFunc and shown, whether or not they have a
// value yet (/metrics leaves out a vector with none).
func (r *Registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.names...)
}

// Counter registers a counter vector.
func (r *Registry) Counter(o Opts, labels ...string) *prometheus.CounterVec {
	help, hidden := r.describe(o)
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: o.Name, Help: help}, labels)
	r.register(o, c, hidden)
	return c
}

// Gauge registers a gauge vector.
func (r *Registry) Gauge(o Opts, labels ...string) *prometheus.GaugeVec {
	help, hidden := r.describe(o)
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: o.Name, Help: help}, labels)
	r.register(o, g, hidden)
	return g
}

// Histogram registers a histogram vector.
func (r *Registry) Histogram(o Opts, labels ...string) *prometheus.HistogramVec {
	help, hidden := r.describe(o)
	buckets := o.Buckets
	if buckets == nil {
		buckets = prometheus.DefBuckets
	}
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: o.Name, Help: help, Buckets: buckets}, labels)
	r.register(o, h, hidden)
	return h
}

// GaugeFunc registers a gauge read when scraped.
func (r *Registry) GaugeFunc(o Opts, f func() float64) {
	help, hidden := r.describe(o)
	r.register(o, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: o.Name, Help: help}, f), hidden)
}

// Register registers a collector written elsewhere (such as client-go's),
// whose HELP texts are its own.
func (r *Registry) Register(c prometheus.Collector) error {
	return r.reg.Register(c)
}

// Handler serves the metrics in the Prometheus text format.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{})
}

// Gatherer is the underlying gatherer, for tests.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }
