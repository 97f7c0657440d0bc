package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
	"github.com/cronplane/cronplane/pkg/controller/cronjob"
	"github.com/cronplane/cronplane/pkg/controllermanager"
	"github.com/cronplane/cronplane/pkg/etcdserver/etcdtest"
)

var srv *apiservertest.Server

func TestMain(m *testing.M) {
	etcdtest.Main(m, func() (func(), error) {
		var err error
		srv, err = apiservertest.New()
		return func() { srv.Stop() }, err
	})
}

// runControllerManager runs a controller-manager as the command does:
// options completed, manager wired, then run until ctx ends.
func runControllerManager(ctx context.Context, opts controllermanager.Options) error {
	c, err := opts.Complete()
	if err != nil {
		return err
	}
	m, err := controllermanager.New(c)
	if err != nil {
		return err
	}
	return m.Run(ctx)
}

// aheadClock runs a minute and a bit ahead, so that a CronJob created now
// on "* * * * *" is due at once.
type aheadClock struct{}

func (aheadClock) Now() time.Time { return time.Now().Add(61 * time.Second) }

func (c aheadClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func start(t *testing.T, id string, leaderElect bool) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opts := controllermanager.DefaultOptions()
	// Each controller with its own account and RBAC role, as make run
	// runs them: the manager's own identity may not do their work.
	opts.UseServiceAccountCredentials = true
	opts.Kubeconfig = srv.ControllerManagerKubeconfigPath
	opts.SecurePort = 0
	opts.LeaderElect = leaderElect
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = 3*time.Second, 2*time.Second, 500*time.Millisecond
	opts.Identity = id
	opts.Clock = aheadClock{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := runControllerManager(ctx, opts); err != nil {
			t.Logf("controller-manager %s: %v", id, err)
		}
	}()
	stop := func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	}
	t.Cleanup(stop)
	return stop
}

// newNamespace creates a namespace named after base, with a random suffix
// that keeps repeated runs apart, and returns its name.
func newNamespace(t *testing.T, base string) string {
	t.Helper()
	name := base + "-" + rand.String(5)
	if _, err := srv.Client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

func createCronJob(t *testing.T, ns, name string) *batchv1.CronJob {
	t.Helper()
	return createCronJobWith(t, srv.Client, ns, name)
}

// createCronJobWith creates, through client, a CronJob due every minute.
func createCronJobWith(t *testing.T, client kubernetes.Interface, ns, name string) *batchv1.CronJob {
	t.Helper()
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}, Annotations: map[string]string{"note": "kept"}},
		Spec: batchv1.CronJobSpec{
			Schedule: "* * * * *",
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"from": name}},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
				}}},
			},
		},
	}
	out, err := client.BatchV1().CronJobs(ns).Create(context.Background(), cj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) { return cond() })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func jobsOf(t *testing.T, ns string) []batchv1.Job {
	t.Helper()
	list, err := srv.Client.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func TestCronJobController_CreatesJobAndTracksItsCompletion(t *testing.T) {
	ns := newNamespace(t, "cronjob-e2e")
	start(t, "solo", false)
	cj := createCronJob(t, ns, "tick")
	waitFor(t, "a Job", func() (bool, error) { return len(jobsOf(t, ns)) == 1, nil })
	job := jobsOf(t, ns)[0]
	if !strings.HasPrefix(job.Name, "tick-") || job.Labels["from"] != "tick" || job.Annotations[cronjob.ScheduledTimestampAnnotation] == "" {
		t.Fatalf("job %+v", job.ObjectMeta)
	}
	if ref := metav1.GetControllerOf(&job); ref == nil || ref.UID != cj.UID || !*ref.BlockOwnerDeletion {
		t.Fatalf("owner %+v", job.OwnerReferences)
	}
	// Written as kube's controller-manager writes it: its User-Agent
	// makes the field manager.
	if mf := jobEntries(job.ManagedFields); len(mf) != 1 || mf[0].Manager != "kube-controller-manager" || mf[0].Operation != metav1.ManagedFieldsOperationUpdate {
		t.Fatalf("job managedFields %+v", mf)
	}
	waitFor(t, "status.active", func() (bool, error) {
		got, err := srv.Client.BatchV1().CronJobs(ns).Get(context.Background(), "tick", metav1.GetOptions{})
		return err == nil && len(got.Status.Active) == 1 && got.Status.LastScheduleTime != nil, err
	})
	// The controller caches CronJobs without their own labels and
	// annotations; its status writes must not lose them.
	if got, err := srv.Client.BatchV1().CronJobs(ns).Get(context.Background(), "tick", metav1.GetOptions{}); err != nil || got.Labels["app"] != "tick" || got.Annotations["note"] != "kept" {
		t.Fatalf("CronJob metadata after status writes: %v %+v", err, got.ObjectMeta)
	}
	waitFor(t, "a SuccessfulCreate event", func() (bool, error) {
		evs, err := srv.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=SuccessfulCreate"})
		return err == nil && len(evs.Items) > 0, err
	})

	// The Job controller runs the Job's pod; its success completes the
	// Job.
	waitFor(t, "the Job's pod", func() (bool, error) { return len(podsOf(t, ns)) == 1, nil })
	succeed(t, podsOf(t, ns)[0])
	waitFor(t, "the completed Job to leave status.active", func() (bool, error) {
		got, err := srv.Client.BatchV1().CronJobs(ns).Get(context.Background(), "tick", metav1.GetOptions{})
		return err == nil && len(got.Status.Active) == 0 && got.Status.LastSuccessfulTime != nil, err
	})
}

func TestLeaderElection_OnlyTheLeaderRunsAndTheOtherTakesOver(t *testing.T) {
	ns := newNamespace(t, "leader-e2e")
	stopA := start(t, "cm-a", true)
	waitFor(t, "cm-a to lead", func() (bool, error) {
		l, err := srv.Client.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-controller-manager", metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "cm-a", nil
	})
	start(t, "cm-b", true)
	createCronJob(t, ns, "first")
	waitFor(t, "the leader's Job", func() (bool, error) { return len(jobsOf(t, ns)) == 1, nil })

	stopA()
	begin := time.Now()
	waitFor(t, "cm-b to take over", func() (bool, error) {
		l, err := srv.Client.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-controller-manager", metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "cm-b", nil
	})
	if took := time.Since(begin); took > 3*time.Second+2*time.Second {
		t.Fatalf("takeover took %s, longer than the lease duration", took)
	}
	createCronJob(t, ns, "second")
	waitFor(t, "the new leader's Job", func() (bool, error) { return len(jobsOf(t, ns)) == 2, nil })
	seen := map[string]bool{}
	for _, j := range jobsOf(t, ns) {
		key := j.Annotations[cronjob.ScheduledTimestampAnnotation] + "/" + metav1.GetControllerOf(&j).Name
		if seen[key] {
			t.Fatalf("two Jobs for %s", key)
		}
		seen[key] = true
	}
}

func TestNamespaceController_EmptiesAndRemovesATerminatingNamespace(t *testing.T) {
	ns := newNamespace(t, "doomed")
	start(t, "ns-solo", false)
	createCronJob(t, ns, "victim")
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}}
	if _, err := srv.Client.CoordinationV1().Leases(ns).Create(context.Background(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the namespace to go", func() (bool, error) {
		_, err := srv.Client.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if cjs, _ := srv.Client.BatchV1().CronJobs(ns).List(context.Background(), metav1.ListOptions{}); len(cjs.Items) != 0 {
		t.Fatalf("%d CronJobs left", len(cjs.Items))
	}
}

func TestHealthAndMetrics_ServedOverHTTPS(t *testing.T) {
	get, _ := runServing(t, srv.ControllerManagerKubeconfigPath, "namespace")
	waitFor(t, "/healthz", func() (bool, error) {
		code, body := get("/healthz", "")
		return code == 200 && body == "ok", nil
	})
	// A controller's check is for those the apiserver allows to get it.
	waitFor(t, "the namespace controller's check", func() (bool, error) {
		code, body := get("/healthz/namespace-controller", srv.AdminToken)
		return code == 200 && body == "ok", nil
	})
	if code, _ := get("/healthz/cronjob-controller", srv.AdminToken); code != 404 {
		t.Fatalf("/healthz/cronjob-controller of a controller not started: %d", code)
	}
	for _, path := range []string{"/healthz/namespace-controller", "/healthz/cronjob-controller"} {
		if code, body := get(path, ""); code != 403 || !strings.Contains(body, `cannot get path \"`+path+`\"`) {
			t.Errorf("%s anonymously: %d %.200s, want 403", path, code, body)
		}
	}
	// /metrics is for those the apiserver allows to get it, as kube's.
	if code, body := get("/metrics", srv.AdminToken); code != 200 || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics: %d %.200s", code, body)
	}
	for token, code := range map[string]int{"": 403, "not-a-token": 401} {
		if got, body := get("/metrics", token); got != code || !strings.Contains(body, `"kind":"Status"`) {
			t.Errorf("/metrics with token %q: %d %.200s, want %d", token, got, body, code)
		}
	}
}

// runServing runs a controller-manager against kubeconfig, without leader
// election, with /healthz and /metrics on a free port; get reads a path
// there, with a bearer token unless it is empty.
func runServing(t *testing.T, kubeconfig string, controllers ...string) (get func(path, token string) (int, string), stop func()) {
	t.Helper()
	return runServingWith(t, kubeconfig, func(opts *controllermanager.Options) {
		if len(controllers) > 0 {
			opts.Controllers = controllers
		}
	})
}

// runServingWith is runServing with the options configure sets.
func runServingWith(t *testing.T, kubeconfig string, configure func(*controllermanager.Options)) (get func(path, token string) (int, string), stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	opts := controllermanager.DefaultOptions()
	// Each controller with its own account and RBAC role, as make run
	// runs them: the manager's own identity may not do their work.
	opts.UseServiceAccountCredentials = true
	opts.Kubeconfig = kubeconfig
	opts.LeaderElect = false
	opts.SecurePort = port
	opts.Clock = aheadClock{}
	configure(&opts)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := runControllerManager(ctx, opts); err != nil {
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
	get = func(path, token string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", port, path), nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, ""
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	return get, stop
}
