package discovery

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"

	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/endpoints/negotiation"
	"github.com/cronplane/cronplane/pkg/endpoints/responsewriters"
	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// serveAggregated answers /api (core) or /apis with the aggregated
// discovery document in mediaType (JSON or protobuf), as kube does: with
// an ETag of its content, and a 304 to a client that sends it back.
func (h *Handler) serveAggregated(w http.ResponseWriter, r *http.Request, core bool, mediaType string) {
	list := h.aggregated(core)
	data, err := json.Marshal(list)
	if err != nil {
		responsewriters.WriteError(w, r, err)
		return
	}
	etag := fmt.Sprintf("%q", fmt.Sprintf("%X", sha512.Sum512(data)))
	w.Header().Set("Vary", "Accept")
	w.Header().Set("Cache-Control", "public")
	w.Header().Set("ETag", etag)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	contentType := mediaType + ";g=" + negotiation.DiscoveryGroup + ";v=" + negotiation.DiscoveryVersion + ";as=" + negotiation.AsAPIGroupDiscoveryList
	switch {
	case mediaType == negotiation.Protobuf:
		raw, err := list.Marshal()
		if err == nil {
			data, err = codec.Envelope(list.APIVersion, list.Kind, raw)
		}
		if err != nil {
			responsewriters.WriteError(w, r, err)
			return
		}
	case responsewriters.Pretty(r):
		data, _ = json.MarshalIndent(list, "", "  ")
	default:
		data = append(data, '\n')
	}
	responsewriters.WriteBytes(w, r, http.StatusOK, contentType, data)
}

// aggregated is the document of the core group (core) or of every other
// group, in the order of the legacy documents.
func (h *Handler) aggregated(core bool) *apidiscoveryv2beta1.APIGroupDiscoveryList {
	list := &apidiscoveryv2beta1.APIGroupDiscoveryList{
		TypeMeta: metav1.TypeMeta{Kind: negotiation.AsAPIGroupDiscoveryList, APIVersion: negotiation.DiscoveryGroup + "/" + negotiation.DiscoveryVersion},
		Items:    []apidiscoveryv2beta1.APIGroupDiscovery{},
	}
	order, byGV := h.groupVersions()
	index := map[string]int{}
	for _, gv := range order {
		if (gv.Group == "") != core {
			continue
		}
		i, ok := index[gv.Group]
		if !ok {
			i = len(list.Items)
			index[gv.Group] = i
			list.Items = append(list.Items, apidiscoveryv2beta1.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: gv.Group}})
		}
		entries := append([]*registry.Entry(nil), byGV[gv]...)
		sort.SliceStable(entries, func(i, j int) bool { return entries[i].Plural < entries[j].Plural })
		v := apidiscoveryv2beta1.APIVersionDiscovery{Version: gv.Version, Freshness: apidiscoveryv2beta1.DiscoveryFreshnessCurrent,
			Resources: make([]apidiscoveryv2beta1.APIResourceDiscovery, 0, len(entries))}
		for _, e := range entries {
			v.Resources = append(v.Resources, resourceDiscovery(e))
		}
		list.Items[i].Versions = append(list.Items[i].Versions, v)
	}
	return list
}

// resourceDiscovery describes one resource as kube's aggregated document
// does. Its response kinds name their group and version only where the
// legacy document would: for a resource defined at run time, and for a
// subresource of another kind.
func resourceDiscovery(e *registry.Entry) apidiscoveryv2beta1.APIResourceDiscovery {
	kind := metav1.GroupVersionKind{Kind: e.Kind}
	if _, unstructuredType := e.New().(*unstructured.Unstructured); unstructuredType {
		kind.Group, kind.Version = e.Group, e.Version
	}
	scope := apidiscoveryv2beta1.ScopeCluster
	if e.Namespaced {
		scope = apidiscoveryv2beta1.ScopeNamespace
	}
	out := apidiscoveryv2beta1.APIResourceDiscovery{
		Resource:         e.Plural,
		ResponseKind:     &kind,
		Scope:            scope,
		SingularResource: e.Singular,
		Verbs:            registry.Verbs(e.Storage),
		ShortNames:       e.ShortNames,
		Categories:       e.Categories,
	}
	for _, name := range e.SubresourceNames() {
		sub := e.Subresources[name]
		subKind := kind
		if d, ok := sub.(rest.Describer); ok {
			gvk := d.Describe().GroupVersionKind
			subKind = metav1.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind}
		}
		out.Subresources = append(out.Subresources, apidiscoveryv2beta1.APISubresourceDiscovery{
			Subresource: name, ResponseKind: &subKind, Verbs: registry.Verbs(sub),
		})
	}
	return out
}
