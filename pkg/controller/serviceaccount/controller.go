// Package serviceaccount owns the service account controller: every
// active namespace has a ServiceAccount named "default", created when the
// namespace appears and again whenever it is deleted, as kube's
// serviceaccount-controller keeps it. A namespace being deleted gets none.
// It sees the cluster only through a client and informers.
package serviceaccount

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/cronplane/cronplane/pkg/controller/worker"
)

// DefaultName is the account every namespace has.
const DefaultName = "default"

// Controller keeps the default account in every active namespace.
type Controller struct {
	client     kubernetes.Interface
	accounts   corelisters.ServiceAccountLister
	namespaces corelisters.NamespaceLister
	synced     []cache.InformerSynced
	// queue holds namespace names.
	queue workqueue.RateLimitingInterface
}

// New builds the controller.
func New(client kubernetes.Interface, accounts coreinformers.ServiceAccountInformer, namespaces coreinformers.NamespaceInformer) *Controller {
	c := &Controller{
		client:     client,
		accounts:   accounts.Lister(),
		namespaces: namespaces.Lister(),
		synced:     []cache.InformerSynced{accounts.Informer().HasSynced, namespaces.Informer().HasSynced},
		queue:      workqueue.NewNamedRateLimitingQueue(workqueue.DefaultControllerRateLimiter(), "serviceaccount"),
	}
	_, _ = accounts.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: c.accountDeleted})
	_, _ = namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueNamespace,
		UpdateFunc: func(_, obj interface{}) { c.enqueueNamespace(obj) },
	})
	return c
}

func (c *Controller) enqueueNamespace(obj interface{}) {
	if ns, ok := obj.(*corev1.Namespace); ok {
		c.queue.Add(ns.Name)
	}
}

// accountDeleted looks at the namespace of a deleted account again.
func (c *Controller) accountDeleted(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if sa, ok := obj.(*corev1.ServiceAccount); ok {
		c.queue.Add(sa.Namespace)
	}
}

// Run processes namespaces with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	worker.Loop[string]{
		Queue:    c.queue,
		Sync:     worker.Plain(c.sync),
		Describe: func(namespace string) string { return "service accounts of namespace " + namespace },
	}.Start(ctx, workers)
	<-ctx.Done()
}

// sync creates the default account of an active namespace that lacks it.
func (c *Controller) sync(ctx context.Context, namespace string) error {
	ns, err := c.namespaces.Get(namespace)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.Status.Phase != corev1.NamespaceActive {
		return nil
	}
	switch _, err := c.accounts.ServiceAccounts(namespace).Get(DefaultName); {
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err):
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultName, Namespace: namespace}}
	_, err = c.client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{})
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// The namespace began terminating after the cache saw it active.
		return nil
	}
	return err
}
