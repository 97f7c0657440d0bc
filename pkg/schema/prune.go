package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
)

// Prune fits obj, the JSON form of an object of st's root type, to the
// schema, as kube fits a custom resource: fields the schema does not name
// are removed, unless an enclosing schema preserves unknown fields; the
// apiVersion and kind of the root and of embedded resources are kept; the
// root's metadata keeps only ObjectMeta's fields. It returns the paths of
// the removed fields, sorted, as kube names them in warnings and errors
// ("spec.items[0].size", "metadata.colour"). Metadata that is not
// ObjectMeta at all (labels that are not a map) is an error.
func (st *Structural) Prune(obj map[string]interface{}) ([]string, error) {
	p := &pruner{st: st}
	if md, ok := obj["metadata"]; ok {
		if err := p.objectMeta(obj, md); err != nil {
			return nil, err
		}
	}
	p.object(obj, st.Resolve(st.Root), true)
	sort.Strings(p.unknown)
	return p.unknown, nil
}

type pruner struct {
	st      *Structural
	path    []string
	unknown []string
}

// objectMeta replaces the root's metadata with its ObjectMeta form,
// recording the fields ObjectMeta does not have.
func (p *pruner) objectMeta(obj map[string]interface{}, md interface{}) error {
	data, err := json.Marshal(md)
	if err != nil {
		return err
	}
	var m metav1.ObjectMeta
	strict, err := sigsjson.UnmarshalStrict(data, &m, sigsjson.DisallowUnknownFields)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	for _, e := range strict {
		var fe sigsjson.FieldError
		if errors.As(e, &fe) {
			p.unknown = append(p.unknown, "metadata."+fe.FieldPath())
		}
	}
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&m)
	if err != nil {
		return err
	}
	obj["metadata"] = out
	return nil
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
	resource := root || (s != nil && s.EmbeddedResource)
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
