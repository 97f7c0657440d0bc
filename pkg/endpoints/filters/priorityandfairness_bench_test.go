package filters

import (
	"context"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/endpoints/request"
	"github.com/cronplane/cronplane/pkg/flowcontrol"
	"github.com/cronplane/cronplane/pkg/flowcontrol/bootstrap"
	"github.com/cronplane/cronplane/pkg/metrics"
)

// headerWriter is a ResponseWriter that keeps nothing but its header,
// cleared for each request, so that the benchmark measures the filter.
type headerWriter struct{ h http.Header }

func (w *headerWriter) Header() http.Header         { return w.h }
func (w *headerWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *headerWriter) WriteHeader(int)             {}

// processCPU is the CPU time the process used so far, its threads and
// the garbage collector's included.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkGetThroughTheLimits is a GET of a RoleBinding user (in
// global-default) through each way of limiting requests, as the server
// chains it: with a deadline, its RequestInfo and its user. The
// difference is what priority and fairness costs per request over the
// plain in-flight limits. cpu-ns/op, the process's CPU time per request,
// depends less than ns/op on what else the machine runs.
func BenchmarkGetThroughTheLimits(b *testing.B) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	notLongRunning := func(*http.Request) bool { return false }
	inflight := func() *MaxInFlight {
		return NewMaxInFlight(400, 200, notLongRunning, metrics.NewRegistry(), nil)
	}
	apf := func() http.Handler {
		reg := metrics.NewRegistry()
		c := flowcontrol.New(600, reg, nil)
		mfs, mpl := bootstrap.Mandatory()
		sfs, spl := bootstrap.Suggested()
		c.SetConfig(append(mfs, sfs...), append(mpl, spl...))
		p := &PriorityAndFairness{Controller: c, LongRunning: notLongRunning, InFlight: NewMaxInFlight(0, 0, notLongRunning, reg, nil)}
		return p.Handler(next)
	}
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{
		{"inflight", inflight().Handler(next)},
		{"apf", apf()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r, _ := http.NewRequest(http.MethodGet, "/apis/batch/v1/namespaces/bench/cronjobs/cj-00001", nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			ctx = request.WithRequestInfo(ctx, request.NewRequestInfo(r))
			ctx = user.WithUser(ctx, &user.Info{Name: "bench-reader", Groups: []string{user.AllAuthenticated}})
			r = r.WithContext(ctx)
			b.ReportAllocs()
			cpu := processCPU(b)
			b.RunParallel(func(pb *testing.PB) {
				w := &headerWriter{h: http.Header{}}
				for pb.Next() {
					clear(w.h)
					bc.h.ServeHTTP(w, r)
				}
			})
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
