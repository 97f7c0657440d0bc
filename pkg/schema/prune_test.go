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

// kube coerces the metadata of embedded resources as it does the root's:
// unknown fields dropped and reported after the root's metadata and the
// pruned fields, a null creationTimestamp dropped, and a value that is
// not ObjectMeta (or an apiVersion or kind that is not a string) refused
// with the path of the embedded resource. Values are as kube-apiserver
// v1.29 answered.
func TestPrune_EmbeddedResourcesAsKube(t *testing.T) {
	st := mustSchema(t, `
type: object
properties:
  spec:
    type: object
    properties:
      t: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
      l:
        type: array
        items: {type: object, x-kubernetes-embedded-resource: true, properties: {spec: {type: object, properties: {a: {type: string}}}}}
      m:
        type: object
        additionalProperties: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
`).AsResource("io.example.v1.Thing")
	tests := []struct {
		name, in, want string
		unknown        []string
		err            string
	}{
		{"unknown metadata fields of embedded resources go last",
			`{"metadata":{"name":"n","zMeta":1,"aMeta":1},"aaTop":1,"spec":{"zz":1,"t":{"apiVersion":"v1","kind":"K","metadata":{"name":"t","bogus":1,"abogus":2,"creationTimestamp":null,"labels":{"a":"b"}},"spec":{"x":1}},
			  "l":[{"apiVersion":"v1","kind":"K","metadata":{"x":1},"spec":{"a":"1","b":2}}]}}`,
			`{"metadata":{"creationTimestamp":null,"name":"n"},"spec":{"l":[{"apiVersion":"v1","kind":"K","metadata":{},"spec":{"a":"1"}}],"t":{"apiVersion":"v1","kind":"K","metadata":{"labels":{"a":"b"},"name":"t"},"spec":{"x":1}}}}`,
			[]string{"metadata.aMeta", "metadata.zMeta", "aaTop", "spec.l[0].spec.b", "spec.zz", "spec.l[0].metadata.x", "spec.t.metadata.abogus", "spec.t.metadata.bogus"}, ""},
		{"embedded metadata of the wrong type", `{"spec":{"t":{"metadata":"x"}}}`, "", nil,
			`spec.t.metadata: Invalid value: "x": json: cannot unmarshal string into Go value of type v1.ObjectMeta`},
		{"embedded metadata field of the wrong type", `{"spec":{"t":{"metadata":{"name":5}}}}`, "", nil,
			`spec.t.metadata: Invalid value: map[string]interface {}{"name":5}: json: cannot unmarshal number into Go struct field ObjectMeta.name of type string`},
		{"map values are keyed", `{"spec":{"m":{"k":{"metadata":{"labels":"x"}}}}}`, "", nil,
			`spec.m[k].metadata: Invalid value: map[string]interface {}{"labels":"x"}: json: cannot unmarshal string into Go struct field ObjectMeta.labels of type map[string]string`},
		{"apiVersion that is not a string", `{"spec":{"t":{"apiVersion":5,"kind":"K"}}}`, "", nil,
			`spec.t.apiVersion: Invalid value: 5: must be a string`},
		{"root metadata of the wrong type", `{"metadata":"x"}`, "", nil,
			`json: cannot unmarshal string into Go value of type v1.ObjectMeta`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var obj map[string]interface{}
			if err := json.Unmarshal([]byte(tc.in), &obj); err != nil {
				t.Fatal(err)
			}
			unknown, err := st.Prune(obj)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := json.Marshal(obj); string(got) != tc.want {
				t.Errorf("pruned = %s\nwant %s", got, tc.want)
			}
			if !reflect.DeepEqual(unknown, tc.unknown) {
				t.Errorf("unknown = %q\nwant %q", unknown, tc.unknown)
			}
		})
	}
}

func TestPruneStored_KeepsTheRootMetadataAsStored(t *testing.T) {
	st := mustSchema(t, `{type: object, properties: {spec: {type: object, properties: {a: {type: string}}}}}`).AsResource("io.example.v1.Thing")
	var obj map[string]interface{}
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"n","colour":"red"},"spec":{"a":"x","b":1}}`), &obj); err != nil {
		t.Fatal(err)
	}
	if err := st.PruneStored(obj); err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(obj); string(got) != `{"metadata":{"colour":"red","name":"n"},"spec":{"a":"x"}}` {
		t.Errorf("got %s", got)
	}
}
