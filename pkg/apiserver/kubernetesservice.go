package apiserver

import (
	"context"
	"net"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/allocator"
	"github.com/cronplane/cronplane/pkg/kubernetesservice"
	"github.com/cronplane/cronplane/pkg/registry/core"
	"github.com/cronplane/cronplane/pkg/registry/generic"
)

// serviceResources registers services and endpoints, with the ranges
// Services take their cluster IPs and node ports from (--service-*), whose
// guards live in etcd next to the objects.
func serviceResources(opts Options) (*core.ServiceAllocators, []*generic.Resource, error) {
	cidr, err := opts.Services.ClusterIPRange()
	if err != nil {
		return nil, nil, err
	}
	first, size, err := opts.Services.NodePortRange()
	if err != nil {
		return nil, nil, err
	}
	// The owners are set when the services store is installed.
	alloc := &core.ServiceAllocators{
		ClusterIPRange: cidr,
		ClusterIPs:     allocator.IPs(cidr, opts.EtcdPrefix+"/serviceips/", nil),
		NodePorts:      allocator.Ports(first, size, opts.EtcdPrefix+"/servicenodeports/", nil),
	}
	return alloc, []*generic.Resource{core.ServiceResource(alloc), core.EndpointsResource()}, nil
}

// startKubernetesService is the bootstrap-controller post-start hook, as
// kube names it: the default namespace, the kubernetes Service in it, and
// this apiserver's lease and place in its Endpoints, kept until the
// server stops.
func (s *Server) startKubernetesService(alloc *core.ServiceAllocators) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := s.createNamespaces(ctx, []string{metav1.NamespaceDefault}); err != nil {
			return err
		}
		ip, err := s.opts.Services.Advertised(s.opts.BindAddress)
		if err != nil {
			return err
		}
		r := &kubernetesservice.Reconciler{
			Client:      serviceClient{systemClient{s.Registry}},
			Etcd:        s.client,
			LeasePrefix: s.opts.EtcdPrefix + "/masterleases/",
			IP:          ip,
			Port:        s.listener.Addr().(*net.TCPAddr).Port,
			ServiceIP:   alloc.ClusterIPs.Name(0),
			TTL:         kubernetesservice.DefaultTTL,
			Interval:    kubernetesservice.DefaultInterval,
		}
		return r.Start(klog.NewContext(ctx, s.opts.Logger))
	}
}

var (
	servicesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	endpointsGVR = schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}
)

// serviceClient gives the reconciler typed access through the system
// client.
type serviceClient struct{ c systemClient }

func (c serviceClient) GetService(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	obj, err := c.c.get(ctx, servicesGVR, namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Service), nil
}

func (c serviceClient) CreateService(ctx context.Context, svc *corev1.Service) error {
	return c.c.create(ctx, servicesGVR, svc.Namespace, svc)
}

func (c serviceClient) UpdateService(ctx context.Context, svc *corev1.Service) error {
	return c.c.update(ctx, servicesGVR, svc.Namespace, svc)
}

func (c serviceClient) GetEndpoints(ctx context.Context, namespace, name string) (*corev1.Endpoints, error) {
	obj, err := c.c.get(ctx, endpointsGVR, namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Endpoints), nil
}

func (c serviceClient) CreateEndpoints(ctx context.Context, ep *corev1.Endpoints) error {
	return c.c.create(ctx, endpointsGVR, ep.Namespace, ep)
}

func (c serviceClient) UpdateEndpoints(ctx context.Context, ep *corev1.Endpoints) error {
	return c.c.update(ctx, endpointsGVR, ep.Namespace, ep)
}
