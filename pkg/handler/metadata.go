package handler

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/storage"
)

// partialMetadata is the metadata-only form of an answer that metadata
// clients (the garbage collector, the namespace controller) ask for:
// objects become PartialObjectMetadata, lists PartialObjectMetadataList of
// meta.k8s.io version; a Status stays as it is.
func partialMetadata(obj runtime.Object, version string) (runtime.Object, error) {
	if _, ok := obj.(*metav1.Status); ok {
		return obj, nil
	}
	l, ok := obj.(*registry.List)
	if !ok {
		return partialObject(obj, version)
	}
	items := make([]metav1.PartialObjectMetadata, len(l.Items))
	for i, it := range l.Items {
		pm, err := partialObject(it, version)
		if err != nil {
			return nil, err
		}
		items[i] = *pm
	}
	typeMeta := metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/" + version}
	if version == "v1beta1" {
		return &metav1beta1.PartialObjectMetadataList{TypeMeta: typeMeta, ListMeta: l.ListMeta, Items: items}, nil
	}
	return &metav1.PartialObjectMetadataList{TypeMeta: typeMeta, ListMeta: l.ListMeta, Items: items}, nil
}

func partialObject(obj runtime.Object, version string) (*metav1.PartialObjectMetadata, error) {
	m, err := meta.Accessor(storage.Unwrap(obj))
	if err != nil {
		return nil, err
	}
	pm := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/" + version}}
	// Shared objects are read-only: the metadata is copied, not aliased.
	meta.AsPartialObjectMetadata(m).ObjectMeta.DeepCopyInto(&pm.ObjectMeta)
	return pm, nil
}
