// Package namespace owns the namespace controller: when a namespace is
// being deleted it deletes every namespaced object of every served
// resource in it, reports progress in the namespace's status conditions as
// kube does, and, once nothing is left, removes the "kubernetes" finalizer
// through the finalize subresource so that the apiserver removes the
// namespace. It sees the cluster only through clients.
package namespace

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Condition types kube reports on a terminating namespace.
const (
	conditionDeletionDiscoveryFailure = "NamespaceDeletionDiscoveryFailure"
	conditionDeletionContentFailure   = "NamespaceDeletionContentFailure"
	conditionContentRemaining         = "NamespaceContentRemaining"
)

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
	for i := 0; i < workers; i++ {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for c.processNext(ctx) {
			}
		}, time.Second)
	}
	<-ctx.Done()
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	remaining, err := c.sync(ctx, key.(string))
	switch {
	case err != nil:
		utilruntime.HandleError(fmt.Errorf("deleting namespace %s: %w", key, err))
		c.queue.AddRateLimited(key)
	case remaining:
		// Objects with finalizers of their own take time to go.
		c.queue.AddAfter(key, time.Second)
	default:
		c.queue.Forget(key)
	}
	return true
}

// sync deletes the content of a terminating namespace; remaining reports
// objects still there.
func (c *Controller) sync(ctx context.Context, name string) (remaining bool, err error) {
	ns, err := c.namespaces.Get(name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if ns.DeletionTimestamp == nil || !hasFinalizer(ns) {
		return false, nil
	}
	resources, discoveryErr := c.namespacedResources()
	var conditions []corev1.NamespaceCondition
	if discoveryErr != nil {
		conditions = append(conditions, condition(conditionDeletionDiscoveryFailure, "DiscoveryFailed", discoveryErr.Error()))
	}
	var failures, left []string
	for _, gvr := range resources {
		n, err := c.deleteAll(ctx, name, gvr)
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", gvr.GroupResource(), err))
		}
		if n > 0 {
			left = append(left, fmt.Sprintf("%s has %d resource instances", gvr.GroupResource(), n))
		}
	}
	if len(failures) > 0 {
		conditions = append(conditions, condition(conditionDeletionContentFailure, "ContentDeletionFailed", "Failed to delete all resource types, "+strings.Join(failures, ", ")))
	}
	if len(left) > 0 {
		conditions = append(conditions, condition(conditionContentRemaining, "SomeResourcesRemain", "Some resources are remaining: "+strings.Join(left, ", ")))
	}
	if err := c.updateConditions(ctx, ns, conditions); err != nil {
		return false, err
	}
	if discoveryErr != nil || len(failures) > 0 {
		return false, fmt.Errorf("content of %s not deleted: %v %v", name, discoveryErr, failures)
	}
	if len(left) > 0 {
		return true, nil
	}
	return false, c.finalize(ctx, ns)
}

func hasFinalizer(ns *corev1.Namespace) bool {
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			return true
		}
	}
	return false
}

func condition(typ, reason, msg string) corev1.NamespaceCondition {
	return corev1.NamespaceCondition{Type: corev1.NamespaceConditionType(typ), Status: corev1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
}

// namespacedResources lists every served namespaced resource that can be
// listed and deleted.
func (c *Controller) namespacedResources() ([]schema.GroupVersionResource, error) {
	lists, err := c.discovery.ServerPreferredNamespacedResources()
	var out []schema.GroupVersionResource
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !has(r.Verbs, "list") || !has(r.Verbs, "delete") {
				continue
			}
			out = append(out, gv.WithResource(r.Name))
		}
	}
	return out, err
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
// how many are still there.
func (c *Controller) deleteAll(ctx context.Context, ns string, gvr schema.GroupVersionResource) (int, error) {
	client := c.dynamic.Resource(gvr).Namespace(ns)
	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	background := metav1.DeletePropagationBackground
	for _, item := range list.Items {
		if item.GetDeletionTimestamp() != nil {
			continue
		}
		if err := client.Delete(ctx, item.GetName(), metav1.DeleteOptions{PropagationPolicy: &background}); err != nil && !apierrors.IsNotFound(err) {
			return len(list.Items), err
		}
	}
	after, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	return len(after.Items), nil
}

func (c *Controller) updateConditions(ctx context.Context, ns *corev1.Namespace, conditions []corev1.NamespaceCondition) error {
	cp := ns.DeepCopy()
	cp.Status.Conditions = conditions
	if equalConditions(ns.Status.Conditions, conditions) {
		return nil
	}
	_, err := c.client.CoreV1().Namespaces().UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	return err
}

func equalConditions(a, b []corev1.NamespaceCondition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].Message != b[i].Message || a[i].Status != b[i].Status {
			return false
		}
	}
	return true
}

// finalize removes the "kubernetes" finalizer; the apiserver then removes
// the namespace.
func (c *Controller) finalize(ctx context.Context, ns *corev1.Namespace) error {
	cp := ns.DeepCopy()
	var kept []corev1.FinalizerName
	for _, f := range cp.Spec.Finalizers {
		if f != corev1.FinalizerKubernetes {
			kept = append(kept, f)
		}
	}
	cp.Spec.Finalizers = kept
	_, err := c.client.CoreV1().Namespaces().Finalize(ctx, cp, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		klog.Infof("namespace %s emptied and finalized", ns.Name)
	}
	return err
}
