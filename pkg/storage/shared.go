package storage

import (
	"encoding/json"
	"hash/maphash"
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
	// sum is the hash of the stored bytes (storedSeed), 0 when unknown.
	sum uint64
	// mem is MemSize of the object, 0 until asked for.
	mem atomic.Int64
	mu  sync.Mutex
	enc []encoding
}

// encoding is one memoized format, with when it was last asked for (Unix
// nanoseconds): each format is forgotten on its own, so that a format
// read once by a list does not stay as long as another one in use.
type encoding struct {
	format string
	data   []byte
	used   int64
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

// storedSeed seeds the hashes of stored bytes; they never leave the
// process.
var storedSeed = maphash.MakeSeed()

// ShareStored wraps obj, decoded from data, as ShareSized does, and
// remembers a hash of data, so that MayBeStoredAs can tell most other
// bytes apart without encoding the object again.
func ShareStored(obj runtime.Object, data []byte) *SharedObject {
	if s, ok := obj.(*SharedObject); ok {
		return s
	}
	return &SharedObject{obj: obj, size: len(data), sum: maphash.Bytes(storedSeed, data) | 1}
}

// MayBeStoredAs reports whether data may be the bytes the object was
// decoded from: false only when they certainly are not.
func (s *SharedObject) MayBeStoredAs(data []byte) bool {
	if s.size > 0 && s.size != len(data) {
		return false
	}
	return s.sum == 0 || s.sum == maphash.Bytes(storedSeed, data)|1
}

// Object returns the shared object; callers must not mutate it.
func (s *SharedObject) Object() runtime.Object { return s.obj }

// Size is the length of the bytes the object was decoded from (0 when
// unknown).
func (s *SharedObject) Size() int { return s.size }

// MemSize is the heap memory the decoded object holds (see MemSize),
// computed once; memoized encodings are not counted.
func (s *SharedObject) MemSize() int {
	if n := s.mem.Load(); n > 0 {
		return int(n)
	}
	n := max(MemSize(s.obj), 1)
	s.mem.Store(int64(n))
	return n
}

func (s *SharedObject) GetObjectKind() schema.ObjectKind { return s.obj.GetObjectKind() }

func (s *SharedObject) DeepCopyObject() runtime.Object { return s.obj.DeepCopyObject() }

// Encoded returns the object's encoding in format, computing it with encode
// the first time.
func (s *SharedObject) Encoded(format string, encode func(runtime.Object) ([]byte, error)) ([]byte, error) {
	now := time.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.enc {
		if e := &s.enc[i]; e.format == format {
			e.used = now
			return e.data, nil
		}
	}
	b, err := encode(s.obj)
	if err != nil {
		return nil, err
	}
	s.enc = append(s.enc, encoding{format: format, data: b, used: now})
	return b, nil
}

// ForgetEncodings drops the memoized encodings not asked for after since;
// it returns how many bytes it dropped. A later Encoded computes them
// again.
func (s *SharedObject) ForgetEncodings(since time.Time) int {
	cutoff := since.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	n, kept := 0, s.enc[:0]
	for _, e := range s.enc {
		if e.used >= cutoff {
			kept = append(kept, e)
		} else {
			n += len(e.data)
		}
	}
	clear(s.enc[len(kept):])
	if s.enc = kept; len(kept) == 0 {
		s.enc = nil
	}
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
