package cacher

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cronplane/cronplane/pkg/storage"
)

// watcher is one watch served from the cache. The cache offers it events
// without blocking; its own goroutine filters them and sends them on.
type watcher struct {
	cache     *Cache
	key       string
	recursive bool
	pred      storage.SelectionPredicate
	bookmarks bool

	in     chan *event
	result chan watch.Event
	// startRV: events at or before it are already in the initial state.
	startRV int64
	// lastRV is the newest revision sent (for bookmarks); owned by run.
	lastRV       int64
	nextBookmark time.Time
	// endBookmarkAt is when to send the bookmark that precedes the end of
	// the watch (its context's deadline); zero when none is due.
	endBookmarkAt time.Time

	// stopped is closed when the watcher is removed from the cache, by
	// Stop or because it fell behind; in is never closed, so that senders
	// need no lock.
	stopOnce sync.Once
	stopped  chan struct{}
}

func newWatcher(ctx context.Context, c *Cache, key string, opts storage.WatchOptions, buffer int) *watcher {
	var endBookmarkAt time.Time
	if deadline, ok := ctx.Deadline(); ok {
		endBookmarkAt = deadline.Add(-2 * time.Second)
	}
	return &watcher{
		endBookmarkAt: endBookmarkAt,
		cache:         c,
		key:           key,
		recursive:     opts.Recursive,
		pred:          opts.Predicate,
		bookmarks:     opts.ProgressNotify,
		in:            make(chan *event, buffer),
		result:        make(chan watch.Event),
		stopped:       make(chan struct{}),
		nextBookmark:  time.Now().Add(jitter(c.cfg.BookmarkInterval)),
	}
}

func (w *watcher) wantsKey(key string) bool {
	if w.recursive {
		return strings.HasPrefix(key, w.key)
	}
	return key == w.key
}

// offer queues ev without blocking; false means the watcher is too far
// behind and must be ended.
func (w *watcher) offer(ev *event) bool {
	select {
	case w.in <- ev:
		return true
	case <-w.stopped:
		return true
	default:
		return false
	}
}

// end marks the watcher stopped; the cache calls it when removing it.
func (w *watcher) end() {
	w.stopOnce.Do(func() { close(w.stopped) })
}

func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

func (w *watcher) Stop() {
	w.cache.remove(w)
}

func (w *watcher) run(ctx context.Context, initial []*event) {
	defer close(w.result)
	defer w.Stop()
	for _, ev := range initial {
		if !w.send(ctx, ev) {
			return
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.stopped:
			return
		case ev := <-w.in:
			if !w.send(ctx, ev) {
				return
			}
		}
	}
}

// send turns a cache event into what this watcher sees, if anything, and
// delivers it. It reports false when the watch is over.
func (w *watcher) send(ctx context.Context, ev *event) bool {
	out, ok := w.convert(ev)
	if !ok {
		return true
	}
	select {
	case w.result <- out:
		if ev.rv > w.lastRV {
			w.lastRV = ev.rv
		}
		return true
	case <-ctx.Done():
		return false
	case <-w.stopped:
		return false
	}
}

func (w *watcher) convert(ev *event) (watch.Event, bool) {
	if ev.typ == watch.Bookmark {
		rv := ev.rv
		if rv < w.lastRV {
			rv = w.lastRV
		}
		obj := w.bookmark(rv)
		if ev.initialEnd {
			if m, err := meta.Accessor(obj); err == nil {
				m.SetAnnotations(map[string]string{storage.InitialEventsEndAnnotation: "true"})
			}
		}
		return watch.Event{Type: watch.Bookmark, Object: obj}, true
	}
	if !ev.state && ev.rv <= w.startRV {
		return watch.Event{}, false
	}
	if !w.wantsKey(ev.key) {
		return watch.Event{}, false
	}
	cur := w.matches(ev.obj)
	if ev.state {
		return watch.Event{Type: watch.Added, Object: ev.obj}, cur
	}
	switch ev.typ {
	case watch.Added:
		return watch.Event{Type: watch.Added, Object: ev.obj}, cur
	case watch.Modified:
		old := ev.prev != nil && w.matches(ev.prev)
		switch {
		case cur && old:
			return watch.Event{Type: watch.Modified, Object: ev.obj}, true
		case cur:
			return watch.Event{Type: watch.Added, Object: ev.obj}, true
		case old:
			return watch.Event{Type: watch.Deleted, Object: withRV(ev.prev, ev.rv)}, true
		}
	case watch.Deleted:
		// obj is the last state: whether it matched is whether the
		// watcher saw the object.
		return watch.Event{Type: watch.Deleted, Object: ev.obj}, cur
	}
	return watch.Event{}, false
}

func (w *watcher) matches(obj *storage.SharedObject) bool {
	if obj == nil {
		return false
	}
	ok, err := w.pred.Matches(obj)
	return err == nil && ok
}

// withRV is obj with resourceVersion rv: the state an object had when it
// stopped matching a watch's selector, or the last state of a deleted
// one.
func withRV(obj *storage.SharedObject, rv int64) runtime.Object {
	if at, ok := obj.AtRevision(rv); ok {
		return at
	}
	cp := obj.DeepCopyObject()
	if m, err := meta.Accessor(cp); err == nil {
		m.SetResourceVersion(strconv.FormatInt(rv, 10))
	}
	return cp
}

func (w *watcher) bookmark(rv int64) runtime.Object {
	obj := w.cache.newFunc()
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion(strconv.FormatInt(rv, 10))
	}
	return obj
}

// errorWatch is a watch that carries one ERROR event and ends.
func errorWatch(err *apierrors.StatusError) watch.Interface {
	ch := make(chan watch.Event, 1)
	status := err.ErrStatus
	status.Kind, status.APIVersion = "Status", "v1"
	ch <- watch.Event{Type: watch.Error, Object: &status}
	close(ch)
	return &staticWatch{ch: ch}
}

type staticWatch struct{ ch chan watch.Event }

func (s *staticWatch) ResultChan() <-chan watch.Event { return s.ch }
func (s *staticWatch) Stop()                          {}
