// Package namespacelifecycle is the admission plugin that keeps
// namespaced objects in namespaces that exist and are not being deleted,
// and the built-in namespaces from deletion, as kube's NamespaceLifecycle
// does. It runs in the mutating phase, as kube's does, so a write into a
// missing namespace is a 404 before its body is validated.
package namespacelifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/admission"
)

// NamespaceGetter reads a namespace; a missing one is an API NotFound error.
type NamespaceGetter interface {
	GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error)
}

// ImmortalNamespaces exist from the first start and may not be deleted.
var ImmortalNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic}

// Plugin rejects new objects in namespaces that do not exist or are being
// terminated, and the deletion of the immortal namespaces. It reads the
// namespace on every create, so that any apiserver sharing the etcd sees
// the same answer.
type Plugin struct {
	Namespaces NamespaceGetter
}

var _ admission.MutationInterface = Plugin{}

func (Plugin) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Delete
}

func (l Plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	if a.Resource.Group == "" && a.Resource.Resource == "namespaces" {
		if a.Operation == admission.Delete && a.Subresource == "" && isImmortal(a.Name) {
			return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, fmt.Errorf("this namespace may not be deleted"))
		}
		return nil
	}
	if a.Operation != admission.Create || a.Namespace == "" {
		return nil
	}
	ns, err := l.Namespaces.GetNamespace(ctx, a.Namespace)
	if err != nil {
		return err
	}
	if ns.Status.Phase == corev1.NamespaceTerminating || ns.DeletionTimestamp != nil {
		err := apierrors.NewForbidden(a.Resource.GroupResource(), a.Name,
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
			Type:    corev1.NamespaceTerminatingCause,
			Message: fmt.Sprintf("namespace %s is being terminated", a.Namespace),
			Field:   "metadata.namespace",
		})
		return err
	}
	return nil
}

func isImmortal(name string) bool {
	for _, n := range ImmortalNamespaces {
		if n == name {
			return true
		}
	}
	return false
}
