package storage_test

import (
	"strconv"
	"sync"
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
	decode := func([]byte, int64) (runtime.Object, error) { return obj.DeepCopy(), nil }
	for _, tc := range []struct {
		name   string
		shared *storage.SharedObject
		data   []byte
		want   bool
	}{
		{"the stored bytes", storage.ShareStored(obj, stored, 7, decode), stored, true},
		{"bytes of another length", storage.ShareStored(obj, stored, 7, decode), []byte("other"), false},
		{"other bytes of the same length", storage.ShareStored(obj, stored, 7, decode), []byte("stored bytes of the OBJECT"), false},
		{"only the size known, same length", storage.ShareSized(obj, len(stored)), []byte("stored bytes of the OBJECT"), true},
		{"only the size known, another length", storage.ShareSized(obj, len(stored)), []byte("other"), false},
		{"nothing known", storage.Share(obj), []byte("other"), true},
	} {
		if got := tc.shared.MayBeStoredAs(tc.data); got != tc.want {
			t.Errorf("%s: MayBeStoredAs = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// storedConfigMap shares a ConfigMap named by its stored bytes, counting
// the decodes.
func storedConfigMap(data string, decodes *int) *storage.SharedObject {
	decode := func(b []byte, rev int64) (runtime.Object, error) {
		*decodes++
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: string(b), ResourceVersion: strconv.FormatInt(rev, 10)}}, nil
	}
	obj, _ := decode([]byte(data), 5)
	return storage.ShareStored(obj, []byte(data), 5, decode)
}

func TestSharedObject_ForgetDecoded_DecodesAgainWhenAskedFor(t *testing.T) {
	decodes := 0
	s := storedConfigMap("a", &decodes)
	// The cache's own look when the event came is no use: the first
	// sweep lets the decoded form go.
	if s.Peek().(*corev1.ConfigMap).Name != "a" {
		t.Fatal("Peek: not the object")
	}
	if n := s.ForgetDecoded(time.Now()); n == 0 {
		t.Fatal("ForgetDecoded kept an object no reader asked for")
	}
	got := s.Object().(*corev1.ConfigMap)
	if got.Name != "a" || got.ResourceVersion != "5" || decodes != 2 {
		t.Errorf("after forgetting: %s at %s, %d decodes; want a at 5, decoded again", got.Name, got.ResourceVersion, decodes)
	}
	if s.Revision() != 5 || string(s.Stored()) != "a" {
		t.Errorf("Revision %d, Stored %q; want 5, a", s.Revision(), s.Stored())
	}
	// A reader asked for it after the cut-off: it stays.
	if n := s.ForgetDecoded(time.Now().Add(-time.Minute)); n != 0 {
		t.Errorf("ForgetDecoded dropped an object read after the cut-off (%d bytes)", n)
	}
	s.Object()
	if decodes != 2 {
		t.Errorf("%d decodes, want 2: an object in use is not decoded again", decodes)
	}
}

func TestSharedObject_ForgetDecoded_KeepsWhatCannotBeDecodedAgain(t *testing.T) {
	s := storage.Share(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}})
	if n := s.ForgetDecoded(time.Now().Add(time.Minute)); n != 0 {
		t.Errorf("ForgetDecoded dropped an object without stored bytes (%d bytes)", n)
	}
	if storage.Unwrap(s).(*corev1.ConfigMap).Name != "a" {
		t.Error("the object is gone")
	}
}

func TestSharedObject_DecodesOnceForConcurrentReaders(t *testing.T) {
	var mu sync.Mutex
	decodes := 0
	decode := func(b []byte, rev int64) (runtime.Object, error) {
		mu.Lock()
		decodes++
		mu.Unlock()
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: string(b)}}, nil
	}
	obj, _ := decode([]byte("a"), 1)
	s := storage.ShareStored(obj, []byte("a"), 1, decode)
	s.ForgetDecoded(time.Now())
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Encoded("json", func(o runtime.Object) ([]byte, error) { return []byte(o.(*corev1.ConfigMap).Name), nil }); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if decodes != 2 {
		t.Errorf("%d decodes, want 2 (once shared, once again for all readers)", decodes)
	}
}
