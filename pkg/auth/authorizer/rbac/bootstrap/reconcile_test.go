package bootstrap

import (
	"context"
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/cronplane/cronplane/pkg/auth/authorizer/rbac"
)

// memClient keeps the policy's objects in maps and counts writes.
type memClient struct {
	roles    map[string]*rbacv1.ClusterRole
	bindings map[string]*rbacv1.ClusterRoleBinding
	writes   int
}

func newMemClient() *memClient {
	return &memClient{roles: map[string]*rbacv1.ClusterRole{}, bindings: map[string]*rbacv1.ClusterRoleBinding{}}
}

func (m *memClient) GetClusterRole(_ context.Context, name string) (*rbacv1.ClusterRole, error) {
	if r, ok := m.roles[name]; ok {
		return r.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("clusterroles"), name)
}
func (m *memClient) CreateClusterRole(_ context.Context, r *rbacv1.ClusterRole) error {
	m.writes++
	m.roles[r.Name] = r.DeepCopy()
	return nil
}
func (m *memClient) UpdateClusterRole(ctx context.Context, r *rbacv1.ClusterRole) error {
	return m.CreateClusterRole(ctx, r)
}
func (m *memClient) GetClusterRoleBinding(_ context.Context, name string) (*rbacv1.ClusterRoleBinding, error) {
	if b, ok := m.bindings[name]; ok {
		return b.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("clusterrolebindings"), name)
}
func (m *memClient) CreateClusterRoleBinding(_ context.Context, b *rbacv1.ClusterRoleBinding) error {
	m.writes++
	m.bindings[b.Name] = b.DeepCopy()
	return nil
}
func (m *memClient) UpdateClusterRoleBinding(ctx context.Context, b *rbacv1.ClusterRoleBinding) error {
	return m.CreateClusterRoleBinding(ctx, b)
}
func (m *memClient) DeleteClusterRoleBinding(_ context.Context, name string) error {
	m.writes++
	delete(m.bindings, name)
	return nil
}

func containsRule(rules []rbacv1.PolicyRule, r rbacv1.PolicyRule) bool {
	for _, o := range rules {
		if reflect.DeepEqual(o, r) {
			return true
		}
	}
	return false
}

func reconcile(t *testing.T, c *memClient) {
	t.Helper()
	if err := Reconcile(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

func TestReconcile_CreatesThenLeavesTheSamePolicyAlone(t *testing.T) {
	c := newMemClient()
	reconcile(t, c)
	if len(c.roles) != len(ClusterRoles()) || len(c.bindings) != len(ClusterRoleBindings()) {
		t.Fatalf("%d roles and %d bindings, want %d and %d", len(c.roles), len(c.bindings), len(ClusterRoles()), len(ClusterRoleBindings()))
	}
	c.writes = 0
	reconcile(t, c)
	if c.writes != 0 {
		t.Fatalf("a second start wrote %d times", c.writes)
	}
}

func TestReconcile_RestoresWhatIsMissingAndKeepsAdditions(t *testing.T) {
	c := newMemClient()
	reconcile(t, c)
	// Someone removed a rule from view's source role and added one of
	// their own; someone else rebound system:discovery to one user.
	r := c.roles["system:aggregate-to-view"]
	extra := rbacv1.PolicyRule{APIGroups: []string{"example.com"}, Resources: []string{"widgets"}, Verbs: []string{"get"}}
	r.Rules = append(r.Rules[1:], extra)
	c.bindings["system:discovery"].Subjects = []rbacv1.Subject{{Kind: "User", Name: "alice"}}
	// A protected role is left as it is.
	c.roles["system:basic-user"].Annotations[AutoUpdateAnnotation] = "false"
	c.roles["system:basic-user"].Rules = nil
	// A binding to another role is replaced.
	c.bindings["cluster-admin"].RoleRef.Name = "view"
	reconcile(t, c)

	// As kube does, what is missing comes back one verb at a time.
	got := c.roles["system:aggregate-to-view"].Rules
	var want []rbacv1.PolicyRule
	for _, role := range ClusterRoles() {
		if role.Name == "system:aggregate-to-view" {
			want = role.Rules
		}
	}
	if missing := rbac.Uncovered(got, want); len(missing) != 0 || !containsRule(got, extra) {
		t.Errorf("rules after reconcile: %v (missing %v)", got, missing)
	}
	if s := c.bindings["system:discovery"].Subjects; len(s) != 2 || s[0].Name != "alice" || s[1].Name != "system:authenticated" {
		t.Errorf("subjects after reconcile: %v", s)
	}
	if len(c.roles["system:basic-user"].Rules) != 0 {
		t.Error("a role annotated autoupdate=false was changed")
	}
	if ref := c.bindings["cluster-admin"].RoleRef.Name; ref != "cluster-admin" {
		t.Errorf("cluster-admin binds %s", ref)
	}
}

// kube-apiserver v1.29's roles of the controllers, as it serves them,
// each bound to the controller's account in kube-system.
func TestClusterRoles_ControllersHaveKubesRulesAndBinding(t *testing.T) {
	want := map[string][]rbacv1.PolicyRule{
		"job-controller": {
			{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "patch", "update", "watch"}},
			{APIGroups: []string{"batch"}, Resources: []string{"jobs/status"}, Verbs: []string{"update"}},
			{APIGroups: []string{"batch"}, Resources: []string{"jobs/finalizers"}, Verbs: []string{"update"}},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "delete", "list", "patch", "watch"}},
			{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
		},
		"pod-garbage-collector": {
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"delete", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch"}},
		},
	}
	roles := map[string]*rbacv1.ClusterRole{}
	for _, r := range ClusterRoles() {
		roles[r.Name] = r
	}
	bindings := map[string]*rbacv1.ClusterRoleBinding{}
	for _, b := range ClusterRoleBindings() {
		bindings[b.Name] = b
	}
	for name, rules := range want {
		if role := roles[ControllerRolePrefix+name]; role == nil || !reflect.DeepEqual(role.Rules, rules) {
			t.Errorf("%s: role %+v", name, role)
		}
		b := bindings[ControllerRolePrefix+name]
		if b == nil || b.RoleRef.Name != ControllerRolePrefix+name {
			t.Errorf("%s: binding %+v", name, b)
			continue
		}
		if s := b.Subjects; len(s) != 1 || s[0].Kind != rbacv1.ServiceAccountKind || s[0].Name != name || s[0].Namespace != "kube-system" {
			t.Errorf("%s: subjects %+v", name, s)
		}
	}
}

// kube-apiserver v1.29's system:auth-delegator and
// system:service-account-issuer-discovery, as it serves them, and the
// latter's binding to every service account.
func TestClusterRoles_DelegationAndIssuerDiscoveryAsKube(t *testing.T) {
	want := map[string][]rbacv1.PolicyRule{
		"system:auth-delegator": {
			{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
			{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
		},
		"system:service-account-issuer-discovery": {
			{NonResourceURLs: []string{"/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/"}, Verbs: []string{"get"}},
		},
	}
	for _, r := range ClusterRoles() {
		if rules, ok := want[r.Name]; ok {
			if !reflect.DeepEqual(r.Rules, rules) {
				t.Errorf("%s: rules %+v, want %+v", r.Name, r.Rules, rules)
			}
			if r.Labels["kubernetes.io/bootstrapping"] != "rbac-defaults" || r.Annotations[AutoUpdateAnnotation] != "true" {
				t.Errorf("%s: labels %v, annotations %v", r.Name, r.Labels, r.Annotations)
			}
			delete(want, r.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("missing roles: %v", want)
	}
	bound := map[string][]rbacv1.Subject{}
	for _, b := range ClusterRoleBindings() {
		bound[b.Name] = b.Subjects
	}
	if s := bound["system:service-account-issuer-discovery"]; !reflect.DeepEqual(s, []rbacv1.Subject{{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "system:serviceaccounts"}}) {
		t.Errorf("system:service-account-issuer-discovery binds %+v", s)
	}
	if _, ok := bound["system:auth-delegator"]; ok {
		t.Error("system:auth-delegator is bound; kube binds it to nobody")
	}
}
