// Package clusterroleaggregation owns the clusterrole aggregation
// controller: the rules of every ClusterRole with an aggregationRule are
// the union of the rules of the other ClusterRoles its selectors match,
// written back with server-side apply, as kube's controller writes them,
// whenever a ClusterRole changes. It sees the cluster only through
// clients.
package clusterroleaggregation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	rbacclient "k8s.io/client-go/kubernetes/typed/rbac/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/cronplane/cronplane/pkg/controller/worker"
)

// FieldManager owns the aggregated rules, as it does in kube.
const FieldManager = "clusterrole-aggregation-controller"

// Controller keeps the rules of aggregating ClusterRoles.
type Controller struct {
	client rbacclient.ClusterRolesGetter
	roles  rbaclisters.ClusterRoleLister
	synced cache.InformerSynced
	queue  workqueue.RateLimitingInterface
}

// New builds the controller.
func New(roles rbacinformers.ClusterRoleInformer, client rbacclient.ClusterRolesGetter) *Controller {
	c := &Controller{
		client: client,
		roles:  roles.Lister(),
		synced: roles.Informer().HasSynced,
		queue:  workqueue.NewNamedRateLimitingQueue(workqueue.DefaultControllerRateLimiter(), "ClusterRoleAggregator"),
	}
	// Which aggregating roles a change affects depends on old and new
	// labels and selectors; the roles are few, so every change queues all
	// aggregating roles, as in kube.
	_, _ = roles.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(interface{}) { c.enqueueAggregating() },
		UpdateFunc: func(_, _ interface{}) { c.enqueueAggregating() },
		DeleteFunc: func(interface{}) { c.enqueueAggregating() },
	})
	return c
}

func (c *Controller) enqueueAggregating() {
	all, err := c.roles.List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("listing cluster roles: %w", err))
		return
	}
	for _, r := range all {
		if r.AggregationRule != nil {
			c.queue.Add(r.Name)
		}
	}
}

// Run aggregates with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return
	}
	worker.Loop[string]{
		Queue:    c.queue,
		Sync:     worker.Plain(c.sync),
		Describe: func(key string) string { return "aggregating cluster role " + key },
	}.Start(ctx, workers)
	<-ctx.Done()
}

// sync writes the aggregated rules of the named role when they differ
// from its rules.
func (c *Controller) sync(ctx context.Context, name string) error {
	role, err := c.roles.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if role.AggregationRule == nil {
		return nil
	}
	rules, err := c.aggregate(role)
	if err != nil {
		return err
	}
	// Semantic equality: no rules and an empty list are the same.
	if equality.Semantic.DeepEqual(rules, role.Rules) {
		return nil
	}
	apply := rbacv1ac.ClusterRole(name)
	for _, r := range rules {
		apply.WithRules(rbacv1ac.PolicyRule().
			WithVerbs(r.Verbs...).
			WithAPIGroups(r.APIGroups...).
			WithResources(r.Resources...).
			WithResourceNames(r.ResourceNames...).
			WithNonResourceURLs(r.NonResourceURLs...))
	}
	// The controller owns the rules alone: forcing takes them over from
	// whoever wrote them before, and applying none gives them up.
	_, err = c.client.ClusterRoles().Apply(ctx, apply, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	return err
}

// aggregate returns the rules of the roles role's selectors match, other
// than role itself: selector by selector, the matching roles by name,
// each role's rules in order, every rule once.
func (c *Controller) aggregate(role *rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	var rules []rbacv1.PolicyRule
	for i := range role.AggregationRule.ClusterRoleSelectors {
		selector, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, err
		}
		matched, err := c.roles.List(selector)
		if err != nil {
			return nil, err
		}
		slices.SortFunc(matched, func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
		for _, m := range matched {
			if m.Name == role.Name {
				continue
			}
			for _, r := range m.Rules {
				seen := slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, r) })
				if !seen {
					rules = append(rules, r)
				}
			}
		}
	}
	return rules, nil
}
