package job

import (
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The delay before a failed pod is replaced doubles with each failure
// since the last success, from podBackoffBase up to podBackoffMax,
// counted from the last failure. kube v1.29 caps it at ten minutes (its
// documentation still says six): measured, a Job's seventh replacement
// came 600 s after the sixth.
const (
	podBackoffBase = 10 * time.Second
	podBackoffMax  = 10 * time.Minute
)

// backoffRecord is what a Job's pod backoff is computed from.
type backoffRecord struct {
	// failures is the number of failed pods since the last success.
	failures    int32
	lastFailure time.Time
}

// backoffs holds the backoff record of each Job, by key. The record lives
// in memory only, as kube's: a restarted controller replaces pods that
// failed before it started without waiting.
type backoffs struct {
	mu      sync.Mutex
	records map[string]backoffRecord
}

func newBackoffs() *backoffs { return &backoffs{records: map[string]backoffRecord{}} }

func (b *backoffs) get(key string) backoffRecord {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.records[key]
}

func (b *backoffs) set(key string, r backoffRecord) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r.failures == 0 {
		delete(b.records, key)
		return
	}
	b.records[key] = r
}

func (b *backoffs) forget(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.records, key)
}

// next returns the record after the pods that finished since it was
// taken: a success resets the count to the failures after the last
// success.
func (r backoffRecord) next(succeeded, failed []*corev1.Pod) backoffRecord {
	if len(succeeded) == 0 && len(failed) == 0 {
		return r
	}
	var lastSuccess time.Time
	for _, p := range succeeded {
		if t := finishTime(p); t.After(lastSuccess) {
			lastSuccess = t
		}
	}
	if len(succeeded) > 0 {
		r = backoffRecord{}
	}
	times := make([]time.Time, 0, len(failed))
	for _, p := range failed {
		times = append(times, finishTime(p))
	}
	sort.Slice(times, func(i, k int) bool { return times[i].Before(times[k]) })
	for _, t := range times {
		if len(succeeded) > 0 && !t.After(lastSuccess) {
			continue
		}
		r.failures++
		r.lastFailure = t
	}
	return r
}

// remaining returns how long replacements must still wait at now.
func (r backoffRecord) remaining(now time.Time) time.Duration {
	return backoffRemaining(r.failures, r.lastFailure, now)
}

func backoffRemaining(failures int32, last, now time.Time) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := podBackoffBase
	for i := int32(1); i < failures && d < podBackoffMax; i++ {
		d *= 2
	}
	d = min(d, podBackoffMax)
	if elapsed := now.Sub(last); elapsed < d {
		return d - elapsed
	}
	return 0
}

// indexBackoffRemaining returns how long the replacement of failed, the
// last failed pod of its index, must still wait: the index's own
// failures, counted or ignored, set its delay.
func indexBackoffRemaining(failed *corev1.Pod, now time.Time) time.Duration {
	if failed == nil {
		return 0
	}
	return backoffRemaining(indexAllFailures(failed)+1, finishTime(failed), now)
}

// finishTime is when a pod finished: its containers' last finish (its
// sidecars' included) when all have finished, else when it stopped being
// ready, else when it was deleted (less its grace period), else when it
// was created.
func finishTime(p *corev1.Pod) time.Time {
	if t, ok := containersFinished(p); ok {
		return t
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	if p.DeletionTimestamp != nil {
		grace := int64(0)
		if p.DeletionGracePeriodSeconds != nil {
			grace = *p.DeletionGracePeriodSeconds
		}
		return p.DeletionTimestamp.Add(-time.Duration(grace) * time.Second)
	}
	return p.CreationTimestamp.Time
}

func containersFinished(p *corev1.Pod) (time.Time, bool) {
	sidecars := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	var last time.Time
	found := false
	check := func(statuses []corev1.ContainerStatus, only map[string]bool) bool {
		for _, cs := range statuses {
			if only != nil && !only[cs.Name] {
				continue
			}
			t := cs.State.Terminated
			if t == nil || t.FinishedAt.IsZero() {
				return false
			}
			if !found || t.FinishedAt.After(last) {
				last, found = t.FinishedAt.Time, true
			}
		}
		return true
	}
	if !check(p.Status.ContainerStatuses, nil) || !check(p.Status.InitContainerStatuses, sidecars) {
		return time.Time{}, false
	}
	return last, found
}
