package fakenode

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Exit codes of a container its node stopped: the kubelet asks it to stop
// (SIGTERM) and kills it (SIGKILL) once the grace period is over.
const (
	ExitCodeTerminated int32 = 128 + 15
	ExitCodeKilled     int32 = 128 + 9
)

// Container is one run of a container: the pod as the node last saw it,
// the container's spec, and where its files go.
type Container struct {
	Pod  *corev1.Pod
	Spec *corev1.Container
	// RestartCount counts the runs before this one.
	RestartCount int32
	// PodDir is the pod's own directory (volumes, work directory).
	PodDir string
	// LogPath is the file that keeps the run's stdout and stderr.
	LogPath string
	// IP is the pod's IP, and the node's.
	IP string
}

// Process is a started container.
type Process interface {
	// Wait blocks until the container exits and returns its exit code.
	Wait() int32
	// Stop asks the container to exit and kills it after grace; Wait
	// then returns.
	Stop(grace time.Duration)
}

// Runner starts containers. An error from Start is a container that could
// not start (kube's StartError).
type Runner interface {
	Start(ctx context.Context, c *Container) (Process, error)
}

// Fixed runs every container for Duration and exits with ExitCode; a
// container stopped earlier exits with ExitCodeTerminated.
type Fixed struct {
	ExitCode int32
	Duration time.Duration
}

// Start implements Runner.
func (f Fixed) Start(_ context.Context, _ *Container) (Process, error) {
	return Sleep(f.Duration, f.ExitCode), nil
}

// Func decides each container's outcome: how long it runs and its exit
// code. A negative duration runs until stopped.
type Func func(c *Container) (time.Duration, int32)

// Start implements Runner.
func (f Func) Start(_ context.Context, c *Container) (Process, error) {
	d, code := f(c)
	return Sleep(d, code), nil
}

type sleep struct {
	done chan struct{}
	stop chan struct{}
	code int32
}

// Sleep is a process that exits with code after d (never when d < 0)
// unless stopped first.
func Sleep(d time.Duration, code int32) Process {
	s := &sleep{done: make(chan struct{}), stop: make(chan struct{}, 1), code: code}
	go func() {
		defer close(s.done)
		var timeout <-chan time.Time
		if d >= 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-timeout:
		case <-s.stop:
			s.code = ExitCodeTerminated
		}
	}()
	return s
}

func (s *sleep) Wait() int32 {
	<-s.done
	return s.code
}

func (s *sleep) Stop(time.Duration) {
	select {
	case s.stop <- struct{}{}:
	default:
	}
}
