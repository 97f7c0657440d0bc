package controllermanager

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/controller/scheduler"
)

// schedulerController is cronplane's own: kube runs its scheduler as a
// binary of its own, under a Lease of its own; a small control plane
// runs it here, under the manager's Lease (docs/architecture.md). One
// worker, as kube-scheduler places one pod at a time, so that each
// placement counts the one before.
func schedulerController() Descriptor {
	const name = "scheduler"
	return Descriptor{
		Name: name,
		Requires: []schema.GroupVersionResource{
			corev1.SchemeGroupVersion.WithResource("pods"),
			corev1.SchemeGroupVersion.WithResource("pods/binding"),
			corev1.SchemeGroupVersion.WithResource("nodes"),
		},
		Start: func(cc *ControllerContext) (func(context.Context), error) {
			client, err := cc.Clients.Client(name)
			if err != nil {
				return nil, err
			}
			recorder, err := cc.Recorder(name, scheduler.Name)
			if err != nil {
				return nil, err
			}
			core := cc.Informers.Core().V1()
			c := scheduler.New(client, core.Pods(), core.Nodes(), recorder)
			return func(ctx context.Context) { c.Run(ctx, 1) }, nil
		},
	}
}
