package controllermanager

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/cronplane/cronplane/pkg/controller/ttlafterfinished"
)

// ttlAfterFinishedController runs with kube's name, alias and client
// name, with --concurrent-ttl-after-finished-syncs workers.
func ttlAfterFinishedController() Descriptor {
	const name = "ttl-after-finished-controller"
	return Descriptor{
		Name:     name,
		Aliases:  []string{"ttl-after-finished"},
		Requires: []schema.GroupVersionResource{batchv1.SchemeGroupVersion.WithResource("jobs")},
		Start: func(cc *ControllerContext) (func(context.Context), error) {
			client, err := cc.Clients.Client(name)
			if err != nil {
				return nil, err
			}
			c := ttlafterfinished.New(client, cc.Informers.Batch().V1().Jobs(), clock.RealClock{}, cc.metrics.ttlDeletionDuration)
			return func(ctx context.Context) { c.Run(ctx, cc.Options.ConcurrentTTLSyncs) }, nil
		},
	}
}
