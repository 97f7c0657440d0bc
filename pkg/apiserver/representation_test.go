package apiserver_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
)

var magic = []byte{0x6b, 0x38, 0x73, 0x00}

func get(t *testing.T, path string, headers map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+srv.AdminToken)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	client := srv.HTTPClient()
	client.Transport.(*http.Transport).DisableCompression = true
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// unknown decodes kube's protobuf envelope.
func unknown(t *testing.T, data []byte) runtime.Unknown {
	t.Helper()
	if !bytes.HasPrefix(data, magic) {
		t.Fatalf("no protobuf magic: %x", data[:min(len(data), 16)])
	}
	var u runtime.Unknown
	if err := u.Unmarshal(data[4:]); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestProtobuf_GetListAndErrorBytes(t *testing.T) {
	ns := namespace(t)
	if _, err := srv.Client.BatchV1().CronJobs(ns).Create(ctx(t), cronJob("pb"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pb := map[string]string{"Accept": "application/vnd.kubernetes.protobuf"}
	resp, body := get(t, "/apis/batch/v1/namespaces/"+ns+"/cronjobs/pb", pb)
	if resp.Header.Get("Content-Type") != "application/vnd.kubernetes.protobuf" {
		t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
	}
	u := unknown(t, body)
	var cj batchv1.CronJob
	if err := cj.Unmarshal(u.Raw); err != nil || u.APIVersion != "batch/v1" || u.Kind != "CronJob" || cj.Name != "pb" || cj.Spec.Schedule != "*/5 * * * *" {
		t.Fatalf("get: %v %s %s %+v", err, u.APIVersion, u.Kind, cj.ObjectMeta)
	}
	for _, q := range []string{"", "?resourceVersion=0", "?limit=1"} {
		_, body = get(t, "/apis/batch/v1/namespaces/"+ns+"/cronjobs"+q, pb)
		u = unknown(t, body)
		var list batchv1.CronJobList
		if err := list.Unmarshal(u.Raw); err != nil || u.Kind != "CronJobList" || len(list.Items) != 1 || list.Items[0].Name != "pb" || list.ResourceVersion == "" {
			t.Fatalf("list%s: %v %s %+v", q, err, u.Kind, list.ListMeta)
		}
	}
	_, body = get(t, "/apis/batch/v1/namespaces/"+ns+"/cronjobs/missing", pb)
	u = unknown(t, body)
	var status metav1.Status
	if err := status.Unmarshal(u.Raw); err != nil || u.Kind != "Status" || status.Code != 404 || status.Reason != metav1.StatusReasonNotFound {
		t.Fatalf("error: %v %+v", err, status)
	}
}

func TestProtobuf_ClientGoCreateGetListWatch(t *testing.T) {
	ns := namespace(t)
	cfg := rest.CopyConfig(srv.Config)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cj := client.BatchV1().CronJobs(ns)
	w, err := cj.Watch(ctx(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	created, err := cj.Create(ctx(t), cronJob("proto"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.ConcurrencyPolicy != batchv1.AllowConcurrent {
		t.Fatalf("created %+v", created.Spec)
	}
	got, err := cj.Get(ctx(t), "proto", metav1.GetOptions{})
	if err != nil || got.UID != created.UID {
		t.Fatalf("get: %v", err)
	}
	list, err := cj.List(ctx(t), metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v", err)
	}
	e := <-w.ResultChan()
	if e.Type != watch.Added || e.Object.(*batchv1.CronJob).Name != "proto" {
		t.Fatalf("watch: %s %v", e.Type, e.Object)
	}
}

func TestProtobuf_WatchFramesAreLengthPrefixedWatchEvents(t *testing.T) {
	ns := namespace(t)
	if _, err := srv.Client.BatchV1().CronJobs(ns).Create(ctx(t), cronJob("frame"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, body := get(t, "/apis/batch/v1/namespaces/"+ns+"/cronjobs?watch=1&timeoutSeconds=1", map[string]string{"Accept": "application/vnd.kubernetes.protobuf"})
	if ct := resp.Header.Get("Content-Type"); ct != "application/vnd.kubernetes.protobuf;stream=watch" {
		t.Fatalf("content type %q", ct)
	}
	n := binary.BigEndian.Uint32(body[:4])
	var ev metav1.WatchEvent
	if err := ev.Unmarshal(body[4 : 4+n]); err != nil {
		t.Fatal(err)
	}
	u := unknown(t, ev.Object.Raw)
	var cj batchv1.CronJob
	if err := cj.Unmarshal(u.Raw); err != nil || ev.Type != "ADDED" || cj.Name != "frame" {
		t.Fatalf("frame: %v %s %s", err, ev.Type, cj.Name)
	}
}

func TestTable_ColumnsRowsAndIncludeObject(t *testing.T) {
	ns := namespace(t)
	if _, err := srv.Client.BatchV1().CronJobs(ns).Create(ctx(t), cronJob("tab"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		include string
		kind    string
	}{{"", "PartialObjectMetadata"}, {"Metadata", "PartialObjectMetadata"}, {"Object", "CronJob"}, {"None", ""}} {
		t.Run("includeObject="+tc.include, func(t *testing.T) {
			path := "/apis/batch/v1/namespaces/" + ns + "/cronjobs"
			if tc.include != "" {
				path += "?includeObject=" + tc.include
			}
			resp, body := get(t, path, map[string]string{"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"})
			var table metav1.Table
			if err := json.Unmarshal(body, &table); err != nil || resp.StatusCode != 200 {
				t.Fatalf("%d %v %s", resp.StatusCode, err, body)
			}
			var names []string
			for _, c := range table.ColumnDefinitions {
				names = append(names, fmt.Sprintf("%s/%d", c.Name, c.Priority))
			}
			if got := strings.Join(names, ","); table.Kind != "Table" || got != "Name/0,Schedule/0,Suspend/0,Active/0,Last Schedule/0,Age/0,Containers/1,Images/1,Selector/1" {
				t.Fatalf("columns %s", got)
			}
			if len(table.Rows) != 1 || table.Rows[0].Cells[0] != "tab" || table.Rows[0].Cells[1] != "*/5 * * * *" || table.Rows[0].Cells[2] != "False" {
				t.Fatalf("rows %+v", table.Rows)
			}
			var obj struct {
				Kind     string                 `json:"kind"`
				Metadata map[string]interface{} `json:"metadata"`
			}
			if tc.kind == "" {
				if len(table.Rows[0].Object.Raw) != 0 {
					t.Fatalf("object included: %s", table.Rows[0].Object.Raw)
				}
				return
			}
			if err := json.Unmarshal(table.Rows[0].Object.Raw, &obj); err != nil || obj.Kind != tc.kind || obj.Metadata["name"] != "tab" {
				t.Fatalf("row object %s", table.Rows[0].Object.Raw)
			}
			// kube's metadata rows keep managedFields.
			if _, ok := obj.Metadata["managedFields"]; !ok && tc.kind == "PartialObjectMetadata" {
				t.Fatal("no managedFields in a metadata row")
			}
		})
	}
	_, body := get(t, "/api/v1/namespaces/"+ns, map[string]string{"Accept": "application/json;as=Table;v=v1beta1;g=meta.k8s.io"})
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil || table.APIVersion != "meta.k8s.io/v1beta1" || len(table.Rows) != 1 || table.Rows[0].Cells[1] != "Active" {
		t.Fatalf("namespace v1beta1 table: %s", body)
	}
}

func TestNegotiation_FallbacksYAMLPrettyAnd406(t *testing.T) {
	cases := []struct {
		accept, want string
		code         int
	}{
		{"", "application/json", 200},
		{"*/*", "application/json", 200},
		{"application/yaml", "application/yaml", 200},
		{"application/xml;q=1, application/yaml;q=0.5", "application/yaml", 200},
		{"application/json;q=0.1, application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf", 200},
		{"application/json;as=Table;v=v9;g=meta.k8s.io, application/json", "application/json", 200},
		{"text/html", "", 406},
	}
	for _, tc := range cases {
		resp, body := get(t, "/api/v1/namespaces/default", map[string]string{"Accept": tc.accept})
		if resp.StatusCode != tc.code || (tc.want != "" && resp.Header.Get("Content-Type") != tc.want) {
			t.Fatalf("Accept %q: %d %q", tc.accept, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if tc.code == 406 && !strings.Contains(string(body), "application/vnd.kubernetes.protobuf") {
			t.Fatalf("406 body %s", body)
		}
		if tc.want == "application/yaml" {
			var ns map[string]interface{}
			if err := yaml.Unmarshal(body, &ns); err != nil || ns["kind"] != "Namespace" {
				t.Fatalf("yaml %s", body)
			}
		}
	}
	_, body := get(t, "/api/v1/namespaces/default?pretty=true", nil)
	if !strings.Contains(string(body), "\n  \"kind\": \"Namespace\"") {
		t.Fatalf("pretty: %s", body)
	}
}

func TestCompression_LargeResponsesGzipped(t *testing.T) {
	ns := namespace(t)
	for i := 0; i < 60; i++ {
		obj := cronJob(fmt.Sprintf("big%02d", i))
		obj.Annotations = map[string]string{"pad": strings.Repeat("x", 3000)}
		if _, err := srv.Client.BatchV1().CronJobs(ns).Create(ctx(t), obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	resp, body := get(t, "/apis/batch/v1/namespaces/"+ns+"/cronjobs", map[string]string{"Accept-Encoding": "gzip"})
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("large list not gzipped (%d bytes)", len(body))
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	var list batchv1.CronJobList
	if err := json.Unmarshal(plain, &list); err != nil || len(list.Items) != 60 {
		t.Fatalf("gunzipped list: %v, %d items", err, len(list.Items))
	}
	resp, _ = get(t, "/api/v1/namespaces/default", map[string]string{"Accept-Encoding": "gzip"})
	if resp.Header.Get("Content-Encoding") != "" {
		t.Fatal("small response gzipped")
	}
}

func TestCompression_OffWithTheFeatureGate(t *testing.T) {
	plain := apiservertest.Start(t, func(o *apiserver.Options) {
		if err := o.FeatureGates.Set("APIResponseCompression=false"); err != nil {
			t.Fatal(err)
		}
	})
	for i := 0; i < 60; i++ {
		obj := cronJob(fmt.Sprintf("big%02d", i))
		obj.Annotations = map[string]string{"pad": strings.Repeat("x", 3000)}
		if _, err := plain.Client.BatchV1().CronJobs("default").Create(ctx(t), obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	req, _ := http.NewRequest("GET", plain.URL+"/apis/batch/v1/namespaces/default/cronjobs", nil)
	req.Header.Set("Authorization", "Bearer "+plain.AdminToken)
	req.Header.Set("Accept-Encoding", "gzip")
	client := plain.HTTPClient()
	client.Transport.(*http.Transport).DisableCompression = true
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "" {
		t.Fatal("gzipped with APIResponseCompression=false")
	}
}

func TestTable_WatchEventsCarryOneRowTables(t *testing.T) {
	ns := namespace(t)
	if _, err := srv.Client.BatchV1().CronJobs(ns).Create(ctx(t), cronJob("watched"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, body := get(t, "/apis/batch/v1/namespaces/"+ns+"/cronjobs?watch=1&timeoutSeconds=1",
		map[string]string{"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"})
	line := strings.SplitN(string(body), "\n", 2)[0]
	var e struct {
		Type   string       `json:"type"`
		Object metav1.Table `json:"object"`
	}
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		t.Fatal(err)
	}
	if e.Type != "ADDED" || e.Object.Kind != "Table" || len(e.Object.Rows) != 1 || e.Object.Rows[0].Cells[0] != "watched" || len(e.Object.ColumnDefinitions) == 0 {
		t.Fatalf("event %s", line)
	}
}

// TestJSON_BytesAsKubeWritesThem: compact with a final newline for
// programs, indented without one for command-line clients and ?pretty;
// /version always indented.
func TestJSON_BytesAsKubeWritesThem(t *testing.T) {
	ns := namespace(t)
	if _, err := srv.Client.BatchV1().CronJobs(ns).Create(ctx(t), cronJob("bytes"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	obj := "/apis/batch/v1/namespaces/" + ns + "/cronjobs/bytes"
	cases := []struct {
		path, agent string
		indented    bool
	}{
		{obj, "kubectl/v1.29.15", false},
		{obj, "curl/8.0", true},
		{obj + "?pretty=true", "kubectl/v1.29.15", true},
		{obj + "-missing", "curl/8.0", true},
		{"/apis/batch/v1", "kubectl/v1.29.15", false},
		{"/apis/batch/v1", "curl/8.0", true},
		{"/version", "kubectl/v1.29.15", true},
	}
	for _, c := range cases {
		req, _ := http.NewRequest("GET", srv.URL+c.path, nil)
		req.Header.Set("Authorization", "Bearer "+srv.AdminToken)
		req.Header.Set("User-Agent", c.agent)
		resp, err := srv.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		s := string(body)
		if c.indented && (!strings.HasPrefix(s, "{\n  \"") || strings.HasSuffix(s, "\n")) {
			t.Errorf("%s as %s: want indented JSON without a final newline, got %q...%q", c.path, c.agent, head(s), tail(s))
		}
		if !c.indented && (strings.Contains(s, "\n  ") || !strings.HasSuffix(s, "}\n")) {
			t.Errorf("%s as %s: want compact JSON and a newline, got %q...%q", c.path, c.agent, head(s), tail(s))
		}
	}
}

func head(s string) string {
	if len(s) > 20 {
		return s[:20]
	}
	return s
}

func tail(s string) string {
	if len(s) > 20 {
		return s[len(s)-20:]
	}
	return s
}
