//go:build e2e

package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// A definition created through one apiserver is served by both within 2 s
// (issue 20's target): discovery lists it and a create of its kind
// succeeds on each.
func TestCRD_NewDefinitionServedByBothApiserversWithinTwoSeconds(t *testing.T) {
	logsOnFailure(t)
	ctx := context.Background()
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gadgets := schema.GroupVersionResource{Group: "e2e.example.org", Version: "v1", Resource: "gadgets"}
	crd := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]interface{}{"name": "gadgets.e2e.example.org"},
		"spec": map[string]interface{}{
			"group": "e2e.example.org", "scope": "Namespaced",
			"names": map[string]interface{}{"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
			"versions": []interface{}{map[string]interface{}{"name": "v1", "served": true, "storage": true,
				"schema": map[string]interface{}{"openAPIV3Schema": map[string]interface{}{"type": "object", "properties": map[string]interface{}{
					"spec": map[string]interface{}{"type": "object", "properties": map[string]interface{}{"size": map[string]interface{}{"type": "integer"}}},
				}}}}},
		},
	}}
	d0 := dynamic.NewForConfigOrDie(restConfig(t, "apiserver-0"))
	start := time.Now()
	if _, err := d0.Resource(crds).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, name := range []string{"apiserver-0", "apiserver-1"} {
		wg.Add(1)
		go func(name string) {
			defer wg.Done()
			cfg := restConfig(t, name)
			d := dynamic.NewForConfigOrDie(cfg)
			disco := client(t, name).Discovery()
			served, created := time.Duration(0), time.Duration(0)
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) && (served == 0 || created == 0) {
				if served == 0 {
					if l, err := disco.ServerResourcesForGroupVersion("e2e.example.org/v1"); err == nil && len(l.APIResources) > 0 {
						served = time.Since(start)
					}
				}
				if created == 0 {
					g := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "e2e.example.org/v1", "kind": "Gadget",
						"metadata": map[string]interface{}{"name": "from-" + name}, "spec": map[string]interface{}{"size": int64(1)}}}
					if _, err := d.Resource(gadgets).Namespace("default").Create(ctx, g, metav1.CreateOptions{}); err == nil {
						created = time.Since(start)
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Logf("%s: the new CRD in discovery after %v, first create after %v", name, served.Round(time.Millisecond), created.Round(time.Millisecond))
			if served == 0 || created == 0 || served > 2*time.Second || created > 2*time.Second {
				t.Errorf("%s: discovery after %v, create after %v; want both within 2s", name, served, created)
			}
		}(name)
	}
	wg.Wait()
}
