package fakenode

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// Reasons and messages the kubelet writes.
const (
	reasonDeadlineExceeded  = "DeadlineExceeded"
	messageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
	reasonStatusUnknown     = "ContainerStatusUnknown"
	messageStatusUnknown    = "The container could not be located when the pod was terminated"
)

// podWorker takes one pod through its lifecycle: it starts the containers,
// restarts them per the restart policy, stops them on deletion or past the
// active deadline, and writes the pod's status after each change.
type podWorker struct {
	n       *Node
	dir     string
	changed chan struct{}
	goneCh  chan struct{}
	gonce   sync.Once
	// writeMu serialises status writes; written is the pod the last one
	// returned and older the versions that chain of writes went through,
	// so that a write starts from written while the watch lags behind.
	writeMu sync.Mutex
	written *corev1.Pod
	older   map[string]bool

	mu        sync.Mutex
	pod       *corev1.Pod
	init      map[string]*corev1.ContainerStatus
	regular   map[string]*corev1.ContainerStatus
	procs     map[string]Process
	startTime metav1.Time
	// stopping: no container starts or restarts any more; the pod is
	// terminal once its containers are stopped (the kubelet's
	// podIsTerminal), with reason and message if the node decided it.
	stopping        bool
	stopCh          chan struct{}
	grace           time.Duration
	reason, message string
}

func newPodWorker(n *Node, pod *corev1.Pod) *podWorker {
	return &podWorker{
		n: n, pod: pod, dir: n.PodDir(pod),
		changed: make(chan struct{}, 1), goneCh: make(chan struct{}),
		init: map[string]*corev1.ContainerStatus{}, regular: map[string]*corev1.ContainerStatus{},
		procs: map[string]Process{}, stopCh: make(chan struct{}),
	}
}

func (w *podWorker) update(pod *corev1.Pod) {
	w.mu.Lock()
	w.pod = pod
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

func (w *podWorker) gone() { w.gonce.Do(func() { close(w.goneCh) }) }

func (w *podWorker) current() *corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod
}

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

func (w *podWorker) run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(w.current()))
	ctx = klog.NewContext(ctx, logger)
	if pod := w.current(); isTerminal(pod) {
		w.finished(ctx)
		return
	}
	w.mu.Lock()
	w.startTime = metav1.Now()
	if st := w.pod.Status.StartTime; st != nil {
		w.startTime = *st
	}
	for _, c := range w.pod.Spec.InitContainers {
		w.init[c.Name] = waiting(&c, "PodInitializing")
	}
	reason := "ContainerCreating"
	if len(w.pod.Spec.InitContainers) > 0 {
		reason = "PodInitializing"
	}
	for _, c := range w.pod.Spec.Containers {
		w.regular[c.Name] = waiting(&c, reason)
	}
	w.mu.Unlock()
	w.writeStatus(ctx)
	w.n.stats.started.Add(1)
	logger.V(2).Info("Pod started")

	done := make(chan struct{})
	go func() {
		defer close(done)
		w.runContainers(ctx)
	}()
	deadline := time.NewTimer(time.Hour)
	defer deadline.Stop()
	w.armDeadline(deadline)
	for {
		select {
		case <-done:
			phase := w.writeStatus(ctx)
			if phase == corev1.PodSucceeded {
				w.n.stats.succeeded.Add(1)
			} else {
				w.n.stats.failed.Add(1)
			}
			logger.V(2).Info("Pod finished", "phase", phase)
			if w.deleting() {
				w.confirmDeletion(ctx)
				return
			}
			w.finished(ctx)
			return
		case <-w.changed:
			if pod := w.current(); pod.DeletionTimestamp != nil {
				w.stop(time.Duration(ptr.Deref(pod.DeletionGracePeriodSeconds, 0))*time.Second, "", "")
			}
			w.armDeadline(deadline)
		case <-deadline.C:
			logger.V(2).Info("Pod past its active deadline")
			w.stop(w.terminationGrace(), reasonDeadlineExceeded, messageDeadlineExceeded)
		case <-w.goneCh:
			w.stop(0, "", "")
			<-done
			os.RemoveAll(w.dir)
			return
		case <-ctx.Done():
			w.stop(0, "", "")
			<-done
			return
		}
	}
}

func (w *podWorker) deleting() bool { return w.current().DeletionTimestamp != nil }

func (w *podWorker) terminationGrace() time.Duration {
	return time.Duration(ptr.Deref(w.current().Spec.TerminationGracePeriodSeconds, 30)) * time.Second
}

// armDeadline sets the timer to the pod's activeDeadlineSeconds past its
// start time; a pod without one has no deadline.
func (w *podWorker) armDeadline(t *time.Timer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopping || w.pod.Spec.ActiveDeadlineSeconds == nil {
		t.Stop()
		return
	}
	t.Reset(time.Until(w.startTime.Add(time.Duration(*w.pod.Spec.ActiveDeadlineSeconds) * time.Second)))
}

// finished waits, once the pod is terminal, for its deletion to confirm it.
func (w *podWorker) finished(ctx context.Context) {
	for {
		if w.deleting() {
			w.confirmDeletion(ctx)
			return
		}
		select {
		case <-w.changed:
		case <-w.goneCh:
			os.RemoveAll(w.dir)
			return
		case <-ctx.Done():
			return
		}
	}
}

// stop stops the containers within grace; a second stop may only shorten
// the grace period, as a second delete does.
func (w *podWorker) stop(grace time.Duration, reason, message string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopping && grace >= w.grace {
		return
	}
	if !w.stopping {
		w.stopping = true
		close(w.stopCh)
		w.reason, w.message = reason, message
	}
	w.grace = grace
	for _, p := range w.procs {
		go p.Stop(grace)
	}
}

// confirmDeletion deletes the pod with a 0-second grace period for the
// UID it ran, as the kubelet does once its containers are gone, and
// removes the pod's directory.
func (w *podWorker) confirmDeletion(ctx context.Context) {
	os.RemoveAll(w.dir)
	pod := w.current()
	err := w.n.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To(int64(0)), Preconditions: &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
		klog.FromContext(ctx).Error(err, "Unable to confirm pod deletion")
		return
	}
	klog.FromContext(ctx).V(2).Info("Pod deletion confirmed")
}

// runContainers runs the init containers one after the other, then the
// regular ones side by side, until they are all done or stopped.
func (w *podWorker) runContainers(ctx context.Context) {
	spec := w.current().Spec
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if code := w.runContainer(ctx, c, w.init); code != 0 {
			return
		}
	}
	w.mu.Lock()
	for _, c := range spec.Containers {
		if s := w.regular[c.Name]; s.State.Waiting != nil && s.State.Waiting.Reason == "PodInitializing" {
			s.State.Waiting.Reason = "ContainerCreating"
		}
	}
	w.mu.Unlock()
	var wg sync.WaitGroup
	for i := range spec.Containers {
		wg.Add(1)
		go func(c *corev1.Container) {
			defer wg.Done()
			w.runContainer(ctx, c, w.regular)
		}(&spec.Containers[i])
	}
	wg.Wait()
}

// runContainer runs c, restarting it in place as the restart policy says,
// and returns its last exit code (-1 if it never ran).
func (w *podWorker) runContainer(ctx context.Context, c *corev1.Container, statuses map[string]*corev1.ContainerStatus) int32 {
	policy := w.current().Spec.RestartPolicy
	_, isInit := w.init[c.Name]
	for {
		w.mu.Lock()
		if w.stopping {
			w.mu.Unlock()
			return -1
		}
		s := statuses[c.Name]
		run := &Container{Pod: w.pod, Spec: c, RestartCount: s.RestartCount, PodDir: w.dir,
			LogPath: filepath.Join(w.dir, c.Name, fmt.Sprintf("%d.log", s.RestartCount)), IP: w.n.cfg.Address}
		started := metav1.Now()
		// The run's log exists from its start, as the runtime creates it,
		// whether or not the container writes to it.
		if err := touch(run.LogPath); err != nil {
			klog.FromContext(ctx).Error(err, "Unable to create the container's log", "container", c.Name)
		}
		proc, err := w.n.cfg.Runner.Start(ctx, run)
		var code int32
		if err != nil {
			code = 128
			s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: code, Reason: "StartError", Message: err.Error(), StartedAt: metav1.NewTime(time.Unix(0, 0)), FinishedAt: started,
			}}
			s.ContainerID = containerID(w.pod, c, s.RestartCount)
			s.Ready, s.Started = false, ptr.To(false)
		} else {
			w.procs[c.Name] = proc
			s.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
			s.ImageID = imageID(c.Image)
			s.ContainerID = containerID(w.pod, c, s.RestartCount)
			s.Ready, s.Started = !isInit, ptr.To(true)
		}
		w.mu.Unlock()
		w.writeStatus(ctx)
		if err == nil {
			code = proc.Wait()
			w.mu.Lock()
			delete(w.procs, c.Name)
			reason := "Completed"
			if code != 0 {
				reason = "Error"
			}
			s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: code, Reason: reason, StartedAt: started, FinishedAt: metav1.Now(), ContainerID: s.ContainerID,
			}}
			s.Ready, s.Started = false, ptr.To(false)
			w.mu.Unlock()
		}
		restart := policy == corev1.RestartPolicyAlways && !isInit || policy != corev1.RestartPolicyNever && code != 0
		w.mu.Lock()
		restart = restart && !w.stopping
		var delay time.Duration
		if restart {
			delay = w.backoff(s.RestartCount)
			s.LastTerminationState = s.State
			if delay > 0 {
				s.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
					Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, c.Name, w.pod.Name, w.pod.Namespace, w.pod.UID)}}
			}
		}
		w.mu.Unlock()
		if !restart {
			w.writeStatus(ctx)
			return code
		}
		if delay > 0 {
			w.writeStatus(ctx)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-w.stopCh:
			}
			t.Stop()
		}
		w.mu.Lock()
		s.RestartCount++
		w.mu.Unlock()
	}
}

// backoff is the delay before the restart after the given number of
// restarts: none for the first, then RestartBackoff doubling.
func (w *podWorker) backoff(restarts int32) time.Duration {
	if restarts == 0 {
		return 0
	}
	d := w.n.cfg.RestartBackoff
	for i := int32(1); i < restarts && d < w.n.cfg.MaxRestartBackoff; i++ {
		d *= 2
	}
	return min(d, w.n.cfg.MaxRestartBackoff)
}

func waiting(c *corev1.Container, reason string) *corev1.ContainerStatus {
	return &corev1.ContainerStatus{
		Name: c.Name, Image: c.Image, Started: ptr.To(false),
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}},
	}
}

func imageID(image string) string {
	sum := sha256.Sum256([]byte(image))
	return image + "@sha256:" + hex.EncodeToString(sum[:])
}

func containerID(pod *corev1.Pod, c *corev1.Container, restarts int32) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%s/%d/%s", pod.UID, c.Name, restarts, rand.String(8))))
	return "fakenode://" + hex.EncodeToString(sum[:])
}

// writeStatus writes the pod's status as the node sees it now, reading the
// pod again when another writer came first, and returns the phase written.
// As the kubelet's status manager, it skips a write that would change
// nothing, and starts from the pod its previous write returned while the
// watch has not shown it, which would only conflict.
func (w *podWorker) writeStatus(ctx context.Context) corev1.PodPhase {
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	pods := w.n.client.CoreV1().Pods(w.current().Namespace)
	pod := w.current()
	ours := w.written != nil && w.written.UID == pod.UID && (w.older[pod.ResourceVersion] || pod.ResourceVersion == w.written.ResourceVersion)
	if ours {
		pod = w.written
	}
	pod = pod.DeepCopy()
	for attempt := 0; attempt < 10 && ctx.Err() == nil; attempt++ {
		w.mu.Lock()
		st := w.status(pod)
		w.mu.Unlock()
		if ours && sameStatus(st, pod.Status) {
			return st.Phase
		}
		pod.Status = st
		from := pod.ResourceVersion
		updated, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		switch {
		case err == nil:
			if w.written == nil || w.written.UID != updated.UID {
				w.older = map[string]bool{}
			}
			w.older[from] = true
			w.written = updated
			return pod.Status.Phase
		case apierrors.IsNotFound(err):
			return pod.Status.Phase
		case apierrors.IsConflict(err):
			fresh, gerr := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			if gerr != nil || fresh.UID != pod.UID {
				return pod.Status.Phase
			}
			pod, ours = fresh, false
		default:
			if ctx.Err() == nil {
				klog.FromContext(ctx).Error(err, "Unable to write pod status")
			}
			return pod.Status.Phase
		}
	}
	return pod.Status.Phase
}

// sameStatus compares statuses as they are sent: the server keeps their
// times to the second.
func sameStatus(a, b corev1.PodStatus) bool {
	ja, erra := json.Marshal(a)
	jb, errb := json.Marshal(b)
	return erra == nil && errb == nil && bytes.Equal(ja, jb)
}

// status is the pod's status as the kubelet reports it; w.mu is held.
func (w *podWorker) status(pod *corev1.Pod) corev1.PodStatus {
	st := pod.Status
	terminal := w.stopping && len(w.procs) == 0
	initStatuses := ordered(pod.Spec.InitContainers, w.init, terminal)
	statuses := ordered(pod.Spec.Containers, w.regular, terminal)
	phase := podPhase(pod, initStatuses, statuses, terminal)
	if isTerminal(pod) {
		// A terminal phase is final: the apiserver refuses to leave it.
		phase = pod.Status.Phase
	}
	st.Phase = phase
	st.InitContainerStatuses, st.ContainerStatuses = initStatuses, statuses
	st.StartTime = &w.startTime
	st.HostIP, st.PodIP = w.n.cfg.Address, w.n.cfg.Address
	st.HostIPs = []corev1.HostIP{{IP: w.n.cfg.Address}}
	st.PodIPs = []corev1.PodIP{{IP: w.n.cfg.Address}}
	if w.reason != "" {
		st.Reason, st.Message = w.reason, w.message
	}
	st.Conditions = conditions(pod, phase, initStatuses, statuses)
	return st
}

// ordered lists the statuses in the spec's order; once the pod is
// terminal a container that never ran is reported lost, as the kubelet
// reports it.
func ordered(spec []corev1.Container, m map[string]*corev1.ContainerStatus, terminal bool) []corev1.ContainerStatus {
	if len(spec) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, 0, len(spec))
	for _, c := range spec {
		s := m[c.Name].DeepCopy()
		if terminal && s.State.Waiting != nil {
			s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: ExitCodeKilled, Reason: reasonStatusUnknown, Message: messageStatusUnknown,
			}}
		}
		out = append(out, *s)
	}
	return out
}

// podPhase follows the kubelet's rules: failed init containers fail a
// pod that never restarts; waiting containers keep it Pending; running
// ones make it Running; stopped ones end it unless it restarts them.
func podPhase(pod *corev1.Pod, initStatuses, statuses []corev1.ContainerStatus, terminal bool) corev1.PodPhase {
	pendingInit, failedInit := 0, 0
	for _, s := range initStatuses {
		switch {
		case s.State.Terminated != nil:
			if s.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case s.State.Waiting != nil && s.LastTerminationState.Terminated != nil:
			if s.LastTerminationState.Terminated.ExitCode != 0 {
				failedInit++
			}
		default:
			pendingInit++
		}
	}
	running, waitingN, stopped, succeeded := 0, 0, 0, 0
	anyStarted := false
	for _, s := range statuses {
		switch {
		case s.State.Running != nil:
			running++
			anyStarted = true
		case s.State.Terminated != nil:
			stopped++
			anyStarted = true
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case s.LastTerminationState.Terminated != nil:
			stopped++
			anyStarted = true
		default:
			waitingN++
		}
	}
	policy := pod.Spec.RestartPolicy
	switch {
	case failedInit > 0 && policy == corev1.RestartPolicyNever:
		return corev1.PodFailed
	case pendingInit > 0 && !anyStarted, waitingN > 0:
		if terminal {
			return corev1.PodFailed
		}
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0:
		switch {
		case terminal && stopped == succeeded:
			return corev1.PodSucceeded
		case terminal:
			return corev1.PodFailed
		case policy == corev1.RestartPolicyAlways:
			return corev1.PodRunning
		case stopped == succeeded:
			return corev1.PodSucceeded
		case policy == corev1.RestartPolicyNever:
			return corev1.PodFailed
		}
		return corev1.PodRunning
	}
	return corev1.PodPending
}

// conditions are the kubelet's Initialized, Ready, ContainersReady and
// PodScheduled after the conditions others own, each keeping its
// lastTransitionTime while its status stays.
func conditions(pod *corev1.Pod, phase corev1.PodPhase, initStatuses, statuses []corev1.ContainerStatus) []corev1.PodCondition {
	var out []corev1.PodCondition
	old := map[corev1.PodConditionType]corev1.PodCondition{}
	for _, c := range pod.Status.Conditions {
		old[c.Type] = c
		switch c.Type {
		case corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled:
		default:
			out = append(out, c)
		}
	}
	initialized := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}
	var incomplete []string
	anyStarted := false
	for _, s := range statuses {
		anyStarted = anyStarted || s.State.Waiting == nil || s.LastTerminationState.Terminated != nil
	}
	for _, s := range initStatuses {
		if t := s.State.Terminated; t == nil || t.ExitCode != 0 {
			incomplete = append(incomplete, s.Name)
		}
	}
	switch {
	case phase == corev1.PodSucceeded:
		initialized.Reason = "PodCompleted"
	case len(incomplete) > 0 && !anyStarted:
		initialized.Status, initialized.Reason = corev1.ConditionFalse, "ContainersNotInitialized"
		initialized.Message = fmt.Sprintf("containers with incomplete status: %v", incomplete)
	}
	ready := corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}
	var unready []string
	for _, s := range statuses {
		if !s.Ready {
			unready = append(unready, s.Name)
		}
	}
	switch {
	case phase == corev1.PodSucceeded:
		ready.Status, ready.Reason = corev1.ConditionFalse, "PodCompleted"
	case phase == corev1.PodFailed:
		ready.Status, ready.Reason = corev1.ConditionFalse, "PodFailed"
	case len(unready) > 0:
		ready.Status, ready.Reason = corev1.ConditionFalse, "ContainersNotReady"
		ready.Message = fmt.Sprintf("containers with unready status: %v", unready)
	}
	podReady := ready
	podReady.Type = corev1.PodReady
	scheduled := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}
	now := metav1.Now()
	for _, c := range []corev1.PodCondition{initialized, podReady, ready, scheduled} {
		c.LastTransitionTime = now
		if o, ok := old[c.Type]; ok && o.Status == c.Status {
			c.LastTransitionTime = o.LastTransitionTime
		}
		out = append(out, c)
	}
	return out
}

func touch(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}
