package nodelifecycle

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func lease(node string, renew time.Time) *coordinationv1.Lease {
	t := metav1.NewMicroTime(renew)
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: LeaseNamespace}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &node, RenewTime: &t}}
}

func node(ready corev1.ConditionStatus, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: ready, Reason: "KubeletReady", LastHeartbeatTime: metav1.NewTime(start)},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: metav1.NewTime(start)},
		}}}
}

func pod(name string, tolerations ...corev1.Toleration) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{NodeName: "n1", Tolerations: tolerations},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

func seconds(s int64) *int64 { return &s }

// harness runs the controller over a fake clientset holding objs, on a
// fake clock at start.
type harness struct {
	c      *Controller
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	leases cache.Indexer
}

func newHarness(t *testing.T, objs ...runtime.Object) *harness {
	t.Helper()
	client := fake.NewSimpleClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := clocktesting.NewFakeClock(start)
	core := factory.Core().V1()
	c := New(client, core.Nodes(), core.Pods(), factory.Coordination().V1().Leases(), clk, 5*time.Second, 40*time.Second, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("cache of %v did not sync", typ)
		}
	}
	return &harness{c: c, client: client, clock: clk, leases: factory.Coordination().V1().Leases().Informer().GetIndexer()}
}

func (h *harness) node(t *testing.T) *corev1.Node {
	t.Helper()
	n, err := h.client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func taintKeys(n *corev1.Node) []string {
	var keys []string
	for _, t := range n.Spec.Taints {
		keys = append(keys, t.Key+":"+string(t.Effect))
	}
	return keys
}

func TestSync_NodeHealthFromLeaseAndHeartbeat(t *testing.T) {
	cases := []struct {
		name       string
		renewLease bool
		wait       time.Duration
		wantReady  corev1.ConditionStatus
		wantTaints []string
	}{
		{"lease renewed keeps the node ready", true, 60 * time.Second, corev1.ConditionTrue, nil},
		{"silence within the grace period keeps the node ready", false, 30 * time.Second, corev1.ConditionTrue, nil},
		{"stale lease and heartbeat mark the node unknown and unreachable", false, 60 * time.Second, corev1.ConditionUnknown,
			[]string{TaintUnreachable + ":NoSchedule", TaintUnreachable + ":NoExecute"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, node(corev1.ConditionTrue), lease("n1", start))
			ctx := context.Background()
			h.c.Sync(ctx)
			h.clock.Step(tc.wait)
			if tc.renewLease {
				renewed := lease("n1", h.clock.Now())
				if _, err := h.client.CoordinationV1().Leases(LeaseNamespace).Update(ctx, renewed, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				// The cache sees the renewal before the next pass.
				if err := h.leases.Update(renewed); err != nil {
					t.Fatal(err)
				}
			}
			h.c.Sync(ctx)
			n := h.node(t)
			ready := condition(n, corev1.NodeReady)
			if ready.Status != tc.wantReady {
				t.Fatalf("Ready %s, want %s", ready.Status, tc.wantReady)
			}
			if tc.wantReady == corev1.ConditionUnknown {
				if ready.Reason != "NodeStatusUnknown" || ready.Message != "Kubelet stopped posting node status." {
					t.Fatalf("Ready reason %q message %q", ready.Reason, ready.Message)
				}
				for _, typ := range monitoredConditions {
					if c := condition(n, typ); c == nil || c.Status != corev1.ConditionUnknown {
						t.Fatalf("condition %s: %+v, want Unknown", typ, c)
					}
				}
			}
			if got := taintKeys(n); len(got) != len(tc.wantTaints) || (len(got) > 0 && (got[0] != tc.wantTaints[0] || got[1] != tc.wantTaints[1])) {
				t.Fatalf("taints %v, want %v", got, tc.wantTaints)
			}
			for _, taint := range n.Spec.Taints {
				if taint.Effect == corev1.TaintEffectNoExecute && taint.TimeAdded == nil {
					t.Fatalf("NoExecute taint %s without timeAdded", taint.Key)
				}
			}
		})
	}
}

func TestSync_TaintsFollowReadyCondition(t *testing.T) {
	notReady := corev1.Taint{Key: TaintNotReady, Effect: corev1.TaintEffectNoSchedule}
	other := corev1.Taint{Key: "example.com/dedicated", Effect: corev1.TaintEffectNoSchedule}
	cases := []struct {
		name  string
		ready corev1.ConditionStatus
		have  []corev1.Taint
		want  []string
	}{
		{"ready lifts the not-ready taint admission added", corev1.ConditionTrue, []corev1.Taint{notReady, other}, []string{"example.com/dedicated:NoSchedule"}},
		{"not ready adds the NoExecute not-ready taint", corev1.ConditionFalse, []corev1.Taint{notReady}, []string{TaintNotReady + ":NoSchedule", TaintNotReady + ":NoExecute"}},
		{"unknown replaces not-ready by unreachable", corev1.ConditionUnknown, []corev1.Taint{notReady}, []string{TaintUnreachable + ":NoSchedule", TaintUnreachable + ":NoExecute"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, node(tc.ready, tc.have...), lease("n1", start))
			h.c.Sync(context.Background())
			got := taintKeys(h.node(t))
			if len(got) != len(tc.want) {
				t.Fatalf("taints %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("taints %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestSync_EvictsPodsWhenTolerationExpires(t *testing.T) {
	added := metav1.NewTime(start)
	tainted := node(corev1.ConditionFalse,
		corev1.Taint{Key: TaintNotReady, Effect: corev1.TaintEffectNoSchedule},
		corev1.Taint{Key: TaintNotReady, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added})
	tolerate := func(s *int64) corev1.Toleration {
		return corev1.Toleration{Key: TaintNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: s}
	}
	cases := []struct {
		name        string
		pod         *corev1.Pod
		after       time.Duration
		wantDeleted bool
	}{
		{"untolerated taint evicts at once", pod("p"), 0, true},
		{"toleration within its seconds keeps the pod", pod("p", tolerate(seconds(300))), 299 * time.Second, false},
		{"toleration past its seconds evicts", pod("p", tolerate(seconds(300))), 300 * time.Second, true},
		{"toleration without seconds keeps the pod for good", pod("p", tolerate(nil)), time.Hour, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tainted, lease("n1", start), tc.pod)
			h.clock.Step(tc.after)
			h.c.Sync(context.Background())
			var deleted, disrupted bool
			for _, a := range h.client.Actions() {
				if a.Matches("delete", "pods") {
					deleted = true
				}
				if u, ok := a.(interface{ GetObject() runtime.Object }); ok && a.Matches("update", "pods") && a.GetSubresource() == "status" {
					for _, c := range u.GetObject().(*corev1.Pod).Status.Conditions {
						if c.Type == corev1.DisruptionTarget && c.Reason == "DeletionByTaintManager" && !deleted {
							disrupted = true
						}
					}
				}
			}
			if deleted != tc.wantDeleted {
				t.Fatalf("deleted %v, want %v", deleted, tc.wantDeleted)
			}
			if deleted && !disrupted {
				t.Fatal("pod deleted without a DisruptionTarget condition first")
			}
			if !deleted {
				p, err := h.client.CoreV1().Pods("default").Get(context.Background(), "p", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodReady && c.Status != corev1.ConditionFalse {
						t.Fatalf("pod on a not-ready node is Ready=%s, want False", c.Status)
					}
				}
			}
		})
	}
}

func TestSync_NodeThatNeverPostedStatus(t *testing.T) {
	cases := []struct {
		name       string
		wait       time.Duration
		wantReady  bool
		wantTaints []string
	}{
		{"within the startup grace period it keeps admission's taint and no conditions", 50 * time.Second, false, []string{TaintNotReady + ":NoSchedule"}},
		{"past the startup grace period it is never updated and unreachable", 61 * time.Second, true, []string{TaintUnreachable + ":NoSchedule", TaintUnreachable + ":NoExecute"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fresh := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: TaintNotReady, Effect: corev1.TaintEffectNoSchedule}}}}
			h := newHarness(t, fresh)
			h.c.Sync(context.Background())
			h.clock.Step(tc.wait)
			h.c.Sync(context.Background())
			n := h.node(t)
			ready := condition(n, corev1.NodeReady)
			if (ready != nil) != tc.wantReady {
				t.Fatalf("Ready condition %+v, want one: %v", ready, tc.wantReady)
			}
			if ready != nil && (ready.Status != corev1.ConditionUnknown || ready.Reason != "NodeStatusNeverUpdated" || ready.Message != "Kubelet never posted node status.") {
				t.Fatalf("Ready %+v", ready)
			}
			got := taintKeys(n)
			if len(got) != len(tc.wantTaints) {
				t.Fatalf("taints %v, want %v", got, tc.wantTaints)
			}
			for i := range got {
				if got[i] != tc.wantTaints[i] {
					t.Fatalf("taints %v, want %v", got, tc.wantTaints)
				}
			}
		})
	}
}
