package generic

import (
	"context"
	"fmt"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

// Strategy holds the per-resource rules the generic store applies on
// writes through one endpoint. Objects are the resource's served type,
// decoded and defaulted.
type Strategy interface {
	// PrepareForCreate clears what a client may not set on create, such
	// as status, and fills what the server generates.
	PrepareForCreate(obj runtime.Object)
	// PrepareForUpdate carries over from old what this endpoint may not
	// change (status on the main resource, spec on /status) and bumps
	// metadata.generation when the spec changed.
	PrepareForUpdate(obj, old runtime.Object)
	// Validate checks a new object; metadata is validated by the store.
	Validate(obj runtime.Object) field.ErrorList
	// ValidateUpdate checks a change; metadata is validated by the store.
	ValidateUpdate(obj, old runtime.Object) field.ErrorList
	// AllowCreateOnUpdate reports whether PUT of a missing object creates it.
	AllowCreateOnUpdate() bool
}

// FieldResetter is implemented by strategies that keep some top-level
// fields of an object from the stored one on update (status through the
// main resource, the spec through /status). The field manager reads the
// same answer: nobody writing through that endpoint owns those fields.
type FieldResetter interface {
	// ResetsField reports whether the endpoint keeps the top-level field
	// name from the stored object.
	ResetsField(name string) bool
}

// ContextUpdateValidator is implemented by strategies whose update
// validation talks to the client, such as a custom resource's, which
// warns of the rule violations that validation ratcheting forgives,
// whether or not the update is valid. The store calls
// ValidateUpdateContext with the request's context in place of
// ValidateUpdate.
type ContextUpdateValidator interface {
	ValidateUpdateContext(ctx context.Context, obj, old runtime.Object) field.ErrorList
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

// Resource is the registration of a resource the generic store serves:
// its description to the endpoints, and how it is stored and checked.
type Resource struct {
	rest.Resource

	// Codec encodes objects for storage.
	Codec    storage.Codec
	Strategy Strategy
	// Subresources maps a subresource name ("status") to the strategy that
	// applies to writes through it. Subresources serve get, update and
	// patch.
	Subresources map[string]Strategy

	// StorageResource names the key segment under the storage prefix;
	// empty means Plural.
	StorageResource string
	// Conversion is set when the served type differs from the stored one.
	Conversion *Conversion
	// StorageGVK is the kind objects are stored as, when it is not the
	// served one (events.k8s.io Events are stored as core Events).
	StorageGVK schema.GroupVersionKind

	// SelectableFields returns the fields a fieldSelector may use beyond
	// metadata.name and metadata.namespace, on the stored type.
	SelectableFields func(obj runtime.Object) fields.Set
	// FieldLabels, when set, is the kind's field label conversion, as kube
	// has for some kinds: it maps a fieldSelector label, as the served
	// version names it, to the selectable field it means, or refuses it
	// with the error that is the 400's message. Without it a label is a
	// selectable field's name.
	FieldLabels func(label string) (string, error)

	// UpdatesNeedResourceVersion makes an update that names no
	// resourceVersion (or "0") invalid, through every endpoint, as kube
	// has it for custom resources and their definitions; otherwise such
	// an update is unconditional.
	UpdatesNeedResourceVersion bool

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

	// Serve wraps the store when the resource serves fewer verbs than the
	// store has, or a subresource in a way of its own (a namespace takes
	// no deletecollection, and only updates through finalize); nil serves
	// the store and its subresources as they are.
	Serve func(s *Store) (main rest.Storage, subresources map[string]rest.Storage)
}

// StoredAs is the group, version and kind the objects are stored as.
func (r *Resource) StoredAs() schema.GroupVersionKind {
	if !r.StorageGVK.Empty() {
		return r.StorageGVK
	}
	return r.GroupVersionKind
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
	if r.Default == nil {
		return r.Codec
	}
	return defaultingCodec{Codec: r.Codec, defaults: r.Default}
}

type defaultingCodec struct {
	storage.Codec
	defaults func(runtime.Object)
}

func (c defaultingCodec) Decode(data []byte) (runtime.Object, error) {
	obj, err := c.Codec.Decode(data)
	if err != nil {
		return nil, err
	}
	c.defaults(obj)
	return obj, nil
}

func (r *Resource) storageResource() string {
	if r.StorageResource != "" {
		return r.StorageResource
	}
	return r.Plural
}

// SupportedFieldLabels is the field label conversion of a kind whose
// labels are its selectable fields' names, refusing all but supported
// as kube's conversions word it.
func SupportedFieldLabels(supported ...string) func(string) (string, error) {
	return func(label string) (string, error) {
		for _, s := range supported {
			if label == s {
				return label, nil
			}
		}
		return "", fmt.Errorf("field label not supported: %s", label)
	}
}
