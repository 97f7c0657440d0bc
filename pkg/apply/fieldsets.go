package apply

import (
	"bytes"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"
)

// Objects of one shape written by one manager own the same fields, so the
// FieldsV1 of their managedFields entries repeat from write to write and
// from object to object. Each write decodes every entry of the live
// object and encodes every entry back; decoded sets are kept here by
// their bytes, with their canonical encoding, so that an entry a write
// leaves as it was is neither parsed nor encoded again.
//
// The sets are shared between writes: nothing may change them in place
// (the merge library's set operations all return new sets).

// maxFieldSetBytes bounds the JSON bytes of the sets kept; a decoded set
// takes a few times as much heap.
const maxFieldSetBytes = 512 << 10

// fieldSet is a decoded FieldsV1.
type fieldSet struct {
	set *fieldpath.Set
	// canonical is the set's encoding, as Set.ToJSON writes it, once
	// known; the bytes a set was decoded from need not be canonical.
	canonical atomic.Pointer[[]byte]
}

// encoded returns the set's canonical encoding, computing it once.
func (f *fieldSet) encoded() ([]byte, error) {
	if b := f.canonical.Load(); b != nil {
		return *b, nil
	}
	b, err := f.set.ToJSON()
	if err != nil {
		return nil, err
	}
	f.canonical.Store(&b)
	return b, nil
}

// fieldSets are the decoded sets by the bytes they were read from.
var fieldSets = struct {
	mu    sync.Mutex
	byRaw map[string]*fieldSet
	bytes int
}{byRaw: map[string]*fieldSet{}}

// decodeFieldSet returns the set raw encodes.
func decodeFieldSet(raw []byte) (*fieldSet, error) {
	fieldSets.mu.Lock()
	f, ok := fieldSets.byRaw[string(raw)]
	fieldSets.mu.Unlock()
	if ok {
		return f, nil
	}
	set := fieldpath.NewSet()
	if err := set.FromJSON(bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	f = &fieldSet{set: set}
	keepFieldSet(string(raw), f)
	return f, nil
}

// recentSets are the sets encoded last. Creates of objects of one shape
// by one manager own equal sets, which compare faster than they encode.
var recentSets struct {
	mu   sync.Mutex
	sets [8]*fieldSet
	next int
}

// encodeFieldSet encodes set, taking the encoding of an equal set encoded
// recently, and keeps it for the writes that will read these bytes back.
func encodeFieldSet(set *fieldpath.Set) ([]byte, error) {
	recentSets.mu.Lock()
	recent := recentSets.sets
	recentSets.mu.Unlock()
	for _, f := range recent {
		if f != nil && f.set.Equals(set) {
			return f.encoded()
		}
	}
	raw, err := set.ToJSON()
	if err != nil {
		return nil, err
	}
	f := &fieldSet{set: set}
	f.canonical.Store(&raw)
	keepFieldSet(string(raw), f)
	recentSets.mu.Lock()
	recentSets.sets[recentSets.next] = f
	recentSets.next = (recentSets.next + 1) % len(recentSets.sets)
	recentSets.mu.Unlock()
	return raw, nil
}

// keepFieldSet remembers f under raw; when the sets kept reach their
// bound they are all forgotten, and the sets in use come back with the
// next writes.
func keepFieldSet(raw string, f *fieldSet) {
	fieldSets.mu.Lock()
	defer fieldSets.mu.Unlock()
	if _, ok := fieldSets.byRaw[raw]; ok {
		return
	}
	if fieldSets.bytes+len(raw) > maxFieldSetBytes {
		clear(fieldSets.byRaw)
		fieldSets.bytes = 0
	}
	fieldSets.byRaw[raw] = f
	fieldSets.bytes += len(raw)
}
