package allocator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/cronplane/cronplane/pkg/etcdserver"
)

func startEtcd(t *testing.T) *etcdserver.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e, stop, err := etcdserver.StartTemp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return e
}

// Racing reservations, as from apiservers sharing one etcd, each through
// its own Range: every member goes to exactly one of them, and the rest
// are told the range is full.
func TestRange_RacingReservationsNeverShareAMember(t *testing.T) {
	e := startEtcd(t)
	_, cidr, _ := net.ParseCIDR("10.0.0.0/28") // 14 addresses
	held := func(context.Context, string, string, string, string) (bool, error) { return true, nil }
	var (
		mu    sync.Mutex
		got   = map[string]string{}
		full  int
		wg    sync.WaitGroup
		fails []error
	)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := IPs(cidr, "/test/ips/", held)
			r.Use(e.Client())
			ip, err := r.Reserve(context.Background(), "", "ns", fmt.Sprintf("s%d", i), false)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, ErrFull):
				full++
			case err != nil:
				fails = append(fails, err)
			case got[ip] != "":
				fails = append(fails, fmt.Errorf("%s given to s%d and %s", ip, i, got[ip]))
			default:
				got[ip] = fmt.Sprintf("s%d", i)
			}
		}(i)
	}
	wg.Wait()
	if len(fails) > 0 || len(got) != 14 || full != 6 {
		t.Fatalf("%d reserved, %d full, failures %v", len(got), full, fails)
	}
	for ip := range got {
		if ip == "10.0.0.0" || ip == "10.0.0.15" {
			t.Fatalf("reserved %s, the network or broadcast address", ip)
		}
	}
}

// A confirmed guard is taken over only when its owner no longer holds the
// member; a reservation is never taken over.
func TestRange_ConfirmedGuardTakenOverOnlyFromAGoneOwner(t *testing.T) {
	e := startEtcd(t)
	ctx := context.Background()
	ownerHolds := true
	r := Ports(30000, 10, "/test/ports/", func(_ context.Context, ns, name, uid, member string) (bool, error) {
		if ns != "ns" || name != "a" || uid != "uid-a" || member != "30005" {
			return false, fmt.Errorf("asked about %s/%s %s %s", ns, name, uid, member)
		}
		return ownerHolds, nil
	})
	r.Use(e.Client())
	if _, err := r.Reserve(ctx, "30005", "ns", "a", false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reserve(ctx, "30005", "ns", "b", false); !errors.Is(err, ErrAllocated) {
		t.Fatalf("reserved member taken: %v", err)
	}
	if err := r.Confirm(ctx, "30005", "ns", "a", "uid-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reserve(ctx, "30005", "ns", "b", false); !errors.Is(err, ErrAllocated) {
		t.Fatalf("member of a live owner taken: %v", err)
	}
	if _, err := r.Reserve(ctx, "30010", "ns", "b", false); err == nil {
		t.Fatal("member outside the range reserved")
	}
	ownerHolds = false
	if m, err := r.Reserve(ctx, "30005", "ns", "b", false); err != nil || m != "30005" {
		t.Fatalf("member of a gone owner: %q %v", m, err)
	}
	if err := r.Release(ctx, "30005", "ns", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reserve(ctx, "30005", "ns", "c", false); !errors.Is(err, ErrAllocated) {
		t.Fatalf("the old owner's release freed the new owner's member: %v", err)
	}
}
