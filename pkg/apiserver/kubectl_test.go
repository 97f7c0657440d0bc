package apiserver_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// kubectl runs the real kubectl against the test server.
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed: skipping the kubectl end-to-end test")
	}
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(c, path, append([]string{"--kubeconfig", srv.KubeconfigPath}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := kubectl(t, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func TestKubectl_CreateGetYAMLAPIResourcesDelete(t *testing.T) {
	ns := namespace(t)
	mustKubectl(t, "-n", ns, "create", "cronjob", "hello", "--image=busybox", "--schedule=*/5 * * * *", "--", "echo", "hi")

	out := mustKubectl(t, "-n", ns, "get", "cronjobs")
	if !strings.HasPrefix(out, "NAME    SCHEDULE      SUSPEND   ACTIVE   LAST SCHEDULE   AGE\nhello   */5 * * * *   False     0        <none>") {
		t.Fatalf("get cronjobs:\n%s", out)
	}
	out = mustKubectl(t, "-n", ns, "get", "cronjobs", "-o", "wide")
	if !strings.Contains(out, "CONTAINERS   IMAGES    SELECTOR") || !strings.Contains(out, "hello        busybox   <none>") {
		t.Fatalf("get -o wide:\n%s", out)
	}
	out = mustKubectl(t, "-n", ns, "get", "cj", "hello", "-o", "yaml")
	for _, want := range []string{"kind: CronJob", "schedule: '*/5 * * * *'", "concurrencyPolicy: Allow", "image: busybox", "uid:", "resourceVersion:"} {
		if !strings.Contains(out, want) {
			t.Errorf("-o yaml lacks %q:\n%s", want, out)
		}
	}
	out = mustKubectl(t, "api-resources")
	for _, want := range []string{"cronjobs", "cj", "batch/v1", "namespaces", "leases", "events.k8s.io/v1"} {
		if !strings.Contains(out, want) {
			t.Errorf("api-resources lacks %q:\n%s", want, out)
		}
	}
	mustKubectl(t, "-n", ns, "delete", "cronjob", "hello")
	if out, err := kubectl(t, "-n", ns, "get", "cronjob", "hello"); err == nil || !strings.Contains(out, `cronjobs.batch "hello" not found`) {
		t.Fatalf("after delete: %v\n%s", err, out)
	}
}

func writeManifest(t *testing.T, schedule string) string {
	t.Helper()
	path := t.TempDir() + "/cj.yaml"
	manifest := `apiVersion: batch/v1
kind: CronJob
metadata:
  name: applied
spec:
  schedule: "` + schedule + `"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: c
            image: busybox
`
	if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestKubectl_ServerSideApplyConflictForceAndDiff(t *testing.T) {
	ns := namespace(t)
	mustKubectl(t, "-n", ns, "apply", "--server-side", "--field-manager=team-a", "-f", writeManifest(t, "@hourly"))
	changed := writeManifest(t, "@daily")
	out, err := kubectl(t, "-n", ns, "apply", "--server-side", "--field-manager=team-b", "-f", changed)
	if err == nil || !strings.Contains(out, "conflict") || !strings.Contains(out, ".spec.schedule") {
		t.Fatalf("want a conflict on .spec.schedule: %v\n%s", err, out)
	}
	out, err = kubectl(t, "-n", ns, "diff", "--server-side", "--field-manager=team-b", "--force-conflicts", "-f", changed)
	if !strings.Contains(out, "@daily") {
		t.Fatalf("kubectl diff: %v\n%s", err, out)
	}
	mustKubectl(t, "-n", ns, "apply", "--server-side", "--field-manager=team-b", "--force-conflicts", "-f", changed)
	if out := mustKubectl(t, "-n", ns, "get", "cj", "applied", "-o", "jsonpath={.spec.schedule}"); out != "@daily" {
		t.Fatalf("schedule %q after forced apply", out)
	}
	for _, p := range []struct{ typ, patch, want string }{
		{"merge", `{"spec":{"schedule":"@weekly"}}`, "@weekly"},
		{"strategic", `{"spec":{"schedule":"@monthly"}}`, "@monthly"},
		{"json", `[{"op":"replace","path":"/spec/schedule","value":"@yearly"}]`, "@yearly"},
	} {
		mustKubectl(t, "-n", ns, "patch", "cj", "applied", "--type="+p.typ, "-p", p.patch)
		if out := mustKubectl(t, "-n", ns, "get", "cj", "applied", "-o", "jsonpath={.spec.schedule}"); out != p.want {
			t.Fatalf("%s patch: schedule %q", p.typ, out)
		}
	}
}

func TestKubectl_ExplainCreateValidationAndClientSideApply(t *testing.T) {
	ns := namespace(t)
	out := mustKubectl(t, "explain", "cronjob.spec.schedule")
	if !strings.Contains(out, "FIELD: schedule <string>") || !strings.Contains(out, "Cron format") {
		t.Fatalf("explain:\n%s", out)
	}
	bad := strings.Replace(readFile(t, writeManifest(t, "@hourly")), "  schedule:", "  bogus: 1\n  schedule:", 1)
	badPath := t.TempDir() + "/bad.yaml"
	if err := os.WriteFile(badPath, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := kubectl(t, "-n", ns, "create", "-f", badPath); err == nil || !strings.Contains(out, `unknown field "spec.bogus"`) {
		t.Fatalf("create -f with an unknown field: %v\n%s", err, out)
	}
	mustKubectl(t, "-n", ns, "create", "-f", badPath, "--validate=false")
	// A v1 List is validated client-side against /openapi/v2 in protobuf.
	list := `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"in-a-list"}}]}`
	listPath := t.TempDir() + "/list.json"
	if err := os.WriteFile(listPath, []byte(list), 0o600); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, "-n", ns, "create", "-f", listPath)
	mustKubectl(t, "-n", ns, "delete", "cj", "applied")
	mustKubectl(t, "-n", ns, "apply", "-f", writeManifest(t, "@hourly"))
	mustKubectl(t, "-n", ns, "apply", "-f", writeManifest(t, "@daily"))
	if out := mustKubectl(t, "-n", ns, "get", "cj", "applied", "-o", "jsonpath={.spec.schedule}"); out != "@daily" {
		t.Fatalf("schedule %q after the second apply", out)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
