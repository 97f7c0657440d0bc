package podgc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

var epoch = time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)

type fixture struct {
	c       *Controller
	metrics Metrics
	client  *fake.Clientset
	clock   *testingclock.FakePassiveClock
}

// newFixture builds a collector whose caches hold pods and cachedNodes;
// the apiserver holds pods, cachedNodes and apiNodes.
func newFixture(t *testing.T, threshold int, pods []*corev1.Pod, cachedNodes, apiNodes []*corev1.Node) *fixture {
	t.Helper()
	var objs []runtime.Object
	for _, p := range pods {
		objs = append(objs, p)
	}
	for _, n := range append(append([]*corev1.Node{}, cachedNodes...), apiNodes...) {
		objs = append(objs, n)
	}
	client := fake.NewSimpleClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	clk := testingclock.NewFakePassiveClock(epoch)
	m := Metrics{
		Deleting: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "deleting"}, []string{"namespace", "reason"}),
		Errors:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "errors"}, []string{"namespace", "reason"}),
	}
	c := New(client, factory.Core().V1().Pods(), factory.Core().V1().Nodes(), threshold, m, clk)
	for _, p := range pods {
		if err := factory.Core().V1().Pods().Informer().GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range cachedNodes {
		if err := factory.Core().V1().Nodes().Informer().GetIndexer().Add(n); err != nil {
			t.Fatal(err)
		}
	}
	return &fixture{c: c, metrics: m, client: client, clock: clk}
}

// writes lists the collector's writes to pods, sorted: "delete ns/name
// grace=0" and "status ns/name uid=... phase=Failed
// DisruptionTarget/True/DeletionByPodGC".
func (f *fixture) writes(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, a := range f.client.Actions() {
		switch a := a.(type) {
		case clienttesting.PatchAction:
			if a.GetSubresource() != "status" || a.GetPatchType() != types.StrategicMergePatchType {
				t.Fatalf("patch %s %s", a.GetSubresource(), a.GetPatchType())
			}
			var p corev1.Pod
			if err := json.Unmarshal(a.GetPatch(), &p); err != nil {
				t.Fatal(err)
			}
			s := fmt.Sprintf("status %s/%s uid=%s phase=%s", a.GetNamespace(), a.GetName(), p.UID, p.Status.Phase)
			for _, c := range p.Status.Conditions {
				s += fmt.Sprintf(" %s/%s/%s", c.Type, c.Status, c.Reason)
			}
			out = append(out, s)
		case clienttesting.DeleteAction:
			if a.GetResource().Resource != "pods" {
				continue
			}
			grace := "none"
			if g := a.GetDeleteOptions().GracePeriodSeconds; g != nil {
				grace = fmt.Sprint(*g)
			}
			out = append(out, fmt.Sprintf("delete %s/%s grace=%s", a.GetNamespace(), a.GetName(), grace))
		}
	}
	sort.Strings(out)
	return out
}

func pod(name string, age time.Duration, phase corev1.PodPhase, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + "-uid"), CreationTimestamp: metav1.NewTime(epoch.Add(-age))},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func terminating(p *corev1.Pod) *corev1.Pod {
	now := metav1.NewTime(epoch)
	p.DeletionTimestamp = &now
	return p
}

func evicted(p *corev1.Pod) *corev1.Pod {
	p.Status.Reason = "Evicted"
	return p
}

func node(name string, ready bool, taints ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
	for _, k := range taints {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k, Effect: corev1.TaintEffectNoExecute})
	}
	return n
}

func TestCollect_OnePass(t *testing.T) {
	cases := []struct {
		name        string
		threshold   int
		pods        []*corev1.Pod
		cachedNodes []*corev1.Node
		// reason is the metrics' label of the deletions.
		reason string
		want   []string
	}{{
		name:      "terminated pods beyond the threshold go, evicted first, then the oldest",
		threshold: 2,
		pods: []*corev1.Pod{
			pod("old-ok", 4*time.Hour, corev1.PodSucceeded, "n"),
			pod("older-failed", 5*time.Hour, corev1.PodFailed, "n"),
			evicted(pod("new-evicted", time.Minute, corev1.PodFailed, "n")),
			pod("new-ok", 2*time.Minute, corev1.PodSucceeded, "n"),
			pod("oldest-running", 9*time.Hour, corev1.PodRunning, "n"),
			pod("oldest-pending", 9*time.Hour, corev1.PodPending, "n"),
		},
		cachedNodes: []*corev1.Node{node("n", true)},
		reason:      "terminated",
		want:        []string{"delete ns/new-evicted grace=0", "delete ns/older-failed grace=0"},
	}, {
		name:      "pods of one age go by name",
		threshold: 1,
		pods: []*corev1.Pod{
			pod("b", time.Hour, corev1.PodSucceeded, "n"),
			pod("a", time.Hour, corev1.PodSucceeded, "n"),
		},
		cachedNodes: []*corev1.Node{node("n", true)},
		reason:      "terminated",
		want:        []string{"delete ns/a grace=0"},
	}, {
		name:        "a threshold of zero keeps every terminated pod",
		threshold:   0,
		pods:        []*corev1.Pod{pod("a", time.Hour, corev1.PodSucceeded, "n"), pod("b", time.Hour, corev1.PodFailed, "n")},
		cachedNodes: []*corev1.Node{node("n", true)},
	}, {
		name:      "terminating pods no node was assigned are failed, then deleted",
		threshold: 10,
		pods: []*corev1.Pod{
			terminating(pod("unscheduled", time.Hour, corev1.PodPending, "")),
			terminating(pod("scheduled", time.Hour, corev1.PodRunning, "n")),
			pod("pending", time.Hour, corev1.PodPending, ""),
		},
		cachedNodes: []*corev1.Node{node("n", true)},
		reason:      "unscheduled",
		want:        []string{"delete ns/unscheduled grace=0", "status ns/unscheduled uid=unscheduled-uid phase=Failed"},
	}, {
		name:      "terminating pods of an out-of-service node that is not ready go",
		threshold: 10,
		pods: []*corev1.Pod{
			terminating(pod("on-down", time.Hour, corev1.PodRunning, "down")),
			pod("alive-on-down", time.Hour, corev1.PodRunning, "down"),
			terminating(pod("on-ready", time.Hour, corev1.PodRunning, "ready")),
			terminating(pod("on-notready", time.Hour, corev1.PodRunning, "notready")),
		},
		cachedNodes: []*corev1.Node{node("down", false, outOfServiceTaint), node("ready", true, outOfServiceTaint), node("notready", false)},
		reason:      "out-of-service",
		want:        []string{"delete ns/on-down grace=0", "status ns/on-down uid=on-down-uid phase=Failed"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.threshold, tc.pods, tc.cachedNodes, nil)
			f.c.collect(context.Background())
			if got := f.writes(t); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("writes\n%q\nwant\n%q", got, tc.want)
			}
			deletes := 0
			for _, w := range tc.want {
				if strings.HasPrefix(w, "delete ") {
					deletes++
				}
			}
			if n := testutil.CollectAndCount(f.metrics.Deleting); n > 1 || (n == 1) != (deletes > 0) {
				t.Fatalf("%d series of force_delete_pods_total", n)
			}
			if deletes == 0 {
				return
			}
			if got := testutil.ToFloat64(f.metrics.Deleting.WithLabelValues("ns", tc.reason)); got != float64(deletes) {
				t.Fatalf("force_delete_pods_total{reason=%q} %v, want %d", tc.reason, got, deletes)
			}
		})
	}
}

// A pod whose status cannot be patched (another pod of its name, say) is
// not deleted, and counted an error.
func TestCollect_FailedStatusPatchKeepsThePod(t *testing.T) {
	f := newFixture(t, 10, []*corev1.Pod{terminating(pod("unscheduled", time.Hour, corev1.PodPending, ""))}, nil, nil)
	f.client.PrependReactor("patch", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "unscheduled", errors.New("the UID in the precondition does not match"))
	})
	f.c.collect(context.Background())
	if got, want := f.writes(t), []string{"status ns/unscheduled uid=unscheduled-uid phase=Failed"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("writes %q, want %q", got, want)
	}
	if got := testutil.ToFloat64(f.metrics.Errors.WithLabelValues("ns", "unscheduled")); got != 1 {
		t.Fatalf("force_delete_pod_errors_total %v, want 1", got)
	}
}

// A pod bound to a node missing from the cache is left alone for the
// quarantine; then, if the apiserver confirms the node is gone, a pod
// still running is marked Failed with kube's DisruptionTarget condition
// and every pod of the node is deleted without grace.
func TestCollect_OrphansOfADeletedNodeAfterQuarantine(t *testing.T) {
	cases := []struct {
		name     string
		apiNodes []*corev1.Node
		want     []string
	}{{
		name: "node gone",
		want: []string{
			"delete ns/done grace=0", "delete ns/running grace=0",
			"status ns/running uid=running-uid phase=Failed DisruptionTarget/True/DeletionByPodGC",
		},
	}, {
		name:     "node exists but is not cached yet",
		apiNodes: []*corev1.Node{node("gone", true)},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pods := []*corev1.Pod{
				pod("running", time.Hour, corev1.PodRunning, "gone"),
				pod("done", time.Hour, corev1.PodSucceeded, "gone"),
				pod("elsewhere", time.Hour, corev1.PodRunning, "n"),
			}
			f := newFixture(t, 100, pods, []*corev1.Node{node("n", true)}, tc.apiNodes)
			f.c.collect(context.Background())
			f.clock.SetTime(epoch.Add(quarantine - time.Second))
			f.c.collect(context.Background())
			if got := f.writes(t); len(got) != 0 {
				t.Fatalf("writes during the quarantine: %q", got)
			}
			if gets := nodeGets(f); gets != 0 {
				t.Fatalf("%d node GETs during the quarantine", gets)
			}
			f.clock.SetTime(epoch.Add(quarantine))
			f.c.collect(context.Background())
			if got := f.writes(t); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("writes\n%q\nwant\n%q", got, tc.want)
			}
			if got := testutil.ToFloat64(f.metrics.Deleting.WithLabelValues("ns", "orphaned")); got != float64(len(tc.want)-1) && len(tc.want) > 0 {
				t.Fatalf("force_delete_pods_total{reason=orphaned} %v", got)
			}
			if gets := nodeGets(f); gets != 1 {
				t.Fatalf("%d node GETs after the quarantine, want 1", gets)
			}
		})
	}
}

func nodeGets(f *fixture) int {
	n := 0
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "nodes" {
			n++
		}
	}
	return n
}
