package flowcontrol

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cronplane/cronplane/pkg/metrics"
)

// metricSet is kube's apiserver_flowcontrol_* metrics.
type metricSet struct {
	dispatched, rejected               *prometheus.CounterVec
	inqueue, executing, executingSeats *prometheus.GaugeVec
	nominal, current, concurrencyLimit *prometheus.GaugeVec
	wait, execution                    *prometheus.HistogramVec

	// flows caches each flow schema and level's flowMetrics.
	flows sync.Map
}

// flowMetrics are the per-request metrics of one flow schema and
// priority level, looked up once: finding a child by its label values
// costs more than updating it.
type flowMetrics struct {
	dispatched                         prometheus.Counter
	inqueue, executing, executingSeats prometheus.Gauge
	// waited is the wait of the requests that ran, gaveUp of those that
	// did not.
	waited, gaveUp   prometheus.Observer
	regular, watches prometheus.Observer
}

func (m *metricSet) flow(fs, pl string) *flowMetrics {
	key := [2]string{fs, pl}
	if f, ok := m.flows.Load(key); ok {
		return f.(*flowMetrics)
	}
	f := &flowMetrics{
		dispatched:     m.dispatched.WithLabelValues(fs, pl),
		inqueue:        m.inqueue.WithLabelValues(fs, pl),
		executing:      m.executing.WithLabelValues(fs, pl),
		executingSeats: m.executingSeats.WithLabelValues(fs, pl),
		waited:         m.wait.WithLabelValues("true", fs, pl),
		gaveUp:         m.wait.WithLabelValues("false", fs, pl),
		regular:        m.execution.WithLabelValues(fs, pl, "regular"),
		watches:        m.execution.WithLabelValues(fs, pl, "watch"),
	}
	actual, _ := m.flows.LoadOrStore(key, f)
	return actual.(*flowMetrics)
}

// durationBuckets are kube's for the wait and execution histograms.
var durationBuckets = []float64{0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30}

func newMetricSet(reg *metrics.Registry) *metricSet {
	fsPL := []string{"flow_schema", "priority_level"}
	return &metricSet{
		dispatched: reg.Counter(metrics.Opts{Name: "apiserver_flowcontrol_dispatched_requests_total", Stability: metrics.Beta,
			Help: "Number of requests executed by API Priority and Fairness subsystem"}, fsPL...),
		rejected: reg.Counter(metrics.Opts{Name: "apiserver_flowcontrol_rejected_requests_total", Stability: metrics.Beta,
			Help: "Number of requests rejected by API Priority and Fairness subsystem"}, "flow_schema", "priority_level", "reason"),
		inqueue: reg.Gauge(metrics.Opts{Name: "apiserver_flowcontrol_current_inqueue_requests", Stability: metrics.Beta,
			Help: "Number of requests currently pending in queues of the API Priority and Fairness subsystem"}, fsPL...),
		executing: reg.Gauge(metrics.Opts{Name: "apiserver_flowcontrol_current_executing_requests", Stability: metrics.Beta,
			Help: "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem"}, fsPL...),
		executingSeats: reg.Gauge(metrics.Opts{Name: "apiserver_flowcontrol_current_executing_seats", Stability: metrics.Beta,
			Help: "Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem"}, fsPL...),
		wait: reg.Histogram(metrics.Opts{Name: "apiserver_flowcontrol_request_wait_duration_seconds", Stability: metrics.Beta, Buckets: durationBuckets,
			Help: "Length of time a request spent waiting in its queue"}, "execute", "flow_schema", "priority_level"),
		execution: reg.Histogram(metrics.Opts{Name: "apiserver_flowcontrol_request_execution_seconds", Buckets: durationBuckets,
			Help: "Duration of initial stage (for a WATCH) or any (for a non-WATCH) stage of request execution in the API Priority and Fairness subsystem"}, "flow_schema", "priority_level", "type"),
		nominal: reg.Gauge(metrics.Opts{Name: "apiserver_flowcontrol_nominal_limit_seats", Stability: metrics.Beta,
			Help: "Nominal number of execution seats configured for each priority level"}, "priority_level"),
		current: reg.Gauge(metrics.Opts{Name: "apiserver_flowcontrol_current_limit_seats",
			Help: "current derived number of execution seats available to each priority level"}, "priority_level"),
		concurrencyLimit: reg.Gauge(metrics.Opts{Name: "apiserver_flowcontrol_request_concurrency_limit",
			Help: "Nominal number of execution seats configured for each priority level"}, "priority_level"),
	}
}

// limits publishes the levels' nominal and current limits.
func (m *metricSet) limits(levels []*level) {
	for _, l := range levels {
		m.nominal.WithLabelValues(l.name()).Set(float64(l.limits.nominal))
		m.concurrencyLimit.WithLabelValues(l.name()).Set(float64(l.limits.nominal))
	}
}

// currentLimits publishes what each level could hold now.
func (m *metricSet) currentLimits(c *Controller) {
	for _, l := range c.order {
		if l.exempt {
			m.current.WithLabelValues(l.name()).Set(float64(l.limits.nominal))
			continue
		}
		m.current.WithLabelValues(l.name()).Set(float64(c.currentLimit(l)))
	}
}
