package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/cronplane/cronplane/test/fakenode"
)

var (
	jobCount    = flag.Int("jobs", 1000, "Jobs of one pod each for the Job benchmark, run by fake nodes (0 skips it)")
	jobNodes    = flag.Int("job-nodes", 4, "fake nodes that run the Job benchmark's pods")
	jobWindow   = flag.Duration("job-timeout", 5*time.Minute, "how long the Job benchmark waits for every Job to complete")
	jobCMArgs   = flag.String("job-cm-args", "", "more flags, space-separated, for cronplane's controller-manager in the Job benchmark (e.g. --concurrent-job-syncs=10)")
	jobProfiles = flag.String("job-profiles", "", "directory for CPU profiles of the apiserver and the controller-manager over the first -profile-seconds of the Job benchmark")
	jobSyncs    = flag.Int("job-syncs", 0, "--concurrent-job-syncs of both controller-managers in the Job benchmark (0: their default, kube's 5)")
)

// jobSyncArgs are the flags that give both sides' job controllers the
// same number of workers, when -job-syncs asks for other than the default.
func jobSyncArgs() []string {
	if *jobSyncs <= 0 {
		return nil
	}
	return []string{"--concurrent-job-syncs", strconv.Itoa(*jobSyncs)}
}

// jobCMPort is the controller-manager's secure port in the Job benchmark:
// 0 (none) unless -job-profiles needs its /debug/pprof.
var jobCMPort = "0"

func jobCMSecurePort() string {
	if *jobProfiles != "" {
		jobCMPort = strconv.Itoa(freePort())
	}
	return jobCMPort
}

// jobControllers are the processes that turn a Job into a bound pod and a
// complete Job: a controller-manager running the job, ttl-after-finished,
// podgc and serviceaccount controllers, and the scheduler (kube's runs
// apart, cronplane's in the controller-manager).
type jobControllers func(kubeconfig string) []*exec.Cmd

// cronplaneJobControllers is bin/controller-manager with the Job
// scenario's controllers and its scheduler, with kube's rate limits lifted
// as the reference's are.
func cronplaneJobControllers(kubeconfig string) []*exec.Cmd {
	args := []string{"--kubeconfig", kubeconfig, "--controllers", jobBenchControllers + ",scheduler",
		"--kube-api-qps", "1000", "--kube-api-burst", "1000", "--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", jobCMSecurePort()}
	args = append(args, jobSyncArgs()...)
	return []*exec.Cmd{exec.Command(*cmBin, append(args, strings.Fields(*jobCMArgs)...)...)}
}

// jobTrack is what the benchmark saw of one Job: when its create was sent,
// when its pod was first seen created, bound and Succeeded, and when the
// Job was first seen Complete.
type jobTrack struct {
	created, podCreated, bound, podSucceeded, complete time.Time
}

// jobs creates -jobs Jobs of one pod each, which fake nodes complete at
// once with exit code 0, and measures from each create to its pod bound
// and to the Job Complete, over watches, with the controllers' RSS.
func (b *bench) jobs() {
	const ns = "jobbench"
	b.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"`+ns+`"}}`, 201)
	procs := b.jobCM(b.kubeconfig)
	for _, p := range procs {
		p.Stdout, p.Stderr = io.Discard, io.Discard
		check(p.Start())
	}
	defer func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}()

	cfg, err := clientcmd.BuildConfigFromFlags("", b.kubeconfig)
	check(err)
	// As a kubelet's client: no client-side limit in the way of the
	// measurement, and protobuf, the kubelet's default content type.
	cfg.QPS, cfg.Burst = 1000, 1000
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	dir, err := os.MkdirTemp("", "jobbench-nodes-")
	check(err)
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	var nodes sync.WaitGroup
	defer func() { cancel(); nodes.Wait() }()
	for i := 0; i < *jobNodes; i++ {
		n, err := fakenode.NewForConfig(cfg, fakenode.Config{
			Name: fmt.Sprintf("bench-node-%d", i), Pods: int64(*jobCount), Dir: filepath.Join(dir, fmt.Sprint(i)),
			Runner: fakenode.Fixed{},
		})
		check(err)
		nodes.Add(1)
		go func() {
			defer nodes.Done()
			if err := n.Run(ctx); err != nil && ctx.Err() == nil {
				log.Printf("fake node %s: %v", n.Name(), err)
			}
		}()
		select {
		case <-n.Ready():
		case <-time.After(time.Minute):
			log.Fatalf("fake node %s not ready within a minute", n.Name())
		}
	}
	// The job controller's pods need the namespace's default ServiceAccount.
	for deadline := time.Now().Add(time.Minute); b.status("GET", "/api/v1/namespaces/"+ns+"/serviceaccounts/default", b.token) != 200; {
		if time.Now().After(deadline) {
			log.Fatal("no default ServiceAccount in the Job benchmark's namespace within a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A new node is tainted not-ready until the node lifecycle controller
	// sees it Ready; the Jobs start once every node is schedulable.
	for deadline := time.Now().Add(time.Minute); b.taintedNodes() > 0; {
		if time.Now().After(deadline) {
			log.Fatal("the fake nodes kept their not-ready taint for a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}

	var mu sync.Mutex
	tracks := make(map[string]*jobTrack, *jobCount)
	track := func(name string) *jobTrack {
		t := tracks[name]
		if t == nil {
			t = &jobTrack{}
			tracks[name] = t
		}
		return t
	}
	completed := make(chan struct{})
	watchCtx, stopWatches := context.WithTimeout(ctx, *jobWindow)
	defer stopWatches()
	podRV := b.listRV("/api/v1/namespaces/" + ns + "/pods")
	jobRV := b.listRV("/apis/batch/v1/namespaces/" + ns + "/jobs")
	go b.watchEach(watchCtx, "/api/v1/namespaces/"+ns+"/pods", podRV, func(data []byte) {
		var p struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				NodeName string `json:"nodeName"`
			} `json:"spec"`
			Status struct {
				Phase string `json:"phase"`
			} `json:"status"`
		}
		if json.Unmarshal(data, &p) != nil {
			return
		}
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		t := track(p.Metadata.Labels["job-name"])
		if t.podCreated.IsZero() {
			t.podCreated = now
		}
		if t.bound.IsZero() && p.Spec.NodeName != "" {
			t.bound = now
		}
		if t.podSucceeded.IsZero() && p.Status.Phase == "Succeeded" {
			t.podSucceeded = now
		}
	})
	done := 0
	go b.watchEach(watchCtx, "/apis/batch/v1/namespaces/"+ns+"/jobs", jobRV, func(data []byte) {
		var j struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Status struct {
				Conditions []struct{ Type, Status string } `json:"conditions"`
			} `json:"status"`
		}
		if json.Unmarshal(data, &j) != nil {
			return
		}
		for _, c := range j.Status.Conditions {
			if c.Type != "Complete" || c.Status != "True" {
				continue
			}
			now := time.Now()
			mu.Lock()
			if t := track(j.Metadata.Name); t.complete.IsZero() {
				t.complete = now
				if done++; done == *jobCount {
					close(completed)
				}
			}
			mu.Unlock()
		}
	})

	if *jobProfiles != "" {
		go b.jobProfiles(ctx)
	}
	before := b.requestCounts()
	// The benchmark's own process runs the fake nodes, the watchers and
	// the clients: CPU both sides spend alike, which bounds the ratio.
	self := []int{os.Getpid()}
	serverCPU, controllersCPU, benchCPU := cpuOf(b.pids), cpuOf(pidsOf(procs)), cpuOf(self)
	begin := time.Now()
	parallel(*clients, *jobCount, func(i int) {
		name := fmt.Sprintf("run-%04d", i)
		body := `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"` + name + `"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox","command":["true"]}]}}}}`
		sent := time.Now()
		mu.Lock()
		track(name).created = sent
		mu.Unlock()
		b.do("POST", "/apis/batch/v1/namespaces/"+ns+"/jobs", body, 201)
	})
	select {
	case <-completed:
	case <-watchCtx.Done():
	}
	elapsed := time.Since(begin)
	b.reportRequests(before, b.requestCounts())
	serverCPU, controllersCPU, benchCPU = cpuOf(b.pids)-serverCPU, cpuOf(pidsOf(procs))-controllersCPU, cpuOf(self)-benchCPU
	if *jobProfiles != "" {
		b.reportJobQueue()
	}

	mu.Lock()
	var toPod, toBound, toComplete, boundToSucceeded, succeededToComplete []time.Duration
	for _, t := range tracks {
		if !t.created.IsZero() && !t.podCreated.IsZero() {
			toPod = append(toPod, t.podCreated.Sub(t.created))
		}
		if !t.created.IsZero() && !t.bound.IsZero() {
			toBound = append(toBound, t.bound.Sub(t.created))
		}
		if !t.created.IsZero() && !t.complete.IsZero() {
			toComplete = append(toComplete, t.complete.Sub(t.created))
		}
		if !t.bound.IsZero() && !t.podSucceeded.IsZero() {
			boundToSucceeded = append(boundToSucceeded, t.podSucceeded.Sub(t.bound))
		}
		if !t.podSucceeded.IsZero() && !t.complete.IsZero() {
			succeededToComplete = append(succeededToComplete, t.complete.Sub(t.podSucceeded))
		}
	}
	mu.Unlock()
	var rss int64
	for _, p := range procs {
		rss += rssOf(p.Process.Pid)
	}
	report(fmt.Sprintf("%d Jobs: created → pod created", *jobCount),
		fmt.Sprintf("%d pods, p50 %s p99 %s", len(toPod), pct(toPod, 50), pct(toPod, 99)), "")
	report(fmt.Sprintf("%d Jobs: created → pod bound", *jobCount),
		fmt.Sprintf("%d bound, p50 %s p99 %s", len(toBound), pct(toBound, 50), pct(toBound, 99)), "")
	report(fmt.Sprintf("%d Jobs: created → Complete", *jobCount),
		fmt.Sprintf("%d complete in %s, p50 %s p99 %s", len(toComplete), elapsed.Round(time.Millisecond), pct(toComplete, 50), pct(toComplete, 99)), "target p99 <= 0.5x kube's")
	report("  of which pod bound → pod Succeeded (the fake nodes)", fmt.Sprintf("p50 %s p99 %s", pct(boundToSucceeded, 50), pct(boundToSucceeded, 99)), "")
	report("  of which pod Succeeded → Job Complete", fmt.Sprintf("p50 %s p99 %s", pct(succeededToComplete, 50), pct(succeededToComplete, 99)), "")
	report("controllers' RSS (controller-manager and scheduler)", mib(rss), "target <= 0.5x kube's")
	report("CPU per Job: apiserver (and its etcd) / controllers / fake nodes and benchmark",
		fmt.Sprintf("%.1f ms / %.1f ms / %.1f ms", 1000*serverCPU/float64(*jobCount), 1000*controllersCPU/float64(*jobCount), 1000*benchCPU/float64(*jobCount)), "")
	record("Jobs: apiserver CPU per Job", "ms", 1000*serverCPU/float64(*jobCount))
	record("Jobs: controllers' CPU per Job", "ms", 1000*controllersCPU/float64(*jobCount))
	record("Jobs: fake nodes' and benchmark's CPU per Job", "ms", 1000*benchCPU/float64(*jobCount))
	record("Jobs: created → pod created p99", "ms", ms(pct(toPod, 99)))
	record("Jobs: created → pod bound p99", "ms", ms(pct(toBound, 99)))
	record("Jobs: created → Complete p50", "ms", ms(pct(toComplete, 50)))
	record("Jobs: created → Complete p99", "ms", ms(pct(toComplete, 99)))
	record("Jobs: complete of those created", "", float64(len(toComplete)))
	record("Jobs: controllers' RSS", "MiB", float64(rss)/(1<<20))
	if len(toComplete) < *jobCount {
		log.Printf("job benchmark: only %d of %d Jobs completed within %s", len(toComplete), *jobCount, *jobWindow)
	}
}

// nodeTaints lists each node's taint keys.
func (b *bench) nodeTaints() [][]string {
	var l struct {
		Items []struct {
			Spec struct {
				Taints []struct{ Key string } `json:"taints"`
			} `json:"spec"`
		} `json:"items"`
	}
	check(json.Unmarshal(b.do("GET", "/api/v1/nodes", "", 200), &l))
	out := make([][]string, len(l.Items))
	for i, node := range l.Items {
		for _, t := range node.Spec.Taints {
			out[i] = append(out[i], t.Key)
		}
	}
	return out
}

// taintedNodes counts the nodes with the not-ready taint.
func (b *bench) taintedNodes() int {
	n := 0
	for _, keys := range b.nodeTaints() {
		if slices.Contains(keys, "node.kubernetes.io/not-ready") {
			n++
		}
	}
	return n
}

// listRV is the resourceVersion of an empty-limit list of path, where a
// watch starts.
func (b *bench) listRV(path string) string {
	var l struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	check(json.Unmarshal(b.do("GET", path+"?limit=1", "", 200), &l))
	return l.Metadata.ResourceVersion
}

// watchEach watches path from rv and hands each event's object to f until
// ctx ends. A watch the server ends (kube-apiserver closes one whose
// reader falls behind) is resumed from the last version seen, or, that
// version gone, from a list whose items go to f first.
func (b *bench) watchEach(ctx context.Context, path, rv string, f func(object []byte)) {
	for ctx.Err() == nil {
		var gone bool
		rv, gone = b.watchFrom(ctx, path, rv, f)
		if ctx.Err() != nil {
			return
		}
		log.Printf("watch %s ended by the server (version gone: %t); resuming", path, gone)
		if !gone {
			continue
		}
		var l struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
			Items []json.RawMessage `json:"items"`
		}
		check(json.Unmarshal(b.do("GET", path, "", 200), &l))
		for _, item := range l.Items {
			f(item)
		}
		rv = l.Metadata.ResourceVersion
	}
}

// watchFrom runs one watch of path from rv and returns the last version it
// saw, and whether the server answered that rv is gone.
func (b *bench) watchFrom(ctx context.Context, path, rv string, f func(object []byte)) (string, bool) {
	req, _ := http.NewRequestWithContext(ctx, "GET", b.url+path+"?watch=1&allowWatchBookmarks=false&resourceVersion="+rv, nil)
	req.Header.Set("Authorization", "Bearer "+b.token)
	client := *b.client
	client.Timeout = 0
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			log.Printf("watch %s: %v", path, err)
			time.Sleep(time.Second)
		}
		return rv, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		var e struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		var o struct {
			Code     int `json:"code"`
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(e.Object, &o)
		if e.Type == "ERROR" {
			return rv, o.Code == http.StatusGone
		}
		rv = o.Metadata.ResourceVersion
		f(e.Object)
	}
	return rv, false
}

// requestSeries matches a series of apiserver_request_total and captures
// its labels and value.
var requestSeries = regexp.MustCompile(`^apiserver_request_total\{([^}]*)\} ([0-9.e+]+)$`)

var requestLabel = regexp.MustCompile(`(\w+)="([^"]*)"`)

// requestCounts reads the apiserver's requests served so far, by verb,
// resource and subresource.
func (b *bench) requestCounts() map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(string(b.do("GET", "/metrics", "", 200)), "\n") {
		m := requestSeries.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		l := map[string]string{}
		for _, kv := range requestLabel.FindAllStringSubmatch(m[1], -1) {
			l[kv[1]] = kv[2]
		}
		if l["verb"] == "WATCH" || l["verb"] == "CONNECT" {
			continue
		}
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		v, _ := strconv.ParseFloat(m[2], 64)
		out[key] += v
	}
	return out
}

// reportRequests prints the requests per Job the scenario cost, by verb
// and resource: a count the machine's load does not change.
func (b *bench) reportRequests(before, after map[string]float64) {
	var keys []string
	total := 0.0
	for k, v := range after {
		if d := v - before[k]; d >= float64(*jobCount)/10 {
			keys = append(keys, k)
		}
		total += v - before[k]
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, (after[k]-before[k])/float64(*jobCount)))
	}
	report("Jobs: apiserver requests per Job", fmt.Sprintf("%.2f", total/float64(*jobCount)), strings.Join(parts, ", "))
	record("Jobs: apiserver requests per Job", "", total/float64(*jobCount))
}

// jobProfiles saves CPU profiles of the apiserver and the
// controller-manager taken while the Jobs run.
func (b *bench) jobProfiles(ctx context.Context) {
	check(os.MkdirAll(*jobProfiles, 0o755))
	path := fmt.Sprintf("/debug/pprof/profile?seconds=%d", *profileSecs)
	go b.saveProfile(path, filepath.Join(*jobProfiles, b.side+"-apiserver-jobs.pprof"))
	data, err := b.fromJobCM(ctx, path)
	if err != nil {
		log.Printf("controller-manager profile: %v", err)
		return
	}
	check(os.WriteFile(filepath.Join(*jobProfiles, b.side+"-controller-manager-jobs.pprof"), data, 0o644))
}

// reportJobQueue prints the job controller's workqueue figures from the
// controller-manager's metrics: syncs per Job, and the mean wait in the
// queue and time in a sync.
func (b *bench) reportJobQueue() {
	data, err := b.fromJobCM(context.Background(), "/metrics")
	if err != nil {
		log.Printf("controller-manager metrics: %v", err)
		return
	}
	// Both metrics pages are kept beside the profiles, for the request
	// latencies each side saw.
	check(os.WriteFile(filepath.Join(*jobProfiles, b.side+"-controller-manager-metrics.txt"), data, 0o644))
	check(os.WriteFile(filepath.Join(*jobProfiles, b.side+"-apiserver-metrics.txt"), b.do("GET", "/metrics", "", 200), 0o644))
	v := map[string]float64{}
	for _, line := range strings.Split(string(data), "\n") {
		name, value, ok := strings.Cut(line, "{name=\"job\"} ")
		if !ok {
			continue
		}
		f, _ := strconv.ParseFloat(value, 64)
		v[name] = f
	}
	mean := func(metric string) time.Duration {
		if v[metric+"_count"] == 0 {
			return 0
		}
		return time.Duration(float64(time.Second) * v[metric+"_sum"] / v[metric+"_count"]).Round(time.Millisecond)
	}
	report("  job queue: syncs per Job, mean wait, mean sync",
		fmt.Sprintf("%.2f, %s, %s", v["workqueue_work_duration_seconds_count"]/float64(*jobCount), mean("workqueue_queue_duration_seconds"), mean("workqueue_work_duration_seconds")), "")
}

// fromJobCM GETs path from the controller-manager's secure port.
func (b *bench) fromJobCM(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "https://127.0.0.1:"+jobCMPort+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // its own serving certificate, on loopback
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", path, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

func pidsOf(procs []*exec.Cmd) []int {
	out := make([]int, 0, len(procs))
	for _, p := range procs {
		out = append(out, p.Process.Pid)
	}
	return out
}

// cpuOf sums the user and system CPU seconds the processes used so far.
func cpuOf(pids []int) float64 {
	total := 0.0
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// The fields after the command name, which may hold spaces.
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		utime, _ := strconv.ParseFloat(f[11], 64)
		stime, _ := strconv.ParseFloat(f[12], 64)
		total += (utime + stime) / clockTicks
	}
	return total
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat times.
const clockTicks = 100
