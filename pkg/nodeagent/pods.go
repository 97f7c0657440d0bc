package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/cronplane/cronplane/pkg/nodeagent/engine"
)

// minimumGracePeriod is the least time the kubelet gives a container
// between SIGTERM and SIGKILL.
const minimumGracePeriod = 2 * time.Second

func labelsEverything() labels.Selector { return labels.Everything() }

// syncPod brings a pod's containers to what its spec and restart policy
// ask, and writes its status.
func (a *Agent) syncPod(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := a.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	sel := a.ownLabels()
	sel[labelPodUID] = string(pod.UID)
	all, err := a.engine.List(ctx, sel)
	if err != nil {
		return err
	}
	now := time.Now()
	deadline := pastDeadline(pod, now)
	if pod.DeletionTimestamp != nil || deadline || isTerminal(pod.Status.Phase) {
		return a.syncTerminating(ctx, pod, all, deadline)
	}
	if err := a.ensureVolumes(ctx, pod); err != nil {
		a.event(pod, "", corev1.EventTypeWarning, "FailedMount", err.Error())
		return err
	}
	byName := instances(all)
	acted := a.runNext(ctx, pod, byName)
	if acted {
		if all, err = a.engine.List(ctx, sel); err != nil {
			return err
		}
		byName = instances(all)
	}
	return a.writeStatus(ctx, pod, a.observe(pod, byName, true), false, podIP(pod, all, a.opts.NodeIP), now)
}

func isTerminal(p corev1.PodPhase) bool { return p == corev1.PodSucceeded || p == corev1.PodFailed }

func pastDeadline(pod *corev1.Pod, now time.Time) bool {
	d, start := pod.Spec.ActiveDeadlineSeconds, pod.Status.StartTime
	return d != nil && start != nil && now.Sub(start.Time) >= time.Duration(*d)*time.Second
}

// runNext starts what comes next: the first init container not done,
// else every container that has not run or must restart. It reports
// whether it started or restarted any.
func (a *Agent) runNext(ctx context.Context, pod *corev1.Pod, byName map[string][]engine.Container) bool {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		list := byName[c.Name]
		if len(list) == 0 {
			if ranBefore(pod.Status.InitContainerStatuses, c.Name) {
				return false
			}
			return a.startContainer(ctx, pod, c, 0, true, list)
		}
		latest := list[0]
		switch latest.State {
		case engine.Running:
			return false
		case engine.Created:
			return a.start(ctx, pod, c, latest.ID)
		}
		if latest.ExitCode == 0 {
			continue
		}
		if pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
			return false
		}
		return a.restart(ctx, pod, c, true, list)
	}
	acted := false
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		list := byName[c.Name]
		if len(list) == 0 {
			if ranBefore(pod.Status.ContainerStatuses, c.Name) && pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
				continue
			}
			acted = a.startContainer(ctx, pod, c, 0, false, list) || acted
			continue
		}
		latest := list[0]
		switch {
		case latest.State == engine.Running:
		case latest.State == engine.Created:
			acted = a.start(ctx, pod, c, latest.ID) || acted
		case shouldRestart(pod.Spec.RestartPolicy, latest.ExitCode):
			acted = a.restart(ctx, pod, c, false, list) || acted
		}
	}
	return acted
}

// ranBefore says the status written says a container was started: the
// engine lost it (removed by hand), and it must not run again.
func ranBefore(statuses []corev1.ContainerStatus, name string) bool {
	for _, s := range statuses {
		if s.Name == name && s.ContainerID != "" {
			return true
		}
	}
	return false
}

func shouldRestart(policy corev1.RestartPolicy, exitCode int) bool {
	switch policy {
	case corev1.RestartPolicyAlways:
		return true
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return false
}

func backoffKey(pod *corev1.Pod, c *corev1.Container) string { return string(pod.UID) + "/" + c.Name }

// restart starts the next attempt of an exited container, unless it is
// in its crash-loop backoff.
func (a *Agent) restart(ctx context.Context, pod *corev1.Pod, c *corev1.Container, init bool, list []engine.Container) bool {
	latest := list[0]
	key := backoffKey(pod, c)
	if a.backoff.IsInBackOffSince(key, latest.FinishedAt) {
		msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", a.backoff.Get(key), c.Name, pod.Name, pod.Namespace, pod.UID)
		if w := a.getWaiting(pod.UID, c.Name); w == nil || w.Reason != "CrashLoopBackOff" {
			a.event(pod, fieldPath(pod, c.Name), corev1.EventTypeWarning, "BackOff",
				fmt.Sprintf("Back-off restarting failed container %s in pod %s_%s(%s)", c.Name, pod.Name, pod.Namespace, pod.UID))
		}
		a.setWaiting(pod.UID, c.Name, &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: msg})
		if k, err := cache.MetaNamespaceKeyFunc(pod); err == nil {
			a.queue.AddAfter(k, time.Until(latest.FinishedAt.Add(a.backoff.Get(key))))
		}
		return false
	}
	a.backoff.Next(key, latest.FinishedAt)
	return a.startContainer(ctx, pod, c, attempt(latest)+1, init, list)
}

// startContainer creates and starts attempt n of container c, after
// removing instances older than the last one (kept for its logs).
func (a *Agent) startContainer(ctx context.Context, pod *corev1.Pod, c *corev1.Container, n int, init bool, previous []engine.Container) bool {
	path := fieldPath(pod, c.Name)
	if !a.ensureImage(ctx, pod, c) {
		return false
	}
	var sandbox engine.Container
	if !pod.Spec.HostNetwork {
		var err error
		if sandbox, err = a.ensureSandbox(ctx, pod); err != nil {
			a.event(pod, "", corev1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: "+err.Error())
			return false
		}
		if pod.Status.PodIP == "" && sandbox.IP != "" {
			// The downward API's status.podIP is the sandbox's address
			// from the first container on.
			pod = pod.DeepCopy()
			pod.Status.PodIP, pod.Status.PodIPs = sandbox.IP, []corev1.PodIP{{IP: sandbox.IP}}
		}
	}
	env, err := a.containerEnv(ctx, pod, c)
	if err != nil {
		a.event(pod, path, corev1.EventTypeWarning, "Failed", "Error: "+err.Error())
		a.setWaiting(pod.UID, c.Name, &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: err.Error()})
		return false
	}
	mounts, err := a.mounts(pod, c, n)
	if err != nil {
		a.event(pod, path, corev1.EventTypeWarning, "Failed", "Error: "+err.Error())
		a.setWaiting(pod.UID, c.Name, &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: err.Error()})
		return false
	}
	for i, old := range previous {
		if i > 0 {
			_ = a.engine.Remove(ctx, old.ID)
		}
	}
	spec := engine.Spec{
		Name: containerName(pod, c.Name, n), Image: c.Image,
		Entrypoint: env.ExpandAll(c.Command), Cmd: env.ExpandAll(c.Args),
		WorkingDir: c.WorkingDir, Env: env.List(), Labels: a.containerLabels(pod, c.Name, n, init),
		Mounts: mounts, Network: "host", User: user(pod, c),
		Privileged: c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged,
	}
	if !pod.Spec.HostNetwork {
		// The engine takes the hostname from the sandbox.
		spec.Network = "container:" + sandbox.ID
	}
	if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		spec.NanoCPUs = q.MilliValue() * 1e6
	}
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		spec.Memory = q.Value()
	}
	if q, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
		spec.CPUShares = max(q.MilliValue()*1024/1000, 2)
	}
	id, err := a.engine.Create(ctx, spec)
	if err != nil {
		a.event(pod, path, corev1.EventTypeWarning, "Failed", "Error: "+err.Error())
		a.setWaiting(pod.UID, c.Name, &corev1.ContainerStateWaiting{Reason: "CreateContainerError", Message: err.Error()})
		return false
	}
	a.event(pod, path, corev1.EventTypeNormal, "Created", "Created container "+c.Name)
	return a.start(ctx, pod, c, id)
}

func (a *Agent) start(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id string) bool {
	if err := a.engine.Start(ctx, id); err != nil {
		// The engine keeps the container exited with the error: its
		// restart policy decides what follows.
		a.event(pod, fieldPath(pod, c.Name), corev1.EventTypeWarning, "Failed", "Error: "+err.Error())
		a.setWaiting(pod.UID, c.Name, nil)
		return true
	}
	a.setWaiting(pod.UID, c.Name, nil)
	a.event(pod, fieldPath(pod, c.Name), corev1.EventTypeNormal, "Started", "Started container "+c.Name)
	return true
}

// ensureImage makes c's image present as its pull policy asks, and
// reports whether it is.
func (a *Agent) ensureImage(ctx context.Context, pod *corev1.Pod, c *corev1.Container) bool {
	path := fieldPath(pod, c.Name)
	_, err := a.engine.Image(ctx, c.Image)
	present := err == nil
	if err != nil && !errors.Is(err, engine.ErrNotFound) {
		a.setWaiting(pod.UID, c.Name, &corev1.ContainerStateWaiting{Reason: "ErrImageInspect", Message: err.Error()})
		return false
	}
	pull := c.ImagePullPolicy == corev1.PullAlways && !(present && a.opts.PreferLocalImages) ||
		c.ImagePullPolicy != corev1.PullNever && !present
	if !pull {
		if !present {
			msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image)
			a.event(pod, path, corev1.EventTypeWarning, "ErrImageNeverPull", msg)
			a.setWaiting(pod.UID, c.Name, &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: msg})
			return false
		}
		a.event(pod, path, corev1.EventTypeNormal, "Pulled", fmt.Sprintf("Container image %q already present on machine", c.Image))
		return true
	}
	key := string(pod.UID) + "/" + c.Image
	now := time.Now()
	if a.pullBackoff.IsInBackOffSinceUpdate(key, now) {
		msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
		a.event(pod, path, corev1.EventTypeNormal, "BackOff", msg)
		a.event(pod, path, corev1.EventTypeWarning, "Failed", "Error: ImagePullBackOff")
		a.setWaiting(pod.UID, c.Name, &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: msg})
		return false
	}
	a.event(pod, path, corev1.EventTypeNormal, "Pulling", fmt.Sprintf("Pulling image %q", c.Image))
	if err := a.engine.Pull(ctx, c.Image); err != nil {
		a.pullBackoff.Next(key, now)
		a.event(pod, path, corev1.EventTypeWarning, "Failed", fmt.Sprintf("Failed to pull image %q: %v", c.Image, err))
		a.event(pod, path, corev1.EventTypeWarning, "Failed", "Error: ErrImagePull")
		a.setWaiting(pod.UID, c.Name, &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: err.Error()})
		return false
	}
	took := time.Since(now).Round(time.Millisecond)
	a.event(pod, path, corev1.EventTypeNormal, "Pulled", fmt.Sprintf("Successfully pulled image %q in %s (%s including waiting)", c.Image, took, took))
	return true
}

// syncTerminating stops the containers of a pod that is deleted, past its
// deadline or finished, then writes its final status and, when it is
// deleted, deletes it for good.
func (a *Agent) syncTerminating(ctx context.Context, pod *corev1.Pod, all []engine.Container, deadline bool) error {
	var running []engine.Container
	for _, c := range all {
		switch c.State {
		case engine.Running:
			running = append(running, c)
		case engine.Created:
			_ = a.engine.Remove(ctx, c.ID)
		}
	}
	if deadline && !isTerminal(pod.Status.Phase) && len(running) > 0 {
		a.event(pod, "", corev1.EventTypeWarning, "DeadlineExceeded", "Pod was active on the node longer than the specified deadline")
	}
	if len(running) > 0 {
		a.stopAsync(pod, running)
		return nil
	}
	var stopped []engine.Container
	for _, c := range all {
		if c.State == engine.Exited {
			stopped = append(stopped, c)
		}
	}
	obs := a.observe(pod, instances(stopped), false)
	if err := a.writeStatus(ctx, pod, obs, true, "", time.Now(), withDeadline(deadline)); err != nil {
		return err
	}
	if pod.DeletionTimestamp == nil {
		return nil
	}
	err := a.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To(int64(0)), Preconditions: metav1.NewUIDPreconditions(string(pod.UID)),
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

type statusOption func(*corev1.PodStatus)

func withDeadline(exceeded bool) statusOption {
	return func(s *corev1.PodStatus) {
		if exceeded && !isTerminal(s.Phase) || exceeded && s.Reason == "" {
			s.Phase, s.Reason, s.Message = corev1.PodFailed, "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
		}
	}
}

// gracePeriod is how long a pod's containers get between SIGTERM and
// SIGKILL.
func gracePeriod(pod *corev1.Pod) time.Duration {
	g := time.Duration(30) * time.Second
	if pod.DeletionGracePeriodSeconds != nil {
		g = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	} else if pod.Spec.TerminationGracePeriodSeconds != nil {
		g = time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return max(g, minimumGracePeriod)
}

// stopAsync stops running containers of a pod in the background, the
// pod synced again once they exited.
func (a *Agent) stopAsync(pod *corev1.Pod, running []engine.Container) {
	a.mu.Lock()
	if a.terminating[pod.UID] {
		a.mu.Unlock()
		return
	}
	a.terminating[pod.UID] = true
	a.mu.Unlock()
	grace := gracePeriod(pod)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), grace+time.Minute)
		defer cancel()
		stop := func(id string, grace time.Duration) {
			if err := a.engine.Stop(ctx, id, grace); err != nil && !errors.Is(err, engine.ErrNotFound) {
				klog.FromContext(ctx).Info("stopping container", "id", id, "err", err)
			}
		}
		var wg sync.WaitGroup
		var sandboxes []string
		for _, c := range running {
			if isSandbox(c) {
				sandboxes = append(sandboxes, c.ID)
				continue
			}
			name := c.Labels[labelContainerName]
			a.event(pod, fieldPath(pod, name), corev1.EventTypeNormal, "Killing", "Stopping container "+name)
			wg.Add(1)
			go func(id string) {
				defer wg.Done()
				stop(id, grace)
			}(c.ID)
		}
		wg.Wait()
		// The sandbox last: the containers keep their network until
		// they exit.
		for _, id := range sandboxes {
			stop(id, minimumGracePeriod)
		}
		a.mu.Lock()
		delete(a.terminating, pod.UID)
		a.mu.Unlock()
		if k, err := cache.MetaNamespaceKeyFunc(pod); err == nil {
			a.queue.Add(k)
		}
	}()
}

// observe gathers what the agent knows of each container of pod; waiting
// reasons only while the pod runs.
func (a *Agent) observe(pod *corev1.Pod, byName map[string][]engine.Container, withWaiting bool) map[string]observed {
	obs := map[string]observed{}
	initsDone := true
	for _, c := range pod.Spec.InitContainers {
		o := observed{instances: byName[c.Name]}
		if withWaiting {
			o.waiting = a.getWaiting(pod.UID, c.Name)
		}
		if len(o.instances) > 0 {
			o.message = a.terminationMessage(pod, c.Name, attempt(o.instances[0]))
		}
		if l := o.instances; len(l) == 0 || l[0].State != engine.Exited || l[0].ExitCode != 0 {
			initsDone = false
		}
		obs[c.Name] = o
	}
	for _, c := range pod.Spec.Containers {
		o := observed{instances: byName[c.Name]}
		if withWaiting {
			o.waiting = a.getWaiting(pod.UID, c.Name)
			if o.waiting == nil && len(o.instances) == 0 && !initsDone {
				o.waiting = &corev1.ContainerStateWaiting{Reason: "PodInitializing"}
			}
		}
		if len(o.instances) > 0 {
			o.message = a.terminationMessage(pod, c.Name, attempt(o.instances[0]))
		}
		obs[c.Name] = o
	}
	return obs
}

func (a *Agent) writeStatus(ctx context.Context, pod *corev1.Pod, obs map[string]observed, terminal bool, ip string, now time.Time, opts ...statusOption) error {
	s := a.podStatus(pod, obs, terminal, ip, now)
	for _, o := range opts {
		o(&s)
	}
	if apiequality.Semantic.DeepEqual(pod.Status, s) {
		return nil
	}
	p := pod.DeepCopy()
	p.Status = s
	_, err := a.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// podIP is the address of the pod's running sandbox on the engine's
// network; empty keeps the one last written.
func podIP(pod *corev1.Pod, all []engine.Container, nodeIP string) string {
	if pod.Spec.HostNetwork {
		return nodeIP
	}
	for _, c := range all {
		if isSandbox(c) && c.State == engine.Running && c.IP != "" {
			return c.IP
		}
	}
	return ""
}

func (a *Agent) getWaiting(uid types.UID, name string) *corev1.ContainerStateWaiting {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.waiting[uid][name]
}

func (a *Agent) setWaiting(uid types.UID, name string, w *corev1.ContainerStateWaiting) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if w == nil {
		delete(a.waiting[uid], name)
		return
	}
	if a.waiting[uid] == nil {
		a.waiting[uid] = map[string]*corev1.ContainerStateWaiting{}
	}
	a.waiting[uid][name] = w
}

// removeOrphans removes the containers (of this node, as listed) and
// the directories (as read) of pods no longer bound here: both listed
// before the pods known, see resync.
func (a *Agent) removeOrphans(ctx context.Context, known map[string]bool, containers []engine.Container, entries []os.DirEntry) {
	for _, c := range containers {
		if uid := c.Labels[labelPodUID]; !known[uid] {
			klog.FromContext(ctx).V(2).Info("removing container of a pod gone", "container", c.Name)
			_ = a.engine.Remove(ctx, c.ID)
		}
	}
	for _, e := range entries {
		if !known[e.Name()] {
			_ = os.RemoveAll(filepath.Join(a.opts.RootDir, "pods", e.Name()))
		}
	}
	a.mu.Lock()
	for uid := range a.waiting {
		if !known[string(uid)] {
			delete(a.waiting, uid)
		}
	}
	for uid := range a.volumesReady {
		if !known[string(uid)] {
			delete(a.volumesReady, uid)
		}
	}
	a.mu.Unlock()
}

// event records an event about pod, or one of its containers when
// fieldPath names it.
func (a *Agent) event(pod *corev1.Pod, fieldPath, eventType, reason, message string) {
	ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
		ResourceVersion: pod.ResourceVersion, FieldPath: fieldPath}
	a.recorder.Event(ref, eventType, reason, message)
}

func fieldPath(pod *corev1.Pod, name string) string {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return "spec.initContainers{" + name + "}"
		}
	}
	return "spec.containers{" + name + "}"
}

func hostname(pod *corev1.Pod) string {
	h := pod.Name
	if pod.Spec.Hostname != "" {
		h = pod.Spec.Hostname
	}
	if len(h) > 63 {
		h = h[:63]
	}
	return h
}

// user is the uid[:gid] the security contexts ask for, the container's
// over the pod's.
func user(pod *corev1.Pod, c *corev1.Container) string {
	var uid, gid *int64
	if sc := pod.Spec.SecurityContext; sc != nil {
		uid, gid = sc.RunAsUser, sc.RunAsGroup
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = sc.RunAsGroup
		}
	}
	switch {
	case uid == nil:
		return ""
	case gid == nil:
		return fmt.Sprint(*uid)
	}
	return fmt.Sprintf("%d:%d", *uid, *gid)
}
