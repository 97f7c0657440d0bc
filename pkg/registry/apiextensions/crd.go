// Package apiextensions registers apiextensions.k8s.io/v1
// CustomResourceDefinitions: their description, their JSON storage as
// kube keeps it, and their strategy, which validates a definition in
// kube's words and keeps it, on delete, until its objects are gone (the
// cleanup finalizer). Serving the resources a definition declares is
// pkg/apiextensions' and pkg/apiserver's.
package apiextensions

import (
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1beta1"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	cronschema "github.com/cronplane/cronplane/pkg/schema"
)

// GVK is the kind of CustomResourceDefinitions.
var GVK = apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")

// Resource registers customresourcedefinitions. schemaCheck parses and
// checks a version's openAPIV3Schema; optionalOldSelf is kube's
// CRDValidationRatcheting gate (see Strategy).
func Resource(schemaCheck SchemaCheck, optionalOldSelf bool) *generic.Resource {
	newFunc := func() runtime.Object { return &apiextensionsv1.CustomResourceDefinition{} }
	st := cronschema.FromGoType(newFunc())
	// A version's schema is free-form JSON to the definition's own schema:
	// kept as given, never pruned. The definitions of Go types are shared
	// by every resource, so this one is changed in a copy of its own.
	validationName := cronschema.DefinitionName(reflectTypeOf(apiextensionsv1.CustomResourceValidation{}))
	validation := *st.Definitions[validationName]
	validation.Properties = maps.Clone(validation.Properties)
	validation.Properties["openAPIV3Schema"] = &cronschema.Schema{Type: "object", PreserveUnknownFields: true,
		Description: "OpenAPIV3Schema is the OpenAPI v3 schema to use for validation and pruning."}
	st.Definitions[validationName] = &validation
	return &generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: GVK,
			Plural:           "customresourcedefinitions",
			Singular:         "customresourcedefinition",
			ShortNames:       []string{"crd", "crds"},
			Categories:       []string{"api-extensions"},
			New:              newFunc,
			NewList:          func() runtime.Object { return &apiextensionsv1.CustomResourceDefinitionList{} },
			Default:          func(obj runtime.Object) { SetDefaults(obj.(*apiextensionsv1.CustomResourceDefinition)) },
			Schema:           st,
			Table: &rest.TableSpec{
				Columns: []metav1.TableColumnDefinition{rest.NameColumn,
					{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}},
				Cells: func(obj runtime.Object, _ time.Time) []interface{} {
					c := obj.(*apiextensionsv1.CustomResourceDefinition)
					return []interface{}{c.Name, c.CreationTimestamp.UTC().Format(time.RFC3339)}
				},
			},
		},
		// Where kube keeps them: under the group, as custom resources.
		StorageResource: "apiextensions.k8s.io/customresourcedefinitions",
		StorageGVK:      apiextensionsv1beta1.SchemeGroupVersion.WithKind("CustomResourceDefinition"),
		Codec:           storageCodec{},
		Strategy:        Strategy{SchemaCheck: schemaCheck, OptionalOldSelf: optionalOldSelf},
		Subresources:    map[string]generic.Strategy{"status": statusStrategy{}},

		UpdatesNeedResourceVersion: true,
	}
}

// SetDefaults fills in what kube's defaulting does for a definition: the
// None conversion, the singular and list kind from the plural and kind;
// and it drops the null keywords of its schemas, as kube's decoding does.
func SetDefaults(crd *apiextensionsv1.CustomResourceDefinition) {
	if crd.Spec.Conversion == nil {
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	}
	names := &crd.Spec.Names
	if names.Singular == "" {
		names.Singular = strings.ToLower(names.Kind)
	}
	if names.ListKind == "" && names.Kind != "" {
		names.ListKind = names.Kind + "List"
	}
	if crd.Status.StoredVersions == nil {
		crd.Status.StoredVersions = []string{}
	}
	for _, v := range crd.Spec.Versions {
		if v.Schema != nil {
			dropNullKeywords(v.Schema.OpenAPIV3Schema)
		}
	}
}

// Strategy is the main resource's strategy. The status is the server's:
// kept on update, and on create only the storage version is recorded in
// storedVersions.
type Strategy struct {
	generic.SpecStatusStrategy
	SchemaCheck SchemaCheck
	// OptionalOldSelf keeps the optionalOldSelf of validation rules, as
	// kube does with its CRDValidationRatcheting gate on. With the gate
	// off, kube drops the field: a definition loses it on create, and on
	// update unless it had it already.
	OptionalOldSelf bool
}

// SchemaCheck parses a version's openAPIV3Schema and returns kube's
// errors for it (structural-schema rules, keywords, defaults, CEL rules
// and their cost), at paths below fldPath. old are the schemas of the
// definition before an update (none on create): rules they held already
// are checked as stored rules.
type SchemaCheck func(openAPIV3Schema map[string]interface{}, old []map[string]interface{}, hasStatus bool, fldPath *field.Path) field.ErrorList

func (s Strategy) PrepareForCreate(obj runtime.Object) {
	s.SpecStatusStrategy.PrepareForCreate(obj)
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !s.OptionalOldSelf {
		dropOptionalOldSelf(crd)
	}
	// Without a storage version the definition is invalid, and kube
	// reports the stored versions as nil.
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			crd.Status.StoredVersions = []string{v.Name}
			break
		}
	}
}

func (s Strategy) PrepareForUpdate(obj, old runtime.Object) {
	s.SpecStatusStrategy.PrepareForUpdate(obj, old)
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !s.OptionalOldSelf && !usesOptionalOldSelf(old.(*apiextensionsv1.CustomResourceDefinition)) {
		dropOptionalOldSelf(crd)
	}
	// A new storage version is recorded as stored from now on.
	if v := crd.Spec.StorageVersion(); v != "" && !slices.Contains(crd.Status.StoredVersions, v) {
		crd.Status.StoredVersions = append(crd.Status.StoredVersions, v)
	}
}

func (s Strategy) Validate(obj runtime.Object) field.ErrorList {
	return Validate(obj.(*apiextensionsv1.CustomResourceDefinition), nil, s.SchemaCheck)
}

func (s Strategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return Validate(obj.(*apiextensionsv1.CustomResourceDefinition), old.(*apiextensionsv1.CustomResourceDefinition), s.SchemaCheck)
}

// PrepareForDelete keeps a definition on its first delete, as kube's
// storage does: the cleanup finalizer added and the Terminating
// condition set, for the server to delete its objects first.
func (Strategy) PrepareForDelete(obj runtime.Object) bool {
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	if crd.DeletionTimestamp != nil {
		return false
	}
	if !slices.Contains(crd.Finalizers, apiextensionsv1.CleanupFinalizer) {
		crd.Finalizers = append(crd.Finalizers, apiextensionsv1.CleanupFinalizer)
	}
	crd.Status.SetCondition(apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, LastTransitionTime: metav1.Now(),
		Reason:  "InstanceDeletionPending",
		Message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
	})
	return true
}

// statusStrategy writes only the status; as kube, only the accepted
// names are checked (the stored versions are for whoever migrates the
// objects to manage).
type statusStrategy struct{ generic.StatusStrategy }

func (statusStrategy) ValidateUpdate(obj, _ runtime.Object) field.ErrorList {
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	return validateNames(&crd.Status.AcceptedNames, field.NewPath("status", "acceptedNames"))
}

// optionalOldSelf is a rule's field behind kube's CRDValidationRatcheting
// gate (see Strategy).
const optionalOldSelf = "optionalOldSelf"

func dropOptionalOldSelf(crd *apiextensionsv1.CustomResourceDefinition) {
	for _, v := range crd.Spec.Versions {
		if v.Schema != nil {
			eachRule(v.Schema.OpenAPIV3Schema, func(rule map[string]interface{}) { delete(rule, optionalOldSelf) })
		}
	}
}

func usesOptionalOldSelf(crd *apiextensionsv1.CustomResourceDefinition) bool {
	uses := false
	for _, v := range crd.Spec.Versions {
		if v.Schema != nil {
			eachRule(v.Schema.OpenAPIV3Schema, func(rule map[string]interface{}) {
				_, set := rule[optionalOldSelf]
				uses = uses || set
			})
		}
	}
	return uses
}

// eachRule calls f with every x-kubernetes-validations rule of schema s,
// at any depth.
func eachRule(s map[string]interface{}, f func(rule map[string]interface{})) {
	if s == nil {
		return
	}
	if rules, ok := s["x-kubernetes-validations"].([]interface{}); ok {
		for _, r := range rules {
			if rule, ok := r.(map[string]interface{}); ok {
				f(rule)
			}
		}
	}
	for _, k := range []string{"properties", "patternProperties", "definitions"} {
		if props, ok := s[k].(map[string]interface{}); ok {
			for _, p := range props {
				if ps, ok := p.(map[string]interface{}); ok {
					eachRule(ps, f)
				}
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not"} {
		if child, ok := s[k].(map[string]interface{}); ok {
			eachRule(child, f)
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "items"} {
		if list, ok := s[k].([]interface{}); ok {
			for _, c := range list {
				if cs, ok := c.(map[string]interface{}); ok {
					eachRule(cs, f)
				}
			}
		}
	}
}
