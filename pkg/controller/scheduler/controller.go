// Package scheduler owns cronplane's scheduler: it binds each pending pod
// that asks for the default scheduler to the node that fits it best,
// through pods/binding, as kube-scheduler's default profile does for
// node readiness, taints, node selection and affinity, host ports and
// resource requests, preferring the least allocated node. A pod no node
// fits gets kube's Unschedulable condition and FailedScheduling event,
// and is tried again when a node or a bound pod changes, once its backoff
// has passed, or after five minutes. It runs inside the controller-manager, under its Lease, and
// sees the cluster only through a client and informers.
package scheduler

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/cronplane/cronplane/pkg/controller/worker"
)

// Name is the scheduler's name: the schedulerName of the pods it
// schedules, and the component of its events, as kube's.
const Name = "default-scheduler"

// kube-scheduler's backoff for a pod no node fits: from one second,
// doubling, to ten; and how long such a pod waits for a change before it
// is tried anyway.
const (
	initialBackoff     = time.Second
	maxBackoff         = 10 * time.Second
	unschedulableRetry = 5 * time.Minute
)

// Controller schedules pending pods.
type Controller struct {
	client   kubernetes.Interface
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	recorder record.EventRecorder
	synced   []cache.InformerSynced
	// queue holds pending pods' keys (namespace/name).
	queue workqueue.RateLimitingInterface
	now   func() time.Time

	mu sync.Mutex
	// placed are the pods on nodes, by uid: those the pod informer shows
	// bound and not terminated, and those this scheduler bound that the
	// informer does not show bound yet (assumed), so that pods scheduled
	// in a row count each other.
	placed map[types.UID]placement
	// failures are each pending pod's unschedulable attempts, for its
	// backoff.
	failures map[string]failure
	// binding counts the bindings in flight: as kube-scheduler's binding
	// cycle, each runs apart from the placement of the next pod.
	binding sync.WaitGroup
}

type failure struct {
	count int
	last  time.Time
}

type placement struct {
	node               string
	requested, nonZero corev1.ResourceList
	ports              []corev1.ContainerPort
	assumed            bool
}

// New builds the scheduler; recorder's events should come from Name.
func New(client kubernetes.Interface, pods coreinformers.PodInformer, nodes coreinformers.NodeInformer, recorder record.EventRecorder) *Controller {
	c := &Controller{
		client:   client,
		pods:     pods.Lister(),
		nodes:    nodes.Lister(),
		recorder: recorder,
		synced:   []cache.InformerSynced{pods.Informer().HasSynced, nodes.Informer().HasSynced},
		queue:    workqueue.NewNamedRateLimitingQueue(workqueue.NewItemExponentialFailureRateLimiter(initialBackoff, maxBackoff), "scheduler"),
		now:      time.Now,
		placed:   map[types.UID]placement{},
		failures: map[string]failure{},
	}
	// Run waits for the handlers to have seen every pod, not only for
	// the informers to have listed them: the placed pods must be known
	// before the first pod is placed.
	podsSeen, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podChanged,
		UpdateFunc: func(_, obj interface{}) { c.podChanged(obj) },
		DeleteFunc: c.podDeleted,
	})
	if err == nil {
		c.synced = append(c.synced, podsSeen.HasSynced)
	}
	// A node that appears or changes may fit pods none did. Its handler
	// counts in synced too, so that the pods it queues for the nodes
	// listed at start are queued before Run starts.
	nodesSeen, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(interface{}) { c.enqueuePending() },
		UpdateFunc: func(_, _ interface{}) { c.enqueuePending() },
	})
	if err == nil {
		c.synced = append(c.synced, nodesSeen.HasSynced)
	}
	return c
}

// Run schedules pods with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if !cache.WaitForNamedCacheSync("scheduler", ctx.Done(), c.synced...) {
		return
	}
	worker.Loop[string]{
		Queue:    c.queue,
		Sync:     c.sync,
		Describe: func(key string) string { return "scheduling pod " + key },
	}.Start(ctx, workers)
	<-ctx.Done()
	c.binding.Wait()
}

// pending: the pod waits for this scheduler to give it a node.
func pending(pod *corev1.Pod) bool {
	return pod.Spec.NodeName == "" && (pod.Spec.SchedulerName == Name || pod.Spec.SchedulerName == "") &&
		pod.DeletionTimestamp == nil && len(pod.Spec.SchedulingGates) == 0 &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

func terminated(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func (c *Controller) podChanged(obj interface{}) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pending(pod) {
		c.enqueue(pod)
		return
	}
	c.mu.Lock()
	old, had := c.placed[pod.UID]
	freed := false
	switch {
	case pod.Spec.NodeName != "" && !terminated(pod):
		c.placed[pod.UID] = place(pod, pod.Spec.NodeName, false)
	case pod.Spec.NodeName == "" && had && old.assumed:
		// The informer has not seen the binding yet: keep the assumption.
	default:
		delete(c.placed, pod.UID)
		freed = had
	}
	c.mu.Unlock()
	if freed {
		c.enqueuePending()
	}
}

func (c *Controller) podDeleted(obj interface{}) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	c.mu.Lock()
	_, had := c.placed[pod.UID]
	delete(c.placed, pod.UID)
	if key, err := cache.MetaNamespaceKeyFunc(pod); err == nil {
		delete(c.failures, key)
	}
	c.mu.Unlock()
	if had {
		c.enqueuePending()
	}
}

func place(pod *corev1.Pod, node string, assumed bool) placement {
	return placement{node: node, requested: podRequests(pod, false), nonZero: podRequests(pod, true), ports: hostPorts(pod), assumed: assumed}
}

// enqueue queues a pending pod, or, when no node fitted it lately, once
// its backoff has passed.
func (c *Controller) enqueue(pod *corev1.Pod) {
	key, err := cache.MetaNamespaceKeyFunc(pod)
	if err != nil {
		return
	}
	c.mu.Lock()
	f, failed := c.failures[key]
	c.mu.Unlock()
	if wait := f.last.Add(backoff(f.count)).Sub(c.now()); failed && wait > 0 {
		c.queue.AddAfter(key, wait)
		return
	}
	c.queue.Add(key)
}

// enqueuePending queues every pending pod, for a change that may make
// room for them.
func (c *Controller) enqueuePending() {
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, pod := range pods {
		if pending(pod) {
			c.enqueue(pod)
		}
	}
}

// sync schedules one pod: binds it to the best node that fits, or
// reports why none does and asks to be tried again later.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.forgetFailures(key)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	_, assumed := c.placed[pod.UID]
	c.mu.Unlock()
	if !pending(pod) || assumed {
		c.forgetFailures(key)
		return 0, nil
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return 0, err
	}
	node, message := c.choose(pod, nodes)
	if node == "" {
		return c.unschedulable(ctx, pod, key, message)
	}
	// The pod counts on its node from now on, so that the next placement
	// sees it while the binding is in flight.
	c.mu.Lock()
	c.placed[pod.UID] = place(pod, node, true)
	c.mu.Unlock()
	c.binding.Add(1)
	go func() {
		defer c.binding.Done()
		c.bind(ctx, pod, key, node)
	}()
	return 0, nil
}

// bind writes pod's binding to node; when that fails the assumption is
// dropped and the pod tried again after its backoff.
func (c *Controller) bind(ctx context.Context, pod *corev1.Pod, key, node string) {
	err := c.client.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		c.mu.Lock()
		if p, ok := c.placed[pod.UID]; ok && p.assumed {
			delete(c.placed, pod.UID)
		}
		c.mu.Unlock()
		utilruntime.HandleError(fmt.Errorf("binding pod %s to node %s: %w", key, node, err))
		if ctx.Err() == nil {
			c.queue.AddRateLimited(key)
		}
		return
	}
	c.forgetFailures(key)
	if err == nil {
		c.recorder.Eventf(pod, corev1.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node)
	}
}

// choose returns the best node for pod among nodes, or "" and kube's
// message for why none fits.
func (c *Controller) choose(pod *corev1.Pod, nodes []*corev1.Node) (string, string) {
	if len(nodes) == 0 {
		return "", "no nodes available to schedule pods"
	}
	states := c.states(nodes)
	best, bestScore := "", int64(-1)
	reasons, preemption := map[string]int{}, map[string]int{}
	for _, n := range nodes {
		s := states[n.Name]
		if u := fits(pod, s); u != nil {
			for _, r := range u.reasons {
				reasons[r]++
			}
			if u.unresolved {
				preemption["Preemption is not helpful for scheduling"]++
			} else {
				preemption["No preemption victims found for incoming pod"]++
			}
			continue
		}
		// Ties go to the first node by name.
		if sc := score(pod, s); sc > bestScore || (sc == bestScore && n.Name < best) {
			best, bestScore = n.Name, sc
		}
	}
	if best != "" {
		return best, ""
	}
	never := pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == corev1.PreemptNever
	return "", fitError(len(nodes), reasons, preemption, never)
}

// states are the nodes with what the pods placed on each take.
func (c *Controller) states(nodes []*corev1.Node) map[string]*nodeState {
	states := make(map[string]*nodeState, len(nodes))
	for _, n := range nodes {
		states[n.Name] = &nodeState{node: n, requested: corev1.ResourceList{}, nonZero: corev1.ResourceList{}}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.placed {
		s, ok := states[p.node]
		if !ok {
			continue
		}
		add(s.requested, p.requested)
		add(s.nonZero, p.nonZero)
		s.pods++
		s.ports = append(s.ports, p.ports...)
	}
	return states
}

// unschedulable reports that no node fits pod, as kube-scheduler does:
// a FailedScheduling event and the PodScheduled condition False; then
// the pod waits for a change, or five minutes.
func (c *Controller) unschedulable(ctx context.Context, pod *corev1.Pod, key, message string) (time.Duration, error) {
	// The failure counts before the condition is written: the informer
	// may hand that write back before UpdateStatus returns, and the pod
	// must then wait out its backoff, not be queued at once.
	c.mu.Lock()
	c.failures[key] = failure{count: c.failures[key].count + 1, last: c.now()}
	c.mu.Unlock()
	c.recorder.Event(pod, corev1.EventTypeWarning, "FailedScheduling", message)
	if cond := condition(pod); cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != corev1.PodReasonUnschedulable || cond.Message != message {
		updated := pod.DeepCopy()
		setCondition(updated, message, metav1.NewTime(c.now()))
		if _, err := c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("updating the PodScheduled condition: %w", err)
		}
	}
	return unschedulableRetry, nil
}

func (c *Controller) forgetFailures(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.failures, key)
}

// backoff is the wait after a pod's nth unschedulable attempt.
func backoff(n int) time.Duration {
	d := initialBackoff
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

func condition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodScheduled {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// setCondition sets PodScheduled False, Unschedulable, keeping its
// transition time when it was False already.
func setCondition(pod *corev1.Pod, message string, now metav1.Time) {
	want := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: message, LastTransitionTime: now}
	if cur := condition(pod); cur != nil {
		if cur.Status == corev1.ConditionFalse {
			want.LastTransitionTime = cur.LastTransitionTime
		}
		*cur = want
		return
	}
	pod.Status.Conditions = append(pod.Status.Conditions, want)
}
