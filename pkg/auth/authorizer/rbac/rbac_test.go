package rbac

import (
	"context"
	"fmt"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	"github.com/cronplane/cronplane/pkg/auth/user"
)

func rule(groups, resources, verbs []string, names ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: groups, Resources: resources, Verbs: verbs, ResourceNames: names}
}

func l(s ...string) []string { return s }

// testIndex is a small cluster: alice reads CronJobs in "team" through a
// Role, bob administers batch everywhere through a ClusterRole, the
// group "auditors" reads every status subresource, a service account
// writes Jobs in "team", and one binding names a role that is missing.
func testIndex(t testing.TB) *Index {
	x := NewIndex()
	feed := func(kind string, objs ...runtime.Object) {
		x.Handler(kind).Replace(objs)
	}
	feed("ClusterRole",
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "batch-admin"}, Rules: []rbacv1.PolicyRule{rule(l("batch"), l("*"), l("*"))}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "status-reader"}, Rules: []rbacv1.PolicyRule{rule(l("*"), l("*/status"), l("get"))}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "health"}, Rules: []rbacv1.PolicyRule{{NonResourceURLs: l("/healthz", "/readyz/*"), Verbs: l("get")}}},
	)
	feed("Role",
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "cronjob-reader"}, Rules: []rbacv1.PolicyRule{
			rule(l("batch"), l("cronjobs"), l("get", "list", "watch")),
			rule(l("batch"), l("cronjobs"), l("update"), "nightly"),
		}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "job-writer"}, Rules: []rbacv1.PolicyRule{rule(l("batch"), l("jobs"), l("create", "delete"))}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "cronjob-lister"}, Rules: []rbacv1.PolicyRule{rule(l("batch"), l("cronjobs"), l("list"))}},
	)
	feed("ClusterRoleBinding",
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-batch"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "batch-admin"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "auditors"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "status-reader"},
			Subjects: []rbacv1.Subject{{Kind: "Group", Name: "auditors"}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "health"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "health"},
			Subjects: []rbacv1.Subject{{Kind: "Group", Name: user.AllUnauthenticated}, {Kind: "Group", Name: user.AllAuthenticated}}},
		// A service account subject without a namespace binds nobody
		// cluster-wide.
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "nowhere"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "batch-admin"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "robot"}}},
	)
	feed("RoleBinding",
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "alice-reads"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "cronjob-reader"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "frank-lists"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "cronjob-lister"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "frank"}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "robot-writes"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "job-writer"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "robot"}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "carol-batch"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "batch-admin"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "carol"}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "dangling"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "gone"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "dave"}}},
	)
	return x
}

func users() map[string]*user.Info {
	return map[string]*user.Info{
		"alice":   {Name: "alice", Groups: l(user.AllAuthenticated)},
		"bob":     {Name: "bob", Groups: l(user.AllAuthenticated)},
		"carol":   {Name: "carol", Groups: l(user.AllAuthenticated)},
		"dave":    {Name: "dave", Groups: l(user.AllAuthenticated)},
		"frank":   {Name: "frank", Groups: l(user.AllAuthenticated)},
		"auditor": {Name: "erin", Groups: l("auditors", user.AllAuthenticated)},
		"robot":   {Name: "system:serviceaccount:team:robot", Groups: l("system:serviceaccounts", "system:serviceaccounts:team", user.AllAuthenticated)},
		"anon":    {Name: user.Anonymous, Groups: l(user.AllUnauthenticated)},
	}
}

func TestAuthorize_UserVerbResourceNamespaceSubresource(t *testing.T) {
	z := Authorizer{Index: testIndex(t)}
	cases := []struct {
		user, verb, group, resource, sub, ns, name string
		allowed                                    bool
		reason                                     string
	}{
		// A Role grants in its namespace only.
		{"alice", "list", "batch", "cronjobs", "", "team", "", true, `RBAC: allowed by RoleBinding "alice-reads/team" of Role "cronjob-reader" to User "alice"`},
		{"alice", "watch", "batch", "cronjobs", "", "team", "", true, ""},
		{"alice", "list", "batch", "cronjobs", "", "other", "", false, ""},
		{"alice", "list", "batch", "cronjobs", "", "", "", false, ""},
		// list and watch are separate verbs; so are the verbs of writes.
		{"frank", "list", "batch", "cronjobs", "", "team", "", true, ""},
		{"frank", "watch", "batch", "cronjobs", "", "team", "", false, ""},
		{"frank", "get", "batch", "cronjobs", "", "team", "x", false, ""},
		{"alice", "delete", "batch", "cronjobs", "", "team", "x", false, ""},
		{"alice", "create", "batch", "cronjobs", "", "team", "", false, ""},
		// resourceNames restrict to the named object.
		{"alice", "update", "batch", "cronjobs", "", "team", "nightly", true, ""},
		{"alice", "update", "batch", "cronjobs", "", "team", "hourly", false, ""},
		// A subresource is authorized apart from its resource.
		{"alice", "get", "batch", "cronjobs", "status", "team", "x", false, ""},
		{"auditor", "get", "batch", "cronjobs", "status", "team", "x", true, `RBAC: allowed by ClusterRoleBinding "auditors" of ClusterRole "status-reader" to Group "auditors"`},
		{"auditor", "get", "batch", "cronjobs", "", "team", "x", false, ""},
		{"auditor", "update", "", "namespaces", "status", "", "x", false, ""},
		// The wrong group is not the right one.
		{"alice", "list", "", "cronjobs", "", "team", "", false, ""},
		// A ClusterRoleBinding grants everywhere, cluster scope included.
		{"bob", "delete", "batch", "jobs", "", "anywhere", "j", true, `RBAC: allowed by ClusterRoleBinding "bob-batch" of ClusterRole "batch-admin" to User "bob"`},
		{"bob", "list", "batch", "cronjobs", "", "", "", true, ""},
		{"bob", "get", "batch", "cronjobs", "status", "x", "y", true, ""},
		{"bob", "list", "", "configmaps", "", "x", "", false, ""},
		// A RoleBinding to a ClusterRole grants in its namespace only.
		{"carol", "create", "batch", "jobs", "", "team", "", true, `RBAC: allowed by RoleBinding "carol-batch/team" of ClusterRole "batch-admin" to User "carol"`},
		{"carol", "create", "batch", "jobs", "", "other", "", false, ""},
		// A service account is bound by its namespace and name.
		{"robot", "create", "batch", "jobs", "", "team", "", true, `RBAC: allowed by RoleBinding "robot-writes/team" of Role "job-writer" to ServiceAccount "robot/team"`},
		{"robot", "create", "batch", "jobs", "", "other", "", false, ""},
		{"robot", "list", "batch", "jobs", "", "", "", false, ""},
		// A missing role is the reason for no opinion.
		{"dave", "get", "batch", "cronjobs", "", "team", "x", false, `RBAC: role.rbac.authorization.k8s.io "gone" not found`},
	}
	us := users()
	for _, tc := range cases {
		name := fmt.Sprintf("%s %s %s/%s/%s in %q", tc.user, tc.verb, tc.group, tc.resource, tc.sub, tc.ns)
		t.Run(name, func(t *testing.T) {
			a := authorizer.Attributes{User: us[tc.user], Verb: tc.verb, ResourceRequest: true, APIGroup: tc.group, APIVersion: "v1",
				Resource: tc.resource, Subresource: tc.sub, Namespace: tc.ns, Name: tc.name}
			d, reason, err := z.Authorize(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			if (d == authorizer.Allow) != tc.allowed {
				t.Fatalf("decision %v (%s), want allowed=%v", d, reason, tc.allowed)
			}
			if d == authorizer.Deny {
				t.Fatal("RBAC never denies")
			}
			if tc.reason != "" && reason != tc.reason {
				t.Fatalf("reason %q, want %q", reason, tc.reason)
			}
		})
	}
}

func TestAuthorize_NonResourceURLs(t *testing.T) {
	z := Authorizer{Index: testIndex(t)}
	us := users()
	cases := []struct {
		user, verb, path string
		allowed          bool
	}{
		{"anon", "get", "/healthz", true},
		{"alice", "get", "/healthz", true},
		{"anon", "get", "/readyz/etcd", true},
		{"anon", "get", "/readyz", false},
		{"anon", "post", "/healthz", false},
		{"anon", "get", "/api", false},
	}
	for _, tc := range cases {
		d, _, _ := z.Authorize(context.Background(), authorizer.Attributes{User: us[tc.user], Verb: tc.verb, Path: tc.path})
		if (d == authorizer.Allow) != tc.allowed {
			t.Errorf("%s %s %s: %v, want allowed=%v", tc.user, tc.verb, tc.path, d, tc.allowed)
		}
	}
}

func TestIndex_FollowsChangesAndDeletes(t *testing.T) {
	x := testIndex(t)
	z := Authorizer{Index: x}
	alice := users()["alice"]
	can := func() bool {
		d, _, _ := z.Authorize(context.Background(), authorizer.Attributes{User: alice, Verb: "list", ResourceRequest: true, APIGroup: "batch", Resource: "cronjobs", Namespace: "team"})
		return d == authorizer.Allow
	}
	if !can() {
		t.Fatal("alice cannot list before any change")
	}
	// The binding moves to another subject.
	x.Handler("RoleBinding").Set(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "alice-reads"},
		RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "cronjob-reader"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "zed"}}})
	if can() {
		t.Fatal("alice can list after her binding moved to zed")
	}
	x.Handler("RoleBinding").Set(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "alice-reads"},
		RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "cronjob-reader"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}})
	if !can() {
		t.Fatal("alice cannot list after her binding came back")
	}
	// The role loses the rule, then the role goes.
	x.Handler("Role").Set(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "cronjob-reader"}})
	if can() {
		t.Fatal("alice can list after the rule was removed")
	}
	x.Handler("Role").Delete(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "cronjob-reader"}})
	_, reason, _ := z.Authorize(context.Background(), authorizer.Attributes{User: alice, Verb: "list", ResourceRequest: true, APIGroup: "batch", Resource: "cronjobs", Namespace: "team"})
	if !strings.Contains(reason, `role.rbac.authorization.k8s.io "cronjob-reader" not found`) {
		t.Fatalf("reason after the role was deleted: %q", reason)
	}
	// A relist without the binding removes it: what is left comes from
	// the cluster-wide health binding.
	x.Handler("RoleBinding").Replace(nil)
	if rules, errs := x.RulesFor(alice, "team"); len(rules) != 1 || len(rules[0].NonResourceURLs) == 0 || len(errs) != 0 {
		t.Fatalf("rules after a relist without bindings: %v %v", rules, errs)
	}
}

func TestConfirmNoEscalation_OnlyWhatTheUserHolds(t *testing.T) {
	x := testIndex(t)
	us := users()
	cases := []struct {
		user, ns string
		rules    []rbacv1.PolicyRule
		missing  string
	}{
		{"alice", "team", []rbacv1.PolicyRule{rule(l("batch"), l("cronjobs"), l("get", "list"))}, ""},
		{"alice", "team", []rbacv1.PolicyRule{rule(l("batch"), l("cronjobs"), l("update"), "nightly")}, ""},
		{"alice", "team", []rbacv1.PolicyRule{rule(l("batch"), l("cronjobs"), l("update"))}, `{APIGroups:["batch"], Resources:["cronjobs"], Verbs:["update"]}`},
		{"alice", "team", []rbacv1.PolicyRule{rule(l("batch"), l("cronjobs", "jobs"), l("get", "delete"))},
			`{APIGroups:["batch"], Resources:["cronjobs"], Verbs:["delete"]}` + "\n" + `{APIGroups:["batch"], Resources:["jobs"], Verbs:["get" "delete"]}`},
		{"alice", "other", []rbacv1.PolicyRule{rule(l("batch"), l("cronjobs"), l("get"))}, `{APIGroups:["batch"], Resources:["cronjobs"], Verbs:["get"]}`},
		{"bob", "", []rbacv1.PolicyRule{rule(l("batch"), l("cronjobs/status"), l("patch"))}, ""},
		{"bob", "", []rbacv1.PolicyRule{rule(l("*"), l("*"), l("*"))}, `{APIGroups:["*"], Resources:["*"], Verbs:["*"]}`},
		{"auditor", "", []rbacv1.PolicyRule{rule(l("batch"), l("jobs/status"), l("get"))}, ""},
		{"anon", "", []rbacv1.PolicyRule{{NonResourceURLs: l("/readyz/etcd"), Verbs: l("get")}}, ""},
		{"anon", "", []rbacv1.PolicyRule{{NonResourceURLs: l("/readyz"), Verbs: l("get")}}, `{NonResourceURLs:["/readyz"], Verbs:["get"]}`},
		// The verbs on one named object are merged, as on one resource.
		{"alice", "team", []rbacv1.PolicyRule{rule(l("batch"), l("cronjobs"), l("update", "delete"), "nightly", "daily"), rule(l("batch"), l("cronjobs"), l("patch"), "nightly")},
			`{APIGroups:["batch"], Resources:["cronjobs"], ResourceNames:["daily"], Verbs:["update" "delete"]}` + "\n" + `{APIGroups:["batch"], Resources:["cronjobs"], ResourceNames:["nightly"], Verbs:["delete" "patch"]}`},
	}
	for _, tc := range cases {
		err := x.ConfirmNoEscalation(us[tc.user], tc.ns, tc.rules)
		switch {
		case tc.missing == "" && err != nil:
			t.Errorf("%s in %q granting %v: %v", tc.user, tc.ns, tc.rules, err)
		case tc.missing != "" && (err == nil || !strings.HasSuffix(err.Error(), "not currently held:\n"+tc.missing)):
			t.Errorf("%s in %q granting %v: %v, want missing\n%s", tc.user, tc.ns, tc.rules, err, tc.missing)
		}
	}
	err := x.ConfirmNoEscalation(us["alice"], "team", []rbacv1.PolicyRule{rule(l("batch"), l("jobs"), l("get"))})
	if want := `user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %v, want it to start %q", err, want)
	}
	// The roles missing on the way are named as kube's storage names them
	// (plural), aggregated, in a list.
	x.Handler("ClusterRoleBinding").Set(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dave-nothing"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "nothing"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "dave"}}})
	err = x.ConfirmNoEscalation(us["dave"], "team", []rbacv1.PolicyRule{rule(l("batch"), l("jobs"), l("get"))})
	want := `{APIGroups:["batch"], Resources:["jobs"], Verbs:["get"]}; resolution errors: [[clusterroles.rbac.authorization.k8s.io "nothing" not found, roles.rbac.authorization.k8s.io "gone" not found]]`
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("message %v, want it to end %q", err, want)
	}
}

// BenchmarkAuthorize is the authorizer's own cost per decision, with 200
// Roles and 200 RoleBindings in the namespace besides the user's own.
func BenchmarkAuthorize(b *testing.B) {
	x := testIndex(b)
	for i := 0; i < 200; i++ {
		x.Handler("Role").Set(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: fmt.Sprintf("r%d", i)},
			Rules: []rbacv1.PolicyRule{rule(l("batch"), l("jobs"), l("get"))}})
		x.Handler("RoleBinding").Set(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: fmt.Sprintf("b%d", i)},
			RoleRef: rbacv1.RoleRef{Kind: "Role", Name: fmt.Sprintf("r%d", i)}, Subjects: []rbacv1.Subject{{Kind: "User", Name: fmt.Sprintf("u%d", i)}}})
	}
	z := Authorizer{Index: x}
	a := authorizer.Attributes{User: users()["alice"], Verb: "get", ResourceRequest: true, APIGroup: "batch", APIVersion: "v1", Resource: "cronjobs", Namespace: "team", Name: "x"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if d, _, _ := z.Authorize(context.Background(), a); d != authorizer.Allow {
			b.Fatal("not allowed")
		}
	}
}

// Missing roles are reported as kube's aggregate reports them: each
// message once, in brackets when there are several. They make the rules
// an evaluation error, not an incomplete answer (RBAC never is).
func TestMissingRoles_ReportedOnceAsKubesAggregate(t *testing.T) {
	x := testIndex(t)
	dave := users()["dave"]
	listJobs := authorizer.Attributes{User: dave, Verb: "list", ResourceRequest: true, APIGroup: "batch", Resource: "jobs", Namespace: "team"}
	one := `role.rbac.authorization.k8s.io "gone" not found`
	_, reason, _ := Authorizer{Index: x}.Authorize(context.Background(), listJobs)
	_, incomplete, err := Resolver{Index: x}.RulesFor(context.Background(), dave, "team")
	if reason != "RBAC: "+one || incomplete || err == nil || err.Error() != one {
		t.Fatalf("one missing role: reason %q, incomplete %v, err %v", reason, incomplete, err)
	}
	// A second binding of the same missing role, and one of a missing
	// cluster role.
	x.Handler("RoleBinding").Set(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "dangling-again"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "gone"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "dave"}}})
	x.Handler("ClusterRoleBinding").Set(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dave-nothing"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "nothing"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "dave"}}})
	both := `[clusterrole.rbac.authorization.k8s.io "nothing" not found, ` + one + `]`
	_, reason, _ = Authorizer{Index: x}.Authorize(context.Background(), listJobs)
	_, incomplete, err = authorizer.RuleResolvers{Resolver{Index: x}}.RulesFor(context.Background(), dave, "team")
	if reason != "RBAC: "+both || incomplete || err == nil || err.Error() != both {
		t.Fatalf("two missing roles: reason %q, incomplete %v, err %v", reason, incomplete, err)
	}
}

// A binding naming the user several ways (by name and by group) counts
// once, and its grant names the first of its subjects that applies, as
// kube's does.
func TestBindingOfSeveralSubjects_CountsOnceForTheFirstThatApplies(t *testing.T) {
	x := testIndex(t)
	x.Handler("Role").Set(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "job-lister"}, Rules: []rbacv1.PolicyRule{rule(l("batch"), l("jobs"), l("list"))}})
	x.Handler("RoleBinding").Set(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "everyone"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "job-lister"},
		Subjects: []rbacv1.Subject{{Kind: "Group", Name: user.AllAuthenticated}, {Kind: "User", Name: "frank"}}})
	frank := users()["frank"]
	_, reason, _ := Authorizer{Index: x}.Authorize(context.Background(), authorizer.Attributes{User: frank, Verb: "list", ResourceRequest: true, APIGroup: "batch", Resource: "jobs", Namespace: "team"})
	if want := `RBAC: allowed by RoleBinding "everyone/team" of Role "job-lister" to Group "system:authenticated"`; reason != want {
		t.Fatalf("reason %q, want %q", reason, want)
	}
	rules, _ := x.RulesFor(frank, "team")
	n := 0
	for _, r := range rules {
		if len(r.Resources) == 1 && r.Resources[0] == "jobs" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the binding's rule came %d times: %v", n, rules)
	}
}
