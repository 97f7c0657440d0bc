package schema

import (
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
)

// Prune fits obj, the JSON form of an object of st's root type, to the
// schema, as kube fits a custom resource: fields the schema does not name
// are removed, unless an enclosing schema preserves unknown fields or st
// keeps them all (KeepUnknownFields); the apiVersion and kind of the root and of embedded resources are kept; the
// metadata of the root and of embedded resources keeps only ObjectMeta's
// fields (an embedded one loses a null creationTimestamp too). It returns
// the paths of the removed fields as kube names them in warnings and
// errors ("spec.items[0].size", "metadata.colour"), in kube's order: the
// root's metadata, then the fields the schema does not name, then the
// metadata of embedded resources, each part sorted. Root metadata that is
// not ObjectMeta (labels that are not a map) is an error in json's words;
// an embedded resource's is a *field.Error at its path, as is an
// apiVersion or kind of one that is not a string.
func (st *Structural) Prune(obj map[string]interface{}) ([]string, error) {
	return st.prune(obj, true)
}

// PruneStored prunes an object read from storage as Prune does, but
// keeps the root's metadata as it is: it was fitted to ObjectMeta when
// the object was written (by this server or kube-apiserver), and reading
// it anew costs more than the rest together.
func (st *Structural) PruneStored(obj map[string]interface{}) error {
	_, err := st.prune(obj, false)
	return err
}

func (st *Structural) prune(obj map[string]interface{}, rootMeta bool) ([]string, error) {
	p := &pruner{st: st}
	var meta []string
	if md, ok := obj["metadata"]; ok && rootMeta {
		out, unknown, err := coerceObjectMeta(md, "metadata")
		if err != nil {
			return nil, err
		}
		obj["metadata"], meta = out, unknown
	}
	if st.KeepUnknownFields {
		// nothing is pruned, but embedded resources are fitted
		p.embedded = true
	} else {
		p.object(obj, st.Resolve(st.Root), true)
	}
	sort.Strings(meta)
	sort.Strings(p.unknown)
	meta = append(meta, p.unknown...)
	if !p.embedded {
		return meta, nil
	}
	// Embedded resources are coerced after pruning, as kube does, so
	// that what pruning removed is not looked at.
	p.path = p.path[:0]
	if err := p.coerce(obj, st.Resolve(st.Root), nil); err != nil {
		return nil, err
	}
	sort.Strings(p.embeddedUnknown)
	return append(meta, p.embeddedUnknown...), nil
}

type pruner struct {
	st      *Structural
	path    []string
	unknown []string
	// embedded says that an embedded resource was met; embeddedUnknown
	// are the fields its metadata lost.
	embedded        bool
	embeddedUnknown []string
}

// coerceObjectMeta returns md as ObjectMeta's JSON form, and the paths
// (under prefix) of the fields ObjectMeta does not have.
func coerceObjectMeta(md interface{}, prefix string) (map[string]interface{}, []string, error) {
	data, err := json.Marshal(md)
	if err != nil {
		return nil, nil, err
	}
	var m metav1.ObjectMeta
	strict, err := sigsjson.UnmarshalStrict(data, &m, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, nil, err
	}
	var unknown []string
	for _, e := range strict {
		var fe sigsjson.FieldError
		if errors.As(e, &fe) {
			unknown = append(unknown, prefix+"."+fe.FieldPath())
		}
	}
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&m)
	if err != nil {
		return nil, nil, err
	}
	return out, unknown, nil
}

// value prunes x against s; s nil means nothing below x is known.
func (p *pruner) value(x interface{}, s *Schema) {
	s = p.st.Resolve(s)
	switch x := x.(type) {
	case map[string]interface{}:
		if s != nil && s.IntOrString {
			return
		}
		p.object(x, s, false)
	case []interface{}:
		var items *Schema
		if s != nil {
			items = s.Items
		}
		if s != nil && s.PreserveUnknownFields && items == nil {
			return
		}
		for i, v := range x {
			p.path = append(p.path, "["+strconv.Itoa(i)+"]")
			p.value(v, items)
			p.path = p.path[:len(p.path)-1]
		}
	}
}

// object prunes the fields of one object; root objects and embedded
// resources keep their apiVersion, kind and metadata as they are.
func (p *pruner) object(x map[string]interface{}, s *Schema, root bool) {
	embedded := s != nil && s.EmbeddedResource && !root
	p.embedded = p.embedded || embedded
	resource := root || embedded
	for k, v := range x {
		if resource && (k == "apiVersion" || k == "kind" || k == "metadata") {
			continue
		}
		var prop *Schema
		if s != nil {
			if prop = s.Properties[k]; prop == nil {
				prop = s.AdditionalProperties
			}
		}
		p.path = append(p.path, k)
		switch {
		case prop != nil:
			p.value(v, prop)
		case s != nil && s.PreserveUnknownFields:
		default:
			p.unknown = append(p.unknown, p.pathString())
			delete(x, k)
		}
		p.path = p.path[:len(p.path)-1]
	}
}

// coerce checks and fits the apiVersion, kind and metadata of the
// embedded resources in x (of schema s, at fp); the first problem, in
// the order of the keys, is the error.
func (p *pruner) coerce(x interface{}, s *Schema, fp *field.Path) error {
	s = p.st.Resolve(s)
	if s == nil {
		return nil
	}
	switch x := x.(type) {
	case map[string]interface{}:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if fp != nil && s.EmbeddedResource {
				if err := p.coerceResourceField(x, k, fp); err != nil {
					return err
				}
			}
			p.path = append(p.path, k)
			var err error
			if prop, ok := s.Properties[k]; ok {
				err = p.coerce(x[k], prop, child(fp, k))
			} else if s.AdditionalProperties != nil {
				err = p.coerce(x[k], s.AdditionalProperties, key(fp, k))
			}
			p.path = p.path[:len(p.path)-1]
			if err != nil {
				return err
			}
		}
	case []interface{}:
		for i, v := range x {
			p.path = append(p.path, "["+strconv.Itoa(i)+"]")
			// fp is set: the root is an object.
			err := p.coerce(v, s.Items, fp.Index(i))
			p.path = p.path[:len(p.path)-1]
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// coerceResourceField fits field k of the embedded resource x at fp.
func (p *pruner) coerceResourceField(x map[string]interface{}, k string, fp *field.Path) error {
	switch k {
	case "apiVersion", "kind":
		if _, ok := x[k].(string); !ok {
			return field.Invalid(fp.Child(k), x[k], "must be a string")
		}
	case "metadata":
		p.path = append(p.path, k)
		out, unknown, err := coerceObjectMeta(x[k], p.pathString())
		p.path = p.path[:len(p.path)-1]
		if err != nil {
			return field.Invalid(fp.Child(k), x[k], err.Error())
		}
		if out["creationTimestamp"] == nil {
			delete(out, "creationTimestamp")
		}
		x[k] = out
		p.embeddedUnknown = append(p.embeddedUnknown, unknown...)
	}
	return nil
}

func (p *pruner) pathString() string {
	var b strings.Builder
	for i, seg := range p.path {
		if i > 0 && !strings.HasPrefix(seg, "[") {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}
