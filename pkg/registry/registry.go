package registry

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Registry is the set of served resources. It may change while the server
// runs (resources registered at run time), so readers take a snapshot.
type Registry struct {
	mu     sync.RWMutex
	stores map[schema.GroupVersionResource]*Store
	order  []*Store
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{stores: map[schema.GroupVersionResource]*Store{}}
}

// Add serves s, replacing a store of the same group/version/resource.
func (r *Registry) Add(s *Store) {
	gvr := s.Resource.GroupVersion().WithResource(s.Resource.Plural)
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.stores[gvr]; ok {
		for i, o := range r.order {
			if o == old {
				r.order[i] = s
			}
		}
	} else {
		r.order = append(r.order, s)
	}
	r.stores[gvr] = s
}

// Lookup returns the store serving gvr.
func (r *Registry) Lookup(gvr schema.GroupVersionResource) (*Store, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s, ok := r.stores[gvr]
	return s, ok
}

// Stores returns the served stores in registration order.
func (r *Registry) Stores() []*Store {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]*Store(nil), r.order...)
}
