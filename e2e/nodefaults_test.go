//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The node timings the suite gives the cluster (suiteEnv), as durations.
var (
	nodeGrace          = mustDuration(suiteEnv["NODE_MONITOR_GRACE_PERIOD"])
	nodeMonitorPeriod  = mustDuration(suiteEnv["NODE_MONITOR_PERIOD"])
	unreachableSeconds = mustAtoi(suiteEnv["UNREACHABLE_TOLERATION_SECONDS"])
)

func mustDuration(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

func mustAtoi(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

func nodeCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// nodesReady waits until both nodes are Ready without the taints of a
// node that is not.
func nodesReady(t *testing.T, c kubernetes.Interface, limit time.Duration) time.Duration {
	t.Helper()
	return eventually(t, limit, "node-0 and node-1 Ready and untainted", func() bool {
		nodes, err := c.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil || len(nodes.Items) != 2 {
			return false
		}
		for i := range nodes.Items {
			n := &nodes.Items[i]
			if cond := nodeCondition(n); cond == nil || cond.Status != corev1.ConditionTrue {
				return false
			}
			for _, taint := range n.Spec.Taints {
				if taint.Key == corev1.TaintNodeUnreachable || taint.Key == corev1.TaintNodeNotReady {
					return false
				}
			}
		}
		return true
	})
}

// engineContainer is one of a pod's containers as the engine has it.
type engineContainer struct {
	id, name, attempt string
	startedAt         string
}

// podContainers are the engine's containers of a pod, its sandbox left
// out.
func podContainers(t *testing.T, uid types.UID) []engineContainer {
	t.Helper()
	out := docker(t, "ps", "-aq", "--no-trunc", "--filter", "label=io.kubernetes.pod.uid="+string(uid))
	var cs []engineContainer
	for _, id := range strings.Fields(out) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		info, err := execOut(ctx, "docker", "inspect", "-f",
			`{{index .Config.Labels "io.kubernetes.container.name"}} {{index .Config.Labels "io.kubernetes.container.restartCount"}} {{.RestartCount}} {{.State.StartedAt}}`, id)
		cancel()
		switch {
		case err != nil && strings.Contains(info, "No such object"):
			// Removed by its agent since the listing.
			continue
		case err != nil:
			t.Fatalf("docker inspect %s: %v\n%s", id, err, info)
		}
		f := strings.Fields(info)
		if len(f) != 4 || f[0] == "POD" {
			continue
		}
		if f[2] != "0" {
			t.Errorf("container %s of pod %s restarted by the engine %s times", f[0], uid, f[2])
		}
		cs = append(cs, engineContainer{id: id, name: f[0], attempt: f[1], startedAt: f[3]})
	}
	return cs
}

func runningContainer(p *corev1.Pod) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if cs := &p.Status.ContainerStatuses[i]; cs.State.Running != nil {
			return cs
		}
	}
	return nil
}

// kill -9 of the agent whose node runs a restartPolicy Never container:
// the container runs on, the restarted agent adopts it, reports it
// Succeeded with the same container id and restartCount 0, and never
// starts it again (the engine has one container for the pod, started
// once, and its log says so once); the Job is Complete.
func TestNodeAgent_Kill9DuringAJobNeverRunsItsContainerTwiceAndTheJobCompletes(t *testing.T) {
	ctx := context.Background()
	c := client(t, "apiserver-lb")
	const ns = "e2e-agentkill"
	namespace(t, c, ns)
	// Cleanups run last first: the logs, the agent started, then the
	// namespace deleted (its pods need their agent).
	namespaceGoneOnExit(t, c, ns)
	restartOnExit(t, "node-0", "node-1")
	logsOnFailure(t)
	nodesReady(t, c, 60*time.Second)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "once"},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To(int32(0)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "once", Image: "busybox",
					Command: []string{"sh", "-c", "echo started; sleep 12; echo done"}}},
			}},
		},
	}
	if _, err := c.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	var before *corev1.ContainerStatus
	eventually(t, 60*time.Second, "the Job's container running", func() bool {
		pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=once"})
		if err != nil || len(pods.Items) != 1 {
			return false
		}
		pod = pods.Items[0]
		before = runningContainer(&pod)
		return before != nil
	})
	node := pod.Spec.NodeName
	engineBefore := podContainers(t, pod.UID)
	if len(engineBefore) != 1 {
		t.Fatalf("the engine has %d containers of pod %s, want 1: %+v", len(engineBefore), pod.Name, engineBefore)
	}

	docker(t, "kill", "-s", "KILL", container(t, node))
	killed := time.Now()
	t.Logf("kill -9 of %s's agent %v after its container %s started", node, killed.Sub(before.State.Running.StartedAt.Time).Round(time.Millisecond), before.ContainerID)
	time.Sleep(2 * time.Second)
	serviceT(t, "start", node)
	started := time.Now()
	var done *batchv1.Job
	took := eventually(t, 90*time.Second, "the Job Complete", func() bool {
		j, err := c.BatchV1().Jobs(ns).Get(ctx, "once", metav1.GetOptions{})
		done = j
		return err == nil && jobCondition(j, batchv1.JobComplete) != nil
	})
	t.Logf("%s's agent started again %v after the kill; the Job Complete %v later", node, started.Sub(killed).Round(time.Millisecond), took.Round(time.Millisecond))
	if done.Status.Succeeded != 1 || done.Status.Failed != 0 {
		t.Errorf("the Job: %d succeeded, %d failed; want 1 and 0", done.Status.Succeeded, done.Status.Failed)
	}

	pods := jobPods(t, c, ns, "once")
	if len(pods) != 1 || pods[0].UID != pod.UID {
		t.Fatalf("the Job has %d pods, want the one that ran through the kill", len(pods))
	}
	after := pods[0].Status.ContainerStatuses
	if pods[0].Status.Phase != corev1.PodSucceeded || len(after) != 1 || after[0].ContainerID != before.ContainerID || after[0].RestartCount != 0 ||
		after[0].State.Terminated == nil || after[0].State.Terminated.ExitCode != 0 {
		t.Fatalf("pod %s: %s, %+v; want Succeeded, container %s exited 0, restartCount 0", pod.Name, pods[0].Status.Phase, after, before.ContainerID)
	}
	engineAfter := podContainers(t, pod.UID)
	if len(engineAfter) != 1 || engineAfter[0] != engineBefore[0] {
		t.Fatalf("the engine's containers of pod %s: %+v after, %+v before; want the same one, started once", pod.Name, engineAfter, engineBefore)
	}
	logs, err := c.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || string(logs) != "started\ndone\n" {
		t.Fatalf("log of %s: %q %v, want one run", pod.Name, logs, err)
	}
	term := after[0].State.Terminated
	t.Logf("pod %s on %s Succeeded: one container (%s, attempt %s, started %s), restartCount 0, finished %v after the kill, reported Succeeded %v after it finished; log %q",
		pod.Name, node, engineAfter[0].id[:12], engineAfter[0].attempt, engineAfter[0].startedAt, term.FinishedAt.Sub(killed).Round(time.Second),
		time.Since(term.FinishedAt.Time).Round(time.Second), logs)
}

// node-0 stopped with two Jobs' pods running on it: once its Lease is
// stale for the grace period the node is Unknown and tainted
// unreachable; the pods, tolerating that for the apiserver's
// --default-unreachable-toleration-seconds, are evicted when it runs out
// and each Job replaces its pod on node-1, where it completes. Back, the
// node's agent stops the evicted pods' containers and confirms their
// deletion.
func TestNode_StoppedItsPodsAreReplacedOnTheOtherNodeWithinTheToleration(t *testing.T) {
	ctx := context.Background()
	c := client(t, "apiserver-lb")
	const ns = "e2e-nodedown"
	namespace(t, c, ns)
	namespaceGoneOnExit(t, c, ns)
	restartOnExit(t, "node-0")
	logsOnFailure(t)
	nodesReady(t, c, 60*time.Second)

	// node-1 cordoned while the Jobs start: their pods go to node-0.
	cordon := func(on bool) {
		patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
		if _, err := c.CoreV1().Nodes().Patch(ctx, "node-1", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cordon(true)
	t.Cleanup(func() { cordon(false) })
	jobs := []string{"moved-a", "moved-b"}
	for _, name := range jobs {
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: batchv1.JobSpec{
				BackoffLimit: ptr.To(int32(2)),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					TerminationGracePeriodSeconds: ptr.To(int64(2)),
					// On node-0 the pod outlasts the test, so that only its
					// replacement can complete the Job; elsewhere it is quick.
					Containers: []corev1.Container{{Name: "work", Image: "busybox",
						Command: []string{"sh", "-c", `if [ "$NODE" = node-0 ]; then exec sleep 300; fi; echo done on "$NODE"`},
						Env:     []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
					}},
				}},
			},
		}
		if _, err := c.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	originals := map[string]corev1.Pod{}
	eventually(t, 60*time.Second, "both Jobs' pods running on node-0", func() bool {
		for _, name := range jobs {
			pods := jobPods(t, c, ns, name)
			if len(pods) != 1 || pods[0].Spec.NodeName != "node-0" || runningContainer(&pods[0]) == nil {
				return false
			}
			originals[name] = pods[0]
		}
		return true
	})
	for _, p := range originals {
		var seconds *int64
		for _, tol := range p.Spec.Tolerations {
			if tol.Key == corev1.TaintNodeUnreachable {
				seconds = tol.TolerationSeconds
			}
		}
		if seconds == nil || *seconds != unreachableSeconds {
			t.Fatalf("pod %s tolerates unreachable for %v s, want the apiserver's default %d", p.Name, seconds, unreachableSeconds)
		}
	}
	cordon(false)

	serviceT(t, "stop", "node-0")
	stopped := time.Now()
	// The agent's last renewal: the grace period runs from there.
	lease, err := c.CoordinationV1().Leases("kube-node-lease").Get(ctx, "node-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lastRenew := lease.Spec.RenewTime.Time
	t.Logf("node-0's agent stopped; its Lease last renewed %v before the stop returned", stopped.Sub(lastRenew).Round(time.Millisecond))

	var taintAdded time.Time
	eventually(t, nodeGrace+30*time.Second, "node-0 Unknown and tainted unreachable", func() bool {
		n, err := c.CoreV1().Nodes().Get(ctx, "node-0", metav1.GetOptions{})
		if err != nil {
			return false
		}
		if cond := nodeCondition(n); cond == nil || cond.Status != corev1.ConditionUnknown {
			return false
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == corev1.TaintNodeUnreachable && taint.Effect == corev1.TaintEffectNoExecute && taint.TimeAdded != nil {
				taintAdded = taint.TimeAdded.Time
				return true
			}
		}
		return false
	})
	unknownAfter := taintAdded.Sub(lastRenew)
	t.Logf("node-0 tainted unreachable (NoExecute) %v after its last renewal (grace period %v, monitor period %v)", unknownAfter.Round(time.Millisecond), nodeGrace, nodeMonitorPeriod)
	if unknownAfter < nodeGrace-time.Second || unknownAfter > nodeGrace+nodeMonitorPeriod+5*time.Second {
		t.Errorf("node-0 judged unreachable %v after its last renewal, want the grace period %v (plus a monitor period)", unknownAfter, nodeGrace)
	}

	toleration := time.Duration(unreachableSeconds) * time.Second
	var done []batchv1.Job
	eventually(t, toleration+90*time.Second, "both Jobs Complete", func() bool {
		done = done[:0]
		for _, name := range jobs {
			j, err := c.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || jobCondition(j, batchv1.JobComplete) == nil {
				return false
			}
			done = append(done, *j)
		}
		return true
	})
	for i, name := range jobs {
		pods := jobPods(t, c, ns, name)
		if len(pods) != 2 || pods[0].UID != originals[name].UID {
			t.Fatalf("Job %s has %d pods, want the evicted one and its replacement", name, len(pods))
		}
		evicted, replacement := pods[0], pods[1]
		if evicted.DeletionTimestamp == nil {
			t.Fatalf("pod %s on the stopped node is not being deleted", evicted.Name)
		}
		// The delete came with the pod's 2 s grace period.
		deleted := evicted.DeletionTimestamp.Add(-time.Duration(ptr.Deref(evicted.DeletionGracePeriodSeconds, 0)) * time.Second)
		disrupted := false
		for _, cond := range evicted.Status.Conditions {
			disrupted = disrupted || (cond.Type == corev1.DisruptionTarget && cond.Status == corev1.ConditionTrue && cond.Reason == "DeletionByTaintManager")
		}
		if !disrupted {
			t.Errorf("evicted pod %s has no DisruptionTarget condition: %+v", evicted.Name, evicted.Status.Conditions)
		}
		// Both to the second.
		if after := deleted.Sub(taintAdded); after < toleration-time.Second || after > toleration+nodeMonitorPeriod+5*time.Second {
			t.Errorf("pod %s deleted %v after the taint, want its toleration %v (plus a monitor period)", evicted.Name, after, toleration)
		}
		if replacement.Spec.NodeName != "node-1" || replacement.Status.Phase != corev1.PodSucceeded {
			t.Errorf("replacement %s %s on %s, want Succeeded on node-1", replacement.Name, replacement.Status.Phase, replacement.Spec.NodeName)
		}
		if j := done[i]; j.Status.Succeeded != 1 || j.Status.Failed != 1 {
			t.Errorf("Job %s: %d succeeded, %d failed; want 1 and 1 (the evicted pod counts as failed)", name, j.Status.Succeeded, j.Status.Failed)
		}
		complete := jobCondition(&done[i], batchv1.JobComplete).LastTransitionTime.Time
		t.Logf("Job %s: pod %s evicted %v after the taint (toleration %v), replacement %s created %v after that on %s, Job Complete %v after node-0 stopped",
			name, evicted.Name, deleted.Sub(taintAdded), toleration, replacement.Name, replacement.CreationTimestamp.Sub(deleted), replacement.Spec.NodeName,
			complete.Sub(stopped).Round(time.Second))
	}

	// Back: node-0's agent finds the pods deleted, stops their
	// containers and removes them for good.
	serviceT(t, "start", "node-0")
	back := time.Now()
	ready := nodesReady(t, c, 90*time.Second)
	eventually(t, 60*time.Second, "the evicted pods gone, their containers removed", func() bool {
		for _, p := range originals {
			if _, err := c.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false
			}
			if len(podContainers(t, p.UID)) > 0 {
				return false
			}
		}
		return true
	})
	t.Logf("node-0 started again: Ready and untainted after %v, the evicted pods deleted and their containers removed %v after it started",
		ready.Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
}
