package cacher_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/cronplane/cronplane/pkg/storage"
	"github.com/cronplane/cronplane/pkg/storage/cacher"
	"github.com/cronplane/cronplane/pkg/storage/etcd3"
	"github.com/cronplane/cronplane/pkg/storage/storagetest"
)

// fill creates n objects of about 1 KiB under prefix, 16 at a time.
func fill(b *testing.B, s storage.Interface, prefix string, n int) {
	b.Helper()
	ctx := context.Background()
	data := strings.Repeat("x", 1<<10)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				name := fmt.Sprintf("o%05d", i)
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Data: map[string]string{"v": data}}
				cm.SetGroupVersionKind(storagetest.GVK)
				if _, err := s.Create(ctx, prefix+"ns/"+name, cm); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// n is how many objects the benchmarks list.
const n = 5000

var bench struct {
	once   sync.Once
	cache  *cacher.Cache
	prefix string
}

// benchCache returns a cache of n objects under its prefix, one for every
// benchmark and round: filling it takes seconds.
func benchCache(b *testing.B) (*cacher.Cache, string) {
	bench.once.Do(func() {
		store := etcd3.New(etcd.Client(), storagetest.Codec(), storagetest.NewObject)
		bench.prefix = "/bench-" + rand.String(5) + "/"
		bench.cache = cacher.New(store, bench.prefix, storagetest.NewObject, cacher.Config{})
		store.UseDecoded(bench.cache)
		fill(b, store, bench.prefix, n)
	})
	return bench.cache, bench.prefix
}

// BenchmarkList_Paged5000 reads 5,000 objects through the cache in
// consistent pages of 500, as a client pages a list.
func BenchmarkList_Paged5000(b *testing.B) {
	const limit = 500
	c, prefix := benchCache(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		opts := storage.ListOptions{Mode: storage.ReadMostRecent, Limit: limit}
		got := 0
		for pages := 0; pages <= n/limit; pages++ {
			res, err := c.List(ctx, prefix, opts)
			if err != nil {
				b.Fatal(err)
			}
			got += len(res.Items)
			if opts.Continue = res.Continue; res.Continue == "" {
				break
			}
		}
		if got != n {
			b.Fatalf("%d objects listed, want %d", got, n)
		}
	}
}

// BenchmarkList_Full5000 reads the same 5,000 objects through the cache
// in one consistent list.
func BenchmarkList_Full5000(b *testing.B) {
	c, prefix := benchCache(b)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := c.List(ctx, prefix, storage.ListOptions{Mode: storage.ReadMostRecent})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Items) != n {
			b.Fatalf("%d objects listed", len(res.Items))
		}
	}
}
