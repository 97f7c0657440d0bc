// Package nodelifecycle owns the node lifecycle controller: every monitor
// period it judges each node's health from its Lease in kube-node-lease
// and its Ready condition's heartbeat, marks the conditions of a node
// whose kubelet went silent for the grace period Unknown, keeps the
// not-ready and unreachable taints (NoSchedule and NoExecute) in step with
// the Ready condition, marks the pods of a node that is not ready as not
// ready, and deletes the pods that do not tolerate a NoExecute taint of
// their node, or tolerate it for less time than has passed since it was
// added, first giving them a DisruptionTarget condition, as kube v1.29's
// node lifecycle controller and taint eviction manager do.
package nodelifecycle

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	coordinationinformers "k8s.io/client-go/informers/coordination/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Kube's names and texts.
const (
	// LeaseNamespace holds the kubelets' heartbeat Leases, one per node,
	// named after it.
	LeaseNamespace = "kube-node-lease"
	// TaintNotReady marks a node whose Ready condition is False.
	TaintNotReady = "node.kubernetes.io/not-ready"
	// TaintUnreachable marks a node whose Ready condition is Unknown.
	TaintUnreachable = "node.kubernetes.io/unreachable"

	reasonUnknown      = "NodeStatusUnknown"
	messageUnknown     = "Kubelet stopped posting node status."
	reasonNeverUpdated = "NodeStatusNeverUpdated"
	messageNeverUpdate = "Kubelet never posted node status."

	disruptionReason  = "DeletionByTaintManager"
	disruptionMessage = "Taint manager: deleting due to NoExecute taint"
)

// monitoredConditions are the node conditions the kubelet posts and the
// controller marks Unknown when the kubelet goes silent.
var monitoredConditions = []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure}

// probe is what the controller last saw of a node's kubelet: the
// heartbeat and lease renewal it saw, and when it saw either change, on
// its own clock, so that a kubelet's skewed clock does not matter.
type probe struct {
	heartbeat metav1.Time
	renew     metav1.MicroTime
	seen      time.Time
}

// Controller is the node lifecycle controller.
type Controller struct {
	client      kubernetes.Interface
	nodes       corelisters.NodeLister
	pods        corelisters.PodLister
	leases      coordinationlisters.LeaseLister
	synced      []cache.InformerSynced
	clock       clock.Clock
	period      time.Duration
	gracePeriod time.Duration
	// startupGrace replaces gracePeriod for a node whose kubelet has not
	// posted a Ready condition yet: it may still be starting.
	startupGrace time.Duration
	probes       map[string]probe
}

// New builds the controller: it looks every period at the nodes, and
// judges a node whose kubelet renewed neither its Lease nor its status
// for gracePeriod (startupGrace while it never posted a Ready condition)
// unreachable.
func New(client kubernetes.Interface, nodes coreinformers.NodeInformer, pods coreinformers.PodInformer, leases coordinationinformers.LeaseInformer, clk clock.Clock, period, gracePeriod, startupGrace time.Duration) *Controller {
	return &Controller{
		client: client, nodes: nodes.Lister(), pods: pods.Lister(), leases: leases.Lister(),
		synced: []cache.InformerSynced{nodes.Informer().HasSynced, pods.Informer().HasSynced, leases.Informer().HasSynced},
		clock:  clk, period: period, gracePeriod: gracePeriod, startupGrace: startupGrace, probes: map[string]probe{},
	}
}

// Run monitors the nodes every period until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	wait.UntilWithContext(ctx, c.Sync, c.period)
}

// Sync is one pass over every node and the pods bound to them.
func (c *Controller) Sync(ctx context.Context) {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		klog.FromContext(ctx).Error(err, "listing nodes")
		return
	}
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		klog.FromContext(ctx).Error(err, "listing pods")
		return
	}
	bound := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			bound[p.Spec.NodeName] = append(bound[p.Spec.NodeName], p)
		}
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		seen[n.Name] = true
		node, err := c.monitor(ctx, n)
		if err != nil {
			klog.FromContext(ctx).Error(err, "monitoring node", "node", n.Name)
			continue
		}
		if err := c.syncPods(ctx, node, bound[node.Name]); err != nil {
			klog.FromContext(ctx).Error(err, "syncing pods of node", "node", n.Name)
		}
	}
	for name := range c.probes {
		if !seen[name] {
			delete(c.probes, name)
		}
	}
}

// monitor judges one node's health, marks its conditions Unknown when its
// kubelet went silent and brings its taints in step with its Ready
// condition; it returns the node as stored.
func (c *Controller) monitor(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
	now := c.clock.Now()
	ready := condition(node, corev1.NodeReady)
	p, known := c.probes[node.Name]
	var heartbeat metav1.Time
	if ready != nil {
		heartbeat = ready.LastHeartbeatTime
	}
	var renew metav1.MicroTime
	if lease, err := c.leases.Leases(LeaseNamespace).Get(node.Name); err == nil && lease.Spec.RenewTime != nil {
		renew = *lease.Spec.RenewTime
	}
	if !known || !heartbeat.Equal(&p.heartbeat) || !renew.Equal(&p.renew) {
		p = probe{heartbeat: heartbeat, renew: renew, seen: now}
	}
	c.probes[node.Name] = p

	grace := c.gracePeriod
	if ready == nil {
		grace = c.startupGrace
	}
	if now.Sub(p.seen) > grace {
		marked := node.DeepCopy()
		if markUnknown(marked, metav1.NewTime(now)) {
			updated, err := c.client.CoreV1().Nodes().UpdateStatus(ctx, marked, metav1.UpdateOptions{})
			if err != nil {
				return nil, err
			}
			node = updated
		}
	}
	return c.syncTaints(ctx, node)
}

// markUnknown sets the monitored conditions the kubelet last posted (or
// never posted) to Unknown; it reports whether any changed.
func markUnknown(node *corev1.Node, now metav1.Time) bool {
	changed := false
	for _, t := range monitoredConditions {
		cond := condition(node, t)
		if cond == nil {
			node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: t, Status: corev1.ConditionUnknown,
				Reason: reasonNeverUpdated, Message: messageNeverUpdate, LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: now})
			changed = true
			continue
		}
		if cond.Status == corev1.ConditionUnknown {
			continue
		}
		cond.Status, cond.Reason, cond.Message, cond.LastTransitionTime = corev1.ConditionUnknown, reasonUnknown, messageUnknown, now
		changed = true
	}
	return changed
}

// syncTaints gives the node the taints its Ready condition calls for:
// not-ready when False, unreachable when Unknown, neither when True, each
// as NoSchedule and NoExecute (the latter stamped with when it was added).
func (c *Controller) syncTaints(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
	cond := condition(node, corev1.NodeReady)
	if cond == nil {
		// Nothing is known yet: the not-ready taint admission gave the
		// new node stays until the kubelet reports or the grace ends.
		return node, nil
	}
	want := ""
	switch cond.Status {
	case corev1.ConditionUnknown:
		want = TaintUnreachable
	case corev1.ConditionFalse:
		want = TaintNotReady
	}
	now := metav1.NewTime(c.clock.Now())
	taints := make([]corev1.Taint, 0, len(node.Spec.Taints)+2)
	has := map[corev1.TaintEffect]bool{}
	changed := false
	for _, t := range node.Spec.Taints {
		if t.Key == TaintNotReady || t.Key == TaintUnreachable {
			if t.Key != want || (t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute) {
				changed = true
				continue
			}
			has[t.Effect] = true
		}
		taints = append(taints, t)
	}
	if want != "" {
		for _, effect := range []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute} {
			if has[effect] {
				continue
			}
			t := corev1.Taint{Key: want, Effect: effect}
			if effect == corev1.TaintEffectNoExecute {
				t.TimeAdded = &now
			}
			taints = append(taints, t)
			changed = true
		}
	}
	if !changed {
		return node, nil
	}
	tainted := node.DeepCopy()
	tainted.Spec.Taints = taints
	return c.client.CoreV1().Nodes().Update(ctx, tainted, metav1.UpdateOptions{})
}

// syncPods looks at the pods bound to the node and not being deleted: it
// marks them not ready when the node is not ready, and evicts those whose
// toleration of the node's NoExecute taints ran out.
func (c *Controller) syncPods(ctx context.Context, node *corev1.Node, pods []*corev1.Pod) error {
	nodeReady := true
	if cond := condition(node, corev1.NodeReady); cond == nil || cond.Status != corev1.ConditionTrue {
		nodeReady = false
	}
	var noExecute []corev1.Taint
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			noExecute = append(noExecute, t)
		}
	}
	for _, pod := range pods {
		if len(noExecute) > 0 {
			evicted, err := c.evict(ctx, pod, noExecute)
			if err != nil {
				return err
			}
			if evicted {
				continue
			}
		}
		if !nodeReady {
			if err := c.markNotReady(ctx, pod); err != nil {
				return err
			}
		}
	}
	return nil
}

// evict deletes the pod when its tolerations of the taints ran out: at
// once for a taint it does not tolerate, else the shortest
// tolerationSeconds after the taint was added; it reports whether the pod
// was deleted.
func (c *Controller) evict(ctx context.Context, pod *corev1.Pod, taints []corev1.Taint) (bool, error) {
	now := c.clock.Now()
	due := false
	for i := range taints {
		taint := &taints[i]
		var seconds *int64
		tolerated := false
		for j := range pod.Spec.Tolerations {
			tol := &pod.Spec.Tolerations[j]
			if !tol.ToleratesTaint(taint) {
				continue
			}
			if !tolerated || (seconds != nil && (tol.TolerationSeconds == nil || *tol.TolerationSeconds > *seconds)) {
				seconds = tol.TolerationSeconds
			}
			tolerated = true
		}
		if !tolerated {
			due = true
			break
		}
		if seconds == nil {
			continue
		}
		added := now
		if taint.TimeAdded != nil {
			added = taint.TimeAdded.Time
		}
		if !now.Before(added.Add(time.Duration(*seconds) * time.Second)) {
			due = true
			break
		}
	}
	if !due {
		return false, nil
	}
	if err := c.markDisruption(ctx, pod); err != nil {
		return false, err
	}
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	klog.FromContext(ctx).Info("deleted pod for a NoExecute taint of its node", "pod", klog.KObj(pod), "node", pod.Spec.NodeName)
	return true, nil
}

// markDisruption gives the pod the DisruptionTarget condition saying why
// it is deleted, so that its Job sees a disruption, not a failure.
func (c *Controller) markDisruption(ctx context.Context, pod *corev1.Pod) error {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.DisruptionTarget && cond.Status == corev1.ConditionTrue {
			return nil
		}
	}
	marked := pod.DeepCopy()
	setPodCondition(marked, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: disruptionReason, Message: disruptionMessage, LastTransitionTime: metav1.NewTime(c.clock.Now())})
	_, err := c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, marked, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// markNotReady sets the pod's Ready condition False: its kubelet can no
// longer say it serves.
func (c *Controller) markNotReady(ctx context.Context, pod *corev1.Pod) error {
	for i := range pod.Status.Conditions {
		cond := &pod.Status.Conditions[i]
		if cond.Type != corev1.PodReady || cond.Status == corev1.ConditionFalse {
			continue
		}
		marked := pod.DeepCopy()
		marked.Status.Conditions[i].Status = corev1.ConditionFalse
		marked.Status.Conditions[i].LastTransitionTime = metav1.NewTime(c.clock.Now())
		_, err := c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, marked, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	return nil
}

func setPodCondition(pod *corev1.Pod, cond corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == cond.Type {
			pod.Status.Conditions[i] = cond
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, cond)
}

func condition(node *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}
