package apiserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kubectl apply --prune without --prune-allowlist maps every kind of
// kubectl's default list (Pods, Deployments, Ingresses, PersistentVolumes,
// …) before it prunes: all must be discoverable.
func TestKubectl_PruneWithTheDefaultAllowlist(t *testing.T) {
	ns := "prune-defaults"
	mustKubectl(t, "create", "namespace", ns)
	defer mustKubectl(t, "delete", "namespace", ns, "--wait=false")
	dir := t.TempDir()
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", labels: {app: x}}\ndata: {a: \"1\"}\n"
	}
	both, one := filepath.Join(dir, "both.yaml"), filepath.Join(dir, "one.yaml")
	if err := os.WriteFile(both, []byte(cm("keep")+"---\n"+cm("gone")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(one, []byte(cm("keep")), 0o600); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, "apply", "-n", ns, "-f", both)
	out := mustKubectl(t, "apply", "-n", ns, "--prune", "-l", "app=x", "-f", one)
	if !strings.Contains(out, "configmap/keep unchanged\n") || !strings.Contains(out, "configmap/gone pruned\n") {
		t.Fatalf("apply --prune:\n%s", out)
	}
	if out := mustKubectl(t, "get", "configmaps", "-n", ns, "-l", "app=x", "-o", "name"); out != "configmap/keep\n" {
		t.Fatalf("left after the prune:\n%s", out)
	}
	// The kinds cronplane does not run read as empty and refuse writes.
	if out := mustKubectl(t, "get", "pods,deployments,ingresses", "-n", ns); !strings.Contains(out, "No resources found") {
		t.Fatalf("get pods,deployments,ingresses:\n%s", out)
	}
	if out, err := kubectl(t, "create", "deployment", "web", "--image=nginx", "-n", ns); err == nil || !strings.Contains(out, "the server does not allow this method on the requested resource") {
		t.Fatalf("create deployment: %v\n%s", err, out)
	}
}
