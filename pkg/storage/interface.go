// Package storage owns the contract between the API handlers and the
// persistence layer: keys, resourceVersions, preconditions, lists and
// watches. It knows nothing about particular resource types; objects are
// runtime.Objects that a Codec turns into bytes and back. Implementations
// live in sub-packages (etcd3 over etcd clientv3); every implementation must
// pass the conformance suite in storagetest.
package storage

import (
	"context"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Codec turns one resource's objects into their stored bytes and back.
// Decode must return an object whose TypeMeta is set.
type Codec interface {
	Encode(obj runtime.Object) ([]byte, error)
	Decode(data []byte) (runtime.Object, error)
}

// Preconditions must hold on the stored object for a write to proceed.
// A nil field is not checked.
type Preconditions struct {
	UID             *types.UID
	ResourceVersion *string
}

// SelectionPredicate filters objects on a list or watch. A nil selector
// matches everything.
type SelectionPredicate struct {
	Label labels.Selector
	Field fields.Selector
	// GetAttrs returns the labels and the selectable fields of an object; it
	// is required when Field is set.
	GetAttrs func(obj runtime.Object) (labels.Set, fields.Set, error)
}

// Empty reports whether the predicate matches everything.
func (p SelectionPredicate) Empty() bool {
	return (p.Label == nil || p.Label.Empty()) && (p.Field == nil || p.Field.Empty())
}

// Matches reports whether obj is selected. obj may be a *SharedObject:
// GetAttrs always sees the object inside.
func (p SelectionPredicate) Matches(obj runtime.Object) (bool, error) {
	if p.Empty() {
		return true, nil
	}
	ls, fs, err := p.GetAttrs(Unwrap(obj))
	if err != nil {
		return false, err
	}
	if p.Label != nil && !p.Label.Matches(ls) {
		return false, nil
	}
	return p.Field == nil || p.Field.Matches(fs), nil
}

// ReadMode says which state a read may return.
type ReadMode int

const (
	// ReadMostRecent reads the newest state, as a quorum read does; the
	// ResourceVersion is ignored.
	ReadMostRecent ReadMode = iota
	// ReadAny accepts any state, newest preferred; a cache may serve it
	// without a round trip to etcd.
	ReadAny
	// ReadNotOlderThan reads a state at least as new as ResourceVersion.
	ReadNotOlderThan
	// ReadExact reads the state at exactly ResourceVersion (lists only).
	ReadExact
)

// GetOptions select what a Get returns.
type GetOptions struct {
	Mode            ReadMode
	ResourceVersion int64
}

// ListOptions select what a List returns.
type ListOptions struct {
	Mode            ReadMode
	ResourceVersion int64
	// Limit 0 means no limit. With a limit, the result carries a Continue
	// token when more items remain.
	Limit int64
	// Continue resumes a paged list at the revision of its first page; Mode
	// and ResourceVersion are then ignored.
	Continue  string
	Predicate SelectionPredicate
	// KeepStored asks for items that keep their stored bytes
	// (ShareStored), for a cache that holds them.
	KeepStored bool
}

// ListResult is one page of a list.
type ListResult struct {
	Items []runtime.Object
	// ResourceVersion is the revision the list was read at.
	ResourceVersion int64
	// Continue is empty on the last page.
	Continue string
	// RemainingItemCount is set on non-final pages when no predicate was
	// used.
	RemainingItemCount *int64
}

// UpdateFunc computes the new state of an object from its current state. It
// may be called more than once when the stored object changes underneath it.
// Returning an error aborts the update with that error.
type UpdateFunc func(current runtime.Object) (runtime.Object, error)

// ValidateDeleteFunc may veto a delete after the current object is read.
type ValidateDeleteFunc func(current runtime.Object) error

// Interface is the storage contract every backend implements.
//
// Keys are full paths such as "/registry/cronjobs/default/hello". Objects
// come back with metadata.resourceVersion set to the revision that last
// modified them; objects handed in may carry any resourceVersion, it is
// never stored.
//
// Errors: a missing key gives an error for which IsNotFound is true; a
// create of an existing key IsAlreadyExists; a failed precondition
// IsConflict; a revision that has been compacted IsExpired; a revision
// newer than the store has IsTooLargeResourceVersion. Errors from the
// backend itself come back wrapped and unclassified.
type Interface interface {
	// Create stores obj under key when the key does not exist yet, and
	// returns the stored object with its new resourceVersion.
	Create(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error)

	// Get reads key in the state opts select. ReadExact is treated as
	// ReadNotOlderThan.
	Get(ctx context.Context, key string, opts GetOptions) (runtime.Object, error)

	// List reads all objects whose keys start with prefix (which must end in
	// "/"), in key order, filtered by the options' predicate, in the state
	// the options select.
	List(ctx context.Context, prefix string, opts ListOptions) (*ListResult, error)

	// GuaranteedUpdate reads key, applies tryUpdate and writes the result
	// only if the key was not modified in between; on a race it reads again
	// and retries. preconditions are checked against every state read.
	// tryUpdate receives nil when the key does not exist; when it then
	// returns an object, the object is created. If tryUpdate returns the
	// current object unchanged in bytes, nothing is written and the current
	// object is returned.
	//
	// cached, when not nil, is a recent state of key that the caller holds
	// (the watch cache's object, read-only): the store may start from it
	// instead of reading key, and reads key before it trusts an outcome
	// that a stale state could explain (a failed precondition, an error
	// from tryUpdate, a write that changes nothing). Callers that hold no
	// such state pass nil.
	GuaranteedUpdate(ctx context.Context, key string, preconditions *Preconditions, tryUpdate UpdateFunc, cached runtime.Object) (runtime.Object, error)

	// Delete removes key if the preconditions hold on the current state and
	// validate (when not nil) accepts it. It returns the last state, with
	// the revision of the delete as its resourceVersion. cached is as for
	// GuaranteedUpdate.
	Delete(ctx context.Context, key string, preconditions *Preconditions, validate ValidateDeleteFunc, cached runtime.Object) (runtime.Object, error)

	// Watch streams the changes to keys under prefix (or to the single key,
	// when recursive is false) that happen after resourceVersion. With
	// resourceVersion 0 it first sends an ADDED event for every current
	// object, then the changes after that state. The returned objects, and
	// those of Get and List, may be *SharedObject: read-only. Events are filtered by the
	// predicate: an object that stops matching is sent as DELETED, one that
	// starts matching as ADDED. A DELETED event carries the last state with
	// the revision of the delete as its resourceVersion. The watch ends when
	// ctx is cancelled or Stop is called; if history at resourceVersion is
	// gone, the channel carries one ERROR event holding a 410 Status.
	Watch(ctx context.Context, key string, opts WatchOptions) (watch.Interface, error)

	// CurrentResourceVersion returns the newest revision of the store with a
	// quorum read.
	CurrentResourceVersion(ctx context.Context) (int64, error)
}

// WatchOptions select what a Watch streams.
type WatchOptions struct {
	// ResourceVersion 0 starts with the current state (synthetic ADDED
	// events); with Mode ReadMostRecent that state is read consistently,
	// with ReadAny it may be older.
	ResourceVersion int64
	Mode            ReadMode
	Recursive       bool
	Predicate       SelectionPredicate
	// ProgressNotify asks for BOOKMARK events: the backend sends one holding
	// only a resourceVersion whenever it knows that nothing under the key
	// changed up to that revision.
	ProgressNotify bool
	// SendInitialEvents starts the watch with an ADDED event for every
	// object in a state read per Mode (ReadNotOlderThan: at least
	// ResourceVersion), followed by a BOOKMARK annotated InitialEventsEnd
	// at that state's revision. It overrides ResourceVersion's own meaning.
	SendInitialEvents bool
	// SkipInitialState with ResourceVersion 0 starts at the current
	// revision without the synthetic ADDED events.
	SkipInitialState bool
	// KnowsPrevious says that the watcher holds the state each event
	// replaces (a cache that saw every event since its list): with an
	// empty Predicate, the backend then does not read that state (etcd's
	// prevKV, a read of each changed key at the revision before), and a
	// DELETED event carries a *Tombstone instead of the last state.
	KnowsPrevious bool
}

// InitialEventsEndAnnotation marks the bookmark that ends the initial
// events of a watch with SendInitialEvents.
const InitialEventsEndAnnotation = "k8s.io/initial-events-end"
