package apiextensions

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"

	apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1beta1"
	"github.com/cronplane/cronplane/pkg/storage"
)

// storageCodec stores definitions as kube-apiserver v1.29 does:
// apiextensions.k8s.io/v1beta1 JSON with a closing newline (its storage
// version for definitions). It reads v1beta1 and v1.
type storageCodec struct{}

var _ storage.Codec = storageCodec{}

func (storageCodec) Encode(obj runtime.Object) ([]byte, error) {
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return nil, fmt.Errorf("storing %T as a CustomResourceDefinition", obj)
	}
	data, err := json.Marshal(apiextensionsv1beta1.FromV1(crd))
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

func (storageCodec) Decode(data []byte) (runtime.Object, error) {
	var meta metav1.TypeMeta
	if err := json.Unmarshal(data, &meta); err != nil {
		return nil, fmt.Errorf("decoding stored CustomResourceDefinition: %w", err)
	}
	if meta.Kind != "CustomResourceDefinition" {
		return nil, fmt.Errorf("stored object is %s %s, want a CustomResourceDefinition", meta.APIVersion, meta.Kind)
	}
	switch meta.APIVersion {
	case apiextensionsv1beta1.SchemeGroupVersion.String():
		in := &apiextensionsv1beta1.CustomResourceDefinition{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, in); err != nil {
			return nil, fmt.Errorf("decoding stored CustomResourceDefinition: %w", err)
		}
		return apiextensionsv1beta1.ToV1(in), nil
	case apiextensionsv1.SchemeGroupVersion.String():
		out := &apiextensionsv1.CustomResourceDefinition{}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, out); err != nil {
			return nil, fmt.Errorf("decoding stored CustomResourceDefinition: %w", err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("stored CustomResourceDefinition has apiVersion %q", meta.APIVersion)
}
