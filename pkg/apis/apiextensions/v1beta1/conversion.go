package v1beta1

import (
	"reflect"

	apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"
)

// FromV1 returns in as kube stores it: spec.version names the first
// version, and the schema, subresources and printer columns that every
// version has alike move up to the spec.
func FromV1(in *apiextensionsv1.CustomResourceDefinition) *CustomResourceDefinition {
	in = in.DeepCopy()
	out := &CustomResourceDefinition{ObjectMeta: in.ObjectMeta, Status: in.Status}
	out.APIVersion, out.Kind = SchemeGroupVersion.String(), "CustomResourceDefinition"
	preserve := in.Spec.PreserveUnknownFields
	spec := CustomResourceDefinitionSpec{
		Group: in.Spec.Group, Names: in.Spec.Names, Scope: in.Spec.Scope, PreserveUnknownFields: &preserve,
	}
	if c := in.Spec.Conversion; c != nil {
		spec.Conversion = &CustomResourceConversion{Strategy: c.Strategy}
		if c.Webhook != nil {
			spec.Conversion.WebhookClientConfig = c.Webhook.ClientConfig
			spec.Conversion.ConversionReviewVersions = c.Webhook.ConversionReviewVersions
		}
	}
	versions := in.Spec.Versions
	for _, v := range versions {
		spec.Versions = append(spec.Versions, CustomResourceDefinitionVersion{
			Name: v.Name, Served: v.Served, Storage: v.Storage, Deprecated: v.Deprecated, DeprecationWarning: v.DeprecationWarning,
			Schema: validationFromV1(v.Schema), Subresources: v.Subresources, AdditionalPrinterColumns: columnsFromV1(v.AdditionalPrinterColumns),
		})
	}
	if len(versions) > 0 {
		spec.Version = versions[0].Name
		same := func(field func(v apiextensionsv1.CustomResourceDefinitionVersion) interface{}) bool {
			for _, v := range versions[1:] {
				if !reflect.DeepEqual(field(v), field(versions[0])) {
					return false
				}
			}
			return true
		}
		if same(func(v apiextensionsv1.CustomResourceDefinitionVersion) interface{} { return v.Subresources }) {
			spec.Subresources = spec.Versions[0].Subresources
			for i := range spec.Versions {
				spec.Versions[i].Subresources = nil
			}
		}
		if same(func(v apiextensionsv1.CustomResourceDefinitionVersion) interface{} { return v.Schema }) {
			spec.Validation = spec.Versions[0].Schema
			for i := range spec.Versions {
				spec.Versions[i].Schema = nil
			}
		}
		if same(func(v apiextensionsv1.CustomResourceDefinitionVersion) interface{} { return v.AdditionalPrinterColumns }) {
			spec.AdditionalPrinterColumns = spec.Versions[0].AdditionalPrinterColumns
			for i := range spec.Versions {
				spec.Versions[i].AdditionalPrinterColumns = nil
			}
		}
	}
	out.Spec = spec
	return out
}

// ToV1 returns the v1 form of a stored definition: what the spec holds
// for all versions is copied into each, and a definition with only
// spec.version gets that one version, served and stored.
func ToV1(in *CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	out := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: in.ObjectMeta, Status: in.Status}
	out.APIVersion, out.Kind = apiextensionsv1.SchemeGroupVersion.String(), "CustomResourceDefinition"
	spec := apiextensionsv1.CustomResourceDefinitionSpec{Group: in.Spec.Group, Names: in.Spec.Names, Scope: in.Spec.Scope}
	// v1beta1 defaults a missing preserveUnknownFields to true.
	spec.PreserveUnknownFields = in.Spec.PreserveUnknownFields == nil || *in.Spec.PreserveUnknownFields
	if c := in.Spec.Conversion; c != nil {
		spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: c.Strategy}
		if c.WebhookClientConfig != nil || c.ConversionReviewVersions != nil {
			spec.Conversion.Webhook = &apiextensionsv1.WebhookConversion{ClientConfig: c.WebhookClientConfig, ConversionReviewVersions: c.ConversionReviewVersions}
		}
	}
	for _, v := range in.Spec.Versions {
		spec.Versions = append(spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v.Name, Served: v.Served, Storage: v.Storage, Deprecated: v.Deprecated, DeprecationWarning: v.DeprecationWarning,
			Schema: validationToV1(v.Schema), Subresources: v.Subresources, AdditionalPrinterColumns: columnsToV1(v.AdditionalPrinterColumns),
		})
	}
	if len(spec.Versions) == 0 && in.Spec.Version != "" {
		spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: in.Spec.Version, Served: true, Storage: true}}
	}
	for i := range spec.Versions {
		v := &spec.Versions[i]
		if in.Spec.Subresources != nil {
			v.Subresources = in.Spec.Subresources
		}
		if in.Spec.Validation != nil {
			v.Schema = validationToV1(in.Spec.Validation)
		}
		if in.Spec.AdditionalPrinterColumns != nil {
			v.AdditionalPrinterColumns = columnsToV1(in.Spec.AdditionalPrinterColumns)
		}
	}
	out.Spec = spec
	// The versions now share what the spec held; each gets its own copy.
	return out.DeepCopy()
}

func validationFromV1(in *apiextensionsv1.CustomResourceValidation) *CustomResourceValidation {
	if in == nil {
		return nil
	}
	return &CustomResourceValidation{OpenAPIV3Schema: JSONSchemaProps(in.OpenAPIV3Schema)}
}

func validationToV1(in *CustomResourceValidation) *apiextensionsv1.CustomResourceValidation {
	if in == nil {
		return nil
	}
	return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: apiextensionsv1.JSONSchemaProps(in.OpenAPIV3Schema)}
}

func columnsFromV1(in []apiextensionsv1.CustomResourceColumnDefinition) []CustomResourceColumnDefinition {
	if in == nil {
		return nil
	}
	out := make([]CustomResourceColumnDefinition, len(in))
	for i, c := range in {
		out[i] = CustomResourceColumnDefinition(c)
	}
	return out
}

func columnsToV1(in []CustomResourceColumnDefinition) []apiextensionsv1.CustomResourceColumnDefinition {
	if in == nil {
		return nil
	}
	out := make([]apiextensionsv1.CustomResourceColumnDefinition, len(in))
	for i, c := range in {
		out[i] = apiextensionsv1.CustomResourceColumnDefinition(c)
	}
	return out
}
