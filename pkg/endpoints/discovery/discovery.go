// Package discovery owns the documents that tell clients what is served:
// /api, /api/v1, /apis, /apis/<group>, /apis/<group>/<version> and
// /version. Every answer is computed from the Registry at request time, so
// resources registered while the server runs show up at once.
package discovery

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"github.com/cronplane/cronplane/pkg/endpoints/negotiation"
	"github.com/cronplane/cronplane/pkg/endpoints/responsewriters"
	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	cronversion "github.com/cronplane/cronplane/pkg/version"
)

// Handler serves the discovery documents of a Registry.
type Handler struct {
	Registry *registry.Registry
}

// groupPriorities are the priorities kube's aggregator gives its
// built-in groups, by which discovery lists them; a group defined at run
// time has customGroupPriority, and groups of one priority come by name.
var groupPriorities = map[string]int{
	"": 18000, "apiregistration.k8s.io": 18000, "apps": 17800, "events.k8s.io": 17750,
	"authentication.k8s.io": 17700, "authorization.k8s.io": 17600, "autoscaling": 17500, "batch": 17400,
	"certificates.k8s.io": 17300, "networking.k8s.io": 17200, "policy": 17100, "rbac.authorization.k8s.io": 17000,
	"storage.k8s.io": 16800, "admissionregistration.k8s.io": 16700, "apiextensions.k8s.io": 16700,
	"scheduling.k8s.io": 16600, "coordination.k8s.io": 16500, "node.k8s.io": 16300, "discovery.k8s.io": 16200,
	"flowcontrol.apiserver.k8s.io": 16100,
}

// customGroupPriority is the priority of a custom resource's group.
const customGroupPriority = 1000

func groupPriority(group string) int {
	if p, ok := groupPriorities[group]; ok {
		return p
	}
	return customGroupPriority
}

// groupVersions returns the served group versions, the groups by kube's
// group priority and each group's versions by kube's version priority
// (v1 before v1beta1 before v1alpha1, the preferred first), and, per
// group version, its resources.
func (h *Handler) groupVersions() ([]schema.GroupVersion, map[schema.GroupVersion][]*registry.Entry) {
	var groups []string
	versions := map[string][]string{}
	byGV := map[schema.GroupVersion][]*registry.Entry{}
	for _, e := range h.Registry.Entries() {
		gv := e.GroupVersion()
		if _, ok := byGV[gv]; !ok {
			if _, ok := versions[gv.Group]; !ok {
				groups = append(groups, gv.Group)
			}
			versions[gv.Group] = append(versions[gv.Group], gv.Version)
		}
		byGV[gv] = append(byGV[gv], e)
	}
	sort.Slice(groups, func(i, j int) bool {
		if pi, pj := groupPriority(groups[i]), groupPriority(groups[j]); pi != pj {
			return pi > pj
		}
		return groups[i] < groups[j]
	})
	order := make([]schema.GroupVersion, 0, len(byGV))
	for _, g := range groups {
		vs := versions[g]
		sort.SliceStable(vs, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(vs[i], vs[j]) > 0 })
		for _, v := range vs {
			order = append(order, schema.GroupVersion{Group: g, Version: v})
		}
	}
	return order, byGV
}

// ServeVersion answers /version, always indented, as kube does.
func (h *Handler) ServeVersion(w http.ResponseWriter, r *http.Request) {
	responsewriters.WriteIndentedJSON(w, r, http.StatusOK, cronversion.Info)
}

// ServeLegacy answers /api: the aggregated document of the core group to
// a client that prefers it, else the versions.
func (h *Handler) ServeLegacy(w http.ResponseWriter, r *http.Request) {
	if mediaType, aggregated := negotiation.DiscoveryFormat(r.Header.Get("Accept")); aggregated {
		h.serveAggregated(w, r, true, mediaType)
		return
	}
	writeJSON(w, r, &metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{
			ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host,
		}},
	})
}

// ServeGroups answers /apis: the aggregated document of every group but
// the core one to a client that prefers it, else the groups.
func (h *Handler) ServeGroups(w http.ResponseWriter, r *http.Request) {
	if mediaType, aggregated := negotiation.DiscoveryFormat(r.Header.Get("Accept")); aggregated {
		h.serveAggregated(w, r, false, mediaType)
		return
	}
	list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{}}
	order, _ := h.groupVersions()
	seen := map[string]int{}
	for _, gv := range order {
		if gv.Group == "" {
			continue
		}
		i, ok := seen[gv.Group]
		if !ok {
			i = len(list.Groups)
			seen[gv.Group] = i
			list.Groups = append(list.Groups, metav1.APIGroup{Name: gv.Group})
		}
		g := &list.Groups[i]
		g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version})
	}
	for i := range list.Groups {
		list.Groups[i].PreferredVersion = list.Groups[i].Versions[0]
	}
	writeJSON(w, r, list)
}

// ServeGroup answers /apis/<group>.
func (h *Handler) ServeGroup(w http.ResponseWriter, r *http.Request, group string) {
	order, _ := h.groupVersions()
	g := metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: group}
	for _, gv := range order {
		if gv.Group == group && group != "" {
			g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version})
		}
	}
	if len(g.Versions) == 0 {
		h.notFound(w, r, group)
		return
	}
	g.PreferredVersion = g.Versions[0]
	writeJSON(w, r, &g)
}

// ServeResources answers /api/v1 and /apis/<group>/<version>.
func (h *Handler) ServeResources(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion) {
	_, byGV := h.groupVersions()
	resources, ok := byGV[gv]
	if !ok {
		h.notFound(w, r, gv.Group)
		return
	}
	list := &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: gv.String(),
		APIResources: []metav1.APIResource{},
	}
	// Each resource is followed by its subresources; resources go by
	// name.
	sorted := append([]*registry.Entry(nil), resources...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Plural < sorted[j].Plural })
	for _, e := range sorted {
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name:               e.Plural,
			SingularName:       e.Singular,
			Namespaced:         e.Namespaced,
			Kind:               e.Kind,
			Verbs:              registry.Verbs(e.Storage),
			ShortNames:         e.ShortNames,
			Categories:         e.Categories,
			StorageVersionHash: e.StorageVersionHash,
		})
		for _, name := range e.SubresourceNames() {
			sub := metav1.APIResource{
				Name:       e.Plural + "/" + name,
				Namespaced: e.Namespaced,
				Kind:       e.Kind,
				Verbs:      registry.Verbs(e.Subresources[name]),
			}
			// A subresource of another kind names its group and version.
			if d, ok := e.Subresources[name].(rest.Describer); ok {
				gvk := d.Describe().GroupVersionKind
				sub.Group, sub.Version, sub.Kind = gvk.Group, gvk.Version, gvk.Kind
			}
			list.APIResources = append(list.APIResources, sub)
		}
	}
	writeJSON(w, r, list)
}

// notFound answers a discovery path that names nothing: a Status in a
// built-in group, kube's plain 404 elsewhere (its fallback handler's).
func (h *Handler) notFound(w http.ResponseWriter, r *http.Request, group string) {
	if group != "" && !h.Registry.HasTypedGroup(group) {
		responsewriters.WritePlainNotFound(w, r)
		return
	}
	responsewriters.WriteError(w, r, responsewriters.ErrNotFound())
}

func writeJSON(w http.ResponseWriter, r *http.Request, v interface{}) {
	responsewriters.WriteJSON(w, r, http.StatusOK, v)
}

// StorageVersionHash is kube's discovery hash of the group, version and
// kind objects are stored as: the first 8 bytes of the SHA-256 of
// "group/version/kind", in base64.
func StorageVersionHash(gvk schema.GroupVersionKind) string {
	sum := sha256.Sum256([]byte(gvk.Group + "/" + gvk.Version + "/" + gvk.Kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}
