package controllermanager

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/controller/clusterroleaggregation"
)

// clusterRoleAggregationController runs with kube's name, alias, client
// name and number of workers.
func clusterRoleAggregationController() Descriptor {
	const name = "clusterrole-aggregation-controller"
	return Descriptor{
		Name:     name,
		Aliases:  []string{"clusterrole-aggregation"},
		Requires: []schema.GroupVersionResource{rbacv1.SchemeGroupVersion.WithResource("clusterroles")},
		Start: func(cc *ControllerContext) (func(context.Context), error) {
			client, err := cc.Clients.Client(name)
			if err != nil {
				return nil, err
			}
			c := clusterroleaggregation.New(cc.Informers.Rbac().V1().ClusterRoles(), client.RbacV1())
			return func(ctx context.Context) { c.Run(ctx, 5) }, nil
		},
	}
}
