package v1beta1

import (
	"bytes"
	"encoding/json"
)

// JSONSchemaProps is an OpenAPI v3 schema as decoded JSON. It encodes as
// kube's Go type does: its keywords in that type's field order, keywords
// kube does not know left out, and zero values of the keywords kube
// omits when empty left out too.
type JSONSchemaProps map[string]interface{}

// schemaKeywords are kube's JSONSchemaProps fields in declaration order;
// omitZero says the field is omitted when empty (a non-pointer with
// omitempty).
var schemaKeywords = []struct {
	name     string
	omitZero bool
}{
	{"id", true}, {"$schema", true}, {"$ref", false}, {"description", true}, {"type", true}, {"format", true},
	{"title", true}, {"default", false}, {"maximum", false}, {"exclusiveMaximum", true}, {"minimum", false},
	{"exclusiveMinimum", true}, {"maxLength", false}, {"minLength", false}, {"pattern", true}, {"maxItems", false},
	{"minItems", false}, {"uniqueItems", true}, {"multipleOf", false}, {"enum", true}, {"maxProperties", false},
	{"minProperties", false}, {"required", true}, {"items", false}, {"allOf", true}, {"oneOf", true}, {"anyOf", true},
	{"not", false}, {"properties", true}, {"additionalProperties", false}, {"patternProperties", true},
	{"dependencies", true}, {"additionalItems", false}, {"definitions", true}, {"externalDocs", false},
	{"example", false}, {"nullable", true}, {"x-kubernetes-preserve-unknown-fields", false},
	{"x-kubernetes-embedded-resource", true}, {"x-kubernetes-int-or-string", true},
	{"x-kubernetes-list-map-keys", true}, {"x-kubernetes-list-type", false}, {"x-kubernetes-map-type", false},
	{"x-kubernetes-validations", true},
}

// ruleKeywords are the fields of an x-kubernetes-validations rule in
// kube's order, and when they are omitted: rule never, optionalOldSelf
// (a pointer in kube) when null, so that a false one stays, the others
// when empty.
var ruleKeywords = []struct {
	name string
	omit func(interface{}) bool
}{
	{"rule", func(interface{}) bool { return false }}, {"message", isZero}, {"messageExpression", isZero},
	{"reason", isZero}, {"fieldPath", isZero}, {"optionalOldSelf", isNull},
}

func isNull(v interface{}) bool { return v == nil }

// MarshalJSON encodes the schema in kube's field order.
func (s JSONSchemaProps) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	for _, k := range schemaKeywords {
		v, ok := s[k.name]
		if !ok || (k.omitZero && isZero(v)) {
			continue
		}
		data, err := json.Marshal(keywordValue(k.name, v))
		if err != nil {
			return nil, err
		}
		writeField(&buf, &first, k.name, data)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// keywordValue wraps the schemas inside a keyword's value so that they
// encode in kube's order too.
func keywordValue(name string, v interface{}) interface{} {
	switch name {
	case "items", "not", "additionalProperties", "additionalItems":
		return schemaOrAny(v)
	case "allOf", "oneOf", "anyOf":
		return schemaList(v)
	case "properties", "patternProperties", "definitions", "dependencies":
		m, ok := v.(map[string]interface{})
		if !ok {
			return v
		}
		out := make(map[string]interface{}, len(m))
		for k, x := range m {
			out[k] = schemaOrAny(x)
		}
		return out
	case "x-kubernetes-validations":
		list, ok := v.([]interface{})
		if !ok {
			return v
		}
		out := make([]interface{}, len(list))
		for i, r := range list {
			if m, ok := r.(map[string]interface{}); ok {
				out[i] = validationRule(m)
			} else {
				out[i] = r
			}
		}
		return out
	}
	return v
}

// schemaOrAny is a schema where v is an object; a list of schemas
// (items as an array) or a boolean (additionalProperties) otherwise.
func schemaOrAny(v interface{}) interface{} {
	switch x := v.(type) {
	case map[string]interface{}:
		return JSONSchemaProps(x)
	case []interface{}:
		return schemaList(x)
	}
	return v
}

func schemaList(v interface{}) interface{} {
	list, ok := v.([]interface{})
	if !ok {
		return v
	}
	out := make([]interface{}, len(list))
	for i, x := range list {
		out[i] = schemaOrAny(x)
	}
	return out
}

// validationRule is an x-kubernetes-validations entry in kube's order.
type validationRule map[string]interface{}

func (r validationRule) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	for _, k := range ruleKeywords {
		v, ok := r[k.name]
		if !ok || k.omit(v) {
			continue
		}
		data, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		writeField(&buf, &first, k.name, data)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

func writeField(buf *bytes.Buffer, first *bool, name string, value []byte) {
	if !*first {
		buf.WriteByte(',')
	}
	*first = false
	key, _ := json.Marshal(name)
	buf.Write(key)
	buf.WriteByte(':')
	buf.Write(value)
}

// isZero reports what encoding/json's omitempty leaves out.
func isZero(v interface{}) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == ""
	case []interface{}:
		return len(x) == 0
	case map[string]interface{}:
		return len(x) == 0
	}
	return false
}
