//go:build e2e

package e2e

import (
	"context"
	"net"
	"sort"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Each apiserver, bound to every interface, advertises its own address on
// the cluster network: the kubernetes Endpoints list both, on the secure
// port, as kube's lease reconciler keeps them.
func kubernetesServiceEndpointsListBothApiservers(t *testing.T) {
	logsOnFailure(t)
	ctx := context.Background()
	c := client(t, "apiserver-0")
	var got []string
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		got = nil
		if ep, err := c.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err == nil {
			for _, ss := range ep.Subsets {
				for _, a := range ss.Addresses {
					for _, p := range ss.Ports {
						got = append(got, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
					}
				}
			}
		}
		if len(got) == 2 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	sort.Strings(got)
	if len(got) != 2 {
		t.Fatalf("kubernetes Endpoints %v, want both apiservers", got)
	}
	for _, hp := range got {
		host, port, _ := net.SplitHostPort(hp)
		if ip := net.ParseIP(host); ip == nil || ip.IsLoopback() || port != "6443" {
			t.Errorf("kubernetes Endpoints %v: want two non-loopback addresses on port 6443", got)
		}
	}
	svc, err := c.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || svc.Spec.ClusterIP == "" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 {
		t.Fatalf("kubernetes Service: %v %+v", err, svc)
	}
	t.Logf("kubernetes Service %s:443 → %v", svc.Spec.ClusterIP, got)
}
