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

// TestCustomResourceDefinition_CELRules: a definition whose rules use
// kube's libraries (regex find, lists, URLs, quantities), formats typed
// as timestamps and durations, a set list compared without order and a
// transition rule; objects are answered 201 or 422 with each rule's
// message, as kube-apiserver v1.29 answers them.
func TestCustomResourceDefinition_CELRules(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	createCRD(ctx, t, dyn, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"probes.example.org"},
	 "spec":{"group":"example.org","scope":"Namespaced","names":{"plural":"probes","kind":"Probe"},
	 "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object",
	  "x-kubernetes-validations":[{"rule":"self.metadata.name.startsWith('p-')","message":"name must start with p-"}],
	  "properties":{"spec":{"type":"object","properties":{
	   "image":{"type":"string","maxLength":64},
	   "endpoint":{"type":"string","maxLength":128},
	   "memory":{"type":"string","maxLength":16},
	   "weights":{"type":"array","maxItems":8,"items":{"type":"integer"}},
	   "zones":{"type":"array","maxItems":8,"x-kubernetes-list-type":"set","items":{"type":"string","maxLength":16}},
	   "notAfter":{"type":"string","format":"date-time"},
	   "period":{"type":"string","format":"duration"},
	   "replicas":{"type":"integer"}},
	   "x-kubernetes-validations":[
	    {"rule":"self.image.find('[0-9]+[.][0-9]+') != ''","message":"image must carry a version"},
	    {"rule":"isURL(self.endpoint) && url(self.endpoint).getScheme() == 'https'","message":"endpoint must be an https URL"},
	    {"rule":"isQuantity(self.memory) && quantity(self.memory).isLessThan(quantity('1Gi'))","message":"memory must be under 1Gi"},
	    {"rule":"!has(self.weights) || (self.weights.sum() == 100 && self.weights.isSorted())","message":"weights must add up to 100, in order"},
	    {"rule":"!has(self.notAfter) || self.notAfter > timestamp('2020-01-01T00:00:00Z')","message":"notAfter is too early"},
	    {"rule":"!has(self.period) || self.period >= duration('1m')","message":"period is too short"},
	    {"rule":"!has(self.zones) || !has(oldSelf.zones) || self.zones == oldSelf.zones","message":"zones are immutable"},
	    {"rule":"self.replicas >= oldSelf.replicas","message":"replicas may not decrease"}]}}}}}]}}`)
	probes := dyn.Resource(schema.GroupVersionResource{Group: "example.org", Version: "v1", Resource: "probes"}).Namespace("default")
	const good = `"image":"web:1.25","endpoint":"https://example.com/healthz","memory":"512Mi","weights":[20,80],"zones":["a","b"],"notAfter":"2030-01-01T00:00:00Z","period":"1h","replicas":2`
	waitServed(ctx, t, probes, object(t, `{"apiVersion":"example.org/v1","kind":"Probe","metadata":{"name":"p-ok"},"spec":{`+good+`}}`))

	for _, tc := range []struct{ name, spec, want string }{
		{"p-image", `{"image":"web:latest","endpoint":"https://example.com","memory":"1Mi","replicas":1}`, `spec: Invalid value: "object": image must carry a version`},
		{"p-endpoint", `{"image":"web:1.2","endpoint":"http://example.com","memory":"1Mi","replicas":1}`, `spec: Invalid value: "object": endpoint must be an https URL`},
		{"p-memory", `{"image":"web:1.2","endpoint":"https://example.com","memory":"2Gi","replicas":1}`, `spec: Invalid value: "object": memory must be under 1Gi`},
		{"p-weights", `{"image":"web:1.2","endpoint":"https://example.com","memory":"1Mi","weights":[80,20],"replicas":1}`, `spec: Invalid value: "object": weights must add up to 100, in order`},
		{"p-time", `{"image":"web:1.2","endpoint":"https://example.com","memory":"1Mi","notAfter":"2019-12-31T23:00:00Z","period":"30s","replicas":1}`,
			`[spec: Invalid value: "object": notAfter is too early, spec: Invalid value: "object": period is too short]`},
		{"x-name", `{` + good + `}`, `<nil>: Invalid value: "object": name must start with p-`},
		{"p-blocked", `{"image":"web:1.2","endpoint":"https://example.com","memory":"1Mi","weights":[1,2,3,4,5,6,7,8,9],"replicas":1}`,
			`[spec.weights: Too many: 9: must have at most 8 items, <nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]`},
	} {
		_, err := probes.Create(ctx, object(t, `{"apiVersion":"example.org/v1","kind":"Probe","metadata":{"name":"`+tc.name+`"},"spec":`+tc.spec+`}`), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.HasSuffix(err.Error(), `is invalid: `+tc.want) {
			t.Errorf("create %s: %v, want 422 with %s", tc.name, err, tc.want)
		}
	}

	// update: the set compares without order; replicas may not decrease
	cur, err := probes.Get(ctx, "p-ok", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Object["spec"].(map[string]interface{})["zones"] = []interface{}{"b", "a"}
	if cur, err = probes.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("reordering a set: %v", err)
	}
	cur.Object["spec"].(map[string]interface{})["replicas"] = int64(1)
	cur.Object["spec"].(map[string]interface{})["zones"] = []interface{}{"a", "c"}
	_, err = probes.Update(ctx, cur, metav1.UpdateOptions{})
	if want := `[spec: Invalid value: "object": zones are immutable, spec: Invalid value: "object": replicas may not decrease]`; !apierrors.IsInvalid(err) || !strings.HasSuffix(err.Error(), "is invalid: "+want) {
		t.Errorf("update: %v, want 422 with %s", err, want)
	}
}

// TestCustomResourceDefinition_CELRulesRefused: rules that do not type
// check, or cost too much, are refused when the definition is created,
// with kube-apiserver v1.29's words.
func TestCustomResourceDefinition_CELRulesRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	crd := func(spec string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"refused.example.org"},
		 "spec":{"group":"example.org","scope":"Namespaced","names":{"plural":"refused","kind":"Refused"},
		 "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":` + spec + `}}}}]}}`
	}
	for _, tc := range []struct{ name, spec, want string }{
		{"type error", `{"type":"object","properties":{"name":{"type":"string"}},"x-kubernetes-validations":[{"rule":"self.name == 1"}]}`,
			`properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:"self.name == 1", Message:"", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:11: found no matching overload for '_==_' applied to '(string, int)'`},
		{"undefined field", `{"type":"object","properties":{"name":{"type":"string"}},"x-kubernetes-validations":[{"rule":"self.nope > 0"}]}`,
			`compilation failed: ERROR: <input>:1:5: undefined field 'nope'`},
		{"not a bool", `{"type":"object","properties":{"name":{"type":"string"}},"x-kubernetes-validations":[{"rule":"self.name"}]}`,
			`: cel expression must evaluate to a bool`},
		{"cost", `{"type":"object","properties":{"l":{"type":"array","items":{"type":"string","x-kubernetes-validations":[{"rule":"self.size() > 1 && self.size() < 9 && self.size() != 4 && self.size() != 5"}]}}}}`,
			`properties[spec].properties[l].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 1.258291x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)`},
		{"uncorrelatable", `{"type":"object","properties":{"l":{"type":"array","maxItems":4,"items":{"type":"string","maxLength":4,"x-kubernetes-validations":[{"rule":"self == oldSelf"}]}}}}`,
			`properties[spec].properties[l].items.x-kubernetes-validations[0].rule: Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the schema within `},
		{"empty rule", `{"type":"object","x-kubernetes-validations":[{"rule":" "}]}`,
			`properties[spec].x-kubernetes-validations[0].rule: Required value: rule is not specified`},
	} {
		_, err := dyn.Resource(crdsGVR).Create(ctx, object(t, crd(tc.spec)), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want 422 with %s", tc.name, err, tc.want)
		}
	}
}
