package apply

import (
	"encoding/json"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"

	cronschema "github.com/cronplane/cronplane/pkg/schema"
)

// markerSchema is a custom resource's schema with each merge marker.
const markerSchema = `{"type":"object","properties":{"spec":{"type":"object","properties":{
 "replicas":{"type":"integer"},
 "setList":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},
 "mapList":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"value":{"type":"string"}}}},
 "atomicMap":{"type":"object","x-kubernetes-map-type":"atomic","additionalProperties":{"type":"string"}},
 "granularMap":{"type":"object","x-kubernetes-map-type":"granular","additionalProperties":{"type":"string"}}}}}}`

func customManager(t *testing.T) *Manager {
	t.Helper()
	var v map[string]interface{}
	if err := json.Unmarshal([]byte(markerSchema), &v); err != nil {
		t.Fatal(err)
	}
	root, errs := cronschema.FromOpenAPIV3(v, field.NewPath("openAPIV3Schema"))
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	st := (&cronschema.Structural{Root: root}).AsResource("com.example.merge.v1.Marker")
	empty := &unstructured.Unstructured{}
	empty.SetAPIVersion("merge.example.com/v1")
	empty.SetKind("Marker")
	m, err := NewManager(st, empty, "merge.example.com/v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func customObject(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func fieldsOf(t *testing.T, u *unstructured.Unstructured) string {
	t.Helper()
	var out []string
	for _, e := range u.GetManagedFields() {
		b, _ := json.Marshal([]interface{}{e.Manager, e.Operation, e.FieldsV1})
		out = append(out, string(b))
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// TestUpdate_UntypedObjectKeepsNoManagedFields: an object that has no
// typed form is not refused here, as kube's UpdateNoErrors does not
// refuse it; its managedFields are dropped and validation answers.
func TestUpdate_UntypedObjectKeepsNoManagedFields(t *testing.T) {
	m := customManager(t)
	live := customObject(t, `{"apiVersion":"merge.example.com/v1","kind":"Marker","metadata":{"name":"m","managedFields":[
		{"manager":"old","operation":"Update","apiVersion":"merge.example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}}}]},"spec":{"replicas":1}}`)
	for _, body := range []string{
		`{"apiVersion":"merge.example.com/v1","kind":"Marker","metadata":{"name":"m"},"spec":{"replicas":"two"}}`,
		`{"apiVersion":"merge.example.com/v1","kind":"Marker","metadata":{"name":"m"},"spec":{"mapList":[{"value":"no key"}]}}`,
	} {
		for _, l := range []runtime.Object{nil, live} {
			obj := customObject(t, body)
			if err := m.Update(l, obj, "writer", "", time.Now()); err != nil {
				t.Errorf("%s: %v, want the write to go on", body, err)
			}
			if mf := obj.GetManagedFields(); mf != nil {
				t.Errorf("%s: managedFields %v, want none", body, mf)
			}
		}
	}
}

// TestUpdate_CustomObjectCreateAsKube compares a create's managedFields
// with kube-apiserver's for the same object: nobody owns metadata itself.
func TestUpdate_CustomObjectCreateAsKube(t *testing.T) {
	m := customManager(t)
	for _, tc := range []struct{ body, want string }{
		{`{"apiVersion":"merge.example.com/v1","kind":"Marker","metadata":{"name":"m2"},
			"spec":{"setList":["a"],"mapList":[{"name":"k1","value":"v1"}],"granularMap":{"g":"1"},"atomicMap":{"m":"1"}}}`,
			`["[\"creator\",\"Update\",{\"f:spec\":{\".\":{},\"f:atomicMap\":{},\"f:granularMap\":{\".\":{},\"f:g\":{}},\"f:mapList\":{\".\":{},\"k:{\\\"name\\\":\\\"k1\\\"}\":{\".\":{},\"f:name\":{},\"f:value\":{}}},\"f:setList\":{\".\":{},\"v:\\\"a\\\"\":{}}}}]"]`},
		{`{"apiVersion":"merge.example.com/v1","kind":"Marker","metadata":{"name":"m3"}}`, `null`},
		{`{"apiVersion":"merge.example.com/v1","kind":"Marker","metadata":{"name":"m4","labels":{"x":"y"}}}`,
			`["[\"creator\",\"Update\",{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:x\":{}}}}]"]`},
	} {
		obj := customObject(t, tc.body)
		if err := m.Update(nil, obj, "creator", "", time.Now()); err != nil {
			t.Fatal(err)
		}
		if got := fieldsOf(t, obj); got != tc.want {
			t.Errorf("managedFields\n%s\nwant\n%s", got, tc.want)
		}
	}
}

// TestUpdate_ResetLeavesNoManagedFields: a write asking to clear
// managedFields that changes nothing else leaves none, as kube answers
// (not an empty list).
func TestUpdate_ResetLeavesNoManagedFields(t *testing.T) {
	m := customManager(t)
	live := customObject(t, `{"apiVersion":"merge.example.com/v1","kind":"Marker","metadata":{"name":"m","managedFields":[
		{"manager":"old","operation":"Update","apiVersion":"merge.example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}}}]},"spec":{"replicas":1}}`)
	obj := customObject(t, `{"apiVersion":"merge.example.com/v1","kind":"Marker","metadata":{"name":"m","managedFields":[{}]},"spec":{"replicas":1}}`)
	if err := m.Update(live, obj, "writer", "", time.Now()); err != nil {
		t.Fatal(err)
	}
	if md := obj.Object["metadata"].(map[string]interface{}); md["managedFields"] != nil {
		t.Errorf("managedFields after a reset: %v", md["managedFields"])
	}
}

// TestUpdate_GoObjectWithoutTypedFormKeepsNoManagedFields: a Go object
// is compared without being validated first, and a keyed list item
// without its key still leaves it without managedFields, as kube's
// validation would.
func TestUpdate_GoObjectWithoutTypedFormKeepsNoManagedFields(t *testing.T) {
	m, err := NewManager(cronschema.FromGoType(&batchv1.CronJob{}), &batchv1.CronJob{}, "batch/v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	// imagePullSecrets is keyed by name, which an empty reference omits.
	cronJob := func(secret string) *batchv1.CronJob {
		cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{"a": "b"}}}
		cj.Spec.Schedule = "* * * * *"
		pod := &cj.Spec.JobTemplate.Spec.Template.Spec
		pod.Containers = []corev1.Container{{Name: "c", Image: "busybox"}}
		pod.ImagePullSecrets = []corev1.LocalObjectReference{{Name: secret}}
		return cj
	}
	live := cronJob("pull")
	if err := m.Update(nil, live, "writer", "", time.Now()); err != nil || len(live.ManagedFields) != 1 {
		t.Fatalf("valid object: %v, managedFields %v", err, live.ManagedFields)
	}
	for _, l := range []runtime.Object{nil, live} {
		obj := cronJob("")
		if err := m.Update(l, obj, "writer", "", time.Now()); err != nil {
			t.Errorf("live %v: %v, want the write to go on", l != nil, err)
		}
		if obj.ManagedFields != nil {
			t.Errorf("live %v: managedFields %v, want none", l != nil, obj.ManagedFields)
		}
	}
}

// BenchmarkUpdate_CronJob records an update of a CronJob's annotation,
// the managedFields part of a merge patch.
func BenchmarkUpdate_CronJob(b *testing.B) {
	m, err := NewManager(cronschema.FromGoType(&batchv1.CronJob{}), &batchv1.CronJob{}, "batch/v1", nil)
	if err != nil {
		b.Fatal(err)
	}
	cronJob := func(pad string) *batchv1.CronJob {
		cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "n", Labels: map[string]string{"shard": "3"}, Annotations: map[string]string{"pad": pad}}}
		cj.Spec.Schedule = "*/1 * * * *"
		pod := &cj.Spec.JobTemplate.Spec.Template.Spec
		pod.Containers = []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"sh", "-c", "echo hi"}, Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}}
		pod.RestartPolicy = corev1.RestartPolicyOnFailure
		return cj
	}
	live := cronJob("a")
	if err := m.Update(nil, live, "writer", "", time.Now()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		obj := cronJob("b")
		if err := m.Update(live, obj, "patcher", "", time.Now()); err != nil || len(obj.ManagedFields) != 2 {
			b.Fatalf("%v, managedFields %v", err, obj.ManagedFields)
		}
	}
}

// TestUpdate_TracksWhatKubeTracks: as kube, a write may reset managedFields
// through the main resource with an empty list or one empty entry; a
// subresource's write keeps the live ones, whatever it sent; and an
// existing object without managedFields keeps none, while a new one is
// tracked.
func TestUpdate_TracksWhatKubeTracks(t *testing.T) {
	m := customManager(t)
	const tracked = `{"apiVersion":"merge.example.com/v1","kind":"Marker","metadata":{"name":"m","managedFields":[
		{"manager":"old","operation":"Update","apiVersion":"merge.example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:replicas":{}}}}]},"spec":{"replicas":1}}`
	const untracked = `{"apiVersion":"merge.example.com/v1","kind":"Marker","metadata":{"name":"m"},"spec":{"replicas":1}}`
	const sent = `[{"manager":"sent","operation":"Update","apiVersion":"merge.example.com/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:setList":{}}}}]`
	for _, tc := range []struct {
		name, live, managedFields, subresource, want string
	}{
		{"live ones kept when none are sent", tracked, ``, "",
			`["[\"old\",\"Update\",{\"f:spec\":{\"f:replicas\":{}}}]","[\"writer\",\"Update\",{\"f:spec\":{\"f:granularMap\":{\".\":{},\"f:g\":{}}}}]"]`},
		{"an empty list resets", tracked, `,"managedFields":[]`, "", `null`},
		{"one empty entry resets", tracked, `,"managedFields":[{}]`, "", `null`},
		{"sent ones replace the live ones", tracked, `,"managedFields":` + sent, "",
			`["[\"sent\",\"Update\",{\"f:spec\":{\"f:setList\":{}}}]","[\"writer\",\"Update\",{\"f:spec\":{\"f:granularMap\":{\".\":{},\"f:g\":{}}}}]"]`},
		{"a subresource keeps the live ones", tracked, `,"managedFields":` + sent, "status",
			`["[\"old\",\"Update\",{\"f:spec\":{\"f:replicas\":{}}}]","[\"writer\",\"Update\",{\"f:spec\":{\"f:granularMap\":{\".\":{},\"f:g\":{}}}}]"]`},
		{"a subresource does not reset", tracked, `,"managedFields":[]`, "status",
			`["[\"old\",\"Update\",{\"f:spec\":{\"f:replicas\":{}}}]","[\"writer\",\"Update\",{\"f:spec\":{\"f:granularMap\":{\".\":{},\"f:g\":{}}}}]"]`},
		{"an untracked object stays untracked", untracked, ``, "", `null`},
		{"a new object is tracked", ``, ``, "", `["[\"writer\",\"Update\",{\"f:spec\":{\".\":{},\"f:granularMap\":{\".\":{},\"f:g\":{}},\"f:replicas\":{}}}]"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var live runtime.Object
			if tc.live != "" {
				live = customObject(t, tc.live)
			}
			obj := customObject(t, `{"apiVersion":"merge.example.com/v1","kind":"Marker","metadata":{"name":"m"`+tc.managedFields+`},"spec":{"replicas":1,"granularMap":{"g":"1"}}}`)
			if err := m.Update(live, obj, "writer", tc.subresource, time.Now()); err != nil {
				t.Fatal(err)
			}
			if got := fieldsOf(t, obj); got != tc.want {
				t.Errorf("managedFields\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestUpdate_WritesUnchangedEntriesCanonically: an entry a write leaves
// as it was is written back in the encoding the merge library gives its
// set, whatever the bytes it was read from, on the first write and on
// those that find its set already decoded.
func TestUpdate_WritesUnchangedEntriesCanonically(t *testing.T) {
	m, err := NewManager(cronschema.FromGoType(&batchv1.CronJob{}), &batchv1.CronJob{}, "batch/v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	cronJob := func(schedule string) *batchv1.CronJob {
		cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "n"}}
		cj.Spec.Schedule = schedule
		return cj
	}
	for i := 0; i < 3; i++ {
		live := cronJob("*/1 * * * *")
		live.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "old", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "batch/v1",
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{ "f:spec" : { "f:schedule" : { } } }`)}}}
		obj := cronJob("*/1 * * * *")
		obj.Spec.Suspend = new(bool)
		if err := m.Update(live, obj, "writer", "", time.Now()); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, e := range obj.ManagedFields {
			got[e.Manager] = string(e.FieldsV1.Raw)
		}
		want := map[string]string{"old": `{"f:spec":{"f:schedule":{}}}`, "writer": `{"f:spec":{"f:suspend":{}}}`}
		if len(got) != len(want) || got["old"] != want["old"] || got["writer"] != want["writer"] {
			t.Errorf("write %d: fieldsV1 %v, want %v", i, got, want)
		}
	}
}

// BenchmarkUpdate_CreateRichCronJob records the managedFields of a new
// CronJob with many typed fields, as a create does.
func BenchmarkUpdate_CreateRichCronJob(b *testing.B) {
	m, err := NewManager(cronschema.FromGoType(&batchv1.CronJob{}), &batchv1.CronJob{}, "batch/v1", nil)
	if err != nil {
		b.Fatal(err)
	}
	const body = `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"c","namespace":"n","labels":{"app":"bench","shard":"s1","team":"reports","tier":"batch"},"annotations":{"bench/owner":"reports"}},
"spec":{"schedule":"*/5 * * * *","suspend":true,"jobTemplate":{"spec":{"backoffLimit":3,"activeDeadlineSeconds":600,"ttlSecondsAfterFinished":3600,"template":{"spec":{"restartPolicy":"OnFailure",
"containers":[{"name":"main","image":"busybox:1.36","command":["sh","-c","echo report"],"env":[{"name":"REPORT_ID","value":"1"},{"name":"LOG_LEVEL","value":"info"}],
"resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"500m","memory":"256Mi"}}}]}}}}}}`
	var cj batchv1.CronJob
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(body), &cj); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		obj := cj.DeepCopy()
		if err := m.Update(nil, obj, "creator", "", time.Now()); err != nil || len(obj.ManagedFields) != 1 {
			b.Fatalf("%v, managedFields %v", err, obj.ManagedFields)
		}
	}
}
