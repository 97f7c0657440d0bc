// Package allocator hands out the members of a range, such as Services'
// cluster IPs, so that no two objects hold the same one even when several
// apiservers share one etcd. Each member taken has a guard key in etcd,
// created only if absent (a compare-and-swap on its create revision): etcd
// decides between two apiservers racing for one member, and no apiserver
// keeps state of its own. A member is first reserved under a short etcd
// lease, so that one whose object never got created (a refused write, a
// crashed apiserver) frees itself; once the object is stored the guard is
// confirmed with the object's uid and kept without a lease. A confirmed
// guard whose object is gone, or no longer holds the member (a delete that
// did not release it), is taken over when the member is wanted again.
//
// This design was preferred to kube's bitmap in one etcd key: the guard
// keys need no repair loop to free what a failed create left (the lease
// does) and a write touches one small key instead of the whole range.
package allocator

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// reservationTTL is how long, in seconds, a member stays reserved for an
// object that is not stored yet: longer than any request.
const reservationTTL = 300

// ErrFull means every member of the range is taken.
var ErrFull = errors.New("range is full")

// ErrAllocated means the member asked for is taken.
var ErrAllocated = errors.New("provided value is already allocated")

// Owner tells whether the object a confirmed guard names still holds the
// member: namespace, name and uid from the guard.
type Owner func(ctx context.Context, namespace, name, uid, member string) (bool, error)

// Range is a set of members (offsets 0..Size-1, named by Name) with guard
// keys under Prefix.
type Range struct {
	// Prefix is the etcd key prefix of the guards, ending in "/".
	Prefix string
	// Size is the number of members; Name gives the member at an offset
	// and Offset the reverse, false for a member outside the range.
	Size   int
	Name   func(offset int) string
	Offset func(member string) (int, bool)
	// Static is the number of leading offsets handed out only on request
	// while others are free, as kube keeps the low band of its ranges for
	// clients that choose their member.
	Static int
	// Owner checks a confirmed guard.
	Owner Owner

	mu     sync.RWMutex
	client *clientv3.Client
}

// Use sets the etcd client; the range is unusable before.
func (r *Range) Use(c *clientv3.Client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.client = c
}

func (r *Range) etcd() (*clientv3.Client, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.client == nil {
		return nil, errors.New("allocator: no etcd client")
	}
	return r.client, nil
}

func (r *Range) key(member string) string { return r.Prefix + member }

// Reserve takes member for namespace/name, or any free member when member
// is "". A dry run only checks: it takes nothing.
func (r *Range) Reserve(ctx context.Context, member, namespace, name string, dryRun bool) (string, error) {
	if member != "" {
		if _, ok := r.Offset(member); !ok {
			return "", fmt.Errorf("%s is not in the range", member)
		}
		ok, err := r.take(ctx, member, namespace, name, dryRun)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", ErrAllocated
		}
		return member, nil
	}
	for _, off := range r.order() {
		m := r.Name(off)
		ok, err := r.take(ctx, m, namespace, name, dryRun)
		if err != nil {
			return "", err
		}
		if ok {
			return m, nil
		}
	}
	return "", ErrFull
}

// order is the sequence in which free members are tried: the dynamic band
// from a random point, then the static band.
func (r *Range) order() []int {
	out := make([]int, 0, r.Size)
	dynamic := r.Size - r.Static
	if dynamic > 0 {
		start := rand.Intn(dynamic)
		for i := 0; i < dynamic; i++ {
			out = append(out, r.Static+(start+i)%dynamic)
		}
	}
	for i := 0; i < r.Static && i < r.Size; i++ {
		out = append(out, i)
	}
	return out
}

// take reserves member if its guard is absent or stale.
func (r *Range) take(ctx context.Context, member, namespace, name string, dryRun bool) (bool, error) {
	c, err := r.etcd()
	if err != nil {
		return false, err
	}
	key := r.key(member)
	resp, err := c.Get(ctx, key)
	if err != nil {
		return false, err
	}
	cond := clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
	if len(resp.Kvs) > 0 {
		kv := resp.Kvs[0]
		stale, err := r.stale(ctx, string(kv.Value), kv.Lease, member)
		if err != nil || !stale {
			return false, err
		}
		cond = clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)
	}
	if dryRun {
		return true, nil
	}
	lease, err := c.Grant(ctx, reservationTTL)
	if err != nil {
		return false, err
	}
	txn, err := c.Txn(ctx).If(cond).Then(clientv3.OpPut(key, namespace+"/"+name, clientv3.WithLease(lease.ID))).Commit()
	if err != nil {
		return false, err
	}
	return txn.Succeeded, nil
}

// stale tells whether a guard may be taken over: a confirmed one (no
// lease) whose object no longer holds the member. A reservation ends with
// its lease.
func (r *Range) stale(ctx context.Context, value string, lease int64, member string) (bool, error) {
	if lease != 0 {
		return false, nil
	}
	parts := strings.SplitN(value, "/", 3)
	if len(parts) != 3 {
		return true, nil
	}
	held, err := r.Owner(ctx, parts[0], parts[1], parts[2], member)
	return !held, err
}

// Confirm keeps member for the object stored with uid, without a lease,
// if namespace/name still holds its reservation.
func (r *Range) Confirm(ctx context.Context, member, namespace, name, uid string) error {
	c, err := r.etcd()
	if err != nil {
		return err
	}
	key := r.key(member)
	_, err = c.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(key), "=", namespace+"/"+name)).
		Then(clientv3.OpPut(key, namespace+"/"+name+"/"+uid)).
		Commit()
	return err
}

// Release frees member if namespace/name holds it (reserved or confirmed).
func (r *Range) Release(ctx context.Context, member, namespace, name string) error {
	c, err := r.etcd()
	if err != nil {
		return err
	}
	key := r.key(member)
	resp, err := c.Get(ctx, key)
	if err != nil || len(resp.Kvs) == 0 {
		return err
	}
	kv := resp.Kvs[0]
	if v := string(kv.Value); v != namespace+"/"+name && !strings.HasPrefix(v, namespace+"/"+name+"/") {
		return nil
	}
	_, err = c.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", kv.ModRevision)).Then(clientv3.OpDelete(key)).Commit()
	return err
}
