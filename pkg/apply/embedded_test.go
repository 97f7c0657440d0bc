package apply

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"

	cronschema "github.com/cronplane/cronplane/pkg/schema"
)

// embeddedSchema has an embedded resource that declares only its spec,
// and one that keeps unknown fields.
const embeddedSchema = `{"type":"object","properties":{"spec":{"type":"object","properties":{
 "template":{"type":"object","x-kubernetes-embedded-resource":true,"properties":{"spec":{"type":"object","properties":{"x":{"type":"string"}}}}},
 "loose":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}}}}}`

const embeddedObject = `{"apiVersion":"example.com/v1","kind":"Emb","metadata":{"name":"e","namespace":"default"},"spec":{
 "template":{"apiVersion":"v1","kind":"Foo","metadata":{"name":"a","labels":{"k":"v"},"finalizers":["f1"],"ownerReferences":[{"apiVersion":"v1","kind":"X","name":"o","uid":"u1"}]},"spec":{"x":"s"}},
 "loose":{"apiVersion":"v1","kind":"Bar","metadata":{"name":"b","labels":{"k":"v"}},"other":{"y":1}}}}`

// sortedFields is an entry's fieldsV1 with its keys sorted.
func sortedFields(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	mf := u.GetManagedFields()
	if len(mf) != 1 || mf[0].FieldsV1 == nil {
		t.Fatalf("managedFields %v, want one entry", mf)
	}
	var v interface{}
	if err := json.Unmarshal(mf[0].FieldsV1.Raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestEmbeddedResource_FieldsAsKube: the apiVersion, kind and metadata of
// an embedded resource are fields of its type, ObjectMeta's keyed and
// set lists included, for an apply as for an update: the managedFields
// kube-apiserver v1.29 records for the same object.
func TestEmbeddedResource_FieldsAsKube(t *testing.T) {
	var v map[string]interface{}
	if err := json.Unmarshal([]byte(embeddedSchema), &v); err != nil {
		t.Fatal(err)
	}
	root, errs := cronschema.FromOpenAPIV3(v, field.NewPath("openAPIV3Schema"))
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	m, err := NewManager((&cronschema.Structural{Root: root}).AsResource("com.example.v1.Emb"), &unstructured.Unstructured{}, "example.com/v1", nil)
	if err != nil {
		t.Fatal(err)
	}

	created := customObject(t, embeddedObject)
	if err := m.Update(nil, created, "creator", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	const wantUpdate = `{"f:spec":{".":{},"f:loose":{".":{},"f:apiVersion":{},"f:kind":{},"f:metadata":{".":{},"f:labels":{".":{},"f:k":{}},"f:name":{}},"f:other":{".":{},"f:y":{}}},` +
		`"f:template":{".":{},"f:apiVersion":{},"f:kind":{},"f:metadata":{".":{},"f:finalizers":{".":{},"v:\"f1\"":{}},"f:labels":{".":{},"f:k":{}},"f:name":{},"f:ownerReferences":{".":{},"k:{\"uid\":\"u1\"}":{}}},"f:spec":{".":{},"f:x":{}}}}}`
	if got := sortedFields(t, created); got != wantUpdate {
		t.Errorf("update:\n got  %s\n want %s", got, wantUpdate)
	}

	empty := &unstructured.Unstructured{}
	empty.SetAPIVersion("example.com/v1")
	empty.SetKind("Emb")
	config := customObject(t, embeddedObject).Object
	out, err := m.Apply(nil, empty, Configuration{Fields: config, Sent: config}, "applier", "", false, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	const wantApply = `{"f:spec":{"f:loose":{"f:apiVersion":{},"f:kind":{},"f:metadata":{"f:labels":{"f:k":{}},"f:name":{}},"f:other":{".":{},"f:y":{}}},` +
		`"f:template":{"f:apiVersion":{},"f:kind":{},"f:metadata":{"f:finalizers":{"v:\"f1\"":{}},"f:labels":{"f:k":{}},"f:name":{},"f:ownerReferences":{"k:{\"uid\":\"u1\"}":{}}},"f:spec":{"f:x":{}}}}}`
	if got := sortedFields(t, out.(*unstructured.Unstructured)); got != wantApply {
		t.Errorf("apply:\n got  %s\n want %s", got, wantApply)
	}
}
