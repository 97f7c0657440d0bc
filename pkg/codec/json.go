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
	gk schema.GroupKind
}

// JSON returns the storage codec kube-apiserver uses for objects without
// a protobuf form, such as custom resources: the object's JSON with its
// keys sorted and a closing newline, read back as an
// unstructured.Unstructured with whole numbers as int64. It reads any
// version of the group and kind gk: objects stay in the version they
// were written in until they are written again.
func JSON(gk schema.GroupKind) storage.Codec {
	return jsonCodec{gk: gk}
}

func (c jsonCodec) Encode(obj runtime.Object) ([]byte, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("custom resource is %T, not unstructured", obj)
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
		return nil, fmt.Errorf("decoding stored %s: %w", c.gk.Kind, err)
	}
	if gvk := u.GroupVersionKind(); gvk.GroupKind() != c.gk {
		return nil, fmt.Errorf("stored object is %s %s, want %s of group %s", u.GetAPIVersion(), u.GetKind(), c.gk.Kind, c.gk.Group)
	}
	return u, nil
}
