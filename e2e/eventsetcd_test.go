//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// etcdClient reaches a member of the internal etcd network from the host,
// at its address on that network, with the apiservers' client
// certificate; the member's certificate names its service.
func etcdClient(t *testing.T, service string) *clientv3.Client {
	t.Helper()
	ip := docker(t, "inspect", "-f", "{{range $n, $e := .NetworkSettings.Networks}}{{if eq $n \""+composeProject()+"_etcd\"}}{{$e.IPAddress}}{{end}}{{end}}", container(t, service))
	if ip == "" {
		t.Fatalf("%s has no address on the etcd network", service)
	}
	pki := filepath.Join(repoRoot, ".cluster", "pki")
	cfg, err := transport.TLSInfo{CertFile: filepath.Join(pki, "etcd-client.crt"), KeyFile: filepath.Join(pki, "etcd-client.key"),
		TrustedCAFile: filepath.Join(pki, "ca.crt")}.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.Clone()
	cfg.ServerName = service
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{"https://" + ip + ":2379"}, DialTimeout: 10 * time.Second, TLS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func composeProject() string {
	for i, a := range composeCmd {
		if a == "-p" && i+1 < len(composeCmd) {
			return composeCmd[i+1]
		}
	}
	return "cronplane"
}

// TestEventsEtcd_EventsLandOnEtcdEvents: the apiservers'
// --etcd-servers-overrides=/events#https://etcd-events:2379 stores an
// Event written through the load balancer in etcd-events and not in the
// main cluster; without etcd-events /readyz fails on etcd-override-0 while
// other writes go on.
func TestEventsEtcd_EventsLandOnEtcdEvents(t *testing.T) {
	restartOnExit(t, "etcd-events")
	logsOnFailure(t)
	ctx := context.Background()
	c := client(t, "apiserver-lb")
	namespace(t, c, "e2e-events")
	start := time.Now()
	ev, err := c.CoreV1().Events("e2e-events").Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "landed"},
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "e2e-events", Name: "x"},
		Reason:         "E2E", Message: "on etcd-events", Type: corev1.EventTypeNormal,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().ConfigMaps("e2e-events").Create(ctx, configMap("main", "x"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	events, main := etcdClient(t, "etcd-events"), etcdClient(t, "etcd-0")
	for _, tc := range []struct {
		key      string
		onEvents bool
	}{
		{"/registry/events/e2e-events/landed", true},
		{"/registry/configmaps/e2e-events/main", false},
	} {
		inEvents, err := events.Get(ctx, tc.key)
		if err != nil {
			t.Fatal(err)
		}
		inMain, err := main.Get(ctx, tc.key)
		if err != nil {
			t.Fatal(err)
		}
		if (len(inEvents.Kvs) == 1) != tc.onEvents || (len(inMain.Kvs) == 1) == tc.onEvents {
			t.Fatalf("%s: %d on etcd-events, %d on the main cluster; want it on etcd-events: %v", tc.key, len(inEvents.Kvs), len(inMain.Kvs), tc.onEvents)
		}
	}
	t.Logf("Event %s (resourceVersion %s, a revision of etcd-events) on etcd-events, not on etcd-0..2; ConfigMap the reverse; written and read back in %v",
		ev.Name, ev.ResourceVersion, time.Since(start).Round(time.Millisecond))
	for _, ctxName := range []string{"apiserver-0", "apiserver-1"} {
		if ok, out := readyz(ctxName); !ok || !strings.Contains(out, "[+]etcd-override-0 ok") || !strings.Contains(out, "[+]etcd-override-readiness-0 ok") {
			t.Fatalf("%s /readyz: %v %s", ctxName, ok, out)
		}
	}

	serviceT(t, "stop", "etcd-events")
	notReady := eventually(t, 60*time.Second, "/readyz of apiserver-0 failing on etcd-override-0", func() bool {
		ok, out := readyz("apiserver-0")
		return !ok && strings.Contains(out, "[-]etcd-override-0 failed") && strings.Contains(out, "[+]etcd ok")
	})
	t.Logf("etcd-events stopped: /readyz of apiserver-0 failed on etcd-override-0 after %v", notReady.Round(time.Millisecond))
	direct := client(t, "apiserver-0")
	if _, err := direct.CoreV1().ConfigMaps("e2e-events").Create(ctx, configMap("goes-on", "x"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a ConfigMap write with etcd-events stopped: %v", err)
	}
	serviceT(t, "start", "etcd-events")
	back := eventually(t, 60*time.Second, "an Event write after etcd-events restarted", func() bool {
		_, err := c.CoreV1().Events("e2e-events").Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{GenerateName: "after-"},
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "e2e-events", Name: "x"},
			Reason:         "E2E", Type: corev1.EventTypeNormal,
		}, metav1.CreateOptions{})
		return err == nil
	})
	t.Logf("etcd-events restarted: an Event written after %v", back.Round(time.Millisecond))
}
