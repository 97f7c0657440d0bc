package schema

import (
	"strings"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// decode reads YAML as kube decodes a request body: integers as int64,
// other numbers as float64.
func decode(t testing.TB, y string) map[string]interface{} {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]interface{}
	if err := utiljson.Unmarshal(j, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func errStrings(errs field.ErrorList) string {
	s := make([]string, len(errs))
	for i, e := range errs {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

var schemaPath = field.NewPath("spec", "versions").Index(0).Child("schema", "openAPIV3Schema")

func TestFromOpenAPIV3_ParsesKeywordsAndExtensions(t *testing.T) {
	s, errs := FromOpenAPIV3(decode(t, `
type: object
properties:
  spec:
    type: object
    required: [name]
    x-kubernetes-validations:
    - rule: self.replicas <= 10
      message: too many
      messageExpression: "'x'"
      reason: FieldValueForbidden
      fieldPath: .replicas
      optionalOldSelf: true
    properties:
      name: {type: string, pattern: "^a", minLength: 1, maxLength: 5, format: hostname}
      replicas: {type: integer, minimum: 1, maximum: 10, exclusiveMaximum: true, default: 1}
      port: {x-kubernetes-int-or-string: true}
      labels: {type: object, additionalProperties: {type: string}, maxProperties: 3, x-kubernetes-map-type: granular}
      ports:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [port]
        items: {type: object, required: [port], properties: {port: {type: integer}}}
      color: {type: string, enum: [red, blue], nullable: true}
      raw: {type: object, x-kubernetes-preserve-unknown-fields: true}
      tmpl: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
`), schemaPath)
	if len(errs) > 0 {
		t.Fatal(errStrings(errs))
	}
	spec := s.Properties["spec"]
	if len(spec.XValidations) != 1 || spec.XValidations[0] != (ValidationRule{Rule: "self.replicas <= 10", Message: "too many", MessageExpression: "'x'", Reason: "FieldValueForbidden", FieldPath: ".replicas", OptionalOldSelf: true}) {
		t.Errorf("XValidations = %+v", spec.XValidations)
	}
	name := spec.Properties["name"]
	if name.Pattern != "^a" || *name.MinLength != 1 || *name.MaxLength != 5 || name.Format != "hostname" {
		t.Errorf("name = %+v", name)
	}
	r := spec.Properties["replicas"]
	if *r.Minimum != 1 || *r.Maximum != 10 || !r.ExclusiveMaximum || r.Default != float64(1) && r.Default != int64(1) {
		t.Errorf("replicas = %+v", r)
	}
	if !spec.Properties["port"].IntOrString || spec.Properties["labels"].AdditionalProperties.Type != "string" ||
		spec.Properties["ports"].ListMapKeys[0] != "port" || !spec.Properties["color"].Nullable ||
		len(spec.Properties["color"].Enum) != 2 || !spec.Properties["raw"].PreserveUnknownFields ||
		!spec.Properties["tmpl"].EmbeddedResource || spec.Properties["labels"].MapType != "granular" {
		t.Errorf("spec = %+v", spec)
	}
}

func TestFromOpenAPIV3_StructuralViolationsAreKubesErrors(t *testing.T) {
	p := schemaPath.String()
	cases := []struct {
		name, schema, want string
	}{
		{"RootWithoutType", `properties: {a: {type: string}}`,
			p + ".type: Required value: must not be empty at the root"},
		{"RootNotObject", `type: string`,
			p + ".type: Invalid value: \"string\": must be object at the root"},
		{"FieldWithoutType", `{type: object, properties: {a: {}}}`,
			p + ".properties[a].type: Required value: must not be empty for specified object fields"},
		{"ItemsWithoutType", `{type: object, properties: {a: {type: array, items: {}}}}`,
			p + ".properties[a].items.type: Required value: must not be empty for specified array items"},
		{"ArrayWithoutItems", `{type: object, properties: {a: {type: array}}}`,
			p + ".properties[a].items: Required value: must be specified"},
		{"ItemsArray", `{type: object, properties: {a: {type: array, items: [{type: string}]}}}`,
			p + ".properties[a].items: Forbidden: items must be a schema object and not an array\n" + p + ".properties[a].items: Required value: must be specified"},
		{"PropertiesAndAdditionalProperties", `{type: object, properties: {a: {type: object, properties: {b: {type: string}}, additionalProperties: {type: string}}}}`,
			p + ".properties[a].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"},
		{"AdditionalPropertiesAtRoot", `{type: object, additionalProperties: {type: string}}`,
			p + ".additionalProperties: Forbidden: must not be used at the root"},
		{"Ref", `{type: object, $ref: "#/x"}`, p + ".$ref: Forbidden: $ref is not supported"},
		{"Definitions", `{type: object, definitions: {}}`, p + ".definitions: Forbidden: definitions is not supported"},
		{"PatternProperties", `{type: object, patternProperties: {}}`, p + ".patternProperties: Forbidden: patternProperties is not supported"},
		{"Dependencies", `{type: object, dependencies: {}}`, p + ".dependencies: Forbidden: dependencies is not supported"},
		{"AdditionalItems", `{type: object, additionalItems: false}`, p + ".additionalItems: Forbidden: additionalItems is not supported"},
		{"ID", `{type: object, id: x}`, p + ".id: Forbidden: id is not supported"},
		{"UniqueItems", `{type: object, properties: {a: {type: array, uniqueItems: true, items: {type: string}}}}`,
			p + ".properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"},
		{"InvalidPattern", `{type: object, properties: {a: {type: string, pattern: "("}}}`,
			p + ".properties[a].pattern: Invalid value: \"(\": must be a valid regular expression, but isn't: error parsing regexp: missing closing ): `(`"},
		{"MetadataBeyondName", `{type: object, properties: {metadata: {type: object, properties: {labels: {type: object}}}}}`,
			p + ".properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"},
		{"PreserveUnknownFalse", `{type: object, x-kubernetes-preserve-unknown-fields: false}`,
			p + ".x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"},
		{"IntOrStringWithPreserve", `{type: object, properties: {a: {x-kubernetes-int-or-string: true, x-kubernetes-preserve-unknown-fields: true}}}`,
			p + ".properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true"},
		{"EmbeddedNotObject", `{type: object, properties: {a: {type: string, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}}}`,
			p + ".properties[a].type: Invalid value: \"string\": must be object if x-kubernetes-embedded-resource is true"},
		{"EmbeddedEmpty", `{type: object, properties: {a: {type: object, x-kubernetes-embedded-resource: true}}}`,
			p + ".properties[a].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"},
		{"ListTypeUnknown", `{type: object, properties: {a: {type: array, x-kubernetes-list-type: bag, items: {type: string}}}}`,
			p + ".properties[a].x-kubernetes-list-type: Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\""},
		{"ListTypeOnString", `{type: object, properties: {a: {type: string, x-kubernetes-list-type: set}}}`,
			p + ".properties[a].type: Invalid value: \"string\": must be array if x-kubernetes-list-type is specified"},
		{"ListMapWithoutKeys", `{type: object, properties: {a: {type: array, x-kubernetes-list-type: map, items: {type: object}}}}`,
			p + ".properties[a].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"},
		{"ListMapKeysWithSet", `{type: object, properties: {a: {type: array, x-kubernetes-list-type: set, x-kubernetes-list-map-keys: [k], items: {type: object, properties: {k: {type: string}}}}}}`,
			p + ".properties[a].x-kubernetes-list-type: Invalid value: \"set\": must be map if x-kubernetes-list-map-keys is non-empty"},
		{"ListMapKeyNotAProperty", `{type: object, properties: {a: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k], items: {type: object, properties: {j: {type: string}}}}}}`,
			p + ".properties[a].x-kubernetes-list-map-keys: Invalid value: []string{\"k\"}: entries must all be names of item properties"},
		{"ListMapKeyOptional", `{type: object, properties: {a: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k], items: {type: object, properties: {k: {type: string}}}}}}`,
			p + ".properties[a].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"},
		{"MapTypeUnknown", `{type: object, properties: {a: {type: object, x-kubernetes-map-type: flat}}}`,
			p + ".properties[a].x-kubernetes-map-type: Unsupported value: \"flat\": supported values: \"atomic\", \"granular\""},
		{"NullType", `{type: object, properties: {a: {type: "null"}}}`,
			p + ".properties[a].type: Forbidden: type cannot be set to null, use nullable as an alternative"},
		{"NullableRoot", `{type: object, nullable: true}`, p + ".nullable: Forbidden: nullable cannot be true at the root"},
		{"NullableSetItems", `{type: object, properties: {a: {type: array, x-kubernetes-list-type: set, items: {type: string, nullable: true}}}}`,
			p + ".properties[a].items.nullable: Forbidden: cannot be nullable when x-kubernetes-list-type is set"},
		{"JunctorWithType", `{type: object, properties: {a: {type: string, anyOf: [{type: string}]}}}`,
			p + ".properties[a].anyOf[0].type: Forbidden: must be empty to be structural"},
		{"JunctorWithDefault", `{type: object, properties: {a: {type: string, allOf: [{default: x}]}}}`,
			p + ".properties[a].allOf[0].default: Forbidden: must be undefined to be structural"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errs := FromOpenAPIV3(decode(t, c.schema), schemaPath)
			if got := errStrings(errs); got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

func TestFromOpenAPIV3_IntOrStringAndPreserveNeedNoType(t *testing.T) {
	_, errs := FromOpenAPIV3(decode(t, `{type: object, properties: {a: {x-kubernetes-int-or-string: true}, b: {x-kubernetes-preserve-unknown-fields: true}}}`), schemaPath)
	if len(errs) > 0 {
		t.Error(errStrings(errs))
	}
}
