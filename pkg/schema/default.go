package schema

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Default sets the defaults of st in obj, a custom object as decoded
// JSON, as kube defaults a custom resource: a missing field, or a null
// one its schema does not make nullable, gets a deep copy of its default,
// and then the defaults below it; a field with no default that is
// missing stays missing, so nothing under it is created. Entries of
// arrays and of maps (additionalProperties) that are null and not
// nullable take their schema's default. A null field or map value that
// is not nullable and has no default is removed, as kube removes it
// before validation: it then counts as missing, not as a wrong type.
func (st *Structural) Default(obj map[string]interface{}) {
	st.defaultValue(obj, st.Resolve(st.Root))
}

func (st *Structural) defaultValue(x interface{}, s *Schema) {
	if s == nil {
		return
	}
	switch x := x.(type) {
	case map[string]interface{}:
		for k, ps := range s.Properties {
			ps = st.Resolve(ps)
			if ps.Default == nil {
				continue
			}
			if v, ok := x[k]; !ok || (v == nil && !ps.Nullable) {
				x[k] = runtime.DeepCopyJSONValue(ps.Default)
			}
		}
		ap := st.Resolve(s.AdditionalProperties)
		for k, v := range x {
			ps := st.Resolve(s.Properties[k])
			if ps == nil {
				ps = ap
			}
			if ps == nil {
				continue
			}
			if v == nil && !ps.Nullable {
				if ps.Default == nil {
					delete(x, k)
					continue
				}
				x[k] = runtime.DeepCopyJSONValue(ps.Default)
			}
			st.defaultValue(x[k], ps)
		}
	case []interface{}:
		items := st.Resolve(s.Items)
		if items == nil {
			return
		}
		for i, v := range x {
			if v == nil && !items.Nullable && items.Default != nil {
				x[i] = runtime.DeepCopyJSONValue(items.Default)
			}
			st.defaultValue(x[i], items)
		}
	}
}

// ValidateDefaults checks every default in st as kube checks a CRD's:
// a default must hold no field its schema would prune ("must not have
// unknown fields"), and must then be a valid value of its schema: the
// apiVersion, kind and metadata of the resources it embeds first, then
// the value validations, junctors included. The errors are at the
// default's path below fldPath
// (fldPath.properties[spec].properties[replicas].default). A default
// valid so far must then satisfy the validation rules of its schema and
// those below, which rules evaluates (nil: none). Like kube it looks
// through properties and items, not additionalProperties.
func ValidateDefaults(st *Structural, fldPath *field.Path, rules DefaultRules) field.ErrorList {
	var errs field.ErrorList
	root := st.Resolve(st.Root)
	st.validateDefaults(root, root, fldPath, rules, &errs)
	return errs
}

// DefaultRules evaluates the validation rules of s, a schema of st, and
// of the schemas below it on val, the default of s; resource says s is a resource root
// (the schema's root or an embedded resource), whose rules see its
// apiVersion, kind and metadata. The errors are below path, the path of
// the default.
type DefaultRules func(st *Structural, s *Schema, resource bool, path *field.Path, val interface{}) field.ErrorList

func (st *Structural) validateDefaults(root, s *Schema, fldPath *field.Path, rules DefaultRules, errs *field.ErrorList) {
	if s == nil {
		return
	}
	if s.Default != nil {
		base := fldPath.Child("default")
		p := &pruner{st: st}
		pruned := runtime.DeepCopyJSONValue(s.Default)
		p.value(pruned, s)
		if len(p.unknown) > 0 {
			*errs = append(*errs, field.Invalid(base, s.Default, "must not have unknown fields"))
		}
		v := &validator{st: st, defaults: true}
		found := v.embeddedIn(nil, s.Default, s, s.EmbeddedResource)
		if len(found) == 0 {
			found = v.schema(nil, s.Default, s, nil).errs
		}
		for _, err := range found {
			*errs = append(*errs, below(base, err))
		}
		if len(found) == 0 && rules != nil {
			*errs = append(*errs, rules(st, s, s == root || s.EmbeddedResource, base, s.Default)...)
		}
	}
	if s.Items != nil {
		st.validateDefaults(root, st.Resolve(s.Items), fldPath.Child("items"), rules, errs)
	}
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		st.validateDefaults(root, st.Resolve(s.Properties[k]), fldPath.Child("properties").Key(k), rules, errs)
	}
}

// below moves err, found in a value validated on its own, below base, the
// path of that value.
func below(base *field.Path, err *field.Error) *field.Error {
	switch {
	case err.Field == "<nil>" || err.Field == "":
		err.Field = base.String()
	case strings.HasPrefix(err.Field, "["):
		err.Field = base.String() + err.Field
	default:
		err.Field = base.String() + "." + err.Field
	}
	return err
}
