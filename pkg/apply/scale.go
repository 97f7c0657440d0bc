package apply

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"
)

// scaleAPIVersion and scaleReplicas are the version of the Scale kind and
// the path of its replicas.
const scaleAPIVersion = "autoscaling/v1"

var scaleReplicas = fieldpath.MakePathOrDie("spec", "replicas")

// ScaleFields carries field ownership between an object and its scale
// subresource, as kube does: a write to the Scale is recorded against the
// Scale's own fields (spec.replicas) with the object's owners of its
// replicas field as the Scale's owners of spec.replicas, and the result
// goes back to the object's managedFields.
type ScaleFields struct {
	apiVersion string
	// replicas is the replicas path of each version of the resource; nil
	// for a version without a scale subresource.
	replicas map[string]fieldpath.Path
}

// NewScaleFields converts the managedFields of objects served as
// apiVersion; replicasPaths gives each of the resource's versions its
// replicas path (".spec.replicas"), "" for a version without a scale
// subresource.
func NewScaleFields(apiVersion string, replicasPaths map[string]string) *ScaleFields {
	s := &ScaleFields{apiVersion: apiVersion, replicas: map[string]fieldpath.Path{}}
	for v, p := range replicasPaths {
		if p == "" {
			s.replicas[v] = nil
			continue
		}
		var path fieldpath.Path
		for _, name := range strings.Split(strings.TrimPrefix(p, "."), ".") {
			name := name
			path = append(path, fieldpath.PathElement{FieldName: &name})
		}
		s.replicas[v] = path
	}
	return s
}

// ToScale are the Scale's managedFields for an object's: the entries that
// own the replicas field of their version, owning the Scale's replicas.
func (s *ScaleFields) ToScale(entries []metav1.ManagedFieldsEntry) ([]metav1.ManagedFieldsEntry, error) {
	parent, err := decodeByOwner(entries)
	if err != nil {
		return nil, err
	}
	out := managed{fields: fieldpath.ManagedFields{}, times: map[string]*metav1.Time{}}
	for key, vs := range parent.fields {
		path := s.replicas[string(vs.APIVersion())]
		if path == nil || !vs.Set().Has(path) {
			continue
		}
		out.fields[key] = fieldpath.NewVersionedSet(fieldpath.NewSet(scaleReplicas), scaleAPIVersion, vs.Applied())
		out.times[key] = parent.times[key]
	}
	return out.encode()
}

// FromScale merges the managedFields of a written Scale into the object's
// (entries). An owner of the object's replicas field that no longer owns
// the Scale's loses it; an owner of the Scale's replicas that did not own
// the object's gains an entry of the served version. Entries of versions
// the resource no longer has are dropped.
//
// Owners are told apart as kube tells them (an applier by name and
// subresource, an updater by its version too), so that, as in kube, an
// updater's entry seen through the Scale comes back as an entry of its
// own; and such an entry keeps the time of the object's entry of the same
// owner: none for a new one.
func (s *ScaleFields) FromScale(entries, scaleEntries []metav1.ManagedFieldsEntry) ([]metav1.ManagedFieldsEntry, error) {
	parent, err := decodeByOwner(entries)
	if err != nil {
		return nil, err
	}
	scale, err := decodeByOwner(scaleEntries)
	if err != nil {
		return nil, err
	}
	out := managed{fields: fieldpath.ManagedFields{}, times: map[string]*metav1.Time{}}
	for key, vs := range parent.fields {
		path, known := s.replicas[string(vs.APIVersion())]
		switch {
		case !known:
			continue
		case path == nil || !vs.Set().Has(path):
		case scale.fields[key] != nil:
			delete(scale.fields, key)
		default:
			rest := vs.Set().Difference(fieldpath.NewSet(path))
			if rest.Empty() {
				continue
			}
			vs = fieldpath.NewVersionedSet(rest, vs.APIVersion(), vs.Applied())
		}
		out.fields[key] = vs
		out.times[key] = parent.times[key]
	}
	for key, vs := range scale.fields {
		if !vs.Set().Has(scaleReplicas) {
			continue
		}
		out.fields[key] = fieldpath.NewVersionedSet(fieldpath.NewSet(s.replicas[s.apiVersion]), fieldpath.APIVersion(s.apiVersion), vs.Applied())
		out.times[key] = parent.times[key]
	}
	return out.encode()
}

// decodeByOwner decodes managedFields keyed by owner as kube keys them:
// an applier's key leaves out the version it applied.
func decodeByOwner(entries []metav1.ManagedFieldsEntry) (managed, error) {
	return decodeManagedBy(entries, func(e metav1.ManagedFieldsEntry) string {
		version := e.APIVersion
		if e.Operation == metav1.ManagedFieldsOperationApply {
			version = ""
		}
		return entryID{e.Manager, e.Operation, version, e.Subresource}.key()
	})
}
