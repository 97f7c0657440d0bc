//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// removePods removes the containers the node agents ran on the
// cluster's network, the agents stopped first (they would run them
// again): compose down knows nothing of them.
func removePods() (string, error) {
	if out, err := compose("stop", "node-0", "node-1"); err != nil {
		return out, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A pod's containers share its sandbox's network namespace, so they
	// are found by the node label, not by the cluster network.
	var ids []string
	for _, node := range []string{"node-0", "node-1"} {
		out, err := execOut(ctx, "docker", "ps", "-aq", "--filter", "label=io.cronplane.node-agent", "--filter", "label=io.cronplane.node="+node)
		if err != nil {
			return out, err
		}
		ids = append(ids, strings.Fields(out)...)
	}
	if len(ids) == 0 {
		return "", nil
	}
	return execOut(ctx, "docker", append([]string{"rm", "-f"}, ids...)...)
}

func clusterJobRunsOnANodeAgentAndItsLogIsServed(t *testing.T) {
	logsOnFailure(t)
	ctx := context.Background()
	c := client(t, "apiserver-1")
	namespace(t, c, "e2e-nodes")
	eventually(t, 60*time.Second, "node-0 and node-1 Ready", func() bool {
		nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == 2
	})

	// What `kubectl create job hello --image=busybox -- echo hi` creates.
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "hello"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "hello", Image: "busybox", Command: []string{"echo", "hi"}}},
		}}},
	}
	if _, err := c.BatchV1().Jobs("e2e-nodes").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	took := eventually(t, 60*time.Second, "the Job Complete", func() bool {
		j, err := c.BatchV1().Jobs("e2e-nodes").Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, cond := range j.Status.Conditions {
			if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
	pods, err := c.CoreV1().Pods("e2e-nodes").List(ctx, metav1.ListOptions{LabelSelector: "job-name=hello"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the Job's pods: %v %v", pods, err)
	}
	pod := pods.Items[0]
	if pod.Status.Phase != corev1.PodSucceeded {
		t.Errorf("pod %s is %s, want Succeeded", pod.Name, pod.Status.Phase)
	}
	t.Logf("Job hello Complete %v after its creation, its pod %s ran on %s", took.Round(time.Millisecond), pod.Name, pod.Spec.NodeName)

	// Through the other apiserver too: each reaches either agent.
	for _, ctxName := range []string{"apiserver-0", "apiserver-1"} {
		logs, err := client(t, ctxName).CoreV1().Pods("e2e-nodes").GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatalf("logs through %s: %v", ctxName, err)
		}
		if string(logs) != "hi\n" {
			t.Errorf("logs through %s: %q, want %q", ctxName, logs, "hi\n")
		}
	}
}

func execOut(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

func clusterREADMECronJobRunsAndItsLogPrintsHi(t *testing.T) {
	logsOnFailure(t)
	ctx := context.Background()
	c := client(t, "apiserver-0")
	namespace(t, c, "e2e-readme")
	if out, err := kubectl("create", "cronjob", "hello", "-n", "e2e-readme", "--image=busybox", "--schedule=*/1 * * * *", "--", "echo", "hi"); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	var job string
	took := eventually(t, 150*time.Second, "a Job of the CronJob Complete", func() bool {
		list, err := c.BatchV1().Jobs("e2e-readme").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, j := range list.Items {
			for _, cond := range j.Status.Conditions {
				if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
					job = j.Name
					return true
				}
			}
		}
		return false
	})
	t.Logf("Job %s Complete %v after the CronJob's creation", job, took.Round(time.Millisecond))
	out, err := kubectl("logs", "-n", "e2e-readme", "job/"+job)
	if err != nil || out != "hi\n" {
		t.Errorf("kubectl logs job/%s: %q %v, want %q", job, out, err, "hi\n")
	}
	eventually(t, 30*time.Second, "the CronJob's lastSuccessfulTime", func() bool {
		cj, err := c.BatchV1().CronJobs("e2e-readme").Get(ctx, "hello", metav1.GetOptions{})
		return err == nil && cj.Status.LastSuccessfulTime != nil
	})
}
