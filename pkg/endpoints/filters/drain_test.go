package filters

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func isWatch(r *http.Request) bool { return r.URL.Query().Get("watch") == "true" }

func TestDrain(t *testing.T) {
	d := NewDrain()
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	var watchesEnded atomic.Int32
	h := d.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		if isWatch(r) {
			<-r.Context().Done()
			watchesEnded.Add(1)
			return
		}
		<-release
		w.WriteHeader(201)
	}), isWatch)
	serve := func(path string) chan int {
		code := make(chan int, 1)
		go func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			code <- rec.Code
		}()
		return code
	}
	write := serve("/api/v1/namespaces/a/configmaps")
	w1, w2 := serve("/api/v1/configmaps?watch=true"), serve("/api/v1/secrets?watch=true")
	for i := 0; i < 3; i++ {
		<-started
	}
	d.Stop()
	if !d.Stopped() {
		t.Fatal("not stopped")
	}

	// New requests are turned away, as kube does while draining.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/namespaces", nil))
	if rec.Code != 503 || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), `"message":"apiserver is shutting down"`) {
		t.Fatalf("after Stop: %d %v %s", rec.Code, rec.Header(), rec.Body.String())
	}

	// The requests in flight finish; WaitRequests waits for them.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if err := d.WaitRequests(ctx); err == nil {
		t.Fatal("WaitRequests returned with a request in flight")
	}
	cancel()
	close(release)
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := d.WaitRequests(ctx); err != nil {
		t.Fatal(err)
	}
	if code := <-write; code != 201 {
		t.Fatalf("the write in flight got %d", code)
	}

	// The watches are ended; their handlers return normally.
	if watchesEnded.Load() != 0 {
		t.Fatal("watches ended before EndWatches")
	}
	if err := d.EndWatches(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if watchesEnded.Load() != 2 || <-w1 != 200 || <-w2 != 200 {
		t.Fatalf("watches ended: %d", watchesEnded.Load())
	}
}

func TestDrain_EndWatchesSpreadsOverTheGracePeriod(t *testing.T) {
	d := NewDrain()
	ended := make(chan time.Time, 1000)
	started := make(chan struct{}, 1000)
	h := d.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-r.Context().Done()
		ended <- time.Now()
	}), isWatch)
	const n = 300
	for i := 0; i < n; i++ {
		go h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/v1/configmaps?watch=true", nil))
	}
	for i := 0; i < n; i++ {
		<-started
	}
	d.Stop()
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// 300 watches at 200 a second take 1.5 s, more than the grace period:
	// what is left at its end is ended at once.
	if err := d.EndWatches(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	took := time.Since(begin)
	if took < 900*time.Millisecond || took > 3*time.Second {
		t.Fatalf("ending %d watches over a 1s grace period took %s", n, took)
	}
	first, last := time.Now(), time.Time{}
	for i := 0; i < n; i++ {
		at := <-ended
		if at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	if spread := last.Sub(first); spread < 500*time.Millisecond {
		t.Fatalf("the watches ended within %s: not spread", spread)
	}
}

func TestDrain_EndWatchesWithoutWatches(t *testing.T) {
	d := NewDrain()
	d.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	begin := time.Now()
	if err := d.EndWatches(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := d.WaitRequests(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took > 500*time.Millisecond {
		t.Fatalf("took %s with nothing to drain", took)
	}
}
