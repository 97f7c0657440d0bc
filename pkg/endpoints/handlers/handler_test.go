package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cronplane/cronplane/pkg/endpoints/request"
	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// The dispatch tests drive Handler.ServeHTTP over a registry of fake
// storages, each implementing only some verb interfaces:
//
//	configmaps (namespaced)       fakeStore: every verb, over a map
//	configmaps/status             fakeGetter: get only
//	secrets (namespaced)          fakeGetter: get only
//	tokenreviews (cluster-scoped) fakeCreateOnly: create only, as kube's is
//
// Expected codes and bodies are kube-apiserver v1.29's for the same paths.

// fakeCall is one storage call: which storage, the verb, where, and the
// options that matter to the request, summarized as text.
type fakeCall struct {
	storage, verb, namespace, name, opts string
}

type fakeRecorder struct{ calls []fakeCall }

func (r *fakeRecorder) add(c fakeCall) { r.calls = append(r.calls, c) }

func fakeListOpts(o *rest.ListOptions) string {
	return fmt.Sprintf("labels=%s fields=%s rv=%s", o.Label, o.Field, o.ResourceVersion)
}

func fakeWriteOpts(dryRun []string, manager string) string {
	return fmt.Sprintf("dryRun=%v manager=%s", dryRun, manager)
}

// fakeStore serves configmaps from a map keyed by namespace/name.
type fakeStore struct {
	rec  *fakeRecorder
	objs map[string]*corev1.ConfigMap
}

func (s *fakeStore) New() runtime.Object     { return &corev1.ConfigMap{} }
func (s *fakeStore) NewList() runtime.Object { return &corev1.ConfigMapList{} }

func (s *fakeStore) Get(_ context.Context, namespace, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	s.rec.add(fakeCall{"configmaps", "get", namespace, name, "rv=" + opts.ResourceVersion})
	cm, ok := s.objs[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
	}
	return cm.DeepCopy(), nil
}

func (s *fakeStore) List(_ context.Context, namespace string, opts *rest.ListOptions) (runtime.Object, error) {
	s.rec.add(fakeCall{"configmaps", "list", namespace, "", fakeListOpts(opts)})
	l := &rest.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}}
	for _, cm := range s.objs {
		if namespace == "" || cm.Namespace == namespace {
			l.Items = append(l.Items, cm.DeepCopy())
		}
	}
	return l, nil
}

// Watch ends at once: the dispatch tests look at the call, not events.
func (s *fakeStore) Watch(_ context.Context, namespace string, opts *rest.ListOptions) (watch.Interface, error) {
	s.rec.add(fakeCall{"configmaps", "watch", namespace, "", fakeListOpts(opts)})
	return watch.NewEmptyWatch(), nil
}

func (s *fakeStore) Create(_ context.Context, namespace string, obj runtime.Object, _ rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	cm := obj.(*corev1.ConfigMap)
	s.rec.add(fakeCall{"configmaps", "create", namespace, cm.Name, fakeWriteOpts(opts.DryRun, opts.FieldManager)})
	cm.Namespace = namespace
	s.objs[namespace+"/"+cm.Name] = cm
	return cm, nil
}

func (s *fakeStore) Update(ctx context.Context, namespace, name string, info rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc, _ rest.ValidateObjectUpdateFunc, _ bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	s.rec.add(fakeCall{"configmaps", "update", namespace, name, fakeWriteOpts(opts.DryRun, opts.FieldManager)})
	key := namespace + "/" + name
	var current runtime.Object
	stored, exists := s.objs[key]
	if exists {
		current = stored.DeepCopy()
	}
	obj, err := info.UpdatedObject(ctx, current)
	if err != nil {
		return nil, false, err
	}
	s.objs[key] = obj.(*corev1.ConfigMap)
	return obj, !exists, nil
}

func (s *fakeStore) Delete(_ context.Context, namespace, name string, _ rest.ValidateObjectFunc, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	grace := "default"
	if opts.GracePeriodSeconds != nil {
		grace = fmt.Sprint(*opts.GracePeriodSeconds)
	}
	s.rec.add(fakeCall{"configmaps", "delete", namespace, name, "grace=" + grace})
	key := namespace + "/" + name
	cm, ok := s.objs[key]
	if !ok {
		return nil, false, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
	}
	delete(s.objs, key)
	return cm, true, nil
}

func (s *fakeStore) DeleteCollection(_ context.Context, namespace string, _ rest.ValidateObjectFunc, _ *metav1.DeleteOptions, listOpts *rest.ListOptions) (runtime.Object, error) {
	s.rec.add(fakeCall{"configmaps", "deletecollection", namespace, "", fakeListOpts(listOpts)})
	return &corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}}, nil
}

// fakeGetter serves get only, answering an empty object of its type.
type fakeGetter struct {
	storage string
	rec     *fakeRecorder
	newObj  func() runtime.Object
}

func (s fakeGetter) New() runtime.Object { return s.newObj() }

func (s fakeGetter) Get(_ context.Context, namespace, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	s.rec.add(fakeCall{s.storage, "get", namespace, name, "rv=" + opts.ResourceVersion})
	obj := s.newObj()
	m := obj.(metav1.Object)
	m.SetNamespace(namespace)
	m.SetName(name)
	return obj, nil
}

// fakeCreateOnly serves create only, as a review resource does.
type fakeCreateOnly struct{ rec *fakeRecorder }

func (fakeCreateOnly) New() runtime.Object { return &authenticationv1.TokenReview{} }

func (s fakeCreateOnly) Create(_ context.Context, namespace string, obj runtime.Object, _ rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	s.rec.add(fakeCall{"tokenreviews", "create", namespace, obj.(metav1.Object).GetName(), fakeWriteOpts(opts.DryRun, opts.FieldManager)})
	return obj, nil
}

// fakeTokenCreater takes TokenRequests through a named object, as
// serviceaccounts/token does: a kind of its own, created by name.
type fakeTokenCreater struct{ rec *fakeRecorder }

func (fakeTokenCreater) New() runtime.Object { return &authenticationv1.TokenRequest{} }

func (fakeTokenCreater) Describe() *rest.Resource {
	return &rest.Resource{
		GroupVersionKind: authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"),
		Plural:           "tokens", Namespaced: true,
		New: func() runtime.Object { return &authenticationv1.TokenRequest{} },
	}
}

func (s fakeTokenCreater) Create(_ context.Context, namespace, name string, obj runtime.Object, _ rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	tr := obj.(*authenticationv1.TokenRequest)
	s.rec.add(fakeCall{"secrets/token", "create", namespace, name, fmt.Sprintf("audiences=%v", tr.Spec.Audiences)})
	tr.Status.Token = "t0k3n"
	return tr, nil
}

// fakeBare implements no verb interface at all.
type fakeBare struct{}

func (fakeBare) New() runtime.Object { return &corev1.ConfigMap{} }

func fakeNewConfigMap() runtime.Object { return &corev1.ConfigMap{} }
func fakeNewSecret() runtime.Object    { return &corev1.Secret{} }

// dispatchHandler returns a Handler over the registry described at the top
// of this file, with configmap ns1/cm1 stored, and what its storages see.
func dispatchHandler() (*Handler, *fakeRecorder) {
	rec := &fakeRecorder{}
	reg := registry.New()
	reg.Add(&registry.Entry{
		Resource: &rest.Resource{
			GroupVersionKind: corev1.SchemeGroupVersion.WithKind("ConfigMap"),
			Plural:           "configmaps", Singular: "configmap", Namespaced: true,
			New: fakeNewConfigMap, NewList: func() runtime.Object { return &corev1.ConfigMapList{} },
		},
		Storage: &fakeStore{rec: rec, objs: map[string]*corev1.ConfigMap{"ns1/cm1": {
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "cm1"},
			Data:       map[string]string{"k": "v1"},
		}}},
		Subresources: map[string]rest.Storage{"status": fakeGetter{"configmaps/status", rec, fakeNewConfigMap}},
	})
	reg.Add(&registry.Entry{
		Resource: &rest.Resource{
			GroupVersionKind: corev1.SchemeGroupVersion.WithKind("Secret"),
			Plural:           "secrets", Singular: "secret", Namespaced: true,
			New: fakeNewSecret, NewList: func() runtime.Object { return &corev1.SecretList{} },
		},
		Storage:      fakeGetter{"secrets", rec, fakeNewSecret},
		Subresources: map[string]rest.Storage{"token": fakeTokenCreater{rec}},
	})
	reg.Add(&registry.Entry{
		Resource: &rest.Resource{
			GroupVersionKind: authenticationv1.SchemeGroupVersion.WithKind("TokenReview"),
			Plural:           "tokenreviews", Singular: "tokenreview",
			New: func() runtime.Object { return &authenticationv1.TokenReview{} },
		},
		Storage: fakeCreateOnly{rec},
	})
	return &Handler{Registry: reg}, rec
}

// dispatchRequest serves one request through the RequestInfo filter, as
// the server's chain does; header holds "Name: value" pairs.
func dispatchRequest(h http.Handler, method, target, body string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	for _, kv := range header {
		k, v, _ := strings.Cut(kv, ": ")
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	request.WithRequestInfoFilter(h).ServeHTTP(w, r)
	return w
}

func dispatchStatus(t *testing.T, w *httptest.ResponseRecorder) metav1.Status {
	t.Helper()
	var s metav1.Status
	if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil || s.Kind != "Status" {
		t.Fatalf("body is not a Status (%v): %s", err, w.Body)
	}
	return s
}

const (
	dispatchJSONType    = "Content-Type: application/json"
	dispatchCMBody      = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1"},"data":{"k":"v2"}}`
	dispatchReviewBody  = `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","metadata":{"name":"r"},"spec":{"token":"t"}}`
	dispatchStatus405   = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server does not allow this method on the requested resource","reason":"MethodNotAllowed","details":{},"code":405}` + "\n"
	dispatchNotFoundMsg = "the server could not find the requested resource"
)

func TestServeHTTP_VerbTheStorageDoesNotImplementIs405(t *testing.T) {
	// Only paths where the storage serves some other method: kube answers
	// 405 there because a route exists for the path.
	cases := []struct{ name, method, target string }{
		{"update of a getter-only resource", "PUT", "/api/v1/namespaces/ns1/secrets/s1"},
		{"patch of a getter-only resource", "PATCH", "/api/v1/namespaces/ns1/secrets/s1"},
		{"delete of a getter-only resource", "DELETE", "/api/v1/namespaces/ns1/secrets/s1"},
		{"list of a create-only resource", "GET", "/apis/authentication.k8s.io/v1/tokenreviews"},
		{"watch of a create-only resource", "GET", "/apis/authentication.k8s.io/v1/tokenreviews?watch=1"},
		{"deletecollection of a create-only resource", "DELETE", "/apis/authentication.k8s.io/v1/tokenreviews"},
		{"update of a getter-only subresource", "PUT", "/api/v1/namespaces/ns1/configmaps/cm1/status"},
		{"patch of a getter-only subresource", "PATCH", "/api/v1/namespaces/ns1/configmaps/cm1/status"},
		{"delete of a getter-only subresource", "DELETE", "/api/v1/namespaces/ns1/configmaps/cm1/status"},
		{"create through a getter-only subresource", "POST", "/api/v1/namespaces/ns1/configmaps/cm1/status"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, rec := dispatchHandler()
			// The refusal comes before the body is read.
			w := dispatchRequest(h, tc.method, tc.target, dispatchCMBody, dispatchJSONType)
			if w.Code != http.StatusMethodNotAllowed || w.Body.String() != dispatchStatus405 {
				t.Fatalf("got %d %s\nwant 405 %s", w.Code, w.Body, dispatchStatus405)
			}
			if len(rec.calls) != 0 {
				t.Fatalf("storage was called: %+v", rec.calls)
			}
		})
	}
}

func TestServeHTTP_ImplementedVerbReachesTheStorage(t *testing.T) {
	cases := []struct {
		name, method, target, body, contentType string
		code                                    int
		want                                    fakeCall
	}{
		{"get", "GET", "/api/v1/namespaces/ns1/configmaps/cm1?resourceVersion=5", "", "", 200,
			fakeCall{"configmaps", "get", "ns1", "cm1", "rv=5"}},
		{"list", "GET", "/api/v1/namespaces/ns1/configmaps?labelSelector=app%3Dweb&resourceVersion=0", "", "", 200,
			fakeCall{"configmaps", "list", "ns1", "", "labels=app=web fields= rv=0"}},
		{"list of all namespaces", "GET", "/api/v1/configmaps", "", "", 200,
			fakeCall{"configmaps", "list", "", "", "labels= fields= rv="}},
		{"watch", "GET", "/api/v1/namespaces/ns1/configmaps?watch=true&resourceVersion=7", "", "", 200,
			fakeCall{"configmaps", "watch", "ns1", "", "labels= fields= rv=7"}},
		{"watch of all namespaces", "GET", "/api/v1/configmaps?watch=1", "", "", 200,
			fakeCall{"configmaps", "watch", "", "", "labels= fields= rv="}},
		// The deprecated /watch/ path watches one object by selecting its name.
		{"watch of one object", "GET", "/api/v1/watch/namespaces/ns1/configmaps/cm1", "", "", 200,
			fakeCall{"configmaps", "watch", "ns1", "", "labels= fields=metadata.name=cm1 rv="}},
		{"create", "POST", "/api/v1/namespaces/ns1/configmaps?dryRun=All&fieldManager=me", dispatchCMBody, "application/json", 201,
			fakeCall{"configmaps", "create", "ns1", "cm1", "dryRun=[All] manager=me"}},
		{"update", "PUT", "/api/v1/namespaces/ns1/configmaps/cm1?fieldManager=me", dispatchCMBody, "application/json", 200,
			fakeCall{"configmaps", "update", "ns1", "cm1", "dryRun=[] manager=me"}},
		// A PUT that the storage reports as a create answers 201.
		{"update that creates", "PUT", "/api/v1/namespaces/ns2/configmaps/cm1?fieldManager=me", dispatchCMBody, "application/json", 201,
			fakeCall{"configmaps", "update", "ns2", "cm1", "dryRun=[] manager=me"}},
		// A patch reads and writes through the storage's update.
		{"patch", "PATCH", "/api/v1/namespaces/ns1/configmaps/cm1?fieldManager=me", `{"data":{"k":"v3"}}`, "application/merge-patch+json", 200,
			fakeCall{"configmaps", "update", "ns1", "cm1", "dryRun=[] manager=me"}},
		{"delete", "DELETE", "/api/v1/namespaces/ns1/configmaps/cm1?gracePeriodSeconds=0", "", "", 200,
			fakeCall{"configmaps", "delete", "ns1", "cm1", "grace=0"}},
		{"deletecollection", "DELETE", "/api/v1/namespaces/ns1/configmaps?labelSelector=app%3Dweb", "", "", 200,
			fakeCall{"configmaps", "deletecollection", "ns1", "", "labels=app=web fields= rv="}},
		{"get of a subresource reaches its own storage", "GET", "/api/v1/namespaces/ns1/configmaps/cm1/status", "", "", 200,
			fakeCall{"configmaps/status", "get", "ns1", "cm1", "rv="}},
		{"get of a getter-only resource", "GET", "/api/v1/namespaces/ns1/secrets/s1", "", "", 200,
			fakeCall{"secrets", "get", "ns1", "s1", "rv="}},
		{"create of a create-only cluster-scoped resource", "POST", "/apis/authentication.k8s.io/v1/tokenreviews", dispatchReviewBody, "application/json", 201,
			fakeCall{"tokenreviews", "create", "", "r", "dryRun=[] manager=unknown"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, rec := dispatchHandler()
			w := dispatchRequest(h, tc.method, tc.target, tc.body, "Content-Type: "+tc.contentType)
			if w.Code != tc.code {
				t.Fatalf("got %d, want %d: %s", w.Code, tc.code, w.Body)
			}
			if want := []fakeCall{tc.want}; !reflect.DeepEqual(rec.calls, want) {
				t.Fatalf("storage calls\n got %+v\nwant %+v", rec.calls, want)
			}
		})
	}
}

func TestServeHTTP_NamedCreateTakesTheSubresourcesOwnKind(t *testing.T) {
	h, rec := dispatchHandler()
	body := `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"audiences":["api"]}}`
	w := dispatchRequest(h, "POST", "/api/v1/namespaces/ns1/secrets/s1/token", body, dispatchJSONType)
	var tr authenticationv1.TokenRequest
	if err := json.Unmarshal(w.Body.Bytes(), &tr); err != nil || w.Code != 201 || tr.Kind != "TokenRequest" || tr.Status.Token != "t0k3n" {
		t.Fatalf("got %d %s (%v)", w.Code, w.Body, err)
	}
	if want := []fakeCall{{"secrets/token", "create", "ns1", "s1", "audiences=[api]"}}; !reflect.DeepEqual(rec.calls, want) {
		t.Fatalf("storage calls\n got %+v\nwant %+v", rec.calls, want)
	}
	// A body of the resource's kind is not the subresource's.
	w = dispatchRequest(h, "POST", "/api/v1/namespaces/ns1/secrets/s1/token", `{"apiVersion":"v1","kind":"Secret"}`, dispatchJSONType)
	if w.Code != 400 {
		t.Fatalf("a Secret posted to secrets/token: %d %s", w.Code, w.Body)
	}
	if w := dispatchRequest(h, "GET", "/api/v1/namespaces/ns1/secrets/s1/token", ""); w.Code != 405 {
		t.Fatalf("GET of a create-only subresource: %d", w.Code)
	}
}

func TestServeHTTP_PatchAnswersThePatchedObject(t *testing.T) {
	h, _ := dispatchHandler()
	w := dispatchRequest(h, "PATCH", "/api/v1/namespaces/ns1/configmaps/cm1", `{"data":{"k":"v3"}}`, "Content-Type: application/merge-patch+json")
	var cm corev1.ConfigMap
	if err := json.Unmarshal(w.Body.Bytes(), &cm); err != nil || w.Code != 200 {
		t.Fatalf("got %d %s (%v)", w.Code, w.Body, err)
	}
	if cm.Name != "cm1" || cm.Data["k"] != "v3" {
		t.Fatalf("patched object %+v, want cm1 with k=v3", cm)
	}
}

func TestServeHTTP_PathThatNamesNothingServedIs404(t *testing.T) {
	cases := []struct{ name, method, target string }{
		{"unknown resource", "GET", "/api/v1/namespaces/ns1/widgets"},
		{"unknown version", "GET", "/api/v2/namespaces/ns1/configmaps"},
		{"unregistered subresource", "GET", "/api/v1/namespaces/ns1/configmaps/cm1/scale"},
		{"subresource of a resource that has none", "GET", "/api/v1/namespaces/ns1/secrets/s1/status"},
		{"path below a subresource", "GET", "/api/v1/namespaces/ns1/configmaps/cm1/status/extra"},
		{"empty subresource segment", "GET", "/api/v1/namespaces/ns1/configmaps/cm1//status"},
		{"namespaced object without its namespace", "GET", "/api/v1/configmaps/cm1"},
		{"namespaced object without its namespace, deleted", "DELETE", "/api/v1/configmaps/cm1"},
		{"group version, not a resource", "GET", "/api/v1"},
		// kube's router has no route where the storage serves nothing.
		{"cluster-scoped resource inside a namespace", "POST", "/apis/authentication.k8s.io/v1/namespaces/ns1/tokenreviews"},
		{"object of a create-only resource", "GET", "/apis/authentication.k8s.io/v1/tokenreviews/r"},
		{"collection of a getter-only resource", "GET", "/api/v1/namespaces/ns1/secrets"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, rec := dispatchHandler()
			w := dispatchRequest(h, tc.method, tc.target, "")
			s := dispatchStatus(t, w)
			if w.Code != 404 || s.Code != 404 || s.Reason != metav1.StatusReasonNotFound || s.Message != dispatchNotFoundMsg {
				t.Fatalf("got %d %s, want 404 NotFound", w.Code, w.Body)
			}
			if len(rec.calls) != 0 {
				t.Fatalf("storage was called: %+v", rec.calls)
			}
		})
	}
}

// Outside the built-in groups kube's router has no routes at all: its
// fallback handler answers a plain-text 404.
func TestServeHTTP_PathInAGroupWithoutBuiltinsIsPlain404(t *testing.T) {
	h, rec := dispatchHandler()
	w := dispatchRequest(h, "GET", "/apis/example.com/v1/widgets", "")
	if w.Code != 404 || w.Header().Get("Content-Type") != "text/plain; charset=utf-8" || w.Body.String() != "404 page not found\n" || len(rec.calls) != 0 {
		t.Fatalf("got %d %q %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
}

func TestServeHTTP_RequestWithoutRequestInfoIs404(t *testing.T) {
	h, _ := dispatchHandler()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/namespaces/ns1/configmaps/cm1", nil))
	if w.Code != 404 {
		t.Fatalf("got %d %s, want 404", w.Code, w.Body)
	}
}

func TestServeHTTP_MethodThatDoesNotFitThePathIs405(t *testing.T) {
	// The storage serves every verb: the path's shape alone refuses these.
	cases := []struct{ name, method, target string }{
		{"POST to a named object", "POST", "/api/v1/namespaces/ns1/configmaps/cm1"},
		{"HEAD of an object", "HEAD", "/api/v1/namespaces/ns1/configmaps/cm1"},
		{"HEAD of a collection", "HEAD", "/api/v1/namespaces/ns1/configmaps"},
		// A subresource's methods are its storage's to decide, but HEAD,
		// which reads as a get, is refused there too.
		{"HEAD of a subresource", "HEAD", "/api/v1/namespaces/ns1/configmaps/cm1/status"},
		{"PUT to a collection", "PUT", "/api/v1/namespaces/ns1/configmaps"},
		{"PATCH of a collection", "PATCH", "/api/v1/namespaces/ns1/configmaps"},
		{"OPTIONS", "OPTIONS", "/api/v1/namespaces/ns1/configmaps"},
		// A namespaced resource's cluster-wide collection only lists and watches.
		{"POST to all namespaces", "POST", "/api/v1/configmaps"},
		{"DELETE of all namespaces", "DELETE", "/api/v1/configmaps"},
		{"PUT to all namespaces", "PUT", "/api/v1/configmaps"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, rec := dispatchHandler()
			w := dispatchRequest(h, tc.method, tc.target, dispatchCMBody, dispatchJSONType)
			if w.Code != http.StatusMethodNotAllowed || w.Body.String() != dispatchStatus405 {
				t.Fatalf("got %d %s\nwant 405 %s", w.Code, w.Body, dispatchStatus405)
			}
			if len(rec.calls) != 0 {
				t.Fatalf("storage was called: %+v", rec.calls)
			}
		})
	}
}

func TestServeHTTP_InvalidNameIs400(t *testing.T) {
	cases := []struct{ name, method, target, msg string }{
		{"percent", "GET", "/api/v1/namespaces/ns1/configmaps/a%25b", `Name parameter invalid: \"a%b\": may not contain '%'`},
		{"dot-dot", "GET", "/api/v1/namespaces/ns1/configmaps/..", `Name parameter invalid: \"..\": may not be '..'`},
		// Without the check this DELETE would reach the storage for name ".".
		{"dot", "DELETE", "/api/v1/namespaces/ns1/configmaps/.", `Name parameter invalid: \".\": may not be '.'`},
		{"update", "PUT", "/api/v1/namespaces/ns1/configmaps/a%25b", `Name parameter invalid: \"a%b\": may not contain '%'`},
		{"subresource", "GET", "/api/v1/namespaces/ns1/configmaps/a%25b/status", `Name parameter invalid: \"a%b\": may not contain '%'`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, rec := dispatchHandler()
			w := dispatchRequest(h, tc.method, tc.target, dispatchCMBody, dispatchJSONType)
			want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"` + tc.msg + `","reason":"BadRequest","code":400}` + "\n"
			if w.Code != 400 || w.Body.String() != want {
				t.Fatalf("got %d %s\nwant 400 %s", w.Code, w.Body, want)
			}
			if len(rec.calls) != 0 {
				t.Fatalf("storage was called: %+v", rec.calls)
			}
		})
	}
}

func TestServeHTTP_AcceptThatCannotBeServedIs406(t *testing.T) {
	const (
		prefix  = "406: Not Acceptable\n\nAvailable representations: "
		objects = "application/json, application/yaml, application/vnd.kubernetes.protobuf"
		streams = ", application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
	)
	cases := []struct{ name, target, msg string }{
		{"object", "/api/v1/namespaces/ns1/configmaps/cm1", prefix + objects},
		// A collection also serves watches and names their streams.
		{"collection", "/api/v1/namespaces/ns1/configmaps", prefix + objects + streams},
		{"all namespaces", "/api/v1/configmaps", prefix + objects + streams},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, rec := dispatchHandler()
			w := dispatchRequest(h, "GET", tc.target, "", "Accept: text/plain")
			s := dispatchStatus(t, w)
			if w.Code != 406 || s.Code != 406 || s.Reason != metav1.StatusReasonNotAcceptable || s.Message != tc.msg {
				t.Fatalf("got %d %s\nwant 406 %q", w.Code, w.Body, tc.msg)
			}
			if len(rec.calls) != 0 {
				t.Fatalf("storage was called: %+v", rec.calls)
			}
		})
	}
}

func TestServeHTTP_AnswersInTheNegotiatedRepresentation(t *testing.T) {
	cases := []struct {
		accept, contentType, bodyPrefix string
	}{
		{"", "application/json", `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm1"`},
		{"application/yaml", "application/yaml", "apiVersion: v1\ndata:\n  k: v1\nkind: ConfigMap\n"},
		// kube's protobuf envelope starts with the magic "k8s\0".
		{"application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf", "k8s\x00"},
		{"application/json;as=Table;v=v1;g=meta.k8s.io", "application/json", `{"kind":"Table","apiVersion":"meta.k8s.io/v1"`},
		{"application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", "application/json", `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1"`},
	}
	for _, tc := range cases {
		t.Run(tc.accept, func(t *testing.T) {
			h, _ := dispatchHandler()
			w := dispatchRequest(h, "GET", "/api/v1/namespaces/ns1/configmaps/cm1", "", "Accept: "+tc.accept)
			if w.Code != 200 || w.Header().Get("Content-Type") != tc.contentType || !strings.HasPrefix(w.Body.String(), tc.bodyPrefix) {
				t.Fatalf("got %d %s %q\nwant 200 %s %q...", w.Code, w.Header().Get("Content-Type"), w.Body, tc.contentType, tc.bodyPrefix)
			}
		})
	}
}

func TestVerbs_ListsExactlyTheVerbsTheStorageImplements(t *testing.T) {
	cases := []struct {
		name    string
		storage rest.Storage
		want    []string
	}{
		// Patcher is Getter and Updater together: no Patch method needed.
		{"full store", &fakeStore{}, []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}},
		{"getter only", fakeGetter{}, []string{"get"}},
		{"create only", fakeCreateOnly{}, []string{"create"}},
		{"no verb interface", fakeBare{}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := registry.Verbs(tc.storage); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Verbs = %v, want %v", got, tc.want)
			}
		})
	}
}
