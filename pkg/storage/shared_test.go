package storage_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
