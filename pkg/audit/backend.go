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

// logBackend writes events, one JSON object a line, from a bounded queue
// drained by one goroutine, which also encodes them: a request pays for
// a copy of its event and a channel send, never for the encoding or the
// disk. Enqueueing never waits: when the queue is full the event is
// dropped and counted, as kube's batching backend does.
type logBackend struct {
	out    io.Writer
	closer io.Closer
	errors *prometheus.CounterVec

	// mu guards closed against enqueueing on the closed queue.
	mu     sync.RWMutex
	closed bool
	queue  chan *Event
	done   chan struct{}

	// dropped counts the drops not yet logged; lastDropLog is when the
	// last were (Unix nanoseconds).
	dropped     atomic.Int64
	lastDropLog atomic.Int64
}

// newLogBackend starts the writer of out; closer, if not nil, is closed
// after the last event.
func newLogBackend(out io.Writer, closer io.Closer, size int, errors *prometheus.CounterVec) *logBackend {
	b := &logBackend{out: out, closer: closer, errors: errors, queue: make(chan *Event, size), done: make(chan struct{})}
	go b.run()
	return b
}

// maxBatch bounds the bytes the writer gathers from the queue into one
// write.
const maxBatch = 256 << 10

// run writes what is queued, gathering the lines already waiting into one
// write: under load, one system call for many events.
func (b *logBackend) run() {
	defer close(b.done)
	batch := make([]byte, 0, 64<<10)
	for ev := range b.queue {
		batch = b.encode(batch[:0], ev)
	gather:
		for len(batch) < maxBatch {
			select {
			case more, ok := <-b.queue:
				if !ok {
					break gather
				}
				batch = b.encode(batch, more)
			default:
				break gather
			}
		}
		if _, err := b.out.Write(batch); err != nil {
			b.errors.WithLabelValues(pluginLog).Inc()
			klog.ErrorS(err, "Writing audit events")
		}
		if cap(batch) > 2*maxBatch {
			batch = make([]byte, 0, 64<<10)
		}
	}
	if b.closer != nil {
		if err := b.closer.Close(); err != nil {
			klog.ErrorS(err, "Closing the audit log")
		}
	}
}

// encode appends ev's line to batch; an event that cannot be encoded is
// counted and logged instead.
func (b *logBackend) encode(batch []byte, ev *Event) []byte {
	out, err := ev.appendJSON(batch)
	if err != nil {
		b.errors.WithLabelValues(pluginLog).Inc()
		klog.ErrorS(err, "Encoding an audit event", "auditID", ev.AuditID, "stage", ev.Stage)
		return batch
	}
	return append(out, '\n')
}

// enqueue hands an event to the writer, or drops it. The writer reads ev
// later: the caller must not change it.
func (b *logBackend) enqueue(ev *Event) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if !b.closed {
		select {
		case b.queue <- ev:
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
