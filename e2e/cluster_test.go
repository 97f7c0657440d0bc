//go:build e2e

// Package e2e breaks the docker compose cluster (docker-compose.yaml) and
// checks what users of the API see: TestMain brings a fresh cluster up,
// every test measures and logs its figures, and the cluster always goes
// down at the end. Run it with `make e2e`.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The fault timings the suite gives the cluster: short, so that each case
// is over in seconds; the compose defaults stay what users get.
var suiteEnv = map[string]string{
	"REQUEST_TIMEOUT": "10s",
	"LEASE_DURATION":  "6s",
	"RENEW_DEADLINE":  "4s",
	"RETRY_PERIOD":    "1s",
	// The node lifecycle: agents renew their Lease every 2 s and check
	// their status as often, a node silent for 16 s is Unknown, and its
	// pods are evicted 8 s later.
	"NODE_LEASE_DURATION_SECONDS":    "8",
	"NODE_STATUS_UPDATE_FREQUENCY":   "2s",
	"NODE_MONITOR_PERIOD":            "1s",
	"NODE_MONITOR_GRACE_PERIOD":      "16s",
	"NOT_READY_TOLERATION_SECONDS":   "8",
	"UNREACHABLE_TOLERATION_SECONDS": "8",
}

const requestTimeout = 10 * time.Second

var (
	composeCmd []string
	kubeconfig string
	repoRoot   string
)

func TestMain(m *testing.M) {
	composeCmd = strings.Fields(os.Getenv("COMPOSE"))
	clusterDir := os.Getenv("CLUSTER_DIR")
	if len(composeCmd) == 0 || clusterDir == "" {
		fmt.Println("COMPOSE and CLUSTER_DIR are unset: run the suite with `make e2e`")
		os.Exit(1)
	}
	kubeconfig = filepath.Join(clusterDir, "admin.kubeconfig")
	repoRoot = filepath.Dir(clusterDir)
	for k, v := range suiteEnv {
		os.Setenv(k, v)
	}
	os.Setenv("KUBECONFIG", kubeconfig)
	code := run(m)
	if out, err := removePods(); err != nil {
		fmt.Printf("removing the pods' containers: %v\n%s\n", err, out)
	}
	if out, err := composeDown(); err != nil {
		fmt.Printf("compose down: %v\n%s\n", err, out)
	}
	os.Exit(code)
}

func run(m *testing.M) int {
	// Fresh: whatever an earlier run left goes, volumes and the pods'
	// containers included.
	if out, err := removePods(); err != nil {
		fmt.Printf("removing the pods' containers: %v\n%s\n", err, out)
	}
	if out, err := composeDown(); err != nil {
		// What is left is reused by up, which fails if it cannot be.
		fmt.Printf("compose down: %v\n%s\ngoing on with what is left\n", err, out)
	}
	start := time.Now()
	if out, err := compose("up", "-d"); err != nil {
		fmt.Printf("compose up: %v\n%s\n", err, out)
		return 1
	}
	for _, c := range []string{"apiserver-0", "apiserver-1", "apiserver-lb"} {
		if err := waitReady(c, 180*time.Second); err != nil {
			fmt.Println(err)
			out, _ := compose("logs", "--tail=100")
			fmt.Println(out)
			return 1
		}
	}
	fmt.Printf("cluster up and ready in %v\n", time.Since(start).Round(time.Millisecond))
	return m.Run()
}

// composeDown removes the cluster. Docker 20.10 can keep counting an
// endpoint of a container already gone on a network, and then refuses to
// remove it, which would fail every later run on that engine: such
// endpoints are disconnected by force and down is tried once more. When
// the engine names no container on the network (the stale endpoint is in
// its memory only), the network stays, and the next up reuses it; down
// stops at the networks, before the volumes, so those are removed here:
// else the next cluster would start on this one's etcd data.
func composeDown() (string, error) {
	out, err := compose("down", "-v", "--remove-orphans")
	if err == nil || !strings.Contains(out, "active endpoints") {
		return out, err
	}
	if dout, derr := disconnectEndpoints(); derr != nil {
		return out + dout, derr
	}
	out, err = compose("down", "-v", "--remove-orphans")
	if err == nil || !strings.Contains(out, "active endpoints") {
		return out, err
	}
	vout, verr := removeVolumes()
	if verr != nil {
		return out + vout, verr
	}
	fmt.Printf("a network of project %s keeps an endpoint no container holds: it stays, its volumes are removed\n%s%s", projectName(), out, vout)
	return out + vout, nil
}

// removeVolumes removes the compose project's volumes.
func removeVolumes() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	vols, err := execOut(ctx, "docker", "volume", "ls", "-q", "--filter", "label=com.docker.compose.project="+projectName())
	if err != nil || len(strings.Fields(vols)) == 0 {
		return vols, err
	}
	return execOut(ctx, "docker", append([]string{"volume", "rm"}, strings.Fields(vols)...)...)
}

// disconnectEndpoints disconnects by force every endpoint on the compose
// project's networks; it runs once the project's containers are removed.
func disconnectEndpoints() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nets, err := execOut(ctx, "docker", "network", "ls", "-q", "--filter", "label=com.docker.compose.project="+projectName())
	if err != nil {
		return nets, err
	}
	var log strings.Builder
	for _, n := range strings.Fields(nets) {
		eps, err := execOut(ctx, "docker", "network", "inspect", "-f", `{{range $id, $c := .Containers}}{{$c.Name}} {{end}}`, n)
		if err != nil {
			return eps, err
		}
		for _, ep := range strings.Fields(eps) {
			out, err := execOut(ctx, "docker", "network", "disconnect", "-f", n, ep)
			fmt.Fprintf(&log, "disconnected %s from network %s: %v %s\n", ep, n, err, out)
		}
	}
	fmt.Print(log.String())
	return log.String(), nil
}

// projectName is the compose project of the Makefile's command, as compose
// derives it.
func projectName() string {
	for i, a := range composeCmd {
		if (a == "-p" || a == "--project-name") && i+1 < len(composeCmd) {
			return composeCmd[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--project-name="); ok {
			return v
		}
	}
	if p := os.Getenv("COMPOSE_PROJECT_NAME"); p != "" {
		return p
	}
	return filepath.Base(repoRoot)
}

// compose runs the compose command of the Makefile in the repository.
func compose(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, composeCmd[0], append(composeCmd[1:], args...)...)
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func docker(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// serviceContainers are the ids of services' containers, found by the
// labels compose gives them. The cases stop, start and find containers
// with the docker CLI, which answers in tens of milliseconds, as compose
// stop and start would (docker stop waits the same 10 s before SIGKILL):
// docker-compose v1, in Python, takes a second or more for each command
// on the loaded machine, and the suite runs dozens.
func serviceContainers(services ...string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var ids []string
	for _, s := range services {
		out, err := execOut(ctx, "docker", "ps", "-aq", "--filter", "label=com.docker.compose.project="+projectName(),
			"--filter", "label=com.docker.compose.service="+s)
		if err != nil {
			return nil, fmt.Errorf("containers of %s: %v %s", s, err, out)
		}
		if len(strings.Fields(out)) != 1 {
			return nil, fmt.Errorf("containers of %s: %q, want one", s, out)
		}
		ids = append(ids, strings.TrimSpace(out))
	}
	return ids, nil
}

// serviceT stops or starts services' containers ("stop", "start").
func serviceT(t *testing.T, action string, services ...string) {
	t.Helper()
	ids, err := serviceContainers(services...)
	if err != nil {
		t.Fatal(err)
	}
	docker(t, append([]string{action}, ids...)...)
}

// container is the id of a service's container, whichever compose named it.
func container(t *testing.T, service string) string {
	t.Helper()
	ids, err := serviceContainers(service)
	if err != nil {
		t.Fatal(err)
	}
	return ids[0]
}

// restartOnExit starts services again when the test ends, whatever its
// outcome, and waits for both apiservers: a test that fails half-way
// through a fault leaves the cluster whole for the tests after it.
// docker start leaves running containers alone.
func restartOnExit(t *testing.T, services ...string) {
	t.Cleanup(func() {
		ids, err := serviceContainers(services...)
		if err == nil {
			var out string
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			out, err = execOut(ctx, "docker", append([]string{"start"}, ids...)...)
			cancel()
			if err != nil {
				err = fmt.Errorf("%v %s", err, out)
			}
		}
		if err != nil {
			t.Logf("starting %v again: %v", services, err)
		}
		for _, c := range []string{"apiserver-0", "apiserver-1"} {
			if err := waitReady(c, 120*time.Second); err != nil {
				t.Log(err)
			}
		}
	})
}

// logsOnFailure prints the cluster's recent logs when the test fails;
// called after restartOnExit, it prints them before the restart.
func logsOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := compose("logs", "--tail=80")
			t.Logf("cluster logs:\n%s", out)
		}
	})
}

func restConfig(t *testing.T, contextName string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: contextName}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	cfg.Timeout = 2 * requestTimeout
	return cfg
}

func client(t *testing.T, contextName string) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(restConfig(t, contextName))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// watchClient has no client-side timeout, which would cut its watches.
func watchClient(t *testing.T, contextName string) kubernetes.Interface {
	t.Helper()
	cfg := restConfig(t, contextName)
	cfg.Timeout = 0
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// readyz answers whether an apiserver is ready and its verbose report.
func readyz(contextName string) (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "kubectl", "--kubeconfig", kubeconfig, "--context", contextName,
		"get", "--raw", "/readyz?verbose").CombinedOutput()
	return err == nil, string(out)
}

func waitReady(contextName string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		ok, out := readyz(contextName)
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %v: %s", contextName, limit, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// eventually polls cond every interval until it holds or limit passes, and
// returns how long it took.
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(250 * time.Millisecond)
	}
	return time.Since(start)
}
