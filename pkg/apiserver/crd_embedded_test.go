package apiserver_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"k8s.io/client-go/dynamic"
)

// embCRD has an embedded resource that declares only its spec.
const embCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"embs.embedded.example.com"},
 "spec":{"group":"embedded.example.com","scope":"Namespaced","names":{"plural":"embs","singular":"emb","kind":"Emb"},
  "versions":[{"name":"v1","served":true,"storage":true,
   "schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{
    "template":{"type":"object","x-kubernetes-embedded-resource":true,"properties":{"spec":{"type":"object","properties":{"x":{"type":"string"}}}}}}}}}}}]}}`

// TestCustomResourceServing_ApplyOfAnEmbeddedResourceAsKube: a
// server-side apply sets an embedded resource's apiVersion, kind and
// metadata, which its schema does not declare, and records them as
// kube-apiserver v1.29 does; a later update keeps the applier's entry.
func TestCustomResourceServing_ApplyOfAnEmbeddedResourceAsKube(t *testing.T) {
	c := ctx(t)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	createCRD(c, t, dyn, embCRD)
	waitCondition(c, t, dyn, "embs.embedded.example.com", "Established", "True")
	ns := namespace(t)
	path := "/apis/embedded.example.com/v1/namespaces/" + ns + "/embs/e1"
	const obj = `{"apiVersion":"embedded.example.com/v1","kind":"Emb","metadata":{"name":"e1"},"spec":{"template":{"apiVersion":"v1","kind":"Foo",
 "metadata":{"name":"a","labels":{"k":"v"},"finalizers":["f1"],"ownerReferences":[{"apiVersion":"v1","kind":"X","name":"o","uid":"u1"}]},"spec":{"x":"s"}}}}`
	resp, got := send(t, http.MethodPatch, path+"?fieldManager=applier", obj, "Content-Type", "application/apply-patch+yaml")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("apply: %d %s", resp.StatusCode, got)
	}
	applied := object(t, got)
	mf, _ := json.Marshal(applied.GetManagedFields()[0].FieldsV1)
	const want = `{"f:spec":{"f:template":{"f:apiVersion":{},"f:kind":{},"f:metadata":{"f:finalizers":{"v:\"f1\"":{}},"f:labels":{"f:k":{}},"f:name":{},"f:ownerReferences":{"k:{\"uid\":\"u1\"}":{}}},"f:spec":{"f:x":{}}}}}`
	if string(mf) != want {
		t.Errorf("apply managedFields\n got  %s\n want %s", mf, want)
	}

	resp, got = send(t, http.MethodPatch, path+"?fieldManager=labeller", `{"metadata":{"labels":{"l":"1"}}}`, "Content-Type", "application/merge-patch+json")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("update: %d %s", resp.StatusCode, got)
	}
	var managers []string
	for _, e := range object(t, got).GetManagedFields() {
		managers = append(managers, e.Manager)
	}
	if len(managers) != 2 || managers[0] != "applier" || managers[1] != "labeller" {
		t.Errorf("managers after an update %v, want [applier labeller]", managers)
	}
}
