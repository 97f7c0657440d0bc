// Package openapi owns the OpenAPI documents clients read to validate,
// explain and apply: /openapi/v2 (JSON, and the protobuf form kubectl asks
// for) and /openapi/v3 (an index and one document per group-version). They
// are computed from the Registry on request: each served resource's
// structural schema (pkg/schema) rendered as kube renders its own, the
// group-version-kind of each served kind, and the operations of every
// served resource with their query parameters.
package openapi

import (
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"

	cronschema "github.com/cronplane/cronplane/pkg/schema"
)

// Schema is an OpenAPI schema object.
type Schema = map[string]interface{}

// schemas collects the rendered definitions of one document.
type schemas struct {
	defs map[string]Schema
	// refPrefix is "#/definitions/" (v2) or "#/components/schemas/" (v3).
	refPrefix string
	v3        bool
}

func newSchemas(refPrefix string, v3 bool) *schemas {
	return &schemas{defs: map[string]Schema{}, refPrefix: refPrefix, v3: v3}
}

// add renders the definitions of st and returns the name of its root's
// definition; an inline root is added as name. The root definition is
// rendered as kube renders a custom resource's schema (see renderRoot).
func (s *schemas) add(st *cronschema.Structural, name string) string {
	root := st.RootName()
	for n, d := range st.Definitions {
		if _, ok := s.defs[n]; ok {
			continue
		}
		if n == root {
			s.defs[n] = s.renderRoot(d)
		} else {
			s.defs[n] = s.render(d, false)
		}
	}
	if root != "" {
		return root
	}
	s.defs[name] = s.renderRoot(st.Root)
	return name
}

// addGoType renders the schema of a Go API type.
func (s *schemas) addGoType(obj runtime.Object) string {
	return s.add(cronschema.FromGoType(obj), "")
}

// renderRoot renders a resource's root definition and what it holds
// inline as kube publishes a custom resource's schema. A Go type's root
// holds only scalars, maps, lists and references inline, none of which
// carries what that changes (nullable, x-kubernetes-preserve-unknown-
// fields, x-kubernetes-embedded-resource, x-kubernetes-int-or-string), so
// it renders as before. In v2 kube publishes a root that keeps unknown
// fields as a bare object.
func (s *schemas) renderRoot(sch *cronschema.Schema) Schema {
	if !s.v3 && sch.Ref == "" && sch.PreserveUnknownFields {
		return Schema{"type": "object"}
	}
	return s.render(sch, true)
}

// The descriptions kube publishes for an embedded resource's type and
// object metadata.
const (
	embeddedAPIVersionDescription = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
	embeddedKindDescription       = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
	embeddedMetadataDescription   = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)

// render turns a schema into the document's form. The versions differ as
// kube's do: v3 wraps a described reference in allOf (readers ignore a
// $ref's siblings), carries defaults, and says that a quantity or an
// int-or-string takes either form. A custom resource's schema (custom)
// follows kube's rules for those: v3 spells x-kubernetes-int-or-string
// out as anyOf and gives an embedded resource its apiVersion, kind and
// metadata; v2, which cannot say "null" or "anything", drops the type,
// properties and items of a nullable schema or one that keeps unknown
// fields, and requires no nullable property.
func (s *schemas) render(sch *cronschema.Schema, custom bool) Schema {
	if sch.Ref != "" {
		ref := Schema{"$ref": s.refPrefix + sch.Ref}
		if sch.Description == "" {
			return ref
		}
		if s.v3 {
			return Schema{"allOf": []interface{}{ref}, "description": sch.Description}
		}
		ref["description"] = sch.Description
		return ref
	}
	// v2 has no way to say that a custom value may be null or anything.
	shapeless := custom && !s.v3 && (sch.Nullable || sch.PreserveUnknownFields)
	out := Schema{}
	set := func(k string, v interface{}, ok bool) {
		if ok {
			out[k] = v
		}
	}
	set("description", sch.Description, sch.Description != "")
	set("type", sch.Type, sch.Type != "" && !shapeless)
	set("format", sch.Format, sch.Format != "")
	switch {
	case s.v3 && sch.NumberOrString:
		delete(out, "type")
		out["oneOf"] = []interface{}{Schema{"type": "string"}, Schema{"type": "number"}}
	case s.v3 && sch.IntOrString && custom:
		delete(out, "type")
	case s.v3 && sch.IntOrString:
		delete(out, "type")
		out["oneOf"] = []interface{}{Schema{"type": "integer"}, Schema{"type": "string"}}
	}
	if sch.Properties != nil && !shapeless {
		props := Schema{}
		for n, p := range sch.Properties {
			props[n] = s.render(p, custom)
		}
		out["properties"] = props
	}
	required := sch.Required
	if custom && !s.v3 && !shapeless {
		required = nil
		for _, r := range sch.Required {
			if p := sch.Properties[r]; p == nil || !p.Nullable {
				required = append(required, r)
			}
		}
	}
	if sch.Items != nil && !shapeless {
		out["items"] = s.render(sch.Items, custom)
	}
	if sch.AdditionalProperties != nil {
		out["additionalProperties"] = s.render(sch.AdditionalProperties, custom)
	}
	set("enum", sch.Enum, len(sch.Enum) > 0)
	set("default", sch.Default, s.v3 && sch.Default != nil)
	set("nullable", true, sch.Nullable && !(custom && !s.v3))
	// The value validations: only a schema defined at run time has them.
	set("pattern", sch.Pattern, sch.Pattern != "")
	set("maximum", deref(sch.Maximum), sch.Maximum != nil)
	set("exclusiveMaximum", true, sch.ExclusiveMaximum)
	set("minimum", deref(sch.Minimum), sch.Minimum != nil)
	set("exclusiveMinimum", true, sch.ExclusiveMinimum)
	set("maxLength", deref(sch.MaxLength), sch.MaxLength != nil)
	set("minLength", deref(sch.MinLength), sch.MinLength != nil)
	set("maxItems", deref(sch.MaxItems), sch.MaxItems != nil)
	set("minItems", deref(sch.MinItems), sch.MinItems != nil)
	set("uniqueItems", true, sch.UniqueItems)
	set("maxProperties", deref(sch.MaxProperties), sch.MaxProperties != nil)
	set("minProperties", deref(sch.MinProperties), sch.MinProperties != nil)
	set("multipleOf", deref(sch.MultipleOf), sch.MultipleOf != nil)
	if s.v3 {
		// v2 has no junctors.
		s.junctors(out, sch, custom)
	}
	set("x-kubernetes-validations", validations(sch.XValidations), len(sch.XValidations) > 0)
	set("x-kubernetes-preserve-unknown-fields", true, sch.PreserveUnknownFields)
	set("x-kubernetes-embedded-resource", true, sch.EmbeddedResource)
	// A built-in int-or-string says so by its format; anything else by
	// the extension.
	set("x-kubernetes-int-or-string", true, sch.IntOrString && (custom || sch.Format != "int-or-string"))
	set("x-kubernetes-list-type", sch.ListType, sch.ListType != "")
	set("x-kubernetes-list-map-keys", sch.ListMapKeys, len(sch.ListMapKeys) > 0)
	set("x-kubernetes-map-type", sch.MapType, sch.MapType != "")
	set("x-kubernetes-patch-strategy", sch.PatchStrategy, sch.PatchStrategy != "")
	set("x-kubernetes-patch-merge-key", sch.PatchMergeKey, sch.PatchMergeKey != "")
	// An embedded resource has its type and object metadata, unless v2
	// says it keeps unknown fields (kubectl would then refuse them).
	if custom && sch.EmbeddedResource && !(!s.v3 && sch.PreserveUnknownFields) {
		props, _ := out["properties"].(Schema)
		if props == nil {
			props = Schema{}
			out["properties"] = props
		}
		props["apiVersion"] = Schema{"type": "string", "description": embeddedAPIVersionDescription}
		props["kind"] = Schema{"type": "string", "description": embeddedKindDescription}
		props["metadata"] = s.render(&cronschema.Schema{Ref: cronschema.ObjectMetaDefinition, Description: embeddedMetadataDescription}, false)
		required = append([]string(nil), required...)
		for _, r := range []string{"kind", "apiVersion"} {
			if !slices.Contains(required, r) {
				required = append(required, r)
			}
		}
	}
	set("required", required, len(required) > 0)
	return out
}

// junctors renders allOf, anyOf, oneOf and not. A custom int-or-string
// says which types it takes as kube spells it out: anyOf integer or
// string, unless its anyOf or its first allOf already says so; with an
// anyOf of its own, the types go first into allOf.
func (s *schemas) junctors(out Schema, sch *cronschema.Schema, custom bool) {
	list := func(l []*cronschema.Schema) []interface{} {
		r := make([]interface{}, 0, len(l))
		for _, x := range l {
			r = append(r, s.render(x, custom))
		}
		return r
	}
	allOf, anyOf := list(sch.AllOf), list(sch.AnyOf)
	if custom && sch.IntOrString && !isIntOrStringPattern(sch.AnyOf) &&
		!(len(sch.AllOf) > 0 && isIntOrStringAllOf(sch.AllOf[0])) {
		types := []interface{}{Schema{"type": "integer"}, Schema{"type": "string"}}
		if len(anyOf) == 0 {
			anyOf = types
		} else {
			allOf = append([]interface{}{Schema{"anyOf": types}}, allOf...)
		}
	}
	if len(allOf) > 0 {
		out["allOf"] = allOf
	}
	if len(anyOf) > 0 {
		out["anyOf"] = anyOf
	}
	if len(sch.OneOf) > 0 {
		out["oneOf"] = list(sch.OneOf)
	}
	if sch.Not != nil {
		out["not"] = s.render(sch.Not, custom)
	}
}

// isIntOrStringPattern reports whether l is anyOf integer or string.
func isIntOrStringPattern(l []*cronschema.Schema) bool {
	return len(l) == 2 && l[0] != nil && l[1] != nil &&
		reflect.DeepEqual(*l[0], cronschema.Schema{Type: "integer"}) && reflect.DeepEqual(*l[1], cronschema.Schema{Type: "string"})
}

// isIntOrStringAllOf reports whether x is nothing but anyOf integer or
// string.
func isIntOrStringAllOf(x *cronschema.Schema) bool {
	return x != nil && isIntOrStringPattern(x.AnyOf) && reflect.DeepEqual(*x, cronschema.Schema{AnyOf: x.AnyOf})
}

func deref[T any](p *T) interface{} {
	if p == nil {
		return nil
	}
	return *p
}

// validations renders x-kubernetes-validations as kube publishes them:
// the fields that are set.
func validations(rules []cronschema.ValidationRule) []interface{} {
	out := make([]interface{}, 0, len(rules))
	for _, r := range rules {
		m := Schema{"rule": r.Rule}
		set := func(k, v string) {
			if v != "" {
				m[k] = v
			}
		}
		set("message", r.Message)
		set("messageExpression", r.MessageExpression)
		set("reason", r.Reason)
		set("fieldPath", r.FieldPath)
		if r.OptionalOldSelf {
			m["optionalOldSelf"] = true
		}
		out = append(out, m)
	}
	return out
}
