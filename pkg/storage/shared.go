package storage

import (
	"bytes"
	"encoding/json"
	"fmt"
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
//
// An object shared with its stored bytes (ShareStored) keeps them, and the
// cache may drop its decoded form when nobody used it for a while
// (ForgetDecoded): the next reader decodes the bytes again. A decoded
// object takes several times the heap of its bytes, so a cache of objects
// nobody reads holds little more than what etcd stores.
type SharedObject struct {
	obj atomic.Pointer[decodedObject]
	// stored is set when the object can be decoded again.
	stored *storedForm
	// size is the length of the object's stored bytes, 0 when unknown.
	size int
	// used is when a reader last asked for the decoded object (Unix
	// nanoseconds), 0 when none did yet.
	used atomic.Int64
	// mem is MemSize of the object, 0 until asked for.
	mem atomic.Int64
	// mu guards enc, and a decode, so that it happens once.
	mu  sync.Mutex
	enc []encoding
}

type decodedObject struct{ obj runtime.Object }

// storedForm is what an object was decoded from.
type storedForm struct {
	data   []byte
	rev    int64
	decode DecodeFunc
}

// DecodeFunc decodes stored bytes, giving the object resourceVersion rev.
type DecodeFunc func(data []byte, rev int64) (runtime.Object, error)

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
	s := &SharedObject{}
	s.obj.Store(&decodedObject{obj})
	return s
}

// ShareSized wraps obj as Share does and records the size of the bytes
// it was decoded from; a SharedObject is returned as it is.
func ShareSized(obj runtime.Object, size int) *SharedObject {
	if s, ok := obj.(*SharedObject); ok {
		return s
	}
	s := Share(obj)
	s.size = size
	return s
}

// ShareStored wraps obj, which decode gave from data at revision rev, and
// keeps data (which the caller must no longer change): MayBeStoredAs then
// tells the stored bytes exactly, and ForgetDecoded may drop obj, which
// decode gives again when a reader asks. A SharedObject is returned as it
// is.
func ShareStored(obj runtime.Object, data []byte, rev int64, decode DecodeFunc) *SharedObject {
	if s, ok := obj.(*SharedObject); ok {
		return s
	}
	s := Share(obj)
	s.size, s.stored = len(data), &storedForm{data: data, rev: rev, decode: decode}
	return s
}

// MayBeStoredAs reports whether data may be the bytes the object was
// decoded from: false only when they certainly are not.
func (s *SharedObject) MayBeStoredAs(data []byte) bool {
	if s.stored != nil {
		return bytes.Equal(s.stored.data, data)
	}
	return s.size == 0 || s.size == len(data)
}

// Stored returns the bytes the object was decoded from, nil when it does
// not keep them. They must not be changed.
func (s *SharedObject) Stored() []byte {
	if s.stored == nil {
		return nil
	}
	return s.stored.data
}

// Revision is the revision the object was stored at, 0 when unknown.
func (s *SharedObject) Revision() int64 {
	if s.stored == nil {
		return 0
	}
	return s.stored.rev
}

// Object returns the shared object; callers must not mutate it.
func (s *SharedObject) Object() runtime.Object {
	s.touch()
	return s.Peek()
}

// touchEvery is how stale the time of the last use may be: readers of a
// popular object do not all write it.
const touchEvery = int64(100 * time.Millisecond)

func (s *SharedObject) touch() {
	if now := time.Now().UnixNano(); now-s.used.Load() > touchEvery {
		s.used.Store(now)
	}
}

// Peek returns the shared object as Object does, without counting a use:
// for a cache's own bookkeeping, which should not keep a decoded object
// that no reader wants.
func (s *SharedObject) Peek() runtime.Object {
	if d := s.obj.Load(); d != nil {
		return d.obj
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.obj.Load(); d != nil {
		return d.obj
	}
	obj, err := s.stored.decode(s.stored.data, s.stored.rev)
	if err != nil {
		// The same bytes decoded when they were shared, and decoding is a
		// function of the bytes.
		panic(fmt.Sprintf("decoding a shared object again: %v", err))
	}
	s.obj.Store(&decodedObject{obj})
	return obj
}

// AtRevision is the same stored object with resourceVersion rev (the
// last state of a deleted object, at the delete's revision), not decoded
// until a reader asks; false when the object does not keep its stored
// bytes.
func (s *SharedObject) AtRevision(rev int64) (*SharedObject, bool) {
	if s.stored == nil {
		return nil, false
	}
	at := &SharedObject{size: s.size, stored: &storedForm{data: s.stored.data, rev: rev, decode: s.stored.decode}}
	at.mem.Store(s.mem.Load())
	return at, true
}

// Tombstone stands for the last state of a deleted key in the events of a
// watch with KnowsPrevious: the watcher holds that state itself.
type Tombstone struct {
	Key string
	// Revision is the delete's.
	Revision int64
}

func (t *Tombstone) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (t *Tombstone) DeepCopyObject() runtime.Object {
	c := *t
	return &c
}

// ForgetDecoded drops the decoded object when it can be decoded again and
// no reader asked for it after since; it reports the memory let go (its
// MemSize), 0 when it kept it.
func (s *SharedObject) ForgetDecoded(since time.Time) int {
	if s.stored == nil || s.used.Load() >= since.UnixNano() || s.obj.Load() == nil {
		return 0
	}
	n := s.MemSize()
	s.obj.Store(nil)
	return n
}

// Size is the length of the bytes the object was decoded from (0 when
// unknown).
func (s *SharedObject) Size() int { return s.size }

// MemSize is the heap memory the decoded object holds (see MemSize),
// computed once; memoized encodings are not counted.
func (s *SharedObject) MemSize() int {
	if n := s.mem.Load(); n > 0 {
		return int(n)
	}
	n := max(MemSize(s.Peek()), 1)
	s.mem.Store(int64(n))
	return n
}

func (s *SharedObject) GetObjectKind() schema.ObjectKind { return s.Object().GetObjectKind() }

func (s *SharedObject) DeepCopyObject() runtime.Object { return s.Object().DeepCopyObject() }

// Encoded returns the object's encoding in format, computing it with encode
// the first time.
func (s *SharedObject) Encoded(format string, encode func(runtime.Object) ([]byte, error)) ([]byte, error) {
	now := time.Now().UnixNano()
	s.mu.Lock()
	for i := range s.enc {
		if e := &s.enc[i]; e.format == format {
			e.used = now
			data := e.data
			s.mu.Unlock()
			return data, nil
		}
	}
	s.mu.Unlock()
	// Outside the lock, which a decode takes.
	obj := s.Object()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.enc {
		if e := &s.enc[i]; e.format == format {
			e.used = now
			return e.data, nil
		}
	}
	b, err := encode(obj)
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
		return s.Object()
	}
	return obj
}
