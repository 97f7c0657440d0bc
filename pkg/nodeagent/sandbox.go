package nodeagent

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/cronplane/cronplane/pkg/nodeagent/engine"
)

// sandboxName is the container name label of a pod's sandbox, as
// dockershim labelled it; no container of a pod spec can take it, the
// names of those being lowercase.
const sandboxName = "POD"

// labelDockerType tells a sandbox from a container, as dockershim did.
const labelDockerType = "io.kubernetes.docker.type"

// sandboxCommand holds the pod's network namespace until it is stopped,
// exiting 0 on SIGTERM as the pause image does: there is no pause image
// here, so the sandbox runs the busybox shell.
var sandboxCommand = []string{"sh", "-c", `trap "exit 0" TERM; sleep 2147483647 & wait`}

func isSandbox(c engine.Container) bool { return c.Labels[labelContainerName] == sandboxName }

// ensureSandbox returns the pod's running sandbox, creating and starting
// one if there is none (a dead one is removed first). Every container of
// the pod joins its network namespace, so that they share localhost and
// the pod's IP, as with the kubelet's sandbox. A sandbox container rather
// than the engine's container:<first container> mode: the first
// container may exit (an init container always does) or restart under a
// new id, taking the namespace with it.
func (a *Agent) ensureSandbox(ctx context.Context, pod *corev1.Pod) (engine.Container, error) {
	sel := a.ownLabels()
	sel[labelPodUID], sel[labelContainerName] = string(pod.UID), sandboxName
	list, err := a.engine.List(ctx, sel)
	if err != nil {
		return engine.Container{}, err
	}
	next := 0
	for _, c := range list {
		if c.State == engine.Running {
			return c, nil
		}
		next = max(next, attempt(c)+1)
	}
	for _, c := range list {
		_ = a.engine.Remove(ctx, c.ID)
	}
	if _, err := a.engine.Image(ctx, a.opts.SandboxImage); errors.Is(err, engine.ErrNotFound) {
		err = a.engine.Pull(ctx, a.opts.SandboxImage)
		if err != nil {
			return engine.Container{}, fmt.Errorf("pulling the sandbox image %q: %w", a.opts.SandboxImage, err)
		}
	} else if err != nil {
		return engine.Container{}, err
	}
	labels := a.containerLabels(pod, sandboxName, next, false)
	labels[labelDockerType] = "podsandbox"
	id, err := a.engine.Create(ctx, engine.Spec{
		Name: containerName(pod, sandboxName, next), Image: a.opts.SandboxImage, Entrypoint: sandboxCommand,
		Labels: labels, Hostname: hostname(pod), Network: a.opts.Network,
	})
	if err != nil {
		return engine.Container{}, err
	}
	if err := a.engine.Start(ctx, id); err != nil {
		_ = a.engine.Remove(ctx, id)
		return engine.Container{}, err
	}
	return a.engine.Inspect(ctx, id)
}
