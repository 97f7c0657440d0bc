package schema

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

const defaultsSchema = `
type: object
properties:
  spec:
    type: object
    default: {}
    properties:
      replicas: {type: integer, default: 1}
      mode: {type: string, default: fast}
      nick: {type: string, nullable: true, default: bob}
      opts:
        type: object
        properties:
          level: {type: integer, default: 3}
      items:
        type: array
        items:
          type: object
          default: {}
          properties:
            weight: {type: integer, default: 5}
      labels:
        type: object
        additionalProperties: {type: string, default: none}
`

func TestDefault(t *testing.T) {
	st := mustSchema(t, defaultsSchema)
	cases := []struct {
		name, in, want string
	}{
		{"MissingParentWithDefaultIsCreatedAndFilled", `{}`, `{spec: {replicas: 1, mode: fast, nick: bob}}`},
		{"SetValuesAreKept", `{spec: {replicas: 4, mode: slow, nick: al}}`, `{spec: {replicas: 4, mode: slow, nick: al}}`},
		{"NonNullableNullIsDefaulted", `{spec: {mode: null}}`, `{spec: {replicas: 1, mode: fast, nick: bob}}`},
		{"NullableNullIsKept", `{spec: {nick: null}}`, `{spec: {replicas: 1, mode: fast, nick: null}}`},
		{"MissingParentWithoutDefaultIsNotCreated", `{spec: {}}`, `{spec: {replicas: 1, mode: fast, nick: bob}}`},
		{"PresentParentGetsNestedDefaults", `{spec: {opts: {}}}`, `{spec: {replicas: 1, mode: fast, nick: bob, opts: {level: 3}}}`},
		{"ItemsAreDefaultedAndNullItemsTakeItemDefault", `{spec: {items: [{}, null, {weight: 1}]}}`, `{spec: {replicas: 1, mode: fast, nick: bob, items: [{weight: 5}, {weight: 5}, {weight: 1}]}}`},
		{"NonNullableNullWithoutDefaultIsRemoved", `{spec: {opts: null}}`, `{spec: {replicas: 1, mode: fast, nick: bob}}`},
		{"NullMapValuesTakeAdditionalPropertiesDefault", `{spec: {labels: {a: null, b: x}}}`, `{spec: {replicas: 1, mode: fast, nick: bob, labels: {a: none, b: x}}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obj := decode(t, c.in)
			st.Default(obj)
			if want := decode(t, c.want); !reflect.DeepEqual(obj, want) {
				t.Errorf("got %v, want %v", obj, want)
			}
		})
	}
}

func TestDefault_DefaultsAreDeepCopied(t *testing.T) {
	st := mustSchema(t, `{type: object, properties: {o: {type: object, default: {a: [1]}, properties: {a: {type: array, items: {type: integer}}}}}}`)
	first := map[string]interface{}{}
	st.Default(first)
	first["o"].(map[string]interface{})["a"].([]interface{})[0] = int64(9)
	second := map[string]interface{}{}
	st.Default(second)
	if got := second["o"].(map[string]interface{})["a"].([]interface{})[0]; got == int64(9) {
		t.Error("a change to a defaulted value changed the schema's default")
	}
}

func TestValidateDefaults(t *testing.T) {
	p := field.NewPath("openAPIV3Schema")
	cases := []struct {
		name, schema, want string
	}{
		{"ValidDefaultsHaveNoErrors", defaultsSchema, ""},
		{"DefaultOutOfRangeIsInvalid", `{type: object, properties: {r: {type: integer, maximum: 3, default: 5}}}`,
			"openAPIV3Schema.properties[r].default: Invalid value: 5:  in body should be less than or equal to 3"},
		{"DefaultOfWrongTypeIsInvalid", `{type: object, properties: {r: {type: integer, default: x}}}`,
			"openAPIV3Schema.properties[r].default: Invalid value: \"string\":  in body must be of type integer: \"string\""},
		{"NestedDefaultErrorsArePathed", `{type: object, properties: {o: {type: object, default: {k: x}, properties: {k: {type: string, enum: [ok]}}}}}`,
			"openAPIV3Schema.properties[o].default.k: Unsupported value: \"x\": supported values: \"ok\""},
		{"DefaultWithUnknownFieldsIsInvalid", `{type: object, properties: {o: {type: object, default: {z: 1}, properties: {n: {type: string}}}}}`,
			"openAPIV3Schema.properties[o].default: Invalid value: map[string]interface {}{\"z\":1}: must not have unknown fields"},
		{"ItemDefaultsAreChecked", `{type: object, properties: {l: {type: array, items: {type: string, maxLength: 1, default: xx}}}}`,
			"openAPIV3Schema.properties[l].items.default: Too long: may not be longer than 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := errStrings(ValidateDefaults(mustSchema(t, c.schema), p, nil)); got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}
