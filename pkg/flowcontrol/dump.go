package flowcontrol

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cronplane/cronplane/pkg/flowcontrol/fairqueuing"
)

// table writes comma-separated rows aligned as kube's dumps are.
func table(w io.Writer, headers ...string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 1, 8, 1, ' ', 0)
	row(tw, headers...)
	return tw
}

func row(tw *tabwriter.Writer, cells ...string) {
	_, _ = fmt.Fprintln(tw, strings.Join(cells, ",\t"))
}

func seatSeconds(v float64) string { return fmt.Sprintf("%.8fss", v) }

// DumpPriorityLevels writes a row per priority level: its queues in use
// and the requests it holds and has handled.
func (c *Controller) DumpPriorityLevels(w io.Writer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	tw := table(w, "PriorityLevelName", "ActiveQueues", "IsIdle", "IsQuiescing", "WaitingRequests", "ExecutingRequests",
		"DispatchedRequests", "RejectedRequests", "TimedoutRequests", "CancelledRequests")
	for _, l := range c.order {
		active := 0
		if l.qs != nil {
			active = l.qs.ActiveQueues()
		}
		row(tw, l.name(), fmt.Sprint(active), fmt.Sprint(l.idle()), fmt.Sprint(l.removed), fmt.Sprint(l.waiting),
			fmt.Sprint(len(l.executing)), fmt.Sprint(l.dispatched), fmt.Sprint(l.rejected), fmt.Sprint(l.timedOut), fmt.Sprint(l.cancelled))
	}
	return tw.Flush()
}

// DumpQueues writes a row per queue of each queuing level.
func (c *Controller) DumpQueues(w io.Writer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	tw := table(w, "PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests", "SeatsInUse", "NextDispatchR",
		"InitialSeatsSum", "MaxSeatsSum", "TotalWorkSum")
	for _, l := range c.order {
		if l.qs == nil {
			continue
		}
		for _, q := range l.qs.Queues(now) {
			row(tw, l.name(), fmt.Sprint(q.Index), fmt.Sprint(q.Waiting), fmt.Sprint(q.Executing), fmt.Sprint(q.SeatsInUse),
				seatSeconds(q.NextDispatchR), fmt.Sprint(q.WaitingSeats), fmt.Sprint(q.WaitingSeats),
				seatSeconds(float64(q.WaitingSeats)*fairqueuing.ServiceTime.Seconds()))
		}
	}
	return tw.Flush()
}

// DumpRequests writes a row per request waiting or executing; details
// adds who sent it and what it asks for.
func (c *Controller) DumpRequests(w io.Writer, details bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	headers := []string{"PriorityLevelName", "FlowSchemaName", "QueueIndex", "RequestIndexInQueue", "FlowDistingsher", "ArriveTime",
		"InitialSeats", "FinalSeats", "AdditionalLatency", "StartTime"}
	if details {
		headers = append(headers, "UserName", "Verb", "APIPath", "Namespace", "Name", "APIVersion", "Resource", "SubResource")
	}
	tw := table(w, headers...)
	write := func(t *Ticket, queue, index int, start string) {
		arrival := t.start
		if t.req != nil {
			arrival = t.req.Arrival
		}
		cells := []string{t.level.name(), t.cl.FlowSchema.Name, fmt.Sprint(queue), fmt.Sprint(index), t.cl.Distinguisher,
			arrival.UTC().Format(time.RFC3339Nano), fmt.Sprint(t.width), "0", "0s", start}
		if details {
			ri := t.digest.Info
			cells = append(cells, t.digest.User.Name, ri.Verb, ri.Path, ri.Namespace, ri.Name, ri.APIVersion, ri.Resource, ri.Subresource)
		}
		row(tw, cells...)
	}
	for _, l := range c.order {
		if l.qs != nil {
			for _, q := range l.qs.Queues(now) {
				for i, r := range q.Requests {
					write(r.Value.(*Ticket), q.Index, i, "0001-01-01T00:00:00Z")
				}
			}
		}
		executing := slices.Clone(l.executing)
		slices.SortFunc(executing, func(a, b *Ticket) int { return a.start.Compare(b.start) })
		for _, t := range executing {
			queue := -1
			if t.req != nil {
				queue = t.req.QueueIndex()
			}
			write(t, queue, -1, t.start.UTC().Format(time.RFC3339Nano))
		}
	}
	return tw.Flush()
}
