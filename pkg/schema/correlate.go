package schema

import (
	"fmt"
	"strings"
)

// CorrelateMapList returns how the items of a list-type map list of
// schema s find their counterpart in old, the list before an update, as
// kube pairs them (for transition rules and ratcheting): by their key
// fields, a key an item lacks counting with its default. An item whose
// keys are not all there, or not all scalars, has none; of old items
// with the same keys the first counts. For other lists, and when old is
// not a list, no item has a counterpart.
func (st *Structural) CorrelateMapList(s *Schema, old interface{}) func(item interface{}) interface{} {
	none := func(interface{}) interface{} { return nil }
	ol, _ := old.([]interface{})
	items := st.Resolve(s.Items)
	if s.ListType != "map" || len(s.ListMapKeys) == 0 || len(ol) == 0 || items == nil {
		return none
	}
	keyOf := func(item interface{}) (string, bool) {
		m, ok := item.(map[string]interface{})
		if !ok {
			return "", false
		}
		var b strings.Builder
		for _, k := range s.ListMapKeys {
			v, ok := m[k]
			if !ok {
				p := st.Resolve(items.Properties[k])
				if p == nil || p.Default == nil {
					return "", false
				}
				v = p.Default
			}
			switch v.(type) {
			case map[string]interface{}, []interface{}:
				return "", false
			}
			fmt.Fprintf(&b, "%T:%v\x00", v, v)
		}
		return b.String(), true
	}
	index := make(map[string]interface{}, len(ol))
	for _, o := range ol {
		if k, ok := keyOf(o); ok {
			if _, dup := index[k]; !dup {
				index[k] = o
			}
		}
	}
	return func(item interface{}) interface{} {
		k, ok := keyOf(item)
		if !ok {
			return nil
		}
		return index[k]
	}
}
