package scheduler

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The reasons a node does not fit, in kube-scheduler's words: they are
// counted into the FailedScheduling message clients and people read.
const (
	reasonUnschedulable = "node(s) were unschedulable"
	reasonAffinity      = "node(s) didn't match Pod's node affinity/selector"
	reasonPorts         = "node(s) didn't have free ports for the requested pod ports"
	reasonTooManyPods   = "Too many pods"
)

// Taints the node lifecycle controller keeps on nodes that are not Ready
// (False) or not heard from (Unknown), and takes off nodes that are. The
// scheduler reads them off the Ready condition itself, so that a node is
// schedulable as soon as it reports Ready, without waiting for the
// controller's next pass, and a pod that tolerates them still lands on
// such a node as it would in kube.
const (
	taintNotReady      = "node.kubernetes.io/not-ready"
	taintUnreachable   = "node.kubernetes.io/unreachable"
	taintUnschedulable = "node.kubernetes.io/unschedulable"
)

// Requests a container is taken to make, for scoring only, when it makes
// none: as kube's, so a node full of request-less pods is not "empty".
var (
	defaultCPURequest    = resource.MustParse("100m")
	defaultMemoryRequest = resource.MustParse("200Mi")
)

// podRequests is what a pod takes from a node while it runs: its
// containers' requests together, with its restartable (sidecar) init
// containers, or more if an init container running alone with the
// sidecars started before it asks more, plus the pod's overhead. With
// nonZero, containers without a cpu or memory request count the
// defaults.
func podRequests(pod *corev1.Pod, nonZero bool) corev1.ResourceList {
	reqs := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		add(reqs, containerRequests(&pod.Spec.Containers[i], nonZero))
	}
	sidecars := corev1.ResourceList{}
	initMax := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		r := containerRequests(c, nonZero)
		running := corev1.ResourceList{}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(reqs, r)
			add(sidecars, r)
			add(running, sidecars)
		} else {
			add(running, r)
			add(running, sidecars)
		}
		maxOf(initMax, running)
	}
	maxOf(reqs, initMax)
	add(reqs, pod.Spec.Overhead)
	return reqs
}

func containerRequests(c *corev1.Container, nonZero bool) corev1.ResourceList {
	out := c.Resources.Requests.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	if nonZero {
		if _, ok := out[corev1.ResourceCPU]; !ok {
			out[corev1.ResourceCPU] = defaultCPURequest.DeepCopy()
		}
		if _, ok := out[corev1.ResourceMemory]; !ok {
			out[corev1.ResourceMemory] = defaultMemoryRequest.DeepCopy()
		}
	}
	return out
}

func add(to, from corev1.ResourceList) {
	for name, q := range from {
		sum := to[name]
		sum.Add(q)
		to[name] = sum
	}
}

func maxOf(to, from corev1.ResourceList) {
	for name, q := range from {
		if cur, ok := to[name]; !ok || q.Cmp(cur) > 0 {
			to[name] = q.DeepCopy()
		}
	}
}

// nodeState is a node with what the pods on it already take.
type nodeState struct {
	node *corev1.Node
	// requested sums the requests of the pods on the node; nonZero the
	// same with the scoring defaults.
	requested, nonZero corev1.ResourceList
	pods               int
	ports              []corev1.ContainerPort
}

// unfit is why a node does not fit: its reasons, and whether preempting
// pods could change that (kube's Unschedulable versus
// UnschedulableAndUnresolvable).
type unfit struct {
	reasons    []string
	unresolved bool
}

// fits checks pod against a node as kube's default filters do, in their
// order, stopping at the first that fails. It returns nil when the pod
// fits.
func fits(pod *corev1.Pod, n *nodeState) *unfit {
	if n.node.Spec.Unschedulable && !tolerates(pod.Spec.Tolerations, corev1.Taint{Key: taintUnschedulable, Effect: corev1.TaintEffectNoSchedule}) {
		return &unfit{reasons: []string{reasonUnschedulable}, unresolved: true}
	}
	for _, t := range effectiveTaints(n.node) {
		if (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) && !tolerates(pod.Spec.Tolerations, t) {
			return &unfit{reasons: []string{fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value)}, unresolved: true}
		}
	}
	if !matchesNode(pod, n.node) {
		return &unfit{reasons: []string{reasonAffinity}, unresolved: true}
	}
	if portsConflict(hostPorts(pod), n.ports) {
		return &unfit{reasons: []string{reasonPorts}}
	}
	if reasons := insufficient(pod, n); len(reasons) > 0 {
		return &unfit{reasons: reasons}
	}
	return nil
}

// effectiveTaints are the node's taints, with the readiness taints
// kube's node lifecycle controller would leave: none on a Ready node, a
// NoSchedule one on any other.
func effectiveTaints(node *corev1.Node) []corev1.Taint {
	var taints []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Key != taintNotReady && t.Key != taintUnreachable {
			taints = append(taints, t)
		}
	}
	key := taintUnreachable
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			switch c.Status {
			case corev1.ConditionTrue:
				return taints
			case corev1.ConditionFalse:
				key = taintNotReady
			}
		}
	}
	return append(taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
}

func tolerates(tolerations []corev1.Toleration, taint corev1.Taint) bool {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(&taint) {
			return true
		}
	}
	return false
}

// matchesNode is the pod's nodeSelector and its required node affinity:
// every selector label, and one of the terms.
func matchesNode(pod *corev1.Pod, node *corev1.Node) bool {
	for k, v := range pod.Spec.NodeSelector {
		if got, ok := node.Labels[k]; !ok || got != v {
			return false
		}
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if termMatches(term, node) {
			return true
		}
	}
	return false
}

// termMatches: all of a term's requirements hold; a term without any
// matches no node.
func termMatches(term corev1.NodeSelectorTerm, node *corev1.Node) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	for _, r := range term.MatchExpressions {
		v, ok := node.Labels[r.Key]
		if !requirementHolds(r, v, ok) {
			return false
		}
	}
	for _, r := range term.MatchFields {
		// metadata.name is the one field a node is selected by.
		if r.Key != "metadata.name" || !requirementHolds(r, node.Name, true) {
			return false
		}
	}
	return true
}

func requirementHolds(r corev1.NodeSelectorRequirement, value string, present bool) bool {
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return present && contains(r.Values, value)
	case corev1.NodeSelectorOpNotIn:
		return !present || !contains(r.Values, value)
	case corev1.NodeSelectorOpExists:
		return present
	case corev1.NodeSelectorOpDoesNotExist:
		return !present
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !present || len(r.Values) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(value, 10, 64)
		want, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == corev1.NodeSelectorOpGt {
			return have > want
		}
		return have < want
	}
	return false
}

func contains(values []string, v string) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}

// hostPorts are the host ports the pod's containers ask for.
func hostPorts(pod *corev1.Pod) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort > 0 {
				out = append(out, p)
			}
		}
	}
	return out
}

// portsConflict: two ports clash on the same host port and protocol when
// their host IPs are equal or either is the wildcard.
func portsConflict(want, used []corev1.ContainerPort) bool {
	for _, w := range want {
		for _, u := range used {
			if w.HostPort == u.HostPort && protocol(w) == protocol(u) && (wildcard(w.HostIP) || wildcard(u.HostIP) || w.HostIP == u.HostIP) {
				return true
			}
		}
	}
	return false
}

func protocol(p corev1.ContainerPort) corev1.Protocol {
	if p.Protocol == "" {
		return corev1.ProtocolTCP
	}
	return p.Protocol
}

func wildcard(ip string) bool { return ip == "" || ip == "0.0.0.0" || ip == "::" }

// insufficient lists what the node has too little of for the pod, in
// kube's order: pods, cpu, memory, ephemeral-storage, then other
// resources by name.
func insufficient(pod *corev1.Pod, n *nodeState) []string {
	alloc := n.node.Status.Allocatable
	var reasons []string
	// A node that reports no pods allocatable takes none, as in kube.
	if maxPods := alloc[corev1.ResourcePods]; int64(n.pods)+1 > maxPods.Value() {
		reasons = append(reasons, reasonTooManyPods)
	}
	reqs := podRequests(pod, false)
	var others []string
	for name := range reqs {
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		default:
			others = append(others, string(name))
		}
	}
	sort.Strings(others)
	names := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}
	for _, o := range others {
		names = append(names, corev1.ResourceName(o))
	}
	for _, name := range names {
		want, ok := reqs[name]
		if !ok || want.IsZero() {
			continue
		}
		free := alloc[name].DeepCopy()
		free.Sub(n.requested[name])
		if want.Cmp(free) > 0 {
			reasons = append(reasons, "Insufficient "+string(name))
		}
	}
	return reasons
}

// score is kube's LeastAllocated over cpu and memory, equally weighed:
// for each, the share of the node left free once the pod is on it, out of
// 100, with the scoring defaults for request-less containers.
func score(pod *corev1.Pod, n *nodeState) int64 {
	reqs := podRequests(pod, true)
	var total int64
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		alloc := n.node.Status.Allocatable[name]
		capacity := milli(name, alloc)
		used := milli(name, n.nonZero[name]) + milli(name, reqs[name])
		if capacity == 0 || used > capacity {
			continue
		}
		total += (capacity - used) * 100 / capacity
	}
	return total / 2
}

// milli counts cpu in millicores and everything else in units, as kube
// scores them.
func milli(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// fitError is kube's message for a pod no node fits: how many nodes
// failed for each reason, then what preemption found.
func fitError(total int, reasons map[string]int, preemption map[string]int, preemptionNever bool) string {
	msg := fmt.Sprintf("0/%d nodes are available:", total)
	if h := histogram(reasons); h != "" {
		msg += " " + h + "."
	}
	switch {
	case preemptionNever:
		msg += " preemption: not eligible due to preemptionPolicy=Never."
	case len(preemption) > 0:
		msg += fmt.Sprintf(" preemption: 0/%d nodes are available: %s..", total, histogram(preemption))
	}
	return msg
}

func histogram(counts map[string]int) string {
	parts := make([]string, 0, len(counts))
	for reason, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, reason))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
