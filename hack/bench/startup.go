package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cronplane/cronplane/pkg/certs"
	kubeconfigfile "github.com/cronplane/cronplane/pkg/kubeconfig"
	"github.com/cronplane/cronplane/pkg/nodeagent/engine"
)

var (
	podStartup     = flag.Int("pod-startup", 100, "CronJobs on */1 firing in the same minute, whose pods two node agents run on the machine's Docker engine, measured from the scheduled minute to each container running (0 skips; skipped with a message when no engine answers)")
	podStartupWait = flag.Duration("pod-startup-timeout", 3*time.Minute, "how long after the minute the pod startup scenario waits for every container to run; each sleeps a minute longer, so that all run at once when the agents' RSS is read")
	podStartupDir  = flag.String("pod-startup-dir", "", "parent of the node agents' --root-dir (default: the benchmark's temporary directory)")
	podStartupArgs = flag.String("node-agent-args", "", "more flags, space-separated, for the node agents of the pod startup scenario (e.g. --workers=8)")
	engineFloorN   = flag.Int("engine-floor", 100, "pod-like container pairs (a sandbox, then a container in its network namespace) the pod startup scenario creates and starts through the engine's API alone, for the engine's floor (0 skips)")
	engineFloorPar = flag.String("engine-floor-workers", "8,0", "comma-separated numbers of pairs the engine floor creates and starts at a time, each measured in turn (0: all at once)")
	agentBin       = flag.String("node-agent", "bin/node-agent", "node agent binary")
)

// The pod startup scenario's node names, and the labels of the engine
// floor's containers: the benchmark removes only containers carrying
// them.
var startupNodes = []string{"bench-node-0", "bench-node-1"}

const (
	floorLabel   = "io.cronplane.bench"
	floorValue   = "engine-floor"
	startupImage = "cronplane-bench/busybox:startup"
	startupNS    = "startup"
)

// podTrack is what the benchmark saw of one pod: when it was first seen,
// bound and with its container running, that container's startedAt as
// the status says it (whole seconds), and its node.
type podTrack struct {
	uid, job, node                   string
	created, bound, running, started time.Time
}

// podStartup starts a controller-manager (cronjob, job, scheduler and the
// controllers a pod needs) and two node-agent processes on the machine's
// Docker engine, creates -pod-startup CronJobs on */1 whose container
// sleeps, and measures from the scheduled minute to each Job, pod, bind
// and container running, with the engine's own times of each pod's
// sandbox and container, the agents' RSS idle and with their pods
// running, and the engine's floor for the same containers.
func (b *bench) podStartup() {
	ctx := context.Background()
	eng, err := engine.NewDocker("")
	check(err)
	infoCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = eng.Info(infoCtx)
	cancel()
	if err != nil {
		report("pod startup", "skipped: no Docker engine answers", "")
		return
	}
	if err := buildStartupImage(ctx, eng); err != nil {
		report("pod startup", "skipped: "+err.Error(), "")
		return
	}
	for _, n := range startupNodes {
		removeContainers(eng, map[string]string{"io.cronplane.node": n})
	}
	if *engineFloorN > 0 {
		for _, w := range strings.Split(*engineFloorPar, ",") {
			workers, err := strconv.Atoi(strings.TrimSpace(w))
			check(err)
			engineFloor(eng, *engineFloorN, workers)
		}
	}
	if *podStartup <= 0 {
		return
	}

	parent := *podStartupDir
	if parent == "" {
		parent = filepath.Dir(b.kubeconfig)
	}
	root, err := os.MkdirTemp(parent, "pod-startup-")
	check(err)
	defer os.RemoveAll(root)
	b.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"`+startupNS+`"}}`, 201)
	cm := exec.Command(*cmBin, "--kubeconfig", b.kubeconfig, "--controllers", "cronjob,job,serviceaccount,root-ca-cert-publisher,nodelifecycle,scheduler",
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", "0")
	cm.Stdout, cm.Stderr = io.Discard, io.Discard
	check(cm.Start())
	cmStopped := false
	stopCM := func() {
		if !cmStopped {
			cmStopped = true
			_ = cm.Process.Kill()
			_ = cm.Wait()
		}
	}
	defer stopCM()
	agents := b.startAgents(root)
	defer func() {
		stopAgents(agents)
		for _, n := range startupNodes {
			removeContainers(eng, map[string]string{"io.cronplane.node": n})
		}
	}()
	b.waitStartupReady(agents)

	n := *podStartup
	sleep := strconv.Itoa(int((*podStartupWait + time.Minute).Seconds()))
	// The minute measured is the next one, the CronJobs created 20 s
	// before it at least: created closer, they would fire at it unseen
	// by the controller's first pass, or miss it.
	minute := time.Now().Truncate(time.Minute).Add(time.Minute)
	if time.Until(minute) < 20*time.Second {
		time.Sleep(time.Until(minute))
		minute = minute.Add(time.Minute)
	}
	// Forbid: the minutes after skip while the pods sleep, so that one
	// minute's pods are measured alone.
	parallel(*clients, n, func(i int) {
		body := fmt.Sprintf(`{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"start-%03d"},"spec":{"schedule":"*/1 * * * *","concurrencyPolicy":"Forbid","jobTemplate":{"spec":{"backoffLimit":0,"template":{"spec":{"restartPolicy":"Never","terminationGracePeriodSeconds":1,"containers":[{"name":"c","image":"%s","command":["sleep","%s"]}]}}}}}}`, i, startupImage, sleep)
		b.do("POST", "/apis/batch/v1/namespaces/"+startupNS+"/cronjobs", body, 201)
	})
	if left := time.Until(minute); left < 5*time.Second {
		log.Printf("pod startup: the CronJobs were created only %s before the minute", left.Round(time.Millisecond))
	}
	deadline := minute.Add(*podStartupWait)
	watchCtx, stopWatches := context.WithDeadline(ctx, deadline)
	defer stopWatches()

	var mu sync.Mutex
	pods := map[string]*podTrack{}
	jobs := map[string]time.Time{}
	allRunning := make(chan struct{})
	running := 0
	go b.watchEach(watchCtx, "/apis/batch/v1/namespaces/"+startupNS+"/jobs", b.listRV("/apis/batch/v1/namespaces/"+startupNS+"/jobs"), func(data []byte) {
		var j struct {
			Metadata struct {
				Name        string            `json:"name"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if json.Unmarshal(data, &j) != nil {
			return
		}
		scheduled, err := time.Parse(time.RFC3339, j.Metadata.Annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"])
		if err != nil || !scheduled.Equal(minute) {
			return
		}
		now := time.Now()
		mu.Lock()
		if _, ok := jobs[j.Metadata.Name]; !ok {
			jobs[j.Metadata.Name] = now
		}
		mu.Unlock()
	})
	go b.watchEach(watchCtx, "/api/v1/namespaces/"+startupNS+"/pods", b.listRV("/api/v1/namespaces/"+startupNS+"/pods"), func(data []byte) {
		var p struct {
			Metadata struct {
				Name   string            `json:"name"`
				UID    string            `json:"uid"`
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				NodeName string `json:"nodeName"`
			} `json:"spec"`
			Status struct {
				ContainerStatuses []struct {
					State struct {
						Running *struct {
							StartedAt time.Time `json:"startedAt"`
						} `json:"running"`
					} `json:"state"`
				} `json:"containerStatuses"`
			} `json:"status"`
		}
		if json.Unmarshal(data, &p) != nil {
			return
		}
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		t := pods[p.Metadata.Name]
		if t == nil {
			t = &podTrack{uid: p.Metadata.UID, job: p.Metadata.Labels["job-name"], created: now}
			pods[p.Metadata.Name] = t
		}
		if t.bound.IsZero() && p.Spec.NodeName != "" {
			t.bound, t.node = now, p.Spec.NodeName
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Running != nil && t.running.IsZero() {
				t.running, t.started = now, s.State.Running.StartedAt
				if running++; running == n {
					close(allRunning)
				}
			}
		}
	})

	// Idle: the agents registered and synced, no pod yet.
	time.Sleep(time.Until(minute.Add(-2 * time.Second)))
	idle := make([]int64, len(agents))
	for i, a := range agents {
		idle[i] = rssOf(a.Process.Pid)
	}
	procs := append([]*exec.Cmd{cm}, agents...)
	cpuBefore := make([]float64, len(procs))
	for i, p := range procs {
		cpuBefore[i] = cpuOf([]int{p.Process.Pid})
	}
	serverCPU := cpuOf(b.pids)
	dockerd := pidOfDockerd()
	dockerCPU := cpuOf(dockerd)
	select {
	case <-allRunning:
	case <-watchCtx.Done():
	}
	elapsed := time.Since(minute)
	load, _ := os.ReadFile("/proc/loadavg")
	// Let the last status writes land before the memory is read.
	time.Sleep(2 * time.Second)
	busy := make([]int64, len(agents))
	for i, a := range agents {
		busy[i] = rssOf(a.Process.Pid)
	}
	cpu := make([]float64, len(procs))
	for i, p := range procs {
		cpu[i] = cpuOf([]int{p.Process.Pid}) - cpuBefore[i]
	}
	serverCPU, dockerCPU = cpuOf(b.pids)-serverCPU, cpuOf(dockerd)-dockerCPU
	// The pods running on, nothing to start: what keeping them costs.
	const steadyFor = 10 * time.Second
	agentPids := pidsOf(agents)
	steadyAgents, steadyDocker := cpuOf(agentPids), cpuOf(dockerd)
	time.Sleep(steadyFor)
	steadyAgents, steadyDocker = cpuOf(agentPids)-steadyAgents, cpuOf(dockerd)-steadyDocker
	stopCM()
	stopWatches()

	mu.Lock()
	var toJob, toPod, toBound, toRunning, toStarted []time.Duration
	perNode := map[string]int{}
	for _, at := range jobs {
		toJob = append(toJob, at.Sub(minute))
	}
	byUID := map[string]*podTrack{}
	for _, t := range pods {
		byUID[t.uid] = t
		if _, ok := jobs[t.job]; !ok {
			continue
		}
		toPod = append(toPod, t.created.Sub(minute))
		if !t.bound.IsZero() {
			toBound = append(toBound, t.bound.Sub(minute))
		}
		if !t.running.IsZero() {
			toRunning = append(toRunning, t.running.Sub(minute))
			toStarted = append(toStarted, t.started.Sub(minute))
			perNode[t.node]++
		}
	}
	mu.Unlock()
	stages := engineStages(ctx, eng, byUID, minute)

	report(fmt.Sprintf("pod startup: %d CronJobs on */1, 2 node agents: scheduled →", n), "", "")
	report("  Job created", fmt.Sprintf("%d, p50 %s p99 %s", len(toJob), pct(toJob, 50), pct(toJob, 99)), "")
	report("  pod created", fmt.Sprintf("%d, p50 %s p99 %s", len(toPod), pct(toPod, 50), pct(toPod, 99)), "")
	report("  pod bound", fmt.Sprintf("%d, p50 %s p99 %s", len(toBound), pct(toBound, 50), pct(toBound, 99)), "")
	report("  sandbox created (engine's time)", stages.describe(stages.sandboxCreated), "")
	report("  sandbox started (engine's time)", stages.describe(stages.sandboxStarted), "")
	report("  container created (engine's time)", stages.describe(stages.created), "")
	report("  container started (engine's time)", stages.describe(stages.started), "")
	report("  container running, seen in the pod's status", fmt.Sprintf("%d, p50 %s p99 %s", len(toRunning), pct(toRunning, 50), pct(toRunning, 99)), "target p99 <= 2s")
	report("  status startedAt (whole seconds, so up to 1 s early)", fmt.Sprintf("p50 %s p99 %s", pct(toStarted, 50), pct(toStarted, 99)), "")
	report("  all running after", elapsed.Round(time.Millisecond).String(), "")
	for i, node := range startupNodes {
		report(fmt.Sprintf("node agent %s RSS: idle / with %d pods running", node, perNode[node]),
			fmt.Sprintf("%s / %s", mib(idle[i]), mib(busy[i])), "")
	}
	report("CPU from the minute to all running: apiserver / controller-manager / agents / dockerd",
		fmt.Sprintf("%.1f s / %.1f s / %.1f s / %.1f s", serverCPU, cpu[0], sumFloats(cpu[1:]), dockerCPU), "")
	report("  load average then", strings.Join(strings.Fields(string(load))[:3], " "), "")
	report(fmt.Sprintf("CPU per second over %s with the pods running: agents / dockerd", steadyFor),
		fmt.Sprintf("%.0f ms / %.0f ms", 1000*steadyAgents/steadyFor.Seconds(), 1000*steadyDocker/steadyFor.Seconds()), "")
	record("pod startup: scheduled → container running p50", "ms", ms(pct(toRunning, 50)))
	record("pod startup: scheduled → container running p99", "ms", ms(pct(toRunning, 99)))
	record("pod startup: scheduled → pod bound p99", "ms", ms(pct(toBound, 99)))
	record("pod startup: node agent RSS idle", "MiB", float64(idle[0])/(1<<20))
	record("pod startup: node agent RSS with its pods running", "MiB", float64(busy[0])/(1<<20))
	record("pod startup: agents' CPU per second with the pods running", "ms", 1000*steadyAgents/steadyFor.Seconds())
	if len(toRunning) < n {
		log.Printf("pod startup: only %d of %d containers seen running within %s of the minute", len(toRunning), n, deadline.Sub(minute))
	}
}

func sumFloats(v []float64) float64 {
	s := 0.0
	for _, f := range v {
		s += f
	}
	return s
}

// buildStartupImage builds the pods' image, busybox FROM scratch, from
// the machine's static busybox (Debian's busybox-static), or tags the
// local busybox image.
func buildStartupImage(ctx context.Context, eng *engine.Docker) error {
	if bin, err := exec.LookPath("busybox"); err == nil {
		if out, err := exec.Command("file", "-L", bin).Output(); err == nil && strings.Contains(string(out), "statically linked") {
			dir, err := os.MkdirTemp("", "bench-busybox-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			data, err := os.ReadFile(bin)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, "busybox"), data, 0o755); err != nil {
				return err
			}
			dockerfile := "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\nENV PATH=/bin\n"
			if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
				return err
			}
			if out, err := exec.Command("docker", "build", "-q", "-t", startupImage, dir).CombinedOutput(); err != nil {
				return fmt.Errorf("building %s: %v: %s", startupImage, err, out)
			}
			return nil
		}
	}
	if _, err := eng.Image(ctx, "busybox"); err != nil {
		return fmt.Errorf("no static busybox (apt-get install busybox-static) nor busybox image (make images) for the pods")
	}
	if out, err := exec.Command("docker", "tag", "busybox", startupImage).CombinedOutput(); err != nil {
		return fmt.Errorf("tagging busybox: %v: %s", err, out)
	}
	return nil
}

// startAgents starts a node-agent process per startup node, with a
// client certificate for system:node:<name> signed by the apiserver's CA,
// its --root-dir under root and its log in root.
func (b *bench) startAgents(root string) []*exec.Cmd {
	caDir := filepath.Join(filepath.Dir(b.kubeconfig), "certs")
	ca, err := os.ReadFile(filepath.Join(caDir, "ca.crt"))
	check(err)
	var agents []*exec.Cmd
	for _, node := range startupNodes {
		f, err := certs.EnsureClient(caDir, "node-"+node, "system:node:"+node, []string{"system:nodes"})
		check(err)
		cert, err := os.ReadFile(f.CertFile)
		check(err)
		key, err := os.ReadFile(f.KeyFile)
		check(err)
		kc := filepath.Join(root, node+".kubeconfig")
		check(kubeconfigfile.Write(kc, kubeconfigfile.Config{Server: b.url, CAData: ca, ClientCertData: cert, ClientKeyData: key, UserName: "system:node:" + node}))
		logFile, err := os.Create(filepath.Join(root, node+".log"))
		check(err)
		args := []string{"--kubeconfig", kc, "--hostname-override", node, "--node-ip", "127.0.0.1", "--address", "127.0.0.1",
			"--port", strconv.Itoa(freePort()), "--root-dir", filepath.Join(root, node), "--pod-infra-container-image", startupImage}
		cmd := exec.Command(*agentBin, append(args, strings.Fields(*podStartupArgs)...)...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		check(cmd.Start())
		agents = append(agents, cmd)
	}
	return agents
}

// stopAgents stops the agents with SIGTERM, and SIGKILL after 10 s.
func stopAgents(agents []*exec.Cmd) {
	for _, a := range agents {
		_ = a.Process.Signal(syscall.SIGTERM)
	}
	for _, a := range agents {
		done := make(chan struct{})
		go func() { _ = a.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = a.Process.Kill()
			<-done
		}
	}
}

// waitStartupReady waits, a minute at most, until both nodes are Ready
// and untainted, and the namespace has its default ServiceAccount and
// kube-root-ca.crt, which every pod mounts.
func (b *bench) waitStartupReady(agents []*exec.Cmd) {
	deadline := time.Now().Add(time.Minute)
	for {
		untainted := 0
		for _, keys := range b.nodeTaints() {
			if len(keys) == 0 {
				untainted++
			}
		}
		if untainted == len(agents) &&
			b.status("GET", "/api/v1/namespaces/"+startupNS+"/serviceaccounts/default", b.token) == 200 &&
			b.status("GET", "/api/v1/namespaces/"+startupNS+"/configmaps/kube-root-ca.crt", b.token) == 200 {
			return
		}
		for _, a := range agents {
			if a.ProcessState != nil || !running(a.Process.Pid) {
				log.Fatalf("a node agent exited; its log is in %s", filepath.Dir(a.Args[2]))
			}
		}
		if time.Now().After(deadline) {
			log.Fatalf("pod startup: nodes not ready and untainted, or the namespace without its ServiceAccount, within a minute (%d of %d nodes)", untainted, len(agents))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stageTimes are the engine's times of the pods' sandboxes and
// containers, from the scheduled minute.
type stageTimes struct {
	sandboxCreated, sandboxStarted, created, started []time.Duration
}

func (s stageTimes) describe(d []time.Duration) string {
	return fmt.Sprintf("%d, p50 %s p99 %s", len(d), pct(d, 50), pct(d, 99))
}

// engineStages inspects the containers of the startup nodes' pods and
// takes the engine's creation and start times of each, to the
// nanosecond.
func engineStages(ctx context.Context, eng *engine.Docker, pods map[string]*podTrack, minute time.Time) stageTimes {
	var s stageTimes
	for _, node := range startupNodes {
		list, err := eng.List(ctx, map[string]string{"io.cronplane.node": node})
		if err != nil {
			log.Printf("listing the containers of %s: %v", node, err)
			continue
		}
		for _, c := range list {
			if pods[c.Labels["io.kubernetes.pod.uid"]] == nil || c.CreatedAt.Before(minute) {
				continue
			}
			if c.Labels["io.kubernetes.container.name"] == "POD" {
				s.sandboxCreated = append(s.sandboxCreated, c.CreatedAt.Sub(minute))
				if !c.StartedAt.IsZero() {
					s.sandboxStarted = append(s.sandboxStarted, c.StartedAt.Sub(minute))
				}
				continue
			}
			s.created = append(s.created, c.CreatedAt.Sub(minute))
			if !c.StartedAt.IsZero() {
				s.started = append(s.started, c.StartedAt.Sub(minute))
			}
		}
	}
	return s
}

// engineFloor creates and starts n pod-like pairs through the engine's
// API, workers at a time (0: all at once): a sandbox on the default
// network, then a container in its network namespace, as the agent does
// for a pod; it reports the wall time and each pair's time, and removes
// them.
func engineFloor(eng *engine.Docker, n, workers int) {
	if workers <= 0 || workers > n {
		workers = n
	}
	sel := map[string]string{floorLabel: floorValue}
	removeContainers(eng, sel)
	defer removeContainers(eng, sel)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pairs := make([]time.Duration, n)
	var failed error
	var mu sync.Mutex
	dockerd := pidOfDockerd()
	cpu := cpuOf(dockerd)
	begin := time.Now()
	parallel(workers, n, func(i int) {
		err := floorPair(ctx, eng, i, sel)
		mu.Lock()
		defer mu.Unlock()
		failed = errors.Join(failed, err)
		// From the start of all: what a pod of a burst waits.
		pairs[i] = time.Since(begin)
	})
	wall := time.Since(begin)
	cpu = cpuOf(dockerd) - cpu
	load, _ := os.ReadFile("/proc/loadavg")
	if failed != nil {
		log.Printf("engine floor: %v", failed)
	}
	report(fmt.Sprintf("engine floor: %d sandbox+container pairs, %d at a time", n, workers),
		fmt.Sprintf("all in %s, each done p50 %s p99 %s", wall.Round(time.Millisecond), pct(pairs, 50), pct(pairs, 99)), "")
	report("  dockerd CPU per pair; load average then", fmt.Sprintf("%.0f ms; %s", 1000*cpu/float64(n), strings.Join(strings.Fields(string(load))[:3], " ")), "")
	record(fmt.Sprintf("engine floor: %d pairs, %d at a time: wall", n, workers), "ms", ms(wall))
}

// floorPair creates and starts the engine floor's pair i: a sandbox
// running what the agent's runs, then a container in its network
// namespace.
func floorPair(ctx context.Context, eng *engine.Docker, i int, labels map[string]string) error {
	sb, err := eng.Create(ctx, engine.Spec{Name: fmt.Sprintf("bench-floor-sb-%d", i), Image: startupImage, Labels: labels, Network: "bridge",
		Entrypoint: []string{"sh", "-c", `trap "exit 0" TERM; sleep 2147483647 & wait`}})
	if err != nil {
		return err
	}
	if err := eng.Start(ctx, sb); err != nil {
		return err
	}
	c, err := eng.Create(ctx, engine.Spec{Name: fmt.Sprintf("bench-floor-c-%d", i), Image: startupImage, Entrypoint: []string{"sleep", "600"}, Labels: labels, Network: "container:" + sb})
	if err != nil {
		return err
	}
	return eng.Start(ctx, c)
}

// removeContainers removes, two minutes at most, the containers carrying
// all of labels.
func removeContainers(eng *engine.Docker, labels map[string]string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	list, err := eng.List(ctx, labels)
	if err != nil {
		log.Printf("listing containers %v: %v", labels, err)
		return
	}
	parallel(8, len(list), func(i int) { _ = eng.Remove(ctx, list[i].ID) })
	if left, err := eng.List(ctx, labels); err == nil && len(left) > 0 {
		log.Printf("%d containers %v left after the cleanup", len(left), labels)
	}
}

// pidOfDockerd is the engine's process, whose CPU the scenario reports;
// none when it is not on this machine.
func pidOfDockerd() []int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm")); err == nil && strings.TrimSpace(string(comm)) == "dockerd" {
			return []int{pid}
		}
	}
	return nil
}
