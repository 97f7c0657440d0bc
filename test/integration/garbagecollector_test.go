package integration

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cronplane/cronplane/pkg/controllermanager"
)

// startGC runs a controller-manager with only the garbage collector.
func startGC(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opts := controllermanager.DefaultOptions()
	// Each controller with its own account and RBAC role, as make run
	// runs them: the manager's own identity may not do their work.
	opts.UseServiceAccountCredentials = true
	opts.Kubeconfig = srv.ControllerManagerKubeconfigPath
	opts.SecurePort = -1
	opts.LeaderElect = false
	opts.Controllers = []string{"garbagecollector"}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := runControllerManager(ctx, opts); err != nil {
			t.Logf("controller-manager: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	})
}

// ownedJob creates a Job owned by the given owners.
func ownedJob(t *testing.T, ns, name string, finalizers []string, owners ...metav1.OwnerReference) *batchv1.Job {
	t.Helper()
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners, Finalizers: finalizers},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		}}},
	}
	out, err := srv.Client.BatchV1().Jobs(ns).Create(context.Background(), j, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func ownerRef(cj *batchv1.CronJob, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID, Controller: &block, BlockOwnerDeletion: &block}
}

func gone(t *testing.T, what string, get func() error) {
	t.Helper()
	waitFor(t, what+" to go", func() (bool, error) { return apierrors.IsNotFound(get()), nil })
}

func getJob(ns, name string) func() error {
	return func() error {
		_, err := srv.Client.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		return err
	}
}

func getCronJob(ns, name string) func() error {
	return func() error {
		_, err := srv.Client.BatchV1().CronJobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		return err
	}
}

func deleteCronJob(t *testing.T, ns, name string, policy *metav1.DeletionPropagation) {
	t.Helper()
	if err := srv.Client.BatchV1().CronJobs(ns).Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: policy}); err != nil {
		t.Fatal(err)
	}
}

func TestGarbageCollector_BackgroundDeletionCollectsDependents(t *testing.T) {
	ns := newNamespace(t, "gc-background")
	startGC(t)
	cj := createSuspendedCronJob(t, ns, "owner")
	ownedJob(t, ns, "child", nil, ownerRef(cj, true))
	deleteCronJob(t, ns, "owner", nil)
	gone(t, "the dependent Job", getJob(ns, "child"))
}

func TestGarbageCollector_OrphanKeepsDependentsWithoutTheReference(t *testing.T) {
	ns := newNamespace(t, "gc-orphan")
	startGC(t)
	cj := createSuspendedCronJob(t, ns, "owner")
	ownedJob(t, ns, "child", nil, ownerRef(cj, true))
	orphan := metav1.DeletePropagationOrphan
	deleteCronJob(t, ns, "owner", &orphan)
	gone(t, "the owner", getCronJob(ns, "owner"))
	j, err := srv.Client.BatchV1().Jobs(ns).Get(context.Background(), "child", metav1.GetOptions{})
	if err != nil || len(j.OwnerReferences) != 0 {
		t.Fatalf("want the Job kept without owner references: %v %+v", err, j)
	}
}

func TestGarbageCollector_ForegroundKeepsOwnerUntilBlockingDependentsAreGone(t *testing.T) {
	ns := newNamespace(t, "gc-foreground")
	startGC(t)
	cj := createSuspendedCronJob(t, ns, "owner")
	// A finalizer of its own holds the blocking dependent while it is
	// being deleted.
	ownedJob(t, ns, "blocking", []string{"example.com/hold"}, ownerRef(cj, true))
	ownedJob(t, ns, "free", nil, ownerRef(cj, false))
	foreground := metav1.DeletePropagationForeground
	deleteCronJob(t, ns, "owner", &foreground)
	gone(t, "the non-blocking dependent", getJob(ns, "free"))
	waitFor(t, "the blocking dependent to be deleted", func() (bool, error) {
		j, err := srv.Client.BatchV1().Jobs(ns).Get(context.Background(), "blocking", metav1.GetOptions{})
		return err == nil && j.DeletionTimestamp != nil, nil
	})
	time.Sleep(500 * time.Millisecond)
	owner, err := srv.Client.BatchV1().CronJobs(ns).Get(context.Background(), "owner", metav1.GetOptions{})
	if err != nil || owner.DeletionTimestamp == nil || !slices.Contains(owner.Finalizers, metav1.FinalizerDeleteDependents) {
		t.Fatalf("want the owner kept in foreground deletion while a blocking dependent exists: %v %+v", err, owner)
	}
	if _, err := srv.Client.BatchV1().Jobs(ns).Patch(context.Background(), "blocking", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	gone(t, "the blocking dependent", getJob(ns, "blocking"))
	gone(t, "the owner", getCronJob(ns, "owner"))
}

func TestGarbageCollector_DanglingReferences(t *testing.T) {
	ns := newNamespace(t, "gc-dangling")
	startGC(t)
	live := createSuspendedCronJob(t, ns, "live")
	missing := metav1.OwnerReference{APIVersion: "batch/v1", Kind: "CronJob", Name: "never", UID: types.UID("00000000-0000-0000-0000-000000000001")}
	ownedJob(t, ns, "orphaned", nil, missing)
	ownedJob(t, ns, "half", nil, missing, ownerRef(live, false))
	gone(t, "the Job whose only owner does not exist", getJob(ns, "orphaned"))
	waitFor(t, "the dangling reference to be dropped", func() (bool, error) {
		j, err := srv.Client.BatchV1().Jobs(ns).Get(context.Background(), "half", metav1.GetOptions{})
		return err == nil && len(j.OwnerReferences) == 1 && j.OwnerReferences[0].UID == live.UID, nil
	})
}

func TestGarbageCollector_JobDeletedWithoutPolicyIsOrphanedThenRemoved(t *testing.T) {
	ns := newNamespace(t, "gc-job-default")
	startGC(t)
	ownedJob(t, ns, "plain", nil)
	if err := srv.Client.BatchV1().Jobs(ns).Delete(context.Background(), "plain", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone(t, "the Job (its orphan finalizer removed)", getJob(ns, "plain"))
}

func createSuspendedCronJob(t *testing.T, ns, name string) *batchv1.CronJob {
	t.Helper()
	cj := createCronJob(t, ns, name)
	suspend := true
	cj.Spec.Suspend = &suspend
	out, err := srv.Client.BatchV1().CronJobs(ns).Update(context.Background(), cj, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// kubectl delete --cascade sends the propagation policies; with
// --cascade=foreground and the default --wait it returns once the owner,
// which waits for its dependents, is gone.
func TestGarbageCollector_KubectlCascade(t *testing.T) {
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	kubectl := func(args ...string) string {
		t.Helper()
		c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, err := exec.CommandContext(c, path, append([]string{"--kubeconfig", srv.KubeconfigPath}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	ns := newNamespace(t, "gc-kubectl")
	startGC(t)
	for _, cascade := range []string{"orphan", "foreground", "background"} {
		cj := createSuspendedCronJob(t, ns, "cj-"+cascade)
		ownedJob(t, ns, "job-"+cascade, nil, ownerRef(cj, true))
		kubectl("-n", ns, "delete", "cronjob", cj.Name, "--cascade="+cascade)
		if cascade == "foreground" {
			// kubectl waited for the owner, so the blocking dependent is gone.
			if err := getJob(ns, "job-foreground")(); !apierrors.IsNotFound(err) {
				t.Fatalf("foreground: dependent still there: %v", err)
			}
		}
	}
	if out := kubectl("-n", ns, "get", "jobs", "-o", "name"); strings.TrimSpace(out) != "job.batch/job-orphan" {
		gone(t, "the background dependent", getJob(ns, "job-background"))
	}
	j, err := srv.Client.BatchV1().Jobs(ns).Get(context.Background(), "job-orphan", metav1.GetOptions{})
	if err != nil || len(j.OwnerReferences) != 0 {
		t.Fatalf("orphaned Job: %v %+v", err, j)
	}
}

// Three pods owning each other in a circle, each reference blocking, and
// one deleted in the foreground (the upstream Conformance spec "should not
// be blocked by dependency circle"): every owner waits for its dependent,
// which is itself waiting, until the collector makes one stop blocking.
// All three go.
func TestGarbageCollector_OwnerCircleInForegroundDeletionIsCollected(t *testing.T) {
	ns := newNamespace(t, "gc-circle")
	ctx := context.Background()
	podClient := srv.Client.CoreV1().Pods(ns)
	// The service account controller does not run here.
	if _, err := srv.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var circle []*corev1.Pod
	for _, name := range []string{"pod1", "pod2", "pod3"} {
		p, err := podClient.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		circle = append(circle, p)
	}
	for i, p := range circle {
		owner := circle[(i+2)%3]
		patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":%q,"uid":%q,"controller":true,"blockOwnerDeletion":true}]}}`, owner.Name, owner.UID)
		if _, err := podClient.Patch(ctx, p.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	startGC(t)
	foreground := metav1.DeletePropagationForeground
	if err := podClient.Delete(ctx, "pod1", metav1.DeleteOptions{PropagationPolicy: &foreground, Preconditions: metav1.NewUIDPreconditions(string(circle[0].UID))}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every pod of the circle to go", func() (bool, error) {
		l, err := podClient.List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0, err
	})
}
