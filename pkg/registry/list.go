package registry

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// List is a collection as the store returns it. Its items may be shared,
// read-only objects (storage.SharedObject) that carry their encodings, so
// it is written item by item instead of through a typed list.
type List struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []runtime.Object
}

func (l *List) DeepCopyObject() runtime.Object {
	out := &List{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]runtime.Object, len(l.Items))
	for i, it := range l.Items {
		out.Items[i] = it.DeepCopyObject()
	}
	return out
}

// WriteJSON writes the list as the typed list kind would be encoded,
// reusing each item's memoized encoding.
func (l *List) WriteJSON(w io.Writer) error {
	head, err := json.Marshal(struct {
		metav1.TypeMeta `json:",inline"`
		Meta            metav1.ListMeta `json:"metadata"`
	}{l.TypeMeta, l.ListMeta})
	if err != nil {
		return err
	}
	buf := make([]byte, 0, 64*1024)
	buf = append(buf, head[:len(head)-1]...)
	buf = append(buf, `,"items":[`...)
	for i, it := range l.Items {
		if i > 0 {
			buf = append(buf, ',')
		}
		b, err := encodeJSON(it)
		if err != nil {
			return err
		}
		apiVersion, kind := it.GetObjectKind().GroupVersionKind().ToAPIVersionAndKind()
		buf = appendListItem(buf, b, apiVersion, kind)
		if len(buf) > 48*1024 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	buf = append(buf, "]}\n"...)
	_, err = w.Write(buf)
	return err
}

// encodeJSON encodes an object, reusing a memoized encoding when the
// object has one.
func encodeJSON(obj runtime.Object) ([]byte, error) {
	if m, ok := obj.(json.Marshaler); ok {
		return m.MarshalJSON()
	}
	return json.Marshal(obj)
}

// appendListItem appends an object's encoding without its kind and
// apiVersion, which kube leaves out of the items of a typed list.
func appendListItem(buf, encoded []byte, apiVersion, kind string) []byte {
	prefix := `{"kind":` + strconv.Quote(kind) + `,"apiVersion":` + strconv.Quote(apiVersion) + `,`
	if kind != "" && bytes.HasPrefix(encoded, []byte(prefix)) {
		buf = append(buf, '{')
		return append(buf, encoded[len(prefix):]...)
	}
	return append(buf, encoded...)
}
