package apiserver_test

import (
	"encoding/hex"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/codec"
)

// protobufBody is obj in kube's protobuf form, as a client sends it.
func protobufBody(t *testing.T, apiVersion, kind string, obj codec.ProtoMessage) string {
	t.Helper()
	raw, err := obj.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	data, err := codec.Envelope(apiVersion, kind, raw)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A body of another kind than the URL's, or of another version, is
// refused in kube-apiserver v1.29's words (reference run), as JSON, YAML
// or protobuf: a kind kube knows cannot be converted, one it does not know
// is not registered, the served kind of another version is of the wrong
// API version. Definitions are read with apiextensions' own scheme; custom
// resources without one; DeleteOptions bodies with meta's (kube answers
// those 500, SPEC.md's errors are 400s).
func TestWrongKind_RefusedInKubesWords(t *testing.T) {
	ns := servedCrate(t)
	if _, err := srv.Client.BatchV1().CronJobs(ns).Create(ctx(t), cronJob("foo"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client.CoreV1().ServiceAccounts(ns).Create(ctx(t), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const (
		pb          = "application/vnd.kubernetes.protobuf"
		yaml        = "application/yaml"
		json        = "application/json"
		cronjobs    = "/apis/batch/v1/namespaces/{ns}/cronjobs"
		crates      = "/apis/http.example.com/v1/namespaces/{ns}/crates"
		crds        = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All"
		registered  = ` is registered for version `
		inScheme    = ` in scheme "pkg/runtime/scheme.go:100"`
		scaleQuirk  = `no kind is registered for the type v1.Scale in scheme "pkg/runtime/scheme.go:100"`
		noConverter = ": unknown conversion"
	)
	configMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	noKindYAML := "apiVersion: http.example.com/v1\nmetadata:\n  name: x\n"
	cases := []struct {
		name, method, path, contentType, body string
		code                                  int
		reason, message                       string
	}{
		{"configmap json to cronjobs", "POST", cronjobs, json, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`, 400, "BadRequest",
			`ConfigMap in version "v1" cannot be handled as a CronJob: converting (v1.ConfigMap) to (batch.CronJob)` + noConverter},
		{"configmap yaml to cronjobs", "POST", cronjobs, yaml, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", 400, "BadRequest",
			`ConfigMap in version "v1" cannot be handled as a CronJob: converting (v1.ConfigMap) to (batch.CronJob)` + noConverter},
		{"configmap protobuf to cronjobs", "POST", cronjobs, pb, protobufBody(t, "v1", "ConfigMap", configMap), 400, "BadRequest",
			`ConfigMap in version "v1" cannot be handled as a CronJob: converting (v1.ConfigMap) to (batch.CronJob)` + noConverter},
		{"job json to a cronjob", "PUT", cronjobs + "/foo", json, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"foo"}}`, 400, "BadRequest",
			`Job in version "v1" cannot be handled as a CronJob: converting (v1.Job) to (batch.CronJob)` + noConverter},
		{"job yaml to a cronjob's status", "PUT", cronjobs + "/foo/status", yaml, "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: foo\n", 400, "BadRequest",
			`Job in version "v1" cannot be handled as a CronJob: converting (v1.Job) to (batch.CronJob)` + noConverter},
		{"unknown kind", "POST", cronjobs, json, `{"apiVersion":"batch/v1","kind":"Bogus","metadata":{"name":"x"}}`, 400, "BadRequest",
			`Bogus in version "v1" cannot be handled as a CronJob: no kind "Bogus"` + registered + `"batch/v1"` + inScheme},
		{"cronjob of the core group", "POST", cronjobs, json, `{"apiVersion":"v1","kind":"CronJob","metadata":{"name":"x"}}`, 400, "BadRequest",
			`CronJob in version "v1" cannot be handled as a CronJob: no kind "CronJob"` + registered + `"v1"` + inScheme},
		{"kind without apiVersion", "POST", cronjobs, json, `{"kind":"ConfigMap","metadata":{"name":"x"}}`, 400, "BadRequest",
			`ConfigMap in version "v1" cannot be handled as a CronJob: no kind "ConfigMap"` + registered + `"batch/v1"` + inScheme},
		{"unversioned kind", "POST", cronjobs, json, `{"apiVersion":"batch/v2alpha1","kind":"Status"}`, 400, "BadRequest",
			`Status in version "v2alpha1" cannot be handled as a CronJob: converting (v1.Status) to (batch.CronJob)` + noConverter},
		{"cronjob of another version", "POST", cronjobs, json, `{"apiVersion":"batch/v1beta1","kind":"CronJob","metadata":{"name":"x"}}`, 400, "BadRequest",
			"the API version in the data (batch/v1beta1) does not match the expected API version (batch/v1)"},
		{"malformed apiVersion", "POST", cronjobs, json, `{"kind":"CronJob","apiVersion":"a/b/c","metadata":{"name":"x"}}`, 400, "BadRequest",
			`the object provided is unrecognized (must be of type CronJob): unexpected GroupVersion string: a/b/c ({"kind":"CronJob","apiVersion" ...)`},
		{"malformed apiVersion yaml", "POST", cronjobs, yaml, "apiVersion: a/b/c\nkind: CronJob\nmetadata:\n  name: x\n", 400, "BadRequest",
			"the object provided is unrecognized (must be of type CronJob): unexpected GroupVersion string: a/b/c (" + hex.EncodeToString([]byte("apiVersion: a/b/c\nkind: CronJo")) + " ...)"},
		{"core event to events.k8s.io", "POST", "/apis/events.k8s.io/v1/namespaces/{ns}/events", json, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"x"}}`, 400, "BadRequest",
			"the API version in the data (v1) does not match the expected API version (events.k8s.io/v1)"},
		{"configmap to a token request", "POST", "/api/v1/namespaces/{ns}/serviceaccounts/sa/token", json, `{"apiVersion":"v1","kind":"ConfigMap"}`, 400, "BadRequest",
			`ConfigMap in version "v1" cannot be handled as a TokenRequest: converting (v1.ConfigMap) to (authentication.TokenRequest)` + noConverter},
		{"configmap to a namespace's finalize", "PUT", "/api/v1/namespaces/{ns}/finalize", json, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"{ns}"}}`, 400, "BadRequest",
			`ConfigMap in version "v1" cannot be handled as a Namespace: converting (v1.ConfigMap) to (core.Namespace)` + noConverter},
		{"configmap to definitions", "POST", crds, json, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`, 400, "BadRequest",
			`ConfigMap in version "v1" cannot be handled as a CustomResourceDefinition: no kind "ConfigMap"` + registered + `"v1"` + inScheme},
		{"status to definitions", "POST", crds, json, `{"apiVersion":"v1","kind":"Status"}`, 400, "BadRequest",
			`Status in version "v1" cannot be handled as a CustomResourceDefinition: converting (v1.Status) to (apiextensions.CustomResourceDefinition)` + noConverter},
		{"v1beta1 definition", "POST", crds, json, `{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"CustomResourceDefinition","metadata":{"name":"x"}}`, 400, "BadRequest",
			"the API version in the data (apiextensions.k8s.io/v1beta1) does not match the expected API version (apiextensions.k8s.io/v1)"},
		{"configmap to crates", "POST", crates, json, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`, 400, "BadRequest",
			"the API version in the data (v1) does not match the expected API version (http.example.com/v1)"},
		{"crate of another version", "PUT", crates + "/c1", json, `{"apiVersion":"http.example.com/v1beta1","kind":"Crate","metadata":{"name":"c1"}}`, 400, "BadRequest",
			"the API version in the data (http.example.com/v1beta1) does not match the expected API version (http.example.com/v1)"},
		{"crate without kind", "POST", crates, json, `{"apiVersion":"http.example.com/v1","metadata":{"name":"x"}}`, 400, "BadRequest",
			`the object provided is unrecognized (must be of type Crate): Object 'Kind' is missing in '{"apiVersion":"http.example.com/v1","metadata":{"name":"x"}}' ({"apiVersion":"http.example.co ...)`},
		{"crate without kind yaml", "POST", crates, yaml, noKindYAML, 400, "BadRequest",
			"the object provided is unrecognized (must be of type Crate): Object 'Kind' is missing in '" + noKindYAML + "' (" + hex.EncodeToString([]byte(noKindYAML[:30])) + " ...)"},
		{"crate of a malformed apiVersion without kind", "POST", crates, json, `{"apiVersion":"a/b/c","metadata":{"name":"x"}}`, 400, "BadRequest",
			`the object provided is unrecognized (must be of type Crate): unexpected GroupVersion string: a/b/c ({"apiVersion":"a/b/c","metadat ...)`},
		{"crate without apiVersion", "POST", crates, json, `{"kind":"Crate","metadata":{"name":"x"}}`, 400, "BadRequest",
			"the API version in the data () does not match the expected API version (http.example.com/v1)"},
		{"other kind of the crates' version", "POST", crates, json, `{"apiVersion":"http.example.com/v1","kind":"Gadget","metadata":{"name":"X_"}}`, 422, "Invalid",
			`Gadget.http.example.com "X_" is invalid: kind: Invalid value: "Gadget": must be Crate`},
		{"configmap to a crate's scale", "PUT", crates + "/c1/scale", json, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"}}`, 400, "BadRequest", scaleQuirk},
		{"malformed body to a crate's scale", "PUT", crates + "/c1/scale", json, `{"kind":`, 400, "BadRequest", scaleQuirk},
		{"deleteoptions body of a configmap", "DELETE", cronjobs + "/nonexist", json, `{"apiVersion":"v1","kind":"ConfigMap"}`, 400, "BadRequest",
			`no kind "ConfigMap"` + registered + `"v1"` + inScheme},
		{"deleteoptions body of a configmap, yaml, no apiVersion", "DELETE", cronjobs + "/nonexist", yaml, "kind: ConfigMap\n", 400, "BadRequest",
			`no kind "ConfigMap"` + registered + `"meta.k8s.io/v1"` + inScheme},
		{"deleteoptions body of a configmap, protobuf", "DELETE", cronjobs + "/nonexist", pb, protobufBody(t, "v1", "ConfigMap", configMap), 400, "BadRequest",
			`no kind "ConfigMap"` + registered + `"v1"` + inScheme},
		{"deleteoptions body of a status", "DELETE", cronjobs + "/nonexist", json, `{"apiVersion":"v1","kind":"Status"}`, 400, "BadRequest",
			"converting (v1.Status) to (v1.DeleteOptions)" + noConverter},
		{"deleteoptions body of createoptions", "DELETE", cronjobs + "?dryRun=All", json, `{"apiVersion":"batch/v1","kind":"CreateOptions"}`, 400, "BadRequest",
			"converting (v1.CreateOptions) to (v1.DeleteOptions)" + noConverter},
		{"deleteoptions body of a malformed apiVersion", "DELETE", cronjobs + "/nonexist", json, `{"apiVersion":"a/b/c","kind":"DeleteOptions"}`, 400, "BadRequest",
			"unexpected GroupVersion string: a/b/c"},
		{"deleteoptions of another group", "DELETE", cronjobs + "/nonexist", json, `{"apiVersion":"batch/v1","kind":"DeleteOptions"}`, 404, "NotFound",
			`cronjobs.batch "nonexist" not found`},
	}
	expand := strings.NewReplacer("{ns}", ns).Replace
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := stored(t)
			resp, data := send(t, tc.method, expand(tc.path), expand(tc.body), "Content-Type", tc.contentType, "Accept", "application/json")
			if resp.StatusCode != tc.code {
				t.Fatalf("code %d, want %d: %s", resp.StatusCode, tc.code, data)
			}
			status := decodeStatus(t, []byte(data))
			if string(status.Reason) != tc.reason || status.Message != expand(tc.message) {
				t.Fatalf("got %s %q\nwant %s %q", status.Reason, status.Message, tc.reason, expand(tc.message))
			}
			if after := stored(t); after != before {
				t.Fatalf("etcd changed from %+v to %+v: something was stored", before, after)
			}
		})
	}
}
