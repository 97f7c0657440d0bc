// Package handlers owns the resource endpoints: for a request whose
// RequestInfo names a served resource it negotiates the representation,
// decodes the body, calls the resource's generic store (which runs
// strategy, admission and storage) and encodes the answer. It holds no
// state of its own; the Registry decides what is served.
package handlers

import (
	"context"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/featuregate"
	"github.com/cronplane/cronplane/pkg/negotiation"
	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/request"
	"github.com/cronplane/cronplane/pkg/response"
	"github.com/cronplane/cronplane/pkg/table"
)

// Handler serves resource requests from a Registry.
type Handler struct {
	Registry *registry.Registry
	// MinRequestTimeout bounds watches: one without timeoutSeconds lasts a
	// random time between it and twice it.
	MinRequestTimeout int64
	FeatureGates      *featuregate.Gates
}

func errMethodNotAllowed() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusMethodNotAllowed,
		Reason:  metav1.StatusReasonMethodNotAllowed,
		Message: "the server does not allow this method on the requested resource",
		Details: &metav1.StatusDetails{},
	}}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	info, ok := request.RequestInfoFrom(r.Context())
	if !ok || !info.IsResourceRequest {
		response.WriteError(w, r, response.ErrNotFound())
		return
	}
	store, ok := h.Registry.Lookup(info.GroupVersionResource())
	if !ok {
		response.WriteError(w, r, response.ErrNotFound())
		return
	}
	res := store.Resource
	if info.Subresource != "" {
		if _, ok := res.Subresources[info.Subresource]; !ok || len(info.Parts) > 3 {
			response.WriteError(w, r, response.ErrNotFound())
			return
		}
	} else if len(info.Parts) > 2 {
		response.WriteError(w, r, response.ErrNotFound())
		return
	}
	namespace := info.Namespace
	if !res.Namespaced {
		namespace = ""
	} else if namespace == "" && info.Name != "" && info.Verb != "list" && info.Verb != "watch" {
		// A namespaced object addressed without a namespace.
		response.WriteError(w, r, response.ErrNotFound())
		return
	} else if namespace == "" && (info.Verb == "create" || info.Verb == "deletecollection") {
		response.WriteError(w, r, errMethodNotAllowed())
		return
	}
	verb := info.Verb
	if !res.Serves(verb) || (info.Subresource != "" && !subresourceVerbs[verb]) {
		response.WriteError(w, r, errMethodNotAllowed())
		return
	}
	req := &call{h: h, w: w, r: r, info: info, store: store, namespace: namespace}
	opts := negotiation.Options{Protobuf: protobufCapable(res), Table: verb == "get" || verb == "list" || verb == "watch", Stream: verb == "watch"}
	if verb == "list" && isTrue(r.URL.Query().Get("watch")) {
		opts.Stream = true
	}
	f, ok := negotiation.Negotiate(r.Header.Get("Accept"), opts)
	if !ok {
		response.WriteError(w, r, response.ErrNotAcceptable(negotiation.NotAcceptableMessage(opts)))
		return
	}
	req.format = f
	switch verb {
	case "get":
		req.get()
	case "list":
		req.list()
	case "watch":
		req.watch()
	case "create":
		req.create()
	case "update":
		req.update()
	case "patch":
		req.patch()
	case "delete":
		req.delete()
	case "deletecollection":
		req.deleteCollection()
	default:
		response.WriteError(w, r, errMethodNotAllowed())
	}
}

// subresourceVerbs are the verbs a subresource serves.
var subresourceVerbs = map[string]bool{"get": true, "update": true, "patch": true}

// call is one resource request on its way through the handler.
type call struct {
	h         *Handler
	w         http.ResponseWriter
	r         *http.Request
	info      *request.RequestInfo
	store     *registry.Store
	namespace string
	format    negotiation.Format
}

// protobufCapable reports whether a resource's objects have a protobuf form.
func protobufCapable(res *registry.Resource) bool {
	_, ok := res.New().(codec.ProtoMessage)
	return ok
}

func (c *call) fail(err error) { response.WriteError(c.w, c.r, err) }

func (c *call) respond(code int, obj runtime.Object) {
	obj, err := c.transform(obj)
	if err != nil {
		c.fail(err)
		return
	}
	response.Write(c.w, c.r, code, obj, c.format)
}

// transform turns an answer into the meta.k8s.io kind the client asked
// for, if any.
func (c *call) transform(obj runtime.Object) (runtime.Object, error) {
	switch c.format.As {
	case negotiation.AsTable:
		include := c.r.URL.Query().Get("includeObject")
		switch include {
		case "", table.IncludeNone, table.IncludeMetadata, table.IncludeObject:
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("includeObject: Unsupported value: %q: supported values: %q, %q, %q", include, table.IncludeNone, table.IncludeMetadata, table.IncludeObject))
		}
		return table.Convert(c.store.Resource, obj, include, c.format.AsVersion, time.Now())
	case negotiation.AsPartialObjectMetadata, negotiation.AsPartialObjectMetadataList:
		return partialMetadata(c.store.Resource, obj, c.format.As, c.format.AsVersion)
	}
	return obj, nil
}

func (c *call) get() {
	var opts metav1.GetOptions
	opts.ResourceVersion = c.r.URL.Query().Get("resourceVersion")
	obj, err := c.store.Get(c.r.Context(), c.namespace, c.info.Name, opts)
	if err != nil {
		c.fail(err)
		return
	}
	c.respond(http.StatusOK, obj)
}

func (c *call) list() {
	opts, pred, err := c.listOptions()
	if err != nil {
		c.fail(err)
		return
	}
	if opts.Watch {
		c.serveWatch(opts, pred)
		return
	}
	obj, err := c.store.List(c.r.Context(), c.namespace, opts, pred)
	if err != nil {
		c.fail(err)
		return
	}
	c.respond(http.StatusOK, obj)
}

func (c *call) watch() {
	opts, pred, err := c.listOptions()
	if err != nil {
		c.fail(err)
		return
	}
	c.serveWatch(opts, pred)
}

func (c *call) create() {
	dryRun, err := registry.IsDryRun(c.r.URL.Query()["dryRun"])
	if err != nil {
		c.fail(err)
		return
	}
	obj, err := c.decode()
	if err != nil {
		c.fail(err)
		return
	}
	if err := c.checkNamespace(obj); err != nil {
		c.fail(err)
		return
	}
	manager, err := c.fieldManager()
	if err != nil {
		c.fail(err)
		return
	}
	out, err := c.store.Create(c.r.Context(), c.namespace, obj, registry.WriteOptions{DryRun: dryRun, FieldManager: manager})
	if err != nil {
		c.fail(err)
		return
	}
	c.respond(http.StatusCreated, out)
}

func (c *call) update() {
	dryRun, err := registry.IsDryRun(c.r.URL.Query()["dryRun"])
	if err != nil {
		c.fail(err)
		return
	}
	obj, err := c.decode()
	if err != nil {
		c.fail(err)
		return
	}
	if err := c.checkNamespace(obj); err != nil {
		c.fail(err)
		return
	}
	manager, err := c.fieldManager()
	if err != nil {
		c.fail(err)
		return
	}
	out, created, err := c.store.Update(c.r.Context(), c.namespace, c.info.Name, c.info.Subresource,
		func(context.Context, runtime.Object) (runtime.Object, error) { return obj.DeepCopyObject(), nil },
		registry.WriteOptions{DryRun: dryRun, FieldManager: manager})
	if err != nil {
		c.fail(err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	c.respond(code, out)
}

func (c *call) delete() {
	opts, dryRun, err := c.deleteOptions()
	if err != nil {
		c.fail(err)
		return
	}
	out, deleted, err := c.store.Delete(c.r.Context(), c.namespace, c.info.Name, opts, registry.WriteOptions{DryRun: dryRun})
	if err != nil {
		c.fail(err)
		return
	}
	code := http.StatusOK
	//nolint:staticcheck // kube answers 202 for a kept object when OrphanDependents=false was asked.
	if !deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		code = http.StatusAccepted
	}
	c.respond(code, out)
}

func (c *call) deleteCollection() {
	opts, dryRun, err := c.deleteOptions()
	if err != nil {
		c.fail(err)
		return
	}
	listOpts, pred, err := c.listOptions()
	if err != nil {
		c.fail(err)
		return
	}
	out, err := c.store.DeleteCollection(c.r.Context(), c.namespace, listOpts, pred, opts, registry.WriteOptions{DryRun: dryRun})
	if err != nil {
		c.fail(err)
		return
	}
	c.respond(http.StatusOK, out)
}

// checkNamespace makes a body's namespace agree with the path's.
func (c *call) checkNamespace(obj runtime.Object) error {
	m, err := metaAccessor(obj)
	if err != nil {
		return err
	}
	if !c.store.Resource.Namespaced {
		return nil
	}
	if ns := m.GetNamespace(); ns != "" && ns != c.namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	m.SetNamespace(c.namespace)
	return nil
}
