// Package registry owns what the server knows about each resource it
// serves and the generic store that serves them. A Resource is a
// registration: names, scope, subresources and a Strategy; the Store runs
// every verb for any Resource over a storage.Interface without knowing the
// Go type behind it. Built-in resources register themselves from the
// per-group packages below this one; resources registered at run time use
// the same types.
package registry

import (
	"time"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/storage"
)

// Strategy holds the per-resource rules the generic store applies on
// writes. Objects are the resource's served type.
type Strategy interface {
	// PrepareForCreate clears what a client may not set on create, such
	// as status.
	PrepareForCreate(obj runtime.Object)
	// PrepareForUpdate carries over from old what this endpoint may not
	// change (status on the main resource, spec on /status) and bumps
	// metadata.generation when the spec changed.
	PrepareForUpdate(obj, old runtime.Object)
	// Default fills unset fields with their defaults. It runs on every
	// write, after decoding, as kube's defaulting does.
	Default(obj runtime.Object)
	// Validate checks a new object; metadata is validated by the store.
	Validate(obj runtime.Object) field.ErrorList
	// ValidateUpdate checks a change; metadata is validated by the store.
	ValidateUpdate(obj, old runtime.Object) field.ErrorList
	// AllowCreateOnUpdate reports whether PUT of a missing object creates it.
	AllowCreateOnUpdate() bool
}

// WarningStrategy is implemented by strategies that advise on a write
// that succeeds, such as a name that makes surprising pod names. The texts
// go back to the client as Warning headers.
type WarningStrategy interface {
	WarningsOnCreate(obj runtime.Object) []string
	WarningsOnUpdate(obj, old runtime.Object) []string
}

// DeletionStrategy is implemented by strategies that keep an object around
// after a delete request for reasons other than metadata.finalizers, such
// as a namespace's spec.finalizers.
type DeletionStrategy interface {
	// PrepareForDelete is called on the first delete request. It may change
	// obj (for example set a phase) and reports whether obj must be kept,
	// with deletionTimestamp set, instead of removed.
	PrepareForDelete(obj runtime.Object) (keep bool)
}

// Conversion maps a served version onto the type it is stored as, for
// resources served in more than one group that share one storage (events).
type Conversion struct {
	// StorageCodec encodes the stored type.
	StorageCodec storage.Codec
	ToStorage    func(obj runtime.Object) (runtime.Object, error)
	FromStorage  func(obj runtime.Object) (runtime.Object, error)
}

// Resource is one served resource of one group/version.
type Resource struct {
	// GroupVersionKind of the served objects; the list kind is Kind+"List".
	schema.GroupVersionKind
	Plural     string
	Singular   string
	ShortNames []string
	Categories []string
	Namespaced bool

	// New returns an empty object of the served type; NewList an empty list.
	New     func() runtime.Object
	NewList func() runtime.Object
	// Codec encodes objects for storage.
	Codec storage.Codec

	Strategy Strategy
	// Subresources maps a subresource name ("status") to the strategy that
	// applies to writes through it. Subresources support get, update and
	// patch.
	Subresources map[string]Strategy

	// StorageResource names the key segment under the storage prefix;
	// empty means Plural.
	StorageResource string
	// Conversion is set when the served type differs from the stored one.
	Conversion *Conversion

	// SelectableFields returns the fields a fieldSelector may use beyond
	// metadata.name and metadata.namespace, on the stored type.
	SelectableFields func(obj runtime.Object) fields.Set

	// NameValidation checks metadata.name; nil means a DNS subdomain.
	NameValidation apivalidation.ValidateNameFunc
	// ReturnDeletedObject makes a delete answer with the deleted object
	// instead of a Success Status.
	ReturnDeletedObject bool
	// OrphanByDefault makes a delete that names no propagation policy
	// orphan the object's dependents, as kube keeps doing for batch/v1
	// Jobs for compatibility; otherwise the garbage collector deletes them
	// in the background.
	OrphanByDefault bool

	// Table defines the columns of the Table representation; nil means Name
	// and Created At.
	Table *TableSpec

	// Verbs overrides the served verbs; empty means all of them.
	Verbs []string
}

// GroupResource names the resource as errors do ("cronjobs.batch").
func (r *Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Plural}
}

// ListGVK is the kind of the resource's lists.
func (r *Resource) ListGVK() schema.GroupVersionKind {
	return r.GroupVersion().WithKind(r.Kind + "List")
}

// DefaultVerbs are the verbs of a resource that sets no Verbs.
var DefaultVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// ServedVerbs returns the verbs the resource serves.
func (r *Resource) ServedVerbs() []string {
	if len(r.Verbs) > 0 {
		return r.Verbs
	}
	return DefaultVerbs
}

// Serves reports whether verb is served.
func (r *Resource) Serves(verb string) bool {
	for _, v := range r.ServedVerbs() {
		if v == verb {
			return true
		}
	}
	return false
}

// StorageCodec encodes and decodes the resource's stored objects.
// Decoding applies the served type's defaults, as kube's decoder does when
// it reads from etcd, so that an object stored before a default existed
// (or by a server that defaults later, such as a Job's labels) reads as it
// would have been written.
func (r *Resource) StorageCodec() storage.Codec {
	if r.Conversion != nil {
		return r.Conversion.StorageCodec
	}
	return defaultingCodec{Codec: r.Codec, strategy: r.Strategy}
}

type defaultingCodec struct {
	storage.Codec
	strategy Strategy
}

func (c defaultingCodec) Decode(data []byte) (runtime.Object, error) {
	obj, err := c.Codec.Decode(data)
	if err != nil {
		return nil, err
	}
	c.strategy.Default(obj)
	return obj, nil
}

func (r *Resource) storageResource() string {
	if r.StorageResource != "" {
		return r.StorageResource
	}
	return r.Plural
}

// TableSpec defines a resource's Table columns.
type TableSpec struct {
	Columns []metav1.TableColumnDefinition
	// Cells returns one row's cells, in column order, for an object of the
	// served type; now is when the table is rendered (for ages).
	Cells func(obj runtime.Object, now time.Time) []interface{}
}
