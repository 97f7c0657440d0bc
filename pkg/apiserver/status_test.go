package apiserver_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
)

// statusEndpoint is an endpoint that writes part of an object (a status
// subresource, namespaces/finalize, or a main resource), as the tests
// below write through it.
type statusEndpoint struct {
	name string
	ri   dynamic.ResourceInterface
	sub  string
	// object is a new object named name, labelled a=1 and annotated x=1.
	object func(name string) map[string]interface{}
	// written is a change the endpoint stores, dropped one it keeps from
	// the stored object; both shaped as merge patches.
	written, dropped map[string]interface{}
	// keepsMetadata marks a custom resource's status, which kube lets
	// change nothing but the status.
	keepsMetadata bool
	// finalizing marks a namespace, which spec.finalizers keeps after its
	// last metadata finalizer goes.
	finalizing bool
	// establish waits until the created object is quiet (a definition's
	// controller writes its status once).
	establish func(t *testing.T, name string)
}

func (e statusEndpoint) create(t *testing.T, name string, finalizers ...string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: e.object(name)}
	u.SetFinalizers(finalizers)
	out, err := e.ri.Create(ctx(t), u, metav1.CreateOptions{FieldManager: "creator"})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	if e.establish != nil {
		e.establish(t, out.GetName())
	}
	return out
}

// put reads the object, changes it and writes it back through the
// endpoint, again if a controller wrote in between.
func (e statusEndpoint) put(t *testing.T, name string, change func(u *unstructured.Unstructured)) (*unstructured.Unstructured, error) {
	var out *unstructured.Unstructured
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := e.ri.Get(ctx(t), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(cur)
		out, err = e.ri.Update(ctx(t), cur, metav1.UpdateOptions{FieldManager: "writer"}, subresources(e.sub)...)
		return err
	})
	return out, err
}

func subresources(sub string) []string {
	if sub == "" {
		return nil
	}
	return []string{sub}
}

// statusEndpoints are the endpoints of every built-in kind served with a
// status (or finalize) subresource, and of a custom resource's status.
func statusEndpoints(t *testing.T, ns string) []statusEndpoint {
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	group := "st" + rand.String(6) + ".example.com"
	createCRD(ctx(t), t, dyn, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"widgets.`+group+`"},
		"spec":{"group":"`+group+`","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},
		 "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
		  "schema":{"openAPIV3Schema":{"type":"object","properties":{
		   "spec":{"type":"object","properties":{"size":{"type":"integer"}}},
		   "extra":{"type":"string"},
		   "status":{"type":"object","properties":{"ready":{"type":"boolean"}}}}}}}]}}`)
	widgets := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}).Namespace(ns)
	widget := func(name string) map[string]interface{} {
		return map[string]interface{}{"apiVersion": group + "/v1", "kind": "Widget", "metadata": labelled(name),
			"spec": map[string]interface{}{"size": int64(1)}, "extra": "a"}
	}
	waitServed(ctx(t), t, widgets, &unstructured.Unstructured{Object: widget("served")})

	pod := map[string]interface{}{"restartPolicy": "Never", "containers": []interface{}{map[string]interface{}{"name": "c", "image": "busybox"}}}
	cronJob := func(name string) map[string]interface{} {
		return map[string]interface{}{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": labelled(name),
			"spec": map[string]interface{}{"schedule": "*/5 * * * *", "jobTemplate": map[string]interface{}{"spec": map[string]interface{}{"template": map[string]interface{}{"spec": pod}}}}}
	}
	namespaceObject := func(name string) map[string]interface{} {
		return map[string]interface{}{"apiVersion": "v1", "kind": "Namespace", "metadata": labelled(ns + "-" + name)}
	}
	probeCondition := map[string]interface{}{"status": map[string]interface{}{"conditions": []interface{}{map[string]interface{}{"type": "Probe", "status": "True"}}}}
	moreFinalizers := map[string]interface{}{"spec": map[string]interface{}{"finalizers": []interface{}{"kubernetes", "example.com/spec"}}}
	crdNames := map[string]interface{}{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"}
	cronJobs := dyn.Resource(schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "cronjobs"}).Namespace(ns)
	return []statusEndpoint{
		{name: "cronjobs/status", ri: cronJobs, sub: "status", object: cronJob,
			written: map[string]interface{}{"status": map[string]interface{}{"lastScheduleTime": "2024-01-01T00:00:00Z"}},
			dropped: map[string]interface{}{"spec": map[string]interface{}{"schedule": "@hourly"}}},
		{name: "jobs/status", ri: dyn.Resource(schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}).Namespace(ns), sub: "status",
			object: func(name string) map[string]interface{} {
				return map[string]interface{}{"apiVersion": "batch/v1", "kind": "Job", "metadata": labelled(name),
					"spec": map[string]interface{}{"suspend": true, "parallelism": int64(1), "template": map[string]interface{}{"spec": pod}}}
			},
			written: map[string]interface{}{"status": map[string]interface{}{"failed": int64(1)}},
			dropped: map[string]interface{}{"spec": map[string]interface{}{"parallelism": int64(2)}}},
		{name: "namespaces/status", ri: dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}), sub: "status",
			object: namespaceObject, written: probeCondition, dropped: moreFinalizers, finalizing: true},
		{name: "namespaces/finalize", ri: dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}), sub: "finalize",
			object: namespaceObject, written: moreFinalizers, dropped: probeCondition, finalizing: true},
		{name: "customresourcedefinitions/status", ri: dyn.Resource(crdsGVR), sub: "status",
			object: func(name string) map[string]interface{} {
				g := name + "." + group
				return map[string]interface{}{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": labelled("gadgets." + g),
					"spec": map[string]interface{}{"group": g, "scope": "Cluster", "names": crdNames,
						"versions": []interface{}{map[string]interface{}{"name": "v1", "served": true, "storage": true,
							"schema": map[string]interface{}{"openAPIV3Schema": map[string]interface{}{"type": "object"}}}}}}
			},
			// The definition's controller owns its status.
			dropped: map[string]interface{}{"spec": map[string]interface{}{"names": map[string]interface{}{"shortNames": []interface{}{"gd"}}}},
			establish: func(t *testing.T, name string) {
				waitCondition(ctx(t), t, dyn, name, "Established", "True")
			}},
		{name: "widgets/status (custom resource)", ri: widgets, sub: "status", object: widget, keepsMetadata: true,
			written: map[string]interface{}{"status": map[string]interface{}{"ready": true}},
			dropped: map[string]interface{}{"spec": map[string]interface{}{"size": int64(2)}, "extra": "b"}},
		{name: "cronjobs (main resource)", ri: cronJobs, object: cronJob,
			written: map[string]interface{}{"spec": map[string]interface{}{"schedule": "@hourly"}},
			dropped: map[string]interface{}{"status": map[string]interface{}{"lastScheduleTime": "2024-01-01T00:00:00Z"}}},
	}
}

func labelled(name string) map[string]interface{} {
	return map[string]interface{}{"name": name, "labels": map[string]interface{}{"a": "1"}, "annotations": map[string]interface{}{"x": "1"}}
}

// merged deep-merges patches as JSON merge patches do (without deletes).
func merged(patches ...map[string]interface{}) map[string]interface{} {
	out := map[string]interface{}{}
	for _, p := range patches {
		for k, v := range p {
			if pm, ok := v.(map[string]interface{}); ok {
				if om, ok := out[k].(map[string]interface{}); ok {
					out[k] = merged(om, pm)
					continue
				}
				out[k] = merged(pm)
				continue
			}
			out[k] = v
		}
	}
	return out
}

// leaves calls f with the path and value of every non-map value in m.
func leaves(m map[string]interface{}, f func(path []string, v interface{}), prefix ...string) {
	for k, v := range m {
		path := append(append([]string(nil), prefix...), k)
		if vm, ok := v.(map[string]interface{}); ok {
			leaves(vm, f, path...)
			continue
		}
		f(path, v)
	}
}

// fieldsOf is the fieldsV1 of the entry of manager through subresource.
func fieldsOf(u *unstructured.Unstructured, manager, subresource string) map[string]interface{} {
	for _, e := range u.GetManagedFields() {
		if e.Manager == manager && e.Subresource == subresource && e.FieldsV1 != nil {
			var m map[string]interface{}
			if json.Unmarshal(e.FieldsV1.Raw, &m) == nil {
				return m
			}
		}
	}
	return nil
}

// ownsField reports whether fields (a fieldsV1 set) has the field at
// path, given by JSON names.
func ownsField(fields map[string]interface{}, path ...string) bool {
	cur := fields
	for _, p := range path {
		next, ok := cur["f:"+p].(map[string]interface{})
		if !ok {
			return false
		}
		cur = next
	}
	return true
}

// Kube's status strategies of built-in kinds keep only the spec: labels,
// annotations, finalizers and owner references written through /status
// (or namespaces/finalize) are stored, and the writer owns them; a custom
// resource's status keeps everything but the status. Measured against
// kube-apiserver v1.29 for PUT, merge patch and server-side apply.
func TestStatus_MetadataThroughStatusIsKeptOnlyForCustomResources(t *testing.T) {
	ns := namespace(t)
	owner, err := srv.Client.CoreV1().Namespaces().Get(ctx(t), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ownerRef := map[string]interface{}{"apiVersion": "v1", "kind": "Namespace", "name": ns, "uid": string(owner.UID)}
	metaChange := map[string]interface{}{"metadata": map[string]interface{}{
		"labels": map[string]interface{}{"a": "2", "b": "new"}, "annotations": map[string]interface{}{"x": "2"},
		"finalizers": []interface{}{"example.com/f"}, "ownerReferences": []interface{}{ownerRef}}}
	for ei, e := range statusEndpoints(t, ns) {
		methods := []string{"put", "merge-patch", "apply"}
		if e.sub == "finalize" {
			methods = methods[:1] // kube serves finalize for updates only
		}
		if e.sub == "" {
			continue // the main resource writes metadata anyway
		}
		for _, method := range methods {
			t.Run(e.name+"/"+method, func(t *testing.T) {
				created := e.create(t, fmt.Sprintf("e%d%s", ei, strings.ReplaceAll(method, "-", "")))
				name := created.GetName()
				change := merged(metaChange, e.written, e.dropped)
				var out *unstructured.Unstructured
				var err error
				switch method {
				case "put":
					out, err = e.put(t, name, func(u *unstructured.Unstructured) {
						u.Object = merged(u.Object, change)
						u.SetGeneration(42)
					})
				case "merge-patch":
					body, _ := json.Marshal(change)
					out, err = e.ri.Patch(ctx(t), name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "writer"}, e.sub)
				case "apply":
					config := merged(map[string]interface{}{"apiVersion": created.GetAPIVersion(), "kind": created.GetKind(),
						"metadata": map[string]interface{}{"name": name}}, change)
					body, _ := json.Marshal(config)
					out, err = e.ri.Patch(ctx(t), name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "writer", Force: ptr(true)}, e.sub)
				}
				if err != nil {
					t.Fatal(err)
				}
				stored, err := e.ri.Get(ctx(t), name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				wantLabels, wantAnnotation, wantFinalizers, wantOwners := "2/new", "2", []string{"example.com/f"}, []types.UID{owner.UID}
				if e.keepsMetadata {
					wantLabels, wantAnnotation, wantFinalizers, wantOwners = "1/", "1", nil, nil
				}
				for what, u := range map[string]*unstructured.Unstructured{"returned": out, "stored": stored} {
					var owners []types.UID
					for _, r := range u.GetOwnerReferences() {
						owners = append(owners, r.UID)
					}
					if l := u.GetLabels(); l["a"]+"/"+l["b"] != wantLabels || u.GetAnnotations()["x"] != wantAnnotation ||
						!reflect.DeepEqual(u.GetFinalizers(), wantFinalizers) || !reflect.DeepEqual(owners, wantOwners) {
						t.Errorf("%s: labels %v annotations %v finalizers %v owners %v; want a/b %s, x %s, finalizers %v, owners %v",
							what, l, u.GetAnnotations(), u.GetFinalizers(), owners, wantLabels, wantAnnotation, wantFinalizers, wantOwners)
					}
					if u.GetGeneration() != created.GetGeneration() {
						t.Errorf("%s: generation %d, want %d", what, u.GetGeneration(), created.GetGeneration())
					}
					leaves(e.dropped, func(path []string, _ interface{}) {
						got, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
						was, _, _ := unstructured.NestedFieldNoCopy(created.Object, path...)
						if !reflect.DeepEqual(got, was) {
							t.Errorf("%s: %s = %v, want it kept at %v", what, strings.Join(path, "."), got, was)
						}
					})
					leaves(e.written, func(path []string, v interface{}) {
						got, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
						if path[len(path)-1] == "conditions" {
							got, _, _ = unstructured.NestedString(got.([]interface{})[0].(map[string]interface{}), "type")
							v = "Probe"
						}
						if !reflect.DeepEqual(got, v) {
							t.Errorf("%s: %s = %v, want %v", what, strings.Join(path, "."), got, v)
						}
					})
				}

				// The writer owns what it changed, and nothing the
				// endpoint kept.
				fields := fieldsOf(stored, "writer", e.sub)
				if got := ownsField(fields, "metadata"); got == e.keepsMetadata {
					t.Errorf("writer owns metadata: %v, want %v; managedFields %s", got, !e.keepsMetadata, mustMarshal(t, stored.GetManagedFields()))
				}
				if !e.keepsMetadata && !(ownsField(fields, "metadata", "labels", "b") && ownsField(fields, "metadata", "finalizers") && ownsField(fields, "metadata", "ownerReferences")) {
					t.Errorf("writer owns %v, want labels, finalizers and ownerReferences", fields)
				}
				for top := range e.dropped {
					if ownsField(fields, top) {
						t.Errorf("writer owns %s, which %s keeps: %v", top, e.sub, fields)
					}
				}
				for top := range e.written {
					if !ownsField(fields, top) {
						t.Errorf("writer owns no %s: %v", top, fields)
					}
				}
			})
		}
	}
}

// What the generic update path governs, through every endpoint: uid and
// creationTimestamp are the server's, only a delete sets the deletion
// fields, finalizers may only go once an object is being deleted, and the
// last one going removes the object. A custom resource's status keeps
// its metadata instead, as kube's does.
func TestStatus_IdentityAndDeletionMetadataAsKubeGovernsThem(t *testing.T) {
	ns := namespace(t)
	long := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	type outcome struct {
		code int // 0 for success
		// cause is the field of a 422's cause.
		cause string
		// gone: the object was removed.
		gone bool
		// finalizers and deleting are the stored object's.
		finalizers []string
		deleting   bool
	}
	cases := []struct {
		name     string
		deleting bool
		change   func(u *unstructured.Unstructured)
		// want is the outcome of a built-in kind's endpoint, custom that
		// of a custom resource's status when it differs.
		want, custom *outcome
		// finalizing: a namespace's, when it differs.
		finalizing *outcome
	}{
		{name: "another uid", change: func(u *unstructured.Unstructured) { u.SetUID("11111111-2222-3333-4444-555555555555") },
			want: &outcome{code: 409, finalizers: []string{"example.com/f"}}},
		{name: "no uid", change: func(u *unstructured.Unstructured) { u.SetUID("") },
			want: &outcome{finalizers: []string{"example.com/f"}}},
		{name: "another creationTimestamp", change: func(u *unstructured.Unstructured) { u.SetCreationTimestamp(metav1.NewTime(long)) },
			want: &outcome{finalizers: []string{"example.com/f"}}},
		{name: "deletionTimestamp set without a delete", change: func(u *unstructured.Unstructured) { u.SetDeletionTimestamp(&metav1.Time{Time: long}) },
			want:   &outcome{code: 422, cause: "metadata.deletionTimestamp", finalizers: []string{"example.com/f"}},
			custom: &outcome{finalizers: []string{"example.com/f"}}},
		{name: "deletionGracePeriodSeconds set without a delete", change: func(u *unstructured.Unstructured) { u.SetDeletionGracePeriodSeconds(ptr(int64(30))) },
			want:   &outcome{code: 422, cause: "metadata.deletionGracePeriodSeconds", finalizers: []string{"example.com/f"}},
			custom: &outcome{finalizers: []string{"example.com/f"}}},
		{name: "deletion fields cleared while deleting", deleting: true, change: func(u *unstructured.Unstructured) {
			u.SetDeletionTimestamp(nil)
			u.SetDeletionGracePeriodSeconds(nil)
		}, want: &outcome{finalizers: []string{"example.com/f"}, deleting: true}},
		{name: "deletionTimestamp moved while deleting", deleting: true, change: func(u *unstructured.Unstructured) { u.SetDeletionTimestamp(&metav1.Time{Time: long}) },
			want: &outcome{finalizers: []string{"example.com/f"}, deleting: true}},
		{name: "finalizer added while deleting", deleting: true, change: func(u *unstructured.Unstructured) { u.SetFinalizers(append(u.GetFinalizers(), "example.com/g")) },
			want:   &outcome{code: 422, cause: "metadata.finalizers", finalizers: []string{"example.com/f"}, deleting: true},
			custom: &outcome{finalizers: []string{"example.com/f"}, deleting: true}},
		{name: "last finalizer removed while deleting", deleting: true, change: func(u *unstructured.Unstructured) { u.SetFinalizers(nil) },
			want:       &outcome{gone: true},
			custom:     &outcome{finalizers: []string{"example.com/f"}, deleting: true},
			finalizing: &outcome{deleting: true}},
	}
	for ei, e := range statusEndpoints(t, ns) {
		if e.sub == "finalize" || e.establish != nil {
			// Finalize is the namespace's status again; a definition's
			// delete starts its controller's cleanup.
			continue
		}
		for i, c := range cases {
			t.Run(e.name+"/"+c.name, func(t *testing.T) {
				want := c.want
				if e.keepsMetadata && c.custom != nil {
					want = c.custom
				}
				if e.finalizing && c.finalizing != nil {
					want = c.finalizing
				}
				name := e.create(t, fmt.Sprintf("e%dc%d", ei, i), "example.com/f").GetName()
				if c.deleting {
					if err := e.ri.Delete(ctx(t), name, metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationBackground)}); err != nil {
						t.Fatal(err)
					}
				}
				_, err := e.put(t, name, c.change)
				code, cause := 0, ""
				if se, ok := err.(apierrors.APIStatus); ok {
					code = int(se.Status().Code)
					if d := se.Status().Details; d != nil && len(d.Causes) > 0 {
						cause = d.Causes[0].Field
					}
				} else if err != nil {
					t.Fatal(err)
				}
				if code != want.code || cause != want.cause {
					t.Errorf("write: %d %q (%v), want %d %q", code, cause, err, want.code, want.cause)
				}
				stored, err := e.ri.Get(ctx(t), name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) != want.gone {
					t.Fatalf("after the write: %v, want gone %v", err, want.gone)
				}
				if want.gone {
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				deleting := stored.GetDeletionTimestamp() != nil
				if !reflect.DeepEqual(stored.GetFinalizers(), want.finalizers) || deleting != want.deleting ||
					(deleting && stored.GetDeletionTimestamp().Year() == long.Year()) {
					t.Errorf("stored finalizers %v deletionTimestamp %v, want %v deleting %v", stored.GetFinalizers(), stored.GetDeletionTimestamp(), want.finalizers, want.deleting)
				}
				if !c.deleting && stored.GetDeletionGracePeriodSeconds() != nil {
					t.Errorf("stored deletionGracePeriodSeconds %d", *stored.GetDeletionGracePeriodSeconds())
				}
				if stored.GetCreationTimestamp().Year() == long.Year() || stored.GetUID() == "11111111-2222-3333-4444-555555555555" {
					t.Errorf("stored creationTimestamp %v uid %s", stored.GetCreationTimestamp(), stored.GetUID())
				}
			})
		}
	}
}

// A namespace's phase through its status follows its deletion: Active
// until a delete, Terminating after, as kube validates it.
func TestStatus_NamespacePhaseFollowsDeletion(t *testing.T) {
	namespaces := srv.Client.CoreV1().Namespaces()
	cases := []struct {
		name     string
		deleting bool
		phase    corev1.NamespacePhase
		want     string // the 422's message; empty for success
	}{
		{"active and live", false, corev1.NamespaceActive, ""},
		{"terminating and live", false, corev1.NamespaceTerminating,
			`Namespace "%s" is invalid: status.Phase: Invalid value: "Terminating": may only be 'Active' if ` + "`deletionTimestamp`" + ` is empty`},
		{"terminating and deleting", true, corev1.NamespaceTerminating, ""},
		{"active and deleting", true, corev1.NamespaceActive,
			`Namespace "%s" is invalid: status.Phase: Invalid value: "Active": may only be 'Terminating' if ` + "`deletionTimestamp`" + ` is not empty`},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := fmt.Sprintf("phase-%d-%s", i, rand.String(5))
			if _, err := namespaces.Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if c.deleting {
				if err := namespaces.Delete(ctx(t), name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			ns, err := namespaces.Get(ctx(t), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ns.Status.Phase = c.phase
			_, err = namespaces.UpdateStatus(ctx(t), ns, metav1.UpdateOptions{})
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			se := wantStatus(t, err, 422, metav1.StatusReasonInvalid)
			if want := fmt.Sprintf(c.want, name); se.Message != want {
				t.Errorf("message %q, want %q", se.Message, want)
			}
		})
	}
}
