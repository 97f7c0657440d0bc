package cacher

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cronplane/cronplane/pkg/storage"
)

// newRingCache is a cache fed by hand through apply, without a backend.
func newRingCache(cfg Config) *Cache {
	c := newCache("/r/", cfg)
	c.ready = true
	return c
}

func ringConfigMap(name string, rv int) *storage.SharedObject {
	return storage.Share(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: strconv.Itoa(rv)},
		Data:       map[string]string{"v": strings.Repeat("x", 1000)},
	})
}

// ringMemory is what the ring keeps alive beyond the current items: every
// object its events reference, counted once.
func ringMemory(c *Cache) (bytes, events int) {
	seen := map[*storage.SharedObject]bool{}
	for i := 0; i < c.size; i++ {
		ev := c.events[(c.start+i)%len(c.events)]
		for _, o := range []*storage.SharedObject{ev.obj, ev.prev} {
			if o != nil && !seen[o] && c.items[ev.key] != o {
				seen[o] = true
				bytes += o.MemSize()
			}
		}
	}
	return bytes, c.size
}

func TestRing_MaxBytesBoundsTheMemoryOnlyTheRingHolds(t *testing.T) {
	const n = 400
	one := ringConfigMap("x", 1).MemSize()
	c := newRingCache(Config{Capacity: 2 * n, MaxCapacity: 8 * n, MaxBytes: 150 * one})
	rv, applied := 0, 0
	apply := func(typ watch.EventType, name string) {
		t.Helper()
		rv++
		obj := ringConfigMap(name, rv)
		applied += obj.MemSize()
		if err := c.apply(watch.Event{Type: typ, Object: obj}); err != nil {
			t.Fatal(err)
		}
		if got, _ := ringMemory(c); got != c.bytes || got > c.cfg.MaxBytes+one {
			t.Fatalf("after %s %s: the ring holds %d bytes, counts %d, bound %d", typ, name, got, c.bytes, c.cfg.MaxBytes)
		}
		// Every state is current, held by the ring, or counted as freed.
		current := 0
		for _, o := range c.items {
			current += o.MemSize()
		}
		if freed := int(c.Stats().Freed); current+c.bytes+freed != applied {
			t.Fatalf("after %s %s: %d bytes current, %d in the ring, %d freed; %d applied", typ, name, current, c.bytes, freed, applied)
		}
	}
	for i := 0; i < n; i++ {
		apply(watch.Added, fmt.Sprint(i))
	}
	// Objects that are current cost the ring nothing: it keeps all.
	if _, events := ringMemory(c); events != n {
		t.Fatalf("after %d creates the ring keeps %d events, want all", n, events)
	}
	for i := 0; i < n; i++ {
		apply(watch.Modified, fmt.Sprint(i))
	}
	for i := 0; i < n; i++ {
		apply(watch.Deleted, fmt.Sprint(i))
	}
	// Now only the ring holds objects, one copy per delete.
	if _, events := ringMemory(c); events < 140 {
		t.Errorf("the ring keeps %d events, want about 150 deletes", events)
	}
}

func TestRing_DeletedEventKeepsOneStateAndThePreviousRevision(t *testing.T) {
	c := newRingCache(Config{})
	for rv, typ := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted} {
		if err := c.apply(watch.Event{Type: typ, Object: ringConfigMap("a", rv+1)}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		typ      watch.EventType
		prev     bool
		prevRV   int64
		position int
	}{
		{watch.Added, false, 0, 0},
		{watch.Modified, true, 1, 1},
		{watch.Deleted, false, 2, 2},
	}
	for _, tt := range tests {
		ev := c.events[tt.position]
		if ev.typ != tt.typ || (ev.prev != nil) != tt.prev || ev.prevRV != tt.prevRV {
			t.Errorf("event %d: %s with prev %v, prevRV %d; want %s with prev %v, prevRV %d", tt.position, ev.typ, ev.prev != nil, ev.prevRV, tt.typ, tt.prev, tt.prevRV)
		}
	}
}
