package fakenode

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cronplane/cronplane/pkg/nodeserver"
)

// followPoll is how often a followed log looks for lines its container
// wrote since the last look.
const followPoll = 100 * time.Millisecond

// OpenLog implements nodeserver.LogSource over the log files the node's
// containers write, one per run, so that the apiserver's pods/log reaches
// a fake node as it reaches a kubelet.
func (n *Node) OpenLog(ctx context.Context, c nodeserver.Container, previous, follow bool) (nodeserver.LogReader, error) {
	w := n.worker(c.Namespace, c.Pod)
	if w == nil {
		return nil, nodeserver.PodNotFound(c.Pod)
	}
	if !hasContainer(w.current(), c.Name) {
		return nil, nodeserver.ContainerNotFound(c.Name, c.Pod)
	}
	w.mu.Lock()
	s := w.regular[c.Name]
	if s == nil {
		s = w.init[c.Name]
	}
	var run int32
	waiting := "ContainerCreating"
	if s != nil {
		run = s.RestartCount
		if s.State.Waiting != nil {
			waiting = s.State.Waiting.Reason
		}
	}
	w.mu.Unlock()
	if previous {
		if run == 0 {
			return nil, nodeserver.NoPreviousContainer(c.Name, c.Pod)
		}
		run--
	}
	f, err := os.Open(filepath.Join(w.dir, c.Name, fmt.Sprintf("%d.log", run)))
	if errors.Is(err, os.ErrNotExist) {
		if previous {
			return nil, nodeserver.NoPreviousContainer(c.Name, c.Pod)
		}
		return nil, nodeserver.ContainerWaiting(c.Name, c.Pod, waiting)
	}
	if err != nil {
		return nil, err
	}
	l := &fileLog{ctx: ctx, f: f, r: bufio.NewReader(f)}
	if follow && !previous {
		l.running = func() bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			s := w.regular[c.Name]
			if s == nil {
				s = w.init[c.Name]
			}
			return s != nil && s.RestartCount == run && s.State.Running != nil
		}
	}
	return l, nil
}

// worker is the pod worker of namespace/name, or nil.
func (n *Node) worker(namespace, name string) *podWorker {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, w := range n.workers {
		if p := w.current(); p.Namespace == namespace && p.Name == name {
			return w
		}
	}
	return nil
}

func hasContainer(pod *corev1.Pod, name string) bool {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.Name == name {
				return true
			}
		}
	}
	return false
}

// fileLog reads a run's log file, "<RFC3339Nano> <stream> <F|P> <text>"
// per line; with running set it waits for more lines while the run lasts.
type fileLog struct {
	ctx     context.Context
	f       *os.File
	r       *bufio.Reader
	partial []byte
	running func() bool
}

func (l *fileLog) Next() (nodeserver.LogLine, error) {
	for {
		chunk, err := l.r.ReadBytes('\n')
		l.partial = append(l.partial, chunk...)
		if err == nil {
			line := l.partial
			l.partial = nil
			if parsed, ok := parseLogLine(line); ok {
				return parsed, nil
			}
			continue
		}
		if !errors.Is(err, io.EOF) {
			return nodeserver.LogLine{}, err
		}
		if l.running == nil {
			return nodeserver.LogLine{}, io.EOF
		}
		// A run that has ended wrote its last line before it was seen
		// ended: one more read drains it.
		if !l.running() {
			l.running = nil
			continue
		}
		select {
		case <-l.ctx.Done():
			return nodeserver.LogLine{}, io.EOF
		case <-time.After(followPoll):
		}
	}
}

func (l *fileLog) Close() error { return l.f.Close() }

// parseLogLine reads one line of the kubelet's log format; a partial (P)
// line keeps no newline, as the container wrote none.
func parseLogLine(line []byte) (nodeserver.LogLine, bool) {
	fields := bytes.SplitN(bytes.TrimSuffix(line, []byte("\n")), []byte(" "), 4)
	if len(fields) < 3 {
		return nodeserver.LogLine{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(fields[0]))
	if err != nil {
		return nodeserver.LogLine{}, false
	}
	var text []byte
	if len(fields) == 4 {
		text = fields[3]
	}
	data := append([]byte(nil), text...)
	if string(fields[2]) == "F" {
		data = append(data, '\n')
	}
	return nodeserver.LogLine{Time: t, Data: data}, true
}
