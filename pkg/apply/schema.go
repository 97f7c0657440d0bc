// Package apply owns field ownership: server-side apply and the
// metadata.managedFields that every write maintains, on
// sigs.k8s.io/structured-merge-diff. A resource's merge types are derived
// from its structural schema (pkg/schema) as kube derives them from its
// OpenAPI: the list types and map keys, atomic maps and structs, and the
// strategic merge tags where no list type is declared. Built-in types and
// resources whose schema arrives at run time are served alike.
package apply

import (
	"sort"
	"strings"
	"sync"

	smd "sigs.k8s.io/structured-merge-diff/v4/schema"
	"sigs.k8s.io/structured-merge-diff/v4/typed"

	"github.com/cronplane/cronplane/pkg/schema"
)

const (
	untypedAtomic  = "__untyped_atomic_"
	untypedDeduced = "__untyped_deduced_"
	// rootType names an inline root schema.
	rootType = "__root__"
)

func ptr[T any](v T) *T { return &v }

// ParseableType converts a structural schema into the merge library's
// type of its root.
func ParseableType(st *schema.Structural) *typed.ParseableType {
	c := &converter{st: st}
	names := make([]string, 0, len(st.Definitions))
	for name := range st.Definitions {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c.defs = append(c.defs, smd.TypeDef{Name: name, Atom: c.definition(name, st.Definitions[name])})
	}
	root := st.Root.Ref
	if root == "" {
		root = rootType
		c.defs = append(c.defs, smd.TypeDef{Name: rootType, Atom: c.atom(st.Root)})
	}
	if c.objectMeta != "" {
		c.defineObjectMeta()
	}
	c.defs = append(c.defs, untypedDefs()...)
	parser := &typed.Parser{Schema: smd.Schema{Types: c.defs}}
	pt := parser.Type(root)
	return &pt
}

type converter struct {
	st   *schema.Structural
	defs []smd.TypeDef
	// objectMeta names ObjectMeta's type once an embedded resource
	// refers to it.
	objectMeta string
	// metaDefs are ObjectMeta's definitions, added to the types after
	// the schema's when st does not have them.
	metaDefs schema.Definitions
}

// goAtoms are the merge types of the shared definitions of Go types (see
// schema.IsGoDefinition), by definition: built once for all the resources
// whose schemas hold them, as the definitions are. The merge library
// does not change a schema's types.
var goAtoms sync.Map // *schema.Schema → smd.Atom

// definition returns the merge type of the definition s named name.
func (c *converter) definition(name string, s *schema.Schema) smd.Atom {
	// A Go type's definition has no embedded resource and is read
	// without KeepUnknownFields, so its type depends on it alone.
	if c.st.KeepUnknownFields || !schema.IsGoDefinition(name, s) {
		return c.atom(s)
	}
	if a, ok := goAtoms.Load(s); ok {
		return a.(smd.Atom)
	}
	a := c.atom(s)
	goAtoms.Store(s, a)
	return a
}

// embeddedFields are the fields kube adds to an embedded resource's
// type, as to a resource's: apiVersion and kind strings, and ObjectMeta
// as its metadata, replacing what the schema says of them.
func (c *converter) embeddedFields() map[string]smd.TypeRef {
	if c.objectMeta == "" {
		c.objectMeta, c.metaDefs = schema.ObjectMetaDefinitions()
	}
	str := smd.TypeRef{Inlined: smd.Atom{Scalar: ptr(smd.String)}}
	return map[string]smd.TypeRef{"apiVersion": str, "kind": str, "metadata": {NamedType: ptr(c.objectMeta)}}
}

// defineObjectMeta adds the definitions of ObjectMeta that st lacks.
func (c *converter) defineObjectMeta() {
	names := make([]string, 0, len(c.metaDefs))
	for name := range c.metaDefs {
		if _, ok := c.st.Definitions[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		c.defs = append(c.defs, smd.TypeDef{Name: name, Atom: c.definition(name, c.metaDefs[name])})
	}
}

func untypedDefs() []smd.TypeDef {
	scalar := smd.Untyped
	return []smd.TypeDef{
		{Name: untypedAtomic, Atom: smd.Atom{
			Scalar: &scalar,
			List:   &smd.List{ElementType: smd.TypeRef{NamedType: ptr(untypedAtomic)}, ElementRelationship: smd.Atomic},
			Map:    &smd.Map{ElementType: smd.TypeRef{NamedType: ptr(untypedAtomic)}, ElementRelationship: smd.Atomic},
		}},
		{Name: untypedDeduced, Atom: smd.Atom{
			Scalar: &scalar,
			List:   &smd.List{ElementType: smd.TypeRef{NamedType: ptr(untypedAtomic)}, ElementRelationship: smd.Atomic},
			Map:    &smd.Map{ElementType: smd.TypeRef{NamedType: ptr(untypedDeduced)}, ElementRelationship: smd.Separable},
		}},
	}
}

// ref returns the type reference of a property or element schema.
func (c *converter) ref(s *schema.Schema) smd.TypeRef {
	if s.Ref != "" {
		return smd.TypeRef{NamedType: ptr(s.Ref)}
	}
	if deduced(s) {
		return smd.TypeRef{NamedType: ptr(untypedDeduced)}
	}
	return smd.TypeRef{Inlined: c.atom(s)}
}

// deduced reports whether the merge library must take s's shape from the
// values themselves: an object that names neither properties nor values
// (a raw extension), or one that keeps unknown fields, but for an
// embedded resource, whose apiVersion, kind and metadata are typed.
func deduced(s *schema.Schema) bool {
	if s.IntOrString || s.NumberOrString || s.EmbeddedResource {
		return false
	}
	if s.Type == "" {
		return true
	}
	return s.Type == "object" && s.Properties == nil && s.AdditionalProperties == nil
}

func (c *converter) atom(s *schema.Schema) smd.Atom {
	switch {
	case s.IntOrString || s.NumberOrString:
		return smd.Atom{Scalar: ptr(smd.Untyped)}
	case deduced(s):
		// Only a named definition reaches here; it stands for anything.
		return smd.Atom{
			Scalar: ptr(smd.Untyped),
			List:   &smd.List{ElementType: smd.TypeRef{NamedType: ptr(untypedAtomic)}, ElementRelationship: smd.Atomic},
			Map:    &smd.Map{ElementType: smd.TypeRef{NamedType: ptr(untypedDeduced)}, ElementRelationship: smd.Separable},
		}
	}
	switch s.Type {
	case "boolean":
		return smd.Atom{Scalar: ptr(smd.Boolean)}
	case "integer", "number":
		return smd.Atom{Scalar: ptr(smd.Numeric)}
	case "string":
		return smd.Atom{Scalar: ptr(smd.String)}
	case "array":
		l := &smd.List{ElementType: c.ref(s.Items), ElementRelationship: smd.Atomic}
		// A declared list type wins over the patch strategy, as in
		// kube's conversion of its OpenAPI.
		switch {
		case s.ListType == "atomic":
		case s.ListType == "set":
			l.ElementRelationship = smd.Associative
		case s.ListType == "map":
			l.ElementRelationship = smd.Associative
			l.Keys = s.ListMapKeys
		case strings.Contains(s.PatchStrategy, "merge"):
			l.ElementRelationship = smd.Associative
			if s.PatchMergeKey != "" {
				l.Keys = []string{s.PatchMergeKey}
			}
		}
		return smd.Atom{List: l}
	}
	// An object: a struct of its properties, or a map of its values.
	m := &smd.Map{}
	if s.AdditionalProperties != nil && len(s.Properties) == 0 {
		m.ElementType = c.ref(s.AdditionalProperties)
		m.ElementRelationship = smd.Separable
	}
	fields := map[string]smd.StructField{}
	for n, p := range s.Properties {
		fields[n] = smd.StructField{Name: n, Type: c.ref(p), Default: p.Default}
	}
	if s.EmbeddedResource {
		for n, t := range c.embeddedFields() {
			fields[n] = smd.StructField{Name: n, Type: t}
		}
	}
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		m.Fields = append(m.Fields, fields[n])
	}
	if s.PreserveUnknownFields || c.st.KeepUnknownFields && s.AdditionalProperties == nil {
		// kube's conversion with preserveUnknownFields gives every
		// object without additionalProperties, ObjectMeta included,
		// fields of any name.
		m.ElementType = smd.TypeRef{NamedType: ptr(untypedDeduced)}
	}
	if s.MapType == "atomic" {
		m.ElementRelationship = smd.Atomic
	}
	return smd.Atom{Map: m}
}
