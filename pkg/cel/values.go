package cel

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/cronplane/cronplane/pkg/schema"
)

// vnode is a schema node as rules read values of it: the schema (at a
// resource root with apiVersion, kind and metadata's name and
// generateName, which is all rules see of metadata), its children, and
// the rules compiled at it.
type vnode struct {
	s          *schema.Schema
	orig       *schema.Schema // s as the definition declares it
	props      map[string]*vnode
	byEscaped  map[string]string // escaped name -> property
	items      *vnode
	additional *vnode
	// mapKeys are a map list's keys as kube looks them up in an item:
	// escaped.
	mapKeys []string

	rules     []*compiledRule
	walkProps []string // the properties to walk into, sorted
	walk      bool     // rules here or below
	resource  bool     // a resource root
}

// buildNodes mirrors st's schema from its root.
func buildNodes(st *schema.Structural) *vnode {
	b := &nodeBuilder{st: st, seen: map[nodeKey]*vnode{}}
	return b.node(st.Root, true)
}

type nodeKey struct {
	s        *schema.Schema
	resource bool
}

type nodeBuilder struct {
	st   *schema.Structural
	seen map[nodeKey]*vnode
}

func (b *nodeBuilder) node(s *schema.Schema, resource bool) *vnode {
	s = b.st.Resolve(s)
	if s == nil {
		return nil
	}
	key := nodeKey{s, resource}
	if n, ok := b.seen[key]; ok {
		return n
	}
	n := &vnode{s: s, orig: s, resource: resource}
	b.seen[key] = n
	if resource && !s.IntOrString {
		n.s = withTypeAndObjectMeta(s)
	}
	if len(n.s.Properties) > 0 {
		n.props = make(map[string]*vnode, len(n.s.Properties))
		n.byEscaped = make(map[string]string, len(n.s.Properties))
		for k, p := range n.s.Properties {
			ps := b.st.Resolve(p)
			n.props[k] = b.node(ps, ps != nil && ps.EmbeddedResource)
			if esc, ok := Escape(k); ok {
				n.byEscaped[esc] = k
			}
		}
	}
	if n.s.Items != nil {
		is := b.st.Resolve(n.s.Items)
		n.items = b.node(is, is != nil && is.EmbeddedResource)
	}
	if n.s.AdditionalProperties != nil {
		as := b.st.Resolve(n.s.AdditionalProperties)
		n.additional = b.node(as, as != nil && as.EmbeddedResource)
	}
	for _, k := range n.s.ListMapKeys {
		if esc, ok := Escape(k); ok {
			k = esc
		}
		n.mapKeys = append(n.mapKeys, k)
	}
	return n
}

// toVal is the CEL value of x, an unstructured value of node n: typed
// by the schema (formats byte, date, date-time and duration converted),
// objects, maps and lists wrapped and converted as rules read them.
func toVal(x interface{}, n *vnode) ref.Val {
	s := n.s
	if x == nil {
		if s.Nullable {
			return types.NullValue
		}
		return types.NewErr("invalid data, got null for schema with nullable=false")
	}
	if s.IntOrString {
		switch v := x.(type) {
		case string:
			return types.String(v)
		case int64:
			return types.Int(v)
		case int:
			return types.Int(v)
		case int32:
			return types.Int(v)
		}
		return types.NewErr("invalid data, expected XIntOrString value to be either a string or integer")
	}
	switch s.Type {
	case "object":
		m, ok := x.(map[string]interface{})
		if !ok {
			return types.NewErr("invalid data, expected a map for the provided schema with type=object")
		}
		switch {
		case s.EmbeddedResource || s.Properties != nil:
			return &mapVal{m: m, n: n, object: len(s.Properties) > 0, props: true}
		case n.additional != nil:
			return &mapVal{m: m, n: n}
		case s.PreserveUnknownFields:
			// no schema for any key: an empty object to rules
			return &mapVal{m: m, n: n}
		}
		return types.NewErr("invalid object type, expected either Properties or AdditionalProperties with Items with Schema")
	case "array":
		l, ok := x.([]interface{})
		if !ok {
			return types.NewErr("invalid data, expected an array for the provided schema with type=array")
		}
		if n.items == nil {
			return types.NewErr("invalid array type, expected Items with a non-empty Schema")
		}
		lv := &listVal{l: l, n: n}
		switch s.ListType {
		case "map":
			return &mapListVal{listVal: lv}
		case "set":
			return &setListVal{listVal: lv}
		case "", "atomic":
			return lv
		}
		return types.NewErr("invalid x-kubernetes-list-type, expected 'map', 'set' or 'atomic' but got %s", s.ListType)
	case "number":
		switch v := x.(type) {
		case float64:
			return types.Double(v)
		case int64:
			return types.Double(v)
		case int:
			return types.Double(v)
		case int32:
			return types.Double(v)
		case float32:
			return types.Double(v)
		}
		return types.NewErr("invalid data, expected float, got %T", x)
	case "integer":
		switch v := x.(type) {
		case int64:
			return types.Int(v)
		case int:
			return types.Int(v)
		case int32:
			return types.Int(v)
		}
		return types.NewErr("invalid data, expected int, got %T", x)
	case "string":
		str, ok := x.(string)
		if !ok {
			return types.NewErr("invalid data, expected string, got %T", x)
		}
		switch s.Format {
		case "duration":
			d, err := parseDuration(str)
			if err != nil {
				return types.NewErr("Invalid duration %s: %v", str, err)
			}
			return types.Duration{Duration: d}
		case "date":
			d, err := time.Parse("2006-01-02", str)
			if err != nil {
				return types.NewErr("Invalid date formatted string %s: %v", str, err)
			}
			return types.Timestamp{Time: d}
		case "date-time":
			d, err := parseDateTime(str)
			if err != nil {
				return types.NewErr("Invalid date-time formatted string %s: %v", str, err)
			}
			return types.Timestamp{Time: d}
		case "byte":
			b, err := decodeBase64(str)
			if err != nil {
				return types.NewErr("Invalid byte formatted string %s: %v", str, err)
			}
			return types.Bytes(b)
		}
		return types.String(str)
	case "boolean":
		b, ok := x.(bool)
		if !ok {
			return types.NewErr("invalid data, expected bool, got %T", x)
		}
		return types.Bool(b)
	case "":
		if s.PreserveUnknownFields {
			// no type: whatever the data is
			return types.DefaultTypeAdapter.NativeToValue(x)
		}
	}
	return types.NewErr("invalid type, expected object, array, number, integer, boolean or string")
}

func decodeBase64(s string) ([]byte, error) {
	buf := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(buf, []byte(s))
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// The layouts a date-time is read in, as OpenAPI's date-time format
// takes them.
var dateTimeLayouts = []string{
	"2006-01-02T15:04:05.000000Z07:00", "2006-01-02T15:04:05.000000Z0700",
	"2006-01-02T15:04:05.000Z07:00", "2006-01-02T15:04:05.000Z0700",
	time.RFC3339, time.RFC3339Nano,
	"2006-01-02T15:04:05", "2006-01-02T15:04Z", "2006-01-02T15:04", "2006-01-02 15:04:05",
}

func parseDateTime(s string) (time.Time, error) {
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	var last error
	for _, layout := range dateTimeLayouts {
		t, err := time.Parse(layout, s)
		if err == nil {
			return t, nil
		}
		last = err
	}
	return time.Time{}, last
}

var (
	durationPart  = regexp.MustCompile(`((\d+)\s*([A-Za-zµ]+))`)
	durationUnits = []struct {
		names []string // the last one is a prefix ("sec" for "seconds")
		unit  time.Duration
	}{
		{[]string{"ns", "nano"}, time.Nanosecond},
		{[]string{"us", "µs", "micro"}, time.Microsecond},
		{[]string{"ms", "milli"}, time.Millisecond},
		{[]string{"s", "sec"}, time.Second},
		{[]string{"m", "min"}, time.Minute},
		{[]string{"h", "hr", "hour"}, time.Hour},
		{[]string{"d", "day"}, 24 * time.Hour},
		{[]string{"w", "wk", "week"}, 7 * 24 * time.Hour},
	}
)

// parseDuration reads Go durations and the "3 days", "2w" forms the
// OpenAPI duration format takes.
func parseDuration(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	var d time.Duration
	ok := false
	for _, m := range durationPart.FindAllStringSubmatch(s, -1) {
		factor, err := strconv.Atoi(m[2])
		if err != nil {
			return 0, err
		}
		unit := strings.ToLower(strings.TrimSpace(m[3]))
		for _, u := range durationUnits {
			last := len(u.names) - 1
			for i, name := range u.names {
				if (i == last && strings.HasPrefix(unit, name)) || strings.EqualFold(name, unit) {
					ok = true
					d += time.Duration(factor) * u.unit
				}
			}
		}
	}
	if !ok {
		return 0, fmt.Errorf("unable to parse %s as duration", s)
	}
	return d, nil
}

// mapVal is an object (properties: fields by escaped name, a null field
// is absent) or a map (additionalProperties: entries by key).
type mapVal struct {
	m      map[string]interface{}
	n      *vnode
	props  bool // values are typed by properties
	object bool // keys are escaped field names
}

var (
	_ traits.Mapper = (*mapVal)(nil)
	_ traits.Lister = (*listVal)(nil)
)

func (v *mapVal) child(k string) *vnode {
	if v.props {
		return v.n.props[k]
	}
	return v.n.additional
}

func (v *mapVal) ConvertToNative(typeDesc reflect.Type) (interface{}, error) {
	if typeDesc.Kind() == reflect.Map {
		return v.m, nil
	}
	return nil, fmt.Errorf("type conversion error from '%s' to '%s'", v.Type(), typeDesc)
}

func (v *mapVal) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.MapType:
		return v
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", v.Type(), t)
}

func (v *mapVal) Equal(other ref.Val) ref.Val {
	om, ok := other.(traits.Mapper)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	if types.Int(len(v.m)) != om.Size() {
		return types.False
	}
	o, unstructured := other.(*mapVal)
	for _, k := range sortedKeys(v.m) {
		x := v.m[k]
		c := v.child(k)
		if c == nil {
			// a field without a schema: compared as data
			if !unstructured {
				return types.MaybeNoSuchOverloadErr(other)
			}
			if ox, ok := o.m[k]; ok && !equality.Semantic.DeepEqual(x, ox) {
				return types.False
			}
			continue
		}
		var ox ref.Val
		if unstructured {
			raw, ok := o.m[k]
			oc := o.child(k)
			if !ok || oc == nil {
				return types.False
			}
			ox = toVal(raw, oc)
		} else {
			key := k
			if v.object {
				key, _ = Escape(k)
			}
			var found bool
			if ox, found = om.Find(types.String(key)); !found {
				return types.False
			}
		}
		if eq := toVal(x, c).Equal(ox); eq != types.True {
			return eq
		}
	}
	return types.True
}

func (v *mapVal) Type() ref.Type     { return types.MapType }
func (v *mapVal) Value() interface{} { return v.m }
func (v *mapVal) Size() ref.Val      { return types.Int(len(v.m)) }
func (v *mapVal) Get(key ref.Val) ref.Val {
	if x, found := v.Find(key); found {
		return x
	}
	return types.ValOrErr(key, "no such key: %v", key)
}

func (v *mapVal) Contains(key ref.Val) ref.Val {
	x, found := v.Find(key)
	if x != nil && types.IsUnknownOrError(x) {
		return x
	}
	return types.Bool(found)
}

func (v *mapVal) Find(key ref.Val) (ref.Val, bool) {
	ks, ok := key.(types.String)
	if !ok {
		return types.MaybeNoSuchOverloadErr(key), true
	}
	k := string(ks)
	if v.object {
		name, ok := v.n.byEscaped[k]
		if !ok {
			return nil, false
		}
		k = name
	}
	x, ok := v.m[k]
	if !ok || (v.object && x == nil) {
		return nil, false
	}
	c := v.child(k)
	if c == nil {
		return nil, false
	}
	return toVal(x, c), true
}

func (v *mapVal) Iterator() traits.Iterator {
	keys := make([]ref.Val, 0, len(v.m))
	for _, k := range sortedKeys(v.m) {
		if v.child(k) == nil {
			continue
		}
		if v.object {
			if esc, ok := Escape(k); ok {
				k = esc
			}
		}
		keys = append(keys, types.String(k))
	}
	return &valIterator{vals: keys}
}

func sortedKeys(m map[string]interface{}) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// valIterator walks values already made.
type valIterator struct {
	baseIterator
	vals []ref.Val
	i    int
}

func (it *valIterator) HasNext() ref.Val { return types.Bool(it.i < len(it.vals)) }
func (it *valIterator) Next() ref.Val {
	if it.i >= len(it.vals) {
		return nil
	}
	v := it.vals[it.i]
	it.i++
	return v
}

// listIterator walks a list's items, converting each as it goes.
type listIterator struct {
	baseIterator
	l *listVal
	i int
}

func (it *listIterator) HasNext() ref.Val { return types.Bool(it.i < len(it.l.l)) }
func (it *listIterator) Next() ref.Val {
	if it.i >= len(it.l.l) {
		return nil
	}
	v := toVal(it.l.l[it.i], it.l.n.items)
	it.i++
	return v
}

// baseIterator is the ref.Val side of an iterator, which nothing reads.
type baseIterator struct{}

func (*baseIterator) ConvertToNative(reflect.Type) (interface{}, error) {
	return nil, fmt.Errorf("type conversion on iterators not supported")
}
func (*baseIterator) ConvertToType(ref.Type) ref.Val { return types.NewErr("no such overload") }
func (*baseIterator) Equal(ref.Val) ref.Val          { return types.NewErr("no such overload") }
func (*baseIterator) Type() ref.Type                 { return types.IteratorType }
func (*baseIterator) Value() interface{}             { return nil }

// listVal is a list: compared in order unless it is a set or map list.
type listVal struct {
	l []interface{}
	n *vnode
}

func (v *listVal) ConvertToNative(typeDesc reflect.Type) (interface{}, error) {
	if typeDesc.Kind() == reflect.Slice {
		if v.n.items.s.Type == "string" {
			// as strings, for functions that take a list of strings
			out := make([]string, 0, len(v.l))
			for _, e := range v.l {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("expected all elements to be of type string, but got %T", e)
				}
				out = append(out, s)
			}
			return out, nil
		}
		return v.l, nil
	}
	return nil, fmt.Errorf("type conversion error from '%s' to '%s'", v.Type(), typeDesc)
}

func (v *listVal) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.ListType:
		return v
	case types.TypeType:
		return types.ListType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", v.Type(), t)
}

func (v *listVal) Equal(other ref.Val) ref.Val {
	ol, ok := other.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	n := types.Int(len(v.l))
	if n != ol.Size() {
		return types.False
	}
	for i := types.Int(0); i < n; i++ {
		if eq := v.Get(i).Equal(ol.Get(i)); eq != types.True {
			return eq
		}
	}
	return types.True
}

func (v *listVal) Type() ref.Type     { return types.ListType }
func (v *listVal) Value() interface{} { return v.l }
func (v *listVal) Size() ref.Val      { return types.Int(len(v.l)) }

func (v *listVal) Get(idx ref.Val) ref.Val {
	i, ok := idx.(types.Int)
	if !ok {
		return types.ValOrErr(idx, "unsupported index: %v", idx)
	}
	if i < 0 || int(i) >= len(v.l) {
		return types.NewErr("index out of bounds: %v", idx)
	}
	return toVal(v.l[i], v.n.items)
}

func (v *listVal) Iterator() traits.Iterator { return &listIterator{l: v} }

func (v *listVal) Contains(x ref.Val) ref.Val {
	if types.IsUnknownOrError(x) {
		return x
	}
	var err ref.Val
	for _, e := range v.l {
		eq := toVal(e, v.n.items).Equal(x)
		b, ok := eq.(types.Bool)
		if !ok && err == nil {
			err = types.MaybeNoSuchOverloadErr(eq)
		}
		if b == types.True {
			return types.True
		}
	}
	if err != nil {
		return err
	}
	return types.False
}

// Add appends the other list's values to an atomic list.
func (v *listVal) Add(other ref.Val) ref.Val {
	ol, ok := other.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	out := append(make([]interface{}, 0, len(v.l)), v.l...)
	for it := ol.Iterator(); it.HasNext() == types.True; {
		out = append(out, it.Next().Value())
	}
	return &listVal{l: out, n: v.n}
}

// setListVal is an x-kubernetes-list-type: set list: equal to a list
// with the same elements in any order; + is a union.
type setListVal struct {
	*listVal
	set map[interface{}]struct{}
}

func (v *setListVal) elements() map[interface{}]struct{} {
	if v.set == nil {
		v.set = make(map[interface{}]struct{}, len(v.l))
		for _, e := range v.l {
			v.set[hashKey(e)] = struct{}{}
		}
	}
	return v.set
}

func (v *setListVal) Equal(other ref.Val) ref.Val {
	ol, ok := other.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	if types.Int(len(v.l)) != ol.Size() {
		return types.False
	}
	set := v.elements()
	for it := ol.Iterator(); it.HasNext() == types.True; {
		if _, ok := set[hashKey(it.Next().Value())]; !ok {
			return types.False
		}
	}
	return types.True
}

// Add keeps this list's elements in place and appends those of the
// other that it lacks, in their order.
func (v *setListVal) Add(other ref.Val) ref.Val {
	ol, ok := other.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	out := append(make([]interface{}, 0, len(v.l)), v.l...)
	seen := make(map[interface{}]struct{}, len(v.l))
	for k := range v.elements() {
		seen[k] = struct{}{}
	}
	for it := ol.Iterator(); it.HasNext() == types.True; {
		x := it.Next().Value()
		if _, ok := seen[hashKey(x)]; !ok {
			seen[hashKey(x)] = struct{}{}
			out = append(out, x)
		}
	}
	return &setListVal{listVal: &listVal{l: out, n: v.n}}
}

// mapListVal is an x-kubernetes-list-type: map list: equal to a list
// with equal items under the same keys in any order; + merges by key.
type mapListVal struct {
	*listVal
	byKey map[interface{}]interface{}
}

func (v *mapListVal) key(item interface{}) interface{} {
	m, ok := item.(map[string]interface{})
	if !ok {
		return fmt.Sprintf("\x00not an object: %T", item)
	}
	keys := v.n.mapKeys
	if len(keys) == 1 {
		return hashKey(m[keys[0]])
	}
	parts := make([]interface{}, len(keys))
	for i, k := range keys {
		parts[i] = m[k]
	}
	return fmt.Sprintf("%v", parts)
}

func (v *mapListVal) items() map[interface{}]interface{} {
	if v.byKey == nil {
		v.byKey = make(map[interface{}]interface{}, len(v.l))
		for _, e := range v.l {
			v.byKey[v.key(e)] = e
		}
	}
	return v.byKey
}

func (v *mapListVal) Equal(other ref.Val) ref.Val {
	ol, ok := other.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	if types.Int(len(v.l)) != ol.Size() {
		return types.False
	}
	byKey := v.items()
	for it := ol.Iterator(); it.HasNext() == types.True; {
		o := it.Next()
		mine, ok := byKey[v.key(o.Value())]
		if !ok {
			return types.False
		}
		if eq := toVal(mine, v.n.items).Equal(o); eq != types.True {
			return eq
		}
	}
	return types.True
}

// Add keeps this list's items in place, replaced by the other's items of
// the same key, and appends the other's items of new keys in order.
func (v *mapListVal) Add(other ref.Val) ref.Val {
	ol, ok := other.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	out := append(make([]interface{}, 0, len(v.l)), v.l...)
	at := make(map[interface{}]int, len(v.l))
	for i, e := range v.l {
		at[v.key(e)] = i
	}
	for it := ol.Iterator(); it.HasNext() == types.True; {
		x := it.Next().Value()
		k := v.key(x)
		if i, ok := at[k]; ok {
			out[i] = x
		} else {
			out = append(out, x)
		}
	}
	return &mapListVal{listVal: &listVal{l: out, n: v.n}}
}

// hashKey is x usable as a Go map key: scalars as they are, anything
// else by its printed form.
func hashKey(x interface{}) interface{} {
	switch x.(type) {
	case map[string]interface{}, []interface{}:
		return fmt.Sprintf("\x00%#v", x)
	}
	if x != nil && !reflect.TypeOf(x).Comparable() {
		return fmt.Sprintf("\x00%#v", x)
	}
	return x
}
