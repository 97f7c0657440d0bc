// Package handlers owns the resource endpoints: for a request whose
// RequestInfo names a served resource it checks that the method fits the
// path, negotiates the representation, reads the options and the body,
// calls the resource's generic store (which runs strategy, admission and
// storage) and encodes the answer. Each verb returns a status code and an
// object, or an error; ServeHTTP alone writes the response. It holds no
// state of its own; the Registry decides what is served.
package handlers

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/endpoints/negotiation"
	"github.com/cronplane/cronplane/pkg/endpoints/request"
	"github.com/cronplane/cronplane/pkg/endpoints/responsewriters"
	"github.com/cronplane/cronplane/pkg/endpoints/table"
	"github.com/cronplane/cronplane/pkg/featuregate"
	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/warning"
)

// Handler serves resource requests from a Registry.
type Handler struct {
	Registry *registry.Registry
	// MinRequestTimeout bounds watches: one without timeoutSeconds lasts a
	// random time between it and twice it.
	MinRequestTimeout int64
	FeatureGates      *featuregate.Gates
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
	h         *Handler
	w         http.ResponseWriter
	r         *http.Request
	query     url.Values
	info      *request.RequestInfo
	store     *registry.Store
	namespace string
	format    negotiation.Format
	warnings  *warning.Recorder
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	warnings := &warning.Recorder{}
	r = r.WithContext(warning.WithRecorder(r.Context(), warnings))
	c, err := h.newCall(w, r)
	if err != nil {
		warnings.WriteHeaders(w.Header())
		responsewriters.WriteError(w, r, err)
		return
	}
	c.warnings = warnings
	var code int
	var obj runtime.Object
	switch c.info.Verb {
	case "get":
		code, obj, err = c.get()
	case "list", "watch":
		var opts metav1.ListOptions
		if opts, err = listOptions(c.query, c.info.Verb == "watch", c.watchList()); err == nil {
			if opts.Watch {
				c.serveWatch(opts)
				return
			}
			code, obj, err = c.list(opts)
		}
	case "create":
		code, obj, err = c.create()
	case "update":
		code, obj, err = c.update()
	case "patch":
		code, obj, err = c.patch()
	case "delete":
		code, obj, err = c.delete()
	case "deletecollection":
		code, obj, err = c.deleteCollection()
	default:
		err = ErrMethodNotAllowed()
	}
	if err != nil {
		c.fail(err)
		return
	}
	c.respond(code, obj)
}

// newCall finds the store of a request and checks that its method fits
// the path: collections take GET, POST and DELETE, objects GET, PUT,
// PATCH and DELETE, subresources GET, PUT and PATCH; anything else is
// kube's 405, as is a verb the resource does not serve.
func (h *Handler) newCall(w http.ResponseWriter, r *http.Request) (*call, error) {
	info, ok := request.RequestInfoFrom(r.Context())
	if !ok || !info.IsResourceRequest {
		return nil, responsewriters.ErrNotFound()
	}
	store, ok := h.Registry.Lookup(info.GroupVersionResource())
	if !ok {
		return nil, responsewriters.ErrNotFound()
	}
	res := store.Resource
	named := len(info.Parts) >= 2
	switch {
	case info.Subresource != "":
		if _, ok := res.Subresources[info.Subresource]; !ok || len(info.Parts) > 3 {
			return nil, responsewriters.ErrNotFound()
		}
	case len(info.Parts) > 2:
		return nil, responsewriters.ErrNotFound()
	}
	namespace := info.Namespace
	if !res.Namespaced {
		namespace = ""
	} else if namespace == "" && named {
		// A namespaced object addressed without a namespace.
		return nil, responsewriters.ErrNotFound()
	}
	if !methodFits(r.Method, named, info.Subresource != "", res.Namespaced && namespace == "") || !res.Serves(info.Verb) {
		return nil, ErrMethodNotAllowed()
	}
	if res.Namespaced && info.Namespace != "" {
		if msgs := path.IsValidPathSegmentName(info.Namespace); len(msgs) > 0 {
			return nil, apierrors.NewBadRequest("Namespace parameter invalid: " + quote(info.Namespace) + ": " + strings.Join(msgs, ";"))
		}
	}
	if named {
		if msgs := path.IsValidPathSegmentName(info.Name); len(msgs) > 0 {
			return nil, apierrors.NewBadRequest("Name parameter invalid: " + quote(info.Name) + ": " + strings.Join(msgs, ";"))
		}
	}
	c := &call{h: h, w: w, r: r, query: r.URL.Query(), info: info, store: store, namespace: namespace}
	verb := info.Verb
	opts := negotiation.Options{
		Protobuf: protobufCapable(res),
		Table:    verb == "get" || verb == "list" || verb == "watch",
		Stream:   verb == "watch" || (verb == "list" && boolParam(c.query, "watch")),
		// A collection's endpoint also serves watches, and names their
		// representations when it answers 406.
		Collection: !named,
	}
	f, ok := negotiation.Negotiate(r.Header.Get("Accept"), opts)
	if !ok {
		return nil, responsewriters.ErrNotAcceptable(negotiation.NotAcceptableMessage(opts))
	}
	c.format = f
	return c, nil
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// methodFits reports whether method is served at a path of this shape.
// allNamespaces marks a namespaced resource's cluster-wide collection,
// which only lists and watches.
func methodFits(method string, named, subresource, allNamespaces bool) bool {
	switch {
	case subresource:
		return method == http.MethodGet || method == http.MethodPut || method == http.MethodPatch
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

// protobufCapable reports whether a resource's objects have a protobuf form.
func protobufCapable(res *registry.Resource) bool {
	_, ok := res.New().(codec.ProtoMessage)
	return ok
}

func (c *call) fail(err error) {
	c.warnings.WriteHeaders(c.w.Header())
	responsewriters.WriteError(c.w, c.r, err)
}

func (c *call) respond(code int, obj runtime.Object) {
	obj, err := c.transform(obj)
	if err != nil {
		c.fail(err)
		return
	}
	c.warnings.WriteHeaders(c.w.Header())
	responsewriters.Write(c.w, c.r, code, obj, c.format)
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
		return table.Convert(c.store.Resource, obj, include, c.format.AsVersion, time.Now())
	case negotiation.AsPartialObjectMetadata, negotiation.AsPartialObjectMetadataList:
		return partialMetadata(c.store.Resource, obj, c.format.As, c.format.AsVersion)
	}
	return obj, nil
}

func (c *call) get() (int, runtime.Object, error) {
	var opts metav1.GetOptions
	if err := decodeParams(c.query, &opts); err != nil {
		return 0, nil, err
	}
	obj, err := c.store.Get(c.r.Context(), c.namespace, c.info.Name, opts)
	return http.StatusOK, obj, err
}

func (c *call) list(opts metav1.ListOptions) (int, runtime.Object, error) {
	pred, err := c.predicate(opts)
	if err != nil {
		return 0, nil, err
	}
	obj, err := c.store.List(c.r.Context(), c.namespace, opts, pred)
	return http.StatusOK, obj, err
}

func (c *call) create() (int, runtime.Object, error) {
	opts, err := createOptions(c.query)
	if err != nil {
		return 0, nil, err
	}
	obj, err := c.decode(opts.FieldValidation)
	if err != nil {
		return 0, nil, err
	}
	out, err := c.store.Create(c.r.Context(), c.namespace, obj, c.writeOptions(opts.DryRun, opts.FieldManager))
	return http.StatusCreated, out, err
}

func (c *call) update() (int, runtime.Object, error) {
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
	wo := c.writeOptions(opts.DryRun, opts.FieldManager)
	// A uid in the body is a precondition, as kube treats it.
	wo.UID = metaOf(obj).GetUID()
	out, created, err := c.store.Update(c.r.Context(), c.namespace, c.info.Name, c.info.Subresource,
		func(context.Context, runtime.Object) (runtime.Object, error) { return obj.DeepCopyObject(), nil }, wo)
	if created {
		return http.StatusCreated, out, err
	}
	return http.StatusOK, out, err
}

func (c *call) delete() (int, runtime.Object, error) {
	opts, err := c.deleteOptions()
	if err != nil {
		return 0, nil, err
	}
	out, deleted, err := c.store.Delete(c.r.Context(), c.namespace, c.info.Name, opts, registry.WriteOptions{DryRun: len(opts.DryRun) > 0})
	//nolint:staticcheck // kube answers 202 for a kept object when OrphanDependents=false was asked.
	if err == nil && !deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		return http.StatusAccepted, out, nil
	}
	return http.StatusOK, out, err
}

func (c *call) deleteCollection() (int, runtime.Object, error) {
	listOpts, err := listOptions(c.query, false, c.watchList())
	if err != nil {
		return 0, nil, err
	}
	pred, err := c.predicate(listOpts)
	if err != nil {
		return 0, nil, err
	}
	opts, err := c.deleteOptions()
	if err != nil {
		return 0, nil, err
	}
	out, err := c.store.DeleteCollection(c.r.Context(), c.namespace, listOpts, pred, opts, registry.WriteOptions{DryRun: len(opts.DryRun) > 0})
	return http.StatusOK, out, err
}

// writeOptions are the store's options for a write with these query
// options.
func (c *call) writeOptions(dryRun []string, fieldManager string) registry.WriteOptions {
	return registry.WriteOptions{DryRun: len(dryRun) > 0, FieldManager: managerOrUserAgent(fieldManager, c.r.UserAgent())}
}

// checkName refuses a body that names another object than the path.
func checkName(obj runtime.Object, name string) error {
	if got := metaOf(obj).GetName(); got != name {
		return apierrors.NewBadRequest("the name of the object (" + got + ") does not match the name on the URL (" + name + ")")
	}
	return nil
}
