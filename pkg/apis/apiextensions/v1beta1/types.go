// Package v1beta1 holds apiextensions.k8s.io/v1beta1
// CustomResourceDefinitions in the one role cronplane gives them: the
// form kube-apiserver v1.29 stores definitions in. The API serves only
// v1; every definition is written to etcd as v1beta1 JSON, fields in
// kube's order, and read back from either version, so that cronplane and
// kube-apiserver read each other's definitions byte for byte.
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"
)

// SchemeGroupVersion is apiextensions.k8s.io/v1beta1.
var SchemeGroupVersion = schema.GroupVersion{Group: apiextensionsv1.GroupName, Version: "v1beta1"}

// CustomResourceDefinition is a definition as stored. Its TypeMeta comes
// first, so kind precedes apiVersion, as in kube's bytes.
type CustomResourceDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CustomResourceDefinitionSpec                   `json:"spec"`
	Status apiextensionsv1.CustomResourceDefinitionStatus `json:"status,omitempty"`
}

// CustomResourceDefinitionSpec is v1beta1's spec: a schema, subresources
// and printer columns that all versions share are kept once, at the top.
type CustomResourceDefinitionSpec struct {
	Group                    string                                        `json:"group"`
	Version                  string                                        `json:"version,omitempty"`
	Names                    apiextensionsv1.CustomResourceDefinitionNames `json:"names"`
	Scope                    apiextensionsv1.ResourceScope                 `json:"scope"`
	Validation               *CustomResourceValidation                     `json:"validation,omitempty"`
	Subresources             *apiextensionsv1.CustomResourceSubresources   `json:"subresources,omitempty"`
	Versions                 []CustomResourceDefinitionVersion             `json:"versions,omitempty"`
	AdditionalPrinterColumns []CustomResourceColumnDefinition              `json:"additionalPrinterColumns,omitempty"`
	Conversion               *CustomResourceConversion                     `json:"conversion,omitempty"`
	PreserveUnknownFields    *bool                                         `json:"preserveUnknownFields,omitempty"`
}

// CustomResourceDefinitionVersion is one version; its schema,
// subresources and columns are empty when the spec holds them.
type CustomResourceDefinitionVersion struct {
	Name                     string                                      `json:"name"`
	Served                   bool                                        `json:"served"`
	Storage                  bool                                        `json:"storage"`
	Deprecated               bool                                        `json:"deprecated,omitempty"`
	DeprecationWarning       *string                                     `json:"deprecationWarning,omitempty"`
	Schema                   *CustomResourceValidation                   `json:"schema,omitempty"`
	Subresources             *apiextensionsv1.CustomResourceSubresources `json:"subresources,omitempty"`
	AdditionalPrinterColumns []CustomResourceColumnDefinition            `json:"additionalPrinterColumns,omitempty"`
}

// CustomResourceValidation holds a schema.
type CustomResourceValidation struct {
	OpenAPIV3Schema JSONSchemaProps `json:"openAPIV3Schema,omitempty"`
}

// CustomResourceColumnDefinition is a printer column; v1beta1 spells
// the path's field "JSONPath".
type CustomResourceColumnDefinition struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Format      string `json:"format,omitempty"`
	Description string `json:"description,omitempty"`
	Priority    int32  `json:"priority,omitempty"`
	JSONPath    string `json:"JSONPath"`
}

// CustomResourceConversion is v1beta1's conversion: the webhook's
// fields sit beside the strategy.
type CustomResourceConversion struct {
	Strategy                 apiextensionsv1.ConversionStrategyType `json:"strategy"`
	WebhookClientConfig      *apiextensionsv1.WebhookClientConfig   `json:"webhookClientConfig,omitempty"`
	ConversionReviewVersions []string                               `json:"conversionReviewVersions,omitempty"`
}
