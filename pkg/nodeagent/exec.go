package nodeagent

import (
	"context"
	"fmt"

	"github.com/cronplane/cronplane/pkg/nodeagent/engine"
	"github.com/cronplane/cronplane/pkg/nodeserver"
)

var _ nodeserver.Executor = (*Agent)(nil)

// Exec implements nodeserver.Executor: cmd runs in the current instance
// of the pod's container, which must be running.
func (a *Agent) Exec(ctx context.Context, c nodeserver.Container, cmd []string, s nodeserver.ExecStreams) (int, error) {
	pod, err := a.pods.Pods(c.Namespace).Get(c.Pod)
	if err != nil {
		return 0, nodeserver.PodNotFound(c.Pod)
	}
	if !hasContainer(pod, c.Name) {
		return 0, nodeserver.ContainerNotFound(c.Name, c.Pod)
	}
	sel := a.ownLabels()
	sel[labelPodUID], sel[labelContainerName] = string(pod.UID), c.Name
	all, err := a.engine.List(ctx, sel)
	if err != nil {
		return 0, err
	}
	list := instances(all)[c.Name]
	if len(list) == 0 || list[0].State != engine.Running {
		return 0, fmt.Errorf("container %q in pod %q is not running", c.Name, c.Pod)
	}
	streams := engine.ExecIO{Stdin: s.Stdin, Stdout: s.Stdout, Stderr: s.Stderr, TTY: s.TTY}
	if s.Resize != nil {
		sizes := make(chan engine.TerminalSize, 1)
		streams.Resize = sizes
		go func() {
			for {
				select {
				case size := <-s.Resize:
					select {
					case sizes <- engine.TerminalSize{Width: uint(size.Width), Height: uint(size.Height)}:
					case <-ctx.Done():
						return
					}
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	return a.engine.Exec(ctx, list[0].ID, cmd, streams)
}
