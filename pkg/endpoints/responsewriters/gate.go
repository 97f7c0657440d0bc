package responsewriters

import (
	"io"
	goruntime "runtime"
	"slices"
	"sync"
	"time"
)

// Go's scheduler polls the network only when a processor runs out of
// goroutines to run, or every 10 ms from its monitor. Dozens of large
// lists written at once keep every processor busy: a small request then
// waits up to 10–20 ms before its goroutine even learns that its bytes
// arrived, at every network step it takes. The chunks of large
// responses are therefore written at most GOMAXPROCS-1 at a time, in
// turn: a processor stays free to poll the network and run everything
// else, while the lists still go as fast as one processor fewer allows.

// slowWrite is how long a chunk's write may take before its response is
// presumed paced by its client rather than by the processors (a chunk's
// own work is a fraction of a millisecond): its next chunk is written
// without waiting for a turn, so that a slow client does not hold turns
// the others wait for.
const slowWrite = 2 * time.Millisecond

// staleTurn is how long a turn may be held before a waiting writer may
// take it: its holder is presumed blocked on a client that stopped
// reading.
const staleTurn = 10 * time.Millisecond

// listGate is the turns all large responses of the process share.
var listGate = &writeGate{slow: slowWrite, stale: staleTurn}

// writeGate admits at most n writers at a time, in order of arrival.
type writeGate struct {
	slow, stale time.Duration

	mu      sync.Mutex
	holders []*gateTurn
	waiting []*gateTurn
}

// gateTurn is one writer's place at the gate.
type gateTurn struct {
	since   time.Time
	ready   chan struct{}
	granted bool
}

// enter waits until fewer than n writers hold a turn and those before it
// have had theirs, and takes a turn; or, after each stale time it waits,
// takes the turn of a writer that has held one that long.
func (g *writeGate) enter(n int) *gateTurn {
	t := &gateTurn{}
	g.mu.Lock()
	if len(g.holders) < n && len(g.waiting) == 0 {
		t.since, t.granted = time.Now(), true
		g.holders = append(g.holders, t)
		g.mu.Unlock()
		return t
	}
	t.ready = make(chan struct{})
	g.waiting = append(g.waiting, t)
	g.mu.Unlock()
	timer := time.NewTimer(g.stale)
	defer timer.Stop()
	for {
		select {
		case <-t.ready:
			return t
		case <-timer.C:
		}
		if g.takeStale(t) {
			return t
		}
		timer.Reset(g.stale)
	}
}

// takeStale gives t, waiting, the turn of a holder presumed blocked;
// true if t has a turn now.
func (g *writeGate) takeStale(t *gateTurn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.granted {
		return true
	}
	now := time.Now()
	for i, h := range g.holders {
		if now.Sub(h.since) >= g.stale {
			g.holders[i] = t
			t.since, t.granted = now, true
			g.waiting = slices.DeleteFunc(g.waiting, func(w *gateTurn) bool { return w == t })
			return true
		}
	}
	return false
}

// leave gives t's turn to the first waiting writer; nothing if another
// writer took it while t was presumed blocked.
func (g *writeGate) leave(t *gateTurn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	i := slices.Index(g.holders, t)
	if i < 0 {
		return
	}
	if len(g.waiting) == 0 {
		g.holders = slices.Delete(g.holders, i, i+1)
		return
	}
	next := g.waiting[0]
	g.waiting = g.waiting[1:]
	next.since, next.granted = time.Now(), true
	g.holders[i] = next
	close(next.ready)
}

// chunkWriter writes the chunks of one large response through the gate.
type chunkWriter struct {
	w    io.Writer
	gate *writeGate
	// slow is set while the last write took the gate's slow time or
	// more: the client sets this response's pace, not the processors.
	slow bool
}

// write writes one chunk in its turn. With one processor, or while the
// response is paced by its client, there is no turn to wait for: the
// writer yields the processor after the chunk instead, so that a small
// request gets in between chunks rather than after a 10 ms slice.
func (c *chunkWriter) write(chunk []byte) error {
	n := goruntime.GOMAXPROCS(0) - 1
	var t *gateTurn
	if !c.slow && n >= 1 {
		t = c.gate.enter(n)
	}
	start := time.Now()
	_, err := c.w.Write(chunk)
	c.slow = time.Since(start) >= c.gate.slow
	if t != nil {
		c.gate.leave(t)
	} else {
		goruntime.Gosched()
	}
	return err
}
