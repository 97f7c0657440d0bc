package integration

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/cronplane/cronplane/pkg/controller/clusterroleaggregation"
)

func TestClusterRoleAggregation_LabelledRolesRulesAppearAndDisappear(t *testing.T) {
	start(t, "aggregation-solo", false)
	roles := srv.Client.RbacV1().ClusterRoles()
	bg := context.Background()
	// A label of this run's own keeps repeated runs (-count) apart.
	label := "cp-aggregate-to-" + rand.String(5)
	cleanup := func(names ...string) {
		t.Cleanup(func() {
			c, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			for _, n := range names {
				if err := roles.Delete(c, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("deleting %s: %v", n, err)
				}
			}
		})
	}
	agg, part := label+"-agg", label+"-part"
	cleanup(agg, part)
	if _, err := roles.Create(bg, &rbacv1.ClusterRole{
		ObjectMeta:      metav1.ObjectMeta{Name: agg},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podRules := []rbacv1.PolicyRule{
		{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}},
		{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}},
	}
	if _, err := roles.Create(bg, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: part, Labels: map[string]string{label: "true"}}, Rules: podRules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var aggregated *rbacv1.ClusterRole
	waitFor(t, "the labelled role's rules in the aggregating role", func() (bool, error) {
		cr, err := roles.Get(bg, agg, metav1.GetOptions{})
		aggregated = cr
		return err == nil && reflect.DeepEqual(cr.Rules, podRules), err
	})
	// Written as kube's controller writes them: a forced apply that owns
	// the rules alone.
	var owners []string
	for _, e := range aggregated.ManagedFields {
		if string(e.FieldsV1.Raw) == `{"f:rules":{}}` {
			owners = append(owners, e.Manager+"/"+string(e.Operation))
		}
	}
	if want := []string{clusterroleaggregation.FieldManager + "/Apply"}; !reflect.DeepEqual(owners, want) {
		t.Fatalf("owners of the rules %v, want %v; managedFields %+v", owners, want, aggregated.ManagedFields)
	}

	unlabelled, err := roles.Get(bg, part, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unlabelled.Labels = nil
	if _, err := roles.Update(bg, unlabelled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rules to leave the aggregating role", func() (bool, error) {
		cr, err := roles.Get(bg, agg, metav1.GetOptions{})
		aggregated = cr
		return err == nil && len(cr.Rules) == 0, err
	})
	for _, e := range aggregated.ManagedFields {
		if e.Manager == clusterroleaggregation.FieldManager {
			t.Fatalf("the controller still owns fields: %+v", aggregated.ManagedFields)
		}
	}
}

// The default roles admin, edit and view are filled by aggregation, as in
// kube: a user bound to view reads CronJobs, one bound to edit writes them,
// and admin also administers roles.
func TestClusterRoleAggregation_DefaultRolesGrantWhatKubesDo(t *testing.T) {
	start(t, "aggregation-defaults", false)
	bg := context.Background()
	can := func(role, verb, group, resource string) func() (bool, error) {
		return func() (bool, error) {
			cr, err := srv.Client.RbacV1().ClusterRoles().Get(bg, role, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, r := range cr.Rules {
				if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && (slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*")) {
					return true, nil
				}
			}
			return false, nil
		}
	}
	waitFor(t, "view to read cronjobs", can("view", "list", "batch", "cronjobs"))
	waitFor(t, "edit to create cronjobs", can("edit", "create", "batch", "cronjobs"))
	waitFor(t, "edit to read cronjobs, from view", can("edit", "get", "batch", "cronjobs"))
	waitFor(t, "admin to write rolebindings", can("admin", "create", "rbac.authorization.k8s.io", "rolebindings"))
	waitFor(t, "admin to delete jobs, from edit", can("admin", "delete", "batch", "jobs"))
}
