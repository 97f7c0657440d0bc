package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Schema is a structural OpenAPI v3 schema with kube's extensions: the
// shape of a served type as data. Built-in types get theirs from their Go
// definitions (FromGoType); resources defined at run time bring theirs.
// Everything the server derives about a type's shape reads it: the merge
// types of server-side apply, the OpenAPI documents, pruning and the
// status split.
type Schema struct {
	// Ref names a definition that stands for this schema; the other
	// fields but Description are then empty.
	Ref         string
	Type        string
	Format      string
	Description string
	Properties  map[string]*Schema
	Required    []string
	// Items is the schema of an array's elements; AdditionalProperties
	// that of a map's values.
	Items                *Schema
	AdditionalProperties *Schema
	Enum                 []interface{}
	// Default is the default value, decoded JSON.
	Default  interface{}
	Nullable bool

	// IntOrString is x-kubernetes-int-or-string; NumberOrString a
	// quantity, which takes either.
	IntOrString    bool
	NumberOrString bool
	// PreserveUnknownFields is x-kubernetes-preserve-unknown-fields: an
	// object that keeps fields its schema does not name.
	PreserveUnknownFields bool
	// EmbeddedResource is x-kubernetes-embedded-resource: an object with
	// its own apiVersion, kind and metadata.
	EmbeddedResource bool
	// ListType ("atomic", "set", "map"), ListMapKeys and MapType
	// ("atomic", "granular") are the merge markers.
	ListType    string
	ListMapKeys []string
	MapType     string
	// PatchStrategy and PatchMergeKey are a built-in type's strategic
	// merge tags.
	PatchStrategy string
	PatchMergeKey string

	// The value validations of OpenAPI v3 that a schema defined at run
	// time (a CustomResourceDefinition's) may carry; nil or zero means
	// unconstrained. Built-in types leave them empty: Go code validates
	// those.
	Pattern          string
	Maximum          *float64
	Minimum          *float64
	ExclusiveMaximum bool
	ExclusiveMinimum bool
	MaxLength        *int64
	MinLength        *int64
	MaxItems         *int64
	MinItems         *int64
	MaxProperties    *int64
	MinProperties    *int64
	UniqueItems      bool
	MultipleOf       *float64
	// AllOf, AnyOf, OneOf and Not are the logic junctors. Their
	// schemas only add value validations to this one (a structural
	// schema keeps its shape out of them, but for the int-or-string
	// pattern's types): validation evaluates them, while pruning,
	// defaulting, merging and the documents follow the shape alone.
	AllOf []*Schema
	AnyOf []*Schema
	OneOf []*Schema
	Not   *Schema
	// XValidations are x-kubernetes-validations: CEL rules checked
	// against the value at this node.
	XValidations []ValidationRule
}

// ValidationRule is one x-kubernetes-validations entry.
type ValidationRule struct {
	Rule              string
	Message           string
	MessageExpression string
	// Reason is FieldValueInvalid (empty means that), FieldValueForbidden,
	// FieldValueRequired or FieldValueDuplicate.
	Reason string
	// FieldPath, a JSON path relative to the node, is where a violation
	// is reported instead of the node itself.
	FieldPath       string
	OptionalOldSelf bool
}

// Definitions are named schemas, such as "io.k8s.api.batch.v1.CronJob".
type Definitions map[string]*Schema

// Structural is the schema of one served type: Root, which for a Go type
// refers to a definition, and the definitions it names.
type Structural struct {
	Root        *Schema
	Definitions Definitions
	// KeepUnknownFields is a legacy definition's spec.preserveUnknownFields:
	// no field is pruned anywhere (the metadata of the root and of
	// embedded resources is still fitted to ObjectMeta), and the merge
	// type of every object keeps the fields it does not name.
	KeepUnknownFields bool

	// passes says, once computed, which schemas have embedded resources
	// or set and map lists below them, for Validate to walk only those.
	passes passes
}

type passes struct {
	once     sync.Once
	embedded map[*Schema]bool
	lists    map[*Schema]bool
}

// below reports whether s or a schema below it has an embedded resource
// (embedded) or a set or map list (lists). The schema must not change
// once validated.
func (st *Structural) below(s *Schema) (embedded, lists bool) {
	st.passes.once.Do(func() {
		st.passes.embedded = map[*Schema]bool{}
		st.passes.lists = map[*Schema]bool{}
		st.markPasses(st.Resolve(st.Root), map[*Schema]bool{})
	})
	return st.passes.embedded[s], st.passes.lists[s]
}

func (st *Structural) markPasses(s *Schema, visiting map[*Schema]bool) (embedded, lists bool) {
	if s == nil || visiting[s] {
		return false, false
	}
	if e, ok := st.passes.embedded[s]; ok {
		return e, st.passes.lists[s]
	}
	visiting[s] = true
	embedded = s.EmbeddedResource
	lists = s.ListType == "set" || s.ListType == "map"
	mark := func(c *Schema) {
		e, l := st.markPasses(st.Resolve(c), visiting)
		embedded, lists = embedded || e, lists || l
	}
	for _, c := range s.Properties {
		mark(c)
	}
	mark(s.Items)
	mark(s.AdditionalProperties)
	delete(visiting, s)
	st.passes.embedded[s], st.passes.lists[s] = embedded, lists
	return embedded, lists
}

// Resolve follows s's reference, if any.
func (st *Structural) Resolve(s *Schema) *Schema {
	for s != nil && s.Ref != "" {
		s = st.Definitions[s.Ref]
	}
	return s
}

// RootName is the definition the root refers to, "" for an inline root.
func (st *Structural) RootName() string {
	return st.Root.Ref
}

// TopLevelFields returns the names of the root object's properties,
// sorted.
func (st *Structural) TopLevelFields() []string {
	root := st.Resolve(st.Root)
	names := make([]string, 0, len(root.Properties))
	for n := range root.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
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

// ObjectMetaDefinition names the definition of object metadata, which
// every resource's metadata and an embedded resource's refer to.
var ObjectMetaDefinition = DefinitionName(reflect.TypeOf(metav1.ObjectMeta{}))

// DefinitionName is kube's OpenAPI name of a Go type: its package path
// with the domain reversed, then the type name
// (io.k8s.api.batch.v1.CronJob).
func DefinitionName(t reflect.Type) string {
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

// FromGoType derives the structural schema of a built-in API type from
// its Go definition: JSON names, the descriptions k8s.io/api carries
// (SwaggerDoc), the strategic merge tags, and the markers its source
// comments declare (generated into this package). A field is required as
// kube's generator decides it: neither omitempty nor +optional.
//
// The definitions are shared with every other Structural FromGoType
// returns (see goDefinitions) and must not be changed; a caller that
// needs one of them different puts a changed copy in its own
// Structural's Definitions.
func FromGoType(obj runtime.Object) *Structural {
	name, defs := goTypeDefinitions(reflect.TypeOf(obj).Elem())
	return &Structural{Root: &Schema{Ref: name}, Definitions: defs}
}

// goDefinitions holds the definitions derived from Go types, built once
// for the process: a definition depends on its Go type alone, and the
// pod spec's and its dozens of types, for one, would otherwise be built
// again for Pods, pod templates, Jobs and CronJobs and each of their
// lists (9 MB for the built-in resources, a seventh of the heap with
// 5,000 CronJobs cached).
var goDefinitions = struct {
	sync.Mutex
	defs Definitions
}{defs: Definitions{}}

// goTypeDefinitions returns the name of t's definition and a map of it
// and the definitions it refers to, directly or not: the shared schemas
// in a map of the caller's own.
func goTypeDefinitions(t reflect.Type) (string, Definitions) {
	goDefinitions.Lock()
	defer goDefinitions.Unlock()
	name := (&builder{defs: goDefinitions.defs}).define(t)
	defs := Definitions{}
	goDefinitions.defs.collect(name, defs)
	return name, defs
}

// IsGoDefinition reports whether s is the shared definition of a Go type
// named name: a function of the type alone, which never changes, so that
// what is derived from it may be shared too.
func IsGoDefinition(name string, s *Schema) bool {
	goDefinitions.Lock()
	defer goDefinitions.Unlock()
	return s != nil && goDefinitions.defs[name] == s
}

// collect adds the definition name and those it refers to, from d, to
// out.
func (d Definitions) collect(name string, out Definitions) {
	if _, ok := out[name]; ok {
		return
	}
	s := d[name]
	out[name] = s
	d.collectRefs(s, out)
}

func (d Definitions) collectRefs(s *Schema, out Definitions) {
	if s == nil {
		return
	}
	if s.Ref != "" {
		d.collect(s.Ref, out)
		return
	}
	for _, p := range s.Properties {
		d.collectRefs(p, out)
	}
	d.collectRefs(s.Items, out)
	d.collectRefs(s.AdditionalProperties, out)
}

// addGoType adds the shared definitions of Go type t, and of those it
// refers to, that d does not have yet, and returns the name of t's.
func (d Definitions) addGoType(t reflect.Type) string {
	name, defs := goTypeDefinitions(t)
	for n, s := range defs {
		if _, ok := d[n]; !ok {
			d[n] = s
		}
	}
	return name
}

type builder struct {
	defs Definitions
}

// ObjectMetaDefinitions returns the definitions of ObjectMeta and of the
// types it uses, and the name of ObjectMeta's: the metadata of an
// embedded resource as well as of a resource. They are shared, as
// FromGoType's.
func ObjectMetaDefinitions() (string, Definitions) {
	return goTypeDefinitions(reflect.TypeOf(metav1.ObjectMeta{}))
}

// of returns the schema of a field or element of type t: inline for
// scalars and containers, a reference for structs.
func (b *builder) of(t reflect.Type) *Schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case durationType:
		return &Schema{Type: "string"}
	case timeType, microType, quantityType, intStrType, rawExtType, fieldsV1Type:
		return &Schema{Ref: b.define(t)}
	}
	switch t.Kind() {
	case reflect.Bool:
		return &Schema{Type: "boolean"}
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16:
		return &Schema{Type: "integer", Format: "int32"}
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return &Schema{Type: "integer", Format: "int64"}
	case reflect.Float32, reflect.Float64:
		return &Schema{Type: "number", Format: "double"}
	case reflect.String:
		return &Schema{Type: "string"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return &Schema{Type: "string", Format: "byte"}
		}
		return &Schema{Type: "array", Items: b.of(t.Elem())}
	case reflect.Map:
		return &Schema{Type: "object", AdditionalProperties: b.of(t.Elem())}
	case reflect.Struct:
		return &Schema{Ref: b.define(t)}
	}
	return &Schema{Type: "object"}
}

// define adds the definition of struct (or custom scalar) type t and
// returns its name.
func (b *builder) define(t reflect.Type) string {
	name := DefinitionName(t)
	if _, ok := b.defs[name]; ok {
		return name
	}
	switch t {
	case timeType, microType:
		b.defs[name] = &Schema{Type: "string", Format: "date-time", Description: "A timestamp in RFC 3339 form."}
		return name
	case quantityType:
		b.defs[name] = &Schema{Type: "string", NumberOrString: true, Description: "A fixed-point number: an amount of a resource, such as 100m or 2Gi."}
		return name
	case intStrType:
		b.defs[name] = &Schema{Type: "string", Format: "int-or-string", IntOrString: true, Description: "An integer or a string."}
		return name
	case rawExtType, fieldsV1Type:
		b.defs[name] = &Schema{Type: "object"}
		return name
	}
	def := &Schema{Type: "object", Properties: map[string]*Schema{}}
	b.defs[name] = def
	if TypeMarkersOf(t).StructType == "atomic" {
		def.MapType = "atomic"
	}
	if d := swaggerDoc(t)[""]; d != "" {
		def.Description = d
	}
	b.fields(t, def)
	return name
}

// swaggerDoc returns the field descriptions k8s.io/api types carry.
func swaggerDoc(t reflect.Type) map[string]string {
	if m, ok := reflect.New(t).Elem().Interface().(interface{ SwaggerDoc() map[string]string }); ok {
		return m.SwaggerDoc()
	}
	return nil
}

// fields adds the JSON fields of struct t to def, flattening inline
// members.
func (b *builder) fields(t reflect.Type, def *Schema) {
	docs := swaggerDoc(t)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, inline, ok := jsonField(f)
		if !ok {
			continue
		}
		if inline {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			b.fields(ft, def)
			continue
		}
		_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		p := b.of(f.Type)
		p.Description = docs[name]
		p.PatchStrategy = f.Tag.Get("patchStrategy")
		p.PatchMergeKey = f.Tag.Get("patchMergeKey")
		fm := FieldMarkersOf(t, name)
		p.ListType, p.ListMapKeys = fm.ListType, fm.ListMapKeys
		if fm.MapType != "" {
			p.MapType = fm.MapType
		}
		for _, v := range TypeMarkersOf(f.Type).Enum {
			p.Enum = append(p.Enum, v)
		}
		if fm.Default != "" {
			if err := json.Unmarshal([]byte(fm.Default), &p.Default); err != nil {
				panic(fmt.Sprintf("schema: default %s of %s.%s: %v", fm.Default, t, name, err))
			}
		}
		def.Properties[name] = p
		if !strings.Contains(opts, "omitempty") && !fm.Optional {
			def.Required = append(def.Required, name)
		}
	}
}

// KindDefinitionName names the definition of a kind without a Go type as
// kube names a custom resource's: the group with its domain reversed, the
// version and the kind ("com.example.v1.Widget").
func KindDefinitionName(gvk schema.GroupVersionKind) string {
	parts := strings.Split(gvk.Group, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(append(parts, gvk.Version, gvk.Kind), ".")
}

// AsResource returns st, whose root is given inline, as the schema of a
// resource: the root defined under name, so that documents can refer to
// it, with apiVersion and kind strings and ObjectMeta as its metadata, as
// kube completes a custom resource's schema. A root that refers to a
// definition (a Go type's) is returned as it is.
func (st *Structural) AsResource(name string) *Structural {
	if st.Root.Ref != "" {
		return st
	}
	defs := make(Definitions, len(st.Definitions)+1)
	for n, d := range st.Definitions {
		defs[n] = d
	}
	root := *st.Root
	root.Properties = make(map[string]*Schema, len(st.Root.Properties)+3)
	for n, p := range st.Root.Properties {
		root.Properties[n] = p
	}
	root.Properties["apiVersion"] = &Schema{Type: "string", Description: apiVersionDescription}
	root.Properties["kind"] = &Schema{Type: "string", Description: kindDescription}
	root.Properties["metadata"] = &Schema{Ref: defs.addGoType(reflect.TypeOf(metav1.ObjectMeta{})), Description: objectMetaDescription}
	defs[name] = &root
	return &Structural{Root: &Schema{Ref: name}, Definitions: defs, KeepUnknownFields: st.KeepUnknownFields}
}

// The descriptions of the type and object metadata of a resource without
// a Go type, and of its lists, as kube's documents give them: kubectl
// explain shows them.
const (
	apiVersionDescription = "APIVersion defines the versioned schema of this representation of an object. " +
		"Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. " +
		"More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
	kindDescription = "Kind is a string value representing the REST resource this object represents. " +
		"Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. " +
		"More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
	objectMetaDescription = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
	listMetaDescription   = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
	itemsDescription      = "List of %s. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
)

// ListOf returns the schema of a list of objects of the named item schema,
// defined under name: apiVersion, kind, list metadata and the items, of
// kind itemKind and resource plural.
func ListOf(item *Structural, name, itemKind, plural string) *Structural {
	defs := make(Definitions, len(item.Definitions)+1)
	for n, d := range item.Definitions {
		defs[n] = d
	}
	defs[name] = &Schema{
		Type:        "object",
		Description: itemKind + "List is a list of " + itemKind,
		Required:    []string{"items"},
		Properties: map[string]*Schema{
			"apiVersion": {Type: "string", Description: apiVersionDescription},
			"kind":       {Type: "string", Description: kindDescription},
			"metadata":   {Ref: defs.addGoType(reflect.TypeOf(metav1.ListMeta{})), Description: listMetaDescription},
			"items":      {Type: "array", Items: &Schema{Ref: item.RootName()}, Description: fmt.Sprintf(itemsDescription, plural)},
		},
	}
	return &Structural{Root: &Schema{Ref: name}, Definitions: defs}
}
