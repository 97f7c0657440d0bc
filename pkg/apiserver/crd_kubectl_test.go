package apiserver_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The expectations below are kube-apiserver v1.29's answers to the same
// requests (reference run, /work/shared/reference).

// kubectl's client-side apply and diff of an existing custom object send
// the patch type the OpenAPI documents offer: a merge patch, as for kube,
// where a strategic merge patch would be refused with a 415.
func TestKubectl_ClientSideApplyAndDiffOfCustomObject(t *testing.T) {
	ns := servedCrate(t)
	dir := t.TempDir()
	write := func(replicas string) string {
		t.Helper()
		f := filepath.Join(dir, "crate-"+replicas+".json")
		body := `{"apiVersion":"http.example.com/v1","kind":"Crate","metadata":{"name":"applied","namespace":"` + ns + `"},"spec":{"replicas":` + replicas + `}}`
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	mustKubectl(t, "apply", "-f", write("1"))
	// The existing object c1 has no last-applied configuration: kubectl
	// patches it all the same.
	c1 := filepath.Join(dir, "c1.json")
	if err := os.WriteFile(c1, []byte(`{"apiVersion":"http.example.com/v1","kind":"Crate","metadata":{"name":"c1","namespace":"`+ns+`"},"spec":{"replicas":4}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, "apply", "-f", c1)
	// kubectl diff exits 1 when there are differences.
	out, err := kubectl(t, "diff", "-f", write("2"))
	if err == nil || !strings.Contains(out, "-  replicas: 1\n+  replicas: 2") {
		t.Errorf("kubectl diff: %v\n%s", err, out)
	}
	mustKubectl(t, "apply", "-f", write("2"))
	for name, want := range map[string]string{"applied": "2", "c1": "4"} {
		if got := mustKubectl(t, "-n", ns, "get", "crate", name, "-o", "jsonpath={.spec.replicas}"); got != want {
			t.Errorf("%s: replicas %q, want %q", name, got, want)
		}
	}
}

// The patch types the OpenAPI documents offer for a custom resource and
// for a built-in one, and what a custom resource's operations take and
// answer in (no protobuf).
func TestOpenAPI_PatchAndMediaTypesAsKube(t *testing.T) {
	servedCrate(t)
	var v2 struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	getJSON(t, "/openapi/v2", &v2)
	const crate = "/apis/http.example.com/v1/namespaces/{namespace}/crates/{name}"
	for _, tc := range []struct {
		path, verb         string
		consumes, produces string
	}{
		{crate, "patch", "application/json-patch+json application/merge-patch+json application/apply-patch+yaml", "application/json application/yaml"},
		{crate + "/status", "patch", "application/json-patch+json application/merge-patch+json application/apply-patch+yaml", "application/json application/yaml"},
		{crate + "/scale", "patch", "application/json-patch+json application/merge-patch+json application/apply-patch+yaml", "application/json application/yaml"},
		{crate, "put", "application/json application/yaml", "application/json application/yaml"},
		{crate + "/scale", "get", "application/json application/yaml", "application/json application/yaml"},
		{"/apis/batch/v1/namespaces/{namespace}/cronjobs/{name}", "patch",
			"application/json-patch+json application/merge-patch+json application/strategic-merge-patch+json application/apply-patch+yaml",
			"application/json application/yaml application/vnd.kubernetes.protobuf"},
	} {
		var o struct{ Consumes, Produces []string }
		if err := json.Unmarshal(v2.Paths[tc.path][tc.verb], &o); err != nil {
			t.Fatalf("v2 %s %s: %v", tc.verb, tc.path, err)
		}
		if got := strings.Join(o.Consumes, " "); got != tc.consumes {
			t.Errorf("v2 %s %s consumes %q, want %q", tc.verb, tc.path, got, tc.consumes)
		}
		if got := strings.Join(o.Produces, " "); got != tc.produces {
			t.Errorf("v2 %s %s produces %q, want %q", tc.verb, tc.path, got, tc.produces)
		}
	}
	var v3 struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	getJSON(t, "/openapi/v3/apis/http.example.com/v1", &v3)
	var op struct {
		RequestBody struct {
			Content map[string]json.RawMessage `json:"content"`
		} `json:"requestBody"`
	}
	if err := json.Unmarshal(v3.Paths[crate]["patch"], &op); err != nil {
		t.Fatal(err)
	}
	patch := op.RequestBody.Content
	if _, ok := patch["application/strategic-merge-patch+json"]; ok || len(patch) != 3 {
		t.Errorf("v3 patch body types: %v", patch)
	}
}

// kubectl explain of a custom resource shows kube's descriptions of its
// apiVersion, kind and metadata, and its list has kube's descriptions.
func TestKubectl_ExplainCustomResourceAsKube(t *testing.T) {
	servedCrate(t)
	const v3 = `GROUP:      http.example.com
KIND:       Crate
VERSION:    v1

DESCRIPTION:
    <empty>
FIELDS:
  apiVersion	<string>
    APIVersion defines the versioned schema of this representation of an object.
    Servers should convert recognized schemas to the latest internal value, and
    may reject unrecognized values. More info:
    https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources

  kind	<string>
    Kind is a string value representing the REST resource this object
    represents. Servers may infer this from the endpoint the client submits
    requests to. Cannot be updated. In CamelCase. More info:
    https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds

  metadata	<ObjectMeta>
    Standard object's metadata. More info:
    https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata

  spec	<Object>
    <no description>

  status	<Object>
    <no description>


`
	const v2 = `KIND:     Crate
VERSION:  http.example.com/v1

DESCRIPTION:
     <empty>

FIELDS:
   apiVersion	<string>
     APIVersion defines the versioned schema of this representation of an
     object. Servers should convert recognized schemas to the latest internal
     value, and may reject unrecognized values. More info:
     https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources

   kind	<string>
     Kind is a string value representing the REST resource this object
     represents. Servers may infer this from the endpoint the client submits
     requests to. Cannot be updated. In CamelCase. More info:
     https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds

   metadata	<Object>
     Standard object's metadata. More info:
     https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata

   spec	<Object>

   status	<Object>

`
	for output, want := range map[string]string{"plaintext": v3, "plaintext-openapiv2": v2} {
		// The documents follow the CRD shortly after it is served.
		var out string
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if out = mustKubectl(t, "explain", "crates", "--api-version=http.example.com/v1", "--output="+output); out == want || time.Now().After(deadline) {
				break
			}
		}
		if out != want {
			t.Errorf("kubectl explain --output=%s:\n%s\nwant:\n%s", output, out, want)
		}
	}
	const list = `{"description":"CrateList is a list of Crate","type":"object","required":["items"],"properties":{` +
		`"apiVersion":{"description":"APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources","type":"string"},` +
		`"items":{"description":"List of crates. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md","type":"array","items":{"$ref":"#/components/schemas/com.example.http.v1.Crate"}},` +
		`"kind":{"description":"Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds","type":"string"},` +
		`"metadata":{"description":"Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds","allOf":[{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"}]}},` +
		`"x-kubernetes-group-version-kind":[{"group":"http.example.com","kind":"CrateList","version":"v1"}]}`
	var doc struct {
		Components struct {
			Schemas map[string]interface{} `json:"schemas"`
		} `json:"components"`
	}
	getJSON(t, "/openapi/v3/apis/http.example.com/v1", &doc)
	if got := mustMarshal(t, doc.Components.Schemas["com.example.http.v1.CrateList"]); got != normalJSON(t, list) {
		t.Errorf("CrateList:\n%s\nwant\n%s", got, normalJSON(t, list))
	}
}
