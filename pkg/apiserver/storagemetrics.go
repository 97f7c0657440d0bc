package apiserver

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cronplane/cronplane/pkg/metrics"
	"github.com/cronplane/cronplane/pkg/storage/cacher"
)

// storageMetrics are kube's metrics of the storage layer: the latency of
// etcd requests, and the objects and events of the watch caches.
type storageMetrics struct {
	etcdLatency *prometheus.HistogramVec
}

func newStorageMetrics(r *metrics.Registry) *storageMetrics {
	m := &storageMetrics{
		etcdLatency: r.Histogram(metrics.Opts{Name: "etcd_request_duration_seconds",
			Help:    "Time an etcd request took, in seconds, by operation and object type.",
			Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60}},
			"operation", "type"),
	}
	return m
}

// observer reports the etcd requests of one resource (kube's type label:
// "cronjobs.batch").
func (m *storageMetrics) observer(typ string) func(operation string, took time.Duration) {
	return func(operation string, took time.Duration) {
		m.etcdLatency.WithLabelValues(operation, typ).Observe(took.Seconds())
	}
}

var (
	storageObjectsDesc = prometheus.NewDesc("apiserver_storage_objects",
		"[STABLE] Objects stored, by resource, as the watch cache holds them.", []string{"resource"}, nil)
	cacheDispatchedDesc = prometheus.NewDesc("apiserver_watch_cache_events_dispatched_total",
		"[ALPHA] Events the watch cache took in and offered to its watchers, by resource.", []string{"resource"}, nil)
	cacheCapacityDesc = prometheus.NewDesc("watch_cache_capacity",
		"[ALPHA] Size of the watch cache's window of recent events, by resource.", []string{"resource"}, nil)
)

// cacheCollector reads the watch caches when scraped.
type cacheCollector struct{ storage *resourceStorage }

func (cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- storageObjectsDesc
	ch <- cacheDispatchedDesc
	ch <- cacheCapacityDesc
}

func (c cacheCollector) Collect(ch chan<- prometheus.Metric) {
	caches := map[string]*cacher.Cache{}
	c.storage.eachCache(func(_, resource string, cache *cacher.Cache) { caches[resource] = cache })
	for resource, cache := range caches {
		st := cache.Stats()
		ch <- prometheus.MustNewConstMetric(storageObjectsDesc, prometheus.GaugeValue, float64(st.Objects), resource)
		ch <- prometheus.MustNewConstMetric(cacheDispatchedDesc, prometheus.CounterValue, float64(st.Dispatched), resource)
		ch <- prometheus.MustNewConstMetric(cacheCapacityDesc, prometheus.GaugeValue, float64(st.Capacity), resource)
	}
}
