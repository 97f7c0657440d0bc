package apiserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// legacyCRD is written as a v1 definition, then given
// spec.preserveUnknownFields in etcd, as older clients left it.
const legacyCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"pufs.legacy.example.com"},
 "spec":{"group":"legacy.example.com","scope":"Namespaced","names":{"plural":"pufs","singular":"puf","kind":"Puf"},
  "versions":[{"name":"v1","served":true,"storage":true,
   "schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string"}}}}}}}]}}`

// TestCustomResourceDefinition_LegacyPreserveUnknownFieldsKeepsThem: a
// definition stored with spec.preserveUnknownFields (v1 refuses to set
// it) gets kube's NonStructuralSchema condition, and its objects keep the
// fields the schema does not name, written through the API or found in
// etcd, on create, read, update and apply; only unknown metadata is
// reported or dropped. Answers of kube-apiserver v1.29 for the same
// definition.
func TestCustomResourceDefinition_LegacyPreserveUnknownFieldsKeepsThem(t *testing.T) {
	c := ctx(t)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	const name = "pufs.legacy.example.com"
	createCRD(c, t, dyn, legacyCRD)
	waitCondition(c, t, dyn, name, "Established", "True")

	key := "/registry/apiextensions.k8s.io/customresourcedefinitions/" + name
	kv, err := srv.EtcdClient().Get(c, key)
	if err != nil || len(kv.Kvs) != 1 {
		t.Fatalf("reading %s: %v", key, err)
	}
	var stored map[string]interface{}
	if err := json.Unmarshal(kv.Kvs[0].Value, &stored); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(stored, true, "spec", "preserveUnknownFields"); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(stored)
	if _, err := srv.EtcdClient().Put(c, key, string(data)); err != nil {
		t.Fatal(err)
	}
	cond := waitCondition(c, t, dyn, name, "NonStructuralSchema", "True")
	if cond["reason"] != "Violations" || cond["message"] != "spec.preserveUnknownFields: Invalid value: true: must be false" {
		t.Errorf("NonStructuralSchema condition %v", cond)
	}

	ns := namespace(t)
	path := "/apis/legacy.example.com/v1/namespaces/" + ns + "/pufs"
	body := func(name string) string {
		return `{"apiVersion":"legacy.example.com/v1","kind":"Puf","metadata":{"name":"` + name + `","junk":1},"spec":{"a":"x","b":"unknown"},"extra":{"n":1}}`
	}
	// The new resource is served once the server has read the change.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, got := send(t, http.MethodPost, path+"?fieldValidation=Strict", body("p0"), "Content-Type", "application/json")
		if resp.StatusCode == http.StatusBadRequest && strings.Contains(got, `strict decoding error: unknown field \"metadata.junk\"`) {
			if strings.Contains(got, "spec.b") || strings.Contains(got, "extra") {
				t.Errorf("strict create reports fields the definition keeps: %s", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("strict create: %d %s", resp.StatusCode, got)
		}
		time.Sleep(20 * time.Millisecond)
	}

	resp, got := send(t, http.MethodPost, path+"?fieldManager=creator", body("p1"), "Content-Type", "application/json")
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Warning") != `299 - "unknown field \"metadata.junk\""` {
		t.Fatalf("create: %d %q %s", resp.StatusCode, resp.Header.Get("Warning"), got)
	}
	keeps := func(what, got string) *unstructured.Unstructured {
		t.Helper()
		u := object(t, got)
		if b, _, _ := unstructured.NestedString(u.Object, "spec", "b"); b != "unknown" {
			t.Errorf("%s: spec.b %q, want it kept: %s", what, b, got)
		}
		if n, _, _ := unstructured.NestedFieldNoCopy(u.Object, "extra", "n"); fmt.Sprint(n) != "1" {
			t.Errorf("%s: extra.n %v, want it kept: %s", what, n, got)
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "junk"); found {
			t.Errorf("%s: metadata.junk kept", what)
		}
		return u
	}
	created := keeps("create", got)
	mf, _ := json.Marshal(created.GetManagedFields()[0].FieldsV1)
	if want := `{"f:extra":{".":{},"f:n":{}},"f:spec":{".":{},"f:a":{},"f:b":{}}}`; string(mf) != want {
		t.Errorf("create managedFields %s, want %s", mf, want)
	}
	_, got = send(t, http.MethodGet, path+"/p1", "")
	keeps("get", got)

	// An object kube stored with fields of its own is read and updated
	// without losing them.
	objKey := "/registry/legacy.example.com/pufs/" + ns + "/p2"
	if _, err := srv.EtcdClient().Put(c, objKey, `{"apiVersion":"legacy.example.com/v1","kind":"Puf","metadata":{"name":"p2","namespace":"`+ns+`","uid":"4b4ac4a4-5b8c-4b0f-9d0e-3c5b1c1b1c1b","generation":1,"creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"a":"x","b":"unknown"},"extra":{"n":1}}`); err != nil {
		t.Fatal(err)
	}
	_, got = send(t, http.MethodGet, path+"/p2", "")
	keeps("get of kube's object", got)
	pufs := dyn.Resource(schema.GroupVersionResource{Group: "legacy.example.com", Version: "v1", Resource: "pufs"}).Namespace(ns)
	p2, err := pufs.Get(c, "p2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(p2.Object, "y", "spec", "a"); err != nil {
		t.Fatal(err)
	}
	updated, err := pufs.Update(c, p2, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, _ = json.Marshal(updated.Object)
	keeps("update", string(data))

	resp, got = send(t, http.MethodPatch, path+"/p3?fieldManager=applier",
		`{"apiVersion":"legacy.example.com/v1","kind":"Puf","metadata":{"name":"p3"},"spec":{"a":"x","b":"unknown"},"extra":{"n":1}}`,
		"Content-Type", "application/apply-patch+yaml")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("apply: %d %s", resp.StatusCode, got)
	}
	applied := keeps("apply", got)
	mf, _ = json.Marshal(applied.GetManagedFields()[0].FieldsV1)
	if want := `{"f:extra":{".":{},"f:n":{}},"f:spec":{"f:a":{},"f:b":{}}}`; string(mf) != want {
		t.Errorf("apply managedFields %s, want %s", mf, want)
	}
}
