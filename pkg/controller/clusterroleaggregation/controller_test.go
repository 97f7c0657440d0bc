package clusterroleaggregation

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

func rule(verb, resource string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{""}, Resources: []string{resource}}
}

func role(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
}

func aggregating(name string, rules []rbacv1.PolicyRule, selectors ...map[string]string) *rbacv1.ClusterRole {
	r := role(name, nil, rules...)
	r.AggregationRule = &rbacv1.AggregationRule{}
	for _, s := range selectors {
		r.AggregationRule.ClusterRoleSelectors = append(r.AggregationRule.ClusterRoleSelectors, metav1.LabelSelector{MatchLabels: s})
	}
	return r
}

func lister(t *testing.T, roles ...*rbacv1.ClusterRole) rbaclisters.ClusterRoleLister {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, r := range roles {
		if err := idx.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	return rbaclisters.NewClusterRoleLister(idx)
}

// applied decodes the server-side apply patches among actions.
func applied(t *testing.T, actions []clienttesting.Action) []rbacv1.ClusterRole {
	t.Helper()
	var out []rbacv1.ClusterRole
	for _, a := range actions {
		p, ok := a.(clienttesting.PatchAction)
		if !ok || p.GetPatchType() != types.ApplyPatchType {
			t.Fatalf("unexpected action %v", a)
		}
		var cr rbacv1.ClusterRole
		if err := json.Unmarshal(p.GetPatch(), &cr); err != nil {
			t.Fatal(err)
		}
		if cr.APIVersion != "rbac.authorization.k8s.io/v1" || cr.Kind != "ClusterRole" || cr.Name != p.GetName() || cr.AggregationRule != nil || cr.Labels != nil {
			t.Fatalf("apply configuration %s", p.GetPatch())
		}
		out = append(out, cr)
	}
	return out
}

var (
	a, b, c, d = rule("get", "a"), rule("get", "b"), rule("get", "c"), rule("get", "d")
	toA, toB   = map[string]string{"to": "a"}, map[string]string{"more": "b"}
)

func TestSync_AppliesTheUnionOfMatchedRulesOnlyWhenItChanges(t *testing.T) {
	selfMatching := aggregating("agg", []rbacv1.PolicyRule{c}, toA)
	selfMatching.Labels = toA
	cases := []struct {
		name  string
		roles []*rbacv1.ClusterRole
		// want is the rules applied to "agg"; nil means no write.
		want []rbacv1.PolicyRule
	}{
		{
			"selector by selector, roles by name, each rule once",
			[]*rbacv1.ClusterRole{
				aggregating("agg", nil, toA, toB),
				role("z", toA, a, b), role("m", toA, b, c), role("c", toB, a, d), role("other", nil, rule("delete", "x")),
			},
			[]rbacv1.PolicyRule{b, c, a, d},
		},
		{
			"its own rules are not aggregated",
			[]*rbacv1.ClusterRole{selfMatching, role("x", toA, a)},
			[]rbacv1.PolicyRule{a},
		},
		{
			"rules that match already",
			[]*rbacv1.ClusterRole{aggregating("agg", []rbacv1.PolicyRule{a, b}, toA), role("x", toA, a, b)},
			nil,
		},
		{
			"the same rules in another order are rewritten",
			[]*rbacv1.ClusterRole{aggregating("agg", []rbacv1.PolicyRule{b, a}, toA), role("x", toA, a, b)},
			[]rbacv1.PolicyRule{a, b},
		},
		{
			"nothing matches any more",
			[]*rbacv1.ClusterRole{aggregating("agg", []rbacv1.PolicyRule{a}, toA)},
			[]rbacv1.PolicyRule{},
		},
		{
			"nothing matches and no rules",
			[]*rbacv1.ClusterRole{aggregating("agg", nil, toA)},
			nil,
		},
		{
			"not aggregating",
			[]*rbacv1.ClusterRole{role("agg", nil), role("x", toA, a)},
			nil,
		},
		{
			"gone",
			[]*rbacv1.ClusterRole{role("x", toA, a)},
			nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			for _, r := range tc.roles {
				objs = append(objs, r)
			}
			client := fake.NewSimpleClientset(objs...)
			ctrl := &Controller{client: client.RbacV1(), roles: lister(t, tc.roles...)}
			if err := ctrl.sync(context.Background(), "agg"); err != nil {
				t.Fatal(err)
			}
			got := applied(t, client.Actions())
			switch {
			case tc.want == nil && len(got) != 0:
				t.Fatalf("wrote %+v", got)
			case tc.want == nil:
			case len(got) != 1 || got[0].Name != "agg":
				t.Fatalf("writes %+v", got)
			case len(tc.want) == 0 && got[0].Rules != nil:
				t.Fatalf("rules %+v, want none", got[0].Rules)
			case len(tc.want) > 0 && !reflect.DeepEqual(got[0].Rules, tc.want):
				t.Fatalf("rules\n got %+v\nwant %+v", got[0].Rules, tc.want)
			}
		})
	}
}

func TestEvents_AnyClusterRoleChangeQueuesEveryAggregatingRole(t *testing.T) {
	ctrl := &Controller{
		roles: lister(t, aggregating("agg1", nil, toA), aggregating("agg2", nil, toB), role("plain", toA, a)),
		queue: workqueue.NewRateLimitingQueue(workqueue.DefaultControllerRateLimiter()),
	}
	defer ctrl.queue.ShutDown()
	ctrl.enqueueAggregating()
	if n := ctrl.queue.Len(); n != 2 {
		t.Fatalf("%d queued, want the 2 aggregating roles", n)
	}
}

// applyRulesReactor lets the fake apply set a role's rules, as the
// apiserver does for the sole owner of the atomic rules list.
func applyRulesReactor(client *fake.Clientset) clienttesting.ReactionFunc {
	return func(action clienttesting.Action) (bool, runtime.Object, error) {
		p := action.(clienttesting.PatchAction)
		var patch rbacv1.ClusterRole
		if err := json.Unmarshal(p.GetPatch(), &patch); err != nil {
			return true, nil, err
		}
		gvr := rbacv1.SchemeGroupVersion.WithResource("clusterroles")
		obj, err := client.Tracker().Get(gvr, "", p.GetName())
		if err != nil {
			return true, nil, err
		}
		cr := obj.(*rbacv1.ClusterRole).DeepCopy()
		cr.Rules = patch.Rules
		return true, cr, client.Tracker().Update(gvr, cr, "")
	}
}

func TestRun_RulesFollowTheLabelsOfOtherRoles(t *testing.T) {
	client := fake.NewSimpleClientset(aggregating("agg", nil, toA), role("x", toA, a, b))
	client.PrependReactor("patch", "clusterroles", applyRulesReactor(client))
	factory := informers.NewSharedInformerFactory(client, 0)
	ctrl := New(factory.Rbac().V1().ClusterRoles(), client.RbacV1())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	go ctrl.Run(ctx, 2)

	rulesOfAgg := func(want []rbacv1.PolicyRule) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			cr, err := client.RbacV1().ClusterRoles().Get(ctx, "agg", metav1.GetOptions{})
			return err == nil && reflect.DeepEqual(cr.Rules, want), err
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, rulesOfAgg([]rbacv1.PolicyRule{a, b})); err != nil {
		t.Fatalf("aggregated rules: %v", err)
	}
	if _, err := client.RbacV1().ClusterRoles().Update(ctx, role("x", nil, a, b), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, rulesOfAgg(nil)); err != nil {
		t.Fatalf("rules after the label went: %v", err)
	}
}
