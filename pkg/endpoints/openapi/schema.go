// Package openapi owns the OpenAPI documents clients read to validate,
// explain and apply: /openapi/v2 (JSON, and the protobuf form kubectl asks
// for) and /openapi/v3 (an index and one document per group-version). They
// are computed from the Registry on request: each served resource's
// structural schema (pkg/schema) rendered as kube renders its own, the
// group-version-kind of each served kind, and the operations of every
// served resource with their query parameters.
package openapi

import (
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
// definition; an inline root is added as name.
func (s *schemas) add(st *cronschema.Structural, name string) string {
	for n, d := range st.Definitions {
		if _, ok := s.defs[n]; !ok {
			s.defs[n] = s.render(d)
		}
	}
	if root := st.RootName(); root != "" {
		return root
	}
	s.defs[name] = s.render(st.Root)
	return name
}

// addGoType renders the schema of a Go API type.
func (s *schemas) addGoType(obj runtime.Object) string {
	return s.add(cronschema.FromGoType(obj), "")
}

// render turns a schema into the document's form. The versions differ as
// kube's do: v3 wraps a described reference in allOf (readers ignore a
// $ref's siblings), carries defaults, and says that a quantity or an
// int-or-string takes either form.
func (s *schemas) render(sch *cronschema.Schema) Schema {
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
	out := Schema{}
	set := func(k string, v interface{}, ok bool) {
		if ok {
			out[k] = v
		}
	}
	set("description", sch.Description, sch.Description != "")
	set("type", sch.Type, sch.Type != "")
	set("format", sch.Format, sch.Format != "")
	switch {
	case s.v3 && sch.NumberOrString:
		delete(out, "type")
		out["oneOf"] = []interface{}{Schema{"type": "string"}, Schema{"type": "number"}}
	case s.v3 && sch.IntOrString:
		delete(out, "type")
		out["oneOf"] = []interface{}{Schema{"type": "integer"}, Schema{"type": "string"}}
	}
	if sch.Properties != nil {
		props := Schema{}
		for n, p := range sch.Properties {
			props[n] = s.render(p)
		}
		out["properties"] = props
	}
	set("required", sch.Required, len(sch.Required) > 0)
	if sch.Items != nil {
		out["items"] = s.render(sch.Items)
	}
	if sch.AdditionalProperties != nil {
		out["additionalProperties"] = s.render(sch.AdditionalProperties)
	}
	set("enum", sch.Enum, len(sch.Enum) > 0)
	set("default", sch.Default, s.v3 && sch.Default != nil)
	set("nullable", true, sch.Nullable)
	set("x-kubernetes-preserve-unknown-fields", true, sch.PreserveUnknownFields)
	set("x-kubernetes-embedded-resource", true, sch.EmbeddedResource)
	// A built-in int-or-string says so by its format; anything else by
	// the extension.
	set("x-kubernetes-int-or-string", true, sch.IntOrString && sch.Format != "int-or-string")
	set("x-kubernetes-list-type", sch.ListType, sch.ListType != "")
	set("x-kubernetes-list-map-keys", sch.ListMapKeys, len(sch.ListMapKeys) > 0)
	set("x-kubernetes-map-type", sch.MapType, sch.MapType != "")
	set("x-kubernetes-patch-strategy", sch.PatchStrategy, sch.PatchStrategy != "")
	set("x-kubernetes-patch-merge-key", sch.PatchMergeKey, sch.PatchMergeKey != "")
	return out
}
