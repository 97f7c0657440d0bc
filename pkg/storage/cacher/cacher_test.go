package cacher_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cronplane/cronplane/pkg/etcdserver"
	"github.com/cronplane/cronplane/pkg/etcdserver/etcdtest"
	"github.com/cronplane/cronplane/pkg/storage"
	"github.com/cronplane/cronplane/pkg/storage/cacher"
	"github.com/cronplane/cronplane/pkg/storage/etcd3"
	"github.com/cronplane/cronplane/pkg/storage/storagetest"
)

var etcd *etcdserver.Server

func TestMain(m *testing.M) { etcdtest.Main(m, etcdtest.StartEtcd(&etcd)) }

func newCache(t *testing.T, cfg cacher.Config) storagetest.Backend {
	return storagetest.EtcdBackend(t, etcd.Client(), func(s *etcd3.Store, prefix string) storage.Interface {
		c := cacher.New(s, prefix, storagetest.NewObject, cfg)
		s.UseDecoded(c)
		t.Cleanup(c.Stop)
		// The cache has listed before the test writes, as the apiserver's
		// caches have before it serves: a watch from the test's first write
		// must not be older than the cache's window.
		if _, err := c.List(context.Background(), prefix, storage.ListOptions{Mode: storage.ReadAny}); err != nil {
			t.Fatal(err)
		}
		return c
	})
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storagetest.Backend { return newCache(t, cacher.Config{}) })
}

func TestWatch_SlowWatcherIsEndedOthersContinue(t *testing.T) {
	// The slow watcher never reads: after the buffer fills it is ended. The
	// fast one reads all the time; its buffer only absorbs scheduling jitter.
	b := newCache(t, cacher.Config{WatcherBuffer: 30})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	slow, err := b.Storage.Watch(ctx, b.Prefix, storage.WatchOptions{Recursive: true, Mode: storage.ReadAny})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	fast, err := b.Storage.Watch(ctx, b.Prefix, storage.WatchOptions{Recursive: true, Mode: storage.ReadAny})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()
	// Each create waits for the fast watcher to see it, so that only the
	// slow one falls behind, however the goroutines are scheduled.
	const n = 100
	for i := 0; i < n; i++ {
		storagetest.Create(t, b, fmt.Sprintf("o%d", i))
		select {
		case _, ok := <-fast.ResultChan():
			if !ok {
				t.Fatalf("fast watcher ended after %d events", i)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("fast watcher held up after %d events", i)
		}
	}
	// The slow watcher never read: it fell behind and was ended.
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-slow.ResultChan():
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("slow watcher still open")
		}
	}
}

func waitBookmark(t *testing.T, w watch.Interface, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch ended")
			}
			if e.Type == watch.Bookmark {
				return
			}
		case <-deadline:
			t.Fatalf("no bookmark within %s", within)
		}
	}
}

func TestWatch_BookmarksAtTheIntervalWhenAsked(t *testing.T) {
	b := newCache(t, cacher.Config{BookmarkInterval: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := b.Storage.Watch(ctx, b.Prefix, storage.WatchOptions{Recursive: true, Mode: storage.ReadAny, ProgressNotify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	waitBookmark(t, w, 5*time.Second)
}

func TestWatch_BookmarkBeforeTheWatchEnds(t *testing.T) {
	b := newCache(t, cacher.Config{BookmarkInterval: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	w, err := b.Storage.Watch(ctx, b.Prefix, storage.WatchOptions{Recursive: true, Mode: storage.ReadAny, ProgressNotify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	waitBookmark(t, w, 4*time.Second)
}

func TestWatch_ConsistentOnAFreshQuietPrefixCatchesUp(t *testing.T) {
	// Each cache is new and its prefix quiet: only etcd's progress
	// notifications move it to the revision of a write elsewhere, and a
	// request made before its etcd watch is established is lost.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < 10; i++ {
		b := newCache(t, cacher.Config{SyncTimeout: 2 * time.Second})
		if _, err := b.Storage.List(ctx, b.Prefix, storage.ListOptions{Mode: storage.ReadAny}); err != nil {
			t.Fatal(err)
		}
		if _, err := etcd.Client().Put(ctx, fmt.Sprintf("/elsewhere/%s/%d", t.Name(), i), "x"); err != nil {
			t.Fatal(err)
		}
		w, err := b.Storage.Watch(ctx, b.Prefix, storage.WatchOptions{Recursive: true, Mode: storage.ReadMostRecent})
		if err != nil {
			t.Fatalf("consistent watch %d on a fresh cache: %v", i, err)
		}
		w.Stop()
	}
}

// breakable passes a backend through, except that breakWatches ends its
// watches with an error, as etcd ends them when its member loses the
// leader.
type breakable struct {
	storage.Interface
	mu      sync.Mutex
	watches []*breakableWatch
}

func (b *breakable) Watch(ctx context.Context, key string, opts storage.WatchOptions) (watch.Interface, error) {
	b.mu.Lock()
	backend := b.Interface
	b.mu.Unlock()
	inner, err := backend.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	w := &breakableWatch{inner: inner, out: make(chan watch.Event), broken: make(chan struct{}), stopped: make(chan struct{})}
	go w.run()
	b.mu.Lock()
	b.watches = append(b.watches, w)
	b.mu.Unlock()
	return w, nil
}

func (b *breakable) breakWatches() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range b.watches {
		close(w.broken)
	}
	b.watches = nil
}

type breakableWatch struct {
	inner           watch.Interface
	out             chan watch.Event
	broken, stopped chan struct{}
	stopOnce        sync.Once
}

func (w *breakableWatch) ResultChan() <-chan watch.Event { return w.out }
func (w *breakableWatch) Stop()                          { w.stopOnce.Do(func() { close(w.stopped) }) }

func (w *breakableWatch) run() {
	defer close(w.out)
	defer w.inner.Stop()
	for {
		select {
		case <-w.stopped:
			return
		case <-w.broken:
			lost := &metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonInternalError, Message: "etcdserver: no leader"}
			select {
			case w.out <- watch.Event{Type: watch.Error, Object: lost}:
			case <-w.stopped:
			}
			return
		case e, ok := <-w.inner.ResultChan():
			if !ok {
				return
			}
			select {
			case w.out <- e:
			case <-w.stopped:
				return
			}
		}
	}
}

func newBreakableCache(t *testing.T) (storagetest.Backend, *breakable) {
	var br *breakable
	b := storagetest.EtcdBackend(t, etcd.Client(), func(s *etcd3.Store, prefix string) storage.Interface {
		br = &breakable{Interface: s}
		c := cacher.New(br, prefix, storagetest.NewObject, cacher.Config{})
		t.Cleanup(c.Stop)
		return c
	})
	return b, br
}

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case e, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("the watch ended")
		}
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return watch.Event{}
}

// A broken etcd watch is resumed from the cache's revision: the cache's
// watchers see every event, in order, and are not ended.
func TestWatch_BrokenBackendWatchResumesWithoutEndingWatchers(t *testing.T) {
	b, br := newBreakableCache(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := b.Storage.Watch(ctx, b.Prefix, storage.WatchOptions{Recursive: true, Mode: storage.ReadMostRecent})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	storagetest.Create(t, b, "before")
	if e := nextEvent(t, w); e.Type != watch.Added {
		t.Fatalf("first event %s", e.Type)
	}
	for i := 0; i < 3; i++ {
		br.breakWatches()
		// Written while the cache may not be watching: it must still come.
		storagetest.Create(t, b, fmt.Sprintf("after-break-%d", i))
		e := nextEvent(t, w)
		if e.Type != watch.Added {
			t.Fatalf("after break %d: %s %v", i, e.Type, e.Object)
		}
		if m, err := meta.Accessor(storage.Unwrap(e.Object)); err != nil || m.GetName() != fmt.Sprintf("after-break-%d", i) {
			t.Fatalf("after break %d: got %v", i, e.Object)
		}
	}
}

// When the revision to resume from was compacted meanwhile, the cache
// lists again and ends its watchers, whose clients must relist.
func TestWatch_BrokenBackendWatchPastCompactionEndsWatchers(t *testing.T) {
	b, br := newBreakableCache(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := b.Storage.Watch(ctx, b.Prefix, storage.WatchOptions{Recursive: true, Mode: storage.ReadMostRecent})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	storagetest.Create(t, b, "before")
	nextEvent(t, w)
	br.mu.Lock()
	// Hold the resumed watch off until etcd has compacted past the cache.
	br.Interface = &slowWatch{Interface: br.Interface, wait: make(chan struct{})}
	slow := br.Interface.(*slowWatch)
	br.mu.Unlock()
	br.breakWatches()
	storagetest.Create(t, b, "during")
	storagetest.Create(t, b, "during-too")
	// Past "during": the cache, resuming after "before", finds its history
	// gone.
	rev, err := etcd.Client().Get(ctx, "/compact-probe")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Compact(ctx, rev.Header.Revision); err != nil {
		t.Fatal(err)
	}
	close(slow.wait)
	deadline := time.After(15 * time.Second)
	for {
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the watcher was not ended after a compacted gap")
		}
	}
}

// slowWatch holds Watch calls until wait is closed.
type slowWatch struct {
	storage.Interface
	wait chan struct{}
}

func (s *slowWatch) Watch(ctx context.Context, key string, opts storage.WatchOptions) (watch.Interface, error) {
	select {
	case <-s.wait:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Interface.Watch(ctx, key, opts)
}

// countingStore is an etcd store that counts the lists reaching it.
type countingStore struct {
	*etcd3.Store
	lists atomic.Int64
}

func (s *countingStore) List(ctx context.Context, prefix string, opts storage.ListOptions) (*storage.ListResult, error) {
	s.lists.Add(1)
	return s.Store.List(ctx, prefix, opts)
}

func newCountingCache(t *testing.T, cfg cacher.Config) (storagetest.Backend, *countingStore) {
	var cs *countingStore
	b := storagetest.EtcdBackend(t, etcd.Client(), func(s *etcd3.Store, prefix string) storage.Interface {
		cs = &countingStore{Store: s}
		c := cacher.New(cs, prefix, storagetest.NewObject, cfg)
		s.UseDecoded(c)
		t.Cleanup(c.Stop)
		return c
	})
	return b, cs
}

func names(t *testing.T, res *storage.ListResult) string {
	t.Helper()
	var out []string
	for _, it := range res.Items {
		m, err := meta.Accessor(storage.Unwrap(it))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m.GetName()+"@"+m.GetResourceVersion())
	}
	return fmt.Sprint(out)
}

func TestList_PagesServedFromMemory(t *testing.T) {
	b, cs := newCountingCache(t, cacher.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 6; i++ {
		storagetest.Create(t, b, fmt.Sprintf("o%d", i))
	}
	// A consistent list: the cache has caught up after it.
	if _, err := b.Storage.List(ctx, b.Prefix, storage.ListOptions{Mode: storage.ReadMostRecent}); err != nil {
		t.Fatal(err)
	}
	first, err := b.Storage.List(ctx, b.Prefix, storage.ListOptions{Mode: storage.ReadMostRecent, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	etcdFirst, err := b.Etcd.List(ctx, b.Prefix, storage.ListOptions{Mode: storage.ReadMostRecent, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	inconsistent, err := storage.InconsistentContinue(b.Prefix+"ns/o3", b.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	// Writes between the pages, so that the later pages are rebuilt.
	storagetest.Create(t, b, "o1a")
	for _, name := range []string{"o2", "o4"} {
		if _, err := b.Storage.Delete(ctx, b.Prefix+"ns/"+name, nil, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		opts storage.ListOptions
	}{
		{"continue", storage.ListOptions{Mode: storage.ReadMostRecent, Limit: 2, Continue: first.Continue}},
		{"continue of an etcd page", storage.ListOptions{Mode: storage.ReadMostRecent, Limit: 2, Continue: etcdFirst.Continue}},
		{"inconsistent continue", storage.ListOptions{Mode: storage.ReadMostRecent, Limit: 2, Continue: inconsistent}},
		{"exact", storage.ListOptions{Mode: storage.ReadExact, ResourceVersion: first.ResourceVersion}},
		{"exact page", storage.ListOptions{Mode: storage.ReadExact, ResourceVersion: first.ResourceVersion, Limit: 2}},
		{"not older than, page", storage.ListOptions{Mode: storage.ReadNotOlderThan, ResourceVersion: first.ResourceVersion, Limit: 2}},
		{"consistent page", storage.ListOptions{Mode: storage.ReadMostRecent, Limit: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, err := b.Etcd.List(ctx, b.Prefix, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			before := cs.lists.Load()
			got, err := b.Storage.List(ctx, b.Prefix, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if n := cs.lists.Load() - before; n != 0 {
				t.Fatalf("%d lists went to etcd", n)
			}
			if names(t, got) != names(t, want) || got.Continue != want.Continue || got.ResourceVersion != want.ResourceVersion {
				t.Fatalf("from the cache %s %q at %d, from etcd %s %q at %d", names(t, got), got.Continue, got.ResourceVersion, names(t, want), want.Continue, want.ResourceVersion)
			}
		})
	}
}

// A page whose revision the event window no longer covers is read from
// etcd, which still has it.
func TestList_PageBeyondTheWindowGoesToEtcd(t *testing.T) {
	b, cs := newCountingCache(t, cacher.Config{Capacity: 4, MaxCapacity: 4, Window: time.Nanosecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 4; i++ {
		storagetest.Create(t, b, fmt.Sprintf("o%d", i))
	}
	first, err := b.Storage.List(ctx, b.Prefix, storage.ListOptions{Mode: storage.ReadMostRecent, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		storagetest.Create(t, b, fmt.Sprintf("n%d", i))
	}
	// Served from the cache, once it has seen every write.
	if _, err := b.Storage.List(ctx, b.Prefix, storage.ListOptions{Mode: storage.ReadMostRecent}); err != nil {
		t.Fatal(err)
	}
	opts := storage.ListOptions{Mode: storage.ReadMostRecent, Limit: 2, Continue: first.Continue}
	before := cs.lists.Load()
	got, err := b.Storage.List(ctx, b.Prefix, opts)
	if err != nil {
		t.Fatal(err)
	}
	if n := cs.lists.Load() - before; n != 1 {
		t.Fatalf("%d lists went to etcd, want 1", n)
	}
	want, err := b.Etcd.List(ctx, b.Prefix, opts)
	if err != nil {
		t.Fatal(err)
	}
	if names(t, got) != names(t, want) || got.Continue != "" || got.ResourceVersion != first.ResourceVersion {
		t.Fatalf("got %s %q at %d, want %s at %d", names(t, got), got.Continue, got.ResourceVersion, names(t, want), first.ResourceVersion)
	}
}

// Pages read while keys are written, deleted and created are, put
// together, the exact list at the first page's revision.
func TestList_PagesUnderConcurrentWritesAreOneSnapshot(t *testing.T) {
	b := newCache(t, cacher.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const keys = 40
	for i := 0; i < keys; i++ {
		storagetest.Create(t, b, fmt.Sprintf("o%02d", i))
	}
	done := make(chan struct{})
	writerErr := make(chan error, 1)
	go func() {
		defer close(writerErr)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			k := b.Prefix + fmt.Sprintf("ns/o%02d", (i*7)%keys)
			var err error
			if _, err = b.Storage.Delete(ctx, k, nil, nil, nil); storage.IsNotFound(err) {
				obj := storagetest.NewObject()
				m, _ := meta.Accessor(obj)
				m.SetName(fmt.Sprintf("o%02d", (i*7)%keys))
				m.SetNamespace("ns")
				obj.GetObjectKind().SetGroupVersionKind(storagetest.GVK)
				_, err = b.Storage.Create(ctx, k, obj)
			}
			if err != nil {
				writerErr <- err
				return
			}
		}
	}()
	for round := 0; round < 20; round++ {
		opts := storage.ListOptions{Mode: storage.ReadMostRecent, Limit: 7}
		var got []runtime.Object
		var at int64
		for pages := 0; pages < keys; pages++ {
			res, err := b.Storage.List(ctx, b.Prefix, opts)
			if err != nil {
				t.Fatal(err)
			}
			if pages == 0 {
				at = res.ResourceVersion
			} else if res.ResourceVersion != at {
				t.Fatalf("page %d at %d, first at %d", pages, res.ResourceVersion, at)
			}
			got = append(got, res.Items...)
			if opts.Continue = res.Continue; res.Continue == "" {
				break
			}
			waitForWrite(t, b, res.ResourceVersion)
		}
		want, err := b.Etcd.List(ctx, b.Prefix, storage.ListOptions{Mode: storage.ReadExact, ResourceVersion: at})
		if err != nil {
			t.Fatal(err)
		}
		if g, w := names(t, &storage.ListResult{Items: got}), names(t, want); g != w {
			t.Fatalf("round %d at %d: pages %s, exact list %s", round, at, g, w)
		}
	}
	close(done)
	if err := <-writerErr; err != nil {
		t.Fatal(err)
	}
}

// waitForWrite waits until etcd's revision has moved past rev.
func waitForWrite(t *testing.T, b storagetest.Backend, rev int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		now, err := b.Etcd.CurrentResourceVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if now > rev {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no write after %d", rev)
		case <-time.After(time.Millisecond):
		}
	}
}

func TestCache_ObjectNobodyReadsIsKeptAsItsStoredBytes(t *testing.T) {
	var c *cacher.Cache
	b := storagetest.EtcdBackend(t, etcd.Client(), func(s *etcd3.Store, prefix string) storage.Interface {
		c = cacher.New(s, prefix, storagetest.NewObject, cacher.Config{EncodingTTL: 100 * time.Millisecond})
		s.UseDecoded(c)
		t.Cleanup(c.Stop)
		return c
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	created := storagetest.Create(t, b, "a")
	rv := meta.NewAccessor()
	want, _ := rv.ResourceVersion(created)
	// Nobody reads the object: the sweep (every second) lets its decoded
	// form go.
	deadline := time.Now().Add(10 * time.Second)
	for c.Stats().Freed == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the decoded object was kept 10 s after the event, unread")
		}
		time.Sleep(50 * time.Millisecond)
	}
	shared, err := b.Storage.Get(ctx, b.Prefix+"ns/a", storage.GetOptions{Mode: storage.ReadAny})
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := shared.(*storage.SharedObject); !ok || s.Stored() == nil {
		t.Fatalf("got %T without its stored bytes", shared)
	}
	got := storage.Unwrap(shared)
	name, _ := rv.Name(got)
	version, _ := rv.ResourceVersion(got)
	if name != "a" || version != want {
		t.Errorf("decoded again: %s at %s, want a at %s", name, version, want)
	}
}
