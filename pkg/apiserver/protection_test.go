package apiserver_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/runtime"
	validationfield "k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
	"github.com/cronplane/cronplane/pkg/registry/generic"
)

const kubeTimeoutStatus = `{"metadata":{},"status":"Failure","message":"Timeout: request did not complete within the allotted timeout","reason":"Timeout","details":{},"code":504}` + "\n"

// stalledRequest sends, over a TLS connection of its own, the header of a
// request and half its body, and then nothing. The answer arrives on the
// channel, with whether the server closed the connection after it.
type stalledAnswer struct {
	code   int
	body   string
	closed bool
	after  time.Duration
	err    error
}

func stalledRequest(t *testing.T, s *apiservertest.Server, method, path, token, body string) <-chan stalledAnswer {
	t.Helper()
	c, err := tls.Dial("tcp", strings.TrimPrefix(s.URL, "https://"), &tls.Config{RootCAs: tlsConfigFor(t, s.CAData).RootCAs, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	start := time.Now()
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", method, path, token, 2*len(body), body)
	answer := make(chan stalledAnswer, 1)
	go func() {
		_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			answer <- stalledAnswer{err: err}
			return
		}
		data, _ := io.ReadAll(resp.Body)
		a := stalledAnswer{code: resp.StatusCode, body: string(data), after: time.Since(start)}
		_, err = br.ReadByte()
		a.closed = err == io.EOF
		answer <- a
	}()
	return answer
}

// tokenFile writes static tokens for users outside system:masters.
func tokenFile(t *testing.T, users ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.csv")
	var b strings.Builder
	for _, u := range users {
		fmt.Fprintf(&b, "%s-token,%s,%s-uid\n", u, u, u)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func request(t *testing.T, s *apiservertest.Server, method, path, token, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

func configMapJSON(name string) string {
	return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"}}`
}

// With --enable-priority-and-fairness=false (as kube, the in-flight
// limits apply as such only then), --max-mutating-requests-inflight=1
// and --request-timeout=4s: a
// write whose body stalls holds the one slot until the timeout, and is
// then answered kube's 504 and its connection closed; meanwhile other
// writes get kube's 429, except those of system:masters, and reads,
// watches and health checks are served.
func TestProtection_InFlightLimitAndRequestTimeout(t *testing.T) {
	s := apiservertest.Start(t, func(o *apiserver.Options) {
		o.Serving.EnablePriorityAndFairness = false
		o.Serving.MaxMutatingRequestsInFlight = 1
		o.Serving.RequestTimeout = 4 * time.Second
		o.AuthorizationModes = []string{apiserver.ModeAlwaysAllow}
		o.TokenAuthFile = tokenFile(t, "alice")
	})
	const alice = "alice-token"
	cms := "/api/v1/namespaces/default/configmaps"

	// A watch without timeoutSeconds outlives the request timeout.
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	req, _ := http.NewRequestWithContext(watchCtx, http.MethodGet, s.URL+cms+"?watch=true&fieldSelector=metadata.name%3Dlate", nil)
	req.Header.Set("Authorization", "Bearer "+alice)
	watchResp, err := s.HTTPClient().Do(req)
	if err != nil || watchResp.StatusCode != 200 {
		t.Fatalf("watch: %v", err)
	}
	defer watchResp.Body.Close()
	events := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(watchResp.Body)
		for sc.Scan() {
			events <- sc.Text()
		}
		close(events)
	}()

	began := time.Now()
	stalled := stalledRequest(t, s, http.MethodPost, cms, alice, configMapJSON("stalled"))
	// Nothing else writes, so the gauge (published every second) reads 1
	// only once the stalled write holds the slot. Probing before that
	// could take the slot first and leave the stalled write the 429.
	for {
		_, metrics := request(t, s, http.MethodGet, "/metrics", s.AdminToken, "")
		if strings.Contains(metrics, `apiserver_current_inflight_requests{request_kind="mutating"} 1`) {
			break
		}
		if time.Since(began) > 3*time.Second {
			t.Fatalf("inflight gauge:\n%s", grepLines(metrics, "apiserver_current_inflight_requests"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	resp, body := request(t, s, http.MethodPost, cms+"?dryRun=All", alice, configMapJSON("probe"))
	if resp.StatusCode != 429 || body != "Too many requests, please try again later.\n" || resp.Header.Get("Retry-After") != "1" ||
		resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("a write over the limit: %d %v %q", resp.StatusCode, resp.Header, body)
	}
	for _, tc := range []struct {
		name, method, path, token, body string
		code                            int
	}{
		{"system:masters is served over the limit", http.MethodPost, cms, s.AdminToken, configMapJSON("admins"), 201},
		{"reads have their own limit", http.MethodGet, cms, alice, "", 200},
		{"health checks are exempt", http.MethodGet, "/readyz", "", "", 200},
	} {
		if resp, body := request(t, s, tc.method, tc.path, tc.token, tc.body); resp.StatusCode != tc.code {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, body)
		}
	}

	a := <-stalled
	if a.err != nil || a.code != 504 || a.body != kubeTimeoutStatus || !a.closed {
		t.Fatalf("the stalled write: %+v", a)
	}
	if a.after < 3900*time.Millisecond || a.after > 8*time.Second {
		t.Fatalf("the stalled write was answered after %s, not at the 4s request timeout", a.after)
	}
	// The slot is free again.
	if resp, body := request(t, s, http.MethodPost, cms, alice, configMapJSON("late")); resp.StatusCode != 201 {
		t.Fatalf("a write after the timeout: %d %s", resp.StatusCode, body)
	}
	select {
	case ev, ok := <-events:
		if !ok || !strings.Contains(ev, `"type":"ADDED"`) || !strings.Contains(ev, `"name":"late"`) {
			t.Fatalf("watch event %q (open %v)", ev, ok)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch received nothing")
	}
	if time.Since(began) < 4*time.Second {
		t.Fatal("the watch was not tested past the request timeout")
	}
	_, metrics := request(t, s, http.MethodGet, "/metrics", s.AdminToken, "")
	for _, want := range []string{
		`apiserver_request_terminations_total{code="429",component="apiserver",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 1`,
		`apiserver_request_terminations_total{code="504",component="apiserver",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} 1`,
		`# HELP apiserver_current_inflight_requests [STABLE]`,
		`apiserver_dropped_requests_total{request_kind="mutating"} 1`,
		`apiserver_dropped_requests_total{request_kind="readOnly"} 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("no %s in\n%s", want, grepLines(metrics, "apiserver_request_terminations_total", "apiserver_current_inflight_requests", "apiserver_dropped_requests_total"))
		}
	}
}

func grepLines(text string, prefixes ...string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		for _, p := range prefixes {
			if strings.Contains(l, p) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// ?timeout shortens the request timeout; a malformed one is a 400 before
// authentication, as in kube.
func TestProtection_TimeoutParameter(t *testing.T) {
	stalled := stalledRequest(t, srv, http.MethodPost, "/api/v1/namespaces/default/configmaps?timeout=500ms", srv.AdminToken, configMapJSON("x"))
	a := <-stalled
	if a.err != nil || a.code != 504 || a.body != kubeTimeoutStatus || !a.closed || a.after > 5*time.Second {
		t.Fatalf("stalled write with ?timeout=500ms: %+v", a)
	}
	resp, body := raw(t, "GET", "/api/v1/namespaces?timeout=abc", "not-a-token", "", "")
	if resp.StatusCode != 400 || !strings.Contains(body, `"message":"invalid timeout specified in the request URL - time: invalid duration \"abc\""`) {
		t.Fatalf("malformed timeout: %d %s", resp.StatusCode, body)
	}
}

func TestProtection_HTTPServerSettingsAreKubes(t *testing.T) {
	h := apiserver.HTTPServer(srv.Server)
	if h.IdleTimeout != 90*time.Second || h.ReadHeaderTimeout != 32*time.Second || h.MaxHeaderBytes != 1<<20 {
		t.Fatalf("idle %s, read header %s, max header bytes %d", h.IdleTimeout, h.ReadHeaderTimeout, h.MaxHeaderBytes)
	}
}

// An idle keep-alive connection is closed after the idle timeout.
func TestProtection_IdleConnectionsAreClosed(t *testing.T) {
	s := apiservertest.Start(t, func(o *apiserver.Options) { apiserver.SetIdleTimeout(o, 300*time.Millisecond) })
	c, err := tls.Dial("tcp", strings.TrimPrefix(s.URL, "https://"), &tls.Config{RootCAs: tlsConfigFor(t, s.CAData).RootCAs, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	br := bufio.NewReader(c)
	for i := 0; i < 2; i++ {
		fmt.Fprintf(c, "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(data) != "ok" || resp.Close {
			t.Fatalf("request %d on a kept-alive connection: %d %q close=%v", i, resp.StatusCode, data, resp.Close)
		}
	}
	idle := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection: %v", err)
	}
	if took := time.Since(idle); took < 250*time.Millisecond || took > 5*time.Second {
		t.Fatalf("the idle connection was closed after %s", took)
	}
}

// panicStrategy panics when an object is validated.
type panicStrategy struct{ generic.SpecStatusStrategy }

func (panicStrategy) Validate(runtime.Object) validationfield.ErrorList { panic("validation exploded") }

// A panic in a handler is kube's 500 and a log line; the server goes on.
func TestProtection_PanicIsA500(t *testing.T) {
	var mu sync.Mutex
	var logged []string
	s := apiservertest.Start(t, func(o *apiserver.Options) {
		o.Logger = funcr.New(func(prefix, args string) {
			mu.Lock()
			defer mu.Unlock()
			logged = append(logged, args)
		}, funcr.Options{})
	})
	res := widgetResource()
	res.Strategy = panicStrategy{}
	if err := s.InstallResource(res); err != nil {
		t.Fatal(err)
	}
	path := "/apis/example.com/v1/namespaces/default/widgets"
	resp, body := request(t, s, http.MethodPost, path, s.AdminToken, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`)
	if resp.StatusCode != 500 || body != "This request caused apiserver to panic. Look in the logs for details.\n" {
		t.Fatalf("panic: %d %q", resp.StatusCode, body)
	}
	for _, p := range []string{path, "/readyz"} {
		if resp, body := request(t, s, http.MethodGet, p, s.AdminToken, ""); resp.StatusCode != 200 {
			t.Fatalf("%s after the panic: %d %s", p, resp.StatusCode, body)
		}
	}
	// The log has the panic and the stack where it happened.
	mu.Lock()
	defer mu.Unlock()
	for _, l := range logged {
		if strings.Contains(l, `"msg"="apiserver panicked"`) && strings.Contains(l, `"URI"="`+path+`"`) && strings.Contains(l, "panicStrategy.Validate") && strings.Contains(l, "validation exploded") {
			return
		}
	}
	t.Fatalf("no log line of the panic with its stack in %d lines", len(logged))
}

// Bodies are bounded as kube bounds them: 3 MiB for a write, JSON nested
// at most 10000 deep.
func TestProtection_BodyLimits(t *testing.T) {
	cms := "/api/v1/namespaces/default/configmaps?dryRun=All"
	deep := func(n int) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
	}
	big := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"a":"` + strings.Repeat("x", 3<<20) + `"}}`
	for _, tc := range []struct {
		name, method, path, contentType, body string
		code                                  int
		message                               string
	}{
		{"over 3 MiB", "POST", cms, "application/json", big, 413, `"message":"Request entity too large: limit is 3145728"`},
		{"patch over 3 MiB", "PATCH", "/api/v1/namespaces/default/configmaps/x?dryRun=All", "application/merge-patch+json", big, 413, `"message":"Request entity too large: limit is 3145728"`},
		{"nested 10001 deep", "POST", cms, "application/json", deep(10001), 400,
			`"message":"the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: invalid character '[' exceeded max depth ({\"apiVersion\":\"v1\",\"kind\":\"Con ...)"`},
		{"nested 9990 deep", "POST", cms, "application/json", deep(9990), 201, `"name":"deep"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := raw(t, tc.method, tc.path, srv.AdminToken, tc.contentType, tc.body)
			if resp.StatusCode != tc.code || !strings.Contains(body, tc.message) {
				t.Fatalf("%d %.300s", resp.StatusCode, body)
			}
		})
	}
}

// A watch without timeoutSeconds is not bound by --request-timeout but
// by --min-request-timeout: it ends cleanly after between once and twice
// that, at random, so that the watches of many clients do not all end
// at once. timeoutSeconds, when given, is the bound.
func TestProtection_WatchesLastBetweenMinRequestTimeoutAndTwiceIt(t *testing.T) {
	s := apiservertest.Start(t, func(o *apiserver.Options) {
		o.Serving.MinRequestTimeout = 2
		o.Serving.RequestTimeout = time.Second
	})
	for _, tc := range []struct {
		query    string
		min, max time.Duration
	}{
		{"", 2 * time.Second, 4*time.Second + 500*time.Millisecond},
		{"&timeoutSeconds=1", time.Second, 1500 * time.Millisecond},
	} {
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/api/v1/namespaces/default/configmaps?watch=true"+tc.query, nil)
		req.Header.Set("Authorization", "Bearer "+s.AdminToken)
		begin := time.Now()
		resp, err := s.HTTPClient().Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("watch%s: %v", tc.query, err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took := time.Since(begin)
		if err != nil || took < tc.min || took > tc.max {
			t.Errorf("watch%s ended after %s (%v), want between %s and %s", tc.query, took, err, tc.min, tc.max)
		}
	}
}

// A watch whose timeout is not positive ends as soon as it starts, as in
// kube-apiserver v1.29, which bounds the watch by a context of that
// timeout: one without timeoutSeconds under --min-request-timeout=0, or
// one with a negative timeoutSeconds whatever the minimum. A positive
// timeoutSeconds still bounds it.
func TestProtection_WatchWithATimeoutNotAboveZeroEndsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name     string
		min      int64
		query    string
		from, to time.Duration
	}{
		{"no minimum, no timeoutSeconds", 0, "", 0, time.Second},
		{"no minimum, timeoutSeconds=0", 0, "&timeoutSeconds=0", 0, time.Second},
		{"no minimum, timeoutSeconds=1", 0, "&timeoutSeconds=1", time.Second, 1500 * time.Millisecond},
		{"negative timeoutSeconds", 1800, "&timeoutSeconds=-1", 0, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := apiservertest.Start(t, func(o *apiserver.Options) { o.Serving.MinRequestTimeout = tc.min })
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/api/v1/namespaces/kube-system/configmaps?watch=true"+tc.query, nil)
			req.Header.Set("Authorization", "Bearer "+s.AdminToken)
			begin := time.Now()
			resp, err := s.HTTPClient().Do(req)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("watch%s: %v %v", tc.query, resp, err)
			}
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if took := time.Since(begin); err != nil || took < tc.from || took > tc.to {
				t.Errorf("watch%s ended after %s (%v), want between %s and %s", tc.query, took, err, tc.from, tc.to)
			}
		})
	}
}
