package codec

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestJSON_StoresSortedKeysWithNewlineAndReadsIntsBack(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	c := JSON(gvk.GroupKind())
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"kind": "Widget", "apiVersion": "example.com/v1", "spec": map[string]interface{}{"size": int64(3)},
	}}
	data, err := c.Encode(u)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"apiVersion":"example.com/v1","kind":"Widget","spec":{"size":3}}` + "\n"; string(data) != want {
		t.Errorf("encoded %q, want %q", data, want)
	}
	obj, err := c.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(obj.(*unstructured.Unstructured).Object, "spec", "size"); size != 3 {
		t.Errorf("decoded size %v", obj.(*unstructured.Unstructured).Object["spec"])
	}
	if _, err := JSON(schema.GroupKind{Group: "example.com", Kind: "Gadget"}).Decode(data); err == nil {
		t.Error("decoded a Widget as a Gadget")
	}
	// Objects stay in the version they were written in: another version
	// of the kind reads them.
	if _, err := JSON(schema.GroupKind{Group: "example.com", Kind: "Widget"}).Decode([]byte(`{"apiVersion":"example.com/v2","kind":"Widget"}`)); err != nil {
		t.Errorf("a v2 Widget: %v", err)
	}
}
