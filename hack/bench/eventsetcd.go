package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cronplane/cronplane/pkg/etcdserver"
)

var (
	eventsEtcd = flag.Bool("events-etcd", false, "instead of the suite, measure CronJob creates (-objects, -clients) alone, under an Event flood with Events on the same etcd, and under the flood with Events on an etcd of their own (--etcd-servers-overrides=/events#...), -runs times each in turn, each run on fresh etcds")
	flooders   = flag.Int("event-flooders", 16, "clients writing Events without pause in the -events-etcd scenario")
)

// eventsSetups are the -events-etcd cases, in the order they run and print.
var eventsSetups = []struct {
	name            string
	flood, override bool
}{
	{"no Events", false, false},
	{"Event flood, one etcd", true, false},
	{"Event flood, Events on their own etcd", true, true},
}

// eventsEtcdScenario runs each setup in turn, -runs times, and prints the
// medians: what the override gives the writes that share the main etcd
// with a flood of Events.
func eventsEtcdScenario() {
	creates := make([][]float64, len(eventsSetups))
	events := make([][]float64, len(eventsSetups))
	for run := 0; run < *runs; run++ {
		for i, s := range eventsSetups {
			c, e := eventsEtcdRun(s.flood, s.override)
			fmt.Printf("run %d, %-40s CronJob creates %6.0f/s, Events %6.0f/s\n", run+1, s.name+":", c, e)
			creates[i] = append(creates[i], c)
			events[i] = append(events[i], e)
		}
	}
	fmt.Printf("\n== CronJob creates under an Event flood (%d CronJobs, %d clients; %d Event writers), medians of %d runs\n", *objects, *clients, *flooders, *runs)
	for i, s := range eventsSetups {
		fmt.Printf("%-40s CronJob creates %6.0f/s (%.2f of alone), Events %6.0f/s\n", s.name, median(creates[i]), median(creates[i])/median(creates[0]), median(events[i]))
	}
}

// eventsEtcdRun starts a main etcd and, with override, an Events etcd
// trusting the same CA (kube's overrides share the --etcd-*file flags),
// then an apiserver on them; it creates -objects CronJobs while
// -event-flooders clients write Events, if flood, and returns both rates
// over the creates.
func eventsEtcdRun(flood, override bool) (createRate, eventRate float64) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "cronplane-bench-events-")
	check(err)
	defer os.RemoveAll(dir)
	mainEtcd, err := etcdserver.Start(ctx, etcdserver.Config{DataDir: filepath.Join(dir, "etcd-main")})
	check(err)
	defer func() { _ = mainEtcd.Close() }()
	files := mainEtcd.ClientTLS()
	args := []string{"--etcd-servers", mainEtcd.ClientURL(), "--etcd-cafile", files.CAFile, "--etcd-certfile", files.CertFile, "--etcd-keyfile", files.KeyFile}
	if override {
		eventsDir := filepath.Join(dir, "etcd-events")
		check(os.CopyFS(filepath.Join(eventsDir, "pki"), os.DirFS(filepath.Join(dir, "etcd-main", "pki"))))
		eventsEtcd, err := etcdserver.Start(ctx, etcdserver.Config{DataDir: eventsDir})
		check(err)
		defer func() { _ = eventsEtcd.Close() }()
		args = append(args, "--etcd-servers-overrides", "/events#"+eventsEtcd.ClientURL())
	}
	apiDir := filepath.Join(dir, "apiserver")
	check(os.MkdirAll(apiDir, 0o700))
	b, stop := startAPIServer(apiDir, args...)
	defer stop()
	b.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"`+namespace+`"}}`, 201)

	var written atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	if flood {
		event := `{"apiVersion":"v1","kind":"Event","metadata":{"generateName":"flood-"},"involvedObject":{"kind":"CronJob","namespace":"` + namespace +
			`","name":"cj"},"reason":"Flood","message":"an Event of the flood","type":"Normal","source":{"component":"bench"}}`
		for w := 0; w < *flooders; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					resp, err := b.request("POST", "/api/v1/namespaces/"+namespace+"/events", event, "")
					if err != nil {
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode == 201 {
						written.Add(1)
					}
				}
			}()
		}
		// The flood at its pace before the creates start.
		time.Sleep(2 * time.Second)
	}
	before := written.Load()
	start := time.Now()
	parallel(*clients, *objects, func(i int) {
		b.do("POST", "/apis/batch/v1/namespaces/"+namespace+"/cronjobs", cronJob(i), 201)
	})
	took := time.Since(start).Seconds()
	eventRate = float64(written.Load()-before) / took
	close(done)
	wg.Wait()
	return float64(*objects) / took, eventRate
}
