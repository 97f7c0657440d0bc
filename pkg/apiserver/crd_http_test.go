package apiserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// The expectations below are kube-apiserver v1.29's answers to the same
// requests (reference run).

// crateCRD has a status and a scale subresource and an embedded
// resource; v1 is stored, v1beta1 served too.
const crateCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"crates.http.example.com"},
 "spec":{"group":"http.example.com","scope":"Namespaced","names":{"plural":"crates","singular":"crate","kind":"Crate","shortNames":["cr8"],"categories":["all"]},
  "versions":[
   {"name":"v1beta1","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}},
   {"name":"v1","served":true,"storage":true,
    "subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas"}},
    "schema":{"openAPIV3Schema":{"type":"object","properties":{
     "spec":{"type":"object","properties":{"replicas":{"type":"integer"},
      "template":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}}},
     "status":{"type":"object","properties":{"replicas":{"type":"integer"}}}}}}}]}}`

// servedCrate creates the crate CRD on the shared server, once, and the
// object c1 in a namespace of the test's own.
func servedCrate(t *testing.T) string {
	t.Helper()
	c := ctx(t)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	if _, err := dyn.Resource(crdsGVR).Create(c, object(t, crateCRD), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ns := namespace(t)
	crates := dyn.Resource(schema.GroupVersionResource{Group: "http.example.com", Version: "v1", Resource: "crates"}).Namespace(ns)
	createWhenServed(c, t, crates, object(t, `{"apiVersion":"http.example.com/v1","kind":"Crate","metadata":{"name":"c1"},"spec":{"replicas":1}}`))
	return ns
}

// send sends a request with the admin token and the given headers
// (name, value, ...).
func send(t *testing.T, method, path, body string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+srv.AdminToken)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := srv.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

func TestCustomResourceServing_StrategicMergePatchIs415OnEverySubresource(t *testing.T) {
	ns := servedCrate(t)
	const want = `"message":"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"`
	for _, sub := range []string{"", "/status", "/scale"} {
		resp, body := send(t, "PATCH", "/apis/http.example.com/v1/namespaces/"+ns+"/crates/c1"+sub, `{"spec":{"replicas":3}}`,
			"Content-Type", "application/strategic-merge-patch+json")
		if resp.StatusCode != 415 || !strings.Contains(body, want) {
			t.Errorf("crates/c1%s: %d %s", sub, resp.StatusCode, body)
		}
	}
}

func TestCustomResourceServing_EmbeddedMetadataAndUnknownFieldsAsKube(t *testing.T) {
	ns := servedCrate(t)
	path := "/apis/http.example.com/v1/namespaces/" + ns + "/crates?dryRun=All"
	const obj = `{"apiVersion":"http.example.com/v1","kind":"Crate","metadata":{"name":"c2","zMeta":1,"aMeta":1},"aaTop":1,
	 "spec":{"zz":1,"template":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"t","bogus":1,"abogus":1,"creationTimestamp":null},"data":{"a":"b"}}}}`
	resp, body := send(t, "POST", path+"&fieldValidation=Strict", obj, "Content-Type", "application/json")
	const strict = `Crate in version \"v1\" cannot be handled as a Crate: strict decoding error: unknown field \"metadata.aMeta\", unknown field \"metadata.zMeta\", ` +
		`unknown field \"aaTop\", unknown field \"spec.zz\", unknown field \"spec.template.metadata.abogus\", unknown field \"spec.template.metadata.bogus\"`
	if resp.StatusCode != 400 || !strings.Contains(body, strict) {
		t.Errorf("Strict: %d %s", resp.StatusCode, body)
	}
	resp, body = send(t, "POST", path, obj, "Content-Type", "application/json")
	wantWarnings := []string{`299 - "unknown field \"metadata.aMeta\""`, `299 - "unknown field \"metadata.zMeta\""`, `299 - "unknown field \"aaTop\""`,
		`299 - "unknown field \"spec.zz\""`, `299 - "unknown field \"spec.template.metadata.abogus\""`, `299 - "unknown field \"spec.template.metadata.bogus\""`}
	if resp.StatusCode != 201 || strings.Join(resp.Header.Values("Warning"), "\n") != strings.Join(wantWarnings, "\n") {
		t.Errorf("Warn: %d %q", resp.StatusCode, resp.Header.Values("Warning"))
	}
	if !strings.Contains(body, `"template":{"apiVersion":"v1","data":{"a":"b"},"kind":"ConfigMap","metadata":{"name":"t"}}`) {
		t.Errorf("Warn: the embedded resource was not fitted: %s", body)
	}

	for _, tc := range []struct{ template, want string }{
		{`{"metadata":"x"}`, `Crate in version \"v1\" cannot be handled as a Crate: spec.template.metadata: Invalid value: \"x\": json: cannot unmarshal string into Go value of type v1.ObjectMeta`},
		{`{"apiVersion":5,"kind":"X"}`, `Crate in version \"v1\" cannot be handled as a Crate: spec.template.apiVersion: Invalid value: 5: must be a string`},
	} {
		resp, body := send(t, "POST", path, `{"apiVersion":"http.example.com/v1","kind":"Crate","metadata":{"name":"c3"},"spec":{"template":`+tc.template+`}}`,
			"Content-Type", "application/json")
		if resp.StatusCode != 400 || !strings.Contains(body, tc.want) {
			t.Errorf("template %s: %d %s", tc.template, resp.StatusCode, body)
		}
	}
	resp, body = send(t, "POST", path, `{"apiVersion":"http.example.com/v1","kind":"Crate","metadata":"x"}`, "Content-Type", "application/json")
	if want := `Crate in version \"v1\" cannot be handled as a Crate: json: cannot unmarshal string into Go value of type v1.ObjectMeta"`; resp.StatusCode != 400 || !strings.Contains(body, want) {
		t.Errorf("root metadata: %d %s", resp.StatusCode, body)
	}
}

// TestDiscovery_CustomResourcesAsKube: a group's versions by kube's
// version priority (the preferred one first), a custom resource's verbs
// in kube's order, its status before its scale, and the storage version
// hashes kube publishes.
func TestDiscovery_CustomResourcesAsKube(t *testing.T) {
	servedCrate(t)
	var group metav1.APIGroup
	getJSON(t, "/apis/http.example.com", &group)
	if len(group.Versions) != 2 || group.Versions[0].Version != "v1" || group.Versions[1].Version != "v1beta1" || group.PreferredVersion.Version != "v1" {
		t.Errorf("group: %+v", group)
	}
	var list metav1.APIResourceList
	getJSON(t, "/apis/http.example.com/v1", &list)
	var got []string
	for _, r := range list.APIResources {
		got = append(got, r.Name+" "+strings.Join(r.Verbs, ",")+" "+r.StorageVersionHash)
	}
	want := []string{
		"crates delete,deletecollection,get,list,patch,create,update,watch LFnU6kkCIXs=",
		"crates/status get,patch,update ",
		"crates/scale get,patch,update ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("resources:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for path, hashes := range map[string]map[string]string{
		"/apis/batch/v1":                     {"cronjobs": "sd5LIXh4Fjs=", "jobs": "mudhfqk/qZY="},
		"/api/v1":                            {"configmaps": "qFsyl6wFWjQ=", "events": "r2yiGXH7wu8=", "namespaces": "Q3oi5N2YM8M="},
		"/apis/events.k8s.io/v1":             {"events": "r2yiGXH7wu8="},
		"/apis/apiextensions.k8s.io/v1":      {"customresourcedefinitions": "jfWCUB31mvA="},
		"/apis/authorization.k8s.io/v1":      {"subjectaccessreviews": ""},
		"/apis/coordination.k8s.io/v1":       {"leases": "gqkMMb/YqFM="},
		"/apis/rbac.authorization.k8s.io/v1": {"clusterroles": "bYE5ZWDrJ44="},
	} {
		var l metav1.APIResourceList
		getJSON(t, path, &l)
		for _, r := range l.APIResources {
			if want, ok := hashes[r.Name]; ok && r.StorageVersionHash != want {
				t.Errorf("%s %s: storageVersionHash %q, want %q", path, r.Name, r.StorageVersionHash, want)
			}
		}
	}
}

func getJSON(t *testing.T, path string, into interface{}) {
	t.Helper()
	resp, body := send(t, "GET", path, "")
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
	}
	if err := json.Unmarshal([]byte(body), into); err != nil {
		t.Fatal(err)
	}
}

// TestNotFound_OutsideBuiltinGroupsIsPlainText: as kube, a path that names
// nothing in a group only definitions serve (or in no group at all) is
// the plain 404 of kube's fallback handler; in a built-in group it is a
// Status.
func TestNotFound_OutsideBuiltinGroupsIsPlainText(t *testing.T) {
	ns := servedCrate(t)
	for _, path := range []string{
		"/apis/nogroup.example.com", "/apis/nogroup.example.com/v1", "/apis/nogroup.example.com/v1/things",
		"/apis/http.example.com/v2", "/apis/http.example.com/v1/nothings", "/apis/http.example.com/v1/crates/c1", "/nothing",
	} {
		resp, body := send(t, "GET", path, "")
		if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || body != "404 page not found\n" {
			t.Errorf("%s: %d %s %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
	// kube's custom resource handler answers for a custom object's
	// subresource it does not have.
	for _, path := range []string{"/apis/batch/v1/nothings", "/apis/batch/v2", "/api/v1/nothings", "/apis/batch/v1/namespaces/" + ns + "/jobs/j/nosub",
		"/apis/http.example.com/v1/namespaces/" + ns + "/crates/c1/nosub"} {
		resp, body := send(t, "GET", path, "")
		if resp.StatusCode != 404 || !strings.Contains(body, `"reason":"NotFound"`) {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
}

const aggregatedJSON = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

// TestDiscovery_AggregatedAsKube: /apis and /api answer
// apidiscovery.k8s.io/v2beta1 to a client that asks for it first (as
// kubectl and client-go v1.29 do), with the same resources as the
// per-version documents (categories and short names included), kube's
// response kinds, an ETag and a 304 for a client that has it; others
// get the legacy documents.
func TestDiscovery_AggregatedAsKube(t *testing.T) {
	servedCrate(t)
	resp, body := send(t, "GET", "/apis", "", "Accept", aggregatedJSON+",application/json")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != aggregatedJSON || resp.Header.Get("Vary") != "Accept" ||
		resp.Header.Get("Cache-Control") != "public" || resp.Header.Get("ETag") == "" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	var list apidiscoveryv2beta1.APIGroupDiscoveryList
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "APIGroupDiscoveryList" || list.APIVersion != "apidiscovery.k8s.io/v2beta1" {
		t.Errorf("kind %s %s", list.APIVersion, list.Kind)
	}
	groups := map[string]apidiscoveryv2beta1.APIGroupDiscovery{}
	for _, g := range list.Items {
		groups[g.Name] = g
	}
	crates, ok := groups["http.example.com"]
	if !ok {
		t.Fatalf("no http.example.com in %s", body)
	}
	got, _ := json.Marshal(crates)
	const want = `{"metadata":{"name":"http.example.com","creationTimestamp":null},"versions":[` +
		`{"version":"v1","resources":[{"resource":"crates","responseKind":{"group":"http.example.com","version":"v1","kind":"Crate"},"scope":"Namespaced","singularResource":"crate",` +
		`"verbs":["delete","deletecollection","get","list","patch","create","update","watch"],"shortNames":["cr8"],"categories":["all"],"subresources":[` +
		`{"subresource":"status","responseKind":{"group":"http.example.com","version":"v1","kind":"Crate"},"verbs":["get","patch","update"]},` +
		`{"subresource":"scale","responseKind":{"group":"autoscaling","version":"v1","kind":"Scale"},"verbs":["get","patch","update"]}]}],"freshness":"Current"},` +
		`{"version":"v1beta1","resources":[{"resource":"crates","responseKind":{"group":"http.example.com","version":"v1beta1","kind":"Crate"},"scope":"Namespaced","singularResource":"crate",` +
		`"verbs":["delete","deletecollection","get","list","patch","create","update","watch"],"shortNames":["cr8"],"categories":["all"]}],"freshness":"Current"}]}`
	if string(got) != want {
		t.Errorf("http.example.com:\n%s\nwant\n%s", got, want)
	}
	batch, _ := json.Marshal(groups["batch"])
	if !strings.Contains(string(batch), `{"resource":"cronjobs","responseKind":{"group":"","version":"","kind":"CronJob"},"scope":"Namespaced","singularResource":"cronjob","verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"shortNames":["cj"],"categories":["all"],"subresources":[{"subresource":"status","responseKind":{"group":"","version":"","kind":"CronJob"},"verbs":["get","patch","update"]}]}`) {
		t.Errorf("batch: %s", batch)
	}
	if _, ok := groups[""]; ok {
		t.Error("/apis lists the core group")
	}

	resp2, _ := send(t, "GET", "/apis", "", "Accept", aggregatedJSON, "If-None-Match", resp.Header.Get("ETag"))
	if resp2.StatusCode != 304 {
		t.Errorf("If-None-Match with the ETag: %d", resp2.StatusCode)
	}
	resp, body = send(t, "GET", "/api", "", "Accept", aggregatedJSON)
	var core apidiscoveryv2beta1.APIGroupDiscoveryList
	if err := json.Unmarshal([]byte(body), &core); err != nil || resp.StatusCode != 200 || len(core.Items) != 1 || core.Items[0].Name != "" ||
		len(core.Items[0].Versions) != 1 || core.Items[0].Versions[0].Version != "v1" {
		t.Fatalf("/api: %d %s", resp.StatusCode, body)
	}
	resp, body = send(t, "GET", "/apis", "", "Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")
	if resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(body, `"kind":"APIGroupList"`) {
		t.Errorf("an unknown version of the aggregated kind, then JSON: %v %s", resp.Header, body)
	}
	resp, body = send(t, "GET", "/apis", "", "Accept", "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList")
	if resp.Header.Get("Content-Type") != "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList" || !strings.HasPrefix(body, "k8s\x00") {
		t.Errorf("protobuf: %v %q", resp.Header, body[:min(len(body), 40)])
	}
}

// TestCustomResourceServing_JSONBytesAsKube: a custom object, its list
// and its watch events are written as kube writes unstructured objects:
// one final newline and none inside, a list's keys sorted with continue
// always present.
func TestCustomResourceServing_JSONBytesAsKube(t *testing.T) {
	ns := servedCrate(t)
	base := "/apis/http.example.com/v1/namespaces/" + ns + "/crates"
	_, body := send(t, "GET", base+"/c1", "")
	if !strings.HasSuffix(body, "}}\n") || strings.Count(body, "\n") != 1 {
		t.Errorf("object: %q", body)
	}
	_, body = send(t, "GET", base, "")
	if !strings.HasPrefix(body, `{"apiVersion":"http.example.com/v1","items":[{"apiVersion":"http.example.com/v1","kind":"Crate","metadata":{`) ||
		!regexp.MustCompile(`\}\],"kind":"CrateList","metadata":\{"continue":"","resourceVersion":"[0-9]+"\}\}\n$`).MatchString(body) || strings.Count(body, "\n") != 1 {
		t.Errorf("list: %q", body)
	}
	_, body = send(t, "GET", base+"?watch=1&resourceVersion=0&timeoutSeconds=1", "")
	if !strings.HasPrefix(body, `{"type":"ADDED","object":{"apiVersion":"http.example.com/v1"`) || !strings.HasSuffix(body, "}}}\n") || strings.Count(body, "\n") != 1 {
		t.Errorf("watch: %q", body)
	}
}
