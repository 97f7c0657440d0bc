// Package core registers the resources of the core (legacy) group, served
// under /api/v1: namespaces, events, configmaps, secrets and
// serviceaccounts (with their token subresource).
package core

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// NamespaceResource registers core/v1 namespaces. A namespace is kept, in
// phase Terminating, after a delete request until the namespace controller
// has emptied it and removed the "kubernetes" entry of spec.finalizers
// through the finalize subresource.
func NamespaceResource() *generic.Resource {
	gvk := corev1.SchemeGroupVersion.WithKind("Namespace")
	newFunc := func() runtime.Object { return &corev1.Namespace{} }
	s := namespaceStrategy{}
	return &generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: gvk,
			Plural:           "namespaces",
			Singular:         "namespace",
			ShortNames:       []string{"ns"},
			New:              newFunc,
			NewList:          func() runtime.Object { return &corev1.NamespaceList{} },
			Table:            namespaceTable,
			Default:          defaultNamespace,
		},
		Codec:    codec.Protobuf(gvk, newFunc),
		Strategy: s,
		Subresources: map[string]generic.Strategy{
			"status":   generic.StatusStrategy{ValidateStatus: validateNamespaceStatus},
			"finalize": namespaceFinalizeStrategy{s},
		},
		NameValidation:      apivalidation.ValidateNamespaceName,
		ReturnDeletedObject: true,
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"status.phase": string(obj.(*corev1.Namespace).Status.Phase)}
		},
		// Namespaces have no namespace to select by.
		FieldLabels: generic.SupportedFieldLabels("metadata.name", "status.phase"),
		Serve: func(s *generic.Store) (rest.Storage, map[string]rest.Storage) {
			return namespaceStorage{s}, map[string]rest.Storage{
				"status":   s.Subresource("status"),
				"finalize": finalizeStorage{s.Subresource("finalize").(rest.Updater)},
			}
		},
	}
}

// namespaceStorage serves namespaces: every verb of the store but
// deletecollection, which kube does not serve for them.
type namespaceStorage struct{ s *generic.Store }

var (
	_ rest.Patcher         = namespaceStorage{}
	_ rest.Lister          = namespaceStorage{}
	_ rest.Watcher         = namespaceStorage{}
	_ rest.Creater         = namespaceStorage{}
	_ rest.GracefulDeleter = namespaceStorage{}
)

func (n namespaceStorage) New() runtime.Object     { return n.s.New() }
func (n namespaceStorage) NewList() runtime.Object { return n.s.NewList() }
func (n namespaceStorage) NamespaceScoped() bool   { return false }

func (n namespaceStorage) Get(ctx context.Context, namespace, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	return n.s.Get(ctx, namespace, name, opts)
}

func (n namespaceStorage) List(ctx context.Context, namespace string, opts *rest.ListOptions) (runtime.Object, error) {
	return n.s.List(ctx, namespace, opts)
}

func (n namespaceStorage) Watch(ctx context.Context, namespace string, opts *rest.ListOptions) (watch.Interface, error) {
	return n.s.Watch(ctx, namespace, opts)
}

func (n namespaceStorage) Create(ctx context.Context, namespace string, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	return n.s.Create(ctx, namespace, obj, validate, opts)
}

func (n namespaceStorage) Update(ctx context.Context, namespace, name string, info rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return n.s.Update(ctx, namespace, name, info, createValidation, updateValidation, forceAllowCreate, opts)
}

func (n namespaceStorage) Delete(ctx context.Context, namespace, name string, validate rest.ValidateObjectFunc, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	return n.s.Delete(ctx, namespace, name, validate, opts)
}

// finalizeStorage serves namespaces/finalize, which takes updates only, as
// kube's does.
type finalizeStorage struct{ rest.Updater }

func (finalizeStorage) New() runtime.Object { return &corev1.Namespace{} }

type namespaceStrategy struct{ generic.DefaultStrategy }

func (namespaceStrategy) PrepareForCreate(obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			return
		}
	}
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
}

func (namespaceStrategy) ResetsField(name string) bool { return name == "status" }

func (namespaceStrategy) PrepareForUpdate(obj, old runtime.Object) {
	ns, oldNS := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	ns.Spec.Finalizers = oldNS.Spec.Finalizers
	ns.Status = oldNS.Status
}

// defaultNamespace adds the immutable name label kube puts on every namespace.
func defaultNamespace(obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
}

func (namespaceStrategy) Validate(obj runtime.Object) field.ErrorList {
	return validateFinalizers(obj.(*corev1.Namespace))
}

func (namespaceStrategy) ValidateUpdate(obj, _ runtime.Object) field.ErrorList {
	return validateFinalizers(obj.(*corev1.Namespace))
}

// PrepareForDelete moves the namespace to Terminating; it stays while
// spec.finalizers is not empty.
func (namespaceStrategy) PrepareForDelete(obj runtime.Object) bool {
	ns := obj.(*corev1.Namespace)
	ns.Status.Phase = corev1.NamespaceTerminating
	return len(ns.Spec.Finalizers) > 0
}

// validateNamespaceStatus holds the phase to the deletion: Active until a
// delete, Terminating after. Kube names the field "status.Phase".
func validateNamespaceStatus(obj, _ runtime.Object) field.ErrorList {
	ns := obj.(*corev1.Namespace)
	path := field.NewPath("status", "Phase")
	switch {
	case ns.DeletionTimestamp.IsZero() && ns.Status.Phase != corev1.NamespaceActive:
		return field.ErrorList{field.Invalid(path, ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty")}
	case !ns.DeletionTimestamp.IsZero() && ns.Status.Phase != corev1.NamespaceTerminating:
		return field.ErrorList{field.Invalid(path, ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")}
	}
	return nil
}

func validateFinalizers(ns *corev1.Namespace) field.ErrorList {
	var errs field.ErrorList
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, apivalidation.ValidateFinalizerName(string(f), field.NewPath("spec", "finalizers").Index(i))...)
	}
	return errs
}

// namespaceFinalizeStrategy lets the namespace controller change
// spec.finalizers; as through kube's, the status is kept and metadata is
// written as through the main resource.
type namespaceFinalizeStrategy struct{ namespaceStrategy }

func (namespaceFinalizeStrategy) PrepareForUpdate(obj, old runtime.Object) {
	obj.(*corev1.Namespace).Status = old.(*corev1.Namespace).Status
}
