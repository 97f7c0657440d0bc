package v1

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"google.golang.org/protobuf/encoding/protowire"
	sigsjson "sigs.k8s.io/json"
)

// A schema is held as decoded JSON (see JSONSchemaProps), so its
// protobuf form is written from the map and read back into one, keyword
// by keyword, as kube's JSONSchemaProps message: the table below gives
// each keyword's field number and how it is written. Read back, a schema
// holds the keywords kube's JSON form of it would: empty strings and
// false booleans of non-pointer fields are left out, pointer fields kept.

// schemaKind says how a keyword is written and read.
type schemaKind int

const (
	kString       schemaKind = iota // string, always written, left out of the map when empty
	kOptString                      // *string
	kBool                           // bool, always written, left out of the map when false
	kOptBool                        // *bool
	kInt                            // *int64
	kDouble                         // *float64
	kJSON                           // *JSON: a value as its JSON bytes
	kJSONList                       // []JSON
	kStrings                        // []string
	kSchema                         // *JSONSchemaProps
	kSchemas                        // []JSONSchemaProps
	kSchemaMap                      // map[string]JSONSchemaProps
	kOrArray                        // *JSONSchemaPropsOrArray: a schema, or a list of them
	kOrBool                         // *JSONSchemaPropsOrBool: a schema, or a boolean
	kDependencies                   // map[string]JSONSchemaPropsOrStringArray
	kDocs                           // *ExternalDocumentation
	kRules                          // []ValidationRule
)

type schemaKeyword struct {
	num  protowire.Number
	key  string
	kind schemaKind
}

// schemaFields are kube's JSONSchemaProps fields in field-number order.
var schemaFields = []schemaKeyword{
	{1, "id", kString}, {2, "$schema", kString}, {3, "$ref", kOptString}, {4, "description", kString},
	{5, "type", kString}, {6, "format", kString}, {7, "title", kString}, {8, "default", kJSON},
	{9, "maximum", kDouble}, {10, "exclusiveMaximum", kBool}, {11, "minimum", kDouble},
	{12, "exclusiveMinimum", kBool}, {13, "maxLength", kInt}, {14, "minLength", kInt}, {15, "pattern", kString},
	{16, "maxItems", kInt}, {17, "minItems", kInt}, {18, "uniqueItems", kBool}, {19, "multipleOf", kDouble},
	{20, "enum", kJSONList}, {21, "maxProperties", kInt}, {22, "minProperties", kInt}, {23, "required", kStrings},
	{24, "items", kOrArray}, {25, "allOf", kSchemas}, {26, "oneOf", kSchemas}, {27, "anyOf", kSchemas},
	{28, "not", kSchema}, {29, "properties", kSchemaMap}, {30, "additionalProperties", kOrBool},
	{31, "patternProperties", kSchemaMap}, {32, "dependencies", kDependencies}, {33, "additionalItems", kOrBool},
	{34, "definitions", kSchemaMap}, {35, "externalDocs", kDocs}, {36, "example", kJSON}, {37, "nullable", kBool},
	{38, "x-kubernetes-preserve-unknown-fields", kOptBool}, {39, "x-kubernetes-embedded-resource", kBool},
	{40, "x-kubernetes-int-or-string", kBool}, {41, "x-kubernetes-list-map-keys", kStrings},
	{42, "x-kubernetes-list-type", kOptString}, {43, "x-kubernetes-map-type", kOptString},
	{44, "x-kubernetes-validations", kRules},
}

var schemaFieldByNum = func() map[protowire.Number]schemaKeyword {
	m := make(map[protowire.Number]schemaKeyword, len(schemaFields))
	for _, f := range schemaFields {
		m[f.num] = f
	}
	return m
}()

// encodeSchema writes schema s, a JSON object, as kube's JSONSchemaProps
// message. Keywords kube does not know are not written: kube's decoding
// drops them.
func encodeSchema(e *encoder, s map[string]interface{}) {
	for _, k := range schemaFields {
		v := s[k.key]
		switch k.kind {
		case kString:
			str, ok := optional[string](v)
			if !ok {
				e.fail(errNotA("a string", k.key, v))
			}
			e.string(k.num, str)
		case kOptString:
			if v != nil {
				str, ok := v.(string)
				if !ok {
					e.fail(errNotA("a string", k.key, v))
				}
				e.string(k.num, str)
			}
		case kBool:
			b, ok := optional[bool](v)
			if !ok {
				e.fail(errNotA("a boolean", k.key, v))
			}
			e.bool(k.num, b)
		case kOptBool:
			if v != nil {
				b, ok := v.(bool)
				if !ok {
					e.fail(errNotA("a boolean", k.key, v))
				}
				e.bool(k.num, b)
			}
		case kInt:
			if v != nil {
				n, ok := integer(v)
				if !ok {
					e.fail(errNotA("an integer", k.key, v))
				}
				e.int(k.num, n)
			}
		case kDouble:
			if v != nil {
				f, ok := number(v)
				if !ok {
					e.fail(errNotA("a number", k.key, v))
				}
				e.double(k.num, math.Float64bits(f))
			}
		case kJSON:
			if v != nil {
				e.message(k.num, func(e *encoder) { encodeJSON(e, v) })
			}
		case kJSONList:
			for _, x := range list(e, k.key, v) {
				e.message(k.num, func(e *encoder) { encodeJSON(e, x) })
			}
		case kStrings:
			for _, x := range list(e, k.key, v) {
				str, ok := x.(string)
				if !ok {
					e.fail(errNotA("a list of strings", k.key, v))
				}
				e.string(k.num, str)
			}
		case kSchema:
			if v != nil {
				e.message(k.num, func(e *encoder) { encodeSchema(e, schemaMap(e, k.key, v)) })
			}
		case kSchemas:
			for _, x := range list(e, k.key, v) {
				e.message(k.num, func(e *encoder) { encodeSchema(e, schemaMap(e, k.key, x)) })
			}
		case kSchemaMap, kDependencies:
			m := schemaMap(e, k.key, v)
			for _, name := range sortedKeys(m) {
				x := m[name]
				e.message(k.num, func(e *encoder) {
					e.string(1, name)
					if k.kind == kDependencies {
						e.message(2, func(e *encoder) { encodeOrStringArray(e, k.key, x) })
					} else {
						e.message(2, func(e *encoder) { encodeSchema(e, schemaMap(e, k.key, x)) })
					}
				})
			}
		case kOrArray:
			if v != nil {
				e.message(k.num, func(e *encoder) { encodeOrArray(e, k.key, v) })
			}
		case kOrBool:
			if v != nil {
				e.message(k.num, func(e *encoder) { encodeOrBool(e, k.key, v) })
			}
		case kDocs:
			if v != nil {
				docs := schemaMap(e, k.key, v)
				e.message(k.num, func(e *encoder) {
					for i, key := range docsFields {
						str, ok := optional[string](docs[key])
						if !ok {
							e.fail(errNotA("a string", k.key+"."+key, docs[key]))
						}
						e.string(protowire.Number(i+1), str)
					}
				})
			}
		case kRules:
			for _, x := range list(e, k.key, v) {
				rule := schemaMap(e, k.key, x)
				e.message(k.num, func(e *encoder) { encodeRule(e, rule) })
			}
		}
	}
}

// docsFields are kube's ExternalDocumentation fields, numbered from 1.
var docsFields = []string{"description", "url"}

// ruleFields are kube's ValidationRule fields: the strings always
// written; reason and optionalOldSelf are pointers.
var ruleFields = []schemaKeyword{
	{1, "rule", kString}, {2, "message", kString}, {3, "messageExpression", kString},
	{4, "reason", kOptString}, {5, "fieldPath", kString}, {6, "optionalOldSelf", kOptBool},
}

func encodeRule(e *encoder, rule map[string]interface{}) {
	for _, k := range ruleFields {
		v := rule[k.key]
		if v == nil && (k.kind == kOptString || k.kind == kOptBool) {
			continue
		}
		switch k.kind {
		case kOptBool:
			b, ok := v.(bool)
			if !ok {
				e.fail(errNotA("a boolean", "x-kubernetes-validations."+k.key, v))
			}
			e.bool(k.num, b)
		default:
			str, ok := optional[string](v)
			if !ok {
				e.fail(errNotA("a string", "x-kubernetes-validations."+k.key, v))
			}
			e.string(k.num, str)
		}
	}
}

// encodeJSON writes a JSON message: the value's JSON bytes, as kube
// writes them after reading the value into Go (compact, object keys
// sorted). A null has no bytes.
func encodeJSON(e *encoder, v interface{}) {
	if v == nil {
		return
	}
	raw, err := json.Marshal(v)
	if err != nil {
		e.fail(err)
		return
	}
	e.bytes(1, raw)
}

// encodeOrArray writes items: a schema (field 1) or a list of schemas
// (field 2).
func encodeOrArray(e *encoder, key string, v interface{}) {
	if l, ok := v.([]interface{}); ok {
		for _, x := range l {
			e.message(2, func(e *encoder) { encodeSchema(e, schemaMap(e, key, x)) })
		}
		return
	}
	e.message(1, func(e *encoder) { encodeSchema(e, schemaMap(e, key, v)) })
}

// encodeOrBool writes additionalProperties or additionalItems: whether
// more are allowed (field 1, true with a schema) and the schema (2).
func encodeOrBool(e *encoder, key string, v interface{}) {
	if b, ok := v.(bool); ok {
		e.bool(1, b)
		return
	}
	e.bool(1, true)
	e.message(2, func(e *encoder) { encodeSchema(e, schemaMap(e, key, v)) })
}

// encodeOrStringArray writes a dependency: a schema (field 1) or the
// names of the properties required (2).
func encodeOrStringArray(e *encoder, key string, v interface{}) {
	switch x := v.(type) {
	case nil:
	case []interface{}:
		for _, p := range x {
			str, ok := p.(string)
			if !ok {
				e.fail(errNotA("a list of strings", key, v))
			}
			e.string(2, str)
		}
	default:
		e.message(1, func(e *encoder) { encodeSchema(e, schemaMap(e, key, v)) })
	}
}

// optional is v as a T, the zero T for null.
func optional[T any](v interface{}) (T, bool) {
	var zero T
	if v == nil {
		return zero, true
	}
	t, ok := v.(T)
	return t, ok
}

func list(e *encoder, key string, v interface{}) []interface{} {
	switch x := v.(type) {
	case nil:
		return nil
	case []interface{}:
		return x
	case []string:
		out := make([]interface{}, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	}
	e.fail(errNotA("a list", key, v))
	return nil
}

func schemaMap(e *encoder, key string, v interface{}) map[string]interface{} {
	switch x := v.(type) {
	case nil:
		return nil
	case map[string]interface{}:
		return x
	case JSONSchemaProps:
		return x
	}
	e.fail(errNotA("an object", key, v))
	return nil
}

func sortedKeys(m map[string]interface{}) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// integer is a JSON number that is whole, as an int64.
func integer(v interface{}) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		if n == math.Trunc(n) && n >= math.MinInt64 && n < math.MaxInt64 {
			return int64(n), true
		}
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

func number(v interface{}) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// numberValue is f as a decoded JSON number holds it: an int64 when kube's
// JSON form of it is an integer, a float64 otherwise.
func numberValue(f float64) (interface{}, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("openAPIV3Schema: unsupported number %v", f)
	}
	if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
		return int64(f), nil
	}
	return f, nil
}

// decodeSchema reads a JSONSchemaProps message into s.
func decodeSchema(data []byte, s map[string]interface{}) error {
	return walk(data, func(f field) error {
		k, ok := schemaFieldByNum[f.num]
		if !ok {
			return nil
		}
		v, err := decodeKeyword(f, k, s[k.key])
		if err != nil {
			return err
		}
		if v == nil {
			delete(s, k.key)
		} else {
			s[k.key] = v
		}
		return nil
	})
}

// decodeKeyword reads one field of a schema: the keyword's value, given
// what an earlier field of the same number left (repeated fields add to
// it), or nil when kube's JSON form leaves the keyword out.
func decodeKeyword(f field, k schemaKeyword, prev interface{}) (interface{}, error) {
	switch k.kind {
	case kString, kOptString:
		var str string
		if err := f.string(&str); err != nil {
			return nil, err
		}
		if str == "" && k.kind == kString {
			return nil, nil
		}
		return str, nil
	case kBool, kOptBool:
		var b bool
		if err := f.bool(&b); err != nil {
			return nil, err
		}
		if !b && k.kind == kBool {
			return nil, nil
		}
		return b, nil
	case kInt:
		if err := f.want(protowire.VarintType); err != nil {
			return nil, err
		}
		return int64(f.v), nil
	case kDouble:
		if err := f.want(protowire.Fixed64Type); err != nil {
			return nil, err
		}
		return numberValue(math.Float64frombits(f.v))
	case kJSON:
		v, err := decodeJSON(f)
		if err != nil || v == nil {
			return nil, err
		}
		return v, nil
	case kJSONList:
		v, err := decodeJSON(f)
		if err != nil {
			return nil, err
		}
		return append(asList(prev), v), nil
	case kStrings:
		var str string
		if err := f.string(&str); err != nil {
			return nil, err
		}
		return append(asList(prev), str), nil
	case kSchema:
		s := asSchema(prev)
		return s, f.message(func(b []byte) error { return decodeSchema(b, s) })
	case kSchemas:
		s := map[string]interface{}{}
		if err := f.message(func(b []byte) error { return decodeSchema(b, s) }); err != nil {
			return nil, err
		}
		return append(asList(prev), s), nil
	case kSchemaMap, kDependencies:
		m := asSchema(prev)
		return m, f.message(func(b []byte) error { return decodeMapEntry(b, k, m) })
	case kOrArray:
		return decodeOrArray(f, prev)
	case kOrBool:
		return decodeOrBool(f, prev)
	case kDocs:
		docs := asSchema(prev)
		err := f.message(func(b []byte) error {
			return walk(b, func(f field) error {
				if f.num != 1 && f.num != 2 {
					return nil
				}
				key := docsFields[f.num-1]
				var str string
				if err := f.string(&str); err != nil {
					return err
				}
				if str == "" {
					delete(docs, key)
				} else {
					docs[key] = str
				}
				return nil
			})
		})
		return docs, err
	case kRules:
		rule := map[string]interface{}{"rule": ""}
		if err := f.message(func(b []byte) error { return decodeRule(b, rule) }); err != nil {
			return nil, err
		}
		return append(asList(prev), rule), nil
	}
	return nil, fmt.Errorf("openAPIV3Schema: keyword %s has no protobuf form", k.key)
}

func asList(v interface{}) []interface{} {
	l, _ := v.([]interface{})
	return l
}

func asSchema(v interface{}) map[string]interface{} {
	if m, ok := v.(map[string]interface{}); ok {
		return m
	}
	return map[string]interface{}{}
}

// decodeJSON reads a JSON message: nil when it has no bytes.
func decodeJSON(f field) (interface{}, error) {
	var v interface{}
	err := f.message(func(b []byte) error {
		return walk(b, func(f field) error {
			if f.num != 1 {
				return nil
			}
			var raw []byte
			if err := f.bytes(&raw); err != nil {
				return err
			}
			v = nil
			if len(raw) == 0 || string(raw) == "null" {
				return nil
			}
			return sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &v)
		})
	})
	return v, err
}

// decodeMapEntry reads one entry of properties, patternProperties,
// definitions (schemas) or dependencies into m. An entry without a
// value has an empty one, as in kube's decoder.
func decodeMapEntry(data []byte, k schemaKeyword, m map[string]interface{}) error {
	var name string
	var value interface{}
	err := walk(data, func(f field) error {
		switch f.num {
		case 1:
			return f.string(&name)
		case 2:
			if k.kind == kDependencies {
				var err error
				value, err = decodeOrStringArray(f)
				return err
			}
			s := map[string]interface{}{}
			value = s
			return f.message(func(b []byte) error { return decodeSchema(b, s) })
		}
		return nil
	})
	if value == nil && k.kind != kDependencies {
		value = map[string]interface{}{}
	}
	m[name] = value
	return err
}

// decodeOrArray reads items: a list of schemas when it holds any, else
// its schema, else nothing (kube's JSON form is null).
func decodeOrArray(f field, prev interface{}) (interface{}, error) {
	var schema map[string]interface{}
	var schemas []interface{}
	if m, ok := prev.(map[string]interface{}); ok {
		schema = m
	} else {
		schemas = asList(prev)
	}
	err := f.message(func(b []byte) error {
		return walk(b, func(f field) error {
			switch f.num {
			case 1:
				if schema == nil {
					schema = map[string]interface{}{}
				}
				return f.message(func(b []byte) error { return decodeSchema(b, schema) })
			case 2:
				s := map[string]interface{}{}
				schemas = append(schemas, s)
				return f.message(func(b []byte) error { return decodeSchema(b, s) })
			}
			return nil
		})
	})
	switch {
	case len(schemas) > 0:
		return schemas, err
	case schema != nil:
		return schema, err
	}
	return nil, err
}

// decodeOrBool reads additionalProperties or additionalItems: the schema
// when there is one, else the boolean.
func decodeOrBool(f field, prev interface{}) (interface{}, error) {
	allows, _ := prev.(bool)
	schema, _ := prev.(map[string]interface{})
	if schema != nil {
		allows = true
	}
	err := f.message(func(b []byte) error {
		return walk(b, func(f field) error {
			switch f.num {
			case 1:
				return f.bool(&allows)
			case 2:
				if schema == nil {
					schema = map[string]interface{}{}
				}
				return f.message(func(b []byte) error { return decodeSchema(b, schema) })
			}
			return nil
		})
	})
	if schema != nil {
		return schema, err
	}
	return allows, err
}

// decodeOrStringArray reads a dependency: the property names when there
// are any, else the schema, else null (kube's JSON form of an empty one).
func decodeOrStringArray(f field) (interface{}, error) {
	var schema map[string]interface{}
	var names []interface{}
	err := f.message(func(b []byte) error {
		return walk(b, func(f field) error {
			switch f.num {
			case 1:
				if schema == nil {
					schema = map[string]interface{}{}
				}
				return f.message(func(b []byte) error { return decodeSchema(b, schema) })
			case 2:
				var str string
				if err := f.string(&str); err != nil {
					return err
				}
				names = append(names, str)
			}
			return nil
		})
	})
	switch {
	case len(names) > 0:
		return names, err
	case schema != nil:
		return schema, err
	}
	return nil, err
}

// decodeRule reads an x-kubernetes-validations rule: rule always, the
// other strings when not empty, reason and optionalOldSelf when set.
func decodeRule(data []byte, rule map[string]interface{}) error {
	return walk(data, func(f field) error {
		for _, k := range ruleFields {
			if k.num != f.num {
				continue
			}
			v, err := decodeKeyword(f, k, nil)
			switch {
			case err != nil:
				return err
			case k.key == "rule":
				rule[k.key], _ = optional[string](v)
			case v == nil:
				delete(rule, k.key)
			default:
				rule[k.key] = v
			}
		}
		return nil
	})
}

// errNotA is the error of a schema value of the wrong JSON type, which
// kube's typed schema could not have held.
func errNotA(what, key string, v interface{}) error {
	return fmt.Errorf("openAPIV3Schema: %s is %T, not %s", key, v, what)
}
