package nodeagent

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cronplane/cronplane/pkg/nodeagent/engine"
)

// observed is what the agent knows of one spec container: its instances
// in the engine (latest first), why it waits when the agent cannot start
// it, and the status last written, for a container the engine lost.
type observed struct {
	instances []engine.Container
	waiting   *corev1.ContainerStateWaiting
	old       *corev1.ContainerStatus
	// message is the latest instance's termination message.
	message string
}

// terminated is the state of an exited instance, with the reason the
// kubelet gives it. One the engine failed to start (its runtime's error
// recorded, exit code 128) is StartError, as containerd's CRI reports it
// and the kubelet passes on.
func terminated(c engine.Container, message string) *corev1.ContainerStateTerminated {
	reason := "Error"
	switch {
	case c.Error != "":
		reason = "StartError"
	case c.OOMKilled:
		reason = "OOMKilled"
	case c.ExitCode == 0:
		reason = "Completed"
	}
	if message == "" && c.Error != "" {
		message = c.Error
	}
	return &corev1.ContainerStateTerminated{
		ExitCode: int32(c.ExitCode), Reason: reason, Message: message,
		StartedAt: metav1.NewTime(c.StartedAt), FinishedAt: metav1.NewTime(c.FinishedAt),
		ContainerID: "docker://" + c.ID,
	}
}

// containerStatus is a container's status as the kubelet writes it.
func containerStatus(spec *corev1.Container, o observed) corev1.ContainerStatus {
	s := corev1.ContainerStatus{Name: spec.Name, Image: spec.Image, Started: ptr.To(false)}
	if len(o.instances) == 0 {
		if o.old != nil && o.old.ContainerID != "" && o.waiting == nil {
			// It ran, but the engine lost it: what was written stands, and
			// a container last seen running is reported unknown, as the
			// kubelet does.
			s = *o.old.DeepCopy()
			if s.State.Running != nil || s.State.Waiting != nil {
				s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: "ContainerStatusUnknown",
					Message: "The container could not be located when the pod was terminated",
				}}
			}
			s.Ready, s.Started = false, ptr.To(false)
			return s
		}
		w := o.waiting
		if w == nil {
			w = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
		}
		s.State.Waiting = w
		return s
	}
	latest := o.instances[0]
	s.ContainerID = "docker://" + latest.ID
	s.ImageID = "docker://" + latest.ImageID
	s.RestartCount = int32(attempt(latest))
	if len(o.instances) > 1 {
		s.LastTerminationState.Terminated = terminated(o.instances[1], "")
	}
	switch latest.State {
	case engine.Running:
		s.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(latest.StartedAt)}
		s.Ready, s.Started = true, ptr.To(true)
	case engine.Created:
		s.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	default:
		t := terminated(latest, o.message)
		if o.waiting != nil {
			// Waiting to restart: the exited instance is the last state.
			s.State.Waiting = o.waiting
			s.LastTerminationState = corev1.ContainerState{Terminated: t}
		} else {
			s.State.Terminated = t
		}
	}
	return s
}

// podPhase is the kubelet's phase of a pod from its containers' statuses;
// terminal says the pod is being stopped for good (deleted, or past its
// deadline), so that containers that would restart count as stopped.
func podPhase(spec *corev1.PodSpec, inits, containers []corev1.ContainerStatus, terminal bool) corev1.PodPhase {
	pendingInit, failedInit := 0, 0
	for _, s := range inits {
		switch {
		case s.State.Running != nil:
			pendingInit++
		case s.State.Terminated != nil:
			if s.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case s.State.Waiting != nil:
			if t := s.LastTerminationState.Terminated; t != nil && t.ExitCode != 0 {
				failedInit++
			} else {
				pendingInit++
			}
		}
	}
	running, waiting, stopped, succeeded := 0, 0, 0, 0
	for _, s := range containers {
		switch {
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case s.State.Waiting != nil:
			if s.LastTerminationState.Terminated != nil {
				stopped++
			} else {
				waiting++
			}
		}
	}
	if failedInit > 0 && spec.RestartPolicy == corev1.RestartPolicyNever {
		return corev1.PodFailed
	}
	switch {
	case pendingInit > 0 && !terminal:
		return corev1.PodPending
	case waiting > 0 && !terminal:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case running == 0 && stopped > 0 && stopped+waiting == len(containers) && (waiting == 0 || terminal):
		if terminal {
			if stopped == succeeded && waiting == 0 {
				return corev1.PodSucceeded
			}
			return corev1.PodFailed
		}
		switch spec.RestartPolicy {
		case corev1.RestartPolicyAlways:
			return corev1.PodRunning
		case corev1.RestartPolicyOnFailure:
			if stopped == succeeded {
				return corev1.PodSucceeded
			}
			return corev1.PodRunning
		}
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		return corev1.PodFailed
	case terminal:
		return corev1.PodFailed
	}
	return corev1.PodPending
}

// podConditions are the Initialized, ContainersReady and Ready conditions
// the kubelet owns, keeping their transition times from old when their
// status did not change, and every other condition of old.
func podConditions(old []corev1.PodCondition, phase corev1.PodPhase, inits, containers []corev1.ContainerStatus, now metav1.Time) []corev1.PodCondition {
	var incomplete, unready []string
	for _, s := range inits {
		if t := s.State.Terminated; t == nil || t.ExitCode != 0 {
			incomplete = append(incomplete, s.Name)
		}
	}
	for _, s := range containers {
		if !s.Ready {
			unready = append(unready, s.Name)
		}
	}
	initialized := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}
	switch {
	case phase == corev1.PodSucceeded && len(incomplete) == 0:
		initialized.Reason = "PodCompleted"
	case len(incomplete) > 0:
		initialized = corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionFalse, Reason: "ContainersNotInitialized",
			Message: fmt.Sprintf("containers with incomplete status: %s", incomplete)}
	}
	ready := corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}
	switch {
	case phase == corev1.PodSucceeded:
		ready = corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "PodCompleted"}
	case len(incomplete) > 0 && len(unready) > 0 || len(unready) > 0:
		ready = corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady",
			Message: fmt.Sprintf("containers with unready status: %s", unready)}
	}
	podReady := ready
	podReady.Type = corev1.PodReady
	own := []corev1.PodCondition{initialized, podReady, ready}
	var out []corev1.PodCondition
	for _, o := range old {
		switch o.Type {
		case corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady:
		default:
			out = append(out, o)
		}
	}
	for _, c := range own {
		c.LastTransitionTime = now
		for _, o := range old {
			if o.Type == c.Type && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		out = append(out, c)
	}
	return out
}

// podStatus is the status the agent writes for pod from what it observed.
func (a *Agent) podStatus(pod *corev1.Pod, obs map[string]observed, terminal bool, podIP string, now time.Time) corev1.PodStatus {
	s := *pod.Status.DeepCopy()
	oldStatus := func(list []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
		return nil
	}
	var inits, containers []corev1.ContainerStatus
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		o := obs[c.Name]
		o.old = oldStatus(pod.Status.InitContainerStatuses, c.Name)
		inits = append(inits, containerStatus(c, o))
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		o := obs[c.Name]
		o.old = oldStatus(pod.Status.ContainerStatuses, c.Name)
		containers = append(containers, containerStatus(c, o))
	}
	s.InitContainerStatuses, s.ContainerStatuses = inits, containers
	if s.Phase != corev1.PodFailed && s.Phase != corev1.PodSucceeded {
		s.Phase = podPhase(&pod.Spec, inits, containers, terminal)
	}
	s.Conditions = podConditions(pod.Status.Conditions, s.Phase, inits, containers, metav1.NewTime(now))
	if a.opts.NodeIP != "" {
		s.HostIP = a.opts.NodeIP
		s.HostIPs = []corev1.HostIP{{IP: a.opts.NodeIP}}
	}
	if podIP != "" {
		s.PodIP = podIP
		s.PodIPs = []corev1.PodIP{{IP: podIP}}
	}
	if s.StartTime == nil {
		s.StartTime = ptr.To(metav1.NewTime(now))
	}
	return s
}
