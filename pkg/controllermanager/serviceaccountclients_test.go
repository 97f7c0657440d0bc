package controllermanager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// tokenServer answers TokenRequests on a fake clientset with tokens t1,
// t2, ... and the lifetime asked for, or granted, if set; fail makes it
// refuse them.
type tokenServer struct {
	mu      sync.Mutex
	issued  int
	granted *int64
	fail    bool
}

func (s *tokenServer) install(client *fake.Clientset) {
	client.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.fail {
			return true, nil, apierrors.NewServiceUnavailable("down")
		}
		s.issued++
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		if s.granted != nil {
			tr.Spec.ExpirationSeconds = s.granted
		}
		tr.Status.Token = fmt.Sprintf("t%d", s.issued)
		return true, tr, nil
	})
}

func (s *tokenServer) setFail(fail bool) {
	s.mu.Lock()
	s.fail = fail
	s.mu.Unlock()
}

func newTestBuilder(base *rest.Config) (*serviceAccountClientBuilder, *fake.Clientset, *tokenServer, *clocktesting.FakeClock) {
	client := fake.NewSimpleClientset()
	server := &tokenServer{}
	server.install(client)
	clock := clocktesting.NewFakeClock(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))
	return &serviceAccountClientBuilder{base: base, core: client.CoreV1(), clock: clock, sources: map[string]*tokenSource{}}, client, server, clock
}

func token(t *testing.T, ts *tokenSource) string {
	t.Helper()
	tok, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	return tok.AccessToken
}

func TestTokenSource_RenewsAtEightyPercentOfTheLifetime(t *testing.T) {
	six := int64(600)
	for _, tc := range []struct {
		name    string
		granted *int64
		// renewAt is when the second token is asked for.
		renewAt time.Duration
	}{
		{name: "an hour as asked lasts 48 minutes", renewAt: 48 * time.Minute},
		{name: "a lifetime the server shortened is the one counted", granted: &six, renewAt: 8 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, client, server, clock := newTestBuilder(&rest.Config{})
			server.granted = tc.granted
			ts := b.source("cronjob-controller")
			if got := token(t, ts); got != "t1" {
				t.Fatalf("first token %q", got)
			}
			if _, err := client.CoreV1().ServiceAccounts("kube-system").Get(context.Background(), "cronjob-controller", metav1.GetOptions{}); err != nil {
				t.Fatalf("the account was not created: %v", err)
			}
			clock.Step(tc.renewAt - time.Second)
			if got := token(t, ts); got != "t1" {
				t.Fatalf("before renewal: %q", got)
			}
			clock.Step(time.Second)
			if got := token(t, ts); got != "t2" {
				t.Fatalf("at renewal: %q", got)
			}
			if got := token(t, ts); got != "t2" || server.issued != 2 {
				t.Fatalf("after renewal: %q, %d issued", got, server.issued)
			}
		})
	}
}

func TestTokenSource_KeepsTheTokenUntilItExpiresWhenRenewalFails(t *testing.T) {
	b, _, server, clock := newTestBuilder(&rest.Config{})
	ts := b.source("namespace-controller")
	token(t, ts)
	server.setFail(true)
	clock.Step(50 * time.Minute)
	if got := token(t, ts); got != "t1" {
		t.Fatalf("renewal failed before expiry: %q", got)
	}
	clock.Step(10 * time.Minute)
	var status apierrors.APIStatus
	if _, err := ts.Token(); !errors.As(err, &status) {
		t.Fatalf("renewal failed at expiry: want the server's error, got %v", err)
	}
	server.setFail(false)
	if got := token(t, ts); got != "t2" {
		t.Fatalf("once the server answers: %q", got)
	}
}

func TestTokenSource_AsksAgainAfterARefusal(t *testing.T) {
	b, _, _, _ := newTestBuilder(&rest.Config{})
	ts := b.source("generic-garbage-collector")
	token(t, ts)
	ts.ResetTokenOlderThan(time.Now().Add(-time.Hour))
	if got := token(t, ts); got != "t1" {
		t.Fatalf("a refusal of a request older than the token: %q", got)
	}
	ts.ResetTokenOlderThan(time.Now().Add(time.Second))
	if got := token(t, ts); got != "t2" {
		t.Fatalf("a refusal of a request newer than the token: %q", got)
	}
}

func TestServiceAccountClientBuilder_ClientsActWithTheirAccountsTokens(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get("Authorization")] = r.UserAgent()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`))
	}))
	defer srv.Close()
	b, client, _, _ := newTestBuilder(rest.AnonymousClientConfig(&rest.Config{Host: srv.URL, BearerToken: "manager-token"}))
	for _, name := range []string{"cronjob-controller", "namespace-controller", "cronjob-controller"} {
		c, err := b.Client(name)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = c.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// One token per account, shared by its clients; never the manager's.
	if len(seen) != 2 || !strings.HasSuffix(seen["Bearer t1"], "/cronjob-controller") || !strings.HasSuffix(seen["Bearer t2"], "/namespace-controller") {
		t.Fatalf("requests came with %v", seen)
	}
	accounts, err := client.CoreV1().ServiceAccounts("kube-system").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(accounts.Items) != 2 {
		t.Fatalf("accounts %v %v", accounts, err)
	}
}
