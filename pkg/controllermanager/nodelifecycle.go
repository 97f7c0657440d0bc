package controllermanager

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/cronplane/cronplane/pkg/controller/nodelifecycle"
)

// nodeLifecycleController runs with kube's name, alias and client name,
// checking the nodes every --node-monitor-period and judging one silent
// for --node-monitor-grace-period (--node-startup-grace-period before its
// first status) unreachable.
func nodeLifecycleController() Descriptor {
	const name = "node-controller"
	return Descriptor{
		Name:    "node-lifecycle-controller",
		Aliases: []string{"nodelifecycle"},
		Requires: []schema.GroupVersionResource{
			corev1.SchemeGroupVersion.WithResource("nodes"),
			corev1.SchemeGroupVersion.WithResource("pods"),
			coordinationv1.SchemeGroupVersion.WithResource("leases"),
		},
		Start: func(cc *ControllerContext) (func(context.Context), error) {
			client, err := cc.Clients.Client(name)
			if err != nil {
				return nil, err
			}
			core := cc.Informers.Core().V1()
			c := nodelifecycle.New(client, core.Nodes(), core.Pods(), cc.Informers.Coordination().V1().Leases(), clock.RealClock{},
				cc.Options.NodeMonitorPeriod, cc.Options.NodeMonitorGracePeriod, cc.Options.NodeStartupGracePeriod)
			return c.Run, nil
		},
	}
}
