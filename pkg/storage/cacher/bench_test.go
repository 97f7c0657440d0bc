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

var paged struct {
	once   sync.Once
	cache  *cacher.Cache
	prefix string
}

// BenchmarkList_Paged5000 reads 5,000 objects through the cache in
// consistent pages of 500, as a client pages a list.
func BenchmarkList_Paged5000(b *testing.B) {
	const n, limit = 5000, 500
	// One cache for every round of the benchmark: filling takes seconds.
	paged.once.Do(func() {
		store := etcd3.New(etcd.Client(), storagetest.Codec(), storagetest.NewObject)
		paged.prefix = "/bench-" + rand.String(5) + "/"
		paged.cache = cacher.New(store, paged.prefix, storagetest.NewObject, cacher.Config{})
		store.UseDecoded(paged.cache)
		fill(b, store, paged.prefix, n)
	})
	c, prefix := paged.cache, paged.prefix
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
