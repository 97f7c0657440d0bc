package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// buildCommand builds cmd/<name> into a directory of the test's.
func buildCommand(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	out, err := exec.Command("go", "build", "-o", bin, "github.com/cronplane/cronplane/cmd/"+name).CombinedOutput()
	if err != nil {
		t.Fatalf("building %s: %v\n%s", name, err, out)
	}
	return bin
}

// process is a binary running for a test, its output kept.
type process struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	output bytes.Buffer
	lines  chan string
	exited chan struct{}
	err    error
}

func (p *process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.Write(b)
}

func (p *process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.String()
}

// startProcess runs bin; the test kills it if it is still running at the
// end.
func startProcess(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), lines: make(chan string, 1000), exited: make(chan struct{})}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout = p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(p, sc.Text())
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(bin), p.Output())
		}
	})
	return p
}

// waitLine waits for a line of the process's standard error matching re.
func (p *process) waitLine(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l := <-p.lines:
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-p.exited:
			t.Fatalf("%s exited: %v", p.cmd.Path, p.err)
		case <-timeout:
			t.Fatalf("%s never printed %s", p.cmd.Path, re)
		}
	}
}

// stop sends SIGTERM and waits for the exit, at most limit; it returns
// how long the process took.
func (p *process) stop(t *testing.T, limit time.Duration) time.Duration {
	t.Helper()
	begin := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(limit):
		t.Fatalf("%s still running %s after SIGTERM", p.cmd.Path, limit)
	}
	if p.err != nil {
		t.Fatalf("%s exited with %v after SIGTERM", p.cmd.Path, p.err)
	}
	return time.Since(begin)
}

// readyAt matches the ready line in the text and the json log formats.
var readyAt = regexp.MustCompile(`"apiserver ready".*?"?url"?[=:]"(https://[^"]+)"`)

// startAPIServer runs bin on dataDir and returns an admin configuration
// once it is ready.
func startAPIServer(t *testing.T, bin, dataDir string, args ...string) (*process, *rest.Config) {
	t.Helper()
	p := startProcess(t, bin, append([]string{"--data-dir", dataDir, "--secure-port", "0"}, args...)...)
	p.waitLine(t, readyAt)
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	client := kubernetes.NewForConfigOrDie(cfg)
	waitFor(t, "the apiserver to be ready", func() (bool, error) {
		var code int
		client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(context.Background()).StatusCode(&code)
		return code == http.StatusOK, nil
	})
	return p, cfg
}

// On SIGTERM the apiserver fails /readyz at once, serves on for
// --shutdown-delay-duration, then finishes the requests in flight, ends
// its watches cleanly and exits 0: every write it acknowledged is in etcd.
func TestAPIServer_GracefulShutdownOnSIGTERM(t *testing.T) {
	bin := buildCommand(t, "apiserver")
	for _, tc := range []struct {
		name         string
		delay, grace time.Duration
	}{
		{"watches ended at once", 2 * time.Second, 0},
		{"watches ended over a grace period", time.Second, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			p, cfg := startAPIServer(t, bin, dataDir,
				"--shutdown-delay-duration", tc.delay.String(), "--shutdown-watch-termination-grace-period", tc.grace.String())
			client := kubernetes.NewForConfigOrDie(cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()

			// A watch through client-go, and one read raw, to see how its
			// stream ends.
			cw, err := client.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rawEnd := rawWatch(t, cfg, "/api/v1/namespaces/default/configmaps?watch=true")

			// Writers, until the server is gone.
			var mu sync.Mutex
			var acked []string
			var wg sync.WaitGroup
			writeCtx, stopWriting := context.WithCancel(ctx)
			defer stopWriting()
			for g := 0; g < 4; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					for i := 0; writeCtx.Err() == nil; i++ {
						name := fmt.Sprintf("w%d-%d", g, i)
						_, err := client.CoreV1().ConfigMaps("default").Create(writeCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
						if err == nil {
							mu.Lock()
							acked = append(acked, name)
							mu.Unlock()
						}
					}
				}(g)
			}
			// /readyz, polled through the shutdown.
			type probe struct {
				at   time.Time
				code int
				body string
			}
			var probes []probe
			probeDone := make(chan struct{})
			go func() {
				defer close(probeDone)
				for writeCtx.Err() == nil {
					var code int
					body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(writeCtx).StatusCode(&code).Raw()
					if err != nil && code == 0 {
						body = []byte(err.Error())
					}
					mu.Lock()
					probes = append(probes, probe{time.Now(), code, string(body)})
					mu.Unlock()
					time.Sleep(50 * time.Millisecond)
				}
			}()
			time.Sleep(time.Second)

			sigterm := time.Now()
			took := p.stop(t, tc.delay+tc.grace+15*time.Second)
			stopWriting()
			wg.Wait()
			<-probeDone
			if took < tc.delay {
				t.Errorf("exited %s after SIGTERM, before the %s delay", took, tc.delay)
			}

			// /readyz failed on its shutdown check during the delay.
			failedReady := false
			for _, pr := range probes {
				if pr.at.After(sigterm) && pr.at.Before(sigterm.Add(tc.delay)) {
					if pr.code == 500 && strings.Contains(pr.body, "[-]shutdown failed: reason withheld") && strings.Contains(pr.body, "[+]etcd ok") {
						failedReady = true
					} else if pr.code == 200 && pr.at.After(sigterm.Add(200*time.Millisecond)) {
						t.Errorf("/readyz passed %s after SIGTERM", pr.at.Sub(sigterm))
					}
				}
			}
			if !failedReady {
				t.Errorf("/readyz never failed on its shutdown check during the delay: %+v", probes)
			}

			// The watches ended cleanly: client-go's without an error
			// event, the raw stream at its proper end.
			sawEvents := 0
			for ev := range cw.ResultChan() {
				if ev.Type == watch.Error {
					t.Errorf("watch error event: %+v", ev.Object)
				}
				sawEvents++
			}
			if sawEvents == 0 {
				t.Error("the watch saw no writes")
			}
			select {
			case err := <-rawEnd:
				if err != nil {
					t.Errorf("the raw watch stream ended with %v, not at its end", err)
				}
			case <-time.After(10 * time.Second):
				t.Error("the raw watch did not end")
			}

			// Every acknowledged write is in etcd: the restarted server
			// lists them all.
			if len(acked) == 0 {
				t.Fatal("no write acknowledged")
			}
			p2, cfg2 := startAPIServer(t, bin, dataDir)
			list, err := kubernetes.NewForConfigOrDie(cfg2).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			stored := map[string]bool{}
			for _, cm := range list.Items {
				stored[cm.Name] = true
			}
			for _, name := range acked {
				if !stored[name] {
					t.Errorf("acknowledged write %s lost", name)
				}
			}
			t.Logf("%d writes acknowledged, %d stored; exited %s after SIGTERM", len(acked), len(list.Items), took)
			p2.stop(t, 15*time.Second)
		})
	}
}

// rawWatch opens a watch over HTTP and returns how its stream ended: nil
// at its proper end (the final chunk, or the end of the HTTP/2 stream),
// else the read error.
func rawWatch(t *testing.T, cfg *rest.Config, path string) <-chan error {
	t.Helper()
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, cfg.Host+path, nil)
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("raw watch: %v", err)
	}
	end := make(chan error, 1)
	go func() {
		defer resp.Body.Close()
		_, err := io.Copy(io.Discard, resp.Body)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		end <- err
	}()
	return end
}

// The controller-manager gives its Lease up on SIGTERM: the other
// instance takes over at once, not after the lease duration.
func TestControllerManager_ReleasesItsLeaseOnSIGTERM(t *testing.T) {
	bin := buildCommand(t, "controller-manager")
	const leaseName = "release-on-sigterm"
	args := []string{"--kubeconfig", srv.KubeconfigPath, "--secure-port", "0", "--leader-elect",
		"--leader-elect-resource-name", leaseName, "--leader-elect-lease-duration", "60s",
		"--leader-elect-renew-deadline", "40s", "--leader-elect-retry-period", "2s"}
	holder := func() string {
		l, err := srv.Client.CoordinationV1().Leases("kube-system").Get(context.Background(), leaseName, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	a := startProcess(t, bin, args...)
	var first string
	waitFor(t, "the first instance to lead", func() (bool, error) {
		first = holder()
		return first != "", nil
	})
	b := startProcess(t, bin, args...)
	// b tries and finds the lease held.
	time.Sleep(2 * time.Second)
	if h := holder(); h != first {
		t.Fatalf("leader changed to %s before SIGTERM", h)
	}
	begin := time.Now()
	a.stop(t, 20*time.Second)
	var second string
	waitFor(t, "the second instance to take over", func() (bool, error) {
		second = holder()
		return second != "" && second != first, nil
	})
	took := time.Since(begin)
	if took > 10*time.Second {
		t.Fatalf("takeover took %s: the lease was not released (its duration is 60s)", took)
	}
	t.Logf("the second instance took over %s after SIGTERM to the first", took)
	// A SIGTERM that cancels a renewal in flight (client-go renews at once
	// after acquiring, then every retry period) can leave client-go's
	// release with a stale resourceVersion, and the lease held until it
	// expires. Stop b between renewals, which a long period leaves room for.
	time.Sleep(time.Second)
	b.stop(t, 20*time.Second)
	if h := holder(); h != "" {
		t.Fatalf("the lease is still held by %s after the last instance stopped", h)
	}
}
