package etcd3_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cronplane/cronplane/pkg/storage"
	"github.com/cronplane/cronplane/pkg/storage/storagetest"
)

func TestWatch_KnowsPreviousGetsUpdatesAndTombstones(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := storagetest.EtcdBackend(t, etcd.Client(), nil)
	s := b.Storage
	key := b.Prefix + "ns/a"
	start, err := s.CurrentResourceVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, b.Prefix, storage.WatchOptions{ResourceVersion: start, Recursive: true, KnowsPrevious: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := s.Create(ctx, key, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GuaranteedUpdate(ctx, key, nil, func(cur runtime.Object) (runtime.Object, error) {
		cm := cur.(*corev1.ConfigMap)
		cm.Data = map[string]string{"v": "2"}
		return cm, nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, key, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	now, err := s.CurrentResourceVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted} {
		select {
		case e := <-w.ResultChan():
			if e.Type != want {
				t.Fatalf("got %s, want %s", e.Type, want)
			}
			if want != watch.Deleted {
				continue
			}
			// The watcher holds the last state: the event names the key
			// and the delete's revision only.
			tomb, ok := e.Object.(*storage.Tombstone)
			if !ok || tomb.Key != key || tomb.Revision != now {
				t.Fatalf("DELETED carries %#v, want the tombstone of %s", e.Object, key)
			}
		case <-ctx.Done():
			t.Fatalf("no %s event", want)
		}
	}
}
