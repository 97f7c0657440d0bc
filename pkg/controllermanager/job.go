package controllermanager

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/cronplane/cronplane/pkg/controller/job"
)

// jobController runs the Job controller with kube's name, alias and
// client name (its account when --use-service-account-credentials).
func jobController() Descriptor {
	const name = "job-controller"
	return Descriptor{
		Name:    name,
		Aliases: []string{"job"},
		Requires: []schema.GroupVersionResource{
			batchv1.SchemeGroupVersion.WithResource("jobs"),
			corev1.SchemeGroupVersion.WithResource("pods"),
		},
		Start: func(cc *ControllerContext) (func(context.Context), error) {
			client, err := cc.Clients.Client(name)
			if err != nil {
				return nil, err
			}
			recorder, err := cc.Recorder(name, name)
			if err != nil {
				return nil, err
			}
			// The Job controller waits on its clock (backoff, deadlines):
			// an override that cannot tick leaves it the real one.
			var clk clock.WithTicker = clock.RealClock{}
			if c, ok := cc.Options.Clock.(clock.WithTicker); ok {
				clk = c
			}
			c, err := job.New(client, cc.Informers.Batch().V1().Jobs(), cc.Informers.Core().V1().Pods(), recorder, clk)
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context) { c.Run(ctx, cc.Options.ConcurrentJobSyncs) }, nil
		},
	}
}
