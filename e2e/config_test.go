//go:build e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func kubectl(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// rollout runs hack/rollout.sh with a runtime-config while a prober asks
// both apiservers for /readyz every 200 ms, and fails the test if there
// was a moment when neither answered: the API must stay available
// throughout. It returns how long the rollout took.
func rollout(t *testing.T, runtimeConfig string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	probes, stop := make(chan availability, 1), make(chan struct{})
	clients := [2]readyzClient{newReadyzClient(t, "apiserver-0"), newReadyzClient(t, "apiserver-1")}
	go func() { probes <- probeAvailability(clients, stop) }()
	cmd := exec.CommandContext(ctx, "hack/rollout.sh")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "RUNTIME_CONFIG="+runtimeConfig)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	close(stop)
	a := <-probes
	if err != nil {
		t.Fatalf("rollout %s: %v\n%s", runtimeConfig, err, out)
	}
	t.Logf("during the rollout to %s: %d probe rounds, apiserver-0 unready in %d, apiserver-1 in %d, both in %d",
		runtimeConfig, a.rounds, a.down[0], a.down[1], a.bothDown)
	if a.bothDown > 0 {
		t.Fatalf("the API was unavailable during the rollout: neither apiserver ready in %d of %d probe rounds", a.bothDown, a.rounds)
	}
	if a.down[0] == 0 || a.down[1] == 0 {
		t.Fatalf("the probes never saw an apiserver restart (%v): the rollout did not restart each", a.down)
	}
	return took
}

type availability struct {
	rounds, bothDown int
	down             [2]int
}

// readyzClient asks one apiserver for /readyz, in process: a kubectl per
// probe would load the two cores the cluster runs on.
type readyzClient struct{ rest.Interface }

func newReadyzClient(t *testing.T, contextName string) readyzClient {
	t.Helper()
	cfg := restConfig(t, contextName)
	cfg.Timeout = 2 * time.Second
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return readyzClient{c.Discovery().RESTClient()}
}

func (c readyzClient) ready() bool {
	return c.Get().AbsPath("/readyz").Do(context.Background()).Error() == nil
}

// probeAvailability asks both apiservers for /readyz, at once, every 200
// ms until stop is closed.
func probeAvailability(clients [2]readyzClient, stop <-chan struct{}) availability {
	var a availability
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return a
		case <-tick.C:
		}
		var ready [2]chan bool
		for i := range ready {
			ready[i] = make(chan bool, 1)
			go func(i int) { ready[i] <- clients[i].ready() }(i)
		}
		up0, up1 := <-ready[0], <-ready[1]
		a.rounds++
		if !up0 {
			a.down[0]++
		}
		if !up1 {
			a.down[1]++
		}
		if !up0 && !up1 {
			a.bothDown++
		}
	}
}

func TestRuntimeConfig_RollingBatchOffAndOnKeepsTheObjects(t *testing.T) {
	logsOnFailure(t)
	t.Cleanup(func() { os.Setenv("RUNTIME_CONFIG", "api/all=true") })
	ctx := context.Background()
	c0 := client(t, "apiserver-0")
	namespace(t, c0, "e2e-runtime")
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "kept"},
		Spec: batchv1.CronJobSpec{Schedule: "0 0 1 1 *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}}}},
	}
	created, err := c0.BatchV1().CronJobs("e2e-runtime").Create(ctx, cj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	took := rollout(t, "api/all=true,batch/v1=false")
	t.Logf("rollout turning batch/v1 off took %v", took.Round(time.Millisecond))
	for _, name := range []string{"apiserver-0", "apiserver-1"} {
		_, err := client(t, name).BatchV1().CronJobs("e2e-runtime").Get(ctx, "kept", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("%s with batch/v1 off: %v, want 404", name, err)
		}
	}
	eventually(t, 60*time.Second, "the cronjob controller reporting itself disabled", func() bool {
		for _, cm := range []string{"controller-manager-0", "controller-manager-1"} {
			ids, err := serviceContainers(cm)
			if err != nil {
				continue
			}
			out, _ := execOut(ctx, "docker", "logs", "--tail=200", ids[0])
			if strings.Contains(out, "Controller is disabled") && strings.Contains(out, "cronjob") {
				return true
			}
		}
		return false
	})

	took = rollout(t, "api/all=true")
	t.Logf("rollout turning batch/v1 back on took %v", took.Round(time.Millisecond))
	for _, name := range []string{"apiserver-0", "apiserver-1"} {
		got, err := client(t, name).BatchV1().CronJobs("e2e-runtime").Get(ctx, "kept", metav1.GetOptions{})
		if err != nil || got.UID != created.UID {
			t.Fatalf("%s with batch/v1 on again: %v %v, want uid %s", name, got, err, created.UID)
		}
	}
	t.Logf("batch/v1 back on: the CronJob is there with its uid %s on both apiservers", created.UID)

	// The restarted controller-managers run the cronjob controller again:
	// on a schedule of every minute it makes a Job.
	if _, err := c0.BatchV1().CronJobs("e2e-runtime").Patch(ctx, "kept", types.MergePatchType, []byte(`{"spec":{"schedule":"*/1 * * * *"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	took = eventually(t, 100*time.Second, "a Job of the CronJob after batch/v1 came back", func() bool {
		jobs, err := c0.BatchV1().Jobs("e2e-runtime").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, j := range jobs.Items {
			if ref := metav1.GetControllerOf(&j); ref != nil && ref.UID == created.UID {
				return true
			}
		}
		return false
	})
	t.Logf("batch/v1 back on: the cronjob controller made a Job %v after the schedule changed to every minute", took.Round(time.Millisecond))
}

func TestNetwork_ApiserverCutFromEtcdFailsClearlyWhileTheOtherServes(t *testing.T) {
	logsOnFailure(t)
	ctx := context.Background()
	id := container(t, "apiserver-0")
	network := strings.TrimSpace(docker(t, "inspect", "-f", `{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}`, id))
	var etcdNet string
	for _, n := range strings.Fields(network) {
		if strings.HasSuffix(n, "_etcd") {
			etcdNet = n
		}
	}
	if etcdNet == "" {
		t.Fatalf("apiserver-0 is on %q, no etcd network", network)
	}
	docker(t, "network", "disconnect", etcdNet, id)
	cut := time.Now()
	connected := false
	t.Cleanup(func() {
		if !connected {
			docker(t, "network", "connect", etcdNet, id)
		}
	})
	took := eventually(t, 60*time.Second, "apiserver-0's /readyz failing", func() bool {
		ok, _ := readyz("apiserver-0")
		return !ok
	})
	t.Logf("cut from etcd: apiserver-0's /readyz failed after %v", took.Round(time.Millisecond))
	start := time.Now()
	_, err := client(t, "apiserver-0").CoreV1().ConfigMaps("default").Create(ctx, configMap("cut", "x"), metav1.CreateOptions{})
	if _, ok := err.(apierrors.APIStatus); !ok {
		t.Fatalf("a write through the cut apiserver: %T %v, want a Status", err, err)
	}
	t.Logf("cut from etcd: a write through apiserver-0 failed after %v with %q", time.Since(start).Round(time.Millisecond), err)
	if _, err := client(t, "apiserver-1").CoreV1().ConfigMaps("default").Create(ctx, configMap("served", "x"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("apiserver-1 while apiserver-0 is cut: %v", err)
	}

	docker(t, "network", "connect", etcdNet, id)
	connected = true
	t.Logf("cut lasted %v", time.Since(cut).Round(time.Millisecond))
	took = eventually(t, 90*time.Second, "apiserver-0 healing", func() bool {
		ok, _ := readyz("apiserver-0")
		return ok
	})
	if _, err := client(t, "apiserver-0").CoreV1().ConfigMaps("default").Get(ctx, "served", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("reconnected: apiserver-0 ready and serving again after %v", took.Round(time.Millisecond))
}
