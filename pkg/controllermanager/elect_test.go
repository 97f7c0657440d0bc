package controllermanager

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/cronplane/cronplane/pkg/version"
)

// leaseServer keeps one Lease and records the User-Agent of each request
// for it.
type leaseServer struct {
	mu     sync.Mutex
	lease  []byte
	agents []string
}

func (s *leaseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.HasPrefix(r.URL.Path, "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases") {
		s.agents = append(s.agents, r.UserAgent())
	}
	w.Header().Set("Content-Type", "application/json")
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

// Leader election talks to the apiserver with our User-Agent and kube's
// leader-election suffix, as kube-controller-manager's does, not with
// client-go's default agent named after the binary.
func TestElect_LeaseRequestsCarryOurLeaderElectionUserAgent(t *testing.T) {
	s := &leaseServer{}
	srv := httptest.NewServer(s)
	defer srv.Close()
	opts := DefaultOptions()
	opts.Identity = "me"
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = 3*time.Second, 2*time.Second, 100*time.Millisecond
	clients := configClientBuilder{base: &rest.Config{Host: srv.URL}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	led := make(chan struct{})
	if err := elect(ctx, clients.Config("leader-election"), opts, func(context.Context) { close(led); cancel() }); err != nil {
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
