package generic

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

// keepOnDelete reports whether the resource's strategy keeps obj after a
// delete request for reasons of its own (a namespace's spec.finalizers).
func (s *Store) keepOnDelete(obj runtime.Object) bool {
	ds, ok := s.Resource.Strategy.(DeletionStrategy)
	return ok && ds.PrepareForDelete(obj.DeepCopyObject())
}

// Delete deletes one object in two phases: an object with finalizers (or
// one its strategy keeps) gets a deletionTimestamp and stays; anything else
// is removed. It reports whether the object was removed. The returned
// object is the kept object, or for a removed one the last state when the
// resource returns deleted objects, else a Success Status.
func (s *Store) Delete(ctx context.Context, namespace, name string, validate rest.ValidateObjectFunc, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	dryRun := len(opts.DryRun) > 0
	key := s.key(namespace, name)
	for attempt := 0; ; attempt++ {
		// The first attempt starts from the watch cache's state, which may
		// be stale: the write below is conditioned on its resourceVersion,
		// and any answer that a stale state could explain (not found, a
		// failed precondition or validation, nothing to do) is only given
		// after a consistent read agrees. A dry run reads consistently.
		optimistic := attempt == 0 && !dryRun
		mode := storage.ReadMostRecent
		if optimistic {
			mode = storage.ReadAny
		}
		currentStored, err := s.Storage.Get(ctx, key, storage.GetOptions{Mode: mode})
		if err != nil {
			if optimistic && storage.IsNotFound(err) {
				continue
			}
			return nil, false, s.apiError(err, name)
		}
		current, err := s.fromStorage(mutable(currentStored))
		if err != nil {
			return nil, false, err
		}
		m, err := meta.Accessor(current)
		if err != nil {
			return nil, false, apierrors.NewInternalError(err)
		}
		err = s.checkDeletePreconditions(m, opts.Preconditions)
		if err == nil && validate != nil {
			err = validate(ctx, current)
		}
		if err != nil {
			if optimistic {
				continue
			}
			return nil, false, err
		}
		// The strategy goes first: on the first delete it may add a
		// finalizer of its own (a CRD's cleanup finalizer).
		strategyKeeps := false
		if ds, ok := s.Resource.Strategy.(DeletionStrategy); ok && m.GetDeletionTimestamp() == nil {
			strategyKeeps = ds.PrepareForDelete(current)
		} else if ok {
			strategyKeeps = ds.PrepareForDelete(current.DeepCopyObject())
		}
		grace := s.beginGracefulDelete(current, m, opts)
		if grace == gracePending {
			// A deletion already counting down is left as it is, its
			// finalizers too, as kube leaves it.
			if optimistic {
				continue
			}
			return current, false, nil
		}
		finalizers := s.deletionFinalizers(m.GetFinalizers(), opts)
		changed := !sets.New(finalizers...).Equal(sets.New(m.GetFinalizers()...))
		if grace == graceSet {
			m.SetFinalizers(finalizers)
			removeNow := *m.GetDeletionGracePeriodSeconds() == 0 && len(finalizers) == 0
			if dryRun {
				if removeNow {
					return s.deletedResult(current), true, nil
				}
				return current, false, nil
			}
			out, err := s.writeDeleting(ctx, key, current, m.GetResourceVersion())
			if storage.IsConflict(err) && attempt < 10 {
				continue
			}
			if err != nil || !removeNow {
				return out, false, err
			}
			// Removed in a second write, so that watchers see the
			// deletion marked first, as kube shows it.
			current = out
			if m, err = meta.Accessor(current); err != nil {
				return nil, false, apierrors.NewInternalError(err)
			}
		}
		keep := strategyKeeps || len(finalizers) > 0
		if keep {
			if m.GetDeletionTimestamp() != nil && !changed {
				if optimistic {
					continue
				}
				return current, false, nil
			}
			m.SetFinalizers(finalizers)
			if m.GetDeletionTimestamp() == nil {
				now := s.now()
				m.SetDeletionTimestamp(&now)
				// A kind whose strategy keeps it (a namespace) is deleted
				// its own way; anything else waits for finalizers with no
				// grace period, and tells its controllers by a new
				// generation.
				if !strategyKeeps {
					zero := int64(0)
					m.SetDeletionGracePeriodSeconds(&zero)
					if g := m.GetGeneration(); g > 0 {
						m.SetGeneration(g + 1)
					}
				}
			}
			if dryRun {
				return current, false, nil
			}
			out, err := s.writeDeleting(ctx, key, current, m.GetResourceVersion())
			if storage.IsConflict(err) && attempt < 10 {
				continue
			}
			return out, false, err
		}
		if dryRun {
			return s.deletedResult(current), true, nil
		}
		rv := m.GetResourceVersion()
		out, err := s.Storage.Delete(ctx, key, &storage.Preconditions{ResourceVersion: &rv}, nil, nil)
		if storage.IsConflict(err) && attempt < 10 {
			continue
		}
		if err != nil {
			return nil, false, s.apiError(err, name)
		}
		last, err := s.fromStorage(out)
		if err != nil {
			return nil, false, err
		}
		return s.deletedResult(last), true, nil
	}
}

// writeDeleting stores obj, read at resourceVersion rv, marked for
// deletion. A conflict is returned as the storage's, for a retry.
func (s *Store) writeDeleting(ctx context.Context, key string, obj runtime.Object, rv string) (runtime.Object, error) {
	out, err := s.Storage.GuaranteedUpdate(ctx, key, &storage.Preconditions{ResourceVersion: &rv}, func(runtime.Object) (runtime.Object, error) {
		return s.toStorage(obj)
	}, nil)
	if storage.IsConflict(err) {
		return nil, err
	}
	if err != nil {
		m, _ := meta.Accessor(obj)
		return nil, s.apiError(err, m.GetName())
	}
	return s.fromStorage(mutable(out))
}

// graceState is what a GracefulDeleteStrategy makes of a delete request.
type graceState int

const (
	// notGraceful: the resource has no grace periods, or the object's has
	// run out; it is deleted as any other.
	notGraceful graceState = iota
	// gracePending: the object is counting down already, and no shorter
	// period was asked for; nothing changes.
	gracePending
	// graceSet: the object's deletionTimestamp and grace period were set,
	// or shortened.
	graceSet
)

// beginGracefulDelete marks obj (whose metadata is m) as deleted after
// its grace period, when its strategy gives it one. A negative period
// asked for counts as 1 second, as kube counts it.
func (s *Store) beginGracefulDelete(obj runtime.Object, m metav1.Object, opts *metav1.DeleteOptions) graceState {
	gs, ok := s.Resource.Strategy.(GracefulDeleteStrategy)
	if !ok {
		return notGraceful
	}
	requested := opts.GracePeriodSeconds
	if requested != nil && *requested < 0 {
		one := int64(1)
		requested = &one
	}
	if ts := m.GetDeletionTimestamp(); ts != nil {
		current := m.GetDeletionGracePeriodSeconds()
		if current == nil || *current == 0 {
			return notGraceful
		}
		if requested == nil || *requested >= *current {
			return gracePending
		}
		shortened := metav1.NewTime(ts.Add(time.Duration(*requested-*current) * time.Second))
		period := *requested
		m.SetDeletionTimestamp(&shortened)
		m.SetDeletionGracePeriodSeconds(&period)
		return graceSet
	}
	period := gs.GracePeriod(obj, requested)
	deadline := metav1.NewTime(s.now().Add(time.Duration(period) * time.Second))
	m.SetDeletionTimestamp(&deadline)
	m.SetDeletionGracePeriodSeconds(&period)
	if g := m.GetGeneration(); g > 0 {
		m.SetGeneration(g + 1)
	}
	return graceSet
}

// deletionFinalizers returns an object's finalizers for a delete request:
// the garbage collector's "orphan" finalizer when dependents are to be
// orphaned first, "foregroundDeletion" when they are to be deleted first,
// neither for background deletion. An explicit orphanDependents or
// propagationPolicy decides; without one, a finalizer already set (by an
// earlier delete) does; then the resource's default.
func (s *Store) deletionFinalizers(current []string, opts *metav1.DeleteOptions) []string {
	policy := metav1.DeletePropagationBackground
	if s.Resource.OrphanByDefault {
		policy = metav1.DeletePropagationOrphan
	}
	for _, f := range current {
		switch f {
		case metav1.FinalizerOrphanDependents:
			policy = metav1.DeletePropagationOrphan
		case metav1.FinalizerDeleteDependents:
			policy = metav1.DeletePropagationForeground
		}
	}
	//nolint:staticcheck // OrphanDependents is deprecated but still honoured, as kube does.
	if o := opts.OrphanDependents; o != nil {
		policy = metav1.DeletePropagationBackground
		if *o {
			policy = metav1.DeletePropagationOrphan
		}
	} else if p := opts.PropagationPolicy; p != nil {
		policy = *p
	}
	out := make([]string, 0, len(current)+1)
	for _, f := range current {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			out = append(out, f)
		}
	}
	switch policy {
	case metav1.DeletePropagationOrphan:
		out = append(out, metav1.FinalizerOrphanDependents)
	case metav1.DeletePropagationForeground:
		out = append(out, metav1.FinalizerDeleteDependents)
	}
	return out
}

func (s *Store) deletedResult(last runtime.Object) runtime.Object {
	if s.Resource.ReturnDeletedObject {
		return last
	}
	m, err := meta.Accessor(last)
	if err != nil {
		return last
	}
	return &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details: &metav1.StatusDetails{
			Name:  m.GetName(),
			Group: s.Resource.Group,
			Kind:  s.Resource.Plural,
			UID:   m.GetUID(),
		},
	}
}

// checkDeletePreconditions words a failed precondition of a delete as kube
// does, naming the kind.
func (s *Store) checkDeletePreconditions(m metav1.Object, p *metav1.Preconditions) error {
	if p == nil {
		return nil
	}
	gk := schema.GroupResource{Group: s.Resource.Group, Resource: s.Resource.Kind}
	if p.UID != nil && *p.UID != m.GetUID() {
		return apierrors.NewConflict(gk, m.GetName(), fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, m.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
		return apierrors.NewConflict(gk, m.GetName(), fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}

// DeleteCollection deletes every object of a collection that the list
// options select, and returns them as a list.
func (s *Store) DeleteCollection(ctx context.Context, namespace string, validate rest.ValidateObjectFunc, opts *metav1.DeleteOptions, listOpts *rest.ListOptions) (runtime.Object, error) {
	list, err := s.list(ctx, namespace, listOpts)
	if err != nil {
		return nil, err
	}
	deleted := make([]runtime.Object, 0, len(list.Items))
	for _, it := range list.Items {
		m, err := meta.Accessor(storage.Unwrap(it))
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		obj, _, err := s.Delete(ctx, m.GetNamespace(), m.GetName(), validate, opts)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if _, isStatus := obj.(*metav1.Status); isStatus {
			obj = it
		}
		deleted = append(deleted, obj)
	}
	list.Items = deleted
	return list, nil
}
