// Package defaulttolerations is the admission plugin that lets a new pod
// stay on a node that is not ready or unreachable for a while (300
// seconds by default) before it is evicted, as kube's
// DefaultTolerationSeconds plugin does: it adds NoExecute tolerations of
// the two taints unless the pod tolerates them already. It runs in the
// mutating phase, on pod creates only.
package defaulttolerations

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/cronplane/cronplane/pkg/admission"
)

// Seconds is kube's default --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds.
const Seconds = 300

// Plugin adds the default tolerations to new pods: NotReadySeconds of
// the not-ready taint, UnreachableSeconds of the unreachable one.
type Plugin struct {
	NotReadySeconds, UnreachableSeconds int64
}

var _ admission.MutationInterface = Plugin{}

func (Plugin) Handles(op admission.Operation) bool { return op == admission.Create }

func (p Plugin) Admit(_ context.Context, a *admission.Attributes) error {
	if a.Resource.Group != "" || a.Resource.Resource != "pods" || a.Subresource != "" {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	for _, d := range []struct {
		taint   string
		seconds int64
	}{{corev1.TaintNodeNotReady, p.NotReadySeconds}, {corev1.TaintNodeUnreachable, p.UnreachableSeconds}} {
		if !tolerates(pod.Spec.Tolerations, d.taint) {
			seconds := d.seconds
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
				Key: d.taint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds,
			})
		}
	}
	return nil
}

// tolerates: a toleration of the key (or of every key) with the effect
// NoExecute (or every effect), whatever its operator and seconds.
func tolerates(tolerations []corev1.Toleration, key string) bool {
	for _, t := range tolerations {
		if (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") {
			return true
		}
	}
	return false
}
