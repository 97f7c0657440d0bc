package apiserver

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/storage/cacher"
)

// After a mass delete the watch caches let go of many decoded objects, but
// the Go runtime keeps the heap they took (its goal stays at 1.5 times the
// live heap of the last collection, and nothing collects while the server
// is idle). memoryReturner hands that memory back once the writes pause: a
// collection and a scavenge of all free pages (debug.FreeOSMemory), a few
// tens of milliseconds, at most every 10 s and only after the caches let
// go of an eighth of the live heap (16 MiB at least) since the last time.
// The pages of the embedded etcd's database that its reads mapped in stay
// mapped: they are the kernel's page cache, which unmapping would hide from
// RSS without freeing.
// Under a steady load the heap freed is taken again at once; there
// collections and the runtime's background scavenger do the work.
type memoryReturner struct {
	// caches reports the totals of the watch caches so far: the bytes they
	// let go and the events they took in.
	caches func() (freed, events uint64)
	// live is the live heap at the last collection.
	live func() uint64
	// free returns the free heap to the OS.
	free func()

	started               bool
	lastFreed, lastEvents uint64
	returnedAt            uint64
	lastReturn            time.Time
}

const (
	// returnAtLeast is the least memory freed worth a return; an eighth of
	// the live heap when that is more (a list's encodings expiring, a
	// tenth of the objects deleted).
	returnAtLeast = 16 << 20
	// returnQuiet is how many events a second the caches may take in for
	// the writes to count as paused.
	returnQuiet = 50
	// returnEvery spaces the returns.
	returnEvery = 10 * time.Second
)

// tick looks at the caches once (every second) and returns the memory
// when due; it reports how much the caches had freed when it did.
func (m *memoryReturner) tick(now time.Time) (uint64, bool) {
	freed, events := m.caches()
	if !m.started || freed < m.lastFreed || events < m.lastEvents {
		// The first look, or a cache went (its resource was removed):
		// count afresh.
		m.started, m.lastFreed, m.lastEvents, m.returnedAt = true, freed, events, freed
		return 0, false
	}
	busy := events-m.lastEvents >= returnQuiet
	m.lastFreed, m.lastEvents = freed, events
	pending := freed - m.returnedAt
	if busy || pending < max(returnAtLeast, m.live()/8) || now.Sub(m.lastReturn) < returnEvery {
		return 0, false
	}
	m.free()
	m.returnedAt, m.lastReturn = freed, now
	return pending, true
}

// returnMemory runs the returner over the server's caches until ctx ends.
func (s *Server) returnMemory(ctx context.Context) {
	log := klog.FromContext(ctx)
	m := &memoryReturner{caches: s.cachesTotals, live: liveHeap, free: debug.FreeOSMemory}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if freed, ok := m.tick(now); ok {
				log.V(2).Info("Returned the memory freed by the watch caches to the OS", "freedBytes", freed)
			}
		}
	}
}

// cachesTotals is what all watch caches let go and took in so far.
func (s *Server) cachesTotals() (freed, events uint64) {
	s.storage.eachCache(func(_, _ string, c *cacher.Cache) {
		st := c.Stats()
		freed += st.Freed
		events += st.Dispatched
	})
	return freed, events
}

func liveHeap() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}
