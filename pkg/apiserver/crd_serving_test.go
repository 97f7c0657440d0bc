package apiserver_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
)

// The expectations below are what kube-apiserver v1.29 answered to the
// same requests (reference run, ../shared/reference from the repository root).

// probeCRD has printer columns of every type, with filters, wildcards,
// recursive descent and a quoted key, a column whose path does not parse
// (it and the ones after it are not shown), and deprecated versions
// without their own warning.
const probeCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"probes.serving.example.com"},
 "spec":{"group":"serving.example.com","scope":"Namespaced","names":{"plural":"probes","singular":"probe","kind":"Probe","listKind":"ProbeList"},
  "versions":[
   {"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
    "additionalPrinterColumns":[
     {"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"},
     {"name":"Ports","type":"string","jsonPath":".spec.ports[*].num"},
     {"name":"PortsInt","type":"integer","jsonPath":".spec.ports[*].num"},
     {"name":"Replicas","type":"integer","jsonPath":".spec.replicas","description":"the replicas"},
     {"name":"Ratio","type":"number","jsonPath":".spec.ratio"},
     {"name":"Enabled","type":"boolean","jsonPath":".spec.enabled","priority":1},
     {"name":"When","type":"date","jsonPath":".spec.when"},
     {"name":"Colour","type":"string","format":"byte","jsonPath":".spec.colour"},
     {"name":"Labels","type":"string","jsonPath":".spec.labels"},
     {"name":"IntAsStr","type":"string","jsonPath":".spec.replicas"},
     {"name":"StrAsInt","type":"integer","jsonPath":".spec.colour"},
     {"name":"Rec","type":"string","jsonPath":"..num"},
     {"name":"Key","type":"string","jsonPath":".spec['colour']"},
     {"name":"Bad","type":"string","jsonPath":".spec["},
     {"name":"After","type":"string","jsonPath":".spec.colour"}],
    "schema":{"openAPIV3Schema":{"type":"object","properties":{
     "spec":{"type":"object","properties":{"replicas":{"type":"integer"},"ratio":{"type":"number"},"enabled":{"type":"boolean"},
      "when":{"type":"string"},"colour":{"type":"string"},"labels":{"type":"object","additionalProperties":{"type":"string"}},
      "ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["num"],"items":{"type":"object","required":["num"],"properties":{"num":{"type":"integer"},"p":{"type":"string"}}}}}},
     "status":{"type":"object","properties":{"conditions":{"type":"array","items":{"type":"object","properties":{"type":{"type":"string"},"status":{"type":"string"}}}}}}}}}},
   {"name":"v1beta1","served":true,"storage":false,"deprecated":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}},
   {"name":"v2","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}},
   {"name":"v1alpha1","served":true,"storage":false,"deprecated":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`

const probeObject = `{"apiVersion":"serving.example.com/v1","kind":"Probe","metadata":{"name":"p1"},
 "spec":{"replicas":3,"ratio":1.5,"enabled":true,"when":"2024-01-02T03:04:05Z","colour":"red","labels":{"a":"b"},"ports":[{"num":80,"p":"http"},{"num":443}]}}`

var probesV1 = schema.GroupVersionResource{Group: "serving.example.com", Version: "v1", Resource: "probes"}

// servedProbe creates the probe CRD on the shared server, once, and the
// object p1 in a namespace of the test's own.
func servedProbe(t *testing.T) (dynamic.Interface, string) {
	t.Helper()
	c := ctx(t)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	if _, err := dyn.Resource(crdsGVR).Create(c, object(t, probeCRD), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ns := namespace(t)
	probes := dyn.Resource(probesV1).Namespace(ns)
	createWhenServed(c, t, probes, object(t, probeObject))
	p, err := probes.Get(c, "p1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Object["status"] = map[string]interface{}{"conditions": []interface{}{
		map[string]interface{}{"type": "Other", "status": "False"}, map[string]interface{}{"type": "Ready", "status": "True"}}}
	if _, err := probes.UpdateStatus(c, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return dyn, ns
}

func tableOf(t *testing.T, path string) metav1.Table {
	t.Helper()
	data, err := srv.Client.CoreV1().RESTClient().Get().AbsPath(path).Param("includeObject", "None").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatal(err)
	}
	return table
}

func TestCustomResourceServing_TableAsKube(t *testing.T) {
	_, ns := servedProbe(t)
	table := tableOf(t, "/apis/serving.example.com/v1/namespaces/"+ns+"/probes")
	const kubeColumns = `[{"name":"Ready","type":"string","format":"","description":"Custom resource definition column (in JSONPath format): .status.conditions[?(@.type==\"Ready\")].status","priority":0},{"name":"Ports","type":"string","format":"","description":"Custom resource definition column (in JSONPath format): .spec.ports[*].num","priority":0},{"name":"PortsInt","type":"integer","format":"","description":"Custom resource definition column (in JSONPath format): .spec.ports[*].num","priority":0},{"name":"Replicas","type":"integer","format":"","description":"the replicas","priority":0},{"name":"Ratio","type":"number","format":"","description":"Custom resource definition column (in JSONPath format): .spec.ratio","priority":0},{"name":"Enabled","type":"boolean","format":"","description":"Custom resource definition column (in JSONPath format): .spec.enabled","priority":1},{"name":"When","type":"date","format":"","description":"Custom resource definition column (in JSONPath format): .spec.when","priority":0},{"name":"Colour","type":"string","format":"byte","description":"Custom resource definition column (in JSONPath format): .spec.colour","priority":0},{"name":"Labels","type":"string","format":"","description":"Custom resource definition column (in JSONPath format): .spec.labels","priority":0},{"name":"IntAsStr","type":"string","format":"","description":"Custom resource definition column (in JSONPath format): .spec.replicas","priority":0},{"name":"StrAsInt","type":"integer","format":"","description":"Custom resource definition column (in JSONPath format): .spec.colour","priority":0},{"name":"Rec","type":"string","format":"","description":"Custom resource definition column (in JSONPath format): ..num","priority":0},{"name":"Key","type":"string","format":"","description":"Custom resource definition column (in JSONPath format): .spec['colour']","priority":0}]`
	if len(table.ColumnDefinitions) == 0 || table.ColumnDefinitions[0].Name != "Name" {
		t.Fatalf("columns %+v", table.ColumnDefinitions)
	}
	if got, _ := json.Marshal(table.ColumnDefinitions[1:]); string(got) != kubeColumns {
		t.Errorf("columns\n%s\nwant\n%s", got, kubeColumns)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("rows %+v", table.Rows)
	}
	cells := table.Rows[0].Cells
	// The date cell is an age, as kube renders it: "2y328d" on the day
	// the reference answered.
	if len(cells) != 14 || !regexp.MustCompile(`^\d+y\d+d$`).MatchString(cells[7].(string)) {
		t.Fatalf("cells %v", cells)
	}
	cells[7] = "2y328d"
	if got, _ := json.Marshal(cells); string(got) != `["p1","True","80",80,3,1.5,true,"2y328d","red","{\"a\":\"b\"}","3",null,"80","red"]` {
		t.Errorf("cells %s", got)
	}

	// A version without columns shows the age, described as kube does.
	table = tableOf(t, "/apis/serving.example.com/v2/namespaces/"+ns+"/probes")
	age, _ := json.Marshal(table.ColumnDefinitions[1:])
	const kubeAge = `[{"name":"Age","type":"date","format":"","description":"CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata","priority":0}]`
	if string(age) != kubeAge || len(table.Rows) != 1 || !regexp.MustCompile(`^\d+s$`).MatchString(table.Rows[0].Cells[1].(string)) {
		t.Errorf("v2 table: %s %v", age, table.Rows)
	}

	// kubectl prints what the server computed.
	out := mustKubectl(t, "-n", ns, "get", "probes.v1.serving.example.com", "-o", "wide")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := [][]string{
		{"NAME", "READY", "PORTS", "PORTSINT", "REPLICAS", "RATIO", "ENABLED", "WHEN", "COLOUR", "LABELS", "INTASSTR", "STRASINT", "REC", "KEY"},
		{"p1", "True", "80", "80", "3", "1.5", "true", "2y328d", "red", `{"a":"b"}`, "3", "80", "red"},
	}
	if len(lines) != 2 || !reflect.DeepEqual(strings.Fields(lines[0]), want[0]) {
		t.Fatalf("kubectl get -o wide:\n%s", out)
	}
	if row := strings.Fields(lines[1]); len(row) != len(want[1]) || !regexp.MustCompile(`^\d+y\d+d$`).MatchString(row[7]) {
		t.Errorf("kubectl row %q", row)
	} else {
		row[7] = "2y328d"
		if !reflect.DeepEqual(row, want[1]) {
			t.Errorf("kubectl row %q, want %q", row, want[1])
		}
	}
}

func TestCustomResourceServing_DeprecationWarningNamesReplacement(t *testing.T) {
	_, ns := servedProbe(t)
	for version, want := range map[string]string{
		"v1beta1":  `299 - "serving.example.com/v1beta1 Probe is deprecated; use serving.example.com/v2 Probe"`,
		"v1alpha1": `299 - "serving.example.com/v1alpha1 Probe is deprecated; use serving.example.com/v2 Probe"`,
		"v2":       "",
	} {
		resp, _ := raw(t, "GET", "/apis/serving.example.com/"+version+"/namespaces/"+ns+"/probes", srv.AdminToken, "", "")
		if got := strings.Join(resp.Header.Values("Warning"), "|"); got != want {
			t.Errorf("%s: warning %q, want %q", version, got, want)
		}
	}
}

// termCRD is a definition whose object keeps it terminating.
const termCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"terms.serving.example.com"},
 "spec":{"group":"serving.example.com","scope":"Namespaced","names":{"plural":"terms","singular":"term","kind":"Term","listKind":"TermList"},
  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`

func TestCustomResourceServing_CreateRefusedWhileCRDTerminating(t *testing.T) {
	c := ctx(t)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	ns := namespace(t)
	createCRD(c, t, dyn, termCRD)
	terms := dyn.Resource(schema.GroupVersionResource{Group: "serving.example.com", Version: "v1", Resource: "terms"}).Namespace(ns)
	createWhenServed(c, t, terms, object(t, `{"apiVersion":"serving.example.com/v1","kind":"Term","metadata":{"name":"t1","finalizers":["example.com/hold"]}}`))
	t.Cleanup(func() {
		_, _ = terms.Patch(context.Background(), "t1", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	if err := dyn.Resource(crdsGVR).Delete(c, "terms.serving.example.com", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	const kubeStatus = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"create not allowed while custom resource definition is terminating","reason":"MethodNotAllowed","details":{"group":"serving.example.com","kind":"terms"},"code":405}`
	path := "/apis/serving.example.com/v1/namespaces/" + ns + "/terms"
	var code int
	var body string
	eventually(t, "creates refused while the definition terminates", func() bool {
		resp, b := raw(t, "POST", path, srv.AdminToken, "application/json", `{"apiVersion":"serving.example.com/v1","kind":"Term","metadata":{"name":"t2"}}`)
		code, body = resp.StatusCode, b
		return code == http.StatusMethodNotAllowed
	})
	if got := compactJSON(t, body); got != kubeStatus {
		t.Errorf("create while terminating: %d\n%s\nwant\n%s", code, got, kubeStatus)
	}
	// Also with dryRun, as kube.
	if resp, _ := raw(t, "POST", path+"?dryRun=All", srv.AdminToken, "application/json", `{"apiVersion":"serving.example.com/v1","kind":"Term","metadata":{"name":"t2"}}`); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("dry-run create while terminating: %d", resp.StatusCode)
	}
	// kube refuses only the POST: an apply creates.
	resp, b := raw(t, "PATCH", "/apis/serving.example.com/v1/namespaces/"+ns+"/terms/t3?fieldManager=m", srv.AdminToken, "application/apply-patch+yaml",
		`{"apiVersion":"serving.example.com/v1","kind":"Term","metadata":{"name":"t3"}}`)
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("apply while terminating: %d %s", resp.StatusCode, b)
	}
}

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var v interface{}
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	// Keep the field order of a Status.
	if m, ok := v.(map[string]interface{}); ok && m["kind"] == "Status" {
		var st metav1.Status
		_ = json.Unmarshal([]byte(s), &st)
		b, _ := json.Marshal(st)
		return string(b)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// shapeCRD's schema carries the keywords and extensions kube publishes.
const shapeCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"shapes.openapi.example.com"},
 "spec":{"group":"openapi.example.com","scope":"Cluster","names":{"plural":"shapes","singular":"shape","kind":"Shape","listKind":"ShapeList"},
  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","required":["x","nul1"],"properties":{"x":{"type":"string","nullable":true},"nul1":{"type":"string","nullable":true,"description":"d","maxLength":3,"enum":["a"],"default":"a"},"nulobj":{"type":"object","nullable":true,"description":"no","properties":{"a":{"type":"string"}}},"pobj":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"a":{"type":"string"}},"description":"d"},"parr":{"type":"array","items":{"type":"string"},"nullable":true,"maxItems":2},"parr2":{"type":"array","items":{"type":"object","x-kubernetes-preserve-unknown-fields":true}},"mo":{"type":"number","multipleOf":0.5,"minimum":1,"exclusiveMinimum":true},"junct":{"type":"string","anyOf":[{"maxLength":3},{"pattern":"^a"}],"not":{"enum":["zz"]},"allOf":[{"minLength":1}],"oneOf":[{"maxLength":2},{"minLength":5}]},"fmt":{"type":"string","format":"int32"},"emb2":{"type":"object","x-kubernetes-embedded-resource":true,"properties":{"spec":{"type":"object"}}},"ios":{"x-kubernetes-int-or-string":true,"description":"d","anyOf":[{"type":"integer"},{"type":"string"}],"pattern":"^[0-9]+%?$"},"addl":{"type":"object","additionalProperties":{"type":"string","nullable":true}},"def":{"type":"object","default":{"a":"b"},"properties":{"a":{"type":"string"}}},"ms":{"type":"object","x-kubernetes-map-type":"atomic","additionalProperties":{"type":"string"}},"val":{"type":"object","properties":{"a":{"type":"string"}},"x-kubernetes-validations":[{"rule":"self.a == 'x'","message":"m","messageExpression":"'bad ' + self.a","reason":"FieldValueForbidden","fieldPath":".a"},{"rule":"self.a == oldSelf.a","optionalOldSelf":false}]},"sr":{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"atomic"},"ep":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true,"properties":{"spec":{"type":"string"}}},"emptyobj":{"type":"object"},"fl":{"type":"number","format":"double","maximum":1.5,"minimum":-2}}}}}}}]}}`

// What kube publishes of shapeCRD's spec in /openapi/v3 and /openapi/v2.
const (
	kubeShapeV3 = `{"properties":{"addl":{"additionalProperties":{"nullable":true,"type":"string"},"type":"object"},"def":{"default":{"a":"b"},"properties":{"a":{"type":"string"}},"type":"object"},"emb2":{"properties":{"apiVersion":{"description":"apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources","type":"string"},"kind":{"description":"kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds","type":"string"},"metadata":{"allOf":[{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],"description":"Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"},"spec":{"type":"object"}},"required":["kind","apiVersion"],"type":"object","x-kubernetes-embedded-resource":true},"emptyobj":{"type":"object"},"ep":{"properties":{"apiVersion":{"description":"apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources","type":"string"},"kind":{"description":"kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds","type":"string"},"metadata":{"allOf":[{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],"description":"Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"},"spec":{"type":"string"}},"required":["kind","apiVersion"],"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},"fl":{"format":"double","maximum":1.5,"minimum":-2,"type":"number"},"fmt":{"format":"int32","type":"string"},"ios":{"anyOf":[{"type":"integer"},{"type":"string"}],"description":"d","pattern":"^[0-9]+%?$","x-kubernetes-int-or-string":true},"junct":{"allOf":[{"minLength":1}],"anyOf":[{"maxLength":3},{"pattern":"^a"}],"not":{"enum":["zz"]},"oneOf":[{"maxLength":2},{"minLength":5}],"type":"string"},"mo":{"exclusiveMinimum":true,"minimum":1,"multipleOf":0.5,"type":"number"},"ms":{"additionalProperties":{"type":"string"},"type":"object","x-kubernetes-map-type":"atomic"},"nul1":{"default":"a","description":"d","enum":["a"],"maxLength":3,"nullable":true,"type":"string"},"nulobj":{"description":"no","nullable":true,"properties":{"a":{"type":"string"}},"type":"object"},"parr":{"items":{"type":"string"},"maxItems":2,"nullable":true,"type":"array"},"parr2":{"items":{"type":"object","x-kubernetes-preserve-unknown-fields":true},"type":"array"},"pobj":{"description":"d","properties":{"a":{"type":"string"}},"type":"object","x-kubernetes-preserve-unknown-fields":true},"sr":{"items":{"type":"string"},"type":"array","x-kubernetes-list-type":"atomic"},"val":{"properties":{"a":{"type":"string"}},"type":"object","x-kubernetes-validations":[{"fieldPath":".a","message":"m","messageExpression":"'bad ' + self.a","reason":"FieldValueForbidden","rule":"self.a == 'x'"},{"rule":"self.a == oldSelf.a"}]},"x":{"nullable":true,"type":"string"}},"required":["x","nul1"],"type":"object"}`
	kubeShapeV2 = `{"properties":{"addl":{"additionalProperties":{},"type":"object"},"def":{"properties":{"a":{"type":"string"}},"type":"object"},"emb2":{"properties":{"apiVersion":{"description":"apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources","type":"string"},"kind":{"description":"kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds","type":"string"},"metadata":{"$ref":"#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta","description":"Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"},"spec":{"type":"object"}},"required":["kind","apiVersion"],"type":"object","x-kubernetes-embedded-resource":true},"emptyobj":{"type":"object"},"ep":{"x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},"fl":{"format":"double","maximum":1.5,"minimum":-2,"type":"number"},"fmt":{"format":"int32","type":"string"},"ios":{"description":"d","pattern":"^[0-9]+%?$","x-kubernetes-int-or-string":true},"junct":{"type":"string"},"mo":{"exclusiveMinimum":true,"minimum":1,"multipleOf":0.5,"type":"number"},"ms":{"additionalProperties":{"type":"string"},"type":"object","x-kubernetes-map-type":"atomic"},"nul1":{"description":"d","enum":["a"],"maxLength":3},"nulobj":{"description":"no"},"parr":{"maxItems":2},"parr2":{"items":{"x-kubernetes-preserve-unknown-fields":true},"type":"array"},"pobj":{"description":"d","x-kubernetes-preserve-unknown-fields":true},"sr":{"items":{"type":"string"},"type":"array","x-kubernetes-list-type":"atomic"},"val":{"properties":{"a":{"type":"string"}},"type":"object","x-kubernetes-validations":[{"fieldPath":".a","message":"m","messageExpression":"'bad ' + self.a","reason":"FieldValueForbidden","rule":"self.a == 'x'"},{"rule":"self.a == oldSelf.a"}]},"x":{}},"type":"object"}`
)

func TestCustomResourceServing_OpenAPIAsKube(t *testing.T) {
	c := ctx(t)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	createCRD(c, t, dyn, shapeCRD)
	createWhenServed(c, t, dyn.Resource(schema.GroupVersionResource{Group: "openapi.example.com", Version: "v1", Resource: "shapes"}),
		object(t, `{"apiVersion":"openapi.example.com/v1","kind":"Shape","metadata":{"name":"s"},"spec":{"x":"a","nul1":"a"}}`))
	specOf := func(doc []byte, defs ...string) string {
		var d map[string]interface{}
		if err := json.Unmarshal(doc, &d); err != nil {
			t.Fatal(err)
		}
		var cur interface{} = d
		for _, k := range append(defs, "com.example.openapi.v1.Shape", "properties", "spec") {
			cur, _ = cur.(map[string]interface{})[k]
		}
		b, _ := json.Marshal(cur)
		return string(b)
	}
	_, v3 := get(t, "/openapi/v3/apis/openapi.example.com/v1", nil)
	if got, want := specOf(v3, "components", "schemas"), compactJSON(t, kubeShapeV3); got != want {
		t.Errorf("v3 spec\n%s\nwant\n%s", got, want)
	}
	_, v2 := get(t, "/openapi/v2", nil)
	if got, want := specOf(v2, "definitions"), compactJSON(t, kubeShapeV2); got != want {
		t.Errorf("v2 spec\n%s\nwant\n%s", got, want)
	}
	// nullable is not v2: the protobuf form (kubectl's) parses again.
	resp, _ := get(t, "/openapi/v2", map[string]string{"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("v2 protobuf: %d", resp.StatusCode)
	}
	out := mustKubectl(t, "explain", "shapes.spec", "--api-version=openapi.example.com/v1", "--output=plaintext-openapiv2")
	if !strings.Contains(out, "nul1\t<>") || !strings.Contains(out, "fl\t<number>") {
		t.Errorf("kubectl explain (v2):\n%s", out)
	}
	out = mustKubectl(t, "explain", "shapes.spec.nul1", "--api-version=openapi.example.com/v1")
	if !strings.Contains(out, "FIELD: nul1 <string>") {
		t.Errorf("kubectl explain (v3):\n%s", out)
	}
}

// TestOpenAPI_BuiltinDocumentsUnchanged pins the bytes of two built-in
// documents, as they were before custom resources' schemas were rendered
// as kube's: that rendering must not touch the built-in types. A change
// to a built-in type's schema changes them on purpose; print the new
// digests with -v and update them then.
func TestOpenAPI_BuiltinDocumentsUnchanged(t *testing.T) {
	s := apiservertest.Start(t)
	for path, want := range map[string]string{
		"/openapi/v2":               "a8f2281e9d6fced8b0f8c51c109eac3b02640789e0e261fc4fefc67c003b287c",
		"/openapi/v3/apis/batch/v1": "3721d50833d2ad0553b7aa91dfc5259bc30ac3db2e03e574af62ca23b0841108",
	} {
		code, body := rawOn(t, s, "GET", path)
		sum := sha256.Sum256([]byte(body))
		got := hex.EncodeToString(sum[:])
		t.Logf("%s: sha256 %s", path, got)
		if code != http.StatusOK || got != want {
			t.Errorf("%s: %d, sha256 %s, want %s", path, code, got, want)
		}
	}
}

// markersCRD has a field per merge marker.
const markersCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"markers.serving.example.com"},
 "spec":{"group":"serving.example.com","scope":"Namespaced","names":{"plural":"markers","singular":"marker","kind":"Marker","listKind":"MarkerList"},
 "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{
   "atomicList":{"type":"array","x-kubernetes-list-type":"atomic","items":{"type":"string"}},
   "plainList":{"type":"array","items":{"type":"string"}},
   "setList":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},
   "mapList":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"value":{"type":"string"},"extra":{"type":"string"}}}},
   "multiKey":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["port","protocol"],"items":{"type":"object","required":["port","protocol"],"properties":{"port":{"type":"integer"},"protocol":{"type":"string"},"name":{"type":"string"}}}},
   "atomicMap":{"type":"object","x-kubernetes-map-type":"atomic","additionalProperties":{"type":"string"}},
   "granularMap":{"type":"object","x-kubernetes-map-type":"granular","additionalProperties":{"type":"string"}},
   "atomicStruct":{"type":"object","x-kubernetes-map-type":"atomic","properties":{"a":{"type":"string"},"b":{"type":"string"}}},
   "plainStruct":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}}}
 }}}}}}]}}`

// TestCustomResourceServing_ApplyMergeMarkersAsKube applies with two
// managers through each marker: merges, shared ownership, conflicts,
// force; the answers and managedFields are kube's.
func TestCustomResourceServing_ApplyMergeMarkersAsKube(t *testing.T) {
	c := ctx(t)
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	if _, err := dyn.Resource(crdsGVR).Create(c, object(t, markersCRD), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ns := namespace(t)
	markers := dyn.Resource(schema.GroupVersionResource{Group: "serving.example.com", Version: "v1", Resource: "markers"}).Namespace(ns)
	createWhenServed(c, t, markers, object(t, `{"apiVersion":"serving.example.com/v1","kind":"Marker","metadata":{"name":"probe"}}`))
	for i, step := range []struct {
		manager string
		force   bool
		body    string
		want    string
	}{
		{"a", false, `{"spec":{"atomicList":["x","y"],"plainList":["p"],"setList":["a","b"],"mapList":[{"name":"k1","value":"v1"}],"multiKey":[{"port":80,"protocol":"TCP","name":"http"}],"atomicMap":{"m1":"1"},"granularMap":{"g1":"1"},"atomicStruct":{"a":"1"},"plainStruct":{"a":"1"}}}`,
			`{"spec":{"atomicList":["x","y"],"atomicMap":{"m1":"1"},"atomicStruct":{"a":"1"},"granularMap":{"g1":"1"},"mapList":[{"name":"k1","value":"v1"}],"multiKey":[{"name":"http","port":80,"protocol":"TCP"}],"plainList":["p"],"plainStruct":{"a":"1"},"setList":["a","b"]},"mf":[["a","Apply",{"f:spec":{"f:atomicList":{},"f:atomicMap":{},"f:atomicStruct":{},"f:granularMap":{"f:g1":{}},"f:mapList":{"k:{\"name\":\"k1\"}":{".":{},"f:name":{},"f:value":{}}},"f:multiKey":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{}}},"f:plainList":{},"f:plainStruct":{"f:a":{}},"f:setList":{"v:\"a\"":{},"v:\"b\"":{}}}}]]}`},
		{"b", false, `{"spec":{"setList":["c"],"mapList":[{"name":"k2","value":"v2"}],"multiKey":[{"port":80,"protocol":"UDP","name":"dns"}],"granularMap":{"g2":"2"},"plainStruct":{"b":"2"}}}`,
			`{"spec":{"atomicList":["x","y"],"atomicMap":{"m1":"1"},"atomicStruct":{"a":"1"},"granularMap":{"g1":"1","g2":"2"},"mapList":[{"name":"k1","value":"v1"},{"name":"k2","value":"v2"}],"multiKey":[{"name":"http","port":80,"protocol":"TCP"},{"name":"dns","port":80,"protocol":"UDP"}],"plainList":["p"],"plainStruct":{"a":"1","b":"2"},"setList":["a","b","c"]},"mf":[["a","Apply",{"f:spec":{"f:atomicList":{},"f:atomicMap":{},"f:atomicStruct":{},"f:granularMap":{"f:g1":{}},"f:mapList":{"k:{\"name\":\"k1\"}":{".":{},"f:name":{},"f:value":{}}},"f:multiKey":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{}}},"f:plainList":{},"f:plainStruct":{"f:a":{}},"f:setList":{"v:\"a\"":{},"v:\"b\"":{}}}}],["b","Apply",{"f:spec":{"f:granularMap":{"f:g2":{}},"f:mapList":{"k:{\"name\":\"k2\"}":{".":{},"f:name":{},"f:value":{}}},"f:multiKey":{"k:{\"port\":80,\"protocol\":\"UDP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{}}},"f:plainStruct":{"f:b":{}},"f:setList":{"v:\"c\"":{}}}}]]}`},
		{"b", false, `{"spec":{"atomicList":["z"]}}`,
			`[409,"Conflict","Apply failed with 1 conflict: conflict with \"a\": .spec.atomicList",[["FieldManagerConflict",".spec.atomicList","conflict with \"a\""]]]`},
		{"b", false, `{"spec":{"atomicMap":{"m2":"2"},"atomicStruct":{"b":"2"},"plainList":["q"]}}`,
			`[409,"Conflict","Apply failed with 3 conflicts: conflicts with \"a\":\n- .spec.atomicMap\n- .spec.atomicStruct\n- .spec.plainList",[["FieldManagerConflict",".spec.atomicMap","conflict with \"a\""],["FieldManagerConflict",".spec.atomicStruct","conflict with \"a\""],["FieldManagerConflict",".spec.plainList","conflict with \"a\""]]]`},
		{"b", false, `{"spec":{"mapList":[{"name":"k1","value":"other"}],"setList":["a"],"granularMap":{"g1":"9"},"plainStruct":{"a":"9"}}}`,
			`[409,"Conflict","Apply failed with 3 conflicts: conflicts with \"a\":\n- .spec.granularMap.g1\n- .spec.mapList[name=\"k1\"].value\n- .spec.plainStruct.a",[["FieldManagerConflict",".spec.granularMap.g1","conflict with \"a\""],["FieldManagerConflict",".spec.mapList[name=\"k1\"].value","conflict with \"a\""],["FieldManagerConflict",".spec.plainStruct.a","conflict with \"a\""]]]`},
		{"b", true, `{"spec":{"mapList":[{"name":"k1","value":"other"}],"granularMap":{"g1":"9"},"plainStruct":{"a":"9"},"atomicList":["z"],"atomicMap":{"m2":"2"},"atomicStruct":{"b":"2"}}}`,
			`{"spec":{"atomicList":["z"],"atomicMap":{"m2":"2"},"atomicStruct":{"b":"2"},"granularMap":{"g1":"9"},"mapList":[{"name":"k1","value":"other"}],"multiKey":[{"name":"http","port":80,"protocol":"TCP"}],"plainList":["p"],"plainStruct":{"a":"9"},"setList":["a","b"]},"mf":[["a","Apply",{"f:spec":{"f:mapList":{"k:{\"name\":\"k1\"}":{".":{},"f:name":{}}},"f:multiKey":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{}}},"f:plainList":{},"f:setList":{"v:\"a\"":{},"v:\"b\"":{}}}}],["b","Apply",{"f:spec":{"f:atomicList":{},"f:atomicMap":{},"f:atomicStruct":{},"f:granularMap":{"f:g1":{}},"f:mapList":{"k:{\"name\":\"k1\"}":{".":{},"f:name":{},"f:value":{}}},"f:plainStruct":{"f:a":{}}}}]]}`},
		{"a", false, `{"spec":{"atomicList":["x","y"],"setList":["a","b"]}}`,
			`[409,"Conflict","Apply failed with 1 conflict: conflict with \"b\": .spec.atomicList",[["FieldManagerConflict",".spec.atomicList","conflict with \"b\""]]]`},
	} {
		body := object(t, step.body)
		body.SetAPIVersion("serving.example.com/v1")
		body.SetKind("Marker")
		body.SetName("m1")
		data, _ := json.Marshal(body.Object)
		out, err := markers.Patch(c, "m1", types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: step.manager, Force: &step.force})
		if got, want := applyOutcome(t, out, err), normalJSON(t, step.want); got != want {
			t.Errorf("step %d (%s, force %v):\n%s\nwant\n%s", i+1, step.manager, step.force, got, want)
		}
	}

	// Writes that are not applies: each writer owns what it changed, as
	// kube records it (nobody owns metadata itself).
	for i, w := range []struct {
		do   func() (*unstructured.Unstructured, error)
		want string
	}{
		{func() (*unstructured.Unstructured, error) {
			return markers.Create(c, object(t, `{"apiVersion":"serving.example.com/v1","kind":"Marker","metadata":{"name":"m2"},"spec":{"setList":["a"],"mapList":[{"name":"k1","value":"v1"}],"granularMap":{"g":"1"},"atomicMap":{"m":"1"}}}`), metav1.CreateOptions{FieldManager: "creator"})
		}, `[["creator","Update",{"f:spec":{".":{},"f:atomicMap":{},"f:granularMap":{".":{},"f:g":{}},"f:mapList":{".":{},"k:{\"name\":\"k1\"}":{".":{},"f:name":{},"f:value":{}}},"f:setList":{".":{},"v:\"a\"":{}}}}]]`},
		{func() (*unstructured.Unstructured, error) {
			return markers.Patch(c, "m2", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}},"spec":{"setList":["a","b"],"mapList":[{"name":"k1","value":"v1"},{"name":"k2"}],"atomicMap":{"m":"2"},"granularMap":{"g":"1","h":"2"}}}`), metav1.PatchOptions{FieldManager: "patcher"})
		}, `[["creator","Update",{"f:spec":{".":{},"f:granularMap":{".":{},"f:g":{}},"f:mapList":{".":{},"k:{\"name\":\"k1\"}":{".":{},"f:name":{},"f:value":{}}},"f:setList":{".":{},"v:\"a\"":{}}}}],["patcher","Update",{"f:metadata":{"f:labels":{".":{},"f:x":{}}},"f:spec":{"f:atomicMap":{},"f:granularMap":{"f:h":{}},"f:mapList":{"k:{\"name\":\"k2\"}":{".":{},"f:name":{}}},"f:setList":{"v:\"b\"":{}}}}]]`},
		{func() (*unstructured.Unstructured, error) {
			return markers.Patch(c, "m2", types.JSONPatchType, []byte(`[{"op":"add","path":"/spec/plainList","value":["z"]}]`), metav1.PatchOptions{FieldManager: "jp"})
		}, `[["creator","Update",{"f:spec":{".":{},"f:granularMap":{".":{},"f:g":{}},"f:mapList":{".":{},"k:{\"name\":\"k1\"}":{".":{},"f:name":{},"f:value":{}}},"f:setList":{".":{},"v:\"a\"":{}}}}],["jp","Update",{"f:spec":{"f:plainList":{}}}],["patcher","Update",{"f:metadata":{"f:labels":{".":{},"f:x":{}}},"f:spec":{"f:atomicMap":{},"f:granularMap":{"f:h":{}},"f:mapList":{"k:{\"name\":\"k2\"}":{".":{},"f:name":{}}},"f:setList":{"v:\"b\"":{}}}}]]`},
		{func() (*unstructured.Unstructured, error) {
			return markers.Create(c, object(t, `{"apiVersion":"serving.example.com/v1","kind":"Marker","metadata":{"name":"m3"}}`), metav1.CreateOptions{FieldManager: "creator"})
		}, `[null]`},
	} {
		out, err := w.do()
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		var got interface{} = []interface{}{nil}
		if mf, ok := out.Object["metadata"].(map[string]interface{})["managedFields"]; ok {
			var entries []interface{}
			for _, e := range mf.([]interface{}) {
				m := e.(map[string]interface{})
				entries = append(entries, []interface{}{m["manager"], m["operation"], m["fieldsV1"]})
			}
			// Entries are ordered by time to the second, then by manager:
			// compared in manager order, so that writes straddling a
			// second do not matter.
			sort.Slice(entries, func(i, j int) bool {
				return entries[i].([]interface{})[0].(string) < entries[j].([]interface{})[0].(string)
			})
			got = entries
		}
		if g, want := normalJSON(t, mustMarshal(t, got)), normalJSON(t, w.want); g != want {
			t.Errorf("write %d: managedFields\n%s\nwant\n%s", i, g, want)
		}
	}
}

func mustMarshal(t *testing.T, v interface{}) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func normalJSON(t *testing.T, s string) string {
	t.Helper()
	var v interface{}
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	return mustMarshal(t, v)
}

// applyOutcome is an apply's answer as the expectations spell it: the
// spec and each manager's fields, or the error's code, reason, message
// and causes.
func applyOutcome(t *testing.T, out *unstructured.Unstructured, err error) string {
	t.Helper()
	if err != nil {
		se, ok := err.(*apierrors.StatusError)
		if !ok {
			t.Fatalf("apply: %v", err)
		}
		st := se.Status()
		causes := []interface{}{}
		if st.Details != nil {
			for _, c := range st.Details.Causes {
				causes = append(causes, []interface{}{c.Type, c.Field, c.Message})
			}
		}
		return mustMarshal(t, []interface{}{st.Code, st.Reason, st.Message, causes})
	}
	var mf []interface{}
	for _, e := range out.GetManagedFields() {
		var fields interface{}
		_ = json.Unmarshal(e.FieldsV1.Raw, &fields)
		mf = append(mf, []interface{}{e.Manager, e.Operation, fields})
	}
	return normalJSON(t, mustMarshal(t, map[string]interface{}{"spec": out.Object["spec"], "mf": mf}))
}

// TestCustomResourceServing_RepresentationsAndValidationAsKube: no
// strategic merge patch, no protobuf, fieldValidation, and an object
// without a typed form answered by validation.
func TestCustomResourceServing_RepresentationsAndValidationAsKube(t *testing.T) {
	_, ns := servedProbe(t)
	base := "/apis/serving.example.com/v1/namespaces/" + ns + "/probes"

	resp, body := raw(t, "PATCH", base+"/p1", srv.AdminToken, "application/strategic-merge-patch+json", `{"spec":{"replicas":2}}`)
	if st := decodeStatus(t, []byte(body)); resp.StatusCode != http.StatusUnsupportedMediaType ||
		st.Message != "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml" {
		t.Errorf("strategic merge patch: %d %s", resp.StatusCode, body)
	}

	// Protobuf then JSON: JSON. Protobuf alone: kube's 406, for every
	// path of the resource.
	r, data := get(t, base+"/p1", map[string]string{"Accept": "application/vnd.kubernetes.protobuf, application/json"})
	if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(data), `"kind":"Probe"`) {
		t.Errorf("protobuf then JSON: %d %s %s", r.StatusCode, r.Header.Get("Content-Type"), data)
	}
	const kube406 = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf","reason":"NotAcceptable","code":406}`
	for _, p := range []string{base, base + "/p1", base + "/p1/status", "/apis/serving.example.com/v1/probes"} {
		r, data := get(t, p, map[string]string{"Accept": "text/plain"})
		if r.StatusCode != http.StatusNotAcceptable || compactJSON(t, string(data)) != kube406 {
			t.Errorf("%s, not acceptable: %d\n%s\nwant\n%s", p, r.StatusCode, data, kube406)
		}
		r, _ = get(t, p, map[string]string{"Accept": "application/vnd.kubernetes.protobuf"})
		if r.StatusCode != http.StatusNotAcceptable {
			t.Errorf("%s, protobuf alone: %d", p, r.StatusCode)
		}
	}

	// fieldValidation: Strict refuses unknown and duplicate fields,
	// Warn (the default) warns of each.
	unknown := `{"apiVersion":"serving.example.com/v1","kind":"Probe","metadata":{"name":"fv"},"spec":{"replicas":2,"bogus":1,"ports":[{"num":1,"zzz":2}]},"extra":true}`
	resp, body = raw(t, "POST", base+"?fieldValidation=Strict&dryRun=All", srv.AdminToken, "application/json", unknown)
	if st := decodeStatus(t, []byte(body)); resp.StatusCode != http.StatusBadRequest || st.Reason != metav1.StatusReasonBadRequest ||
		st.Message != `Probe in version "v1" cannot be handled as a Probe: strict decoding error: unknown field "extra", unknown field "spec.bogus", unknown field "spec.ports[0].zzz"` {
		t.Errorf("Strict: %d %s", resp.StatusCode, body)
	}
	resp, body = raw(t, "POST", base+"?fieldValidation=Warn&dryRun=All", srv.AdminToken, "application/json", unknown)
	if got := strings.Join(resp.Header.Values("Warning"), "|"); resp.StatusCode != http.StatusCreated ||
		got != `299 - "unknown field \"extra\""|299 - "unknown field \"spec.bogus\""|299 - "unknown field \"spec.ports[0].zzz\""` {
		t.Errorf("Warn: %d %q %s", resp.StatusCode, got, body)
	}
	duplicate := `{"apiVersion":"serving.example.com/v1","kind":"Probe","metadata":{"name":"fv"},"spec":{"replicas":2,"replicas":3}}`
	resp, body = raw(t, "POST", base+"?fieldValidation=Strict&dryRun=All", srv.AdminToken, "application/json", duplicate)
	if st := decodeStatus(t, []byte(body)); resp.StatusCode != http.StatusBadRequest ||
		st.Message != `Probe in version "v1" cannot be handled as a Probe: strict decoding error: duplicate field "spec.replicas"` {
		t.Errorf("Strict duplicate: %d %s", resp.StatusCode, body)
	}
	resp, body = raw(t, "POST", base+"?dryRun=All", srv.AdminToken, "application/json", duplicate)
	if got := strings.Join(resp.Header.Values("Warning"), "|"); resp.StatusCode != http.StatusCreated || got != `299 - "duplicate field \"spec.replicas\""` ||
		!strings.Contains(body, `"replicas":3`) {
		t.Errorf("Warn duplicate: %d %q %s", resp.StatusCode, got, body)
	}

	// An object without a typed form (a map-list item without its key, a
	// string for an integer) is validation's to answer: 422 per field.
	resp, body = raw(t, "POST", base, srv.AdminToken, "application/json",
		`{"apiVersion":"serving.example.com/v1","kind":"Probe","metadata":{"name":"bad"},"spec":{"replicas":"two","ports":[{"p":"http"}]}}`)
	st := decodeStatus(t, []byte(body))
	causes := map[string]string{}
	if st.Details != nil {
		for _, c := range st.Details.Causes {
			causes[c.Field] = string(c.Type) + ": " + c.Message
		}
	}
	if resp.StatusCode != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid ||
		causes["spec.ports[0].num"] != "FieldValueRequired: Required value" ||
		causes["spec.replicas"] != `FieldValueTypeInvalid: Invalid value: "string": spec.replicas in body must be of type integer: "string"` {
		t.Errorf("untyped object: %d %s", resp.StatusCode, body)
	}
}
