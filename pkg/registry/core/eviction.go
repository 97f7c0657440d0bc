package core

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// evictionDescription is what pods/eviction takes.
var evictionDescription = func() *rest.Resource {
	r := &rest.Resource{
		GroupVersionKind: policyv1.SchemeGroupVersion.WithKind("Eviction"),
		Plural:           "evictions",
		Singular:         "eviction",
		Namespaced:       true,
		New:              func() runtime.Object { return &policyv1.Eviction{} },
	}
	// Completed once: every server in the process shares it.
	r.Complete()
	return r
}()

// evictionStorage serves pods/eviction: a POST of an Eviction marks the
// pod with a DisruptionTarget condition and deletes it with the
// Eviction's delete options, gracefully when it runs on a node. This
// server serves no PodDisruptionBudgets, so no budget can refuse an
// eviction: every one is answered as kube answers one that no budget
// covers.
type evictionStorage struct{ pods *generic.Store }

var (
	_ rest.NamedCreater = (*evictionStorage)(nil)
	_ rest.Describer    = (*evictionStorage)(nil)
)

func (e *evictionStorage) New() runtime.Object      { return &policyv1.Eviction{} }
func (e *evictionStorage) Describe() *rest.Resource { return evictionDescription }

var deleteOptionsGK = schema.GroupKind{Group: "meta.k8s.io", Kind: "DeleteOptions"}

// Create evicts the pod name, which the body must name too.
func (e *evictionStorage) Create(ctx context.Context, namespace, name string, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	eviction := obj.(*policyv1.Eviction)
	if eviction.Name != name {
		return nil, apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	deleteOpts := &metav1.DeleteOptions{}
	if eviction.DeleteOptions != nil {
		deleteOpts = eviction.DeleteOptions.DeepCopy()
	}
	if errs := validateDeleteOptions(deleteOpts); len(errs) > 0 {
		return nil, apierrors.NewInvalid(deleteOptionsGK, "", errs)
	}
	if validate != nil {
		if err := validate(ctx, eviction.DeepCopy()); err != nil {
			return nil, err
		}
	}
	dryRun := len(opts.DryRun) > 0 || len(deleteOpts.DryRun) > 0
	if dryRun {
		deleteOpts.DryRun = []string{metav1.DryRunAll}
	}
	_, err := e.pods.UpdateStored(ctx, namespace, name, nil, dryRun, func(obj runtime.Object) error {
		pod := obj.(*corev1.Pod)
		if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			setPodCondition(&pod.Status, corev1.PodCondition{
				Type:    corev1.DisruptionTarget,
				Status:  corev1.ConditionTrue,
				Reason:  "EvictionByEvictionAPI",
				Message: "Eviction API: evicting",
			}, metav1.Now())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, _, err := e.pods.Delete(ctx, namespace, name, nil, deleteOpts); err != nil {
		return nil, err
	}
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: createdCode}, nil
}

// validateDeleteOptions checks the delete options an Eviction carries as
// kube checks those of a delete request.
func validateDeleteOptions(o *metav1.DeleteOptions) field.ErrorList {
	var errs field.ErrorList
	for _, v := range o.DryRun {
		if v != metav1.DryRunAll {
			errs = append(errs, field.NotSupported(field.NewPath("dryRun"), o.DryRun, []string{metav1.DryRunAll}))
			break
		}
	}
	//nolint:staticcheck // OrphanDependents is deprecated but still checked, as kube does.
	if o.OrphanDependents != nil && o.PropagationPolicy != nil {
		errs = append(errs, field.Invalid(field.NewPath("propagationPolicy"), o.PropagationPolicy, "orphanDependents and deletionPropagation cannot be both set"))
	}
	if p := o.PropagationPolicy; p != nil && *p != metav1.DeletePropagationForeground && *p != metav1.DeletePropagationBackground && *p != metav1.DeletePropagationOrphan {
		errs = append(errs, field.NotSupported(field.NewPath("propagationPolicy"), p, []string{string(metav1.DeletePropagationForeground), string(metav1.DeletePropagationBackground), string(metav1.DeletePropagationOrphan), "nil"}))
	}
	return errs
}
