//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

func namespace(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func configMap(name string, data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": data}}
}

// nextEvent reads the next event of w within limit.
func nextEvent(t *testing.T, w watch.Interface, limit time.Duration) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(limit):
		t.Fatalf("no watch event within %v", limit)
	}
	return watch.Event{}
}

func clusterWritesThroughOneApiserverAreReadAndWatchedThroughTheOther(t *testing.T) {
	logsOnFailure(t)
	c0, c1 := client(t, "apiserver-0"), client(t, "apiserver-1")
	ctx := context.Background()
	namespace(t, c0, "e2e-cross")
	w, err := watchClient(t, "apiserver-1").CoreV1().ConfigMaps("e2e-cross").Watch(ctx, ownConfigMaps(""))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	const n = 50
	start := time.Now()
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("cm-%03d", i)
		if _, err := c0.CoreV1().ConfigMaps("e2e-cross").Create(ctx, configMap(name, name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := c1.CoreV1().ConfigMaps("e2e-cross").Get(ctx, name, metav1.GetOptions{})
		if err != nil || got.Data["v"] != name {
			t.Fatalf("read back %s through apiserver-1: %v %v", name, got, err)
		}
	}
	t.Logf("%d writes through apiserver-0, each read back through apiserver-1, in %v", n, time.Since(start).Round(time.Millisecond))
	for i := 0; i < n; i++ {
		ev := nextEvent(t, w, 10*time.Second)
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if ev.Type != watch.Added || !ok || cm.Name != fmt.Sprintf("cm-%03d", i) {
			t.Fatalf("watch event %d: %s %v, want ADDED cm-%03d", i, ev.Type, ev.Object, i)
		}
	}
	t.Logf("the watch on apiserver-1 saw all %d writes in order, %v after the first write", n, time.Since(start).Round(time.Millisecond))
}

func TestEtcd_OneMemberDownIsServedQuorumLossFailsClearlyAndRecovers(t *testing.T) {
	restartOnExit(t, "etcd-0", "etcd-1", "etcd-2")
	logsOnFailure(t)
	c0, c1 := client(t, "apiserver-0"), client(t, "apiserver-1")
	ctx := context.Background()
	namespace(t, c0, "e2e-etcd")
	cms := c0.CoreV1().ConfigMaps("e2e-etcd")
	w, err := watchClient(t, "apiserver-1").CoreV1().ConfigMaps("e2e-etcd").Watch(ctx, ownConfigMaps(""))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { w.Stop() }()

	serviceT(t, "stop", "etcd-2")
	start := time.Now()
	for i := 0; i < 10; i++ {
		if _, err := cms.Create(ctx, configMap(fmt.Sprintf("one-down-%d", i), "x"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("write with one member down: %v", err)
		}
		if _, err := c1.CoreV1().ConfigMaps("e2e-etcd").Get(ctx, fmt.Sprintf("one-down-%d", i), metav1.GetOptions{}); err != nil {
			t.Fatalf("read with one member down: %v", err)
		}
	}
	t.Logf("one etcd member down: 10 writes and reads in %v", time.Since(start).Round(time.Millisecond))
	serviceT(t, "start", "etcd-2")
	// Caught up: with etcd-0 stopped, a write commits only once etcd-2
	// holds the whole log, the writes it missed included.
	serviceT(t, "stop", "etcd-0")
	caughtUp := eventually(t, 60*time.Second, "a write on etcd-1 and the restarted etcd-2", func() bool {
		_, err := cms.Create(ctx, configMap("caught-up", "x"), metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err)
	})
	for i := 0; i < 10; i++ {
		if _, err := c1.CoreV1().ConfigMaps("e2e-etcd").Get(ctx, fmt.Sprintf("one-down-%d", i), metav1.GetOptions{}); err != nil {
			t.Fatalf("read on etcd-1 and the restarted etcd-2: %v", err)
		}
	}
	t.Logf("etcd-2 restarted and caught up: with etcd-0 stopped, a write committed after %v and the writes it missed read back", caughtUp.Round(time.Millisecond))
	serviceT(t, "start", "etcd-0")

	serviceT(t, "stop", "etcd-1", "etcd-2")
	// A client that outwaits the server, so that a slow answer is seen
	// as what the server answered and when, not as the client giving up.
	patient := restConfig(t, "apiserver-0")
	patient.Timeout = 6 * requestTimeout
	pc, err := kubernetes.NewForConfig(patient)
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	_, err = pc.CoreV1().ConfigMaps("e2e-etcd").Create(ctx, configMap("no-quorum", "x"), metav1.CreateOptions{})
	took := time.Since(start)
	if err == nil {
		t.Fatal("a write without etcd quorum succeeded")
	}
	if _, ok := err.(apierrors.APIStatus); !ok {
		t.Fatalf("a write without quorum failed after %v with %T %v, want a Status", took, err, err)
	}
	if took > requestTimeout+5*time.Second {
		t.Fatalf("a write without quorum took %v, beyond the request timeout %v: %v", took, requestTimeout, err)
	}
	t.Logf("quorum lost: a write failed after %v with %q", took.Round(time.Millisecond), err)
	notReady := eventually(t, 60*time.Second, "/readyz reporting etcd", func() bool {
		ok, out := readyz("apiserver-0")
		return !ok && strings.Contains(out, "etcd")
	})
	t.Logf("quorum lost: /readyz of apiserver-0 failed on etcd within %v", notReady.Round(time.Millisecond))

	serviceT(t, "start", "etcd-1", "etcd-2")
	restored := time.Now()
	eventually(t, 90*time.Second, "writes resuming", func() bool {
		_, err := cms.Create(ctx, configMap("quorum-back", "x"), metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err)
	})
	t.Logf("quorum restored: writes resumed %v after the members started", time.Since(restored).Round(time.Millisecond))
	// The watch opened before the faults goes on: it sees the ten writes,
	// the one that proved etcd-2 caught up, then the one after quorum came
	// back. The server may end a watch
	// stream across an outage; a client then watches again from the last
	// resourceVersion it saw, and must get the rest without a relist
	// (no 410 Gone) and without a gap.
	var names []string
	lastRV, resumed := "", 0
	deadline := time.Now().Add(60 * time.Second)
	for len(names) < 12 && time.Now().Before(deadline) {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				w, err = watchClient(t, "apiserver-1").CoreV1().ConfigMaps("e2e-etcd").Watch(ctx, ownConfigMaps(lastRV))
				if err != nil {
					t.Fatalf("watching again from resourceVersion %s: %v", lastRV, err)
				}
				resumed++
				continue
			}
			cm, isCM := ev.Object.(*corev1.ConfigMap)
			if ev.Type != watch.Added || !isCM {
				t.Fatalf("watch across the outage: %s %v", ev.Type, ev.Object)
			}
			lastRV = cm.ResourceVersion
			// A write that timed out without quorum is indeterminate, as
			// etcd's timeouts are: its proposal may still commit once the
			// members are back.
			if cm.Name != "no-quorum" {
				names = append(names, cm.Name)
			}
		case <-time.After(time.Until(deadline)):
		}
	}
	want := []string{}
	for i := 0; i < 10; i++ {
		want = append(want, fmt.Sprintf("one-down-%d", i))
	}
	want = append(want, "caught-up", "quorum-back")
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("watch across the outage saw %v, want %v", names, want)
	}
	t.Logf("the watch opened before the outage saw every write in order; streams resumed from the last resourceVersion: %d, relists: 0", resumed)
}

func TestApiserver_Kill9DuringWritesLosesNoAcknowledgedWrite(t *testing.T) {
	restartOnExit(t, "apiserver-0")
	logsOnFailure(t)
	ctx := context.Background()
	c0 := client(t, "apiserver-0")
	namespace(t, c0, "e2e-ledger")
	clients := []kubernetes.Interface{c0, client(t, "apiserver-1")}
	var mu sync.Mutex
	ledger := map[string]string{} // name → the content acknowledged
	failed := 0
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for writer := 0; writer < 6; writer++ {
		wg.Add(1)
		go func(writer int) {
			defer wg.Done()
			c := clients[writer%2]
			for seq := 0; ; seq++ {
				select {
				case <-stop:
					return
				default:
				}
				content := fmt.Sprintf("writer-%d-seq-%d", writer, seq)
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "w-"}, Data: map[string]string{"v": content}}
				got, err := c.CoreV1().ConfigMaps("e2e-ledger").Create(ctx, cm, metav1.CreateOptions{})
				mu.Lock()
				if err == nil {
					ledger[got.Name] = content
				} else {
					failed++
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}(writer)
	}
	time.Sleep(2 * time.Second)
	docker(t, "kill", "-s", "KILL", container(t, "apiserver-0"))
	killed := time.Now()
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()
	serviceT(t, "start", "apiserver-0")
	if err := waitReady("apiserver-0", 120*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("apiserver-0 ready again %v after kill -9", time.Since(killed).Round(time.Millisecond))

	list, err := c0.CoreV1().ConfigMaps("e2e-ledger").List(ctx, ownConfigMaps(""))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{} // content → name
	found := 0
	for _, cm := range list.Items {
		content := cm.Data["v"]
		if other, dup := seen[content]; dup {
			t.Errorf("content %s stored twice: %s and %s", content, other, cm.Name)
		}
		seen[content] = cm.Name
		if want, ok := ledger[cm.Name]; ok {
			if want != content {
				t.Errorf("%s holds %q, acknowledged %q", cm.Name, content, want)
			}
			found++
		}
	}
	for name := range ledger {
		if _, ok := seen[ledger[name]]; !ok {
			t.Errorf("acknowledged write %s (%s) is missing", name, ledger[name])
		}
	}
	t.Logf("kill -9 of apiserver-0 amid 6 writers: %d writes acknowledged, %d found with their content, %d failed, %d objects stored",
		len(ledger), found, failed, len(list.Items))
}

// leader is the controller-manager service holding the Lease, from the
// holder identity (hostname_uuid).
func leader(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	lease, err := c.CoordinationV1().Leases("kube-system").Get(context.Background(), "kube-controller-manager", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	host, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
	return host
}

func controllerManagerLeaderStopsTheOtherTakesOverAndCronJobsGoOn(t *testing.T) {
	restartOnExit(t, "controller-manager-0", "controller-manager-1")
	logsOnFailure(t)
	ctx := context.Background()
	c := client(t, "apiserver-1")
	namespace(t, c, "e2e-cron")
	if out, err := kubectl("create", "cronjob", "tick", "-n", "e2e-cron", "--image=busybox", "--schedule=* * * * *"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	var first string
	eventually(t, 30*time.Second, "a leader", func() bool { first = leader(t, c); return first != "" })

	// The twenty CronJobs' case runs meanwhile (TestOverlapped): both
	// failovers begin clear of the minute's turn, when no pod is being
	// created.
	inQuietPartOfMinute(t)
	docker(t, "kill", "-s", "TERM", container(t, first))
	took := eventually(t, 30*time.Second, "the other taking the Lease after SIGTERM", func() bool {
		l := leader(t, c)
		return l != "" && l != first
	})
	second := leader(t, c)
	t.Logf("SIGTERM to %s: %s took the Lease after %v (lease duration %s)", first, second, took.Round(time.Millisecond), suiteEnv["LEASE_DURATION"])
	serviceT(t, "start", first)

	docker(t, "kill", "-s", "KILL", container(t, second))
	took = eventually(t, 30*time.Second, "the other taking the Lease after kill -9", func() bool {
		l := leader(t, c)
		return l != "" && l != second
	})
	t.Logf("kill -9 of %s: %s took the Lease after %v (lease duration %s)", second, leader(t, c), took.Round(time.Millisecond), suiteEnv["LEASE_DURATION"])
	serviceT(t, "start", second)

	// The new leader goes on: a Job for a scheduled time after the
	// second failover appears.
	failedOver := time.Now()
	took = eventually(t, 90*time.Second, "a Job scheduled after the failovers", func() bool {
		list, err := c.BatchV1().Jobs("e2e-cron").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, j := range list.Items {
			at, err := time.Parse(time.RFC3339, j.Annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"])
			if err == nil && at.After(failedOver) {
				return true
			}
		}
		return false
	})
	t.Logf("a Job for a time scheduled after the failovers appeared %v after them", took.Round(time.Millisecond))
	list, err := c.BatchV1().Jobs("e2e-cron").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scheduled := map[string]string{}
	var names []string
	for _, j := range list.Items {
		at := j.Annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"]
		if other, dup := scheduled[at]; dup && at != "" {
			t.Errorf("scheduled time %s has two Jobs: %s and %s", at, other, j.Name)
		}
		scheduled[at] = j.Name
		names = append(names, j.Name)
	}
	sort.Strings(names)
	t.Logf("after both failovers the CronJob has %d Jobs, one per scheduled time: %v", len(list.Items), names)
}

// ownConfigMaps selects the ConfigMaps a test writes: every namespace also
// holds kube-root-ca.crt, which the root CA publisher keeps there.
func ownConfigMaps(resourceVersion string) metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: "metadata.name!=kube-root-ca.crt", ResourceVersion: resourceVersion}
}
