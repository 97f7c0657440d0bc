package filters

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/endpoints/request"
	"github.com/cronplane/cronplane/pkg/metrics"
)

// inflightRequest builds a request as the chain hands it on: with its
// RequestInfo and user.
func inflightRequest(method, path string, groups ...string) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	ctx := request.WithRequestInfo(r.Context(), request.NewRequestInfo(r))
	ctx = user.WithUser(ctx, &user.Info{Name: "someone", Groups: append(groups, user.AllAuthenticated)})
	return r.WithContext(ctx)
}

func TestMaxInFlight(t *testing.T) {
	reg := metrics.NewRegistry()
	var term recordTerminations
	m := NewMaxInFlight(1, 1, func(r *http.Request) bool {
		info, _ := request.RequestInfoFrom(r.Context())
		return info.Verb == "watch" || strings.HasPrefix(r.URL.Path, "/readyz")
	}, reg, term.record)
	release := make(chan struct{})
	held := make(chan struct{}, 2)
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold") != "" {
			held <- struct{}{}
			<-release
		}
		w.WriteHeader(200)
	}))
	serve := func(r *http.Request) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	hold := func(r *http.Request) chan int {
		r.Header.Set("X-Hold", "1")
		code := make(chan int, 1)
		go func() { code <- serve(r).Code }()
		select {
		case <-held:
		case <-time.After(5 * time.Second):
			t.Fatal("request not served")
		}
		return code
	}
	// One read-only and one mutating request in flight fill both limits.
	getDone := hold(inflightRequest(http.MethodGet, "/api/v1/namespaces/a/configmaps/x"))
	postDone := hold(inflightRequest(http.MethodPost, "/api/v1/namespaces/a/configmaps"))

	for _, tc := range []struct {
		name string
		req  *http.Request
		code int
	}{
		{"read-only over its limit", inflightRequest(http.MethodGet, "/api/v1/namespaces"), 429},
		{"non-resource GET counts as read-only", inflightRequest(http.MethodGet, "/version"), 429},
		{"mutating over its limit", inflightRequest(http.MethodDelete, "/api/v1/namespaces/a/configmaps/x"), 429},
		{"watch is exempt", inflightRequest(http.MethodGet, "/api/v1/namespaces?watch=true"), 200},
		{"health is exempt", inflightRequest(http.MethodGet, "/readyz"), 200},
		{"system:masters is served over the limit", inflightRequest(http.MethodPost, "/api/v1/namespaces", user.SystemPrivileged), 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := serve(tc.req)
			if rec.Code != tc.code {
				t.Fatalf("code %d, want %d", rec.Code, tc.code)
			}
			if tc.code != 429 {
				return
			}
			if got := rec.Body.String(); got != "Too many requests, please try again later.\n" {
				t.Errorf("body %q", got)
			}
			if got := rec.Header().Get("Retry-After"); got != "1" {
				t.Errorf("Retry-After %q", got)
			}
			if got := rec.Header().Get("Content-Type"); got != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type %q", got)
			}
		})
	}
	if got := term.get(); len(got) != 3 || got[0] != 429 {
		t.Errorf("terminations %v, want three 429", got)
	}
	for kind, want := range map[string]float64{ReadOnlyKind: 2, MutatingKind: 1} {
		if got := testutil.ToFloat64(m.dropped.WithLabelValues(kind)); got != want {
			t.Errorf("apiserver_dropped_requests_total{request_kind=%q} %v, want %v", kind, got, want)
		}
	}

	m.publish()
	for kind, want := range map[string]float64{ReadOnlyKind: 1, MutatingKind: 1} {
		if got := testutil.ToFloat64(m.inflight.WithLabelValues(kind)); got != want {
			t.Errorf("apiserver_current_inflight_requests{request_kind=%q} %v, want %v", kind, got, want)
		}
	}
	close(release)
	<-getDone
	<-postDone
	// The gauge holds the last second's high-water mark, then the count.
	m.publish()
	if got := testutil.ToFloat64(m.inflight.WithLabelValues(MutatingKind)); got != 1 {
		t.Errorf("mutating high-water mark %v, want 1", got)
	}
	m.publish()
	if got := testutil.ToFloat64(m.inflight.WithLabelValues(MutatingKind)); got != 0 {
		t.Errorf("mutating after an idle second %v, want 0", got)
	}
	// Freed slots serve again.
	if rec := serve(inflightRequest(http.MethodGet, "/api/v1/namespaces")); rec.Code != 200 {
		t.Fatalf("after release: %d", rec.Code)
	}
	help, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range help {
		if mf.GetName() == "apiserver_current_inflight_requests" {
			found = strings.HasPrefix(mf.GetHelp(), "[STABLE] ")
		}
	}
	if !found {
		t.Error("apiserver_current_inflight_requests is not registered as STABLE")
	}
}

func TestMaxInFlight_ZeroLimitsLeaveRequestsAlone(t *testing.T) {
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	m := NewMaxInFlight(0, 0, nil, metrics.NewRegistry(), nil)
	if h := m.Handler(next); h == nil {
		t.Fatal("nil handler")
	}
	m = NewMaxInFlight(0, 1, nil, metrics.NewRegistry(), nil)
	h := m.Handler(next)
	for i := 0; i < 3; i++ {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, inflightRequest(http.MethodGet, "/api/v1/namespaces"))
		if rec.Code != 200 {
			t.Fatalf("read-only without a limit: %d", rec.Code)
		}
	}
}

func TestTerminations_LabelsAsKube(t *testing.T) {
	reg := metrics.NewRegistry()
	record := NewTerminations(reg)
	apply := inflightRequest(http.MethodPatch, "/apis/batch/v1/namespaces/a/cronjobs/c")
	apply.Header.Set("Content-Type", "application/apply-patch+yaml")
	for _, r := range []*http.Request{
		inflightRequest(http.MethodGet, "/api/v1/namespaces/a/configmaps"),
		inflightRequest(http.MethodPost, "/api/v1/namespaces/a/configmaps"),
		inflightRequest(http.MethodGet, "/api/v1/namespaces"),
		apply,
		inflightRequest(http.MethodGet, "/version"),
	} {
		record(r, 429)
	}
	want := `
# HELP apiserver_request_terminations_total [ALPHA] Requests the apiserver ended in self-defense (timeouts, in-flight limits), by verb, group, version, resource, subresource, scope, component and HTTP code.
# TYPE apiserver_request_terminations_total counter
apiserver_request_terminations_total{code="429",component="apiserver",group="",resource="",scope="",subresource="/version",verb="GET",version=""} 1
apiserver_request_terminations_total{code="429",component="apiserver",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"} 1
apiserver_request_terminations_total{code="429",component="apiserver",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 1
apiserver_request_terminations_total{code="429",component="apiserver",group="",resource="namespaces",scope="cluster",subresource="",verb="LIST",version="v1"} 1
apiserver_request_terminations_total{code="429",component="apiserver",group="batch",resource="cronjobs",scope="resource",subresource="",verb="APPLY",version="v1"} 1
`
	if err := testutil.GatherAndCompare(reg.Gatherer(), strings.NewReader(want), "apiserver_request_terminations_total"); err != nil {
		t.Fatal(err)
	}
}
