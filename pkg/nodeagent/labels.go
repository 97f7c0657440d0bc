package nodeagent

import (
	"fmt"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/cronplane/cronplane/pkg/nodeagent/engine"
)

// The labels every container of the agent carries, as dockershim named
// them, so that a restarted agent finds its pods' containers.
const (
	labelManaged       = "io.cronplane.node-agent"
	labelNode          = "io.cronplane.node"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelContainerName = "io.kubernetes.container.name"
	// labelAttempt is the container's restart count.
	labelAttempt = "io.kubernetes.container.restartCount"
	// labelInit marks init containers.
	labelInit = "io.cronplane.container.init"
)

// ownLabels select the containers of this agent's node.
func (a *Agent) ownLabels() map[string]string {
	return map[string]string{labelManaged: "true", labelNode: a.opts.NodeName}
}

func (a *Agent) containerLabels(pod *corev1.Pod, name string, attempt int, init bool) map[string]string {
	l := a.ownLabels()
	l[labelPodUID] = string(pod.UID)
	l[labelPodName] = pod.Name
	l[labelPodNamespace] = pod.Namespace
	l[labelContainerName] = name
	l[labelAttempt] = strconv.Itoa(attempt)
	if init {
		l[labelInit] = "true"
	}
	return l
}

// containerName is the engine's name of a container, dockershim's form.
func containerName(pod *corev1.Pod, name string, attempt int) string {
	return fmt.Sprintf("k8s_%s_%s_%s_%s_%d", name, pod.Name, pod.Namespace, pod.UID, attempt)
}

func attempt(c engine.Container) int {
	n, _ := strconv.Atoi(c.Labels[labelAttempt])
	return n
}

// instances groups a pod's containers by container name, the latest
// attempt first.
func instances(cs []engine.Container) map[string][]engine.Container {
	out := map[string][]engine.Container{}
	for _, c := range cs {
		name := c.Labels[labelContainerName]
		out[name] = append(out[name], c)
	}
	for _, list := range out {
		sort.Slice(list, func(i, j int) bool { return attempt(list[i]) > attempt(list[j]) })
	}
	return out
}
