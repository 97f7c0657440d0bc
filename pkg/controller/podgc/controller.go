// Package podgc owns the pod garbage collector: every 20 seconds it
// deletes the oldest terminated pods (evicted ones first) beyond a
// threshold, the pods bound to a node that no longer exists (missing from
// the cache for 40 seconds, then confirmed missing by the apiserver), the
// terminating pods no node was ever assigned, and the terminating pods of
// a node that is not ready and tainted node.kubernetes.io/out-of-service.
// Those pods have no kubelet to finish them, so a pod not yet finished is
// first marked Failed (with a DisruptionTarget condition when its node is
// gone), as kube v1.29 does, so that the Job controller counts it, and
// then deleted without grace.
package podgc

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const (
	// checkPeriod is how often the collector looks at every pod.
	checkPeriod = 20 * time.Second
	// quarantine is how long a node must be missing from the cache before
	// the apiserver is asked whether it exists: a node just created may
	// not be cached yet.
	quarantine = 40 * time.Second
	// deleteWorkers bounds the deletions of one pass in flight at once.
	deleteWorkers = 32
	// outOfServiceTaint marks a node shut down for good: its terminating
	// pods will never be finished by its kubelet.
	outOfServiceTaint = "node.kubernetes.io/out-of-service"
)

// Why a pod is deleted: the reason label of the metrics, kube's.
const (
	reasonTerminated   = "terminated"
	reasonOutOfService = "out-of-service"
	reasonOrphaned     = "orphaned"
	reasonUnscheduled  = "unscheduled"
)

// Metrics count the deletions, by namespace and reason: Deleting those
// tried, Errors those that failed.
type Metrics struct {
	Deleting, Errors *prometheus.CounterVec
}

// Controller collects pods no kubelet will finish or that are too many.
type Controller struct {
	metrics   Metrics
	client    kubernetes.Interface
	pods      corelisters.PodLister
	nodes     corelisters.NodeLister
	synced    []cache.InformerSynced
	threshold int
	clock     clock.PassiveClock

	// missingSince is when each node some pod is bound to was first seen
	// missing from the cache; only the collecting goroutine uses it.
	missingSince map[string]time.Time
}

// New builds a collector over shared informers of pods and nodes.
// threshold is how many terminated pods may exist; zero or less keeps
// them all.
func New(client kubernetes.Interface, pods coreinformers.PodInformer, nodes coreinformers.NodeInformer, threshold int, m Metrics, clk clock.PassiveClock) *Controller {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Controller{
		metrics:      m,
		client:       client,
		pods:         pods.Lister(),
		nodes:        nodes.Lister(),
		synced:       []cache.InformerSynced{pods.Informer().HasSynced, nodes.Informer().HasSynced},
		threshold:    threshold,
		clock:        clk,
		missingSince: map[string]time.Time{},
	}
}

// Run collects every checkPeriod until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	klog.InfoS("Starting GC controller")
	defer klog.InfoS("Shutting down GC controller")
	if !cache.WaitForNamedCacheSync("GC", ctx.Done(), c.synced...) {
		return
	}
	wait.UntilWithContext(ctx, c.collect, checkPeriod)
}

// collect makes one pass over the cached pods.
func (c *Controller) collect(ctx context.Context) {
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if c.threshold > 0 {
		c.collectTerminated(ctx, pods)
	}
	c.collectOutOfService(ctx, pods)
	c.collectOrphaned(ctx, pods, nodes)
	c.collectUnscheduledTerminating(ctx, pods)
}

// collectTerminated deletes the terminated pods beyond the threshold,
// evicted ones first, then the oldest.
func (c *Controller) collectTerminated(ctx context.Context, pods []*corev1.Pod) {
	var terminated []*corev1.Pod
	for _, p := range pods {
		if terminatedPhase(p) {
			terminated = append(terminated, p)
		}
	}
	n := len(terminated) - c.threshold
	if n <= 0 {
		return
	}
	klog.InfoS("Garbage collecting pods", "numPods", n)
	sortForDeletion(terminated)
	c.deleteAll(ctx, terminated[:n], reasonTerminated, nil)
}

// collectOutOfService deletes the terminating pods of nodes that are not
// ready and tainted out of service.
func (c *Controller) collectOutOfService(ctx context.Context, pods []*corev1.Pod) {
	var doomed []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil || p.Spec.NodeName == "" {
			continue
		}
		node, err := c.nodes.Get(p.Spec.NodeName)
		if err != nil {
			continue
		}
		if !nodeReady(node) && tainted(node, outOfServiceTaint) {
			doomed = append(doomed, p)
		}
	}
	if len(doomed) == 0 {
		return
	}
	sortForDeletion(doomed)
	c.deleteAll(ctx, doomed, reasonOutOfService, nil)
}

// collectOrphaned deletes the pods bound to nodes that no longer exist. A
// node missing from the cache is quarantined first; once quarantined long
// enough and still missing, the apiserver confirms it is gone.
func (c *Controller) collectOrphaned(ctx context.Context, pods []*corev1.Pod, nodes []*corev1.Node) {
	cached := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		cached[n.Name] = true
	}
	now := c.clock.Now()
	for _, p := range pods {
		if name := p.Spec.NodeName; name != "" && !cached[name] {
			if _, ok := c.missingSince[name]; !ok {
				c.missingSince[name] = now
			}
		}
	}
	gone := map[string]bool{}
	for name, since := range c.missingSince {
		if now.Sub(since) < quarantine {
			continue
		}
		// Asked once per quarantine: a node still missing from the cache
		// at the next pass is quarantined again.
		delete(c.missingSince, name)
		if cached[name] {
			continue
		}
		_, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			klog.InfoS("Garbage collecting pods that are running on deleted node", "node", klog.KRef("", name))
			gone[name] = true
		case err != nil:
			klog.ErrorS(err, "Error while getting node", "node", klog.KRef("", name))
		}
	}
	var orphans []*corev1.Pod
	for _, p := range pods {
		if gone[p.Spec.NodeName] {
			orphans = append(orphans, p)
		}
	}
	c.deleteAll(ctx, orphans, reasonOrphaned, &corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "DeletionByPodGC", Message: "PodGC: node no longer exists",
	})
}

// collectUnscheduledTerminating deletes the terminating pods bound to no
// node: no kubelet will ever finish them.
func (c *Controller) collectUnscheduledTerminating(ctx context.Context, pods []*corev1.Pod) {
	var doomed []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil && p.Spec.NodeName == "" {
			doomed = append(doomed, p)
		}
	}
	c.deleteAll(ctx, doomed, reasonUnscheduled, nil)
}

// deleteAll marks each pod Failed, with condition if any, unless it has
// finished, and deletes it without grace, several at once, counting
// them under reason.
func (c *Controller) deleteAll(ctx context.Context, pods []*corev1.Pod, reason string, condition *corev1.PodCondition) {
	workqueue.ParallelizeUntil(ctx, deleteWorkers, len(pods), func(i int) {
		p := pods[i]
		c.metrics.Deleting.WithLabelValues(p.Namespace, reason).Inc()
		if err := c.failAndDelete(ctx, p, condition); err != nil {
			utilruntime.HandleError(fmt.Errorf("deleting pod %s/%s (%s): %w", p.Namespace, p.Name, reason, err))
			c.metrics.Errors.WithLabelValues(p.Namespace, reason).Inc()
			return
		}
		klog.InfoS("Forced deletion of Pod succeeded", "pod", klog.KObj(p), "reason", reason)
	})
}

func (c *Controller) failAndDelete(ctx context.Context, p *corev1.Pod, condition *corev1.PodCondition) error {
	klog.InfoS("PodGC is force deleting Pod", "pod", klog.KObj(p))
	// A pod not finished may never be: no kubelet will report it. Failed
	// is what the Job controller waits for to replace it.
	if !terminatedPhase(p) {
		if err := c.fail(ctx, p, condition); err != nil {
			return err
		}
	}
	return c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, *metav1.NewDeleteOptions(0))
}

// fail patches the pod's status to phase Failed, with condition if any,
// as kube's collector does: a strategic merge patch of the change, with
// the pod's UID as a precondition, so that a pod of the same name created
// since is left alone.
func (c *Controller) fail(ctx context.Context, p *corev1.Pod, condition *corev1.PodCondition) error {
	status := p.Status.DeepCopy()
	status.Phase = corev1.PodFailed
	if condition != nil {
		setCondition(status, *condition, metav1.NewTime(c.clock.Now()))
	}
	old, err := json.Marshal(corev1.Pod{Status: p.Status})
	if err != nil {
		return err
	}
	// The UID only in the new object, so that the patch carries it.
	cur, err := json.Marshal(corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: p.UID}, Status: *status})
	if err != nil {
		return err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(old, cur, corev1.Pod{})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

// setCondition sets a condition of the status, keeping its transition
// time when its status does not change.
func setCondition(status *corev1.PodStatus, cond corev1.PodCondition, now metav1.Time) {
	cond.LastTransitionTime = now
	for i, c := range status.Conditions {
		if c.Type != cond.Type {
			continue
		}
		if c.Status == cond.Status {
			cond.LastTransitionTime = c.LastTransitionTime
		}
		status.Conditions[i] = cond
		return
	}
	status.Conditions = append(status.Conditions, cond)
}

// terminatedPhase is true of a pod whose containers will not run again.
func terminatedPhase(p *corev1.Pod) bool {
	switch p.Status.Phase {
	case corev1.PodPending, corev1.PodRunning, corev1.PodUnknown:
		return false
	}
	return true
}

// sortForDeletion puts evicted pods first, as deleting them takes nothing
// running away, then the oldest, then by name.
func sortForDeletion(pods []*corev1.Pod) {
	evicted := func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted" }
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if evicted(a) != evicted(b) {
			return evicted(a)
		}
		if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.Name < b.Name
		}
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func tainted(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
