package controllermanager

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/controller/rootcacertpublisher"
)

// rootCACertPublisher runs with kube's name, alias, client name and one
// worker. It publishes --root-ca-file, or else the CA its client trusts
// the apiserver by, as kube does.
func rootCACertPublisher() Descriptor {
	const clientName = "root-ca-cert-publisher"
	return Descriptor{
		Name:    "root-ca-certificate-publisher-controller",
		Aliases: []string{"root-ca-cert-publisher"},
		Requires: []schema.GroupVersionResource{
			corev1.SchemeGroupVersion.WithResource("namespaces"),
			corev1.SchemeGroupVersion.WithResource("configmaps"),
		},
		Start: func(cc *ControllerContext) (func(context.Context), error) {
			rootCA, err := rootCAFor(cc, clientName)
			if err != nil {
				return nil, err
			}
			client, err := cc.Clients.Client(clientName)
			if err != nil {
				return nil, err
			}
			core := cc.Informers.Core().V1()
			c := rootcacertpublisher.New(client, rootCA, core.ConfigMaps(), core.Namespaces())
			return func(ctx context.Context) { c.Run(ctx, 1) }, nil
		},
	}
}

func rootCAFor(cc *ControllerContext, clientName string) ([]byte, error) {
	file := cc.Options.RootCAFile
	if file == "" {
		cfg := cc.Clients.Config(clientName)
		if len(cfg.CAData) > 0 {
			return cfg.CAData, nil
		}
		file = cfg.CAFile
	}
	if file == "" {
		return nil, fmt.Errorf("root CA: no --root-ca-file, and the kubeconfig names no CA")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("error parsing root-ca-file at %s: %w", file, err)
	}
	return data, nil
}
