package apiserver

import (
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/storage/cacher"
)

// resourceStorage installs resources into the registry, each over a
// generic store over the watch cache of its keys in etcd, and removes
// them; resources installed while the server runs (custom resources) go
// through it too.
type resourceStorage struct {
	client   *clientv3.Client
	prefix   string
	registry *registry.Registry
	metrics  *storageMetrics

	mu sync.Mutex
	// caches are the watch caches by storage prefix.
	caches map[string]*cacher.Cache
	// cacheResources name the caches' resources in metrics, by prefix.
	cacheResources map[string]string
	// stores serve the installed resources, by group, version, resource.
	stores map[schema.GroupVersionResource]*generic.Store
}

func newResourceStorage(client *clientv3.Client, prefix string, reg *registry.Registry, metrics *storageMetrics) *resourceStorage {
	return &resourceStorage{client: client, prefix: prefix, registry: reg, metrics: metrics,
		caches: map[string]*cacher.Cache{}, cacheResources: map[string]string{}, stores: map[schema.GroupVersionResource]*generic.Store{}}
}

// store is what serves gvr, if it is installed.
func (r *resourceStorage) store(gvr schema.GroupVersionResource) (*generic.Store, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.stores[gvr]
	return st, ok
}

// eachCache calls f on every watch cache, with its resource, under the
// lock: f must not install or remove resources.
func (r *resourceStorage) eachCache(f func(prefix, resource string, c *cacher.Cache)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for prefix, c := range r.caches {
		f(prefix, r.cacheResources[prefix], c)
	}
}

// stop stops every watch cache.
func (r *resourceStorage) stop() {
	r.eachCache(func(_, _ string, c *cacher.Cache) { c.Stop() })
}
