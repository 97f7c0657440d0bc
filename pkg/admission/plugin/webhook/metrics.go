package webhook

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/cronplane/cronplane/pkg/metrics"
)

// webhookMetrics are kube's apiserver_admission_webhook_* metrics, with
// its labels; type is "admit" or "validating".
type webhookMetrics struct {
	duration   *prometheus.HistogramVec
	rejections *prometheus.CounterVec
	requests   *prometheus.CounterVec
	failOpen   *prometheus.CounterVec
}

func newMetrics(r *metrics.Registry) *webhookMetrics {
	return &webhookMetrics{
		duration: r.Histogram(metrics.Opts{Name: "apiserver_admission_webhook_admission_duration_seconds", Stability: metrics.Stable,
			Help:    "Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
			Buckets: []float64{0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10, 25}}, "name", "type", "operation", "rejected"),
		rejections: r.Counter(metrics.Opts{Name: "apiserver_admission_webhook_rejection_count",
			Help: "Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded."},
			"name", "type", "operation", "error_type", "rejection_code"),
		requests: r.Counter(metrics.Opts{Name: "apiserver_admission_webhook_request_total",
			Help: "Admission webhook request total, identified by name and broken out for each admission type (validating or mutating) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded."},
			"name", "type", "operation", "code", "rejected"),
		failOpen: r.Counter(metrics.Opts{Name: "apiserver_admission_webhook_fail_open_count",
			Help: "Admission webhook fail open count, identified by name and broken out for each admission type (validating or mutating)."},
			"name", "type"),
	}
}

// observe records one call's outcome: err is nil, a *callError, a
// rejection (*apierrors.StatusError) or an internal error.
func (m *webhookMetrics) observe(name, typ, op string, took time.Duration, err error) {
	code, rejectedBy, errorType := 200, false, ""
	var ce *callError
	var se *apierrors.StatusError
	switch {
	case err == nil:
	case errors.As(err, &ce):
		rejectedBy, code = true, int(ce.status.ErrStatus.Code)
		if !errors.Is(ce.reason, context.Canceled) {
			errorType = "calling_webhook_error"
		}
	case errors.As(err, &se):
		rejectedBy, code, errorType = true, int(se.ErrStatus.Code), "no_error"
	default:
		rejectedBy, code, errorType = true, 0, "apiserver_internal_error"
	}
	if code > 600 {
		code = 600
	}
	rej := strconv.FormatBool(rejectedBy)
	m.duration.WithLabelValues(name, typ, op, rej).Observe(took.Seconds())
	m.requests.WithLabelValues(name, typ, op, strconv.Itoa(code), rej).Inc()
	if errorType != "" {
		m.rejections.WithLabelValues(name, typ, op, errorType, strconv.Itoa(code)).Inc()
	}
}
