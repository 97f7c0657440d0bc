package apiserver_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
	"github.com/cronplane/cronplane/pkg/etcdserver"
)

func TestKubectl_ClusterInfoAndTheKubernetesService(t *testing.T) {
	// kubectl colours the line whatever the terminal.
	out := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(mustKubectl(t, "cluster-info"), "")
	if !strings.Contains(out, "is running at "+srv.URL) || !strings.Contains(out, "Kubernetes control plane") {
		t.Fatalf("cluster-info:\n%s", out)
	}
	out = mustKubectl(t, "get", "service", "kubernetes", "-n", "default")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 ||
		strings.Join(strings.Fields(lines[0]), " ") != "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE" ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "kubernetes ClusterIP 10.0.0.1 <none> 443/TCP ") {
		t.Fatalf("get service kubernetes:\n%s", out)
	}
}

// newService is a ClusterIP Service of one port.
func newService(name, clusterIP string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Ports: []corev1.ServicePort{{Port: 80}}}}
}

// endpointIPs waits until the kubernetes Endpoints list want.
func endpointIPs(ctx context.Context, t *testing.T, c kubernetes.Interface, want string) {
	t.Helper()
	var got string
	for ctx.Err() == nil {
		ep, err := c.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err == nil {
			var ips []string
			for _, ss := range ep.Subsets {
				for _, a := range ss.Addresses {
					ips = append(ips, a.IP)
				}
			}
			got = strings.Join(ips, ",")
			if got == want {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("kubernetes Endpoints list %q, want %q", got, want)
}

// Two apiservers on one etcd: both are listed in the kubernetes
// Endpoints, one leaves them when it stops, and their cluster IP
// allocations never collide.
func TestKubernetesService_TwoServersShareEndpointsAndClusterIPs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	etcd, stop, err := etcdserver.StartTemp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	// Advertised addresses are only listed, never dialled; kube refuses
	// loopback ones in Endpoints.
	tlsFiles := etcd.ClientTLS()
	on := func(ip string) func(*apiserver.Options) {
		return func(o *apiserver.Options) {
			o.EtcdServers = []string{etcd.ClientURL()}
			o.EtcdTLS = apiserver.EtcdTLSOptions{CAFile: tlsFiles.CAFile, CertFile: tlsFiles.CertFile, KeyFile: tlsFiles.KeyFile}
			o.Services.AdvertiseAddress = ip
		}
	}
	a := apiservertest.Start(t, on("192.0.2.1"))
	b := apiservertest.Start(t, on("192.0.2.2"))
	endpointIPs(ctx, t, a.Client, "192.0.2.1,192.0.2.2")

	services := func(s *apiservertest.Server) func(*corev1.Service) (*corev1.Service, error) {
		return func(svc *corev1.Service) (*corev1.Service, error) {
			return s.Client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
		}
	}
	created, err := services(a)(newService("one", "10.0.0.20"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = services(b)(newService("two", "10.0.0.20"))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "failed to allocate IP 10.0.0.20: provided IP is already allocated") {
		t.Fatalf("second server, same cluster IP: %v", err)
	}
	seen := map[string]string{"10.0.0.1": "kubernetes", "10.0.0.20": "one"}
	for i := 0; i < 10; i++ {
		s := []*apiservertest.Server{a, b}[i%2]
		svc, err := services(s)(newService(fmt.Sprintf("s%d", i), ""))
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := seen[svc.Spec.ClusterIP]; dup {
			t.Fatalf("%s got %s, already %s's", svc.Name, svc.Spec.ClusterIP, prev)
		}
		seen[svc.Spec.ClusterIP] = svc.Name
	}
	if err := a.Client.CoreV1().Services("default").Delete(ctx, created.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := services(b)(newService("two", "10.0.0.20")); err != nil {
		t.Fatalf("cluster IP of a deleted Service: %v", err)
	}

	b.Stop()
	endpointIPs(ctx, t, a.Client, "192.0.2.1")
}
