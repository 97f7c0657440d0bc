package apiserver

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/apiextensions"
	apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"
	"github.com/cronplane/cronplane/pkg/apply"
	"github.com/cronplane/cronplane/pkg/featuregate"
	"github.com/cronplane/cronplane/pkg/registry"
	apiextensionsregistry "github.com/cronplane/cronplane/pkg/registry/apiextensions"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
	"github.com/cronplane/cronplane/pkg/storage/cacher"
	"github.com/cronplane/cronplane/pkg/storage/informer"
)

var crdGVR = apiextensionsregistry.GVK.GroupVersion().WithResource("customresourcedefinitions")

// crdRetry is the pause before a definition whose status or cleanup
// failed is looked at again.
const crdRetry = 200 * time.Millisecond

// customResources serves what the CustomResourceDefinitions declare: it
// follows them by watch (so every apiserver on one etcd learns each
// change), installs and removes their resources, and runs the
// definitions' controller on each change.
type customResources struct {
	installer resourceInstaller
	registry  resourceRegistry
	ctrl      *apiextensions.Controller

	mu sync.Mutex
	// crds are the definitions as last seen, by name.
	crds map[string]*apiextensionsv1.CustomResourceDefinition
	// served are what each definition's resources were installed from
	// (its spec with the accepted names), and the resources.
	served map[string]servedCRD
	// pending are the definitions the controller has to look at.
	pending map[string]bool
	wake    chan struct{}
}

// resourceInstaller installs and removes resources while the server runs:
// the server's resourceStorage.
type resourceInstaller interface {
	install(res *generic.Resource) error
	uninstall(gvr schema.GroupVersionResource)
	// detachCaches takes the caches the resources would share away, for
	// the caller to stop once they are installed anew.
	detachCaches(resources []*generic.Resource) []*cacher.Cache
}

// resourceRegistry is what serves each installed resource: the server's
// registry.
type resourceRegistry interface {
	Lookup(gvr schema.GroupVersionResource) (*registry.Entry, bool)
	Entries() []*registry.Entry
	Remove(gvr schema.GroupVersionResource) bool
}

type servedCRD struct {
	spec apiextensionsv1.CustomResourceDefinitionSpec
	gvrs []schema.GroupVersionResource
}

// startCustomResources follows the definitions until the server closes,
// from the post-start hooks start-apiextensions-informers and
// start-apiextensions-controllers on. As kube's post-start hook
// crd-informer-synced, /readyz fails until the
// definitions stored at start are served; New does not wait for them, so
// a server whose etcd is away still starts and reports why it is not
// ready.
func (s *Server) startCustomResources() error {
	store, ok := s.storage.store(crdGVR)
	if !ok {
		return nil
	}
	c := &customResources{installer: s.storage, registry: s.Registry, crds: map[string]*apiextensionsv1.CustomResourceDefinition{}, served: map[string]servedCRD{},
		pending: map[string]bool{}, wake: make(chan struct{}, 1)}
	c.ctrl = &apiextensions.Controller{Client: crdClient{s.Registry}, Ratcheting: s.opts.FeatureGates.Enabled(featuregate.CRDValidationRatcheting)}
	synced := make(chan struct{})
	// Started by post-start hooks of kube's names, in kube's order.
	if err := s.AddPostStartHook("start-apiextensions-informers", func(context.Context) error {
		go informer.Run(s.background, store.Storage, generic.StoragePrefix(s.opts.EtcdPrefix, store.Resource), c, synced)
		return nil
	}); err != nil {
		return err
	}
	if err := s.AddPostStartHook("start-apiextensions-controllers", func(context.Context) error {
		go c.run(s.background)
		return nil
	}); err != nil {
		return err
	}
	return s.AddPostStartHook("crd-informer-synced", func(ctx context.Context) error {
		select {
		case <-synced:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

// Replace, Set and Delete implement informer.Handler.
func (c *customResources) Replace(objs []runtime.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	for _, obj := range objs {
		crd := storage.Unwrap(obj).(*apiextensionsv1.CustomResourceDefinition)
		seen[crd.Name] = true
		c.setLocked(crd)
	}
	for name := range c.crds {
		if !seen[name] {
			c.deleteLocked(name)
		}
	}
}

func (c *customResources) Set(obj runtime.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(storage.Unwrap(obj).(*apiextensionsv1.CustomResourceDefinition))
}

func (c *customResources) Delete(obj runtime.Object) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deleteLocked(storage.Unwrap(obj).(*apiextensionsv1.CustomResourceDefinition).Name)
}

func (c *customResources) setLocked(crd *apiextensionsv1.CustomResourceDefinition) {
	c.crds[crd.Name] = crd
	c.serveLocked(crd)
	// A change to one definition may free or take names another wants.
	for name := range c.crds {
		c.pending[name] = true
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *customResources) deleteLocked(name string) {
	delete(c.crds, name)
	delete(c.pending, name)
	c.unserveLocked(name)
	for n := range c.crds {
		c.pending[n] = true
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// serveLocked installs crd's resources under the names it was granted,
// once they are, and again whenever its spec changes.
func (c *customResources) serveLocked(crd *apiextensionsv1.CustomResourceDefinition) {
	if !crd.Status.IsTrue(apiextensionsv1.NamesAccepted) && !crd.Status.IsTrue(apiextensionsv1.Established) {
		return
	}
	accepted := crd.DeepCopy()
	spec := accepted.Spec
	spec.Names = accepted.Status.AcceptedNames
	if prev, ok := c.served[crd.Name]; ok && reflect.DeepEqual(prev.spec, spec) {
		return
	}
	accepted.Spec = spec
	resources, err := c.ctrl.Resources(accepted)
	if err != nil {
		klog.ErrorS(err, "Not serving custom resource", "crd", crd.Name)
		return
	}
	// Objects are read with the schemas of the definition as it is now:
	// as kube, a changed definition reads its objects anew; requests on
	// the old storage finish, its watches end.
	if _, ok := c.served[crd.Name]; ok {
		stale := c.installer.detachCaches(resources)
		defer func() {
			for _, cache := range stale {
				cache.Stop()
			}
		}()
	}
	var gvrs []schema.GroupVersionResource
	for _, res := range resources {
		if err := c.installer.install(res); err != nil {
			klog.ErrorS(err, "Not serving custom resource", "crd", crd.Name, "version", res.Version)
			continue
		}
		gvrs = append(gvrs, res.GroupVersionResource())
	}
	// Versions no longer served go.
	for _, old := range c.served[crd.Name].gvrs {
		if !slices.Contains(gvrs, old) {
			c.registry.Remove(old)
		}
	}
	c.served[crd.Name] = servedCRD{spec: spec, gvrs: gvrs}
	klog.V(2).InfoS("Serving custom resource", "crd", crd.Name, "resources", gvrs)
}

func (c *customResources) unserveLocked(name string) {
	prev, ok := c.served[name]
	if !ok {
		return
	}
	delete(c.served, name)
	for _, gvr := range prev.gvrs {
		c.installer.uninstall(gvr)
	}
	klog.V(2).InfoS("No longer serving custom resource", "crd", name)
}

// run hands each definition that changed to the controller, retrying
// the ones it could not bring forward, until ctx ends.
func (c *customResources) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-time.After(crdRetry):
		}
		c.mu.Lock()
		var names []string
		for n := range c.pending {
			names = append(names, n)
		}
		sort.Strings(names)
		all := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(c.crds))
		for _, crd := range c.crds {
			all = append(all, crd)
		}
		c.pending = map[string]bool{}
		c.mu.Unlock()
		for _, name := range names {
			c.mu.Lock()
			crd, ok := c.crds[name]
			c.mu.Unlock()
			if !ok {
				continue
			}
			if err := c.ctrl.Sync(ctx, crd, all); err != nil {
				klog.V(2).InfoS("Custom resource definition not settled yet", "crd", name, "err", err)
				c.mu.Lock()
				c.pending[name] = true
				c.mu.Unlock()
			}
		}
	}
}

// uninstall stops serving gvr and, when no other version
// shares it, stops its watch cache.
func (r *resourceStorage) uninstall(gvr schema.GroupVersionResource) {
	r.registry.Remove(gvr)
	r.mu.Lock()
	defer r.mu.Unlock()
	store, ok := r.stores[gvr]
	if !ok {
		return
	}
	delete(r.stores, gvr)
	prefix := generic.StoragePrefix(r.prefix, store.Resource)
	for _, other := range r.stores {
		if generic.StoragePrefix(r.prefix, other.Resource) == prefix {
			return
		}
	}
	if c, ok := r.caches[prefix]; ok {
		c.Stop()
		delete(r.caches, prefix)
		delete(r.cacheResources, prefix)
	}
}

// detachCaches takes the watch caches the resources would share out of
// r, so that installing them builds new ones, and returns them
// for the caller to stop.
func (r *resourceStorage) detachCaches(resources []*generic.Resource) []*cacher.Cache {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*cacher.Cache
	for _, res := range resources {
		prefix := generic.StoragePrefix(r.prefix, res)
		if c, ok := r.caches[prefix]; ok {
			out = append(out, c)
			delete(r.caches, prefix)
			delete(r.cacheResources, prefix)
		}
	}
	return out
}

// crdClient is the controller's way to act: definitions through their
// storage, custom objects through theirs, as the server.
type crdClient struct{ registry resourceRegistry }

func (c crdClient) UpdateStatus(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	e, ok := c.registry.Lookup(crdGVR)
	if !ok {
		return fmt.Errorf("%s is not served", crdGVR)
	}
	return c.write(ctx, e.Subresources["status"], e.Fields, "status", crd)
}

func (c crdClient) Update(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	e, ok := c.registry.Lookup(crdGVR)
	if !ok {
		return fmt.Errorf("%s is not served", crdGVR)
	}
	return c.write(ctx, e.Storage, e.Fields, "", crd)
}

// write updates crd through st, with crd's resourceVersion as the
// precondition, and takes the new resourceVersion into crd.
func (c crdClient) write(ctx context.Context, st rest.Storage, fields *apply.Manager, subresource string, crd *apiextensionsv1.CustomResourceDefinition) error {
	u, ok := st.(rest.Updater)
	if !ok {
		return fmt.Errorf("%s cannot be updated", crdGVR)
	}
	info := crdUpdate{fields: fields, subresource: subresource, obj: crd}
	out, _, err := u.Update(systemContext(ctx), "", crd.Name, info, nil, nil, false, &metav1.UpdateOptions{FieldManager: systemManager})
	if err != nil {
		return err
	}
	if m, err := meta.Accessor(out); err == nil {
		crd.ResourceVersion = m.GetResourceVersion()
	}
	return nil
}

// DeleteAll deletes the objects of gvr, served in some version, and
// counts what is left.
func (c crdClient) DeleteAll(ctx context.Context, gvr schema.GroupVersionResource) (int, error) {
	e, ok := c.registry.Lookup(gvr)
	if !ok {
		for _, other := range c.registry.Entries() {
			if other.Group == gvr.Group && other.Plural == gvr.Resource {
				e, ok = other, true
				break
			}
		}
	}
	if !ok {
		return 0, nil
	}
	ctx = systemContext(ctx)
	if d, ok := e.Storage.(rest.CollectionDeleter); ok {
		if _, err := d.DeleteCollection(ctx, "", nil, &metav1.DeleteOptions{}, &rest.ListOptions{Label: labels.Everything()}); err != nil {
			return 0, err
		}
	}
	l, ok := e.Storage.(rest.Lister)
	if !ok {
		return 0, nil
	}
	list, err := l.List(ctx, "", &rest.ListOptions{Label: labels.Everything()})
	if err != nil {
		return 0, err
	}
	if l, ok := storage.Unwrap(list).(*rest.List); ok {
		return len(l.Items), nil
	}
	n := meta.LenList(storage.Unwrap(list))
	return n, nil
}

// crdUpdate hands the store the controller's definition, with
// managedFields recorded as kube-apiserver's, unless the stored one
// changed since it was read.
type crdUpdate struct {
	fields      *apply.Manager
	subresource string
	obj         *apiextensionsv1.CustomResourceDefinition
}

func (u crdUpdate) Preconditions() *metav1.Preconditions { return nil }

func (u crdUpdate) UpdatedObject(_ context.Context, current runtime.Object) (runtime.Object, error) {
	if current == nil {
		return nil, apierrors.NewNotFound(crdGVR.GroupResource(), u.obj.Name)
	}
	if m, err := meta.Accessor(current); err == nil && m.GetResourceVersion() != u.obj.ResourceVersion {
		return nil, apierrors.NewConflict(crdGVR.GroupResource(), u.obj.Name, fmt.Errorf(generic.OptimisticLockErrorMsg))
	}
	obj := u.obj.DeepCopy()
	if u.fields != nil {
		if err := u.fields.Update(current, obj, systemManager, u.subresource, time.Now()); err != nil {
			return nil, err
		}
		apply.KeepManagedFieldsTimes(obj, current)
	}
	return obj, nil
}
