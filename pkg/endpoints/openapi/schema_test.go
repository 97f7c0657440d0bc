package openapi

import (
	"encoding/json"
	"reflect"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"

	apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"
	cronschema "github.com/cronplane/cronplane/pkg/schema"
)

// shapeSchema is a CustomResourceDefinition version's openAPIV3Schema
// with every keyword cronplane keeps.
const shapeSchema = `{"type":"object","properties":{"spec":{"type":"object","required":["x","nul1"],"properties":{"x":{"type":"string","nullable":true},"nul1":{"type":"string","nullable":true,"description":"d","maxLength":3,"enum":["a"],"default":"a"},"nulobj":{"type":"object","nullable":true,"description":"no","properties":{"a":{"type":"string"}}},"pobj":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"a":{"type":"string"}},"description":"d"},"parr":{"type":"array","items":{"type":"string"},"nullable":true,"maxItems":2},"parr2":{"type":"array","items":{"type":"object","x-kubernetes-preserve-unknown-fields":true}},"mo":{"type":"number","multipleOf":0.5,"minimum":1,"exclusiveMinimum":true},"junct":{"type":"string","anyOf":[{"maxLength":3},{"pattern":"^a"}],"not":{"enum":["zz"]},"allOf":[{"minLength":1}],"oneOf":[{"maxLength":2},{"minLength":5}]},"fmt":{"type":"string","format":"int32"},"emb2":{"type":"object","x-kubernetes-embedded-resource":true,"properties":{"spec":{"type":"object"}}},"ios":{"x-kubernetes-int-or-string":true,"description":"d","anyOf":[{"type":"integer"},{"type":"string"}],"pattern":"^[0-9]+%?$"},"addl":{"type":"object","additionalProperties":{"type":"string","nullable":true}},"def":{"type":"object","default":{"a":"b"},"properties":{"a":{"type":"string"}}},"ms":{"type":"object","x-kubernetes-map-type":"atomic","additionalProperties":{"type":"string"}},"val":{"type":"object","properties":{"a":{"type":"string"}},"x-kubernetes-validations":[{"rule":"self.a == 'x'","message":"m","messageExpression":"'bad ' + self.a","reason":"FieldValueForbidden","fieldPath":".a"},{"rule":"self.a == oldSelf.a","optionalOldSelf":false}]},"sr":{"type":"array","items":{"type":"string"},"x-kubernetes-list-type":"atomic"},"ep":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true,"properties":{"spec":{"type":"string"}}},"emptyobj":{"type":"object"},"fl":{"type":"number","format":"double","maximum":1.5,"minimum":-2}}}}}`

// What kube-apiserver v1.29 publishes of shapeSchema's spec in
// /openapi/v3/apis/<group>/<version> and /openapi/v2.
const (
	kubeShapeSpecV3 = `{"properties":{"addl":{"additionalProperties":{"nullable":true,"type":"string"},"type":"object"},"def":{"default":{"a":"b"},"properties":{"a":{"type":"string"}},"type":"object"},"emb2":{"properties":{"apiVersion":{"description":"apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources","type":"string"},"kind":{"description":"kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds","type":"string"},"metadata":{"allOf":[{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],"description":"Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"},"spec":{"type":"object"}},"required":["kind","apiVersion"],"type":"object","x-kubernetes-embedded-resource":true},"emptyobj":{"type":"object"},"ep":{"properties":{"apiVersion":{"description":"apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources","type":"string"},"kind":{"description":"kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds","type":"string"},"metadata":{"allOf":[{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],"description":"Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"},"spec":{"type":"string"}},"required":["kind","apiVersion"],"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},"fl":{"format":"double","maximum":1.5,"minimum":-2,"type":"number"},"fmt":{"format":"int32","type":"string"},"ios":{"anyOf":[{"type":"integer"},{"type":"string"}],"description":"d","pattern":"^[0-9]+%?$","x-kubernetes-int-or-string":true},"junct":{"allOf":[{"minLength":1}],"anyOf":[{"maxLength":3},{"pattern":"^a"}],"not":{"enum":["zz"]},"oneOf":[{"maxLength":2},{"minLength":5}],"type":"string"},"mo":{"exclusiveMinimum":true,"minimum":1,"multipleOf":0.5,"type":"number"},"ms":{"additionalProperties":{"type":"string"},"type":"object","x-kubernetes-map-type":"atomic"},"nul1":{"default":"a","description":"d","enum":["a"],"maxLength":3,"nullable":true,"type":"string"},"nulobj":{"description":"no","nullable":true,"properties":{"a":{"type":"string"}},"type":"object"},"parr":{"items":{"type":"string"},"maxItems":2,"nullable":true,"type":"array"},"parr2":{"items":{"type":"object","x-kubernetes-preserve-unknown-fields":true},"type":"array"},"pobj":{"description":"d","properties":{"a":{"type":"string"}},"type":"object","x-kubernetes-preserve-unknown-fields":true},"sr":{"items":{"type":"string"},"type":"array","x-kubernetes-list-type":"atomic"},"val":{"properties":{"a":{"type":"string"}},"type":"object","x-kubernetes-validations":[{"fieldPath":".a","message":"m","messageExpression":"'bad ' + self.a","reason":"FieldValueForbidden","rule":"self.a == 'x'"},{"rule":"self.a == oldSelf.a"}]},"x":{"nullable":true,"type":"string"}},"required":["x","nul1"],"type":"object"}`
	kubeShapeSpecV2 = `{"properties":{"addl":{"additionalProperties":{},"type":"object"},"def":{"properties":{"a":{"type":"string"}},"type":"object"},"emb2":{"properties":{"apiVersion":{"description":"apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources","type":"string"},"kind":{"description":"kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds","type":"string"},"metadata":{"$ref":"#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta","description":"Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"},"spec":{"type":"object"}},"required":["kind","apiVersion"],"type":"object","x-kubernetes-embedded-resource":true},"emptyobj":{"type":"object"},"ep":{"x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},"fl":{"format":"double","maximum":1.5,"minimum":-2,"type":"number"},"fmt":{"format":"int32","type":"string"},"ios":{"description":"d","pattern":"^[0-9]+%?$","x-kubernetes-int-or-string":true},"junct":{"type":"string"},"mo":{"exclusiveMinimum":true,"minimum":1,"multipleOf":0.5,"type":"number"},"ms":{"additionalProperties":{"type":"string"},"type":"object","x-kubernetes-map-type":"atomic"},"nul1":{"description":"d","enum":["a"],"maxLength":3},"nulobj":{"description":"no"},"parr":{"maxItems":2},"parr2":{"items":{"x-kubernetes-preserve-unknown-fields":true},"type":"array"},"pobj":{"description":"d","x-kubernetes-preserve-unknown-fields":true},"sr":{"items":{"type":"string"},"type":"array","x-kubernetes-list-type":"atomic"},"val":{"properties":{"a":{"type":"string"}},"type":"object","x-kubernetes-validations":[{"fieldPath":".a","message":"m","messageExpression":"'bad ' + self.a","reason":"FieldValueForbidden","rule":"self.a == 'x'"},{"rule":"self.a == oldSelf.a"}]},"x":{}},"type":"object"}`
)

func customStructural(t *testing.T, s string) *cronschema.Structural {
	t.Helper()
	var v map[string]interface{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	root, errs := cronschema.FromOpenAPIV3(v, field.NewPath("openAPIV3Schema"))
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	return (&cronschema.Structural{Root: root}).AsResource("org.example.v1.Shape")
}

func renderedJSON(t *testing.T, v interface{}) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func canonical(t *testing.T, s string) string {
	t.Helper()
	var v interface{}
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return renderedJSON(t, v)
}

// TestCustomResourceSchemaAsKube compares the rendering of a custom
// resource's schema with what kube publishes: value validations,
// nullable, defaults, x-kubernetes-validations and the other extensions,
// embedded resources, int-or-string; v2 without what it cannot say.
func TestCustomResourceSchemaAsKube(t *testing.T) {
	st := customStructural(t, shapeSchema)
	for _, tc := range []struct {
		name string
		s    *schemas
		want string
	}{
		{"v3", newSchemas("#/components/schemas/", true), kubeShapeSpecV3},
		{"v2", newSchemas("#/definitions/", false), kubeShapeSpecV2},
	} {
		name := tc.s.add(st, "Shape")
		spec := tc.s.defs[name]["properties"].(Schema)["spec"]
		if got, want := renderedJSON(t, spec), canonical(t, tc.want); got != want {
			t.Errorf("%s spec:\n%s\nwant\n%s", tc.name, got, want)
		}
	}
}

// TestCustomResourceRootAsKube: in v2 a root that keeps unknown fields is
// a bare object; v3 keeps its properties.
func TestCustomResourceRootAsKube(t *testing.T) {
	st := customStructural(t, `{"type":"object","x-kubernetes-preserve-unknown-fields":true}`)
	v2 := newSchemas("#/definitions/", false)
	if got := renderedJSON(t, v2.defs[v2.add(st, "Shape")]); got != `{"type":"object"}` {
		t.Errorf("v2 root: %s", got)
	}
	v3 := newSchemas("#/components/schemas/", true)
	root := v3.defs[v3.add(st, "Shape")]
	if root["x-kubernetes-preserve-unknown-fields"] != true || root["properties"].(Schema)["metadata"] == nil {
		t.Errorf("v3 root: %s", renderedJSON(t, root))
	}
}

// TestGoTypesRenderAsBefore: a Go type's root definition renders the
// same whether or not it is taken as a custom resource's, so the
// built-in documents do not change (the apiserver's tests compare their
// bytes too).
func TestGoTypesRenderAsBefore(t *testing.T) {
	for _, st := range []*cronschema.Structural{
		cronschema.FromGoType(&batchv1.CronJob{}),
		cronschema.FromGoType(&batchv1.Job{}),
		cronschema.FromGoType(&corev1.ConfigMap{}),
		cronschema.FromGoType(&corev1.Namespace{}),
		cronschema.FromGoType(&apiextensionsv1.CustomResourceDefinition{}),
	} {
		for _, v3 := range []bool{false, true} {
			s := newSchemas("#/", v3)
			name := st.RootName()
			d := st.Definitions[name]
			if got, want := s.renderRoot(d), s.render(d, false); !reflect.DeepEqual(got, want) {
				t.Errorf("%s (v3 %v): as a root\n%s\nelse\n%s", name, v3, renderedJSON(t, got), renderedJSON(t, want))
			}
		}
	}
}

// TestCustomIntOrStringJunctorsAsKube: how kube spells an int-or-string
// out next to junctors of its own (v3), and drops junctors (v2).
func TestCustomIntOrStringJunctorsAsKube(t *testing.T) {
	st := customStructural(t, `{"type":"object","properties":{
		"a":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}],"allOf":[{"maxLength":3}]},
		"b":{"x-kubernetes-int-or-string":true,"anyOf":[{"maxLength":2},{"pattern":"^x"}]},
		"c":{"x-kubernetes-int-or-string":true,"allOf":[{"anyOf":[{"type":"integer"},{"type":"string"}]},{"pattern":"^y"}]},
		"d":{"type":"object","properties":{"e":{"type":"string"}},"anyOf":[{"required":["e"]},{"properties":{"e":{"maxLength":3}}}],"not":{"required":["f"]}}}}`)
	for _, tc := range []struct {
		s    *schemas
		want string
	}{
		{newSchemas("#/components/schemas/", true), `{"a":{"allOf":[{"maxLength":3}],"anyOf":[{"type":"integer"},{"type":"string"}],"x-kubernetes-int-or-string":true},"b":{"allOf":[{"anyOf":[{"type":"integer"},{"type":"string"}]}],"anyOf":[{"maxLength":2},{"pattern":"^x"}],"x-kubernetes-int-or-string":true},"c":{"allOf":[{"anyOf":[{"type":"integer"},{"type":"string"}]},{"pattern":"^y"}],"x-kubernetes-int-or-string":true},"d":{"type":"object","anyOf":[{"required":["e"]},{"properties":{"e":{"maxLength":3}}}],"not":{"required":["f"]},"properties":{"e":{"type":"string"}}}}`},
		{newSchemas("#/definitions/", false), `{"a":{"x-kubernetes-int-or-string":true},"b":{"x-kubernetes-int-or-string":true},"c":{"x-kubernetes-int-or-string":true},"d":{"type":"object","properties":{"e":{"type":"string"}}}}`},
	} {
		props := tc.s.defs[tc.s.add(st, "Junct")]["properties"].(Schema)
		for _, k := range []string{"apiVersion", "kind", "metadata"} {
			delete(props, k)
		}
		if got, want := renderedJSON(t, props), canonical(t, tc.want); got != want {
			t.Errorf("v3 %v:\n%s\nwant\n%s", tc.s.v3, got, want)
		}
	}
}
