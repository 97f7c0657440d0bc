package nodeserver

import (
	"context"
	"io"
	"strings"
	"sync"
	"time"
)

// MemoryLogs is a LogSource held in memory, for a node that runs no real
// containers (the fake node of the tests): the node starts a container,
// writes its output and stops it; a restart keeps the instance before
// as the previous log.
type MemoryLogs struct {
	mu   sync.Mutex
	logs map[Container]*memoryLog
	// Now stamps the lines written; time.Now when nil.
	Now func() time.Time
}

// memoryLog is a container's instances, the current one last.
type memoryLog struct {
	instances []*memoryInstance
}

type memoryInstance struct {
	lines   []LogLine
	stopped bool
	// changed is closed, and replaced, when a line comes or the
	// instance stops.
	changed chan struct{}
}

func (i *memoryInstance) notify() {
	close(i.changed)
	i.changed = make(chan struct{})
}

// Start begins a new instance of the container; the current one, if
// any, stops and becomes the previous.
func (m *MemoryLogs) Start(c Container) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.logs == nil {
		m.logs = map[Container]*memoryLog{}
	}
	l := m.logs[c]
	if l == nil {
		l = &memoryLog{}
		m.logs[c] = l
	}
	if n := len(l.instances); n > 0 && !l.instances[n-1].stopped {
		l.instances[n-1].stopped = true
		l.instances[n-1].notify()
	}
	l.instances = append(l.instances, &memoryInstance{changed: make(chan struct{})})
}

// Write adds output to the current instance of a started container, one
// line per "\n"; a last line without one is a line of its own.
func (m *MemoryLogs) Write(c Container, output string) {
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	inst := m.current(c)
	if inst == nil || inst.stopped {
		return
	}
	t := now()
	for output != "" {
		line, rest, found := strings.Cut(output, "\n")
		if found {
			line += "\n"
		}
		inst.lines = append(inst.lines, LogLine{Time: t, Data: []byte(line)})
		output = rest
	}
	inst.notify()
}

// Stop ends the current instance of a container: its followers reach the
// end of the log.
func (m *MemoryLogs) Stop(c Container) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if inst := m.current(c); inst != nil && !inst.stopped {
		inst.stopped = true
		inst.notify()
	}
}

// RemovePod forgets the logs of a pod's containers.
func (m *MemoryLogs) RemovePod(namespace, pod string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for c, l := range m.logs {
		if c.Namespace == namespace && c.Pod == pod {
			for _, inst := range l.instances {
				if !inst.stopped {
					inst.stopped = true
					inst.notify()
				}
			}
			delete(m.logs, c)
		}
	}
}

func (m *MemoryLogs) current(c Container) *memoryInstance {
	if l := m.logs[c]; l != nil && len(l.instances) > 0 {
		return l.instances[len(l.instances)-1]
	}
	return nil
}

// OpenLog implements LogSource: a pod none of whose containers started is
// not found, and so is a container that never started in a known pod.
func (m *MemoryLogs) OpenLog(ctx context.Context, c Container, previous, follow bool) (LogReader, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.logs[c]
	if l == nil {
		for known := range m.logs {
			if known.Namespace == c.Namespace && known.Pod == c.Pod {
				return nil, ContainerNotFound(c.Name, c.Pod)
			}
		}
		return nil, PodNotFound(c.Pod)
	}
	n := len(l.instances)
	inst := l.instances[n-1]
	if previous {
		if n < 2 {
			return nil, NoPreviousContainer(c.Name, c.Pod)
		}
		inst = l.instances[n-2]
	}
	end := len(inst.lines)
	if follow {
		end = -1
	}
	return &memoryReader{ctx: ctx, mu: &m.mu, inst: inst, end: end}, nil
}

// memoryReader reads an instance's lines up to end, or on as they come
// when end < 0.
type memoryReader struct {
	ctx  context.Context
	mu   *sync.Mutex
	inst *memoryInstance
	end  int
	next int
}

func (r *memoryReader) Next() (LogLine, error) {
	for {
		r.mu.Lock()
		if r.next < len(r.inst.lines) && (r.end < 0 || r.next < r.end) {
			line := r.inst.lines[r.next]
			r.next++
			r.mu.Unlock()
			return line, nil
		}
		if r.end >= 0 || r.inst.stopped {
			r.mu.Unlock()
			return LogLine{}, io.EOF
		}
		changed := r.inst.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-r.ctx.Done():
			return LogLine{}, r.ctx.Err()
		}
	}
}

func (r *memoryReader) Close() error { return nil }
