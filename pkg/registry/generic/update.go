package generic

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
	"github.com/cronplane/cronplane/pkg/warning"
)

// Update computes and stores the new state of an object through the
// store's endpoint, inside a read-modify-write loop: info computes the new
// object from the current one, maybe more than once. A missing object is
// created when the strategy allows it or forceAllowCreate is set
// (server-side apply). It reports whether the object was created.
func (s *Store) Update(ctx context.Context, namespace, name string, info rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	key := s.key(namespace, name)
	var created bool
	var result runtime.Object
	// deleteAfter marks an update that removed the last finalizer of an
	// object being deleted: the object is then removed.
	var deleteAfter bool
	tryUpdate := func(currentStored runtime.Object) (runtime.Object, error) {
		created, deleteAfter = false, false
		current, err := s.fromStorage(mutable(currentStored))
		if err != nil {
			return nil, err
		}
		if current == nil && (s.subresource != "" || !(s.strategy.AllowCreateOnUpdate() || forceAllowCreate)) {
			return nil, apierrors.NewNotFound(s.Resource.GroupResource(), name)
		}
		obj, err := info.UpdatedObject(ctx, current)
		if err != nil {
			return nil, err
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if m.GetName() != name {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), name))
		}
		if current == nil {
			// A resourceVersion in the body has nothing to be compared
			// with: kube creates the object (beforeCreate clears it).
			if err := s.beforeCreate(ctx, namespace, obj, createValidation); err != nil {
				return nil, err
			}
			created, result = true, obj
			return s.toStorage(obj)
		}
		if err := s.beforeUpdate(ctx, namespace, obj, current, updateValidation); err != nil {
			return nil, err
		}
		if m.GetDeletionTimestamp() != nil && len(m.GetFinalizers()) == 0 && !s.keepOnDelete(obj) {
			deleteAfter = true
		}
		result = obj
		return s.toStorage(obj)
	}
	var preconditions *storage.Preconditions
	if p := info.Preconditions(); p != nil && (p.UID != nil || p.ResourceVersion != nil) {
		preconditions = &storage.Preconditions{UID: p.UID, ResourceVersion: p.ResourceVersion}
	}
	if len(opts.DryRun) > 0 {
		current, err := s.Storage.Get(ctx, key, storage.GetOptions{})
		if err != nil && !storage.IsNotFound(err) {
			return nil, false, s.apiError(err, name)
		}
		if current != nil && preconditions != nil {
			if err := s.checkPreconditions(storage.Unwrap(current), preconditions); err != nil {
				return nil, false, err
			}
		}
		if _, err := tryUpdate(current); err != nil {
			return nil, false, s.apiError(err, name)
		}
		return result, created, nil
	}
	out, err := s.Storage.GuaranteedUpdate(ctx, key, preconditions, tryUpdate, nil)
	if err != nil {
		return nil, false, s.apiError(err, name)
	}
	if deleteAfter {
		m, err := meta.Accessor(out)
		if err != nil {
			return nil, false, apierrors.NewInternalError(err)
		}
		rv := m.GetResourceVersion()
		out, err = s.Storage.Delete(ctx, key, &storage.Preconditions{ResourceVersion: &rv}, nil, nil)
		if err != nil && !storage.IsNotFound(err) && !storage.IsConflict(err) {
			return nil, false, s.apiError(err, name)
		}
		if err != nil {
			obj, err := s.Get(ctx, namespace, name, &metav1.GetOptions{})
			return obj, false, err
		}
	}
	obj, err := s.fromStorage(out)
	return obj, created, err
}

// beforeUpdate carries over what the client may not change, lets the
// strategy prepare the new object, validates it against the current one
// and runs validating admission.
func (s *Store) beforeUpdate(ctx context.Context, namespace string, obj, old runtime.Object, validate rest.ValidateObjectUpdateFunc) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	om, err := meta.Accessor(old)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	// As kube, "0" names no version: the update is unconditional, where
	// the resource allows that.
	switch rv := m.GetResourceVersion(); {
	case rv == "" || rv == "0":
		if s.Resource.UpdatesNeedResourceVersion {
			gr := s.Resource.GroupResource()
			return apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: gr.Resource}, m.GetName(), field.ErrorList{
				field.Invalid(field.NewPath("metadata", "resourceVersion"), uint64(0), "must be specified for an update")})
		}
	case rv != om.GetResourceVersion():
		return apierrors.NewConflict(s.Resource.GroupResource(), m.GetName(), errors.New(OptimisticLockErrorMsg))
	}
	if err := s.ensureNamespace(namespace, m); err != nil {
		return err
	}
	m.SetGeneration(om.GetGeneration())
	s.strategy.PrepareForUpdate(obj, old)
	if m.GetUID() == "" {
		m.SetUID(om.GetUID())
	}
	m.SetCreationTimestamp(om.GetCreationTimestamp())
	// Only a delete sets the deletion fields: an update keeps them, and
	// one that sets them where there were none, or changes the grace
	// period, fails validation as immutable.
	if om.GetDeletionTimestamp() != nil {
		m.SetDeletionTimestamp(om.GetDeletionTimestamp())
	}
	if om.GetDeletionGracePeriodSeconds() != nil && m.GetDeletionGracePeriodSeconds() == nil {
		m.SetDeletionGracePeriodSeconds(om.GetDeletionGracePeriodSeconds())
	}
	m.SetResourceVersion(om.GetResourceVersion())
	m.SetSelfLink("")
	obj.GetObjectKind().SetGroupVersionKind(s.Resource.GroupVersionKind)
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(m, om, field.NewPath("metadata"))
	errs = append(errs, s.validateMeta(m)...)
	if cv, ok := s.strategy.(ContextUpdateValidator); ok {
		errs = append(errs, cv.ValidateUpdateContext(ctx, obj, old)...)
	} else {
		errs = append(errs, s.strategy.ValidateUpdate(obj, old)...)
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(s.Resource.GroupKind(), m.GetName(), errs)
	}
	if w, ok := s.strategy.(WarningStrategy); ok {
		for _, text := range w.WarningsOnUpdate(obj, old) {
			warning.Add(ctx, text)
		}
	}
	if validate != nil {
		return validate(ctx, obj, old)
	}
	return nil
}

// checkPreconditions is the precondition check of a dry run, worded as
// storage words it for a real write.
func (s *Store) checkPreconditions(current runtime.Object, p *storage.Preconditions) error {
	m, err := meta.Accessor(current)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	gr := s.Resource.GroupResource()
	if p.UID != nil && m.GetUID() != *p.UID {
		return apierrors.NewConflict(gr, m.GetName(), fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, m.GetUID()))
	}
	if p.ResourceVersion != nil && m.GetResourceVersion() != *p.ResourceVersion {
		return apierrors.NewConflict(gr, m.GetName(), fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}
