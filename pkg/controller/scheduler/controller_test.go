package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// newTestController starts informers over a fake clientset holding objs
// and returns the controller, with its syncs left to the test.
func newTestController(t *testing.T, objs ...runtime.Object) (*Controller, *fake.Clientset, *record.FakeRecorder) {
	t.Helper()
	client := fake.NewSimpleClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	recorder := record.NewFakeRecorder(10)
	c := New(client, factory.Core().V1().Pods(), factory.Core().V1().Nodes(), recorder)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		t.Fatal("informers did not sync")
	}
	return c, client, recorder
}

// syncBound runs one sync and waits for the binding it started.
func syncBound(ctx context.Context, c *Controller, key string) (time.Duration, error) {
	d, err := c.sync(ctx, key)
	c.binding.Wait()
	return d, err
}

func pendingPod(name string, requests corev1.ResourceList) *corev1.Pod {
	p := podWith(requests)
	p.Name = name
	p.UID = types.UID("uid-" + name)
	p.Spec.SchedulerName = Name
	return p
}

func bindings(client *fake.Clientset) map[string]string {
	out := map[string]string{}
	for _, a := range client.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetSubresource() == "binding" {
			b := c.GetObject().(*corev1.Binding)
			out[b.Name] = b.Target.Name
		}
	}
	return out
}

func events(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestSync_BindsToTheLeastAllocatedNodeThatFits(t *testing.T) {
	small := readyNode("a-small", resources("cpu", "1", "memory", "2Gi", "pods", "110"))
	large := readyNode("b-large", resources("cpu", "8", "memory", "16Gi", "pods", "110"))
	c, client, recorder := newTestController(t, small, large, pendingPod("p", resources("cpu", "500m", "memory", "512Mi")))
	after, err := syncBound(context.Background(), c, "ns/p")
	if err != nil || after != 0 {
		t.Fatalf("sync = %v, %v", after, err)
	}
	if got := bindings(client); len(got) != 1 || got["p"] != "b-large" {
		t.Fatalf("bindings %v, want p on b-large", got)
	}
	if got := events(recorder); len(got) != 1 || got[0] != "Normal Scheduled Successfully assigned ns/p to b-large" {
		t.Fatalf("events %q", got)
	}
}

func TestSync_AssumesABoundPodSoTheNextDoesNotOvercommit(t *testing.T) {
	n1 := readyNode("n1", resources("cpu", "1", "memory", "2Gi", "pods", "110"))
	n2 := readyNode("n2", resources("cpu", "1", "memory", "2Gi", "pods", "110"))
	c, client, _ := newTestController(t, n1, n2,
		pendingPod("first", resources("cpu", "800m")), pendingPod("second", resources("cpu", "800m")))
	for _, key := range []string{"ns/first", "ns/second"} {
		if _, err := syncBound(context.Background(), c, key); err != nil {
			t.Fatal(err)
		}
	}
	got := bindings(client)
	if got["first"] != "n1" || got["second"] != "n2" {
		t.Fatalf("bindings %v, want first on n1 (ties by name) and second on n2", got)
	}
}

func TestSync_FailedBindingDropsTheAssumptionAndRetries(t *testing.T) {
	n := readyNode("n", resources("cpu", "1", "memory", "2Gi", "pods", "110"))
	c, client, recorder := newTestController(t, n, pendingPod("p", resources("cpu", "800m")))
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewInternalError(errors.New("etcd is away"))
	})
	if _, err := syncBound(context.Background(), c, "ns/p"); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	_, assumed := c.placed["uid-p"]
	c.mu.Unlock()
	if assumed {
		t.Fatal("the pod still counts on the node after its binding failed")
	}
	if c.queue.NumRequeues("ns/p") != 1 {
		t.Fatalf("requeues %d, want the pod tried again after its backoff", c.queue.NumRequeues("ns/p"))
	}
	if got := events(recorder); len(got) != 0 {
		t.Fatalf("events %q, want none for a failed binding", got)
	}
}

func TestSync_NoFitSetsUnschedulableConditionEventAndWaits(t *testing.T) {
	busy := readyNode("busy", resources("cpu", "1", "memory", "2Gi", "pods", "110"))
	tainted := readyNode("tainted", resources("cpu", "8", "memory", "16Gi", "pods", "110"))
	tainted.Spec.Taints = []corev1.Taint{{Key: "key", Value: "value", Effect: corev1.TaintEffectNoSchedule}}
	other := readyNode("other", resources("cpu", "8", "memory", "16Gi", "pods", "110"))
	other.Spec.Taints = tainted.Spec.Taints
	c, client, recorder := newTestController(t, busy, tainted, other, pendingPod("p", resources("cpu", "2")))
	const want = "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {key: value}. " +
		"preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.."
	for attempt := 0; attempt < 2; attempt++ {
		after, err := syncBound(context.Background(), c, "ns/p")
		if err != nil || after != unschedulableRetry {
			t.Fatalf("attempt %d: sync = %v, %v; want a retry after %v", attempt, after, err, unschedulableRetry)
		}
	}
	if got := bindings(client); len(got) != 0 {
		t.Fatalf("bindings %v, want none", got)
	}
	pod, err := client.CoreV1().Pods("ns").Get(context.Background(), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cond := condition(pod)
	if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != corev1.PodReasonUnschedulable || cond.Message != want || cond.LastTransitionTime.IsZero() {
		t.Fatalf("PodScheduled condition %+v, want False, Unschedulable, %q", cond, want)
	}
	if got := events(recorder); len(got) != 2 || got[0] != "Warning FailedScheduling "+want {
		t.Fatalf("events %q", got)
	}
}

func TestSync_NoNodesAtAll(t *testing.T) {
	c, _, recorder := newTestController(t, pendingPod("p", nil))
	if _, err := syncBound(context.Background(), c, "ns/p"); err != nil {
		t.Fatal(err)
	}
	if got := events(recorder); len(got) != 1 || got[0] != "Warning FailedScheduling no nodes available to schedule pods" {
		t.Fatalf("events %q", got)
	}
}

func TestSync_LeavesPodsThatAreNotItsToSchedule(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.Pod)
	}{
		{name: "another scheduler", mutate: func(p *corev1.Pod) { p.Spec.SchedulerName = "custom" }},
		{name: "already bound", mutate: func(p *corev1.Pod) { p.Spec.NodeName = "n1" }},
		{name: "being deleted", mutate: func(p *corev1.Pod) { p.DeletionTimestamp = &now; p.Finalizers = []string{"f"} }},
		{name: "scheduling gated", mutate: func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "g"}} }},
		{name: "terminated", mutate: func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pendingPod("p", nil)
			tc.mutate(p)
			c, client, recorder := newTestController(t, readyNode("n1", resources("cpu", "1", "memory", "1Gi", "pods", "10")), p)
			client.ClearActions()
			if _, err := syncBound(context.Background(), c, "ns/p"); err != nil {
				t.Fatal(err)
			}
			if a := client.Actions(); len(a) != 0 {
				t.Fatalf("actions %v, want none", a)
			}
			if e := events(recorder); len(e) != 0 {
				t.Fatalf("events %q, want none", e)
			}
		})
	}
}

func TestPodInformer_BoundPodsCountAgainstTheirNode(t *testing.T) {
	n1 := readyNode("n1", resources("cpu", "1", "memory", "2Gi", "pods", "110"))
	n2 := readyNode("n2", resources("cpu", "1", "memory", "2Gi", "pods", "110"))
	running := pendingPod("running", resources("cpu", "800m"))
	running.Spec.NodeName = "n1"
	done := pendingPod("done", resources("cpu", "800m"))
	done.Spec.NodeName = "n2"
	done.Status.Phase = corev1.PodSucceeded
	c, client, _ := newTestController(t, n1, n2, running, done, pendingPod("p", resources("cpu", "800m")))
	if _, err := syncBound(context.Background(), c, "ns/p"); err != nil {
		t.Fatal(err)
	}
	if got := bindings(client); got["p"] != "n2" {
		t.Fatalf("bindings %v, want p on n2: n1 is taken by a running pod, n2's pod has terminated", got)
	}
}

func TestEnqueue_AnUnschedulablePodWaitsOutItsBackoff(t *testing.T) {
	full := readyNode("full", resources("cpu", "1", "memory", "1Gi", "pods", "110"))
	c, _, _ := newTestController(t, full, pendingPod("big", resources("cpu", "2")), pendingPod("small", resources("cpu", "100m")))
	for c.queue.Len() > 0 {
		key, _ := c.queue.Get()
		c.queue.Forget(key)
		c.queue.Done(key)
	}
	if _, err := syncBound(context.Background(), c, "ns/big"); err != nil {
		t.Fatal(err)
	}
	big, err := c.pods.Pods("ns").Get("big")
	if err != nil {
		t.Fatal(err)
	}
	c.enqueue(big)
	if n := c.queue.Len(); n != 0 {
		t.Fatalf("queue holds %d keys right after a failure, want the pod held back for its backoff", n)
	}
	small, err := c.pods.Pods("ns").Get("small")
	if err != nil {
		t.Fatal(err)
	}
	c.enqueue(small)
	if n := c.queue.Len(); n != 1 {
		t.Fatalf("queue holds %d keys, want the pod that never failed queued at once", n)
	}
}

func TestBackoff_DoublesFromOneSecondToTen(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 50: 10 * time.Second} {
		if got := backoff(n); got != want {
			t.Errorf("backoff(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestSync_ForgetsTheFailuresOfAPodBoundElsewhere(t *testing.T) {
	full := readyNode("full", resources("cpu", "1", "memory", "1Gi", "pods", "110"))
	c, client, _ := newTestController(t, full, pendingPod("big", resources("cpu", "2")))
	ctx := context.Background()
	if _, err := syncBound(ctx, c, "ns/big"); err != nil {
		t.Fatal(err)
	}
	pod, err := client.CoreV1().Pods("ns").Get(ctx, "big", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Spec.NodeName = "elsewhere"
	if _, err := client.CoreV1().Pods("ns").Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		p, err := c.pods.Pods("ns").Get("big")
		return err == nil && p.Spec.NodeName == "elsewhere", nil
	})
	if err != nil {
		t.Fatal("the informer never showed the pod bound")
	}
	if _, err := syncBound(ctx, c, "ns/big"); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.failures["ns/big"]; ok {
		t.Fatalf("failures of a bound pod kept: %+v", f)
	}
}
