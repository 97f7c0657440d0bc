package apiserver_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
	"github.com/cronplane/cronplane/pkg/audit"
)

const auditTestPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: ["/readyz*", "/healthz*", "/livez*"]
- level: RequestResponse
  resources:
  - group: ""
    resources: [configmaps]
- level: Metadata
`

// auditLines waits, at most 10 s, until the log at path has lines
// matching every pattern, and returns the first line matching each,
// decoded.
func auditLines(t *testing.T, path string, patterns ...string) []map[string]interface{} {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		found := make([]map[string]interface{}, len(patterns))
		missing := ""
		for i, p := range patterns {
			re := regexp.MustCompile(p)
			s := bufio.NewScanner(bytes.NewReader(data))
			s.Buffer(nil, 1<<20)
			for s.Scan() {
				if re.Match(s.Bytes()) {
					if err := json.Unmarshal(s.Bytes(), &found[i]); err != nil {
						t.Fatalf("line %s: %v", s.Text(), err)
					}
					break
				}
			}
			if found[i] == nil {
				missing = p
			}
		}
		if missing == "" {
			return found
		}
		if time.Now().After(deadline) {
			t.Fatalf("no audit line matches %s in:\n%s", missing, data)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func field(ev map[string]interface{}, path ...string) interface{} {
	var v interface{} = ev
	for _, p := range path {
		m, ok := v.(map[string]interface{})
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func TestAudit_RealRequestsAreLoggedAsKubeLogsThem(t *testing.T) {
	dir := t.TempDir()
	policy, logPath := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit", "audit.log")
	if err := os.WriteFile(policy, []byte(auditTestPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	tokenFile, err := writeTestTokens()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(tokenFile) })
	s := apiservertest.Start(t, func(o *apiserver.Options) {
		o.TokenAuthFile = tokenFile
		o.Audit = audit.Options{PolicyFile: policy, LogPath: logPath}
	})
	c := ctx(t)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "audited"}, Data: map[string]string{"k": "v"}}
	if _, err := s.Client.CoreV1().ConfigMaps("default").Create(c, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A watch streams through the audit filter.
	w, err := s.Client.CoreV1().ConfigMaps("default").Watch(c, metav1.ListOptions{TimeoutSeconds: ptr(int64(1))})
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-w.ResultChan(); ev.Type != "ADDED" {
		t.Errorf("watch event %v", ev.Type)
	}
	w.Stop()
	// The admin acting as alice, who may not read configmaps.
	asAlice := rest.CopyConfig(s.Config)
	asAlice.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
	if _, err := kubernetes.NewForConfigOrDie(asAlice).CoreV1().ConfigMaps("default").Get(c, "audited", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("alice read a configmap: %v", err)
	}
	if _, err := clientAsOn(s, "bob").CoreV1().Namespaces().Get(c, "default", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("bob read a namespace: %v", err)
	}
	req, _ := http.NewRequest("GET", s.URL+"/version", nil)
	req.Header.Set("Authorization", "Bearer "+s.AdminToken)
	req.Header.Set("Audit-ID", "from-the-client")
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Audit-Id"); got != "from-the-client" {
		t.Errorf("Audit-Id %q, want the client's", got)
	}

	lines := auditLines(t, logPath,
		`"requestURI":"/api/v1/namespaces/default/configmaps","verb":"create"`,
		`"stage":"ResponseStarted".*"verb":"watch"`,
		`"stage":"ResponseComplete".*"verb":"watch"`,
		`"impersonatedUser":\{"username":"alice"`,
		`"username":"bob"`,
		`"auditID":"from-the-client"`,
	)
	create, watchStarted, watchDone, impersonated, denied, version := lines[0], lines[1], lines[2], lines[3], lines[4], lines[5]

	micro := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)
	for _, ts := range []string{"requestReceivedTimestamp", "stageTimestamp"} {
		if v, _ := create[ts].(string); !micro.MatchString(v) {
			t.Errorf("%s %q is not a MicroTime", ts, v)
		}
	}
	for k, want := range map[string]interface{}{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse", "verb": "create",
		"requestURI": "/api/v1/namespaces/default/configmaps",
	} {
		if create[k] != want {
			t.Errorf("create %s: %v, want %v", k, create[k], want)
		}
	}
	if ref := create["objectRef"]; !jsonEqual(ref, decodeJSON(`{"resource":"configmaps","namespace":"default","name":"audited","apiVersion":"v1"}`)) {
		t.Errorf("create objectRef %v", ref)
	}
	if st := create["responseStatus"]; !jsonEqual(st, decodeJSON(`{"metadata":{},"code":201}`)) {
		t.Errorf("create responseStatus %v", st)
	}
	if field(create, "requestObject", "data", "k") != "v" || field(create, "responseObject", "metadata", "uid") == nil {
		t.Errorf("create bodies: request %v, response %v", create["requestObject"], create["responseObject"])
	}
	if field(create, "user", "username") != "cronplane-admin" || field(create, "annotations", audit.DecisionAnnotation) != "allow" {
		t.Errorf("create user %v, annotations %v", create["user"], create["annotations"])
	}
	if create["sourceIPs"] == nil || create["auditID"] == "" {
		t.Errorf("create sourceIPs %v, auditID %v", create["sourceIPs"], create["auditID"])
	}

	for _, ev := range []map[string]interface{}{watchStarted, watchDone} {
		if ev["responseObject"] != nil || field(ev, "responseStatus", "code") != 200.0 {
			t.Errorf("watch %v: responseStatus %v, responseObject %v", ev["stage"], ev["responseStatus"], ev["responseObject"])
		}
	}
	if watchStarted["auditID"] != watchDone["auditID"] {
		t.Errorf("the watch's stages have audit IDs %v and %v", watchStarted["auditID"], watchDone["auditID"])
	}

	if field(impersonated, "user", "username") != "cronplane-admin" || field(impersonated, "responseStatus", "code") != 403.0 ||
		field(impersonated, "annotations", audit.DecisionAnnotation) != "forbid" {
		t.Errorf("impersonated request: %v", impersonated)
	}
	if field(denied, "responseStatus", "reason") != "Forbidden" || field(denied, "responseStatus", "status") != "Failure" ||
		!strings.Contains(field(denied, "responseStatus", "message").(string), `User "bob" cannot get resource "namespaces"`) ||
		field(denied, "annotations", audit.DecisionAnnotation) != "forbid" || denied["level"] != "Metadata" {
		t.Errorf("denied request: %v", denied)
	}
	if denied["requestObject"] != nil || denied["responseObject"] != nil {
		t.Errorf("a Metadata event has bodies: %v", denied)
	}
	if version["objectRef"] != nil || version["verb"] != "get" {
		t.Errorf("/version event: %v", version)
	}

	code, body := rawOn(t, s, "GET", "/metrics")
	if code != 200 || !strings.Contains(body, "apiserver_audit_event_total ") || !strings.Contains(body, `apiserver_audit_level_total{level="RequestResponse"}`) {
		t.Errorf("audit metrics missing: %d", code)
	}

	// Last, as it skips without kubectl.
	out, err := kubectlOn(t, s, "get", "configmap", "audited", "-o", "name")
	if err != nil || strings.TrimSpace(out) != "configmap/audited" {
		t.Fatalf("kubectl: %v: %s", err, out)
	}
	byKubectl := auditLines(t, logPath, `"requestURI":"/api/v1/namespaces/default/configmaps/audited".*"userAgent":"kubectl/`)[0]
	if byKubectl["level"] != "RequestResponse" || field(byKubectl, "responseObject", "data", "k") != "v" {
		t.Errorf("kubectl's request: %v", byKubectl)
	}
}

// clientAsOn is a client of s authenticated as a test user.
func clientAsOn(s *apiservertest.Server, name string) kubernetes.Interface {
	cfg := rest.CopyConfig(s.Config)
	cfg.BearerToken = name + "-token"
	return kubernetes.NewForConfigOrDie(cfg)
}

func decodeJSON(s string) (v interface{}) {
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	return v
}

func ptr[T any](v T) *T { return &v }

// Writes in protobuf, as the controller-manager sends them, are audited
// as kube audits them: the object reference names the created object at
// every level, and the request and response objects are recorded in
// JSON, the request's as decoded (defaults applied, kube's null
// creationTimestamp).
func TestAudit_ProtobufWritesAreNamedAndRecordedAsJSON(t *testing.T) {
	dir := t.TempDir()
	policy, logPath := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte(auditTestPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	s := apiservertest.Start(t, func(o *apiserver.Options) {
		o.Audit = audit.Options{PolicyFile: policy, LogPath: logPath}
	})
	cfg := rest.CopyConfig(s.Config)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
	client := kubernetes.NewForConfigOrDie(cfg)
	c := ctx(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "in-protobuf"}, Data: map[string]string{"k": "v"}}
	if _, err := client.CoreV1().ConfigMaps("default").Create(c, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Namespaces().Create(c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "in-protobuf"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := auditLines(t, logPath,
		`"requestURI":"/api/v1/namespaces/default/configmaps","verb":"create"`,
		`"requestURI":"/api/v1/namespaces","verb":"create"`,
	)
	created, namespace := lines[0], lines[1]
	if ref := created["objectRef"]; !jsonEqual(ref, decodeJSON(`{"resource":"configmaps","namespace":"default","name":"in-protobuf","apiVersion":"v1"}`)) {
		t.Errorf("configmap objectRef %v", ref)
	}
	if !jsonEqual(created["requestObject"], decodeJSON(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"in-protobuf","creationTimestamp":null},"data":{"k":"v"}}`)) {
		t.Errorf("configmap requestObject %v", created["requestObject"])
	}
	if field(created, "responseObject", "kind") != "ConfigMap" || field(created, "responseObject", "metadata", "uid") == nil ||
		field(created, "responseObject", "data", "k") != "v" {
		t.Errorf("configmap responseObject %v", created["responseObject"])
	}
	if ref := namespace["objectRef"]; namespace["level"] != "Metadata" || !jsonEqual(ref, decodeJSON(`{"resource":"namespaces","name":"in-protobuf","apiVersion":"v1"}`)) {
		t.Errorf("namespace event: level %v, objectRef %v", namespace["level"], ref)
	}
	if namespace["requestObject"] != nil || namespace["responseObject"] != nil {
		t.Errorf("a Metadata event has bodies: %v", namespace)
	}
}
