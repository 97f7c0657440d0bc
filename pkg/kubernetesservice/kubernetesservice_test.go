package kubernetesservice

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/cronplane/cronplane/pkg/etcdserver"
)

// memoryClient keeps the Service and Endpoints in memory.
type memoryClient struct {
	mu  sync.Mutex
	svc *corev1.Service
	ep  *corev1.Endpoints
}

func (m *memoryClient) GetService(context.Context, string, string) (*corev1.Service, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.svc == nil {
		return nil, apierrors.NewNotFound(corev1.Resource("services"), Name)
	}
	return m.svc.DeepCopy(), nil
}

func (m *memoryClient) CreateService(ctx context.Context, s *corev1.Service) error {
	return m.UpdateService(ctx, s)
}

func (m *memoryClient) UpdateService(_ context.Context, s *corev1.Service) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.svc = s.DeepCopy()
	return nil
}

func (m *memoryClient) GetEndpoints(context.Context, string, string) (*corev1.Endpoints, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ep == nil {
		return nil, apierrors.NewNotFound(corev1.Resource("endpoints"), Name)
	}
	return m.ep.DeepCopy(), nil
}

func (m *memoryClient) CreateEndpoints(ctx context.Context, e *corev1.Endpoints) error {
	return m.UpdateEndpoints(ctx, e)
}

func (m *memoryClient) UpdateEndpoints(_ context.Context, e *corev1.Endpoints) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ep = e.DeepCopy()
	return nil
}

func (m *memoryClient) ips() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ips []string
	if m.ep != nil {
		for _, ss := range m.ep.Subsets {
			for _, a := range ss.Addresses {
				ips = append(ips, a.IP)
			}
		}
	}
	return strings.Join(ips, ",")
}

// An apiserver that stops without a word leaves the Endpoints once its
// lease ends, at the next sync of another one.
func TestReconciler_ExpiredLeaseLeavesTheEndpoints(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	etcd, stop, err := etcdserver.StartTemp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	client := &memoryClient{}
	reconciler := func(ip string, ttl time.Duration) *Reconciler {
		return &Reconciler{Client: client, Etcd: etcd.Client(), LeasePrefix: "/registry/masterleases/",
			IP: net.ParseIP(ip), Port: 6443, ServiceIP: "10.0.0.1", TTL: ttl, Interval: time.Hour}
	}
	short := reconciler("192.0.2.2", time.Second)
	if err := short.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	long := reconciler("192.0.2.1", time.Minute)
	if err := long.ensureService(ctx); err != nil {
		t.Fatal(err)
	}
	if err := long.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := client.ips(); got != "192.0.2.1,192.0.2.2" {
		t.Fatalf("endpoints %q with both leases live", got)
	}
	if svc, _ := client.GetService(ctx, Namespace, Name); svc.Spec.ClusterIP != "10.0.0.1" || svc.Spec.Ports[0].TargetPort.IntValue() != 6443 || svc.Labels["component"] != "apiserver" {
		t.Fatalf("service %+v", svc)
	}
	deadline := time.Now().Add(20 * time.Second)
	for client.ips() != "192.0.2.1" && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		if err := long.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := client.ips(); got != "192.0.2.1" {
		t.Fatalf("endpoints %q after the short lease ended", got)
	}
}
