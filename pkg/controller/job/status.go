package job

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// track counts the Job's finished pods and writes its status, in the two
// steps that keep every pod counted exactly once:
//
//  1. the finished pods still tracked go into status.uncountedTerminatedPods
//     (an Indexed Job's successes straight into completedIndexes, the
//     index being enough to count each once), and the status is written;
//  2. their tracking finalizers are removed, the pods whose finalizer is
//     gone are moved from the uncounted lists into succeeded and failed,
//     the Job is marked finished once nothing is left uncounted, and the
//     status is written again.
//
// A pod's finalizer goes only once it has finished, or the Job is
// finishing or being deleted (its running pods then count as failed).
// changed says whether the status changed already.
func (c *Controller) track(ctx context.Context, s *syncState, changed bool) error {
	job := s.job
	indexed := isIndexed(job)
	if indexed {
		// Indexes are recorded lowest first.
		sort.SliceStable(s.pods, func(i, k int) bool { return completionIndex(s.pods[i]) < completionIndex(s.pods[k]) })
	}
	stillTracked := map[types.UID]bool{}
	for _, p := range s.pods {
		if s.tracked(p) {
			stillTracked[p.UID] = true
		}
	}
	if countUntracked(&job.Status, stillTracked) {
		changed = true
	}
	uncounted := job.Status.UncountedTerminatedPods
	var untrack []*corev1.Pod
	var newIndexes []int
	capped := false
	for _, p := range s.pods {
		if !s.tracked(p) {
			continue
		}
		failed := podFailed(job, p)
		if !s.mayUntrack(p, failed) {
			continue
		}
		untrack = append(untrack, p)
		switch {
		case p.Status.Phase == corev1.PodSucceeded && !s.uncountedFailed[p.UID]:
			if indexed {
				if ix := validIndex(job, p); ix != noIndex && !s.prevSucceeded.has(ix) {
					newIndexes = append(newIndexes, ix)
					changed = true
				}
			} else if !s.uncountedSucceeded[p.UID] {
				uncounted.Succeeded = append(uncounted.Succeeded, p.UID)
				changed = true
			}
		case failed || s.finished != nil:
			// A Job that finishes counts its unfinished pods as failed.
			if s.uncountedFailed[p.UID] || (indexed && validIndex(job, p) == noIndex) {
				break
			}
			if failureCounts(job, p) {
				uncounted.Failed = append(uncounted.Failed, p.UID)
				changed = true
			}
		}
		if len(newIndexes)+len(uncounted.Succeeded)+len(uncounted.Failed) >= maxPodChangesPerSync {
			// The status write syncs the Job again for the rest.
			capped = true
			break
		}
	}
	if indexed {
		s.succeededIndexes = s.succeededIndexes.with(newIndexes...)
		if done := s.succeededIndexes.String(); done != job.Status.CompletedIndexes {
			job.Status.CompletedIndexes = done
			changed = true
		}
		job.Status.Succeeded = int32(s.succeededIndexes.total())
		var failed *string
		if s.failedIndexes != nil {
			str := s.failedIndexes.String()
			failed = &str
		}
		if !stringPtrEqual(failed, job.Status.FailedIndexes) {
			job.Status.FailedIndexes = failed
			changed = true
		}
	}
	if s.finished != nil && s.finished.Type == batchv1.JobFailureTarget {
		// Recorded before any finalizer goes, so that the next sync fails
		// the Job even if the pod that matched FailJob is gone by then.
		job.Status.Conditions = append(job.Status.Conditions, *s.finished)
		changed = true
		s.finished = condition(batchv1.JobFailed, corev1.ConditionTrue, s.finished.Reason, s.finished.Message, s.now)
	}

	if changed {
		if err := c.writeStatus(ctx, s); err != nil {
			return fmt.Errorf("adding uncounted pods to status: %w", err)
		}
		c.backoffs.set(s.key, s.backoff)
		changed = false
	}
	var untrackErr error
	if len(untrack) > 0 {
		var done []bool
		done, untrackErr = c.removeFinalizers(ctx, s.key, untrack)
		for i, p := range untrack {
			if done[i] {
				delete(stillTracked, p.UID)
			}
		}
	}
	if countUntracked(&s.job.Status, stillTracked) {
		changed = true
	}
	if untrackErr != nil {
		// Keep what was counted.
		if changed {
			if err := c.writeStatus(ctx, s); err != nil {
				return errors.Join(untrackErr, fmt.Errorf("removing uncounted pods from status: %w", err))
			}
		}
		return untrackErr
	}
	finishing := !capped && s.finish()
	if finishing {
		changed = true
	}
	if !changed {
		return nil
	}
	if err := c.writeStatus(ctx, s); err != nil {
		return fmt.Errorf("removing uncounted pods from status: %w", err)
	}
	if finishing {
		c.recordFinished(s.job, s.finished)
	}
	return nil
}

// mayUntrack tells whether a pod's finalizer may go now.
func (s *syncState) mayUntrack(p *corev1.Pod, failed bool) bool {
	if s.job.DeletionTimestamp != nil || s.finished != nil || p.Status.Phase == corev1.PodSucceeded {
		return true
	}
	if !failed {
		return false
	}
	if hasBackoffLimitPerIndex(s.job) {
		if ix := completionIndex(p); ix != noIndex {
			if waiting, ok := s.awaitingReplacement[ix]; ok && waiting.UID == p.UID {
				return false
			}
		}
	}
	return true
}

// countUntracked moves the uncounted pods that no longer carry the
// tracking finalizer (those not in tracked) into the counters, and reports
// whether anything moved.
func countUntracked(status *batchv1.JobStatus, tracked map[types.UID]bool) bool {
	u := status.UncountedTerminatedPods
	keep := func(uids []types.UID) []types.UID {
		var out []types.UID
		for _, uid := range uids {
			if tracked[uid] {
				out = append(out, uid)
			}
		}
		return out
	}
	succeeded, failed := keep(u.Succeeded), keep(u.Failed)
	moved := len(succeeded) != len(u.Succeeded) || len(failed) != len(u.Failed)
	status.Succeeded += int32(len(u.Succeeded) - len(succeeded))
	status.Failed += int32(len(u.Failed) - len(failed))
	u.Succeeded, u.Failed = succeeded, failed
	return moved
}

// finish adds the finished condition once every finished pod is counted,
// and reports whether it did.
func (s *syncState) finish() bool {
	if s.finished == nil {
		return false
	}
	if u := s.job.Status.UncountedTerminatedPods; len(u.Succeeded)+len(u.Failed) > 0 {
		return false
	}
	f := s.finished
	setCondition(s.job, f.Type, f.Status, f.Reason, f.Message, s.now)
	if f.Type == batchv1.JobComplete {
		s.job.Status.CompletionTime = &metav1.Time{Time: s.now}
	}
	return true
}

func (c *Controller) recordFinished(job *batchv1.Job, cond *batchv1.JobCondition) {
	if cond.Type != batchv1.JobComplete {
		c.recorder.Event(job, corev1.EventTypeWarning, cond.Reason, cond.Message)
		return
	}
	if job.Spec.Completions != nil && job.Status.Succeeded > *job.Spec.Completions {
		c.recorder.Event(job, corev1.EventTypeWarning, "TooManySucceededPods", "Too many succeeded pods running after completion count reached")
	}
	c.recorder.Event(job, corev1.EventTypeNormal, "Completed", "Job completed")
}

// writeStatus writes s.job's status. The server's answer becomes s.job,
// so that a second write in the same sync starts from it, and is
// remembered for the next sync, which the informer may not have caught up
// with by then. A conflict fails the sync, which then starts again from
// the Job as it is.
func (c *Controller) writeStatus(ctx context.Context, s *syncState) error {
	from := s.job.ResourceVersion
	updated, err := c.client.BatchV1().Jobs(s.job.Namespace).UpdateStatus(ctx, s.job, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	if updated.Status.UncountedTerminatedPods == nil {
		updated.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	c.written.record(s.key, from, updated)
	// The next writes of this sync change the copy, not the remembered one.
	s.job = updated.DeepCopy()
	return nil
}

// writtenJobs remembers, per Job, the object its last status write
// returned, until the informer shows it. A status write is conditional on
// the resourceVersion it started from, so the versions one chain of
// writes passed through are all older than its last: an informer copy at
// one of them is stale, and any other is the last write or newer.
type writtenJobs struct {
	mu   sync.Mutex
	jobs map[string]*writtenJob
}

type writtenJob struct {
	job   *batchv1.Job
	older map[string]bool
}

func newWrittenJobs() *writtenJobs { return &writtenJobs{jobs: map[string]*writtenJob{}} }

func (w *writtenJobs) record(key, from string, job *batchv1.Job) {
	if from == "" || job.ResourceVersion == "" {
		// Versions this controller cannot tell apart.
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.jobs[key]
	if e == nil || e.job.UID != job.UID {
		e = &writtenJob{older: map[string]bool{}}
		w.jobs[key] = e
	}
	e.older[from] = true
	e.job = job
}

// freshest returns the written Job when cached is older, else cached.
func (w *writtenJobs) freshest(key string, cached *batchv1.Job) *batchv1.Job {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.jobs[key]
	if e == nil {
		return cached
	}
	if e.job.UID == cached.UID && e.older[cached.ResourceVersion] {
		return e.job
	}
	delete(w.jobs, key)
	return cached
}

func (w *writtenJobs) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.jobs, key)
}

func jobFinished(job *batchv1.Job) (bool, batchv1.JobConditionType) {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true, c.Type
		}
	}
	return false, ""
}

func condition(t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) *batchv1.JobCondition {
	return &batchv1.JobCondition{
		Type: t, Status: status, Reason: reason, Message: message,
		LastProbeTime: metav1.Time{Time: now}, LastTransitionTime: metav1.Time{Time: now},
	}
}

func findCondition(conds []batchv1.JobCondition, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// setCondition sets a condition of the Job, replacing one of its type
// that differs in status, reason or message; a False condition the Job
// does not have is not added. It reports whether the conditions changed.
func setCondition(job *batchv1.Job, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) bool {
	if cur := findCondition(job.Status.Conditions, t); cur != nil {
		if cur.Status == status && cur.Reason == reason && cur.Message == message {
			return false
		}
		*cur = *condition(t, status, reason, message, now)
		return true
	}
	if status == corev1.ConditionFalse {
		return false
	}
	job.Status.Conditions = append(job.Status.Conditions, *condition(t, status, reason, message, now))
	return true
}

func stringPtrEqual(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
