package controllermanager

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/cronplane/cronplane/pkg/controller/cronjob"
	"github.com/cronplane/cronplane/pkg/controller/garbagecollector"
	"github.com/cronplane/cronplane/pkg/controller/namespace"
)

// The descriptors of the controllers, one each, with kube's names.

func cronJobController() Descriptor {
	const name = "cronjob-controller"
	return Descriptor{
		Name:    name,
		Aliases: []string{"cronjob"},
		Requires: []schema.GroupVersionResource{
			{Group: "batch", Version: "v1", Resource: "cronjobs"},
			{Group: "batch", Version: "v1", Resource: "jobs"},
		},
		Start: func(cc *ControllerContext) (func(context.Context), error) {
			client, err := cc.Clients.Client(name)
			if err != nil {
				return nil, err
			}
			recorder, err := cc.Recorder(name, "cronjob-controller")
			if err != nil {
				return nil, err
			}
			batch := cc.Informers.Batch().V1()
			c, err := cronjob.New(client, batch.CronJobs(), batch.Jobs(), recorder, cc.Options.Clock, cc.metrics.cronJobSkew)
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context) { c.Run(ctx, cc.Options.ConcurrentCronJobSyncs) }, nil
		},
	}
}

func garbageCollectorController() Descriptor {
	// kube's name for the garbage collector's client (and account).
	const clientName = "generic-garbage-collector"
	return Descriptor{
		Name:    "garbage-collector-controller",
		Aliases: []string{"garbagecollector"},
		Start: func(cc *ControllerContext) (func(context.Context), error) {
			cfg := cc.Clients.Config(clientName)
			client, err := cc.Clients.Client(clientName)
			if err != nil {
				return nil, err
			}
			mc, err := metadata.NewForConfig(cfg)
			if err != nil {
				return nil, err
			}
			c := garbagecollector.New(mc, client.Discovery())
			return func(ctx context.Context) { c.Run(ctx, cc.Options.ConcurrentGCSyncs, cc.Options.GCResync) }, nil
		},
	}
}

func namespaceController() Descriptor {
	const name = "namespace-controller"
	return Descriptor{
		Name:     name,
		Aliases:  []string{"namespace"},
		Requires: []schema.GroupVersionResource{{Version: "v1", Resource: "namespaces"}},
		Start: func(cc *ControllerContext) (func(context.Context), error) {
			client, err := cc.Clients.Client(name)
			if err != nil {
				return nil, err
			}
			dyn, err := dynamic.NewForConfig(cc.Clients.Config(name))
			if err != nil {
				return nil, err
			}
			// As kube's: a namespace controller that can discover nothing
			// could never empty a namespace; the manager ends instead.
			if resources, err := client.Discovery().ServerPreferredNamespacedResources(); len(resources) == 0 {
				if err == nil {
					err = errors.New("no namespaced resources")
				}
				return nil, fmt.Errorf("unable to get any supported resources from server: %w", err)
			}
			c := namespace.New(client, dyn, cc.Informers.Core().V1().Namespaces())
			return func(ctx context.Context) { c.Run(ctx, 2) }, nil
		},
	}
}
