package cronjob

import (
	"context"
	"errors"
	"fmt"
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
	"k8s.io/client-go/kubernetes/fake"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func newCronJob(schedule string, created time.Time) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "cj", Namespace: "ns", UID: "cj-uid", CreationTimestamp: metav1.NewTime(created)},
		Spec: batchv1.CronJobSpec{
			Schedule:          schedule,
			ConcurrencyPolicy: batchv1.AllowConcurrent,
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"note": "y"}},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
				}}},
			},
		},
	}
}

func ownedJob(name string, uid types.UID, created time.Time, cond batchv1.JobConditionType) *batchv1.Job {
	yes := true
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "ns", UID: uid, CreationTimestamp: metav1.NewTime(created),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: "cj", UID: "cj-uid", Controller: &yes}},
	}}
	start := metav1.NewTime(created)
	j.Status.StartTime = &start
	if cond != "" {
		done := metav1.NewTime(created.Add(time.Minute))
		j.Status.CompletionTime = &done
		j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue}}
	}
	return j
}

type result struct {
	created []string
	deleted []string
	events  []string
	requeue *time.Duration
	cj      *batchv1.CronJob
}

func run(t *testing.T, cj *batchv1.CronJob, now time.Time, jobs ...*batchv1.Job) result {
	t.Helper()
	return runAgainst(t, cj, cj, now, jobs...)
}

// runAgainst syncs cj, as the informer has it, against a server that holds
// live.
func runAgainst(t *testing.T, cj, live *batchv1.CronJob, now time.Time, jobs ...*batchv1.Job) result {
	t.Helper()
	objs := []runtime.Object{live}
	for _, j := range jobs {
		objs = append(objs, j)
	}
	client := fake.NewSimpleClientset(objs...)
	rec := record.NewFakeRecorder(100)
	c := &Controller{client: client, recorder: rec, clock: clocktesting.NewFakePassiveClock(now), local: time.UTC}
	cj = cj.DeepCopy()
	c.cleanupFinishedJobs(context.Background(), cj, jobs)
	requeue, _, err := c.syncCronJob(context.Background(), cj, jobs)
	if err != nil {
		t.Fatal(err)
	}
	var r result
	r.requeue, r.cj = requeue, cj
	for _, a := range client.Actions() {
		switch a.GetVerb() {
		case "create":
			r.created = append(r.created, a.(interface{ GetObject() runtime.Object }).GetObject().(*batchv1.Job).Name)
		case "delete":
			r.deleted = append(r.deleted, a.(interface{ GetName() string }).GetName())
		}
	}
	close(rec.Events)
	for e := range rec.Events {
		r.events = append(r.events, strings.SplitN(e, " ", 3)[1])
	}
	return r
}

func TestSync_ScheduleRules(t *testing.T) {
	created := at("2026-11-23T10:00:30Z")
	minutes := func(s string) string { return fmt.Sprintf("cj-%d", at(s).Unix()/60) }
	tz := func(name string) *string { return &name }
	deadline := func(s int64) *int64 { return &s }
	cases := []struct {
		name    string
		mutate  func(*batchv1.CronJob)
		now     time.Time
		jobs    []*batchv1.Job
		created []string
		deleted []string
		events  []string
		requeue time.Duration
	}{
		{name: "no tick yet: wait for the next one", now: at("2026-11-23T10:00:40Z"),
			requeue: 20*time.Second + nextTickMargin},
		{name: "a tick passed: its Job", now: at("2026-11-23T10:01:02Z"),
			created: []string{minutes("2026-11-23T10:01:00Z")}, events: []string{"SuccessfulCreate"}, requeue: 58*time.Second + nextTickMargin},
		{name: "several missed: only the most recent", now: at("2026-11-23T10:05:10Z"),
			created: []string{minutes("2026-11-23T10:05:00Z")}, events: []string{"SuccessfulCreate"}, requeue: 50*time.Second + nextTickMargin},
		{name: "more than 100 missed: warn, run the latest", now: at("2026-11-23T13:00:10Z"),
			created: []string{minutes("2026-11-23T13:00:00Z")}, events: []string{"TooManyMissedTimes", "SuccessfulCreate"}, requeue: 50*time.Second + nextTickMargin},
		{name: "past the starting deadline: skipped", mutate: func(c *batchv1.CronJob) { c.Spec.Schedule = "0 * * * *"; c.Spec.StartingDeadlineSeconds = deadline(30) },
			now: at("2026-11-23T11:00:45Z"), events: []string{"MissSchedule"}, requeue: 59*time.Minute + 15*time.Second + nextTickMargin},
		{name: "within the starting deadline: runs", mutate: func(c *batchv1.CronJob) { c.Spec.Schedule = "0 * * * *"; c.Spec.StartingDeadlineSeconds = deadline(60) },
			now: at("2026-11-23T11:00:45Z"), created: []string{minutes("2026-11-23T11:00:00Z")}, events: []string{"SuccessfulCreate"}, requeue: 59*time.Minute + 15*time.Second + nextTickMargin},
		{name: "suspended: nothing", mutate: func(c *batchv1.CronJob) { s := true; c.Spec.Suspend = &s }, now: at("2026-11-23T10:01:02Z")},
		{name: "time zone: 09:00 in Tokyo is 00:00 UTC", mutate: func(c *batchv1.CronJob) { c.Spec.Schedule = "0 9 * * *"; c.Spec.TimeZone = tz("Asia/Tokyo") },
			now: at("2026-11-24T00:00:05Z"), created: []string{minutes("2026-11-24T00:00:00Z")}, events: []string{"SuccessfulCreate"}, requeue: 24*time.Hour - 5*time.Second + nextTickMargin},
		// 01:30 happens twice in New York that night; robfig/cron, as kube
		// uses it, settles on the second.
		{name: "DST: 01:30 New York on the fall-back day runs once", mutate: func(c *batchv1.CronJob) {
			c.Spec.Schedule = "30 1 * * *"
			c.Spec.TimeZone = tz("America/New_York")
			c.CreationTimestamp = metav1.NewTime(at("2026-10-31T12:00:00Z"))
		}, now: at("2026-11-01T06:40:00Z"), created: []string{minutes("2026-11-01T06:30:00Z")}, events: []string{"SuccessfulCreate"},
			requeue: at("2026-11-02T06:30:00Z").Sub(at("2026-11-01T06:40:00Z")) + nextTickMargin},
		{name: "unknown time zone at run time: warn, no Job", mutate: func(c *batchv1.CronJob) { c.Spec.TimeZone = tz("Nowhere/Land") },
			now: at("2026-11-23T10:01:02Z"), events: []string{"UnknownTimeZone"}},
		{name: "Forbid with an active Job: skipped", mutate: func(c *batchv1.CronJob) {
			c.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent
			c.Status.Active = []corev1.ObjectReference{{Name: "running", Namespace: "ns", UID: "run-uid"}}
		}, jobs: []*batchv1.Job{ownedJob("running", "run-uid", created, "")},
			now: at("2026-11-23T10:01:02Z"), events: []string{"JobAlreadyActive"}, requeue: 58*time.Second + nextTickMargin},
		{name: "Replace with an active Job: delete it, then create", mutate: func(c *batchv1.CronJob) {
			c.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent
			c.Status.Active = []corev1.ObjectReference{{Name: "running", Namespace: "ns", UID: "run-uid"}}
		}, jobs: []*batchv1.Job{ownedJob("running", "run-uid", created, "")},
			now: at("2026-11-23T10:01:02Z"), deleted: []string{"running"}, created: []string{minutes("2026-11-23T10:01:00Z")},
			events: []string{"SuccessfulDelete", "SuccessfulCreate"}, requeue: 58*time.Second + nextTickMargin},
		{name: "Allow with an active Job: create another", mutate: func(c *batchv1.CronJob) {
			c.Status.Active = []corev1.ObjectReference{{Name: "running", Namespace: "ns", UID: "run-uid"}}
		}, jobs: []*batchv1.Job{ownedJob("running", "run-uid", created, "")},
			now: at("2026-11-23T10:01:02Z"), created: []string{minutes("2026-11-23T10:01:00Z")}, events: []string{"SuccessfulCreate"}, requeue: 58*time.Second + nextTickMargin},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cj := newCronJob("* * * * *", created)
			if tc.mutate != nil {
				tc.mutate(cj)
			}
			r := run(t, cj, tc.now, tc.jobs...)
			if fmt.Sprint(r.created) != fmt.Sprint(tc.created) || fmt.Sprint(r.deleted) != fmt.Sprint(tc.deleted) || fmt.Sprint(r.events) != fmt.Sprint(tc.events) {
				t.Fatalf("created %v deleted %v events %v; want %v %v %v", r.created, r.deleted, r.events, tc.created, tc.deleted, tc.events)
			}
			var got time.Duration
			if r.requeue != nil {
				got = *r.requeue
			}
			if got != tc.requeue {
				t.Fatalf("requeue after %s, want %s", got, tc.requeue)
			}
			if len(tc.created) == 1 && (r.cj.Status.LastScheduleTime == nil || len(r.cj.Status.Active) == 0) {
				t.Fatalf("status not updated: %+v", r.cj.Status)
			}
		})
	}
}

func TestJobFor_NamesOwnerLabelsAndScheduledAnnotation(t *testing.T) {
	cj := newCronJob("* * * * *", at("2026-11-23T10:00:00Z"))
	scheduled := at("2026-11-23T10:01:00Z")
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	j := jobFor(cj, scheduled, tokyo, jobName(cj, scheduled))
	if j.Name != fmt.Sprintf("cj-%d", scheduled.Unix()/60) || j.Labels["app"] != "x" || j.Annotations["note"] != "y" {
		t.Fatalf("job %+v", j.ObjectMeta)
	}
	if j.Annotations[ScheduledTimestampAnnotation] != "2026-11-23T19:01:00+09:00" {
		t.Fatalf("scheduled annotation %q", j.Annotations[ScheduledTimestampAnnotation])
	}
	ref := metav1.GetControllerOf(j)
	if ref == nil || ref.UID != "cj-uid" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Fatalf("owner %+v", j.OwnerReferences)
	}
}

func TestSync_CompletedJobLeavesActiveAndSetsLastSuccessfulTime(t *testing.T) {
	created := at("2026-11-23T10:00:30Z")
	cj := newCronJob("0 0 1 1 *", created)
	cj.Status.Active = []corev1.ObjectReference{{Name: "done", Namespace: "ns", UID: "done-uid"}}
	r := run(t, cj, at("2026-11-23T10:10:00Z"), ownedJob("done", "done-uid", created, batchv1.JobComplete))
	if len(r.cj.Status.Active) != 0 || r.cj.Status.LastSuccessfulTime == nil || fmt.Sprint(r.events) != "[SawCompletedJob]" {
		t.Fatalf("status %+v events %v", r.cj.Status, r.events)
	}
}

func TestCleanup_DeletesOldestBeyondHistoryLimits(t *testing.T) {
	created := at("2026-11-23T10:00:00Z")
	cj := newCronJob("0 0 1 1 *", created)
	three, one := int32(3), int32(1)
	cj.Spec.SuccessfulJobsHistoryLimit, cj.Spec.FailedJobsHistoryLimit = &three, &one
	var jobs []*batchv1.Job
	for i := 0; i < 5; i++ {
		jobs = append(jobs, ownedJob(fmt.Sprintf("ok-%d", i), types.UID(fmt.Sprintf("ok-%d", i)), created.Add(time.Duration(i)*time.Minute), batchv1.JobComplete))
	}
	for i := 0; i < 2; i++ {
		jobs = append(jobs, ownedJob(fmt.Sprintf("bad-%d", i), types.UID(fmt.Sprintf("bad-%d", i)), created.Add(time.Duration(i)*time.Minute), batchv1.JobFailed))
	}
	r := run(t, cj, at("2026-11-23T10:30:00Z"), jobs...)
	if fmt.Sprint(r.deleted) != "[ok-0 ok-1 bad-0]" {
		t.Fatalf("deleted %v, want the two oldest successful and the oldest failed", r.deleted)
	}
}

// scheduledJob is the unfinished Job the controller creates for minute.
func scheduledJob(cj *batchv1.CronJob, minute time.Time, uid types.UID) *batchv1.Job {
	j := jobFor(cj, minute, time.UTC, jobName(cj, minute))
	j.UID = uid
	j.CreationTimestamp = metav1.NewTime(minute)
	return j
}

func TestSync_UnexpectedJobOnlyWhenTheLiveCronJobLacksIt(t *testing.T) {
	created := at("2026-11-23T10:00:30Z")
	tick := at("2026-11-23T10:01:00Z")
	base := newCronJob("* * * * *", created)
	// Suspended, so that the sync starts no Job of its own.
	suspend := true
	base.Spec.Suspend = &suspend
	mine := scheduledJob(base, tick, "mine-uid")
	stranger := ownedJob("by-hand", "hand-uid", created, "")
	unannotated := scheduledJob(base, tick, "mine-uid")
	delete(unannotated.Annotations, ScheduledTimestampAnnotation)
	cases := []struct {
		name string
		// liveActive is the Job the server's copy lists, if any; the
		// informer's copy lists none.
		liveActive     *batchv1.Job
		job            *batchv1.Job
		events         []string
		active         bool
		lastScheduleAt *time.Time
	}{
		{name: "the live copy lists it: that copy is used, nothing reported", liveActive: mine, job: mine, active: true, lastScheduleAt: &tick},
		{name: "created by the controller for a schedule time: put back", job: mine, active: true, lastScheduleAt: &tick},
		{name: "named by hand: reported", job: stranger, events: []string{"UnexpectedJob"}},
		{name: "named like ours without the scheduled time: reported", job: unannotated, events: []string{"UnexpectedJob"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cached := base.DeepCopy()
			live := cached.DeepCopy()
			if tc.liveActive != nil {
				live.Status.Active = []corev1.ObjectReference{jobRef(tc.liveActive)}
				live.Status.LastScheduleTime = &metav1.Time{Time: tick}
			}
			r := runAgainst(t, cached, live, at("2026-11-23T10:01:30Z"), tc.job)
			if fmt.Sprint(r.events) != fmt.Sprint(tc.events) || len(r.created) != 0 {
				t.Fatalf("events %v, created %v; want events %v", r.events, r.created, tc.events)
			}
			if inActive(r.cj, tc.job.UID) != tc.active {
				t.Fatalf("status.active %v, want the Job listed: %v", r.cj.Status.Active, tc.active)
			}
			if got := r.cj.Status.LastScheduleTime; (got == nil) != (tc.lastScheduleAt == nil) || (got != nil && !got.Time.Equal(*tc.lastScheduleAt)) {
				t.Fatalf("lastScheduleTime %v, want %v", got, tc.lastScheduleAt)
			}
		})
	}
}

// A Forbid CronJob whose running Job failed: the sync drops that Job and
// creates the next, then its status write meets a 409 because the
// informer's copy of the CronJob was stale. The next sync, with the
// informer still stale, must neither call the new Job unexpected nor lose
// it from status.active.
func TestSync_StatusConflictKeepsCreatedJobActive(t *testing.T) {
	created := at("2026-11-23T10:00:30Z")
	first, second := at("2026-11-23T10:01:00Z"), at("2026-11-23T10:02:00Z")
	cases := []struct {
		name string
		// conflicts is how many status writes of the first sync answer 409.
		conflicts    int
		firstSyncErr bool
		events       []string
	}{
		{name: "one conflict: the write is retried on the live copy", conflicts: 1,
			events: []string{"SawCompletedJob", "SuccessfulCreate"}},
		// The finished Job is seen again because its removal was lost too.
		{name: "every write conflicts: the next sync puts the Job back", conflicts: 1000, firstSyncErr: true,
			events: []string{"SawCompletedJob", "SuccessfulCreate", "SawCompletedJob"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cached := newCronJob("* * * * *", created)
			cached.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent
			failed := scheduledJob(cached, first, "failed-uid")
			failed.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}
			cached.Status.Active = []corev1.ObjectReference{jobRef(failed)}
			cached.Status.LastScheduleTime = &metav1.Time{Time: first}
			live := cached.DeepCopy()
			live.ResourceVersion = "2"

			client := fake.NewSimpleClientset(live, failed)
			conflicts := tc.conflicts
			client.PrependReactor("update", "cronjobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "status" || conflicts == 0 {
					return false, nil, nil
				}
				conflicts--
				return true, nil, apierrors.NewConflict(batchv1.Resource("cronjobs"), "cj", errors.New("the object has been modified; please apply your changes to the latest version and try again"))
			})
			cronJobs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			jobs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{controllerIndex: byControllerUID})
			if err := cronJobs.Add(cached); err != nil {
				t.Fatal(err)
			}
			if err := jobs.Add(failed); err != nil {
				t.Fatal(err)
			}
			rec := record.NewFakeRecorder(100)
			c := &Controller{client: client, cronJobs: batchlisters.NewCronJobLister(cronJobs), jobs: jobs,
				recorder: rec, clock: clocktesting.NewFakePassiveClock(second.Add(5 * time.Second)), local: time.UTC}

			// Like the controller, go on after an error: it requeues.
			_, firstErr := c.sync(context.Background(), "ns/cj")
			conflicts = 0
			// The Job informer sees the new Job; the CronJob informer is
			// still behind.
			next, err := client.BatchV1().Jobs("ns").Get(context.Background(), jobName(cached, second), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := jobs.Add(next); err != nil {
				t.Fatal(err)
			}
			if _, err := c.sync(context.Background(), "ns/cj"); err != nil {
				t.Fatalf("second sync: %v", err)
			}

			close(rec.Events)
			var events []string
			for e := range rec.Events {
				events = append(events, strings.SplitN(e, " ", 3)[1])
			}
			if fmt.Sprint(events) != fmt.Sprint(tc.events) {
				t.Fatalf("events %v, want %v", events, tc.events)
			}
			got, err := client.BatchV1().CronJobs("ns").Get(context.Background(), "cj", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Status.Active) != 1 || got.Status.Active[0].UID != next.UID {
				t.Fatalf("status.active %+v, want only %s", got.Status.Active, next.Name)
			}
			if got.Status.LastScheduleTime == nil || !got.Status.LastScheduleTime.Time.Equal(second) {
				t.Fatalf("lastScheduleTime %v, want %v", got.Status.LastScheduleTime, second)
			}
			creates := 0
			for _, a := range client.Actions() {
				if a.GetVerb() == "create" && a.GetResource().Resource == "jobs" {
					creates++
				}
			}
			if creates != 1 {
				t.Fatalf("%d Job creations, want 1", creates)
			}
			if (firstErr != nil) != tc.firstSyncErr {
				t.Fatalf("first sync: %v, want an error: %v", firstErr, tc.firstSyncErr)
			}
		})
	}
}

func TestCarryOver_AppliesTheSyncsChangesToTheLiveCopy(t *testing.T) {
	ref := func(uid types.UID) corev1.ObjectReference { return corev1.ObjectReference{Name: string(uid), UID: uid} }
	ts := func(s string) *metav1.Time { return &metav1.Time{Time: at(s)} }
	base := &batchv1.CronJob{Status: batchv1.CronJobStatus{Active: []corev1.ObjectReference{ref("a"), ref("b")}, LastScheduleTime: ts("2026-11-23T10:01:00Z")}}
	// The sync dropped a and added c.
	desired := &batchv1.CronJob{Status: batchv1.CronJobStatus{Active: []corev1.ObjectReference{ref("b"), ref("c")},
		LastScheduleTime: ts("2026-11-23T10:02:00Z"), LastSuccessfulTime: ts("2026-11-23T10:01:30Z")}}
	// Meanwhile the server's copy gained d and a later success.
	live := &batchv1.CronJob{Status: batchv1.CronJobStatus{Active: []corev1.ObjectReference{ref("a"), ref("b"), ref("d")},
		LastScheduleTime: ts("2026-11-23T10:01:00Z"), LastSuccessfulTime: ts("2026-11-23T10:01:45Z")}}
	got := carryOver(live, base, desired)
	var uids []types.UID
	for _, r := range got.Status.Active {
		uids = append(uids, r.UID)
	}
	if fmt.Sprint(uids) != "[b d c]" || !got.Status.LastScheduleTime.Equal(ts("2026-11-23T10:02:00Z")) || !got.Status.LastSuccessfulTime.Equal(ts("2026-11-23T10:01:45Z")) {
		t.Fatalf("carried over: active %v, lastScheduleTime %v, lastSuccessfulTime %v", uids, got.Status.LastScheduleTime, got.Status.LastSuccessfulTime)
	}
	if len(live.Status.Active) != 3 {
		t.Fatalf("the live copy was modified: %v", live.Status.Active)
	}
}

// A sync that fails part-way keeps what it did: here the running Job is
// deleted to replace it, then the new Job is refused. status.active must
// not keep naming the deleted Job.
func TestSync_FailurePartWayStillWritesTheStatus(t *testing.T) {
	created := at("2026-11-23T10:00:30Z")
	first, second := at("2026-11-23T10:01:00Z"), at("2026-11-23T10:02:00Z")
	cj := newCronJob("* * * * *", created)
	cj.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent
	running := scheduledJob(cj, first, "running-uid")
	cj.Status.Active = []corev1.ObjectReference{jobRef(running)}
	cj.Status.LastScheduleTime = &metav1.Time{Time: first}

	client := fake.NewSimpleClientset(cj, running)
	client.PrependReactor("create", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is away")
	})
	cronJobs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	jobs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{controllerIndex: byControllerUID})
	if err := cronJobs.Add(cj); err != nil {
		t.Fatal(err)
	}
	if err := jobs.Add(running); err != nil {
		t.Fatal(err)
	}
	c := &Controller{client: client, cronJobs: batchlisters.NewCronJobLister(cronJobs), jobs: jobs,
		recorder: record.NewFakeRecorder(100), clock: clocktesting.NewFakePassiveClock(second.Add(5 * time.Second)), local: time.UTC}

	if _, err := c.sync(context.Background(), "ns/cj"); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("sync: %v, want the refused create's error (to requeue)", err)
	}
	got, err := client.BatchV1().CronJobs("ns").Get(context.Background(), "cj", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Active) != 0 {
		t.Fatalf("status.active %+v still names the deleted Job", got.Status.Active)
	}
}

// observed keeps the values observed.
type observed []float64

func (o *observed) Observe(v float64) { *o = append(*o, v) }

func TestSync_ObservesTheCreationSkewOfEachJobCreated(t *testing.T) {
	created := at("2026-11-23T10:00:30Z")
	tick := at("2026-11-23T10:01:00Z")
	cj := newCronJob("* * * * *", created)
	cases := []struct {
		name     string
		now      time.Time
		existing []runtime.Object
		want     string
	}{
		{name: "created 2.5s after its tick", now: tick.Add(2500 * time.Millisecond), want: "[2.5]"},
		{name: "no tick due: nothing", now: at("2026-11-23T10:00:40Z"), want: "[]"},
		{name: "created by an earlier run: nothing", now: tick.Add(5 * time.Second),
			existing: []runtime.Object{scheduledJob(cj, tick, "earlier-uid")}, want: "[]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			skew := &observed{}
			client := fake.NewSimpleClientset(append([]runtime.Object{cj}, tc.existing...)...)
			c := &Controller{client: client, recorder: record.NewFakeRecorder(100), clock: clocktesting.NewFakePassiveClock(tc.now), skew: skew, local: time.UTC}
			if _, _, err := c.syncCronJob(context.Background(), cj.DeepCopy(), nil); err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(*skew); got != tc.want {
				t.Fatalf("observed %s, want %s", got, tc.want)
			}
		})
	}
}

func TestByControllerUID_IndexesJobsByTheirControllerOnly(t *testing.T) {
	yes, no := true, false
	ref := func(uid types.UID, controller *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "batch/v1", Kind: "CronJob", Name: "cj", UID: uid, Controller: controller}
	}
	for _, tc := range []struct {
		name string
		refs []metav1.OwnerReference
		want []string
	}{
		{"controlled", []metav1.OwnerReference{ref("cj-uid", &yes)}, []string{"cj-uid"}},
		{"owned but not controlled", []metav1.OwnerReference{ref("cj-uid", &no)}, nil},
		{"controller among owners", []metav1.OwnerReference{ref("a", nil), ref("b", &yes)}, []string{"b"}},
		{"no owners", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := byControllerUID(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{OwnerReferences: tc.refs}})
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("byControllerUID = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// A sync finds its CronJob's Jobs through the controller index: a running
// Job in status.active holds back a Forbid CronJob.
func TestSync_FindsItsJobsThroughTheControllerIndex(t *testing.T) {
	created := at("2026-11-23T10:00:30Z")
	tick := at("2026-11-23T10:01:00Z")
	cj := newCronJob("* * * * *", created)
	cj.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent
	running := ownedJob("running", "running-uid", created, "")
	cj.Status.Active = []corev1.ObjectReference{jobRef(running)}
	client := fake.NewSimpleClientset(cj, running)
	cronJobs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	jobs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{controllerIndex: byControllerUID})
	if err := cronJobs.Add(cj); err != nil {
		t.Fatal(err)
	}
	if err := jobs.Add(running); err != nil {
		t.Fatal(err)
	}
	c := &Controller{client: client, cronJobs: batchlisters.NewCronJobLister(cronJobs), jobs: jobs,
		recorder: record.NewFakeRecorder(100), clock: clocktesting.NewFakePassiveClock(tick.Add(time.Second)), local: time.UTC}
	if _, err := c.sync(context.Background(), "ns/cj"); err != nil {
		t.Fatal(err)
	}
	list, err := client.BatchV1().Jobs("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("%d Jobs, want only the running one", len(list.Items))
	}
}

// Each finished Job is reported once, and in kube's order: the history
// limits go first, so a Job they delete gets SuccessfulDelete alone; a
// sync that follows the controller's own status write before the
// informer shows it does not report the Job again.
func TestSync_ReportsEachCompletedJobOnceInKubesOrder(t *testing.T) {
	created := at("2026-11-23T10:00:30Z")
	one := int32(1)
	cases := []struct {
		name   string
		limit  *int32
		jobs   []string
		syncs  int
		events []string
	}{
		{name: "a history limit deletes the older of two finished active Jobs", limit: &one, jobs: []string{"done-0", "done-1"}, syncs: 1,
			events: []string{"SuccessfulDelete", "SawCompletedJob"}},
		{name: "a second sync before the informer shows the status write", jobs: []string{"done-0"}, syncs: 2,
			events: []string{"SawCompletedJob"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cached := newCronJob("0 0 1 1 *", created)
			cached.ResourceVersion = "7"
			cached.Spec.SuccessfulJobsHistoryLimit = tc.limit
			objs := []runtime.Object{cached}
			jobs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{controllerIndex: byControllerUID})
			for i, name := range tc.jobs {
				j := ownedJob(name, types.UID(name), created.Add(time.Duration(i)*time.Minute), batchv1.JobComplete)
				cached.Status.Active = append(cached.Status.Active, jobRef(j))
				objs = append(objs, j)
				if err := jobs.Add(j); err != nil {
					t.Fatal(err)
				}
			}
			client := fake.NewSimpleClientset(objs...)
			cronJobs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			if err := cronJobs.Add(cached); err != nil {
				t.Fatal(err)
			}
			rec := record.NewFakeRecorder(100)
			c := &Controller{client: client, cronJobs: batchlisters.NewCronJobLister(cronJobs), jobs: jobs,
				recorder: rec, clock: clocktesting.NewFakePassiveClock(created.Add(time.Hour)), local: time.UTC}
			for i := 0; i < tc.syncs; i++ {
				if _, err := c.sync(context.Background(), "ns/cj"); err != nil {
					t.Fatalf("sync %d: %v", i, err)
				}
			}
			close(rec.Events)
			var events []string
			for e := range rec.Events {
				events = append(events, strings.SplitN(e, " ", 3)[1])
			}
			if fmt.Sprint(events) != fmt.Sprint(tc.events) {
				t.Fatalf("events %v, want %v", events, tc.events)
			}
			got, err := client.BatchV1().CronJobs("ns").Get(context.Background(), "cj", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Status.Active) != 0 {
				t.Fatalf("status.active %+v, want none", got.Status.Active)
			}
		})
	}
}
