package storage

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SharedObject is an object that a cache hands to many readers at once. It
// must not be mutated; DeepCopyObject returns a private copy of the object
// inside. It memoizes its encodings, so that an object read by many lists
// and watchers is encoded once per format, not once per reader, until the
// cache tells it to forget the ones nobody used for a while.
type SharedObject struct {
	obj runtime.Object
	// size is the length of the object's stored bytes, 0 when unknown.
	size int
	// used is when an encoding was last asked for (Unix nanoseconds).
	used atomic.Int64
	mu   sync.Mutex
	enc  map[string][]byte
}

// Share wraps obj, which the caller must no longer mutate.
func Share(obj runtime.Object) *SharedObject {
	return &SharedObject{obj: obj}
}

// ShareSized wraps obj as Share does and records the size of the bytes
// it was decoded from; a SharedObject is returned as it is.
func ShareSized(obj runtime.Object, size int) *SharedObject {
	if s, ok := obj.(*SharedObject); ok {
		return s
	}
	return &SharedObject{obj: obj, size: size}
}

// Object returns the shared object; callers must not mutate it.
func (s *SharedObject) Object() runtime.Object { return s.obj }

// Size is the length of the bytes the object was decoded from (0 when
// unknown): what it takes in storage, a measure of what it takes here.
func (s *SharedObject) Size() int { return s.size }

func (s *SharedObject) GetObjectKind() schema.ObjectKind { return s.obj.GetObjectKind() }

func (s *SharedObject) DeepCopyObject() runtime.Object { return s.obj.DeepCopyObject() }

// Encoded returns the object's encoding in format, computing it with encode
// the first time.
func (s *SharedObject) Encoded(format string, encode func(runtime.Object) ([]byte, error)) ([]byte, error) {
	s.used.Store(time.Now().UnixNano())
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.enc[format]; ok {
		return b, nil
	}
	b, err := encode(s.obj)
	if err != nil {
		return nil, err
	}
	if s.enc == nil {
		s.enc = make(map[string][]byte, 1)
	}
	s.enc[format] = b
	return b, nil
}

// ForgetEncodings drops the memoized encodings unless one was asked for
// after since; it returns how many bytes it dropped. A later Encoded
// computes them again.
func (s *SharedObject) ForgetEncodings(since time.Time) int {
	if s.used.Load() >= since.UnixNano() {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, b := range s.enc {
		n += len(b)
	}
	s.enc = nil
	return n
}

// MarshalJSON encodes the object once.
func (s *SharedObject) MarshalJSON() ([]byte, error) {
	return s.Encoded("json", func(o runtime.Object) ([]byte, error) { return json.Marshal(o) })
}

// Unwrap returns the object inside a SharedObject, or obj itself. The
// result of unwrapping a SharedObject must not be mutated.
func Unwrap(obj runtime.Object) runtime.Object {
	if s, ok := obj.(*SharedObject); ok {
		return s.obj
	}
	return obj
}
