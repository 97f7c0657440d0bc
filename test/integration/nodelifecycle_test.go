package integration

import (
	"context"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func hasTaint(node *corev1.Node, key string, effect corev1.TaintEffect) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}

func TestNodeLifecycle_ReadyNodeWithRenewedLeaseLosesTheNotReadyTaint(t *testing.T) {
	ns := newNamespace(t, "nodelifecycle")
	key := "cronplane.test/" + ns
	name := readyNode(t, key)
	ctx := context.Background()
	node, err := srv.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !hasTaint(node, "node.kubernetes.io/not-ready", corev1.TaintEffectNoSchedule) {
		t.Fatalf("new node's taints %v: admission should have added not-ready:NoSchedule", node.Spec.Taints)
	}
	renew := metav1.NewMicroTime(node.CreationTimestamp.Time)
	if _, err := srv.Client.CoordinationV1().Leases("kube-node-lease").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &name, RenewTime: &renew},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = srv.Client.CoordinationV1().Leases("kube-node-lease").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	start(t, "nodelifecycle", false)
	waitFor(t, "the not-ready taint lifted", func() (bool, error) {
		node, err := srv.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !hasTaint(node, key, corev1.TaintEffectNoSchedule) {
			t.Fatalf("the node's own taint %s is gone: %v", key, node.Spec.Taints)
		}
		return !hasTaint(node, "node.kubernetes.io/not-ready", corev1.TaintEffectNoSchedule), nil
	})
}
