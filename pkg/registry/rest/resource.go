package rest

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"

	cronschema "github.com/cronplane/cronplane/pkg/schema"
)

// Resource describes one served resource of one group version to the
// endpoints: what discovery lists, what bodies decode into, how a Table
// renders it. What serves it is a Storage next to it in the Registry.
type Resource struct {
	// GroupVersionKind of the served objects; the list kind is Kind+"List".
	schema.GroupVersionKind
	Plural     string
	Singular   string
	ShortNames []string
	Categories []string
	Namespaced bool

	// New returns an empty object of the served type; NewList an empty
	// list, or is nil for a resource that is never listed (a review).
	New     func() runtime.Object
	NewList func() runtime.Object
	// Default applies the type's defaults, as kube's decoder does to
	// every body it decodes and every object it reads from storage; nil
	// means the type has none.
	Default func(obj runtime.Object)

	// Table defines the columns of the Table representation; nil means
	// Name and Created At.
	Table *TableSpec

	// Schema is the structural schema of the served objects, ListSchema
	// that of their lists. For a Go type nil is filled in from New and
	// NewList; a type defined at run time (unstructured objects) brings
	// its Schema, and its list schema follows from it (see Complete).
	Schema     *cronschema.Structural
	ListSchema *cronschema.Structural

	// Deprecated marks a version that is deprecated; nil means it is not.
	Deprecated *Deprecation

	// StorageVersionHash identifies the group, version and kind the
	// objects are stored as, as kube's discovery publishes it; empty for
	// a resource that stores nothing.
	StorageVersionHash string
	// SubresourceOrder is the order discovery lists the subresources in;
	// nil means by name (a custom resource's status comes before its
	// scale, as kube lists them).
	SubresourceOrder []string
}

// Deprecation describes a deprecated version of a resource, as kube's
// warnings name it.
type Deprecation struct {
	// Since is the minor release that deprecated it ("1.29").
	Since string
	// RemovedIn is the release that stops serving it; empty means none is
	// planned.
	RemovedIn string
	// Replacement is what to use instead; empty means none.
	Replacement schema.GroupVersionKind
	// Message, when set, is the whole warning (a custom resource
	// version's deprecationWarning, or kube's default for one).
	Message string
}

// Warning is kube's warning for a request to a deprecated version:
// "batch/v1beta1 CronJob is deprecated in v1.21+, unavailable in v1.25+;
// use batch/v1 CronJob".
func (r *Resource) Warning() string {
	d := r.Deprecated
	if d.Message != "" {
		return d.Message
	}
	msg := r.GroupVersion().String() + " " + r.Kind + " is deprecated in v" + d.Since + "+"
	if d.RemovedIn != "" {
		msg += ", unavailable in v" + d.RemovedIn + "+"
	}
	if !d.Replacement.Empty() {
		msg += "; use " + d.Replacement.GroupVersion().String() + " " + d.Replacement.Kind
	}
	return msg
}

// Complete fills in what a registration may leave out: the schemas of a
// Go type, derived once from its definitions; for a schema given inline,
// its definition name, apiVersion, kind and metadata, as kube completes a
// custom resource's; the list schema of unstructured objects. It may be
// called more than once.
func (r *Resource) Complete() {
	if r.Schema == nil {
		r.Schema = cronschema.FromGoType(r.New())
	}
	if st := r.Schema.AsResource(cronschema.KindDefinitionName(r.GroupVersionKind)); st != r.Schema {
		r.Schema = st
	}
	if r.ListSchema != nil || r.NewList == nil {
		return
	}
	if _, ok := r.NewList().(*unstructured.UnstructuredList); ok {
		r.ListSchema = cronschema.ListOf(r.Schema, cronschema.KindDefinitionName(r.ListGVK()), r.Kind, r.Plural)
	} else {
		r.ListSchema = cronschema.FromGoType(r.NewList())
	}
}

// PatchTypes are the PATCH content types the resource takes, in the order
// kube lists them (its OpenAPI documents, its 415). A strategic merge
// needs a Go type's field tags, so a resource without one (a custom
// resource, and its subresources with it) takes the other three, and its
// documents must not offer it: kubectl sends the strategic form wherever
// they do.
func (r *Resource) PatchTypes() []string {
	if _, unstructuredType := r.New().(*unstructured.Unstructured); unstructuredType {
		return []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.ApplyPatchType)}
	}
	return []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.StrategicMergePatchType), string(types.ApplyPatchType)}
}

// GroupResource names the resource as errors do ("cronjobs.batch").
func (r *Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Plural}
}

// GroupVersionResource names the resource in paths and discovery.
func (r *Resource) GroupVersionResource() schema.GroupVersionResource {
	return r.GroupVersion().WithResource(r.Plural)
}

// ListGVK is the kind of the resource's lists.
func (r *Resource) ListGVK() schema.GroupVersionKind {
	return r.GroupVersion().WithKind(r.Kind + "List")
}

// Defaults applies the type's defaults to obj, if it has any.
func (r *Resource) Defaults(obj runtime.Object) {
	if r.Default != nil {
		r.Default(obj)
	}
}

// TableSpec defines a resource's Table columns.
type TableSpec struct {
	Columns []metav1.TableColumnDefinition
	// Cells returns one row's cells, in column order, for an object of the
	// served type; now is when the table is rendered (for ages).
	Cells func(obj runtime.Object, now time.Time) []interface{}
}

// NameColumn and AgeColumn are a Table's usual first and last columns.
var (
	NameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
	AgeColumn  = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
)

// Age renders how long ago t was, as kubectl shows ages.
func Age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}
