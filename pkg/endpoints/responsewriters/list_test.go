package responsewriters

import (
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// sawWriter records, at each write, whether the goroutine it watches
// has run.
type sawWriter struct {
	ran  *atomic.Bool
	seen []bool
}

func (w *sawWriter) Write(b []byte) (int, error) {
	w.seen = append(w.seen, w.ran.Load())
	return len(b), nil
}

// A long list lets other goroutines run between its chunks: on one
// processor, a goroutine made runnable before the list is written runs
// before the list's last chunk, though the list never blocks.
func TestWriteList_YieldsTheProcessorBetweenChunks(t *testing.T) {
	list := &rest.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}}
	for i := 0; i < 40; i++ {
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns"}, Data: map[string]string{"k": strings.Repeat("x", 4096)}}
		list.Items = append(list.Items, k8sruntime.Object(cm))
	}
	for _, tc := range []struct {
		name  string
		write func(io.Writer, *rest.List) error
	}{{"json", writeListJSON}, {"protobuf", writeListProtobuf}} {
		t.Run(tc.name, func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			var ran atomic.Bool
			done := make(chan struct{})
			go func() {
				ran.Store(true)
				close(done)
			}()
			w := &sawWriter{ran: &ran}
			if err := tc.write(w, list); err != nil {
				t.Fatal(err)
			}
			<-done
			if len(w.seen) < 2 {
				t.Fatalf("%d writes, want the list in chunks", len(w.seen))
			}
			if !w.seen[len(w.seen)-1] {
				t.Fatalf("the other goroutine had not run by the last of %d chunks", len(w.seen))
			}
		})
	}
}

// Items leave out their kind and apiVersion, as in the typed list's own
// encoding, whichever kind each one has.
func TestWriteListJSON_ItemsLeaveOutTheirKind(t *testing.T) {
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Data: map[string]string{"k": "v"}}
	}
	secret := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Name: "s"}}
	list := &rest.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, ListMeta: metav1.ListMeta{ResourceVersion: "7"},
		Items: []k8sruntime.Object{cm("a"), cm("b"), secret, cm("c")}}
	var got strings.Builder
	if err := writeListJSON(&got, list); err != nil {
		t.Fatal(err)
	}
	var items []string
	for _, it := range list.Items {
		c := it.DeepCopyObject()
		c.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, string(b))
	}
	want := `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[` + strings.Join(items, ",") + "]}\n"
	if got.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", got.String(), want)
	}
}
