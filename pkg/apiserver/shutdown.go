package apiserver

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/cronplane/cronplane/pkg/endpoints/filters"
	"github.com/cronplane/cronplane/pkg/healthz"
)

// lifecycle is what the server keeps for its start and its stop: the
// post-start hooks and the health checks' state, the in-flight limits,
// and the account of requests a graceful shutdown drains.
type lifecycle struct {
	started time.Time

	hooksMu      sync.Mutex
	hooks        []*postStartHook
	hooksStarted bool

	log                   *healthz.Log
	etcdHealth, etcdReady *etcdProbe
	// overrideHealth and overrideReady probe the clusters of
	// --etcd-servers-overrides, in their order.
	overrideHealth, overrideReady []*etcdProbe
	// shutdownInitiated is closed when the server is told to stop.
	shutdownInitiated chan struct{}

	drain    *filters.Drain
	inflight *filters.MaxInFlight
	// apf, with --enable-priority-and-fairness, stands in for inflight's
	// limits, and records into its metrics.
	apf          *filters.PriorityAndFairness
	terminations filters.Terminated
}

// initLifecycle prepares the lifecycle; the metrics registry and the
// background context exist by then, the etcd client not yet.
func (s *Server) initLifecycle() {
	l := &s.life
	o := s.opts.Serving
	l.started = time.Now()
	l.shutdownInitiated = make(chan struct{})
	l.log = healthz.NewLog(nil, 0, s.background.Done())
	l.etcdHealth = &etcdProbe{probe: s.probeEtcd, timeout: o.EtcdHealthcheckTimeout}
	l.etcdReady = &etcdProbe{probe: s.probeEtcd, timeout: o.EtcdReadycheckTimeout}
	l.drain = filters.NewDrain()
	l.terminations = filters.NewTerminations(s.Metrics)
	readOnly, mutating := o.MaxRequestsInFlight, o.MaxMutatingRequestsInFlight
	if o.EnablePriorityAndFairness {
		readOnly, mutating = 0, 0
	}
	l.inflight = filters.NewMaxInFlight(readOnly, mutating, func(r *http.Request) bool {
		return isLongRunning(r) || isHealthPath(r.URL.Path)
	}, s.Metrics, l.terminations)
	if o.EnablePriorityAndFairness {
		l.apf = s.newPriorityAndFairness(l.inflight, l.terminations)
	}
}

// startLifecycle runs, once the server listens, the post-start hooks and
// the in-flight gauge, until Close.
func (s *Server) startLifecycle() {
	s.startPriorityAndFairness()
	s.runPostStartHooks(s.background)
	go s.life.inflight.Run(s.background)
}

// terminateOn runs the graceful termination when ctx ends. The channel
// it returns is closed once the termination is complete, or at once when
// Close comes first.
func (s *Server) terminateOn(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-ctx.Done():
			s.terminate()
		case <-s.closed:
		}
	}()
	return done
}

// terminate is the graceful termination, in kube-apiserver's order:
// /readyz fails at once (its shutdown check) while the server serves on
// for --shutdown-delay-duration, so that load balancers take it out;
// then it stops accepting connections, turns away new requests on the
// open ones (503), lets the requests in flight finish (each is bounded by
// --request-timeout) and ends the watches cleanly, spread over
// --shutdown-watch-termination-grace-period, so that their clients watch
// again elsewhere.
func (s *Server) terminate() {
	o := s.opts.Serving
	close(s.life.shutdownInitiated)
	s.opts.Logger.Info("[graceful-termination] shutting down: /readyz fails; serving on for --shutdown-delay-duration", "delay", o.ShutdownDelayDuration)
	if o.ShutdownDelayDuration > 0 {
		t := time.NewTimer(o.ShutdownDelayDuration)
		select {
		case <-t.C:
		case <-s.closed:
			t.Stop()
			return
		}
	}
	s.opts.Logger.Info("[graceful-termination] no longer accepting requests; draining those in flight")
	s.life.drain.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), o.RequestTimeout+o.ShutdownWatchTerminationGracePeriod+5*time.Second)
	defer cancel()
	// Shutdown closes the listener and the idle connections, and waits
	// for the busy ones to become idle.
	stopped := make(chan error, 1)
	go func() { stopped <- s.http.Shutdown(ctx) }()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := s.life.drain.WaitRequests(ctx); err != nil {
			s.opts.Logger.Error(err, "[graceful-termination] requests still in flight")
		}
	}()
	go func() {
		defer wg.Done()
		if err := s.life.drain.EndWatches(ctx, o.ShutdownWatchTerminationGracePeriod); err != nil {
			s.opts.Logger.Error(err, "[graceful-termination] watches still open")
		}
	}()
	wg.Wait()
	if err := <-stopped; err != nil {
		s.opts.Logger.Error(err, "[graceful-termination] closing the connections left")
		_ = s.http.Close()
	}
	s.opts.Logger.Info("[graceful-termination] drained")
}
