package apiserver_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
)

// TestJobs_ShareEtcdWithKubeAPIServer writes Jobs whose template has no
// labels through kube-apiserver and through cronplane, moves the stored
// bytes to the other server's keys on one etcd, and reads each Job
// through both: kube stores such a Job without metadata.labels and
// defaults them from the template on every read, and so must cronplane,
// in both directions, so that the two answers are the same object.
func TestJobs_ShareEtcdWithKubeAPIServer(t *testing.T) {
	cfg, err := clientcmd.BuildConfigFromFlags("", referenceKubeconfig())
	if err != nil {
		t.Skipf("no reference kube-apiserver: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	kube := kubernetes.NewForConfigOrDie(cfg)
	if _, err := kube.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Skipf("reference kube-apiserver not reachable: %v", err)
	}
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{referenceEtcd()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Skipf("reference etcd: %v", err)
	}
	t.Cleanup(func() { _ = etcd.Close() })
	if _, err := etcd.Get(ctx, referenceEtcdPrefix+"/namespaces/default"); err != nil {
		t.Skipf("reference etcd not reachable: %v", err)
	}
	suffix := randomSuffix()
	prefix := "/cronplane-reference-test-" + suffix
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		if _, err := etcd.Delete(cctx, prefix+"/", clientv3.WithPrefix()); err != nil {
			t.Logf("removing %s: %v", prefix, err)
		}
	})
	s := apiservertest.Start(t, func(o *apiserver.Options) {
		o.EtcdServers = []string{referenceEtcd()}
		o.EtcdPrefix = prefix
		o.CompactionInterval = 0
	})
	cron := kubernetes.NewForConfigOrDie(s.Config)

	// A Job as kubectl create job --image writes it: no labels anywhere.
	job := func(name string) *batchv1.Job {
		return &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
			}}},
		}
	}
	moveKey := func(from, to, name string) {
		t.Helper()
		key := "/jobs/default/" + name
		got, err := etcd.Get(ctx, from+key)
		if err != nil || len(got.Kvs) != 1 {
			t.Fatalf("reading %s%s: %v", from, key, err)
		}
		if _, err := etcd.Put(ctx, to+key, string(got.Kvs[0].Value)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, writerName string
		writer           kubernetes.Interface
		fromKey, toKey   string
	}{
		{"kube-" + suffix, "kube-apiserver", kube, referenceEtcdPrefix, prefix},
		{"cron-" + suffix, "cronplane", cron, prefix, referenceEtcdPrefix},
	} {
		t.Run("written by "+tc.writerName, func(t *testing.T) {
			if _, err := tc.writer.BatchV1().Jobs("default").Create(ctx, job(tc.name), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			// The Job controller of neither reference runs; the Job
			// stays as written until the test removes it.
			t.Cleanup(func() {
				_ = kube.BatchV1().Jobs("default").Delete(context.Background(), tc.name, metav1.DeleteOptions{})
			})
			moveKey(tc.fromKey, tc.toKey, tc.name)
			fromKube, err := kube.BatchV1().Jobs("default").Get(ctx, tc.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			fromCron, err := cron.BatchV1().Jobs("default").Get(ctx, tc.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if fromCron.Labels["job-name"] != tc.name || fromCron.Spec.Template.Labels["job-name"] != tc.name {
				t.Errorf("cronplane reads labels %v, template labels %v", fromCron.Labels, fromCron.Spec.Template.Labels)
			}
			// The two keys were written at different revisions.
			fromKube.ResourceVersion, fromCron.ResourceVersion = "", ""
			if !reflect.DeepEqual(fromKube, fromCron) {
				k, _ := json.MarshalIndent(fromKube, "", " ")
				c, _ := json.MarshalIndent(fromCron, "", " ")
				t.Fatalf("the same stored Job reads differently\nkube-apiserver %s\ncronplane %s", k, c)
			}
			list, err := cron.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + tc.name})
			if err != nil || len(list.Items) != 1 {
				t.Fatalf("cronplane lists by the defaulted label: %v, %d items", err, len(list.Items))
			}
		})
	}
}
