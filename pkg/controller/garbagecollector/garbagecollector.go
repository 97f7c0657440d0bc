// Package garbagecollector owns the garbage collector. It watches the
// metadata of every served resource that can be listed, watched and
// deleted (events excepted, as in kube), indexes objects by their UID and
// by the UIDs their ownerReferences name, and acts on them:
//   - a dependent whose owners are all gone is deleted;
//   - a dependent with some owners gone keeps the live ones and loses the
//     references to the others;
//   - an owner deleted with the "orphan" finalizer has its dependents'
//     references to it removed, then the finalizer;
//   - an owner deleted with the "foregroundDeletion" finalizer has its
//     dependents deleted, and loses the finalizer (and so goes) once no
//     dependent with blockOwnerDeletion is left;
//   - a dependent of an owner in foreground deletion that has dependents in
//     foreground deletion themselves stops blocking its owners before it is
//     deleted, so that owners in a circle do not wait for each other forever.
//
// The informers' caches only decide what to look at; every decision to
// delete or orphan is taken on objects read live from the apiserver, so a
// stale cache costs a retry, never a wrong deletion. It sees the cluster
// only through clients.
package garbagecollector

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/controller/worker"
)

// ignored are resources the collector never watches: there are many of
// them and nothing owns them.
var ignored = map[schema.GroupResource]bool{
	{Group: "", Resource: "events"}:              true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

const (
	byUID   = "uid"
	byOwner = "owner"
)

// item names one object the collector has to look at.
type item struct {
	Resource  schema.GroupVersionResource
	Namespace string
	Name      string
	UID       types.UID
}

// Collector is the garbage collector.
type Collector struct {
	client    metadata.Interface
	discovery discovery.DiscoveryInterface
	mapper    *restmapper.DeferredDiscoveryRESTMapper
	factory   metadatainformer.SharedInformerFactory
	queue     workqueue.RateLimitingInterface

	mu        sync.RWMutex
	informers map[schema.GroupVersionResource]cache.SharedIndexInformer
}

// New builds a collector over a metadata client and discovery.
func New(client metadata.Interface, disc discovery.DiscoveryInterface) *Collector {
	return &Collector{
		client:    client,
		discovery: disc,
		mapper:    restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
		factory:   metadatainformer.NewSharedInformerFactoryWithOptions(client, 0, metadatainformer.WithTransform(keepOwnership)),
		// One queue does what kube splits among three; it is named after
		// kube's that carries most of the work, for its metrics.
		queue:     workqueue.NewNamedRateLimitingQueue(workqueue.DefaultControllerRateLimiter(), "garbage_collector_attempt_to_delete"),
		informers: map[schema.GroupVersionResource]cache.SharedIndexInformer{},
	}
}

// keepOwnership drops from cached objects the metadata the collector never
// reads (labels, annotations, managedFields): it caches every object of
// every resource, so this is most of its memory.
func keepOwnership(obj interface{}) (interface{}, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
		m.SetLabels(nil)
		m.SetAnnotations(nil)
	}
	return obj, nil
}

// Run watches every deletable resource and collects with workers
// goroutines until ctx ends. Discovery is read again every resync, so that
// resources served later are watched too.
func (c *Collector) Run(ctx context.Context, workers int, resync time.Duration) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if err := c.watchResources(ctx); err != nil {
		utilruntime.HandleError(fmt.Errorf("garbage collector: %w", err))
	}
	c.mu.RLock()
	synced := make([]cache.InformerSynced, 0, len(c.informers))
	for _, inf := range c.informers {
		synced = append(synced, inf.HasSynced)
	}
	c.mu.RUnlock()
	if !cache.WaitForNamedCacheSync("garbage collector", ctx.Done(), synced...) {
		return
	}
	worker.Loop[item]{
		Queue: c.queue,
		Sync:  worker.Plain(c.process),
		Describe: func(it item) string {
			return fmt.Sprintf("garbage collecting %s %s/%s", it.Resource, it.Namespace, it.Name)
		},
	}.Start(ctx, workers)
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := c.watchResources(ctx); err != nil {
			utilruntime.HandleError(fmt.Errorf("garbage collector: %w", err))
		}
	}, resync)
	c.factory.Shutdown()
}

// watchResources starts informers for deletable resources not yet watched.
func (c *Collector) watchResources(ctx context.Context) error {
	lists, err := c.discovery.ServerPreferredResources()
	var added []string
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			gvr := gv.WithResource(r.Name)
			if strings.Contains(r.Name, "/") || ignored[gvr.GroupResource()] || !sets.New(r.Verbs...).HasAll("list", "watch", "delete") {
				continue
			}
			c.mu.RLock()
			_, known := c.informers[gvr]
			c.mu.RUnlock()
			if known {
				continue
			}
			inf := c.factory.ForResource(gvr).Informer()
			if ierr := inf.AddIndexers(cache.Indexers{byUID: indexUID, byOwner: indexOwners}); ierr != nil {
				return ierr
			}
			if _, ierr := inf.AddEventHandler(c.handler(gvr)); ierr != nil {
				return ierr
			}
			c.mu.Lock()
			c.informers[gvr] = inf
			c.mu.Unlock()
			added = append(added, gvr.String())
		}
	}
	if len(added) > 0 {
		c.mapper.Reset()
		klog.InfoS("Garbage collector watching", "resources", added)
		c.factory.Start(ctx.Done())
	}
	return err
}

func indexUID(obj interface{}) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	return []string{string(m.GetUID())}, nil
}

func indexOwners(obj interface{}) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	refs := m.GetOwnerReferences()
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = string(r.UID)
	}
	return out, nil
}

func (c *Collector) handler(gvr schema.GroupVersionResource) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { c.observe(gvr, nil, obj) },
		UpdateFunc: func(old, obj interface{}) {
			c.observe(gvr, old, obj)
		},
		DeleteFunc: func(obj interface{}) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			c.gone(obj)
		},
	}
}

func itemOf(gvr schema.GroupVersionResource, m metav1.Object) item {
	return item{Resource: gvr, Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUID()}
}

// observe queues what an added or changed object may call for.
func (c *Collector) observe(gvr schema.GroupVersionResource, oldObj, obj interface{}) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	if m.GetDeletionTimestamp() != nil && (hasFinalizer(m, metav1.FinalizerOrphanDependents) || hasFinalizer(m, metav1.FinalizerDeleteDependents)) {
		c.queue.Add(itemOf(gvr, m))
	}
	for _, ref := range m.GetOwnerReferences() {
		if owner, _, ok := c.cached(ref.UID); !ok || waitingForDependents(owner) {
			c.queue.Add(itemOf(gvr, m))
			break
		}
	}
	if oldObj == nil {
		return
	}
	// An owner waiting for its dependents may be unblocked by a dependent
	// that dropped its reference.
	old, err := meta.Accessor(oldObj)
	if err != nil {
		return
	}
	kept := sets.New[types.UID]()
	for _, ref := range m.GetOwnerReferences() {
		kept.Insert(ref.UID)
	}
	for _, ref := range old.GetOwnerReferences() {
		if !kept.Has(ref.UID) {
			c.queueIfWaiting(ref.UID)
		}
	}
}

// gone queues the dependents of a removed object, and its owners waiting
// for their dependents to go.
func (c *Collector) gone(obj interface{}) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	for _, d := range c.dependents(m.GetUID()) {
		c.queue.Add(d.item)
	}
	for _, ref := range m.GetOwnerReferences() {
		c.queueIfWaiting(ref.UID)
	}
}

func (c *Collector) queueIfWaiting(uid types.UID) {
	if owner, gvr, ok := c.cached(uid); ok && waitingForDependents(owner) {
		c.queue.Add(itemOf(gvr, owner))
	}
}

// cached returns the cached object with uid.
func (c *Collector) cached(uid types.UID) (metav1.Object, schema.GroupVersionResource, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for gvr, inf := range c.informers {
		objs, err := inf.GetIndexer().ByIndex(byUID, string(uid))
		if err != nil || len(objs) == 0 {
			continue
		}
		if m, err := meta.Accessor(objs[0]); err == nil {
			return m, gvr, true
		}
	}
	return nil, schema.GroupVersionResource{}, false
}

type dependent struct {
	item
	ref metav1.OwnerReference
}

// dependents returns the cached objects that name uid as an owner.
func (c *Collector) dependents(uid types.UID) []dependent {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []dependent
	for gvr, inf := range c.informers {
		objs, err := inf.GetIndexer().ByIndex(byOwner, string(uid))
		if err != nil {
			continue
		}
		for _, o := range objs {
			m, err := meta.Accessor(o)
			if err != nil {
				continue
			}
			for _, ref := range m.GetOwnerReferences() {
				if ref.UID == uid {
					out = append(out, dependent{item: itemOf(gvr, m), ref: ref})
				}
			}
		}
	}
	return out
}

func hasFinalizer(m metav1.Object, f string) bool {
	for _, v := range m.GetFinalizers() {
		if v == f {
			return true
		}
	}
	return false
}

// waitingForDependents reports an owner in foreground deletion.
func waitingForDependents(m metav1.Object) bool {
	return m.GetDeletionTimestamp() != nil && hasFinalizer(m, metav1.FinalizerDeleteDependents)
}

func (c *Collector) resource(it item) metadata.ResourceInterface {
	return c.client.Resource(it.Resource).Namespace(it.Namespace)
}

// live reads the object an item names; nil without an error when it is
// gone or was replaced by another of the same name.
func (c *Collector) live(ctx context.Context, it item) (*metav1.PartialObjectMetadata, error) {
	live, err := c.resource(it).Get(ctx, it.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil || live.UID != it.UID {
		return nil, err
	}
	return live, nil
}

// process looks at one object, read live.
func (c *Collector) process(ctx context.Context, it item) error {
	live, err := c.live(ctx, it)
	if live == nil {
		return err
	}
	if live.DeletionTimestamp != nil {
		switch {
		case hasFinalizer(live, metav1.FinalizerOrphanDependents):
			return c.orphanDependents(ctx, it)
		case hasFinalizer(live, metav1.FinalizerDeleteDependents):
			return c.deleteDependentsFirst(ctx, it)
		}
		return nil
	}
	if len(live.OwnerReferences) == 0 {
		return nil
	}
	var solid, dangling, waiting []types.UID
	for _, ref := range live.OwnerReferences {
		state, err := c.ownerState(ctx, live, ref)
		if err != nil {
			return err
		}
		switch state {
		case ownerPresent:
			solid = append(solid, ref.UID)
		case ownerAbsent:
			dangling = append(dangling, ref.UID)
		case ownerWaiting:
			waiting = append(waiting, ref.UID)
		}
	}
	if len(solid) > 0 {
		if drop := append(dangling, waiting...); len(drop) > 0 {
			return c.removeOwnerReferences(ctx, it, sets.New(drop...))
		}
		return nil
	}
	policy := metav1.DeletePropagationBackground
	switch {
	case hasFinalizer(live, metav1.FinalizerOrphanDependents):
		policy = metav1.DeletePropagationOrphan
	case hasFinalizer(live, metav1.FinalizerDeleteDependents):
		policy = metav1.DeletePropagationForeground
	case len(waiting) > 0:
		deps := c.dependents(it.UID)
		if len(deps) == 0 {
			break
		}
		// Its owner waits for the whole tree below it.
		policy = metav1.DeletePropagationForeground
		if c.anyWaiting(deps) {
			// A dependent that itself waits for its dependents may be
			// one of this object's owners further up a circle: each
			// would wait on the next forever. This object stops
			// blocking its owners, so they can go first.
			if err := c.unblockOwners(ctx, it); err != nil {
				return err
			}
		}
	}
	klog.V(2).InfoS("Garbage collector deleting an object whose owners are gone", "resource", it.Resource, "object", klog.KRef(it.Namespace, it.Name), "propagationPolicy", policy)
	err = c.resource(it).Delete(ctx, it.Name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &it.UID},
		PropagationPolicy: &policy,
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

type ownerStatus int

const (
	ownerPresent ownerStatus = iota
	ownerAbsent
	ownerWaiting
)

// ownerState finds out whether the owner ref names exists. The cache
// answers for a present owner not being deleted (its removal will queue
// the dependent again); anything else is read live.
func (c *Collector) ownerState(ctx context.Context, dependent metav1.Object, ref metav1.OwnerReference) (ownerStatus, error) {
	if owner, _, ok := c.cached(ref.UID); ok && owner.GetDeletionTimestamp() == nil {
		return ownerPresent, nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return ownerAbsent, nil
	}
	mapping, err := c.mapper.RESTMapping(gv.WithKind(ref.Kind).GroupKind(), gv.Version)
	if err != nil {
		// A kind not served (yet): keep the dependent and look again later.
		c.mapper.Reset()
		return ownerPresent, fmt.Errorf("owner kind %s %s: %w", ref.APIVersion, ref.Kind, err)
	}
	ns := ""
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if dependent.GetNamespace() == "" {
			// A cluster-scoped object cannot be owned by a namespaced one.
			return ownerAbsent, nil
		}
		ns = dependent.GetNamespace()
	}
	owner, err := c.client.Resource(mapping.Resource).Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return ownerAbsent, nil
	case err != nil:
		return ownerPresent, err
	case owner.UID != ref.UID:
		return ownerAbsent, nil
	case waitingForDependents(owner):
		return ownerWaiting, nil
	}
	return ownerPresent, nil
}

// anyWaiting reports whether a dependent, as cached, is in foreground
// deletion itself.
func (c *Collector) anyWaiting(deps []dependent) bool {
	for _, d := range deps {
		if m, _, ok := c.cached(d.UID); ok && waitingForDependents(m) {
			return true
		}
	}
	return false
}

// unblockOwners sets blockOwnerDeletion to false in every ownerReference
// of an object that has it true.
func (c *Collector) unblockOwners(ctx context.Context, it item) error {
	return c.patchMetadata(ctx, it, func(m *metav1.PartialObjectMetadata) (string, interface{}, bool) {
		refs := make([]metav1.OwnerReference, len(m.OwnerReferences))
		changed := false
		for i, ref := range m.OwnerReferences {
			if ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
				ref.BlockOwnerDeletion = new(bool)
				changed = true
			}
			refs[i] = ref
		}
		return "ownerReferences", refs, changed
	})
}

// orphanDependents removes the owner's references from its dependents,
// then the orphan finalizer from the owner.
func (c *Collector) orphanDependents(ctx context.Context, owner item) error {
	for _, d := range c.dependents(owner.UID) {
		if err := c.removeOwnerReferences(ctx, d.item, sets.New(owner.UID)); err != nil {
			return err
		}
	}
	return c.removeFinalizer(ctx, owner, metav1.FinalizerOrphanDependents)
}

// deleteDependentsFirst deletes an owner's dependents and releases the
// owner once none with blockOwnerDeletion is left.
func (c *Collector) deleteDependentsFirst(ctx context.Context, owner item) error {
	blocking := 0
	for _, d := range c.dependents(owner.UID) {
		c.queue.Add(d.item)
		if d.ref.BlockOwnerDeletion != nil && *d.ref.BlockOwnerDeletion {
			blocking++
		}
	}
	if blocking > 0 {
		// Their removal queues the owner again.
		return nil
	}
	return c.removeFinalizer(ctx, owner, metav1.FinalizerDeleteDependents)
}

// removeOwnerReferences drops the references to uids from an object, read
// live and written with its resourceVersion as a precondition.
func (c *Collector) removeOwnerReferences(ctx context.Context, it item, uids sets.Set[types.UID]) error {
	return c.patchMetadata(ctx, it, func(m *metav1.PartialObjectMetadata) (string, interface{}, bool) {
		var kept []metav1.OwnerReference
		for _, ref := range m.OwnerReferences {
			if !uids.Has(ref.UID) {
				kept = append(kept, ref)
			}
		}
		return "ownerReferences", kept, len(kept) != len(m.OwnerReferences)
	})
}

func (c *Collector) removeFinalizer(ctx context.Context, it item, finalizer string) error {
	return c.patchMetadata(ctx, it, func(m *metav1.PartialObjectMetadata) (string, interface{}, bool) {
		var kept []string
		for _, f := range m.Finalizers {
			if f != finalizer {
				kept = append(kept, f)
			}
		}
		return "finalizers", kept, len(kept) != len(m.Finalizers)
	})
}

// patchMetadata sets one metadata field to what change computes from the
// live object, by a merge patch guarded by resourceVersion, retried on
// conflicts. A missing object or a changed UID ends it quietly.
func (c *Collector) patchMetadata(ctx context.Context, it item, change func(*metav1.PartialObjectMetadata) (field string, value interface{}, changed bool)) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		live, err := c.live(ctx, it)
		if live == nil {
			return err
		}
		field, value, changed := change(live)
		if !changed {
			return nil
		}
		patch, err := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{
			field: value, "resourceVersion": live.ResourceVersion,
		}})
		if err != nil {
			return err
		}
		_, err = c.resource(it).Patch(ctx, it.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}
