// Package priority is the admission plugin that sets a new pod's priority
// from its priority class, as kube's Priority plugin does. This server
// serves no PriorityClasses: there is no global default, so a pod without
// a class gets priority 0, and the only classes are kube's two system
// ones; any other class is refused as kube refuses one that does not
// exist. It runs in the mutating phase, on pod creates only.
package priority

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/cronplane/cronplane/pkg/admission"
)

// systemClasses are kube's built-in priority classes and their values.
var systemClasses = map[string]int32{
	"system-node-critical":    2000001000,
	"system-cluster-critical": 2000000000,
}

// Plugin sets new pods' priority and preemption policy.
type Plugin struct{}

var _ admission.MutationInterface = Plugin{}

func (Plugin) Handles(op admission.Operation) bool { return op == admission.Create }

// Admit resolves the pod's class. A priority or preemption policy the pod
// sets itself must be what the class gives, as kube requires.
func (Plugin) Admit(_ context.Context, a *admission.Attributes) error {
	if a.Resource.Group != "" || a.Resource.Resource != "pods" || a.Subresource != "" {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	forbid := func(format string, args ...interface{}) error {
		return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, fmt.Errorf(format, args...))
	}
	priority := int32(0)
	if name := pod.Spec.PriorityClassName; name != "" {
		value, ok := systemClasses[name]
		if !ok {
			return forbid("no PriorityClass with name %v was found", name)
		}
		priority = value
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != priority {
		return forbid("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, priority)
	}
	pod.Spec.Priority = &priority
	policy := corev1.PreemptLowerPriority
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != policy {
		return forbid("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, policy)
	}
	pod.Spec.PreemptionPolicy = &policy
	return nil
}
