package apiserver_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// dvCRD has two versions with different fields and defaults: v1 is
// stored.
const dvCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"dvs.versions.example.com"},
 "spec":{"group":"versions.example.com","scope":"Namespaced","names":{"plural":"dvs","kind":"DV"},"versions":[
  {"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{
   "a":{"type":"string","default":"from-v1"},"b":{"type":"string"},"c":{"type":"string"},"only1":{"type":"string","default":"only-v1"}}}}}}},
  {"name":"v2","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{
   "a":{"type":"string"},"b":{"type":"string","default":"from-v2"},"only2":{"type":"string","default":"only-v2"}}}}}}}]}}`

// TestCustomResourceServing_VersionsPrunedAndDefaultedAsKube: as kube, a
// body is defaulted in its own version and pruned by the storage
// version's schema when converted for storage; an object read from
// storage is defaulted by the schema of the version it was stored in
// (also for defaults added after it was written) and pruned by the schema
// of the version asked for. The answers are kube-apiserver v1.29's.
func TestCustomResourceServing_VersionsPrunedAndDefaultedAsKube(t *testing.T) {
	c := ctx(t)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	createCRD(c, t, dyn, dvCRD)
	ns := namespace(t)
	v1 := dyn.Resource(schema.GroupVersionResource{Group: "versions.example.com", Version: "v1", Resource: "dvs"}).Namespace(ns)
	v2 := dyn.Resource(schema.GroupVersionResource{Group: "versions.example.com", Version: "v2", Resource: "dvs"}).Namespace(ns)
	spec := func(t *testing.T, obj map[string]interface{}) string {
		t.Helper()
		b, _ := json.Marshal(obj["spec"])
		return string(b)
	}
	waitServed(c, t, v1, object(t, `{"apiVersion":"versions.example.com/v1","kind":"DV","metadata":{"name":"d1"},"spec":{"c":"x"}}`))
	d2 := object(t, `{"apiVersion":"versions.example.com/v2","kind":"DV","metadata":{"name":"d2"},"spec":{"only2":"set"}}`)
	created := waitServedObject(c, t, v2, d2)
	if got, want := spec(t, created.Object), `{"a":"from-v1","b":"from-v2"}`; got != want {
		t.Errorf("created through v2: spec %s, want %s", got, want)
	}
	reads := []struct {
		ri         dynamic.ResourceInterface
		name, want string
	}{
		{v1, "d1", `{"a":"from-v1","c":"x","only1":"only-v1"}`},
		{v1, "d2", `{"a":"from-v1","b":"from-v2","only1":"only-v1"}`},
		{v2, "d1", `{"a":"from-v1"}`},
		{v2, "d2", `{"a":"from-v1","b":"from-v2"}`},
	}
	for _, r := range reads {
		got, err := r.ri.Get(c, r.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s := spec(t, got.Object); s != r.want {
			t.Errorf("%s read as %s: spec %s, want %s", r.name, got.GetAPIVersion(), s, r.want)
		}
	}

	// A default added later shows on read, without the object written.
	patch := `[{"op":"add","path":"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/c/default","value":"late"}]`
	if _, err := dyn.Resource(crdsGVR).Patch(c, "dvs.versions.example.com", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := v1.Get(c, "d2", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s := spec(t, got.Object)
		if s == `{"a":"from-v1","b":"from-v2","c":"late","only1":"only-v1"}` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("d2 after a default was added: spec %s", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	list, err := v1.List(c, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("list: %v", err)
	}
	if s := spec(t, list.Items[1].Object); s != `{"a":"from-v1","b":"from-v2","c":"late","only1":"only-v1"}` {
		t.Errorf("d2 listed: spec %s", s)
	}
}

// waitServedObject creates obj once its resource is served and returns
// what the server answered.
func waitServedObject(ctx context.Context, t *testing.T, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := ri.Create(ctx, obj, metav1.CreateOptions{})
		if err == nil {
			return out
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
