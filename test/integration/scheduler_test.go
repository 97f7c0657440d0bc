package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/rand"
)

// readyNode creates a node the test marks Ready, with room for 10 pods,
// 2 cpus and 4Gi, as a kubelet would report it; it is deleted after the
// test. It is tainted so that only pods tolerating key take it: the
// pending pods of other tests' Jobs stay off it.
func readyNode(t *testing.T, key string) string {
	t.Helper()
	ctx := context.Background()
	name := "node-" + rand.String(5)
	node, err := srv.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: key, Effect: corev1.TaintEffectNoSchedule}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	room := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"), corev1.ResourcePods: resource.MustParse("10")}
	node.Status.Capacity, node.Status.Allocatable = room, room
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := srv.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

func createPod(t *testing.T, ns, name, cpu, tolerate string) {
	t.Helper()
	_, err := srv.Client.CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: tolerate, Operator: corev1.TolerationOpExists}}, Containers: []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// eventFor finds the event with reason about pod name, from
// default-scheduler.
func eventFor(t *testing.T, ns, name, reason string) *corev1.Event {
	t.Helper()
	list, err := srv.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range list.Items {
		if e.Reason == reason && e.Source.Component == "default-scheduler" {
			return &list.Items[i]
		}
	}
	return nil
}

func TestScheduler_BindsAPodToAReadyNodeAndReportsOneThatFitsNowhere(t *testing.T) {
	ns := newNamespace(t, "scheduler")
	key := "cronplane.test/" + ns
	node := readyNode(t, key)
	start(t, "solo", false)
	ctx := context.Background()
	waitFor(t, "the namespace's default service account", func() (bool, error) {
		_, err := getAccount(ns, "default")
		return err == nil, nil
	})

	createPod(t, ns, "fits", "1500m", key)
	waitFor(t, "the pod bound to the node", func() (bool, error) {
		pod, err := srv.Client.CoreV1().Pods(ns).Get(ctx, "fits", metav1.GetOptions{})
		return err == nil && pod.Spec.NodeName == node, err
	})
	waitFor(t, "a Scheduled event", func() (bool, error) {
		e := eventFor(t, ns, "fits", "Scheduled")
		return e != nil && e.Type == corev1.EventTypeNormal && e.Message == "Successfully assigned "+ns+"/fits to "+node, nil
	})

	// The node has 500m left: the bound pod's requests count.
	createPod(t, ns, "too-big", "1", key)
	const want = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.."
	waitFor(t, "the PodScheduled condition", func() (bool, error) {
		pod, err := srv.Client.CoreV1().Pods(ns).Get(ctx, "too-big", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && c.Message == want && pod.Spec.NodeName == "", nil
			}
		}
		return false, nil
	})
	if e := eventFor(t, ns, "too-big", "FailedScheduling"); e == nil || e.Type != corev1.EventTypeWarning || e.Message != want {
		t.Fatalf("FailedScheduling event %+v, want a Warning saying %q", e, want)
	}

	// Deleting the first pod makes room: the second is tried again.
	if err := srv.Client.CoreV1().Pods(ns).Delete(ctx, "fits", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the second pod bound once the first is gone", func() (bool, error) {
		pod, err := srv.Client.CoreV1().Pods(ns).Get(ctx, "too-big", metav1.GetOptions{})
		return err == nil && pod.Spec.NodeName == node, err
	})
}
