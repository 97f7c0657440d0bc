package storage_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/storage"
)

func TestSharedObject_ForgetsEachFormatOnItsOwn(t *testing.T) {
	s := storage.Share(&corev1.ConfigMap{})
	encodes := map[string]int{}
	encoded := func(format string) {
		t.Helper()
		if _, err := s.Encoded(format, func(runtime.Object) ([]byte, error) {
			encodes[format]++
			return []byte(format), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	encoded("json")
	encoded("protobuf")
	time.Sleep(2 * time.Millisecond)
	since := time.Now()
	time.Sleep(2 * time.Millisecond)
	// Only JSON is asked for again: protobuf goes, JSON stays.
	encoded("json")
	if n := s.ForgetEncodings(since); n != len("protobuf") {
		t.Errorf("forgot %d bytes, want %d (protobuf's)", n, len("protobuf"))
	}
	encoded("json")
	encoded("protobuf")
	if encodes["json"] != 1 || encodes["protobuf"] != 2 {
		t.Errorf("encodes = %v, want json once and protobuf again after it was forgotten", encodes)
	}
}

func TestSharedObject_MayBeStoredAs_TellsOtherBytesApart(t *testing.T) {
	stored := []byte("stored bytes of the object")
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	for _, tc := range []struct {
		name   string
		shared *storage.SharedObject
		data   []byte
		want   bool
	}{
		{"the stored bytes", storage.ShareStored(obj, stored), stored, true},
		{"bytes of another length", storage.ShareStored(obj, stored), []byte("other"), false},
		{"other bytes of the same length", storage.ShareStored(obj, stored), []byte("stored bytes of the OBJECT"), false},
		{"only the size known, same length", storage.ShareSized(obj, len(stored)), []byte("stored bytes of the OBJECT"), true},
		{"only the size known, another length", storage.ShareSized(obj, len(stored)), []byte("other"), false},
		{"nothing known", storage.Share(obj), []byte("other"), true},
	} {
		if got := tc.shared.MayBeStoredAs(tc.data); got != tc.want {
			t.Errorf("%s: MayBeStoredAs = %v, want %v", tc.name, got, tc.want)
		}
	}
}
