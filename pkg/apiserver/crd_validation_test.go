package apiserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// invalidCauses returns a 422's causes as "field: message" lines.
func invalidCauses(t *testing.T, err error) string {
	t.Helper()
	status, ok := err.(apierrors.APIStatus)
	if !apierrors.IsInvalid(err) || !ok {
		t.Fatalf("got %v, want 422 Invalid", err)
	}
	var lines []string
	for _, c := range status.Status().Details.Causes {
		lines = append(lines, c.Field+": "+c.Message)
	}
	return strings.Join(lines, "\n")
}

// Definitions and objects answered as kube-apiserver v1.29.15 answers
// them (its answers, taken from the reference, are the expectations):
// the int-or-string junctors kubebuilder writes, junctors and multipleOf
// in objects, protected groups, and errors at the spec's level for what
// the versions share.
func TestCustomResourceDefinition_ValidationAsKube(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	crd := func(name, group, extra, version string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + name + `s.` + group + `"` + extra + `},
		 "spec":{"group":"` + group + `","scope":"Namespaced","names":{"plural":"` + name + `s","kind":"` + strings.ToUpper(name[:1]) + name[1:] + `"},
		 "versions":[` + version + `]}}`
	}

	// Refused definitions.
	for _, tc := range []struct{ name, body, want string }{
		{"protected group", crd("thing", "x.k8s.io", "", `{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}`),
			`metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111`},
		{"set of objects", crd("thing", "example.net", "", `{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
			"s":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"object","properties":{"k":{"type":"string"}}}}}}}}`),
			`spec.validation.openAPIV3Schema.properties[s].items.x-kubernetes-map-type: Invalid value: "null": must be atomic as item of a list with x-kubernetes-list-type=set`},
		{"one version's column", crd("thing", "example.net", "", `{"name":"v1","served":true,"storage":true,"additionalPrinterColumns":[{"name":"X","type":"colour","jsonPath":".spec"}],"schema":{"openAPIV3Schema":{"type":"object"}}}`),
			`spec.additionalPrinterColumns[0].type: Invalid value: "colour": must be one of boolean,date,integer,number,string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dyn.Resource(crdsGVR).Create(ctx, object(t, tc.body), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if got := invalidCauses(t, err); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}

	// An int-or-string as kubebuilder writes it, junctors and multipleOf.
	createCRD(ctx, t, dyn, crd("junction", "example.net", "", `{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
		"spec":{"type":"object","properties":{
		 "port":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]},
		 "x":{"type":"integer","not":{"minimum":3}},
		 "z":{"type":"integer","multipleOf":5},
		 "o":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"oneOf":[{"required":["a"]},{"required":["b"]}]}}}}}}}`))
	t.Cleanup(func() {
		_ = dyn.Resource(crdsGVR).Delete(context.Background(), "junctions.example.net", metav1.DeleteOptions{})
	})
	junctions := dyn.Resource(schema.GroupVersionResource{Group: "example.net", Version: "v1", Resource: "junctions"}).Namespace("default")
	waitServed(ctx, t, junctions, object(t, `{"apiVersion":"example.net/v1","kind":"Junction","metadata":{"name":"ok"},"spec":{"port":"http","x":1,"z":10,"o":{"a":1}}}`))
	for _, tc := range []struct{ name, spec, want string }{
		{"int-or-string", `{"port":true}`,
			`spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"` + "\n" +
				`<nil>: Invalid value: "": "spec.port" must validate at least one schema (anyOf)` + "\n" +
				`spec.port: Invalid value: "boolean": spec.port in body must be of type integer: "boolean"`},
		{"not", `{"x":4}`, `<nil>: Invalid value: "": "spec.x" must not validate the schema (not)`},
		{"multipleOf", `{"z":7}`, `spec.z: Invalid value: 7: spec.z in body should be a multiple of 5`},
		{"oneOf", `{"o":{}}`,
			`<nil>: Invalid value: "": "spec.o" must validate one and only one schema (oneOf). Found none valid` + "\n" + `spec.o.a: Required value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := junctions.Create(ctx, object(t, `{"apiVersion":"example.net/v1","kind":"Junction","metadata":{"name":"bad"},"spec":`+tc.spec+`}`), metav1.CreateOptions{})
			if got := invalidCauses(t, err); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
