package controllermanager

import (
	"context"
	"math"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/leaderelection"
	clientmetrics "k8s.io/client-go/tools/metrics"
	"k8s.io/client-go/util/workqueue"

	"github.com/cronplane/cronplane/pkg/controller/podgc"
	"github.com/cronplane/cronplane/pkg/metrics"
)

// managerMetrics are what the controller-manager serves at /metrics:
// client-go's workqueue, REST client and leader-election metrics, the
// CronJob and TTL-after-finished controllers', and the Go runtime and process collectors, with
// kube's names, labels, buckets and stability classes.
type managerMetrics struct {
	registry *metrics.Registry
	// cronJobSkew is cronjob_controller_job_creation_skew_duration_seconds.
	cronJobSkew prometheus.Observer
	// podGC are pod_gc_collector_force_delete_pods_total and
	// pod_gc_collector_force_delete_pod_errors_total.
	podGC podgc.Metrics
	// ttlDeletionDuration is
	// ttl_after_finished_controller_job_deletion_duration_seconds.
	ttlDeletionDuration prometheus.Observer

	queueDepth, queueUnfinished, queueLongestRunning *prometheus.GaugeVec
	queueAdds, queueRetries                          *prometheus.CounterVec
	queueDuration, queueWorkDuration                 *prometheus.HistogramVec

	leaderStatus *prometheus.GaugeVec

	requestLatency, rateLimiterLatency, requestSize, responseSize, certRotationAge *prometheus.HistogramVec
	requests, requestRetries, execPluginCalls, transportCreateCalls                *prometheus.CounterVec
	transportCacheEntries                                                          *prometheus.GaugeVec
}

var (
	buildMetrics sync.Once
	// processMetrics are the process's metrics, once the first Run has
	// built them.
	processMetrics atomic.Pointer[managerMetrics]
	// execCertExpiry is the expiry of the exec plugin's client
	// certificate, which client-go sets.
	execCertExpiry atomic.Pointer[time.Time]
)

// client-go keeps one provider per hook per process, the first it is
// given, and reads it without a lock from whatever goroutine builds a
// queue or sends a request. So the hooks are installed before any can,
// as kube's component-base does, and record into the metrics the first
// Run builds; what comes before is dropped.
func init() {
	workqueue.SetProvider(queueProvider{})
	leaderelection.SetProvider(leaderProvider{})
	clientmetrics.Register(clientmetrics.RegisterOpts{
		RequestLatency:        latencyHook{func(m *managerMetrics) *prometheus.HistogramVec { return m.requestLatency }},
		RateLimiterLatency:    latencyHook{func(m *managerMetrics) *prometheus.HistogramVec { return m.rateLimiterLatency }},
		RequestSize:           sizeHook{func(m *managerMetrics) *prometheus.HistogramVec { return m.requestSize }},
		ResponseSize:          sizeHook{func(m *managerMetrics) *prometheus.HistogramVec { return m.responseSize }},
		RequestResult:         resultHook{func(m *managerMetrics) *prometheus.CounterVec { return m.requests }},
		RequestRetry:          retryHook{func(m *managerMetrics) *prometheus.CounterVec { return m.requestRetries }},
		ClientCertExpiry:      expiryHook{},
		ClientCertRotationAge: rotationHook{func(m *managerMetrics) *prometheus.HistogramVec { return m.certRotationAge }},
		ExecPluginCalls:       callsHook{func(m *managerMetrics) *prometheus.CounterVec { return m.execPluginCalls }},
		TransportCacheEntries: cacheEntriesHook{func(m *managerMetrics) *prometheus.GaugeVec { return m.transportCacheEntries }},
		TransportCreateCalls:  createCallsHook{func(m *managerMetrics) *prometheus.CounterVec { return m.transportCreateCalls }},
	})
}

// metricsFor returns the process's metrics: the first call builds them
// with its --show-hidden-metrics-for-version, later ones (several
// managers in a test process) share them, each validating its version.
func metricsFor(showHiddenForVersion string) (*managerMetrics, error) {
	reg := metrics.NewRegistry()
	if err := reg.ShowHiddenMetricsForVersion(showHiddenForVersion); err != nil {
		return nil, err
	}
	buildMetrics.Do(func() { processMetrics.Store(newManagerMetrics(reg)) })
	return processMetrics.Load(), nil
}

func newManagerMetrics(reg *metrics.Registry) *managerMetrics {
	// 10ns to 10s, a bucket per decade.
	queueBuckets := prometheus.ExponentialBuckets(10e-9, 10, 10)
	requestBuckets := []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60}
	// 64 B to 16 MiB.
	sizeBuckets := []float64{64, 256, 512, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216}
	m := &managerMetrics{
		registry: reg,
		// Its one series exists from the start, as kube's plain histogram
		// is served with a zero count before the first Job.
		cronJobSkew: reg.Histogram(metrics.Opts{Name: "cronjob_controller_job_creation_skew_duration_seconds", Stability: metrics.Stable,
			Help:    "Seconds from the time a CronJob was scheduled to run to the creation of its Job.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10)}).WithLabelValues(),
		podGC: podgc.Metrics{
			Deleting: reg.Counter(metrics.Opts{Name: "pod_gc_collector_force_delete_pods_total",
				Help: "Pods the pod garbage collector tried to delete without grace, by namespace and reason: terminated, out-of-service, orphaned or unscheduled."}, "namespace", "reason"),
			Errors: reg.Counter(metrics.Opts{Name: "pod_gc_collector_force_delete_pod_errors_total",
				Help: "Pods the pod garbage collector failed to delete, by namespace and reason."}, "namespace", "reason"),
		},
		ttlDeletionDuration: reg.Histogram(metrics.Opts{Name: "ttl_after_finished_controller_job_deletion_duration_seconds",
			Help:    "Seconds from the expiry of a finished Job's TTL to its deletion.",
			Buckets: prometheus.ExponentialBuckets(0.1, 2, 14)}).WithLabelValues(),

		queueDepth: reg.Gauge(metrics.Opts{Name: "workqueue_depth", Help: "Items waiting in the workqueue."}, "name"),
		queueAdds:  reg.Counter(metrics.Opts{Name: "workqueue_adds_total", Help: "Items added to the workqueue."}, "name"),
		queueDuration: reg.Histogram(metrics.Opts{Name: "workqueue_queue_duration_seconds", Buckets: queueBuckets,
			Help: "Seconds an item waits in the workqueue until a worker takes it."}, "name"),
		queueWorkDuration: reg.Histogram(metrics.Opts{Name: "workqueue_work_duration_seconds", Buckets: queueBuckets,
			Help: "Seconds a worker takes to process one item of the workqueue."}, "name"),
		queueUnfinished: reg.Gauge(metrics.Opts{Name: "workqueue_unfinished_work_seconds",
			Help: "Seconds of processing under way, not yet in work_duration. A steady rise means stuck workers; its rate, how many."}, "name"),
		queueLongestRunning: reg.Gauge(metrics.Opts{Name: "workqueue_longest_running_processor_seconds",
			Help: "Seconds the longest-running worker of the workqueue has spent on its current item."}, "name"),
		queueRetries: reg.Counter(metrics.Opts{Name: "workqueue_retries_total",
			Help: "Items added to the workqueue again after a failure, rate-limited."}, "name"),

		leaderStatus: reg.Gauge(metrics.Opts{Name: "leader_election_master_status",
			Help: "1 while this process holds the lease called name, 0 while it stands by; aggregate by name."}, "name"),

		requestLatency: reg.Histogram(metrics.Opts{Name: "rest_client_request_duration_seconds", Buckets: requestBuckets,
			Help: "Seconds requests took, by verb and host."}, "verb", "host"),
		rateLimiterLatency: reg.Histogram(metrics.Opts{Name: "rest_client_rate_limiter_duration_seconds", Buckets: requestBuckets,
			Help: "Seconds requests waited for the client-side rate limiter, by verb and host."}, "verb", "host"),
		requestSize: reg.Histogram(metrics.Opts{Name: "rest_client_request_size_bytes", Buckets: sizeBuckets,
			Help: "Bytes of request bodies, by verb and host."}, "verb", "host"),
		responseSize: reg.Histogram(metrics.Opts{Name: "rest_client_response_size_bytes", Buckets: sizeBuckets,
			Help: "Bytes of response bodies, by verb and host."}, "verb", "host"),
		requests: reg.Counter(metrics.Opts{Name: "rest_client_requests_total",
			Help: "HTTP requests made, by status code, method and host."}, "code", "method", "host"),
		requestRetries: reg.Counter(metrics.Opts{Name: "rest_client_request_retries_total",
			Help: "Requests retried, by status code, verb and host."}, "code", "verb", "host"),
		certRotationAge: reg.Histogram(metrics.Opts{Name: "rest_client_exec_plugin_certificate_rotation_age",
			Help: "Seconds an exec credential plugin's client certificate was in use when the plugin replaced it; empty without such certificates.",
			// 10 min, 30 min, 1 h, 4 h, 1 d, 1 wk, 30 d, 90 d, 180 d, 360 d, 4 y.
			Buckets: []float64{600, 1800, 3600, 14400, 86400, 604800, 2592000, 7776000, 15552000, 31104000, 124416000}}),
		execPluginCalls: reg.Counter(metrics.Opts{Name: "rest_client_exec_plugin_call_total",
			Help: "Calls of an exec credential plugin, by exit code (0 exactly when the call succeeded) and call_status: " +
				"no_error, plugin_execution_error, plugin_not_found_error or client_internal_error."}, "code", "call_status"),
		transportCacheEntries: reg.Gauge(metrics.Opts{Name: "rest_client_transport_cache_entries",
			Help: "Transports in client-go's transport cache."}),
		transportCreateCalls: reg.Counter(metrics.Opts{Name: "rest_client_transport_create_calls_total",
			Help: "Transports asked for, by result: hit (from the cache), miss (created and cached), uncacheable (created, not cached)."}, "result"),
	}
	// Unlabelled, and so served from the start, as kube's are.
	m.certRotationAge.WithLabelValues()
	m.transportCacheEntries.WithLabelValues()
	reg.GaugeFunc(metrics.Opts{Name: "rest_client_exec_plugin_ttl_seconds",
		Help: "Seconds until the first of the client certificates an exec credential plugin provides expires: negative once expired, +Inf without such certificates."},
		func() float64 {
			e := execCertExpiry.Load()
			if e == nil {
				return math.Inf(1)
			}
			return time.Until(*e).Seconds()
		})
	return m
}

// The hooks: each picks its vector from the process's metrics, if built.

type (
	histogramHook func(*managerMetrics) *prometheus.HistogramVec
	counterHook   func(*managerMetrics) *prometheus.CounterVec
	gaugeHook     func(*managerMetrics) *prometheus.GaugeVec
)

func (h histogramHook) observe(v float64, labels ...string) {
	if m := processMetrics.Load(); m != nil {
		h(m).WithLabelValues(labels...).Observe(v)
	}
}

func (h counterHook) inc(labels ...string) {
	if m := processMetrics.Load(); m != nil {
		h(m).WithLabelValues(labels...).Inc()
	}
}

func (h gaugeHook) add(v float64, labels ...string) {
	if m := processMetrics.Load(); m != nil {
		h(m).WithLabelValues(labels...).Add(v)
	}
}

func (h gaugeHook) set(v float64, labels ...string) {
	if m := processMetrics.Load(); m != nil {
		h(m).WithLabelValues(labels...).Set(v)
	}
}

// queueProvider gives each named workqueue its series, created with the
// queue so that they are served from its start, as kube's are.
type queueProvider struct{}

type (
	queueGauge struct {
		gaugeHook
		name string
	}
	queueCounter struct {
		counterHook
		name string
	}
	queueHistogram struct {
		histogramHook
		name string
	}
)

func newQueueGauge(h gaugeHook, name string) queueGauge {
	if m := processMetrics.Load(); m != nil {
		h(m).WithLabelValues(name)
	}
	return queueGauge{h, name}
}

func newQueueCounter(h counterHook, name string) queueCounter {
	if m := processMetrics.Load(); m != nil {
		h(m).WithLabelValues(name)
	}
	return queueCounter{h, name}
}

func newQueueHistogram(h histogramHook, name string) queueHistogram {
	if m := processMetrics.Load(); m != nil {
		h(m).WithLabelValues(name)
	}
	return queueHistogram{h, name}
}

func (g queueGauge) Inc()                  { g.add(1, g.name) }
func (g queueGauge) Dec()                  { g.add(-1, g.name) }
func (g queueGauge) Set(v float64)         { g.set(v, g.name) }
func (c queueCounter) Inc()                { c.inc(c.name) }
func (h queueHistogram) Observe(v float64) { h.observe(v, h.name) }

func (queueProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return newQueueGauge(func(m *managerMetrics) *prometheus.GaugeVec { return m.queueDepth }, name)
}

func (queueProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return newQueueCounter(func(m *managerMetrics) *prometheus.CounterVec { return m.queueAdds }, name)
}

func (queueProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return newQueueHistogram(func(m *managerMetrics) *prometheus.HistogramVec { return m.queueDuration }, name)
}

func (queueProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return newQueueHistogram(func(m *managerMetrics) *prometheus.HistogramVec { return m.queueWorkDuration }, name)
}

func (queueProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return newQueueGauge(func(m *managerMetrics) *prometheus.GaugeVec { return m.queueUnfinished }, name)
}

func (queueProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return newQueueGauge(func(m *managerMetrics) *prometheus.GaugeVec { return m.queueLongestRunning }, name)
}

func (queueProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return newQueueCounter(func(m *managerMetrics) *prometheus.CounterVec { return m.queueRetries }, name)
}

// leaderProvider gives each elector leader_election_master_status: 1
// while this process holds the lease called name, 0 otherwise.
type leaderProvider struct{}

func (leaderProvider) NewLeaderMetric() leaderelection.SwitchMetric {
	return leaderSwitch{func(m *managerMetrics) *prometheus.GaugeVec { return m.leaderStatus }}
}

type leaderSwitch struct{ gaugeHook }

func (s leaderSwitch) On(name string)  { s.set(1, name) }
func (s leaderSwitch) Off(name string) { s.set(0, name) }

// The REST client's hooks, one type per interface of client-go's.

type latencyHook struct{ histogramHook }

func (h latencyHook) Observe(_ context.Context, verb string, u url.URL, d time.Duration) {
	h.observe(d.Seconds(), verb, u.Host)
}

type sizeHook struct{ histogramHook }

func (h sizeHook) Observe(_ context.Context, verb, host string, size float64) {
	h.observe(size, verb, host)
}

type resultHook struct{ counterHook }

func (h resultHook) Increment(_ context.Context, code, method, host string) {
	h.inc(code, method, host)
}

type retryHook struct{ counterHook }

func (h retryHook) IncrementRetry(_ context.Context, code, verb, host string) {
	h.inc(code, verb, host)
}

type rotationHook struct{ histogramHook }

func (h rotationHook) Observe(d time.Duration) { h.observe(d.Seconds()) }

type callsHook struct{ counterHook }

func (h callsHook) Increment(exitCode int, callStatus string) {
	h.inc(strconv.Itoa(exitCode), callStatus)
}

type cacheEntriesHook struct{ gaugeHook }

func (h cacheEntriesHook) Observe(entries int) { h.set(float64(entries)) }

type createCallsHook struct{ counterHook }

func (h createCallsHook) Increment(result string) { h.inc(result) }

type expiryHook struct{}

func (expiryHook) Set(expiry *time.Time) { execCertExpiry.Store(expiry) }
