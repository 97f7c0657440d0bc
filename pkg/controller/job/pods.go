package job

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// completionIndexEnv is the variable through which a container of an
// Indexed Job reads its index (the kubelet resolves the downward API
// reference to the pod's label).
const completionIndexEnv = "JOB_COMPLETION_INDEX"

// maxGenerateNameLength is the longest generateName whose generated name
// (five random characters appended) is still a valid pod name.
const maxGenerateNameLength = validation.DNS1123LabelMaxLength - 5

func podTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// podActive: neither finished nor being deleted.
func podActive(p *corev1.Pod) bool { return !podTerminal(p) && p.DeletionTimestamp == nil }

// podTerminating: being deleted, not finished yet.
func podTerminating(p *corev1.Pod) bool { return !podTerminal(p) && p.DeletionTimestamp != nil }

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// onlyReplaceFailed tells whether a pod being deleted is replaced only
// once it has failed (podReplacementPolicy Failed, which a pod failure
// policy implies).
func onlyReplaceFailed(job *batchv1.Job) bool {
	if p := job.Spec.PodReplacementPolicy; p != nil && *p == batchv1.Failed {
		return true
	}
	return job.Spec.PodFailurePolicy != nil
}

// podFailed tells whether a pod counts as failed: it failed, or, unless
// only failed pods are replaced, it is being deleted before it
// succeeded (an orphan the garbage collector removes never reaches a
// phase).
func podFailed(job *batchv1.Job, p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodFailed {
		return true
	}
	if onlyReplaceFailed(job) {
		return false
	}
	return p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded
}

func hasTrackingFinalizer(p *corev1.Pod) bool {
	for _, f := range p.Finalizers {
		if f == batchv1.JobTrackingFinalizer {
			return true
		}
	}
	return false
}

// byDeletionPreference orders active pods so that the first are the
// cheapest to delete: unscheduled before scheduled, pending before
// running, not ready before ready, ready for less time before more, more
// container restarts before fewer, newer before older.
func byDeletionPreference(pods []*corev1.Pod) {
	phase := func(p *corev1.Pod) int {
		switch p.Status.Phase {
		case corev1.PodPending:
			return 0
		case corev1.PodUnknown:
			return 1
		case corev1.PodRunning:
			return 2
		}
		return 3
	}
	readySince := func(p *corev1.Pod) time.Time {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return c.LastTransitionTime.Time
			}
		}
		return time.Time{}
	}
	restarts := func(p *corev1.Pod) int32 {
		var n int32
		for _, cs := range p.Status.InitContainerStatuses {
			n = max(n, cs.RestartCount)
		}
		for _, cs := range p.Status.ContainerStatuses {
			n = max(n, cs.RestartCount)
		}
		return n
	}
	sort.SliceStable(pods, func(i, k int) bool {
		a, b := pods[i], pods[k]
		if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
			return a.Spec.NodeName == ""
		}
		if pa, pb := phase(a), phase(b); pa != pb {
			return pa < pb
		}
		if ra, rb := podReady(a), podReady(b); ra != rb {
			return !ra
		}
		if podReady(a) {
			if ta, tb := readySince(a), readySince(b); !ta.Equal(tb) {
				return ta.After(tb)
			}
		}
		if ra, rb := restarts(a), restarts(b); ra != rb {
			return ra > rb
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.After(b.CreationTimestamp.Time)
		}
		return false
	})
}

// podsToRemove returns at least n of the active pods to delete, those of
// an Indexed Job that repeat an index (all but the best placed), carry
// none or one out of range first, then the cheapest to delete.
func podsToRemove(job *batchv1.Job, active []*corev1.Pod, n int) []*corev1.Pod {
	var remove, keep []*corev1.Pod
	if isIndexed(job) {
		byIndex := map[int][]*corev1.Pod{}
		for _, p := range active {
			if ix := validIndex(job, p); ix != noIndex {
				byIndex[ix] = append(byIndex[ix], p)
			} else {
				remove = append(remove, p)
			}
		}
		ixs := make([]int, 0, len(byIndex))
		for ix := range byIndex {
			ixs = append(ixs, ix)
		}
		sort.Ints(ixs)
		for _, ix := range ixs {
			same := byIndex[ix]
			byDeletionPreference(same)
			remove = append(remove, same[:len(same)-1]...)
			keep = append(keep, same[len(same)-1])
		}
	} else {
		keep = append(keep, active...)
	}
	if more := n - len(remove); more > 0 {
		byDeletionPreference(keep)
		remove = append(remove, keep[:min(more, len(keep))]...)
	}
	return remove
}

// podFor builds the pod of a Job from its template: labels, annotations
// and finalizers as the template has them plus the tracking finalizer,
// the Job as controller, and for an index its annotation, label,
// hostname, generateName and JOB_COMPLETION_INDEX. A pod that replaces a
// failed one of its index under backoffLimitPerIndex carries the index's
// failure counts on.
func podFor(job *batchv1.Job, index int, replaces *corev1.Pod) *corev1.Pod {
	t := job.Spec.Template.DeepCopy()
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: generateName(job.Name, index),
			Namespace:    job.Namespace,
			Labels:       t.Labels,
			Annotations:  t.Annotations,
			Finalizers:   t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job", Name: job.Name, UID: job.UID,
				Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: t.Spec,
	}
	if !hasTrackingFinalizer(pod) {
		pod.Finalizers = append(pod.Finalizers, batchv1.JobTrackingFinalizer)
	}
	if index == noIndex {
		return pod
	}
	ix := strconv.Itoa(index)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[batchv1.JobCompletionIndexAnnotation] = ix
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[batchv1.JobCompletionIndexAnnotation] = ix
	pod.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, index)
	for i := range pod.Spec.InitContainers {
		addIndexEnv(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		addIndexEnv(&pod.Spec.Containers[i])
	}
	if hasBackoffLimitPerIndex(job) {
		counted, ignored := nextIndexFailureCounts(job, replaces)
		pod.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(counted))
		if ignored > 0 {
			pod.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(ignored))
		}
	}
	return pod
}

func addIndexEnv(c *corev1.Container) {
	for _, e := range c.Env {
		if e.Name == completionIndexEnv {
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: completionIndexEnv, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: fmt.Sprintf("metadata.labels['%s']", batchv1.JobCompletionIndexAnnotation)},
	}})
}

// generateName is "<job>-" (the Job's name alone where that is no valid
// prefix), or "<job>-<index>-" with the Job's name cut so that the
// generated name fits.
func generateName(job string, index int) string {
	if index == noIndex {
		prefix := job + "-"
		if len(validation.IsDNS1123Subdomain(prefix+"a")) != 0 {
			return job
		}
		return prefix
	}
	suffix := "-" + strconv.Itoa(index) + "-"
	if len(job)+len(suffix) > maxGenerateNameLength {
		job = job[:max(0, maxGenerateNameLength-len(suffix))]
	}
	return job + suffix
}

// createPods creates the pods of indexes (n pods of no index for a
// NonIndexed Job) in batches that start at one and double while they
// succeed, so that a Job whose pods are all refused (a quota, a bad
// template) costs one request per sync, not hundreds. It returns how
// many it created and the first error.
func (c *Controller) createPods(ctx context.Context, key string, job *batchv1.Job, n int, indexes []int, replaced map[int]*corev1.Pod) (int, error) {
	c.expectations.expectCreations(key, n)
	created := 0
	var firstErr error
	next := 0
	for size := 1; next < n; size *= 2 {
		size = min(size, n-next)
		var wg sync.WaitGroup
		var mu sync.Mutex
		failed := 0
		for i := next; i < next+size; i++ {
			index := noIndex
			if indexes != nil {
				index = indexes[i]
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := c.createPod(ctx, job, podFor(job, index, replaced[index]))
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					c.expectations.creationObserved(key)
					if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
						failed++
						if firstErr == nil {
							firstErr = err
						}
					}
					return
				}
				created++
			}()
		}
		wg.Wait()
		next += size
		if failed > 0 {
			break
		}
	}
	// The pods never tried are not coming either.
	for i := next; i < n; i++ {
		c.expectations.creationObserved(key)
	}
	return created, firstErr
}

func (c *Controller) createPod(ctx context.Context, job *batchv1.Job, pod *corev1.Pod) error {
	if len(pod.Labels) == 0 {
		return fmt.Errorf("unable to create pods, no labels")
	}
	created, err := c.client.CoreV1().Pods(job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			c.recorder.Eventf(job, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		}
		return err
	}
	c.recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", created.Name)
	return nil
}

// deletePods deletes pods concurrently and returns how many are gone. With
// untrack, a pod's tracking finalizer is removed first, so that the pod is
// not counted as failed: the Job deletes it, it did not fail.
func (c *Controller) deletePods(ctx context.Context, key string, job *batchv1.Job, pods []*corev1.Pod, untrack bool) (int32, error) {
	var mu sync.Mutex
	var deleted int32
	var firstErr error
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.removePod(ctx, job, p, untrack)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && key != "" {
				// The informer will not show this deletion.
				c.expectations.deletionObserved(key)
			}
			if err == nil || apierrors.IsNotFound(err) {
				deleted++
				return
			}
			if firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	return deleted, firstErr
}

func (c *Controller) removePod(ctx context.Context, job *batchv1.Job, p *corev1.Pod, untrack bool) error {
	if untrack && hasTrackingFinalizer(p) {
		if err := c.patchPod(ctx, p, removeFinalizerPatch); err != nil {
			return fmt.Errorf("removing completion finalizer: %w", err)
		}
	}
	err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return err
	case err != nil:
		c.recorder.Eventf(job, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
		return fmt.Errorf("unable to delete pods: %w", err)
	}
	c.recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", p.Name)
	return nil
}

// removeFinalizerPatch is the strategic merge patch that takes the
// tracking finalizer off a pod, whatever else its finalizers are.
var removeFinalizerPatch = mustJSON(map[string]any{
	"metadata": map[string]any{"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer}},
})

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func (c *Controller) patchPod(ctx context.Context, p *corev1.Pod, patch []byte) error {
	_, err := c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}

// removeFinalizers takes the tracking finalizer off pods concurrently and
// returns which succeeded; a pod already gone counts as done.
func (c *Controller) removeFinalizers(ctx context.Context, key string, pods []*corev1.Pod) ([]bool, error) {
	uids := make([]types.UID, len(pods))
	for i, p := range pods {
		uids[i] = p.UID
	}
	c.expectations.expectFinalizersRemoved(key, uids)
	done := make([]bool, len(pods))
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.patchPod(ctx, p, removeFinalizerPatch)
			if err == nil || apierrors.IsNotFound(err) {
				done[i] = true
				if err != nil {
					c.expectations.finalizerRemoved(key, p.UID)
				}
				return
			}
			c.expectations.finalizerRemoved(key, p.UID)
			mu.Lock()
			defer mu.Unlock()
			if firstErr == nil {
				firstErr = fmt.Errorf("removing tracking finalizer: %w", err)
			}
		}()
	}
	wg.Wait()
	return done, firstErr
}

// claimPods returns the pods job owns, reconciling ownership as kube's
// controller reference manager does: a pod it controls that its selector
// no longer matches is released (its tracking finalizer with it), and an
// orphan the selector matches is adopted (with the tracking finalizer),
// unless the Job or the pod is being deleted. Adoption first reads the
// Job from the server, so that a Job deleted meanwhile adopts nothing.
func (c *Controller) claimPods(ctx context.Context, job *batchv1.Job, owned, orphans []*corev1.Pod) ([]*corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("couldn't convert Job selector: %w", err)
	}
	var claimed []*corev1.Pod
	var errs []error
	for _, p := range owned {
		switch {
		case selector.Matches(labels.Set(p.Labels)):
			claimed = append(claimed, p)
		case job.DeletionTimestamp == nil:
			if err := c.releasePod(ctx, job, p); err != nil {
				errs = append(errs, err)
			}
		}
	}
	var canAdopt *error
	for _, p := range orphans {
		if job.DeletionTimestamp != nil || p.DeletionTimestamp != nil || !selector.Matches(labels.Set(p.Labels)) {
			continue
		}
		if canAdopt == nil {
			err := c.recheckNotDeleted(ctx, job)
			canAdopt = &err
		}
		if *canAdopt != nil {
			errs = append(errs, *canAdopt)
			break
		}
		adopted, err := c.adoptPod(ctx, job, p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if adopted {
			claimed = append(claimed, adoptedCopy(p, job))
		}
	}
	if len(errs) > 0 {
		return claimed, fmt.Errorf("claiming pods: %v", errs)
	}
	return claimed, nil
}

// adoptedCopy is an adopted pod as the sync counts it before the informer
// shows the adoption: controlled by job, with the tracking finalizer.
func adoptedCopy(p *corev1.Pod, job *batchv1.Job) *corev1.Pod {
	out := p.DeepCopy()
	if !hasTrackingFinalizer(out) {
		out.Finalizers = append(out.Finalizers, batchv1.JobTrackingFinalizer)
	}
	return out
}

func (c *Controller) recheckNotDeleted(ctx context.Context, job *batchv1.Job) error {
	fresh, err := c.client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if fresh.UID != job.UID {
		return fmt.Errorf("original Job %v/%v is gone: got uid %v, wanted %v", job.Namespace, job.Name, fresh.UID, job.UID)
	}
	if fresh.DeletionTimestamp != nil {
		return fmt.Errorf("%v/%v has just been deleted at %v", job.Namespace, job.Name, fresh.DeletionTimestamp)
	}
	return nil
}

// adoptPod makes job the controller of an orphan. The pod's UID in the
// patch makes it fail on a pod deleted and created again meanwhile.
func (c *Controller) adoptPod(ctx context.Context, job *batchv1.Job, p *corev1.Pod) (bool, error) {
	patch := mustJSON(map[string]any{"metadata": map[string]any{
		"ownerReferences": []map[string]any{{
			"apiVersion": batchv1.SchemeGroupVersion.String(), "kind": "Job", "name": job.Name, "uid": job.UID,
			"controller": true, "blockOwnerDeletion": true,
		}},
		"uid":        p.UID,
		"finalizers": []string{batchv1.JobTrackingFinalizer},
	}})
	if err := c.patchPod(ctx, p, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// releasePod drops job's reference (and the tracking finalizer) from a pod
// its selector no longer matches.
func (c *Controller) releasePod(ctx context.Context, job *batchv1.Job, p *corev1.Pod) error {
	patch := mustJSON(map[string]any{"metadata": map[string]any{
		"ownerReferences":                     []map[string]any{{"$patch": "delete", "uid": job.UID}},
		"uid":                                 p.UID,
		"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer},
	}})
	err := c.patchPod(ctx, p, patch)
	// Invalid: the pod lost its references, or is another pod by now.
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
		return err
	}
	return nil
}
