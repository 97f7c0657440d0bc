package apiserver_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/cronplane/cronplane/pkg/apiserver"
)

// The checks cronplane has are named and ordered as kube's (the e2e spec
// "health handlers should contain necessary checks" lists them); kube's
// others do not apply (README, Health).
func TestHealth_EndpointsListKubesChecks(t *testing.T) {
	hooks := "[+]poststarthook/start-apiextensions-informers ok\n[+]poststarthook/start-apiextensions-controllers ok\n[+]poststarthook/crd-informer-synced ok\n" +
		"[+]poststarthook/rbac/bootstrap-roles ok\n[+]poststarthook/priority-and-fairness-config-producer ok\n[+]poststarthook/start-system-namespaces-controller ok\n[+]poststarthook/bootstrap-controller ok\n"
	for _, tc := range []struct{ path, body string }{
		{"/readyz?verbose", "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]informer-sync ok\n" +
			hooks + "[+]shutdown ok\nreadyz check passed\n"},
		{"/livez?verbose", "[+]ping ok\n[+]log ok\n[+]etcd ok\n" +
			hooks + "livez check passed\n"},
		{"/healthz?verbose", "[+]ping ok\n[+]log ok\n[+]etcd ok\n" +
			hooks + "healthz check passed\n"},
		{"/readyz?exclude=etcd&exclude=informer-sync&exclude=nope&verbose", "[+]ping ok\n[+]log ok\n[+]etcd excluded: ok\n[+]etcd-readiness ok\n[+]informer-sync excluded: ok\n" +
			hooks + "[+]shutdown ok\n" +
			"warn: some health checks cannot be excluded: no matches for \"nope\"\nreadyz check passed\n"},
		{"/readyz?exclude=etcd", "ok"},
	} {
		resp, body := raw(t, "GET", tc.path, "", "", "")
		if resp.StatusCode != 200 || body != tc.body {
			t.Errorf("%s: %d\n%s\nwant\n%s", tc.path, resp.StatusCode, body, tc.body)
		}
		if got := resp.Header.Get("Content-Type"); got != "text/plain; charset=utf-8" {
			t.Errorf("%s: Content-Type %q", tc.path, got)
		}
	}
}

// Anonymous users read the endpoints, not the checks one by one (kube's
// system:public-info-viewer lists the three paths only); system:monitoring
// reads both.
func TestHealth_OneCheckAtATime(t *testing.T) {
	for _, tc := range []struct {
		token, method, path string
		code                int
		body                string
	}{
		{"", "GET", "/readyz/etcd", 403, `"message":"forbidden: User \"system:anonymous\" cannot get path \"/readyz/etcd\""`},
		{"", "GET", "/livez/ping", 403, `cannot get path \"/livez/ping\"`},
		{"", "POST", "/readyz", 403, `cannot post path \"/readyz\"`},
		{"monitor-token", "GET", "/readyz/etcd", 200, "ok"},
		{"monitor-token", "GET", "/readyz/etcd-readiness", 200, "ok"},
		{"monitor-token", "GET", "/readyz/informer-sync", 200, "ok"},
		{"monitor-token", "GET", "/readyz/shutdown", 200, "ok"},
		{"monitor-token", "GET", "/readyz/poststarthook/rbac/bootstrap-roles", 200, "ok"},
		{"monitor-token", "GET", "/livez/poststarthook/start-system-namespaces-controller", 200, "ok"},
		{"monitor-token", "GET", "/healthz/log", 200, "ok"},
		{"monitor-token", "GET", "/livez/shutdown", 404, "404 page not found\n"},
		{"monitor-token", "GET", "/livez/etcd-readiness", 404, "404 page not found\n"},
		{"monitor-token", "GET", "/readyz/nope", 404, "404 page not found\n"},
		{"monitor-token", "GET", "/readyz/", 404, "404 page not found\n"},
		{srv.AdminToken, "POST", "/readyz/etcd", 200, "ok"},
	} {
		resp, body := raw(t, tc.method, tc.path, tc.token, "", "")
		if resp.StatusCode != tc.code || (tc.code == 403 && !strings.Contains(body, tc.body)) || (tc.code != 403 && body != tc.body) {
			t.Errorf("%s %s as %q: %d %q, want %d %q", tc.method, tc.path, tc.token, resp.StatusCode, body, tc.code, tc.body)
		}
	}
}

// startServer starts a server of its own with New and Run, for tests
// that need to act between the two; it is closed when the test ends.
func startServer(t *testing.T, mutate func(*apiserver.Options), beforeRun func(*apiserver.Server)) (*apiserver.Server, *http.Client) {
	t.Helper()
	opts := apiserver.DefaultOptions()
	opts.DataDir = t.TempDir()
	opts.SecurePort = 0
	opts.Logger = logr.Discard()
	if mutate != nil {
		mutate(&opts)
	}
	c, err := opts.Complete()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := apiserver.New(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if beforeRun != nil {
		beforeRun(s)
	}
	serveCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(serveCtx) }()
	select {
	case <-s.Listening():
	case err := <-done:
		stop()
		s.Close()
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Run did not return")
		}
		s.Close()
	})
	pool := http.DefaultTransport.(*http.Transport).Clone()
	pool.TLSClientConfig = tlsConfigFor(t, s.CAData)
	return s, &http.Client{Transport: pool, Timeout: 30 * time.Second}
}

// getPath reads a path of s, with a token if one is given.
func getPath(t *testing.T, c *http.Client, s *apiserver.Server, path, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// waitHealth polls path until it answers code, and returns the body.
func waitHealth(t *testing.T, c *http.Client, s *apiserver.Server, path string, code int) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, body := getPath(t, c, s, path, "")
		if got == code {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d %s, want %d", path, got, body, code)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// /readyz fails until the post-start hooks are done; /livez only after
// --livez-grace-period; /healthz at once, as kube's do.
func TestHealth_PostStartHooksGateReadiness(t *testing.T) {
	for _, tc := range []struct {
		name      string
		grace     time.Duration
		livezCode int
	}{
		{"within the livez grace period", time.Hour, 200},
		{"without a livez grace period", 0, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			calls := make(chan struct{}, 100)
			s, c := startServer(t, func(o *apiserver.Options) { o.Serving.LivezGracePeriod = tc.grace }, func(s *apiserver.Server) {
				err := s.AddPostStartHook("test-hook", func(ctx context.Context) error {
					calls <- struct{}{}
					select {
					case <-release:
						return nil
					default:
						return errors.New("not yet")
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.AddPostStartHook("test-hook", func(context.Context) error { return nil }); err == nil {
					t.Fatal("a hook name registered twice")
				}
			})
			<-calls
			<-calls // it failed once and is retried
			body := waitHealth(t, c, s, "/readyz", 500)
			if !strings.Contains(body, "[+]poststarthook/bootstrap-controller ok\n[-]poststarthook/test-hook failed: reason withheld\n[+]shutdown ok\nreadyz check failed\n") {
				t.Fatalf("readyz:\n%s", body)
			}
			if code, body := getPath(t, c, s, "/healthz", ""); code != 500 || !strings.Contains(body, "[-]poststarthook/test-hook failed: reason withheld\nhealthz check failed\n") {
				t.Fatalf("healthz: %d\n%s", code, body)
			}
			if code, body := getPath(t, c, s, "/livez", ""); code != tc.livezCode {
				t.Fatalf("livez: %d\n%s", code, body)
			}
			if code, body := getPath(t, c, s, "/readyz/poststarthook/test-hook", s.AdminToken); code != 500 || body != "internal server error: not finished\n" {
				t.Fatalf("the hook's check: %d %q", code, body)
			}
			if err := s.AddPostStartHook("late", func(context.Context) error { return nil }); err == nil {
				t.Fatal("a hook added after the start")
			}
			close(release)
			waitHealth(t, c, s, "/readyz", 200)
			if code, _ := getPath(t, c, s, "/livez", ""); code != 200 {
				t.Fatalf("livez after the hook: %d", code)
			}
		})
	}
}

// Without etcd the server is neither live nor ready: the etcd checks fail,
// the watch caches are never filled and the hooks cannot write.
func TestHealth_WithoutEtcd(t *testing.T) {
	s, c := startServer(t, func(o *apiserver.Options) {
		o.EtcdServers = []string{"http://127.0.0.1:1"}
		o.AuthorizationModes = []string{apiserver.ModeAlwaysAllow}
		o.Serving.EtcdHealthcheckTimeout = 200 * time.Millisecond
		o.Serving.EtcdReadycheckTimeout = 200 * time.Millisecond
	}, nil)
	code, body := getPath(t, c, s, "/readyz", "")
	for _, want := range []string{"[+]ping ok\n", "[-]etcd failed: reason withheld\n", "[-]etcd-readiness failed: reason withheld\n", "[-]informer-sync failed: reason withheld\n",
		"[-]poststarthook/start-system-namespaces-controller failed: reason withheld\n", "[+]shutdown ok\n"} {
		if code != 500 || !strings.Contains(body, want) {
			t.Fatalf("readyz without etcd: %d, no %q in\n%s", code, want, body)
		}
	}
	if code, body := getPath(t, c, s, "/livez", ""); code != 500 || !strings.Contains(body, "[-]etcd failed: reason withheld\n") || !strings.HasSuffix(body, "livez check failed\n") {
		t.Fatalf("livez without etcd: %d\n%s", code, body)
	}
	if code, body := getPath(t, c, s, "/livez?exclude=etcd&exclude=poststarthook/priority-and-fairness-config-producer&exclude=poststarthook/start-system-namespaces-controller&exclude=poststarthook/bootstrap-controller&exclude=poststarthook/crd-informer-synced", ""); code != 200 || body != "ok" {
		t.Fatalf("livez without the etcd checks: %d\n%s", code, body)
	}
	if code, body := getPath(t, c, s, "/readyz/informer-sync", s.AdminToken); code != 500 || !strings.Contains(body, "watch caches not synced yet") {
		t.Fatalf("informer-sync: %d %s", code, body)
	}
}

func TestServingOptions_Validate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*apiserver.ServingOptions)
		err    string
	}{
		{"defaults", func(*apiserver.ServingOptions) {}, ""},
		{"negative max-requests-inflight", func(o *apiserver.ServingOptions) { o.MaxRequestsInFlight = -1 }, "--max-requests-inflight can not be negative value"},
		{"negative max-mutating", func(o *apiserver.ServingOptions) { o.MaxMutatingRequestsInFlight = -1 }, "--max-mutating-requests-inflight can not be negative value"},
		{"negative request-timeout", func(o *apiserver.ServingOptions) { o.RequestTimeout = -time.Second }, "--request-timeout can not be negative value"},
		{"negative livez grace", func(o *apiserver.ServingOptions) { o.LivezGracePeriod = -time.Second }, "--livez-grace-period can not be a negative value"},
		{"negative shutdown delay", func(o *apiserver.ServingOptions) { o.ShutdownDelayDuration = -time.Second }, "--shutdown-delay-duration can not be negative value"},
		{"negative watch grace", func(o *apiserver.ServingOptions) { o.ShutdownWatchTerminationGracePeriod = -time.Second }, "shutdown-watch-termination-grace-period, if provided, can not be a negative value"},
		{"zero etcd healthcheck timeout", func(o *apiserver.ServingOptions) { o.EtcdHealthcheckTimeout = 0 }, "--etcd-healthcheck-timeout must be greater than 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := apiserver.DefaultServingOptions()
			tc.mutate(&o)
			err := o.Validate()
			if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
				t.Fatalf("got %v, want %q", err, tc.err)
			}
		})
	}
	d := apiserver.DefaultServingOptions()
	if d.MaxRequestsInFlight != 400 || d.MaxMutatingRequestsInFlight != 200 || d.RequestTimeout != time.Minute || d.LivezGracePeriod != 0 ||
		d.ShutdownDelayDuration != 0 || d.ShutdownWatchTerminationGracePeriod != 0 || d.EtcdHealthcheckTimeout != 2*time.Second || d.EtcdReadycheckTimeout != 2*time.Second {
		t.Fatalf("defaults are not kube's: %+v", d)
	}
}

// tlsConfigFor trusts the server's CA.
func tlsConfigFor(t *testing.T, ca []byte) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("no CA")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}
