package etcd3_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cronplane/cronplane/pkg/storage/etcd3"
	"github.com/cronplane/cronplane/pkg/storage/storagetest"
)

// heldKV counts gets and holds the answer of the first until released.
type heldKV struct {
	clientv3.KV
	gets    atomic.Int64
	release chan struct{}
}

func (kv *heldKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	resp, err := kv.KV.Get(ctx, key, opts...)
	if kv.gets.Add(1) == 1 {
		<-kv.release
	}
	return resp, err
}

func TestCurrentResourceVersion_CallersAtOnceShareAReadSentAfterThem(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv := &heldKV{KV: etcd.Client().KV, release: make(chan struct{})}
	client := clientv3.NewCtxClient(ctx)
	client.KV = kv
	s := etcd3.New(client, storagetest.Codec(), storagetest.NewObject)
	prefix := "/" + t.Name() + "/"

	// The first caller's read is held in flight; the others write, then
	// ask, while it is: they must not take its answer, which may be older
	// than their writes, and they share one read sent after them.
	first := make(chan error, 1)
	go func() {
		_, err := s.CurrentResourceVersion(ctx)
		first <- err
	}()
	for kv.gets.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	const callers = 16
	var wg sync.WaitGroup
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			put, err := etcd.Client().Put(ctx, prefix+strconv.Itoa(i), "v")
			if err != nil {
				t.Error(err)
				return
			}
			rev, err := s.CurrentResourceVersion(ctx)
			if err != nil || rev < put.Header.Revision {
				t.Errorf("revision %d (%v) after a write at %d", rev, err, put.Header.Revision)
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	close(kv.release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if n := kv.gets.Load(); n > callers/2 {
		t.Errorf("%d reads for %d callers at once and one before them", n, callers)
	}
}
