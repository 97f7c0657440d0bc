// Package apply owns field ownership: server-side apply and the
// metadata.managedFields that every write maintains, on
// sigs.k8s.io/structured-merge-diff. A resource's merge schema is data: for
// built-in types it is derived from the Go types (json names, and the
// patchStrategy/patchMergeKey tags that make a list a set or a map keyed by
// a field), so resources registered at run time can hand in schemas of
// their own.
package apply

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/structured-merge-diff/v4/schema"
	"sigs.k8s.io/structured-merge-diff/v4/typed"

	markers "github.com/cronplane/cronplane/pkg/schema"
)

const (
	untypedAtomic  = "__untyped_atomic_"
	untypedDeduced = "__untyped_deduced_"
)

// schemaBuilder turns Go types into structured-merge-diff type definitions.
type schemaBuilder struct {
	names map[reflect.Type]string
	defs  []schema.TypeDef
}

// ParseableTypeFor derives the merge schema of a Go API type.
func ParseableTypeFor(obj runtime.Object) (*typed.ParseableType, error) {
	b := &schemaBuilder{names: map[reflect.Type]string{}}
	root := b.named(reflect.TypeOf(obj).Elem())
	b.defs = append(b.defs, untypedDefs()...)
	parser := &typed.Parser{Schema: schema.Schema{Types: b.defs}}
	pt := parser.Type(root)
	return &pt, nil
}

func ptr[T any](v T) *T { return &v }

func untypedDefs() []schema.TypeDef {
	scalar := schema.Untyped
	return []schema.TypeDef{
		{Name: untypedAtomic, Atom: schema.Atom{
			Scalar: &scalar,
			List:   &schema.List{ElementType: schema.TypeRef{NamedType: ptr(untypedAtomic)}, ElementRelationship: schema.Atomic},
			Map:    &schema.Map{ElementType: schema.TypeRef{NamedType: ptr(untypedAtomic)}, ElementRelationship: schema.Atomic},
		}},
		{Name: untypedDeduced, Atom: schema.Atom{
			Scalar: &scalar,
			List:   &schema.List{ElementType: schema.TypeRef{NamedType: ptr(untypedAtomic)}, ElementRelationship: schema.Atomic},
			Map:    &schema.Map{ElementType: schema.TypeRef{NamedType: ptr(untypedDeduced)}, ElementRelationship: schema.Separable},
		}},
	}
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

// ref returns the type reference of t; structs become named types so
// that recursive types terminate.
func (b *schemaBuilder) ref(t reflect.Type) schema.TypeRef {
	for t.Kind() == reflect.Ptr {
		t = t.Elem()
	}
	switch t {
	case timeType, microType, durationType:
		return schema.TypeRef{Inlined: schema.Atom{Scalar: ptr(schema.String)}}
	case quantityType, intStrType:
		return schema.TypeRef{Inlined: schema.Atom{Scalar: ptr(schema.Untyped)}}
	case rawExtType, fieldsV1Type:
		return schema.TypeRef{NamedType: ptr(untypedDeduced)}
	}
	switch t.Kind() {
	case reflect.Bool:
		return schema.TypeRef{Inlined: schema.Atom{Scalar: ptr(schema.Boolean)}}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return schema.TypeRef{Inlined: schema.Atom{Scalar: ptr(schema.Numeric)}}
	case reflect.String:
		return schema.TypeRef{Inlined: schema.Atom{Scalar: ptr(schema.String)}}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return schema.TypeRef{Inlined: schema.Atom{Scalar: ptr(schema.String)}}
		}
		return schema.TypeRef{Inlined: schema.Atom{List: &schema.List{ElementType: b.ref(t.Elem()), ElementRelationship: schema.Atomic}}}
	case reflect.Map:
		return schema.TypeRef{Inlined: schema.Atom{Map: &schema.Map{ElementType: b.ref(t.Elem()), ElementRelationship: schema.Separable}}}
	case reflect.Struct:
		return schema.TypeRef{NamedType: ptr(b.named(t))}
	}
	return schema.TypeRef{NamedType: ptr(untypedDeduced)}
}

func (b *schemaBuilder) named(t reflect.Type) string {
	if name, ok := b.names[t]; ok {
		return name
	}
	name := t.PkgPath() + "." + t.Name()
	b.names[t] = name
	i := len(b.defs)
	b.defs = append(b.defs, schema.TypeDef{Name: name})
	m := &schema.Map{}
	b.fields(t, m)
	if markers.TypeMarkersOf(t).StructType == "atomic" {
		m.ElementRelationship = schema.Atomic
	}
	b.defs[i].Atom = schema.Atom{Map: m}
	return name
}

// fields adds the JSON fields of struct t, flattening inline members.
func (b *schemaBuilder) fields(t reflect.Type, m *schema.Map) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if strings.Contains(opts, "inline") || (f.Anonymous && name == "") {
			ft := f.Type
			for ft.Kind() == reflect.Ptr {
				ft = ft.Elem()
			}
			b.fields(ft, m)
			continue
		}
		if name == "" {
			name = f.Name
		}
		ref := b.ref(f.Type)
		fm := markers.FieldMarkersOf(t, name)
		if l := ref.Inlined.List; l != nil {
			// A declared list type wins over the patch strategy, as in
			// kube's OpenAPI.
			switch {
			case fm.ListType == "atomic":
			case fm.ListType == "set":
				l.ElementRelationship = schema.Associative
			case fm.ListType == "map":
				l.ElementRelationship = schema.Associative
				l.Keys = fm.ListMapKeys
			case strings.Contains(f.Tag.Get("patchStrategy"), "merge"):
				l.ElementRelationship = schema.Associative
				if key := f.Tag.Get("patchMergeKey"); key != "" {
					l.Keys = []string{key}
				}
			}
		}
		if mp := ref.Inlined.Map; mp != nil && fm.MapType == "atomic" {
			mp.ElementRelationship = schema.Atomic
		}
		sf := schema.StructField{Name: name, Type: ref}
		// A default fills in a missing key of a map list (a port's
		// protocol), as kube's schema lets it.
		if fm.Default != "" {
			if err := json.Unmarshal([]byte(fm.Default), &sf.Default); err != nil {
				panic(fmt.Sprintf("apply: default %s of %s.%s: %v", fm.Default, t, name, err))
			}
		}
		m.Fields = append(m.Fields, sf)
	}
}
