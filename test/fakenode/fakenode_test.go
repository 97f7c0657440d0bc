package fakenode

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestCommand_FollowsTheImagesEntrypointAndCmd(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    corev1.Container
		want []string
	}{
		{"command and args", corev1.Container{Image: "busybox", Command: []string{"sh", "-c"}, Args: []string{"exit 1"}}, []string{"sh", "-c", "exit 1"}},
		{"args replace busybox's cmd", corev1.Container{Image: "busybox:1.36", Args: []string{"sleep", "1"}}, []string{"sleep", "1"}},
		{"busybox's cmd", corev1.Container{Image: "registry.k8s.io/e2e-test-images/busybox:1.29-4"}, []string{"sh"}},
		{"pause blocks", corev1.Container{Image: "registry.k8s.io/pause:3.9"}, []string{"sh", "-c", `trap "exit 0" TERM; sleep 2147483647 & wait`}},
		{"unknown image", corev1.Container{Image: "nginx"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := command(&tc.c)
			if (err != nil) != (tc.want == nil) || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("command = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func terminated(code int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
}

func TestPodPhase_AsTheKubeletDecidesIt(t *testing.T) {
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	waiting := corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{}}}
	backoff := waiting
	backoff.LastTerminationState = terminated(1).State
	for _, tc := range []struct {
		name     string
		policy   corev1.RestartPolicy
		init     []corev1.ContainerStatus
		regular  []corev1.ContainerStatus
		terminal bool
		want     corev1.PodPhase
	}{
		{"waiting", corev1.RestartPolicyNever, nil, []corev1.ContainerStatus{waiting}, false, corev1.PodPending},
		{"running", corev1.RestartPolicyNever, nil, []corev1.ContainerStatus{running, terminated(0)}, false, corev1.PodRunning},
		{"all succeeded", corev1.RestartPolicyNever, nil, []corev1.ContainerStatus{terminated(0)}, false, corev1.PodSucceeded},
		{"one failed, never restarted", corev1.RestartPolicyNever, nil, []corev1.ContainerStatus{terminated(0), terminated(2)}, false, corev1.PodFailed},
		{"failed, restarted on failure", corev1.RestartPolicyOnFailure, nil, []corev1.ContainerStatus{backoff}, false, corev1.PodRunning},
		{"succeeded, always restarted", corev1.RestartPolicyAlways, nil, []corev1.ContainerStatus{terminated(0)}, false, corev1.PodRunning},
		{"stopped by deletion", corev1.RestartPolicyAlways, nil, []corev1.ContainerStatus{terminated(143)}, true, corev1.PodFailed},
		{"init failed, never restarted", corev1.RestartPolicyNever, []corev1.ContainerStatus{terminated(1)}, []corev1.ContainerStatus{waiting}, false, corev1.PodFailed},
		{"init running", corev1.RestartPolicyNever, []corev1.ContainerStatus{running}, []corev1.ContainerStatus{waiting}, false, corev1.PodPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tc.policy}}
			if got := podPhase(pod, tc.init, tc.regular, tc.terminal); got != tc.want {
				t.Fatalf("phase %s, want %s", got, tc.want)
			}
		})
	}
}

func TestBackoff_FirstRestartAtOnceThenDoubling(t *testing.T) {
	w := &podWorker{n: &Node{cfg: Config{RestartBackoff: 10 * time.Second, MaxRestartBackoff: 35 * time.Second}}}
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 35 * time.Second, 35 * time.Second}
	for i, d := range want {
		if got := w.backoff(int32(i)); got != d {
			t.Errorf("backoff after %d restarts = %s, want %s", i, got, d)
		}
	}
}
