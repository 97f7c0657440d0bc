package codec

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"

	"github.com/cronplane/cronplane/pkg/storage"
)

type jsonCodec struct {
	gvk schema.GroupVersionKind
}

// JSON returns the storage codec kube-apiserver uses for objects without
// a protobuf form, such as custom resources: the object's JSON with its
// keys sorted and a closing newline, read back as an
// unstructured.Unstructured of kind gvk with whole numbers as int64.
func JSON(gvk schema.GroupVersionKind) storage.Codec {
	return jsonCodec{gvk: gvk}
}

func (c jsonCodec) Encode(obj runtime.Object) ([]byte, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("codec: %T is not unstructured", obj)
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

func (c jsonCodec) Decode(data []byte) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &u.Object); err != nil {
		return nil, fmt.Errorf("codec: decoding stored %s: %w", c.gvk.Kind, err)
	}
	if gvk := u.GroupVersionKind(); gvk != c.gvk {
		return nil, fmt.Errorf("codec: stored object is %s %s, want %v", u.GetAPIVersion(), u.GetKind(), c.gvk)
	}
	return u, nil
}
