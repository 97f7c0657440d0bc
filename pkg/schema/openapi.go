package schema

import (
	"fmt"
	"regexp"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FromOpenAPIV3 parses v, a CustomResourceDefinition version's decoded
// openAPIV3Schema, into a Schema and checks it as kube checks a CRD's
// schema: structural (a type at every level, no forbidden keywords, the
// extensions used consistently), with errors in kube's words at paths
// below fldPath. The returned Schema is usable only when the list is
// empty.
func FromOpenAPIV3(v map[string]interface{}, fldPath *field.Path) (*Schema, field.ErrorList) {
	p := &openAPIParser{}
	s := p.schema(v, fldPath, levelRoot)
	return s, p.errs
}

// level says where a schema sits: kube words the missing-type error
// after it, and the root has rules of its own.
type level int

const (
	levelRoot level = iota
	levelProperty
	levelItems
	levelAdditional
	levelJunctor
)

type openAPIParser struct {
	errs field.ErrorList
}

// unsupported are the JSON-Schema keywords kube rejects in a CRD, each
// with its own message.
var unsupported = []string{"id", "additionalItems", "patternProperties", "definitions", "dependencies", "$ref", "$schema"}

func (p *openAPIParser) add(err *field.Error) { p.errs = append(p.errs, err) }

func (p *openAPIParser) schema(v map[string]interface{}, fldPath *field.Path, lvl level) *Schema {
	s := &Schema{}
	for _, k := range unsupported {
		if _, ok := v[k]; ok {
			p.add(field.Forbidden(fldPath.Child(k), k+" is not supported"))
		}
	}
	s.Type = p.str(v, "type", fldPath)
	s.Format = p.str(v, "format", fldPath)
	s.Description = p.str(v, "description", fldPath)
	s.Pattern = p.str(v, "pattern", fldPath)
	if s.Pattern != "" {
		if _, err := regexp.Compile(s.Pattern); err != nil {
			p.add(field.Invalid(fldPath.Child("pattern"), s.Pattern, fmt.Sprintf("must be a valid regular expression, but isn't: %v", err)))
		}
	}
	s.Maximum = p.num(v, "maximum", fldPath)
	s.Minimum = p.num(v, "minimum", fldPath)
	s.ExclusiveMaximum = p.boolean(v, "exclusiveMaximum", fldPath)
	s.ExclusiveMinimum = p.boolean(v, "exclusiveMinimum", fldPath)
	s.MaxLength = p.count(v, "maxLength", fldPath)
	s.MinLength = p.count(v, "minLength", fldPath)
	s.MaxItems = p.count(v, "maxItems", fldPath)
	s.MinItems = p.count(v, "minItems", fldPath)
	s.MaxProperties = p.count(v, "maxProperties", fldPath)
	s.MinProperties = p.count(v, "minProperties", fldPath)
	s.UniqueItems = p.boolean(v, "uniqueItems", fldPath)
	if s.UniqueItems {
		p.add(field.Forbidden(fldPath.Child("uniqueItems"), "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"))
	}
	s.Nullable = p.boolean(v, "nullable", fldPath)
	s.IntOrString = p.boolean(v, "x-kubernetes-int-or-string", fldPath)
	s.EmbeddedResource = p.boolean(v, "x-kubernetes-embedded-resource", fldPath)
	if pu, ok := v["x-kubernetes-preserve-unknown-fields"]; ok {
		if b, isBool := pu.(bool); !isBool {
			p.add(field.Invalid(fldPath.Child("x-kubernetes-preserve-unknown-fields"), pu, "must be a boolean"))
		} else if !b {
			p.add(field.Invalid(fldPath.Child("x-kubernetes-preserve-unknown-fields"), b, "must be true or undefined"))
		} else {
			s.PreserveUnknownFields = true
		}
	}
	s.ListType = p.str(v, "x-kubernetes-list-type", fldPath)
	s.MapType = p.str(v, "x-kubernetes-map-type", fldPath)
	if keys, ok := v["x-kubernetes-list-map-keys"]; ok {
		s.ListMapKeys = p.strings(keys, fldPath.Child("x-kubernetes-list-map-keys"))
	}
	if req, ok := v["required"]; ok {
		s.Required = p.strings(req, fldPath.Child("required"))
	}
	if e, ok := v["enum"]; ok {
		if l, isList := e.([]interface{}); isList {
			s.Enum = l
		} else {
			p.add(field.Invalid(fldPath.Child("enum"), e, "must be an array"))
		}
	}
	// A null default is no default, as kube reads it.
	s.Default = v["default"]
	if props, ok := v["properties"]; ok {
		m, isMap := props.(map[string]interface{})
		if !isMap {
			p.add(field.Invalid(fldPath.Child("properties"), props, "must be an object"))
		}
		s.Properties = make(map[string]*Schema, len(m))
		for _, k := range sortedKeys(m) {
			s.Properties[k] = p.sub(m[k], fldPath.Child("properties").Key(k), levelProperty)
		}
	}
	if items, ok := v["items"]; ok {
		if _, isList := items.([]interface{}); isList {
			p.add(field.Forbidden(fldPath.Child("items"), "items must be a schema object and not an array"))
		} else {
			s.Items = p.sub(items, fldPath.Child("items"), levelItems)
		}
	}
	if ap, ok := v["additionalProperties"]; ok {
		switch ap := ap.(type) {
		case bool:
			// additionalProperties: false is the default; true is
			// meaningless without a schema. Kube only rejects it next
			// to properties.
			if ap && s.Properties != nil {
				p.add(field.Forbidden(fldPath.Child("additionalProperties"), "additionalProperties and properties are mutual exclusive"))
			}
		default:
			if s.Properties != nil {
				p.add(field.Forbidden(fldPath.Child("additionalProperties"), "additionalProperties and properties are mutual exclusive"))
			}
			s.AdditionalProperties = p.sub(ap, fldPath.Child("additionalProperties"), levelAdditional)
		}
	}
	if xv, ok := v["x-kubernetes-validations"]; ok {
		s.XValidations = p.rules(xv, fldPath.Child("x-kubernetes-validations"))
	}
	for _, j := range []string{"allOf", "anyOf", "oneOf"} {
		if l, ok := v[j].([]interface{}); ok {
			for i, x := range l {
				p.junctor(x, fldPath.Child(j).Index(i))
			}
		}
	}
	if n, ok := v["not"]; ok {
		p.junctor(n, fldPath.Child("not"))
	}
	if lvl != levelJunctor {
		p.structural(s, fldPath, lvl)
	}
	return s
}

func (p *openAPIParser) sub(x interface{}, fldPath *field.Path, lvl level) *Schema {
	m, ok := x.(map[string]interface{})
	if !ok {
		p.add(field.Invalid(fldPath, x, "must be a schema object"))
		return &Schema{}
	}
	return p.schema(m, fldPath, lvl)
}

// junctor checks an allOf/anyOf/oneOf/not branch: it may only add value
// validations, never shape, which the enclosing schema alone gives.
func (p *openAPIParser) junctor(x interface{}, fldPath *field.Path) {
	m, ok := x.(map[string]interface{})
	if !ok {
		p.add(field.Invalid(fldPath, x, "must be a schema object"))
		return
	}
	s := p.schema(m, fldPath, levelJunctor)
	if s.Type != "" {
		p.add(field.Forbidden(fldPath.Child("type"), "must be empty to be structural"))
	}
	if s.AdditionalProperties != nil {
		p.add(field.Forbidden(fldPath.Child("additionalProperties"), "must be undefined to be structural"))
	}
	if _, ok := m["default"]; ok {
		p.add(field.Forbidden(fldPath.Child("default"), "must be undefined to be structural"))
	}
	if _, ok := m["title"]; ok {
		p.add(field.Forbidden(fldPath.Child("title"), "must be empty to be structural"))
	}
	if s.Description != "" {
		p.add(field.Forbidden(fldPath.Child("description"), "must be empty to be structural"))
	}
	if s.Nullable {
		p.add(field.Forbidden(fldPath.Child("nullable"), "must be false to be structural"))
	}
	if s.PreserveUnknownFields {
		p.add(field.Forbidden(fldPath.Child("x-kubernetes-preserve-unknown-fields"), "must be false to be structural"))
	}
	if s.EmbeddedResource {
		p.add(field.Forbidden(fldPath.Child("x-kubernetes-embedded-resource"), "must be false to be structural"))
	}
	if s.IntOrString {
		p.add(field.Forbidden(fldPath.Child("x-kubernetes-int-or-string"), "must be false to be structural"))
	}
	if len(s.ListMapKeys) > 0 {
		p.add(field.Forbidden(fldPath.Child("x-kubernetes-list-map-keys"), "must be empty to be structural"))
	}
	if s.ListType != "" {
		p.add(field.Forbidden(fldPath.Child("x-kubernetes-list-type"), "must be undefined to be structural"))
	}
	if s.MapType != "" {
		p.add(field.Forbidden(fldPath.Child("x-kubernetes-map-type"), "must be undefined to be structural"))
	}
	if len(s.XValidations) > 0 {
		p.add(field.Forbidden(fldPath.Child("x-kubernetes-validations"), "must be empty to be structural"))
	}
}

// structural checks the invariants kube demands of a structural schema
// and of its extensions at one node.
func (p *openAPIParser) structural(s *Schema, fldPath *field.Path, lvl level) {
	switch s.Type {
	case "", "object", "array", "string", "integer", "number", "boolean":
	case "null":
		p.add(field.Forbidden(fldPath.Child("type"), "type cannot be set to null, use nullable as an alternative"))
	default:
		p.add(field.NotSupported(fldPath.Child("type"), s.Type, []string{"array", "boolean", "integer", "number", "object", "string"}))
	}
	if s.Type == "array" && s.Items == nil {
		p.add(field.Required(fldPath.Child("items"), "must be specified"))
	}
	if s.IntOrString {
		if s.PreserveUnknownFields {
			p.add(field.Invalid(fldPath.Child("x-kubernetes-preserve-unknown-fields"), true, "must be false if x-kubernetes-int-or-string is true"))
		}
		if s.EmbeddedResource {
			p.add(field.Invalid(fldPath.Child("x-kubernetes-embedded-resource"), true, "must be false if x-kubernetes-int-or-string is true"))
		}
	}
	if s.EmbeddedResource {
		switch s.Type {
		case "object":
		case "":
			p.add(field.Required(fldPath.Child("type"), "must be object if x-kubernetes-embedded-resource is true"))
		default:
			p.add(field.Invalid(fldPath.Child("type"), s.Type, "must be object if x-kubernetes-embedded-resource is true"))
		}
		if s.AdditionalProperties != nil {
			p.add(field.Forbidden(fldPath.Child("additionalProperties"), "must not be used if x-kubernetes-embedded-resource is set"))
		}
		if len(s.Properties) == 0 && !s.PreserveUnknownFields {
			p.add(field.Required(fldPath.Child("properties"), "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"))
		}
	} else if s.Type == "" && !s.IntOrString && !s.PreserveUnknownFields {
		switch lvl {
		case levelRoot:
			p.add(field.Required(fldPath.Child("type"), "must not be empty at the root"))
		case levelItems:
			p.add(field.Required(fldPath.Child("type"), "must not be empty for specified array items"))
		default:
			p.add(field.Required(fldPath.Child("type"), "must not be empty for specified object fields"))
		}
	}
	if lvl == levelRoot {
		if s.Type != "" && s.Type != "object" {
			p.add(field.Invalid(fldPath.Child("type"), s.Type, "must be object at the root"))
		}
		if s.AdditionalProperties != nil {
			p.add(field.Forbidden(fldPath.Child("additionalProperties"), "must not be used at the root"))
		}
		if s.Nullable {
			p.add(field.Forbidden(fldPath.Child("nullable"), "nullable cannot be true at the root"))
		}
		if md, ok := s.Properties["metadata"]; ok {
			p.rootMetadata(md, fldPath.Child("properties").Key("metadata"))
		}
	} else if _, ok := s.Properties["metadata"]; ok && s.EmbeddedResource {
		p.rootMetadata(s.Properties["metadata"], fldPath.Child("properties").Key("metadata"))
	}
	if s.EmbeddedResource || lvl == levelRoot {
		for _, k := range []string{"kind", "apiVersion"} {
			if ps, ok := s.Properties[k]; ok && ps.Type != "" && ps.Type != "string" {
				p.add(field.Invalid(fldPath.Child("properties").Key(k).Child("type"), ps.Type, "must be string"))
			}
		}
	}
	p.mergeMarkers(s, fldPath)
}

// rootMetadata holds a resource's metadata schema to what kube allows:
// an object whose only constraints are on name and generateName.
func (p *openAPIParser) rootMetadata(md *Schema, fldPath *field.Path) {
	if md.Type != "" && md.Type != "object" {
		p.add(field.Invalid(fldPath.Child("type"), md.Type, "must be object"))
	}
	only := *md
	only.Type, only.Properties = "", nil
	for k := range md.Properties {
		if k != "name" && k != "generateName" {
			p.add(field.Forbidden(fldPath, "must not specify anything other than name and generateName, but metadata is implicitly specified"))
			return
		}
	}
	if !isZeroSchema(&only) {
		p.add(field.Forbidden(fldPath, "must not specify anything other than name and generateName, but metadata is implicitly specified"))
	}
}

func isZeroSchema(s *Schema) bool {
	return s.Format == "" && s.Description == "" && s.Items == nil && s.AdditionalProperties == nil &&
		len(s.Required) == 0 && s.Enum == nil && s.Default == nil && !s.Nullable && s.Pattern == "" &&
		s.Maximum == nil && s.Minimum == nil && s.MaxLength == nil && s.MinLength == nil &&
		s.MaxItems == nil && s.MinItems == nil && s.MaxProperties == nil && s.MinProperties == nil &&
		!s.PreserveUnknownFields && !s.EmbeddedResource && !s.IntOrString && s.ListType == "" &&
		s.MapType == "" && len(s.ListMapKeys) == 0 && len(s.XValidations) == 0
}

// mergeMarkers checks x-kubernetes-list-type, -list-map-keys and
// -map-type as kube does.
func (p *openAPIParser) mergeMarkers(s *Schema, fldPath *field.Path) {
	if s.ListType != "" && s.Type != "array" {
		if s.Type == "" {
			p.add(field.Required(fldPath.Child("type"), "must be array if x-kubernetes-list-type is specified"))
		} else {
			p.add(field.Invalid(fldPath.Child("type"), s.Type, "must be array if x-kubernetes-list-type is specified"))
		}
	}
	if s.MapType != "" && s.Type != "object" {
		if s.Type == "" {
			p.add(field.Required(fldPath.Child("type"), "must be object if x-kubernetes-map-type is specified"))
		} else {
			p.add(field.Invalid(fldPath.Child("type"), s.Type, "must be object if x-kubernetes-map-type is specified"))
		}
	}
	if s.MapType != "" && s.MapType != "atomic" && s.MapType != "granular" {
		p.add(field.NotSupported(fldPath.Child("x-kubernetes-map-type"), s.MapType, []string{"atomic", "granular"}))
	}
	if s.ListType != "" && s.ListType != "atomic" && s.ListType != "set" && s.ListType != "map" {
		p.add(field.NotSupported(fldPath.Child("x-kubernetes-list-type"), s.ListType, []string{"atomic", "set", "map"}))
	}
	if len(s.ListMapKeys) > 0 {
		if s.ListType == "" {
			p.add(field.Required(fldPath.Child("x-kubernetes-list-type"), "must be map if x-kubernetes-list-map-keys is non-empty"))
		} else if s.ListType != "map" {
			p.add(field.Invalid(fldPath.Child("x-kubernetes-list-type"), s.ListType, "must be map if x-kubernetes-list-map-keys is non-empty"))
		}
	}
	if (s.ListType == "set" || s.ListType == "map") && s.Items != nil && s.Items.Nullable {
		p.add(field.Forbidden(fldPath.Child("items").Child("nullable"), "cannot be nullable when x-kubernetes-list-type is "+s.ListType))
	}
	if s.ListType != "map" {
		return
	}
	if len(s.ListMapKeys) == 0 {
		p.add(field.Required(fldPath.Child("x-kubernetes-list-map-keys"), "must not be empty if x-kubernetes-list-type is map"))
	}
	if s.Items == nil {
		p.add(field.Required(fldPath.Child("items"), "must have a schema if x-kubernetes-list-type is map"))
		return
	}
	if s.Items.Type != "object" {
		p.add(field.Invalid(fldPath.Child("items").Child("type"), s.Items.Type, "must be object if parent array's x-kubernetes-list-type is map"))
		return
	}
	seen := map[string]bool{}
	for _, k := range s.ListMapKeys {
		if seen[k] {
			p.add(field.Invalid(fldPath.Child("x-kubernetes-list-map-keys"), s.ListMapKeys, "must not contain duplicate entries"))
			break
		}
		seen[k] = true
		ks, ok := s.Items.Properties[k]
		if !ok {
			p.add(field.Invalid(fldPath.Child("x-kubernetes-list-map-keys"), s.ListMapKeys, "entries must all be names of item properties"))
			break
		}
		if ks.Default == nil && !contains(s.Items.Required, k) {
			p.add(field.Required(fldPath.Child("items").Child("properties").Key(k).Child("default"), "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"))
		}
		if ks.Nullable {
			p.add(field.Forbidden(fldPath.Child("items").Child("properties").Key(k).Child("nullable"), "this property is in x-kubernetes-list-map-keys, so it cannot be nullable"))
		}
	}
}

func (p *openAPIParser) rules(x interface{}, fldPath *field.Path) []ValidationRule {
	l, ok := x.([]interface{})
	if !ok {
		p.add(field.Invalid(fldPath, x, "must be an array"))
		return nil
	}
	out := make([]ValidationRule, 0, len(l))
	for i, r := range l {
		m, ok := r.(map[string]interface{})
		if !ok {
			p.add(field.Invalid(fldPath.Index(i), r, "must be an object"))
			continue
		}
		rp := fldPath.Index(i)
		out = append(out, ValidationRule{
			Rule:              p.str(m, "rule", rp),
			Message:           p.str(m, "message", rp),
			MessageExpression: p.str(m, "messageExpression", rp),
			Reason:            p.str(m, "reason", rp),
			FieldPath:         p.str(m, "fieldPath", rp),
			OptionalOldSelf:   p.boolean(m, "optionalOldSelf", rp),
		})
	}
	return out
}

func (p *openAPIParser) str(v map[string]interface{}, k string, fldPath *field.Path) string {
	x, ok := v[k]
	if !ok {
		return ""
	}
	s, ok := x.(string)
	if !ok {
		p.add(field.Invalid(fldPath.Child(k), x, "must be a string"))
	}
	return s
}

func (p *openAPIParser) boolean(v map[string]interface{}, k string, fldPath *field.Path) bool {
	x, ok := v[k]
	if !ok {
		return false
	}
	b, ok := x.(bool)
	if !ok {
		p.add(field.Invalid(fldPath.Child(k), x, "must be a boolean"))
	}
	return b
}

func (p *openAPIParser) num(v map[string]interface{}, k string, fldPath *field.Path) *float64 {
	x, ok := v[k]
	if !ok {
		return nil
	}
	f, ok := toFloat(x)
	if !ok {
		p.add(field.Invalid(fldPath.Child(k), x, "must be a number"))
		return nil
	}
	return &f
}

func (p *openAPIParser) count(v map[string]interface{}, k string, fldPath *field.Path) *int64 {
	x, ok := v[k]
	if !ok {
		return nil
	}
	f, ok := toFloat(x)
	if !ok || f != float64(int64(f)) || f < 0 {
		p.add(field.Invalid(fldPath.Child(k), x, "must be a non-negative integer"))
		return nil
	}
	n := int64(f)
	return &n
}

func (p *openAPIParser) strings(x interface{}, fldPath *field.Path) []string {
	l, ok := x.([]interface{})
	if !ok {
		p.add(field.Invalid(fldPath, x, "must be an array of strings"))
		return nil
	}
	out := make([]string, 0, len(l))
	for i, e := range l {
		s, ok := e.(string)
		if !ok {
			p.add(field.Invalid(fldPath.Index(i), e, "must be a string"))
			continue
		}
		out = append(out, s)
	}
	return out
}

// toFloat reads a decoded JSON number: float64 from encoding/json,
// int64 or float64 from kube's decoders.
func toFloat(x interface{}) (float64, bool) {
	switch n := x.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	}
	return 0, false
}

func contains(l []string, s string) bool {
	for _, e := range l {
		if e == s {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]interface{}) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
