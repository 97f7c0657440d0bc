package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

var (
	heapProfiles  = flag.String("heap-profiles", "", "directory for a heap profile of the server (its /debug/pprof/heap) at each memory figure")
	writeProfiles = flag.String("write-profiles", "", "directory: instead of the suite, run each write (create, update, merge, strategic and JSON patch, apply, delete) for -profile-seconds under 16 and 64 clients, each with a CPU and an allocation profile of the server")
	profileSecs   = flag.Int("profile-seconds", 10, "seconds each write runs in -write-profiles")
	profileOps    = flag.String("profile-ops", "", "comma-separated writes -write-profiles runs, by name (create, update, merge patch, strategic merge patch, JSON patch, apply, delete); empty runs all")
	profileConc   = flag.String("profile-clients", "16,64", "comma-separated client counts -write-profiles runs each write with")
)

// memory records the server's RSS and Go heap as figure name and, with
// -heap-profiles, keeps a heap profile of this point.
func (b *bench) memory(name, stage string) {
	rss := b.rss()
	report(name, mib(rss), "")
	record(name, "MiB", float64(rss)/(1<<20))
	if m := b.goMemory(); m["go_memstats_heap_inuse_bytes"] > 0 {
		inuse, idle := m["go_memstats_heap_inuse_bytes"], m["go_memstats_heap_idle_bytes"]-m["go_memstats_heap_released_bytes"]
		report("  its Go heap: in use / idle, not yet returned", fmt.Sprintf("%s / %s", mib(int64(inuse)), mib(int64(idle))), "")
		record("  Go heap in use: "+name, "MiB", inuse/(1<<20))
	}
	if anon, db, other := b.rssByMapping(); anon+db+other > 0 {
		report("  its RSS: anonymous / etcd database / binaries and other files",
			fmt.Sprintf("%s / %s / %s", mib(anon), mib(db), mib(other)), "")
	}
	if *heapProfiles == "" {
		return
	}
	check(os.MkdirAll(*heapProfiles, 0o755))
	b.saveProfile("/debug/pprof/heap?gc=1", filepath.Join(*heapProfiles, b.side+"-heap-"+stage+".pprof"))
}

// rssByMapping splits the RSS of the server's processes by
// /proc/PID/smaps: anonymous memory (the Go heap and stacks, or etcd's),
// the pages of etcd's database file (bbolt maps it and reads through the
// mapping: the kernel's page cache, counted in RSS once touched), and the
// rest (binaries, libraries, other files).
func (b *bench) rssByMapping() (anon, db, other int64) {
	for _, pid := range b.pids {
		f, err := os.Open(fmt.Sprintf("/proc/%d/smaps", pid))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		name := ""
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			switch {
			case len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
				// A mapping's header: range perms offset dev inode [path].
				name = ""
				if len(fields) >= 6 {
					name = fields[5]
				}
			case len(fields) >= 2 && fields[0] == "Rss:":
				kb, _ := strconv.ParseInt(fields[1], 10, 64)
				switch {
				case name == "" || strings.HasPrefix(name, "["):
					anon += kb << 10
				case strings.HasSuffix(name, "/db"):
					db += kb << 10
				default:
					other += kb << 10
				}
			}
		}
		f.Close()
	}
	return anon, db, other
}

// goMemory reads the Go runtime's go_memstats_* gauges from the server's
// /metrics: the heap apart from what the runtime holds for reuse or has
// not yet returned, which RSS includes.
func (b *bench) goMemory() map[string]float64 {
	out := map[string]float64{}
	resp, err := b.request("GET", "/metrics", "", "")
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || !strings.HasPrefix(name, "go_memstats_") {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[name] = f
		}
	}
	return out
}

func (b *bench) saveProfile(path, file string) {
	resp, err := b.request("GET", path, "", "")
	check(err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		log.Printf("profile %s: %d (is --profiling on?)", path, resp.StatusCode)
		return
	}
	f, err := os.Create(file)
	check(err)
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	check(err)
}

// writeOp is one kind of write the profiles cover; i numbers the request,
// n is how many objects exist.
type writeOp struct {
	name string
	req  func(i, n int) (method, path, contentType, body string, want int)
}

func writeOps() []writeOp {
	path := func(i, n int) string {
		return fmt.Sprintf("/apis/batch/v1/namespaces/%s/cronjobs/cj-%05d", namespace, i%n)
	}
	return []writeOp{
		{"create", func(i, n int) (string, string, string, string, int) {
			return "POST", "/apis/batch/v1/namespaces/" + namespace + "/cronjobs", "application/json", cronJobNamed(fmt.Sprintf("new-%07d", i), i), 201
		}},
		{"update", func(i, n int) (string, string, string, string, int) {
			// Without a resourceVersion: an unconditional update, which
			// CronJobs allow.
			return "PUT", path(i, n), "application/json", strings.Replace(cronJob(i%n), `"*/5 * * * *"`, fmt.Sprintf(`"*/%d * * * *"`, 1+i%30), 1), 200
		}},
		{"merge patch", func(i, n int) (string, string, string, string, int) {
			return "PATCH", path(i, n), "application/merge-patch+json", fmt.Sprintf(`{"spec":{"startingDeadlineSeconds":%d}}`, 100+i), 200
		}},
		{"strategic merge patch", func(i, n int) (string, string, string, string, int) {
			return "PATCH", path(i, n), "application/strategic-merge-patch+json", fmt.Sprintf(`{"spec":{"startingDeadlineSeconds":%d}}`, 100+i), 200
		}},
		{"JSON patch", func(i, n int) (string, string, string, string, int) {
			return "PATCH", path(i, n), "application/json-patch+json", fmt.Sprintf(`[{"op":"replace","path":"/spec/schedule","value":"*/%d * * * *"}]`, 1+i%30), 200
		}},
		{"apply", func(i, n int) (string, string, string, string, int) {
			return "PATCH", path(i, n) + "?fieldManager=bench&force=true", "application/apply-patch+yaml",
				fmt.Sprintf(`{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"cj-%05d"},"spec":{"schedule":"*/%d * * * *"}}`, i%n, 1+i%30), 200
		}},
		{"delete", func(i, n int) (string, string, string, string, int) {
			return "DELETE", fmt.Sprintf("/apis/batch/v1/namespaces/%s/cronjobs/new-%07d", namespace, i), "", "", 200
		}},
	}
}

// cronJobNamed is cronJob(i) under another name.
func cronJobNamed(name string, i int) string {
	return strings.Replace(cronJob(i), fmt.Sprintf(`"name":"cj-%05d"`, i), `"name":"`+name+`"`, 1)
}

// profileWrites runs each write for -profile-seconds under 16 and then 64
// clients against b's server, with a CPU profile of the run and the
// server's allocations before and after it, and prints the rates.
func (b *bench) profileWrites() {
	check(os.MkdirAll(*writeProfiles, 0o755))
	b.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"`+namespace+`"}}`, 201)
	b.create()
	dur := time.Duration(*profileSecs) * time.Second
	var concurrency []int
	for _, c := range strings.Split(*profileConc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		check(err)
		concurrency = append(concurrency, n)
	}
	for _, op := range writeOps() {
		if *profileOps != "" && !slices.Contains(strings.Split(*profileOps, ","), op.name) {
			continue
		}
		for _, clients := range concurrency {
			file := func(kind string) string {
				return filepath.Join(*writeProfiles, fmt.Sprintf("%s-%s-%s-%d.pprof", b.side, kind, strings.ReplaceAll(op.name, " ", "-"), clients))
			}
			b.saveProfile("/debug/pprof/allocs", file("allocs-before"))
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				b.saveProfile(fmt.Sprintf("/debug/pprof/profile?seconds=%d", *profileSecs), file("cpu"))
			}()
			start, cpu := time.Now(), b.cpu()
			done, failed := b.runFor(op, clients, dur)
			took, cpu := time.Since(start), b.cpu()-cpu
			wg.Wait()
			b.saveProfile("/debug/pprof/allocs", file("allocs"))
			rate := float64(done) / took.Seconds()
			// The server's CPU per write is what a machine shared with
			// other work changes least.
			report(fmt.Sprintf("%s, %d clients, %s", op.name, clients, took.Round(time.Millisecond)),
				fmt.Sprintf("%.0f/s (%d failed), %.2f ms CPU each", rate, failed, 1000*cpu/float64(max(done, 1))), "")
			record(fmt.Sprintf("%s/s (%d clients)", op.name, clients), "/s", rate)
		}
	}
	fmt.Printf("profiles in %s: go tool pprof -top bin/apiserver <cpu file>; allocations: go tool pprof -sample_index=alloc_space -base <allocs-before> <allocs>\n", *writeProfiles)
}

// cpu is the CPU seconds the server's processes have used.
func (b *bench) cpu() float64 {
	var sum float64
	for _, pid := range b.pids {
		sum += cpuSeconds(pid)
	}
	return sum
}

// The create runs number their new-* objects across runs; the delete runs
// delete them in the same order.
var createSeq, deleteSeq atomic.Int64

// runFor sends op's requests from clients workers until dur has passed
// and returns how many succeeded and failed.
func (b *bench) runFor(op writeOp, clients int, dur time.Duration) (done, failed int64) {
	deadline := time.Now().Add(dur)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				i := int(next.Add(1))
				switch op.name {
				case "create":
					i = int(createSeq.Add(1))
				case "delete":
					if i = int(deleteSeq.Add(1)); int64(i) > createSeq.Load() {
						return
					}
				}
				method, path, contentType, body, want := op.req(i, *objects)
				resp, err := b.request(method, path, body, contentType)
				if err != nil {
					atomic.AddInt64(&failed, 1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != want {
					atomic.AddInt64(&failed, 1)
					continue
				}
				atomic.AddInt64(&done, 1)
			}
		}()
	}
	wg.Wait()
	return done, failed
}
