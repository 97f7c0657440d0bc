package nodeserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cronplane/cronplane/pkg/certs"
)

// testNode is a node server over TLS with a memory log source, whose
// apiserver allows nodes/proxy to the user "apiserver" and to the token
// "good-token" (user "bob"), and denies everyone else.
type testNode struct {
	url        string
	srv        *Server
	logs       *MemoryLogs
	reviews    atomic.Int32
	serverCA   *x509.CertPool
	apiserver  tls.Certificate
	stranger   tls.Certificate
	deniedCert tls.Certificate
	// apiserverFiles are the apiserver's certificate and key and the CA.
	apiserverFiles certs.Files
}

func newTestNode(t *testing.T) *testNode { return newTestNodeWith(t, nil) }

// newTestNodeWith is a test node that also serves /exec with exec.
func newTestNodeWith(t *testing.T, exec Executor) *testNode {
	t.Helper()
	dir, other := t.TempDir(), t.TempDir()
	serving := mustCert(t, dir, certs.Spec{Name: "node", CommonName: "node-a", Server: true})
	apiserverFiles := mustCert(t, dir, certs.Spec{Name: "apiserver", CommonName: "apiserver", Organizations: []string{"system:masters"}, Client: true})
	n := &testNode{
		logs:           &MemoryLogs{},
		apiserverFiles: apiserverFiles,
		apiserver:      loadPair(t, apiserverFiles),
		deniedCert:     loadPair(t, mustCert(t, dir, certs.Spec{Name: "alice", CommonName: "alice", Client: true})),
		stranger:       loadPair(t, mustCert(t, other, certs.Spec{Name: "apiserver", CommonName: "apiserver", Client: true})),
	}
	pool, err := LoadCertPool(serving.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	n.serverCA = pool
	client := fake.NewSimpleClientset()
	client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		n.reviews.Add(1)
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		ra := sar.Spec.ResourceAttributes
		sar.Status.Allowed = (sar.Spec.User == "apiserver" || sar.Spec.User == "bob") &&
			ra.Resource == "nodes" && ra.Subresource == "proxy" && ra.Name == "node-a" && (ra.Verb == "get" || ra.Verb == "create")
		return true, sar, nil
	})
	client.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		if tr.Spec.Token == "good-token" {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "bob", Groups: []string{"system:authenticated"}}}
		}
		return true, tr, nil
	})
	s, err := New(Config{NodeName: "node-a", Certificate: loadPair(t, serving), ClientCAs: pool, Client: client, Logs: n.logs, Exec: exec})
	if err != nil {
		t.Fatal(err)
	}
	n.srv = s
	ts := httptest.NewUnstartedServer(s.Handler())
	ts.TLS = s.TLSConfig()
	ts.StartTLS()
	t.Cleanup(ts.Close)
	n.url = ts.URL
	return n
}

func mustCert(t *testing.T, dir string, s certs.Spec) certs.Files {
	t.Helper()
	f, err := certs.EnsureCert(dir, s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func loadPair(t *testing.T, f certs.Files) tls.Certificate {
	t.Helper()
	c, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// get requests path with a client certificate (none if nil) or a token.
func (n *testNode) get(t *testing.T, ctx context.Context, path string, cert *tls.Certificate, token string) *http.Response {
	t.Helper()
	cfg := &tls.Config{RootCAs: n.serverCA, MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestServer_AuthenticatesAndAuthorizesAsTheKubelet(t *testing.T) {
	n := newTestNode(t)
	c := Container{Namespace: "ns", Pod: "p", Name: "c"}
	n.logs.Start(c)
	n.logs.Write(c, "hello\n")
	for _, tc := range []struct {
		name     string
		cert     *tls.Certificate
		token    string
		wantCode int
		wantBody string
	}{
		{"no credentials", nil, "", 401, "Unauthorized\n"},
		{"certificate of another CA", &n.stranger, "", 401, "Unauthorized\n"},
		{"unknown token", nil, "bad-token", 401, "Unauthorized\n"},
		{"apiserver certificate", &n.apiserver, "", 200, "hello\n"},
		{"reviewed token", nil, "good-token", 200, "hello\n"},
		{"user denied nodes/proxy", &n.deniedCert, "", 403, "Forbidden (user=alice, verb=get, resource=nodes, subresource=proxy)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := n.get(t, context.Background(), "/containerLogs/ns/p/c", tc.cert, tc.token)
			if body := readAll(t, resp); resp.StatusCode != tc.wantCode || body != tc.wantBody {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, body, tc.wantCode, tc.wantBody)
			}
		})
	}
}

func TestServer_CachesAccessReviews(t *testing.T) {
	n := newTestNode(t)
	for i := 0; i < 3; i++ {
		readAll(t, n.get(t, context.Background(), "/healthz", &n.apiserver, ""))
		readAll(t, n.get(t, context.Background(), "/healthz", &n.deniedCert, ""))
	}
	if got := n.reviews.Load(); got != 2 {
		t.Errorf("%d SubjectAccessReviews for 2 users, want 2", got)
	}
}

func TestServer_AnswersLogErrorsAsTheKubelet(t *testing.T) {
	n := newTestNode(t)
	c := Container{Namespace: "ns", Pod: "p", Name: "c"}
	n.logs.Start(c)
	for _, tc := range []struct {
		path     string
		wantCode int
		wantBody string
	}{
		{"/containerLogs/ns/other/c", 404, `pod "other" does not exist`},
		{"/containerLogs/ns/p/d", 404, `container "d" not found in pod "p"`},
		{"/containerLogs/ns/p/c?previous=true", 400, `previous terminated container "c" in pod "p" not found`},
		{"/containerLogs/ns/p/", 400, `{"message": "Missing container name."}`},
		{"/containerLogs/ns/p/c?tailLines=x", 400, `{"message": "Unable to decode query."}`},
		{"/containerLogs/ns/p/c?tailLines=-1", 422, `{"message": "Invalid request."}`},
		{"/containerLogs/ns/p/c?limitBytes=0", 422, `{"message": "Invalid request."}`},
		{"/containerLogs/ns/p/c?sinceSeconds=1&sinceTime=2024-01-01T00:00:00Z", 422, `{"message": "Invalid request."}`},
	} {
		resp := n.get(t, context.Background(), tc.path, &n.apiserver, "")
		if body := readAll(t, resp); resp.StatusCode != tc.wantCode || body != tc.wantBody {
			t.Errorf("%s: got %d %q, want %d %q", tc.path, resp.StatusCode, body, tc.wantCode, tc.wantBody)
		}
	}
}

func TestServer_AppliesLogOptions(t *testing.T) {
	n := newTestNode(t)
	c := Container{Namespace: "ns", Pod: "p", Name: "c"}
	base := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	at := base
	n.logs.Now = func() time.Time { return at }
	n.logs.Start(c)
	n.logs.Write(c, "old\n")
	n.logs.Start(c)
	for i, line := range []string{"one\n", "two\n", "three\n", "four"} {
		at = base.Add(time.Duration(i+1) * time.Minute)
		n.logs.Write(c, line)
	}
	stamp := func(min int) string {
		return base.Add(time.Duration(min) * time.Minute).Format("2006-01-02T15:04:05.000000000Z")
	}
	since := base.Add(150 * time.Second).Format(time.RFC3339)
	for _, tc := range []struct {
		query string
		want  string
	}{
		{"", "one\ntwo\nthree\nfour"},
		{"?previous=true", "old\n"},
		{"?tailLines=2", "three\nfour"},
		{"?tail=1", "four"},
		{"?tail=all", "one\ntwo\nthree\nfour"},
		{"?tailLines=0", ""},
		{"?tailLines=10", "one\ntwo\nthree\nfour"},
		{"?timestamps=true&tailLines=1", stamp(4) + " four"},
		{"?timestamps=1&limitBytes=40", stamp(1) + " one\n" + stamp(2)[:5]},
		{"?limitBytes=6", "one\ntw"},
		{"?sinceTime=" + since, "three\nfour"},
		{"?sinceSeconds=3500", "two\nthree\nfour"},
		{"?sinceSeconds=10", ""},
		{"?tailLines=3&sinceTime=" + since, "three\nfour"},
	} {
		resp := n.get(t, context.Background(), "/containerLogs/ns/p/c"+tc.query, &n.apiserver, "")
		if body := readAll(t, resp); resp.StatusCode != 200 || body != tc.want {
			t.Errorf("%q: got %d %q, want %q", tc.query, resp.StatusCode, body, tc.want)
		}
	}
}

func TestServer_FollowStreamsLinesAsTheyAreWritten(t *testing.T) {
	for _, query := range []string{"?follow=true", "?follow=true&tailLines=1"} {
		t.Run(query, func(t *testing.T) {
			n := newTestNode(t)
			c := Container{Namespace: "ns", Pod: "p", Name: "c"}
			n.logs.Start(c)
			n.logs.Write(c, "zero\nfirst\n")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp := n.get(t, ctx, "/containerLogs/ns/p/c"+query, &n.apiserver, "")
			defer resp.Body.Close()
			buf := make([]byte, 64)
			readLine := func() string {
				k, err := resp.Body.Read(buf)
				if err != nil {
					t.Fatalf("reading: %v", err)
				}
				return string(buf[:k])
			}
			var got strings.Builder
			for !strings.HasSuffix(got.String(), "first\n") {
				got.WriteString(readLine())
			}
			n.logs.Write(c, "second\n")
			if line := readLine(); line != "second\n" {
				t.Fatalf("got %q after a write, want the new line", line)
			}
			n.logs.Stop(c)
			rest, err := io.ReadAll(resp.Body)
			if err != nil || len(rest) != 0 {
				t.Fatalf("after the container stopped: %q, %v; want the end of the stream", rest, err)
			}
			want := "zero\nfirst\n"
			if strings.Contains(query, "tailLines=1") {
				want = "first\n"
			}
			if got.String() != want {
				t.Errorf("got %q before the write, want %q", got.String(), want)
			}
		})
	}
}

func TestServer_FollowEndsWhenTheClientGoes(t *testing.T) {
	n := newTestNode(t)
	closed := make(chan struct{})
	n.srv.cfg.Logs = closeNotifier{n.logs, closed}
	c := Container{Namespace: "ns", Pod: "p", Name: "c"}
	n.logs.Start(c)
	ctx, cancel := context.WithCancel(context.Background())
	resp := n.get(t, ctx, "/containerLogs/ns/p/c?follow=true", &n.apiserver, "")
	defer resp.Body.Close()
	cancel()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the log was still read 10s after the client went")
	}
}

// closeNotifier is a LogSource whose readers say when they are closed.
type closeNotifier struct {
	LogSource
	closed chan struct{}
}

func (s closeNotifier) OpenLog(ctx context.Context, c Container, previous, follow bool) (LogReader, error) {
	rd, err := s.LogSource.OpenLog(ctx, c, previous, follow)
	if err != nil {
		return nil, err
	}
	return notifyingReader{rd, s.closed}, nil
}

type notifyingReader struct {
	LogReader
	closed chan struct{}
}

func (r notifyingReader) Close() error {
	close(r.closed)
	return r.LogReader.Close()
}

func TestDecodeLogOptions_ReadsAsKubesParameterCodec(t *testing.T) {
	for _, tc := range []struct {
		query   string
		wantErr string
	}{
		{"tailLines=abc", `strconv.ParseInt: parsing "abc": invalid syntax`},
		{"sinceTime=yesterday", `parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"`},
		{"follow=&timestamps=0&previous=FALSE&container=c&limitBytes=3", ""},
	} {
		q, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		opts, err := DecodeLogOptions(q)
		switch {
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
			t.Errorf("%s: got %v, want %s", tc.query, err, tc.wantErr)
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.query, err)
		case tc.wantErr == "" && (!opts.Follow || opts.Timestamps || opts.Previous || opts.Container != "c" || *opts.LimitBytes != 3):
			t.Errorf("%s: got %+v", tc.query, opts)
		}
	}
}

func TestValidateLogOptions_RefusesAsKube(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	now := metav1.Now()
	for _, tc := range []struct {
		opts corev1.PodLogOptions
		want string
	}{
		{corev1.PodLogOptions{TailLines: n(-1)}, "tailLines: Invalid value: -1: must be greater than or equal to 0"},
		{corev1.PodLogOptions{LimitBytes: n(0)}, "limitBytes: Invalid value: 0: must be greater than 0"},
		{corev1.PodLogOptions{SinceSeconds: n(0)}, "sinceSeconds: Invalid value: 0: must be greater than 0"},
		{corev1.PodLogOptions{SinceSeconds: n(5), SinceTime: &now}, "[]: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"},
		{corev1.PodLogOptions{TailLines: n(0), LimitBytes: n(1), SinceSeconds: n(1)}, ""},
	} {
		got := ValidateLogOptions(&tc.opts).ToAggregate()
		if (got == nil) != (tc.want == "") || (got != nil && got.Error() != tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.opts, got, tc.want)
		}
	}
}
