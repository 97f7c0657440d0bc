package openapi

import (
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/endpoints/negotiation"
	"github.com/cronplane/cronplane/pkg/endpoints/responsewriters"
	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/version"
)

// The protobuf forms of the OpenAPI documents. Clients ask for either
// spelling; kube answers with the one Go's mime package can parse, which
// client-go requires.
const (
	v2ProtobufType = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	v3ProtobufType = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
)

var (
	v2Offers = []string{"application/json", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", v2ProtobufType}
	v3Offers = []string{"application/json", "application/com.github.proto-openapi.spec.v3@v1.0+protobuf", v3ProtobufType}
)

// pick negotiates a document's form: JSON or protobuf. Like kube, it
// answers 406 with an empty body when the client accepts neither.
func pick(w http.ResponseWriter, r *http.Request, offers []string) (protobuf, ok bool) {
	typ, ok := negotiation.Pick(r.Header.Get("Accept"), offers)
	if !ok {
		w.WriteHeader(http.StatusNotAcceptable)
		return false, false
	}
	return typ != "application/json", true
}

// Handler serves the OpenAPI documents of a Registry.
type Handler struct {
	Registry *registry.Registry
}

// gvPath is the path of a group version: "api/v1" or "apis/batch/v1".
func gvPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

func (h *Handler) resources(only *schema.GroupVersion) []*registry.Entry {
	var out []*registry.Entry
	for _, e := range h.Registry.Entries() {
		if only == nil || e.GroupVersion() == *only {
			out = append(out, e)
		}
	}
	return out
}

func gvkExtension(gvk schema.GroupVersionKind) map[string]string {
	return map[string]string{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
}

// build returns the paths and the schemas of resources.
func build(resources []*registry.Entry, s *schemas) map[string]interface{} {
	paths := map[string]interface{}{}
	kinds := map[string][]map[string]string{}
	for _, res := range resources {
		objName := s.add(res.Schema, res.Kind)
		kinds[objName] = append(kinds[objName], gvkExtension(res.GroupVersionKind))
		listName := ""
		if res.ListSchema != nil {
			listName = s.add(res.ListSchema, res.Kind+"List")
			kinds[listName] = append(kinds[listName], gvkExtension(res.ListGVK()))
		}
		for _, sub := range res.Subresources {
			if d, ok := sub.(rest.Describer); ok {
				desc := d.Describe()
				name := s.add(desc.Schema, desc.Kind)
				kinds[name] = appendOnce(kinds[name], gvkExtension(desc.GroupVersionKind))
			}
		}
		addPaths(paths, res, s, objName, listName)
	}
	s.addGoType(&metav1.Status{})
	s.addGoType(&metav1.DeleteOptions{})
	s.addGoType(&metav1.WatchEvent{})
	for name, gvks := range kinds {
		s.defs[name]["x-kubernetes-group-version-kind"] = gvks
	}
	return paths
}

func appendOnce(list []map[string]string, gvk map[string]string) []map[string]string {
	for _, g := range list {
		if g["group"] == gvk["group"] && g["version"] == gvk["version"] && g["kind"] == gvk["kind"] {
			return list
		}
	}
	return append(list, gvk)
}

func param(name, in, typ, description string) map[string]interface{} {
	p := map[string]interface{}{"name": name, "in": in, "description": description, "type": typ, "uniqueItems": true}
	if in == "path" {
		p["required"] = true
	}
	return p
}

// params writes parameters as the document's version wants them: v2 puts
// type and uniqueItems on the parameter, v3 in its schema.
func (s *schemas) params(ps []map[string]interface{}) []interface{} {
	out := make([]interface{}, 0, len(ps))
	for _, p := range ps {
		cp := map[string]interface{}{}
		for k, v := range p {
			if s.v3 && (k == "type" || k == "uniqueItems") {
				continue
			}
			cp[k] = v
		}
		if s.v3 {
			cp["schema"] = Schema{"type": p["type"], "uniqueItems": true}
		}
		out = append(out, cp)
	}
	return out
}

var (
	listParams = []map[string]interface{}{
		param("allowWatchBookmarks", "query", "boolean", "requests watch events with type BOOKMARK"),
		param("continue", "query", "string", "the continue token of the previous page"),
		param("fieldSelector", "query", "string", "a selector on the objects' fields"),
		param("labelSelector", "query", "string", "a selector on the objects' labels"),
		param("limit", "query", "integer", "the maximum number of items to return"),
		param("resourceVersion", "query", "string", "what state the list may come from"),
		param("resourceVersionMatch", "query", "string", "how resourceVersion applies: Exact or NotOlderThan"),
		param("sendInitialEvents", "query", "boolean", "starts a watch with the current state"),
		param("timeoutSeconds", "query", "integer", "how long the call may last"),
		param("watch", "query", "boolean", "watch for changes instead of listing"),
	}
	writeParams = []map[string]interface{}{
		param("dryRun", "query", "string", "All: run every stage but persistence"),
		param("fieldManager", "query", "string", "the name of the writer, for field ownership"),
		param("fieldValidation", "query", "string", "Ignore, Warn or Strict: what unknown and duplicate fields do"),
	}
	prettyParam = param("pretty", "query", "string", "pretty-print the output")
	forceParam  = param("force", "query", "boolean", "on an apply, take fields other managers own")
)

func addPaths(paths map[string]interface{}, res *registry.Entry, s *schemas, objName, listName string) {
	media := mediaOf(res)
	gvk := gvkExtension(res.GroupVersionKind)
	base := "/" + gvPath(res.GroupVersion())
	collection := base + "/" + res.Plural
	verbs := registry.Verbs(res.Storage)
	pathParams := []map[string]interface{}{}
	if res.Namespaced {
		if slices.Contains(verbs, "list") {
			paths[collection] = map[string]interface{}{
				"get": op(res.Kind, s, "list", gvk, listName, listParams, media),
			}
		}
		collection = base + "/namespaces/{namespace}/" + res.Plural
		pathParams = append(pathParams, param("namespace", "path", "string", "object name and auth scope"))
	}
	coll := map[string]interface{}{}
	for _, verb := range verbs {
		switch verb {
		case "list":
			coll["get"] = op(res.Kind, s, "list", gvk, listName, listParams, media)
		case "create":
			coll["post"] = op(res.Kind, s, "post", gvk, objName, writeParams, media)
		case "deletecollection":
			coll["delete"] = op(res.Kind, s, "deletecollection", gvk, "io.k8s.apimachinery.pkg.apis.meta.v1.Status", append(listParams, writeParams[0]), media)
		}
	}
	addPath(paths, collection, coll, s.params(append(append([]map[string]interface{}{}, pathParams...), prettyParam)))
	itemParams := s.params(append(append([]map[string]interface{}{param("name", "path", "string", "name of the object")}, pathParams...), prettyParam))
	item := map[string]interface{}{}
	for _, verb := range verbs {
		switch verb {
		case "get":
			item["get"] = op(res.Kind, s, "get", gvk, objName, nil, media)
		case "update":
			item["put"] = op(res.Kind, s, "put", gvk, objName, writeParams, media)
		case "patch":
			item["patch"] = op(res.Kind, s, "patch", gvk, objName, append(append([]map[string]interface{}{}, writeParams...), forceParam), media)
		case "delete":
			item["delete"] = op(res.Kind, s, "delete", gvk, "io.k8s.apimachinery.pkg.apis.meta.v1.Status", writeParams[:1], media)
		}
	}
	addPath(paths, collection+"/{name}", item, itemParams)
	for sub, storage := range res.Subresources {
		kind, subGVK, subName := res.Kind, gvk, objName
		if d, ok := storage.(rest.Describer); ok {
			desc := d.Describe()
			kind, subGVK, subName = desc.Kind, gvkExtension(desc.GroupVersionKind), desc.Schema.RootName()
		}
		ops := map[string]interface{}{}
		if _, ok := storage.(rest.Connecter); ok {
			ops["get"] = connectOp("Get", kind, s, subGVK)
			ops["post"] = connectOp("Post", kind, s, subGVK)
			addPath(paths, collection+"/{name}/"+sub, ops, itemParams)
			continue
		}
		for _, verb := range registry.Verbs(storage) {
			switch _, streams := storage.(rest.Streamer); {
			case verb == "get" && streams:
				ops["get"] = streamOp(kind, s, subGVK, media)
			case verb == "get":
				ops["get"] = op(kind, s, "get", subGVK, subName, nil, media)
			case verb == "update":
				ops["put"] = op(kind, s, "put", subGVK, subName, writeParams, media)
			case verb == "patch":
				ops["patch"] = op(kind, s, "patch", subGVK, subName, append(append([]map[string]interface{}{}, writeParams...), forceParam), media)
			case verb == "create":
				ops["post"] = op(kind, s, "post", subGVK, subName, writeParams, media)
			}
		}
		addPath(paths, collection+"/{name}/"+sub, ops, itemParams)
	}
}

// addPath adds a path with its operations, if it has any.
func addPath(paths map[string]interface{}, path string, ops map[string]interface{}, params []interface{}) {
	if len(ops) == 0 {
		return
	}
	ops["parameters"] = params
	paths[path] = ops
}

// mediaTypes are the content types of a resource's operations.
type mediaTypes struct {
	// answers are those of responses and of the bodies of creates and
	// updates.
	answers []string
	// takes, when set, is what v2 says every operation but a patch
	// consumes.
	takes []string
	// patches are the patch types taken: kubectl's client-side apply
	// sends a strategic merge patch where they include it.
	patches []string
}

// mediaOf returns the content types of res's operations as kube lists
// them: a custom resource (and its subresources with it) is served
// without protobuf, and v2 says what its operations consume.
func mediaOf(res *registry.Entry) mediaTypes {
	m := mediaTypes{answers: []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}, patches: res.PatchTypes()}
	if _, custom := res.New().(*unstructured.Unstructured); custom {
		m.answers = m.answers[:2]
		m.takes = m.answers
	}
	return m
}

// op is one operation; v2 and v3 differ in how bodies and responses name
// their schemas.
func op(kind string, s *schemas, action string, gvk map[string]string, schemaName string, params []map[string]interface{}, mt mediaTypes) map[string]interface{} {
	ref := Schema{"$ref": s.refPrefix + schemaName}
	o := map[string]interface{}{
		"operationId":                     action + kind,
		"x-kubernetes-action":             action,
		"x-kubernetes-group-version-kind": gvk,
		"parameters":                      s.params(params),
	}
	media := mt.answers
	if s.v3 {
		content := map[string]interface{}{}
		for _, m := range media {
			content[m] = map[string]interface{}{"schema": ref}
		}
		o["responses"] = map[string]interface{}{"200": map[string]interface{}{"description": "OK", "content": content}}
		if action == "post" || action == "put" || action == "patch" {
			bodyTypes := media
			if action == "patch" {
				bodyTypes = mt.patches
			}
			body := map[string]interface{}{}
			for _, m := range bodyTypes {
				body[m] = map[string]interface{}{"schema": ref}
			}
			o["requestBody"] = map[string]interface{}{"content": body, "required": true}
		}
	} else {
		o["responses"] = map[string]interface{}{"200": map[string]interface{}{"description": "OK", "schema": ref}}
		o["produces"] = media
		if action == "post" || action == "put" || action == "patch" {
			o["parameters"] = append(s.params(params), map[string]interface{}{"name": "body", "in": "body", "required": true, "schema": ref})
		}
		switch {
		case action == "patch":
			o["consumes"] = mt.patches
		case mt.takes != nil:
			o["consumes"] = mt.takes
		}
	}
	return o
}

// streamOp is the GET of a subresource that answers a stream of text
// (pods/log): a string, in plain text or the resource's media types.
func streamOp(kind string, s *schemas, gvk map[string]string, mt mediaTypes) map[string]interface{} {
	media := append([]string{"text/plain"}, mt.answers...)
	str := Schema{"type": "string"}
	o := map[string]interface{}{
		"operationId":                     "get" + kind,
		"x-kubernetes-action":             "get",
		"x-kubernetes-group-version-kind": gvk,
		"parameters":                      s.params(nil),
	}
	if s.v3 {
		content := map[string]interface{}{}
		for _, m := range media {
			content[m] = map[string]interface{}{"schema": str}
		}
		o["responses"] = map[string]interface{}{"200": map[string]interface{}{"description": "OK", "content": content}}
		return o
	}
	o["responses"] = map[string]interface{}{"200": map[string]interface{}{"description": "OK", "schema": str}}
	o["produces"] = media
	return o
}

// connectOp is an operation of a subresource answered elsewhere (pods/exec),
// as kube documents it: action connect, any media type, a string back.
func connectOp(method, kind string, s *schemas, gvk map[string]string) map[string]interface{} {
	str := Schema{"type": "string"}
	o := map[string]interface{}{
		"operationId":                     "connect" + method + kind,
		"x-kubernetes-action":             "connect",
		"x-kubernetes-group-version-kind": gvk,
		"parameters":                      s.params(nil),
	}
	if s.v3 {
		o["responses"] = map[string]interface{}{"200": map[string]interface{}{"description": "OK", "content": map[string]interface{}{"*/*": map[string]interface{}{"schema": str}}}}
		return o
	}
	o["responses"] = map[string]interface{}{"200": map[string]interface{}{"description": "OK", "schema": str}}
	o["consumes"], o["produces"] = []string{"*/*"}, []string{"*/*"}
	return o
}

func info() map[string]interface{} {
	return map[string]interface{}{"title": "Kubernetes", "version": version.Info.GitVersion}
}

// v2 returns the OpenAPI v2 document of everything served.
func (h *Handler) v2() ([]byte, error) {
	s := newSchemas("#/definitions/", false)
	paths := build(h.resources(nil), s)
	return json.Marshal(map[string]interface{}{
		"swagger":     "2.0",
		"info":        info(),
		"paths":       paths,
		"definitions": s.defs,
	})
}

// v3 returns the OpenAPI v3 document of one group version.
func (h *Handler) v3(gv schema.GroupVersion) ([]byte, bool, error) {
	resources := h.resources(&gv)
	if len(resources) == 0 {
		return nil, false, nil
	}
	s := newSchemas("#/components/schemas/", true)
	paths := build(resources, s)
	data, err := json.Marshal(map[string]interface{}{
		"openapi":    "3.0.0",
		"info":       info(),
		"paths":      paths,
		"components": map[string]interface{}{"schemas": s.defs},
	})
	return data, true, err
}

// ServeV2 answers /openapi/v2, as JSON or, as kubectl asks for it,
// protobuf.
func (h *Handler) ServeV2(w http.ResponseWriter, r *http.Request) {
	protobuf, ok := pick(w, r, v2Offers)
	if !ok {
		return
	}
	data, err := h.v2()
	if err != nil {
		responsewriters.WriteError(w, r, err)
		return
	}
	writeDocument(w, r, data, protobuf, v2ProtobufType, func(b []byte) (proto.Message, error) { return openapi_v2.ParseDocument(b) })
}

// writeDocument writes a JSON document as it is, or in its protobuf form
// of contentType, parsed by parse.
func writeDocument(w http.ResponseWriter, r *http.Request, data []byte, protobuf bool, contentType string, parse func([]byte) (proto.Message, error)) {
	if !protobuf {
		responsewriters.WriteBytes(w, r, http.StatusOK, "application/json", data)
		return
	}
	doc, err := parse(data)
	if err != nil {
		responsewriters.WriteError(w, r, err)
		return
	}
	pb, err := proto.Marshal(doc)
	if err != nil {
		responsewriters.WriteError(w, r, err)
		return
	}
	responsewriters.WriteBytes(w, r, http.StatusOK, contentType, pb)
}

// ServeV3Index answers /openapi/v3: the path of each group version's
// document, with a hash that changes when the document does.
func (h *Handler) ServeV3Index(w http.ResponseWriter, r *http.Request) {
	seen := map[schema.GroupVersion]bool{}
	var gvs []schema.GroupVersion
	for _, res := range h.resources(nil) {
		if gv := res.GroupVersion(); !seen[gv] {
			seen[gv] = true
			gvs = append(gvs, gv)
		}
	}
	sort.Slice(gvs, func(i, j int) bool { return gvPath(gvs[i]) < gvPath(gvs[j]) })
	paths := map[string]interface{}{}
	for _, gv := range gvs {
		data, _, err := h.v3(gv)
		if err != nil {
			responsewriters.WriteError(w, r, err)
			return
		}
		sum := sha512.Sum512(data)
		paths[gvPath(gv)] = map[string]string{"serverRelativeURL": "/openapi/v3/" + gvPath(gv) + "?hash=" + strings.ToUpper(hex.EncodeToString(sum[:]))}
	}
	responsewriters.WriteJSON(w, r, http.StatusOK, map[string]interface{}{"paths": paths})
}

// ServeV3 answers /openapi/v3/<api or apis/group>/<version>.
func (h *Handler) ServeV3(w http.ResponseWriter, r *http.Request, path string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var gv schema.GroupVersion
	switch {
	case len(parts) == 2 && parts[0] == "api":
		gv = schema.GroupVersion{Version: parts[1]}
	case len(parts) == 3 && parts[0] == "apis":
		gv = schema.GroupVersion{Group: parts[1], Version: parts[2]}
	default:
		responsewriters.WriteError(w, r, responsewriters.ErrNotFound())
		return
	}
	data, ok, err := h.v3(gv)
	switch {
	case err != nil:
		responsewriters.WriteError(w, r, err)
		return
	case !ok:
		responsewriters.WriteError(w, r, responsewriters.ErrNotFound())
		return
	}
	protobuf, ok := pick(w, r, v3Offers)
	if !ok {
		return
	}
	if r.URL.Query().Get("hash") != "" {
		w.Header().Set("Cache-Control", "public, immutable")
	}
	writeDocument(w, r, data, protobuf, v3ProtobufType, func(b []byte) (proto.Message, error) { return openapi_v3.ParseDocument(b) })
}
