package storage_test

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/storage"
)

// cronJob is a CronJob as the apiserver stores it: defaulted, with a
// long annotation and managedFields.
func cronJob() *batchv1.CronJob {
	suspend := true
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{
			Name: "cj-00001", Namespace: "bench", UID: "6b1f0b9e-3f7c-4b8a-9d0e-0a1b2c3d4e5f",
			ResourceVersion: "12345", Generation: 1, CreationTimestamp: metav1.Now(),
			Labels:      map[string]string{"app": "bench", "shard": "s1"},
			Annotations: map[string]string{"description": strings.Repeat("x", 740)},
			ManagedFields: []metav1.ManagedFieldsEntry{{
				Manager: "bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "batch/v1",
				Time: &metav1.Time{Time: time.Now()}, FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:description":{}},"f:labels":{".":{},"f:app":{},"f:shard":{}}},"f:spec":{"f:concurrencyPolicy":{},"f:failedJobsHistoryLimit":{},"f:jobTemplate":{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:command":{},"f:env":{".":{},"k:{\"name\":\"A\"}":{".":{},"f:name":{},"f:value":{}},"k:{\"name\":\"B\"}":{".":{},"f:name":{},"f:value":{}}},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}},"f:schedule":{},"f:successfulJobsHistoryLimit":{},"f:suspend":{}}}`)},
			}},
		},
		Spec: batchv1.CronJobSpec{
			Schedule: "*/5 * * * *", Suspend: &suspend, ConcurrencyPolicy: batchv1.AllowConcurrent,
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyOnFailure, DNSPolicy: corev1.DNSClusterFirst, SchedulerName: "default-scheduler",
				SecurityContext: &corev1.PodSecurityContext{},
				Containers: []corev1.Container{{
					Name: "main", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo hello from the benchmark"},
					Env:                    []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}},
					TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
					ImagePullPolicy: corev1.PullIfNotPresent,
				}},
			}}}},
		},
	}
}

// heapOf is the heap that decode's n results hold, measured by the
// runtime.
func heapOf(n int, decode func() any) int {
	held := make([]any, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range held {
		held[i] = decode()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(held)
	return int(after.HeapAlloc-before.HeapAlloc) / n
}

func TestMemSize_EstimatesWhatADecodedObjectHolds(t *testing.T) {
	pb, err := cronJob().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(cronJob())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		decode func() any
	}{
		{"typed, from protobuf", func() any {
			var cj batchv1.CronJob
			if err := cj.Unmarshal(pb); err != nil {
				t.Fatal(err)
			}
			return &cj
		}},
		{"unstructured, from JSON", func() any {
			var u map[string]any
			if err := json.Unmarshal(js, &u); err != nil {
				t.Fatal(err)
			}
			return u
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			measured := heapOf(2000, tt.decode)
			estimated := storage.MemSize(tt.decode())
			if ratio := float64(estimated) / float64(measured); ratio < 0.85 || ratio > 1.15 {
				t.Errorf("estimated %d bytes, the heap holds %d (%.2f of it); want within 15%%", estimated, measured, ratio)
			}
			t.Logf("estimated %d bytes, measured %d, stored %d (protobuf) / %d (JSON)", estimated, measured, len(pb), len(js))
		})
	}
}

func BenchmarkMemSize(b *testing.B) {
	cj := cronJob()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		storage.MemSize(cj)
	}
}
