package controllermanager

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/controller/serviceaccount"
)

// serviceAccountController runs with kube's name, alias, client name and
// one worker, as kube runs it.
func serviceAccountController() Descriptor {
	return Descriptor{
		Name:    "serviceaccount-controller",
		Aliases: []string{"serviceaccount"},
		Requires: []schema.GroupVersionResource{
			corev1.SchemeGroupVersion.WithResource("namespaces"),
			corev1.SchemeGroupVersion.WithResource("serviceaccounts"),
		},
		Start: func(cc *ControllerContext) (func(context.Context), error) {
			client, err := cc.Clients.Client("service-account-controller")
			if err != nil {
				return nil, err
			}
			core := cc.Informers.Core().V1()
			c := serviceaccount.New(client, core.ServiceAccounts(), core.Namespaces())
			return func(ctx context.Context) { c.Run(ctx, 1) }, nil
		},
	}
}
