// Package namespace owns the namespace controller: when a namespace is
// being deleted it deletes every namespaced object of every served
// resource in it, reports progress in the namespace's status conditions as
// kube does, and, once nothing is left, removes the "kubernetes" finalizer
// through the finalize subresource so that the apiserver removes the
// namespace. It sees the cluster only through clients.
package namespace

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/controller/worker"
)

// conditionTypes are the conditions kube's namespace deleter keeps on a
// terminating namespace, in the order it adds them.
var conditionTypes = []corev1.NamespaceConditionType{
	corev1.NamespaceDeletionDiscoveryFailure,
	corev1.NamespaceDeletionGVParsingFailure,
	corev1.NamespaceDeletionContentFailure,
	corev1.NamespaceContentRemaining,
	corev1.NamespaceFinalizersRemaining,
}

// healthy is what a condition reports, with status False, while nothing is
// wrong; kube reports every type from the first pass on, not only failures.
var healthy = map[corev1.NamespaceConditionType]struct{ reason, message string }{
	corev1.NamespaceDeletionDiscoveryFailure: {"ResourcesDiscovered", "All resources successfully discovered"},
	corev1.NamespaceDeletionGVParsingFailure: {"ParsedGroupVersions", "All legacy kube types successfully parsed"},
	corev1.NamespaceDeletionContentFailure:   {"ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
	corev1.NamespaceContentRemaining:         {"ContentRemoved", "All content successfully removed"},
	corev1.NamespaceFinalizersRemaining:      {"ContentHasNoFinalizers", "All content-preserving finalizers finished"},
}

// Controller empties and finalizes namespaces being deleted.
type Controller struct {
	client     kubernetes.Interface
	dynamic    dynamic.Interface
	discovery  discovery.DiscoveryInterface
	namespaces corelisters.NamespaceLister
	synced     cache.InformerSynced
	queue      workqueue.RateLimitingInterface
}

// New builds the controller.
func New(client kubernetes.Interface, dyn dynamic.Interface, namespaces coreinformers.NamespaceInformer) *Controller {
	c := &Controller{
		client:     client,
		dynamic:    dyn,
		discovery:  client.Discovery(),
		namespaces: namespaces.Lister(),
		synced:     namespaces.Informer().HasSynced,
		queue:      workqueue.NewNamedRateLimitingQueue(workqueue.NewItemExponentialFailureRateLimiter(100*time.Millisecond, 30*time.Second), "namespace"),
	}
	_, _ = namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj interface{}) { c.enqueue(obj) },
	})
	return c
}

func (c *Controller) enqueue(obj interface{}) {
	if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
		c.queue.Add(ns.Name)
	}
}

// Run processes namespaces with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return
	}
	worker.Loop[string]{
		Queue: c.queue,
		Sync: func(ctx context.Context, name string) (time.Duration, error) {
			remaining, err := c.sync(ctx, name)
			if remaining {
				// Objects with finalizers of their own take time to go.
				return time.Second, err
			}
			return 0, err
		},
		Describe: func(name string) string { return "deleting namespace " + name },
	}.Start(ctx, workers)
	<-ctx.Done()
}

// sync deletes the content of a terminating namespace; remaining reports
// objects still there, held by finalizers of their own.
func (c *Controller) sync(ctx context.Context, name string) (remaining bool, err error) {
	if _, err := c.namespaces.Get(name); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	// Other actors edit a terminating namespace too (its status, other
	// finalizers): work from the live copy, as kube does.
	ns, err := c.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if ns.DeletionTimestamp == nil || !hasFinalizer(ns) {
		return false, nil
	}
	if ns.Status.Phase != corev1.NamespaceTerminating {
		if ns, err = c.retryOnConflict(ctx, ns, c.markTerminating); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, err
		}
	}
	ns, remaining, err = c.deleteContent(ctx, ns)
	if err != nil || remaining {
		return remaining, err
	}
	if _, err := c.retryOnConflict(ctx, ns, c.finalize); err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	klog.InfoS("Namespace emptied and finalized", "namespace", name)
	return false, nil
}

func hasFinalizer(ns *corev1.Namespace) bool {
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			return true
		}
	}
	return false
}

// deleteContent deletes everything in ns, reports progress in its status
// conditions and returns the namespace as last written. remaining means
// objects held by finalizers are still there; err covers discovery and
// deletion failures, which conditions report too.
func (c *Controller) deleteContent(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, bool, error) {
	var report deletionReport
	var errs []error
	lists, err := c.discovery.ServerPreferredNamespacedResources()
	if err != nil {
		// Partial discovery still names resources worth emptying.
		errs = append(errs, err)
		report.discoveryErr = err
	}
	resources, err := deletableResources(lists)
	if err != nil {
		errs = append(errs, err)
		report.parseErr = err
	}
	report.remaining = map[schema.GroupVersionResource]int{}
	report.finalizers = map[string]int{}
	for gvr, verbs := range resources {
		left, finalizers, err := c.deleteAll(ctx, ns.Name, gvr, verbs)
		if err != nil {
			errs = append(errs, err)
			report.contentErrs = append(report.contentErrs, err)
		}
		if left > 0 {
			report.remaining[gvr] = left
			for f, n := range finalizers {
				report.finalizers[f] += n
			}
		}
	}
	if updated := ns.DeepCopy(); mergeConditions(&updated.Status, report.conditions()) {
		// As in kube, a failed status write does not hold up the deletion;
		// the next pass writes the conditions again.
		if out, err := c.client.CoreV1().Namespaces().UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			utilruntime.HandleError(fmt.Errorf("updating the status conditions of namespace %s: %w", ns.Name, err))
		} else {
			ns = out
		}
	}
	if len(errs) > 0 {
		return ns, false, utilerrors.NewAggregate(errs)
	}
	return ns, len(report.remaining) > 0, nil
}

// deletableResources maps the discovered resources that can be deleted to
// their verbs. As in kube, a group version that does not parse fails the
// whole list: nothing is deleted until discovery is sound.
func deletableResources(lists []*metav1.APIResourceList) (map[schema.GroupVersionResource][]string, error) {
	out := map[schema.GroupVersionResource][]string{}
	for _, l := range lists {
		var gv schema.GroupVersion
		parsed := false
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !has(r.Verbs, "delete") {
				continue
			}
			if !parsed {
				var err error
				if gv, err = schema.ParseGroupVersion(l.GroupVersion); err != nil {
					return nil, err
				}
				parsed = true
			}
			out[gv.WithResource(r.Name)] = r.Verbs
		}
	}
	return out, nil
}

func has(verbs []string, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}

// deleteAll deletes the objects of one resource in a namespace and returns
// how many are still there and the finalizers holding them. Objects left
// without a finalizer are an error, as in kube: nothing should keep them.
func (c *Controller) deleteAll(ctx context.Context, ns string, gvr schema.GroupVersionResource, verbs []string) (int, map[string]int, error) {
	if !has(verbs, "list") {
		return 0, nil, nil
	}
	client := c.dynamic.Resource(gvr).Namespace(ns)
	list, err := client.List(ctx, metav1.ListOptions{})
	if unsupported(err) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	// Background propagation keeps the garbage collector from adding the
	// orphan finalizer to objects deleted this way.
	background := metav1.DeletePropagationBackground
	for _, item := range list.Items {
		if item.GetDeletionTimestamp() != nil {
			continue
		}
		if err := client.Delete(ctx, item.GetName(), metav1.DeleteOptions{PropagationPolicy: &background}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
			return 0, nil, err
		}
	}
	after, err := client.List(ctx, metav1.ListOptions{})
	if unsupported(err) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	if len(after.Items) == 0 {
		return 0, nil, nil
	}
	finalizers := map[string]int{}
	for _, item := range after.Items {
		for _, f := range item.GetFinalizers() {
			finalizers[f]++
		}
	}
	if len(finalizers) == 0 {
		return len(after.Items), nil, fmt.Errorf("unexpected items still remain in namespace: %s for gvr: %v", ns, gvr)
	}
	return len(after.Items), finalizers, nil
}

// unsupported tells the answers of a resource discovery lists but that
// does not serve the verb.
func unsupported(err error) bool {
	return apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err)
}

// deletionReport collects what one pass over a namespace found.
type deletionReport struct {
	discoveryErr error
	parseErr     error
	contentErrs  []error
	remaining    map[schema.GroupVersionResource]int
	finalizers   map[string]int
}

// conditions are the failing conditions of the pass, with kube's reasons
// and messages; types missing from them are healthy.
func (r deletionReport) conditions() []corev1.NamespaceCondition {
	var out []corev1.NamespaceCondition
	failing := func(typ corev1.NamespaceConditionType, reason, msg string) {
		out = append(out, corev1.NamespaceCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()})
	}
	if err := r.discoveryErr; err != nil {
		msg := err.Error()
		var groups *discovery.ErrGroupDiscoveryFailed
		if errors.As(err, &groups) {
			msg = fmt.Sprintf("Discovery failed for some groups, %d failing: %v", len(groups.Groups), err)
		}
		failing(corev1.NamespaceDeletionDiscoveryFailure, "DiscoveryFailed", msg)
	}
	if r.parseErr != nil {
		failing(corev1.NamespaceDeletionGVParsingFailure, "GroupVersionParsingFailed", r.parseErr.Error())
	}
	if len(r.contentErrs) > 0 {
		msgs := make([]string, 0, len(r.contentErrs))
		for _, e := range r.contentErrs {
			msgs = append(msgs, e.Error())
		}
		sort.Strings(msgs)
		failing(corev1.NamespaceDeletionContentFailure, "ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %s", len(msgs), strings.Join(msgs, ", ")))
	}
	if len(r.remaining) > 0 {
		var left []string
		for gvr, n := range r.remaining {
			// kube names core resources with a trailing dot ("configmaps.").
			left = append(left, fmt.Sprintf("%s.%s has %d resource instances", gvr.Resource, gvr.Group, n))
		}
		sort.Strings(left)
		failing(corev1.NamespaceContentRemaining, "SomeResourcesRemain", "Some resources are remaining: "+strings.Join(left, ", "))
	}
	if len(r.finalizers) > 0 {
		var held []string
		for f, n := range r.finalizers {
			held = append(held, fmt.Sprintf("%s in %d resource instances", f, n))
		}
		sort.Strings(held)
		failing(corev1.NamespaceFinalizersRemaining, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: "+strings.Join(held, ", "))
	}
	return out
}

// mergeConditions sets every deletion condition type in status to the
// failing condition of that type, else to its healthy form, and reports
// whether anything changed. Conditions keep their place, and their
// transition time unless their status flips; missing ones are appended
// in kube's order.
func mergeConditions(status *corev1.NamespaceStatus, failing []corev1.NamespaceCondition) bool {
	changed := false
	for _, typ := range conditionTypes {
		want := corev1.NamespaceCondition{Type: typ, Status: corev1.ConditionFalse, Reason: healthy[typ].reason, Message: healthy[typ].message, LastTransitionTime: metav1.Now()}
		for _, f := range failing {
			if f.Type == typ {
				want = f
			}
		}
		old := findCondition(status.Conditions, typ)
		switch {
		case old == nil:
			status.Conditions = append(status.Conditions, want)
			changed = true
		case old.Status != want.Status || old.Reason != want.Reason || old.Message != want.Message:
			if old.Status != want.Status {
				old.LastTransitionTime = want.LastTransitionTime
			}
			old.Status, old.Reason, old.Message = want.Status, want.Reason, want.Message
			changed = true
		}
	}
	return changed
}

func findCondition(conditions []corev1.NamespaceCondition, typ corev1.NamespaceConditionType) *corev1.NamespaceCondition {
	for i := range conditions {
		if conditions[i].Type == typ {
			return &conditions[i]
		}
	}
	return nil
}

// retryOnConflict applies write to ns, and on a conflict to a fresh copy,
// until it succeeds; it gives up if the namespace was replaced.
func (c *Controller) retryOnConflict(ctx context.Context, ns *corev1.Namespace, write func(context.Context, *corev1.Namespace) (*corev1.Namespace, error)) (*corev1.Namespace, error) {
	current := ns
	var out *corev1.Namespace
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if out, err = write(ctx, current); !apierrors.IsConflict(err) {
			return err
		}
		latest, getErr := c.client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		if getErr != nil {
			return getErr
		}
		if latest.UID != ns.UID {
			return fmt.Errorf("namespace %s was replaced while being deleted", ns.Name)
		}
		current = latest
		return err
	})
	return out, err
}

// markTerminating sets the phase that tells clients the namespace is going.
func (c *Controller) markTerminating(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	if ns.Status.Phase == corev1.NamespaceTerminating {
		return ns, nil
	}
	cp := ns.DeepCopy()
	cp.Status.Phase = corev1.NamespaceTerminating
	return c.client.CoreV1().Namespaces().UpdateStatus(ctx, cp, metav1.UpdateOptions{})
}

// finalize removes the "kubernetes" finalizer; the apiserver then removes
// the namespace unless other finalizers hold it.
func (c *Controller) finalize(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	cp := ns.DeepCopy()
	var kept []corev1.FinalizerName
	for _, f := range cp.Spec.Finalizers {
		if f != corev1.FinalizerKubernetes {
			kept = append(kept, f)
		}
	}
	cp.Spec.Finalizers = kept
	return c.client.CoreV1().Namespaces().Finalize(ctx, cp, metav1.UpdateOptions{})
}
