package registry

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultStrategy is a Strategy with no rules of its own: nothing is
// cleared, carried over, defaulted or validated beyond metadata. Resource
// strategies embed it and override what they need.
type DefaultStrategy struct{}

func (DefaultStrategy) PrepareForCreate(runtime.Object)                    {}
func (DefaultStrategy) PrepareForUpdate(_, _ runtime.Object)               {}
func (DefaultStrategy) Default(runtime.Object)                             {}
func (DefaultStrategy) Validate(runtime.Object) field.ErrorList            { return nil }
func (DefaultStrategy) ValidateUpdate(_, _ runtime.Object) field.ErrorList { return nil }
func (DefaultStrategy) AllowCreateOnUpdate() bool                          { return false }

// SpecStatusStrategy is the main-resource strategy of a type with Spec and
// Status fields: clients write the spec, the status is kept from the stored
// object, and metadata.generation starts at 1 and counts spec changes
// (kinds without this strategy leave generation to their clients, as kube
// does).
type SpecStatusStrategy struct{ DefaultStrategy }

func (SpecStatusStrategy) PrepareForCreate(obj runtime.Object) {
	status := structField(obj, "Status")
	status.Set(reflect.Zero(status.Type()))
	if m, err := meta.Accessor(obj); err == nil {
		m.SetGeneration(1)
	}
}

func (SpecStatusStrategy) PrepareForUpdate(obj, old runtime.Object) {
	structField(obj, "Status").Set(structField(old, "Status"))
	if !equality.Semantic.DeepEqual(structField(obj, "Spec").Interface(), structField(old, "Spec").Interface()) {
		m, _ := meta.Accessor(obj)
		m.SetGeneration(m.GetGeneration() + 1)
	}
}

// StatusStrategy is the strategy of a /status subresource: only status
// changes, the spec and the metadata a status writer may not touch are
// kept from the stored object. Main supplies defaulting.
type StatusStrategy struct {
	Main Strategy
	// ValidateStatus checks the new status; nil accepts any.
	ValidateStatus func(obj, old runtime.Object) field.ErrorList
}

func (s StatusStrategy) PrepareForCreate(runtime.Object) {}

func (s StatusStrategy) PrepareForUpdate(obj, old runtime.Object) {
	structField(obj, "Spec").Set(structField(old, "Spec"))
	ResetObjectMetaForStatus(obj, old)
}

func (s StatusStrategy) Default(obj runtime.Object) { s.Main.Default(obj) }

func (s StatusStrategy) Validate(obj runtime.Object) field.ErrorList { return nil }

func (s StatusStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	if s.ValidateStatus == nil {
		return nil
	}
	return s.ValidateStatus(obj, old)
}

func (s StatusStrategy) AllowCreateOnUpdate() bool { return false }

// ResetObjectMetaForStatus keeps the metadata that only the main resource
// may change.
func ResetObjectMetaForStatus(obj, old runtime.Object) {
	m, _ := meta.Accessor(obj)
	o, _ := meta.Accessor(old)
	m.SetDeletionTimestamp(o.GetDeletionTimestamp())
	m.SetGeneration(o.GetGeneration())
	m.SetLabels(o.GetLabels())
	m.SetAnnotations(o.GetAnnotations())
	m.SetFinalizers(o.GetFinalizers())
	m.SetOwnerReferences(o.GetOwnerReferences())
}

// structField returns the settable field name of the struct obj points to.
// It panics when the type has no such field: registrations are checked by
// the registry's tests.
func structField(obj runtime.Object, name string) reflect.Value {
	f := reflect.ValueOf(obj).Elem().FieldByName(name)
	if !f.IsValid() {
		panic("registry: " + reflect.TypeOf(obj).String() + " has no field " + name)
	}
	return f
}
