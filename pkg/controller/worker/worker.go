// Package worker is the run loop the controllers share: goroutines that take
// keys off a rate-limited workqueue and sync them, one key at a time each,
// retrying a failed key with backoff and requeueing a key that asks for it.
package worker

import (
	"context"
	"fmt"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
)

// Loop syncs the keys of a queue, all of type K.
type Loop[K any] struct {
	Queue workqueue.RateLimitingInterface
	// Sync brings the state a key names to what it should be. An error
	// retries the key with backoff; else a positive requeueAfter syncs it
	// again that much later, keeping its backoff, and zero forgets it.
	Sync func(ctx context.Context, key K) (requeueAfter time.Duration, err error)
	// Describe says what a failed sync of key was doing, for the error
	// log (e.g. "deleting namespace x").
	Describe func(key K) string
}

// Start starts n workers, which process keys until the queue shuts down;
// one that panics is restarted a second later, as long as ctx lasts.
func (l Loop[K]) Start(ctx context.Context, n int) {
	for i := 0; i < n; i++ {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for l.ProcessNext(ctx) {
			}
		}, time.Second)
	}
}

// ProcessNext syncs the next key, waiting for one; false once the queue
// shuts down.
func (l Loop[K]) ProcessNext(ctx context.Context) bool {
	item, quit := l.Queue.Get()
	if quit {
		return false
	}
	defer l.Queue.Done(item)
	after, err := l.Sync(ctx, item.(K))
	switch {
	case err != nil:
		utilruntime.HandleError(fmt.Errorf("%s: %w", l.Describe(item.(K)), err))
		l.Queue.AddRateLimited(item)
	case after > 0:
		l.Queue.AddAfter(item, after)
	default:
		l.Queue.Forget(item)
	}
	return true
}

// Plain adapts a sync that never asks to be requeued.
func Plain[K any](sync func(context.Context, K) error) func(context.Context, K) (time.Duration, error) {
	return func(ctx context.Context, key K) (time.Duration, error) { return 0, sync(ctx, key) }
}
