package apiextensions

import (
	"bytes"
	"os"
	"testing"

	apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"
	cronschema "github.com/cronplane/cronplane/pkg/schema"
)

// The fixtures are kube-apiserver v1.29.15's bytes for two definitions
// applied as v1 with kubectl: one version sharing its schema and
// subresources; two versions with different schemas and columns, scale,
// deprecation and a validation rule.
func TestStorageCodec_ReadsAndWritesKubesBytes(t *testing.T) {
	for _, tc := range []struct {
		file     string
		versions int
		check    func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition)
	}{
		{file: "testdata/kube-probes.json", versions: 1, check: func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			v := crd.Spec.Versions[0]
			if v.Schema == nil || v.Subresources == nil || v.Subresources.Status == nil {
				t.Errorf("the spec's schema and subresources were not given to the version: %+v", v)
			}
		}},
		{file: "testdata/kube-gadgets.json", versions: 2, check: func(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
			v1, v2 := crd.Spec.Versions[0], crd.Spec.Versions[1]
			if v1.Subresources == nil || v1.Subresources.Scale == nil || v2.Subresources == nil || v2.Subresources.Scale == nil {
				t.Errorf("shared subresources not on both versions: %+v %+v", v1.Subresources, v2.Subresources)
			}
			if len(v1.AdditionalPrinterColumns) != 1 || v1.AdditionalPrinterColumns[0].JSONPath != ".spec.replicas" {
				t.Errorf("v1 columns = %+v", v1.AdditionalPrinterColumns)
			}
			if !v1.Deprecated || v2.Schema.OpenAPIV3Schema["x-kubernetes-preserve-unknown-fields"] != true {
				t.Errorf("versions read wrong: %+v / %+v", v1, v2)
			}
			if got := crd.Status.StoredVersions; len(got) != 1 || got[0] != "v2" {
				t.Errorf("storedVersions = %v", got)
			}
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			obj, err := storageCodec{}.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			crd := obj.(*apiextensionsv1.CustomResourceDefinition)
			if crd.APIVersion != "apiextensions.k8s.io/v1" || len(crd.Spec.Versions) != tc.versions || crd.Spec.PreserveUnknownFields {
				t.Errorf("decoded %s with %d versions, preserveUnknownFields %v", crd.APIVersion, len(crd.Spec.Versions), crd.Spec.PreserveUnknownFields)
			}
			tc.check(t, crd)
			out, err := storageCodec{}.Encode(crd)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, data) {
				t.Errorf("written bytes differ from kube's:\n got %s\nwant %s", out, data)
			}
		})
	}
}

func TestStorageCodec_ReadsV1(t *testing.T) {
	data := []byte(`{"kind":"CustomResourceDefinition","apiVersion":"apiextensions.k8s.io/v1","metadata":{"name":"a.example.com"},` +
		`"spec":{"group":"example.com","names":{"plural":"a","kind":"A"},"scope":"Cluster","versions":[{"name":"v1","served":true,"storage":true}]},` +
		`"status":{"acceptedNames":{"plural":"","kind":""},"storedVersions":["v1"]}}`)
	obj, err := storageCodec{}.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if crd := obj.(*apiextensionsv1.CustomResourceDefinition); crd.Spec.Versions[0].Name != "v1" {
		t.Errorf("decoded %+v", crd.Spec)
	}
	if _, err := (storageCodec{}).Decode([]byte(`{"kind":"ConfigMap","apiVersion":"v1"}`)); err == nil {
		t.Error("a stored ConfigMap decoded as a definition")
	}
}

// TestStrategy_OptionalOldSelfFollowsTheRatchetingGate: optionalOldSelf
// is behind kube's CRDValidationRatcheting gate. Off (v1.29's default),
// it is dropped on create, and on update unless the definition had it
// already; on, it is kept.
func TestStrategy_OptionalOldSelfFollowsTheRatchetingGate(t *testing.T) {
	withRule := func(optional bool) *apiextensionsv1.CustomResourceDefinition {
		rule := map[string]interface{}{"rule": "!oldSelf.hasValue() || self >= oldSelf.value()"}
		if optional {
			rule["optionalOldSelf"] = true
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Storage: true, Schema: &apiextensionsv1.CustomResourceValidation{
			OpenAPIV3Schema: apiextensionsv1.JSONSchemaProps{"type": "object", "properties": map[string]interface{}{
				"spec": map[string]interface{}{"type": "object", "properties": map[string]interface{}{
					"n": map[string]interface{}{"type": "integer", "x-kubernetes-validations": []interface{}{rule}},
				}},
			}},
		}}}
		return crd
	}
	for _, tt := range []struct {
		name     string
		gate     bool
		old      *apiextensionsv1.CustomResourceDefinition // nil: a create
		wantKept bool
	}{
		{"gate off, create", false, nil, false},
		{"gate off, update adding it", false, withRule(false), false},
		{"gate off, update of a definition that had it", false, withRule(true), true},
		{"gate on, create", true, nil, true},
		{"gate on, update adding it", true, withRule(false), true},
	} {
		s := Strategy{OptionalOldSelf: tt.gate}
		crd := withRule(true)
		if tt.old == nil {
			s.PrepareForCreate(crd)
		} else {
			s.PrepareForUpdate(crd, tt.old)
		}
		if got := usesOptionalOldSelf(crd); got != tt.wantKept {
			t.Errorf("%s: kept %t, want %t", tt.name, got, tt.wantKept)
		}
	}
}

// TestResource_ChangesItsOwnCopyOfTheSharedDefinition: the definition's
// schema keeps a version's openAPIV3Schema as free-form JSON, without
// changing the definition that other schemas of the Go type share.
func TestResource_ChangesItsOwnCopyOfTheSharedDefinition(t *testing.T) {
	res := Resource(nil, false)
	name := cronschema.DefinitionName(reflectTypeOf(apiextensionsv1.CustomResourceValidation{}))
	if p := res.Schema.Definitions[name].Properties["openAPIV3Schema"]; p == nil || !p.PreserveUnknownFields {
		t.Errorf("the resource's openAPIV3Schema is %+v, want an object that keeps unknown fields", p)
	}
	shared := cronschema.FromGoType(&apiextensionsv1.CustomResourceDefinition{}).Definitions[name]
	if p := shared.Properties["openAPIV3Schema"]; p == nil || p.PreserveUnknownFields {
		t.Errorf("the Go type's shared openAPIV3Schema was changed: %+v", p)
	}
}
