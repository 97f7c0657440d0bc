// Package v1 holds the Go types of apiextensions.k8s.io/v1: the
// CustomResourceDefinition, with kube's JSON shape so that what either
// server stores the other reads. A version's schema is kept as the JSON
// it was given (see JSONSchemaProps): the server checks and interprets it
// through pkg/schema, not through Go fields. Definitions and their lists
// also have kube's protobuf form (protobuf.go), byte for byte.
package v1

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"
)

// GroupName is the API group of CustomResourceDefinitions.
const GroupName = "apiextensions.k8s.io"

// SchemeGroupVersion is apiextensions.k8s.io/v1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

// CleanupFinalizer keeps a CustomResourceDefinition until its objects are
// deleted.
const CleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io"

// ResourceScope says whether custom objects live in namespaces.
type ResourceScope string

// The two scopes.
const (
	ClusterScoped   ResourceScope = "Cluster"
	NamespaceScoped ResourceScope = "Namespaced"
)

// ConversionStrategyType says how objects change between versions.
type ConversionStrategyType string

// The conversion strategies.
const (
	NoneConverter    ConversionStrategyType = "None"
	WebhookConverter ConversionStrategyType = "Webhook"
)

// ConditionType names a CustomResourceDefinition condition.
type ConditionType string

// The conditions kube sets.
const (
	Established                           ConditionType = "Established"
	NamesAccepted                         ConditionType = "NamesAccepted"
	NonStructural                         ConditionType = "NonStructuralSchema"
	Terminating                           ConditionType = "Terminating"
	KubernetesAPIApprovalPolicyConformant ConditionType = "KubernetesAPIApprovalPolicyConformant"
)

// ConditionStatus is True, False or Unknown.
type ConditionStatus string

// The condition statuses.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// CustomResourceDefinition makes the apiserver serve a new resource.
type CustomResourceDefinition struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CustomResourceDefinitionSpec   `json:"spec"`
	Status CustomResourceDefinitionStatus `json:"status,omitempty"`
}

// CustomResourceDefinitionList is a list of CustomResourceDefinitions.
type CustomResourceDefinitionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []CustomResourceDefinition `json:"items"`
}

// CustomResourceDefinitionSpec describes the resource served.
type CustomResourceDefinitionSpec struct {
	Group                 string                            `json:"group"`
	Names                 CustomResourceDefinitionNames     `json:"names"`
	Scope                 ResourceScope                     `json:"scope"`
	Versions              []CustomResourceDefinitionVersion `json:"versions"`
	Conversion            *CustomResourceConversion         `json:"conversion,omitempty"`
	PreserveUnknownFields bool                              `json:"preserveUnknownFields,omitempty"`
}

// CustomResourceConversion says how versions convert.
type CustomResourceConversion struct {
	Strategy ConversionStrategyType `json:"strategy"`
	Webhook  *WebhookConversion     `json:"webhook,omitempty"`
}

// WebhookConversion configures a conversion webhook; cronplane stores it
// but converts only with the None strategy.
type WebhookConversion struct {
	ClientConfig             *WebhookClientConfig `json:"clientConfig,omitempty"`
	ConversionReviewVersions []string             `json:"conversionReviewVersions"`
}

// WebhookClientConfig says how to reach a webhook.
type WebhookClientConfig struct {
	URL      *string           `json:"url,omitempty"`
	Service  *ServiceReference `json:"service,omitempty"`
	CABundle []byte            `json:"caBundle,omitempty"`
}

// ServiceReference names a Service serving a webhook.
type ServiceReference struct {
	Namespace string  `json:"namespace"`
	Name      string  `json:"name"`
	Path      *string `json:"path,omitempty"`
	Port      *int32  `json:"port,omitempty"`
}

// CustomResourceDefinitionVersion is one version of the resource.
type CustomResourceDefinitionVersion struct {
	Name                     string                           `json:"name"`
	Served                   bool                             `json:"served"`
	Storage                  bool                             `json:"storage"`
	Deprecated               bool                             `json:"deprecated,omitempty"`
	DeprecationWarning       *string                          `json:"deprecationWarning,omitempty"`
	Schema                   *CustomResourceValidation        `json:"schema,omitempty"`
	Subresources             *CustomResourceSubresources      `json:"subresources,omitempty"`
	AdditionalPrinterColumns []CustomResourceColumnDefinition `json:"additionalPrinterColumns,omitempty"`
}

// CustomResourceColumnDefinition is a Table column read by a JSONPath.
type CustomResourceColumnDefinition struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Format      string `json:"format,omitempty"`
	Description string `json:"description,omitempty"`
	Priority    int32  `json:"priority,omitempty"`
	JSONPath    string `json:"jsonPath"`
}

// CustomResourceDefinitionNames are the names the resource is served by.
type CustomResourceDefinitionNames struct {
	Plural     string   `json:"plural"`
	Singular   string   `json:"singular,omitempty"`
	ShortNames []string `json:"shortNames,omitempty"`
	Kind       string   `json:"kind"`
	ListKind   string   `json:"listKind,omitempty"`
	Categories []string `json:"categories,omitempty"`
}

// CustomResourceValidation holds a version's schema.
type CustomResourceValidation struct {
	OpenAPIV3Schema JSONSchemaProps `json:"openAPIV3Schema,omitempty"`
}

// JSONSchemaProps is an OpenAPI v3 schema as decoded JSON, whole numbers
// as int64: pkg/schema parses it, and it is stored and served as given.
type JSONSchemaProps map[string]interface{}

// CustomResourceSubresources are the subresources served.
type CustomResourceSubresources struct {
	Status *CustomResourceSubresourceStatus `json:"status,omitempty"`
	Scale  *CustomResourceSubresourceScale  `json:"scale,omitempty"`
}

// CustomResourceSubresourceStatus enables /status; it has no fields.
type CustomResourceSubresourceStatus struct{}

// CustomResourceSubresourceScale enables /scale: where the replicas and
// the selector are in the custom object.
type CustomResourceSubresourceScale struct {
	SpecReplicasPath   string  `json:"specReplicasPath"`
	StatusReplicasPath string  `json:"statusReplicasPath"`
	LabelSelectorPath  *string `json:"labelSelectorPath,omitempty"`
}

// CustomResourceDefinitionStatus is what the server decided.
// Its tags and markers are kube's (hack/markergen reads the markers):
// the conditions are a map list keyed by type, for field ownership and
// OpenAPI, and null until the server first sets them.
type CustomResourceDefinitionStatus struct {
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []CustomResourceDefinitionCondition `json:"conditions"`
	// +optional
	AcceptedNames CustomResourceDefinitionNames `json:"acceptedNames"`
	// +optional
	StoredVersions []string `json:"storedVersions"`
}

// CustomResourceDefinitionCondition is one condition.
type CustomResourceDefinitionCondition struct {
	Type               ConditionType   `json:"type"`
	Status             ConditionStatus `json:"status"`
	LastTransitionTime metav1.Time     `json:"lastTransitionTime,omitempty"`
	Reason             string          `json:"reason,omitempty"`
	Message            string          `json:"message,omitempty"`
}

// Condition returns the condition of type t, or nil.
func (s *CustomResourceDefinitionStatus) Condition(t ConditionType) *CustomResourceDefinitionCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// SetCondition sets c, keeping the transition time when the status did
// not change.
func (s *CustomResourceDefinitionStatus) SetCondition(c CustomResourceDefinitionCondition) {
	if old := s.Condition(c.Type); old != nil {
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		*old = c
		return
	}
	s.Conditions = append(s.Conditions, c)
}

// RemoveCondition drops condition t, if set.
func (s *CustomResourceDefinitionStatus) RemoveCondition(t ConditionType) {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			s.Conditions = append(s.Conditions[:i:i], s.Conditions[i+1:]...)
			return
		}
	}
}

// IsTrue reports whether condition t is True.
func (s *CustomResourceDefinitionStatus) IsTrue(t ConditionType) bool {
	c := s.Condition(t)
	return c != nil && c.Status == ConditionTrue
}

// StorageVersion is the version objects are stored in, or "".
func (spec *CustomResourceDefinitionSpec) StorageVersion() string {
	for _, v := range spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// DeepCopyObject copies through JSON: CRDs are few and small, and their
// schemas are free-form.
func (c *CustomResourceDefinition) DeepCopyObject() runtime.Object {
	return c.DeepCopy()
}

// DeepCopy returns a copy of c.
func (c *CustomResourceDefinition) DeepCopy() *CustomResourceDefinition {
	if c == nil {
		return nil
	}
	out := &CustomResourceDefinition{}
	copyJSON(c, out)
	return out
}

// DeepCopyObject copies the list.
func (l *CustomResourceDefinitionList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &CustomResourceDefinitionList{}
	copyJSON(l, out)
	return out
}

func copyJSON(in, out interface{}) {
	data, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, out); err != nil {
		panic(err)
	}
}
