package cronjob

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
)

type fakeClock struct{ t time.Time }

func (f fakeClock) Now() time.Time { return f.t }

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
	objs := []runtime.Object{cj}
	for _, j := range jobs {
		objs = append(objs, j)
	}
	client := fake.NewSimpleClientset(objs...)
	rec := record.NewFakeRecorder(100)
	c := &Controller{client: client, recorder: rec, clock: fakeClock{now}, local: time.UTC}
	cj = cj.DeepCopy()
	requeue, _, err := c.syncCronJob(context.Background(), cj, jobs)
	if err != nil {
		t.Fatal(err)
	}
	c.cleanupFinishedJobs(context.Background(), cj, jobs)
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
