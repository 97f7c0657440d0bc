package job

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
)

func TestSync_CreatesPodsFromTheTemplate(t *testing.T) {
	f := newFixture(t, newJob(2, 5))
	f.mustSync()

	created := f.createdPods()
	if len(created) != 2 {
		t.Fatalf("created %d pods, want parallelism 2", len(created))
	}
	p := created[0]
	ref := metav1.GetControllerOf(p)
	if p.GenerateName != "j-" || p.Labels[batchv1.ControllerUidLabel] != string(jobUID) || p.Annotations["note"] != "kept" ||
		ref == nil || ref.UID != jobUID || ref.Kind != "Job" || ref.APIVersion != "batch/v1" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion ||
		!reflect.DeepEqual(p.Finalizers, []string{batchv1.JobTrackingFinalizer}) || p.Spec.Hostname != "" {
		t.Errorf("pod %+v", p.ObjectMeta)
	}
	if _, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]; ok || len(p.Spec.Containers[0].Env) != 1 {
		t.Errorf("a NonIndexed pod got an index: %v %v", p.Annotations, p.Spec.Containers[0].Env)
	}
	job := f.stored()
	if job.Status.Active != 2 || job.Status.StartTime == nil || !job.Status.StartTime.Time.Equal(f.clock.Now()) ||
		*job.Status.Ready != 0 || *job.Status.Terminating != 0 {
		t.Errorf("status %+v", job.Status)
	}
	if got := f.reasons(); !reflect.DeepEqual(got, []string{"SuccessfulCreate", "SuccessfulCreate"}) {
		t.Errorf("events %v", got)
	}
}

func TestSync_WantedPods(t *testing.T) {
	cases := []struct {
		name                     string
		parallelism, completions int32
		status                   batchv1.JobStatus
		pods                     []*corev1.Pod
		wantCreated              int
		wantDeleted              []string
		wantActive               int32
	}{
		{name: "parallelism bounds the pods", parallelism: 3, completions: 10, wantCreated: 3, wantActive: 3},
		{name: "remaining completions bound the pods", parallelism: 5, completions: 3,
			status: batchv1.JobStatus{Succeeded: 1}, wantCreated: 2, wantActive: 2},
		{name: "running pods count", parallelism: 3, completions: 10,
			pods: []*corev1.Pod{newPod("a", corev1.PodRunning), newPod("b", corev1.PodPending)}, wantCreated: 1, wantActive: 3},
		{name: "pods beyond parallelism are deleted, pending before running", parallelism: 1, completions: 10,
			pods:        []*corev1.Pod{newPod("a", corev1.PodRunning, ready), newPod("b", corev1.PodPending)},
			wantDeleted: []string{"b"}, wantActive: 1},
		{name: "no completions: parallelism pods until one succeeds", parallelism: 2, completions: -1, wantCreated: 2, wantActive: 2},
		{name: "no completions: none added after a success", parallelism: 3, completions: -1,
			status: batchv1.JobStatus{Succeeded: 1}, pods: []*corev1.Pod{newPod("a", corev1.PodRunning)}, wantActive: 1},
		{name: "zero parallelism deletes everything", parallelism: 0, completions: 3,
			pods: []*corev1.Pod{newPod("a", corev1.PodRunning)}, wantDeleted: []string{"a"}, wantActive: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := started(newJob(tc.parallelism, tc.completions))
			job.Status = tc.status
			job.Status.StartTime = &metav1.Time{Time: t0}
			f := newFixture(t, job, tc.pods...)
			f.mustSync()
			if got := len(f.createdPods()); got != tc.wantCreated {
				t.Errorf("created %d pods, want %d", got, tc.wantCreated)
			}
			var deleted []string
			for _, c := range f.calls() {
				if strings.HasPrefix(c, "delete pods ") {
					deleted = append(deleted, strings.TrimPrefix(c, "delete pods "))
				}
			}
			if !reflect.DeepEqual(deleted, tc.wantDeleted) {
				t.Errorf("deleted %v, want %v", deleted, tc.wantDeleted)
			}
			if got := f.stored().Status.Active; got != tc.wantActive {
				t.Errorf("active %d, want %d", got, tc.wantActive)
			}
		})
	}
}

func TestSync_ExcessPodsLoseTheirFinalizerBeforeDeletion(t *testing.T) {
	f := newFixture(t, started(newJob(0, 3)), newPod("a", corev1.PodRunning))
	f.mustSync()
	calls := f.calls()
	want := []string{"patch pods a", "delete pods a"}
	if !reflect.DeepEqual(calls[:2], want) {
		t.Fatalf("calls %v, want %v first", calls, want)
	}
	if job := f.stored(); job.Status.Failed != 0 {
		t.Errorf("a pod the Job deleted counted as failed: %+v", job.Status)
	}
	if got := f.reasons(); !reflect.DeepEqual(got, []string{"SuccessfulDelete"}) {
		t.Errorf("events %v", got)
	}
}

func TestSync_IndexedPodsCarryTheirIndex(t *testing.T) {
	job := indexedJob(3, 5)
	job.Status.CompletedIndexes = "1"
	job.Status.Succeeded = 1
	f := newFixture(t, started(job), newPod("a", corev1.PodRunning, index(0)))
	f.mustSync()

	created := f.createdPods()
	var ixs []string
	for _, p := range created {
		ix := p.Annotations[batchv1.JobCompletionIndexAnnotation]
		ixs = append(ixs, ix)
		if p.Labels[batchv1.JobCompletionIndexAnnotation] != ix || p.Spec.Hostname != "j-"+ix || p.GenerateName != "j-"+ix+"-" {
			t.Errorf("pod of index %s: labels %v hostname %q generateName %q", ix, p.Labels, p.Spec.Hostname, p.GenerateName)
		}
		want := corev1.EnvVar{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: "metadata.labels['batch.kubernetes.io/job-completion-index']"}}}
		for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
			if got := c.Env[len(c.Env)-1]; !reflect.DeepEqual(got, want) {
				t.Errorf("container %s env %v", c.Name, c.Env)
			}
		}
		if _, ok := p.Annotations[batchv1.JobIndexFailureCountAnnotation]; ok {
			t.Errorf("failure count without backoffLimitPerIndex: %v", p.Annotations)
		}
	}
	if !reflect.DeepEqual(ixs, []string{"2", "3"}) {
		t.Errorf("created indexes %v, want the lowest free ones, 2 and 3", ixs)
	}
	if got := f.stored().Status.Active; got != 3 {
		t.Errorf("active %d", got)
	}
}

func TestSync_IndexedDuplicatesAndStrayIndexesAreDeleted(t *testing.T) {
	f := newFixture(t, started(indexedJob(3, 3)),
		newPod("a", corev1.PodRunning, index(0), ready),
		newPod("b", corev1.PodPending, index(0)),
		newPod("c", corev1.PodRunning, index(7)),
		newPod("d", corev1.PodRunning))
	f.mustSync()
	var deleted []string
	for _, c := range f.calls() {
		if strings.HasPrefix(c, "delete pods ") {
			deleted = append(deleted, strings.TrimPrefix(c, "delete pods "))
		}
	}
	if len(deleted) != 3 || strings.Contains(strings.Join(deleted, ","), "a") {
		t.Errorf("deleted %v, want b, c and d", deleted)
	}
	if len(f.createdPods()) != 0 {
		t.Error("created pods in the sync that deleted some")
	}
}

func TestGenerateName(t *testing.T) {
	long := strings.Repeat("x", 63)
	cases := []struct {
		job   string
		index int
		want  string
	}{
		{"j", noIndex, "j-"},
		{"j", 12, "j-12-"},
		{long, noIndex, long + "-"},
		{long, 3, strings.Repeat("x", 55) + "-3-"},
	}
	for _, tc := range cases {
		if got := generateName(tc.job, tc.index); got != tc.want {
			t.Errorf("generateName(%q, %d) = %q, want %q", tc.job, tc.index, got, tc.want)
		}
	}
}

func TestSync_SucceededPodIsCountedInTwoSteps(t *testing.T) {
	f := newFixture(t, started(newJob(1, 1)), newPod("a", corev1.PodSucceeded))
	f.mustSync()

	want := []string{"update jobs/status", "patch pods a", "update jobs/status"}
	if got := f.calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	writes := f.statusWrites()
	if u := writes[0].UncountedTerminatedPods; !reflect.DeepEqual(u.Succeeded, []types.UID{"uid-a"}) || writes[0].Succeeded != 0 ||
		conditionOf(&batchv1.Job{Status: writes[0]}, batchv1.JobComplete) != nil {
		t.Errorf("first write %+v: the pod must be uncounted, the Job not complete", writes[0])
	}
	final := f.stored()
	if final.Status.Succeeded != 1 || len(final.Status.UncountedTerminatedPods.Succeeded) != 0 || final.Status.Active != 0 {
		t.Errorf("final status %+v", final.Status)
	}
	cond := conditionOf(final, batchv1.JobComplete)
	if cond == nil || cond.Status != corev1.ConditionTrue || final.Status.CompletionTime == nil {
		t.Errorf("not complete: %+v", final.Status)
	}
	if pods := f.storedPods(); len(pods[0].Finalizers) != 0 {
		t.Errorf("finalizer kept: %v", pods[0].Finalizers)
	}
	if got := f.reasons(); !reflect.DeepEqual(got, []string{"Completed"}) {
		t.Errorf("events %v", got)
	}
}

func TestSync_FinalizerRemovalFailureKeepsThePodUncounted(t *testing.T) {
	f := newFixture(t, started(newJob(1, 1)), newPod("a", corev1.PodSucceeded))
	f.client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("boom"))
	})
	if err := f.sync(); err == nil {
		t.Fatal("sync succeeded")
	}
	job := f.stored()
	if !reflect.DeepEqual(job.Status.UncountedTerminatedPods.Succeeded, []types.UID{"uid-a"}) || job.Status.Succeeded != 0 || conditionOf(job, batchv1.JobComplete) != nil {
		t.Fatalf("status %+v", job.Status)
	}

	// The pod is gone meanwhile (its finalizer removed by someone): it is
	// counted from the uncounted list, once.
	f.client.ReactionChain = f.client.ReactionChain[1:]
	if err := f.pods.Delete(newPod("a", corev1.PodSucceeded)); err != nil {
		t.Fatal(err)
	}
	f.reset()
	f.mustSync()
	job = f.stored()
	if job.Status.Succeeded != 1 || len(job.Status.UncountedTerminatedPods.Succeeded) != 0 || conditionOf(job, batchv1.JobComplete) == nil {
		t.Fatalf("status %+v", job.Status)
	}
}

func TestSync_PodWhoseFinalizerIsGoingIsNotCountedAgain(t *testing.T) {
	// The cache still shows the finalizer the previous sync removed.
	job := started(newJob(2, 3))
	job.Status.Succeeded = 1
	f := newFixture(t, job, newPod("a", corev1.PodSucceeded), newPod("b", corev1.PodRunning))
	f.c.expectations.expectFinalizersRemoved("ns/j", []types.UID{"uid-a"})
	f.mustSync()
	if got := f.stored().Status; got.Succeeded != 1 || len(got.UncountedTerminatedPods.Succeeded) != 0 {
		t.Errorf("status %+v", got)
	}
	for _, c := range f.calls() {
		if c == "patch pods a" {
			t.Error("removed the finalizer again")
		}
	}
}

func TestSync_IndexedSuccessesGoStraightToCompletedIndexes(t *testing.T) {
	job := started(indexedJob(4, 6))
	job.Status.CompletedIndexes = "0"
	job.Status.Succeeded = 1
	f := newFixture(t, job,
		newPod("a", corev1.PodSucceeded, index(1)),
		newPod("b", corev1.PodSucceeded, index(2)),
		newPod("c", corev1.PodSucceeded, index(4)),
		newPod("d", corev1.PodRunning, index(3)))
	f.mustSync()
	writes := f.statusWrites()
	if len(writes) == 0 || writes[0].CompletedIndexes != "0-2,4" || writes[0].Succeeded != 4 || len(writes[0].UncountedTerminatedPods.Succeeded) != 0 {
		t.Fatalf("first write %+v", writes)
	}
	if got := f.stored().Status; got.CompletedIndexes != "0-2,4" || got.Succeeded != 4 {
		t.Errorf("status %+v", got)
	}
}

func TestIndexSet(t *testing.T) {
	cases := []struct {
		in          string
		completions int
		add         []int
		want        string
		total       int
	}{
		{in: "", completions: 5, add: []int{3, 1, 2}, want: "1-3", total: 3},
		{in: "1", completions: 5, add: []int{2}, want: "1,2", total: 2},
		{in: "0,2-3", completions: 10, add: []int{1, 7}, want: "0-3,7", total: 5},
		{in: "0-4,8", completions: 6, want: "0-4", total: 5},
		{in: "x,1,3-y,5", completions: 6, want: "1,5", total: 2},
		{in: "5,1", completions: 6, want: "1,5", total: 2},
	}
	for _, tc := range cases {
		s := parseIndexSet(tc.in, tc.completions).with(tc.add...)
		if s.String() != tc.want || s.total() != tc.total {
			t.Errorf("%q + %v = %q (%d), want %q (%d)", tc.in, tc.add, s, s.total(), tc.want, tc.total)
		}
	}
	s := parseIndexSet("1-3,6", 10)
	for ix, want := range map[int]bool{0: false, 1: true, 3: true, 4: false, 6: true, 7: false} {
		if s.has(ix) != want {
			t.Errorf("has(%d) = %v", ix, !want)
		}
	}
	if got := s.firstMissing(4, 10); !reflect.DeepEqual(got, []int{0, 4, 5, 7}) {
		t.Errorf("firstMissing = %v", got)
	}
	if got := s.firstMissing(4, 5); !reflect.DeepEqual(got, []int{0, 4}) {
		t.Errorf("firstMissing below 5 = %v", got)
	}
}

func TestSync_FailedPodsAreReplacedAfterExponentialBackoff(t *testing.T) {
	job := started(newJob(1, 1))
	f := newFixture(t, job, newPod("a", corev1.PodFailed, finishedAt(t0, 1)))
	f.clock.SetTime(t0.Add(3 * time.Second))
	f.mustSync()
	if n := len(f.createdPods()); n != 0 {
		t.Fatalf("replaced the pod %d times within the first 10s", n)
	}
	if got := f.stored().Status; got.Failed != 1 {
		t.Fatalf("status %+v", got)
	}
	if n := f.c.queue.Len(); n != 0 {
		t.Fatalf("queue holds %d keys before the backoff ends", n)
	}
	f.clock.Step(7 * time.Second)
	if !waitFor(func() bool { return f.c.queue.Len() == 1 }) {
		t.Fatal("no sync scheduled for the end of the backoff")
	}

	// The informer shows the pod gone (its finalizer removed) and the
	// count written.
	if err := f.pods.Delete(newPod("a", corev1.PodFailed)); err != nil {
		t.Fatal(err)
	}
	f.mustSync()
	if n := len(f.createdPods()); n != 1 {
		t.Fatalf("created %d replacements after 10s", n)
	}
}

func TestBackoffRemaining(t *testing.T) {
	cases := []struct {
		failures int32
		elapsed  time.Duration
		want     time.Duration
	}{
		{0, 0, 0},
		{1, 0, 10 * time.Second},
		{1, 4 * time.Second, 6 * time.Second},
		{2, 0, 20 * time.Second},
		{3, 0, 40 * time.Second},
		{6, 0, 320 * time.Second},
		{7, 0, 10 * time.Minute},
		{30, time.Minute, 9 * time.Minute},
		{2, time.Hour, 0},
	}
	for _, tc := range cases {
		if got := backoffRemaining(tc.failures, t0, t0.Add(tc.elapsed)); got != tc.want {
			t.Errorf("%d failures, %v ago: %v, want %v", tc.failures, tc.elapsed, got, tc.want)
		}
	}
}

func TestBackoffRecord_SuccessResetsTheCount(t *testing.T) {
	r := backoffRecord{failures: 3, lastFailure: t0}
	failed := func(s int) *corev1.Pod {
		return newPod("f", corev1.PodFailed, finishedAt(t0.Add(time.Duration(s)*time.Second), 1))
	}
	succeeded := func(s int) *corev1.Pod {
		return newPod("s", corev1.PodSucceeded, finishedAt(t0.Add(time.Duration(s)*time.Second), 0))
	}
	if got := r.next(nil, []*corev1.Pod{failed(5), failed(2)}); got.failures != 5 || !got.lastFailure.Equal(t0.Add(5*time.Second)) {
		t.Errorf("two more failures: %+v", got)
	}
	if got := r.next([]*corev1.Pod{succeeded(4)}, []*corev1.Pod{failed(2), failed(6), failed(9)}); got.failures != 2 || !got.lastFailure.Equal(t0.Add(9*time.Second)) {
		t.Errorf("failures after a success: %+v", got)
	}
	if got := r.next([]*corev1.Pod{succeeded(4)}, nil); got.failures != 0 {
		t.Errorf("a success: %+v", got)
	}
}

func TestFinishTime(t *testing.T) {
	readyFalse := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0.Add(2 * time.Second))}}
	}
	sidecar := func(p *corev1.Pod) {
		always := corev1.ContainerRestartPolicyAlways
		p.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: &always}}
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "side", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(t0.Add(9 * time.Second))}}}}
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want time.Time
	}{
		{"containers' finish", newPod("a", corev1.PodFailed, finishedAt(t0.Add(5*time.Second), 1), readyFalse), t0.Add(5 * time.Second)},
		{"a sidecar's finish", newPod("a", corev1.PodFailed, finishedAt(t0.Add(5*time.Second), 1), sidecar), t0.Add(9 * time.Second)},
		{"ready false", newPod("a", corev1.PodFailed, readyFalse), t0.Add(2 * time.Second)},
		{"deletion less grace", newPod("a", corev1.PodFailed, func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: t0.Add(40 * time.Second)}
			p.DeletionGracePeriodSeconds = ptrTo(int64(30))
		}), t0.Add(10 * time.Second)},
		{"creation", newPod("a", corev1.PodFailed), t0},
	}
	for _, tc := range cases {
		if got := finishTime(tc.pod); !got.Equal(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSync_BackoffLimitExceededFailsTheJob(t *testing.T) {
	job := started(newJob(2, 5))
	job.Spec.BackoffLimit = ptrTo(int32(1))
	job.Status.Failed = 1
	f := newFixture(t, job, newPod("a", corev1.PodFailed, finishedAt(t0, 1)), newPod("b", corev1.PodRunning, ready))
	f.mustSync()

	calls := f.calls()
	if count(calls, "delete pods b") != 1 || count(calls, "create") != 0 {
		t.Fatalf("calls %v: the running pod must be deleted, none created", calls)
	}
	final := f.stored()
	cond := conditionOf(final, batchv1.JobFailed)
	if cond == nil || cond.Reason != "BackoffLimitExceeded" || cond.Message != "Job has reached the specified backoff limit" {
		t.Fatalf("conditions %+v", final.Status.Conditions)
	}
	// The running pod is counted failed too.
	if final.Status.Failed != 3 || final.Status.Active != 0 || final.Status.CompletionTime != nil {
		t.Errorf("status %+v", final.Status)
	}
	if got := f.events(); len(got) != 2 || got[1] != "Warning BackoffLimitExceeded Job has reached the specified backoff limit" {
		t.Errorf("events %v", got)
	}
}

func TestSync_OnFailureRestartsCountAgainstTheBackoffLimit(t *testing.T) {
	restarts := func(n int32) podOpt {
		return func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: n}}
		}
	}
	for _, tc := range []struct {
		limit, restarts int32
		fail            bool
	}{{2, 1, false}, {2, 2, true}, {0, 1, true}, {0, 0, false}} {
		job := started(newJob(1, 1))
		job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		job.Spec.BackoffLimit = ptrTo(tc.limit)
		f := newFixture(t, job, newPod("a", corev1.PodRunning, restarts(tc.restarts)))
		f.mustSync()
		if failed := conditionOf(f.stored(), batchv1.JobFailed) != nil; failed != tc.fail {
			t.Errorf("limit %d, %d restarts: failed %v", tc.limit, tc.restarts, failed)
		}
	}
}

func TestSync_ActiveDeadline(t *testing.T) {
	job := started(newJob(1, 1))
	job.Spec.ActiveDeadlineSeconds = ptrTo(int64(100))
	f := newFixture(t, job, newPod("a", corev1.PodRunning))
	f.clock.SetTime(t0.Add(40 * time.Second))
	f.mustSync()
	if conditionOf(f.stored(), batchv1.JobFailed) != nil {
		t.Fatal("failed before the deadline")
	}
	f.clock.Step(59 * time.Second)
	if f.c.queue.Len() != 0 {
		t.Fatal("synced before the deadline")
	}
	f.clock.Step(time.Second)
	if !waitFor(func() bool { return f.c.queue.Len() == 1 }) {
		t.Fatal("no sync at the deadline")
	}
	f.mustSync()
	final := f.stored()
	cond := conditionOf(final, batchv1.JobFailed)
	if cond == nil || cond.Reason != "DeadlineExceeded" || cond.Message != "Job was active longer than specified deadline" || final.Status.Failed != 1 {
		t.Fatalf("status %+v", final.Status)
	}
	if got := f.reasons(); !reflect.DeepEqual(got, []string{"SuccessfulDelete", "DeadlineExceeded"}) {
		t.Errorf("events %v", got)
	}
}

func TestSync_SuspendDeletesPodsAndResumeRestartsTheClock(t *testing.T) {
	job := started(newJob(2, 4))
	job.Spec.Suspend = ptrTo(true)
	f := newFixture(t, job, newPod("a", corev1.PodRunning, ready), newPod("b", corev1.PodPending))
	f.mustSync()
	calls := f.calls()
	if count(calls, "patch pods") != 2 || count(calls, "delete pods") != 2 || count(calls, "create") != 0 {
		t.Fatalf("calls %v", calls)
	}
	suspendedJob := f.stored()
	cond := conditionOf(suspendedJob, batchv1.JobSuspended)
	if cond == nil || cond.Status != corev1.ConditionTrue || cond.Reason != "JobSuspended" || cond.Message != "Job suspended" ||
		suspendedJob.Status.Active != 0 || suspendedJob.Status.Failed != 0 {
		t.Fatalf("status %+v", suspendedJob.Status)
	}
	if got := f.reasons(); count(got, "Suspended") != 1 {
		t.Errorf("events %v", got)
	}

	// Resumed, with the pods gone.
	for _, name := range []string{"a", "b"} {
		if err := f.pods.Delete(newPod(name, corev1.PodRunning)); err != nil {
			t.Fatal(err)
		}
	}
	resumed := suspendedJob.DeepCopy()
	resumed.Spec.Suspend = ptrTo(false)
	resumed.Generation++
	if err := f.client.Tracker().Update(jobsGVR, resumed, "ns"); err != nil {
		t.Fatal(err)
	}
	f.cache(resumed)
	f.clock.Step(time.Hour)
	f.reset()
	f.mustSync()
	final := f.stored()
	cond = conditionOf(final, batchv1.JobSuspended)
	if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != "JobResumed" || cond.Message != "Job resumed" {
		t.Fatalf("conditions %+v", final.Status.Conditions)
	}
	if !final.Status.StartTime.Time.Equal(f.clock.Now()) || final.Status.Active != 2 {
		t.Errorf("status %+v", final.Status)
	}
	if got := f.reasons(); count(got, "Resumed") != 1 || count(got, "SuccessfulCreate") != 2 {
		t.Errorf("events %v", got)
	}
}

func TestSync_JobCreatedSuspendedHasNoStartTime(t *testing.T) {
	job := newJob(1, 1)
	job.Spec.Suspend = ptrTo(true)
	f := newFixture(t, job)
	f.mustSync()
	got := f.stored()
	if got.Status.StartTime != nil || conditionOf(got, batchv1.JobSuspended) == nil || len(f.createdPods()) != 0 {
		t.Errorf("status %+v", got.Status)
	}
}

func waitFor(cond func() bool) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

func TestPodsToRemove_CheapestFirst(t *testing.T) {
	scheduled := func(p *corev1.Pod) { p.Spec.NodeName = "node" }
	readyAt := func(s int) podOpt {
		return func(p *corev1.Pod) {
			p.Spec.NodeName = "node"
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(time.Duration(s) * time.Second))}}
		}
	}
	restarted := func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: 3}}
	}
	newer := func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(time.Hour)) }
	pods := []*corev1.Pod{
		newPod("ready-long", corev1.PodRunning, readyAt(1)),
		newPod("ready-recently", corev1.PodRunning, readyAt(9)),
		newPod("running", corev1.PodRunning, scheduled),
		newPod("running-restarted", corev1.PodRunning, scheduled, restarted),
		newPod("pending-scheduled", corev1.PodPending, scheduled),
		newPod("unscheduled", corev1.PodPending),
		newPod("unscheduled-newer", corev1.PodPending, newer),
	}
	var names []string
	for _, p := range podsToRemove(newJob(1, 1), pods, len(pods)) {
		names = append(names, p.Name)
	}
	want := []string{"unscheduled-newer", "unscheduled", "pending-scheduled", "running-restarted", "running", "ready-recently", "ready-long"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("order %v, want %v", names, want)
	}
}

func TestSync_RunningPodsStayActiveDuringBackoff(t *testing.T) {
	f := newFixture(t, started(newJob(2, 4)), newPod("a", corev1.PodFailed, finishedAt(t0, 1)), newPod("b", corev1.PodRunning, ready))
	f.clock.SetTime(t0.Add(time.Second))
	f.mustSync()
	got := f.stored().Status
	if len(f.createdPods()) != 0 || got.Active != 1 || *got.Ready != 1 || got.Failed != 1 {
		t.Errorf("created %d, status %+v", len(f.createdPods()), got)
	}
}
