package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cronplane/cronplane/pkg/etcdserver"
)

var (
	kubeconfig       = flag.String("kubeconfig", "", "measure the server of this kubeconfig instead of starting bin/apiserver (its token must be in system:masters)")
	pids             = flag.String("pids", "", "comma-separated pids whose RSS is summed as the server's memory (with -kubeconfig)")
	compare          = flag.Bool("compare", false, "run the scenarios against kube-apiserver from ../shared/reference and against cronplane, and print both with their ratio")
	runs             = flag.Int("runs", 3, "runs of each side in -compare mode; the table shows the medians")
	reference        = flag.String("reference", "../shared/reference", "the reference scripts (up.sh, down.sh) for -compare")
	apiserverArgs    = flag.String("apiserver-args", "", "more flags, space-separated, for cronplane's apiserver in the suite (e.g. the same --max-requests-inflight as -ref-apiserver-args)")
	refAPIServerArgs = flag.String("ref-apiserver-args", "", "more flags, space-separated, for the reference's kube-apiserver in -compare (it is restarted with them after up.sh)")
)

// figure is one number of a run, recorded so that -compare can set the
// same figure of both servers side by side.
type figure struct {
	name, unit string
}

var (
	figureOrder []figure
	current     = map[string]float64{}
)

func record(name, unit string, v float64) {
	if _, seen := current[name]; !seen {
		known := false
		for _, f := range figureOrder {
			known = known || f.name == name
		}
		if !known {
			figureOrder = append(figureOrder, figure{name, unit})
		}
	}
	current[name] = v
}

// external measures a server that is already running.
func external() {
	b := &bench{side: "server"}
	for _, p := range strings.Split(*pids, ",") {
		if p = strings.TrimSpace(p); p != "" {
			pid, err := strconv.Atoi(p)
			check(err)
			b.pids = append(b.pids, pid)
		}
	}
	b.waitReady(*kubeconfig, time.Now())
	b.suite()
}

// compareRuns alternates the two servers run by run (the one measured
// first flips every run) so that both see the same machine, each started
// afresh and alone.
func compareRuns() {
	refDir := os.Getenv("REF_DIR")
	if refDir == "" {
		home, _ := os.UserHomeDir()
		refDir = filepath.Join(home, ".cache", "cronplane-reference")
	}
	refBin := filepath.Join(refDir, "bin")
	for _, f := range []string{"kube-apiserver", "kube-controller-manager", "etcd"} {
		if st, err := os.Stat(filepath.Join(refBin, f)); err != nil || st.Mode()&0o111 == 0 {
			fmt.Printf("bench-compare: the reference is not built (%s missing; run %s/build.sh): skipped\n", filepath.Join(refBin, f), *reference)
			return
		}
	}
	results := map[string][2][]float64{}
	collect := func(side int) {
		for k, v := range current {
			r := results[k]
			r[side] = append(r[side], v)
			results[k] = r
		}
		current = map[string]float64{}
	}
	for run := 0; run < *runs; run++ {
		sides := []int{0, 1}
		if run%2 == 1 {
			sides = []int{1, 0}
		}
		for _, side := range sides {
			if side == 0 {
				fmt.Printf("== run %d: cronplane\n", run+1)
				runCronplane()
			} else {
				fmt.Printf("== run %d: kube-apiserver v1.29 (reference)\n", run+1)
				runReference(refBin)
			}
			collect(side)
		}
	}
	fmt.Printf("\n== medians of %d runs, %s CronJobs\n", *runs, *shape)
	fmt.Printf("%-58s %14s %14s %8s\n", "figure", "cronplane", "kube", "ratio")
	for _, f := range figureOrder {
		r := results[f.name]
		cell := func(v []float64) string {
			if len(v) == 0 {
				return "-"
			}
			return fmt.Sprintf("%.1f %s", median(v), f.unit)
		}
		ratio := "-"
		if len(r[0]) > 0 && len(r[1]) > 0 && median(r[1]) != 0 {
			ratio = fmt.Sprintf("%.2f", median(r[0])/median(r[1]))
		}
		fmt.Printf("%-58s %14s %14s %8s\n", f.name, cell(r[0]), cell(r[1]), ratio)
	}
	for side, name := range []string{"cronplane", "kube"} {
		if c, ok := results[ceilingFigure]; ok && len(c[side]) > 0 && len(results[createFigure][side]) > 0 {
			fmt.Printf("%s create rate / its etcd's raw create ceiling: %.0f%%\n", name, 100*median(results[createFigure][side])/median(c[side]))
		}
	}
}

const (
	createFigure  = "create/s (16 clients)"
	ceilingFigure = "raw etcd create txns/s (16 clients; embedded | external)"
)

func runCronplane() {
	dir, err := os.MkdirTemp("", "cronplane-bench-")
	check(err)
	defer os.RemoveAll(dir)
	b, stop := startAPIServer(dir, strings.Fields(*apiserverArgs)...)
	b.cm = func() *exec.Cmd {
		// As the reference's below: the CronJob controller alone, the same
		// client rate limits, and the admin kubeconfig (a token in
		// system:masters) for credentials.
		return exec.Command(*cmBin, "--kubeconfig", filepath.Join(dir, "admin.kubeconfig"),
			"--controllers", "cronjob", "--kube-api-qps", "1000", "--kube-api-burst", "1000", "--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", "0")
	}
	b.jobCM = cronplaneJobControllers
	b.fresh = freshAPIServer
	time.Sleep(2 * time.Second)
	b.suite()
	stop()
	if *only != "" {
		return
	}
	// The embedded ceiling: etcd in this process, as cronplane embeds it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := etcdserver.Start(ctx, etcdserver.Config{DataDir: filepath.Join(dir, "ceiling")})
	check(err)
	defer func() { _ = s.Close() }()
	etcdCeiling(s.Client())
}

// runReference runs the suite on a reference of its own; the
// controller scenarios start kube's controllers as configured for them.
func runReference(refBin string) {
	b, run, etcdPort, stop := startReference(refBin, strings.Fields(*refAPIServerArgs)...)
	defer stop()
	b.kcmIdentity = func() *identity { return b.controllerManagerFromCA(filepath.Join(run, "certs")) }
	b.cm = func() *exec.Cmd {
		return exec.Command(filepath.Join(refBin, "kube-controller-manager"), "--kubeconfig", filepath.Join(run, "admin.kubeconfig"),
			"--controllers", "cronjob", "--kube-api-qps", "1000", "--kube-api-burst", "1000", "--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", "0")
	}
	if *jobCount > 0 {
		b.jobCM = func(kubeconfig string) []*exec.Cmd {
			common := []string{"--kubeconfig", kubeconfig, "--kube-api-qps", "1000", "--kube-api-burst", "1000", "--leader-elect=false", "--bind-address", "127.0.0.1"}
			return []*exec.Cmd{
				// Its secure port authenticates and authorizes callers
				// (the profiles, the metrics) only through these.
				exec.Command(filepath.Join(refBin, "kube-controller-manager"), append([]string{"--controllers", jobBenchControllers, "--secure-port", jobCMSecurePort(),
					"--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig}, append(common, jobSyncArgs()...)...)...),
				exec.Command(kubeScheduler(refBin), append([]string{"--secure-port", "0"}, common...)...),
			}
		}
	}
	b.fresh = func(args ...string) (*bench, func()) {
		nb, _, _, stop := startReference(refBin, append(strings.Fields(*refAPIServerArgs), args...)...)
		return nb, stop
	}
	time.Sleep(2 * time.Second)
	b.suite()
	if *only != "" {
		return
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://127.0.0.1:" + strconv.Itoa(etcdPort)}, DialTimeout: 5 * time.Second})
	check(err)
	defer func() { _ = cli.Close() }()
	etcdCeiling(cli)
}

// startReference starts etcd and kube-apiserver with up.sh in a run
// directory and on ports of their own, so that an instance other
// engineers use is not disturbed, and stops the controller-manager up.sh
// starts. up.sh takes no flags: with args, kube-apiserver is restarted
// with its command line and args after it.
func startReference(refBin string, args ...string) (b *bench, run string, etcdPort int, stop func()) {
	run, err := os.MkdirTemp("", "cronplane-bench-ref-")
	check(err)
	port := freePort()
	etcdPort = freeEtcdPort()
	env := append(os.Environ(), "REF_RUN="+run, "REF_PORT="+strconv.Itoa(port), "REF_ETCD_PORT="+strconv.Itoa(etcdPort))
	up := exec.Command(filepath.Join(*reference, "up.sh"))
	up.Env, up.Stdout, up.Stderr = env, io.Discard, os.Stderr
	start := time.Now()
	check(up.Run())
	stop = func() {
		down := exec.Command(filepath.Join(*reference, "down.sh"))
		down.Env = env
		_ = down.Run()
		_ = os.RemoveAll(run)
	}
	if pid := pidIn(run, "kube-controller-manager.pid"); pid > 0 {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
	}
	if len(args) > 0 {
		restartWith(run, args)
	}
	b = &bench{side: "kube", pids: []int{pidIn(run, "kube-apiserver.pid"), pidIn(run, "etcd.pid")}}
	b.waitReady(filepath.Join(run, "admin.kubeconfig"), start)
	return b, run, etcdPort, stop
}

// restartWith stops the kube-apiserver up.sh started in run and starts
// it again, in the same directory and log, with its command line and
// args; down.sh stops it by its pid file.
func restartWith(run string, args []string) {
	pid := pidIn(run, "kube-apiserver.pid")
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	check(err)
	p, err := os.FindProcess(pid)
	check(err)
	check(p.Signal(syscall.SIGTERM))
	for deadline := time.Now().Add(30 * time.Second); running(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			log.Fatalf("kube-apiserver %d did not stop within 30s", pid)
		}
	}
	argv := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	logFile, err := os.OpenFile(filepath.Join(run, "logs", "kube-apiserver.log"), os.O_APPEND|os.O_WRONLY, 0o644)
	check(err)
	defer logFile.Close()
	cmd := exec.Command(argv[0], append(argv[1:], args...)...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = run, logFile, logFile
	check(cmd.Start())
	// Reaped when down.sh stops it.
	go func() { _ = cmd.Wait() }()
	check(os.WriteFile(filepath.Join(run, "kube-apiserver.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644))
}

// jobBenchControllers are the controllers both controller-managers run in
// the Job scenario, by kube's names.
const jobBenchControllers = "job,ttl-after-finished,podgc,serviceaccount,nodelifecycle"

// kubeScheduler is kube-scheduler v1.29 of the reference's module, built
// beside its other binaries the first time the Job scenario needs it.
func kubeScheduler(refBin string) string {
	bin := filepath.Join(refBin, "kube-scheduler")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	src := filepath.Join(filepath.Dir(refBin), "src", "kube")
	log.Printf("building %s from %s", bin, src)
	cmd := exec.Command("go", "build", "-o", bin, "k8s.io/kubernetes/cmd/kube-scheduler")
	cmd.Dir, cmd.Stdout, cmd.Stderr = src, os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	check(cmd.Run())
	return bin
}

// freeEtcdPort finds a free port whose successor (etcd's peer port in
// up.sh) is free too.
func freeEtcdPort() int {
	for i := 0; i < 100; i++ {
		p := freePort()
		if portFree(p + 1) {
			return p
		}
	}
	log.Fatal("no free pair of ports for etcd")
	return 0
}

func pidIn(dir, file string) int {
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

// etcdCeiling is the rate of create transactions (put if absent, the
// apiserver's create) of CronJob-sized values by the benchmark's clients
// straight to etcd: what no apiserver over that etcd can exceed.
func etcdCeiling(cli *clientv3.Client) {
	value := strings.Repeat("v", 2600)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prefix := fmt.Sprintf("/bench-ceiling/%d/", time.Now().UnixNano())
	var failed atomic.Int64
	start := time.Now()
	parallel(*clients, *objects, func(i int) {
		key := prefix + strconv.Itoa(i)
		resp, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).Then(clientv3.OpPut(key, value)).Commit()
		if err != nil || !resp.Succeeded {
			failed.Add(1)
		}
	})
	rate := float64(*objects) / time.Since(start).Seconds()
	if failed.Load() > 0 {
		log.Fatalf("etcd ceiling: %d of %d creates failed", failed.Load(), *objects)
	}
	_, err := cli.Delete(ctx, prefix, clientv3.WithPrefix())
	check(err)
	report("raw etcd create transactions, "+strconv.Itoa(*clients)+" clients", fmt.Sprintf("%.0f/s", rate), "")
	record(ceilingFigure, "/s", rate)
}

// cpuSeconds is the user and system CPU time pid has used.
func cpuSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	check(err)
	// The command name, in parentheses, may hold spaces: count fields
	// after it. utime and stime are fields 14 and 15, in clock ticks
	// (100 per second on Linux).
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100
}

// running says whether pid is a live process: a zombie, which nobody
// may reap if up.sh's children are not reparented to a reaper, is not.
func running(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}
