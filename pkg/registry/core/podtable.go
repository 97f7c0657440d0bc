package core

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/registry/rest"
)

var podTable = &rest.TableSpec{
	Columns: []metav1.TableColumnDefinition{
		rest.NameColumn,
		{Name: "Ready", Type: "string", Description: "The aggregate readiness state of this pod for accepting traffic."},
		{Name: "Status", Type: "string", Description: "The aggregate status of the containers in this pod."},
		{Name: "Restarts", Type: "string", Description: "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."},
		rest.AgeColumn,
		{Name: "IP", Type: "string", Priority: 1, Description: corev1.PodStatus{}.SwaggerDoc()["podIP"]},
		{Name: "Node", Type: "string", Priority: 1, Description: corev1.PodSpec{}.SwaggerDoc()["nodeName"]},
		{Name: "Nominated Node", Type: "string", Priority: 1, Description: corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"]},
		{Name: "Readiness Gates", Type: "string", Priority: 1, Description: corev1.PodSpec{}.SwaggerDoc()["readinessGates"]},
	},
	Cells: func(obj runtime.Object, now time.Time) []interface{} {
		pod := obj.(*corev1.Pod)
		ready, total, status, restarts := podSummary(pod, now)
		return []interface{}{pod.Name, fmt.Sprintf("%d/%d", ready, total), status, restarts, rest.Age(pod.CreationTimestamp, now),
			orNone(firstPodIP(pod)), orNone(pod.Spec.NodeName), orNone(pod.Status.NominatedNodeName), readinessGatesCell(pod)}
	},
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func firstPodIP(pod *corev1.Pod) string {
	if len(pod.Status.PodIPs) > 0 {
		return pod.Status.PodIPs[0].IP
	}
	return ""
}

// readinessGatesCell counts the readiness gates whose condition is true.
func readinessGatesCell(pod *corev1.Pod) string {
	if len(pod.Spec.ReadinessGates) == 0 {
		return "<none>"
	}
	met := 0
	for _, g := range pod.Spec.ReadinessGates {
		if c := podCondition(pod, g.ConditionType); c != nil && c.Status == corev1.ConditionTrue {
			met++
		}
	}
	return fmt.Sprintf("%d/%d", met, len(pod.Spec.ReadinessGates))
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func isSidecar(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// restartCount sums restarts and keeps the latest time a container last
// terminated.
type restartCount struct {
	n    int
	last time.Time
}

func (r *restartCount) add(s *corev1.ContainerStatus) {
	r.n += int(s.RestartCount)
	if t := s.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(r.last) {
		r.last = t.FinishedAt.Time
	}
}

// podSummary is what kubectl shows of a pod: ready and total containers
// (sidecars count), the status word, and the restarts. The status is the
// phase or the status reason, then the first init container not done, or
// else the last container's waiting or terminated reason; a pod being
// deleted is Terminating.
func podSummary(pod *corev1.Pod, now time.Time) (ready, total int, status, restarts string) {
	total = len(pod.Spec.Containers)
	status = string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		status = pod.Status.Reason
	}
	if c := podCondition(pod, corev1.PodScheduled); c != nil && c.Reason == corev1.PodReasonSchedulingGated {
		status = corev1.PodReasonSchedulingGated
	}
	inits := map[string]*corev1.Container{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		inits[c.Name] = c
		if isSidecar(c) {
			total++
		}
	}
	var all, sidecars restartCount
	initializing := false
	for i := range pod.Status.InitContainerStatuses {
		s := &pod.Status.InitContainerStatuses[i]
		all.add(s)
		sidecar := isSidecar(inits[s.Name])
		if sidecar {
			sidecars.add(s)
		}
		t, w := s.State.Terminated, s.State.Waiting
		if t != nil && t.ExitCode == 0 {
			continue
		}
		if sidecar && s.Started != nil && *s.Started {
			if s.Ready {
				ready++
			}
			continue
		}
		initializing = true
		switch {
		case t != nil && t.Reason != "":
			status = "Init:" + t.Reason
		case t != nil && t.Signal != 0:
			status = fmt.Sprintf("Init:Signal:%d", t.Signal)
		case t != nil:
			status = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
		case w != nil && w.Reason != "" && w.Reason != "PodInitializing":
			status = "Init:" + w.Reason
		default:
			status = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		break
	}
	count := all
	if initialized := podCondition(pod, corev1.PodInitialized); !initializing || (initialized != nil && initialized.Status == corev1.ConditionTrue) {
		count = sidecars
		running := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			s := &pod.Status.ContainerStatuses[i]
			count.add(s)
			t, w := s.State.Terminated, s.State.Waiting
			switch {
			case w != nil && w.Reason != "":
				status = w.Reason
			case t != nil && t.Reason != "":
				status = t.Reason
			case t != nil && t.Signal != 0:
				status = fmt.Sprintf("Signal:%d", t.Signal)
			case t != nil:
				status = fmt.Sprintf("ExitCode:%d", t.ExitCode)
			case s.Ready && s.State.Running != nil:
				running = true
				ready++
			}
		}
		if status == "Completed" && running {
			status = "NotReady"
			if c := podCondition(pod, corev1.PodReady); c != nil && c.Status == corev1.ConditionTrue {
				status = "Running"
			}
		}
	}
	if pod.DeletionTimestamp != nil {
		status = "Terminating"
		if pod.Status.Reason == "NodeLost" {
			status = "Unknown"
		}
	}
	restarts = strconv.Itoa(count.n)
	if count.n != 0 && !count.last.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", count.n, rest.Age(metav1.NewTime(count.last), now))
	}
	return ready, total, status, restarts
}
