package bootstrap

import (
	"context"
	"fmt"
	"reflect"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/auth/authorizer/rbac"
)

// Client reads and writes the policy's objects (ClusterRoles and
// ClusterRoleBindings). Get returns an error for which
// apierrors.IsNotFound holds when the object does not exist.
type Client interface {
	GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error)
	CreateClusterRole(ctx context.Context, r *rbacv1.ClusterRole) error
	UpdateClusterRole(ctx context.Context, r *rbacv1.ClusterRole) error
	GetClusterRoleBinding(ctx context.Context, name string) (*rbacv1.ClusterRoleBinding, error)
	CreateClusterRoleBinding(ctx context.Context, b *rbacv1.ClusterRoleBinding) error
	UpdateClusterRoleBinding(ctx context.Context, b *rbacv1.ClusterRoleBinding) error
	DeleteClusterRoleBinding(ctx context.Context, name string) error
}

// Reconcile puts the default policy in place through c and logs what it
// changed to ctx's logger.
func Reconcile(ctx context.Context, c Client) error {
	logger := klog.FromContext(ctx)
	for _, want := range ClusterRoles() {
		if err := reconcileRole(ctx, c, want, logger); err != nil {
			return fmt.Errorf("clusterrole %s: %w", want.Name, err)
		}
	}
	for _, want := range ClusterRoleBindings() {
		if err := reconcileBinding(ctx, c, want, logger); err != nil {
			return fmt.Errorf("clusterrolebinding %s: %w", want.Name, err)
		}
	}
	return nil
}

func protected(annotations map[string]string) bool {
	return annotations[AutoUpdateAnnotation] == "false"
}

// reconcileRole creates want, or adds to the existing role the labels,
// annotations, rules and aggregation selectors it lacks. Nothing is
// taken away: an administrator's additions stay.
func reconcileRole(ctx context.Context, c Client, want *rbacv1.ClusterRole, logger klog.Logger) error {
	have, err := c.GetClusterRole(ctx, want.Name)
	if apierrors.IsNotFound(err) {
		logger.Info("Created clusterrole", "clusterRole", want.Name)
		return c.CreateClusterRole(ctx, want)
	}
	if err != nil || protected(have.Annotations) {
		return err
	}
	out := have.DeepCopy()
	out.Labels = merged(out.Labels, want.Labels)
	out.Annotations = merged(out.Annotations, want.Annotations)
	// An aggregated role's rules are the aggregation controller's to
	// write; only its selectors are reconciled.
	if want.AggregationRule != nil {
		if out.AggregationRule == nil {
			out.AggregationRule = &rbacv1.AggregationRule{}
		}
		for _, s := range want.AggregationRule.ClusterRoleSelectors {
			if !containsSelector(out.AggregationRule.ClusterRoleSelectors, s) {
				out.AggregationRule.ClusterRoleSelectors = append(out.AggregationRule.ClusterRoleSelectors, s)
			}
		}
	} else {
		out.Rules = append(out.Rules, rbac.Uncovered(have.Rules, want.Rules)...)
	}
	if reflect.DeepEqual(out, have) {
		return nil
	}
	logger.Info("Reconciled clusterrole", "clusterRole", want.Name)
	return c.UpdateClusterRole(ctx, out)
}

// reconcileBinding creates want, or adds the subjects the existing
// binding lacks; a binding to another role is replaced, as roleRef cannot
// change.
func reconcileBinding(ctx context.Context, c Client, want *rbacv1.ClusterRoleBinding, logger klog.Logger) error {
	have, err := c.GetClusterRoleBinding(ctx, want.Name)
	if apierrors.IsNotFound(err) {
		logger.Info("Created clusterrolebinding", "clusterRoleBinding", want.Name)
		return c.CreateClusterRoleBinding(ctx, want)
	}
	if err != nil || protected(have.Annotations) {
		return err
	}
	if have.RoleRef != want.RoleRef {
		logger.Info("Replaced clusterrolebinding to bind another role", "clusterRoleBinding", want.Name, "role", want.RoleRef.Name)
		if err := c.DeleteClusterRoleBinding(ctx, want.Name); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return c.CreateClusterRoleBinding(ctx, want)
	}
	out := have.DeepCopy()
	out.Labels = merged(out.Labels, want.Labels)
	out.Annotations = merged(out.Annotations, want.Annotations)
	for _, s := range want.Subjects {
		if !containsSubject(out.Subjects, s) {
			out.Subjects = append(out.Subjects, s)
		}
	}
	if reflect.DeepEqual(out, have) {
		return nil
	}
	logger.Info("Reconciled clusterrolebinding", "clusterRoleBinding", want.Name)
	return c.UpdateClusterRoleBinding(ctx, out)
}

func merged(have, want map[string]string) map[string]string {
	if len(want) == 0 {
		return have
	}
	out := make(map[string]string, len(have)+len(want))
	for k, v := range have {
		out[k] = v
	}
	for k, v := range want {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	return out
}

func containsSelector(list []metav1.LabelSelector, s metav1.LabelSelector) bool {
	for _, o := range list {
		if reflect.DeepEqual(o, s) {
			return true
		}
	}
	return false
}

func containsSubject(list []rbacv1.Subject, s rbacv1.Subject) bool {
	for _, o := range list {
		if o.Kind == s.Kind && o.Name == s.Name && o.Namespace == s.Namespace {
			return true
		}
	}
	return false
}
