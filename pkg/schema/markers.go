// Package schema owns the shape of each served type as data: a structural
// OpenAPI v3 schema per resource, from which server-side apply's merge
// types, the OpenAPI documents, pruning and the status split are derived.
// Built-in types get theirs from their Go definitions plus the markers
// kube's API types declare in comments (+listType, +listMapKey,
// +mapType, +structType, +optional, +default, +enum), kept as data
// generated from the sources of the k8s.io API modules in go.mod and of
// this module's copies of kube's types (pkg/apis).
package schema

import "reflect"

//go:generate go run ../../hack/markergen -o markers_generated.go

// TypeMarkers are the markers of a named type.
type TypeMarkers struct {
	// StructType "atomic" makes a struct one value for field ownership.
	StructType string
	// MapType "atomic" makes a map one value for field ownership.
	MapType string
	// Enum lists the values of an enumerated string type.
	Enum []string
}

// FieldMarkers are the markers of one field of a struct.
type FieldMarkers struct {
	// ListType is "atomic", "set" or "map"; empty means as the patch
	// strategy tags say.
	ListType string
	// ListMapKeys are the keys of a "map" list.
	ListMapKeys []string
	// MapType is "atomic" or "granular".
	MapType string
	// Optional marks a field without omitempty that is not required.
	Optional bool
	// Default is the JSON default value.
	Default string
}

// typeName is the key of a Go type in the generated data.
func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() + "." + t.Name()
}

// TypeMarkersOf returns the markers of Go type t.
func TypeMarkersOf(t reflect.Type) TypeMarkers {
	return generatedTypeMarkers[typeName(t)]
}

// FieldMarkersOf returns the markers of the field of struct t whose JSON
// name is field.
func FieldMarkersOf(t reflect.Type, field string) FieldMarkers {
	return generatedFieldMarkers[typeName(t)+"."+field]
}
