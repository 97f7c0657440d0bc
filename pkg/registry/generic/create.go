package generic

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
	"github.com/cronplane/cronplane/pkg/warning"
)

// Create stores a new object: obj comes decoded (with its defaults),
// managedFields recorded and mutating admission done; validate is
// validating admission, run on the prepared object.
func (s *Store) Create(ctx context.Context, namespace string, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if m.GetResourceVersion() != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	if err := s.beforeCreate(ctx, namespace, obj, validate); err != nil {
		return nil, err
	}
	if len(opts.DryRun) > 0 {
		return obj, s.checkAbsent(ctx, namespace, m.GetName())
	}
	stored, err := s.toStorage(obj)
	if err != nil {
		return nil, err
	}
	out, err := s.Storage.Create(ctx, s.key(namespace, m.GetName()), stored)
	if err != nil {
		return nil, s.apiError(err, m.GetName())
	}
	return s.fromStorage(out)
}

// checkAbsent gives the AlreadyExists a real create would give, for dry runs.
func (s *Store) checkAbsent(ctx context.Context, namespace, name string) error {
	_, err := s.Storage.Get(ctx, s.key(namespace, name), storage.GetOptions{})
	switch {
	case err == nil:
		return apierrors.NewAlreadyExists(s.Resource.GroupResource(), name)
	case storage.IsNotFound(err):
		return nil
	}
	return s.apiError(err, name)
}

// ensureNamespace makes an object's namespace the request's: an empty one
// is filled in, a cluster-scoped object's cleared, another one refused.
func (s *Store) ensureNamespace(namespace string, m metav1.Object) error {
	want := ""
	if s.Resource.Namespaced {
		want = namespace
	}
	switch got := m.GetNamespace(); {
	case got == want:
	case got == "" || want == "":
		m.SetNamespace(want)
	default:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// validateMeta validates the metadata of a new object.
func (s *Store) validateMeta(m metav1.Object) field.ErrorList {
	nameFn := apivalidation.NameIsDNSSubdomain
	if s.Resource.NameValidation != nil {
		nameFn = s.Resource.NameValidation
	}
	return apivalidation.ValidateObjectMetaAccessor(m, s.Resource.Namespaced, nameFn, field.NewPath("metadata"))
}

// beforeCreate fills the system fields of a new object, lets the strategy
// prepare it, validates it and runs validating admission.
func (s *Store) beforeCreate(ctx context.Context, namespace string, obj runtime.Object, validate rest.ValidateObjectFunc) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if err := s.ensureNamespace(namespace, m); err != nil {
		return err
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(generateName(m.GetGenerateName()))
	}
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(s.now())
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetResourceVersion("")
	m.SetSelfLink("")
	s.strategy.PrepareForCreate(obj)
	obj.GetObjectKind().SetGroupVersionKind(s.Resource.GroupVersionKind)
	errs := append(s.validateMeta(m), s.strategy.Validate(obj)...)
	if len(errs) > 0 {
		return apierrors.NewInvalid(s.Resource.GroupKind(), m.GetName(), errs)
	}
	if w, ok := s.strategy.(WarningStrategy); ok {
		for _, text := range w.WarningsOnCreate(obj) {
			warning.Add(ctx, text)
		}
	}
	if validate != nil {
		return validate(ctx, obj)
	}
	return nil
}

// generateName appends five random characters to base, trimmed so that the
// result stays a valid name.
func generateName(base string) string {
	const maxNameLength, randomLength = 63, 5
	if len(base) > maxNameLength-randomLength {
		base = base[:maxNameLength-randomLength]
	}
	return base + rand.String(randomLength)
}
