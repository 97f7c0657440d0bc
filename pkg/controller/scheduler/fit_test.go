package scheduler

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func resources(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func readyNode(name string, allocatable corev1.ResourceList) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{
			Allocatable: allocatable,
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

func podWith(requests corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: requests}}}},
	}
}

func emptyState(n *corev1.Node) *nodeState {
	return &nodeState{node: n, requested: corev1.ResourceList{}, nonZero: corev1.ResourceList{}}
}

func TestPodRequests_InitContainersSidecarsAndOverheadAsKube(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	for _, tc := range []struct {
		name    string
		spec    corev1.PodSpec
		nonZero bool
		want    corev1.ResourceList
	}{
		{
			name: "containers add up",
			spec: corev1.PodSpec{Containers: []corev1.Container{
				{Resources: corev1.ResourceRequirements{Requests: resources("cpu", "100m", "memory", "1Gi")}},
				{Resources: corev1.ResourceRequirements{Requests: resources("cpu", "200m")}},
			}},
			want: resources("cpu", "300m", "memory", "1Gi"),
		},
		{
			name: "a larger init container wins",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: resources("cpu", "2")}}},
				Containers:     []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: resources("cpu", "1", "memory", "1Gi")}}},
			},
			want: resources("cpu", "2", "memory", "1Gi"),
		},
		{
			name: "sidecars add to containers and to the init containers after them",
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{
					{RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: resources("cpu", "500m")}},
					{Resources: corev1.ResourceRequirements{Requests: resources("cpu", "2")}},
				},
				Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: resources("cpu", "1")}}},
			},
			want: resources("cpu", "2500m"),
		},
		{
			name: "overhead is added",
			spec: corev1.PodSpec{
				Overhead:   resources("cpu", "250m"),
				Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: resources("cpu", "1")}}},
			},
			want: resources("cpu", "1250m"),
		},
		{
			name:    "scoring counts defaults for containers without requests",
			spec:    corev1.PodSpec{Containers: []corev1.Container{{}, {Resources: corev1.ResourceRequirements{Requests: resources("cpu", "1")}}}},
			nonZero: true,
			want:    resources("cpu", "1100m", "memory", "400Mi"),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := podRequests(&corev1.Pod{Spec: tc.spec}, tc.nonZero)
			if len(got) != len(tc.want) {
				t.Fatalf("requests %v, want %v", got, tc.want)
			}
			for name, q := range tc.want {
				if g := got[name]; g.Cmp(q) != 0 {
					t.Errorf("%s = %s, want %s", name, g.String(), q.String())
				}
			}
		})
	}
}

func TestFits_EachFilterRejectsWithKubesReason(t *testing.T) {
	alloc := resources("cpu", "2", "memory", "4Gi", "pods", "110", "ephemeral-storage", "10Gi")
	node := func(mutate func(*corev1.Node)) *corev1.Node {
		n := readyNode("n1", alloc.DeepCopy())
		n.Labels["zone"] = "a"
		n.Labels["cores"] = "8"
		if mutate != nil {
			mutate(n)
		}
		return n
	}
	pod := func(mutate func(*corev1.Pod)) *corev1.Pod {
		p := podWith(resources("cpu", "500m", "memory", "1Gi"))
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	affinity := func(terms ...corev1.NodeSelectorTerm) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
			}}
		}
	}
	expr := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	taint := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	hostPort := func(port int32, ip string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: port, HostIP: ip}}
		}
	}
	for _, tc := range []struct {
		name       string
		node       *corev1.Node
		pod        *corev1.Pod
		used       *nodeState
		want       []string
		unresolved bool
	}{
		{name: "a ready node with room fits", node: node(nil), pod: pod(nil)},
		{name: "unschedulable node", node: node(func(n *corev1.Node) { n.Spec.Unschedulable = true }), pod: pod(nil), want: []string{reasonUnschedulable}, unresolved: true},
		{name: "unschedulable node, tolerated", node: node(func(n *corev1.Node) { n.Spec.Unschedulable = true }),
			pod: pod(func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: taintUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
			})},
		{name: "not ready node reads as kube's not-ready taint", node: node(func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }),
			pod: pod(nil), want: []string{"node(s) had untolerated taint {node.kubernetes.io/not-ready: }"}, unresolved: true},
		{name: "node without a Ready condition reads as unreachable", node: node(func(n *corev1.Node) { n.Status.Conditions = nil }),
			pod: pod(nil), want: []string{"node(s) had untolerated taint {node.kubernetes.io/unreachable: }"}, unresolved: true},
		{name: "not ready node, tolerated", node: node(func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }),
			pod: pod(func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: taintNotReady, Operator: corev1.TolerationOpExists}}
			})},
		{name: "a Ready node's admission not-ready taint is the lifecycle controller's to lift", node: node(func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: taintNotReady, Effect: corev1.TaintEffectNoSchedule}}
		}), pod: pod(nil)},
		{name: "untolerated NoSchedule taint", node: node(func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{taint} }), pod: pod(nil),
			want: []string{"node(s) had untolerated taint {dedicated: gpu}"}, unresolved: true},
		{name: "untolerated NoExecute taint", node: node(func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute}}
		}), pod: pod(nil), want: []string{"node(s) had untolerated taint {k: v}"}, unresolved: true},
		{name: "PreferNoSchedule taint does not filter", node: node(func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectPreferNoSchedule}}
		}), pod: pod(nil)},
		{name: "tolerated taint", node: node(func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{taint} }),
			pod: pod(func(p *corev1.Pod) {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
			})},
		{name: "nodeSelector matches", node: node(nil), pod: pod(func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} })},
		{name: "nodeSelector does not match", node: node(nil), pod: pod(func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "b"} }),
			want: []string{reasonAffinity}, unresolved: true},
		{name: "affinity In", node: node(nil), pod: pod(affinity(expr("zone", corev1.NodeSelectorOpIn, "a", "b")))},
		{name: "affinity NotIn", node: node(nil), pod: pod(affinity(expr("zone", corev1.NodeSelectorOpNotIn, "a"))), want: []string{reasonAffinity}, unresolved: true},
		{name: "affinity NotIn an absent label", node: node(nil), pod: pod(affinity(expr("rack", corev1.NodeSelectorOpNotIn, "a")))},
		{name: "affinity Exists", node: node(nil), pod: pod(affinity(expr("zone", corev1.NodeSelectorOpExists)))},
		{name: "affinity DoesNotExist", node: node(nil), pod: pod(affinity(expr("zone", corev1.NodeSelectorOpDoesNotExist))), want: []string{reasonAffinity}, unresolved: true},
		{name: "affinity Gt", node: node(nil), pod: pod(affinity(expr("cores", corev1.NodeSelectorOpGt, "4")))},
		{name: "affinity Lt", node: node(nil), pod: pod(affinity(expr("cores", corev1.NodeSelectorOpLt, "4"))), want: []string{reasonAffinity}, unresolved: true},
		{name: "affinity terms are ORed", node: node(nil), pod: pod(affinity(expr("zone", corev1.NodeSelectorOpIn, "b"), expr("zone", corev1.NodeSelectorOpIn, "a")))},
		{name: "affinity matchFields metadata.name", node: node(nil), pod: pod(affinity(corev1.NodeSelectorTerm{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}},
		}))},
		{name: "affinity matchFields other name", node: node(nil), pod: pod(affinity(corev1.NodeSelectorTerm{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n2"}}},
		})), want: []string{reasonAffinity}, unresolved: true},
		{name: "an empty term matches nothing", node: node(nil), pod: pod(affinity(corev1.NodeSelectorTerm{})), want: []string{reasonAffinity}, unresolved: true},
		{name: "host port taken", node: node(nil), pod: pod(hostPort(8080, "")),
			used: &nodeState{ports: []corev1.ContainerPort{{HostPort: 8080, HostIP: "10.0.0.1"}}}, want: []string{reasonPorts}},
		{name: "host port on another IP", node: node(nil), pod: pod(hostPort(8080, "10.0.0.2")),
			used: &nodeState{ports: []corev1.ContainerPort{{HostPort: 8080, HostIP: "10.0.0.1"}}}},
		{name: "host port with another protocol", node: node(nil), pod: pod(hostPort(8080, "")),
			used: &nodeState{ports: []corev1.ContainerPort{{HostPort: 8080, Protocol: corev1.ProtocolUDP}}}},
		{name: "insufficient cpu and memory", node: node(nil), pod: pod(nil),
			used: &nodeState{requested: resources("cpu", "1800m", "memory", "3500Mi"), pods: 2}, want: []string{"Insufficient cpu", "Insufficient memory"}},
		{name: "insufficient ephemeral storage", node: node(nil), pod: podWith(resources("ephemeral-storage", "11Gi")), want: []string{"Insufficient ephemeral-storage"}},
		{name: "too many pods", node: node(nil), pod: pod(nil), used: &nodeState{requested: corev1.ResourceList{}, pods: 110}, want: []string{reasonTooManyPods}},
		{name: "a node without pods allocatable takes none", node: node(func(n *corev1.Node) { delete(n.Status.Allocatable, corev1.ResourcePods) }),
			pod: pod(nil), want: []string{reasonTooManyPods}},
		{name: "exactly full fits", node: node(nil), pod: pod(nil), used: &nodeState{requested: resources("cpu", "1500m", "memory", "3Gi"), pods: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := emptyState(tc.node)
			if tc.used != nil {
				if tc.used.requested != nil {
					s.requested = tc.used.requested
				}
				s.pods, s.ports = tc.used.pods, tc.used.ports
			}
			got := fits(tc.pod, s)
			if tc.want == nil {
				if got != nil {
					t.Fatalf("fits = %+v, want it to fit", got)
				}
				return
			}
			if got == nil || !reflect.DeepEqual(got.reasons, tc.want) || got.unresolved != tc.unresolved {
				t.Fatalf("fits = %+v, want reasons %q, unresolved %v", got, tc.want, tc.unresolved)
			}
		})
	}
}

func TestScore_LeastAllocatedOverCPUAndMemory(t *testing.T) {
	alloc := resources("cpu", "4", "memory", "8Gi")
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		used corev1.ResourceList
		want int64
	}{
		{name: "an empty node", pod: podWith(resources("cpu", "1", "memory", "2Gi")), want: 75},
		{name: "half used", pod: podWith(resources("cpu", "1", "memory", "2Gi")), used: resources("cpu", "1", "memory", "2Gi"), want: 50},
		{name: "cpu and memory averaged", pod: podWith(resources("cpu", "2", "memory", "0")), want: 75},
		{name: "request-less pod counts kube's defaults", pod: podWith(nil), want: (97 + 97) / 2},
		{name: "an overcommitted resource scores nothing", pod: podWith(resources("cpu", "5", "memory", "4Gi")), want: 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := emptyState(readyNode("n", alloc))
			if tc.used != nil {
				s.nonZero = tc.used
			}
			if got := score(tc.pod, s); got != tc.want {
				t.Errorf("score = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestFitError_KubesMessage(t *testing.T) {
	for _, tc := range []struct {
		name       string
		total      int
		reasons    map[string]int
		preemption map[string]int
		never      bool
		want       string
	}{
		{
			name: "reasons and preemption sorted", total: 3,
			reasons:    map[string]int{"Insufficient cpu": 1, "node(s) had untolerated taint {key: value}": 2},
			preemption: map[string]int{"Preemption is not helpful for scheduling": 2, "No preemption victims found for incoming pod": 1},
			want:       "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint {key: value}. preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling..",
		},
		{
			name: "preemptionPolicy Never", total: 1, never: true,
			reasons:    map[string]int{"Insufficient memory": 1},
			preemption: map[string]int{"No preemption victims found for incoming pod": 1},
			want:       "0/1 nodes are available: 1 Insufficient memory. preemption: not eligible due to preemptionPolicy=Never.",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fitError(tc.total, tc.reasons, tc.preemption, tc.never); got != tc.want {
				t.Errorf("message\n %q\nwant\n %q", got, tc.want)
			}
		})
	}
}
