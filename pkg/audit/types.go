package audit

import (
	"encoding/json"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The audit.k8s.io/v1 API: what the log holds (Event) and what chooses
// it (Policy), field for field as kube serializes them.

// GroupVersion is the API version of events and policies.
const GroupVersion = "audit.k8s.io/v1"

// HeaderAuditID carries a request's audit ID, in the request (to choose
// it) and in the response.
const HeaderAuditID = "Audit-ID"

// Level is how much of a request is recorded.
type Level string

const (
	// LevelNone records nothing.
	LevelNone Level = "None"
	// LevelMetadata records who did what to which object, and the answer's
	// code, but no bodies.
	LevelMetadata Level = "Metadata"
	// LevelRequest adds the request body.
	LevelRequest Level = "Request"
	// LevelRequestResponse adds the response body.
	LevelRequestResponse Level = "RequestResponse"
)

// levelOrder ranks the levels; an unknown level ranks below None.
var levelOrder = map[Level]int{LevelNone: 1, LevelMetadata: 2, LevelRequest: 3, LevelRequestResponse: 4}

// Less reports whether l records less than o.
func (l Level) Less(o Level) bool { return levelOrder[l] < levelOrder[o] }

// Stage is the point of a request's life an event records.
type Stage string

const (
	// StageRequestReceived is as soon as the request is authenticated.
	StageRequestReceived Stage = "RequestReceived"
	// StageResponseStarted is when a long-running request (a watch) has
	// sent its headers.
	StageResponseStarted Stage = "ResponseStarted"
	// StageResponseComplete is when the response is done.
	StageResponseComplete Stage = "ResponseComplete"
	// StagePanic is when the handler panicked.
	StagePanic Stage = "Panic"
)

// stages are the valid stages, in order.
var stages = []Stage{StageRequestReceived, StageResponseStarted, StageResponseComplete, StagePanic}

// Event is one stage of one request.
type Event struct {
	metav1.TypeMeta `json:",inline"`

	Level Level `json:"level"`
	// AuditID is the same for every stage of a request.
	AuditID    types.UID `json:"auditID"`
	Stage      Stage     `json:"stage"`
	RequestURI string    `json:"requestURI"`
	// Verb is the API verb of a resource request, the lower-case HTTP
	// method otherwise.
	Verb string `json:"verb"`
	// User is who authenticated; ImpersonatedUser whom it acted as.
	User             authenticationv1.UserInfo  `json:"user"`
	ImpersonatedUser *authenticationv1.UserInfo `json:"impersonatedUser,omitempty"`
	SourceIPs        []string                   `json:"sourceIPs,omitempty"`
	UserAgent        string                     `json:"userAgent,omitempty"`
	ObjectRef        *ObjectReference           `json:"objectRef,omitempty"`
	// ResponseStatus is the code, and for a Status answer its status,
	// message, reason and details.
	ResponseStatus *metav1.Status `json:"responseStatus,omitempty"`
	// RequestObject and ResponseObject are JSON, at levels Request and
	// RequestResponse.
	RequestObject            json.RawMessage   `json:"requestObject,omitempty"`
	ResponseObject           json.RawMessage   `json:"responseObject,omitempty"`
	RequestReceivedTimestamp metav1.MicroTime  `json:"requestReceivedTimestamp"`
	StageTimestamp           metav1.MicroTime  `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`
}

// EventList is a list of events.
type EventList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Event `json:"items"`
}

// ObjectReference is the object a resource request addresses.
type ObjectReference struct {
	Resource        string    `json:"resource,omitempty"`
	Namespace       string    `json:"namespace,omitempty"`
	Name            string    `json:"name,omitempty"`
	UID             types.UID `json:"uid,omitempty"`
	APIGroup        string    `json:"apiGroup,omitempty"`
	APIVersion      string    `json:"apiVersion,omitempty"`
	ResourceVersion string    `json:"resourceVersion,omitempty"`
	Subresource     string    `json:"subresource,omitempty"`
}

// Policy chooses each request's level: the first rule that matches it,
// else None.
type Policy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Rules             []PolicyRule `json:"rules"`
	// OmitStages apply to every rule, besides the rule's own.
	OmitStages []Stage `json:"omitStages,omitempty"`
	// OmitManagedFields drops metadata.managedFields from the bodies
	// recorded, unless a rule says otherwise.
	OmitManagedFields bool `json:"omitManagedFields,omitempty"`
}

// PolicyRule matches requests; every field given must match, an empty
// one matches all.
type PolicyRule struct {
	Level      Level    `json:"level"`
	Users      []string `json:"users,omitempty"`
	UserGroups []string `json:"userGroups,omitempty"`
	Verbs      []string `json:"verbs,omitempty"`
	// Resources and Namespaces match resource requests only;
	// NonResourceURLs other paths only. A rule cannot have both.
	Resources       []GroupResources `json:"resources,omitempty"`
	Namespaces      []string         `json:"namespaces,omitempty"`
	NonResourceURLs []string         `json:"nonResourceURLs,omitempty"`
	OmitStages      []Stage          `json:"omitStages,omitempty"`
	// OmitManagedFields, when set, overrides the policy's.
	OmitManagedFields *bool `json:"omitManagedFields,omitempty"`
}

// GroupResources are resources of one API group ("" the core group):
// "pods", "pods/log" (a subresource), "*", "*/status", "pods/*"; and,
// optionally, only the objects named.
type GroupResources struct {
	Group         string   `json:"group,omitempty"`
	Resources     []string `json:"resources,omitempty"`
	ResourceNames []string `json:"resourceNames,omitempty"`
}
