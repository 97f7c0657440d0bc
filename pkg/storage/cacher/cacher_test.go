package cacher_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/cronplane/cronplane/pkg/etcdserver"
	"github.com/cronplane/cronplane/pkg/storage"
	"github.com/cronplane/cronplane/pkg/storage/cacher"
	"github.com/cronplane/cronplane/pkg/storage/etcd3"
	"github.com/cronplane/cronplane/pkg/storage/storagetest"
)

var etcd *etcdserver.Server

func TestMain(m *testing.M) {
	// make test-short leaves out what needs an etcd.
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipped in -short mode: these tests run an embedded etcd")
		os.Exit(0)
	}
	var stop func()
	var err error
	if etcd, stop, err = etcdserver.StartTemp(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

func newCache(t *testing.T, cfg cacher.Config) storagetest.Backend {
	return storagetest.EtcdBackend(t, etcd.Client(), func(s *etcd3.Store, prefix string) storage.Interface {
		c := cacher.New(s, prefix, storagetest.NewObject, cfg)
		s.UseDecoded(c)
		t.Cleanup(c.Stop)
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
