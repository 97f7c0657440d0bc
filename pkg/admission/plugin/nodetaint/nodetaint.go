// Package nodetaint is the admission plugin that registers a new node as
// not ready for scheduling, as kube's TaintNodesByCondition plugin does:
// it adds the NoSchedule taint node.kubernetes.io/not-ready unless the
// node has it, until the node lifecycle controller sees the node ready
// and removes it. It runs in the mutating phase, on node creates only.
package nodetaint

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/cronplane/cronplane/pkg/admission"
)

// Plugin taints new nodes.
type Plugin struct{}

var _ admission.MutationInterface = Plugin{}

func (Plugin) Handles(op admission.Operation) bool { return op == admission.Create }

func (Plugin) Admit(_ context.Context, a *admission.Attributes) error {
	if a.Resource.Group != "" || a.Resource.Resource != "nodes" || a.Subresource != "" {
		return nil
	}
	node, ok := a.Object.(*corev1.Node)
	if !ok {
		return nil
	}
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady && t.Effect == corev1.TaintEffectNoSchedule {
			return nil
		}
	}
	node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
	return nil
}
