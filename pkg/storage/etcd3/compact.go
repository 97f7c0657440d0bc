package etcd3

import (
	"context"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/klog/v2"
)

// compactRevKey is the key kube-apiservers share to agree on compaction;
// its version counts the intervals, its value the revision to compact at
// the next one.
const compactRevKey = "compact_rev_key"

// Compactor compacts etcd's history every interval, coordinated with every
// other apiserver on the same etcd as kube-apiserver does: each interval,
// the one whose compare-and-swap on compactRevKey succeeds records the
// current revision and compacts up to the one recorded an interval before;
// the others learn the new version and wait for the next interval. History
// thus stays available for at least one interval.
type Compactor struct {
	client   *clientv3.Client
	interval time.Duration
	// version and rev are what this compactor last saw of compactRevKey.
	version, rev int64
}

// NewCompactor returns a compactor; Run starts it.
func NewCompactor(client *clientv3.Client, interval time.Duration) *Compactor {
	return &Compactor{client: client, interval: interval}
}

// Run compacts every interval until ctx ends.
func (c *Compactor) Run(ctx context.Context) {
	tick := time.NewTicker(c.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, err := c.Step(ctx); err != nil && ctx.Err() == nil {
				klog.FromContext(ctx).Error(err, "Compacting etcd history")
			}
		}
	}
}

// Step runs one interval's round and returns the revision it compacted
// etcd to, or 0 when it did not compact.
func (c *Compactor) Step(ctx context.Context) (int64, error) {
	resp, err := c.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(compactRevKey), "=", c.version)).
		Then(clientv3.OpPut(compactRevKey, strconv.FormatInt(c.rev, 10))).
		Else(clientv3.OpGet(compactRevKey)).
		Commit()
	if err != nil {
		return 0, err
	}
	if !resp.Succeeded {
		// Another apiserver took this interval.
		kv := resp.Responses[0].GetResponseRange().Kvs[0]
		c.version, c.rev = kv.Version, resp.Header.Revision
		return 0, nil
	}
	compactTo := c.rev
	c.version, c.rev = c.version+1, resp.Header.Revision
	if compactTo == 0 {
		return 0, nil
	}
	if _, err := c.client.Compact(ctx, compactTo); err != nil {
		return 0, err
	}
	klog.FromContext(ctx).V(2).Info("Compacted etcd history", "revision", compactTo)
	return compactTo, nil
}
