package schema

import (
	"reflect"
	"sort"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"
)

func TestFieldNames_AreTheRootPropertiesOfTheGoTypesSchema(t *testing.T) {
	for _, obj := range []runtime.Object{&batchv1.CronJob{}, &batchv1.Job{}, &corev1.Namespace{}, &corev1.ConfigMap{}, &corev1.Event{}, &apiextensionsv1.CustomResourceDefinition{}} {
		got := FieldNames(obj)
		sort.Strings(got)
		if want := FromGoType(obj).TopLevelFields(); !reflect.DeepEqual(got, want) {
			t.Errorf("%T: fields %v, schema's root properties %v", obj, got, want)
		}
	}
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "example.com/v1", "kind": "Widget", "spec": map[string]interface{}{}}}
	got := FieldNames(u)
	sort.Strings(got)
	if want := []string{"apiVersion", "kind", "spec"}; !reflect.DeepEqual(got, want) {
		t.Errorf("unstructured: fields %v, want %v", got, want)
	}
}

// job and widget are the same object as a Go type and as an unstructured
// one: a spec, a status, metadata.
func job(parallelism int32, phase string) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"l": phase}}, Spec: batchv1.JobSpec{Parallelism: &parallelism}}
	if phase != "" {
		j.Status.Active = int32(len(phase))
	}
	return j
}

func widget(parallelism int32, phase string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "a", "labels": map[string]interface{}{"l": phase}},
		"spec":     map[string]interface{}{"parallelism": int64(parallelism)},
	}}
	if phase != "" {
		u.Object["status"] = map[string]interface{}{"active": int64(len(phase))}
	}
	return u
}

func TestCopyFields_TakesTheChosenTopLevelFieldsOnly(t *testing.T) {
	isStatus := func(name string) bool { return name == "status" }
	notStatus := func(name string) bool { return name == "spec" }
	for _, tc := range []struct {
		name           string
		obj, from      runtime.Object
		take           func(string) bool
		want           runtime.Object
		wantNoneCopied bool
	}{
		{"status of a Go type", job(1, "x"), job(2, "yy"), isStatus, &batchv1.Job{ObjectMeta: job(1, "x").ObjectMeta, Spec: job(1, "").Spec, Status: job(2, "yy").Status}, false},
		{"spec of a Go type", job(1, "x"), job(2, "yy"), notStatus, &batchv1.Job{ObjectMeta: job(1, "x").ObjectMeta, Spec: job(2, "").Spec, Status: job(1, "x").Status}, false},
		{"missing status of a Go type is cleared", job(1, "x"), job(2, ""), isStatus, &batchv1.Job{ObjectMeta: job(1, "x").ObjectMeta, Spec: job(1, "").Spec}, false},
		{"status of an unstructured object", widget(1, "x"), widget(2, "yy"), isStatus, func() runtime.Object {
			u := widget(1, "x")
			u.Object["status"] = widget(2, "yy").Object["status"]
			return u
		}(), false},
		{"missing status of an unstructured object is removed", widget(1, "x"), widget(2, ""), isStatus, func() runtime.Object {
			u := widget(1, "x")
			delete(u.Object, "status")
			return u
		}(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			CopyFields(tc.obj, tc.from, tc.take)
			if !reflect.DeepEqual(tc.obj, tc.want) {
				t.Errorf("got %#v\nwant %#v", tc.obj, tc.want)
			}
		})
	}
}

func TestCopyFields_CopiesValuesNotReferences(t *testing.T) {
	obj, from := widget(1, "x"), widget(2, "yy")
	CopyFields(obj, from, func(name string) bool { return name == "status" })
	from.Object["status"].(map[string]interface{})["active"] = int64(7)
	if got := obj.Object["status"].(map[string]interface{})["active"]; got != int64(2) {
		t.Errorf("a change to the source reached the copy: active = %v", got)
	}
}

func TestCopyFields_CopiesGoValuesNotReferences(t *testing.T) {
	for _, field := range []string{"status", "spec", "metadata"} {
		obj, from := job(1, "x"), job(2, "yy")
		from.Status.CompletionTime = &metav1.Time{}
		want := from.DeepCopy()
		CopyFields(obj, from, func(name string) bool { return name == field })
		from.Labels["l"] = "changed"
		*from.Spec.Parallelism = 9
		from.Status.CompletionTime.Time = time.Unix(9, 0)
		got := map[string]interface{}{"status": obj.Status, "spec": obj.Spec, "metadata": obj.ObjectMeta}[field]
		wantField := map[string]interface{}{"status": want.Status, "spec": want.Spec, "metadata": want.ObjectMeta}[field]
		if !reflect.DeepEqual(got, wantField) {
			t.Errorf("%s: a change to the source reached the copy: %#v", field, got)
		}
	}
}

func TestFieldsDiffer_ComparesTheConsideredFieldsOnly(t *testing.T) {
	spec := func(name string) bool { return name == "spec" }
	for _, tc := range []struct {
		name string
		a, b runtime.Object
		want bool
	}{
		{"Go type, same spec, other status and labels", job(1, "x"), job(1, "yy"), false},
		{"Go type, other spec", job(1, "x"), job(2, "x"), true},
		{"unstructured, same spec, other status and labels", widget(1, "x"), widget(1, "yy"), false},
		{"unstructured, other spec", widget(1, "x"), widget(2, "x"), true},
		{"unstructured, spec only on one side", widget(1, "x"), &unstructured.Unstructured{Object: map[string]interface{}{"status": map[string]interface{}{}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FieldsDiffer(tc.a, tc.b, spec); got != tc.want {
				t.Errorf("FieldsDiffer = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestClearField_RemovesOneTopLevelField(t *testing.T) {
	j := job(1, "x")
	ClearField(j, "status")
	if want := (&batchv1.Job{ObjectMeta: job(1, "x").ObjectMeta, Spec: job(1, "").Spec}); !reflect.DeepEqual(j, want) {
		t.Errorf("Go type: got %#v", j)
	}
	u := widget(1, "x")
	ClearField(u, "status")
	if _, ok := u.Object["status"]; ok || u.Object["spec"] == nil {
		t.Errorf("unstructured: got %v", u.Object)
	}
}
