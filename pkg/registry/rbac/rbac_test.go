package rbac

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/registry/generic"
)

// The messages in these tests are kube-apiserver v1.29's for the same
// objects. The store adds its metadata checks in front of a strategy's.

func message(kind, name string, errs field.ErrorList) string {
	if len(errs) == 0 {
		return ""
	}
	return apierrors.NewInvalid(rbacv1.SchemeGroupVersion.WithKind(kind).GroupKind(), name, errs).Error()
}

func resources(t *testing.T) map[string]*generic.Resource {
	t.Helper()
	out := map[string]*generic.Resource{}
	for _, r := range Resources(&Escalation{}) {
		out[r.Kind] = r
	}
	return out
}

func TestResources_NamesAndScopesAsKubeDiscovery(t *testing.T) {
	want := map[string]struct {
		plural, singular string
		namespaced       bool
	}{
		"Role":               {"roles", "role", true},
		"RoleBinding":        {"rolebindings", "rolebinding", true},
		"ClusterRole":        {"clusterroles", "clusterrole", false},
		"ClusterRoleBinding": {"clusterrolebindings", "clusterrolebinding", false},
	}
	for kind, r := range resources(t) {
		w := want[kind]
		if r.Group != rbacv1.GroupName || r.Version != "v1" || r.Plural != w.plural || r.Singular != w.singular || r.Namespaced != w.namespaced ||
			len(r.ShortNames) != 0 || len(r.Categories) != 0 || !r.Strategy.AllowCreateOnUpdate() {
			t.Errorf("%s: %+v", kind, r.Resource)
		}
	}
}

func TestRoleValidate_Rules(t *testing.T) {
	cases := []struct {
		name       string
		rules      []rbacv1.PolicyRule
		role, want string // want for a Role, and for a ClusterRole
	}{
		{"resource rule", []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}, "", ""},
		{"no verbs", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}},
			`Role.rbac.authorization.k8s.io "r" is invalid: rules[0].verbs: Required value: verbs must contain at least one value`,
			`ClusterRole.rbac.authorization.k8s.io "r" is invalid: rules[0].verbs: Required value: verbs must contain at least one value`},
		{"non-resource URL", []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}},
			`Role.rbac.authorization.k8s.io "r" is invalid: rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs`,
			""},
		{"non-resource URL and resources", []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}, Resources: []string{"pods"}}},
			`Role.rbac.authorization.k8s.io "r" is invalid: [rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs, ` +
				`rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: rules cannot apply to both regular resources and non-resource URLs]`,
			`ClusterRole.rbac.authorization.k8s.io "r" is invalid: rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: rules cannot apply to both regular resources and non-resource URLs`},
		{"no groups or resources", []rbacv1.PolicyRule{{Verbs: []string{"get"}}, {}},
			`Role.rbac.authorization.k8s.io "r" is invalid: [rules[0].apiGroups: Required value: resource rules must supply at least one api group, ` +
				`rules[0].resources: Required value: resource rules must supply at least one resource, rules[1].verbs: Required value: verbs must contain at least one value, ` +
				`rules[1].apiGroups: Required value: resource rules must supply at least one api group, rules[1].resources: Required value: resource rules must supply at least one resource]`,
			`ClusterRole.rbac.authorization.k8s.io "r" is invalid: [rules[0].apiGroups: Required value: resource rules must supply at least one api group, ` +
				`rules[0].resources: Required value: resource rules must supply at least one resource, rules[1].verbs: Required value: verbs must contain at least one value, ` +
				`rules[1].apiGroups: Required value: resource rules must supply at least one api group, rules[1].resources: Required value: resource rules must supply at least one resource]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns"}, Rules: tc.rules}
			if got := message("Role", "r", roleStrategy{}.Validate(role)); got != tc.role {
				t.Errorf("Role:\n got %s\nwant %s", got, tc.role)
			}
			cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Rules: tc.rules}
			if got := message("ClusterRole", "r", clusterRoleStrategy{}.Validate(cr)); got != tc.want {
				t.Errorf("ClusterRole:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

const nameMsg = `name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`

func TestClusterRoleValidate_AggregationRuleSelectors(t *testing.T) {
	cases := []struct {
		name string
		rule *rbacv1.AggregationRule
		want string
	}{
		{"none", nil, ""},
		{"one selector", &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a": "b"}}}}, ""},
		{"no selectors", &rbacv1.AggregationRule{},
			`ClusterRole.rbac.authorization.k8s.io "agg" is invalid: aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil`},
		{"bad label key", &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"a b": "c"}}}},
			`ClusterRole.rbac.authorization.k8s.io "agg" is invalid: [aggregationRule.clusterRoleSelectors[0].matchLabels: Invalid value: "a b": ` + nameMsg +
				`, aggregationRule.clusterRoleSelectors[0]: Invalid value: "null": invalid label selector.]`},
		{"values with Exists", &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: metav1.LabelSelectorOpExists, Values: []string{"x"}}}}}},
			"ClusterRole.rbac.authorization.k8s.io \"agg\" is invalid: [aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist', " +
				`aggregationRule.clusterRoleSelectors[0]: Invalid value: "null": invalid label selector.]`},
		{"unknown operator", &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bogus"}}}}},
			`ClusterRole.rbac.authorization.k8s.io "agg" is invalid: [aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator: Invalid value: "Bogus": not a valid selector operator, ` +
				`aggregationRule.clusterRoleSelectors[0]: Invalid value: "null": invalid label selector.]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"}, AggregationRule: tc.rule}
			if got := message("ClusterRole", "agg", clusterRoleStrategy{}.Validate(cr)); got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

const saNameMsg = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`

func TestBindingValidate_RoleRefAndSubjects(t *testing.T) {
	cases := []struct {
		name       string
		ref        rbacv1.RoleRef
		subjects   []rbacv1.Subject
		namespaced bool
		want       string
	}{
		{"valid", rbacv1.RoleRef{Kind: "Role", Name: "r"}, []rbacv1.Subject{{Kind: "User", Name: "u"}, {Kind: "ServiceAccount", Name: "sa"}}, true, ""},
		{"bad roleRef", rbacv1.RoleRef{APIGroup: "foo", Kind: "Pod"}, nil, true,
			`RoleBinding.rbac.authorization.k8s.io "b" is invalid: [roleRef.apiGroup: Unsupported value: "foo": supported values: "rbac.authorization.k8s.io", ` +
				`roleRef.kind: Unsupported value: "Pod": supported values: "Role", "ClusterRole", roleRef.name: Required value]`},
		{"roleRef name not a path segment", rbacv1.RoleRef{Kind: "Role", Name: "a/b"}, nil, true,
			`RoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef.name: Invalid value: "a/b": may not contain '/'`},
		{"Role bound cluster-wide", rbacv1.RoleRef{Kind: "Role", Name: "x"}, nil, false,
			`ClusterRoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"`},
		{"bad subjects", rbacv1.RoleRef{Kind: "Role", Name: "x"}, []rbacv1.Subject{
			{Kind: "Bot", Name: "x"}, {Kind: "User"}, {Kind: "User", Name: "u", APIGroup: "v1"}, {Kind: "Group", Name: "g", APIGroup: "x"},
			{Kind: "ServiceAccount", Name: "Bad_Name", APIGroup: "rbac.authorization.k8s.io"}, {Kind: "ServiceAccount", Name: "ok"}, {},
		}, true,
			`RoleBinding.rbac.authorization.k8s.io "b" is invalid: [subjects[0].kind: Unsupported value: "Bot": supported values: "ServiceAccount", "User", "Group", ` +
				`subjects[1].name: Required value, subjects[2].apiGroup: Unsupported value: "v1": supported values: "rbac.authorization.k8s.io", ` +
				`subjects[3].apiGroup: Unsupported value: "x": supported values: "rbac.authorization.k8s.io", subjects[4].name: Invalid value: "Bad_Name": ` + saNameMsg +
				`, subjects[4].apiGroup: Unsupported value: "rbac.authorization.k8s.io": supported values: "", subjects[6].name: Required value, ` +
				`subjects[6].kind: Unsupported value: "": supported values: "ServiceAccount", "User", "Group"]`},
		{"service account without namespace cluster-wide", rbacv1.RoleRef{Kind: "ClusterRole", Name: "x"}, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "ok"}, {Kind: "ServiceAccount", Namespace: "n"}}, false,
			`ClusterRoleBinding.rbac.authorization.k8s.io "b" is invalid: [subjects[0].namespace: Required value, subjects[1].name: Required value]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			if tc.namespaced {
				rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}, RoleRef: tc.ref, Subjects: tc.subjects}
				defaultRoleBinding(rb)
				got = message("RoleBinding", "b", roleBindingStrategy{}.Validate(rb))
			} else {
				crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, RoleRef: tc.ref, Subjects: tc.subjects}
				defaultClusterRoleBinding(crb)
				got = message("ClusterRoleBinding", "b", clusterRoleBindingStrategy{}.Validate(crb))
			}
			if got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestBindingUpdate_RoleRefIsImmutableAndErrorsAreListedTwice(t *testing.T) {
	old := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", ResourceVersion: "1"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"}}
	defaultRoleBinding(old)
	rb := old.DeepCopy()
	rb.RoleRef = rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}
	rb.Subjects = []rbacv1.Subject{{Kind: "Bot", Name: "u"}}
	defaultRoleBinding(rb)
	errs := roleBindingStrategy{}.ValidateUpdate(rb, old)
	want := `RoleBinding.rbac.authorization.k8s.io "b" is invalid: [subjects[0].kind: Unsupported value: "Bot": supported values: "ServiceAccount", "User", "Group", ` +
		`roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"view"}: cannot change roleRef]`
	if got := message("RoleBinding", "b", errs); got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	if got := strings.Join(fields, " "); got != "subjects[0].kind subjects[0].kind roleRef" {
		t.Fatalf("causes %s", got)
	}

	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", ResourceVersion: "1"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}}
	defaultClusterRoleBinding(crb)
	edited := crb.DeepCopy()
	edited.RoleRef.Name = "edit"
	want = `ClusterRoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}: cannot change roleRef`
	if got := message("ClusterRoleBinding", "b", clusterRoleBindingStrategy{}.ValidateUpdate(edited, crb)); got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	// Subjects may change; a roleRef without its defaulted apiGroup is
	// the same roleRef.
	edited = crb.DeepCopy()
	edited.RoleRef.APIGroup = ""
	edited.Subjects = []rbacv1.Subject{{Kind: "Group", Name: "g"}}
	defaultClusterRoleBinding(edited)
	if errs := (clusterRoleBindingStrategy{}).ValidateUpdate(edited, crb); len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
}

// On update kube checks the metadata of the new object in the strategy
// and again in the update validation, then the change of metadata.
func TestRoleUpdate_MetadataAndRuleErrorsInKubesCauseOrder(t *testing.T) {
	old := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", ResourceVersion: "1"}}
	r := old.DeepCopy()
	r.Labels = map[string]string{"a b": "c"}
	r.Finalizers = []string{"foo"}
	r.Rules = []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}}
	var fields []string
	for _, e := range (roleStrategy{}).ValidateUpdate(r, old) {
		fields = append(fields, e.Field)
	}
	// The store's metadata checks come first: metadata.labels twice.
	want := "metadata.labels metadata.finalizers[0] rules[0].verbs metadata.labels metadata.finalizers[0] rules[0].verbs metadata.labels metadata.finalizers[0]"
	if got := strings.Join(fields, " "); got != want {
		t.Fatalf("causes\n got %s\nwant %s", got, want)
	}
}

func TestClusterRoleUpdate_StoredBadSelectorValueIsReportedOnlyAsUnbuildable(t *testing.T) {
	old := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg", ResourceVersion: "1"}, AggregationRule: &rbacv1.AggregationRule{
		ClusterRoleSelectors: []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: metav1.LabelSelectorOpIn, Values: []string{"bad value!"}}}}},
	}}
	cr := old.DeepCopy()
	cr.Labels = map[string]string{"x": "y"}
	var fields []string
	for _, e := range (clusterRoleStrategy{}).ValidateUpdate(cr, old) {
		fields = append(fields, e.Field)
	}
	// The value is not checked again; the selector still cannot be built.
	sel := "aggregationRule.clusterRoleSelectors[0]"
	if got := strings.Join(fields, " "); got != sel+" "+sel {
		t.Fatalf("causes %s", got)
	}
	if got := len((clusterRoleStrategy{}).Validate(cr)); got != 2 {
		t.Fatalf("create: %d errors, want the value and the selector", got)
	}
}

func TestNames_ArePathSegments(t *testing.T) {
	for name, want := range map[string]string{
		"system:controller:x":    "",
		"Caps_and.dots":          "",
		strings.Repeat("a", 300): "",
		"..":                     "may not be '..'",
		".":                      "may not be '.'",
		"a/b":                    "may not contain '/'",
		"cp-a%b":                 "may not contain '%'",
	} {
		if got := strings.Join(validateName(name, false), "; "); got != want {
			t.Errorf("%q: %q, want %q", name, got, want)
		}
		if got := strings.Join(validateName(name, true), "; "); got != want {
			t.Errorf("prefix %q: %q, want %q", name, got, want)
		}
	}
}

func TestDefaults_APIGroupsOfRoleRefAndSubjects(t *testing.T) {
	rb := &rbacv1.RoleBinding{
		RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"},
		Subjects: []rbacv1.Subject{
			{Kind: "User", Name: "u"}, {Kind: "Group", Name: "g"}, {Kind: "ServiceAccount", Name: "sa"},
			{Kind: "Bot", Name: "b"}, {Kind: "User", Name: "v", APIGroup: "other"},
		},
	}
	defaultRoleBinding(rb)
	want := []string{rbacv1.GroupName, rbacv1.GroupName, "", "", "other"}
	for i, s := range rb.Subjects {
		if s.APIGroup != want[i] {
			t.Errorf("subject %s: apiGroup %q, want %q", s.Name, s.APIGroup, want[i])
		}
	}
	if rb.RoleRef.APIGroup != rbacv1.GroupName {
		t.Errorf("roleRef apiGroup %q", rb.RoleRef.APIGroup)
	}
	crb := &rbacv1.ClusterRoleBinding{RoleRef: rbacv1.RoleRef{APIGroup: "x", Kind: "ClusterRole", Name: "c"}}
	defaultClusterRoleBinding(crb)
	if crb.RoleRef.APIGroup != "x" {
		t.Errorf("a given roleRef apiGroup changed to %q", crb.RoleRef.APIGroup)
	}
}

// testdata holds what kube-apiserver v1.29.15 stored for `kubectl create`
// of a RoleBinding (roleRef and subjects without apiGroups) and of an
// aggregating ClusterRole with resource and non-resource rules.
func TestKubeStoredObjects_DecodeDefaultedAndValid(t *testing.T) {
	res := resources(t)
	for file, kind := range map[string]string{"kube-rolebinding.pb": "RoleBinding", "kube-clusterrole.pb": "ClusterRole"} {
		data, err := os.ReadFile("testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		r := res[kind]
		obj, err := r.StorageCodec().Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		if errs := r.Strategy.Validate(obj); len(errs) != 0 {
			t.Errorf("%s: %v", file, errs)
		}
		again := obj.DeepCopyObject()
		r.Defaults(again)
		if !equality.Semantic.DeepEqual(obj, again) {
			t.Errorf("%s: kube stored an object our defaults change", file)
		}
		reencoded, err := r.Codec.Encode(obj)
		if err != nil {
			t.Fatal(err)
		}
		if string(reencoded) != string(data) {
			t.Errorf("%s: re-encoding changes the bytes", file)
		}
	}
}

func TestBindingTable_CellsAsKube(t *testing.T) {
	created := metav1.NewTime(time.Now().Add(-90 * time.Second))
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "cp-rb", CreationTimestamp: created},
		RoleRef:    rbacv1.RoleRef{Kind: "Role", Name: "cp-reader"},
		Subjects: []rbacv1.Subject{
			{Kind: "User", Name: "alice"}, {Kind: "User", Name: "bob"}, {Kind: "Group", Name: "devs"},
			{Kind: "ServiceAccount", Name: "default", Namespace: "cp-rbac"}, {Kind: "ServiceAccount", Name: "other"},
		},
	}
	got := roleBindingTable.Cells(rb, time.Now())
	want := []interface{}{"cp-rb", "Role/cp-reader", "90s", "alice, bob", "devs", "cp-rbac/default, /other"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("cells %q, want %q", got, want)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cp-crb"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "cp-cr"},
		Subjects: []rbacv1.Subject{{Kind: "Group", Name: "devs"}}}
	got = clusterRoleBindingTable.Cells(crb, time.Now())
	want = []interface{}{"cp-crb", "ClusterRole/cp-cr", "<unknown>", "", "devs", ""}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("cells %q, want %q", got, want)
	}
	var names []string
	for _, c := range clusterRoleBindingTable.Columns {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "Name,Role,Age,Users,Groups,ServiceAccounts" {
		t.Fatalf("columns %s", got)
	}
}
