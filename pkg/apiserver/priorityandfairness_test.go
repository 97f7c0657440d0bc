package apiserver_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
	"github.com/cronplane/cronplane/pkg/certs"
)

type answer struct {
	code                 int
	retryAfter, body     string
	flowSchema, priority string
}

// slowWriter sends dry-run creates whose body's second half comes after
// a delay, so that each request holds its seat up to that long; each
// asks for a 1 s timeout, so it waits in queue 250 ms at most. A request
// answered before its body is all sent (rejected) leaves its connection
// unusable: the next one dials anew.
type slowWriter struct {
	cfg *tls.Config
	url string
	c   *tls.Conn
	br  *bufio.Reader
}

func (w *slowWriter) write(token string, delay time.Duration) (answer, error) {
	if w.c == nil {
		c, err := tls.Dial("tcp", strings.TrimPrefix(w.url, "https://"), w.cfg)
		if err != nil {
			return answer{}, err
		}
		w.c, w.br = c, bufio.NewReader(c)
	}
	body := configMapJSON("flood")
	half := len(body) / 2
	_ = w.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(w.c, "POST /api/v1/namespaces/default/configmaps?dryRun=All&timeout=1s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		token, len(body), body[:half]); err != nil {
		return answer{}, err
	}
	// The delay is spent waiting for an early answer.
	_ = w.c.SetReadDeadline(time.Now().Add(delay))
	resp, err := http.ReadResponse(w.br, nil)
	if err == nil {
		defer w.close()
	} else {
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return answer{}, err
		}
		_ = w.c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(w.c, body[half:]); err != nil {
			return answer{}, err
		}
		if resp, err = http.ReadResponse(w.br, nil); err != nil {
			return answer{}, err
		}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return answer{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: string(data),
		flowSchema: resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID"), priority: resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID")}, nil
}

func (w *slowWriter) close() {
	if w.c != nil {
		_ = w.c.Close()
		w.c = nil
	}
}

// With a total concurrency of 2 (global-default gets 1 seat and may
// borrow the 3 others lend): alice floods with 30 writes at once, each
// holding its seat up to 500 ms and waiting in queue a quarter of its
// 1 s timeout at most, and gets kube's 429s once her queues wait too
// long; bob's reads (8 s request timeout: 2 s in queue at most)
// pass before her queued ones and are all served, and so are
// system:masters', in the exempt level.
func TestPriorityAndFairness_FloodOfOneUserDoesNotStarveAnother(t *testing.T) {
	s := apiservertest.Start(t, func(o *apiserver.Options) {
		o.Serving.MaxRequestsInFlight = 1
		o.Serving.MaxMutatingRequestsInFlight = 1
		o.Serving.RequestTimeout = 8 * time.Second
		o.AuthorizationModes = []string{apiserver.ModeAlwaysAllow}
		o.TokenAuthFile = tokenFile(t, "alice", "bob")
	})
	cfg := tlsConfigFor(t, s.CAData)
	cfg.NextProtos = []string{"http/1.1"}
	stop := make(chan struct{})
	var mu sync.Mutex
	codes := map[int]int{}
	var rejected, served answer
	var wg sync.WaitGroup
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &slowWriter{cfg: cfg, url: s.URL}
			defer w.close()
			for n := 0; n < 100; n++ {
				select {
				case <-stop:
					return
				default:
				}
				a, err := w.write("alice-token", 500*time.Millisecond)
				if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
					// A request timed out before its body was all read
					// (a loaded machine) has its connection closed after
					// the 504; the rest of the body, still coming, makes
					// the close a reset that can overtake the answer.
					// Counted as code 0; the flood dials anew.
					w.close()
					mu.Lock()
					codes[0]++
					mu.Unlock()
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				codes[a.code]++
				if a.code == 429 {
					rejected = a
				} else {
					served = a
				}
				mu.Unlock()
			}
		}()
	}
	// Bob and the admin ask while the flood runs.
	time.Sleep(1500 * time.Millisecond)
	var bobTimes []time.Duration
	for i := 0; i < 15; i++ {
		began := time.Now()
		resp, body := request(t, s, http.MethodGet, "/api/v1/namespaces/default", "bob-token", "")
		if resp.StatusCode != 200 {
			t.Errorf("bob's read %d: %d %s", i, resp.StatusCode, body)
		}
		bobTimes = append(bobTimes, time.Since(began))
		if resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID") == "" || resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID") == "" {
			t.Errorf("bob's read has no priority and fairness headers: %v", resp.Header)
		}
		admin, body := request(t, s, http.MethodGet, "/api/v1/namespaces/default", s.AdminToken, "")
		if admin.StatusCode != 200 {
			t.Errorf("admin's read %d: %d %s", i, admin.StatusCode, body)
		}
		if pl := admin.Header.Get("X-Kubernetes-PF-PriorityLevel-UID"); pl == "" || pl == resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID") {
			t.Errorf("admin's priority level %q, want exempt, not bob's", pl)
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	t.Logf("alice: %v; bob's reads took %v", codes, bobTimes)
	if codes[429] == 0 || codes[201] == 0 {
		t.Fatalf("alice's answers %v, want some served and some rejected", codes)
	}
	if rejected.retryAfter != "1" || rejected.body != "Too many requests, please try again later.\n" || rejected.flowSchema == "" || rejected.flowSchema != served.flowSchema {
		t.Errorf("alice's rejection %+v (served %+v)", rejected, served)
	}
	_, metrics := request(t, s, http.MethodGet, "/metrics", s.AdminToken, "")
	for _, want := range []string{
		`apiserver_flowcontrol_rejected_requests_total{flow_schema="global-default",priority_level="global-default",reason="time-out"}`,
		`apiserver_flowcontrol_dispatched_requests_total{flow_schema="exempt",priority_level="exempt"}`,
		`apiserver_flowcontrol_nominal_limit_seats{priority_level="global-default"} 1`,
		`apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="global-default",priority_level="global-default",le="0"}`,
		`apiserver_flowcontrol_request_execution_seconds_count{flow_schema="global-default",priority_level="global-default",type="regular"}`,
		`apiserver_dropped_requests_total{request_kind="mutating"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("no %s in\n%s", want, grepLines(metrics, "apiserver_flowcontrol_rejected", "apiserver_flowcontrol_dispatched", "apiserver_flowcontrol_nominal"))
		}
	}
	_, dump := request(t, s, http.MethodGet, "/debug/api_priority_and_fairness/dump_priority_levels", s.AdminToken, "")
	if !strings.HasPrefix(dump, "PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing,") || !strings.Contains(dump, "\nglobal-default, ") {
		t.Errorf("dump_priority_levels:\n%s", dump)
	}
}

// Without the flag, kube's in-flight limits apply as such: no priority
// and fairness headers, no dumps.
func TestPriorityAndFairness_OffLeavesTheInFlightLimits(t *testing.T) {
	s := apiservertest.Start(t, func(o *apiserver.Options) { o.Serving.EnablePriorityAndFairness = false })
	resp, _ := request(t, s, http.MethodGet, "/api/v1/namespaces/default", s.AdminToken, "")
	if resp.StatusCode != 200 || resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID") != "" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := request(t, s, http.MethodGet, "/debug/api_priority_and_fairness/dump_queues", s.AdminToken, ""); resp.StatusCode != 404 {
		t.Fatalf("dump_queues without priority and fairness: %d", resp.StatusCode)
	}
}

// The compose cluster's components, with the client certificates
// hack/pki gives them, land in kube's flow schemas and priority levels:
// the controller-manager in leader-election for its Lease and in
// workload-high otherwise, a node agent in node-high for its Node and
// Lease and in system otherwise.
func TestPriorityAndFairness_ComponentIdentitiesLandInKubesLevels(t *testing.T) {
	s := apiservertest.Start(t)
	certDir := filepath.Join(s.DataDir(), "certs")
	clientAs := func(name, commonName string, groups ...string) *http.Client {
		files, err := certs.EnsureClient(certDir, name, commonName, groups)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.LoadX509KeyPair(files.CertFile, files.KeyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg := tlsConfigFor(t, s.CAData)
		cfg.Certificates = []tls.Certificate{cert}
		return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
	}
	controllerManager := clientAs("controller-manager-0", "system:kube-controller-manager")
	node := clientAs("node-0", "system:node:node-0", "system:nodes")

	ctx := context.Background()
	names := map[string]string{}
	fss, err := s.Client.FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fs := range fss.Items {
		names[string(fs.UID)] = fs.Name
	}
	pls, err := s.Client.FlowcontrolV1().PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range pls.Items {
		names[string(pl.UID)] = pl.Name
	}

	for _, tc := range []struct {
		who                string
		client             *http.Client
		method, path, body string
		flowSchema, level  string
	}{
		{"controller-manager", controllerManager, http.MethodPost, "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
			`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"kube-controller-manager"},"spec":{"holderIdentity":"controller-manager-0"}}`,
			"system-leader-election", "leader-election"},
		{"controller-manager", controllerManager, http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager", "",
			"system-leader-election", "leader-election"},
		{"controller-manager", controllerManager, http.MethodGet, "/apis/batch/v1/cronjobs", "", "kube-controller-manager", "workload-high"},
		{"controller-manager", controllerManager, http.MethodGet, "/api/v1/namespaces/default/endpoints/kubernetes", "", "endpoint-controller", "workload-high"},
		{"node agent", node, http.MethodGet, "/api/v1/nodes/node-0", "", "system-node-high", "node-high"},
		{"node agent", node, http.MethodGet, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-0", "", "system-node-high", "node-high"},
		{"node agent", node, http.MethodGet, "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-0", "", "system-nodes", "system"},
	} {
		t.Run(tc.who+" "+tc.method+" "+tc.path, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, s.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := tc.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			// A request the identity is not allowed is classified all the
			// same; a 401 would mean the certificate was not taken.
			if resp.StatusCode == http.StatusUnauthorized {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			fs := names[resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID")]
			pl := names[resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID")]
			if fs != tc.flowSchema || pl != tc.level {
				t.Errorf("flow schema %q, priority level %q (answer %d); want %q, %q", fs, pl, resp.StatusCode, tc.flowSchema, tc.level)
			}
		})
	}
}
