// Package openapi owns the OpenAPI documents clients read to validate,
// explain and apply: /openapi/v2 (JSON, and the protobuf form kubectl asks
// for) and /openapi/v3 (an index and one document per group-version). They
// are computed from the Registry on request: schemas derived from the Go
// types, with the field descriptions k8s.io/api carries (SwaggerDoc), the
// merge extensions, the group-version-kind of each served kind, and the
// operations of every served resource with their query parameters.
package openapi

import (
	"encoding/json"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	markers "github.com/cronplane/cronplane/pkg/schema"
)

// Schema is an OpenAPI schema object.
type Schema = map[string]interface{}

// schemas collects the named schemas of Go types.
type schemas struct {
	defs map[string]Schema
	// refPrefix is "#/definitions/" (v2) or "#/components/schemas/" (v3).
	refPrefix string
	v3        bool
}

func newSchemas(refPrefix string, v3 bool) *schemas {
	return &schemas{defs: map[string]Schema{}, refPrefix: refPrefix, v3: v3}
}

var (
	timeType     = reflect.TypeOf(metav1.Time{})
	microType    = reflect.TypeOf(metav1.MicroTime{})
	durationType = reflect.TypeOf(metav1.Duration{})
	quantityType = reflect.TypeOf(resource.Quantity{})
	intStrType   = reflect.TypeOf(intstr.IntOrString{})
	rawExtType   = reflect.TypeOf(runtime.RawExtension{})
	fieldsV1Type = reflect.TypeOf(metav1.FieldsV1{})
)

// TypeName is kube's OpenAPI name of a Go type: its package path with the
// domain reversed, then the type name (io.k8s.api.batch.v1.CronJob).
func TypeName(t reflect.Type) string {
	parts := strings.Split(t.PkgPath(), "/")
	if len(parts) > 0 && strings.Contains(parts[0], ".") {
		domain := strings.Split(parts[0], ".")
		for i, j := 0, len(domain)-1; i < j; i, j = i+1, j-1 {
			domain[i], domain[j] = domain[j], domain[i]
		}
		parts[0] = strings.Join(domain, ".")
	}
	return strings.Join(parts, ".") + "." + t.Name()
}

// ref returns the schema of a field of type t: inline for scalars, a
// reference for structs.
func (s *schemas) ref(t reflect.Type) Schema {
	for t.Kind() == reflect.Ptr {
		t = t.Elem()
	}
	switch t {
	case durationType:
		return Schema{"type": "string"}
	case timeType, microType, quantityType, intStrType, rawExtType, fieldsV1Type:
		return Schema{"$ref": s.refPrefix + s.define(t)}
	}
	switch t.Kind() {
	case reflect.Bool:
		return Schema{"type": "boolean"}
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16:
		return Schema{"type": "integer", "format": "int32"}
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return Schema{"type": "integer", "format": "int64"}
	case reflect.Float32, reflect.Float64:
		return Schema{"type": "number", "format": "double"}
	case reflect.String:
		return Schema{"type": "string"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return Schema{"type": "string", "format": "byte"}
		}
		return Schema{"type": "array", "items": s.ref(t.Elem())}
	case reflect.Map:
		return Schema{"type": "object", "additionalProperties": s.ref(t.Elem())}
	case reflect.Struct:
		return Schema{"$ref": s.refPrefix + s.define(t)}
	}
	return Schema{"type": "object"}
}

// define adds the named schema of struct type t and returns its name.
func (s *schemas) define(t reflect.Type) string {
	name := TypeName(t)
	if _, ok := s.defs[name]; ok {
		return name
	}
	// The scalar types with custom JSON have kube's shapes, which differ
	// between the document versions: v3 says what a client may send.
	switch t {
	case timeType, microType:
		s.defs[name] = Schema{"type": "string", "format": "date-time", "description": "A timestamp in RFC 3339 form."}
		return name
	case quantityType:
		q := Schema{"type": "string", "description": "A fixed-point number: an amount of a resource, such as 100m or 2Gi."}
		if s.v3 {
			delete(q, "type")
			q["oneOf"] = []interface{}{Schema{"type": "string"}, Schema{"type": "number"}}
		}
		s.defs[name] = q
		return name
	case intStrType:
		is := Schema{"type": "string", "format": "int-or-string", "description": "An integer or a string."}
		if s.v3 {
			delete(is, "type")
			is["oneOf"] = []interface{}{Schema{"type": "integer"}, Schema{"type": "string"}}
		}
		s.defs[name] = is
		return name
	case rawExtType, fieldsV1Type:
		s.defs[name] = Schema{"type": "object"}
		return name
	}
	def := Schema{"type": "object"}
	if markers.TypeMarkersOf(t).StructType == "atomic" {
		def["x-kubernetes-map-type"] = "atomic"
	}
	s.defs[name] = def
	docs := swaggerDoc(t)
	if d := docs[""]; d != "" {
		def["description"] = d
	}
	props := Schema{}
	var required []string
	s.fields(t, props, &required)
	def["properties"] = props
	if len(required) > 0 {
		def["required"] = required
	}
	return name
}

// swaggerDoc returns the field descriptions k8s.io/api types carry.
func swaggerDoc(t reflect.Type) map[string]string {
	if m, ok := reflect.New(t).Elem().Interface().(interface{ SwaggerDoc() map[string]string }); ok {
		return m.SwaggerDoc()
	}
	return nil
}

func (s *schemas) fields(t reflect.Type, props Schema, required *[]string) {
	docs := swaggerDoc(t)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if strings.Contains(opts, "inline") || (f.Anonymous && name == "") {
			ft := f.Type
			for ft.Kind() == reflect.Ptr {
				ft = ft.Elem()
			}
			s.fields(ft, props, required)
			continue
		}
		if name == "" {
			name = f.Name
		}
		p := s.ref(f.Type)
		if ref, ok := p["$ref"]; ok && docs[name] != "" {
			// $ref siblings are ignored by OpenAPI 3.0 readers.
			if s.v3 {
				p = Schema{"allOf": []interface{}{Schema{"$ref": ref}}}
			}
		}
		if d := docs[name]; d != "" {
			p["description"] = d
		}
		fm := markers.FieldMarkersOf(t, name)
		// Extensions as kube's OpenAPI carries them: the patch strategy
		// from the struct tags, list and map types only where declared.
		if ps := f.Tag.Get("patchStrategy"); ps != "" {
			p["x-kubernetes-patch-strategy"] = ps
			if key := f.Tag.Get("patchMergeKey"); key != "" {
				p["x-kubernetes-patch-merge-key"] = key
			}
		}
		if fm.ListType != "" {
			p["x-kubernetes-list-type"] = fm.ListType
		}
		if len(fm.ListMapKeys) > 0 {
			p["x-kubernetes-list-map-keys"] = fm.ListMapKeys
		}
		if fm.MapType != "" {
			p["x-kubernetes-map-type"] = fm.MapType
		}
		if enum := markers.TypeMarkersOf(f.Type).Enum; len(enum) > 0 {
			p["enum"] = enum
		}
		if fm.Default != "" && s.v3 {
			var v interface{}
			if err := json.Unmarshal([]byte(fm.Default), &v); err == nil {
				p["default"] = v
			}
		}
		props[name] = p
		// Required as kube's OpenAPI generator decides it: neither
		// omitempty nor +optional.
		if !strings.Contains(opts, "omitempty") && !fm.Optional {
			*required = append(*required, name)
		}
	}
}
