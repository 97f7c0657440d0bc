package batch

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

func validCronJob() *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: batchv1.CronJobSpec{
			Schedule: "*/5 * * * *",
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Name: "hello"},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyOnFailure,
					Containers:    []corev1.Container{{Name: "hello", Image: "busybox", Command: []string{"echo", "hi"}}},
				}}},
			},
		},
	}
}

// kubeDefaultedSpec is the spec kube-apiserver v1.29 returns for
// `kubectl create cronjob hello --image=busybox --schedule='*/5 * * * *' -- echo hi`.
const kubeDefaultedSpec = `
concurrencyPolicy: Allow
failedJobsHistoryLimit: 1
jobTemplate:
  metadata:
    name: hello
  spec:
    template:
      spec:
        containers:
        - command: [echo, hi]
          image: busybox
          imagePullPolicy: Always
          name: hello
          resources: {}
          terminationMessagePath: /dev/termination-log
          terminationMessagePolicy: File
        dnsPolicy: ClusterFirst
        restartPolicy: OnFailure
        schedulerName: default-scheduler
        securityContext: {}
        terminationGracePeriodSeconds: 30
schedule: '*/5 * * * *'
successfulJobsHistoryLimit: 3
suspend: false
`

func TestCronJobDefault_MatchesKube(t *testing.T) {
	var want batchv1.CronJobSpec
	if err := yaml.UnmarshalStrict([]byte(kubeDefaultedSpec), &want); err != nil {
		t.Fatal(err)
	}
	cj := validCronJob()
	defaultCronJob(cj)
	if !equality.Semantic.DeepEqual(cj.Spec, want) {
		got, _ := yaml.Marshal(cj.Spec)
		t.Fatalf("defaulted spec:\n%s\nwant:\n%s", got, kubeDefaultedSpec)
	}
	again := cj.DeepCopy()
	defaultCronJob(again)
	if !equality.Semantic.DeepEqual(cj, again) {
		t.Fatal("defaulting twice changed the object")
	}
}

func errFields(errs field.ErrorList) string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field+": "+string(e.Type))
	}
	return strings.Join(out, "; ")
}

func TestCronJobValidate_Rules(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*batchv1.CronJob)
		want   string
	}{
		{"valid", func(*batchv1.CronJob) {}, ""},
		{"descriptor schedule", func(c *batchv1.CronJob) { c.Spec.Schedule = "@hourly" }, ""},
		{"unparseable schedule", func(c *batchv1.CronJob) { c.Spec.Schedule = "bogus" }, "spec.schedule: FieldValueInvalid"},
		{"empty schedule", func(c *batchv1.CronJob) { c.Spec.Schedule = "" }, "spec.schedule: FieldValueRequired"},
		{"TZ in schedule", func(c *batchv1.CronJob) { c.Spec.Schedule = "TZ=UTC 0 * * * *" }, "spec.schedule: FieldValueInvalid"},
		{"known time zone", func(c *batchv1.CronJob) { tz := "Europe/Berlin"; c.Spec.TimeZone = &tz }, ""},
		{"unknown time zone", func(c *batchv1.CronJob) { tz := "Mars/Olympus"; c.Spec.TimeZone = &tz }, "spec.timeZone: FieldValueInvalid"},
		{"Local time zone", func(c *batchv1.CronJob) { tz := "Local"; c.Spec.TimeZone = &tz }, "spec.timeZone: FieldValueInvalid"},
		{"negative deadline", func(c *batchv1.CronJob) { d := int64(-1); c.Spec.StartingDeadlineSeconds = &d }, "spec.startingDeadlineSeconds: FieldValueInvalid"},
		{"negative history", func(c *batchv1.CronJob) { n := int32(-1); c.Spec.SuccessfulJobsHistoryLimit = &n }, "spec.successfulJobsHistoryLimit: FieldValueInvalid"},
		{"bad policy", func(c *batchv1.CronJob) { c.Spec.ConcurrencyPolicy = "Sometimes" }, "spec.concurrencyPolicy: FieldValueNotSupported"},
		{"no containers", func(c *batchv1.CronJob) { c.Spec.JobTemplate.Spec.Template.Spec.Containers = nil }, "spec.jobTemplate.spec.template.spec.containers: FieldValueRequired"},
		{"container without image", func(c *batchv1.CronJob) { c.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image = "" }, "spec.jobTemplate.spec.template.spec.containers[0].image: FieldValueRequired"},
		{"restartPolicy Always", func(c *batchv1.CronJob) {
			c.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}, "spec.jobTemplate.spec.template.spec.restartPolicy: FieldValueRequired"},
		{"name of 53 characters", func(c *batchv1.CronJob) { c.Name = strings.Repeat("a", 53) }, "metadata.name: FieldValueInvalid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cj := validCronJob()
			tc.mutate(cj)
			defaultCronJob(cj)
			if got := errFields(cronJobStrategy{}.Validate(cj)); got != tc.want {
				t.Fatalf("errors %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCronJobUpdate_SpecChangeBumpsGenerationAndKeepsStatus(t *testing.T) {
	old := validCronJob()
	old.Generation = 1
	now := metav1.Now()
	old.Status.LastScheduleTime = &now
	cj := old.DeepCopy()
	cj.Status = batchv1.CronJobStatus{}
	cj.Spec.Schedule = "@daily"
	cronJobStrategy{}.PrepareForUpdate(cj, old)
	if cj.Generation != 2 || cj.Status.LastScheduleTime == nil {
		t.Fatalf("generation %d status %+v", cj.Generation, cj.Status)
	}
	same := old.DeepCopy()
	cronJobStrategy{}.PrepareForUpdate(same, old)
	if same.Generation != 1 {
		t.Fatalf("generation bumped without a spec change: %d", same.Generation)
	}
}

func TestJob_SelectorAndLabelsGeneratedFromUID(t *testing.T) {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", UID: "1234"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
		}}},
	}
	s := jobStrategy{}
	s.PrepareForCreate(job)
	defaultJob(job)
	if errs := s.Validate(job); len(errs) > 0 {
		t.Fatalf("invalid: %v", errs)
	}
	if job.Spec.Selector.MatchLabels[labelControllerUID] != "1234" || job.Spec.Template.Labels[labelJobName] != "j" || job.Spec.Template.Labels[legacyLabelControllerUID] != "1234" {
		t.Fatalf("selector %+v labels %+v", job.Spec.Selector, job.Spec.Template.Labels)
	}
	if *job.Spec.Parallelism != 1 || *job.Spec.Completions != 1 || *job.Spec.BackoffLimit != 6 ||
		*job.Spec.CompletionMode != batchv1.NonIndexedCompletion || *job.Spec.Suspend || *job.Spec.PodReplacementPolicy != batchv1.TerminatingOrFailed || *job.Spec.ManualSelector {
		t.Fatalf("defaults %+v", job.Spec)
	}
	changed := job.DeepCopy()
	changed.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}
	if got := errFields(s.ValidateUpdate(changed, job)); !strings.Contains(got, "spec.selector: FieldValueInvalid") {
		t.Fatalf("selector change allowed: %q", got)
	}
}

func TestJobStatus_ValidatedAsKube(t *testing.T) {
	i32 := func(n int32) *int32 { return &n }
	earlier, later := metav1.Unix(1000, 0), metav1.Unix(2000, 0)
	cases := []struct {
		name   string
		status batchv1.JobStatus
		want   []string
	}{
		{"counts of zero", batchv1.JobStatus{Ready: i32(0), Terminating: i32(0)}, nil},
		{"negative counts", batchv1.JobStatus{Active: -1, Succeeded: -2, Failed: -3, Ready: i32(-4), Terminating: i32(-5)}, []string{
			"status.active: Invalid value: -1: must be greater than or equal to 0",
			"status.succeeded: Invalid value: -2: must be greater than or equal to 0",
			"status.failed: Invalid value: -3: must be greater than or equal to 0",
			"status.ready: Invalid value: -4: must be greater than or equal to 0",
			"status.terminating: Invalid value: -5: must be greater than or equal to 0",
		}},
		{"empty and duplicate uncounted pods, across both lists", batchv1.JobStatus{UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{
			Succeeded: []types.UID{"", "a", "a"},
			Failed:    []types.UID{"a", "", "b", "b"},
		}}, []string{
			`status.uncountedTerminatedPods.succeeded[0]: Invalid value: "": must not be empty`,
			`status.uncountedTerminatedPods.succeeded[2]: Duplicate value: "a"`,
			`status.uncountedTerminatedPods.failed[0]: Duplicate value: "a"`,
			`status.uncountedTerminatedPods.failed[1]: Invalid value: "": must not be empty`,
			`status.uncountedTerminatedPods.failed[3]: Duplicate value: "b"`,
		}},
		// kube v1.29 checks neither the times, the indexes nor the conditions.
		{"completion before start, odd indexes and conditions", batchv1.JobStatus{
			StartTime: &later, CompletionTime: &earlier, CompletedIndexes: "garbage", FailedIndexes: strPtr("x"),
			Conditions: []batchv1.JobCondition{{Type: "", Status: "Bogus"}},
		}, nil},
	}
	status := jobResource().Subresources["status"]
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default"}}
			job := old.DeepCopy()
			job.Status = tc.status
			var got []string
			for _, e := range status.ValidateUpdate(job, old) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestCronJobStatus_AcceptedAsKube(t *testing.T) {
	old := validCronJob()
	cj := old.DeepCopy()
	future, past := metav1.Unix(4000000000, 0), metav1.Unix(1000, 0)
	cj.Status = batchv1.CronJobStatus{
		Active:           []corev1.ObjectReference{{}},
		LastScheduleTime: &future, LastSuccessfulTime: &past,
	}
	if errs := cronJobResource().Subresources["status"].ValidateUpdate(cj, old); len(errs) > 0 {
		t.Fatalf("kube v1.29 validates no CronJob status field, got %v", errs)
	}
}

func strPtr(s string) *string { return &s }

func TestJobUpdate_SchedulingDirectivesOfASuspendedUnstartedJob(t *testing.T) {
	nodeAffinity := &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}}}}}}
	podAffinity := &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone"}}}
	cases := []struct {
		name      string
		suspended bool
		started   bool
		old, new  func(*corev1.PodTemplateSpec)
		immutable bool
	}{
		{"labels, annotations, node selector, tolerations, gates", true, false, nil, func(t *corev1.PodTemplateSpec) {
			t.Labels["extra"] = "x"
			t.Annotations = map[string]string{"a": "b"}
			t.Spec.NodeSelector = map[string]string{"disk": "ssd"}
			t.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
			t.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "g"}}
		}, false},
		{"node affinity added", true, false, nil, func(t *corev1.PodTemplateSpec) {
			t.Spec.Affinity = &corev1.Affinity{NodeAffinity: nodeAffinity}
		}, false},
		{"node affinity removed", true, false, func(t *corev1.PodTemplateSpec) {
			t.Spec.Affinity = &corev1.Affinity{NodeAffinity: nodeAffinity}
		}, func(t *corev1.PodTemplateSpec) { t.Spec.Affinity = nil }, false},
		{"affinity with pod affinity removed", true, false, func(t *corev1.PodTemplateSpec) {
			t.Spec.Affinity = &corev1.Affinity{NodeAffinity: nodeAffinity, PodAffinity: podAffinity}
		}, func(t *corev1.PodTemplateSpec) { t.Spec.Affinity = nil }, true},
		{"pod affinity added", true, false, nil, func(t *corev1.PodTemplateSpec) {
			t.Spec.Affinity = &corev1.Affinity{PodAffinity: podAffinity}
		}, true},
		{"image", true, false, nil, func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Image = "busybox:1.36" }, true},
		{"labels of a running Job", false, false, nil, func(t *corev1.PodTemplateSpec) { t.Labels["extra"] = "x" }, true},
		{"labels of a Job that started", true, true, nil, func(t *corev1.PodTemplateSpec) { t.Labels["extra"] = "x" }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default", UID: "1234"},
				Spec: batchv1.JobSpec{Suspend: &tc.suspended, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
				}}},
			}
			if tc.old != nil {
				tc.old(&old.Spec.Template)
			}
			s := jobStrategy{}
			s.PrepareForCreate(old)
			defaultJob(old)
			if tc.started {
				now := metav1.Now()
				old.Status.StartTime = &now
			}
			job := old.DeepCopy()
			tc.new(&job.Spec.Template)
			s.PrepareForUpdate(job, old)
			want := ""
			if tc.immutable {
				want = "spec.template: FieldValueInvalid"
			}
			if got := errFields(s.ValidateUpdate(job, old)); got != want {
				t.Fatalf("errors %q, want %q", got, want)
			}
		})
	}
}

func TestJobUpdate_IndexedCompletionsScaleWithParallelism(t *testing.T) {
	i32 := func(n int32) *int32 { return &n }
	old := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default", UID: "1234"},
		Spec: batchv1.JobSpec{Completions: i32(2), Parallelism: i32(2), CompletionMode: ptr(batchv1.IndexedCompletion),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}},
	}
	s := jobStrategy{}
	s.PrepareForCreate(old)
	defaultJob(old)
	for _, tc := range []struct {
		completions, parallelism int32
		want                     string
	}{
		{3, 3, ""},
		{3, 2, "spec.completions: FieldValueInvalid"},
		{2, 5, ""},
	} {
		job := old.DeepCopy()
		job.Spec.Completions, job.Spec.Parallelism = i32(tc.completions), i32(tc.parallelism)
		if got := errFields(s.ValidateUpdate(job, old)); got != tc.want {
			t.Errorf("completions %d parallelism %d: errors %q, want %q", tc.completions, tc.parallelism, got, tc.want)
		}
	}
	nonIndexed := old.DeepCopy()
	nonIndexed.Spec.CompletionMode = ptr(batchv1.NonIndexedCompletion)
	job := nonIndexed.DeepCopy()
	job.Spec.Completions, job.Spec.Parallelism = i32(3), i32(3)
	if got := errFields(s.ValidateUpdate(job, nonIndexed)); got != "spec.completions: FieldValueInvalid" {
		t.Errorf("NonIndexed completions changed: errors %q", got)
	}
}

func TestCronJobUpdate_KeepsAStoredTZSchedule(t *testing.T) {
	old := validCronJob()
	old.Spec.Schedule = "TZ=UTC 0 * * * *"
	defaultCronJob(old)
	cj := old.DeepCopy()
	cj.Spec.Suspend = boolPtr(true)
	if errs := (cronJobStrategy{}).ValidateUpdate(cj, old); len(errs) > 0 {
		t.Fatalf("a stored TZ schedule refused on update: %v", errs)
	}
	cj.Spec.TimeZone = strPtr("UTC")
	if got := errFields((cronJobStrategy{}).ValidateUpdate(cj, old)); got != "spec.schedule: FieldValueInvalid" {
		t.Fatalf("TZ and timeZone together: errors %q", got)
	}
}

func ptr[T any](v T) *T { return &v }

func boolPtr(b bool) *bool { return &b }
