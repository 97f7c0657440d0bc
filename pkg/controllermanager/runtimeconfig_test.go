package controllermanager_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
	"github.com/cronplane/cronplane/pkg/controllermanager"
)

// runServing runs a controller-manager against kubeconfig with /healthz on
// a free port, and returns a function that reads /healthz?verbose.
func runServing(t *testing.T, kubeconfig string) (healthz func() string, stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	opts := controllermanager.DefaultOptions()
	opts.Kubeconfig = kubeconfig
	opts.LeaderElect = false
	opts.SecurePort = port
	opts.Clock = aheadClock{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := controllermanager.Run(ctx, opts); err != nil {
			t.Logf("controller-manager: %v", err)
		}
	}()
	stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	}
	t.Cleanup(stop)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	healthz = func() string {
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/healthz?verbose", port))
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	return healthz, stop
}

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
	healthz, stop := runServing(t, off.ControllerManagerKubeconfigPath)
	waitFor(t, "the other controllers to start", func() (bool, error) {
		h := healthz()
		return strings.Contains(h, "[+]namespace ok") && strings.Contains(h, "[+]garbagecollector ok"), nil
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
	healthz, _ = runServing(t, on.ControllerManagerKubeconfigPath)
	waitFor(t, "the cronjob controller to start and create a Job", func() (bool, error) {
		jobs, err := on.Client.BatchV1().Jobs("back").List(context.Background(), metav1.ListOptions{})
		return err == nil && len(jobs.Items) > 0 && strings.Contains(healthz(), "[+]cronjob ok"), nil
	})
}
