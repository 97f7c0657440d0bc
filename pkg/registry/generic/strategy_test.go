package generic

import (
	"reflect"
	"sort"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	cronschema "github.com/cronplane/cronplane/pkg/schema"
)

func TestStatusStrategy_ResetsItsPolicysFieldsOnly(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "writer", Subresource: "status"}}
	meta := func(labels string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "x", Labels: map[string]string{"a": labels}, Finalizers: []string{labels}}
	}
	cronJob := func(labels, schedule, lastSchedule string) *batchv1.CronJob {
		cj := &batchv1.CronJob{ObjectMeta: meta(labels), Spec: batchv1.CronJobSpec{Schedule: schedule}}
		if lastSchedule != "" {
			cj.Status.LastScheduleTime = &metav1.Time{}
			_ = cj.Status.LastScheduleTime.UnmarshalQueryParameter(lastSchedule)
		}
		return cj
	}
	widget := func(labels, size, ready string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]interface{}{"name": "x", "labels": map[string]interface{}{"a": labels}, "finalizers": []interface{}{labels}},
			"spec":     map[string]interface{}{"size": size}, "extra": size, "status": map[string]interface{}{"ready": ready}}}
	}
	for _, tc := range []struct {
		name     string
		strategy StatusStrategy
		obj, old runtime.Object
		want     runtime.Object
		resets   []string
	}{
		{"a built-in's status writes metadata, keeps the spec", StatusStrategy{},
			cronJob("new", "@hourly", "2024-01-01T00:00:00Z"), cronJob("old", "@daily", ""),
			cronJob("new", "@daily", "2024-01-01T00:00:00Z"), []string{"spec"}},
		{"a custom resource's status keeps metadata and every other field", StatusStrategy{KeepMetadata: true},
			widget("new", "2", "yes"), widget("old", "1", "no"),
			widget("old", "1", "yes"), []string{"extra", "metadata", "spec"}},
		{"without KeepMetadata a custom resource's metadata is written", StatusStrategy{},
			widget("new", "2", "yes"), widget("old", "1", "no"),
			widget("new", "1", "yes"), []string{"extra", "spec"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setManaged(t, tc.obj, managed)
			setManaged(t, tc.want, managed)
			tc.strategy.PrepareForUpdate(tc.obj, tc.old)
			if !reflect.DeepEqual(tc.obj, tc.want) {
				t.Errorf("PrepareForUpdate gave\n%#v\nwant\n%#v", tc.obj, tc.want)
			}
			var resets []string
			for _, f := range cronschema.FieldNames(tc.obj) {
				if tc.strategy.ResetsField(f) {
					resets = append(resets, f)
				}
			}
			sort.Strings(resets)
			if !reflect.DeepEqual(resets, tc.resets) {
				t.Errorf("resets %v, want %v", resets, tc.resets)
			}
		})
	}
}

func setManaged(t *testing.T, obj runtime.Object, entries []metav1.ManagedFieldsEntry) {
	t.Helper()
	m, ok := obj.(metav1.Object)
	if !ok {
		t.Fatalf("%T has no metadata", obj)
	}
	m.SetManagedFields(entries)
}
