package audit

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/metrics"
)

// newTestAuditor logs to a file in a temporary directory with the policy
// given.
func newTestAuditor(t *testing.T, policy string, mutate ...func(*Options)) (*Auditor, string) {
	t.Helper()
	dir := t.TempDir()
	o := Options{PolicyFile: filepath.Join(dir, "policy.yaml"), LogPath: filepath.Join(dir, "log", "audit.log")}
	if err := os.WriteFile(o.PolicyFile, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, m := range mutate {
		m(&o)
	}
	a, err := New(o, metrics.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a, o.LogPath
}

const metadataPolicy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"

func readEvents(t *testing.T, path string) []Event {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []Event
	s := bufio.NewScanner(bytes.NewReader(data))
	s.Buffer(nil, 10<<20)
	for s.Scan() {
		var ev Event
		if err := json.Unmarshal(s.Bytes(), &ev); err != nil {
			t.Fatalf("line %q: %v", s.Text(), err)
		}
		out = append(out, ev)
	}
	return out
}

// begin starts the record of a GET of a configmap by alice.
func begin(a *Auditor) (context.Context, *Context) {
	ctx, c := WithContext(context.Background(), "id-1", time.Now())
	r := httptest.NewRequest("GET", "/api/v1/namespaces/ns/configmaps/a", nil)
	a.Begin(c, r, authorizer.Attributes{User: &user.Info{Name: "alice"}, Verb: "get", ResourceRequest: true, APIVersion: "v1", Resource: "configmaps", Namespace: "ns", Name: "a"})
	return ctx, c
}

func TestNew_WithoutPolicyOrLogAuditsNothing(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(metadataPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{
		{},
		{LogPath: filepath.Join(dir, "audit.log")},
		{PolicyFile: policy},
	} {
		if a, err := New(o, metrics.NewRegistry()); a != nil || err != nil {
			t.Errorf("%+v: got %v, %v; want no auditor", o, a, err)
		}
	}
	if _, err := New(Options{PolicyFile: filepath.Join(dir, "missing.yaml")}, metrics.NewRegistry()); err == nil {
		t.Error("a missing policy file was accepted")
	}
	if _, err := New(Options{PolicyFile: policy, LogPath: filepath.Join(dir, "audit.log"), LogMaxSize: -1}, metrics.NewRegistry()); err == nil {
		t.Error("a negative --audit-log-maxsize was accepted")
	}
}

func TestAddAnnotation_FirstValueStaysAndNoneRecordsNothing(t *testing.T) {
	a, path := newTestAuditor(t, metadataPolicy)
	ctx, c := WithContext(context.Background(), "early", time.Now())
	// Before the policy applies, annotations wait for it.
	AddAnnotation(ctx, "k", "first")
	r := httptest.NewRequest("GET", "/version", nil)
	a.Begin(c, r, authorizer.Attributes{Verb: "get", Path: "/version"})
	AddAnnotation(ctx, "k", "second")
	AddAnnotation(ctx, "other", "v")
	a.Emit(c, StageResponseComplete)

	none, _ := newTestAuditor(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n")
	ctx2, c2 := WithContext(context.Background(), "none", time.Now())
	none.Begin(c2, r, authorizer.Attributes{Verb: "get", Path: "/version"})
	AddAnnotation(ctx2, "k", "v")
	if c2.event.Annotations != nil {
		t.Errorf("a request audited at None kept annotations %v", c2.event.Annotations)
	}

	a.Close()
	evs := readEvents(t, path)
	if len(evs) != 1 || evs[0].Annotations["k"] != "first" || evs[0].Annotations["other"] != "v" {
		t.Errorf("events %+v", evs)
	}
}

func TestEmit_OmitsStagesAndStampsRequestReceivedWithTheReceivedTime(t *testing.T) {
	a, path := newTestAuditor(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Panic]\nrules:\n- level: Metadata\n  omitStages: [ResponseStarted]\n")
	_, c := begin(a)
	for _, s := range stages {
		a.Emit(c, s)
	}
	a.Close()
	evs := readEvents(t, path)
	if len(evs) != 2 || evs[0].Stage != StageRequestReceived || evs[1].Stage != StageResponseComplete {
		t.Fatalf("events %+v, want RequestReceived and ResponseComplete", evs)
	}
	if !evs[0].StageTimestamp.Equal(&evs[0].RequestReceivedTimestamp) {
		t.Errorf("RequestReceived stamped %v, received %v", evs[0].StageTimestamp, evs[0].RequestReceivedTimestamp)
	}
	ev := evs[1]
	if ev.Kind != "Event" || ev.APIVersion != "audit.k8s.io/v1" || ev.AuditID != "id-1" || ev.Verb != "get" || ev.User.Username != "alice" ||
		ev.RequestURI != "/api/v1/namespaces/ns/configmaps/a" || len(ev.SourceIPs) != 1 ||
		*ev.ObjectRef != (ObjectReference{Resource: "configmaps", Namespace: "ns", Name: "a", APIVersion: "v1"}) {
		t.Errorf("event %+v", ev)
	}
}

// stuckWriter blocks every write until released, reporting each.
type stuckWriter struct {
	writing chan struct{}
	release chan struct{}
	bytes.Buffer
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	w.writing <- struct{}{}
	<-w.release
	return w.Buffer.Write(p)
}

func TestLogBackend_DropsAndCountsRatherThanBlockWhenTheWriterIsStuck(t *testing.T) {
	m := newMetrics(metrics.NewRegistry())
	w := &stuckWriter{writing: make(chan struct{}, 100), release: make(chan struct{})}
	b := newLogBackend(w, nil, 2, m.errors)
	b.enqueue(&Event{AuditID: "1"})
	<-w.writing // the writer holds line 1 and is stuck
	done := make(chan struct{})
	go func() {
		for i := 2; i <= 10; i++ {
			b.enqueue(&Event{AuditID: "x"})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("enqueueing blocked on a stuck writer")
	}
	if got := testutil.ToFloat64(m.errors.WithLabelValues(pluginBuffered)); got != 7 {
		t.Errorf("dropped %v events, want 7 (2 buffered, 1 being written)", got)
	}
	close(w.release)
	b.close(5 * time.Second)
	if got := strings.Count(w.String(), "\n"); got != 3 {
		t.Errorf("wrote %d lines, want 3", got)
	}
	b.enqueue(&Event{AuditID: "late"})
	if got := testutil.ToFloat64(m.errors.WithLabelValues(pluginBuffered)); got != 8 {
		t.Errorf("an event after close was not counted as dropped: %v", got)
	}
}

// --audit-log-path - writes the events to standard output.
func TestLog_DashIsStandardOutput(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	stdout := os.Stdout
	os.Stdout = w
	a, _ := newTestAuditor(t, metadataPolicy, func(o *Options) { o.LogPath = "-" })
	os.Stdout = stdout
	_, c := begin(a)
	a.Emit(c, StageResponseComplete)
	a.Close()
	w.Close()
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	var ev Event
	if err := json.Unmarshal(out, &ev); err != nil || ev.AuditID != "id-1" || ev.Stage != StageResponseComplete {
		t.Fatalf("standard output %q: %v", out, err)
	}
}

func TestLog_RotatesBySize(t *testing.T) {
	a, path := newTestAuditor(t, metadataPolicy, func(o *Options) { o.LogMaxSize = 1; o.LogMaxBackups = 5 })
	big := strings.Repeat("x", 100*1024)
	const n = 15 // 1.5 MB
	for i := 0; i < n; i++ {
		ctx, c := begin(a)
		AddAnnotation(ctx, "big", big)
		a.Emit(c, StageResponseComplete)
	}
	a.Close()
	files, err := filepath.Glob(filepath.Join(filepath.Dir(path), "audit*.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("files %v: the log was not rotated", files)
	}
	total := 0
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > 1<<20 {
			t.Errorf("%s has %d bytes, over 1 MB", f, st.Size())
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, st.Mode().Perm())
		}
		total += len(readEvents(t, f))
	}
	if total != n {
		t.Errorf("%d events across %v, want %d", total, files, n)
	}
}

func TestLogResponseBody_StatusesAndBodies(t *testing.T) {
	status := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Message: "nope", Reason: metav1.StatusReasonNotFound, Code: 404, Details: &metav1.StatusDetails{Name: "a", Kind: "configmaps"}}
	statusJSON, _ := json.Marshal(status)
	raw, err := status.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	statusProto, err := codec.Envelope("v1", "Status", raw)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"}}`))
	_ = zw.Close()
	wantStatus := &metav1.Status{Status: metav1.StatusFailure, Message: "nope", Reason: metav1.StatusReasonNotFound, Code: 404, Details: status.Details}
	// A delete answers a Success Status without a code; the event keeps
	// the HTTP code, as kube's does.
	deleted := []byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"a","kind":"configmaps","uid":"u"}}`)
	wantDeleted := &metav1.Status{Status: metav1.StatusSuccess, Code: 200, Details: &metav1.StatusDetails{Name: "a", Kind: "configmaps", UID: "u"}}
	for _, tc := range []struct {
		name                  string
		level                 Level
		contentType, encoding string
		body                  []byte
		wantStatus            *metav1.Status
		wantObject            string
	}{
		{"a JSON Status at Metadata", LevelMetadata, "application/json", "", statusJSON, wantStatus, ""},
		{"a Success Status keeps the HTTP code", LevelMetadata, "application/json", "", deleted, wantDeleted, ""},
		{"a protobuf Status at RequestResponse", LevelRequestResponse, "application/vnd.kubernetes.protobuf", "", statusProto, wantStatus,
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nope","reason":"NotFound","details":{"name":"a","kind":"configmaps"},"code":404}`},
		{"a gzipped object", LevelRequestResponse, "application/json", "gzip", gz.Bytes(), &metav1.Status{Code: 200},
			`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"}}`},
		{"YAML", LevelRequestResponse, "application/yaml", "", []byte("kind: ConfigMap\napiVersion: v1\n"), &metav1.Status{Code: 200},
			`{"apiVersion":"v1","kind":"ConfigMap"}`},
		{"a protobuf object has no JSON form", LevelRequestResponse, "application/vnd.kubernetes.protobuf", "", []byte("k8s\x00\x0a"), &metav1.Status{Code: 200}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := newTestAuditor(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: "+string(tc.level)+"\n")
			_, c := begin(a)
			c.SetResponseCode(int(tc.wantStatus.Code))
			c.LogResponseBody(tc.contentType, tc.encoding, tc.body)
			if got := c.event.ResponseStatus; !equalStatus(got, tc.wantStatus) {
				t.Errorf("responseStatus %+v, want %+v", got, tc.wantStatus)
			}
			if got := string(c.event.ResponseObject); got != tc.wantObject {
				t.Errorf("responseObject %s, want %s", got, tc.wantObject)
			}
		})
	}
}

func equalStatus(a, b *metav1.Status) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestLogRequestBody_NamesTheObjectAndRecordsTheBodyFromLevelRequest(t *testing.T) {
	body := []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"b","namespace":"ns","resourceVersion":"7","uid":"u-1","managedFields":[{"manager":"m"}]},"data":{"k":"v"}}`)
	for _, tc := range []struct {
		level      Level
		omitMF     bool
		wantObject string
	}{
		{LevelMetadata, false, ""},
		{LevelRequest, false, string(body)},
		{LevelRequest, true, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"b","namespace":"ns","resourceVersion":"7","uid":"u-1"},"data":{"k":"v"}}`},
	} {
		policy := "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: " + string(tc.level) + "\n"
		if tc.omitMF {
			policy += "omitManagedFields: true\n"
		}
		a, _ := newTestAuditor(t, policy)
		_, c := WithContext(context.Background(), "id", time.Now())
		r := httptest.NewRequest("PUT", "/api/v1/namespaces/ns/configmaps", nil)
		a.Begin(c, r, authorizer.Attributes{Verb: "update", ResourceRequest: true, APIVersion: "v1", Resource: "configmaps", Namespace: "ns"})
		c.LogRequestBody("application/json", body)
		want := ObjectReference{Resource: "configmaps", Namespace: "ns", Name: "b", UID: "u-1", ResourceVersion: "7", APIVersion: "v1"}
		if *c.event.ObjectRef != want {
			t.Errorf("%s: objectRef %+v, want %+v", tc.level, *c.event.ObjectRef, want)
		}
		if got := string(c.event.RequestObject); got != tc.wantObject {
			t.Errorf("%s omitManagedFields=%v: requestObject %s, want %s", tc.level, tc.omitMF, got, tc.wantObject)
		}
	}
}

func TestWithoutManagedFields_DropsThemFromObjectsListsAndTablesInOrder(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"object", `{"kind":"Pod","metadata":{"name":"a","managedFields":[{}],"uid":"u"},"spec":{}}`, `{"kind":"Pod","metadata":{"name":"a","uid":"u"},"spec":{}}`},
		{"list", `{"kind":"PodList","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"managedFields":[],"name":"a"}},{"metadata":{"name":"b"}}]}`,
			`{"kind":"PodList","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}`},
		{"table", `{"kind":"Table","rows":[{"cells":["a"],"object":{"kind":"PartialObjectMetadata","metadata":{"name":"a","managedFields":[]}}},{"cells":["b"]}]}`,
			`{"kind":"Table","rows":[{"cells":["a"],"object":{"kind":"PartialObjectMetadata","metadata":{"name":"a"}}},{"cells":["b"]}]}`},
		{"not an object", `[{"op":"add"}]`, `[{"op":"add"}]`},
	} {
		if got := string(withoutManagedFields(json.RawMessage(tc.in))); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}
