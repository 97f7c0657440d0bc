// Command fakenode runs one or more fake nodes (package test/fakenode)
// against the cluster of a kubeconfig: each registers its Node, renews its
// Lease and takes the pods bound to it to completion, either with a fixed
// exit code after a fixed time (benchmarks) or, with --exec, by running
// each container's command as a local process (upstream e2e specs).
//
//	go run ./hack/fakenode --kubeconfig .cronplane/admin.kubeconfig --nodes node-0,node-1 --exec
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/test/fakenode"
)

func main() {
	def := fakenode.DefaultConfig("")
	var (
		kubeconfig  = flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "the cluster's kubeconfig; its user must be able to write nodes, leases and pods' status")
		nodes       = flag.String("nodes", "", "comma-separated names of the nodes to run")
		count       = flag.Int("count", 1, "without --nodes, how many nodes to run, named <prefix>0, <prefix>1, …")
		prefix      = flag.String("prefix", "fakenode-", "name prefix of the nodes --count makes")
		cpu         = flag.String("cpu", def.CPU.String(), "each node's CPU capacity")
		memory      = flag.String("memory", def.Memory.String(), "each node's memory capacity")
		pods        = flag.Int64("pods", def.Pods, "each node's pod capacity")
		kubeletPort = flag.Int("kubelet-port", 0, "status.daemonEndpoints.kubeletEndpoint.Port the nodes report")
		exitCode    = flag.Int("exit-code", 0, "without --exec, the exit code of every container")
		runDuration = flag.Duration("run-duration", 0, "without --exec, how long every container runs")
		execMode    = flag.Bool("exec", false, "run each container's command and args as a local process (busybox applets when busybox is installed); runs the pods' commands on this host")
		dir         = flag.String("root-dir", "/tmp/fakenode", "where the nodes keep a directory per pod (work directory, emptyDir volumes, container logs)")
		backoff     = flag.Duration("restart-backoff", def.RestartBackoff, "first delay before a container is restarted again, doubled after each restart")
		maxBackoff  = flag.Duration("max-restart-backoff", def.MaxRestartBackoff, "longest delay before a container is restarted")
		lease       = flag.Duration("lease-duration", def.LeaseDuration, "the nodes' Lease duration; renewed every quarter of it")
		report      = flag.Duration("node-status-report-frequency", def.StatusReport, "how often a node writes its status when nothing changed")
		progress    = flag.Duration("progress", 10*time.Second, "how often to log the pods started and finished (0: never)")
	)
	klog.InitFlags(nil)
	flag.Parse()

	names := splitNames(*nodes)
	if len(names) == 0 {
		for i := 0; i < *count; i++ {
			names = append(names, fmt.Sprintf("%s%d", *prefix, i))
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.Fatalf("kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	cfg.UserAgent = "kubelet/" + fakenode.KubeletVersion + " (fakenode)"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		klog.Fatalf("client: %v", err)
	}
	base := fakenode.Config{
		CPU: resource.MustParse(*cpu), Memory: resource.MustParse(*memory), Pods: *pods,
		KubeletPort: int32(*kubeletPort), RestartBackoff: *backoff, MaxRestartBackoff: *maxBackoff,
		LeaseDuration: *lease, StatusReport: *report,
		Runner: fakenode.Fixed{ExitCode: int32(*exitCode), Duration: *runDuration},
	}
	if *execMode {
		e := fakenode.NewExec(client)
		if e.Busybox == "" {
			klog.Warning("busybox is not installed: commands run with the host's programs and shell")
		}
		base.Runner = e
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var running []*fakenode.Node
	var wg sync.WaitGroup
	for _, name := range names {
		c := base
		c.Name, c.Dir = name, *dir+"/"+name
		n := fakenode.New(client, c)
		running = append(running, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.Run(ctx); err != nil && ctx.Err() == nil {
				klog.ErrorS(err, "Node stopped", "node", n.Name())
				stop()
			}
		}()
	}
	klog.InfoS("Fake nodes starting", "nodes", names, "exec", *execMode)
	if *progress > 0 {
		go logProgress(ctx, running, *progress)
	}
	wg.Wait()
}

func splitNames(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

func logProgress(ctx context.Context, nodes []*fakenode.Node, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var last fakenode.Stats
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var sum fakenode.Stats
		for _, n := range nodes {
			s := n.Stats()
			sum.Started += s.Started
			sum.Succeeded += s.Succeeded
			sum.Failed += s.Failed
		}
		if sum != last {
			klog.InfoS("Pods", "started", sum.Started, "succeeded", sum.Succeeded, "failed", sum.Failed)
			last = sum
		}
	}
}
