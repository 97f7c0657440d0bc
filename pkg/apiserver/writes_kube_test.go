package apiserver_test

import (
	"encoding/json"
	"testing"
)

// A PUT whose metadata.resourceVersion is "0" names no version, as an
// empty one: kube-apiserver v1.29 updates a ConfigMap unconditionally,
// and refuses the update of a custom object or of a definition as invalid
// (reference run).
func TestUpdate_ResourceVersionZeroIsUnconditionalWhereKubeAllowsIt(t *testing.T) {
	ns := servedCrate(t)
	if resp, body := send(t, "POST", "/api/v1/namespaces/"+ns+"/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}`,
		"Content-Type", "application/json"); resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	var crd map[string]interface{}
	getJSON(t, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crates.http.example.com", &crd)
	crd["metadata"].(map[string]interface{})["resourceVersion"] = "0"
	const invalid = " is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
	for _, tc := range []struct {
		name, path, body string
		code             int
		message          string
	}{
		{"configmap rv 0", "/api/v1/namespaces/" + ns + "/configmaps/cm",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","resourceVersion":"0"},"data":{"a":"b"}}`, 200, ""},
		{"configmap no rv", "/api/v1/namespaces/" + ns + "/configmaps/cm",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"a":"c"}}`, 200, ""},
		{"custom object rv 0", "/apis/http.example.com/v1/namespaces/" + ns + "/crates/c1",
			`{"apiVersion":"http.example.com/v1","kind":"Crate","metadata":{"name":"c1","resourceVersion":"0"},"spec":{"replicas":2}}`, 422, `crates.http.example.com "c1"` + invalid},
		{"custom object no rv", "/apis/http.example.com/v1/namespaces/" + ns + "/crates/c1",
			`{"apiVersion":"http.example.com/v1","kind":"Crate","metadata":{"name":"c1"},"spec":{"replicas":2}}`, 422, `crates.http.example.com "c1"` + invalid},
		{"custom object status no rv", "/apis/http.example.com/v1/namespaces/" + ns + "/crates/c1/status",
			`{"apiVersion":"http.example.com/v1","kind":"Crate","metadata":{"name":"c1"},"status":{"replicas":2}}`, 422, `crates.http.example.com "c1"` + invalid},
		{"definition rv 0", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crates.http.example.com",
			mustMarshal(t, crd), 422, `customresourcedefinitions.apiextensions.k8s.io "crates.http.example.com"` + invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, "PUT", tc.path+"?dryRun=All", tc.body, "Content-Type", "application/json")
			if resp.StatusCode != tc.code {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if tc.message == "" {
				return
			}
			var st struct{ Message, Reason string }
			if err := json.Unmarshal([]byte(body), &st); err != nil {
				t.Fatal(err)
			}
			if st.Message != tc.message || st.Reason != "Invalid" {
				t.Errorf("%s %q, want Invalid %q", st.Reason, st.Message, tc.message)
			}
		})
	}
}

// managedFields written that do not decode are dropped, as kube-apiserver
// v1.29 drops them (reference run): a create records its writer alone, an
// update keeps the live entries; neither is refused.
func TestWrite_UndecodableManagedFieldsAreDropped(t *testing.T) {
	ns := servedCrate(t)
	const bad = `"managedFields":[{"manager":"x","operation":"Update","apiVersion":"http.example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"bad":1}}}]`
	managers := func(body string) string {
		t.Helper()
		var obj struct {
			Metadata struct {
				ResourceVersion string
				ManagedFields   []struct {
					Manager  string
					FieldsV1 json.RawMessage
				}
			}
		}
		if err := json.Unmarshal([]byte(body), &obj); err != nil {
			t.Fatal(err)
		}
		out := ""
		for _, e := range obj.Metadata.ManagedFields {
			out += e.Manager + " " + string(e.FieldsV1) + "\n"
		}
		return out
	}
	crates := "/apis/http.example.com/v1/namespaces/" + ns + "/crates"
	resp, body := send(t, "POST", crates, `{"apiVersion":"http.example.com/v1","kind":"Crate","metadata":{"name":"mf",`+bad+`},"spec":{"replicas":1}}`,
		"Content-Type", "application/json", "User-Agent", "writer")
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	const want = `writer {"f:spec":{".":{},"f:replicas":{}}}` + "\n"
	if got := managers(body); got != want {
		t.Errorf("after create:\n%s\nwant\n%s", got, want)
	}
	var live map[string]interface{}
	getJSON(t, crates+"/mf", &live)
	rv := live["metadata"].(map[string]interface{})["resourceVersion"].(string)
	resp, body = send(t, "PUT", crates+"/mf", `{"apiVersion":"http.example.com/v1","kind":"Crate","metadata":{"name":"mf","resourceVersion":"`+rv+`",`+bad+`},"spec":{"replicas":2}}`,
		"Content-Type", "application/json", "User-Agent", "writer")
	if resp.StatusCode != 200 {
		t.Fatalf("update: %d %s", resp.StatusCode, body)
	}
	if got := managers(body); got != want {
		t.Errorf("after update:\n%s\nwant\n%s", got, want)
	}
}
