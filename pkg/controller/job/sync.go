package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// syncState is one sync's view of a Job and its pods.
type syncState struct {
	key string
	now time.Time
	// job is this sync's copy, whose status it changes.
	job  *batchv1.Job
	pods []*corev1.Pod
	// active are the pods neither finished nor being deleted; ready and
	// terminating count pods as the cache shows them.
	active             []*corev1.Pod
	ready, terminating int32
	// succeeded and failed count the Job's finished pods: counted,
	// uncounted and newly finished (failures the pod failure policy
	// ignores left out).
	succeeded, failed int32
	// uncounted are status.uncountedTerminatedPods as sets.
	uncountedSucceeded, uncountedFailed map[types.UID]bool
	// untracking are the pods whose finalizer removal the informer has
	// not shown yet: counted already.
	untracking map[types.UID]bool
	// Indexed Jobs: the succeeded indexes as the status had them and with
	// the new ones; the failed indexes (with backoffLimitPerIndex only);
	// per index, the failed pod whose finalizer stays until its
	// replacement carries its failure count on.
	prevSucceeded, succeededIndexes indexSet
	failedIndexes                   *indexSet
	awaitingReplacement             map[int]*corev1.Pod
	// backoff includes the pods finishing now.
	backoff backoffRecord
	// finished is the condition the Job ends with, once its pods are
	// counted: Complete, Failed, or FailureTarget on the way to Failed.
	finished *batchv1.JobCondition
}

// sync brings one Job's pods and status up to date.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	cached, err := c.jobs.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.forget(key)
		c.backoffs.forget(key)
		c.written.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	job := c.written.freshest(key, cached).DeepCopy()
	if finished, _ := jobFinished(job); finished {
		c.backoffs.forget(key)
		return nil
	}
	if m := job.Spec.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
		c.recorder.Event(job, corev1.EventTypeWarning, "UnknownCompletionMode", "Skipped Job sync because completion mode is unknown")
		return nil
	}
	if job.Status.UncountedTerminatedPods == nil {
		job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	// Asked before reading the pods: a pod the informer adds in between is
	// then at worst waited for once more, never missed.
	settled := c.expectations.satisfied(key)
	pods, err := c.podsOf(ctx, job)
	if err != nil {
		return err
	}
	s := c.newState(key, job, pods)

	if job.Status.StartTime == nil && !suspended(job) {
		job.Status.StartTime = &metav1.Time{Time: s.now}
	}
	s.decideFailure(c)

	var manageErr error
	suspendChanged := false
	active := int32(len(s.active))
	if s.finished != nil {
		// The pods are deleted with their finalizers on: they are counted
		// as failed below.
		deleted, err := c.deletePods(ctx, "", job, s.active, false)
		if deleted != active || !settled {
			// Pods may remain that the cache does not show yet.
			s.finished = nil
		}
		active -= deleted
		manageErr = err
	} else {
		managed := false
		if settled && job.DeletionTimestamp == nil {
			active, manageErr = c.manage(ctx, s)
			managed = true
		}
		if complete(job, s.succeeded, active) {
			s.finished = condition(batchv1.JobComplete, corev1.ConditionTrue, "", "", s.now)
		} else if managed {
			suspendChanged = c.setSuspended(s)
		}
	}

	changed := suspendChanged || active != job.Status.Active ||
		!int32Equal(job.Status.Ready, s.ready) || !int32Equal(job.Status.Terminating, s.terminating)
	job.Status.Active = active
	job.Status.Ready = &s.ready
	job.Status.Terminating = &s.terminating
	if err := c.track(ctx, s, changed); err != nil {
		return errors.Join(fmt.Errorf("tracking status: %w", err), manageErr)
	}
	return manageErr
}

// podsOf returns the pods the Job owns after claiming: those it controls
// and the namespace's orphans its selector matches.
func (c *Controller) podsOf(ctx context.Context, job *batchv1.Job) ([]*corev1.Pod, error) {
	owned, err := c.pods.ByIndex(controllerIndex, string(job.UID))
	if err != nil {
		return nil, err
	}
	orphans, err := c.pods.ByIndex(orphanIndex, job.Namespace)
	if err != nil {
		return nil, err
	}
	return c.claimPods(ctx, job, podsIn(owned, job.Namespace), podsIn(orphans, job.Namespace))
}

func podsIn(objs []interface{}, namespace string) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(objs))
	for _, obj := range objs {
		if p := obj.(*corev1.Pod); p.Namespace == namespace {
			out = append(out, p)
		}
	}
	return out
}

func (c *Controller) newState(key string, job *batchv1.Job, pods []*corev1.Pod) *syncState {
	s := &syncState{
		key: key, now: c.clock.Now(), job: job, pods: pods,
		uncountedSucceeded: uidSet(job.Status.UncountedTerminatedPods.Succeeded),
		uncountedFailed:    uidSet(job.Status.UncountedTerminatedPods.Failed),
		untracking:         c.expectations.removingFinalizers(key),
	}
	for _, p := range pods {
		switch {
		case podActive(p):
			s.active = append(s.active, p)
			if podReady(p) {
				s.ready++
			}
		case podTerminating(p):
			s.terminating++
		}
	}
	newSucceeded := s.newlyFinished(s.uncountedSucceeded, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	newFailed := s.newlyFinished(s.uncountedFailed, func(p *corev1.Pod) bool { return podFailed(job, p) })
	s.succeeded = job.Status.Succeeded + int32(len(newSucceeded)+len(s.uncountedSucceeded))
	s.failed = job.Status.Failed + int32(len(s.uncountedFailed))
	for _, p := range newFailed {
		if failureCounts(job, p) {
			s.failed++
		}
	}
	s.backoff = c.backoffs.get(key).next(newSucceeded, newFailed)
	return s
}

// newlyFinished returns the pods that finished (by done) and are not
// counted yet: tracked, not uncounted already, and of a valid index.
func (s *syncState) newlyFinished(uncounted map[types.UID]bool, done func(*corev1.Pod) bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range s.pods {
		if !s.tracked(p) || uncounted[p.UID] {
			continue
		}
		if isIndexed(s.job) && validIndex(s.job, p) == noIndex {
			continue
		}
		if done(p) {
			out = append(out, p)
		}
	}
	return out
}

// tracked tells whether a pod still carries the tracking finalizer as far
// as this controller knows.
func (s *syncState) tracked(p *corev1.Pod) bool {
	return hasTrackingFinalizer(p) && !s.untracking[p.UID]
}

func uidSet(uids []types.UID) map[types.UID]bool {
	out := make(map[types.UID]bool, len(uids))
	for _, uid := range uids {
		out[uid] = true
	}
	return out
}

// decideFailure works out whether the Job has failed, in kube's order: a
// FailureTarget recorded earlier, a pod matching a FailJob rule, the
// backoff limit, the active deadline; for Indexed Jobs with
// backoffLimitPerIndex, too many failed indexes or every index done with
// some failed. It also fills the index sets, and schedules the sync at
// the active deadline.
func (s *syncState) decideFailure(c *Controller) {
	job := s.job
	if target := findCondition(job.Status.Conditions, batchv1.JobFailureTarget); target != nil {
		s.finished = condition(batchv1.JobFailed, corev1.ConditionTrue, target.Reason, target.Message, s.now)
	} else if msg, ok := failJobMessage(job, s.pods); ok {
		s.finished = condition(batchv1.JobFailureTarget, corev1.ConditionTrue, batchv1.JobReasonPodFailurePolicy, msg, s.now)
	}
	if s.finished == nil {
		switch {
		case s.failed > backoffLimit(job) || restartsPastBackoffLimit(job, s.pods):
			s.finished = condition(batchv1.JobFailed, corev1.ConditionTrue, batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit", s.now)
		case pastActiveDeadline(job, s.now):
			s.finished = condition(batchv1.JobFailed, corev1.ConditionTrue, batchv1.JobReasonDeadlineExceeded, "Job was active longer than specified deadline", s.now)
		case job.Spec.ActiveDeadlineSeconds != nil && !suspended(job):
			left := time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second - s.now.Sub(job.Status.StartTime.Time)
			c.queue.AddAfter(s.key, left)
		}
	}
	if !isIndexed(job) {
		return
	}
	s.prevSucceeded = parseIndexSet(job.Status.CompletedIndexes, completions(job))
	var newlySucceeded []int
	for _, p := range s.pods {
		if ix := validIndex(job, p); ix != noIndex && p.Status.Phase == corev1.PodSucceeded && hasTrackingFinalizer(p) {
			newlySucceeded = append(newlySucceeded, ix)
		}
	}
	s.succeededIndexes = s.prevSucceeded.with(newlySucceeded...)
	s.succeeded = int32(s.succeededIndexes.total())
	if !hasBackoffLimitPerIndex(job) {
		return
	}
	var failed indexSet
	if job.Status.FailedIndexes != nil {
		failed = parseIndexSet(*job.Status.FailedIndexes, completions(job))
	}
	var newlyFailed []int
	for _, p := range s.pods {
		if ix := validIndex(job, p); ix != noIndex && hasTrackingFinalizer(p) && indexFailed(job, p) {
			newlyFailed = append(newlyFailed, ix)
		}
	}
	failed = failed.with(newlyFailed...)
	s.failedIndexes = &failed
	if s.finished == nil {
		switch {
		case job.Spec.MaxFailedIndexes != nil && failed.total() > int(*job.Spec.MaxFailedIndexes):
			s.finished = condition(batchv1.JobFailed, corev1.ConditionTrue, batchv1.JobReasonMaxFailedIndexesExceeded, "Job has exceeded the specified maximal number of failed indexes", s.now)
		case failed.total() > 0 && failed.total()+s.succeededIndexes.total() >= completions(job):
			s.finished = condition(batchv1.JobFailed, corev1.ConditionTrue, batchv1.JobReasonFailedIndexes, "Job has failed indexes", s.now)
		}
	}
	s.awaitingReplacement = s.failedAwaitingReplacement()
}

// failedAwaitingReplacement returns, for each index that is neither done
// nor running, its last failed pod still tracked: the pod keeps its
// finalizer (so stays in the cache) until its replacement has taken its
// failure count over.
func (s *syncState) failedAwaitingReplacement() map[int]*corev1.Pod {
	running := map[int]bool{}
	for _, ix := range indexesOf(s.active) {
		running[ix] = true
	}
	out := map[int]*corev1.Pod{}
	for _, p := range s.pods {
		if !s.tracked(p) || !podFailed(s.job, p) {
			continue
		}
		ix := validIndex(s.job, p)
		if ix == noIndex || s.succeededIndexes.has(ix) || s.failedIndexes.has(ix) || running[ix] {
			continue
		}
		if last, ok := out[ix]; !ok || (indexAllFailures(last) <= indexAllFailures(p) && !finishTime(p).Before(finishTime(last))) {
			out[ix] = p
		}
	}
	return out
}

// manage creates and deletes pods towards the wanted number of active
// ones and returns how many are active after.
func (c *Controller) manage(ctx context.Context, s *syncState) (int32, error) {
	job := s.job
	active := int32(len(s.active))
	if suspended(job) {
		c.expectations.expectDeletions(s.key, len(s.active))
		deleted, err := c.deletePods(ctx, s.key, job, podsToRemove(job, s.active, len(s.active)), true)
		return active - deleted, err
	}
	parallelism := int32(1)
	if job.Spec.Parallelism != nil {
		parallelism = *job.Spec.Parallelism
	}
	var want int32
	switch {
	case job.Spec.Completions == nil && s.succeeded > 0:
		// A Job without completions is done when any pod succeeds: the
		// rest run on, and none is added.
		want = active
	case job.Spec.Completions == nil:
		want = parallelism
	default:
		want = max(0, min(*job.Spec.Completions-s.succeeded, parallelism))
	}

	remove := podsToRemove(job, s.active, int(max(0, active-want)))
	if len(remove) > maxPodChangesPerSync {
		remove = remove[:maxPodChangesPerSync]
	}
	if len(remove) > 0 {
		// Deleting and creating in one sync could replace an Indexed Job's
		// duplicate before the informer shows it gone: deletion first.
		c.expectations.expectDeletions(s.key, len(remove))
		deleted, err := c.deletePods(ctx, s.key, job, remove, true)
		return active - deleted, err
	}

	var terminating int32
	if onlyReplaceFailed(job) {
		terminating = s.terminating
	}
	diff := int(want - terminating - active)
	if diff <= 0 {
		return active, nil
	}
	// While replacements wait out a backoff the pods running stay active:
	// kube v1.29 reported 0 here, a bug kube fixed later (kubernetes#139457).
	if !hasBackoffLimitPerIndex(job) {
		if wait := s.backoff.remaining(s.now); wait > 0 {
			c.queue.AddAfter(s.key, max(wait, podSyncDelay))
			return active, nil
		}
	}
	diff = min(diff, maxPodChangesPerSync)
	var indexes []int
	if isIndexed(job) {
		indexes = s.pendingIndexes(diff)
		if hasBackoffLimitPerIndex(job) {
			var wait time.Duration
			if indexes, wait = s.readyToReplace(indexes); len(indexes) == 0 {
				if wait > 0 {
					c.queue.AddAfter(s.key, max(wait, podSyncDelay))
				}
				return active, nil
			}
		}
		diff = len(indexes)
	}
	if diff == 0 {
		return active, nil
	}
	created, err := c.createPods(ctx, s.key, job, diff, indexes, s.awaitingReplacement)
	return active + int32(created), err
}

// pendingIndexes returns up to n of the lowest indexes with no pod
// running, none succeeded, not failed, and (when only failed pods are
// replaced) none terminating.
func (s *syncState) pendingIndexes(n int) []int {
	taken := s.succeededIndexes.with(indexesOf(s.active)...)
	if onlyReplaceFailed(s.job) {
		var terminating []*corev1.Pod
		for _, p := range s.pods {
			if podTerminating(p) {
				terminating = append(terminating, p)
			}
		}
		taken = taken.with(indexesOf(terminating)...)
	}
	if s.failedIndexes != nil {
		taken = taken.union(*s.failedIndexes)
	}
	return taken.firstMissing(n, completions(s.job))
}

// readyToReplace keeps the indexes whose own backoff is over; when none
// is, it returns the shortest wait.
func (s *syncState) readyToReplace(indexes []int) ([]int, time.Duration) {
	var ready []int
	var wait time.Duration
	for _, ix := range indexes {
		d := indexBackoffRemaining(s.awaitingReplacement[ix], s.now)
		if d == 0 {
			ready = append(ready, ix)
		} else if wait == 0 || d < wait {
			wait = d
		}
	}
	if len(ready) > 0 {
		return ready, 0
	}
	return nil, wait
}

// setSuspended keeps the Suspended condition in step with spec.suspend and
// reports whether it changed; a resumed Job starts its active deadline
// again.
func (c *Controller) setSuspended(s *syncState) bool {
	job := s.job
	if suspended(job) {
		if !setCondition(job, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended", s.now) {
			return false
		}
		c.recorder.Event(job, corev1.EventTypeNormal, "Suspended", "Job suspended")
		return true
	}
	if !setCondition(job, batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", s.now) {
		return false
	}
	c.recorder.Event(job, corev1.EventTypeNormal, "Resumed", "Job resumed")
	job.Status.StartTime = &metav1.Time{Time: s.now}
	return true
}

func suspended(job *batchv1.Job) bool { return job.Spec.Suspend != nil && *job.Spec.Suspend }

func backoffLimit(job *batchv1.Job) int32 {
	if job.Spec.BackoffLimit == nil {
		return 6
	}
	return *job.Spec.BackoffLimit
}

// complete: as many successes as completions, or with no completions any
// success, and no pod running.
func complete(job *batchv1.Job, succeeded, active int32) bool {
	if active != 0 {
		return false
	}
	if job.Spec.Completions == nil {
		return succeeded > 0
	}
	return succeeded >= *job.Spec.Completions
}

// restartsPastBackoffLimit tells whether the container restarts of a Job
// whose pods restart in place (restartPolicy OnFailure) have reached its
// backoff limit.
func restartsPastBackoffLimit(job *batchv1.Job, pods []*corev1.Pod) bool {
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, cs := range p.Status.InitContainerStatuses {
			restarts += cs.RestartCount
		}
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
	}
	if limit := backoffLimit(job); limit > 0 {
		return restarts >= limit
	}
	return restarts > 0
}

func pastActiveDeadline(job *batchv1.Job, now time.Time) bool {
	if job.Spec.ActiveDeadlineSeconds == nil || job.Status.StartTime == nil || suspended(job) {
		return false
	}
	return now.Sub(job.Status.StartTime.Time) >= time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second
}

func int32Equal(p *int32, v int32) bool { return p != nil && *p == v }
