package cel

import (
	"fmt"
	"sync/atomic"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/cronplane/cronplane/pkg/schema"
)

// Sizes kube assumes when it bounds what a request can hold: a request
// body is at most 3 MiB, and the smallest JSON form of each kind of
// value.
const (
	maxRequestSizeBytes = 3 * 1024 * 1024
	minStringSize       = 2  // ""
	minBoolSize         = 4  // true
	minNumberSize       = 1  // 0
	minDurationSize     = 4  // "0s"
	jsonDateSize        = 12 // "YYYY-MM-DD"
	minDateTimeSize     = 21 // "YYYY-MM-DDTHH:MM:SS"
	maxDurationSize     = 32
	maxDateTimeSize     = 32
)

type declKind int

const (
	kindSimple declKind = iota
	kindObject
	kindList
	kindMap
)

// declType is the CEL type kube declares for a schema node, with the
// bounds cost estimation reads: maxElements is the most characters,
// bytes, items or entries a value can have, minSize the smallest JSON it
// can serialize to.
type declType struct {
	kind        declKind
	simple      *cel.Type // kindSimple
	fields      map[string]*declField
	elem        *declType // list items, map values
	maxElements int64
	minSize     int64
	// schema is the node's schema; for a resource root (the root, an
	// embedded resource) with apiVersion, kind and metadata's name and
	// generateName added, as rules see it.
	schema *schema.Schema
}

// declField is a property reachable from rules, under its escaped name.
type declField struct {
	name string // the property's own name
	typ  *declType
}

var (
	mapKeyType = &declType{kind: kindSimple, simple: cel.StringType, minSize: minStringSize}
)

func simpleType(t *cel.Type, minSize, maxElements int64, s *schema.Schema) *declType {
	return &declType{kind: kindSimple, simple: t, minSize: minSize, maxElements: maxElements, schema: s}
}

// newDeclType returns the CEL type of s as kube declares it, nil when
// rules cannot see values of s (a schema without a type that is not
// int-or-string). isResourceRoot adds apiVersion, kind and metadata.
func newDeclType(st *schema.Structural, s *schema.Schema, isResourceRoot bool) *declType {
	return (&declBuilder{st: st, building: map[*schema.Schema]bool{}}).of(s, isResourceRoot)
}

type declBuilder struct {
	st       *schema.Structural
	building map[*schema.Schema]bool // guards recursive definitions
}

func (b *declBuilder) resolve(s *schema.Schema) *schema.Schema {
	if b.st == nil {
		return s
	}
	return b.st.Resolve(s)
}

func (b *declBuilder) of(s *schema.Schema, isResourceRoot bool) *declType {
	s = b.resolve(s)
	if s == nil || b.building[s] {
		return nil
	}
	b.building[s] = true
	defer delete(b.building, s)
	if s.IntOrString {
		// Typed dyn: the rule checks the type itself.
		return simpleType(cel.DynType, 1, maxRequestSizeBytes-2, s)
	}
	if isResourceRoot {
		s = withTypeAndObjectMeta(s)
	}
	switch s.Type {
	case "array":
		if s.Items == nil {
			return nil
		}
		items := b.resolve(s.Items)
		it := b.of(items, items != nil && items.EmbeddedResource)
		if it == nil {
			return nil
		}
		maxItems := (maxRequestSizeBytes - 2) / (it.minSize + 1)
		if s.MaxItems != nil {
			maxItems = zeroIfNegative(*s.MaxItems)
		}
		return &declType{kind: kindList, elem: it, maxElements: maxItems, minSize: 2, schema: s}
	case "object":
		if s.AdditionalProperties != nil {
			vs := b.resolve(s.AdditionalProperties)
			vt := b.of(vs, vs != nil && vs.EmbeddedResource)
			if vt == nil {
				return nil
			}
			// a key of at least "" and a colon and a comma around each value
			maxProps := (maxRequestSizeBytes - 2) / (vt.minSize + 6)
			if s.MaxProperties != nil {
				maxProps = zeroIfNegative(*s.MaxProperties)
			}
			return &declType{kind: kindMap, elem: vt, maxElements: maxProps, minSize: 2, schema: s}
		}
		required := map[string]bool{}
		for _, r := range s.Required {
			required[r] = true
		}
		obj := &declType{kind: kindObject, fields: make(map[string]*declField, len(s.Properties)), minSize: 2, schema: s}
		for name, p := range s.Properties {
			ps := b.resolve(p)
			ft := b.of(ps, ps != nil && ps.EmbeddedResource)
			if ft == nil {
				continue
			}
			if esc, ok := Escape(name); ok {
				obj.fields[esc] = &declField{name: name, typ: ft}
			}
			// Required properties without a default are always there.
			if required[name] && ps.Default == nil {
				obj.minSize += int64(len(name)) + ft.minSize + 4
			}
		}
		return obj
	case "string":
		switch s.Format {
		case "byte":
			max := int64(maxRequestSizeBytes - 2)
			if s.MaxLength != nil {
				max = zeroIfNegative(*s.MaxLength)
			}
			return simpleType(cel.BytesType, minStringSize, max, s)
		case "duration":
			return simpleType(cel.DurationType, minDurationSize, maxDurationSize, s)
		case "date":
			return simpleType(cel.TimestampType, jsonDateSize, jsonDateSize, s)
		case "date-time":
			return simpleType(cel.TimestampType, minDateTimeSize, maxDateTimeSize, s)
		}
		max := int64(maxRequestSizeBytes - 2)
		switch {
		case s.MaxLength != nil:
			// maxLength counts characters; a character is up to 4 bytes.
			max = zeroIfNegative(*s.MaxLength) * 4
		case len(s.Enum) > 0:
			max = 0
			for _, e := range s.Enum {
				if es, ok := e.(string); ok && int64(len(es)) > max {
					max = int64(len(es))
				}
			}
		}
		return simpleType(cel.StringType, minStringSize, max, s)
	case "boolean":
		return simpleType(cel.BoolType, minBoolSize, 0, s)
	case "number":
		return simpleType(cel.DoubleType, minNumberSize, 0, s)
	case "integer":
		return simpleType(cel.IntType, minNumberSize, 0, s)
	}
	return nil
}

func zeroIfNegative(v int64) int64 {
	if v < 0 {
		return 0
	}
	return v
}

// withTypeAndObjectMeta is s as rules at a resource root see it: with
// string apiVersion and kind, and metadata of which only name and
// generateName are visible.
func withTypeAndObjectMeta(s *schema.Schema) *schema.Schema {
	if s.Properties != nil {
		k, a, m := s.Properties["kind"], s.Properties["apiVersion"], s.Properties["metadata"]
		if k != nil && k.Type == "string" && a != nil && a.Type == "string" && m != nil && m.Type == "object" && m.Properties != nil &&
			m.Properties["name"] != nil && m.Properties["name"].Type == "string" &&
			m.Properties["generateName"] != nil && m.Properties["generateName"].Type == "string" {
			return s
		}
	}
	out := *s
	out.Properties = make(map[string]*schema.Schema, len(s.Properties)+3)
	for k, p := range s.Properties {
		out.Properties[k] = p
	}
	out.Properties["kind"] = &schema.Schema{Type: "string"}
	out.Properties["apiVersion"] = &schema.Schema{Type: "string"}
	out.Properties["metadata"] = &schema.Schema{Type: "object", Properties: map[string]*schema.Schema{
		"name":         {Type: "string"},
		"generateName": {Type: "string"},
	}}
	return &out
}

// field returns the type of the property an escaped name reaches.
func (t *declType) field(escaped string) (*declField, bool) {
	f, ok := t.fields[escaped]
	return f, ok
}

var selfTypeCounter atomic.Uint64

// selfTypeName names the object type of one rule node's self, as kube
// names it: selfType followed by a number unique to the node.
func selfTypeName() string {
	return fmt.Sprintf("selfType%d", selfTypeCounter.Add(1))
}

// typeSet holds the object types declared for one rule node's self, by
// name: selfTypeN, then .<field>, .@idx (list items) and .@elem (map
// values) below it, as kube names them.
type typeSet struct {
	objects map[string]*objectDecl
}

type objectDecl struct {
	t      *types.Type
	fields map[string]*types.FieldType
}

// celType declares dt under name and returns its CEL type.
func (ts *typeSet) celType(dt *declType, name string) *cel.Type {
	switch dt.kind {
	case kindObject:
		od := &objectDecl{t: cel.ObjectType(name), fields: make(map[string]*types.FieldType, len(dt.fields))}
		ts.objects[name] = od
		for esc, f := range dt.fields {
			od.fields[esc] = &types.FieldType{Type: ts.celType(f.typ, name+"."+esc)}
		}
		return od.t
	case kindList:
		return cel.ListType(ts.celType(dt.elem, name+".@idx"))
	case kindMap:
		return cel.MapType(cel.StringType, ts.celType(dt.elem, name+".@elem"))
	}
	return dt.simple
}

// provider answers the type checker's questions about a rule node's
// object types and hands the rest to the environment's own provider.
type provider struct {
	base    types.Provider
	objects map[string]*objectDecl
}

func (p *provider) EnumValue(name string) ref.Val { return p.base.EnumValue(name) }

func (p *provider) FindIdent(name string) (ref.Val, bool) {
	if od, ok := p.objects[name]; ok {
		return od.t, true
	}
	return p.base.FindIdent(name)
}

func (p *provider) FindStructType(name string) (*types.Type, bool) {
	if od, ok := p.objects[name]; ok {
		return types.NewTypeTypeWithParam(od.t), true
	}
	return p.base.FindStructType(name)
}

func (p *provider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if od, ok := p.objects[name]; ok {
		ft, found := od.fields[field]
		return ft, found
	}
	return p.base.FindStructFieldType(name, field)
}

func (p *provider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if _, ok := p.objects[name]; ok {
		return types.NewErr("objects of type %s cannot be created in a rule", name)
	}
	return p.base.NewValue(name, fields)
}

// declare returns the options that declare self (and oldSelf, an
// optional of it with optionalOldSelf) typed as dt.
func declare(dt *declType, optionalOldSelf bool) cel.EnvOption {
	ts := &typeSet{objects: map[string]*objectDecl{}}
	self := ts.celType(dt, selfTypeName())
	old := self
	if optionalOldSelf {
		old = cel.OptionalType(self)
	}
	return func(e *cel.Env) (*cel.Env, error) {
		e, err := cel.CustomTypeProvider(&provider{base: e.CELTypeProvider(), objects: ts.objects})(e)
		if err != nil {
			return nil, err
		}
		e, err = cel.Variable(selfVar, self)(e)
		if err != nil {
			return nil, err
		}
		return cel.Variable(oldSelfVar, old)(e)
	}
}
