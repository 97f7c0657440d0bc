// Package flowcontrol owns API Priority and Fairness dispatching: it
// classifies each request by the FlowSchemas it is given (the first
// match by matchingPrecedence, then name) into a flow and a priority
// level, shares the server's total concurrency among the levels by
// their nominalConcurrencyShares, lets levels lend and borrow seats
// within lendablePercent and borrowingLimitPercent, queues what a level
// cannot run at once in its fair queues (package fairqueuing) until the
// request's queue-wait deadline, and rejects what does not fit. It
// publishes kube's apiserver_flowcontrol_* metrics and the
// /debug/api_priority_and_fairness dumps. It reads its configuration
// only through SetConfig, so it does not depend on where FlowSchemas and
// PriorityLevelConfigurations are stored.
package flowcontrol

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cronplane/cronplane/pkg/flowcontrol/fairqueuing"
	"github.com/cronplane/cronplane/pkg/metrics"
)

// The reasons a request is rejected, as the rejected_requests_total
// metric labels them.
const (
	ReasonQueueFull        = "queue-full"
	ReasonConcurrencyLimit = "concurrency-limit"
	ReasonTimeout          = "time-out"
	ReasonCancelled        = "cancelled"
)

// Clock tells the time; tests move a fake one.
type Clock interface{ Now() time.Time }

// realClock reads only the monotonic clock, which costs half what
// time.Now does (that reads the wall clock too) and is read twice a
// request; its wall time, which only the dumps show, is the wall time
// it was made at plus the monotonic time since.
type realClock struct{ base time.Time }

func (c realClock) Now() time.Time { return c.base.Add(time.Since(c.base)) }

// Controller classifies and dispatches requests.
type Controller struct {
	total   int
	clock   Clock
	metrics *metricSet

	// classifier is the configuration classification reads, replaced
	// whole by SetConfig so that Classify takes no lock.
	classifier atomic.Pointer[classifier]

	mu     sync.Mutex
	levels map[string]*level
	// order is the levels in name order; dispatch starts at a rotating
	// place in it so that levels share the pool of lendable seats.
	order []*level
	next  int
	// pool is the seats the levels lend; borrowed is how many of them
	// are in use by levels beyond their guaranteed seats.
	pool, borrowed int
}

// New returns a controller sharing total seats (the sum of
// --max-requests-inflight and --max-mutating-requests-inflight) among
// the levels; its metrics are registered in reg. clock may be nil.
func New(total int, reg *metrics.Registry, clock Clock) *Controller {
	if clock == nil {
		clock = realClock{base: time.Now()}
	}
	return &Controller{total: total, clock: clock, metrics: newMetricSet(reg), levels: map[string]*level{}}
}

// level is a priority level's state.
type level struct {
	pl     *flowcontrolv1.PriorityLevelConfiguration
	exempt bool
	// queuing is false for Reject levels and levels without queues.
	queuing bool
	limits  limits
	// qs holds the level's queues (nil if it never queued).
	qs *fairqueuing.QueueSet
	// removed levels serve what they hold and go once idle.
	removed bool

	seatsInUse, waiting int
	// executing holds the running tickets, each at its execIndex.
	executing                                 []*Ticket
	dispatched, rejected, timedOut, cancelled int
	// dropped is set once the level is no longer in the controller's
	// levels, for the classifications still pointing at it.
	dropped bool
}

func (l *level) name() string { return l.pl.Name }

func (l *level) idle() bool { return len(l.executing) == 0 && l.waiting == 0 }

// SetConfig replaces the configuration: the flow schemas and the
// priority levels. A schema whose level is missing is dangling and
// ignored; a removed level finishes what it holds.
func (c *Controller) SetConfig(fss []*flowcontrolv1.FlowSchema, pls []*flowcontrolv1.PriorityLevelConfiguration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	lims := computeLimits(c.total, pls)
	present := map[string]bool{}
	for _, pl := range pls {
		present[pl.Name] = true
		l := c.levels[pl.Name]
		if l == nil {
			l = &level{}
			c.levels[pl.Name] = l
		}
		l.pl, l.removed, l.limits = pl, false, lims[pl.Name]
		l.exempt = pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt
		cfg, queuing := queueConfig(pl)
		l.queuing = queuing
		switch {
		case !queuing:
		case l.qs == nil:
			l.qs = fairqueuing.New(cfg, l.limits.nominal, now)
		case l.qs.Config() != cfg:
			qs := fairqueuing.New(cfg, l.limits.nominal, now)
			qs.Adopt(now, l.qs)
			l.qs = qs
		default:
			l.qs.SetLimit(now, l.limits.nominal)
		}
	}
	for name, l := range c.levels {
		if !present[name] {
			l.removed = true
			if l.idle() {
				delete(c.levels, name)
				l.dropped = true
			}
		}
	}
	c.order = c.order[:0]
	c.pool = 0
	for _, l := range c.levels {
		c.order = append(c.order, l)
		if !l.exempt && !l.removed {
			c.pool += l.limits.lendable
		}
	}
	slices.SortFunc(c.order, func(a, b *level) int { return compareStrings(a.name(), b.name()) })
	c.borrowed = 0
	for _, l := range c.order {
		c.borrowed += l.borrowedSeats(l.seatsInUse)
	}
	c.classifier.Store(c.newClassifier(fss))
	c.metrics.limits(c.order)
	c.metrics.currentLimits(c)
	c.dispatchLocked(now)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// queueConfig is the shape of a level's queues, and whether it queues.
func queueConfig(pl *flowcontrolv1.PriorityLevelConfiguration) (fairqueuing.Config, bool) {
	if pl.Spec.Limited == nil || pl.Spec.Limited.LimitResponse.Type != flowcontrolv1.LimitResponseTypeQueue || pl.Spec.Limited.LimitResponse.Queuing == nil {
		return fairqueuing.Config{}, false
	}
	q := pl.Spec.Limited.LimitResponse.Queuing
	cfg := fairqueuing.Config{Queues: int(q.Queues), HandSize: int(q.HandSize), QueueLengthLimit: int(q.QueueLengthLimit)}
	return cfg, cfg.Queues > 0
}

// borrowedSeats is how many of used seats are beyond the level's
// guaranteed ones, taken from the pool.
func (l *level) borrowedSeats(used int) int {
	if l.exempt {
		return 0
	}
	return max(0, used-l.limits.guaranteed())
}

// fits reports whether l may start a request of width seats now: within
// its guaranteed seats, or beyond them up to its borrowing limit while
// the pool has seats left. A level running nothing always may, so that a
// request wider than its limit still runs alone.
func (c *Controller) fits(l *level, width int) bool {
	if l.seatsInUse == 0 {
		return true
	}
	after := l.seatsInUse + width
	if l.limits.borrowing >= 0 && after > l.limits.nominal+l.limits.borrowing {
		return false
	}
	if after <= l.limits.guaranteed() {
		return true
	}
	return c.borrowed-l.borrowedSeats(l.seatsInUse)+l.borrowedSeats(after) <= c.pool
}

// currentLimit is the most seats l could hold now: its guaranteed ones
// and what the pool has left for it, within its borrowing limit.
func (c *Controller) currentLimit(l *level) int {
	limit := l.limits.guaranteed() + c.pool - (c.borrowed - l.borrowedSeats(l.seatsInUse))
	if l.limits.borrowing >= 0 {
		limit = min(limit, l.limits.nominal+l.limits.borrowing)
	}
	return max(limit, l.limits.guaranteed())
}

// Classification is where a request belongs.
type Classification struct {
	FlowSchema    *flowcontrolv1.FlowSchema
	PriorityLevel *flowcontrolv1.PriorityLevelConfiguration
	// Distinguisher is the flow's part taken from the request.
	Distinguisher string
	// MaxSeats is the most seats a request of the level may take.
	MaxSeats int

	// schema is what the classifier resolved for the schema; nil in a
	// classification built by hand, which Admit resolves by name.
	schema *schemaEntry
}

// FlowSchemaUID and PriorityLevelUID are what the response headers say.
func (cl Classification) FlowSchemaUID() types.UID    { return cl.FlowSchema.UID }
func (cl Classification) PriorityLevelUID() types.UID { return cl.PriorityLevel.UID }

// Exempt reports whether the request's level is exempt.
func (cl Classification) Exempt() bool {
	return cl.PriorityLevel.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt
}

// Classify finds the first schema matching d; false when none does.
func (c *Controller) Classify(d Digest) (Classification, bool) {
	cls := c.classifier.Load()
	if cls == nil {
		return Classification{}, false
	}
	s := cls.classify(d)
	if s == nil {
		return Classification{}, false
	}
	return Classification{FlowSchema: s.fs, PriorityLevel: s.pl, Distinguisher: distinguisher(s.fs, d), MaxSeats: s.maxSeats, schema: s}, true
}

// newClassifier resolves, once per configuration, what classifying
// into each schema whose level exists leads to.
func (c *Controller) newClassifier(fss []*flowcontrolv1.FlowSchema) *classifier {
	cls := &classifier{}
	for _, fs := range fss {
		l := c.levels[fs.Spec.PriorityLevelConfiguration.Name]
		if l == nil || l.removed {
			continue
		}
		cls.schemas = append(cls.schemas, &schemaEntry{fs: fs, pl: l.pl, level: l, maxSeats: l.limits.maxSeats,
			hash: flowHashPrefix(fs.Name)})
	}
	sortSchemaEntries(cls.schemas)
	return cls
}

// levelOf is the level cl's request goes to; nil once it is gone.
func (c *Controller) levelOf(cl Classification) *level {
	if s := cl.schema; s != nil && !s.level.dropped {
		return s.level
	}
	return c.levels[cl.PriorityLevel.Name]
}

// Ticket is an admitted request; Finish gives back its seats.
type Ticket struct {
	c      *Controller
	cl     Classification
	digest Digest
	level  *level
	// req is fq for a request of a queuing level, nil otherwise.
	req   *fairqueuing.Request
	fq    fairqueuing.Request
	width int
	watch bool
	// ready is made for a request that waits, and closed when it starts.
	ready     chan struct{}
	start     time.Time
	execIndex int
	done      bool
	m         *flowMetrics
}

// The FNV-1a hash of the flow (schema name, a zero byte, distinguisher)
// names the flow the shuffle sharding deals for.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

// flowHashPrefix is the hash of the schema's part of its flows' names.
func flowHashPrefix(fs string) uint64 { return fnvString(fnvOffset, fs) * fnvPrime }

// flowHash names the flow the shuffle sharding deals for.
func flowHash(cl Classification) uint64 {
	prefix := uint64(0)
	if cl.schema != nil {
		prefix = cl.schema.hash
	} else {
		prefix = flowHashPrefix(cl.FlowSchema.Name)
	}
	return fnvString(prefix, cl.Distinguisher)
}

// WaitLimit tells, from the request's context and the time it arrives
// at the dispatcher, until when it may wait in queue; zero is no limit.
type WaitLimit func(ctx context.Context, arrival time.Time) time.Time

// Admit waits, until the time waitLimit (none when nil) sets or until
// ctx ends, for a seat of cl's level for the request d of width seats;
// watch says it is a watch, which holds its seat only while it is set
// up. It returns the ticket to Finish, or the reason the request is
// rejected.
func (c *Controller) Admit(ctx context.Context, waitLimit WaitLimit, cl Classification, d Digest, width int, watch bool) (*Ticket, string) {
	c.mu.Lock()
	now := c.clock.Now()
	l := c.levelOf(cl)
	if l == nil {
		// Its level went away since it was classified: the client
		// retries.
		c.mu.Unlock()
		return nil, ReasonConcurrencyLimit
	}
	t := &Ticket{c: c, cl: cl, digest: d, level: l, width: width, watch: watch}
	if s := cl.schema; s != nil && s.level == l {
		t.m = s.metrics(c.metrics)
	} else {
		t.m = c.metrics.flow(cl.FlowSchema.Name, l.name())
	}
	switch {
	case l.exempt:
		c.startLocked(t, now)
	case !l.queuing:
		if !c.fits(l, width) {
			c.rejectLocked(l, cl.FlowSchema.Name, ReasonConcurrencyLimit)
			c.mu.Unlock()
			return nil, ReasonConcurrencyLimit
		}
		c.startLocked(t, now)
	case l.waiting == 0 && c.fits(l, width):
		// Nothing waits and it fits: fair queuing would pick it at once,
		// so it goes straight to its queue as running.
		t.fq = fairqueuing.Request{Flow: flowHash(cl), Width: width, Arrival: now, Value: t}
		t.req = &t.fq
		l.qs.Start(now, t.req)
		c.startLocked(t, now)
	default:
		t.fq = fairqueuing.Request{Flow: flowHash(cl), Width: width, Arrival: now, Value: t}
		t.req = &t.fq
		if !l.qs.Enqueue(now, t.req) {
			c.rejectLocked(l, cl.FlowSchema.Name, ReasonQueueFull)
			c.mu.Unlock()
			return nil, ReasonQueueFull
		}
		l.waiting++
		t.m.inqueue.Inc()
		t.ready = make(chan struct{})
		c.dispatchLocked(now)
	}
	c.mu.Unlock()
	if t.ready == nil {
		return t, ""
	}
	select {
	case <-t.ready:
		return t, ""
	default:
	}
	// Only a request that waits pays for a deadline's timer.
	wait := ctx
	if waitLimit != nil {
		if deadline := waitLimit(ctx, now); !deadline.IsZero() {
			var cancel context.CancelFunc
			wait, cancel = context.WithDeadline(ctx, deadline)
			defer cancel()
		}
	}
	select {
	case <-t.ready:
		return t, ""
	case <-wait.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-t.ready:
		// Dispatched while its wait ended: it runs.
		return t, ""
	default:
	}
	now = c.clock.Now()
	t.req.Remove(now)
	l.waiting--
	t.m.inqueue.Dec()
	reason := ReasonTimeout
	if context.Cause(wait) == context.Canceled {
		reason = ReasonCancelled
		l.cancelled++
	} else {
		l.timedOut++
	}
	c.metrics.rejected.WithLabelValues(cl.FlowSchema.Name, l.name(), reason).Inc()
	t.m.gaveUp.Observe(now.Sub(t.req.Arrival).Seconds())
	c.dropLevelIfGoneLocked(l)
	// The request that left may have held back a narrower one behind it.
	c.dispatchLocked(now)
	return nil, reason
}

func (c *Controller) rejectLocked(l *level, flowSchema, reason string) {
	l.rejected++
	c.metrics.rejected.WithLabelValues(flowSchema, l.name(), reason).Inc()
}

// dispatchLocked starts the queued requests that fit, level after
// level, each level's in fair-queuing order.
func (c *Controller) dispatchLocked(now time.Time) {
	n := len(c.order)
	for i := 0; i < n; i++ {
		l := c.order[(c.next+i)%n]
		if l.qs == nil || l.waiting == 0 {
			continue
		}
		for r := l.qs.Next(now); r != nil && c.fits(l, r.Width); r = l.qs.Next(now) {
			l.qs.Dispatch(now, r)
			t := r.Value.(*Ticket)
			l.waiting--
			t.m.inqueue.Dec()
			c.startLocked(t, now)
		}
	}
	if n > 0 {
		c.next = (c.next + 1) % n
	}
}

// startLocked lets t run.
func (c *Controller) startLocked(t *Ticket, now time.Time) {
	l := t.level
	borrowed := l.borrowedSeats(l.seatsInUse+t.width) - l.borrowedSeats(l.seatsInUse)
	c.borrowed += borrowed
	l.seatsInUse += t.width
	t.execIndex = len(l.executing)
	l.executing = append(l.executing, t)
	l.dispatched++
	t.start = now
	arrival := now
	if t.req != nil {
		arrival = t.req.Arrival
	}
	t.m.dispatched.Inc()
	t.m.waited.Observe(now.Sub(arrival).Seconds())
	t.m.executing.Inc()
	t.m.executingSeats.Add(float64(t.width))
	if borrowed != 0 {
		c.metrics.currentLimits(c)
	}
	if t.ready != nil {
		close(t.ready)
	}
}

// Finish gives back t's seats, at the end of the request or, for a
// watch, once it is set up; later calls do nothing.
func (t *Ticket) Finish() {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.done {
		return
	}
	t.done = true
	now := c.clock.Now()
	l := t.level
	if t.req != nil {
		t.req.Finish(now)
	}
	borrowed := l.borrowedSeats(l.seatsInUse-t.width) - l.borrowedSeats(l.seatsInUse)
	c.borrowed += borrowed
	l.seatsInUse -= t.width
	l.removeExecuting(t)
	execution := t.m.regular
	if t.watch {
		execution = t.m.watches
	}
	execution.Observe(now.Sub(t.start).Seconds())
	t.m.executing.Dec()
	t.m.executingSeats.Sub(float64(t.width))
	c.dropLevelIfGoneLocked(l)
	c.dispatchLocked(now)
	if borrowed != 0 {
		c.metrics.currentLimits(c)
	}
}

// removeExecuting takes t out of the running tickets, moving the last
// one to its place.
func (l *level) removeExecuting(t *Ticket) {
	last := l.executing[len(l.executing)-1]
	l.executing[t.execIndex] = last
	last.execIndex = t.execIndex
	l.executing[len(l.executing)-1] = nil
	l.executing = l.executing[:len(l.executing)-1]
}

func (c *Controller) dropLevelIfGoneLocked(l *level) {
	if l.removed && l.idle() && c.levels[l.name()] == l {
		delete(c.levels, l.name())
		l.dropped = true
		c.order = slices.DeleteFunc(c.order, func(o *level) bool { return o == l })
	}
}

// ConfigSource is where a controller's configuration comes from: Run
// calls set with all the FlowSchemas and PriorityLevelConfigurations
// first and again after each change, until ctx ends.
type ConfigSource interface {
	Run(ctx context.Context, set func([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration))
}

// Run keeps the controller configured from src until ctx ends.
func (c *Controller) Run(ctx context.Context, src ConfigSource) {
	src.Run(ctx, c.SetConfig)
}
