// Package registry owns the set of served resources: for each resource of
// each group version, its description (pkg/registry/rest.Resource), what
// serves it and its subresources (anything implementing rest's verb
// interfaces; the generic store in pkg/registry/generic for stored
// resources), and the field manager that keeps its managedFields. The
// per-group packages below this one hold the built-in registrations. The
// set may change while the server runs, so readers take a snapshot.
package registry

import (
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/apply"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// Entry is one served resource.
type Entry struct {
	*rest.Resource
	// Storage serves the resource; it implements some of rest's verb
	// interfaces, and the verbs it does not are not served.
	Storage rest.Storage
	// Subresources serve the resource's subresources, by name.
	Subresources map[string]rest.Storage
	// Fields keeps metadata.managedFields and serves server-side apply;
	// nil leaves managedFields alone and refuses apply.
	Fields *apply.Manager
}

// Verbs are the API verbs a storage serves, as discovery lists them: one
// per verb interface of pkg/registry/rest it implements, by name unless
// the storage orders them (rest.VerbOrderer).
func Verbs(s rest.Storage) []string {
	if o, ok := s.(rest.VerbOrderer); ok {
		return o.DiscoveryVerbs()
	}
	var verbs []string
	add := func(ok bool, verb string) {
		if ok {
			verbs = append(verbs, verb)
		}
	}
	_, creater := s.(rest.Creater)
	_, namedCreater := s.(rest.NamedCreater)
	_, deleter := s.(rest.GracefulDeleter)
	_, collection := s.(rest.CollectionDeleter)
	_, getter := s.(rest.Getter)
	_, streamer := s.(rest.Streamer)
	_, connecter := s.(rest.Connecter)
	_, lister := s.(rest.Lister)
	_, patcher := s.(rest.Patcher)
	_, updater := s.(rest.Updater)
	_, watcher := s.(rest.Watcher)
	add(creater || namedCreater || connecter, "create")
	add(deleter, "delete")
	add(collection, "deletecollection")
	add(getter || streamer || connecter, "get")
	add(lister, "list")
	add(patcher, "patch")
	add(updater, "update")
	add(watcher, "watch")
	return verbs
}

// SubresourceNames returns the entry's subresources, in the resource's
// SubresourceOrder if it has one, else sorted.
func (e *Entry) SubresourceNames() []string {
	if order := e.SubresourceOrder; order != nil {
		names := make([]string, 0, len(e.Subresources))
		for _, n := range order {
			if _, ok := e.Subresources[n]; ok {
				names = append(names, n)
			}
		}
		if len(names) == len(e.Subresources) {
			return names
		}
	}
	names := make([]string, 0, len(e.Subresources))
	for n := range e.Subresources {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Registry is the set of served resources.
type Registry struct {
	mu      sync.RWMutex
	entries map[schema.GroupVersionResource]*Entry
	order   []*Entry
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{entries: map[schema.GroupVersionResource]*Entry{}}
}

// Add serves e, replacing an entry of the same group/version/resource.
// The descriptions of e and of its subresources of other kinds are
// completed (see rest.Resource.Complete).
func (r *Registry) Add(e *Entry) {
	e.Complete()
	for _, sub := range e.Subresources {
		if d, ok := sub.(rest.Describer); ok {
			d.Describe().Complete()
		}
	}
	gvr := e.GroupVersionResource()
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.entries[gvr]; ok {
		for i, o := range r.order {
			if o == old {
				r.order[i] = e
			}
		}
	} else {
		r.order = append(r.order, e)
	}
	r.entries[gvr] = e
}

// Remove stops serving gvr; it reports whether gvr was served.
func (r *Registry) Remove(gvr schema.GroupVersionResource) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok := r.entries[gvr]
	if !ok {
		return false
	}
	delete(r.entries, gvr)
	for i, o := range r.order {
		if o == old {
			r.order = append(r.order[:i:i], r.order[i+1:]...)
			break
		}
	}
	return true
}

// Lookup returns the entry serving gvr.
func (r *Registry) Lookup(gvr schema.GroupVersionResource) (*Entry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[gvr]
	return e, ok
}

// Serves reports whether gvr is served and, when subresource is not
// empty, serves that subresource.
func (r *Registry) Serves(gvr schema.GroupVersionResource, subresource string) bool {
	e, ok := r.Lookup(gvr)
	if !ok || subresource == "" {
		return ok
	}
	_, ok = e.Subresources[subresource]
	return ok
}

// Entries returns the served resources in registration order.
func (r *Registry) Entries() []*Entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]*Entry(nil), r.order...)
}

// HasTypedGroup reports whether group has a resource served from a Go
// type (a built-in API), not only resources defined at run time, which
// are unstructured.
func (r *Registry) HasTypedGroup(group string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, e := range r.order {
		if e.Group != group {
			continue
		}
		if _, unstructuredType := e.New().(*unstructured.Unstructured); !unstructuredType {
			return true
		}
	}
	return false
}
