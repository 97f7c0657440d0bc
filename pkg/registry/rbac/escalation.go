package rbac

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	rbacauthz "github.com/cronplane/cronplane/pkg/auth/authorizer/rbac"
	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// Escalation holds what the escalation checks ask: the server's
// authorizer (may the user "escalate" or "bind"?) and the RBAC index
// (what does the user hold?). The apiserver fills it in once both exist,
// before it serves requests.
type Escalation struct {
	Authorizer authorizer.Authorizer
	Rules      *rbacauthz.Index
}

// fullAuthority is what setting an aggregationRule takes: it can gather
// anything.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// guarded serves a kind through the generic store, refusing, as kube
// does, a write of a role that grants what its author does not hold
// (unless the author may "escalate"), and of a binding to a role whose
// permissions its author does not hold (unless the author may "bind"
// it). Members of system:masters may write anything.
type guarded struct {
	*generic.Store
	// check refuses obj written in namespace by u, or lets it through;
	// name is what the request names (nothing for a create), which is
	// what kube authorizes "escalate" for.
	check func(ctx context.Context, u *user.Info, namespace, name string, obj, old runtime.Object) error
}

func (g guarded) Create(ctx context.Context, namespace string, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	if u, limited := limitedUser(ctx); limited {
		if err := g.check(ctx, u, namespace, "", obj, nil); err != nil {
			return nil, err
		}
	}
	return g.Store.Create(ctx, namespace, obj, validate, opts)
}

func (g guarded) Update(ctx context.Context, namespace, name string, info rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	if u, limited := limitedUser(ctx); limited {
		info = checkedUpdate{UpdatedObjectInfo: info, check: func(ctx context.Context, obj, old runtime.Object) error {
			if old != nil && onlyGCFieldsChanged(obj, old) {
				return nil
			}
			return g.check(ctx, u, namespace, name, obj, old)
		}}
	}
	return g.Store.Update(ctx, namespace, name, info, createValidation, updateValidation, forceAllowCreate, opts)
}

// checkedUpdate runs a check on the new object an update computes.
type checkedUpdate struct {
	rest.UpdatedObjectInfo
	check func(ctx context.Context, obj, old runtime.Object) error
}

func (c checkedUpdate) UpdatedObject(ctx context.Context, current runtime.Object) (runtime.Object, error) {
	obj, err := c.UpdatedObjectInfo.UpdatedObject(ctx, current)
	if err != nil {
		return nil, err
	}
	if err := c.check(ctx, obj, current); err != nil {
		return nil, err
	}
	return obj, nil
}

// limitedUser returns the request's user unless it may escalate freely
// (system:masters, which the server's own writes belong to).
func limitedUser(ctx context.Context) (*user.Info, bool) {
	u, ok := user.From(ctx)
	if !ok {
		return nil, false
	}
	for _, g := range u.Groups {
		if g == user.SystemPrivileged {
			return u, false
		}
	}
	return u, true
}

// onlyGCFieldsChanged: the garbage collector may drop owner references
// and finalizers of an object whose author could not write it now.
func onlyGCFieldsChanged(obj, old runtime.Object) bool {
	a, b := obj.DeepCopyObject(), old.DeepCopyObject()
	ma, errA := meta.Accessor(a)
	mb, errB := meta.Accessor(b)
	if errA != nil || errB != nil {
		return false
	}
	for _, m := range []metav1.Object{ma, mb} {
		m.SetOwnerReferences(nil)
		m.SetFinalizers(nil)
		m.SetManagedFields(nil)
		m.SetResourceVersion("")
	}
	return apiequality.Semantic.DeepEqual(a, b)
}

func (e *Escalation) allowed(ctx context.Context, u *user.Info, verb, resource, namespace, name string) bool {
	if e.Authorizer == nil {
		return false
	}
	d, _, err := e.Authorizer.Authorize(ctx, authorizer.Attributes{
		User: u, Verb: verb, ResourceRequest: true, APIGroup: rbacv1.GroupName, APIVersion: "*",
		Resource: resource, Namespace: namespace, Name: name,
	})
	return err == nil && d == authorizer.Allow
}

func (e *Escalation) noEscalation(u *user.Info, namespace string, rules []rbacv1.PolicyRule) error {
	if e.Rules == nil {
		return errors.New("no RBAC rules to check against")
	}
	return e.Rules.ConfirmNoEscalation(u, namespace, rules)
}

// checkRole refuses a Role or ClusterRole granting more than u holds; an
// aggregationRule that selects roles, set or removed, takes full
// authority (one selecting nothing is for validation to refuse).
func (e *Escalation) checkRole(ctx context.Context, u *user.Info, namespace, requestName string, obj, old runtime.Object) error {
	resource, name, rules, aggregates := "roles", "", []rbacv1.PolicyRule(nil), false
	switch r := obj.(type) {
	case *rbacv1.Role:
		name, rules = r.Name, r.Rules
	case *rbacv1.ClusterRole:
		resource, name, rules, aggregates = "clusterroles", r.Name, r.Rules, selects(r.AggregationRule)
		if o, ok := old.(*rbacv1.ClusterRole); ok && selects(o.AggregationRule) {
			aggregates = true
		}
	}
	if e.allowed(ctx, u, "escalate", resource, namespace, requestName) {
		return nil
	}
	gr := rbacv1.Resource(resource)
	if err := e.noEscalation(u, namespace, rules); err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	if aggregates {
		if err := e.noEscalation(u, namespace, fullAuthority); err != nil {
			return apierrors.NewForbidden(gr, name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
		}
	}
	return nil
}

func selects(r *rbacv1.AggregationRule) bool {
	return r != nil && len(r.ClusterRoleSelectors) > 0
}

// checkBinding refuses a binding to a role whose permissions u does not
// hold, unless u may "bind" that role. A role of another kind than Role
// or ClusterRole is kube's 500, before validation could refuse it.
func (e *Escalation) checkBinding(ctx context.Context, u *user.Info, namespace, _ string, obj, _ runtime.Object) error {
	resource, name, ref := "rolebindings", "", rbacv1.RoleRef{}
	switch b := obj.(type) {
	case *rbacv1.RoleBinding:
		name, ref = b.Name, b.RoleRef
	case *rbacv1.ClusterRoleBinding:
		resource, name, ref = "clusterrolebindings", b.Name, b.RoleRef
	}
	var roleResource string
	switch ref.Kind {
	case "Role":
		roleResource = "roles"
	case "ClusterRole":
		roleResource = "clusterroles"
	default:
		// kube's answer to an error that is no Status: a 500 without
		// a reason.
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 500,
			Message: fmt.Sprintf("unsupported role reference kind: %q", ref.Kind)}}
	}
	if e.allowed(ctx, u, "bind", roleResource, namespace, ref.Name) {
		return nil
	}
	if e.Rules == nil {
		return apierrors.NewForbidden(rbacv1.Resource(resource), name, errors.New("no RBAC rules to check against"))
	}
	rules, err := e.Rules.RoleRules(ref, namespace)
	if err != nil {
		return err
	}
	if err := e.noEscalation(u, namespace, rules); err != nil {
		return apierrors.NewForbidden(rbacv1.Resource(resource), name, err)
	}
	return nil
}
