package flowcontrol

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/endpoints/request"
	"github.com/cronplane/cronplane/pkg/flowcontrol/bootstrap"
	"github.com/cronplane/cronplane/pkg/metrics"
)

// The nominal seats of kube's levels out of the default 600, as a
// v1.29 kube-apiserver reports them in apiserver_flowcontrol_nominal_limit_seats.
func TestComputeLimits_BootstrapLevelsGetKubesNominalSeats(t *testing.T) {
	_, mpl := bootstrap.Mandatory()
	_, spl := bootstrap.Suggested()
	got := computeLimits(600, append(mpl, spl...))
	want := map[string]int{"catch-all": 13, "exempt": 0, "global-default": 49, "leader-election": 25, "node-high": 98,
		"system": 74, "workload-high": 98, "workload-low": 245}
	for name, n := range want {
		if got[name].nominal != n {
			t.Errorf("%s: nominal %d, want %d", name, got[name].nominal, n)
		}
	}
	if l := got["workload-low"]; l.lendable != 221 || l.borrowing != -1 || l.maxSeats != 10 {
		t.Errorf("workload-low: %+v, want 221 lendable (90%%), no borrowing limit, 10 seats at most", l)
	}
	if l := got["global-default"]; l.lendable != 25 || l.borrowing != -1 || l.maxSeats != 8 {
		t.Errorf("global-default: %+v, want 25 lendable (50%%), no borrowing limit, 8 seats at most", l)
	}
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func admit(t *testing.T, c *Controller, level string, width int) (*Ticket, string) {
	t.Helper()
	fs := &flowcontrolv1.FlowSchema{}
	fs.Name = "fs-" + level
	c.mu.Lock()
	pl := c.levels[level].pl
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	return c.Admit(ctx, nil, Classification{FlowSchema: fs, PriorityLevel: pl}, Digest{}, width, false)
}

// Out of 4 seats, "lender" (2 nominal, all lendable) and "borrower" (2
// nominal, none lendable, may borrow 50 %): the borrower runs 3 at
// most, and while it does the lender has one seat left; seats given back
// go to whoever asks next.
func TestController_LevelsBorrowWithinTheirLimits(t *testing.T) {
	c := New(4, metrics.NewRegistry(), &fakeClock{now: time.Unix(0, 0)})
	c.SetConfig(nil, []*flowcontrolv1.PriorityLevelConfiguration{
		limitedLevel("borrower", 1, i32(0), i32(50), 0),
		limitedLevel("lender", 1, i32(100), i32(0), 0),
	})
	var borrower []*Ticket
	for i := 0; i < 3; i++ {
		tk, reason := admit(t, c, "borrower", 1)
		if tk == nil {
			t.Fatalf("borrower request %d rejected: %s", i, reason)
		}
		borrower = append(borrower, tk)
	}
	if _, reason := admit(t, c, "borrower", 1); reason != ReasonConcurrencyLimit {
		t.Fatalf("4th borrower request: %q, want rejected beyond its borrowing limit", reason)
	}
	lent, reason := admit(t, c, "lender", 1)
	if lent == nil {
		t.Fatalf("lender rejected (%s) with a seat of its own free", reason)
	}
	if _, reason := admit(t, c, "lender", 1); reason != ReasonConcurrencyLimit {
		t.Fatalf("lender's 2nd request: %q, want rejected while its other seat is lent", reason)
	}
	borrower[0].Finish()
	borrower[0].Finish() // twice is once
	if tk, reason := admit(t, c, "lender", 1); tk == nil {
		t.Fatalf("lender rejected (%s) after the borrower gave a seat back", reason)
	}
	var dump strings.Builder
	if err := c.DumpPriorityLevels(&dump); err != nil {
		t.Fatal(err)
	}
	want := "PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests, DispatchedRequests, RejectedRequests, TimedoutRequests, CancelledRequests\n" +
		"borrower,          0,            false,  false,       0,               2,                 3,                  1,                0,                0\n" +
		"lender,            0,            false,  false,       0,               2,                 2,                  1,                0,                0\n"
	if dump.String() != want {
		t.Fatalf("dump:\n%s\nwant:\n%s", dump.String(), want)
	}
}

// A queued request waits until a seat frees, or is rejected when its
// wait ends first; a full queue rejects at once.
func TestController_QueuedRequestRunsWhenASeatFreesOrTimesOut(t *testing.T) {
	c := New(1, metrics.NewRegistry(), &fakeClock{now: time.Unix(0, 0)})
	c.SetConfig(nil, []*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("only", 1, nil, nil, 1)})
	running, _ := admit(t, c, "only", 1)
	if running == nil {
		t.Fatal("first request not admitted")
	}
	if tk, reason := admit(t, c, "only", 1); tk != nil || reason != ReasonTimeout {
		t.Fatalf("got %v %q, want a time-out while the seat is taken", tk, reason)
	}
	done := make(chan *Ticket)
	go func() {
		tk, _ := c.Admit(context.Background(), nil, Classification{FlowSchema: &flowcontrolv1.FlowSchema{}, PriorityLevel: c.levels["only"].pl}, Digest{}, 1, false)
		done <- tk
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		waiting := c.levels["only"].waiting
		c.mu.Unlock()
		if waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("request never queued")
		}
		time.Sleep(time.Millisecond)
	}
	running.Finish()
	select {
	case tk := <-done:
		if tk == nil {
			t.Fatal("queued request rejected")
		}
		tk.Finish()
	case <-time.After(5 * time.Second):
		t.Fatal("queued request not dispatched when the seat freed")
	}
}

func TestWidth_ListsTakeSeatsByTheObjectsTheyGoThrough(t *testing.T) {
	count := func(gr schema.GroupResource) (int64, bool) {
		if gr == (schema.GroupResource{Group: "batch", Resource: "cronjobs"}) {
			return 5000, true
		}
		return 0, false
	}
	list := resourceInfo("list", "batch", "cronjobs", "", "")
	for _, tc := range []struct {
		name  string
		info  *request.RequestInfo
		query string
		want  int
	}{
		{"from etcd: twice the stored objects", list, "", 10},
		{"from etcd with a small limit", list, "limit=100", 2},
		{"from etcd, filtered: the stored objects and the limit", list, "limit=100&labelSelector=a%3Db", 10},
		{"from the watch cache", list, "resourceVersion=0", 10},
		{"capped by the level", list, "resourceVersion=0", 3},
		{"unknown resource", resourceInfo("list", "", "pods", "", ""), "", 1},
		{"a get", resourceInfo("get", "batch", "cronjobs", "", "a"), "", 1},
		{"a non-resource request", &request.RequestInfo{Verb: "get", Path: "/healthz"}, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			maxSeats := 10
			if strings.HasPrefix(tc.name, "capped") {
				maxSeats = 3
			}
			if got := Width(tc.info, q, count, maxSeats); got != tc.want {
				t.Fatalf("width %d, want %d", got, tc.want)
			}
		})
	}
	small := func(schema.GroupResource) (int64, bool) { return 250, true }
	if got := Width(list, url.Values{"resourceVersion": {"0"}}, small, 10); got != 3 {
		t.Fatalf("250 objects from the cache: width %d, want 3", got)
	}
}

// A narrow request queued behind a wide one that does not fit runs as
// soon as the wide one gives up, not when a seat frees.
func TestController_WaitingRequestRunsWhenTheOneAheadGivesUp(t *testing.T) {
	c := New(2, metrics.NewRegistry(), &fakeClock{now: time.Unix(0, 0)})
	// One queue: the narrow request waits behind the wide one.
	pl := limitedLevel("only", 1, nil, nil, 1)
	c.SetConfig(nil, []*flowcontrolv1.PriorityLevelConfiguration{pl})
	cl := Classification{FlowSchema: &flowcontrolv1.FlowSchema{}, PriorityLevel: pl}
	running, _ := c.Admit(context.Background(), nil, cl, Digest{}, 1, false)
	if running == nil {
		t.Fatal("first request not admitted")
	}
	defer running.Finish()
	waitFor := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			c.mu.Lock()
			waiting := c.levels["only"].waiting
			c.mu.Unlock()
			if waiting == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d waiting, want %d", waiting, n)
			}
		}
	}
	wideCtx, giveUp := context.WithCancel(context.Background())
	wide := make(chan string, 1)
	go func() {
		_, reason := c.Admit(wideCtx, nil, cl, Digest{}, 2, false)
		wide <- reason
	}()
	waitFor(1)
	narrow := make(chan *Ticket, 1)
	go func() {
		tk, _ := c.Admit(context.Background(), nil, cl, Digest{}, 1, false)
		narrow <- tk
	}()
	waitFor(2)
	giveUp()
	if reason := <-wide; reason != ReasonCancelled {
		t.Fatalf("wide request: %q, want cancelled", reason)
	}
	select {
	case tk := <-narrow:
		if tk == nil {
			t.Fatal("narrow request rejected")
		}
		tk.Finish()
	case <-time.After(5 * time.Second):
		t.Fatal("narrow request still waits with a seat free")
	}
}

// A flow schema's request metrics appear with its first request, not
// with the configuration, as kube's do.
func TestController_FlowMetricsAppearWithTheFirstRequest(t *testing.T) {
	c := New(600, metrics.NewRegistry(), nil)
	c.SetConfig(testConfig())
	series := func() int { return testutil.CollectAndCount(c.metrics.dispatched) }
	if n := series(); n != 0 {
		t.Fatalf("%d dispatched series before any request", n)
	}
	cl, ok := c.Classify(Digest{User: &user.Info{Name: "bob", Groups: []string{"system:authenticated"}}, Info: resourceInfo("list", "", "pods", "", "team")})
	if !ok {
		t.Fatal("not classified")
	}
	tk, reason := c.Admit(context.Background(), nil, cl, Digest{}, 1, false)
	if tk == nil {
		t.Fatal(reason)
	}
	tk.Finish()
	if n := series(); n != 1 {
		t.Fatalf("%d dispatched series after one request, want 1", n)
	}
}
