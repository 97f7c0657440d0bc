package integration

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// jobEntries are the managedFields entries of the Job itself, the
// CronJob controller's: the Job controller writes the status subresource.
func jobEntries(mf []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, e := range mf {
		if e.Subresource == "" {
			out = append(out, e)
		}
	}
	return out
}

// A Job the CronJob controller makes from a template without labels has
// kube's generated labels on itself and on its pod template, and the
// managedFields kube-controller-manager v1.29 leaves on the Job kube makes
// from the same CronJob (testdata, taken from the reference): the owner
// reference owned whole, by its uid, not field by field.
func TestCronJobController_JobLabelsAndManagedFieldsAsKubes(t *testing.T) {
	ns := newNamespace(t, "cronjob-kube")
	start(t, "solo", false)
	cj, err := srv.Client.BatchV1().CronJobs(ns).Create(context.Background(), &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "plain"},
		Spec: batchv1.CronJobSpec{Schedule: "*/1 * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a Job", func() (bool, error) { return len(jobsOf(t, ns)) == 1, nil })
	job := jobsOf(t, ns)[0]
	want := map[string]string{
		"batch.kubernetes.io/controller-uid": string(job.UID), "controller-uid": string(job.UID),
		"batch.kubernetes.io/job-name": job.Name, "job-name": job.Name,
	}
	if !reflect.DeepEqual(job.Labels, want) || !reflect.DeepEqual(job.Spec.Template.Labels, want) {
		t.Fatalf("labels %v, template labels %v, want %v on both", job.Labels, job.Spec.Template.Labels, want)
	}
	got := make([]map[string]interface{}, 0, len(job.ManagedFields))
	for _, e := range jobEntries(job.ManagedFields) {
		raw, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]interface{}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "time")
		got = append(got, m)
	}
	golden, err := os.ReadFile("testdata/cronjob-controller-job.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var wantMF []map[string]interface{}
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(golden), "CRONJOB_UID", string(cj.UID))), &wantMF); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, wantMF) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(wantMF, "", " ")
		t.Fatalf("managedFields differ from kube's\ngot  %s\nwant %s", g, w)
	}
}
