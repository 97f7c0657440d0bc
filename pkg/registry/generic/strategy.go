package generic

import (
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultStrategy is a Strategy with no rules of its own: nothing is
// cleared, carried over or validated beyond metadata. Resource strategies
// embed it and override what they need.
type DefaultStrategy struct{}

func (DefaultStrategy) PrepareForCreate(runtime.Object)                    {}
func (DefaultStrategy) PrepareForUpdate(_, _ runtime.Object)               {}
func (DefaultStrategy) Validate(runtime.Object) field.ErrorList            { return nil }
func (DefaultStrategy) ValidateUpdate(_, _ runtime.Object) field.ErrorList { return nil }
func (DefaultStrategy) AllowCreateOnUpdate() bool                          { return false }

// The status split works on the top-level fields of an object, by their
// JSON names, for Go types and unstructured objects alike: "status" is
// the status, "metadata" the object's own, and everything else (a spec,
// or a custom resource's fields) what the main resource writes.
const statusField, metadataField = "status", "metadata"

func specSide(name string) bool {
	return name != statusField && name != metadataField && name != "apiVersion" && name != "kind"
}

// SpecStatusStrategy is the main-resource strategy of a type with a
// status: clients write everything but the status, which is kept from the
// stored object, and metadata.generation starts at 1 and counts changes
// outside metadata and status (kinds without this strategy leave
// generation to their clients, as kube does).
type SpecStatusStrategy struct{ DefaultStrategy }

func (SpecStatusStrategy) PrepareForCreate(obj runtime.Object) {
	clearField(obj, statusField)
	if m, err := meta.Accessor(obj); err == nil {
		m.SetGeneration(1)
	}
}

func (SpecStatusStrategy) PrepareForUpdate(obj, old runtime.Object) {
	carryOver(obj, old, func(name string) bool { return name == statusField })
	if differ(obj, old, specSide) {
		if m, err := meta.Accessor(obj); err == nil {
			m.SetGeneration(m.GetGeneration() + 1)
		}
	}
}

// StatusStrategy is the strategy of a /status subresource: only the
// status changes; everything else, and the metadata a status writer may
// not touch, is kept from the stored object.
type StatusStrategy struct {
	DefaultStrategy
	// ValidateStatus checks the new status; nil accepts any.
	ValidateStatus func(obj, old runtime.Object) field.ErrorList
}

func (s StatusStrategy) PrepareForUpdate(obj, old runtime.Object) {
	carryOver(obj, old, specSide)
	ResetObjectMetaForStatus(obj, old)
}

func (s StatusStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	if s.ValidateStatus == nil {
		return nil
	}
	return s.ValidateStatus(obj, old)
}

// ResetObjectMetaForStatus keeps the metadata that only the main resource
// may change.
func ResetObjectMetaForStatus(obj, old runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	o, err := meta.Accessor(old)
	if err != nil {
		return
	}
	m.SetDeletionTimestamp(o.GetDeletionTimestamp())
	m.SetGeneration(o.GetGeneration())
	m.SetLabels(o.GetLabels())
	m.SetAnnotations(o.GetAnnotations())
	m.SetFinalizers(o.GetFinalizers())
	m.SetOwnerReferences(o.GetOwnerReferences())
}

// carryOver sets the top-level fields of obj for which take holds to
// their values in old (removing them where old has none).
func carryOver(obj, old runtime.Object, take func(name string) bool) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		o := old.(*unstructured.Unstructured)
		for k := range u.Object {
			if _, inOld := o.Object[k]; take(k) && !inOld {
				delete(u.Object, k)
			}
		}
		for k, v := range o.Object {
			if take(k) {
				u.Object[k] = runtime.DeepCopyJSONValue(v)
			}
		}
		return
	}
	dst, src := reflect.ValueOf(obj).Elem(), reflect.ValueOf(old).Elem()
	eachField(dst.Type(), func(i int, name string) {
		if take(name) {
			dst.Field(i).Set(src.Field(i))
		}
	})
}

// differ reports whether obj and old differ in a top-level field for
// which consider holds.
func differ(obj, old runtime.Object, consider func(name string) bool) bool {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		o := old.(*unstructured.Unstructured)
		for _, m := range []map[string]interface{}{u.Object, o.Object} {
			for k := range m {
				if consider(k) && !equality.Semantic.DeepEqual(u.Object[k], o.Object[k]) {
					return true
				}
			}
		}
		return false
	}
	a, b := reflect.ValueOf(obj).Elem(), reflect.ValueOf(old).Elem()
	different := false
	eachField(a.Type(), func(i int, name string) {
		if consider(name) && !different {
			different = !equality.Semantic.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface())
		}
	})
	return different
}

// clearField removes the top-level field name of obj.
func clearField(obj runtime.Object, name string) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		delete(u.Object, name)
		return
	}
	v := reflect.ValueOf(obj).Elem()
	eachField(v.Type(), func(i int, n string) {
		if n == name {
			v.Field(i).Set(reflect.Zero(v.Field(i).Type()))
		}
	})
}

// eachField calls f with the index and JSON name of each field of struct
// type t that is not inlined (TypeMeta's apiVersion and kind are).
func eachField(t reflect.Type, f func(i int, name string)) {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || name == "-" || strings.Contains(opts, "inline") || (sf.Anonymous && name == "") {
			continue
		}
		f(i, name)
	}
}
