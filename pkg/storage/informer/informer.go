// Package informer keeps an in-process consumer current with the objects
// under one storage prefix, as client-go's reflector does over HTTP: it
// lists, then applies each watch event, and lists again after the watch
// ends or fails. The apiserver uses it to hold what it decides from
// (RBAC's roles and bindings) in memory, fed by the watch cache, so that
// no request reads etcd to be authorized.
package informer

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/storage"
)

// Handler receives a prefix's objects: Replace with all of them after
// each list, then Set for each added or changed object and Delete for
// each removed one. Objects are read-only (possibly shared).
type Handler interface {
	Replace(objs []runtime.Object)
	Set(obj runtime.Object)
	Delete(obj runtime.Object)
}

// retryInterval is the pause before listing again after a failure.
const retryInterval = time.Second

// Run keeps h current with the objects under prefix until ctx ends.
// synced, if not nil, is closed after the first Replace.
func Run(ctx context.Context, s storage.Interface, prefix string, h Handler, synced chan<- struct{}) {
	for ctx.Err() == nil {
		rv, err := list(ctx, s, prefix, h)
		if err == nil {
			if synced != nil {
				close(synced)
				synced = nil
			}
			err = follow(ctx, s, prefix, rv, h)
		}
		if err != nil && ctx.Err() == nil {
			klog.V(2).InfoS("Listing again", "prefix", prefix, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(retryInterval):
		}
	}
}

func list(ctx context.Context, s storage.Interface, prefix string, h Handler) (int64, error) {
	res, err := s.List(ctx, prefix, storage.ListOptions{Mode: storage.ReadMostRecent})
	if err != nil {
		return 0, err
	}
	h.Replace(res.Items)
	return res.ResourceVersion, nil
}

// follow applies the watch events after rv until the watch ends.
func follow(ctx context.Context, s storage.Interface, prefix string, rv int64, h Handler) error {
	w, err := s.Watch(ctx, prefix, storage.WatchOptions{ResourceVersion: rv, Mode: storage.ReadNotOlderThan, Recursive: true})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			switch e.Type {
			case watch.Added, watch.Modified:
				h.Set(e.Object)
			case watch.Deleted:
				h.Delete(e.Object)
			case watch.Error:
				return apierrors.FromObject(e.Object)
			}
		}
	}
}
