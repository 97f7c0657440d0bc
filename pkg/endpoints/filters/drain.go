package filters

import (
	"context"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/cronplane/cronplane/pkg/endpoints/responsewriters"
)

// Drain keeps account of the requests in flight for a graceful shutdown:
// once stopped it turns new requests away (503, Retry-After: 1, as kube
// does while it drains), lets the requests in flight finish, and ends the
// long-running ones (watches) cleanly, so that their clients watch again,
// elsewhere.
type Drain struct {
	mu      sync.Mutex
	stopped bool
	// requests counts the requests in flight that are not long-running.
	requests sync.WaitGroup
	// watches holds a cancel function per long-running request; ending
	// one ends the request's context, and the handler returns.
	watches     map[*context.CancelFunc]struct{}
	watchesDone sync.WaitGroup
}

// NewDrain returns a Drain that admits requests.
func NewDrain() *Drain {
	return &Drain{watches: map[*context.CancelFunc]struct{}{}}
}

// Handler tracks each request to next; longRunning reports watches.
func (d *Drain) Handler(next http.Handler, longRunning func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lr := longRunning(r)
		d.mu.Lock()
		if d.stopped {
			d.mu.Unlock()
			w.Header().Set("Retry-After", "1")
			responsewriters.WriteError(w, r, apierrors.NewServiceUnavailable("apiserver is shutting down"))
			return
		}
		if !lr {
			d.requests.Add(1)
			d.mu.Unlock()
			defer d.requests.Done()
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		key := &cancel
		d.watches[key] = struct{}{}
		d.watchesDone.Add(1)
		d.mu.Unlock()
		defer func() {
			d.mu.Lock()
			delete(d.watches, key)
			d.mu.Unlock()
			cancel()
			d.watchesDone.Done()
		}()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Stop turns new requests away from now on.
func (d *Drain) Stop() {
	d.mu.Lock()
	d.stopped = true
	d.mu.Unlock()
}

// Stopped reports whether Stop was called.
func (d *Drain) Stopped() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stopped
}

// WaitRequests waits until the requests in flight that are not
// long-running have returned (they are bounded by the request timeout),
// or ctx ends. Call it after Stop.
func (d *Drain) WaitRequests(ctx context.Context) error {
	return wait(ctx, &d.requests)
}

// minWatchEndRate is the fewest watches ended per second while they are
// spread over a grace period, as kube drains them.
const minWatchEndRate = 200

// EndWatches ends the long-running requests in flight and waits until
// their handlers have returned, or ctx ends. With a grace period the
// ends are spread over it (at least 200 a second), so that their clients
// do not all come back at once; whatever is left when it is over is ended
// at once. Call it after Stop.
func (d *Drain) EndWatches(ctx context.Context, grace time.Duration) error {
	d.mu.Lock()
	cancels := make([]context.CancelFunc, 0, len(d.watches))
	for c := range d.watches {
		cancels = append(cancels, *c)
	}
	d.mu.Unlock()
	if grace > 0 && len(cancels) > 0 {
		rate := float64(len(cancels)) / grace.Seconds()
		if rate < minWatchEndRate {
			rate = minWatchEndRate
		}
		interval := time.Duration(float64(time.Second) / rate)
		deadline := time.NewTimer(grace)
		defer deadline.Stop()
		tick := time.NewTicker(interval)
		defer tick.Stop()
	spread:
		for len(cancels) > 0 {
			cancels[0]()
			cancels = cancels[1:]
			select {
			case <-tick.C:
			case <-deadline.C:
				break spread
			case <-ctx.Done():
				break spread
			}
		}
	}
	for _, c := range cancels {
		c()
	}
	return wait(ctx, &d.watchesDone)
}

func wait(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
