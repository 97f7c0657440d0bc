package cronjob

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// recordingQueue records the delays of AddAfter.
type recordingQueue struct {
	workqueue.RateLimitingInterface
	mu     sync.Mutex
	delays map[string]time.Duration
}

func (q *recordingQueue) AddAfter(item interface{}, d time.Duration) {
	q.mu.Lock()
	q.delays[item.(string)] = d
	q.mu.Unlock()
	q.RateLimitingInterface.AddAfter(item, d)
}

func (q *recordingQueue) delay(key string) (time.Duration, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	d, ok := q.delays[key]
	return d, ok
}

// dueCronJobs returns a controller over n CronJobs on "* * * * *", all
// due at now, queued as a tick queues them.
func dueCronJobs(t *testing.T, n int, clk clock.PassiveClock) (*Controller, *fake.Clientset, *recordingQueue) {
	t.Helper()
	created := at("2026-11-23T10:00:30Z")
	cronJobs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	var objs []runtime.Object
	q := &recordingQueue{RateLimitingInterface: workqueue.NewRateLimitingQueue(workqueue.DefaultControllerRateLimiter()), delays: map[string]time.Duration{}}
	for i := 0; i < n; i++ {
		cj := newCronJob("* * * * *", created)
		cj.Name, cj.UID = fmt.Sprintf("cj-%02d", i), types.UID(fmt.Sprintf("uid-%02d", i))
		if err := cronJobs.Add(cj); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, cj)
		q.Add("ns/" + cj.Name)
	}
	client := fake.NewSimpleClientset(objs...)
	c := &Controller{client: client, cronJobs: batchlisters.NewCronJobLister(cronJobs),
		jobs:  cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{controllerIndex: byControllerUID}),
		queue: q, recorder: record.NewFakeRecorder(10 * n), clock: clk, local: time.UTC}
	return c, client, q
}

// When a tick falls due for many CronJobs, a worker creates all their
// Jobs before it writes the statuses recording them, and every status
// gets written.
func TestWorker_CreatesEveryDueJobBeforeWritingStatuses(t *testing.T) {
	const n = 20
	tick := at("2026-11-23T10:01:00Z")
	c, client, q := dueCronJobs(t, n, clocktesting.NewFakePassiveClock(tick.Add(2*time.Second)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.worker(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		requeued := 0
		for i := 0; i < n; i++ {
			if _, ok := q.delay(fmt.Sprintf("ns/cj-%02d", i)); ok {
				requeued++
			}
		}
		if requeued == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d CronJobs requeued for their next tick", requeued, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	q.ShutDown()
	<-done

	var order []string
	for _, a := range client.Actions() {
		switch {
		case a.GetVerb() == "create" && a.GetResource().Resource == "jobs":
			order = append(order, "create")
		case a.GetVerb() == "update" && a.GetSubresource() == "status":
			order = append(order, "status")
		}
	}
	want := make([]string, 0, 2*n)
	for i := 0; i < n; i++ {
		want = append(want, "create")
	}
	for i := 0; i < n; i++ {
		want = append(want, "status")
	}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("requests %v, want every create before any status write", order)
	}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("cj-%02d", i)
		cj, err := client.BatchV1().CronJobs("ns").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(cj.Status.Active) != 1 || cj.Status.Active[0].Name != jobName(cj, tick) ||
			cj.Status.LastScheduleTime == nil || !cj.Status.LastScheduleTime.Time.Equal(tick) {
			t.Fatalf("%s: status %+v, want its Job of %s active", name, cj.Status, tick)
		}
		if d, _ := q.delay("ns/" + name); d != 58*time.Second+nextTickMargin {
			t.Fatalf("%s requeued after %s, want %s", name, d, 58*time.Second+nextTickMargin)
		}
	}
}

// While its status write waits, a CronJob is not synced again (an event
// about it marks it for later), and its next tick is counted from the
// start of the sync, not from the write.
func TestWorker_StatusWriteHoldsTheKeyAndTheNextTickCountsFromTheSync(t *testing.T) {
	tick := at("2026-11-23T10:01:00Z")
	clock := clocktesting.NewFakePassiveClock(tick.Add(2 * time.Second))
	c, client, q := dueCronJobs(t, 1, clock)
	defer q.ShutDown()
	key, _ := q.Get()
	c.processNext(context.Background(), key.(string))
	if n := len(c.writes); n != 1 {
		t.Fatalf("%d status writes waiting, want 1", n)
	}
	// The Job informer sees the new Job.
	q.Add("ns/cj-00")
	if n := q.Len(); n != 0 {
		t.Fatalf("queue length %d while the status write waits, want 0", n)
	}
	clock.SetTime(tick.Add(7 * time.Second))
	w := c.popWrite()
	requeue, err := c.finishSync(context.Background(), w)
	c.done(w.key, w.start, requeue, err)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := q.delay("ns/cj-00"); d != 53*time.Second+nextTickMargin {
		t.Fatalf("requeued after %s, want %s: the next tick less the 5s the write waited", d, 53*time.Second+nextTickMargin)
	}
	if n := q.Len(); n != 1 {
		t.Fatalf("queue length %d once written, want 1: the Job's event", n)
	}
	cj, err := client.BatchV1().CronJobs("ns").Get(context.Background(), "cj-00", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cj.Status.Active) != 1 {
		t.Fatalf("status.active %+v, want the new Job", cj.Status.Active)
	}
}

// Several workers make every write too.
func TestRun_SeveralWorkersSyncAndWriteEveryCronJob(t *testing.T) {
	const n = 50
	tick := at("2026-11-23T10:01:00Z")
	c, client, q := dueCronJobs(t, n, clocktesting.NewFakePassiveClock(tick.Add(time.Second)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < 5; i++ {
		go c.worker(ctx)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		written := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "update" && a.GetSubresource() == "status" {
				written++
			}
		}
		if written == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d statuses written", written, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	q.ShutDown()
	jobs, err := client.BatchV1().Jobs("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != n {
		t.Fatalf("%d Jobs, want %d", len(jobs.Items), n)
	}
}

// A sync works on a copy that shares the cached CronJob's metadata and
// spec: the informer's object is left as it was, status included.
func TestSync_LeavesTheCachedCronJobUnchanged(t *testing.T) {
	tick := at("2026-11-23T10:01:00Z")
	c, client, _ := dueCronJobs(t, 1, clocktesting.NewFakePassiveClock(tick.Add(time.Second)))
	cached, err := c.cronJobs.CronJobs("ns").Get("cj-00")
	if err != nil {
		t.Fatal(err)
	}
	// Room in the backing array, where an append could write.
	cached.Status.Active = make([]corev1.ObjectReference, 0, 4)
	before := cached.DeepCopy()
	if _, err := c.sync(context.Background(), "ns/cj-00"); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(cached, before) || len(cached.Status.Active[:1]) != 1 || cached.Status.Active[:1][0].Name != "" {
		t.Fatalf("the cached CronJob changed: %+v", cached)
	}
	live, err := client.BatchV1().CronJobs("ns").Get(context.Background(), "cj-00", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(live.Status.Active) != 1 || live.Spec.JobTemplate.Labels["app"] != "x" {
		t.Fatalf("written %+v", live)
	}
}
