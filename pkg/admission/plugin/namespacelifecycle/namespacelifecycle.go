// Package namespacelifecycle is the admission plugin that keeps
// namespaced objects in namespaces that exist and are not being deleted,
// and the built-in namespaces from deletion, as kube's NamespaceLifecycle
// does. It runs in the mutating phase, as kube's does, so a write into a
// missing namespace is a 404 before its body is validated.
package namespacelifecycle

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/admission"
)

// NamespaceGetter reads a namespace; a missing one is an API NotFound error.
type NamespaceGetter interface {
	// GetNamespace reads the namespace from the apiserver's cache, which
	// may be behind etcd by the time a watch event takes, when live is
	// false, and from etcd (a consistent read) when live is true.
	GetNamespace(ctx context.Context, name string, live bool) (*corev1.Namespace, error)
}

// ImmortalNamespaces exist from the first start and may not be deleted.
var ImmortalNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic}

// liveLookupTTL is how long after admitting a namespace's deletion the
// plugin reads that namespace from etcd rather than trust a cached Active
// phase, as kube's forceLiveLookupCache does.
const liveLookupTTL = 30 * time.Second

// Plugin rejects new objects in namespaces that do not exist or are being
// terminated, and the deletion of the immortal namespaces. As kube's, it
// reads the namespace from the cache, and from etcd when the cache does
// not have it (created a moment ago, perhaps through another apiserver)
// or when this apiserver admitted its deletion a short while ago and the
// cache does not show it yet: a create costs no etcd read in the common
// case.
type Plugin struct {
	namespaces NamespaceGetter
	now        func() time.Time

	mu       sync.Mutex
	deleting map[string]time.Time // namespace -> end of its live lookups
}

// New returns the plugin reading namespaces through g.
func New(g NamespaceGetter) *Plugin {
	return &Plugin{namespaces: g, now: time.Now, deleting: map[string]time.Time{}}
}

var _ admission.MutationInterface = (*Plugin)(nil)

func (*Plugin) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Delete
}

func (l *Plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	if a.Resource.Group == "" && a.Resource.Resource == "namespaces" {
		if a.Operation == admission.Delete && a.Subresource == "" {
			if isImmortal(a.Name) {
				return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, fmt.Errorf("this namespace may not be deleted"))
			}
			l.markDeleting(a.Name)
		}
		return nil
	}
	if a.Operation != admission.Create || a.Namespace == "" {
		return nil
	}
	ns, err := l.namespaces.GetNamespace(ctx, a.Namespace, false)
	if apierrors.IsNotFound(err) || (err == nil && !terminating(ns) && l.recentlyDeleted(a.Namespace)) {
		ns, err = l.namespaces.GetNamespace(ctx, a.Namespace, true)
	}
	if err != nil {
		return err
	}
	if terminating(ns) {
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

func terminating(ns *corev1.Namespace) bool {
	return ns.Status.Phase == corev1.NamespaceTerminating || ns.DeletionTimestamp != nil
}

// markDeleting starts the live lookups of a namespace whose deletion is
// being admitted, forgetting those that ended.
func (l *Plugin) markDeleting(name string) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for n, end := range l.deleting {
		if now.After(end) {
			delete(l.deleting, n)
		}
	}
	l.deleting[name] = now.Add(liveLookupTTL)
}

func (l *Plugin) recentlyDeleted(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	end, ok := l.deleting[name]
	return ok && !l.now().After(end)
}

func isImmortal(name string) bool {
	for _, n := range ImmortalNamespaces {
		if n == name {
			return true
		}
	}
	return false
}
