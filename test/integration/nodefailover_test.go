package integration

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/cronplane/cronplane/pkg/controllermanager"
	"github.com/cronplane/cronplane/test/fakenode"
)

// runFailoverManager runs the controllers a node failure involves, the
// node lifecycle controller judging a node silent after 3 s.
func runFailoverManager(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opts := controllermanager.DefaultOptions()
	opts.UseServiceAccountCredentials = true
	opts.Kubeconfig = srv.ControllerManagerKubeconfigPath
	opts.SecurePort = -1
	opts.LeaderElect = false
	opts.Controllers = []string{"node-lifecycle-controller", "job-controller", "pod-garbage-collector-controller", "scheduler", "serviceaccount-controller"}
	opts.NodeMonitorPeriod, opts.NodeMonitorGracePeriod, opts.NodeStartupGracePeriod = 500*time.Millisecond, 3*time.Second, 10*time.Second
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

// runStoppableNode runs a fake node with a 2 s Lease, tainted so that only
// the test's pods land on it; stop ends it as a killed kubelet: no more
// heartbeats, no more status, the Node and its pods left as they are.
func runStoppableNode(t *testing.T, taint string, runner fakenode.Runner) (n *fakenode.Node, stop func()) {
	t.Helper()
	cfg := fakenode.DefaultConfig("failover-" + rand.String(5))
	cfg.Runner, cfg.Dir = runner, t.TempDir()
	cfg.LeaseDuration, cfg.StatusUpdate = 2*time.Second, time.Second
	cfg.Taints = []corev1.Taint{{Key: taint, Effect: corev1.TaintEffectNoSchedule}}
	n = fakenode.New(srv.Client, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := n.Run(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("fake node: %v", err)
		}
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(func() {
		stop()
		_ = srv.Client.CoreV1().Nodes().Delete(context.Background(), n.Name(), metav1.DeleteOptions{})
		_ = srv.Client.CoordinationV1().Leases(fakenode.LeaseNamespace).Delete(context.Background(), n.Name(), metav1.DeleteOptions{})
	})
	select {
	case <-n.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("the fake node did not register")
	}
	return n, stop
}

func nodeCondition(t *testing.T, name string, typ corev1.NodeConditionType) (*corev1.Node, corev1.ConditionStatus) {
	t.Helper()
	node, err := srv.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range node.Status.Conditions {
		if c.Type == typ {
			return node, c.Status
		}
	}
	return node, ""
}

func schedulable(t *testing.T, name string) bool {
	t.Helper()
	node, ready := nodeCondition(t, name, corev1.NodeReady)
	return ready == corev1.ConditionTrue && !hasTaint(node, "node.kubernetes.io/not-ready", corev1.TaintEffectNoSchedule)
}

// A node whose agent goes silent turns Unknown and tainted unreachable;
// its Job pod, tolerating that for 2 s, is marked for deletion and
// replaced by the Job controller on the other node, where the Job
// completes; once the silent node is declared out of service, the pod
// garbage collector removes the pod it left terminating.
func TestNodeFailover_JobPodOfASilentNodeIsReplacedOnAnotherNode(t *testing.T) {
	ns := newNamespace(t, "failover")
	taint := "cronplane.test/" + ns
	runFailoverManager(t)
	ctx := context.Background()

	first, stopFirst := runStoppableNode(t, taint, fakenode.Fixed{Duration: -1})
	waitFor(t, "the first node schedulable", func() (bool, error) { return schedulable(t, first.Name()), nil })
	waitFor(t, "the default ServiceAccount", func() (bool, error) {
		_, err := getAccount(ns, "default")
		return err == nil, nil
	})
	spec := corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
		Tolerations: []corev1.Toleration{
			{Key: taint, Operator: corev1.TolerationOpExists},
			{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(2))},
			{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(2))},
		},
	}
	if _, err := srv.Client.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "survives"},
		// The pod deleted with its node counts as a failure, as on kube.
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To(int32(1)), Template: corev1.PodTemplateSpec{Spec: spec}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var lost corev1.Pod
	waitLong(t, "the Job's pod running on the first node", 30*time.Second, func() (bool, error) {
		pods := podsOf(t, ns)
		if len(pods) == 1 && pods[0].Spec.NodeName == first.Name() && pods[0].Status.Phase == corev1.PodRunning {
			lost = pods[0]
			return true, nil
		}
		return false, nil
	})

	// The second node takes a pod from now on (a runner that completes).
	second, _ := runStoppableNode(t, taint, fakenode.Fixed{Duration: 200 * time.Millisecond})
	waitFor(t, "the second node schedulable", func() (bool, error) { return schedulable(t, second.Name()), nil })
	stopFirst()
	stopped := time.Now()

	waitLong(t, "the silent node Unknown and tainted unreachable", 20*time.Second, func() (bool, error) {
		node, ready := nodeCondition(t, first.Name(), corev1.NodeReady)
		return ready == corev1.ConditionUnknown && hasTaint(node, "node.kubernetes.io/unreachable", corev1.TaintEffectNoExecute) &&
			hasTaint(node, "node.kubernetes.io/unreachable", corev1.TaintEffectNoSchedule), nil
	})
	unknownAfter := time.Since(stopped)
	waitLong(t, "the lost pod marked for deletion", 20*time.Second, func() (bool, error) {
		p := getPod(t, ns, lost.Name)
		return p.DeletionTimestamp != nil, nil
	})
	markedAfter := time.Since(stopped)
	p := getPod(t, ns, lost.Name)
	disrupted := false
	for _, c := range p.Status.Conditions {
		disrupted = disrupted || c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue
	}
	// Nobody confirms the deletion: the node's agent is down.
	if !disrupted || p.Status.Phase != corev1.PodRunning {
		t.Fatalf("lost pod's status %+v", p.Status)
	}
	// The replacement comes after the Job's 10 s backoff for a failure.
	waitLong(t, "the Job Complete on the second node", 60*time.Second, func() (bool, error) {
		if jobCondition(t, ns, "survives", batchv1.JobFailed) != nil {
			job, _ := srv.Client.BatchV1().Jobs(ns).Get(ctx, "survives", metav1.GetOptions{})
			t.Fatalf("the Job failed: %+v", job.Status)
		}
		return jobCondition(t, ns, "survives", batchv1.JobComplete) != nil, nil
	})
	completeAfter := time.Since(stopped)
	var replacement *corev1.Pod
	for _, p := range podsOf(t, ns) {
		if p.UID != lost.UID {
			replacement = &p
		}
	}
	if replacement == nil || replacement.Spec.NodeName != second.Name() || replacement.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("replacement %+v", replacement)
	}
	t.Logf("after the node stopped: Unknown in %s, its pod marked for deletion in %s, the Job Complete in %s",
		unknownAfter.Round(100*time.Millisecond), markedAfter.Round(100*time.Millisecond), completeAfter.Round(100*time.Millisecond))

	// The pod stays terminating until the node is declared out of
	// service; then the pod garbage collector removes it (every 20 s).
	node, err := srv.Client.CoreV1().Nodes().Get(ctx, first.Name(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: "node.kubernetes.io/out-of-service", Effect: corev1.TaintEffectNoExecute})
	if _, err := srv.Client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLong(t, "the lost pod removed", 45*time.Second, func() (bool, error) {
		_, err := srv.Client.CoreV1().Pods(ns).Get(ctx, lost.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
