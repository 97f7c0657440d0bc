package cronjob

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ScheduledTimestampAnnotation records on a Job the time it was scheduled for.
const ScheduledTimestampAnnotation = "batch.kubernetes.io/cronjob-scheduled-timestamp"

// nextTickMargin is added to a requeue for the next tick, so that the
// controller wakes just after the scheduled time, not just before it: the
// queue's timers never fire early on the monotonic clock, so the margin
// only covers the wall clock being slewed meanwhile (a wake a little early
// finds nothing due and requeues for the rest). kube waits 100 ms, which
// every Job of the tick then carries in its creation skew.
const nextTickMargin = 10 * time.Millisecond

// Observer records values, as a Prometheus histogram does.
type Observer interface{ Observe(float64) }

// controllerIndex indexes Jobs by the UID of their controller, so that a
// sync reads its CronJob's Jobs without scanning the namespace's.
const controllerIndex = "controller-uid"

func byControllerUID(obj interface{}) ([]string, error) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return nil, nil
	}
	if ref := metav1.GetControllerOf(job); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

// Controller creates the Jobs of CronJobs.
type Controller struct {
	client   kubernetes.Interface
	cronJobs batchlisters.CronJobLister
	jobs     cache.Indexer
	synced   []cache.InformerSynced
	queue    workqueue.RateLimitingInterface
	recorder record.EventRecorder
	clock    clock.PassiveClock
	// skew records, for each Job created, the seconds from its scheduled
	// time to its creation; nil records nothing.
	skew Observer
	// local is the time zone of CronJobs without spec.timeZone.
	local *time.Location

	// writes are the status writes of syncs otherwise done, oldest
	// first; see worker.
	writesMu sync.Mutex
	writes   []*statusWrite

	// written holds, by key, the last status write's answer until the
	// informer shows it; see ownWrite.
	writtenMu sync.Mutex
	written   map[string]writtenStatus
}

// writtenStatus is a CronJob as a status write returned it, and the
// resourceVersion of the copy it replaced.
type writtenStatus struct {
	cj       *batchv1.CronJob
	replaced string
}

// statusWrite is the status write that ends a sync: the CronJob's key
// stays in process (the queue hands it to no other worker) until it is
// made, and only then is the key requeued for its next tick.
type statusWrite struct {
	key           string
	base, desired *batchv1.CronJob
	// requeue and syncErr are the rest of the sync's outcome; start is
	// when it began, on the controller's clock, which requeue counts from.
	requeue *time.Duration
	syncErr error
	start   time.Time
}

// New builds a controller over shared informers of CronJobs and Jobs. It
// records into skew the seconds from each Job's scheduled time to its
// creation (the controller-manager's
// cronjob_controller_job_creation_skew_duration_seconds); skew may be nil.
func New(client kubernetes.Interface, cronJobs batchinformers.CronJobInformer, jobs batchinformers.JobInformer, recorder record.EventRecorder, clk clock.PassiveClock, skew Observer) (*Controller, error) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	c := &Controller{
		client:   client,
		cronJobs: cronJobs.Lister(),
		jobs:     jobs.Informer().GetIndexer(),
		synced:   []cache.InformerSynced{cronJobs.Informer().HasSynced, jobs.Informer().HasSynced},
		queue:    workqueue.NewNamedRateLimitingQueue(workqueue.DefaultControllerRateLimiter(), "cronjob"),
		recorder: recorder,
		clock:    clk,
		skew:     skew,
		local:    time.Local,
	}
	// A started informer refuses new indexers, as does one that has this
	// index already (a second controller over the same informer).
	if err := jobs.Informer().AddIndexers(cache.Indexers{controllerIndex: byControllerUID}); err != nil {
		return nil, fmt.Errorf("indexing jobs by controller: %w", err)
	}
	_, _ = cronJobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj interface{}) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	})
	_, _ = jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueOwner,
		UpdateFunc: func(_, obj interface{}) { c.enqueueOwner(obj) },
		DeleteFunc: c.enqueueOwner,
	})
	return c, nil
}

func (c *Controller) enqueue(obj interface{}) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

// enqueueOwner queues the CronJob that controls a Job.
func (c *Controller) enqueueOwner(obj interface{}) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(job); ref != nil && ref.Kind == "CronJob" && ref.APIVersion == batchv1.SchemeGroupVersion.String() {
		c.queue.Add(job.Namespace + "/" + ref.Name)
	}
}

// Run processes CronJobs with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	klog.InfoS("Starting cronjob controller")
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	for i := 0; i < workers; i++ {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
}

// worker syncs CronJobs and makes the status writes that end their syncs,
// syncs first: when a tick falls due for many CronJobs at once, all their
// Jobs are created before the status writes recording them, so that no
// Job waits behind other CronJobs' bookkeeping. Each worker has one
// request in flight at a time, as kube's; what a sync writes, and in what
// order for one CronJob, is unchanged, and a CronJob is synced again only
// once its status is written.
//
// A worker blocks in the queue only when it has no write to make or
// another worker has just taken a key (and will make the writes once the
// queue is empty): a write never waits for a worker that is free.
func (c *Controller) worker(ctx context.Context) {
	for {
		if c.queue.Len() == 0 {
			if w := c.popWrite(); w != nil {
				requeue, err := c.finishSync(ctx, w)
				c.done(w.key, w.start, requeue, err)
				continue
			}
		}
		key, quit := c.queue.Get()
		if quit {
			return
		}
		c.processNext(ctx, key.(string))
	}
}

// processNext syncs key; a status write still to make is queued for the
// workers, and the key stays in process until it is made.
func (c *Controller) processNext(ctx context.Context, key string) {
	start := c.clock.Now()
	w, requeue, err := c.reconcile(ctx, key)
	if w != nil {
		w.key, w.start = key, start
		c.pushWrite(w)
		return
	}
	c.done(key, start, requeue, err)
}

// done ends the processing of key, synced at start: after an error it is
// retried with backoff, else requeued for requeueAfter from start.
func (c *Controller) done(key string, start time.Time, requeueAfter *time.Duration, err error) {
	defer c.queue.Done(key)
	switch {
	case err != nil:
		utilruntime.HandleError(fmt.Errorf("syncing cronjob %s: %w", key, err))
		c.queue.AddRateLimited(key)
	case requeueAfter != nil:
		c.queue.Forget(key)
		// Counted from the sync's start, not from now: the status write
		// may have waited behind other CronJobs' syncs.
		c.queue.AddAfter(key, *requeueAfter-c.clock.Now().Sub(start))
	default:
		c.queue.Forget(key)
	}
}

func (c *Controller) pushWrite(w *statusWrite) {
	c.writesMu.Lock()
	defer c.writesMu.Unlock()
	c.writes = append(c.writes, w)
}

// popWrite takes the oldest status write, or nil.
func (c *Controller) popWrite() *statusWrite {
	c.writesMu.Lock()
	defer c.writesMu.Unlock()
	if len(c.writes) == 0 {
		return nil
	}
	w := c.writes[0]
	c.writes[0] = nil
	c.writes = c.writes[1:]
	return w
}

// sync brings one CronJob up to date and returns when to look at it again.
func (c *Controller) sync(ctx context.Context, key string) (*time.Duration, error) {
	w, requeue, err := c.reconcile(ctx, key)
	if w != nil {
		return c.finishSync(ctx, w)
	}
	return requeue, err
}

// finishSync makes a sync's status write and returns the sync's outcome.
func (c *Controller) finishSync(ctx context.Context, w *statusWrite) (*time.Duration, error) {
	if err := c.writeStatus(ctx, w.base, w.desired); err != nil {
		return nil, errors.Join(w.syncErr, err)
	}
	if w.syncErr != nil {
		return nil, w.syncErr
	}
	return w.requeue, nil
}

// reconcile does all of a sync but its status write, which it returns
// when the status changed; else it returns the sync's outcome.
func (c *Controller) reconcile(ctx context.Context, key string) (*statusWrite, *time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, nil, err
	}
	cached, err := c.cronJobs.CronJobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	indexed, err := c.jobs.ByIndex(controllerIndex, string(cached.UID))
	if err != nil {
		return nil, nil, err
	}
	owned := make([]*batchv1.Job, 0, len(indexed))
	for _, obj := range indexed {
		if j := obj.(*batchv1.Job); j.Namespace == ns {
			owned = append(owned, j)
		}
	}
	cached = c.ownWrite(key, cached)
	cj := statusCopy(cached)
	// The history limits are applied first, as kube's controller does: a
	// finished Job they delete leaves status.active with SuccessfulDelete
	// alone, and the sync reports SawCompletedJob only for the finished
	// Jobs that remain. A sync that fails part-way (a Job deleted for
	// Replace, then the new one refused) still writes what it changed, as
	// kube's does; the error then requeues the CronJob.
	updateStatus := c.cleanupFinishedJobs(ctx, cj, owned)
	requeue, synced, syncErr := c.syncCronJob(ctx, cj, owned)
	updateStatus = updateStatus || synced
	if updateStatus {
		return &statusWrite{base: cached, desired: cj, requeue: requeue, syncErr: syncErr}, nil, nil
	}
	if syncErr != nil {
		return nil, nil, syncErr
	}
	return nil, requeue, nil
}

// statusCopy returns a copy of cj to sync: a sync changes only a
// CronJob's status (or swaps the whole object for one read afresh), so the
// copy shares cj's metadata and spec, which nobody changes in an informer's
// cache, and has a status of its own. A status write waiting behind other
// syncs then holds little more than the status.
func statusCopy(cj *batchv1.CronJob) *batchv1.CronJob {
	out := *cj
	cj.Status.DeepCopyInto(&out.Status)
	return &out
}

// errReplaced stops a status write to a CronJob deleted and created again
// under the same name: the status computed belongs to the old one.
var errReplaced = errors.New("cronjob replaced")

// writeStatus writes the status of desired, computed from base. A conflict
// means base was stale; dropping the write would lose the Job just
// created from status.active, so the changes are carried over to a fresh
// copy and written again, a bounded number of times.
func (c *Controller) writeStatus(ctx context.Context, base, desired *batchv1.CronJob) error {
	client := c.client.BatchV1().CronJobs(desired.Namespace)
	next := desired
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		written, err := client.UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err == nil {
			c.rememberWrite(written, next.ResourceVersion)
		}
		if !apierrors.IsConflict(err) {
			return err
		}
		live, getErr := client.Get(ctx, desired.Name, metav1.GetOptions{})
		if getErr != nil {
			return getErr
		}
		if live.UID != desired.UID {
			return errReplaced
		}
		next = carryOver(live, base, desired)
		return err
	})
	if apierrors.IsNotFound(err) || errors.Is(err, errReplaced) {
		return nil
	}
	return err
}

// ownWrite returns the CronJob a sync of key starts from: the informer's
// copy, or the one this controller's last status write returned while the
// informer still shows the copy that write replaced. Without it a sync
// that follows its own write closely (a Job's next update queues one at
// once) would see a finished Job still active and report it again.
func (c *Controller) ownWrite(key string, cached *batchv1.CronJob) *batchv1.CronJob {
	c.writtenMu.Lock()
	defer c.writtenMu.Unlock()
	w, ok := c.written[key]
	if !ok {
		return cached
	}
	if w.cj.UID == cached.UID && w.replaced == cached.ResourceVersion {
		return w.cj
	}
	// The informer has caught up (or the CronJob was replaced).
	delete(c.written, key)
	return cached
}

// rememberWrite records the answer of a status write that replaced the
// version replaced.
func (c *Controller) rememberWrite(cj *batchv1.CronJob, replaced string) {
	key, err := cache.MetaNamespaceKeyFunc(cj)
	if err != nil {
		return
	}
	c.writtenMu.Lock()
	defer c.writtenMu.Unlock()
	if c.written == nil {
		c.written = map[string]writtenStatus{}
	}
	c.written[key] = writtenStatus{cj: cj, replaced: replaced}
}

// carryOver applies to live what a sync changed from base to desired: the
// Jobs it added to and removed from status.active, and the later of the
// schedule and success times.
func carryOver(live, base, desired *batchv1.CronJob) *batchv1.CronJob {
	out := live.DeepCopy()
	for _, r := range base.Status.Active {
		if !inActive(desired, r.UID) {
			removeActive(out, r.UID)
		}
	}
	for _, r := range desired.Status.Active {
		if !inActive(base, r.UID) && !inActive(out, r.UID) {
			out.Status.Active = append(out.Status.Active, r)
		}
	}
	out.Status.LastScheduleTime = later(out.Status.LastScheduleTime, desired.Status.LastScheduleTime)
	out.Status.LastSuccessfulTime = later(out.Status.LastSuccessfulTime, desired.Status.LastSuccessfulTime)
	return out
}

func later(a, b *metav1.Time) *metav1.Time {
	if a == nil || (b != nil && b.After(a.Time)) {
		return b
	}
	return a
}

func isFinished(j *batchv1.Job) (bool, batchv1.JobConditionType) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true, c.Type
		}
	}
	return false, ""
}

func inActive(cj *batchv1.CronJob, uid types.UID) bool {
	for _, r := range cj.Status.Active {
		if r.UID == uid {
			return true
		}
	}
	return false
}

func removeActive(cj *batchv1.CronJob, uid types.UID) {
	var kept []corev1.ObjectReference
	for _, r := range cj.Status.Active {
		if r.UID != uid {
			kept = append(kept, r)
		}
	}
	cj.Status.Active = kept
}

// syncCronJob reconciles cj (a copy it may change) with its Jobs and
// creates the Job that is due, if any.
func (c *Controller) syncCronJob(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) (*time.Duration, bool, error) {
	now := c.clock.Now()
	updateStatus := false
	if forgetsJob(cj, jobs) {
		// Most often this copy predates the status write that recorded the
		// Job (the informer lags): as kube does, read the CronJob again
		// before calling the Job unexpected, and go on from the fresh copy.
		live, err := c.client.BatchV1().CronJobs(cj.Namespace).Get(ctx, cj.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		if live.UID == cj.UID {
			*cj = *live
		}
	}
	children := map[types.UID]bool{}
	for _, j := range jobs {
		children[j.UID] = true
		found := inActive(cj, j.UID)
		finished, how := isFinished(j)
		switch {
		case !found && !finished:
			if t, ok := scheduledBy(cj, j); ok {
				// This controller created it, and the status write that
				// recorded it was lost: record it again.
				klog.InfoS("Job missing from status.active, adding it back", "cronjob", klog.KObj(cj), "job", j.Name)
				cj.Status.Active = append(cj.Status.Active, jobRef(j))
				cj.Status.LastScheduleTime = later(cj.Status.LastScheduleTime, &metav1.Time{Time: t})
				updateStatus = true
				continue
			}
			c.recorder.Eventf(cj, corev1.EventTypeWarning, "UnexpectedJob", "Saw a job that the controller did not create or forgot: %s", j.Name)
		case found && finished:
			removeActive(cj, j.UID)
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, status: %v", j.Name, how)
			updateStatus = true
		}
		if finished && how == batchv1.JobComplete && j.Status.CompletionTime != nil {
			if last := cj.Status.LastSuccessfulTime; last == nil || j.Status.CompletionTime.After(last.Time) {
				cj.Status.LastSuccessfulTime = j.Status.CompletionTime
				updateStatus = true
			}
		}
	}
	for _, r := range cj.Status.Active {
		if children[r.UID] {
			continue
		}
		// The lister may lag; ask the server before dropping the reference.
		if _, err := c.client.BatchV1().Jobs(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "MissingJob", "Active job went missing: %v", r.Name)
			removeActive(cj, r.UID)
			updateStatus = true
		} else if err != nil {
			return nil, updateStatus, err
		}
	}
	if cj.DeletionTimestamp != nil {
		return nil, updateStatus, nil
	}
	sched, loc, err := parseSchedule(cj, c.local)
	if err != nil {
		reason := "UnparseableSchedule"
		if cj.Spec.TimeZone != nil {
			if _, tzErr := time.LoadLocation(*cj.Spec.TimeZone); tzErr != nil {
				reason = "UnknownTimeZone"
			}
		}
		c.recorder.Eventf(cj, corev1.EventTypeWarning, reason, "%v", err)
		return nil, updateStatus, nil
	}
	requeue := func() *time.Duration {
		d := nextScheduleTime(now, sched, loc).Sub(now) + nextTickMargin
		return &d
	}
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		return nil, updateStatus, nil
	}
	scheduled, missed := mostRecentScheduleTime(cj, now, sched, loc)
	if scheduled == nil {
		return requeue(), updateStatus, nil
	}
	if missed > maxMissedTimes {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "TooManyMissedTimes", "too many missed start times: %d. Set or decrease .spec.startingDeadlineSeconds or check clock skew", missed)
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && scheduled.Add(time.Duration(*d)*time.Second).Before(now) {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z))
		return requeue(), updateStatus, nil
	}
	name := jobName(cj, *scheduled)
	for _, r := range cj.Status.Active {
		if r.Name == name {
			return requeue(), updateStatus, nil
		}
	}
	if cj.Spec.ConcurrencyPolicy == batchv1.ForbidConcurrent && len(cj.Status.Active) > 0 {
		c.recorder.Eventf(cj, corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
		return requeue(), updateStatus, nil
	}
	if cj.Spec.ConcurrencyPolicy == batchv1.ReplaceConcurrent {
		for _, r := range append([]corev1.ObjectReference(nil), cj.Status.Active...) {
			if err := c.deleteJob(ctx, cj, r.Namespace, r.Name); err != nil {
				return nil, updateStatus, err
			}
			removeActive(cj, r.UID)
			updateStatus = true
		}
	}
	job := jobFor(cj, *scheduled, loc, name)
	created, err := c.client.BatchV1().Jobs(cj.Namespace).Create(ctx, job, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// Created by an earlier run of this controller (or another
		// instance): the name is the schedule time, so it is this run's.
		existing, getErr := c.client.BatchV1().Jobs(cj.Namespace).Get(ctx, name, metav1.GetOptions{})
		if getErr != nil {
			return nil, updateStatus, getErr
		}
		if ref := metav1.GetControllerOf(existing); ref == nil || ref.UID != cj.UID {
			return requeue(), updateStatus, nil
		}
		if finished, _ := isFinished(existing); !finished && !inActive(cj, existing.UID) {
			cj.Status.Active = append(cj.Status.Active, jobRef(existing))
		}
		created = existing
	case err != nil:
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
		return nil, updateStatus, err
	default:
		if c.skew != nil {
			// On the controller's clock, where kube reads the Job's
			// creationTimestamp: sub-second, and the clock the schedule
			// was worked out on.
			c.skew.Observe(c.clock.Now().Sub(*scheduled).Seconds())
		}
		c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", created.Name)
		cj.Status.Active = append(cj.Status.Active, jobRef(created))
	}
	cj.Status.LastScheduleTime = &metav1.Time{Time: *scheduled}
	return requeue(), true, nil
}

// forgetsJob tells whether cj's status.active lacks an unfinished Job of
// jobs (all controlled by cj).
func forgetsJob(cj *batchv1.CronJob, jobs []*batchv1.Job) bool {
	for _, j := range jobs {
		if finished, _ := isFinished(j); !finished && !inActive(cj, j.UID) {
			return true
		}
	}
	return false
}

// scheduledBy returns the schedule time j was created for when this
// controller created it for cj: cj controls it, it carries the scheduled
// time annotation, and it bears the name the controller gives that time.
func scheduledBy(cj *batchv1.CronJob, j *batchv1.Job) (time.Time, bool) {
	ref := metav1.GetControllerOf(j)
	if ref == nil || ref.UID != cj.UID || ref.Kind != "CronJob" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, j.Annotations[ScheduledTimestampAnnotation])
	if err != nil || j.Name != jobName(cj, t) {
		return time.Time{}, false
	}
	return t, true
}

func jobRef(j *batchv1.Job) corev1.ObjectReference {
	return corev1.ObjectReference{
		Kind: "Job", APIVersion: "batch/v1", Namespace: j.Namespace, Name: j.Name,
		UID: j.UID, ResourceVersion: j.ResourceVersion,
	}
}

// jobFor builds the Job of one scheduled time from the CronJob's template.
func jobFor(cj *batchv1.CronJob, scheduled time.Time, loc *time.Location, name string) *batchv1.Job {
	t := cj.Spec.JobTemplate
	annotations := map[string]string{}
	for k, v := range t.Annotations {
		annotations[k] = v
	}
	annotations[ScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	labels := map[string]string{}
	for k, v := range t.Labels {
		labels[k] = v
	}
	yes := true
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   cj.Namespace,
			Labels:      labels,
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID,
				Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: *t.Spec.DeepCopy(),
	}
}

func (c *Controller) deleteJob(ctx context.Context, cj *batchv1.CronJob, ns, name string) error {
	background := metav1.DeletePropagationBackground
	err := c.client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &background})
	if err != nil && !apierrors.IsNotFound(err) {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
		return err
	}
	c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", name)
	return nil
}

// cleanupFinishedJobs deletes the oldest finished Jobs beyond the history
// limits and reports whether the status changed.
func (c *Controller) cleanupFinishedJobs(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) bool {
	if cj.Spec.SuccessfulJobsHistoryLimit == nil && cj.Spec.FailedJobsHistoryLimit == nil {
		return false
	}
	var succeeded, failed []*batchv1.Job
	for _, j := range jobs {
		switch finished, how := isFinished(j); {
		case finished && how == batchv1.JobComplete:
			succeeded = append(succeeded, j)
		case finished:
			failed = append(failed, j)
		}
	}
	changed := false
	if l := cj.Spec.SuccessfulJobsHistoryLimit; l != nil {
		changed = c.removeOldest(ctx, cj, succeeded, int(*l)) || changed
	}
	if l := cj.Spec.FailedJobsHistoryLimit; l != nil {
		changed = c.removeOldest(ctx, cj, failed, int(*l)) || changed
	}
	return changed
}

// removeOldest deletes all but the newest limit of jobs, by start time
// (creation time when a Job never started).
func (c *Controller) removeOldest(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job, limit int) bool {
	if len(jobs) <= limit {
		return false
	}
	started := func(j *batchv1.Job) time.Time {
		if j.Status.StartTime != nil {
			return j.Status.StartTime.Time
		}
		return j.CreationTimestamp.Time
	}
	sort.SliceStable(jobs, func(i, k int) bool { return started(jobs[i]).Before(started(jobs[k])) })
	changed := false
	for _, j := range jobs[:len(jobs)-limit] {
		// kube writes the status after each deletion, whether or not the
		// Job was still listed active.
		if err := c.deleteJob(ctx, cj, j.Namespace, j.Name); err == nil {
			removeActive(cj, j.UID)
			changed = true
		}
	}
	return changed
}
