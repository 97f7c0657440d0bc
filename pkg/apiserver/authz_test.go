package apiserver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
	"github.com/cronplane/cronplane/pkg/certs"
	"github.com/cronplane/cronplane/pkg/kubeconfig"
)

// testUsers are the static tokens of the shared server: each user's
// token is "<name>-token"; bob is in the group "devs", monitor in
// "system:monitoring".
var testUsers = []string{"alice", "bob", "erin", "frank", "mallory", "applier", "monitor"}

func writeTestTokens() (string, error) {
	f, err := os.CreateTemp("", "cronplane-tokens-*.csv")
	if err != nil {
		return "", err
	}
	defer f.Close()
	for _, u := range testUsers {
		groups := ""
		switch u {
		case "bob":
			groups = `,"devs"`
		case "monitor":
			groups = `,"system:monitoring"`
		}
		fmt.Fprintf(f, "%s-token,%s,%s-uid%s\n", u, u, u, groups)
	}
	return f.Name(), nil
}

// clientAs is a client of the shared server authenticated as name.
func clientAs(t *testing.T, name string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(srv.Config)
	cfg.BearerToken = name + "-token"
	return kubernetes.NewForConfigOrDie(cfg)
}

// kubectlAs runs kubectl as name (a test user, or "" for the admin).
func kubectlAs(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	cfg := srv.KubeconfigPath
	if name != "" {
		cfg = filepath.Join(t.TempDir(), name+".kubeconfig")
		if err := kubeconfig.Write(cfg, kubeconfig.Config{Server: srv.URL, CAData: srv.CAData, Token: name + "-token", UserName: name}); err != nil {
			t.Fatal(err)
		}
	}
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(c, path, append([]string{"--kubeconfig", cfg}, args...)...).CombinedOutput()
	return string(out), err
}

func mustCreate(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func role(ns, name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
}

func bindUser(ns, name, kind, roleName string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: roleName}, Subjects: subjects}
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func rules(groups, resources, verbs []string, names ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: groups, Resources: resources, Verbs: verbs, ResourceNames: names}
}

func s(v ...string) []string { return v }

// waitAllowed waits until the RBAC index has taken in a change: it is
// fed by a watch, so a grant takes effect a moment after it is stored.
func waitAllowed(t *testing.T, who, verb, resource, ns string, groups ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r, err := srv.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx(t), &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: who, Groups: groups, ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: "batch", Resource: resource, Namespace: ns},
		}}, metav1.CreateOptions{})
		if err == nil && r.Status.Allowed {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never became allowed to %s %s in %s", who, verb, resource, ns)
}

func TestRBAC_DecidesByUserVerbResourceNamespaceSubresource(t *testing.T) {
	team, other := namespace(t), namespace(t)
	admin := srv.Client.RbacV1()
	_, err := srv.Client.BatchV1().CronJobs(team).Create(ctx(t), cronJob("nightly"), metav1.CreateOptions{})
	mustCreate(t, err)
	_, err = admin.Roles(team).Create(ctx(t), role(team, "cronjob-reader",
		rules(s("batch"), s("cronjobs"), s("get", "list", "watch")),
		rules(s("batch"), s("cronjobs"), s("update"), "nightly")), metav1.CreateOptions{})
	mustCreate(t, err)
	_, err = admin.RoleBindings(team).Create(ctx(t), bindUser(team, "alice-reads", "Role", "cronjob-reader", user("alice")), metav1.CreateOptions{})
	mustCreate(t, err)
	_, err = admin.ClusterRoles().Create(ctx(t), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: team + "-status"},
		Rules: []rbacv1.PolicyRule{rules(s("batch"), s("cronjobs/status"), s("get", "update", "patch"))}}, metav1.CreateOptions{})
	mustCreate(t, err)
	_, err = admin.RoleBindings(team).Create(ctx(t), bindUser(team, "devs-status", "ClusterRole", team+"-status",
		rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "devs"}), metav1.CreateOptions{})
	mustCreate(t, err)
	// A binding of a role that does not exist grants nothing, and says so.
	_, err = admin.RoleBindings(team).Create(ctx(t), bindUser(team, "mallory-missing", "ClusterRole", team+"-missing", user("mallory")), metav1.CreateOptions{})
	mustCreate(t, err)
	_, err = admin.Roles(team).Create(ctx(t), role(team, "patcher", rules(s("batch"), s("cronjobs"), s("patch", "get"))), metav1.CreateOptions{})
	mustCreate(t, err)
	_, err = admin.RoleBindings(team).Create(ctx(t), bindUser(team, "applier-patches", "Role", "patcher", user("applier")), metav1.CreateOptions{})
	mustCreate(t, err)
	waitAllowed(t, "alice", "list", "cronjobs", team)
	waitAllowed(t, "applier", "patch", "cronjobs", team)

	cj := "/apis/batch/v1/namespaces/" + team + "/cronjobs"
	apply := `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"%s"},"spec":{"schedule":"@daily","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}}`
	cases := []struct {
		name, user, method, path, contentType, body string
		code                                        int
		message                                     string
	}{
		{"a Role grants in its namespace", "alice", "GET", cj, "", "", 200, ""},
		{"watch is its own verb, granted too", "alice", "GET", cj + "?watch=1&timeoutSeconds=1", "", "", 200, ""},
		{"not in another namespace", "alice", "GET", "/apis/batch/v1/namespaces/" + other + "/cronjobs", "", "", 403,
			`cronjobs.batch is forbidden: User "alice" cannot list resource "cronjobs" in API group "batch" in the namespace "` + other + `"`},
		{"not across namespaces", "alice", "GET", "/apis/batch/v1/cronjobs", "", "", 403,
			`cronjobs.batch is forbidden: User "alice" cannot list resource "cronjobs" in API group "batch" at the cluster scope`},
		{"not another verb", "alice", "DELETE", cj + "/nightly", "", "", 403,
			`cronjobs.batch "nightly" is forbidden: User "alice" cannot delete resource "cronjobs" in API group "batch" in the namespace "` + team + `"`},
		{"a dry run needs what the write needs", "alice", "POST", cj + "?dryRun=All", "application/json", fmt.Sprintf(apply, "dry"), 403, ""},
		{"a subresource is authorized apart", "alice", "GET", cj + "/nightly/status", "", "", 403,
			`cronjobs.batch "nightly" is forbidden: User "alice" cannot get resource "cronjobs/status" in API group "batch" in the namespace "` + team + `"`},
		{"a binding of a missing role is the reason", "mallory", "GET", cj, "", "", 403,
			`cronjobs.batch is forbidden: User "mallory" cannot list resource "cronjobs" in API group "batch" in the namespace "` + team + `": RBAC: clusterrole.rbac.authorization.k8s.io "` + team + `-missing" not found`},
		{"a group's binding", "bob", "GET", cj + "/nightly/status", "", "", 200, ""},
		{"the subresource does not grant the resource", "bob", "GET", cj + "/nightly", "", "", 403, ""},
		{"apply of an existing object needs patch", "applier", "PATCH", cj + "/nightly?fieldManager=x&force=true", "application/apply-patch+yaml", fmt.Sprintf(apply, "nightly"), 200, ""},
		{"apply of a new object also needs create", "applier", "PATCH", cj + "/fresh?fieldManager=x", "application/apply-patch+yaml", fmt.Sprintf(apply, "fresh"), 403,
			`cronjobs.batch "fresh" is forbidden: `},
		{"anonymous may read the version", "", "GET", "/version", "", "", 200, ""},
		{"anonymous may read health", "", "GET", "/readyz", "", "", 200, ""},
		{"anonymous may not discover", "", "GET", "/api", "", "", 403, `forbidden: User "system:anonymous" cannot get path "/api"`},
		{"a user may discover", "alice", "GET", "/apis/batch/v1", "", "", 200, ""},
		{"a user may not read what nothing grants", "alice", "GET", "/api/v1/namespaces", "", "", 403, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			token := ""
			if tc.user != "" {
				token = tc.user + "-token"
			}
			resp, body := raw(t, tc.method, tc.path, token, tc.contentType, tc.body)
			if resp.StatusCode != tc.code {
				t.Fatalf("%d, want %d: %s", resp.StatusCode, tc.code, body)
			}
			if tc.message != "" && !strings.Contains(body, strings.ReplaceAll(tc.message, `"`, `\"`)) {
				t.Fatalf("body %s\nwant the message %s", body, tc.message)
			}
		})
	}
	// The refused apply created nothing.
	if _, err := srv.Client.BatchV1().CronJobs(team).Get(ctx(t), "fresh", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("refused apply: %v", err)
	}
}

func TestRBAC_BadTokenIs401EvenWherePublic(t *testing.T) {
	for _, path := range []string{"/version", "/healthz", "/api"} {
		if resp, body := raw(t, "GET", path, "no-such-token", "", ""); resp.StatusCode != 401 {
			t.Errorf("%s with a bad token: %d %s", path, resp.StatusCode, body)
		}
	}
}

func TestRBAC_EscalationIsRefused(t *testing.T) {
	team := namespace(t)
	admin := srv.Client.RbacV1()
	// erin administers roles and bindings in team and reads CronJobs.
	_, err := admin.Roles(team).Create(ctx(t), role(team, "role-admin",
		rules(s("rbac.authorization.k8s.io"), s("roles", "rolebindings"), s("create", "update", "get")),
		rules(s("batch"), s("cronjobs"), s("get"))), metav1.CreateOptions{})
	mustCreate(t, err)
	_, err = admin.RoleBindings(team).Create(ctx(t), bindUser(team, "erin", "Role", "role-admin", user("erin")), metav1.CreateOptions{})
	mustCreate(t, err)
	waitAllowed(t, "erin", "get", "cronjobs", team)
	erin := clientAs(t, "erin").RbacV1()

	if _, err := erin.Roles(team).Create(ctx(t), role(team, "reader", rules(s("batch"), s("cronjobs"), s("get"))), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a role within erin's own rights: %v", err)
	}
	_, err = erin.Roles(team).Create(ctx(t), role(team, "deleter", rules(s("batch"), s("cronjobs"), s("get", "delete"))), metav1.CreateOptions{})
	want := `roles.rbac.authorization.k8s.io "deleter" is forbidden: user "erin" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
		`{APIGroups:["batch"], Resources:["cronjobs"], Verbs:["delete"]}`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Fatalf("a role granting more: %v\nwant %s", err, want)
	}
	// Updating a role she may write to grant more is refused too.
	r, err := erin.Roles(team).Get(ctx(t), "reader", metav1.GetOptions{})
	mustCreate(t, err)
	r.Rules[0].Verbs = s("*")
	if _, err := erin.Roles(team).Update(ctx(t), r, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("widening a role by update: %v", err)
	}
	// Binding herself to cluster-admin in her namespace.
	_, err = erin.RoleBindings(team).Create(ctx(t), bindUser(team, "grab", "ClusterRole", "cluster-admin", user("erin")), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "is attempting to grant RBAC permissions not currently held") {
		t.Fatalf("binding cluster-admin: %v", err)
	}
	// A binding of a role she holds all of is fine.
	if _, err := erin.RoleBindings(team).Create(ctx(t), bindUser(team, "share", "Role", "reader", user("alice")), metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding a role within her rights: %v", err)
	}
	// Cluster-wide, she may not even try.
	_, err = clientAs(t, "erin").RbacV1().ClusterRoleBindings().Create(ctx(t), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: team + "-grab"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}, Subjects: []rbacv1.Subject{user("erin")}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("binding cluster-admin cluster-wide: %v", err)
	}
	// With the escalate verb, she may write roles beyond her rights; with
	// bind, bind a role beyond them.
	_, err = admin.Roles(team).Create(ctx(t), role(team, "escalator",
		rules(s("rbac.authorization.k8s.io"), s("roles"), s("escalate")),
		rules(s("rbac.authorization.k8s.io"), s("clusterroles"), s("bind"), "edit")), metav1.CreateOptions{})
	mustCreate(t, err)
	_, err = admin.RoleBindings(team).Create(ctx(t), bindUser(team, "erin-escalates", "Role", "escalator", user("erin")), metav1.CreateOptions{})
	mustCreate(t, err)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err = erin.Roles(team).Create(ctx(t), role(team, "deleter", rules(s("batch"), s("cronjobs"), s("get", "delete"))), metav1.CreateOptions{})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("with escalate: %v", err)
	}
	if _, err := erin.RoleBindings(team).Create(ctx(t), bindUser(team, "edit", "ClusterRole", "edit", user("alice")), metav1.CreateOptions{}); err != nil {
		t.Fatalf("with bind on edit: %v", err)
	}
}

// The edges of kube's escalation checks: escalate granted on a role by
// name does not cover creating it (a create names nothing when it is
// authorized), an empty aggregationRule is invalid rather than an
// escalation, and a binding of an unknown kind of role is kube's 500.
func TestRBAC_EscalationEdgesAsKube(t *testing.T) {
	team := namespace(t)
	admin := srv.Client.RbacV1()
	_, err := admin.ClusterRoles().Create(ctx(t), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: team + "-writer"}, Rules: []rbacv1.PolicyRule{
		rules(s("rbac.authorization.k8s.io"), s("clusterroles", "roles", "rolebindings"), s("create", "update")),
		rules(s("rbac.authorization.k8s.io"), s("roles"), s("escalate"), "big"),
		rules(s("batch"), s("cronjobs"), s("get")),
	}}, metav1.CreateOptions{})
	mustCreate(t, err)
	_, err = admin.ClusterRoleBindings().Create(ctx(t), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: team + "-frank"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: team + "-writer"}, Subjects: []rbacv1.Subject{user("frank")}}, metav1.CreateOptions{})
	mustCreate(t, err)
	_, err = admin.Roles(team).Create(ctx(t), role(team, "big", rules(s("batch"), s("cronjobs"), s("get"))), metav1.CreateOptions{})
	mustCreate(t, err)
	waitAllowed(t, "frank", "get", "cronjobs", team)

	const rbacPath = "/apis/rbac.authorization.k8s.io/v1"
	more := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"big"},"rules":[{"apiGroups":["batch"],"resources":["jobs"],"verbs":["delete"]}]}`
	clusterRole := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"` + team + `-agg"},"aggregationRule":%s}`
	cases := []struct {
		name, method, path, body string
		code                     int
		message                  string
	}{
		{"escalate on a name does not cover a create", "POST", rbacPath + "/namespaces/" + team + "/roles?dryRun=All", more, 403,
			`roles.rbac.authorization.k8s.io \"big\" is forbidden: user \"frank\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"batch\"], Resources:[\"jobs\"], Verbs:[\"delete\"]}`},
		{"escalate on a name covers an update", "PUT", rbacPath + "/namespaces/" + team + "/roles/big?dryRun=All", more, 200, ""},
		{"an aggregationRule selecting nothing is invalid", "POST", rbacPath + "/clusterroles?dryRun=All", fmt.Sprintf(clusterRole, `{"clusterRoleSelectors":[]}`), 422,
			`aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil`},
		{"an aggregationRule takes cluster-admin", "POST", rbacPath + "/clusterroles?dryRun=All", fmt.Sprintf(clusterRole, `{"clusterRoleSelectors":[{"matchLabels":{"a":"b"}}]}`), 403,
			`is forbidden: must have cluster-admin privileges to use the aggregationRule`},
		{"a binding of an unknown kind of role", "POST", rbacPath + "/namespaces/" + team + "/rolebindings?dryRun=All",
			`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"b"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Foo","name":"big"},"subjects":[{"kind":"User","name":"frank"}]}`, 500,
			`"status":"Failure","message":"unsupported role reference kind: \"Foo\"","code":500}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := raw(t, tc.method, tc.path, "frank-token", "application/json", tc.body)
			if resp.StatusCode != tc.code || !strings.Contains(body, tc.message) {
				t.Fatalf("%d %s\nwant %d with %s", resp.StatusCode, body, tc.code, tc.message)
			}
		})
	}
}

func TestReviews_AccessRulesTokenAndSelf(t *testing.T) {
	team := namespace(t)
	_, err := srv.Client.RbacV1().Roles(team).Create(ctx(t), role(team, "reader", rules(s("batch"), s("cronjobs"), s("get", "list"))), metav1.CreateOptions{})
	mustCreate(t, err)
	_, err = srv.Client.RbacV1().RoleBindings(team).Create(ctx(t), bindUser(team, "alice", "Role", "reader", user("alice")), metav1.CreateOptions{})
	mustCreate(t, err)
	waitAllowed(t, "alice", "list", "cronjobs", team)

	sar, err := srv.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx(t), &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Group: "batch", Resource: "cronjobs", Namespace: team},
	}}, metav1.CreateOptions{})
	mustCreate(t, err)
	if want := `RBAC: allowed by RoleBinding "alice/` + team + `" of Role "reader" to User "alice"`; !sar.Status.Allowed || sar.Status.Reason != want {
		t.Fatalf("SubjectAccessReview status %+v, want allowed by %s", sar.Status, want)
	}
	_, err = srv.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx(t), &authorizationv1.SubjectAccessReview{}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "at least one of user or group must be specified") {
		t.Fatalf("an empty SubjectAccessReview: %v", err)
	}
	lsar, err := clientAs(t, "alice").AuthorizationV1().LocalSubjectAccessReviews(team).Create(ctx(t), &authorizationv1.LocalSubjectAccessReview{
		ObjectMeta: metav1.ObjectMeta{Namespace: team},
		Spec:       authorizationv1.SubjectAccessReviewSpec{User: "alice", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "delete", Group: "batch", Resource: "cronjobs", Namespace: team}},
	}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("alice may not create a LocalSubjectAccessReview (admin's right): %v %+v", err, lsar)
	}
	ssar, err := clientAs(t, "alice").AuthorizationV1().SelfSubjectAccessReviews().Create(ctx(t), &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "delete", Group: "batch", Resource: "cronjobs", Namespace: team},
	}}, metav1.CreateOptions{})
	mustCreate(t, err)
	if ssar.Status.Allowed {
		t.Fatal("alice may delete according to her SelfSubjectAccessReview")
	}
	tr, err := srv.Client.AuthenticationV1().TokenReviews().Create(ctx(t), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "bob-token"}}, metav1.CreateOptions{})
	mustCreate(t, err)
	if u := tr.Status.User; !tr.Status.Authenticated || u.Username != "bob" || strings.Join(u.Groups, ",") != "devs,system:authenticated" {
		t.Fatalf("TokenReview of bob's token: %+v", tr.Status)
	}
	tr, err = srv.Client.AuthenticationV1().TokenReviews().Create(ctx(t), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "nobody"}}, metav1.CreateOptions{})
	mustCreate(t, err)
	if tr.Status.Authenticated {
		t.Fatal("an unknown token reviewed as authenticated")
	}

	// kubectl reads the same reviews.
	kubectlCases := []struct {
		user string
		args []string
		want string
		fail bool
	}{
		{"alice", s("auth", "can-i", "list", "cronjobs.batch", "-n", team), "yes", false},
		{"alice", s("auth", "can-i", "delete", "cronjobs.batch", "-n", team), "no", true},
		{"alice", s("auth", "can-i", "--list", "-n", team), "cronjobs.batch", false},
		{"alice", s("auth", "whoami"), "alice", false},
		{"", s("auth", "can-i", "get", "cronjobs.batch", "-n", team, "--as", "alice"), "yes", false},
		{"", s("auth", "can-i", "get", "cronjobs.batch", "-n", team, "--as", "nobody", "--as-group", "devs"), "no", true},
		{"alice", s("auth", "can-i", "get", "cronjobs.batch", "-n", team, "--as", "bob"), "cannot impersonate", true},
	}
	for _, tc := range kubectlCases {
		out, err := kubectlAs(t, tc.user, tc.args...)
		if (err != nil) != tc.fail || !strings.Contains(out, tc.want) {
			t.Errorf("kubectl %v as %q: %v\n%s\nwant %q", tc.args, tc.user, err, out, tc.want)
		}
	}
}

func TestImpersonation_AllowedAndDenied(t *testing.T) {
	team := namespace(t)
	admin := srv.Client.RbacV1()
	_, err := admin.Roles(team).Create(ctx(t), role(team, "reader", rules(s("batch"), s("cronjobs"), s("list"))), metav1.CreateOptions{})
	mustCreate(t, err)
	_, err = admin.RoleBindings(team).Create(ctx(t), bindUser(team, "alice", "Role", "reader", user("alice")), metav1.CreateOptions{})
	mustCreate(t, err)
	_, err = admin.ClusterRoles().Create(ctx(t), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: team + "-be-alice"},
		Rules: []rbacv1.PolicyRule{rules(s(""), s("users"), s("impersonate"), "alice")}}, metav1.CreateOptions{})
	mustCreate(t, err)
	_, err = admin.ClusterRoleBindings().Create(ctx(t), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: team + "-mallory"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: team + "-be-alice"}, Subjects: []rbacv1.Subject{user("mallory")}}, metav1.CreateOptions{})
	mustCreate(t, err)
	waitAllowed(t, "alice", "list", "cronjobs", team)

	as := func(headers map[string][]string) (int, string) {
		cfg := rest.CopyConfig(srv.Config)
		cfg.BearerToken = "mallory-token"
		cfg.Impersonate = rest.ImpersonationConfig{UserName: headers["user"][0], Groups: headers["groups"]}
		var code int
		body, _ := kubernetes.NewForConfigOrDie(cfg).RESTClient().Get().AbsPath("/apis/batch/v1/namespaces/" + team + "/cronjobs").Do(context.Background()).StatusCode(&code).Raw()
		return code, string(body)
	}
	deadline := time.Now().Add(10 * time.Second)
	code, body := as(map[string][]string{"user": {"alice"}})
	for code != 200 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		code, body = as(map[string][]string{"user": {"alice"}})
	}
	if code != 200 {
		t.Fatalf("mallory as alice: %d %s", code, body)
	}
	code, body = as(map[string][]string{"user": {"bob"}})
	if want := `users \"bob\" is forbidden: User \"mallory\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope`; code != 403 || !strings.Contains(body, want) {
		t.Fatalf("mallory as bob: %d %s", code, body)
	}
	code, body = as(map[string][]string{"user": {"alice"}, "groups": {"system:masters"}})
	if code != 403 || !strings.Contains(body, `cannot impersonate resource \"groups\"`) {
		t.Fatalf("mallory as alice in system:masters: %d %s", code, body)
	}
	// kube's answer to a group or a uid without a user is a plain 500.
	for header, want := range map[string]string{
		"Impersonate-Group": `Internal Server Error: "/api": requested [{Group  devs    }] without impersonating a user`,
		"Impersonate-Uid":   `Internal Server Error: "/api": requested [{UID  devs  authentication.k8s.io/v1  }] without impersonating a user`,
	} {
		resp, body := rawWithHeaders(t, "GET", "/api", "mallory-token", map[string]string{header: "devs"})
		if resp != 500 || strings.TrimSpace(body) != want {
			t.Errorf("%s without a user: %d %s\nwant %s", header, resp, body, want)
		}
	}
}

func rawWithHeaders(t *testing.T, method, path, token string, headers map[string]string) (int, string) {
	t.Helper()
	cfg := rest.CopyConfig(srv.Config)
	cfg.BearerToken = token
	req := kubernetes.NewForConfigOrDie(cfg).RESTClient().Verb(method).AbsPath(path)
	for k, v := range headers {
		req = req.SetHeader(k, v)
	}
	var code int
	body, _ := req.Do(context.Background()).StatusCode(&code).Raw()
	return code, string(body)
}

func TestClientCertificates_AuthenticateUserAndGroups(t *testing.T) {
	team := namespace(t)
	_, err := srv.Client.RbacV1().Roles(team).Create(ctx(t), role(team, "reader", rules(s("batch"), s("cronjobs"), s("list"))), metav1.CreateOptions{})
	mustCreate(t, err)
	_, err = srv.Client.RbacV1().RoleBindings(team).Create(ctx(t), bindUser(team, "ops", "Role", "reader",
		rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "ops"}), metav1.CreateOptions{})
	mustCreate(t, err)
	waitAllowed(t, "someone", "list", "cronjobs", team, "ops")

	withCert := func(dir, name string) kubernetes.Interface {
		f, err := certs.EnsureClient(dir, name, "carol", []string{"ops"})
		if err != nil {
			t.Fatal(err)
		}
		cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: srv.CAData, CertFile: f.CertFile, KeyFile: f.KeyFile}}
		return kubernetes.NewForConfigOrDie(cfg)
	}
	// Signed by the server's CA: carol, in the group ops.
	carol := withCert(filepath.Join(srv.DataDir(), "certs"), "test-carol")
	if _, err := carol.BatchV1().CronJobs(team).List(ctx(t), metav1.ListOptions{}); err != nil {
		t.Fatalf("carol with the server's certificate: %v", err)
	}
	review, err := carol.AuthenticationV1().SelfSubjectReviews().Create(ctx(t), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	mustCreate(t, err)
	if u := review.Status.UserInfo; u.Username != "carol" || strings.Join(u.Groups, ",") != "ops,system:authenticated" {
		t.Fatalf("carol is taken for %+v", u)
	}
	// Signed by another CA: bad credentials.
	_, err = withCert(t.TempDir(), "stranger").BatchV1().CronJobs(team).List(ctx(t), metav1.ListOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Fatalf("a certificate of another CA: %v", err)
	}
}

// With --client-ca-file the server trusts that CA alone for client
// certificates; the controller-manager's kubeconfig must still get in.
func TestClientCAFile_VerifiesItsCertificatesAndTheControllerManagerStillAuthenticates(t *testing.T) {
	pki := t.TempDir()
	dave, err := certs.EnsureClient(pki, "dave", "dave", []string{"ops"})
	mustCreate(t, err)
	s := apiservertest.Start(t, func(o *apiserver.Options) { o.ClientCAFile = dave.CAFile })
	whoami := func(cfg *rest.Config) (authenticationv1.UserInfo, error) {
		r, err := kubernetes.NewForConfigOrDie(cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx(t), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return authenticationv1.UserInfo{}, err
		}
		return r.Status.UserInfo, nil
	}
	u, err := whoami(&rest.Config{Host: s.URL, TLSClientConfig: rest.TLSClientConfig{CAData: s.CAData, CertFile: dave.CertFile, KeyFile: dave.KeyFile}})
	if err != nil || u.Username != "dave" || strings.Join(u.Groups, ",") != "ops,system:authenticated" {
		t.Fatalf("dave's certificate: %+v %v", u, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.ControllerManagerKubeconfigPath)
	mustCreate(t, err)
	if u, err := whoami(cfg); err != nil || u.Username != "system:kube-controller-manager" {
		t.Fatalf("the controller-manager's kubeconfig: %+v %v", u, err)
	}
}

func TestBootstrapPolicy_SurvivesRestartWithoutRewrites(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	withData := func(o *apiserver.Options) { o.DataDir = dataDir }
	versions := func(s *apiservertest.Server) map[string]string {
		out := map[string]string{}
		roles, err := s.Client.RbacV1().ClusterRoles().List(ctx(t), metav1.ListOptions{})
		mustCreate(t, err)
		for _, r := range roles.Items {
			out["role/"+r.Name] = r.ResourceVersion
		}
		bindings, err := s.Client.RbacV1().ClusterRoleBindings().List(ctx(t), metav1.ListOptions{})
		mustCreate(t, err)
		for _, b := range bindings.Items {
			out["binding/"+b.Name] = b.ResourceVersion
		}
		return out
	}
	first, err := apiservertest.New(withData)
	mustCreate(t, err)
	before := versions(first)
	// An administrator's addition to a default role stays.
	edit, err := first.Client.RbacV1().ClusterRoles().Get(ctx(t), "system:aggregate-to-edit", metav1.GetOptions{})
	mustCreate(t, err)
	edit.Rules = append(edit.Rules, rules(s("example.com"), s("widgets"), s("get")))
	edit, err = first.Client.RbacV1().ClusterRoles().Update(ctx(t), edit, metav1.UpdateOptions{})
	mustCreate(t, err)
	before["role/system:aggregate-to-edit"] = edit.ResourceVersion
	first.Stop()

	second, err := apiservertest.New(withData)
	mustCreate(t, err)
	defer second.Stop()
	after := versions(second)
	if len(before) < 20 || fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("the policy changed across a restart:\nbefore %v\nafter  %v", before, after)
	}
	for _, name := range s("cluster-admin", "admin", "edit", "view", "system:basic-user", "system:discovery", "system:public-info-viewer", "system:kube-controller-manager", "system:controller:cronjob-controller") {
		if _, ok := after["role/"+name]; !ok {
			t.Errorf("no clusterrole %s", name)
		}
	}
}

// The reviews answer as kube's: the body's namespace and system fields
// are the request's business, their validation errors name no kind (kube
// loses it decoding), and the answer records who wrote the spec.
func TestReviews_MetadataErrorsAndManagedFieldsAsKube(t *testing.T) {
	team := namespace(t)
	const sar = `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","metadata":%s,"spec":{"user":"alice",%s}}`
	const lsar = `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","metadata":%s,"spec":{"user":"alice",%s}}`
	get := `"resourceAttributes":{"verb":"get","group":"batch","resource":"cronjobs","namespace":"` + team + `"}`
	cases := []struct {
		name, path, body string
		code             int
		// want are parts of the answer, in order.
		want []string
	}{
		{"a namespace and system fields in the body are dropped", "/apis/authorization.k8s.io/v1/subjectaccessreviews?fieldManager=me",
			fmt.Sprintf(sar, `{"namespace":"elsewhere","uid":"u","creationTimestamp":"2020-01-01T00:00:00Z"}`, get), 201,
			[]string{`"metadata":{"creationTimestamp":null,"managedFields":[{"manager":"me","operation":"Update","apiVersion":"authorization.k8s.io/v1","time":`,
				`"fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:resourceAttributes":{".":{},"f:group":{},"f:namespace":{},"f:resource":{},"f:verb":{}},"f:user":{}}}}]},"spec":`}},
		{"a local review takes the namespace of its path", "/apis/authorization.k8s.io/v1/namespaces/" + team + "/localsubjectaccessreviews",
			fmt.Sprintf(lsar, `{}`, get), 201, []string{`"namespace":"` + team + `"`, `"status":{"allowed":false}`}},
		{"a local review in another namespace than its path", "/apis/authorization.k8s.io/v1/namespaces/" + team + "/localsubjectaccessreviews",
			fmt.Sprintf(lsar, `{"namespace":"elsewhere"}`, get), 400, []string{`"message":"the namespace of the provided object does not match the namespace sent on the request"`}},
		{"an invalid review", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
			fmt.Sprintf(sar, `{}`, `"resourceAttributes":{"verb":"get"},"nonResourceAttributes":{"path":"/x","verb":"get"}`), 422,
			[]string{`"message":".authorization.k8s.io \"\" is invalid: spec.nonResourceAttributes: Invalid value: authorization.NonResourceAttributes{Path:\"/x\", Verb:\"get\"}: cannot be specified in combination with resourceAttributes"`,
				`"details":{"group":"authorization.k8s.io","causes":`}},
		{"a local review of a path", "/apis/authorization.k8s.io/v1/namespaces/" + team + "/localsubjectaccessreviews",
			fmt.Sprintf(lsar, `{}`, `"nonResourceAttributes":{"path":"/x","verb":"get"}`), 422,
			[]string{`"message":".authorization.k8s.io \"\" is invalid: spec.nonResourceAttributes: Invalid value: authorization.NonResourceAttributes{Path:\"/x\", Verb:\"get\"}: disallowed on this kind of request"`}},
		{"a self review records its writer too", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews?fieldManager=me",
			`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{` + get + `}}`, 201, []string{`"managedFields":[{"manager":"me"`}},
		{"a self subject review echoes nothing and is created now", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
			`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview","metadata":{"name":"me"}}`, 201,
			[]string{`"metadata":{"creationTimestamp":"20`, `"status":{"userInfo":{"username":"alice"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The reviews of others are the admin's to ask for.
			token := srv.AdminToken
			if strings.Contains(tc.path, "/self") {
				token = "alice-token"
			}
			resp, body := raw(t, "POST", tc.path, token, "application/json", tc.body)
			if resp.StatusCode != tc.code {
				t.Fatalf("%d, want %d: %s", resp.StatusCode, tc.code, body)
			}
			rest := body
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("body %s\nwant, after what came before, %s", body, w)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

// --authorization-mode lists kube's modes, asked in order after
// system:masters; AlwaysDeny only has no opinion, as in kube.
func TestAuthorizationModes_AskedInOrderAsKube(t *testing.T) {
	tokens, err := writeTestTokens()
	mustCreate(t, err)
	t.Cleanup(func() { _ = os.Remove(tokens) })
	for _, bad := range [][]string{nil, {"Foo"}, {"RBAC", "RBAC"}} {
		if cp, err := apiservertest.New(func(o *apiserver.Options) { o.AuthorizationModes = bad }); err == nil {
			cp.Stop()
			t.Errorf("--authorization-mode %v was taken", bad)
		}
	}
	cases := []struct {
		modes []string
		// The answers to alice (bound to list CronJobs in her namespace),
		// bob (bound to nothing) and an anonymous request.
		alice, bob, anonymous int
		bobSays               string
	}{
		{[]string{"AlwaysDeny", "RBAC"}, 200, 403, 403, `cannot list resource "cronjobs" in API group "batch" in the namespace "team": Everything is forbidden.`},
		{[]string{"AlwaysDeny"}, 403, 403, 403, `: Everything is forbidden.`},
		// Node decides for nodes alone: the others are RBAC's.
		{[]string{"Node", "RBAC"}, 200, 403, 403, `cannot list resource "cronjobs" in API group "batch" in the namespace "team"`},
		{[]string{"RBAC", "AlwaysAllow"}, 200, 200, 200, ""},
		{[]string{"AlwaysAllow"}, 200, 200, 200, ""},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.modes, ","), func(t *testing.T) {
			cp := apiservertest.Start(t, func(o *apiserver.Options) { o.AuthorizationModes, o.TokenAuthFile = tc.modes, tokens })
			_, err := cp.Client.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{})
			mustCreate(t, err)
			_, err = cp.Client.RbacV1().Roles("team").Create(ctx(t), role("team", "reader", rules(s("batch"), s("cronjobs"), s("list"))), metav1.CreateOptions{})
			mustCreate(t, err)
			_, err = cp.Client.RbacV1().RoleBindings("team").Create(ctx(t), bindUser("team", "alice", "Role", "reader", user("alice")), metav1.CreateOptions{})
			mustCreate(t, err)
			get := func(token string) (int, string) {
				req, _ := http.NewRequest("GET", cp.URL+"/apis/batch/v1/namespaces/team/cronjobs", nil)
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				resp, err := cp.HTTPClient().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(body)
			}
			deadline := time.Now().Add(10 * time.Second)
			code, body := get("alice-token")
			for code != tc.alice && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				code, body = get("alice-token")
			}
			if code != tc.alice {
				t.Fatalf("alice: %d %s", code, body)
			}
			if code, body := get("bob-token"); code != tc.bob || !strings.Contains(body, strings.ReplaceAll(tc.bobSays, `"`, `\"`)) {
				t.Fatalf("bob: %d %s, want %d saying %s", code, body, tc.bob, tc.bobSays)
			}
			if code, body := get(""); code != tc.anonymous {
				t.Fatalf("anonymous: %d %s", code, body)
			}
		})
	}
}
