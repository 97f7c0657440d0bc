package apiserver_test

import (
	"context"
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func job(name string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
		}}},
	}
}

// Without a garbage collector running, the finalizers a delete leaves are
// what the collector will act on.
func TestDelete_PropagationPolicySetsGarbageCollectorFinalizers(t *testing.T) {
	orphan, foreground, background := metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground, metav1.DeletePropagationBackground
	yes, no := true, false
	for _, tc := range []struct {
		name     string
		resource string
		opts     metav1.DeleteOptions
		want     []string // nil: removed at once
	}{
		{"cronjob default is background", "cronjobs", metav1.DeleteOptions{}, nil},
		{"job default orphans (batch/v1 compatibility)", "jobs", metav1.DeleteOptions{}, []string{metav1.FinalizerOrphanDependents}},
		{"job background", "jobs", metav1.DeleteOptions{PropagationPolicy: &background}, nil},
		{"cronjob orphan", "cronjobs", metav1.DeleteOptions{PropagationPolicy: &orphan}, []string{metav1.FinalizerOrphanDependents}},
		{"cronjob foreground", "cronjobs", metav1.DeleteOptions{PropagationPolicy: &foreground}, []string{metav1.FinalizerDeleteDependents}},
		// The deprecated field is still honoured, as kube honours it.
		{"orphanDependents true", "cronjobs", metav1.DeleteOptions{OrphanDependents: &yes}, []string{metav1.FinalizerOrphanDependents}}, //nolint:staticcheck
		{"orphanDependents false on a job", "jobs", metav1.DeleteOptions{OrphanDependents: &no}, nil},                                   //nolint:staticcheck
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			del, get := deleteAndGet(t, ns, tc.resource)
			if err := del(tc.opts); err != nil {
				t.Fatal(err)
			}
			m, err := get()
			if tc.want == nil {
				if !apierrors.IsNotFound(err) {
					t.Fatalf("want the object removed, got %v %v", err, m)
				}
				return
			}
			if err != nil || m.DeletionTimestamp == nil || !slices.Equal(m.Finalizers, tc.want) {
				t.Fatalf("want kept with finalizers %v, got %v %+v", tc.want, err, m)
			}
		})
	}
}

func TestDelete_SecondDeleteSwitchesPolicyAndLastFinalizerRemovalDeletes(t *testing.T) {
	ns := namespace(t)
	cj := srv.Client.BatchV1().CronJobs(ns)
	c := cronJob("switch")
	c.Finalizers = []string{"example.com/hold"}
	if _, err := cj.Create(ctx(t), c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	orphan, foreground, background := metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground, metav1.DeletePropagationBackground
	for _, step := range []struct {
		policy *metav1.DeletionPropagation
		want   []string
	}{
		{&orphan, []string{"example.com/hold", metav1.FinalizerOrphanDependents}},
		{&foreground, []string{"example.com/hold", metav1.FinalizerDeleteDependents}},
		{nil, []string{"example.com/hold", metav1.FinalizerDeleteDependents}},
		{&background, []string{"example.com/hold"}},
	} {
		if err := cj.Delete(ctx(t), "switch", metav1.DeleteOptions{PropagationPolicy: step.policy}); err != nil {
			t.Fatal(err)
		}
		got, err := cj.Get(ctx(t), "switch", metav1.GetOptions{})
		if err != nil || !slices.Equal(got.Finalizers, step.want) {
			t.Fatalf("after delete with %v: %v %v, want %v", step.policy, err, got.Finalizers, step.want)
		}
	}
	if _, err := cj.Patch(ctx(t), "switch", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cj.Get(ctx(t), "switch", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("want removed once the last finalizer went, got %v", err)
	}
}

// deleteAndGet creates an object of resource and returns functions that
// delete it and read its metadata.
func deleteAndGet(t *testing.T, ns, resource string) (func(metav1.DeleteOptions) error, func() (*metav1.ObjectMeta, error)) {
	t.Helper()
	c := context.Background()
	if resource == "jobs" {
		jobs := srv.Client.BatchV1().Jobs(ns)
		if _, err := jobs.Create(ctx(t), job("j"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return func(o metav1.DeleteOptions) error { return jobs.Delete(c, "j", o) },
			func() (*metav1.ObjectMeta, error) {
				j, err := jobs.Get(c, "j", metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				return &j.ObjectMeta, nil
			}
	}
	cjs := srv.Client.BatchV1().CronJobs(ns)
	if _, err := cjs.Create(ctx(t), cronJob("cj"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return func(o metav1.DeleteOptions) error { return cjs.Delete(c, "cj", o) },
		func() (*metav1.ObjectMeta, error) {
			j, err := cjs.Get(c, "cj", metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return &j.ObjectMeta, nil
		}
}
