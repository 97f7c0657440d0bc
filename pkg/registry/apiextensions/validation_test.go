package apiextensions

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"

	apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"
	cronschema "github.com/cronplane/cronplane/pkg/schema"
)

// checkSchema is the server's schema check but for the CEL rules.
func checkSchema(v map[string]interface{}, _ []map[string]interface{}, _ bool, fldPath *field.Path) field.ErrorList {
	_, errs := cronschema.CheckCRDSchema(v, fldPath, nil)
	return errs
}

func decodeCRD(t *testing.T, data []byte) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, crd); err != nil {
		t.Fatal(err)
	}
	SetDefaults(crd)
	return crd
}

// aggregate words errs as kube-apiserver's 422 message does after "is
// invalid: ".
func aggregate(errs field.ErrorList) string {
	if len(errs) == 0 {
		return ""
	}
	return errs.ToAggregate().Error()
}

// addresses are the pointers kube prints in some bad values; they vary.
var addresses = regexp.MustCompile(`0x[0-9a-f]+`)

// The fixture holds definitions with common mistakes and, for each,
// kube-apiserver v1.29.15's answer to their creation (the message after
// `is invalid: `, empty when it accepted the definition): names, scope,
// versions, structural schemas and their junctors, int-or-string,
// list and map markers, defaults, the status root, scale paths, printer
// columns, conversion webhooks, protected groups. The metadata errors
// other than the definition's name are the generic store's, so the
// fixture has none.
func TestValidate_CreateAsKube(t *testing.T) {
	data, err := os.ReadFile("testdata/kube-crd-validation.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name string          `json:"name"`
		Kube string          `json:"kube"`
		CRD  json.RawMessage `json:"crd"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			crd := decodeCRD(t, c.CRD)
			s := Strategy{SchemaCheck: checkSchema}
			s.PrepareForCreate(crd)
			got := aggregate(s.Validate(crd))
			if addresses.ReplaceAllString(got, "0x") != addresses.ReplaceAllString(c.Kube, "0x") {
				t.Errorf("got\n%s\nkube says\n%s", got, c.Kube)
			}
		})
	}
}

const approvedCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"widgets.x.k8s.io","annotations":{"api-approved.kubernetes.io":"https://github.com/kubernetes/kubernetes/pull/1"}},
 "spec":{"group":"x.k8s.io","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},
  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`

// Updates as kube-apiserver v1.29.15 answers them: the approval of a
// protected group may stay missing or invalid but not become so; group
// and plural never change, scope and kind not once established; the
// name is not checked again.
func TestValidate_UpdateAsKube(t *testing.T) {
	established := func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Status.SetCondition(apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue})
	}
	annotate := func(v string) func(*apiextensionsv1.CustomResourceDefinition) {
		return func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Annotations = map[string]string{KubeAPIApprovedAnnotation: v}
		}
	}
	for _, c := range []struct {
		name        string
		old, update func(*apiextensionsv1.CustomResourceDefinition)
		want        string
	}{
		{"ApprovalRemoved", nil, annotate(""),
			`metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111`},
		{"ApprovalMadeInvalid", nil, annotate("bad"),
			`metadata.annotations[api-approved.kubernetes.io]: Invalid value: "bad": protected groups must have approval annotation "api-approved.kubernetes.io" with either a URL or a reason starting with "unapproved", see https://github.com/kubernetes/enhancements/pull/1111`},
		{"InvalidApprovalKept", annotate("bad"), annotate("worse"), ""},
		{"MissingApprovalKept", annotate(""), annotate(""), ""},
		{"ApprovalBypassed", nil, annotate("unapproved, testing only"), ""},
		{"PluralIsImmutable", nil, func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Names.Plural = "gizmos" },
			`spec.names.plural: Invalid value: "gizmos": field is immutable`},
		{"GroupIsImmutable", nil, func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Group = "y.k8s.io" },
			`spec.group: Invalid value: "y.k8s.io": field is immutable`},
		{"ScopeChangesBeforeEstablished", nil, func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Scope = "Cluster" }, ""},
		{"ScopeIsImmutableOnceEstablished", established, func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec.Scope = "Cluster" },
			`spec.scope: Invalid value: "Cluster": field is immutable`},
		{"KindIsImmutableOnceEstablished", established, func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Names.Kind, crd.Spec.Names.ListKind = "Gizmo", "GizmoList"
		}, `spec.names.kind: Invalid value: "Gizmo": field is immutable`},
	} {
		t.Run(c.name, func(t *testing.T) {
			old := decodeCRD(t, []byte(approvedCRD))
			s := Strategy{SchemaCheck: checkSchema}
			s.PrepareForCreate(old)
			if c.old != nil {
				c.old(old)
			}
			crd := old.DeepCopy()
			c.update(crd)
			s.PrepareForUpdate(crd, old)
			if got := aggregate(s.ValidateUpdate(crd, old)); got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}

// The schema, subresources and columns that all versions share are
// reported once, at the spec's level; those that differ at each version.
func TestValidate_PathsFollowWhatVersionsShare(t *testing.T) {
	crd := decodeCRD(t, []byte(`{"metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},
	 "versions":[
	  {"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"a":{}}}},
	   "subresources":{"scale":{"specReplicasPath":"spec.r","statusReplicasPath":".status.r"}},"additionalPrinterColumns":[{"name":"A","type":"colour","jsonPath":".a"}]},
	  {"name":"v2","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","properties":{"a":{}}}},
	   "subresources":{"scale":{"specReplicasPath":".spec.r","statusReplicasPath":".status.r"}},"additionalPrinterColumns":[{"name":"A","type":"colour","jsonPath":".a"}]}]}}`))
	s := Strategy{SchemaCheck: checkSchema}
	s.PrepareForCreate(crd)
	got := aggregate(s.Validate(crd))
	want := `[spec.versions[0].subresources.scale.specReplicasPath: Invalid value: "spec.r": must be a simple json path starting with ., ` +
		`spec.validation.openAPIV3Schema.properties[a].type: Required value: must not be empty for specified object fields, ` +
		`spec.additionalPrinterColumns[0].type: Invalid value: "colour": must be one of boolean,date,integer,number,string]`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestAPIApprovalState(t *testing.T) {
	for _, c := range []struct {
		value string
		want  APIApproval
	}{
		{"", APIApprovalMissing},
		{"https://github.com/kubernetes/enhancements/pull/1111", APIApproved},
		{"unapproved, experimental", APIApprovalBypassed},
		{"github.com/pull/1", APIApprovalInvalid},
	} {
		if got, _ := APIApprovalState(map[string]string{KubeAPIApprovedAnnotation: c.value}); got != c.want {
			t.Errorf("%q: %v, want %v", c.value, got, c.want)
		}
	}
	for group, want := range map[string]bool{"k8s.io": true, "a.k8s.io": true, "kubernetes.io": true, "x.kubernetes.io": true, "xk8s.io": false, "example.com": false} {
		if IsProtectedGroup(group) != want {
			t.Errorf("IsProtectedGroup(%q) = %v", group, !want)
		}
	}
}

// The status subresource keeps a status update to the accepted names:
// kube lets the stored versions be rewritten there.
func TestStatusStrategy_StoredVersionsAreFree(t *testing.T) {
	old := decodeCRD(t, []byte(approvedCRD))
	Strategy{}.PrepareForCreate(old)
	crd := old.DeepCopy()
	crd.Status.StoredVersions = []string{"v0"}
	if errs := (statusStrategy{}).ValidateUpdate(crd, old); len(errs) > 0 {
		t.Error(errs)
	}
	crd.Status.AcceptedNames = apiextensionsv1.CustomResourceDefinitionNames{Plural: "Bad_Plural"}
	if errs := (statusStrategy{}).ValidateUpdate(crd, old); !strings.Contains(aggregate(errs), "status.acceptedNames.plural") {
		t.Errorf("got %v", errs)
	}
}
