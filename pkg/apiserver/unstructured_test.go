package apiserver_test

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	cronrest "github.com/cronplane/cronplane/pkg/registry/rest"
	cronschema "github.com/cronplane/cronplane/pkg/schema"
)

var widgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}

// widgetResource is a resource with no Go type: a hand-written schema
// whose spec.parts is a list map keyed by name, unstructured objects
// stored as JSON, and a status subresource.
func widgetResource() *generic.Resource {
	str := &cronschema.Schema{Type: "string"}
	part := &cronschema.Schema{Type: "object", Required: []string{"name"}, Properties: map[string]*cronschema.Schema{
		"name": str,
		"size": {Type: "integer"},
	}}
	root := &cronschema.Schema{Type: "object", Properties: map[string]*cronschema.Schema{
		"spec": {Type: "object", Properties: map[string]*cronschema.Schema{
			"colour": str,
			"parts":  {Type: "array", Items: part, ListType: "map", ListMapKeys: []string{"name"}},
			"extra":  {Type: "object", PreserveUnknownFields: true},
		}},
		"status": {Type: "object", Properties: map[string]*cronschema.Schema{"phase": str}},
	}}
	return &generic.Resource{
		Resource: cronrest.Resource{
			GroupVersionKind: widgetGVK,
			Plural:           "widgets",
			Singular:         "widget",
			Namespaced:       true,
			New: func() runtime.Object {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(widgetGVK)
				return u
			},
			NewList: func() runtime.Object { return &unstructured.UnstructuredList{} },
			Schema:  &cronschema.Structural{Root: root},
		},
		// Where kube keeps a custom resource: under its group.
		StorageResource: "example.com/widgets",
		Codec:           codec.JSON(widgetGVK.GroupKind()),
		Strategy:        generic.SpecStatusStrategy{},
		Subresources:    map[string]generic.Strategy{"status": generic.StatusStrategy{}},
	}
}

// warnings collects the Warning headers a client receives.
type warnings struct{ texts []string }

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) { w.texts = append(w.texts, text) }

func TestUnstructuredResource_ServedFromHandWrittenSchema(t *testing.T) {
	s := apiservertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.InstallResource(widgetResource()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "w"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	seen := &warnings{}
	cfg := rest.CopyConfig(s.Config)
	cfg.WarningHandler = seen
	dyn := dynamic.NewForConfigOrDie(cfg)
	widgets := dyn.Resource(widgetGVK.GroupVersion().WithResource("widgets")).Namespace("w")

	w, err := widgets.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// Create: unknown fields are pruned and reported, the status cleared,
	// what the schema preserves kept.
	obj := object(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a","colour":"red"},
		"spec":{"colour":"blue","shape":"round","parts":[{"name":"x","size":1,"weight":2}],"extra":{"anything":{"goes":true}}},
		"status":{"phase":"Ready"}}`)
	created, err := widgets.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantWarnings := []string{`unknown field "metadata.colour"`, `unknown field "spec.parts[0].weight"`, `unknown field "spec.shape"`}
	if strings.Join(seen.texts, "|") != strings.Join(wantWarnings, "|") {
		t.Errorf("warnings = %q, want %q", seen.texts, wantWarnings)
	}
	wantSpec := map[string]interface{}{"colour": "blue", "parts": []interface{}{map[string]interface{}{"name": "x", "size": int64(1)}},
		"extra": map[string]interface{}{"anything": map[string]interface{}{"goes": true}}}
	if spec := created.Object["spec"]; !jsonEqual(spec, wantSpec) {
		t.Errorf("stored spec = %v, want %v", spec, wantSpec)
	}
	if _, ok := created.Object["status"]; ok || created.GetGeneration() != 1 {
		t.Errorf("create kept status %v or generation %d", created.Object["status"], created.GetGeneration())
	}
	_, err = widgets.Create(ctx, object(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"b"},"spec":{"bogus":1}}`),
		metav1.CreateOptions{FieldValidation: "Strict"})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `strict decoding error: unknown field "spec.bogus"`) {
		t.Errorf("strict create with an unknown field: %v", err)
	}

	// Server-side apply: two managers own different entries of the list
	// map, merged by the key the schema declares.
	apply := func(manager, body string) *unstructured.Unstructured {
		t.Helper()
		out, err := widgets.Patch(ctx, "a", types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: manager})
		if err != nil {
			t.Fatalf("apply as %s: %v", manager, err)
		}
		return out
	}
	apply("alice", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"parts":[{"name":"y","size":2}]}}`)
	out := apply("bob", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"parts":[{"name":"z","size":3}]}}`)
	if got := partNames(out); got != "x,y,z" {
		t.Errorf("after two applies parts = %s, want x,y,z", got)
	}
	out = apply("alice", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"parts":[]}}`)
	if got := partNames(out); got != "x,z" {
		t.Errorf("after alice gave up y parts = %s, want x,z", got)
	}
	if out.GetGeneration() != 4 {
		t.Errorf("generation after three spec changes = %d, want 4", out.GetGeneration())
	}
	_, err = widgets.Patch(ctx, "a", types.StrategicMergePatchType, []byte(`{"spec":{"colour":"green"}}`), metav1.PatchOptions{})
	if !apierrors.IsUnsupportedMediaType(err) {
		t.Errorf("strategic merge patch of an unstructured resource: %v, want 415", err)
	}

	// Status: the subresource changes only the status, the main resource
	// everything else.
	out.Object["status"] = map[string]interface{}{"phase": "Ready"}
	out.Object["spec"].(map[string]interface{})["colour"] = "green"
	st, err := widgets.UpdateStatus(ctx, out, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if phase, _, _ := unstructured.NestedString(st.Object, "status", "phase"); phase != "Ready" {
		t.Errorf("status after UpdateStatus = %v", st.Object["status"])
	}
	if colour, _, _ := unstructured.NestedString(st.Object, "spec", "colour"); colour != "blue" || st.GetGeneration() != 4 {
		t.Errorf("UpdateStatus changed spec.colour to %q, generation to %d", colour, st.GetGeneration())
	}
	st.Object["status"] = map[string]interface{}{"phase": "Broken"}
	upd, err := widgets.Update(ctx, st, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if phase, _, _ := unstructured.NestedString(upd.Object, "status", "phase"); phase != "Ready" {
		t.Errorf("main-resource update changed the status to %q", phase)
	}
	// alice owns nothing any more, so her entry is gone.
	client := managerOf(s)
	if mf := managers(upd); mf != client+"/Update/,"+client+"/Update/status,bob/Apply/" {
		t.Errorf("managedFields managers = %s", mf)
	}

	// Watch: every write above arrives, in order, as the stored object.
	var events []string
	timeout := time.After(10 * time.Second)
	for len(events) < 5 {
		select {
		case ev := <-w.ResultChan():
			u := ev.Object.(*unstructured.Unstructured)
			events = append(events, string(ev.Type)+"@"+u.GetResourceVersion())
			if ev.Type == watch.Modified && len(events) == 5 && u.GetResourceVersion() != st.GetResourceVersion() {
				t.Errorf("last event at %s, want the status update at %s", u.GetResourceVersion(), st.GetResourceVersion())
			}
		case <-timeout:
			t.Fatalf("watch saw %v, want 5 events", events)
		}
	}
	if !strings.HasPrefix(events[0], "ADDED@"+created.GetResourceVersion()) {
		t.Errorf("watch events = %v, want ADDED at %s first", events, created.GetResourceVersion())
	}

	// The OpenAPI documents describe it from the same schema.
	doc, err := s.Client.Discovery().RESTClient().Get().AbsPath("/openapi/v3/apis/example.com/v1").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var v3 struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &v3); err != nil {
		t.Fatal(err)
	}
	widget, list := v3.Components.Schemas["com.example.v1.Widget"], v3.Components.Schemas["com.example.v1.WidgetList"]
	if _, ok := widget.Properties["spec"]; !ok || list.Properties["items"] == nil {
		t.Errorf("OpenAPI v3 widget schema %v, list schema %v", widget, list)
	}

	// Stored as kube stores a custom resource: JSON with a final newline.
	resp, err := s.EtcdClient().Get(ctx, "/registry/example.com/widgets/w/a")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading etcd: %v", err)
	}
	if v := resp.Kvs[0].Value; !strings.HasPrefix(string(v), `{"apiVersion":"example.com/v1","kind":"Widget",`) || v[len(v)-1] != '\n' {
		t.Errorf("stored bytes = %q", v)
	}
}

func object(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func jsonEqual(a, b interface{}) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func partNames(u *unstructured.Unstructured) string {
	parts, _, _ := unstructured.NestedSlice(u.Object, "spec", "parts")
	names := make([]string, 0, len(parts))
	for _, p := range parts {
		names = append(names, p.(map[string]interface{})["name"].(string))
	}
	return strings.Join(names, ",")
}

func managers(u *unstructured.Unstructured) string {
	var out []string
	for _, e := range u.GetManagedFields() {
		out = append(out, e.Manager+"/"+string(e.Operation)+"/"+e.Subresource)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// managerOf is the field manager client-go's default user agent makes.
func managerOf(*apiservertest.Server) string {
	return strings.Split(rest.DefaultKubernetesUserAgent(), "/")[0]
}
