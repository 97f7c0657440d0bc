package apiextensions

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"
)

// statusClient keeps the statuses the controller writes.
type statusClient struct {
	written []*apiextensionsv1.CustomResourceDefinition
}

func (c *statusClient) UpdateStatus(_ context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	c.written = append(c.written, crd)
	return nil
}
func (c *statusClient) Update(context.Context, *apiextensionsv1.CustomResourceDefinition) error {
	return nil
}
func (c *statusClient) DeleteAll(context.Context, schema.GroupVersionResource) (int, error) {
	return 0, nil
}

// A definition in a protected group gets kube's approval condition, as
// its annotation says; others get none.
func TestSync_APIApprovalConditionForProtectedGroups(t *testing.T) {
	for _, tc := range []struct {
		group, annotation string
		status            apiextensionsv1.ConditionStatus
		reason            string
	}{
		{"example.org", "", "", ""},
		{"widgets.k8s.io", "https://github.com/kubernetes/kubernetes/pull/1", apiextensionsv1.ConditionTrue, "ApprovedAnnotation"},
		{"widgets.k8s.io", "unapproved, experimental", apiextensionsv1.ConditionFalse, "UnapprovedAnnotation"},
		{"widgets.kubernetes.io", "maybe", apiextensionsv1.ConditionFalse, "InvalidAnnotation"},
		{"k8s.io", "", apiextensionsv1.ConditionFalse, "MissingAnnotation"},
	} {
		t.Run(tc.group+"/"+tc.annotation, func(t *testing.T) {
			crd := crdWithVersions(apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true})
			crd.Spec.Group = tc.group
			crd.Name = crd.Spec.Names.Plural + "." + tc.group
			if tc.annotation != "" {
				crd.Annotations = map[string]string{"api-approved.kubernetes.io": tc.annotation}
			}
			client := &statusClient{}
			c := &Controller{Client: client}
			if err := c.Sync(context.Background(), crd, []*apiextensionsv1.CustomResourceDefinition{crd}); err != nil {
				t.Fatal(err)
			}
			if len(client.written) != 1 {
				t.Fatalf("%d status writes", len(client.written))
			}
			cond := client.written[0].Status.Condition(apiextensionsv1.KubernetesAPIApprovalPolicyConformant)
			if tc.status == "" {
				if cond != nil {
					t.Fatalf("unprotected group got %+v", cond)
				}
				return
			}
			if cond == nil || cond.Status != tc.status || cond.Reason != tc.reason || cond.Message == "" {
				t.Fatalf("condition %+v, want %s %s", cond, tc.status, tc.reason)
			}
		})
	}
}

// TestSync_NonStructuralSchemaConditionAsKube: a legacy definition, with
// spec.preserveUnknownFields or a schema that is not structural, gets
// kube-apiserver v1.29's NonStructuralSchema condition and message; one
// that no longer has either loses it.
func TestSync_NonStructuralSchemaConditionAsKube(t *testing.T) {
	const structural = `{"type":"object","properties":{"spec":{"type":"object","properties":{"a":{"type":"string"}}}}}`
	const nonStructural = `{"type":"object","properties":{"other":{"type":"object","properties":{"z":{"type":"integer","anyOf":[{"type":"string"}]}}},
	 "spec":{"properties":{"a":{"type":"string"},"c":{}}}}}`
	for _, tc := range []struct {
		name     string
		preserve bool
		schema   string
		had      bool
		want     string
	}{
		{"PreserveUnknownFields", true, structural, false, "spec.preserveUnknownFields: Invalid value: true: must be false"},
		{"NotStructural", true, nonStructural, false, "[spec.preserveUnknownFields: Invalid value: true: must be false, " +
			"spec.versions[0].schema.openAPIV3Schema.properties[other].properties[z].anyOf[0].type: Forbidden: must be empty to be structural, " +
			"spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[c].type: Required value: must not be empty for specified object fields, " +
			"spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields]"},
		{"Structural", false, structural, false, ""},
		{"NoLongerLegacy", false, structural, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := crdWithVersions(apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: decodeMap(t, tc.schema)}})
			crd.Spec.PreserveUnknownFields = tc.preserve
			if tc.had {
				crd.Status.SetCondition(apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NonStructural, Status: apiextensionsv1.ConditionTrue,
					Reason: "Violations", Message: "spec.preserveUnknownFields: Invalid value: true: must be false"})
			}
			client := &statusClient{}
			c := &Controller{Client: client}
			if err := c.Sync(context.Background(), crd, []*apiextensionsv1.CustomResourceDefinition{crd}); err != nil {
				t.Fatal(err)
			}
			if len(client.written) != 1 {
				t.Fatalf("%d status writes", len(client.written))
			}
			cond := client.written[0].Status.Condition(apiextensionsv1.NonStructural)
			switch {
			case tc.want == "" && cond != nil:
				t.Errorf("condition %+v, want none", cond)
			case tc.want != "" && (cond == nil || cond.Status != apiextensionsv1.ConditionTrue || cond.Reason != "Violations" || cond.Message != tc.want):
				t.Errorf("condition %+v\nwant message %s", cond, tc.want)
			}
		})
	}
}

// TestSync_EstablishedOnlyOnceTheAcceptedNamesCameBack: the names are
// accepted first, with Established False (Installing); Established turns
// True only on the Sync of the definition with its names accepted, which
// the server has installed before calling Sync.
func TestSync_EstablishedOnlyOnceTheAcceptedNamesCameBack(t *testing.T) {
	crd := crdWithVersions(apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true})
	client := &statusClient{}
	c := &Controller{Client: client}
	all := []*apiextensionsv1.CustomResourceDefinition{crd}
	if err := c.Sync(context.Background(), crd, all); err != nil {
		t.Fatal(err)
	}
	first := client.written[len(client.written)-1]
	est := first.Status.Condition(apiextensionsv1.Established)
	if !first.Status.IsTrue(apiextensionsv1.NamesAccepted) || est == nil || est.Status != apiextensionsv1.ConditionFalse || est.Reason != "Installing" {
		t.Fatalf("first write: names accepted %v, Established %+v; want accepted and Installing", first.Status.IsTrue(apiextensionsv1.NamesAccepted), est)
	}
	if err := c.Sync(context.Background(), first, []*apiextensionsv1.CustomResourceDefinition{first}); err != nil {
		t.Fatal(err)
	}
	second := client.written[len(client.written)-1]
	if est := second.Status.Condition(apiextensionsv1.Established); est == nil || est.Status != apiextensionsv1.ConditionTrue || est.Reason != "InitialNamesAccepted" {
		t.Fatalf("second write: Established %+v, want True InitialNamesAccepted", est)
	}
}
