// Package rbac owns role-based access control decisions: the rules of
// rbac.authorization.k8s.io Roles and ClusterRoles, granted to users,
// groups and service accounts by RoleBindings and ClusterRoleBindings.
// The Authorizer decides from an Index held in memory and kept current
// by the watch cache, never from a read of etcd; RBAC only allows, so
// what no rule grants gets no opinion. RulesFor answers what a user may
// do, for rules reviews and for the escalation checks on writes of roles
// and bindings.
package rbac

import (
	"context"
	"fmt"
	"strconv"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	"github.com/cronplane/cronplane/pkg/auth/user"
)

// Authorizer decides accesses from the roles and bindings of an Index.
type Authorizer struct {
	Index *Index
}

// Authorize allows what a rule bound to the user grants, with kube's
// reason naming the binding; otherwise it has no opinion, with the
// bindings whose roles are missing as the reason.
func (z Authorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.User == nil {
		return authorizer.NoOpinion, "", nil
	}
	var missing []error
	var allowedBy *grant
	z.Index.visit(a.User, a.Namespace, func(source grant, rules []rbacv1.PolicyRule, err error) bool {
		if err != nil {
			missing = append(missing, err)
			return true
		}
		for i := range rules {
			if RuleAllows(a, &rules[i]) {
				allowedBy = &source
				return false
			}
		}
		return true
	})
	if allowedBy != nil {
		return authorizer.Allow, "RBAC: allowed by " + allowedBy.String(), nil
	}
	if len(missing) == 0 {
		return authorizer.NoOpinion, "", nil
	}
	return authorizer.NoOpinion, "RBAC: " + utilerrors.NewAggregate(missing).Error(), nil
}

// RulesFor returns the rules bound to u in namespace (cluster-wide ones
// only when namespace is ""), and the problems met on the way (bindings
// of roles that do not exist).
func (x *Index) RulesFor(u *user.Info, namespace string) ([]rbacv1.PolicyRule, []error) {
	var rules []rbacv1.PolicyRule
	var errs []error
	x.visit(u, namespace, func(_ grant, rs []rbacv1.PolicyRule, err error) bool {
		if err != nil {
			errs = append(errs, err)
		}
		rules = append(rules, rs...)
		return true
	})
	return rules, errs
}

// Resolver answers rules reviews from the index. The rules are never
// incomplete; the roles that are missing are the error, in kube's words.
type Resolver struct{ Index *Index }

func (r Resolver) RulesFor(_ context.Context, u *user.Info, namespace string) ([]rbacv1.PolicyRule, bool, error) {
	rules, errs := r.Index.RulesFor(u, namespace)
	return rules, false, utilerrors.NewAggregate(errs)
}

// notFound is kube's error for a binding's role that does not exist.
type notFound struct{ resource, name string }

func (e notFound) Error() string {
	return fmt.Sprintf("%s.rbac.authorization.k8s.io %q not found", e.resource, e.name)
}

// visit calls fn with the rules of each binding that applies to u, once
// however many of its subjects do: cluster-wide bindings first, then
// those of namespace; a binding whose role is missing comes with an error
// instead. fn returns false to stop.
func (x *Index) visit(u *user.Info, namespace string, fn func(source grant, rules []rbacv1.PolicyRule, err error) bool) {
	var buf [8]subject
	keys := subjectsOf(u, buf[:0])
	x.mu.RLock()
	defer x.mu.RUnlock()
	for i, k := range keys {
		for _, b := range x.crbsBySubject[k] {
			if firstKey(b.Subjects, "", keys) != i {
				// Visited under an earlier key.
				continue
			}
			rules, err := x.clusterRoleRules(b.RoleRef)
			if !fn(grant{binding: b.Name, roleRef: b.RoleRef, subject: appliesTo(b.Subjects, "", keys)}, rules, err) {
				return
			}
		}
	}
	if namespace == "" {
		return
	}
	bySubject := x.rbsBySubject[namespace]
	for i, k := range keys {
		for _, b := range bySubject[k] {
			if firstKey(b.Subjects, namespace, keys) != i {
				continue
			}
			var rules []rbacv1.PolicyRule
			var err error
			if b.RoleRef.Kind == "Role" {
				r, ok := x.roles[namespace+"/"+b.RoleRef.Name]
				if ok {
					rules = r.Rules
				} else {
					err = notFound{"role", b.RoleRef.Name}
				}
			} else {
				rules, err = x.clusterRoleRules(b.RoleRef)
			}
			if !fn(grant{binding: b.Name, namespace: namespace, roleRef: b.RoleRef, subject: appliesTo(b.Subjects, namespace, keys)}, rules, err) {
				return
			}
		}
	}
}

// firstKey is the index in keys of the first of them that subjects (of a
// binding in namespace) name; len(keys) when they name none.
func firstKey(subjects []rbacv1.Subject, namespace string, keys []subject) int {
	first := len(keys)
	for _, s := range subjects {
		k, ok := subjectKey(s, namespace)
		if !ok {
			continue
		}
		for i := 0; i < first; i++ {
			if keys[i] == k {
				first = i
				break
			}
		}
	}
	return first
}

func (x *Index) clusterRoleRules(ref rbacv1.RoleRef) ([]rbacv1.PolicyRule, error) {
	if r, ok := x.clusterRoles[ref.Name]; ok {
		return r.Rules, nil
	}
	return nil, notFound{"clusterrole", ref.Name}
}

// appliesTo is the first of subjects (of a binding in namespace) that is
// one of keys: the subject kube names in its reasons.
func appliesTo(subjects []rbacv1.Subject, namespace string, keys []subject) subject {
	for _, s := range subjects {
		if k, ok := subjectKey(s, namespace); ok {
			for _, key := range keys {
				if key == k {
					return k
				}
			}
		}
	}
	return subject{}
}

// grant describes a binding's grant to a subject, as kube's reasons do:
// `ClusterRoleBinding "name" of ClusterRole "role" to User "alice"`, or
// `RoleBinding "name/ns" of Role "role" to ServiceAccount "sa/ns"`.
type grant struct {
	binding, namespace string
	roleRef            rbacv1.RoleRef
	subject            subject
}

func (g grant) String() string {
	name := g.subject.name
	if g.subject.kind == rbacv1.ServiceAccountKind {
		name += "/" + g.subject.namespace
	}
	binding := "ClusterRoleBinding " + strconv.Quote(g.binding)
	if g.namespace != "" {
		binding = "RoleBinding " + strconv.Quote(g.binding+"/"+g.namespace)
	}
	return binding + " of " + g.roleRef.Kind + " " + strconv.Quote(g.roleRef.Name) + " to " + g.subject.kind + " " + strconv.Quote(name)
}

// RoleRules returns the rules of the role a binding in namespace refers
// to (a ClusterRole, or a Role of namespace), or a NotFound error.
func (x *Index) RoleRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if ref.Kind == "Role" {
		if r, ok := x.roles[namespace+"/"+ref.Name]; ok {
			return r.Rules, nil
		}
		return nil, apierrors.NewNotFound(rbacv1.Resource("roles"), ref.Name)
	}
	if r, ok := x.clusterRoles[ref.Name]; ok {
		return r.Rules, nil
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("clusterroles"), ref.Name)
}
