// Package ttlafterfinished owns the TTL-after-finished controller: a Job
// with spec.ttlSecondsAfterFinished is deleted, in the foreground, once
// that many seconds have passed since it finished (the time its Complete
// or Failed condition turned True), as kube's ttl-after-finished
// controller deletes it. It reads Jobs from a shared informer, waits for
// each expiry in its queue, and reads a Job again from the apiserver
// before deleting it, since its TTL may have changed since the cache saw it.
package ttlafterfinished

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/cronplane/cronplane/pkg/controller/worker"
)

// Observer records values, as a Prometheus histogram does.
type Observer interface{ Observe(float64) }

// Controller deletes finished Jobs whose TTL has expired.
type Controller struct {
	client kubernetes.Interface
	jobs   batchlisters.JobLister
	synced cache.InformerSynced
	// queue holds Job keys, each added again at its expiry.
	queue workqueue.RateLimitingInterface
	clock clock.PassiveClock
	// deletionDuration records, for each Job deleted, the seconds from
	// its expiry to its deletion; nil records nothing.
	deletionDuration Observer
}

// New builds the controller over a shared informer of Jobs. It records
// into deletionDuration (kube's
// ttl_after_finished_controller_job_deletion_duration_seconds), which
// may be nil, how late each deletion came.
func New(client kubernetes.Interface, jobs batchinformers.JobInformer, clk clock.PassiveClock, deletionDuration Observer) *Controller {
	c := &Controller{
		client:           client,
		jobs:             jobs.Lister(),
		synced:           jobs.Informer().HasSynced,
		queue:            workqueue.NewNamedRateLimitingQueue(workqueue.DefaultControllerRateLimiter(), "ttl_jobs_to_delete"),
		clock:            clk,
		deletionDuration: deletionDuration,
	}
	_, _ = jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj interface{}) { c.enqueue(obj) },
	})
	return c
}

// enqueue queues a Job that is due for deletion some time and is not
// being deleted already.
func (c *Controller) enqueue(obj interface{}) {
	job, ok := obj.(*batchv1.Job)
	if !ok || job.DeletionTimestamp != nil || !needsCleanup(job) {
		return
	}
	if key, err := cache.MetaNamespaceKeyFunc(job); err == nil {
		c.queue.Add(key)
	}
}

// Run processes Jobs with workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	klog.InfoS("Starting TTL after finished controller")
	defer klog.InfoS("Shutting down TTL after finished controller")
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return
	}
	worker.Loop[string]{Queue: c.queue, Sync: worker.Plain(c.sync), Describe: func(key string) string { return "TTL of job " + key }}.Start(ctx, workers)
	<-ctx.Done()
}

// sync deletes the Job of key if its TTL has expired, or queues it again
// for its expiry. The cache decides whether to look further; the Job as
// the apiserver has it now decides whether to delete.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	cached, err := c.jobs.Jobs(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if expiredAt, err := c.expiry(key, cached); expiredAt == nil || err != nil {
		return err
	}
	fresh, err := c.client.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	expiredAt, err := c.expiry(key, fresh)
	if expiredAt == nil || err != nil {
		return err
	}
	// Foreground, so that the Job is gone only once its Pods are; the
	// UID, so that a Job of the same name created meanwhile is not.
	policy := metav1.DeletePropagationForeground
	klog.V(4).InfoS("Deleting job, its TTL after finished has expired", "job", klog.KObj(fresh))
	if err := c.client.BatchV1().Jobs(namespace).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: &policy,
		Preconditions:     &metav1.Preconditions{UID: &fresh.UID},
	}); err != nil {
		return err
	}
	if c.deletionDuration != nil {
		c.deletionDuration.Observe(c.clock.Since(*expiredAt).Seconds())
	}
	return nil
}

// expiry returns when the TTL of job expired, or nil when it has not:
// then, if the Job is finished and has a TTL, its key is queued again for
// the moment it will.
func (c *Controller) expiry(key string, job *batchv1.Job) (*time.Time, error) {
	if job.DeletionTimestamp != nil || !needsCleanup(job) {
		return nil, nil
	}
	finished, err := finishTime(job)
	if err != nil {
		return nil, err
	}
	now := c.clock.Now()
	if finished.After(now) {
		klog.InfoS("Job finished in the future: the clocks of this controller and of the job's controller differ", "job", klog.KObj(job), "finished", finished, "now", now)
	}
	expireAt := finished.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second)
	if left := expireAt.Sub(now); left > 0 {
		c.queue.AddAfter(key, left)
		return nil, nil
	}
	return &expireAt, nil
}

// needsCleanup tells whether job has a TTL and has finished.
func needsCleanup(job *batchv1.Job) bool {
	if job.Spec.TTLSecondsAfterFinished == nil {
		return false
	}
	_, ok := finishedCondition(job)
	return ok
}

// finishedCondition returns the Complete or Failed condition of job that
// is True.
func finishedCondition(job *batchv1.Job) (batchv1.JobCondition, bool) {
	for _, cond := range job.Status.Conditions {
		if (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) && cond.Status == corev1.ConditionTrue {
			return cond, true
		}
	}
	return batchv1.JobCondition{}, false
}

// finishTime is when job finished: when its finished condition turned
// True. A condition without that time is an error, as it would never
// expire.
func finishTime(job *batchv1.Job) (time.Time, error) {
	cond, ok := finishedCondition(job)
	if !ok {
		return time.Time{}, fmt.Errorf("job %s/%s has not finished", job.Namespace, job.Name)
	}
	if cond.LastTransitionTime.IsZero() {
		return time.Time{}, fmt.Errorf("job %s/%s: its %s condition has no lastTransitionTime", job.Namespace, job.Name, cond.Type)
	}
	return cond.LastTransitionTime.UTC(), nil
}
