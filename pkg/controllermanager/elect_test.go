package controllermanager

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/cronplane/cronplane/pkg/version"
)

// leaseServer keeps one Lease and records the User-Agent of each request
// for it.
type leaseServer struct {
	mu     sync.Mutex
	lease  []byte
	agents []string
	// events are the Events posted, with their User-Agent.
	events []postedEvent
}

type postedEvent struct {
	agent string
	event corev1.Event
}

func (s *leaseServer) posted() []postedEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]postedEvent(nil), s.events...)
}

func (s *leaseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.HasPrefix(r.URL.Path, "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases") {
		s.agents = append(s.agents, r.UserAgent())
	}
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/api/v1/namespaces/kube-system/events" && r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		var e corev1.Event
		_ = json.Unmarshal(body, &e)
		s.events = append(s.events, postedEvent{r.UserAgent(), e})
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
		return
	}
	switch r.Method {
	case http.MethodGet:
		if s.lease == nil {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
			return
		}
		_, _ = w.Write(s.lease)
	case http.MethodPost, http.MethodPut:
		s.lease, _ = io.ReadAll(r.Body)
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
		}
		_, _ = w.Write(s.lease)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// electFixture serves a Lease and returns the clients to it and options
// with identity "me" and short election periods.
func electFixture(t *testing.T) (*leaseServer, configClientBuilder, Options) {
	s := &leaseServer{}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	opts := DefaultOptions()
	opts.Identity = "me"
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = 3*time.Second, 2*time.Second, 100*time.Millisecond
	return s, configClientBuilder{base: &rest.Config{Host: srv.URL}}, opts
}

// Leader election talks to the apiserver with our User-Agent and kube's
// leader-election suffix, as kube-controller-manager's does, not with
// client-go's default agent named after the binary.
func TestElect_LeaseRequestsCarryOurLeaderElectionUserAgent(t *testing.T) {
	s, clients, opts := electFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	led := make(chan struct{})
	if err := elect(ctx, clients, opts, func(context.Context) { close(led); cancel() }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-led:
	default:
		t.Fatal("never led")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	want := version.UserAgent(program, "leader-election")
	// Get, create, and the release on cancel at least.
	if len(s.agents) < 3 {
		t.Fatalf("lease requests %q", s.agents)
	}
	for _, got := range s.agents {
		if got != want {
			t.Fatalf("lease request with User-Agent %q, want %q", got, want)
		}
	}
}

// The new leader says so in an Event on the Lease, as kube-controller-
// manager's does: "<identity> became leader", reason LeaderElection, from
// kube-controller-manager, posted with the manager's own client.
func TestElect_NewLeaderRecordsAnEventOnTheLease(t *testing.T) {
	s, clients, opts := electFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := func(context.Context) {
		// Lead until the event is out: the broadcaster stops with elect.
		for i := 0; i < 100 && len(s.posted()) == 0; i++ {
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
	}
	if err := elect(ctx, clients, opts, start); err != nil {
		t.Fatal(err)
	}
	// "stopped leading" may follow as the lease is released.
	events := s.posted()
	if len(events) == 0 {
		t.Fatal("no event")
	}
	e := events[0]
	if got, want := e.agent, version.UserAgent(program, program); got != want {
		t.Errorf("posted with User-Agent %q, want %q", got, want)
	}
	ref := e.event.InvolvedObject
	if e.event.Type != corev1.EventTypeNormal || e.event.Reason != "LeaderElection" || e.event.Message != "me became leader" ||
		e.event.Source.Component != program || e.event.Namespace != "kube-system" ||
		ref.Kind != "Lease" || ref.APIVersion != "coordination.k8s.io/v1" || ref.Namespace != "kube-system" || ref.Name != "kube-controller-manager" {
		t.Fatalf("event %+v", e.event)
	}
}
