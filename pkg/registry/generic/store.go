// Package generic owns the store that serves any Resource over a
// storage.Interface without knowing the Go type behind it: keys as kube
// lays them out, system fields, the strategy's preparation and
// validation, two-phase deletion with finalizers and the garbage
// collector's propagation policies, and resourceVersion semantics. A
// resource is a small registration (a Resource with its Strategy); the
// store implements the verb interfaces of pkg/registry/rest. Field
// ownership and admission are the callers': they hand in objects with
// managedFields recorded and admission functions to run.
package generic

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

// OptimisticLockErrorMsg is kube's message for a write based on a stale
// resourceVersion.
const OptimisticLockErrorMsg = "the object has been modified; please apply your changes to the latest version and try again"

// Store serves every verb of one Resource, or of one of its subresources,
// over a storage.Interface. Its methods take and return the resource's
// served type and report failures as API errors ready for the wire.
type Store struct {
	Resource *Resource
	Storage  storage.Interface
	// KeyRoot is the storage prefix, such as "/registry".
	KeyRoot string
	// Now returns the current time; nil means time.Now.
	Now func() time.Time

	// subresource is the endpoint served ("" is the main resource) and
	// strategy its rules.
	subresource string
	strategy    Strategy
}

var (
	_ rest.Storage           = (*Store)(nil)
	_ rest.Scoper            = (*Store)(nil)
	_ rest.Getter            = (*Store)(nil)
	_ rest.Lister            = (*Store)(nil)
	_ rest.Watcher           = (*Store)(nil)
	_ rest.Creater           = (*Store)(nil)
	_ rest.Updater           = (*Store)(nil)
	_ rest.Patcher           = (*Store)(nil)
	_ rest.GracefulDeleter   = (*Store)(nil)
	_ rest.CollectionDeleter = (*Store)(nil)
)

// NewStore serves res over s, under keys below keyRoot.
func NewStore(res *Resource, s storage.Interface, keyRoot string) *Store {
	return &Store{Resource: res, Storage: s, KeyRoot: keyRoot, strategy: res.Strategy}
}

// Subresource serves the subresource name of the store's objects (get and
// update, and so patch, through its own strategy), or nil when the
// resource has no such subresource.
func (s *Store) Subresource(name string) rest.Storage {
	st, ok := s.Resource.Subresources[name]
	if !ok {
		return nil
	}
	sub := *s
	sub.subresource, sub.strategy = name, st
	return &SubresourceStore{store: &sub}
}

// Storages returns what serves the resource and its subresources: the
// store itself, unless the resource wraps it.
func (s *Store) Storages() (rest.Storage, map[string]rest.Storage) {
	if s.Resource.Serve != nil {
		return s.Resource.Serve(s)
	}
	subs := make(map[string]rest.Storage, len(s.Resource.Subresources))
	for name := range s.Resource.Subresources {
		subs[name] = s.Subresource(name)
	}
	return s, subs
}

func (s *Store) New() runtime.Object { return s.Resource.New() }

func (s *Store) NewList() runtime.Object { return s.Resource.NewList() }

func (s *Store) NamespaceScoped() bool { return s.Resource.Namespaced }

// SubresourceStore serves a subresource: reads of the whole object and
// updates through the subresource's strategy.
type SubresourceStore struct{ store *Store }

var _ rest.Patcher = (*SubresourceStore)(nil)

func (s *SubresourceStore) New() runtime.Object { return s.store.New() }

func (s *SubresourceStore) Get(ctx context.Context, namespace, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	return s.store.Get(ctx, namespace, name, opts)
}

func (s *SubresourceStore) Update(ctx context.Context, namespace, name string, info rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return s.store.Update(ctx, namespace, name, info, createValidation, updateValidation, forceAllowCreate, opts)
}

func (s *Store) now() metav1.Time {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	return metav1.NewTime(now().Truncate(time.Second))
}

// StoragePrefix is the key prefix under which a resource's objects are
// stored, such as "/registry/cronjobs/".
func StoragePrefix(root string, res *Resource) string {
	return root + "/" + res.storageResource() + "/"
}

// prefix is the key prefix of a collection; namespace "" on a namespaced
// resource means all namespaces.
func (s *Store) prefix(namespace string) string {
	p := StoragePrefix(s.KeyRoot, s.Resource)
	if s.Resource.Namespaced && namespace != "" {
		p += namespace + "/"
	}
	return p
}

func (s *Store) key(namespace, name string) string {
	return s.prefix(namespace) + name
}

func (s *Store) toStorage(obj runtime.Object) (runtime.Object, error) {
	if s.Resource.Conversion == nil {
		return obj, nil
	}
	return s.Resource.Conversion.ToStorage(obj)
}

func (s *Store) fromStorage(obj runtime.Object) (runtime.Object, error) {
	if s.Resource.Conversion == nil || obj == nil {
		return obj, nil
	}
	inner := storage.Unwrap(obj)
	out, err := s.Resource.Conversion.FromStorage(inner)
	if err != nil || out != inner {
		return out, err
	}
	// Unchanged (a custom object read in its storage version): the shared
	// object keeps its memoized encodings.
	return obj, nil
}

// mutable returns a private copy of an object read from storage, which may
// be shared with other readers.
func mutable(obj runtime.Object) runtime.Object {
	if s, ok := obj.(*storage.SharedObject); ok {
		return s.DeepCopyObject()
	}
	return obj
}

// apiError turns a storage error into the API error the client sees.
func (s *Store) apiError(err error, name string) error {
	gr := s.Resource.GroupResource()
	var se *storage.Error
	if !errors.As(err, &se) {
		var apiStatus apierrors.APIStatus
		if errors.As(err, &apiStatus) {
			return err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			// The request's deadline passed in storage: kube's 504.
			return apierrors.NewTimeoutError(fmt.Sprintf("request did not complete within requested timeout - %s", context.DeadlineExceeded), 0)
		}
		return apierrors.NewInternalError(err)
	}
	switch se.Code {
	case storage.ErrCodeNotFound:
		return apierrors.NewNotFound(gr, name)
	case storage.ErrCodeAlreadyExists:
		return apierrors.NewAlreadyExists(gr, name)
	case storage.ErrCodeConflict:
		msg := se.Msg
		if msg == "" {
			msg = OptimisticLockErrorMsg
		}
		return apierrors.NewConflict(gr, name, errors.New(msg))
	case storage.ErrCodeExpired:
		return apierrors.NewResourceExpired(se.Error())
	case storage.ErrCodeInvalidContinue:
		return apierrors.NewBadRequest("invalid continue token: " + se.Error())
	case storage.ErrCodeTooLargeResourceVersion:
		return newTooLargeResourceVersionError(se)
	}
	return apierrors.NewInternalError(err)
}

func newTooLargeResourceVersionError(se *storage.Error) error {
	err := apierrors.NewTimeoutError(se.Error(), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "Too large resource version",
	}}
	return err
}
