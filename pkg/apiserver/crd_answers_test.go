package apiserver_test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/codec"
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

// A custom object's metadata comes in protobuf, as PartialObjectMetadata
// and PartialObjectMetadataList, as kube serves it, though the object
// itself has no protobuf form.
func TestCustomResourceServing_MetadataInProtobuf(t *testing.T) {
	ns := servedCrate(t)
	crates := "/apis/http.example.com/v1/namespaces/" + ns + "/crates"
	for _, tc := range []struct {
		path, as string
		into     interface{ Unmarshal([]byte) error }
	}{
		{crates + "/c1", "PartialObjectMetadata", &metav1.PartialObjectMetadata{}},
		{crates, "PartialObjectMetadataList", &metav1.PartialObjectMetadataList{}},
	} {
		resp, body := send(t, "GET", tc.path, "", "Accept", "application/vnd.kubernetes.protobuf;as="+tc.as+";g=meta.k8s.io;v=v1")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/vnd.kubernetes.protobuf" {
			t.Fatalf("%s as %s: %d %s %q", tc.path, tc.as, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		u, err := codec.OpenEnvelope([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if u.APIVersion != "meta.k8s.io/v1" || u.Kind != tc.as {
			t.Errorf("%s: envelope of %s %s", tc.path, u.APIVersion, u.Kind)
		}
		if err := tc.into.Unmarshal(u.Raw); err != nil {
			t.Fatal(err)
		}
		switch m := tc.into.(type) {
		case *metav1.PartialObjectMetadata:
			if m.Name != "c1" || m.Namespace != ns {
				t.Errorf("metadata of %s/%s", m.Namespace, m.Name)
			}
		case *metav1.PartialObjectMetadataList:
			if len(m.Items) != 1 || m.Items[0].Name != "c1" {
				t.Errorf("list of %d items", len(m.Items))
			}
		}
	}
}

// Discovery lists the groups as kube-apiserver v1.29 does (reference
// run): the built-in ones by kube's group priority, then those of custom
// resources by name.
func TestDiscovery_GroupsInKubeOrder(t *testing.T) {
	servedCrate(t)
	const want = "apps events.k8s.io authentication.k8s.io authorization.k8s.io batch networking.k8s.io rbac.authorization.k8s.io admissionregistration.k8s.io apiextensions.k8s.io coordination.k8s.io"
	check := func(doc string, names []string) {
		t.Helper()
		var builtin, custom []string
		for _, n := range names {
			if !strings.Contains(" "+want+" ", " "+n+" ") {
				custom = append(custom, n)
				continue
			}
			if len(custom) > 0 {
				t.Errorf("%s: built-in group %s after custom ones: %v", doc, n, names)
			}
			builtin = append(builtin, n)
		}
		if got := strings.Join(builtin, " "); got != want {
			t.Errorf("%s: built-in groups %s, want %s", doc, got, want)
		}
		if !sort.StringsAreSorted(custom) || len(custom) == 0 {
			t.Errorf("%s: custom groups %v", doc, custom)
		}
	}
	var legacy metav1.APIGroupList
	getJSON(t, "/apis", &legacy)
	var names []string
	for _, g := range legacy.Groups {
		names = append(names, g.Name)
	}
	check("/apis", names)
	_, body := send(t, "GET", "/apis", "", "Accept", aggregatedJSON)
	var aggregated apidiscoveryv2beta1.APIGroupDiscoveryList
	if err := json.Unmarshal([]byte(body), &aggregated); err != nil {
		t.Fatal(err)
	}
	names = nil
	for _, g := range aggregated.Items {
		names = append(names, g.Name)
	}
	check("aggregated /apis", names)
}

// The null keywords of a definition's schema are dropped, as kube's
// decoding drops them (reference run): a null default is no default, a
// null property schema an empty one.
func TestCustomResourceDefinition_NullSchemaKeywordsDroppedAsKube(t *testing.T) {
	const crd = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"nulls.nulls.example.com"},
 "spec":{"group":"nulls.example.com","scope":"Namespaced","names":{"plural":"nulls","singular":"null","kind":"Null"},
  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","description":null,"properties":{
   "spec":{"type":"object","default":null,"maximum":null,"properties":{"a":{"type":"string","default":null,"nullable":true,"enum":null},PROPERTY
    "c":{"type":"array","items":{"type":"string","default":null}},"d":{"type":"string","enum":["x",null],"nullable":true}}}}}}}]}}`
	const stored = `{"openAPIV3Schema":{"properties":{"spec":{"properties":{"a":{"nullable":true,"type":"string"},"c":{"items":{"type":"string"},"type":"array"},` +
		`"d":{"enum":["x",null],"nullable":true,"type":"string"}},"type":"object"}},"type":"object"}}`
	path := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All"
	resp, body := send(t, "POST", path, strings.Replace(crd, "PROPERTY", "", 1), "Content-Type", "application/json")
	if resp.StatusCode != 201 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var out struct {
		Spec struct {
			Versions []struct{ Schema json.RawMessage }
		}
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatal(err)
	}
	if got := string(out.Spec.Versions[0].Schema); got != stored {
		t.Errorf("schema\n%s\nwant\n%s", got, stored)
	}
	resp, body = send(t, "POST", path, strings.Replace(crd, "PROPERTY", `"b":null,`, 1), "Content-Type", "application/json")
	const invalid = `spec.validation.openAPIV3Schema.properties[spec].properties[b].type: Required value: must not be empty for specified object fields`
	if resp.StatusCode != 422 || !strings.Contains(body, invalid) {
		t.Errorf("null property: %d %s", resp.StatusCode, body)
	}
}
