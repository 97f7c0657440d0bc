package responsewriters

import (
	"bytes"
	"crypto/sha256"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// enterAsync enters the gate in a goroutine and reports the turn when
// it has one.
func enterAsync(g *writeGate, n int) <-chan *gateTurn {
	got := make(chan *gateTurn, 1)
	go func() { got <- g.enter(n) }()
	return got
}

// waitWaiting waits until k writers wait at the gate.
func waitWaiting(t *testing.T, g *writeGate, k int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		g.mu.Lock()
		w := len(g.waiting)
		g.mu.Unlock()
		if w == k {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writers waiting, want %d", w, k)
		}
	}
}

func TestWriteGate_AdmitsNAtOnceThenWaitersInArrivalOrder(t *testing.T) {
	g := &writeGate{stale: time.Hour}
	first, second := g.enter(2), g.enter(2)
	third := enterAsync(g, 2)
	waitWaiting(t, g, 1)
	fourth := enterAsync(g, 2)
	waitWaiting(t, g, 2)
	select {
	case <-third:
		t.Fatal("a third writer entered while two held their turns")
	case <-time.After(20 * time.Millisecond):
	}
	g.leave(second)
	var third0 *gateTurn
	select {
	case third0 = <-third:
	case <-time.After(5 * time.Second):
		t.Fatal("the first waiter did not get the turn left")
	}
	select {
	case <-fourth:
		t.Fatal("the second waiter got a turn before one was left")
	case <-time.After(20 * time.Millisecond):
	}
	g.leave(first)
	select {
	case <-fourth:
	case <-time.After(5 * time.Second):
		t.Fatal("the second waiter did not get the next turn left")
	}
	g.leave(third0)
}

func TestWriteGate_AWriterHoldingItsTurnTooLongIsPresumedBlocked(t *testing.T) {
	g := &writeGate{stale: 20 * time.Millisecond}
	blocked := g.enter(1)
	var thief *gateTurn
	select {
	case thief = <-enterAsync(g, 1):
	case <-time.After(5 * time.Second):
		t.Fatal("a waiter never took the turn of a writer holding it past the stale time")
	}
	// The robbed writer's leave must not free the turn its thief holds.
	g.leave(blocked)
	next := enterAsync(g, 1)
	waitWaiting(t, g, 1)
	g.leave(thief)
	select {
	case <-next:
	case <-time.After(5 * time.Second):
		t.Fatal("the thief's leave did not pass its turn on")
	}
}

// overlapWriter records the most writes it saw at once.
type overlapWriter struct {
	now, most atomic.Int32
	delay     time.Duration
}

func (w *overlapWriter) Write(b []byte) (int, error) {
	n := w.now.Add(1)
	for m := w.most.Load(); n > m && !w.most.CompareAndSwap(m, n); m = w.most.Load() {
	}
	time.Sleep(w.delay)
	w.now.Add(-1)
	return len(b), nil
}

// With spare processors, the chunks of concurrent responses are written
// at most GOMAXPROCS-1 at a time.
func TestChunkWriter_ConcurrentResponsesTakeTurns(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	g := &writeGate{slow: time.Hour, stale: time.Hour}
	w := &overlapWriter{delay: 200 * time.Microsecond}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cw := &chunkWriter{w: w, gate: g}
			for j := 0; j < 20; j++ {
				if err := cw.write(bytes.Repeat([]byte{'x'}, 1024)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if got := w.most.Load(); got != 1 {
		t.Fatalf("%d chunks written at once with 2 processors, want 1", got)
	}
}

// A response whose write took long is paced by its client: its next
// chunk does not wait for a turn, so that it cannot hold one while the
// client reads slowly; once its writes are quick again, it takes turns.
func TestChunkWriter_ASlowClientPacesItsOwnResponse(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	g := &writeGate{slow: 5 * time.Millisecond, stale: time.Hour}
	w := &overlapWriter{delay: 10 * time.Millisecond}
	cw := &chunkWriter{w: w, gate: g}
	if err := cw.write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	held := g.enter(1)
	done := make(chan error, 1)
	w.delay = 0
	go func() { done <- cw.write([]byte("x")) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the response after a slow write waited for a turn")
	}
	go func() { done <- cw.write([]byte("x")) }()
	waitWaiting(t, g, 1)
	g.leave(held)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// hashWriter spends a chunk write's CPU as encryption and a socket
// write would, without blocking.
type hashWriter struct{}

func (hashWriter) Write(b []byte) (int, error) {
	sha256.Sum256(b)
	return len(b), nil
}

// BenchmarkPingUnderChunkWriters times a loopback TCP round trip (a
// small request) while 36 goroutines write 48 KB chunks without pause,
// in turns (as lists are written) or yielding after each chunk (without
// the gate, as a paced response is). With every processor busy, Go polls
// the network only every 10 ms; turns leave a processor free.
func BenchmarkPingUnderChunkWriters(b *testing.B) {
	for _, mode := range []string{"turns", "yield"} {
		b.Run(mode, func(b *testing.B) {
			if runtime.GOMAXPROCS(0) < 2 {
				b.Skip("needs two processors")
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer func() { _ = c.Close() }()
				p := make([]byte, 1)
				for {
					if _, err := c.Read(p); err != nil {
						return
					}
					if _, err := c.Write(p); err != nil {
						return
					}
				}
			}()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = c.Close() }()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			g := &writeGate{slow: slowWrite, stale: staleTurn}
			chunk := make([]byte, 48*1024)
			for i := 0; i < 36; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cw := &chunkWriter{w: hashWriter{}, gate: g}
					for {
						select {
						case <-stop:
							return
						default:
						}
						// A slow write is what makes a response go
						// without turns.
						cw.slow = mode == "yield"
						_ = cw.write(chunk)
					}
				}()
			}
			var rtts []time.Duration
			p := make([]byte, 1)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				time.Sleep(2 * time.Millisecond)
				start := time.Now()
				if _, err := c.Write(p); err != nil {
					b.Fatal(err)
				}
				if _, err := c.Read(p); err != nil {
					b.Fatal(err)
				}
				rtts = append(rtts, time.Since(start))
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			slices.Sort(rtts)
			b.ReportMetric(float64(rtts[len(rtts)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(rtts[len(rtts)*99/100].Microseconds()), "p99-µs")
		})
	}
}
