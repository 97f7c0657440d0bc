package storage

import (
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SharedObject is an object that a cache hands to many readers at once. It
// must not be mutated; DeepCopyObject returns a private copy of the object
// inside. It memoizes its encodings, so that an object read by many lists
// and watchers is encoded once per format, not once per reader.
type SharedObject struct {
	obj runtime.Object
	mu  sync.Mutex
	enc map[string][]byte
}

// Share wraps obj, which the caller must no longer mutate.
func Share(obj runtime.Object) *SharedObject {
	return &SharedObject{obj: obj}
}

// Object returns the shared object; callers must not mutate it.
func (s *SharedObject) Object() runtime.Object { return s.obj }

func (s *SharedObject) GetObjectKind() schema.ObjectKind { return s.obj.GetObjectKind() }

func (s *SharedObject) DeepCopyObject() runtime.Object { return s.obj.DeepCopyObject() }

// Encoded returns the object's encoding in format, computing it with encode
// the first time.
func (s *SharedObject) Encoded(format string, encode func(runtime.Object) ([]byte, error)) ([]byte, error) {
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
