// Package core registers the resources of the core (legacy) group, served
// under /api/v1: namespaces and events.
package core

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/registry"
)

// NamespaceResource registers core/v1 namespaces. A namespace is kept, in
// phase Terminating, after a delete request until the namespace controller
// has emptied it and removed the "kubernetes" entry of spec.finalizers
// through the finalize subresource.
func NamespaceResource() *registry.Resource {
	gvk := corev1.SchemeGroupVersion.WithKind("Namespace")
	newFunc := func() runtime.Object { return &corev1.Namespace{} }
	s := namespaceStrategy{}
	return &registry.Resource{
		GroupVersionKind: gvk,
		Plural:           "namespaces",
		Singular:         "namespace",
		ShortNames:       []string{"ns"},
		New:              newFunc,
		NewList:          func() runtime.Object { return &corev1.NamespaceList{} },
		Codec:            codec.Protobuf(gvk, newFunc),
		Strategy:         s,
		Subresources: map[string]registry.Strategy{
			"status":   registry.StatusStrategy{Main: s},
			"finalize": namespaceFinalizeStrategy{s},
		},
		NameValidation:      apivalidation.ValidateNamespaceName,
		Table:               namespaceTable,
		ReturnDeletedObject: true,
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"status.phase": string(obj.(*corev1.Namespace).Status.Phase)}
		},
		Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"},
	}
}

type namespaceStrategy struct{ registry.DefaultStrategy }

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

func (namespaceStrategy) PrepareForUpdate(obj, old runtime.Object) {
	ns, oldNS := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	ns.Spec.Finalizers = oldNS.Spec.Finalizers
	ns.Status = oldNS.Status
}

// Default adds the immutable name label kube puts on every namespace.
func (namespaceStrategy) Default(obj runtime.Object) {
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

func validateFinalizers(ns *corev1.Namespace) field.ErrorList {
	var errs field.ErrorList
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, apivalidation.ValidateFinalizerName(string(f), field.NewPath("spec", "finalizers").Index(i))...)
	}
	return errs
}

// namespaceFinalizeStrategy lets the namespace controller change only
// spec.finalizers.
type namespaceFinalizeStrategy struct{ namespaceStrategy }

func (namespaceFinalizeStrategy) PrepareForUpdate(obj, old runtime.Object) {
	ns, oldNS := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	ns.Status = oldNS.Status
	registry.ResetObjectMetaForStatus(obj, old)
}
