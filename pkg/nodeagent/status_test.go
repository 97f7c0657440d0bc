package nodeagent

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cronplane/cronplane/pkg/nodeagent/engine"
)

func TestContainerStatus_MapsTheEngineStateAsTheKubelet(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	exited := func(code int, oom bool, n int) engine.Container {
		return engine.Container{ID: "id" + string(rune('0'+n)), State: engine.Exited, ExitCode: code, OOMKilled: oom, StartedAt: start, FinishedAt: start.Add(time.Second),
			Labels: map[string]string{labelAttempt: string(rune('0' + n))}}
	}
	crash := &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s"}
	for _, tc := range []struct {
		name               string
		obs                observed
		state, last        string
		reason, lastReason string
		exitCode           int32
		restarts           int32
		ready              bool
	}{
		{name: "not created yet", state: "waiting", reason: "ContainerCreating"},
		{name: "image pull failed", obs: observed{waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}, state: "waiting", reason: "ErrImagePull"},
		{name: "running", obs: observed{instances: []engine.Container{{ID: "a", State: engine.Running, StartedAt: start}}}, state: "running", ready: true},
		{name: "exit 0", obs: observed{instances: []engine.Container{exited(0, false, 0)}}, state: "terminated", reason: "Completed"},
		{name: "exit 2", obs: observed{instances: []engine.Container{exited(2, false, 0)}}, state: "terminated", reason: "Error", exitCode: 2},
		{name: "OOM killed", obs: observed{instances: []engine.Container{exited(137, true, 0)}}, state: "terminated", reason: "OOMKilled", exitCode: 137},
		{name: "start failed", obs: observed{instances: []engine.Container{{ID: "s", State: engine.Exited, ExitCode: 128, FinishedAt: start,
			Error: "failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: unable to apply caps: operation not permitted: unknown"}}},
			state: "terminated", reason: "StartError", exitCode: 128},
		{name: "crash loop", obs: observed{instances: []engine.Container{exited(1, false, 2), exited(1, false, 1)}, waiting: crash},
			state: "waiting", reason: "CrashLoopBackOff", last: "terminated", lastReason: "Error", restarts: 2},
		{name: "restarted, running", obs: observed{instances: []engine.Container{{ID: "b", State: engine.Running, Labels: map[string]string{labelAttempt: "1"}}, exited(0, false, 0)}},
			state: "running", last: "terminated", lastReason: "Completed", restarts: 1, ready: true},
		{name: "lost by the engine after running", obs: observed{old: &corev1.ContainerStatus{Name: "c", ContainerID: "docker://x",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}, state: "terminated", reason: "ContainerStatusUnknown", exitCode: 137},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := containerStatus(&corev1.Container{Name: "c", Image: "busybox"}, tc.obs)
			state, reason, exitCode := describe(s.State)
			if state != tc.state || reason != tc.reason || exitCode != tc.exitCode || s.RestartCount != tc.restarts || s.Ready != tc.ready {
				t.Errorf("got %s/%s/%d restarts %d ready %v, want %s/%s/%d restarts %d ready %v", state, reason, exitCode, s.RestartCount, s.Ready,
					tc.state, tc.reason, tc.exitCode, tc.restarts, tc.ready)
			}
			if last, lastReason, _ := describe(s.LastTerminationState); last != tc.last || lastReason != tc.lastReason {
				t.Errorf("last state %s/%s, want %s/%s", last, lastReason, tc.last, tc.lastReason)
			}
		})
	}
}

func describe(s corev1.ContainerState) (string, string, int32) {
	switch {
	case s.Waiting != nil:
		return "waiting", s.Waiting.Reason, 0
	case s.Running != nil:
		return "running", "", 0
	case s.Terminated != nil:
		return "terminated", s.Terminated.Reason, s.Terminated.ExitCode
	}
	return "", "", 0
}

func TestPodPhase_FollowsTheRestartPolicy(t *testing.T) {
	running := corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	ok := corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}
	failed := corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}
	creating := corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
	backoff := corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}
	for _, tc := range []struct {
		name       string
		policy     corev1.RestartPolicy
		inits      []corev1.ContainerStatus
		containers []corev1.ContainerStatus
		terminal   bool
		want       corev1.PodPhase
	}{
		{"creating", corev1.RestartPolicyNever, nil, []corev1.ContainerStatus{creating}, false, corev1.PodPending},
		{"init running", corev1.RestartPolicyNever, []corev1.ContainerStatus{running}, []corev1.ContainerStatus{creating}, false, corev1.PodPending},
		{"init failed, Never", corev1.RestartPolicyNever, []corev1.ContainerStatus{failed}, []corev1.ContainerStatus{creating}, false, corev1.PodFailed},
		{"init failed, OnFailure", corev1.RestartPolicyOnFailure, []corev1.ContainerStatus{backoff}, []corev1.ContainerStatus{creating}, false, corev1.PodPending},
		{"running", corev1.RestartPolicyNever, nil, []corev1.ContainerStatus{running}, false, corev1.PodRunning},
		{"succeeded", corev1.RestartPolicyNever, nil, []corev1.ContainerStatus{ok}, false, corev1.PodSucceeded},
		{"failed, Never", corev1.RestartPolicyNever, nil, []corev1.ContainerStatus{failed}, false, corev1.PodFailed},
		{"one of two failed, Never", corev1.RestartPolicyNever, nil, []corev1.ContainerStatus{ok, failed}, false, corev1.PodFailed},
		{"failed, OnFailure, backing off", corev1.RestartPolicyOnFailure, nil, []corev1.ContainerStatus{backoff}, false, corev1.PodRunning},
		{"succeeded, OnFailure", corev1.RestartPolicyOnFailure, nil, []corev1.ContainerStatus{ok}, false, corev1.PodSucceeded},
		{"exited 0, Always", corev1.RestartPolicyAlways, nil, []corev1.ContainerStatus{ok}, false, corev1.PodRunning},
		{"deleted, Always, killed", corev1.RestartPolicyAlways, nil, []corev1.ContainerStatus{failed}, true, corev1.PodFailed},
		{"deleted, Always, exited 0", corev1.RestartPolicyAlways, nil, []corev1.ContainerStatus{ok}, true, corev1.PodSucceeded},
		{"deleted before it started", corev1.RestartPolicyNever, nil, []corev1.ContainerStatus{creating}, true, corev1.PodFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podPhase(&corev1.PodSpec{RestartPolicy: tc.policy}, tc.inits, tc.containers, tc.terminal); got != tc.want {
				t.Errorf("phase %s, want %s", got, tc.want)
			}
		})
	}
}
