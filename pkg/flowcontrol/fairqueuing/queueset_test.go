package fairqueuing

import (
	"slices"
	"testing"
	"time"
)

// otherQueueFlow finds a flow whose one-card hand is not flow's.
func otherQueueFlow(t *testing.T, queues int, flow uint64) uint64 {
	t.Helper()
	var mine int
	deal(flow, queues, 1, func(i int) { mine = i })
	for f := flow + 1; f < flow+1000; f++ {
		var other int
		deal(f, queues, 1, func(i int) { other = i })
		if other != mine {
			return f
		}
	}
	t.Fatal("no flow with another queue")
	return 0
}

// A flow that queued 20 requests first, and runs one, does not delay a
// light flow's two behind all of them: fair queuing alternates between
// the queues.
func TestQueueSet_HeavyFlowDoesNotStarveLightOne(t *testing.T) {
	now := time.Unix(0, 0)
	qs := New(Config{Queues: 8, HandSize: 1, QueueLengthLimit: 50}, 1, now)
	const heavy = uint64(7)
	light := otherQueueFlow(t, 8, heavy)
	for i := 0; i < 20; i++ {
		if !qs.Enqueue(now, &Request{Flow: heavy, Width: 1, Value: "heavy"}) {
			t.Fatal("heavy request refused")
		}
	}
	running := qs.Next(now)
	qs.Dispatch(now, running)
	order := []string{running.Value.(string)}
	for i := 0; i < 2; i++ {
		qs.Enqueue(now, &Request{Flow: light, Width: 1, Value: "light"})
	}
	for n := 0; n < 21; n++ {
		now = now.Add(time.Second)
		running.Finish(now)
		running = qs.Next(now)
		if running == nil {
			t.Fatalf("nothing to run after %d", n)
		}
		qs.Dispatch(now, running)
		order = append(order, running.Value.(string))
	}
	if qs.Next(now) != nil {
		t.Fatal("requests left")
	}
	var lightAt []int
	for i, v := range order {
		if v == "light" {
			lightAt = append(lightAt, i)
		}
	}
	if len(lightAt) != 2 || lightAt[0] != 1 || lightAt[1] > 3 {
		t.Fatalf("light requests ran at %v of %v, want right after the first and among the first four", lightAt, order)
	}
}

// A queue holds at most QueueLengthLimit waiting requests.
func TestQueueSet_FullQueueRefuses(t *testing.T) {
	now := time.Unix(0, 0)
	qs := New(Config{Queues: 1, HandSize: 1, QueueLengthLimit: 2}, 1, now)
	for i, want := range []bool{true, true, false} {
		if got := qs.Enqueue(now, &Request{Flow: 1, Width: 1}); got != want {
			t.Fatalf("request %d: accepted %v, want %v", i, got, want)
		}
	}
	r := qs.Next(now)
	qs.Dispatch(now, r)
	if !qs.Enqueue(now, &Request{Flow: 1, Width: 1}) {
		t.Fatal("a dispatched request still counts against the queue length")
	}
}

// Requests that gave up leave their queue; the others keep their order.
func TestQueueSet_RemovedRequestIsNotDispatched(t *testing.T) {
	now := time.Unix(0, 0)
	qs := New(Config{Queues: 1, HandSize: 1, QueueLengthLimit: 5}, 1, now)
	a, b := &Request{Flow: 1, Width: 1, Value: "a"}, &Request{Flow: 1, Width: 1, Value: "b"}
	qs.Enqueue(now, a)
	qs.Enqueue(now, b)
	a.Remove(now)
	if r := qs.Next(now); r != b {
		t.Fatalf("next is %v, want b", r.Value)
	}
}

// A hand holds distinct queues of the deck, the same for the same flow.
func TestDeal_DealsDistinctCardsInTheDeck(t *testing.T) {
	for _, tc := range []struct{ deck, hand int }{{128, 6}, {64, 6}, {16, 4}, {5, 5}, {3, 8}} {
		for h := uint64(0); h < 2000; h += 7 {
			var cards, again []int
			deal(h*0x9e3779b97f4a7c15, tc.deck, tc.hand, func(i int) { cards = append(cards, i) })
			deal(h*0x9e3779b97f4a7c15, tc.deck, tc.hand, func(i int) { again = append(again, i) })
			if !slices.Equal(cards, again) {
				t.Fatalf("deck %d: two deals of one flow differ: %v, %v", tc.deck, cards, again)
			}
			if len(cards) != min(tc.hand, tc.deck) {
				t.Fatalf("deck %d hand %d: dealt %v", tc.deck, tc.hand, cards)
			}
			sorted := slices.Clone(cards)
			slices.Sort(sorted)
			if len(slices.Compact(sorted)) != len(cards) || sorted[0] < 0 || sorted[len(sorted)-1] >= tc.deck {
				t.Fatalf("deck %d: hand %v has repeated or foreign cards", tc.deck, cards)
			}
		}
	}
}

// Starting a request when none waits leaves the set as enqueuing it and
// dispatching it (the only one waiting) does: the same queue, the same
// virtual times, for the requests after it too.
func TestQueueSet_StartWhenNothingWaitsIsEnqueueAndDispatch(t *testing.T) {
	now := time.Unix(0, 0)
	cfg := Config{Queues: 16, HandSize: 4, QueueLengthLimit: 50}
	started, queued := New(cfg, 4, now), New(cfg, 4, now)
	var a, b []*Request
	for i, flow := range []uint64{3, 1 << 40, 3, 99} {
		now = now.Add(time.Duration(i) * 100 * time.Millisecond)
		ra := &Request{Flow: flow, Width: i + 1}
		started.Start(now, ra)
		rb := &Request{Flow: flow, Width: i + 1}
		if !queued.Enqueue(now, rb) || queued.Next(now) != rb {
			t.Fatalf("request %d not next", i)
		}
		queued.Dispatch(now, rb)
		a, b = append(a, ra), append(b, rb)
	}
	now = now.Add(time.Second)
	a[1].Finish(now)
	b[1].Finish(now)
	if qa, qb := started.Queues(now), queued.Queues(now); !slices.EqualFunc(qa, qb, func(x, y QueueState) bool {
		return x.Index == y.Index && x.Executing == y.Executing && x.SeatsInUse == y.SeatsInUse && x.NextDispatchR == y.NextDispatchR
	}) {
		t.Fatalf("started:\n%+v\nqueued and dispatched:\n%+v", qa, qb)
	}
	if ra, rb := started.CurrentR(now), queued.CurrentR(now); ra != rb || started.ActiveQueues() != queued.ActiveQueues() {
		t.Fatalf("R %v and %d active queues, want %v and %d", ra, started.ActiveQueues(), rb, queued.ActiveQueues())
	}
}
