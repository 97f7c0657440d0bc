// Command bench measures the apiserver: start-to-ready time, idle RSS,
// creates, full and paged lists of 5,000 CronJobs, gets per second with 16
// clients, watch delivery to 200 watchers, RSS under that load, merge
// patches, applies, deletes, RSS after cleanup, the CronJob controller,
// and creates through a validating webhook and a ValidatingAdmissionPolicy
// (-only admission runs that scenario alone), and the pod startup
// scenario: CronJobs whose pods two node agents run on the machine's
// Docker engine (-only startup).
// It starts bin/apiserver on an embedded etcd in a temporary directory on
// a free loopback port and stops it at the end; -kubeconfig measures a
// server already running instead, and -compare runs the same scenarios
// against kube-apiserver (../shared/reference) and cronplane in turns and
// prints both figures with their ratio.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

var (
	apiserverBin = flag.String("apiserver", "bin/apiserver", "apiserver binary")
	objects      = flag.Int("objects", 5000, "CronJobs to create")
	clients      = flag.Int("clients", 16, "concurrent clients")
	watchers     = flag.Int("watchers", 200, "concurrent watchers")
	updates      = flag.Int("updates", 500, "updates sent to the watchers")
	updateRate   = flag.Int("update-rate", 100, "updates per second")
	rounds       = flag.Int("rounds", 20, "repetitions of each list measurement")
	gzipLists    = flag.Bool("gzip", false, "let the client accept gzip (the server compresses responses over 128 KiB)")
	apiBench     = flag.Bool("apiserver-bench", true, "run the apiserver measurements (false: only the instrumentation and controller-manager ones)")
	cronJobs     = flag.Int("cronjobs", 1000, "CronJobs on */1 for the controller-manager benchmark (0 skips it)")
	cmBin        = flag.String("controller-manager", "bin/controller-manager", "controller-manager binary")
	pad          = flag.Int("pad", 740, "characters of annotation in each CronJob of the simple shape (740 makes the 5,000 a 13 MB JSON list)")
	shape        = flag.String("shape", "simple", "the CronJobs' shape: simple (a large annotation, a small template) or rich (more typed fields: 4 labels, a Job spec with limits, a container with env, resources and a command)")
	only         = flag.String("only", "", "run one scenario alone: admission, apf (the CronJob creates and the noisy-neighbour scenario, and without -compare the APF on/off overhead), or startup (the pod startup scenario, cronplane only)")
)

const namespace = "bench"

type bench struct {
	// side names the server in profile file names: cronplane or kube.
	side   string
	url    string
	token  string
	client *http.Client
	// pids are the processes whose RSS is the server's memory: the
	// apiserver, and its etcd when that runs apart.
	pids []int
	// cm starts the controller-manager for the CronJob scenario; nil
	// skips it.
	cm func() *exec.Cmd
	// jobCM starts the controllers of the Job scenario; nil skips it.
	jobCM jobControllers
	// kubeconfig is the admin kubeconfig the server wrote.
	kubeconfig string
	// kcmIdentity is a client acting as
	// system:kube-controller-manager, for its Lease renewals; nil
	// impersonates it.
	kcmIdentity func() *identity
	// fresh starts another server of the same kind with more flags, for
	// a scenario that needs them; nil when the benchmark did not start
	// this one.
	fresh func(args ...string) (*bench, func())
}

func main() {
	flag.Parse()
	log.SetFlags(0)
	if *shape != "simple" && *shape != "rich" {
		log.Fatalf("-shape %q: want simple or rich", *shape)
	}
	if *only != "" && *only != "admission" && *only != "apf" && *only != "startup" {
		log.Fatalf("-only %q: the scenarios run alone are: admission, apf, startup", *only)
	}
	switch {
	case *compare:
		compareRuns()
		return
	case *kubeconfig != "":
		external()
		return
	case *scaleCounts != "":
		scaleCurve()
		return
	case *eventsEtcd:
		eventsEtcdScenario()
		return
	}
	dir, err := os.MkdirTemp("", "cronplane-bench-")
	check(err)
	defer os.RemoveAll(dir)
	start := time.Now()
	b, stop := startAPIServer(dir, strings.Fields(*apiserverArgs)...)
	defer stop()
	if *writeProfiles != "" {
		b.profileWrites()
		return
	}
	b.cm = func() *exec.Cmd {
		return exec.Command(*cmBin, "--kubeconfig", filepath.Join(dir, "controller-manager.kubeconfig"), "--secure-port", "0", "--leader-elect=false", "--use-service-account-credentials")
	}
	b.jobCM = cronplaneJobControllers
	b.fresh = freshAPIServer
	ready := time.Since(start)
	time.Sleep(2 * time.Second)
	report("start to ready", ready.Round(time.Millisecond).String(), "")
	b.suite()
	if *instrumentationRounds > 0 && *only == "" {
		instrumentationCost(dir)
	}
	if *apfRounds > 0 && (*only == "" || *only == "apf") {
		apfOverhead(dir)
	}
}

// suite runs the scenarios against b's server, whichever it is.
func (b *bench) suite() {
	if *only == "admission" {
		b.admission()
		return
	}
	if *only == "startup" {
		if b.side == "cronplane" {
			b.podStartup()
		}
		return
	}
	if *only == "apf" {
		b.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"`+namespace+`"}}`, 201)
		b.create()
		if *noisyNeighbour {
			b.noisyNeighbourScenario()
		}
		return
	}
	b.memory("RSS idle", "idle")
	if *apiBench {
		b.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"`+namespace+`"}}`, 201)
		b.create()
		b.memory("RSS after 5,000 creates", "created")
		b.lists()
		b.gets()
		b.watch()
		report("RSS with the 5,000 objects cached, after lists, gets, watches", mib(b.rss()), "")
		b.writes()
		report("RSS after the merge patches and applies", mib(b.rss()), "")
		// Before the deletes: A lists the 5,000 CronJobs created above.
		if *noisyNeighbour {
			b.noisyNeighbourScenario()
		}
		b.deletes()
		// Give the server the time a background scavenger and a
		// compaction take to return what the deleted objects held.
		time.Sleep(10 * time.Second)
		b.memory("RSS after cleanup", "cleanup")
	}
	b.customResources()
	if *cronJobs > 0 && b.cm != nil {
		b.controllerManager()
	}
	if *jobCount > 0 && b.jobCM != nil {
		b.jobs()
	}
	b.admission()
	// On a server of its own: the CronJob scenario's CronJobs would fire
	// beside its pods.
	if *podStartup > 0 && b.fresh != nil && !*compare {
		nb, stop := b.fresh()
		nb.podStartup()
		stop()
	}
}

// controllerManager starts bin/controller-manager, creates CronJobs on
// */1 and measures, over a watch, how long after the minute each Job
// appears, and the controller-manager's RSS.
func (b *bench) controllerManager() {
	const ns = "cronbench"
	b.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"`+ns+`"}}`, 201)
	cmd := b.cm()
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	check(cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	parallel(*clients, *cronJobs, func(i int) {
		body := fmt.Sprintf(`{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"tick-%04d"},"spec":{"schedule":"*/1 * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}}`, i)
		b.do("POST", "/apis/batch/v1/namespaces/"+ns+"/cronjobs", body, 201)
	})
	list := b.do("GET", "/apis/batch/v1/namespaces/"+ns+"/jobs", "", 200)
	var l struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	check(json.Unmarshal(list, &l))
	// The first full minute after every CronJob exists.
	minute := time.Now().Truncate(time.Minute).Add(time.Minute)
	ctx, cancel := context.WithDeadline(context.Background(), minute.Add(50*time.Second))
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", b.url+"/apis/batch/v1/namespaces/"+ns+"/jobs?watch=1&resourceVersion="+l.Metadata.ResourceVersion, nil)
	req.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := b.client.Do(req)
	check(err)
	defer resp.Body.Close()
	var delays []time.Duration
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() && len(delays) < *cronJobs {
		var e struct {
			Type   string `json:"type"`
			Object struct {
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			} `json:"object"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Type != "ADDED" {
			continue
		}
		scheduled, err := time.Parse(time.RFC3339, e.Object.Metadata.Annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"])
		if err != nil || !scheduled.Equal(minute) {
			continue
		}
		delays = append(delays, time.Since(scheduled))
	}
	report(fmt.Sprintf("Jobs of %d CronJobs on */1 created after the minute", *cronJobs),
		fmt.Sprintf("%d Jobs, first %s p50 %s p99 %s", len(delays), pct(delays, 0), pct(delays, 50), pct(delays, 99)), "target p99 <= 5s, all created")
	report("controller-manager RSS", mib(rssOf(cmd.Process.Pid)), "")
	report("controller-manager CPU from its start", fmt.Sprintf("%.1f s", cpuSeconds(cmd.Process.Pid)), "")
	record("CronJob controller: Job creation skew p50", "ms", ms(pct(delays, 50)))
	record("CronJob controller: Job creation skew p99", "ms", ms(pct(delays, 99)))
	record("CronJob controller: Jobs created of the minute", "", float64(len(delays)))
	record("CronJob controller: RSS", "MiB", float64(rssOf(cmd.Process.Pid))/(1<<20))
	record("CronJob controller: CPU seconds", "s", cpuSeconds(cmd.Process.Pid))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// startAPIServer starts bin/apiserver on an embedded etcd in dir, with
// the benchmark's reader token and args, and waits until it is ready.
func startAPIServer(dir string, args ...string) (*bench, func()) {
	tokens := filepath.Join(dir, "tokens.csv")
	check(os.WriteFile(tokens, []byte(readerToken+","+readerUser+","+readerUser+"\n"), 0o600))
	start := time.Now()
	args = append([]string{"--data-dir", dir, "--secure-port", strconv.Itoa(freePort()), "--token-auth-file", tokens}, args...)
	cmd := exec.Command(*apiserverBin, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	check(cmd.Start())
	b := &bench{side: "cronplane", pids: []int{cmd.Process.Pid}}
	b.waitReady(filepath.Join(dir, "admin.kubeconfig"), start)
	b.kcmIdentity = func() *identity {
		return b.controllerManagerFromKubeconfig(filepath.Join(dir, "controller-manager.kubeconfig"))
	}
	return b, func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
}

// freshAPIServer starts bin/apiserver in a directory of its own with
// args.
func freshAPIServer(args ...string) (*bench, func()) {
	dir, err := os.MkdirTemp("", "cronplane-bench-")
	check(err)
	b, stop := startAPIServer(dir, args...)
	return b, func() { stop(); _ = os.RemoveAll(dir) }
}

func (b *bench) waitReady(kubeconfig string, start time.Time) {
	b.kubeconfig = kubeconfig
	deadline := start.Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(kubeconfig); err == nil && len(data) > 0 {
			var kc struct {
				Clusters []struct {
					Cluster struct {
						Server   string `json:"server"`
						CAData   []byte `json:"certificate-authority-data"`
						Insecure bool   `json:"insecure-skip-tls-verify"`
					} `json:"cluster"`
				} `json:"clusters"`
				Users []struct {
					User struct {
						Token string `json:"token"`
					} `json:"user"`
				} `json:"users"`
			}
			if yaml.Unmarshal(data, &kc) == nil && len(kc.Clusters) > 0 && len(kc.Users) > 0 {
				pool := x509.NewCertPool()
				pool.AppendCertsFromPEM(kc.Clusters[0].Cluster.CAData)
				b.url, b.token = kc.Clusters[0].Cluster.Server, kc.Users[0].User.Token
				b.client = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
					// The reference's kubeconfig skips verification; it is
					// on loopback.
					TLSClientConfig:     &tls.Config{RootCAs: pool, InsecureSkipVerify: kc.Clusters[0].Cluster.Insecure},
					MaxIdleConnsPerHost: 512,
					ForceAttemptHTTP2:   false,
					DisableCompression:  !*gzipLists,
				}}
				if resp, err := b.client.Get(b.url + "/readyz"); err == nil {
					resp.Body.Close()
					if resp.StatusCode == 200 {
						return
					}
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	log.Fatal("apiserver not ready within 60s")
}

func (b *bench) request(method, path, body, contentType string) (*http.Response, error) {
	return b.requestAs(b.token, method, path, body, contentType)
}

func (b *bench) requestAs(token, method, path, body, contentType string) (*http.Response, error) {
	req, err := http.NewRequest(method, b.url+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		if contentType == "" {
			contentType = "application/json"
		}
		req.Header.Set("Content-Type", contentType)
	}
	return b.client.Do(req)
}

// do sends a request and fails unless the answer has the wanted code.
func (b *bench) do(method, path, body string, want int) []byte {
	return b.doType(method, path, body, "", want)
}

// read GETs path into buf, replacing its content, and returns the size.
func (b *bench) read(path, accept string, buf *bytes.Buffer) int {
	req, err := http.NewRequest("GET", b.url+path, nil)
	check(err)
	req.Header.Set("Authorization", "Bearer "+b.token)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := b.client.Do(req)
	check(err)
	defer resp.Body.Close()
	buf.Reset()
	_, err = buf.ReadFrom(resp.Body)
	check(err)
	if resp.StatusCode != http.StatusOK {
		log.Fatalf("GET %s: %d %s", path, resp.StatusCode, buf.Bytes())
	}
	return buf.Len()
}

func (b *bench) doType(method, path, body, contentType string, want int) []byte {
	return b.doAs(b.token, method, path, body, contentType, want)
}

// doAs is doType as the user of token.
func (b *bench) doAs(token, method, path, body, contentType string, want int) []byte {
	resp, err := b.requestAs(token, method, path, body, contentType)
	check(err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	check(err)
	if resp.StatusCode != want {
		log.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	return data
}

// cronJob is the benchmark's CronJob number i in the -shape asked for,
// suspended so that the controller-manager benchmark is not disturbed by
// it. The simple shape is about 2.6 KB of JSON once defaulted and given
// managedFields, so that the 5,000 make a list of about 13 MB, the size
// kube-apiserver serves for the same load; most of it is one annotation.
// The rich shape has fewer bytes and more typed fields, each of which the
// server decodes, defaults, validates and tracks in managedFields.
func cronJob(i int) string {
	if *shape == "rich" {
		return fmt.Sprintf(`{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"cj-%05d","labels":{"app":"bench","shard":"s%d","team":"reports","tier":"batch"},"annotations":{"bench/owner":"reports-team-%d@example.com"}},
"spec":{"schedule":"*/5 * * * *","suspend":true,"jobTemplate":{"spec":{"backoffLimit":3,"activeDeadlineSeconds":600,"ttlSecondsAfterFinished":3600,"template":{"spec":{"restartPolicy":"OnFailure",
"containers":[{"name":"main","image":"busybox:1.36","command":["sh","-c","echo report $REPORT_ID; sleep 5"],"env":[{"name":"REPORT_ID","value":"%d"},{"name":"LOG_LEVEL","value":"info"},{"name":"TARGET","value":"s3://reports/daily"}],
"resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"500m","memory":"256Mi"}}}]}}}}}}`,
			i, i%10, i%100, i)
	}
	return fmt.Sprintf(`{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"cj-%05d","labels":{"app":"bench","shard":"s%d"},"annotations":{"description":"%s"}},
"spec":{"schedule":"*/5 * * * *","suspend":true,"jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"OnFailure",
"containers":[{"name":"main","image":"busybox:1.36","command":["sh","-c","echo hello from the benchmark"],"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]}]}}}}}}`,
		i, i%10, strings.Repeat("x", *pad))
}

func (b *bench) create() {
	start := time.Now()
	parallel(*clients, *objects, func(i int) {
		b.do("POST", "/apis/batch/v1/namespaces/"+namespace+"/cronjobs", cronJob(i), 201)
	})
	d := time.Since(start)
	report(fmt.Sprintf("create %d CronJobs, %d clients", *objects, *clients), fmt.Sprintf("%.0f/s", float64(*objects)/d.Seconds()), "")
	record(createFigure, "/s", float64(*objects)/d.Seconds())
}

// writes measures merge patches and server-side applies that change the
// spec of existing CronJobs.
func (b *bench) writes() {
	path := func(i int) string {
		return fmt.Sprintf("/apis/batch/v1/namespaces/%s/cronjobs/cj-%05d", namespace, i%*objects)
	}
	n := *objects
	start := time.Now()
	parallel(*clients, n, func(i int) {
		patch := fmt.Sprintf(`{"spec":{"startingDeadlineSeconds":%d}}`, 100+i)
		b.doType("PATCH", path(i), patch, "application/merge-patch+json", 200)
	})
	rate := float64(n) / time.Since(start).Seconds()
	report(fmt.Sprintf("merge patch of the spec, %d clients", *clients), fmt.Sprintf("%.0f/s", rate), "")
	record("merge patch/s (16 clients)", "/s", rate)

	start = time.Now()
	parallel(*clients, n, func(i int) {
		body := fmt.Sprintf(`{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"cj-%05d"},"spec":{"schedule":"*/%d * * * *"}}`, i%*objects, 1+i%30)
		b.doType("PATCH", path(i)+"?fieldManager=bench&force=true", body, "application/apply-patch+yaml", 200)
	})
	rate = float64(n) / time.Since(start).Seconds()
	report(fmt.Sprintf("server-side apply of the spec, %d clients", *clients), fmt.Sprintf("%.0f/s", rate), "")
	record("apply/s (16 clients)", "/s", rate)
}

// deletes deletes the first half of the CronJobs one by one, then the
// rest by deletecollection, one call per shard label, all at once.
func (b *bench) deletes() {
	half := *objects / 2
	start := time.Now()
	parallel(*clients, half, func(i int) {
		b.do("DELETE", fmt.Sprintf("/apis/batch/v1/namespaces/%s/cronjobs/cj-%05d", namespace, i), "", 200)
	})
	rate := float64(half) / time.Since(start).Seconds()
	report(fmt.Sprintf("delete, %d clients", *clients), fmt.Sprintf("%.0f/s", rate), "")
	record("delete/s (16 clients)", "/s", rate)
	start = time.Now()
	parallel(*clients, 10, func(i int) {
		b.do("DELETE", fmt.Sprintf("/apis/batch/v1/namespaces/%s/cronjobs?labelSelector=shard%%3Ds%d", namespace, i), "", 200)
	})
	rate = float64(*objects-half) / time.Since(start).Seconds()
	report("deletecollection, one call per shard of 10, objects", fmt.Sprintf("%.0f/s", rate), "")
	record("deletecollection objects/s (10 shards at once)", "/s", rate)
	if left := b.do("GET", "/apis/batch/v1/namespaces/"+namespace+"/cronjobs?limit=1", "", 200); bytes.Contains(left, []byte(`"cj-`)) {
		log.Fatalf("CronJobs left after the deletes: %.200s", left)
	}
}

func (b *bench) lists() {
	path := "/apis/batch/v1/namespaces/" + namespace + "/cronjobs"
	// The representations are measured in turn within each round, so that
	// their ratios compare like with like on a machine whose speed varies.
	// The order is shuffled in every round (with a fixed seed), so that no
	// representation always follows the same one and pays for the garbage
	// it left.
	kinds := []struct{ name, query, accept string }{
		{"full list, JSON, resourceVersion=0", "?resourceVersion=0", ""},
		{"full list, JSON, consistent", "", ""},
		{"full list, protobuf, resourceVersion=0", "?resourceVersion=0", "application/vnd.kubernetes.protobuf"},
		{"full list, Table, resourceVersion=0", "?resourceVersion=0", "application/json;as=Table;v=v1;g=meta.k8s.io"},
	}
	ds := make([][]time.Duration, len(kinds))
	sizes := make([]int, len(kinds))
	order := rand.New(rand.NewSource(1))
	// One reused buffer keeps the benchmark's own allocation (and garbage
	// collection) out of the figures.
	var body bytes.Buffer
	for i := 0; i < *rounds; i++ {
		for _, k := range order.Perm(len(kinds)) {
			t := time.Now()
			sizes[k] = b.read(path+kinds[k].query, kinds[k].accept, &body)
			ds[k] = append(ds[k], time.Since(t))
		}
	}
	p50 := func(k int) time.Duration { return pct(ds[k], 50) }
	for k := range kinds {
		record(kinds[k].name+" p50", "ms", ms(p50(k)))
	}
	report(kinds[0].name, fmt.Sprintf("p50 %s", p50(0)), "")
	report("  list size", fmt.Sprintf("%.1f MB", float64(sizes[0])/1e6), "")
	report(kinds[1].name, fmt.Sprintf("p50 %s", p50(1)), "")
	report(kinds[2].name, fmt.Sprintf("p50 %s", p50(2)), "")
	report("  protobuf p50 / JSON p50", fmt.Sprintf("%.2f (%.1f MB, %.2f of the JSON bytes)", float64(p50(2))/float64(p50(0)), float64(sizes[2])/1e6, float64(sizes[2])/float64(sizes[0])), "")
	report(kinds[3].name, fmt.Sprintf("p50 %s", p50(3)), "")
	report("  Table p50 / JSON p50", fmt.Sprintf("%.2f", float64(p50(3))/float64(p50(0))), "target <= 1.5")

	// What a client-go client sees: the same two lists, decoded into
	// CronJobList as client-go's serializers decode them.
	decoded := [2][]time.Duration{}
	for i := 0; i < *rounds; i++ {
		for j := 0; j < 2; j++ {
			k := (i + j) % 2
			t := time.Now()
			var list batchv1.CronJobList
			if k == 0 {
				b.read(path+"?resourceVersion=0", "", &body)
				check(kjson.UnmarshalCaseSensitivePreserveInts(body.Bytes(), &list))
			} else {
				b.read(path+"?resourceVersion=0", "application/vnd.kubernetes.protobuf", &body)
				var u runtime.Unknown
				check(u.Unmarshal(body.Bytes()[4:]))
				check(list.Unmarshal(u.Raw))
			}
			if len(list.Items) != *objects {
				log.Fatalf("decoded list has %d items, want %d", len(list.Items), *objects)
			}
			decoded[k] = append(decoded[k], time.Since(t))
		}
	}
	report("  decoded as client-go does: protobuf p50 / JSON p50", fmt.Sprintf("%.2f (%s / %s)",
		float64(pct(decoded[1], 50))/float64(pct(decoded[0], 50)), pct(decoded[1], 50), pct(decoded[0], 50)), "")

	// The first round checks that the pages hold every object; the timed
	// rounds read each page whole but parse only its metadata, so that the
	// figure is the server's and not the benchmark's JSON decoding.
	if n := b.pagedList(path, true); n != *objects {
		log.Fatalf("paged list returned %d items, want %d", n, *objects)
	}
	var paged []time.Duration
	for i := 0; i < *rounds; i++ {
		t := time.Now()
		b.pagedList(path, false)
		paged = append(paged, time.Since(t))
	}
	report("paged list, limit 500, all pages", fmt.Sprintf("p50 %s", pct(paged, 50)), "")
	record("paged list total (limit 500) p50", "ms", ms(pct(paged, 50)))
}

// pagedList reads a collection 500 at a time through all pages and
// returns the number of items when countItems is set.
func (b *bench) pagedList(path string, countItems bool) int {
	cont, items := "", 0
	for pages := 0; pages < 1000; pages++ {
		q := "?limit=500"
		if cont != "" {
			q += "&continue=" + cont
		}
		body := b.do("GET", path+q, "", 200)
		var l struct {
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
			Items []json.RawMessage `json:"items"`
		}
		if countItems {
			check(json.Unmarshal(body, &l))
			items += len(l.Items)
		} else {
			l.Metadata.Continue = continueOf(body)
		}
		if l.Metadata.Continue == "" {
			return items
		}
		cont = l.Metadata.Continue
	}
	log.Fatal("paged list did not end after 1000 pages")
	return 0
}

// continueOf reads metadata.continue of a list, which comes before its
// items, without scanning the items.
func continueOf(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil {
		log.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		check(err)
		if k == "metadata" {
			var m struct {
				Continue string `json:"continue"`
			}
			check(dec.Decode(&m))
			return m.Continue
		}
		var skip json.RawMessage
		check(dec.Decode(&skip))
	}
	return ""
}

// The user whose gets are authorized by RBAC, through a RoleBinding among
// 200 others.
const (
	readerUser  = "bench-reader"
	readerToken = "bench-reader-token"
)

// gets measures gets of one CronJob by the admin (system:masters, allowed
// before RBAC is asked), then compares them, in alternating rounds, with
// gets by a user whose access comes from a RoleBinding, with 200 Roles
// and 200 RoleBindings in the namespace.
func (b *bench) gets() {
	cpu := b.cpu()
	rate := b.getRate(b.token, *objects, 5*time.Second)
	cpu = b.cpu() - cpu
	// The server's CPU per get is what a machine shared with other work
	// changes least.
	report(fmt.Sprintf("get one object, %d clients", *clients), fmt.Sprintf("%.0f/s, %.3f ms CPU each", rate, 1000*cpu/(rate*5)), "")
	record("get/s (16 clients)", "/s", rate)
	// The reader's token is only in the token file of a server the
	// benchmark starts alone.
	if *compare || *kubeconfig != "" {
		return
	}
	rule := `"rules":[{"apiGroups":["batch"],"resources":["cronjobs"],"verbs":["get"]}]`
	for i := 0; i < 200; i++ {
		b.do("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+namespace+"/roles", fmt.Sprintf(`{"metadata":{"name":"r%03d"},%s}`, i, rule), 201)
		b.do("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+namespace+"/rolebindings", fmt.Sprintf(
			`{"metadata":{"name":"b%03d"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r%03d"},"subjects":[{"kind":"User","name":"u%03d"}]}`, i, i, i), 201)
	}
	b.do("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+namespace+"/rolebindings", fmt.Sprintf(
		`{"metadata":{"name":"reader"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r100"},"subjects":[{"kind":"User","name":"%s"}]}`, readerUser), 201)
	path := fmt.Sprintf("/apis/batch/v1/namespaces/%s/cronjobs/cj-%05d", namespace, 0)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if code := b.status("GET", path, readerToken); code == http.StatusOK {
			break
		} else if time.Now().After(deadline) {
			log.Fatalf("%s is still refused (%d) after its binding", readerUser, code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var masters, rbac []float64
	for round := 0; round < 4; round++ {
		masters = append(masters, b.getRate(b.token, *objects, 2*time.Second))
		rbac = append(rbac, b.getRate(readerToken, *objects, 2*time.Second))
	}
	m, r := median(masters), median(rbac)
	report(fmt.Sprintf("get one object by a RoleBinding user, %d clients", *clients), fmt.Sprintf("%.0f/s (system:masters %.0f/s)", r, m), "")
	report("  RBAC get rate / system:masters get rate", fmt.Sprintf("%.2f", r/m), "target >= 0.9")
}

// getRate is the rate of gets of the benchmark's CronJobs with token.
// getRate is the rate of gets of the first objects CronJobs by the
// clients, with token, over duration.
func (b *bench) getRate(token string, objects int, duration time.Duration) float64 {
	var n atomic.Int64
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for c := 0; c < *clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := c; time.Now().Before(deadline); i += *clients {
				path := fmt.Sprintf("/apis/batch/v1/namespaces/%s/cronjobs/cj-%05d", namespace, i%objects)
				if code := b.status("GET", path, token); code != http.StatusOK {
					log.Fatalf("GET %s: %d", path, code)
				}
				n.Add(1)
			}
		}(c)
	}
	wg.Wait()
	return float64(n.Load()) / duration.Seconds()
}

// status sends a bodiless request with token and returns the status code,
// reading the answer through.
func (b *bench) status(method, path, token string) int {
	req, err := http.NewRequest(method, b.url+path, nil)
	check(err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := b.client.Do(req)
	check(err)
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	check(err)
	return resp.StatusCode
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// watch starts the watchers, sends the updates at the given rate and
// measures the delay from each update's send time (carried in an
// annotation) to its arrival at every watcher.
func (b *bench) watch() {
	list := b.do("GET", "/apis/batch/v1/namespaces/"+namespace+"/cronjobs?limit=1", "", 200)
	var l struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	check(json.Unmarshal(list, &l))

	var mu sync.Mutex
	var delays, patchTimes []time.Duration
	// arrivals are, by each update's send time, its first and last
	// arrival at a watcher.
	arrivals := map[int64][2]time.Duration{}
	received := make([]int, *watchers)
	var ready, done sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(*updates / *updateRate + 60)*time.Second)
	defer cancel()
	for w := 0; w < *watchers; w++ {
		ready.Add(1)
		done.Add(1)
		go func(w int) {
			defer done.Done()
			req, _ := http.NewRequestWithContext(ctx, "GET", b.url+"/apis/batch/v1/namespaces/"+namespace+"/cronjobs?watch=1&resourceVersion="+l.Metadata.ResourceVersion, nil)
			req.Header.Set("Authorization", "Bearer "+b.token)
			resp, err := b.client.Do(req)
			ready.Done()
			if err != nil {
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<22)
			var local []time.Duration
			var localSent []int64
			for sc.Scan() {
				// The annotation is found in the bytes, not by decoding each
				// event: with a thousand watchers the benchmark's own JSON
				// decoding would be what is measured.
				sent, ok := sentAt(sc.Bytes())
				if !ok {
					continue
				}
				local = append(local, time.Since(time.Unix(0, sent)))
				localSent = append(localSent, sent)
				if len(local) == *updates {
					break
				}
			}
			mu.Lock()
			delays = append(delays, local...)
			for i, sent := range localSent {
				if d, ok := arrivals[sent]; !ok || local[i] < d[0] {
					arrivals[sent] = [2]time.Duration{local[i], max(d[1], local[i])}
				} else if local[i] > d[1] {
					arrivals[sent] = [2]time.Duration{d[0], local[i]}
				}
			}
			received[w] = len(local)
			mu.Unlock()
		}(w)
	}
	ready.Wait()
	time.Sleep(500 * time.Millisecond)
	tick := time.NewTicker(time.Second / time.Duration(*updateRate))
	for i := 0; i < *updates; i++ {
		<-tick.C
		sent := time.Now()
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"bench/sent":"%d"}}}`, sent.UnixNano())
		resp, err := b.request("PATCH", fmt.Sprintf("/apis/batch/v1/namespaces/%s/cronjobs/cj-%05d", namespace, i%*objects), patch, "application/merge-patch+json")
		check(err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		patchTimes = append(patchTimes, time.Since(sent))
		if resp.StatusCode != 200 {
			log.Fatalf("patch: %d", resp.StatusCode)
		}
	}
	tick.Stop()
	// The watchers are still connected: this is the memory under the
	// watch load.
	b.memory("RSS under watch load", "watch")
	done.Wait()
	lost := 0
	for _, n := range received {
		lost += *updates - n
	}
	report(fmt.Sprintf("watch delivery, %d watchers, %d updates at %d/s", *watchers, *updates, *updateRate),
		fmt.Sprintf("p50 %s p99 %s, lost %d", pct(delays, 50), pct(delays, 99), lost), "")
	record(fmt.Sprintf("watch delivery p99 (%d watchers)", *watchers), "ms", ms(pct(delays, 99)))
	// Where the delay goes: the patch's round trip (its answer is sent
	// once etcd committed it), each update's first arrival at a watcher
	// (the server's path from the request to the fan-out), and the spread
	// from its first to its last arrival (the writes to 200 connections
	// and the benchmark's 200 readers, on the same cores).
	var first, spread []time.Duration
	for _, a := range arrivals {
		first = append(first, a[0])
		spread = append(spread, a[1]-a[0])
	}
	report("  patch round trip", fmt.Sprintf("p50 %s p99 %s", pct(patchTimes, 50), pct(patchTimes, 99)), "")
	report("  first arrival of each update", fmt.Sprintf("p50 %s p99 %s", pct(first, 50), pct(first, 99)), "")
	report("  first to last arrival of each update", fmt.Sprintf("p50 %s p99 %s", pct(spread, 50), pct(spread, 99)), "")
	record("  watch: first arrival p99", "ms", ms(pct(first, 99)))
	record("  watch: first to last arrival p99", "ms", ms(pct(spread, 99)))
	record("watch events lost", "", float64(lost))
}

// sentAt reads the bench/sent annotation (Unix nanoseconds) of a watch
// event's JSON.
func sentAt(event []byte) (int64, bool) {
	const marker = `"bench/sent":"`
	i := bytes.Index(event, []byte(marker))
	if i < 0 {
		return 0, false
	}
	rest := event[i+len(marker):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	return n, err == nil
}

func (b *bench) rss() int64 {
	var sum int64
	for _, pid := range b.pids {
		sum += rssOf(pid)
	}
	return sum
}

func rssOf(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	check(err)
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func parallel(workers, n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i].Round(100 * time.Microsecond)
}

func report(name, value, target string) {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%-58s %-28s %s", name, value, target)
	fmt.Println(strings.TrimRight(buf.String(), " "))
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
