package apiserver_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	batchv1beta1 "k8s.io/api/batch/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
	"github.com/cronplane/cronplane/pkg/audit"
	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// scrape reads /metrics as token and parses it as Prometheus does.
func scrape(t *testing.T, token string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, body := raw(t, "GET", "/metrics", token, "", "")
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, body)
	}
	families, err := new(expfmt.TextParser).TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return families
}

// find returns the value of the sample of family name whose labels
// include want, or -1.
func find(families map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f, ok := families[name]
	if !ok {
		return -1
	}
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

func TestMetrics_RequestsStorageAndWatchesUnderKubesNames(t *testing.T) {
	ns := namespace(t)
	_, err := srv.Client.BatchV1().CronJobs(ns).Create(ctx(t), cronJob("metered"), metav1.CreateOptions{})
	mustCreate(t, err)
	if _, err := srv.Client.BatchV1().CronJobs(ns).List(ctx(t), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := srv.Client.BatchV1().CronJobs(ns).Watch(ctx(t), metav1.ListOptions{})
	mustCreate(t, err)
	defer w.Stop()
	<-w.ResultChan()

	families := scrape(t, srv.AdminToken)
	checks := []struct {
		name   string
		labels map[string]string
	}{
		{"apiserver_request_total", map[string]string{"verb": "POST", "group": "batch", "version": "v1", "resource": "cronjobs", "scope": "resource", "component": "apiserver", "code": "201"}},
		{"apiserver_request_total", map[string]string{"verb": "LIST", "resource": "cronjobs", "scope": "namespace", "code": "200"}},
		{"apiserver_request_duration_seconds", map[string]string{"verb": "LIST", "resource": "cronjobs"}},
		{"apiserver_response_sizes", map[string]string{"verb": "LIST", "resource": "cronjobs"}},
		{"apiserver_longrunning_requests", map[string]string{"verb": "WATCH", "resource": "cronjobs", "scope": "namespace"}},
		{"apiserver_registered_watchers", map[string]string{"group": "batch", "version": "v1", "kind": "CronJob"}},
		{"apiserver_watch_events_total", map[string]string{"kind": "CronJob"}},
		{"apiserver_watch_events_sizes", map[string]string{"kind": "CronJob"}},
		{"etcd_request_duration_seconds", map[string]string{"operation": "create", "type": "cronjobs.batch"}},
		{"apiserver_storage_objects", map[string]string{"resource": "cronjobs.batch"}},
		{"apiserver_watch_cache_events_dispatched_total", map[string]string{"resource": "cronjobs.batch"}},
		{"watch_cache_capacity", map[string]string{"resource": "cronjobs.batch"}},
		{"go_goroutines", nil},
		{"process_resident_memory_bytes", nil},
	}
	for _, c := range checks {
		if v := find(families, c.name, c.labels); v < 1 {
			t.Errorf("%s%v = %v, want at least 1", c.name, c.labels, v)
		}
	}
	for name, stability := range map[string]string{"apiserver_request_total": "[STABLE]", "apiserver_storage_objects": "[STABLE]", "apiserver_registered_watchers": "[ALPHA]"} {
		if f := families[name]; f == nil || !strings.HasPrefix(f.GetHelp(), stability) {
			t.Errorf("%s HELP %q, want it to start %s", name, f.GetHelp(), stability)
		}
	}
	// Requests refused before they are routed (authentication,
	// impersonation, authorization) are not counted, as kube records
	// its request metrics once a request is routed; a 404 is.
	// The server is shared: compare the counts before and after.
	series := map[string]map[string]string{
		"401": {"verb": "LIST", "resource": "cronjobs", "scope": "namespace", "code": "401"},
		"403": {"verb": "LIST", "resource": "cronjobs", "scope": "namespace", "code": "403"},
		"404": {"verb": "GET", "resource": "cronjobs", "scope": "resource", "code": "404"},
	}
	before := scrape(t, srv.AdminToken)
	raw(t, "GET", "/apis/batch/v1/namespaces/"+ns+"/cronjobs", "alice-token", "", "")
	raw(t, "GET", "/apis/batch/v1/namespaces/"+ns+"/cronjobs", "not-a-token", "", "")
	rawWithHeaders(t, "GET", "/apis/batch/v1/namespaces/"+ns+"/cronjobs", "alice-token", map[string]string{"Impersonate-User": "bob"})
	raw(t, "GET", "/apis/batch/v1/namespaces/"+ns+"/cronjobs/missing", srv.AdminToken, "", "")
	after := scrape(t, srv.AdminToken)
	for code, want := range map[string]float64{"401": 0, "403": 0, "404": 1} {
		b := math.Max(find(before, "apiserver_request_total", series[code]), 0)
		if got := math.Max(find(after, "apiserver_request_total", series[code]), 0) - b; got != want {
			t.Errorf("%s counted %v times, want %v", code, got, want)
		}
	}
	if out, err := kubectlAs(t, "", "get", "--raw", "/metrics"); err != nil || !strings.Contains(out, "apiserver_request_total{") {
		t.Errorf("kubectl get --raw /metrics: %v", err)
	}
}

// As kube's: a watch's latency is recorded when it ends (its whole
// length), and response sizes only for reads (GET, LIST, WATCH).
func TestMetrics_WatchLatencyAndReadSizesAsKube(t *testing.T) {
	ns := namespace(t)
	_, err := srv.Client.BatchV1().CronJobs(ns).Create(ctx(t), cronJob("sized"), metav1.CreateOptions{})
	mustCreate(t, err)
	w, err := srv.Client.BatchV1().CronJobs(ns).Watch(ctx(t), metav1.ListOptions{TimeoutSeconds: ptr(int64(1))})
	mustCreate(t, err)
	for range w.ResultChan() {
	}
	// The server counts the watch once its handler returns, after the
	// client saw the stream end.
	watch := map[string]string{"verb": "WATCH", "resource": "cronjobs", "scope": "namespace"}
	var families map[string]*dto.MetricFamily
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		families = scrape(t, srv.AdminToken)
		if find(families, "apiserver_request_total", watch) >= 1 || time.Now().After(deadline) {
			break
		}
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"apiserver_request_duration_seconds", watch, true},
		{"apiserver_response_sizes", watch, true},
		{"apiserver_response_sizes", map[string]string{"verb": "POST"}, false},
		{"apiserver_request_duration_seconds", map[string]string{"verb": "POST", "resource": "cronjobs"}, true},
	} {
		if got := find(families, c.name, c.labels) >= 1; got != c.want {
			t.Errorf("%s%v recorded: %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

func TestMetrics_ReadableByMonitoringAndMastersOnly(t *testing.T) {
	for token, code := range map[string]int{"alice-token": 403, "monitor-token": 200, srv.AdminToken: 200, "": 403} {
		if resp, body := raw(t, "GET", "/metrics", token, "", ""); resp.StatusCode != code {
			t.Errorf("/metrics with %q: %d, want %d: %.200s", token, resp.StatusCode, code, body)
		}
	}
}

func TestDeprecatedVersion_WarnsIsCountedAndAudited(t *testing.T) {
	dir := t.TempDir()
	policy, logPath := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := apiservertest.Start(t, func(o *apiserver.Options) {
		o.Audit = audit.Options{PolicyFile: policy, LogPath: logPath}
	})
	gvk := batchv1beta1.SchemeGroupVersion.WithKind("CronJob")
	newFunc := func() runtime.Object { return &batchv1beta1.CronJob{} }
	if err := s.InstallResource(&generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: gvk, Plural: "cronjobs", Singular: "cronjob", Namespaced: true,
			New: newFunc, NewList: func() runtime.Object { return &batchv1beta1.CronJobList{} },
			Deprecated: &rest.Deprecation{Since: "1.21", RemovedIn: "1.25", Replacement: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "CronJob"}},
		},
		// Apart from batch/v1's, which a real server would convert.
		StorageResource: "test-v1beta1-cronjobs",
		Codec:           codec.Protobuf(gvk, newFunc),
		Strategy:        generic.DefaultStrategy{},
	}); err != nil {
		t.Fatal(err)
	}
	out, err := kubectlOn(t, s, "get", "cronjobs.v1beta1.batch", "-A")
	want := "Warning: batch/v1beta1 CronJob is deprecated in v1.21+, unavailable in v1.25+; use batch/v1 CronJob"
	if err != nil || !strings.Contains(out, want) {
		t.Fatalf("kubectl get of the deprecated version: %v\n%s\nwant %q", err, out, want)
	}
	if out, _ := kubectlOn(t, s, "get", "cronjobs.v1.batch", "-A"); strings.Contains(out, "Warning") {
		t.Fatalf("batch/v1 warned: %s", out)
	}
	resp, body := rawOn(t, s, "GET", "/metrics")
	if resp != 200 || !strings.Contains(body, `apiserver_requested_deprecated_apis{group="batch",removed_release="1.25",resource="cronjobs",subresource="",version="v1beta1"} 1`) {
		t.Fatalf("deprecated API metric missing: %d", resp)
	}
	ev := auditLines(t, logPath, `"stage":"ResponseComplete".*"requestURI":"/apis/batch/v1beta1/cronjobs`)[0]
	if a := field(ev, "annotations", audit.DeprecatedAnnotation); a != "true" {
		t.Errorf("audit annotation %s = %v, want true", audit.DeprecatedAnnotation, a)
	}
	if a := field(ev, "annotations", audit.RemovedReleaseAnnotation); a != "1.25" {
		t.Errorf("audit annotation %s = %v, want 1.25", audit.RemovedReleaseAnnotation, a)
	}
}

// kubectlOn runs kubectl as the admin of s.
func kubectlOn(t *testing.T, s *apiservertest.Server, args ...string) (string, error) {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(c, path, append([]string{"--kubeconfig", s.KubeconfigPath}, args...)...).CombinedOutput()
	return string(out), err
}

// rawOn sends a bodiless request to s as its admin.
func rawOn(t *testing.T, s *apiservertest.Server, method, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.AdminToken)
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// requestSeries are the labels of every series of the request metrics in
// families, one string per series.
func requestSeries(families map[string]*dto.MetricFamily) map[string]bool {
	out := map[string]bool{}
	for _, name := range []string{"apiserver_request_total", "apiserver_request_duration_seconds", "apiserver_response_sizes", "apiserver_longrunning_requests"} {
		f := families[name]
		if f == nil {
			continue
		}
		for _, m := range f.Metric {
			var b strings.Builder
			b.WriteString(name)
			for _, l := range m.Label {
				b.WriteString(" " + l.GetName() + "=" + l.GetValue())
			}
			out[b.String()] = true
		}
	}
	return out
}

// As kube's, the request metrics record the requests to served
// resources and to the health endpoints only, under bounded labels:
// 2,000 requests for made-up paths, groups, versions, resources,
// subresources, methods and dryRun values add no series.
func TestMetrics_MadeUpRequestsAddNoSeries(t *testing.T) {
	s := apiservertest.Start(t)
	send := func(method, path string) int {
		req, err := http.NewRequest(method, s.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+s.AdminToken)
		resp, err := s.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	scrapeOn := func() (map[string]*dto.MetricFamily, int) {
		code, body := rawOn(t, s, "GET", "/metrics")
		if code != 200 {
			t.Fatalf("/metrics: %d", code)
		}
		families, err := new(expfmt.TextParser).TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return families, len(body)
	}
	flood := []func(i int) (method, path string){
		func(i int) (string, string) { return "GET", fmt.Sprintf("/apis/junk%d.example.org/v1/foos", i) },
		func(i int) (string, string) { return "GET", fmt.Sprintf("/apis/batch/v%dzz/jobs", i) },
		func(i int) (string, string) { return "GET", fmt.Sprintf("/api/v%dzz/namespaces/default/configmaps", i) },
		func(i int) (string, string) { return "GET", fmt.Sprintf("/api/v1/junk%d", i) },
		func(i int) (string, string) {
			return "GET", fmt.Sprintf("/api/v1/namespaces/default/configmaps/c/junk%d", i)
		},
		func(i int) (string, string) { return "GET", fmt.Sprintf("/apis/junk%d", i) },
		func(i int) (string, string) { return "GET", fmt.Sprintf("/apis/batch/v%dzz", i) },
		func(i int) (string, string) { return "GET", fmt.Sprintf("/openapi/v3/apis/junk%d/v1", i) },
		func(i int) (string, string) { return "GET", fmt.Sprintf("/openapi/junk%d", i) },
		func(i int) (string, string) { return "GET", fmt.Sprintf("/junk%d", i) },
		func(i int) (string, string) { return "GET", fmt.Sprintf("/healthz/junk%d", i) },
		func(i int) (string, string) { return fmt.Sprintf("JUNK%d", i), "/healthz" },
		func(i int) (string, string) { return fmt.Sprintf("JUNK%d", i), "/api/v1/namespaces" },
		func(i int) (string, string) {
			return "POST", fmt.Sprintf("/api/v1/namespaces/default/configmaps?dryRun=Junk%d", i)
		},
	}
	// One round first: the bounded series (a 404 of the health endpoint's
	// checks aside) that these requests may add once.
	for _, f := range flood {
		send(f(-1))
	}
	before, beforeSize := scrapeOn()
	for i := 0; i < 2000; i++ {
		send(flood[i%len(flood)](i))
	}
	after, afterSize := scrapeOn()
	t.Logf("/metrics: %d bytes before 2,000 made-up requests, %d after", beforeSize, afterSize)
	b, a := requestSeries(before), requestSeries(after)
	t.Logf("request metric series: %d before, %d after", len(b), len(a))
	for k := range a {
		if !b[k] {
			t.Errorf("new series %s", k)
		}
	}

	// What kube records: the health endpoints (HEAD as GET, methods it
	// does not know as other), requests to served resources (a 404 too),
	// dryRun values it does not know as invalid; not /version.
	send("HEAD", "/livez")
	send("GET", "/version")
	send("GET", "/api/v1/namespaces/default/configmaps/missing")
	send("POST", "/api/v1/namespaces/default/configmaps?dryRun=All&dryRun=All")
	families, _ := scrapeOn()
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{"verb": "GET", "subresource": "/livez", "component": "", "code": "200"}, true},
		{map[string]string{"verb": "other", "subresource": "/healthz", "code": "200"}, true},
		{map[string]string{"verb": "GET", "resource": "configmaps", "scope": "resource", "component": "apiserver", "code": "404"}, true},
		{map[string]string{"verb": "POST", "resource": "configmaps", "dry_run": "invalid"}, true},
		{map[string]string{"verb": "POST", "resource": "configmaps", "dry_run": "All"}, true},
		{map[string]string{"subresource": "/version"}, false},
		{map[string]string{"subresource": "/metrics"}, false},
	} {
		if got := find(families, "apiserver_request_total", tc.labels) >= 1; got != tc.want {
			t.Errorf("apiserver_request_total%v recorded: %v, want %v", tc.labels, got, tc.want)
		}
	}
}
