package codec

import (
	"bytes"
	"os"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The testdata files are values kube-apiserver v1.29 wrote to etcd.
func TestProtobuf_ReadsAndRewritesKubeBytesExactly(t *testing.T) {
	cases := []struct {
		file  string
		gvk   schema.GroupVersionKind
		new   func() runtime.Object
		check func(t *testing.T, obj runtime.Object)
	}{
		{"testdata/kube-cronjob.pb", batchv1.SchemeGroupVersion.WithKind("CronJob"), func() runtime.Object { return &batchv1.CronJob{} }, func(t *testing.T, obj runtime.Object) {
			cj := obj.(*batchv1.CronJob)
			if cj.Name != "h2" || cj.Namespace != "default" || cj.Spec.Schedule != "*/5 * * * *" || cj.Kind != "CronJob" || cj.APIVersion != "batch/v1" {
				t.Fatalf("decoded %+v", cj)
			}
		}},
		{"testdata/kube-namespace.pb", corev1.SchemeGroupVersion.WithKind("Namespace"), func() runtime.Object { return &corev1.Namespace{} }, func(t *testing.T, obj runtime.Object) {
			if ns := obj.(*corev1.Namespace); ns.Name != "default" || ns.Status.Phase != corev1.NamespaceActive {
				t.Fatalf("decoded %+v", ns)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			c := Protobuf(tc.gvk, tc.new)
			obj, err := c.Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, obj)
			again, err := c.Encode(obj)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again, data) {
				t.Fatalf("re-encoded bytes differ from kube's:\n got %x\nwant %x", again, data)
			}
		})
	}
}

func TestProtobuf_RejectsDataWithoutMagic(t *testing.T) {
	c := Protobuf(batchv1.SchemeGroupVersion.WithKind("CronJob"), func() runtime.Object { return &batchv1.CronJob{} })
	if _, err := c.Decode([]byte(`{"kind":"CronJob"}`)); err == nil {
		t.Fatal("JSON accepted as protobuf")
	}
}

func TestProtobuf_RejectsAnotherKind(t *testing.T) {
	data, err := os.ReadFile("testdata/kube-namespace.pb")
	if err != nil {
		t.Fatal(err)
	}
	c := Protobuf(batchv1.SchemeGroupVersion.WithKind("CronJob"), func() runtime.Object { return &batchv1.CronJob{} })
	if _, err := c.Decode(data); err == nil {
		t.Fatal("a Namespace decoded as a CronJob")
	}
}

func TestEnvelopeFrame_MatchesEnvelope(t *testing.T) {
	raw := []byte("some object bytes")
	want, err := Envelope("batch/v1", "CronJobList", raw)
	if err != nil {
		t.Fatal(err)
	}
	header, trailer := EnvelopeFrame("batch/v1", "CronJobList", len(raw))
	got := append(append(append([]byte(nil), header...), raw...), trailer...)
	if !bytes.Equal(got, want) {
		t.Fatalf("frame\n got %x\nwant %x", got, want)
	}
}
