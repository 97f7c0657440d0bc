//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The load balancer's health check (deploy/lb/haproxy.cfg): every
// second, two failures take an apiserver out.
const (
	lbCheckInterval = time.Second
	lbFall          = 2
)

// write is one create of a ledger writer: when it started, when it
// ended, and whether it was acknowledged.
type write struct {
	start, end time.Time
	ok         bool
}

// longestFailedGap is, over a writer's writes in order, the longest time
// from the start of a failed write to the end of the next acknowledged
// one: how long the writer could not write. Zero when none failed.
func longestFailedGap(writes []write) (gap time.Duration, failed int) {
	var since time.Time
	for _, w := range writes {
		switch {
		case !w.ok:
			failed++
			if since.IsZero() {
				since = w.start
			}
		case !since.IsZero():
			if d := w.end.Sub(since); d > gap {
				gap = d
			}
			since = time.Time{}
		}
	}
	return gap, failed
}

// ownConnection is a client through the load balancer on a connection of
// its own: client-go shares one transport, hence one HTTP/2 connection
// and one apiserver behind the balancer, between equal configurations,
// and a dial function of its own opts out of that sharing.
func ownConnection(t *testing.T) kubernetes.Interface {
	t.Helper()
	cfg := restConfig(t, "apiserver-lb")
	cfg.Dial = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// scheduledMinutes are the scheduled times of a CronJob's Jobs, in order,
// failing the test on a time with two Jobs.
func scheduledMinutes(t *testing.T, c kubernetes.Interface, ns string) []time.Time {
	t.Helper()
	list, err := c.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byTime := map[time.Time]string{}
	var times []time.Time
	for _, j := range list.Items {
		at, err := time.Parse(time.RFC3339, j.Annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"])
		if err != nil {
			t.Fatalf("Job %s without a scheduled time: %v", j.Name, err)
		}
		if other, dup := byTime[at]; dup {
			t.Fatalf("scheduled time %s has two Jobs: %s and %s", at, other, j.Name)
		}
		byTime[at] = j.Name
		times = append(times, at)
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	return times
}

// lbLog is what the load balancer logged about a server's state.
func lbLog(t *testing.T, server string) string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(docker(t, "logs", "-t", container(t, "apiserver-lb")), "\n") {
		if strings.Contains(l, "apiservers/"+server+" is") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

func loadBalancerApiserverStoppedFor60sWritesFailOverAndNoJobIsMissed(t *testing.T) {
	restartOnExit(t, "apiserver-0")
	logsOnFailure(t)
	ctx := context.Background()
	c := client(t, "apiserver-lb")
	const ns = "e2e-failover"
	namespace(t, c, ns)
	history := int32(10)
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "tick"},
		Spec: batchv1.CronJobSpec{
			Schedule:                   "*/1 * * * *",
			SuccessfulJobsHistoryLimit: &history,
			FailedJobsHistoryLimit:     &history,
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "tick", Image: "busybox", Command: []string{"true"}}},
			}}}},
		},
	}
	cj, err := c.BatchV1().CronJobs(ns).Create(ctx, cj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leaderBefore := leader(t, c)

	// Writers on connections of their own: the balancer spreads the
	// connections over both apiservers, so some go through apiserver-0.
	const writers = 6
	var mu sync.Mutex
	ledger := map[string]string{} // name → the content acknowledged
	writes := make([][]write, writers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for writer := 0; writer < writers; writer++ {
		wg.Add(1)
		go func(writer int, wc kubernetes.Interface) {
			defer wg.Done()
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				content := fmt.Sprintf("writer-%d-seq-%d", writer, seq)
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "w-"}, Data: map[string]string{"v": content}}
				start := time.Now()
				got, err := wc.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
				w := write{start: start, end: time.Now(), ok: err == nil}
				mu.Lock()
				writes[writer] = append(writes[writer], w)
				if err == nil {
					ledger[got.Name] = content
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(100 * time.Millisecond)
				} else {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}(writer, ownConnection(t))
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
			wg.Wait()
		}
	}()

	time.Sleep(3 * time.Second)
	// The twenty CronJobs' case runs meanwhile (TestOverlapped): the
	// balancer takes apiserver-0 out clear of the minute's turn, when no
	// pod is being created.
	inQuietPartOfMinute(t)
	stopped := time.Now()
	serviceT(t, "stop", "apiserver-0")
	t.Logf("apiserver-0 stopped (SIGTERM, shutdown delay 2s) in %v", time.Since(stopped).Round(time.Millisecond))
	time.Sleep(60*time.Second - time.Since(stopped))
	serviceT(t, "start", "apiserver-0")
	started := time.Now()
	if err := waitReady("apiserver-0", 120*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("apiserver-0 started again after %v and ready %v later", started.Sub(stopped).Round(time.Millisecond), time.Since(started).Round(time.Millisecond))
	// Back behind the balancer after two good checks.
	time.Sleep(3 * lbCheckInterval)
	close(stop)
	wg.Wait()

	// Writes failed over within the balancer's detection time: the checks
	// that take an apiserver out, and one more interval for the check in
	// flight when it stopped and the writer's retry.
	limit := (lbFall + 1) * lbCheckInterval
	var longest time.Duration
	acked, failed, disturbed := 0, 0, 0
	for writer, ws := range writes {
		gap, n := longestFailedGap(ws)
		t.Logf("writer %d: %d writes, %d failed, longest gap %v", writer, len(ws), n, gap.Round(time.Millisecond))
		failed += n
		acked += len(ws) - n
		if n > 0 {
			disturbed++
		}
		if gap > longest {
			longest = gap
		}
	}
	if longest > limit {
		t.Errorf("a writer could not write for %v, beyond the balancer's detection time %v", longest, limit)
	}
	t.Logf("through the balancer while apiserver-0 was stopped for 60s: %d writes acknowledged, %d failed, in %d of %d writers; longest gap of failed writes %v (limit %v)",
		acked, failed, disturbed, writers, longest.Round(time.Millisecond), limit)
	t.Logf("the balancer on apiserver-0:\n%s", lbLog(t, "apiserver-0"))

	// Nothing acknowledged is lost, nothing is stored twice.
	list, err := c.CoreV1().ConfigMaps(ns).List(ctx, ownConfigMaps(""))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{} // content → name
	for _, cm := range list.Items {
		content := cm.Data["v"]
		if other, dup := seen[content]; dup {
			t.Errorf("content %s stored twice: %s and %s", content, other, cm.Name)
		}
		seen[content] = cm.Name
		if want, ok := ledger[cm.Name]; ok && want != content {
			t.Errorf("%s holds %q, acknowledged %q", cm.Name, content, want)
		}
	}
	for name, content := range ledger {
		if _, ok := seen[content]; !ok {
			t.Errorf("acknowledged write %s (%s) is missing", name, content)
		}
	}
	t.Logf("all %d acknowledged writes stored with their content; %d objects stored", len(ledger), len(list.Items))

	// No Job missed: one for every minute from the CronJob's creation
	// until one scheduled after apiserver-0 came back.
	back := time.Now()
	eventually(t, 150*time.Second, "a Job scheduled after apiserver-0 came back", func() bool {
		times := scheduledMinutes(t, c, ns)
		return len(times) > 0 && times[len(times)-1].After(back)
	})
	times := scheduledMinutes(t, c, ns)
	created := cj.CreationTimestamp.Time
	var want []time.Time
	for m := created.Truncate(time.Minute).Add(time.Minute); !m.After(times[len(times)-1]); m = m.Add(time.Minute) {
		want = append(want, m)
	}
	if fmt.Sprint(times) != fmt.Sprint(want) {
		t.Fatalf("Jobs scheduled at %v, want one for each minute %v", times, want)
	}
	during := 0
	for _, at := range times {
		if at.After(stopped) && at.Before(started) {
			during++
		}
	}
	t.Logf("the CronJob has a Job for each of the %d minutes since its creation, %d while apiserver-0 was stopped; controller-manager leader %s before, %s after",
		len(times), during, leaderBefore, leader(t, c))
}
