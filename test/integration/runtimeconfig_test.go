package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
)

// kube's behaviour: the controller-manager reads discovery at start, so a
// controller whose group is off stays off until it is restarted after the
// apiserver serves the group again.
func TestRuntimeConfig_CronJobControllerFollowsServedBatchAcrossRestarts(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	withData := func(o *apiserver.Options) { o.DataDir = dataDir }

	off, err := apiservertest.New(withData, func(o *apiserver.Options) { o.RuntimeConfig = map[string]string{"batch/v1": "false"} })
	if err != nil {
		t.Fatal(err)
	}
	get, stop := runServing(t, off.ControllerManagerKubeconfigPath)
	healthz := func() string { _, body := get("/healthz?verbose", ""); return body }
	waitFor(t, "the other controllers to start", func() (bool, error) {
		h := healthz()
		return strings.Contains(h, "[+]namespace-controller ok") && strings.Contains(h, "[+]garbage-collector-controller ok"), nil
	})
	if h := healthz(); strings.Contains(h, "cronjob") {
		t.Fatalf("cronjob controller running without batch/v1:\n%s", h)
	}
	stop()
	off.Stop()

	on, err := apiservertest.New(withData)
	if err != nil {
		t.Fatal(err)
	}
	defer on.Stop()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "back"}}
	if _, err := on.Client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "every-minute"},
		Spec: batchv1.CronJobSpec{Schedule: "* * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		}}}}},
	}
	if _, err := on.Client.BatchV1().CronJobs("back").Create(context.Background(), cj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	get, _ = runServing(t, on.ControllerManagerKubeconfigPath)
	waitFor(t, "the cronjob controller to start and create a Job", func() (bool, error) {
		jobs, err := on.Client.BatchV1().Jobs("back").List(context.Background(), metav1.ListOptions{})
		return err == nil && len(jobs.Items) > 0 && strings.Contains(healthz(), "[+]cronjob-controller ok"), nil
	})
}
