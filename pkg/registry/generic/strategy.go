package generic

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	cronschema "github.com/cronplane/cronplane/pkg/schema"
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

// The status split works on the top-level fields of an object, the
// properties of its schema's root (pkg/schema), for Go types and
// unstructured objects alike: "status" is the status, "metadata" the
// object's own, and everything else (a spec, or a custom resource's
// fields) what the main resource writes.
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
	cronschema.ClearField(obj, statusField)
	if m, err := meta.Accessor(obj); err == nil {
		m.SetGeneration(1)
	}
}

func (s SpecStatusStrategy) PrepareForUpdate(obj, old runtime.Object) {
	cronschema.CopyFields(obj, old, s.ResetsField)
	if cronschema.FieldsDiffer(obj, old, specSide) {
		if m, err := meta.Accessor(obj); err == nil {
			m.SetGeneration(m.GetGeneration() + 1)
		}
	}
}

func (SpecStatusStrategy) ResetsField(name string) bool { return name == statusField }

// StatusStrategy is the strategy of a /status subresource: the status is
// written and the spec side is kept from the stored object. Metadata is
// written as through the main resource (labels, annotations, finalizers,
// owner references), as kube's status strategies of built-in kinds let
// it be, unless KeepMetadata.
type StatusStrategy struct {
	DefaultStrategy
	// KeepMetadata keeps the metadata from the stored object too, all but
	// managedFields, which record this write: as kube does for custom
	// resources, whose status writers change nothing but the status.
	KeepMetadata bool
	// ValidateStatus checks the new status; nil accepts any.
	ValidateStatus func(obj, old runtime.Object) field.ErrorList
}

func (s StatusStrategy) ResetsField(name string) bool {
	return specSide(name) || (s.KeepMetadata && name == metadataField)
}

func (s StatusStrategy) PrepareForUpdate(obj, old runtime.Object) {
	if m, err := meta.Accessor(obj); err == nil {
		// managedFields record this write, whatever else is kept.
		defer m.SetManagedFields(m.GetManagedFields())
	}
	cronschema.CopyFields(obj, old, s.ResetsField)
}

func (s StatusStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	if s.ValidateStatus == nil {
		return nil
	}
	return s.ValidateStatus(obj, old)
}

// GracefulDeleteStrategy is implemented by strategies whose objects an
// agent elsewhere must let go of before they are removed, such as a pod
// running on a node. A first delete request sets deletionTimestamp to now
// plus the grace period and deletionGracePeriodSeconds to it; a later one
// may only shorten it; once the period is 0 (and no finalizers are left)
// the object is removed. Watchers see the object marked, then deleted.
type GracefulDeleteStrategy interface {
	// GracePeriod returns the seconds obj is given on a first delete
	// request that asked for requested (nil when it named none, never
	// negative); 0 removes it at once.
	GracePeriod(obj runtime.Object, requested *int64) int64
}
