// Package rest owns the contract between the resource handlers and what
// serves a resource: one small interface per verb, as kube's
// registry/rest has them. The Registry maps each resource and subresource
// to a Storage; a handler checks which interfaces it implements, and a
// verb it does not implement is a 405. Anything can serve a resource this
// way: the generic store over etcd, a create-only review, a subresource
// computed from its parent.
package rest

import (
	"context"
	"io"
	"net/http"
	"net/url"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Storage is anything that serves a resource or a subresource; New
// returns an empty object of the kind requests and answers carry.
type Storage interface {
	New() runtime.Object
}

// Scoper says whether objects live in namespaces.
type Scoper interface {
	NamespaceScoped() bool
}

// Getter reads one object. Errors are API errors (NotFound for a missing
// object).
type Getter interface {
	Get(ctx context.Context, namespace, name string, opts *metav1.GetOptions) (runtime.Object, error)
}

// Stream is what a Streamer answers: bytes read from elsewhere.
type Stream struct {
	// Body is the answer; nil is no content (a 204), as kube answers a
	// log that has nowhere to come from yet.
	Body        io.ReadCloser
	ContentType string
	// Flush sends each read on at once, for a stream that follows.
	Flush bool
}

// Streamer serves the GET of a subresource whose answer is a stream of
// bytes rather than an object, as pods/log is: it reads its options
// from the query itself, and its errors are API errors.
type Streamer interface {
	Stream(ctx context.Context, namespace, name string, query url.Values) (*Stream, error)
}

// Connecter serves a subresource answered elsewhere, as pods/exec is by
// the pod's node: on a GET or a POST it reads its options from the query
// and says where the request goes; the endpoints proxy it there, upgrade
// included. Its errors are API errors.
type Connecter interface {
	Connect(ctx context.Context, namespace, name string, query url.Values) (*Upstream, error)
}

// Upstream is where a Connecter's request goes on to: Location, with its
// own query, through Transport, which carries the apiserver's credentials
// for it.
type Upstream struct {
	Location  *url.URL
	Transport http.RoundTripper
}

// ListOptions are metav1.ListOptions with their selectors parsed.
type ListOptions struct {
	metav1.ListOptions
	Label labels.Selector
	Field fields.Selector
}

// Lister reads a collection; namespace "" is all namespaces of a
// namespaced resource.
type Lister interface {
	NewList() runtime.Object
	List(ctx context.Context, namespace string, opts *ListOptions) (runtime.Object, error)
}

// Watcher streams changes to a collection until ctx ends.
type Watcher interface {
	Watch(ctx context.Context, namespace string, opts *ListOptions) (watch.Interface, error)
}

// ValidateObjectFunc is validating admission for a create or a delete:
// it sees the final object and may refuse it with an API error.
type ValidateObjectFunc func(ctx context.Context, obj runtime.Object) error

// ValidateObjectUpdateFunc is validating admission for an update.
type ValidateObjectUpdateFunc func(ctx context.Context, obj, old runtime.Object) error

// Creater stores new objects; obj comes decoded and defaulted, with its
// mutating admission done. validate runs once the strategy has prepared
// and validated the object.
type Creater interface {
	Create(ctx context.Context, namespace string, obj runtime.Object, validate ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error)
}

// NamedCreater creates through a named object, as a subresource that
// takes a POST does (serviceaccounts/token).
type NamedCreater interface {
	Create(ctx context.Context, namespace, name string, obj runtime.Object, validate ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error)
}

// Describer is implemented by a subresource's storage whose objects are
// of another kind than its resource's: serviceaccounts/token takes and
// returns TokenRequests. Bodies are decoded, and answers encoded, as the
// description says; others use their resource's.
type Describer interface {
	Describe() *Resource
}

// UpdatedObjectInfo computes an update's new object from the current one,
// inside the store's read-modify-write loop: it may run more than once.
type UpdatedObjectInfo interface {
	// Preconditions the stored object must meet (a uid), or nil.
	Preconditions() *metav1.Preconditions
	// UpdatedObject returns the new object; current is nil when the
	// object does not exist (a create).
	UpdatedObject(ctx context.Context, current runtime.Object) (runtime.Object, error)
}

// Updater replaces objects. forceAllowCreate lets an update create a
// missing object (server-side apply). It reports whether it created.
type Updater interface {
	Update(ctx context.Context, namespace, name string, info UpdatedObjectInfo, createValidation ValidateObjectFunc, updateValidation ValidateObjectUpdateFunc, forceAllowCreate bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error)
}

// Patcher is what a PATCH needs: the object to patch and a way to store
// the result.
type Patcher interface {
	Getter
	Updater
}

// GracefulDeleter deletes one object, possibly in two phases (finalizers,
// a namespace emptied first). It reports whether the object is gone; the
// answer is the last state or a Status.
type GracefulDeleter interface {
	Delete(ctx context.Context, namespace, name string, validate ValidateObjectFunc, opts *metav1.DeleteOptions) (runtime.Object, bool, error)
}

// CollectionDeleter deletes what a list selects and returns it as a list.
type CollectionDeleter interface {
	DeleteCollection(ctx context.Context, namespace string, validate ValidateObjectFunc, opts *metav1.DeleteOptions, listOpts *ListOptions) (runtime.Object, error)
}

// List is a collection as a Lister returns it. Its items may be shared,
// read-only objects (storage.SharedObject) that carry their encodings, so
// the response writers write it item by item instead of through a typed
// list.
type List struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []runtime.Object
	// Unstructured is set for a list of objects defined at run time,
	// which kube writes as an unstructured list: keys sorted, continue
	// always present.
	Unstructured bool
}

func (l *List) DeepCopyObject() runtime.Object {
	out := &List{TypeMeta: l.TypeMeta, Unstructured: l.Unstructured}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]runtime.Object, len(l.Items))
	for i, it := range l.Items {
		out.Items[i] = it.DeepCopyObject()
	}
	return out
}

// VerbOrderer is a storage whose verbs discovery lists in an order of its
// own rather than by name (a custom resource's, in kube's order).
type VerbOrderer interface {
	DiscoveryVerbs() []string
}
