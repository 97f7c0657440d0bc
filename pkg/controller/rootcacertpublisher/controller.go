// Package rootcacertpublisher owns the root CA publisher: every namespace
// has a ConfigMap kube-root-ca.crt whose ca.crt is the CA bundle that
// verifies the apiserver, created when the namespace appears and put back
// whenever it is deleted or changed, as kube's root-ca-cert-publisher
// keeps it, so that pods and in-cluster clients find it in their own
// namespace. It sees the cluster only through a client and informers.
package rootcacertpublisher

import (
	"context"
	"reflect"

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

// Kube's name of the ConfigMap, its key, and the annotation that says
// what the ConfigMap is for, in kube's words.
const (
	ConfigMapName         = "kube-root-ca.crt"
	DataKey               = "ca.crt"
	DescriptionAnnotation = "kubernetes.io/description"
	Description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Controller keeps the root CA ConfigMap in every namespace.
type Controller struct {
	client     kubernetes.Interface
	rootCA     string
	configMaps corelisters.ConfigMapLister
	synced     []cache.InformerSynced
	// queue holds namespace names.
	queue workqueue.RateLimitingInterface
}

// New builds the controller publishing rootCA (PEM).
func New(client kubernetes.Interface, rootCA []byte, configMaps coreinformers.ConfigMapInformer, namespaces coreinformers.NamespaceInformer) *Controller {
	c := &Controller{
		client:     client,
		rootCA:     string(rootCA),
		configMaps: configMaps.Lister(),
		synced:     []cache.InformerSynced{configMaps.Informer().HasSynced, namespaces.Informer().HasSynced},
		queue:      workqueue.NewNamedRateLimitingQueue(workqueue.DefaultControllerRateLimiter(), "root_ca_cert_publisher"),
	}
	_, _ = configMaps.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj interface{}) { c.configMapChanged(obj) },
		DeleteFunc: c.configMapChanged,
	})
	_, _ = namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { c.queue.Add(obj.(*corev1.Namespace).Name) },
		// A namespace being deleted is left alone, as kube's does.
		UpdateFunc: func(_, obj interface{}) {
			if ns := obj.(*corev1.Namespace); ns.Status.Phase == corev1.NamespaceActive {
				c.queue.Add(ns.Name)
			}
		},
	})
	return c
}

// configMapChanged looks again at the namespace of a root CA ConfigMap
// that was changed or deleted.
func (c *Controller) configMapChanged(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == ConfigMapName {
		c.queue.Add(cm.Namespace)
	}
}

// Run processes namespaces with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	worker.Loop[string]{Queue: c.queue, Sync: worker.Plain(c.sync), Describe: func(ns string) string { return "root CA of namespace " + ns }}.Start(ctx, workers)
	<-ctx.Done()
}

// sync creates the namespace's ConfigMap, or puts back its data and
// description.
func (c *Controller) sync(ctx context.Context, namespace string) error {
	want := map[string]string{DataKey: c.rootCA}
	cm, err := c.configMaps.ConfigMaps(namespace).Get(ConfigMapName)
	if apierrors.IsNotFound(err) {
		_, err = c.client.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Annotations: map[string]string{DescriptionAnnotation: Description}},
			Data:       want,
		}, metav1.CreateOptions{})
		// A namespace gone or going needs no ConfigMap.
		if apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	if reflect.DeepEqual(cm.Data, want) && cm.Annotations[DescriptionAnnotation] != "" {
		return nil
	}
	cm = cm.DeepCopy()
	cm.Data = want
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[DescriptionAnnotation] = Description
	_, err = c.client.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
