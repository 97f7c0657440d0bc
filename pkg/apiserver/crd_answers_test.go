package apiserver_test

import (
	"encoding/json"
	"testing"
)

// Answers kube-apiserver v1.29 gives about a custom resource (reference
// run): no Scale for an object without its spec replicas, kube's words
// for a field label it does not support, and a NotFound Status for a
// subresource it does not have (only where the object's path is valid).
func TestCustomResourceServing_SmallerAnswersAsKube(t *testing.T) {
	ns := servedCrate(t)
	crates := "/apis/http.example.com/v1/namespaces/" + ns + "/crates"
	if resp, body := send(t, "POST", crates, `{"apiVersion":"http.example.com/v1","kind":"Crate","metadata":{"name":"c0"},"spec":{}}`,
		"Content-Type", "application/json"); resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	for _, tc := range []struct {
		name, path string
		code       int
		reason     string
		message    string
	}{
		{"scale without spec replicas", crates + "/c0/scale", 500, "InternalError", `Internal error occurred: the spec replicas field ".spec.replicas" does not exist`},
		{"scale with spec replicas", crates + "/c1/scale", 200, "", ""},
		{"field label", crates + "?fieldSelector=spec.replicas=1", 400, "BadRequest", "field label not supported: spec.replicas"},
		{"metadata field label", crates + "?fieldSelector=metadata.namespace=" + ns, 200, "", ""},
		{"undefined subresource", crates + "/c1/bogus", 404, "NotFound", `crates.http.example.com "c1" not found`},
		{"undefined subresource of a missing object", crates + "/nope/bogus", 404, "NotFound", `crates.http.example.com "nope" not found`},
		{"below a subresource", crates + "/c1/bogus/x", 404, "NotFound", `crates.http.example.com "c1" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, "GET", tc.path, "")
			if resp.StatusCode != tc.code {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if tc.reason == "" {
				return
			}
			var st struct{ Message, Reason string }
			if err := json.Unmarshal([]byte(body), &st); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if st.Reason != tc.reason || st.Message != tc.message {
				t.Errorf("%s %q, want %s %q", st.Reason, st.Message, tc.reason, tc.message)
			}
		})
	}
	// A crate's path outside its namespace is no path at all.
	if resp, body := send(t, "GET", "/apis/http.example.com/v1/crates/c1/bogus", ""); resp.StatusCode != 404 || body != "404 page not found\n" {
		t.Errorf("cluster path: %d %q", resp.StatusCode, body)
	}
}
