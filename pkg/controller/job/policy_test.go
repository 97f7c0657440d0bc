package job

import (
	"reflect"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func exitCodeRule(action batchv1.PodFailurePolicyAction, op batchv1.PodFailurePolicyOnExitCodesOperator, codes ...int32) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: codes}}
}

func conditionRule(action batchv1.PodFailurePolicyAction, t corev1.PodConditionType) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: t, Status: corev1.ConditionTrue}}}
}

func TestMatchFailurePolicy(t *testing.T) {
	policy := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		conditionRule(batchv1.PodFailurePolicyActionIgnore, corev1.DisruptionTarget),
		exitCodeRule(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, 42),
		exitCodeRule(batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyOnExitCodesOpNotIn, 42, 43),
		exitCodeRule(batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyOnExitCodesOpIn, 43),
	}}
	initExit := func(code int32) podOpt {
		return func(p *corev1.Pod) {
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}}
		}
	}
	cases := []struct {
		name    string
		pod     *corev1.Pod
		matched bool
		action  batchv1.PodFailurePolicyAction
		message string
	}{
		{name: "disrupted", pod: newPod("a", corev1.PodFailed, finishedAt(t0, 42), withCondition(corev1.DisruptionTarget)),
			matched: true, action: batchv1.PodFailurePolicyActionIgnore},
		{name: "exit code in", pod: newPod("a", corev1.PodFailed, finishedAt(t0, 42)), matched: true, action: batchv1.PodFailurePolicyActionFailJob,
			message: "Container c for pod ns/a failed with exit code 42 matching FailJob rule at index 1"},
		{name: "exit code not in", pod: newPod("a", corev1.PodFailed, finishedAt(t0, 7)), matched: true, action: batchv1.PodFailurePolicyActionCount},
		{name: "fail index", pod: newPod("a", corev1.PodFailed, finishedAt(t0, 43)), matched: true, action: batchv1.PodFailurePolicyActionFailIndex},
		{name: "exit code zero matches nothing", pod: newPod("a", corev1.PodFailed, finishedAt(t0, 0))},
		{name: "init container", pod: newPod("a", corev1.PodFailed, initExit(42)), matched: true, action: batchv1.PodFailurePolicyActionFailJob,
			message: "Container init for pod ns/a failed with exit code 42 matching FailJob rule at index 1"},
		{name: "no terminated container", pod: newPod("a", corev1.PodFailed)},
	}
	for _, tc := range cases {
		rule, matched := matchFailurePolicy(policy, tc.pod)
		if matched != tc.matched || rule.action != tc.action || rule.message != tc.message {
			t.Errorf("%s: %+v %v, want %v %q %q", tc.name, rule, matched, tc.matched, tc.action, tc.message)
		}
	}
	named := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{exitCodeRule(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, 1)}}
	named.Rules[0].OnExitCodes.ContainerName = ptrTo("other")
	if _, matched := matchFailurePolicy(named, newPod("a", corev1.PodFailed, finishedAt(t0, 1))); matched {
		t.Error("a rule for another container matched")
	}
	cond := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{conditionRule(batchv1.PodFailurePolicyActionFailJob, corev1.DisruptionTarget)}}
	if rule, _ := matchFailurePolicy(cond, newPod("a", corev1.PodFailed, withCondition(corev1.DisruptionTarget))); rule.message != "Pod ns/a has condition DisruptionTarget matching FailJob rule at index 0" {
		t.Errorf("message %q", rule.message)
	}
}

func TestSync_FailJobRuleFailsTheJobThroughFailureTarget(t *testing.T) {
	job := started(newJob(2, 4))
	job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		exitCodeRule(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, 42)}}
	job.Spec.PodReplacementPolicy = ptrTo(batchv1.Failed)
	f := newFixture(t, job, newPod("a", corev1.PodFailed, finishedAt(t0, 42)), newPod("b", corev1.PodRunning))
	f.mustSync()

	writes := f.statusWrites()
	target := conditionOf(&batchv1.Job{Status: writes[0]}, batchv1.JobFailureTarget)
	if target == nil || target.Reason != "PodFailurePolicy" || !strings.Contains(target.Message, "exit code 42 matching FailJob rule at index 0") ||
		conditionOf(&batchv1.Job{Status: writes[0]}, batchv1.JobFailed) != nil {
		t.Fatalf("first write %+v: FailureTarget before any finalizer goes", writes[0])
	}
	final := f.stored()
	failed := conditionOf(final, batchv1.JobFailed)
	if failed == nil || failed.Reason != "PodFailurePolicy" || failed.Message != target.Message || final.Status.Failed != 2 {
		t.Fatalf("status %+v", final.Status)
	}
	if got := f.reasons(); !reflect.DeepEqual(got, []string{"SuccessfulDelete", "PodFailurePolicy"}) {
		t.Errorf("events %v", got)
	}

	// A later sync that finds the FailureTarget but not the pod fails the
	// Job all the same.
	job2 := started(newJob(1, 1))
	job2.Status.Conditions = []batchv1.JobCondition{*condition(batchv1.JobFailureTarget, corev1.ConditionTrue, "PodFailurePolicy", "msg", t0)}
	f2 := newFixture(t, job2)
	f2.mustSync()
	if c := conditionOf(f2.stored(), batchv1.JobFailed); c == nil || c.Message != "msg" {
		t.Errorf("conditions %+v", f2.stored().Status.Conditions)
	}
}

func TestSync_IgnoredFailuresAreNotCounted(t *testing.T) {
	job := started(newJob(1, 1))
	job.Spec.BackoffLimit = ptrTo(int32(0))
	job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		conditionRule(batchv1.PodFailurePolicyActionIgnore, corev1.DisruptionTarget)}}
	f := newFixture(t, job, newPod("a", corev1.PodFailed, finishedAt(t0, 1), withCondition(corev1.DisruptionTarget)))
	f.mustSync()
	final := f.stored()
	if final.Status.Failed != 0 || len(final.Status.UncountedTerminatedPods.Failed) != 0 || conditionOf(final, batchv1.JobFailed) != nil {
		t.Fatalf("status %+v", final.Status)
	}
	if count(f.calls(), "patch pods a") != 1 {
		t.Errorf("calls %v: the finalizer must go", f.calls())
	}
}

func TestSync_PodReplacementPolicy(t *testing.T) {
	cases := []struct {
		name        string
		policy      batchv1.PodReplacementPolicy
		wantCreated int
		wantFailed  int32
	}{
		{name: "TerminatingOrFailed replaces a terminating pod at once and counts it failed", policy: batchv1.TerminatingOrFailed, wantCreated: 1, wantFailed: 1},
		{name: "Failed waits for the terminating pod to fail", policy: batchv1.Failed, wantCreated: 0, wantFailed: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := started(newJob(1, 1))
			job.Spec.PodReplacementPolicy = ptrTo(tc.policy)
			f := newFixture(t, job, newPod("a", corev1.PodRunning, deleting))
			f.mustSync()
			if got := len(f.createdPods()); got != tc.wantCreated {
				t.Errorf("created %d pods, want %d", got, tc.wantCreated)
			}
			got := f.stored().Status
			if got.Failed != tc.wantFailed || *got.Terminating != 1 {
				t.Errorf("status %+v", got)
			}
		})
	}
}

func TestSync_ReadyAndTerminatingAreCounted(t *testing.T) {
	f := newFixture(t, started(newJob(3, 3)),
		newPod("a", corev1.PodRunning, ready), newPod("b", corev1.PodRunning, ready), newPod("c", corev1.PodPending),
		newPod("d", corev1.PodRunning, deleting, untracked))
	f.mustSync()
	got := f.stored().Status
	if *got.Ready != 2 || *got.Terminating != 1 || got.Active != 3 {
		t.Errorf("status %+v", got)
	}
}

func TestSync_BackoffLimitPerIndex(t *testing.T) {
	perIndex := func(limit int32) *batchv1.Job {
		j := started(indexedJob(2, 2))
		j.Spec.BackoffLimitPerIndex = ptrTo(limit)
		j.Spec.BackoffLimit = ptrTo(int32(2147483647))
		return j
	}

	t.Run("a failed pod waits for its replacement, which carries the count on", func(t *testing.T) {
		f := newFixture(t, perIndex(2), newPod("a", corev1.PodFailed, index(0), finishedAt(t0, 1), annotated(batchv1.JobIndexFailureCountAnnotation, "0")),
			newPod("b", corev1.PodRunning, index(1)))
		f.clock.SetTime(t0.Add(time.Second))
		f.mustSync()
		if len(f.createdPods()) != 0 || count(f.calls(), "patch pods a") != 0 {
			t.Fatalf("calls %v within the index's backoff", f.calls())
		}
		f.clock.SetTime(t0.Add(11 * time.Second))
		f.reset()
		f.mustSync()
		created := f.createdPods()
		if len(created) != 1 || created[0].Annotations[batchv1.JobCompletionIndexAnnotation] != "0" ||
			created[0].Annotations[batchv1.JobIndexFailureCountAnnotation] != "1" {
			t.Fatalf("created %v", created)
		}
		if count(f.calls(), "patch pods a") != 0 {
			t.Fatal("the failed pod lost its finalizer before the informer showed its replacement")
		}
		// Once the replacement shows, the failed pod is counted.
		f.cache(newPod("a2", corev1.PodRunning, index(0), annotated(batchv1.JobIndexFailureCountAnnotation, "1")))
		f.reset()
		f.mustSync()
		if count(f.calls(), "patch pods a") != 1 || f.stored().Status.Failed != 1 || *f.stored().Status.FailedIndexes != "" {
			t.Fatalf("calls %v status %+v", f.calls(), f.stored().Status)
		}
	})

	t.Run("an index past its limit fails, and the Job with it when all are done", func(t *testing.T) {
		f := newFixture(t, perIndex(1),
			newPod("a", corev1.PodFailed, index(0), finishedAt(t0, 1), annotated(batchv1.JobIndexFailureCountAnnotation, "1")),
			newPod("b", corev1.PodSucceeded, index(1)))
		f.mustSync()
		final := f.stored()
		cond := conditionOf(final, batchv1.JobFailed)
		if *final.Status.FailedIndexes != "0" || final.Status.CompletedIndexes != "1" || cond == nil || cond.Reason != "FailedIndexes" ||
			cond.Message != "Job has failed indexes" || len(f.createdPods()) != 0 {
			t.Fatalf("status %+v", final.Status)
		}
	})

	t.Run("more failed indexes than maxFailedIndexes fail the Job", func(t *testing.T) {
		job := perIndex(0)
		job.Spec.Completions, job.Spec.Parallelism = ptrTo(int32(4)), ptrTo(int32(4))
		job.Spec.MaxFailedIndexes = ptrTo(int32(1))
		f := newFixture(t, job,
			newPod("a", corev1.PodFailed, index(0), finishedAt(t0, 1)),
			newPod("b", corev1.PodFailed, index(2), finishedAt(t0, 1)),
			newPod("c", corev1.PodRunning, index(1)))
		f.mustSync()
		final := f.stored()
		cond := conditionOf(final, batchv1.JobFailed)
		if cond == nil || cond.Reason != "MaxFailedIndexesExceeded" || *final.Status.FailedIndexes != "0,2" || final.Status.Failed != 3 {
			t.Fatalf("status %+v", final.Status)
		}
	})

	t.Run("FailIndex fails the index at once", func(t *testing.T) {
		job := perIndex(5)
		job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
			exitCodeRule(batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyOnExitCodesOpIn, 3)}}
		f := newFixture(t, job, newPod("a", corev1.PodFailed, index(0), finishedAt(t0, 3)), newPod("b", corev1.PodRunning, index(1)))
		f.mustSync()
		if got := f.stored().Status; *got.FailedIndexes != "0" || got.Failed != 1 || len(f.createdPods()) != 0 {
			t.Fatalf("status %+v, created %d", got, len(f.createdPods()))
		}
	})
}

func TestSync_AdoptsOrphansAndReleasesWhatItNoLongerSelects(t *testing.T) {
	other := newPod("other", corev1.PodRunning, orphan)
	other.Labels = map[string]string{"app": "else"}
	strayed := newPod("strayed", corev1.PodRunning)
	strayed.Labels = map[string]string{"app": "else"}
	f := newFixture(t, started(newJob(2, 2)), newPod("o", corev1.PodRunning, orphan), other, strayed)
	f.mustSync()

	calls := f.calls()
	if count(calls, "get jobs j") != 1 || count(calls, "patch pods o") != 1 || count(calls, "patch pods strayed") != 1 || count(calls, "patch pods other") != 0 {
		t.Fatalf("calls %v", calls)
	}
	pods := map[string]*corev1.Pod{}
	for _, p := range f.storedPods() {
		pods[p.Name] = p
	}
	ref := metav1.GetControllerOf(pods["o"])
	if ref == nil || ref.UID != jobUID || !hasTrackingFinalizer(pods["o"]) {
		t.Errorf("adopted pod %+v", pods["o"].ObjectMeta)
	}
	if len(pods["strayed"].OwnerReferences) != 0 || hasTrackingFinalizer(pods["strayed"]) {
		t.Errorf("released pod %+v", pods["strayed"].ObjectMeta)
	}
	// The adopted pod counts: one more is created for parallelism 2.
	if n := len(f.createdPods()); n != 1 {
		t.Errorf("created %d pods", n)
	}
}

func TestSync_ADeletedJobAdoptsNothing(t *testing.T) {
	job := started(newJob(1, 1))
	f := newFixture(t, job, newPod("o", corev1.PodRunning, orphan))
	live := job.DeepCopy()
	live.DeletionTimestamp = &metav1.Time{Time: t0}
	if err := f.client.Tracker().Update(jobsGVR, live, "ns"); err != nil {
		t.Fatal(err)
	}
	if err := f.sync(); err == nil || !strings.Contains(err.Error(), "has just been deleted") {
		t.Fatalf("sync: %v", err)
	}
	if count(f.calls(), "patch") != 0 {
		t.Errorf("calls %v", f.calls())
	}
}
