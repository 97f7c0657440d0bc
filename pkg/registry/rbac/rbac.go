// Package rbac registers the resources of rbac.authorization.k8s.io/v1:
// roles and rolebindings (namespaced), clusterroles and
// clusterrolebindings (cluster-scoped), with kube's defaults, validation
// and Table columns, and with kube's escalation checks on writes (see
// Escalation). Deciding what the objects allow is the authorizer's.
package rbac

import (
	"context"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// Resources registers roles, rolebindings, clusterroles and
// clusterrolebindings; their writes are checked against esc.
func Resources(esc *Escalation) []*generic.Resource {
	return []*generic.Resource{
		resource("Role", true,
			func() runtime.Object { return &rbacv1.Role{} },
			func() runtime.Object { return &rbacv1.RoleList{} },
			nil, nil, roleStrategy{}, esc.checkRole),
		resource("RoleBinding", true,
			func() runtime.Object { return &rbacv1.RoleBinding{} },
			func() runtime.Object { return &rbacv1.RoleBindingList{} },
			defaultRoleBinding, roleBindingTable, roleBindingStrategy{}, esc.checkBinding),
		resource("ClusterRole", false,
			func() runtime.Object { return &rbacv1.ClusterRole{} },
			func() runtime.Object { return &rbacv1.ClusterRoleList{} },
			nil, nil, clusterRoleStrategy{}, esc.checkRole),
		resource("ClusterRoleBinding", false,
			func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
			func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
			defaultClusterRoleBinding, clusterRoleBindingTable, clusterRoleBindingStrategy{}, esc.checkBinding),
	}
}

// resource registers one kind. kube gives these kinds no short names and
// no categories, and roles no Table columns beyond Name and Created At.
func resource(kind string, namespaced bool, newFunc, newList func() runtime.Object, defaults func(runtime.Object), table *rest.TableSpec, s generic.Strategy,
	check func(ctx context.Context, u *user.Info, namespace, name string, obj, old runtime.Object) error) *generic.Resource {
	gvk := rbacv1.SchemeGroupVersion.WithKind(kind)
	return &generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: gvk,
			Plural:           strings.ToLower(kind) + "s",
			Singular:         strings.ToLower(kind),
			Namespaced:       namespaced,
			New:              newFunc,
			NewList:          newList,
			Default:          defaults,
			Table:            table,
		},
		Codec:          codec.Protobuf(gvk, newFunc),
		Strategy:       s,
		NameValidation: validateName,
		Serve: func(st *generic.Store) (rest.Storage, map[string]rest.Storage) {
			return guarded{Store: st, check: check}, nil
		},
	}
}

// rbacStrategy is what the four kinds share: kube lets a PUT of a missing
// object create it, and keeps no generation or status.
type rbacStrategy struct{ generic.DefaultStrategy }

func (rbacStrategy) AllowCreateOnUpdate() bool { return true }

type roleStrategy struct{ rbacStrategy }

func (roleStrategy) Validate(obj runtime.Object) field.ErrorList {
	r := obj.(*rbacv1.Role)
	return append(validateFinalizers(r.Finalizers), validateRules(r.Rules, true)...)
}

func (s roleStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	r := obj.(*rbacv1.Role)
	return updateErrors(&r.ObjectMeta, &old.(*rbacv1.Role).ObjectMeta, true, s.Validate(obj))
}

type clusterRoleStrategy struct{ rbacStrategy }

func (clusterRoleStrategy) Validate(obj runtime.Object) field.ErrorList {
	return validateClusterRole(obj.(*rbacv1.ClusterRole), false)
}

// ValidateUpdate leaves out the label value checks of the selectors when
// the stored clusterrole already fails them (it predates them), as kube
// does; kube still refuses such a selector, which it cannot build.
func (clusterRoleStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	cr, oldCR := obj.(*rbacv1.ClusterRole), old.(*rbacv1.ClusterRole)
	content := validateClusterRole(cr, hasInvalidSelectorLabelValue(oldCR))
	return updateErrors(&cr.ObjectMeta, &oldCR.ObjectMeta, false, content)
}

func validateClusterRole(cr *rbacv1.ClusterRole, allowInvalidLabelValue bool) field.ErrorList {
	errs := append(validateFinalizers(cr.Finalizers), validateRules(cr.Rules, false)...)
	return append(errs, validateAggregationRule(cr.AggregationRule, allowInvalidLabelValue)...)
}

type roleBindingStrategy struct{ rbacStrategy }

func (roleBindingStrategy) Validate(obj runtime.Object) field.ErrorList {
	rb := obj.(*rbacv1.RoleBinding)
	return validateBinding(&rb.ObjectMeta, rb.RoleRef, rb.Subjects, true)
}

func (s roleBindingStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	rb, oldRB := obj.(*rbacv1.RoleBinding), old.(*rbacv1.RoleBinding)
	errs := updateErrors(&rb.ObjectMeta, &oldRB.ObjectMeta, true, s.Validate(obj))
	return append(errs, validateRoleRefUnchanged(rb.RoleRef, oldRB.RoleRef)...)
}

type clusterRoleBindingStrategy struct{ rbacStrategy }

func (clusterRoleBindingStrategy) Validate(obj runtime.Object) field.ErrorList {
	crb := obj.(*rbacv1.ClusterRoleBinding)
	return validateBinding(&crb.ObjectMeta, crb.RoleRef, crb.Subjects, false)
}

func (s clusterRoleBindingStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	crb, oldCRB := obj.(*rbacv1.ClusterRoleBinding), old.(*rbacv1.ClusterRoleBinding)
	errs := updateErrors(&crb.ObjectMeta, &oldCRB.ObjectMeta, false, s.Validate(obj))
	return append(errs, validateRoleRefUnchanged(crb.RoleRef, oldCRB.RoleRef)...)
}

// defaultRoleBinding and defaultClusterRoleBinding apply kube's v1
// defaults: the roleRef's apiGroup and each subject's.
func defaultRoleBinding(obj runtime.Object) {
	rb := obj.(*rbacv1.RoleBinding)
	defaultBinding(&rb.RoleRef, rb.Subjects)
}

func defaultClusterRoleBinding(obj runtime.Object) {
	crb := obj.(*rbacv1.ClusterRoleBinding)
	defaultBinding(&crb.RoleRef, crb.Subjects)
}

func defaultBinding(ref *rbacv1.RoleRef, subjects []rbacv1.Subject) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
	for i := range subjects {
		s := &subjects[i]
		// A ServiceAccount is in the core group, which is "" already;
		// an unknown kind is left for validation to refuse.
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}
