// Package handlers owns the resource endpoints: for a request whose
// RequestInfo names a served resource it checks that the method fits the
// path and that the resource's storage serves the verb (the verb
// interfaces of pkg/registry/rest), negotiates the representation, reads
// the options and the body, keeps managedFields, runs admission around
// the storage call and encodes the answer. Each verb returns a status
// code and an object, or an error; ServeHTTP alone writes the response.
// It holds no state of its own; the Registry decides what is served.
package handlers

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/admission"
	"github.com/cronplane/cronplane/pkg/apply"
	"github.com/cronplane/cronplane/pkg/audit"
	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/endpoints/instrumentation"
	"github.com/cronplane/cronplane/pkg/endpoints/negotiation"
	"github.com/cronplane/cronplane/pkg/endpoints/request"
	"github.com/cronplane/cronplane/pkg/endpoints/responsewriters"
	"github.com/cronplane/cronplane/pkg/endpoints/table"
	"github.com/cronplane/cronplane/pkg/featuregate"
	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/warning"
)

// Handler serves resource requests from a Registry.
type Handler struct {
	Registry *registry.Registry
	// Admission is the chain every write passes: its mutating phase before
	// the storage is called, its validating phase on the final object.
	Admission admission.Chain
	// MinRequestTimeout (seconds) bounds watches: one without timeoutSeconds
	// lasts a random time between it and twice it; with 0 it ends at once,
	// as kube's does.
	MinRequestTimeout int64
	FeatureGates      *featuregate.Gates
	// Authorizer is asked, besides the request's own verb, whether an
	// update that creates its object may create it; nil does not ask.
	Authorizer authorizer.Authorizer
	// Metrics receives the watches and their events, and the requests of
	// deprecated APIs; nil records nothing.
	Metrics *instrumentation.Metrics
}

// ErrMethodNotAllowed is kube's 405 for a method the path does not serve.
func ErrMethodNotAllowed() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusMethodNotAllowed,
		Reason:  metav1.StatusReasonMethodNotAllowed,
		Message: "the server does not allow this method on the requested resource",
		Details: &metav1.StatusDetails{},
	}}
}

// call is one resource request on its way through the handler.
type call struct {
	h     *Handler
	w     http.ResponseWriter
	r     *http.Request
	query url.Values
	info  *request.RequestInfo
	entry *registry.Entry
	// storage serves the request's resource or subresource, and res
	// describes the objects it takes and returns.
	storage   rest.Storage
	res       *rest.Resource
	namespace string
	format    negotiation.Format
	warnings  *warning.Recorder
}

// ServeHTTP is the one place that answers: the verb returns a code and
// an object, or an error that becomes a Status; a watch has written its
// stream when it returns neither.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	warnings := &warning.Recorder{}
	r = r.WithContext(warning.WithRecorder(r.Context(), warnings))
	var code int
	var obj runtime.Object
	c, err := h.newCall(w, r)
	if err == nil {
		c.warnings = warnings
		if c.entry.Deprecated != nil {
			c.deprecated()
		}
		code, obj, err = c.serve()
		if err == nil && obj != nil {
			obj, err = c.transform(obj)
		}
	}
	switch {
	case errors.Is(err, errNoRoute):
		responsewriters.WritePlainNotFound(w, r)
	case err != nil:
		warnings.WriteHeaders(w.Header())
		responsewriters.WriteError(w, r, err)
	case obj != nil:
		warnings.WriteHeaders(w.Header())
		responsewriters.Write(w, r, code, obj, c.format)
	}
}

// deprecated signals a request to a deprecated version: a warning to the
// client, the audit annotations and the deprecated-API metric.
func (c *call) deprecated() {
	ctx := c.r.Context()
	warning.Add(ctx, c.entry.Warning())
	audit.AddAnnotation(ctx, audit.DeprecatedAnnotation, "true")
	if removed := c.entry.Deprecated.RemovedIn; removed != "" {
		audit.AddAnnotation(ctx, audit.RemovedReleaseAnnotation, removed)
	}
	if m := c.h.Metrics; m != nil {
		m.DeprecatedRequested(c.entry.GroupVersionResource(), c.info.Subresource, c.entry.Deprecated.RemovedIn)
	}
}

// serve runs the request's verb on a storage that implements it; a verb
// it does not implement is a 405. A watch writes its own stream and
// returns no object.
func (c *call) serve() (int, runtime.Object, error) {
	if cn, ok := c.storage.(rest.Connecter); ok && (c.info.Verb == "get" || c.info.Verb == "create") {
		return 0, nil, c.connect(cn)
	}
	switch c.info.Verb {
	case "get":
		if st, ok := c.storage.(rest.Streamer); ok {
			return 0, nil, c.stream(st)
		}
		if g, ok := c.storage.(rest.Getter); ok {
			return c.get(g)
		}
	case "list", "watch":
		opts, err := listOptions(c.query, c.info.Verb == "watch", c.watchList())
		if err != nil {
			return 0, nil, err
		}
		if opts.Watch {
			if wt, ok := c.storage.(rest.Watcher); ok {
				return 0, nil, c.serveWatch(wt, opts)
			}
		} else if l, ok := c.storage.(rest.Lister); ok {
			return c.list(l, opts)
		}
	case "create":
		if c.info.Subresource != "" {
			if nc, ok := c.storage.(rest.NamedCreater); ok {
				return c.create(func(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
					return nc.Create(ctx, c.namespace, c.info.Name, obj, validate, opts)
				})
			}
		} else if cr, ok := c.storage.(rest.Creater); ok {
			return c.create(func(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
				return cr.Create(ctx, c.namespace, obj, validate, opts)
			})
		}
	case "update":
		if u, ok := c.storage.(rest.Updater); ok {
			return c.update(u)
		}
	case "patch":
		if p, ok := c.storage.(rest.Patcher); ok {
			return c.patch(p)
		}
	case "delete":
		if d, ok := c.storage.(rest.GracefulDeleter); ok {
			return c.delete(d)
		}
	case "deletecollection":
		if d, ok := c.storage.(rest.CollectionDeleter); ok {
			return c.deleteCollection(d)
		}
	}
	return 0, nil, ErrMethodNotAllowed()
}

// errNoRoute is a path that names nothing, in a group only resources
// defined at run time serve (or none does): kube's router has no route
// for it, and its fallback answers.
var errNoRoute = errors.New("no route")

// notFound is the answer to a path that names nothing in group.
func (h *Handler) notFound(group string) error {
	if h.Registry.HasTypedGroup(group) {
		return responsewriters.ErrNotFound()
	}
	return errNoRoute
}

// newCall finds what serves a request and checks that its method fits the
// path: collections take GET, POST and DELETE, objects GET, PUT, PATCH
// and DELETE, and a subresource what its storage serves; anything else is
// kube's 405.
func (h *Handler) newCall(w http.ResponseWriter, r *http.Request) (*call, error) {
	info, ok := request.RequestInfoFrom(r.Context())
	if !ok || !info.IsResourceRequest {
		return nil, responsewriters.ErrNotFound()
	}
	entry, ok := h.Registry.Lookup(info.GroupVersionResource())
	if !ok {
		return nil, h.notFound(info.APIGroup)
	}
	storage := entry.Storage
	named := len(info.Parts) >= 2
	switch {
	case info.Subresource != "":
		if storage, ok = entry.Subresources[info.Subresource]; !ok || len(info.Parts) > 3 {
			if _, custom := entry.New().(*unstructured.Unstructured); custom && entry.Namespaced == info.InNamespacePath {
				// kube's custom resource handler answers for the object,
				// which has no such subresource, whether it exists or not.
				return nil, apierrors.NewNotFound(entry.GroupResource(), info.Name)
			}
			return nil, h.notFound(info.APIGroup)
		}
	case len(info.Parts) > 2:
		return nil, h.notFound(info.APIGroup)
	}
	namespace := info.Namespace
	switch {
	case !entry.Namespaced && info.InNamespacePath:
		// A cluster-scoped resource has nothing inside a namespace.
		return nil, h.notFound(info.APIGroup)
	case !entry.Namespaced:
		namespace = ""
	case namespace == "" && named:
		// A namespaced object addressed without a namespace.
		return nil, h.notFound(info.APIGroup)
	}
	allNamespaces := entry.Namespaced && namespace == ""
	if !servesPath(storage, named, info.Subresource != "", allNamespaces) {
		// As kube's router: no route where nothing is served.
		return nil, h.notFound(info.APIGroup)
	}
	if !methodFits(r.Method, named, info.Subresource != "", allNamespaces) {
		return nil, ErrMethodNotAllowed()
	}
	if entry.Namespaced && info.Namespace != "" {
		if msgs := path.IsValidPathSegmentName(info.Namespace); len(msgs) > 0 {
			return nil, apierrors.NewBadRequest("Namespace parameter invalid: " + quote(info.Namespace) + ": " + strings.Join(msgs, ";"))
		}
	}
	if named {
		if msgs := path.IsValidPathSegmentName(info.Name); len(msgs) > 0 {
			return nil, apierrors.NewBadRequest("Name parameter invalid: " + quote(info.Name) + ": " + strings.Join(msgs, ";"))
		}
	}
	res := entry.Resource
	if d, ok := storage.(rest.Describer); ok {
		res = d.Describe()
	}
	c := &call{h: h, w: w, r: r, query: r.URL.Query(), info: info, entry: entry, storage: storage, res: res, namespace: namespace}
	verb := info.Verb
	if _, ok := storage.(rest.Connecter); ok {
		// The answer comes from elsewhere, in its own representation.
		return c, nil
	}
	_, streamer := storage.(rest.Streamer)
	streams := verb == "get" && streamer
	opts := negotiation.Options{
		Protobuf: protobufCapable(res),
		Table:    (verb == "get" && !streams) || verb == "list" || verb == "watch",
		Stream:   verb == "watch" || (verb == "list" && boolParam(c.query, "watch")),
		// A collection's endpoint also serves watches, and names their
		// representations when it answers 406.
		Collection: !named,
	}
	f, ok := negotiation.Negotiate(r.Header.Get("Accept"), opts)
	if !ok && streams {
		return nil, streamNotAcceptable(r.Header.Get("Accept"), opts)
	}
	if !ok {
		return nil, notAcceptableFor(entry.Resource, opts)
	}
	c.format = f
	return c, nil
}

// servesPath reports whether a storage serves any verb at a path of this
// shape: a collection lists, watches, creates or deletes; an object (or
// a subresource) is read, written or deleted, and a subresource may take
// a create; the cluster-wide collection of a namespaced resource lists
// and watches only.
func servesPath(s rest.Storage, named, subresource, allNamespaces bool) bool {
	switch verbs := registry.Verbs(s); {
	case subresource:
		return anyOf(verbs, "get", "update", "patch", "create")
	case named:
		return anyOf(verbs, "get", "update", "patch", "delete")
	case allNamespaces:
		return anyOf(verbs, "list", "watch")
	default:
		return anyOf(verbs, "list", "watch", "create", "deletecollection")
	}
}

func anyOf(verbs []string, want ...string) bool {
	for _, w := range want {
		if slices.Contains(verbs, w) {
			return true
		}
	}
	return false
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// methodFits reports whether method can be served at a path of this
// shape; a subresource's storage decides for itself. allNamespaces marks
// a namespaced resource's cluster-wide collection, which only lists and
// watches.
func methodFits(method string, named, subresource, allNamespaces bool) bool {
	switch {
	case method == http.MethodHead:
		return false
	case subresource:
		return true
	case named:
		return method == http.MethodGet || method == http.MethodPut || method == http.MethodPatch || method == http.MethodDelete
	case allNamespaces:
		return method == http.MethodGet
	}
	return method == http.MethodGet || method == http.MethodPost || method == http.MethodDelete
}

// boolParam reads a boolean query parameter as kube does: false when
// absent, "0" or "false" (in any case), true otherwise.
func boolParam(q url.Values, name string) bool {
	v, ok := q[name]
	if !ok || len(v) == 0 {
		return false
	}
	return v[0] != "0" && !strings.EqualFold(v[0], "false")
}

func (c *call) watchList() bool {
	return c.h.FeatureGates != nil && c.h.FeatureGates.Enabled(featuregate.WatchList)
}

// notAcceptableFor is the 406 of a request for none of the representations
// a resource has. A resource without a Go type (a custom resource, on
// every path, its scale too) is answered as kube's custom resource
// handler answers: it names the media types that handler knows, protobuf
// among them, although it serves none of it.
func notAcceptableFor(res *rest.Resource, opts negotiation.Options) error {
	if _, custom := res.New().(*unstructured.Unstructured); custom {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotAcceptable,
			Reason: metav1.StatusReasonNotAcceptable, Message: "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"}}
	}
	return responsewriters.ErrNotAcceptable(negotiation.NotAcceptableMessage(opts))
}

// streamNotAcceptable is kube's 406 for a stream (pods/log): a client
// that accepts only its text/plain, or a Table, is told the object media
// types; one that accepts none of them is told text/plain as well.
func streamNotAcceptable(accept string, opts negotiation.Options) error {
	for _, part := range strings.Split(accept, ",") {
		typ, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && (typ == "text/plain" || params["as"] != "") {
			return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotAcceptable,
				Reason: metav1.StatusReasonNotAcceptable, Message: "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"}}
		}
	}
	msg := strings.Replace(negotiation.NotAcceptableMessage(opts), "representations: ", "representations: text/plain, ", 1)
	return responsewriters.ErrNotAcceptable(msg)
}

// protobufCapable reports whether a resource's objects have a protobuf form.
func protobufCapable(res *rest.Resource) bool {
	_, ok := res.New().(codec.ProtoMessage)
	return ok
}

// transform turns an answer into the meta.k8s.io kind the client asked
// for, if any.
func (c *call) transform(obj runtime.Object) (runtime.Object, error) {
	switch c.format.As {
	case negotiation.AsTable:
		include := c.query.Get("includeObject")
		switch include {
		case "", table.IncludeNone, table.IncludeMetadata, table.IncludeObject:
		default:
			return nil, apierrors.NewBadRequest("includeObject: Unsupported value: " + quote(include) + `: supported values: "None", "Metadata", "Object"`)
		}
		return table.Convert(c.res.Table, obj, include, c.format.AsVersion, time.Now())
	case negotiation.AsPartialObjectMetadata, negotiation.AsPartialObjectMetadataList:
		return partialMetadata(c.res, obj, c.format.As, c.format.AsVersion)
	}
	return obj, nil
}

func (c *call) get(g rest.Getter) (int, runtime.Object, error) {
	var opts metav1.GetOptions
	if err := decodeParams(c.query, &opts); err != nil {
		return 0, nil, err
	}
	obj, err := g.Get(c.r.Context(), c.namespace, c.info.Name, &opts)
	return http.StatusOK, obj, err
}

// stream answers a GET with a Streamer's bytes, as they come when it
// follows, until the stream ends or the client goes.
func (c *call) stream(st rest.Streamer) error {
	s, err := st.Stream(c.r.Context(), c.namespace, c.info.Name, c.query)
	if err != nil {
		return err
	}
	if s.Body == nil {
		c.w.WriteHeader(http.StatusNoContent)
		return nil
	}
	defer s.Body.Close()
	contentType := s.ContentType
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	c.w.Header().Set("Content-Type", contentType)
	c.w.WriteHeader(http.StatusOK)
	flusher, _ := c.w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	var out io.Writer = c.w
	if s.Flush && flusher != nil {
		out = flushWriter{c.w, flusher}
	}
	// The answer has started: an error now can only end it.
	_, _ = io.Copy(out, s.Body)
	return nil
}

// flushWriter sends each write on at once.
type flushWriter struct {
	w io.Writer
	f http.Flusher
}

func (fw flushWriter) Write(p []byte) (int, error) {
	n, err := fw.w.Write(p)
	fw.f.Flush()
	return n, err
}

func (c *call) list(l rest.Lister, opts metav1.ListOptions) (int, runtime.Object, error) {
	lo, err := c.restListOptions(opts)
	if err != nil {
		return 0, nil, err
	}
	obj, err := l.List(c.r.Context(), c.namespace, lo)
	return http.StatusOK, obj, err
}

// createFunc stores a new object through a Creater or a NamedCreater.
type createFunc func(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error)

// create serves a POST: to a collection, or to a subresource of a named
// object, such as a TokenRequest to serviceaccounts/{name}/token.
func (c *call) create(store createFunc) (int, runtime.Object, error) {
	opts, err := createOptions(c.query)
	if err != nil {
		return 0, nil, err
	}
	obj, err := c.decode(opts.FieldValidation)
	if err != nil {
		return 0, nil, err
	}
	uid := metaOf(obj).GetUID()
	if err := prepareNew(metaOf(obj), c.namespace); err != nil {
		return 0, nil, err
	}
	if c.info.Subresource != "" {
		// A POST to a subresource acts on an existing object, whose uid
		// the body may name as a precondition (a pod's Binding).
		metaOf(obj).SetUID(uid)
	}
	opts.FieldManager = managerOrUserAgent(opts.FieldManager, c.r.UserAgent())
	ctx := c.r.Context()
	// The mutating phase, then ownership of the result (what admission
	// changed is the writer's too), then the storage, which validates and
	// runs the validating phase on the prepared object.
	if err := c.admit(ctx, admission.Create, obj, nil, opts.DryRun, opts); err != nil {
		return 0, nil, err
	}
	if err := c.recordFields(nil, obj, opts.FieldManager); err != nil {
		return 0, nil, err
	}
	out, err := store(ctx, obj, c.validateObject(admission.Create, opts.DryRun, opts), opts)
	return http.StatusCreated, out, err
}

// prepareNew does what kube's handler does to every object posted,
// whatever serves it (a store, a review, a token request): the fields the
// system sets are not taken from the body, and the object is put in the
// request's namespace (none for a cluster-scoped resource), or refused
// when it names another.
func prepareNew(m metav1.Object, namespace string) error {
	m.SetCreationTimestamp(metav1.Time{})
	m.SetUID("")
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetSelfLink("")
	switch got := m.GetNamespace(); {
	case got == namespace:
	case got == "" || namespace == "":
		m.SetNamespace(namespace)
	default:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

func (c *call) update(u rest.Updater) (int, runtime.Object, error) {
	opts, err := updateOptions(c.query)
	if err != nil {
		return 0, nil, err
	}
	obj, err := c.decode(opts.FieldValidation)
	if err != nil {
		return 0, nil, err
	}
	if err := checkName(obj, c.info.Name); err != nil {
		return 0, nil, err
	}
	opts.FieldManager = managerOrUserAgent(opts.FieldManager, c.r.UserAgent())
	info := &updatedObject{
		// A uid in the body is a precondition, as kube treats it.
		preconditions: uidPrecondition(metaOf(obj).GetUID()),
		transform: func(_ context.Context, current runtime.Object) (runtime.Object, error) {
			return obj.DeepCopyObject(), nil
		},
	}
	return c.updateWith(u, info, false, opts)
}

// updateWith runs an update whose new object info computes from the
// current one: then, inside the storage's update loop, the mutating
// phase runs and managedFields are recorded (unless info recorded them,
// as apply does: an apply owns what it sent, as in kube); a write that changes nothing but managedFields times keeps
// the old times, so that it stores nothing.
func (c *call) updateWith(u rest.Updater, info *updatedObject, applied bool, opts *metav1.UpdateOptions) (int, runtime.Object, error) {
	// An update that creates is admitted as a create, with create options.
	createOpts := &metav1.CreateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager, FieldValidation: opts.FieldValidation}
	transform := info.transform
	info.transform = func(ctx context.Context, current runtime.Object) (runtime.Object, error) {
		obj, err := transform(ctx, current)
		if err != nil {
			return nil, err
		}
		op, options := admission.Update, runtime.Object(opts)
		if current == nil {
			op, options = admission.Create, createOpts
		}
		if err := c.admit(ctx, op, obj, current, opts.DryRun, options); err != nil {
			return nil, err
		}
		if !applied {
			if err := c.recordFields(current, obj, opts.FieldManager); err != nil {
				return nil, err
			}
		}
		if current != nil {
			apply.KeepManagedFieldsTimes(obj, current)
		}
		return obj, nil
	}
	out, created, err := u.Update(c.r.Context(), c.namespace, c.info.Name, info,
		c.authorizedCreate(c.validateObject(admission.Create, opts.DryRun, createOpts)), c.validateUpdate(opts.DryRun, opts), applied, opts)
	if created {
		return http.StatusCreated, out, err
	}
	return http.StatusOK, out, err
}

func (c *call) delete(d rest.GracefulDeleter) (int, runtime.Object, error) {
	opts, err := c.deleteOptions()
	if err != nil {
		return 0, nil, err
	}
	ctx := c.r.Context()
	if err := c.admitDelete(ctx, opts); err != nil {
		return 0, nil, err
	}
	out, deleted, err := d.Delete(ctx, c.namespace, c.info.Name, c.validateObject(admission.Delete, opts.DryRun, opts), opts)
	//nolint:staticcheck // kube answers 202 for a kept object when OrphanDependents=false was asked.
	if err == nil && !deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		return http.StatusAccepted, out, nil
	}
	return http.StatusOK, out, err
}

func (c *call) deleteCollection(d rest.CollectionDeleter) (int, runtime.Object, error) {
	listOpts, err := listOptions(c.query, false, c.watchList())
	if err != nil {
		return 0, nil, err
	}
	lo, err := c.restListOptions(listOpts)
	if err != nil {
		return 0, nil, err
	}
	opts, err := c.deleteOptions()
	if err != nil {
		return 0, nil, err
	}
	ctx := c.r.Context()
	if err := c.admitDelete(ctx, opts); err != nil {
		return 0, nil, err
	}
	out, err := d.DeleteCollection(ctx, c.namespace, c.validateObject(admission.Delete, opts.DryRun, opts), opts, lo)
	return http.StatusOK, out, err
}

// checkName refuses a body that names another object than the path.
func checkName(obj runtime.Object, name string) error {
	got := metaOf(obj).GetName()
	if got == "" {
		return apierrors.NewBadRequest("the name of the object (" + name + " based on URL) was undeterminable: name must be provided")
	}
	if got != name {
		return apierrors.NewBadRequest("the name of the object (" + got + ") does not match the name on the URL (" + name + ")")
	}
	return nil
}
