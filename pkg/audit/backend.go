package audit

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/klog/v2"
)

// The plugin label of apiserver_audit_error_total, as kube names its
// backends: the buffer in front of the writer, and the writer.
const (
	pluginBuffered = "buffered"
	pluginLog      = "log"
)

// dropLogInterval spaces out the log lines about dropped events, which
// come in floods.
const dropLogInterval = 10 * time.Second

// logBackend writes encoded events, one a line, from a bounded queue
// drained by one goroutine. Enqueueing never waits: when the queue is
// full the event is dropped and counted, as kube's batching backend
// does; a request is never slowed by the disk.
type logBackend struct {
	out    io.Writer
	closer io.Closer
	errors *prometheus.CounterVec

	// mu guards closed against enqueueing on the closed queue.
	mu     sync.RWMutex
	closed bool
	queue  chan []byte
	done   chan struct{}

	// dropped counts the drops not yet logged; lastDropLog is when the
	// last were (Unix nanoseconds).
	dropped     atomic.Int64
	lastDropLog atomic.Int64
}

// newLogBackend starts the writer of out; closer, if not nil, is closed
// after the last event.
func newLogBackend(out io.Writer, closer io.Closer, size int, errors *prometheus.CounterVec) *logBackend {
	b := &logBackend{out: out, closer: closer, errors: errors, queue: make(chan []byte, size), done: make(chan struct{})}
	go b.run()
	return b
}

func (b *logBackend) run() {
	defer close(b.done)
	for line := range b.queue {
		if _, err := b.out.Write(line); err != nil {
			b.errors.WithLabelValues(pluginLog).Inc()
			klog.ErrorS(err, "Writing an audit event")
		}
	}
	if b.closer != nil {
		if err := b.closer.Close(); err != nil {
			klog.ErrorS(err, "Closing the audit log")
		}
	}
}

// enqueue hands a line to the writer, or drops it.
func (b *logBackend) enqueue(line []byte) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if !b.closed {
		select {
		case b.queue <- line:
			return
		default:
		}
	}
	b.errors.WithLabelValues(pluginBuffered).Inc()
	b.dropped.Add(1)
	now := time.Now().UnixNano()
	if last := b.lastDropLog.Load(); now-last >= int64(dropLogInterval) && b.lastDropLog.CompareAndSwap(last, now) {
		klog.ErrorS(nil, "Audit events dropped: the audit buffer is full or closed", "events", b.dropped.Swap(0))
	}
}

// close stops accepting events and waits, at most timeout, for the
// writer to write those queued and close the output.
func (b *logBackend) close(timeout time.Duration) {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.queue)
	}
	b.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-b.done:
	case <-t.C:
		klog.ErrorS(nil, "Audit log writer did not finish in time; events still queued are lost", "timeout", timeout)
	}
}
