package handlers

import (
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/endpoints/negotiation"
	"github.com/cronplane/cronplane/pkg/endpoints/table"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// partialMetadata is the metadata-only form of an answer that metadata
// clients (the garbage collector, the namespace controller) ask for:
// objects become PartialObjectMetadata, lists PartialObjectMetadataList of
// meta.k8s.io version; a Status stays as it is. Asking for the one when the
// answer is the other is a 406.
func partialMetadata(res *rest.Resource, obj runtime.Object, as, version string) (runtime.Object, error) {
	if _, ok := obj.(*metav1.Status); ok {
		return obj, nil
	}
	l, isList := obj.(*rest.List)
	// kube names its internal types in these messages.
	typeName := "*" + internalPackage(res.Group) + "." + res.Kind
	switch {
	case isList && as != negotiation.AsPartialObjectMetadataList:
		return nil, notAcceptable(fmt.Sprintf("you requested %s, but the requested object is a list (%sList)", as, typeName))
	case !isList && as != negotiation.AsPartialObjectMetadata:
		return nil, notAcceptable(fmt.Sprintf("you requested %s, but the requested object is not a list (%s)", as, typeName))
	case !isList:
		return table.PartialObjectMetadata(obj, version)
	}
	items := make([]metav1.PartialObjectMetadata, len(l.Items))
	for i, it := range l.Items {
		pm, err := table.PartialObjectMetadata(it, version)
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

// notAcceptable is the 406 of a transform that does not fit the answer;
// unlike negotiation's 406 kube sends it without details.
func notAcceptable(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable, Message: msg,
	}}
}

// internalPackage is the Go package of a group's internal types in kube:
// core for the legacy group, else the group's first DNS label.
func internalPackage(group string) string {
	if group == "" {
		return "core"
	}
	return strings.SplitN(group, ".", 2)[0]
}
