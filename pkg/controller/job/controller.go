// Package job owns the Job controller: for every Job it creates the pods
// its parallelism and completions call for (one per completion index for
// an Indexed Job), replaces failed ones after kube's exponential backoff,
// deletes pods beyond what is wanted and all of them when the Job is
// suspended or fails, and tracks the pods that finish through kube's
// batch.kubernetes.io/job-tracking finalizer: a finished pod is first
// recorded in status.uncountedTerminatedPods, its finalizer removed, and
// only then counted, so that no pod is lost or counted twice across
// restarts. It keeps the Job's status (active, ready, terminating,
// succeeded, failed, completed and failed indexes, start and completion
// times, the Complete, Failed, FailureTarget and Suspended conditions),
// applies the pod failure policy, backoffLimit, backoffLimitPerIndex,
// maxFailedIndexes and activeDeadlineSeconds, and adopts and releases
// pods by the Job's selector. It sees the cluster only through a client
// and informers, never etcd.
package job

import (
	"context"
	"fmt"
	"reflect"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/cronplane/cronplane/pkg/controller/worker"
)

// Indexes this controller adds to the shared pod informer, so that a sync
// reads its Job's pods without scanning the namespace's.
const (
	// controllerIndex: pods by the UID of their controller.
	controllerIndex = "controller-uid"
	// orphanIndex: pods without a controller, by namespace; the only
	// other pods a Job may claim.
	orphanIndex = "orphans-by-namespace"
)

func byControllerUID(obj interface{}) ([]string, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
			return []string{string(ref.UID)}, nil
		}
	}
	return nil, nil
}

func orphansByNamespace(obj interface{}) ([]string, error) {
	if pod, ok := obj.(*corev1.Pod); ok && metav1.GetControllerOfNoCopy(pod) == nil {
		return []string{pod.Namespace}, nil
	}
	return nil, nil
}

const (
	// podSyncDelay gathers the pod and status events of a Job into one
	// sync. kube waits a second; a tenth keeps the gathering for pods that
	// change together while a pod's completion is counted sooner.
	podSyncDelay = 100 * time.Millisecond
	// maxPodChangesPerSync bounds the pods one sync creates or deletes,
	// and the finished pods it records, so that a large Job does not
	// starve the others; the status write it makes syncs it again.
	maxPodChangesPerSync = 500
)

// Controller runs the pods of Jobs.
type Controller struct {
	client   kubernetes.Interface
	jobs     batchlisters.JobLister
	pods     cache.Indexer
	synced   []cache.InformerSynced
	queue    workqueue.RateLimitingInterface
	orphans  workqueue.RateLimitingInterface
	recorder record.EventRecorder
	clock    clock.WithTicker

	expectations *expectations
	backoffs     *backoffs
	written      *writtenJobs
}

// New builds a controller over shared informers of Jobs and Pods. It adds
// two indexes to the pod informer, which must not have started. The Jobs
// informer must keep the Jobs' specs and labels; both may drop
// managedFields. Events go to recorder, whose source is the
// job-controller.
func New(client kubernetes.Interface, jobs batchinformers.JobInformer, pods coreinformers.PodInformer, recorder record.EventRecorder, clk clock.WithTicker) (*Controller, error) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	c := &Controller{
		client:   client,
		jobs:     jobs.Lister(),
		pods:     pods.Informer().GetIndexer(),
		synced:   []cache.InformerSynced{jobs.Informer().HasSynced, pods.Informer().HasSynced},
		recorder: recorder,
		clock:    clk,
		queue: workqueue.NewRateLimitingQueueWithConfig(workqueue.NewItemExponentialFailureRateLimiter(time.Second, time.Minute),
			workqueue.RateLimitingQueueConfig{Name: "job", Clock: clk}),
		orphans: workqueue.NewRateLimitingQueueWithConfig(workqueue.NewItemExponentialFailureRateLimiter(time.Second, time.Minute),
			workqueue.RateLimitingQueueConfig{Name: "job_orphan_pod", Clock: clk}),
		expectations: newExpectations(clk.Now),
		backoffs:     newBackoffs(),
		written:      newWrittenJobs(),
	}
	// Another controller may have added the same index already.
	missing := cache.Indexers{}
	have := pods.Informer().GetIndexer().GetIndexers()
	for name, f := range map[string]cache.IndexFunc{controllerIndex: byControllerUID, orphanIndex: orphansByNamespace} {
		if _, ok := have[name]; !ok {
			missing[name] = f
		}
	}
	if len(missing) > 0 {
		if err := pods.Informer().AddIndexers(missing); err != nil {
			return nil, fmt.Errorf("indexing pods: %w", err)
		}
	}
	if _, err := jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { c.enqueue(obj, 0) },
		UpdateFunc: c.updateJob,
		DeleteFunc: c.deleteJob,
	}); err != nil {
		return nil, err
	}
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: func(obj interface{}) { c.deletePod(obj, true) },
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) enqueue(obj interface{}, delay time.Duration) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("couldn't get key for object %+v: %w", obj, err))
		return
	}
	c.queue.AddAfter(key, delay)
}

func (c *Controller) updateJob(old, cur interface{}) {
	oldJob, curJob := old.(*batchv1.Job), cur.(*batchv1.Job)
	if curJob.Generation != oldJob.Generation {
		// A spec change is acted on at once; status writes are gathered.
		c.enqueue(curJob, 0)
	} else {
		c.enqueue(curJob, podSyncDelay)
	}
	if finished, _ := jobFinished(curJob); finished {
		c.untrackPods(curJob)
	}
	ads := curJob.Spec.ActiveDeadlineSeconds
	if curJob.Status.StartTime != nil && ads != nil {
		if was := oldJob.Spec.ActiveDeadlineSeconds; was == nil || *was != *ads {
			left := time.Duration(*ads)*time.Second - c.clock.Since(curJob.Status.StartTime.Time)
			c.enqueue(curJob, left)
		}
	}
}

func (c *Controller) deleteJob(obj interface{}) {
	c.enqueue(obj, 0)
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if job, ok := obj.(*batchv1.Job); ok {
		c.untrackPods(job)
	}
}

// untrackPods hands the pods of a finished or deleted Job that still carry
// the tracking finalizer to the orphan worker; a Job's sync removes them
// first, so this only catches what it missed.
func (c *Controller) untrackPods(job *batchv1.Job) {
	objs, _ := c.pods.ByIndex(controllerIndex, string(job.UID))
	for _, obj := range objs {
		if pod := obj.(*corev1.Pod); hasTrackingFinalizer(pod) {
			c.orphans.Add(pod.Namespace + "/" + pod.Name)
		}
	}
}

// jobOf returns the Job a controller reference names, if it is in the
// cache with that UID.
func (c *Controller) jobOf(namespace string, ref *metav1.OwnerReference) *batchv1.Job {
	if ref.Kind != "Job" || ref.APIVersion != batchv1.SchemeGroupVersion.String() {
		return nil
	}
	job, err := c.jobs.Jobs(namespace).Get(ref.Name)
	if err != nil || job.UID != ref.UID {
		return nil
	}
	return job
}

// enqueueSelecting queues the Jobs whose selector matches an orphan pod,
// for them to adopt it.
func (c *Controller) enqueueSelecting(pod *corev1.Pod) {
	jobs, err := c.jobs.Jobs(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, job := range jobs {
		sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		c.enqueue(job, podSyncDelay)
	}
}

func (c *Controller) addPod(obj interface{}) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		// Seen first already being deleted (after a restart, say): not a
		// creation this controller waits for.
		c.deletePod(pod, false)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if job := c.jobOf(pod.Namespace, ref); job != nil {
			c.expectations.creationObserved(jobKey(job))
			c.enqueue(job, podSyncDelay)
		}
		return
	}
	if hasTrackingFinalizer(pod) {
		c.orphans.Add(pod.Namespace + "/" + pod.Name)
	}
	c.enqueueSelecting(pod)
}

func (c *Controller) updatePod(old, cur interface{}) {
	oldPod, curPod := old.(*corev1.Pod), cur.(*corev1.Pod)
	if curPod.ResourceVersion == oldPod.ResourceVersion {
		return
	}
	if curPod.DeletionTimestamp != nil {
		// A graceful deletion starts: the Job may replace the pod now, not
		// once it is gone.
		c.deletePod(curPod, false)
		return
	}
	// The finalizer may have come back and gone again between the two
	// versions (a change of owner): what counts is the current one.
	untracked := !hasTrackingFinalizer(curPod)
	curRef, oldRef := metav1.GetControllerOfNoCopy(curPod), metav1.GetControllerOfNoCopy(oldPod)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if job := c.jobOf(oldPod.Namespace, oldRef); job != nil {
			if untracked {
				c.expectations.finalizerRemoved(jobKey(job), curPod.UID)
			}
			c.enqueue(job, podSyncDelay)
		}
	}
	if curRef != nil {
		if job := c.jobOf(curPod.Namespace, curRef); job != nil {
			if untracked {
				c.expectations.finalizerRemoved(jobKey(job), curPod.UID)
			}
			c.enqueue(job, podSyncDelay)
		}
		return
	}
	if !untracked {
		c.orphans.Add(curPod.Namespace + "/" + curPod.Name)
	}
	if refChanged || !reflect.DeepEqual(curPod.Labels, oldPod.Labels) {
		c.enqueueSelecting(curPod)
	}
}

// deletePod handles a pod gone (final) or being deleted.
func (c *Controller) deletePod(obj interface{}, final bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		tomb, isTomb := obj.(cache.DeletedFinalStateUnknown)
		if !isTomb {
			return
		}
		if pod, ok = tomb.Obj.(*corev1.Pod); !ok {
			return
		}
	}
	tracked := hasTrackingFinalizer(pod)
	ref := metav1.GetControllerOfNoCopy(pod)
	var job *batchv1.Job
	if ref != nil {
		job = c.jobOf(pod.Namespace, ref)
	}
	if job == nil {
		if tracked {
			c.orphans.Add(pod.Namespace + "/" + pod.Name)
		}
		return
	}
	if finished, _ := jobFinished(job); finished {
		// No sync of a finished Job removes finalizers.
		if tracked {
			c.orphans.Add(pod.Namespace + "/" + pod.Name)
		}
		return
	}
	key := jobKey(job)
	c.expectations.deletionObserved(key)
	if final || !tracked {
		c.expectations.finalizerRemoved(key, pod.UID)
	}
	c.enqueue(job, podSyncDelay)
}

func jobKey(job *batchv1.Job) string { return job.Namespace + "/" + job.Name }

// Run syncs Jobs with workers goroutines, and removes the tracking
// finalizer of orphaned pods with one more, until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	defer c.orphans.ShutDown()
	klog.InfoS("Starting job controller")
	defer klog.InfoS("Shutting down job controller")
	if !cache.WaitForNamedCacheSync("job", ctx.Done(), c.synced...) {
		return
	}
	describe := func(key string) string { return "syncing " + key }
	worker.Loop[string]{Queue: c.queue, Sync: worker.Plain(c.sync), Describe: describe}.Start(ctx, workers)
	worker.Loop[string]{Queue: c.orphans, Sync: worker.Plain(c.syncOrphan), Describe: describe}.Start(ctx, 1)
	<-ctx.Done()
}

// syncOrphan removes the tracking finalizer of a pod no unfinished Job
// controls any longer.
func (c *Controller) syncOrphan(ctx context.Context, key string) error {
	obj, exists, err := c.pods.GetByKey(key)
	if err != nil || !exists {
		return err
	}
	pod := obj.(*corev1.Pod)
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if ref.Kind != "Job" || ref.APIVersion != batchv1.SchemeGroupVersion.String() {
			return nil
		}
		if job := c.jobOf(pod.Namespace, ref); job != nil {
			if finished, _ := jobFinished(job); !finished {
				return nil
			}
		}
		// The Job's last sync removed it already; the cache lags.
		if c.expectations.removingFinalizers(pod.Namespace + "/" + ref.Name)[pod.UID] {
			return nil
		}
	}
	if !hasTrackingFinalizer(pod) {
		return nil
	}
	if err := c.patchPod(ctx, pod, removeFinalizerPatch); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
