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
			p + ".properties[a].items: Forbidden: items must be a schema object and not an array"},
		{"PropertiesAndAdditionalProperties", `{type: object, properties: {a: {type: object, properties: {b: {type: string}}, additionalProperties: {type: string}}}}`,
			p + ".properties[a].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"},
		{"AdditionalPropertiesAtRoot", `{type: object, additionalProperties: {type: string}}`,
			p + ".additionalProperties: Forbidden: must not be used at the root"},
		{"Ref", `{type: object, $ref: "#/x"}`, p + ".$ref: Forbidden: $ref is not supported"},
		{"Definitions", `{type: object, definitions: {a: {type: string}}}`, p + ".definitions: Forbidden: definitions is not supported"},
		{"PatternProperties", `{type: object, patternProperties: {a: {type: string}}}`, p + ".patternProperties: Forbidden: patternProperties is not supported"},
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
			p + ".properties[a].items.x-kubernetes-map-type: Invalid value: \"null\": must be atomic as item of a list with x-kubernetes-list-type=set\n" +
				p + ".properties[a].x-kubernetes-list-type: Invalid value: \"set\": must be map if x-kubernetes-list-map-keys is non-empty"},
		{"ListMapKeyNotAProperty", `{type: object, properties: {a: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k], items: {type: object, properties: {j: {type: string}}}}}}`,
			p + ".properties[a].x-kubernetes-list-map-keys: Invalid value: []string{\"k\"}: entries must all be names of item properties"},
		{"ListMapKeyOptional", `{type: object, properties: {a: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k], items: {type: object, properties: {k: {type: string}}}}}}`,
			p + ".properties[a].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"},
		{"MapTypeUnknown", `{type: object, properties: {a: {type: object, x-kubernetes-map-type: flat}}}`,
			p + ".properties[a].x-kubernetes-map-type: Unsupported value: \"flat\": supported values: \"atomic\", \"granular\""},
		{"NullType", `{type: object, properties: {a: {type: "null"}}}`,
			p + ".properties[a].type: Unsupported value: \"null\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"\n" +
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

// The types of an int-or-string may be given in junctors, as kubebuilder
// writes them for intstr.IntOrString fields, and kube takes exactly those
// patterns (with x-kubernetes-int-or-string or without it).
func TestFromOpenAPIV3_IntOrStringJunctorPatterns(t *testing.T) {
	p := schemaPath.String() + ".properties[p]"
	for _, c := range []struct {
		name, schema, want string
	}{
		{"AnyOf", `{x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}`, ""},
		{"AnyOfWithoutExtensionNeedsAType", `{anyOf: [{type: integer}, {type: string}]}`,
			p + ".type: Required value: must not be empty for specified object fields"},
		{"AnyOfBesideAType", `{type: string, x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}`, ""},
		{"FirstAllOf", `{x-kubernetes-int-or-string: true, allOf: [{anyOf: [{type: integer}, {type: string}], pattern: "^a"}, {maxLength: 3}]}`, ""},
		{"SameAnyOfTwice", `{x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}], allOf: [{anyOf: [{type: integer}, {type: string}]}]}`, ""},
		{"OtherOrder", `{x-kubernetes-int-or-string: true, anyOf: [{type: string}, {type: integer}]}`,
			p + ".anyOf[0].type: Forbidden: must be empty to be structural\n" + p + ".anyOf[1].type: Forbidden: must be empty to be structural"},
		{"MoreThanTheTypes", `{x-kubernetes-int-or-string: true, anyOf: [{type: integer, minimum: 3}, {type: string}]}`,
			p + ".anyOf[0].type: Forbidden: must be empty to be structural\n" + p + ".anyOf[1].type: Forbidden: must be empty to be structural"},
		{"SecondAllOf", `{x-kubernetes-int-or-string: true, allOf: [{pattern: x}, {anyOf: [{type: integer}, {type: string}]}]}`,
			p + ".allOf[1].anyOf[0].type: Forbidden: must be empty to be structural\n" + p + ".allOf[1].anyOf[1].type: Forbidden: must be empty to be structural"},
		{"OneOf", `{x-kubernetes-int-or-string: true, oneOf: [{type: integer}, {type: string}]}`,
			p + ".oneOf[0].type: Forbidden: must be empty to be structural\n" + p + ".oneOf[1].type: Forbidden: must be empty to be structural"},
		{"NestedInTheFirstAllOf", `{x-kubernetes-int-or-string: true, allOf: [{anyOf: [{type: integer}, {type: string}], allOf: [{type: string}]}]}`,
			p + ".allOf[0].allOf[0].type: Forbidden: must be empty to be structural"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errs := FromOpenAPIV3(decode(t, `{type: object, properties: {p: `+c.schema+`}}`), schemaPath)
			if got := errStrings(errs); got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

// Junctors and multipleOf are kept for validation.
func TestFromOpenAPIV3_KeepsJunctorsAndMultipleOf(t *testing.T) {
	s, errs := FromOpenAPIV3(decode(t, `
type: object
properties:
  a:
    type: integer
    multipleOf: 5
    allOf: [{minimum: 1}]
    anyOf: [{maximum: 10}, {minimum: 100}]
    oneOf: [{multipleOf: 2}, {multipleOf: 3}]
    not: {enum: [15]}
  o:
    type: object
    properties: {x: {type: string}}
    anyOf: [{required: [x], properties: {x: {maxLength: 3}}}]
`), schemaPath)
	if len(errs) > 0 {
		t.Fatal(errStrings(errs))
	}
	a := s.Properties["a"]
	if a.MultipleOf == nil || *a.MultipleOf != 5 || len(a.AllOf) != 1 || *a.AllOf[0].Minimum != 1 || len(a.AnyOf) != 2 ||
		len(a.OneOf) != 2 || *a.OneOf[1].MultipleOf != 3 || a.Not == nil || len(a.Not.Enum) != 1 {
		t.Errorf("a = %+v", a)
	}
	o := s.Properties["o"].AnyOf[0]
	if o.Required[0] != "x" || *o.Properties["x"].MaxLength != 3 {
		t.Errorf("o.anyOf[0] = %+v", o)
	}
}

func TestFromOpenAPIV3_MoreStructuralRules(t *testing.T) {
	p := schemaPath.String()
	cases := []struct {
		name, schema, want string
	}{
		{"SetOfObjectsMustBeAtomic", `{type: object, properties: {s: {type: array, x-kubernetes-list-type: set, items: {type: object, properties: {k: {type: string}}}}}}`,
			p + `.properties[s].items.x-kubernetes-map-type: Invalid value: "null": must be atomic as item of a list with x-kubernetes-list-type=set`},
		{"SetOfGranularMaps", `{type: object, properties: {s: {type: array, x-kubernetes-list-type: set, items: {type: object, x-kubernetes-map-type: granular, additionalProperties: {type: string}}}}}`,
			p + `.properties[s].items.x-kubernetes-map-type: Invalid value: "null": must be atomic as item of a list with x-kubernetes-list-type=set`},
		{"SetOfSets", `{type: object, properties: {s: {type: array, x-kubernetes-list-type: set, items: {type: array, x-kubernetes-list-type: set, items: {type: string}}}}}`,
			p + `.properties[s].items.x-kubernetes-list-type: Invalid value: "set": must be atomic as item of a list with x-kubernetes-list-type=set`},
		{"SetOfAtomicObjects", `{type: object, properties: {s: {type: array, x-kubernetes-list-type: set, items: {type: object, x-kubernetes-map-type: atomic, properties: {k: {type: string}}}}}}`, ""},
		{"ListMapKeysMustBeScalars", `{type: object, properties: {l: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k, o, missing], items: {type: object, properties: {k: {type: string}, o: {type: object}}}}}}`,
			p + `.properties[l].items.properties[o].type: Invalid value: "object": must be a scalar type if parent array's x-kubernetes-list-type is map` + "\n" +
				p + `.properties[l].x-kubernetes-list-map-keys: Invalid value: []string{"k", "o", "missing"}: entries must all be names of item properties` + "\n" +
				p + `.properties[l].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property` + "\n" +
				p + `.properties[l].items.properties[o].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property`},
		{"ListMapDuplicateKeys", `{type: object, properties: {l: {type: array, x-kubernetes-list-type: map, x-kubernetes-list-map-keys: [k, k], items: {type: object, required: [k], properties: {k: {type: string}}}}}}`,
			p + `.properties[l].x-kubernetes-list-map-keys: Invalid value: []string{"k", "k"}: must not contain duplicate entries`},
		{"JunctorsSayNoShape", `{type: object, properties: {x: {type: integer, not: {type: integer, default: 1, description: d, nullable: true}}, o: {type: object, properties: {a: {type: integer}}, anyOf: [{properties: {b: {minimum: 1}, metadata: {type: object}}}, {items: {minimum: 1}}, {additionalProperties: {type: string}}, {title: t, x-kubernetes-list-type: set, x-kubernetes-validations: [{rule: "true"}]}]}}}`,
			p + `.properties[o].anyOf[0].properties[metadata].type: Forbidden: must be empty to be structural` + "\n" +
				p + `.properties[o].anyOf[0].properties[metadata]: Forbidden: must not be specified in a nested context` + "\n" +
				p + `.properties[o].anyOf[2].additionalProperties: Forbidden: must be undefined to be structural` + "\n" +
				p + `.properties[o].anyOf[3].title: Forbidden: must be empty to be structural` + "\n" +
				p + `.properties[o].anyOf[3].x-kubernetes-list-type: Forbidden: must be undefined to be structural` + "\n" +
				p + `.properties[o].anyOf[3].x-kubernetes-validations: Forbidden: must be empty to be structural` + "\n" +
				p + `.properties[x].not.default: Forbidden: must be undefined to be structural` + "\n" +
				p + `.properties[x].not.description: Forbidden: must be empty to be structural` + "\n" +
				p + `.properties[x].not.nullable: Forbidden: must be false to be structural` + "\n" +
				p + `.properties[x].not.type: Forbidden: must be empty to be structural` + "\n" +
				p + `.properties[o].anyOf[3].type: Required value: must be array if x-kubernetes-list-type is specified`},
		{"JunctorFieldsNeedNoType", `{type: object, properties: {o: {type: object, properties: {a: {type: integer}}, oneOf: [{required: [a]}, {properties: {a: {minimum: 1}}}]}}}`, ""},
		{"RootJunctorsNameOnlyWhatIsSpecified", `{type: object, properties: {spec: {type: object}}, anyOf: [{properties: {spec: {properties: {zz: {minimum: 1}}}}}, {items: {minimum: 1}}]}`,
			p + `.items: Required value: because it is defined in ` + p + `.anyOf[1].items` + "\n" +
				p + `.properties[spec].properties[zz]: Required value: because it is defined in ` + p + `.anyOf[0].properties[spec].properties[zz]`},
		{"StructuralErrorsSortedBeforeKeywords", `{type: object, properties: {kind: {type: integer}, apiVersion: {type: object}, u: {type: array, uniqueItems: true, items: {type: string}}}}`,
			p + `.properties[apiVersion].type: Invalid value: "object": must be string` + "\n" +
				p + `.properties[kind].type: Invalid value: "integer": must be string` + "\n" +
				p + `.properties[u].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic`},
		{"KindWithoutType", `{type: object, properties: {kind: {description: x}}}`,
			p + `.properties[kind].type: Invalid value: "": must be string` + "\n" + p + `.properties[kind].type: Required value: must not be empty for specified object fields`},
		{"SchemaKeywordStopsStructuralChecks", `{type: object, properties: {a: {$schema: x}}}`,
			p + `: Invalid value: "": OpenAPIV3Schema 'schema' is not supported`},
		{"RefStopsStructuralChecks", `{type: object, properties: {a: {$ref: "#/x"}}}`, p + `.properties[a].$ref: Forbidden: $ref is not supported`},
		{"AdditionalPropertiesFalseBesideProperties", `{type: object, properties: {m: {type: object, properties: {a: {type: string}}, additionalProperties: false}, n: {type: object, properties: {a: {type: string}}, additionalProperties: true}}}`,
			p + `.properties[m].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive`},
		{"AdditionalPropertiesFalseAtRoot", `{type: object, additionalProperties: false}`, p + `.additionalProperties: Forbidden: must not be used at the root`},
		{"DefaultInTopLevelMetadata", `{type: object, properties: {metadata: {type: object, properties: {name: {type: string, default: x}}}}}`,
			p + `.properties[metadata].properties[name].default: Forbidden: must not be set in top-level metadata`},
		{"EmbeddedInsideMetadata", `{type: object, properties: {metadata: {type: object, x-kubernetes-embedded-resource: true, properties: {name: {type: string}}}}}`,
			p + `.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified` + "\n" +
				p + `.properties[metadata].x-kubernetes-embedded-resource: Forbidden: must not be used inside of resource meta`},
		{"DefaultInEmbeddedMetadataMap", `{type: object, properties: {e: {type: object, x-kubernetes-embedded-resource: true, properties: {metadata: {type: object, properties: {labels: {type: object, additionalProperties: {type: string, default: x}}}}}}}}`,
			p + `.properties[e].properties[metadata].properties[labels].additionalProperties.default: Forbidden: must not be set inside additionalProperties applying to object metadata`},
		{"NegativeCountsAreTaken", `{type: object, properties: {a: {type: string, maxLength: -1}}}`, ""},
		{"MultipleOfAnyNumber", `{type: object, properties: {a: {type: number, multipleOf: 0}, b: {type: integer, multipleOf: -1}}}`, ""},
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

// CheckCRDSchema reports in kube's order: the structural violations,
// the defaults when there are none, then the keywords.
func TestCheckCRDSchema_Order(t *testing.T) {
	p := schemaPath.String()
	_, errs := CheckCRDSchema(decode(t, `{type: object, properties: {a: {type: integer, maximum: 3, default: 5}, b: {type: string, default: 7, not: {enum: [x]}}, c: {type: integer, anyOf: [{minimum: 10}, {maximum: 2}], default: 5}, d: {type: integer, multipleOf: 3, default: 4}}}`), schemaPath, nil)
	want := p + `.properties[a].default: Invalid value: 5:  in body should be less than or equal to 3` + "\n" +
		p + `.properties[b].default: Invalid value: "integer":  in body must be of type string: "integer"` + "\n" +
		p + `.properties[c].default: Invalid value: "": "" must validate at least one schema (anyOf)` + "\n" +
		p + `.properties[c].default: Invalid value: 5:  in body should be greater than or equal to 10` + "\n" +
		p + `.properties[d].default: Invalid value: 4:  in body should be a multiple of 3`
	if got := errStrings(errs); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	_, errs = CheckCRDSchema(decode(t, `{type: object, properties: {a: {type: integer, default: x}, b: {}}}`), schemaPath, nil)
	if got, want := errStrings(errs), p+`.properties[b].type: Required value: must not be empty for specified object fields`; got != want {
		t.Errorf("defaults of a non-structural schema were checked:\n%s", got)
	}
}

// A stored definition is served under the rules it was accepted with:
// parsing for serving checks only the JSON types.
func TestParseOpenAPIV3_ServesWhatOlderRulesTook(t *testing.T) {
	v := decode(t, `{type: object, properties: {s: {type: array, x-kubernetes-list-type: set, items: {type: object, properties: {k: {type: string}}}}}}`)
	if _, errs := FromOpenAPIV3(v, schemaPath); len(errs) == 0 {
		t.Fatal("a set of granular objects is accepted in a new definition")
	}
	s, errs := ParseOpenAPIV3(v, schemaPath)
	if len(errs) > 0 || s.Properties["s"].ListType != "set" {
		t.Errorf("parsed %+v, %v", s, errStrings(errs))
	}
	if _, errs := ParseOpenAPIV3(decode(t, `{type: object, nullable: "yes"}`), schemaPath); len(errs) != 1 {
		t.Errorf("a nullable that is not a boolean: %v", errStrings(errs))
	}
}
