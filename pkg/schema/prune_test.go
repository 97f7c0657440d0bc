package schema

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestPrune_RemovesWhatTheSchemaDoesNotName(t *testing.T) {
	str := &Schema{Type: "string"}
	root := &Schema{Type: "object", Properties: map[string]*Schema{
		"spec": {Type: "object", Properties: map[string]*Schema{
			"a":        str,
			"list":     {Type: "array", Items: &Schema{Type: "object", Properties: map[string]*Schema{"k": str}}},
			"labels":   {Type: "object", AdditionalProperties: str},
			"free":     {Type: "object", PreserveUnknownFields: true, Properties: map[string]*Schema{"typed": {Type: "object", Properties: map[string]*Schema{}}}},
			"embedded": {Type: "object", EmbeddedResource: true, Properties: map[string]*Schema{}},
			"port":     {IntOrString: true},
		}},
	}}
	st := (&Structural{Root: root}).AsResource("io.example.v1.Thing")
	tests := []struct {
		name, in, want string
		unknown        []string
	}{
		{"known fields stay", `{"apiVersion":"example.io/v1","kind":"Thing","spec":{"a":"x"}}`, `{"apiVersion":"example.io/v1","kind":"Thing","spec":{"a":"x"}}`, nil},
		{"unknown top-level and nested", `{"extra":1,"spec":{"a":"x","b":2}}`, `{"spec":{"a":"x"}}`, []string{"extra", "spec.b"}},
		{"list elements by index", `{"spec":{"list":[{"k":"1"},{"k":"2","z":3}]}}`, `{"spec":{"list":[{"k":"1"},{"k":"2"}]}}`, []string{"spec.list[1].z"}},
		{"map values keep any key", `{"spec":{"labels":{"x":"1","y":"2"}}}`, `{"spec":{"labels":{"x":"1","y":"2"}}}`, nil},
		{"preserved subtree keeps unknowns but prunes known children", `{"spec":{"free":{"any":{"thing":1},"typed":{"gone":1}}}}`, `{"spec":{"free":{"any":{"thing":1},"typed":{}}}}`, []string{"spec.free.typed.gone"}},
		{"embedded resource keeps its apiVersion kind metadata", `{"spec":{"embedded":{"apiVersion":"v1","kind":"X","metadata":{"name":"n"},"other":1}}}`, `{"spec":{"embedded":{"apiVersion":"v1","kind":"X","metadata":{"name":"n"}}}}`, []string{"spec.embedded.other"}},
		{"int-or-string objects untouched", `{"spec":{"port":8080}}`, `{"spec":{"port":8080}}`, nil},
		{"metadata keeps ObjectMeta fields only", `{"metadata":{"name":"n","colour":"red","labels":{"a":"b"}}}`, `{"metadata":{"creationTimestamp":null,"labels":{"a":"b"},"name":"n"}}`, []string{"metadata.colour"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var obj map[string]interface{}
			if err := json.Unmarshal([]byte(tc.in), &obj); err != nil {
				t.Fatal(err)
			}
			unknown, err := st.Prune(obj)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(obj)
			if string(got) != tc.want {
				t.Errorf("pruned = %s, want %s", got, tc.want)
			}
			if !reflect.DeepEqual(unknown, tc.unknown) {
				t.Errorf("unknown = %q, want %q", unknown, tc.unknown)
			}
		})
	}
}

func TestPrune_MetadataOfTheWrongShapeIsAnError(t *testing.T) {
	st := (&Structural{Root: &Schema{Type: "object"}}).AsResource("io.example.v1.Thing")
	if _, err := st.Prune(map[string]interface{}{"metadata": map[string]interface{}{"labels": "no"}}); err == nil {
		t.Error("labels that are a string were accepted")
	}
}

func TestKindDefinitionName_ReversesTheGroup(t *testing.T) {
	st := (&Structural{Root: &Schema{Type: "object"}}).AsResource(KindDefinitionName(schemaGVK("stable.example.com", "v1", "CronTab")))
	if st.RootName() != "com.example.stable.v1.CronTab" {
		t.Errorf("name = %s", st.RootName())
	}
	if st.Resolve(st.Root).Properties["metadata"].Ref != "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" {
		t.Error("metadata is not ObjectMeta")
	}
}

func schemaGVK(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

// Junctors only add value validations: pruning and defaulting follow the
// structural part alone, as kube's do (a field named only in an anyOf is
// pruned; a default applies though an allOf then refuses the value).
func TestPruneAndDefault_IgnoreJunctors(t *testing.T) {
	st := mustSchema(t, `
type: object
properties:
  spec:
    type: object
    properties:
      o:
        type: object
        properties: {a: {type: integer}}
        anyOf: [{properties: {b: {minimum: 1}}}, {required: [a]}]
      d:
        type: object
        properties: {a: {type: integer, default: 3}}
        allOf: [{properties: {a: {maximum: 2}}}]
`)
	obj := decode(t, `{spec: {o: {a: 1, b: 0}, d: {}}}`)
	unknown, err := st.Prune(obj)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(unknown, []string{"spec.o.b"}) {
		t.Errorf("unknown = %q", unknown)
	}
	st.Default(obj)
	if want := decode(t, `{spec: {o: {a: 1}, d: {a: 3}}}`); !reflect.DeepEqual(obj, want) {
		t.Errorf("got %v, want %v", obj, want)
	}
	want := "spec.d.a: Invalid value: 3: spec.d.a in body should be less than or equal to 2\n" +
		`<nil>: Invalid value: "": "spec.d" must validate all the schemas (allOf). None validated`
	if got := errStrings(st.Validate(obj)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
