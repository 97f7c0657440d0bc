package rbac

import (
	"sort"
	"strings"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/storage"
)

// subject is a binding's subject as the index keys it: a user or group
// name, or a service account's namespace and name.
type subject struct {
	kind, namespace, name string
}

// Index holds the roles and bindings RBAC decides from, with the bindings
// indexed by subject, so that a decision looks up only the bindings of
// the requesting user and its groups. Its methods are safe for concurrent
// use; the objects it holds are read-only.
type Index struct {
	mu           sync.RWMutex
	clusterRoles map[string]*rbacv1.ClusterRole
	roles        map[string]*rbacv1.Role // by namespace/name
	// The bindings by name (namespace/name), and by subject: cluster-wide,
	// and per namespace. Each subject's list is sorted by binding name.
	clusterRoleBindings map[string]*rbacv1.ClusterRoleBinding
	roleBindings        map[string]*rbacv1.RoleBinding
	crbsBySubject       map[subject][]*rbacv1.ClusterRoleBinding
	rbsBySubject        map[string]map[subject][]*rbacv1.RoleBinding
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{
		clusterRoles:        map[string]*rbacv1.ClusterRole{},
		roles:               map[string]*rbacv1.Role{},
		clusterRoleBindings: map[string]*rbacv1.ClusterRoleBinding{},
		roleBindings:        map[string]*rbacv1.RoleBinding{},
		crbsBySubject:       map[subject][]*rbacv1.ClusterRoleBinding{},
		rbsBySubject:        map[string]map[subject][]*rbacv1.RoleBinding{},
	}
}

// Handler returns what keeps the index current with one kind of object
// (Role, ClusterRole, RoleBinding or ClusterRoleBinding) from its watch.
func (x *Index) Handler(kind string) *KindHandler {
	return &KindHandler{x: x, kind: kind}
}

// KindHandler feeds the index one kind of object; it implements
// informer.Handler.
type KindHandler struct {
	x    *Index
	kind string
}

func (h *KindHandler) Replace(objs []runtime.Object) {
	h.x.mu.Lock()
	defer h.x.mu.Unlock()
	switch h.kind {
	case "ClusterRole":
		h.x.clusterRoles = map[string]*rbacv1.ClusterRole{}
	case "Role":
		h.x.roles = map[string]*rbacv1.Role{}
	case "ClusterRoleBinding":
		for _, b := range h.x.clusterRoleBindings {
			h.x.unindexCRB(b)
		}
	case "RoleBinding":
		for _, b := range h.x.roleBindings {
			h.x.unindexRB(b)
		}
	}
	for _, o := range objs {
		h.x.set(storage.Unwrap(o))
	}
}

func (h *KindHandler) Set(obj runtime.Object) {
	h.x.mu.Lock()
	defer h.x.mu.Unlock()
	h.x.set(storage.Unwrap(obj))
}

func (h *KindHandler) Delete(obj runtime.Object) {
	h.x.mu.Lock()
	defer h.x.mu.Unlock()
	switch o := storage.Unwrap(obj).(type) {
	case *rbacv1.ClusterRole:
		delete(h.x.clusterRoles, o.Name)
	case *rbacv1.Role:
		delete(h.x.roles, o.Namespace+"/"+o.Name)
	case *rbacv1.ClusterRoleBinding:
		if old, ok := h.x.clusterRoleBindings[o.Name]; ok {
			h.x.unindexCRB(old)
		}
	case *rbacv1.RoleBinding:
		if old, ok := h.x.roleBindings[o.Namespace+"/"+o.Name]; ok {
			h.x.unindexRB(old)
		}
	}
}

// set adds or replaces one object; x.mu is held.
func (x *Index) set(obj runtime.Object) {
	switch o := obj.(type) {
	case *rbacv1.ClusterRole:
		x.clusterRoles[o.Name] = o
	case *rbacv1.Role:
		x.roles[o.Namespace+"/"+o.Name] = o
	case *rbacv1.ClusterRoleBinding:
		if old, ok := x.clusterRoleBindings[o.Name]; ok {
			x.unindexCRB(old)
		}
		x.clusterRoleBindings[o.Name] = o
		for _, s := range o.Subjects {
			if k, ok := subjectKey(s, ""); ok {
				x.crbsBySubject[k] = insertSorted(x.crbsBySubject[k], o, func(b *rbacv1.ClusterRoleBinding) string { return b.Name })
			}
		}
	case *rbacv1.RoleBinding:
		key := o.Namespace + "/" + o.Name
		if old, ok := x.roleBindings[key]; ok {
			x.unindexRB(old)
		}
		x.roleBindings[key] = o
		bySubject := x.rbsBySubject[o.Namespace]
		if bySubject == nil {
			bySubject = map[subject][]*rbacv1.RoleBinding{}
			x.rbsBySubject[o.Namespace] = bySubject
		}
		for _, s := range o.Subjects {
			if k, ok := subjectKey(s, o.Namespace); ok {
				bySubject[k] = insertSorted(bySubject[k], o, func(b *rbacv1.RoleBinding) string { return b.Name })
			}
		}
	}
}

func (x *Index) unindexCRB(b *rbacv1.ClusterRoleBinding) {
	delete(x.clusterRoleBindings, b.Name)
	for _, s := range b.Subjects {
		if k, ok := subjectKey(s, ""); ok {
			if l := without(x.crbsBySubject[k], b); len(l) > 0 {
				x.crbsBySubject[k] = l
			} else {
				delete(x.crbsBySubject, k)
			}
		}
	}
}

func (x *Index) unindexRB(b *rbacv1.RoleBinding) {
	delete(x.roleBindings, b.Namespace+"/"+b.Name)
	bySubject := x.rbsBySubject[b.Namespace]
	for _, s := range b.Subjects {
		if k, ok := subjectKey(s, b.Namespace); ok {
			if l := without(bySubject[k], b); len(l) > 0 {
				bySubject[k] = l
			} else {
				delete(bySubject, k)
			}
		}
	}
	if len(bySubject) == 0 {
		delete(x.rbsBySubject, b.Namespace)
	}
}

// insertSorted returns list with b in name order, in a new slice: readers
// may hold the old one.
func insertSorted[T any](list []*T, b *T, name func(*T) string) []*T {
	i := sort.Search(len(list), func(i int) bool { return name(list[i]) >= name(b) })
	out := make([]*T, 0, len(list)+1)
	out = append(append(append(out, list[:i]...), b), list[i:]...)
	return out
}

// without returns list without b (compared by identity), in a new slice.
func without[T any](list []*T, b *T) []*T {
	out := make([]*T, 0, len(list))
	for _, o := range list {
		if o != b {
			out = append(out, o)
		}
	}
	return out
}

// subjectKey keys a binding's subject; a service account without a
// namespace takes the binding's (none for a cluster-wide binding, which
// then binds nobody).
func subjectKey(s rbacv1.Subject, bindingNamespace string) (subject, bool) {
	switch s.Kind {
	case rbacv1.UserKind, rbacv1.GroupKind:
		return subject{kind: s.Kind, name: s.Name}, true
	case rbacv1.ServiceAccountKind:
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		if ns == "" {
			return subject{}, false
		}
		return subject{kind: s.Kind, namespace: ns, name: s.Name}, true
	}
	return subject{}, false
}

// serviceAccountPrefix starts the user name of a service account:
// system:serviceaccount:<namespace>:<name>.
const serviceAccountPrefix = "system:serviceaccount:"

// subjectsOf appends to keys those a user is bound by: its name, its
// groups, and its service account when it is one.
func subjectsOf(u *user.Info, keys []subject) []subject {
	keys = append(keys, subject{kind: rbacv1.UserKind, name: u.Name})
	for _, g := range u.Groups {
		keys = append(keys, subject{kind: rbacv1.GroupKind, name: g})
	}
	if rest, ok := strings.CutPrefix(u.Name, serviceAccountPrefix); ok {
		if ns, name, ok := strings.Cut(rest, ":"); ok && ns != "" && name != "" && !strings.Contains(name, ":") {
			keys = append(keys, subject{kind: rbacv1.ServiceAccountKind, namespace: ns, name: name})
		}
	}
	return keys
}
