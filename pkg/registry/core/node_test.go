package core

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func newNode() *corev1.Node {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "5"},
		Spec:       corev1.NodeSpec{PodCIDR: "10.1.0.0/24", ProviderID: "aws://x"},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("110")}},
	}
	NodeResource().Default(node)
	return node
}

func TestNodeDefaults_AllocatableAndPodCIDRs(t *testing.T) {
	node := newNode()
	if len(node.Spec.PodCIDRs) != 1 || node.Spec.PodCIDRs[0] != "10.1.0.0/24" {
		t.Fatalf("podCIDRs %v", node.Spec.PodCIDRs)
	}
	if q := node.Status.Allocatable[corev1.ResourcePods]; q.String() != "110" {
		t.Fatalf("allocatable %v", node.Status.Allocatable)
	}
}

// The messages are those kube-apiserver v1.29 answered for the same
// nodes.
func TestNodeValidate_TaintsQuantitiesAndCIDRs(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.Node)
		want   []string
	}{
		{"valid", func(*corev1.Node) {}, nil},
		{"taints", func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "a", Effect: "NoSchedule"}, {Key: "a", Effect: "NoSchedule"}, {Key: "b", Effect: "Bad"}}
		}, []string{
			`metadata.taints[1]: Duplicate value: core.Taint{Key:"a", Value:"", Effect:"NoSchedule", TimeAdded:<nil>}: taints must be unique by key and effect pair`,
			`metadata.taints[2].effect: Unsupported value: "Bad": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`,
		}},
		{"negative and fractional quantities", func(n *corev1.Node) {
			n.Status.Capacity = corev1.ResourceList{"example.com/gpu": resource.MustParse("-1")}
			n.Status.Allocatable = nil
		}, []string{`status.capacity.example.com/gpu: Invalid value: "-1": must be greater than or equal to 0`}},
		{"two IPv4 pod CIDRs", func(n *corev1.Node) { n.Spec.PodCIDR, n.Spec.PodCIDRs = "", []string{"10.1.0.0/24", "10.2.0.0/24"} },
			[]string{`spec.podCIDRs: Invalid value: []string{"10.1.0.0/24", "10.2.0.0/24"}: may specify no more than one CIDR for each IP family`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := newNode()
			tc.mutate(node)
			checkErrs(t, nodeStrategy{}.Validate(node), tc.want)
		})
	}
}

func TestNodeUpdate_PodCIDRAndProviderIDAreSetOnce(t *testing.T) {
	cases := []struct {
		name   string
		old    func(*corev1.Node)
		mutate func(*corev1.Node)
		want   []string
	}{
		{"cordoned", nil, func(n *corev1.Node) { n.Spec.Unschedulable = true }, nil},
		{"first pod CIDR", func(n *corev1.Node) { n.Spec.PodCIDR, n.Spec.PodCIDRs = "", nil },
			func(n *corev1.Node) { n.Spec.PodCIDR, n.Spec.PodCIDRs = "10.3.0.0/24", []string{"10.3.0.0/24"} }, nil},
		{"pod CIDR and provider changed", nil, func(n *corev1.Node) {
			n.Spec.PodCIDR, n.Spec.PodCIDRs, n.Spec.ProviderID = "10.3.0.0/24", []string{"10.3.0.0/24"}, "y"
		}, []string{
			`spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid`,
			`spec.providerID: Forbidden: node updates may not change providerID except from "" to valid`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := newNode()
			if tc.old != nil {
				tc.old(old)
			}
			node := old.DeepCopy()
			tc.mutate(node)
			node.Status.Capacity = nil
			nodeStrategy{}.PrepareForUpdate(node, old)
			if node.Status.Capacity == nil {
				t.Fatal("an update through /nodes changed the status")
			}
			checkErrs(t, nodeStrategy{}.ValidateUpdate(node, old), tc.want)
		})
	}
}

func TestNodeTable_StatusRolesAndAddresses(t *testing.T) {
	now := time.Now()
	node := newNode()
	node.Labels = map[string]string{"kubernetes.io/role": "worker", "node-role.kubernetes.io/infra": "", "node-role.kubernetes.io/": "x"}
	node.Spec.Unschedulable = true
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: "1.2.3.4"}}
	node.Status.NodeInfo.KubeletVersion = "v1.29.15"
	got := nodeTable.Cells(node, now)
	want := []interface{}{"n1", "NotReady,SchedulingDisabled", "infra,worker", "<unknown>", "v1.29.15", "<none>", "1.2.3.4", "<unknown>", "<unknown>", "<unknown>"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("cells %q, want %q", got, want)
		}
	}
	node.Labels, node.Spec.Unschedulable, node.Status.Conditions = nil, false, nil
	if got := nodeTable.Cells(node, now); got[1] != "Unknown" || got[2] != "<none>" {
		t.Fatalf("cells %q", got)
	}
}
