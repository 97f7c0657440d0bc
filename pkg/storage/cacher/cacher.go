// Package cacher owns the in-memory view of one resource that serves
// reads and watches without a round trip to etcd. One etcd watch feeds it:
// it keeps the current objects, in key order, and a window of recent
// events. It answers gets and lists that accept an older or a
// not-older-than state, and paged lists at the revision of their first
// page while the window covers it (the objects of the moment, with the
// keys changed since as they were then). It fans each event out to many
// watchers, each behind a bounded buffer so that one slow watcher never
// holds up the others (a watcher that falls too far behind is ended and
// its client watches again). Objects are shared read-only between readers
// and memoize their encodings, so an event is encoded once per format,
// not once per watcher; they keep their stored bytes, and an object no
// reader asked for lately is kept as those bytes alone, decoded again when
// asked for. Writes pass straight through to the backend; the
// cache holds nothing that is not in etcd. When its etcd watch breaks it
// resumes it from the last revision it holds, and rebuilds itself from
// etcd (ending its watchers) only when that revision was compacted.
package cacher

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/storage"
)

// Config tunes a Cache; zero values take the defaults.
type Config struct {
	// Window is how long events stay replayable (default 75 s); Capacity
	// the number of events kept at least (default 4096), whatever their age.
	// To keep the window the ring grows up to MaxCapacity events (default
	// 4 times Capacity); past that, memory wins over the window.
	Window      time.Duration
	Capacity    int
	MaxCapacity int
	// MaxBytes bounds the memory the ring holds beyond the current
	// objects (default 16 MiB): the estimated heap size (MemSize) of the
	// decoded objects only its events keep alive, replaced and deleted
	// states. Past it the oldest events go, whatever Window and Capacity
	// say, down to the newest minEvents.
	MaxBytes int
	// EncodingTTL is how long an encoding memoized for a current object
	// stays once nobody asks for it (default 5 s: lists and watches that
	// come together share it, a lone list encodes again, as kube's always
	// does); an object replaced or deleted, kept only for replays, keeps
	// its encodings for a tenth of that. The decoded form of an object
	// that keeps its stored bytes goes after the same time without a
	// reader (storage.SharedObject.ForgetDecoded): the cache's own use
	// when the event arrives does not count.
	EncodingTTL time.Duration
	// WatcherBuffer is how many events a watcher may fall behind before it
	// is ended (default 1024).
	WatcherBuffer int
	// BookmarkInterval is how often a watcher that asked for bookmarks gets
	// one (default about a minute).
	BookmarkInterval time.Duration
	// SyncTimeout bounds the wait of a consistent read for the cache to
	// catch up with etcd before it falls back to etcd (default 3 s).
	SyncTimeout time.Duration
}

func (c *Config) defaults() {
	if c.Window == 0 {
		c.Window = 75 * time.Second
	}
	if c.Capacity == 0 {
		c.Capacity = 4096
	}
	if c.MaxCapacity < c.Capacity {
		c.MaxCapacity = 4 * c.Capacity
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = 16 << 20
	}
	if c.EncodingTTL == 0 {
		c.EncodingTTL = 5 * time.Second
	}
	if c.WatcherBuffer == 0 {
		c.WatcherBuffer = 1024
	}
	if c.BookmarkInterval == 0 {
		c.BookmarkInterval = time.Minute
	}
	if c.SyncTimeout == 0 {
		c.SyncTimeout = 3 * time.Second
	}
}

// ProgressRequester is implemented by backends that can be asked to report
// their current revision on open watches (etcd's RequestProgress), which
// lets a consistent read be served from the cache.
type ProgressRequester interface {
	RequestProgress(ctx context.Context) error
}

// RevisionChecker is implemented by backends that can tell cheaply whether
// the state at a revision can still be read. A list at a past revision is
// served from the cache only when it can: a compacted revision is left to
// the backend, which refuses it in its own words.
type RevisionChecker interface {
	// CheckRevision returns nil when the state at rev is neither compacted
	// nor in the future.
	CheckRevision(ctx context.Context, rev int64) error
}

// NewFunc returns an empty object of the cached type, for bookmarks.
type NewFunc func() runtime.Object

type event struct {
	// initialEnd marks the bookmark that ends a watch's initial events.
	initialEnd bool
	// state marks an object of a watch's initial state, sent as ADDED;
	// events replayed from the ring keep their own type.
	state bool
	typ   watch.EventType
	key   string
	// obj is the new state; a DELETED event's is the last state, at the
	// delete's revision.
	obj *storage.SharedObject
	// prev is the state a MODIFIED event replaced, for the watchers whose
	// selector it matched. A DELETED event keeps none: its obj is that
	// state already, and one decoded copy per deleted object is enough.
	prev *storage.SharedObject
	// prevRV is the revision of the state the event replaced, 0 for none.
	prevRV int64
	rv     int64
	at     time.Time
}

// minEvents are kept in the ring whatever their size.
const minEvents = 100

// Cache is a storage.Interface serving reads from memory.
type Cache struct {
	backend storage.Interface
	prefix  string
	newFunc NewFunc
	cfg     Config

	mu    sync.RWMutex
	ready bool
	items map[string]*storage.SharedObject
	// sorted holds the objects of items in key order. Lists read a clone
	// of it (copy-on-write, taken in O(1) under the write lock) without
	// the lock.
	sorted *btree.BTree
	rv     int64
	// advanced is closed and replaced whenever rv moves.
	advanced chan struct{}
	// events is a ring of recent events: events[(start+i)%len] for i < count.
	events      []*event
	start, size int
	// held counts the references of the ring's events to each object (as
	// obj or prev); bytes is the memory of the objects held that are not
	// current items, which only the ring keeps alive.
	held  map[*storage.SharedObject]int
	bytes int
	// oldest is the revision after which every event is in the ring.
	oldest   int64
	watchers map[*watcher]struct{}

	stop context.CancelFunc
	done chan struct{}
	// dispatched counts the events taken in from etcd and offered to the
	// watchers.
	dispatched atomic.Uint64
	// freed counts the memory the cache let go: replaced or deleted
	// states nothing else held and the states the ring dropped (their
	// MemSize), and forgotten encodings.
	freed atomic.Uint64
}

// Stats describe a cache for metrics.
type Stats struct {
	// Objects is how many objects the cache holds.
	Objects int
	// Capacity is the size of the ring of recent events.
	Capacity int
	// Dispatched counts the events taken in since the start.
	Dispatched uint64
	// Freed counts the bytes of decoded objects and encodings let go since
	// the start.
	Freed uint64
}

// Stats returns the cache's figures now.
func (c *Cache) Stats() Stats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return Stats{Objects: len(c.items), Capacity: len(c.events), Dispatched: c.dispatched.Load(), Freed: c.freed.Load()}
}

// New starts a cache of the keys under prefix (ending in "/") of backend.
// It lists and watches in the background until Stop.
func New(backend storage.Interface, prefix string, newFunc NewFunc, cfg Config) *Cache {
	c := newCache(prefix, cfg)
	c.backend, c.newFunc = backend, newFunc
	ctx, cancel := context.WithCancel(context.Background())
	c.stop, c.done = cancel, make(chan struct{})
	go c.run(ctx)
	go c.sweep(ctx)
	return c
}

// newCache is an empty cache of the keys under prefix, not started.
func newCache(prefix string, cfg Config) *Cache {
	cfg.defaults()
	return &Cache{
		prefix:   prefix,
		cfg:      cfg,
		items:    map[string]*storage.SharedObject{},
		sorted:   btree.New(treeDegree),
		advanced: make(chan struct{}),
		events:   make([]*event, cfg.Capacity),
		held:     map[*storage.SharedObject]int{},
		watchers: map[*watcher]struct{}{},
	}
}

// sweep forgets, until ctx ends, the encodings nobody asked for recently.
func (c *Cache) sweep(ctx context.Context) {
	tick := time.NewTicker(max(c.cfg.EncodingTTL/10, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if n := c.forgetEncodings(now); n > 0 {
				klog.V(4).InfoS("Watch cache forgot encodings", "prefix", c.prefix, "bytes", n)
			}
		}
	}
}

// Stop ends the cache and all its watchers.
func (c *Cache) Stop() {
	c.stop()
	<-c.done
	c.mu.Lock()
	for w := range c.watchers {
		c.removeLocked(w)
	}
	c.mu.Unlock()
}

// run keeps the cache in sync: list, then watch from the list's revision;
// after an error it cannot resume from, list again.
func (c *Cache) run(ctx context.Context) {
	defer close(c.done)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if err := c.sync(ctx); err != nil && ctx.Err() == nil {
			klog.V(2).InfoS("Watch cache relists", "prefix", c.prefix, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			if backoff < 5*time.Second {
				backoff *= 2
			}
			continue
		}
		backoff = 100 * time.Millisecond
	}
}

// sync lists, then follows the backend's watch from the list's revision.
// When that watch breaks (etcd lost its leader or its connection) it is
// resumed from the last revision the cache holds, so that the cache's own
// watchers go on without a gap and without noticing; only a revision
// compacted meanwhile makes it return, for run to list again.
func (c *Cache) sync(ctx context.Context) error {
	list, err := c.backend.List(ctx, c.prefix, storage.ListOptions{Mode: storage.ReadMostRecent, KeepStored: true})
	if err != nil {
		return err
	}
	c.replace(list)
	backoff := 100 * time.Millisecond
	for {
		c.mu.RLock()
		rv := c.rv
		c.mu.RUnlock()
		progressed, resumable, err := c.follow(ctx, rv)
		switch {
		case ctx.Err() != nil:
			return nil
		case !resumable || storage.IsExpired(err) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
			return err
		}
		if progressed {
			backoff = 100 * time.Millisecond
		}
		klog.V(2).InfoS("Watch cache resumes its watch", "prefix", c.prefix, "resourceVersion", rv, "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		if backoff < 5*time.Second {
			backoff *= 2
		}
	}
}

// follow applies the backend's events after rv until its watch ends. It
// reports whether any arrived, and whether the watch may be resumed
// after the last one (not after an event the cache could not apply).
func (c *Cache) follow(ctx context.Context, rv int64) (progressed, resumable bool, err error) {
	w, err := c.backend.Watch(ctx, c.prefix, storage.WatchOptions{ResourceVersion: rv, Recursive: true, ProgressNotify: true, KnowsPrevious: true})
	if err != nil {
		return false, true, err
	}
	defer w.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return progressed, true, nil
		case now := <-tick.C:
			c.sendBookmarks(now)
		case e, ok := <-w.ResultChan():
			if !ok {
				return progressed, true, fmt.Errorf("watch of %s ended", c.prefix)
			}
			switch e.Type {
			case watch.Error:
				if st, ok := e.Object.(*metav1.Status); ok {
					return progressed, true, &apierrors.StatusError{ErrStatus: *st}
				}
				return progressed, true, fmt.Errorf("watch of %s: %v", c.prefix, e.Object)
			case watch.Bookmark:
				if rv, err := resourceVersion(e.Object); err == nil {
					c.advance(rv)
				}
			default:
				if err := c.apply(e); err != nil {
					return progressed, false, err
				}
			}
			progressed = true
		}
	}
}

// replace installs a fresh list. Watchers cannot be told what they missed
// across a relist, so they are ended and their clients watch again.
func (c *Cache) replace(list *storage.ListResult) {
	items := make(map[string]*storage.SharedObject, len(list.Items))
	sorted := btree.New(treeDegree)
	for _, obj := range list.Items {
		key, err := c.keyOf(obj)
		if err != nil {
			continue
		}
		e := &entry{key: key, obj: share(obj)}
		items[key] = e.obj
		sorted.ReplaceOrInsert(e)
	}
	c.mu.Lock()
	c.items, c.sorted = items, sorted
	for i := range c.events {
		c.events[i] = nil
	}
	c.start, c.size, c.bytes = 0, 0, 0
	clear(c.held)
	c.oldest = list.ResourceVersion
	for w := range c.watchers {
		c.removeLocked(w)
	}
	c.ready = true
	c.setRVLocked(list.ResourceVersion)
	c.mu.Unlock()
}

func share(obj runtime.Object) *storage.SharedObject {
	if s, ok := obj.(*storage.SharedObject); ok {
		return s
	}
	return storage.Share(obj)
}

// peek is the object inside obj, without counting a use of a shared one:
// the cache's own bookkeeping does not keep a decoded object alive.
func peek(obj runtime.Object) runtime.Object {
	if s, ok := obj.(*storage.SharedObject); ok {
		return s.Peek()
	}
	return obj
}

func (c *Cache) keyOf(obj runtime.Object) (string, error) {
	m, err := meta.Accessor(peek(obj))
	if err != nil {
		return "", err
	}
	if ns := m.GetNamespace(); ns != "" {
		return c.prefix + ns + "/" + m.GetName(), nil
	}
	return c.prefix + m.GetName(), nil
}

func resourceVersion(obj runtime.Object) (int64, error) {
	if s, ok := obj.(*storage.SharedObject); ok && s.Revision() > 0 {
		return s.Revision(), nil
	}
	m, err := meta.Accessor(peek(obj))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(m.GetResourceVersion(), 10, 64)
}

func (c *Cache) setRVLocked(rv int64) {
	if rv <= c.rv && c.rv != 0 {
		return
	}
	c.rv = rv
	close(c.advanced)
	c.advanced = make(chan struct{})
}

func (c *Cache) advance(rv int64) {
	c.mu.Lock()
	c.setRVLocked(rv)
	c.mu.Unlock()
}

// apply records one event from the backend and hands it to the watchers.
func (c *Cache) apply(e watch.Event) error {
	if t, ok := e.Object.(*storage.Tombstone); ok {
		return c.applyDelete(t)
	}
	key, err := c.keyOf(e.Object)
	if err != nil {
		return err
	}
	rv, err := resourceVersion(e.Object)
	if err != nil {
		return err
	}
	return c.applyEvent(&event{typ: e.Type, key: key, obj: share(e.Object), rv: rv, at: time.Now()})
}

// applyDelete records a delete the backend reported without the last
// state, which the cache holds: that state, at the delete's revision,
// is the event's object.
func (c *Cache) applyDelete(t *storage.Tombstone) error {
	c.mu.RLock()
	last := c.items[t.Key]
	c.mu.RUnlock()
	if last == nil {
		// Not a key of this cache's state: nothing to remove or tell.
		c.advance(t.Revision)
		return nil
	}
	deleted := share(withRV(last, t.Revision))
	// Decoded here, before the watchers get it, as etcd's previous state
	// was: a watcher that reacts to the delete (the server's own, which
	// stop serving a removed definition) does not wait for a decode.
	deleted.Peek()
	return c.applyEvent(&event{typ: watch.Deleted, key: t.Key, obj: deleted, rv: t.Revision, at: time.Now()})
}

// applyEvent records ev and hands it to the watchers.
func (c *Cache) applyEvent(ev *event) error {
	key, rv := ev.key, ev.rv
	// Estimated here, outside the lock, for when the ring is all that
	// holds the object.
	ev.obj.MemSize()
	ent := &entry{key: key, obj: ev.obj}
	c.mu.Lock()
	prev := c.items[key]
	if ev.typ == watch.Deleted {
		delete(c.items, key)
		c.sorted.Delete(ent)
	} else {
		c.items[key] = ev.obj
		c.sorted.ReplaceOrInsert(ent)
	}
	if prev != nil {
		if ev.typ == watch.Modified {
			ev.prev = prev
		}
		ev.prevRV, _ = resourceVersion(prev)
		if c.held[prev] > 0 {
			// No longer current: only the ring holds it now.
			c.bytes += prev.MemSize()
		} else if ev.prev == nil {
			c.freed.Add(uint64(prev.MemSize()))
		}
	}
	c.appendLocked(ev)
	c.setRVLocked(rv)
	watchers := make([]*watcher, 0, len(c.watchers))
	for w := range c.watchers {
		watchers = append(watchers, w)
	}
	c.mu.Unlock()
	c.dispatched.Add(1)

	var slow []*watcher
	for _, w := range watchers {
		if !w.offer(ev) {
			slow = append(slow, w)
		}
	}
	if len(slow) > 0 {
		c.mu.Lock()
		for _, w := range slow {
			c.removeLocked(w)
		}
		c.mu.Unlock()
	}
	return nil
}

// appendLocked adds ev to the ring, dropping the oldest event when the ring
// is full, unless that event is still inside the window: then the ring grows.
// Past MaxBytes the oldest events go whatever their age.
func (c *Cache) appendLocked(ev *event) {
	c.holdLocked(ev.key, ev.obj)
	c.holdLocked(ev.key, ev.prev)
	if c.size == len(c.events) {
		oldest := c.events[c.start]
		if ev.at.Sub(oldest.at) < c.cfg.Window && 2*len(c.events) <= c.cfg.MaxCapacity && c.bytes <= c.cfg.MaxBytes {
			grown := make([]*event, 2*len(c.events))
			for i := 0; i < c.size; i++ {
				grown[i] = c.events[(c.start+i)%len(c.events)]
			}
			c.events, c.start = grown, 0
		} else {
			c.dropOldestLocked()
		}
	}
	c.events[(c.start+c.size)%len(c.events)] = ev
	c.size++
	for c.bytes > c.cfg.MaxBytes && c.size > minEvents {
		c.dropOldestLocked()
	}
}

func (c *Cache) dropOldestLocked() {
	oldest := c.events[c.start]
	c.oldest = oldest.rv
	c.releaseLocked(oldest.key, oldest.obj)
	c.releaseLocked(oldest.key, oldest.prev)
	c.events[c.start] = nil
	c.start = (c.start + 1) % len(c.events)
	c.size--
}

// holdLocked counts a reference of a ring event to obj, the state of key;
// the first one of an object that is not current counts its memory.
func (c *Cache) holdLocked(key string, obj *storage.SharedObject) {
	if obj == nil {
		return
	}
	c.held[obj]++
	if c.held[obj] == 1 && c.items[key] != obj {
		c.bytes += obj.MemSize()
	}
}

// releaseLocked undoes holdLocked.
func (c *Cache) releaseLocked(key string, obj *storage.SharedObject) {
	if obj == nil {
		return
	}
	if c.held[obj]--; c.held[obj] > 0 {
		return
	}
	delete(c.held, obj)
	if c.items[key] != obj {
		c.bytes -= obj.MemSize()
		c.freed.Add(uint64(obj.MemSize()))
	}
}

// forgetEncodings drops the encodings and decoded forms nobody asked for
// recently: after EncodingTTL for current objects, after a tenth of it for
// the ones the ring keeps only for replays. It reports how many bytes
// went.
func (c *Cache) forgetEncodings(now time.Time) int {
	current, history := now.Add(-c.cfg.EncodingTTL), now.Add(-c.cfg.EncodingTTL/10)
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for _, obj := range c.items {
		n += obj.ForgetEncodings(current) + obj.ForgetDecoded(current)
	}
	for i := 0; i < c.size; i++ {
		ev := c.events[(c.start+i)%len(c.events)]
		for _, obj := range []*storage.SharedObject{ev.obj, ev.prev} {
			if obj != nil && c.items[ev.key] != obj {
				n += obj.ForgetEncodings(history) + obj.ForgetDecoded(history)
			}
		}
	}
	c.freed.Add(uint64(n))
	return n
}

// progressInterval is how often a wait for a revision the cache has not
// seen asks etcd for progress: a quiet prefix moves only so, and a request
// made before the cache's watch was established is lost.
const progressInterval = 100 * time.Millisecond

// waitFor blocks until the cache is ready and has reached rv, or the sync
// timeout passes.
func (c *Cache) waitFor(ctx context.Context, rv int64) error {
	deadline := time.NewTimer(c.cfg.SyncTimeout)
	defer deadline.Stop()
	progress, _ := c.backend.(ProgressRequester)
	var tick <-chan time.Time
	if progress != nil && rv > 0 {
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		c.mu.RLock()
		ok, current, advanced := c.ready && c.rv >= rv, c.rv, c.advanced
		c.mu.RUnlock()
		if ok {
			return nil
		}
		select {
		case <-advanced:
		case <-tick:
			if err := progress.RequestProgress(ctx); err != nil {
				klog.V(2).InfoS("Requesting watch progress", "prefix", c.prefix, "err", err)
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return &storage.Error{Code: storage.ErrCodeTooLargeResourceVersion, Requested: rv, Revision: current}
		}
	}
}

// syncConsistent waits until the cache holds at least etcd's current state.
func (c *Cache) syncConsistent(ctx context.Context) error {
	rv, err := c.backend.CurrentResourceVersion(ctx)
	if err != nil {
		return err
	}
	c.mu.RLock()
	behind := !c.ready || c.rv < rv
	c.mu.RUnlock()
	if !behind {
		return nil
	}
	if p, ok := c.backend.(ProgressRequester); ok {
		if err := p.RequestProgress(ctx); err != nil {
			klog.V(2).InfoS("Requesting watch progress", "prefix", c.prefix, "err", err)
		}
	}
	return c.waitFor(ctx, rv)
}

// Get serves any state from the cache; a consistent read waits for the
// cache to catch up with etcd, and falls back to etcd if it does not.
func (c *Cache) Get(ctx context.Context, key string, opts storage.GetOptions) (runtime.Object, error) {
	switch opts.Mode {
	case storage.ReadMostRecent:
		if err := c.syncConsistent(ctx); err != nil {
			return c.backend.Get(ctx, key, opts)
		}
	case storage.ReadAny:
		if err := c.waitFor(ctx, 0); err != nil {
			return c.backend.Get(ctx, key, opts)
		}
	default:
		if err := c.waitFor(ctx, opts.ResourceVersion); err != nil {
			return nil, err
		}
	}
	c.mu.RLock()
	obj, ok := c.items[key]
	c.mu.RUnlock()
	if !ok {
		return nil, &storage.Error{Code: storage.ErrCodeNotFound, Key: key}
	}
	return obj, nil
}

// List serves from the cache every list whose state it holds, as the
// etcd store would answer it (the same items, continue token and
// remainingItemCount, with tokens valid on either):
//   - any state, ignoring the limit as kube's watch cache does;
//   - the most recent state, and not-older-than with a limit (both read
//     at etcd's current revision), once the cache has caught up with etcd;
//   - not-older-than without a limit once the cache has reached it;
//   - a continue token or an Exact read at revision R: R's state is the
//     current one with every key changed after R as it was before its
//     first change since, which the event window tells while it holds
//     every event after R and etcd has not compacted R.
//
// Anything else goes to etcd, which keeps the snapshots it needs.
func (c *Cache) List(ctx context.Context, prefix string, opts storage.ListOptions) (*storage.ListResult, error) {
	start, rev, limit := prefix, int64(0), opts.Limit
	var err error
	switch {
	case opts.Continue != "":
		if start, rev, err = storage.DecodeContinue(opts.Continue, prefix); err != nil {
			return nil, err
		}
		if rev == 0 {
			// A token that resumes at the latest revision.
			err = c.syncConsistent(ctx)
		}
	case opts.Mode == storage.ReadExact:
		if rev = opts.ResourceVersion; rev <= 0 {
			return c.backend.List(ctx, prefix, opts)
		}
	case opts.Mode == storage.ReadAny:
		err, limit = c.waitFor(ctx, 0), 0
	case opts.Mode == storage.ReadNotOlderThan && opts.Limit == 0:
		err = c.waitFor(ctx, opts.ResourceVersion)
		if storage.IsTooLargeResourceVersion(err) {
			return nil, err
		}
	default:
		err = c.syncConsistent(ctx)
	}
	if err != nil {
		return c.backend.List(ctx, prefix, opts)
	}
	v, ok := c.viewAt(rev)
	if !ok || (opts.Mode == storage.ReadNotOlderThan && v.rv < opts.ResourceVersion) {
		return c.backend.List(ctx, prefix, opts)
	}
	if rev > 0 && c.checkRevision(ctx, rev) != nil {
		return c.backend.List(ctx, prefix, opts)
	}
	return v.list(prefix, start, limit, opts.Predicate)
}

// checkRevision returns nil when etcd can still read the state at rev.
func (c *Cache) checkRevision(ctx context.Context, rev int64) error {
	rc, ok := c.backend.(RevisionChecker)
	if !ok {
		return errNoRevisionCheck
	}
	return rc.CheckRevision(ctx, rev)
}

var errNoRevisionCheck = errors.New("the backend cannot check revisions")

// Watch serves a watch from the cache: the current state first when
// ResourceVersion is 0, else the events after it, which must still be in
// the window (410 Gone otherwise).
func (c *Cache) Watch(ctx context.Context, key string, opts storage.WatchOptions) (watch.Interface, error) {
	initialState := opts.SendInitialEvents || (opts.ResourceVersion == 0 && !opts.SkipInitialState)
	var err error
	switch {
	case initialState && opts.Mode == storage.ReadMostRecent:
		err = c.syncConsistent(ctx)
	case opts.SendInitialEvents && opts.Mode == storage.ReadNotOlderThan:
		err = c.waitFor(ctx, opts.ResourceVersion)
	default:
		err = c.waitFor(ctx, 0)
	}
	if err != nil {
		return nil, err
	}
	if opts.ResourceVersion > 0 && !opts.SendInitialEvents {
		// The ring may still hold events from before a compaction; a watch
		// from a compacted revision is answered as etcd would answer it.
		err := c.checkRevision(ctx, opts.ResourceVersion)
		if errors.Is(err, errNoRevisionCheck) {
			_, err = c.backend.List(ctx, c.prefix, storage.ListOptions{Mode: storage.ReadExact, ResourceVersion: opts.ResourceVersion, Limit: 1})
		}
		if storage.IsExpired(err) {
			return errorWatch(apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d", opts.ResourceVersion))), nil
		}
	}
	w := newWatcher(ctx, c, key, opts, c.cfg.WatcherBuffer)
	c.mu.Lock()
	var initial []*event
	switch {
	case initialState:
		// The watched keys are a range of the sorted objects.
		c.sorted.AscendGreaterOrEqual(&entry{key: key}, func(it btree.Item) bool {
			e := it.(*entry)
			if !w.wantsKey(e.key) {
				return false
			}
			initial = append(initial, &event{typ: watch.Added, key: e.key, obj: e.obj, state: true})
			return true
		})
		w.startRV = c.rv
		if opts.SendInitialEvents && opts.ProgressNotify {
			initial = append(initial, &event{typ: watch.Bookmark, rv: c.rv, initialEnd: true})
		}
	case opts.ResourceVersion == 0:
		w.startRV = c.rv
	case opts.ResourceVersion < c.oldest:
		oldest := c.oldest
		c.mu.Unlock()
		return errorWatch(apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", opts.ResourceVersion, oldest+1))), nil
	default:
		// Events after the requested revision are replayed from the ring;
		// later ones arrive live. A revision ahead of the cache skips what
		// the client has already seen.
		for i := 0; i < c.size; i++ {
			if ev := c.events[(c.start+i)%len(c.events)]; ev.rv > opts.ResourceVersion {
				initial = append(initial, ev)
			}
		}
		w.startRV = opts.ResourceVersion
	}
	w.lastRV = w.startRV
	c.watchers[w] = struct{}{}
	c.mu.Unlock()
	go w.run(ctx, initial)
	return w, nil
}

func (c *Cache) removeLocked(w *watcher) {
	delete(c.watchers, w)
	w.end()
}

func (c *Cache) remove(w *watcher) {
	c.mu.Lock()
	c.removeLocked(w)
	c.mu.Unlock()
}

// sendBookmarks sends a bookmark to each watcher that asked for them and
// whose time has come. It runs in the goroutine that dispatches events, so
// a bookmark never overtakes an event it covers.
func (c *Cache) sendBookmarks(now time.Time) {
	c.mu.RLock()
	rv := c.rv
	var due []*watcher
	for w := range c.watchers {
		if w.bookmarks && (now.After(w.nextBookmark) || (!w.endBookmarkAt.IsZero() && now.After(w.endBookmarkAt))) {
			due = append(due, w)
		}
	}
	c.mu.RUnlock()
	for _, w := range due {
		w.nextBookmark = now.Add(jitter(c.cfg.BookmarkInterval))
		if !w.endBookmarkAt.IsZero() && now.After(w.endBookmarkAt) {
			w.endBookmarkAt = time.Time{}
		}
		if !w.offer(&event{typ: watch.Bookmark, rv: rv}) {
			c.remove(w)
		}
	}
}

func jitter(d time.Duration) time.Duration {
	return d - time.Duration(rand.Int63n(int64(d)/10+1))
}

// Writes go straight to the backend; the cache learns of them through its
// watch.

func (c *Cache) Create(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	return c.backend.Create(ctx, key, obj)
}

// GuaranteedUpdate and Delete start from the cached object, as kube's
// cacher hands the storage its cached state: etcd is read only when that
// state proves stale.
func (c *Cache) GuaranteedUpdate(ctx context.Context, key string, p *storage.Preconditions, f storage.UpdateFunc, cached runtime.Object) (runtime.Object, error) {
	if cached == nil {
		cached = c.cached(key)
	}
	return c.backend.GuaranteedUpdate(ctx, key, p, f, cached)
}

func (c *Cache) Delete(ctx context.Context, key string, p *storage.Preconditions, v storage.ValidateDeleteFunc, cached runtime.Object) (runtime.Object, error) {
	if cached == nil {
		cached = c.cached(key)
	}
	return c.backend.Delete(ctx, key, p, v, cached)
}

// cached returns the object the cache holds under key, or nil (also when
// the cache is not filled yet).
func (c *Cache) cached(key string) runtime.Object {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.ready {
		return nil
	}
	if obj, ok := c.items[key]; ok {
		return obj
	}
	return nil
}

func (c *Cache) CurrentResourceVersion(ctx context.Context) (int64, error) {
	return c.backend.CurrentResourceVersion(ctx)
}

// Decoded returns the cached object stored under key if it is the state at
// revision rev: etcd reads that the cache passes through reuse it.
func (c *Cache) Decoded(key string, rev int64) runtime.Object {
	c.mu.RLock()
	obj, ok := c.items[key]
	c.mu.RUnlock()
	if !ok {
		return nil
	}
	if got, err := resourceVersion(obj); err != nil || got != rev {
		return nil
	}
	return obj
}
