package controllermanager

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/controller/podgc"
)

// podGCController runs the pod garbage collector with kube's name, alias
// and client name (its account when --use-service-account-credentials).
func podGCController() Descriptor {
	const name = "pod-garbage-collector"
	return Descriptor{
		Name:    "pod-garbage-collector-controller",
		Aliases: []string{"podgc"},
		Requires: []schema.GroupVersionResource{
			corev1.SchemeGroupVersion.WithResource("pods"),
			corev1.SchemeGroupVersion.WithResource("nodes"),
		},
		Start: func(cc *ControllerContext) (func(context.Context), error) {
			client, err := cc.Clients.Client(name)
			if err != nil {
				return nil, err
			}
			core := cc.Informers.Core().V1()
			c := podgc.New(client, core.Pods(), core.Nodes(), cc.Options.TerminatedPodGCThreshold, cc.metrics.podGC, nil)
			return c.Run, nil
		},
	}
}
