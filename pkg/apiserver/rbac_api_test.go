package apiserver_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
	"github.com/cronplane/cronplane/pkg/codec"
)

// The messages and outputs in these tests are kube-apiserver v1.29.15's
// for the same requests.

// freshClusterRole and freshClusterRoleBinding delete a cluster-scoped
// object an earlier run (-count) left, and delete it again when the test
// ends.
func freshClusterRole(t *testing.T, name string) {
	t.Helper()
	fresh(t, name, func(c context.Context) error {
		return srv.Client.RbacV1().ClusterRoles().Delete(c, name, metav1.DeleteOptions{})
	})
}

func freshClusterRoleBinding(t *testing.T, name string) {
	t.Helper()
	fresh(t, name, func(c context.Context) error {
		return srv.Client.RbacV1().ClusterRoleBindings().Delete(c, name, metav1.DeleteOptions{})
	})
}

func fresh(t *testing.T, name string, del func(context.Context) error) {
	t.Helper()
	if err := del(ctx(t)); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting %s: %v", name, err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = del(c)
	})
}

func TestRBAC_CreateGetListUpdateDeleteOfEveryKind(t *testing.T) {
	ns := namespace(t)
	rbac := srv.Client.RbacV1()
	podReader := []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}

	role, err := rbac.Roles(ns).Create(ctx(t), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader", Labels: map[string]string{"app": "demo"}}, Rules: podReader}, metav1.CreateOptions{})
	if err != nil || role.UID == "" || role.Generation != 0 || len(role.Rules) != 1 {
		t.Fatalf("create role: %v %+v", err, role)
	}
	rb, err := rbac.RoleBindings(ns).Create(ctx(t), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "read-pods"},
		RoleRef:    rbacv1.RoleRef{Kind: "Role", Name: "reader"},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: "alice"}, {Kind: "ServiceAccount", Name: "default"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// kube's defaults: the apiGroups of the roleRef and of a User.
	if rb.RoleRef.APIGroup != rbacv1.GroupName || rb.Subjects[0].APIGroup != rbacv1.GroupName || rb.Subjects[1].APIGroup != "" {
		t.Fatalf("defaults: %+v %+v", rb.RoleRef, rb.Subjects)
	}

	freshClusterRole(t, "crud-viewer")
	freshClusterRoleBinding(t, "crud-view")
	cr, err := rbac.ClusterRoles().Create(ctx(t), &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "crud-viewer"},
		Rules:      append(podReader, rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}),
	}, metav1.CreateOptions{})
	if err != nil || cr.Namespace != "" {
		t.Fatalf("create clusterrole: %v %+v", err, cr)
	}
	crb, err := rbac.ClusterRoleBindings().Create(ctx(t), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "crud-view"},
		RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: "crud-viewer"},
		Subjects:   []rbacv1.Subject{{Kind: "Group", Name: "devs"}, {Kind: "ServiceAccount", Name: "sa", Namespace: ns}},
	}, metav1.CreateOptions{})
	if err != nil || crb.Subjects[0].APIGroup != rbacv1.GroupName {
		t.Fatalf("create clusterrolebinding: %v %+v", err, crb)
	}

	if got, err := rbac.Roles(ns).Get(ctx(t), "reader", metav1.GetOptions{}); err != nil || got.Rules[0].Verbs[1] != "list" {
		t.Fatalf("get role: %v %+v", err, got)
	}
	if list, err := rbac.Roles(ns).List(ctx(t), metav1.ListOptions{LabelSelector: "app=demo"}); err != nil || len(list.Items) != 1 {
		t.Fatalf("list roles: %v %+v", err, list)
	}
	if list, err := rbac.RoleBindings("").List(ctx(t), metav1.ListOptions{FieldSelector: "metadata.namespace=" + ns}); err != nil || len(list.Items) != 1 {
		t.Fatalf("list rolebindings in all namespaces: %v %+v", err, list)
	}
	if list, err := rbac.ClusterRoleBindings().List(ctx(t), metav1.ListOptions{FieldSelector: "metadata.name=crud-view"}); err != nil || len(list.Items) != 1 {
		t.Fatalf("list clusterrolebindings: %v %+v", err, list)
	}

	role.Rules[0].Verbs = append(role.Rules[0].Verbs, "watch")
	if updated, err := rbac.Roles(ns).Update(ctx(t), role, metav1.UpdateOptions{}); err != nil || len(updated.Rules[0].Verbs) != 3 || updated.Generation != 0 {
		t.Fatalf("update role: %v %+v", err, updated)
	}
	rb.Subjects = append(rb.Subjects, rbacv1.Subject{Kind: "Group", Name: "devs"})
	if updated, err := rbac.RoleBindings(ns).Update(ctx(t), rb, metav1.UpdateOptions{}); err != nil || updated.Subjects[2].APIGroup != rbacv1.GroupName {
		t.Fatalf("update rolebinding subjects: %v %+v", err, updated)
	}
	cr.Rules = cr.Rules[:1]
	if updated, err := rbac.ClusterRoles().Update(ctx(t), cr, metav1.UpdateOptions{}); err != nil || len(updated.Rules) != 1 {
		t.Fatalf("update clusterrole: %v %+v", err, updated)
	}
	// As in kube, a PUT of a missing object creates it.
	put, err := rbac.Roles(ns).Update(ctx(t), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "put-created"}}, metav1.UpdateOptions{})
	if err != nil || put.UID == "" {
		t.Fatalf("PUT of a missing role: %v %+v", err, put)
	}

	if err := rbac.RoleBindings(ns).Delete(ctx(t), "read-pods", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = rbac.RoleBindings(ns).Get(ctx(t), "read-pods", metav1.GetOptions{})
	if se := wantStatus(t, err, 404, metav1.StatusReasonNotFound); se.Message != `rolebindings.rbac.authorization.k8s.io "read-pods" not found` {
		t.Fatalf("message %q", se.Message)
	}
	if err := rbac.ClusterRoleBindings().Delete(ctx(t), "crud-view", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := rbac.ClusterRoles().DeleteCollection(ctx(t), metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "metadata.name=crud-viewer"}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoles().Get(ctx(t), "crud-viewer", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("clusterrole after deletecollection: %v", err)
	}
}

const (
	labelKeyMsg = `name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`
	saNameMsg   = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`
)

func TestRBAC_InvalidObjectsAnswerAsKube(t *testing.T) {
	ns := namespace(t)
	rbac := srv.Client.RbacV1()
	pods := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	cases := []struct {
		name   string
		create func() error
		want   string
	}{
		{"rule without verbs", func() error {
			_, err := rbac.Roles(ns).Create(ctx(t), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cp-r1"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}}}, metav1.CreateOptions{})
			return err
		}, `Role.rbac.authorization.k8s.io "cp-r1" is invalid: rules[0].verbs: Required value: verbs must contain at least one value`},
		{"non-resource URL in a namespace", func() error {
			_, err := rbac.Roles(ns).Create(ctx(t), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cp-r1"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}}}, metav1.CreateOptions{})
			return err
		}, `Role.rbac.authorization.k8s.io "cp-r1" is invalid: rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs`},
		{"non-resource URL and resources", func() error {
			_, err := rbac.ClusterRoles().Create(ctx(t), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cp-c1"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}, Resources: []string{"pods"}}}}, metav1.CreateOptions{})
			return err
		}, `ClusterRole.rbac.authorization.k8s.io "cp-c1" is invalid: rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: rules cannot apply to both regular resources and non-resource URLs`},
		{"name that is not a path segment", func() error {
			_, err := rbac.Roles(ns).Create(ctx(t), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: ".."}}, metav1.CreateOptions{})
			return err
		}, `Role.rbac.authorization.k8s.io ".." is invalid: metadata.name: Invalid value: "..": may not be '..'`},
		{"bad finalizers", func() error {
			_, err := rbac.Roles(ns).Create(ctx(t), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cp-f", Finalizers: []string{"foo", "a/b/c"}}}, metav1.CreateOptions{})
			return err
		}, `Role.rbac.authorization.k8s.io "cp-f" is invalid: [metadata.finalizers: Invalid value: "a/b/c": a qualified name must consist of alphanumeric characters, '-', '_' or '.', ` +
			`and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') ` +
			`with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName'), metadata.finalizers[0]: Invalid value: "foo": name is neither a standard finalizer name nor is it fully qualified]`},
		{"bad roleRef", func() error {
			_, err := rbac.RoleBindings(ns).Create(ctx(t), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cp-b1"}, RoleRef: rbacv1.RoleRef{APIGroup: "foo", Kind: "Pod"}}, metav1.CreateOptions{})
			return err
		}, `RoleBinding.rbac.authorization.k8s.io "cp-b1" is invalid: [roleRef.apiGroup: Unsupported value: "foo": supported values: "rbac.authorization.k8s.io", ` +
			`roleRef.kind: Unsupported value: "Pod": supported values: "Role", "ClusterRole", roleRef.name: Required value]`},
		{"Role bound cluster-wide", func() error {
			_, err := rbac.ClusterRoleBindings().Create(ctx(t), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cp-b1"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "x"}}, metav1.CreateOptions{})
			return err
		}, `ClusterRoleBinding.rbac.authorization.k8s.io "cp-b1" is invalid: roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"`},
		{"bad subjects", func() error {
			_, err := rbac.RoleBindings(ns).Create(ctx(t), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cp-b1"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "x"}, Subjects: []rbacv1.Subject{
				{Kind: "Bot", Name: "x"}, {Kind: "User"}, {Kind: "User", Name: "u", APIGroup: "v1"}, {Kind: "Group", Name: "g", APIGroup: "x"},
				{Kind: "ServiceAccount", Name: "Bad_Name", APIGroup: "rbac.authorization.k8s.io"}, {Kind: "ServiceAccount", Name: "ok"}, {},
			}}, metav1.CreateOptions{})
			return err
		}, `RoleBinding.rbac.authorization.k8s.io "cp-b1" is invalid: [subjects[0].kind: Unsupported value: "Bot": supported values: "ServiceAccount", "User", "Group", ` +
			`subjects[1].name: Required value, subjects[2].apiGroup: Unsupported value: "v1": supported values: "rbac.authorization.k8s.io", ` +
			`subjects[3].apiGroup: Unsupported value: "x": supported values: "rbac.authorization.k8s.io", subjects[4].name: Invalid value: "Bad_Name": ` + saNameMsg +
			`, subjects[4].apiGroup: Unsupported value: "rbac.authorization.k8s.io": supported values: "", subjects[6].name: Required value, ` +
			`subjects[6].kind: Unsupported value: "": supported values: "ServiceAccount", "User", "Group"]`},
		{"service account without namespace cluster-wide", func() error {
			_, err := rbac.ClusterRoleBindings().Create(ctx(t), &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cp-b1"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "x"},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "ok"}}}, metav1.CreateOptions{})
			return err
		}, `ClusterRoleBinding.rbac.authorization.k8s.io "cp-b1" is invalid: subjects[0].namespace: Required value`},
		{"aggregation rule without selectors", func() error {
			_, err := rbac.ClusterRoles().Create(ctx(t), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cp-agg"}, AggregationRule: &rbacv1.AggregationRule{}}, metav1.CreateOptions{})
			return err
		}, `ClusterRole.rbac.authorization.k8s.io "cp-agg" is invalid: aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil`},
		{"aggregation rule with a bad selector", func() error {
			_, err := rbac.ClusterRoles().Create(ctx(t), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cp-agg"}, AggregationRule: &rbacv1.AggregationRule{
				ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a b": "c"}}},
			}}, metav1.CreateOptions{})
			return err
		}, `ClusterRole.rbac.authorization.k8s.io "cp-agg" is invalid: [aggregationRule.clusterRoleSelectors[0].matchLabels: Invalid value: "a b": ` + labelKeyMsg +
			`, aggregationRule.clusterRoleSelectors[0]: Invalid value: "null": invalid label selector.]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			se := wantStatus(t, tc.create(), 422, metav1.StatusReasonInvalid)
			if se.Message != tc.want {
				t.Fatalf("message:\n%s\nwant:\n%s", se.Message, tc.want)
			}
		})
	}

	// Updates: the roleRef is fixed, and kube lists each error of the new
	// object twice among the causes (once in the message).
	created, err := rbac.RoleBindings(ns).Create(ctx(t), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cp-b2"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "cp-reader"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "u"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.RoleRef = rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}
	created.Subjects[0].Kind = "Bot"
	_, err = rbac.RoleBindings(ns).Update(ctx(t), created, metav1.UpdateOptions{})
	se := wantStatus(t, err, 422, metav1.StatusReasonInvalid)
	want := `RoleBinding.rbac.authorization.k8s.io "cp-b2" is invalid: [subjects[0].kind: Unsupported value: "Bot": supported values: "ServiceAccount", "User", "Group", ` +
		`roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"view"}: cannot change roleRef]`
	if se.Message != want || len(se.Details.Causes) != 3 {
		t.Fatalf("message:\n%s\nwant:\n%s\ncauses %+v", se.Message, want, se.Details.Causes)
	}
	_, err = rbac.RoleBindings(ns).Patch(ctx(t), "cp-b2", "application/merge-patch+json", []byte(`{"roleRef":{"name":"other"}}`), metav1.PatchOptions{})
	if se := wantStatus(t, err, 422, metav1.StatusReasonInvalid); !strings.HasSuffix(se.Message, `roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"Role", Name:"other"}: cannot change roleRef`) {
		t.Fatalf("patch of the roleRef: %s", se.Message)
	}

	role, err := rbac.Roles(ns).Create(ctx(t), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cp-r2"}, Rules: []rbacv1.PolicyRule{pods}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role.Labels = map[string]string{"a b": "c"}
	role.Finalizers = []string{"foo"}
	role.Rules[0].Verbs = nil
	_, err = rbac.Roles(ns).Update(ctx(t), role, metav1.UpdateOptions{})
	se = wantStatus(t, err, 422, metav1.StatusReasonInvalid)
	want = `Role.rbac.authorization.k8s.io "cp-r2" is invalid: [metadata.labels: Invalid value: "a b": ` + labelKeyMsg +
		`, metadata.finalizers[0]: Invalid value: "foo": name is neither a standard finalizer name nor is it fully qualified, rules[0].verbs: Required value: verbs must contain at least one value]`
	var fields []string
	for _, c := range se.Details.Causes {
		fields = append(fields, c.Field)
	}
	wantFields := "metadata.labels metadata.labels metadata.labels metadata.finalizers[0] rules[0].verbs metadata.labels metadata.finalizers[0] rules[0].verbs metadata.labels metadata.finalizers[0]"
	if se.Message != want || strings.Join(fields, " ") != wantFields {
		t.Fatalf("message:\n%s\nwant:\n%s\ncauses %s\nwant   %s", se.Message, want, strings.Join(fields, " "), wantFields)
	}
}

const rbacObjectsYAML = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cp-reader}
rules:
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: cp-rb}
roleRef: {kind: Role, name: cp-reader}
subjects:
- {kind: User, name: alice}
- {kind: User, name: bob}
- {kind: Group, name: devs}
- {kind: ServiceAccount, name: default, namespace: cp-rbac}
- {kind: ServiceAccount, name: other}
`

const clusterRBACObjectsYAML = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cp-cr}
rules:
- nonResourceURLs: [/healthz]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: cp-crb}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cp-cr}
subjects:
- {kind: Group, name: devs}
- {kind: ServiceAccount, name: sa1, namespace: cp-rbac}
`

func TestKubectl_GetRBACColumns(t *testing.T) {
	ns := namespace(t)
	freshClusterRole(t, "cp-cr")
	freshClusterRoleBinding(t, "cp-crb")
	dir := t.TempDir()
	mustKubectl(t, "-n", ns, "apply", "-f", writeFile(t, dir, "ns.yaml", rbacObjectsYAML))
	mustKubectl(t, "apply", "-f", writeFile(t, dir, "cluster.yaml", clusterRBACObjectsYAML))

	// Lines as kube prints them, but for ages and times; the wide cells
	// end the last line.
	for _, tc := range []struct {
		args []string
		want []string
		end  string
	}{
		{[]string{"-n", ns, "get", "role,rolebinding", "-o", "wide"}, []string{
			"NAME                                       CREATED AT",
			"role.rbac.authorization.k8s.io/cp-reader   20",
			"",
			"NAME                                          ROLE             AGE   USERS        GROUPS   SERVICEACCOUNTS",
			"rolebinding.rbac.authorization.k8s.io/cp-rb   Role/cp-reader   ",
		}, "   alice, bob   devs     cp-rbac/default, /other"},
		{[]string{"get", "clusterrole", "cp-cr"}, []string{
			"NAME    CREATED AT",
			"cp-cr   20",
		}, ""},
		{[]string{"get", "clusterrolebinding", "cp-crb", "-o", "wide"}, []string{
			"NAME     ROLE                AGE   USERS   GROUPS   SERVICEACCOUNTS",
			"cp-crb   ClusterRole/cp-cr   ",
		}, "            devs     cp-rbac/sa1"},
	} {
		out := mustKubectl(t, tc.args...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != len(tc.want) || !strings.HasSuffix(lines[len(lines)-1], tc.end) {
			t.Fatalf("kubectl %s:\n%s", strings.Join(tc.args, " "), out)
		}
		for i, w := range tc.want {
			if !strings.HasPrefix(lines[i], w) {
				t.Fatalf("kubectl %s: line %d %q, want prefix %q; output:\n%s", strings.Join(tc.args, " "), i, lines[i], w, out)
			}
		}
	}
	// No short names, as in kube: each line has only the other four columns.
	out := mustKubectl(t, "api-resources", "--api-group=rbac.authorization.k8s.io", "--no-headers")
	want := "clusterrolebindings rbac.authorization.k8s.io/v1 false ClusterRoleBinding\n" +
		"clusterroles rbac.authorization.k8s.io/v1 false ClusterRole\n" +
		"rolebindings rbac.authorization.k8s.io/v1 true RoleBinding\n" +
		"roles rbac.authorization.k8s.io/v1 true Role"
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		got = append(got, strings.Join(strings.Fields(line), " "))
	}
	if strings.Join(got, "\n") != want {
		t.Fatalf("api-resources:\n%s\nwant:\n%s", out, want)
	}
}

// kube-apiserver v1.29.15 stored these objects as the files in
// pkg/registry/rbac/testdata, from `kubectl create` of the same objects
// in namespace cp-rbac: a RoleBinding whose roleRef and subjects have no
// apiGroups, and an aggregating ClusterRole.
func TestRBAC_StoredAsKube(t *testing.T) {
	ns := namespace(t)
	rbac := srv.Client.RbacV1()
	create := metav1.CreateOptions{FieldManager: "kubectl-create"}
	demo := map[string]string{"app": "demo"}
	if _, err := rbac.RoleBindings(ns).Create(ctx(t), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "cp-kube-rolebinding", Labels: demo},
		RoleRef:    rbacv1.RoleRef{Kind: "Role", Name: "cp-reader"},
		Subjects: []rbacv1.Subject{
			{Kind: "User", Name: "alice"}, {Kind: "Group", Name: "devs"}, {Kind: "ServiceAccount", Name: "default", Namespace: "cp-rbac"},
		},
	}, create); err != nil {
		t.Fatal(err)
	}
	freshClusterRole(t, "cp-kube-clusterrole")
	if _, err := rbac.ClusterRoles().Create(ctx(t), &rbacv1.ClusterRole{
		ObjectMeta:      metav1.ObjectMeta{Name: "cp-kube-clusterrole", Labels: demo},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"cp-aggregate-to": "demo"}}}},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"", "apps"}, Resources: []string{"pods", "deployments"}, ResourceNames: []string{"one"}, Verbs: []string{"get", "list"}},
			{NonResourceURLs: []string{"/healthz", "/metrics"}, Verbs: []string{"get"}},
		},
	}, create); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		key, file string
		kind      string
		newFunc   func() runtime.Object
	}{
		{"/registry/rolebindings/" + ns + "/cp-kube-rolebinding", "kube-rolebinding.pb", "RoleBinding", func() runtime.Object { return &rbacv1.RoleBinding{} }},
		{"/registry/clusterroles/cp-kube-clusterrole", "kube-clusterrole.pb", "ClusterRole", func() runtime.Object { return &rbacv1.ClusterRole{} }},
	} {
		resp, err := srv.EtcdClient().Get(ctx(t), tc.key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("etcd %s: %v %+v", tc.key, err, resp)
		}
		want, err := os.ReadFile(filepath.Join("..", "registry", "rbac", "testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		c := codec.Protobuf(rbacv1.SchemeGroupVersion.WithKind(tc.kind), tc.newFunc)
		obj, err := c.Decode(resp.Kvs[0].Value)
		if err != nil {
			t.Fatal(err)
		}
		kubeObj, err := c.Decode(want)
		if err != nil {
			t.Fatal(err)
		}
		// What the server assigns differs: the namespace, uid and times.
		m, k := obj.(metav1.Object), kubeObj.(metav1.Object)
		m.SetNamespace(k.GetNamespace())
		m.SetUID(k.GetUID())
		m.SetCreationTimestamp(k.GetCreationTimestamp())
		mf := m.GetManagedFields()
		if len(mf) != 1 {
			t.Fatalf("%s: managedFields %+v", tc.kind, mf)
		}
		mf[0].Time = k.GetManagedFields()[0].Time
		m.SetManagedFields(mf)
		normalized, err := c.Encode(obj)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(normalized, want) {
			t.Errorf("%s: stored bytes differ from kube's:\n got %q\nwant %q", tc.kind, normalized, want)
		}
	}
}

func TestRuntimeConfig_RBACGroupCanBeTurnedOff(t *testing.T) {
	// Without the RBAC API there is no RBAC authorization.
	s := apiservertest.Start(t, func(o *apiserver.Options) {
		o.RuntimeConfig = map[string]string{"rbac.authorization.k8s.io/v1": "false"}
		o.AuthorizationModes = []string{apiserver.ModeAlwaysAllow}
	})
	if _, err := s.Client.Discovery().ServerResourcesForGroupVersion("rbac.authorization.k8s.io/v1"); !apierrors.IsNotFound(err) {
		t.Fatalf("rbac.authorization.k8s.io/v1 discovery: want NotFound, got %v", err)
	}
	if _, err := s.Client.RbacV1().ClusterRoles().List(ctx(t), metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("list clusterroles: want NotFound, got %v", err)
	}
}
