package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

func TestProcessNext_RetriesFailuresKeepsBackoffOnRequeueAndForgetsSuccesses(t *testing.T) {
	for _, tc := range []struct {
		name         string
		requeueAfter time.Duration
		err          error
		// earlier failures of the key before this sync
		failures     int
		wantRequeues int
	}{
		{name: "failure is retried with backoff", err: errors.New("boom"), failures: 1, wantRequeues: 2},
		{name: "success forgets the backoff", failures: 1, wantRequeues: 0},
		{name: "requeue keeps the backoff", requeueAfter: time.Hour, failures: 1, wantRequeues: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := workqueue.NewRateLimitingQueue(workqueue.NewItemExponentialFailureRateLimiter(time.Hour, time.Hour))
			defer q.ShutDown()
			for i := 0; i < tc.failures; i++ {
				q.AddRateLimited("key")
			}
			q.Add("key")
			var synced []string
			l := Loop[string]{
				Queue: q,
				Sync: func(_ context.Context, key string) (time.Duration, error) {
					synced = append(synced, key)
					return tc.requeueAfter, tc.err
				},
				Describe: func(key string) string { return "syncing " + key },
			}
			if !l.ProcessNext(context.Background()) {
				t.Fatal("ProcessNext reported a shut down queue")
			}
			if len(synced) != 1 || synced[0] != "key" {
				t.Fatalf("synced %v, want [key]", synced)
			}
			if got := q.NumRequeues("key"); got != tc.wantRequeues {
				t.Errorf("NumRequeues = %d, want %d", got, tc.wantRequeues)
			}
		})
	}
}

func TestProcessNext_FalseOnceTheQueueShutsDown(t *testing.T) {
	q := workqueue.NewRateLimitingQueue(workqueue.DefaultControllerRateLimiter())
	q.ShutDown()
	l := Loop[string]{Queue: q, Sync: Plain(func(context.Context, string) error { return nil })}
	if l.ProcessNext(context.Background()) {
		t.Fatal("ProcessNext = true on a shut down queue")
	}
}
