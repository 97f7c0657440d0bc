package apiserver_test

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/codec"
)

var jobLabels = []string{"batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name", "controller-uid", "job-name"}

func jobCodec() interface {
	Encode(runtime.Object) ([]byte, error)
	Decode([]byte) (runtime.Object, error)
} {
	return codec.Protobuf(batchv1.SchemeGroupVersion.WithKind("Job"), func() runtime.Object { return &batchv1.Job{} })
}

// TestJobs_TemplateLabelsAreTheJobsWhenItHasNone creates Jobs whose
// template has no labels, as kubectl create job does with and without
// --from: kube stores them without metadata.labels and labels them with
// the template's generated labels whenever they are read, so that
// kubectl get jobs -l job-name=<name> finds them.
func TestJobs_TemplateLabelsAreTheJobsWhenItHasNone(t *testing.T) {
	ns := namespace(t)
	mustKubectl(t, "-n", ns, "create", "job", "plain", "--image=busybox")
	mustKubectl(t, "-n", ns, "create", "cronjob", "nightly", "--image=busybox", "--schedule=0 0 * * *")
	mustKubectl(t, "-n", ns, "create", "job", "manual", "--from=cronjob/nightly")
	for _, name := range []string{"plain", "manual"} {
		out := mustKubectl(t, "-n", ns, "get", "jobs", "-l", "job-name="+name, "-o", "name")
		if strings.TrimSpace(out) != "job.batch/"+name {
			t.Fatalf("kubectl get jobs -l job-name=%s: %q", name, out)
		}
		job, err := srv.Client.BatchV1().Jobs(ns).Get(ctx(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range jobLabels {
			if job.Labels[l] == "" || job.Labels[l] != job.Spec.Template.Labels[l] {
				t.Fatalf("%s: label %s: job %v, template %v", name, l, job.Labels, job.Spec.Template.Labels)
			}
		}
		// Stored as kube stores it: the labels are read-time defaults.
		resp, err := srv.EtcdClient().Get(ctx(t), "/registry/jobs/"+ns+"/"+name)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("reading etcd: %v", err)
		}
		stored, err := jobCodec().Decode(resp.Kvs[0].Value)
		if err != nil {
			t.Fatal(err)
		}
		if l := stored.(*batchv1.Job).Labels; len(l) != 0 {
			t.Fatalf("%s stored with labels %v; kube stores none", name, l)
		}
	}
}

// TestJobs_WrittenByKubeReadWithDefaults puts a Job into etcd as
// kube-apiserver stores it (no metadata.labels, defaults of a later
// release missing) and reads it through the API: the defaults are applied
// on the way out.
func TestJobs_WrittenByKubeReadWithDefaults(t *testing.T) {
	ns := namespace(t)
	job := &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "fromkube", Namespace: ns, UID: "0b6e7bc8-29d8-4f43-a97c-1b3b1a9c2b1d",
			CreationTimestamp: metav1.Now(), Generation: 1},
		Spec: batchv1.JobSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "0b6e7bc8-29d8-4f43-a97c-1b3b1a9c2b1d"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"batch.kubernetes.io/controller-uid": "0b6e7bc8-29d8-4f43-a97c-1b3b1a9c2b1d", "job-name": "fromkube"}},
				Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	data, err := jobCodec().Encode(job)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.EtcdClient().Put(ctx(t), "/registry/jobs/"+ns+"/fromkube", string(data)); err != nil {
		t.Fatal(err)
	}
	got, err := srv.Client.BatchV1().Jobs(ns).Get(ctx(t), "fromkube", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["job-name"] != "fromkube" || got.Spec.ManualSelector == nil || got.Spec.BackoffLimit == nil || *got.Spec.BackoffLimit != 6 {
		t.Fatalf("read without defaults: labels %v manualSelector %v backoffLimit %v", got.Labels, got.Spec.ManualSelector, got.Spec.BackoffLimit)
	}
	list, err := srv.Client.BatchV1().Jobs(ns).List(ctx(t), metav1.ListOptions{LabelSelector: "job-name=fromkube"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list by the defaulted label: %v %d", err, len(list.Items))
	}
}
