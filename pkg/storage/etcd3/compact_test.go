package etcd3_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cronplane/cronplane/pkg/storage/etcd3"
)

func TestCompactor_OnlyOneOfSeveralCompactsEachInterval(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := etcd3.NewCompactor(etcd.Client(), time.Second)
	b := etcd3.NewCompactor(etcd.Client(), time.Second)
	put := func() int64 {
		resp, err := etcd.Client().Put(ctx, "/compact-test/k", "v")
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	var compactions []int64
	for round := 0; round < 4; round++ {
		put()
		for _, c := range []*etcd3.Compactor{a, b} {
			rev, err := c.Step(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rev != 0 {
				compactions = append(compactions, rev)
			}
		}
		if len(compactions) > round {
			t.Fatalf("round %d: %d compactions so far, at most one per round: %v", round, len(compactions), compactions)
		}
	}
	if len(compactions) == 0 {
		t.Fatal("nothing compacted in four rounds")
	}
	last := compactions[len(compactions)-1]
	if _, err := etcd.Client().Get(ctx, "/compact-test/k", clientv3.WithRev(last-1)); err == nil {
		t.Fatalf("revision %d still readable after compacting to %d", last-1, last)
	}
}
