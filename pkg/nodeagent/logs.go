package nodeagent

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cronplane/cronplane/pkg/nodeagent/engine"
	"github.com/cronplane/cronplane/pkg/nodeserver"
)

// OpenLog opens a container's log from the engine: its current instance,
// or with previous the one before it (the agent keeps the last exited
// instance), as the node server's LogSource.
func (a *Agent) OpenLog(ctx context.Context, c nodeserver.Container, previous, follow bool) (nodeserver.LogReader, error) {
	pod, err := a.pods.Pods(c.Namespace).Get(c.Pod)
	if err != nil {
		return nil, nodeserver.PodNotFound(c.Pod)
	}
	if !hasContainer(pod, c.Name) {
		return nil, nodeserver.ContainerNotFound(c.Name, c.Pod)
	}
	sel := a.ownLabels()
	sel[labelPodUID], sel[labelContainerName] = string(pod.UID), c.Name
	all, err := a.engine.List(ctx, sel)
	if err != nil {
		return nil, err
	}
	list := instances(all)[c.Name]
	var inst engine.Container
	switch {
	case previous && len(list) < 2:
		return nil, nodeserver.NoPreviousContainer(c.Name, c.Pod)
	case previous:
		inst, follow = list[1], false
	case len(list) == 0 || list[0].State == engine.Created:
		reason := "ContainerCreating"
		if w := a.getWaiting(pod.UID, c.Name); w != nil {
			reason = w.Reason
		}
		return nil, nodeserver.ContainerWaiting(c.Name, c.Pod, reason)
	default:
		inst = list[0]
	}
	rc, err := a.engine.Logs(ctx, inst.ID, follow && inst.State == engine.Running)
	if err != nil {
		return nil, err
	}
	return &engineLog{r: bufio.NewReader(rc), c: rc}, nil
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

// engineLog reads the engine's log stream: frames of an 8-byte header
// (stream, three zero bytes, big-endian length) and a line prefixed with
// its RFC 3339 time and a space.
type engineLog struct {
	r      *bufio.Reader
	c      io.Closer
	header [8]byte
}

func (l *engineLog) Next() (nodeserver.LogLine, error) {
	if _, err := io.ReadFull(l.r, l.header[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			err = io.EOF
		}
		return nodeserver.LogLine{}, err
	}
	data := make([]byte, binary.BigEndian.Uint32(l.header[4:]))
	if _, err := io.ReadFull(l.r, data); err != nil {
		return nodeserver.LogLine{}, io.EOF
	}
	for i, b := range data {
		if b == ' ' {
			if t, err := time.Parse(time.RFC3339Nano, string(data[:i])); err == nil {
				return nodeserver.LogLine{Time: t, Data: data[i+1:]}, nil
			}
			break
		}
	}
	return nodeserver.LogLine{Time: time.Now(), Data: data}, nil
}

func (l *engineLog) Close() error { return l.c.Close() }
