// Package fairqueuing owns the queues of one priority level: it deals
// each flow a hand of queues by shuffle sharding, puts a request in the
// shortest queue of its hand, and picks the next request to run by
// virtual-time fair queuing, so that a flow sending much does not delay
// one sending little. Virtual time R, in seat-seconds, advances at the
// rate each active queue would be served at if the seats were shared
// equally; each queue's next dispatch happens at the R its previous
// requests' work brings it to, and the queue whose head would finish at
// the smallest R goes first. The set holds no lock: its owner serializes
// the calls.
package fairqueuing

import (
	"slices"
	"time"
)

// Config shapes a queue set.
type Config struct {
	Queues, HandSize, QueueLengthLimit int
}

// ServiceTime is the estimated duration of a request's execution, the
// work a seat of it is charged at dispatch; the charge is corrected by
// the actual duration when it finishes.
const ServiceTime = 3 * time.Second

// Request is a request in a queue set, waiting or executing.
type Request struct {
	// Flow is the hash of the request's flow, which deals its hand.
	Flow uint64
	// Width is the seats it occupies while executing.
	Width int
	// Arrival and Start are when it was queued and dispatched.
	Arrival, Start time.Time
	// Value is the owner's.
	Value any

	qs    *QueueSet
	queue *queue
}

// QueueIndex is the index of the request's queue.
func (r *Request) QueueIndex() int { return r.queue.index }

// QueueSet is the queues of a priority level.
type QueueSet struct {
	cfg    Config
	queues []*queue
	// currentR is the virtual time at lastSync.
	currentR float64
	lastSync time.Time
	// limit is the level's concurrency limit, which bounds the rate R
	// advances at.
	limit int
	// robin is where the search for the next queue starts, so that
	// queues tied at the same R take turns.
	robin int
	// active counts the queues with requests waiting or executing, seats
	// the seats those requests use or ask for, and waiting holds the
	// queues with requests waiting: kept as they change, so that a
	// request costs no walk over all the queues.
	active, seats int
	waiting       []*queue
}

type queue struct {
	index      int
	waiting    []*Request
	executing  int
	seatsInUse int
	// nextDispatchR is the virtual time at which the queue's head may
	// start: the work of its dispatched requests added to the R it
	// became active at.
	nextDispatchR float64
}

func (q *queue) active() bool { return len(q.waiting) > 0 || q.executing > 0 }

// New returns an empty queue set at now.
func New(cfg Config, limit int, now time.Time) *QueueSet {
	qs := &QueueSet{cfg: cfg, limit: limit, lastSync: now}
	for i := 0; i < cfg.Queues; i++ {
		qs.queues = append(qs.queues, &queue{index: i})
	}
	return qs
}

// Config is the set's shape.
func (qs *QueueSet) Config() Config { return qs.cfg }

// SetLimit changes the concurrency limit virtual time is computed from.
func (qs *QueueSet) SetLimit(now time.Time, limit int) {
	qs.sync(now)
	qs.limit = limit
}

// sync advances virtual time to now at the current rate: the seats the
// active queues use or ask for, at most the limit, shared among them.
func (qs *QueueSet) sync(now time.Time) {
	elapsed := now.Sub(qs.lastSync).Seconds()
	if elapsed <= 0 {
		return
	}
	qs.lastSync = now
	if qs.active == 0 {
		return
	}
	qs.currentR += elapsed * float64(min(qs.seats, qs.limit)) / float64(qs.active)
}

// CurrentR is the virtual time at now, in seat-seconds.
func (qs *QueueSet) CurrentR(now time.Time) float64 {
	qs.sync(now)
	return qs.currentR
}

// Enqueue puts r at the end of the shortest queue of its flow's hand; it
// is false, and r not queued, when that queue is full.
func (qs *QueueSet) Enqueue(now time.Time, r *Request) bool {
	qs.sync(now)
	var best *queue
	deal(r.Flow, len(qs.queues), qs.cfg.HandSize, func(i int) {
		q := qs.queues[i]
		if best == nil || waitingSeats(q) < waitingSeats(best) {
			best = q
		}
	})
	if len(best.waiting) >= qs.cfg.QueueLengthLimit {
		return false
	}
	qs.add(best, r)
	return true
}

func (qs *QueueSet) add(q *queue, r *Request) {
	qs.join(q, r)
	if len(q.waiting) == 0 {
		qs.waiting = append(qs.waiting, q)
	}
	q.waiting = append(q.waiting, r)
}

// join makes r one of q's requests.
func (qs *QueueSet) join(q *queue, r *Request) {
	if !q.active() {
		// An idle queue starts from now: it earns no credit for the time
		// it sent nothing.
		q.nextDispatchR = qs.currentR
		qs.active++
	}
	r.qs, r.queue = qs, q
	qs.seats += r.Width
}

// Start runs r at once, as Enqueue and then Dispatch would when no
// request waits in the set (fair queuing picks the only one waiting): in
// the first queue of its hand, all of them being empty.
func (qs *QueueSet) Start(now time.Time, r *Request) {
	qs.sync(now)
	q := qs.queues[r.Flow%uint64(len(qs.queues))]
	qs.join(q, r)
	qs.started(now, q, r)
}

// unqueue takes r out of its queue's waiting requests.
func (qs *QueueSet) unqueue(r *Request) {
	q := r.queue
	q.waiting = slices.DeleteFunc(q.waiting, func(w *Request) bool { return w == r })
	if len(q.waiting) == 0 {
		qs.waiting = slices.DeleteFunc(qs.waiting, func(w *queue) bool { return w == q })
	}
}

// idled counts q out of the active queues if it has become idle.
func (qs *QueueSet) idled(q *queue) {
	if !q.active() {
		qs.active--
	}
}

func waitingSeats(q *queue) int {
	n := 0
	for _, r := range q.waiting {
		n += r.Width
	}
	return n
}

// Adopt takes the waiting requests of old, whose shape differs, into
// qs, each into its flow's shortest queue regardless of the length limit.
func (qs *QueueSet) Adopt(now time.Time, old *QueueSet) {
	qs.sync(now)
	for _, q := range old.queues {
		for _, r := range q.waiting {
			var best *queue
			deal(r.Flow, len(qs.queues), qs.cfg.HandSize, func(i int) {
				if best == nil || waitingSeats(qs.queues[i]) < waitingSeats(best) {
					best = qs.queues[i]
				}
			})
			qs.add(best, r)
		}
		q.waiting = nil
	}
}

// Next is the request fair queuing runs next, or nil when none waits:
// the head of the queue that would finish it at the smallest virtual
// time.
func (qs *QueueSet) Next(now time.Time) *Request {
	qs.sync(now)
	var best *queue
	var bestR float64
	n := len(qs.queues)
	// Ties go to the first queue from robin on.
	turn := func(q *queue) int { return (q.index - qs.robin + n) % n }
	for _, q := range qs.waiting {
		finish := q.nextDispatchR + work(q.waiting[0].Width, ServiceTime)
		if best == nil || finish < bestR || (finish == bestR && turn(q) < turn(best)) {
			best, bestR = q, finish
		}
	}
	if best == nil {
		return nil
	}
	return best.waiting[0]
}

func work(width int, d time.Duration) float64 { return float64(width) * d.Seconds() }

// Dispatch starts r, which Next returned.
func (qs *QueueSet) Dispatch(now time.Time, r *Request) {
	qs.sync(now)
	qs.unqueue(r)
	qs.started(now, r.queue, r)
}

// started counts r, out of its queue's waiting requests, as running.
func (qs *QueueSet) started(now time.Time, q *queue, r *Request) {
	q.executing++
	q.seatsInUse += r.Width
	q.nextDispatchR += work(r.Width, ServiceTime)
	r.Start = now
	qs.robin = (q.index + 1) % len(qs.queues)
}

// Remove takes the waiting r out of its queue: it gave up.
func (r *Request) Remove(now time.Time) {
	qs := r.qs
	qs.sync(now)
	qs.unqueue(r)
	qs.seats -= r.Width
	qs.idled(r.queue)
}

// Finish ends the executing r and corrects its queue's charge to the
// work it actually did.
func (r *Request) Finish(now time.Time) {
	qs := r.qs
	qs.sync(now)
	q := r.queue
	q.executing--
	q.seatsInUse -= r.Width
	q.nextDispatchR -= work(r.Width, ServiceTime) - work(r.Width, now.Sub(r.Start))
	qs.seats -= r.Width
	qs.idled(q)
}

// QueueState describes a queue for the debug dumps.
type QueueState struct {
	Index, Waiting, Executing, SeatsInUse, WaitingSeats int
	NextDispatchR                                       float64
	// Requests are the waiting requests, head first.
	Requests []*Request
}

// Queues describes the queues at now.
func (qs *QueueSet) Queues(now time.Time) []QueueState {
	qs.sync(now)
	out := make([]QueueState, 0, len(qs.queues))
	for _, q := range qs.queues {
		out = append(out, QueueState{Index: q.index, Waiting: len(q.waiting), Executing: q.executing, SeatsInUse: q.seatsInUse,
			WaitingSeats: waitingSeats(q), NextDispatchR: q.nextDispatchR, Requests: slices.Clone(q.waiting)})
	}
	return out
}

// ActiveQueues counts the queues with requests waiting or executing.
func (qs *QueueSet) ActiveQueues() int { return qs.active }

// deal picks handSize distinct queues out of deck for the flow hash h,
// each choice taken from the hash's digits in a shrinking base, so that
// two flows share a whole hand only rarely.
func deal(h uint64, deck, handSize int, pick func(int)) {
	handSize = min(handSize, deck)
	// kube's hands are small: the array keeps them off the heap.
	var hand [16]int
	chosen := hand[:0]
	for i := 0; i < handSize; i++ {
		n := uint64(deck - i)
		card := int(h % n)
		h /= n
		// card indexes the cards not yet dealt: step over the dealt ones
		// at or below it, in increasing order.
		for _, c := range chosen {
			if card >= c {
				card++
			}
		}
		chosen = append(chosen, card)
		slices.Sort(chosen)
		pick(card)
	}
}
