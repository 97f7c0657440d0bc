package ttlafterfinished

import (
	"context"
	"reflect"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
)

var finishedAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// recordingQueue records the delays of AddAfter instead of waiting them.
type recordingQueue struct {
	workqueue.RateLimitingInterface
	after map[string]time.Duration
}

func (q *recordingQueue) AddAfter(item interface{}, d time.Duration) { q.after[item.(string)] = d }

type observations []float64

func (o *observations) Observe(v float64) { *o = append(*o, v) }

func ttl(s int32) *int32 { return &s }

func job(ttlSeconds *int32, conds ...batchv1.JobCondition) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "uid-1"},
		Spec:       batchv1.JobSpec{TTLSecondsAfterFinished: ttlSeconds},
		Status:     batchv1.JobStatus{Conditions: conds},
	}
}

func cond(t batchv1.JobConditionType, s corev1.ConditionStatus) batchv1.JobCondition {
	return batchv1.JobCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(finishedAt)}
}

func deleting(j *batchv1.Job) *batchv1.Job {
	now := metav1.NewTime(finishedAt)
	j.DeletionTimestamp = &now
	return j
}

func TestSync(t *testing.T) {
	complete := cond(batchv1.JobComplete, corev1.ConditionTrue)
	foreground := metav1.DeletePropagationForeground
	uid := job(nil).UID
	deleteAction := k8stesting.NewDeleteActionWithOptions(batchv1.SchemeGroupVersion.WithResource("jobs"), "ns", "j",
		metav1.DeleteOptions{PropagationPolicy: &foreground, Preconditions: &metav1.Preconditions{UID: &uid}})
	getAction := k8stesting.NewGetAction(batchv1.SchemeGroupVersion.WithResource("jobs"), "ns", "j")
	for _, tc := range []struct {
		name string
		// cached is the informer's Job, fresh the apiserver's (nil: none).
		cached, fresh *batchv1.Job
		// since is how long after finishedAt the sync runs.
		since       time.Duration
		wantActions []k8stesting.Action
		wantAfter   map[string]time.Duration
		wantLate    []float64
	}{{
		name:   "not finished is left alone",
		cached: job(ttl(0)), fresh: job(ttl(0)),
		since: time.Hour,
	}, {
		name:   "finished with a False condition is not finished",
		cached: job(ttl(0), cond(batchv1.JobComplete, corev1.ConditionFalse)), fresh: job(ttl(0)),
		since: time.Hour,
	}, {
		name:   "finished without a TTL is left alone",
		cached: job(nil, complete), fresh: job(nil, complete),
		since: time.Hour,
	}, {
		name:   "TTL not yet expired is requeued for the rest of it",
		cached: job(ttl(100), complete), fresh: job(ttl(100), complete),
		since:     40 * time.Second,
		wantAfter: map[string]time.Duration{"ns/j": 60 * time.Second},
	}, {
		name:   "expired is deleted in the foreground, on its UID",
		cached: job(ttl(10), complete), fresh: job(ttl(10), complete),
		since:       25 * time.Second,
		wantActions: []k8stesting.Action{getAction, deleteAction},
		wantLate:    []float64{15},
	}, {
		name:   "failed and expired is deleted",
		cached: job(ttl(0), cond(batchv1.JobFailed, corev1.ConditionTrue)), fresh: job(ttl(0), cond(batchv1.JobFailed, corev1.ConditionTrue)),
		since:       0,
		wantActions: []k8stesting.Action{getAction, deleteAction},
		wantLate:    []float64{0},
	}, {
		name:   "TTL lengthened since the cache saw it is requeued, not deleted",
		cached: job(ttl(10), complete), fresh: job(ttl(1000), complete),
		since:       25 * time.Second,
		wantActions: []k8stesting.Action{getAction},
		wantAfter:   map[string]time.Duration{"ns/j": 975 * time.Second},
	}, {
		name:   "TTL removed since the cache saw it is left alone",
		cached: job(ttl(10), complete), fresh: job(nil, complete),
		since:       25 * time.Second,
		wantActions: []k8stesting.Action{getAction},
	}, {
		name:        "deleted since the cache saw it is left alone",
		cached:      job(ttl(10), complete),
		since:       25 * time.Second,
		wantActions: []k8stesting.Action{getAction},
	}, {
		name:   "being deleted is skipped",
		cached: deleting(job(ttl(10), complete)), fresh: deleting(job(ttl(10), complete)),
		since: 25 * time.Second,
	}, {
		name:   "being deleted since the cache saw it is skipped",
		cached: job(ttl(10), complete), fresh: deleting(job(ttl(10), complete)),
		since:       25 * time.Second,
		wantActions: []k8stesting.Action{getAction},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var objects []runtime.Object
			if tc.fresh != nil {
				objects = append(objects, tc.fresh)
			}
			client := fake.NewSimpleClientset(objects...)
			jobs := informers.NewSharedInformerFactory(client, 0).Batch().V1().Jobs()
			if err := jobs.Informer().GetIndexer().Add(tc.cached); err != nil {
				t.Fatal(err)
			}
			var late observations
			c := New(client, jobs, clocktesting.NewFakeClock(finishedAt.Add(tc.since)), &late)
			defer c.queue.ShutDown()
			q := &recordingQueue{RateLimitingInterface: c.queue, after: map[string]time.Duration{}}
			c.queue = q

			if err := c.sync(context.Background(), "ns/j"); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if got := client.Actions(); !reflect.DeepEqual(got, tc.wantActions) && (len(got) != 0 || len(tc.wantActions) != 0) {
				t.Errorf("actions:\n got %#v\nwant %#v", got, tc.wantActions)
			}
			if !reflect.DeepEqual(q.after, tc.wantAfter) && (len(q.after) != 0 || len(tc.wantAfter) != 0) {
				t.Errorf("requeued %v, want %v", q.after, tc.wantAfter)
			}
			if !reflect.DeepEqual([]float64(late), tc.wantLate) {
				t.Errorf("deletion durations %v, want %v", late, tc.wantLate)
			}
		})
	}
}

func TestSync_ConditionWithoutTimeIsAnError(t *testing.T) {
	j := job(ttl(0), batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue})
	client := fake.NewSimpleClientset(j)
	jobs := informers.NewSharedInformerFactory(client, 0).Batch().V1().Jobs()
	if err := jobs.Informer().GetIndexer().Add(j); err != nil {
		t.Fatal(err)
	}
	c := New(client, jobs, clocktesting.NewFakeClock(finishedAt), nil)
	defer c.queue.ShutDown()
	if err := c.sync(context.Background(), "ns/j"); err == nil {
		t.Fatal("sync of a Job finished at no time succeeded")
	}
	if got := client.Actions(); len(got) != 0 {
		t.Fatalf("actions %v", got)
	}
}

func TestEnqueue_OnlyFinishedJobsWithATTLNotBeingDeleted(t *testing.T) {
	complete := cond(batchv1.JobComplete, corev1.ConditionTrue)
	for _, tc := range []struct {
		name string
		job  *batchv1.Job
		want int
	}{
		{"finished with a TTL", job(ttl(5), complete), 1},
		{"finished without a TTL", job(nil, complete), 0},
		{"running with a TTL", job(ttl(5)), 0},
		{"being deleted", deleting(job(ttl(5), complete)), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewSimpleClientset()
			c := New(client, informers.NewSharedInformerFactory(client, 0).Batch().V1().Jobs(), clocktesting.NewFakeClock(finishedAt), nil)
			defer c.queue.ShutDown()
			c.enqueue(tc.job)
			if got := c.queue.Len(); got != tc.want {
				t.Fatalf("queued %d, want %d", got, tc.want)
			}
		})
	}
}
