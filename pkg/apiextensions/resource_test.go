package apiextensions

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	sigsjson "sigs.k8s.io/json"

	apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// probe is a custom object as kube-apiserver v1.29 stored it.
const probe = `{"apiVersion":"example.org/v1","kind":"Probe","metadata":{"name":"p1","namespace":"default","creationTimestamp":"2026-11-25T05:53:27Z"},
"spec":{"a":"x","n":3,"f":2.7,"neg":-2.5,"big":1e+21,"whole":3,"b":true,"empty":"","nums":[1,2,3],"floats":[1.5,2],
"list":[{"name":"a","v":1,"type":"Ready","status":"True"},{"name":"b","v":2,"type":"Other","status":"False"},{"name":"c","v":3}],
"when":"2024-01-02T03:04:05Z","future":"2099-01-01T00:00:00Z","soon":"2026-11-25T05:59:00Z","badwhen":"yesterday","intwhen":5,
"datewhen":"2024-01-02","cond":[{"type":"Ready","status":"True","lastTransitionTime":"2024-01-02T03:04:05Z"}],"l":[null,"a"]}}`

func decode(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestTableCellsAsKube checks each column type against the cells
// kube-apiserver v1.29 put in its Table for the same object and paths,
// rendered at the same time.
func TestTableCellsAsKube(t *testing.T) {
	now := time.Date(2026, 11, 25, 5, 54, 0, 0, time.UTC)
	obj := decode(t, probe)
	for _, tc := range []struct {
		typ, path string
		want      string // the cell, as JSON
	}{
		{"integer", ".spec.n", `3`},
		{"integer", ".spec.f", `2`},
		{"integer", ".spec.neg", `-2`},
		{"integer", ".spec.a", `null`},
		{"integer", ".spec.big", `-9223372036854775808`},
		{"integer", ".spec.b", `null`},
		{"integer", ".spec.nums[*]", `1`},
		{"integer", ".spec.floats[0]", `1`},
		{"integer", ".spec.list[*].v", `1`},
		{"integer", ".spec.whole", `3`},
		{"integer", ".spec.a 5", `null`},
		{"integer", ".spec.a.*", `null`},
		{"number", ".spec.n", `3`},
		{"number", ".spec.f", `2.7`},
		{"number", ".spec.a", `null`},
		{"number", ".spec.b", `null`},
		{"number", ".spec.big", `1e+21`},
		{"number", ".spec.list[*].v", `1`},
		{"boolean", ".spec.b", `true`},
		{"boolean", ".spec.a", `null`},
		{"boolean", ".spec.n", `null`},
		{"date", ".spec.when", `"2y328d"`},
		{"date", ".spec.future", `"\u003cinvalid\u003e"`},
		{"date", ".spec.soon", `"\u003cinvalid\u003e"`},
		{"date", ".spec.badwhen", `"\u003cinvalid\u003e"`},
		{"date", ".spec.intwhen", `null`},
		{"date", ".spec.datewhen", `"\u003cinvalid\u003e"`},
		{"date", ".spec.empty", `"\u003cunknown\u003e"`},
		{"date", ".spec.missing", `null`},
		{"date", ".metadata.creationTimestamp", `"33s"`},
		{"date", `.spec.cond[?(@.type=="Ready")].lastTransitionTime`, `"2y328d"`},
		{"date", ".spec.when}{.spec.n[0]", `null`},
		{"string", ".spec.n", `"3"`},
		{"string", ".spec.list[1]", `"{\"name\":\"b\",\"status\":\"False\",\"type\":\"Other\",\"v\":2}"`},
		{"string", `.spec.list[?(@.type=="Ready")].status`, `"True"`},
		{"string", ".spec.list[*].name", `"a"`},
		{"string", ".spec.l[*]", `"\u003cno value\u003e"`},
		{"string", ".metadata.creationTimestamp", `"2026-11-25T05:53:27Z"`},
	} {
		spec := table([]apiextensionsv1.CustomResourceColumnDefinition{{Name: "X", Type: tc.typ, JSONPath: tc.path}})
		cells := spec.Cells(obj, now)
		got, _ := json.Marshal(cells[1])
		if string(got) != tc.want {
			t.Errorf("%s column %s: cell %s, want %s", tc.typ, tc.path, got, tc.want)
		}
	}
}

func TestTableColumnsAsKube(t *testing.T) {
	// Without columns: the age, described as kube describes it.
	spec := table(nil)
	if len(spec.Columns) != 2 || spec.Columns[1].Name != "Age" || spec.Columns[1].Type != "date" ||
		spec.Columns[1].Description != (metav1.ObjectMeta{}).SwaggerDoc()["creationTimestamp"] {
		t.Errorf("default columns: %+v", spec.Columns)
	}
	// Columns keep their type, format, priority and description, or get
	// kube's; a path that does not parse drops its column and the ones
	// after it.
	spec = table([]apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "Ready", Type: "string", JSONPath: `.status.conditions[?(@.type=="Ready")].status`},
		{Name: "Replicas", Type: "integer", Format: "int32", Priority: 1, Description: "the replicas", JSONPath: ".spec.replicas"},
		{Name: "Bad", Type: "string", JSONPath: ".spec["},
		{Name: "After", Type: "string", JSONPath: ".spec.a"},
	})
	want := []metav1.TableColumnDefinition{
		rest.NameColumn,
		{Name: "Ready", Type: "string", Description: `Custom resource definition column (in JSONPath format): .status.conditions[?(@.type=="Ready")].status`},
		{Name: "Replicas", Type: "integer", Format: "int32", Priority: 1, Description: "the replicas"},
	}
	if got, _ := json.Marshal(spec.Columns); string(got) != string(mustJSON(t, want)) {
		t.Errorf("columns %s, want %s", got, mustJSON(t, want))
	}
	obj := decode(t, `{"metadata":{"name":"g"},"spec":{"replicas":3},"status":{"conditions":[{"type":"Other","status":"False"},{"type":"Ready","status":"True"}]}}`)
	if got, _ := json.Marshal(spec.Cells(obj, time.Now())); string(got) != `["g","True",3]` {
		t.Errorf("cells %s", got)
	}
	// Only the columns before the first that does not parse: none here.
	spec = table([]apiextensionsv1.CustomResourceColumnDefinition{{Name: "Bad", Type: "string", JSONPath: ".spec.a,"}, {Name: "A", Type: "string", JSONPath: ".spec.a"}})
	if len(spec.Columns) != 1 {
		t.Errorf("columns after an unparsable first one: %+v", spec.Columns)
	}
}

func mustJSON(t *testing.T, v interface{}) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func crdWithVersions(versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = "deps.example.org"
	crd.UID = types.UID("uid-1")
	crd.Spec.Group = "example.org"
	crd.Spec.Scope = apiextensionsv1.NamespaceScoped
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: "deps", Singular: "dep", Kind: "Dep", ListKind: "DepList"}
	crd.Spec.Versions = versions
	return crd
}

// TestDeprecationWarningAsKube checks kube's default warnings: the
// replacement is the most preferred served version, not deprecated,
// newer than the deprecated one.
func TestDeprecationWarningAsKube(t *testing.T) {
	v := func(name string, served, storage, deprecated bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: served, Storage: storage, Deprecated: deprecated}
	}
	warning := func(crd *apiextensionsv1.CustomResourceDefinition, version string) string {
		res, err := Resources(crd)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Version == version {
				return r.Warning()
			}
		}
		t.Fatalf("version %s not served", version)
		return ""
	}
	deps := crdWithVersions(v("v2", true, false, true), v("v1", true, true, false), v("v3", false, false, false),
		v("v1beta1", true, false, true), v("v2beta1", true, false, false), v("v1alpha1", true, false, true))
	dep2s := crdWithVersions(v("v1", true, true, true), v("v1beta1", true, false, false), v("v3alpha1", true, false, true),
		v("foo", true, false, true), v("bar", true, false, false))
	dep2s.Spec.Names.Kind = "Dep2"
	gadgets := crdWithVersions(v("v1", true, true, false), v("v1beta1", true, false, true), v("v2", true, false, false), v("v1alpha1", true, false, true))
	gadgets.Spec.Names.Kind = "Gadget"
	for _, tc := range []struct {
		crd           *apiextensionsv1.CustomResourceDefinition
		version, want string
	}{
		{deps, "v2", "example.org/v2 Dep is deprecated"},
		{deps, "v1beta1", "example.org/v1beta1 Dep is deprecated; use example.org/v1 Dep"},
		{deps, "v1alpha1", "example.org/v1alpha1 Dep is deprecated; use example.org/v1 Dep"},
		{dep2s, "v1", "example.org/v1 Dep2 is deprecated"},
		{dep2s, "v3alpha1", "example.org/v3alpha1 Dep2 is deprecated; use example.org/v1beta1 Dep2"},
		{dep2s, "foo", "example.org/foo Dep2 is deprecated; use example.org/v1beta1 Dep2"},
		{gadgets, "v1beta1", "example.org/v1beta1 Gadget is deprecated; use example.org/v2 Gadget"},
		{gadgets, "v1alpha1", "example.org/v1alpha1 Gadget is deprecated; use example.org/v2 Gadget"},
	} {
		if got := warning(tc.crd, tc.version); got != tc.want {
			t.Errorf("%s %s: %q, want %q", tc.crd.Spec.Names.Kind, tc.version, got, tc.want)
		}
	}
	own := "use v2, please"
	deps.Spec.Versions[0].DeprecationWarning = &own
	if got := warning(deps, "v2"); got != own {
		t.Errorf("own warning: %q", got)
	}
}

// TestCreateRefusedWhileTerminating checks kube's 405 for a create while
// the definition is terminating, from the moment the controller sees
// it, on resources built before.
func TestCreateRefusedWhileTerminating(t *testing.T) {
	crd := crdWithVersions(apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true})
	c := &Controller{Client: nopClient{}}
	res, err := c.Resources(crd)
	if err != nil {
		t.Fatal(err)
	}
	main, _ := generic.NewStore(res[0], nil, "/registry").Storages()
	creater := main.(rest.Creater)
	obj := decode(t, `{"apiVersion":"example.org/v1","kind":"Dep","metadata":{"name":"d"}}`)

	// Seen terminating: every served version refuses creates.
	now := metav1.Now()
	gone := crd.DeepCopy()
	gone.DeletionTimestamp = &now
	gone.Finalizers = []string{apiextensionsv1.CleanupFinalizer}
	gone.Status.SetCondition(apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue,
		Reason: "InstanceDeletionInProgress"})
	_ = c.Sync(context.Background(), gone, []*apiextensionsv1.CustomResourceDefinition{gone})
	_, err = creater.Create(context.Background(), "default", obj, nil, &metav1.CreateOptions{})
	status, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("create while terminating: %v", err)
	}
	got, _ := json.Marshal(status.Status())
	want := `{"metadata":{},"status":"Failure","message":"create not allowed while custom resource definition is terminating","reason":"MethodNotAllowed","details":{"group":"example.org","kind":"deps"},"code":405}`
	if string(got) != want || status.Status().Code != http.StatusMethodNotAllowed {
		t.Errorf("create while terminating:\n%s\nwant\n%s", got, want)
	}

	// A definition built while terminating refuses them too.
	res, err = Resources(gone)
	if err != nil {
		t.Fatal(err)
	}
	main, _ = generic.NewStore(res[0], nil, "/registry").Storages()
	if _, err := main.(rest.Creater).Create(context.Background(), "default", obj, nil, &metav1.CreateOptions{}); !apierrors.IsMethodNotSupported(err) {
		t.Errorf("create on resources of a terminating definition: %v", err)
	}

	// What the controller knows of a definition goes with it.
	other := crdWithVersions()
	other.UID = "uid-2"
	_ = c.Sync(context.Background(), other, nil)
	if len(c.terminating) != 0 {
		t.Errorf("terminating definitions kept: %v", c.terminating)
	}
}

type nopClient struct{}

func (nopClient) UpdateStatus(context.Context, *apiextensionsv1.CustomResourceDefinition) error {
	return nil
}
func (nopClient) Update(context.Context, *apiextensionsv1.CustomResourceDefinition) error { return nil }
func (nopClient) DeleteAll(context.Context, schema.GroupVersionResource) (int, error) {
	return 1, nil
}
