package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// specWrite is a write of a Job or CronJob and kube v1.29's answer to it.
type specWrite struct {
	name     string
	resource string // jobs or cronjobs
	// before is created first and the write (a merge patch) changes it;
	// without it the write is a create of body.
	before  interface{}
	body    interface{}
	code    int
	message string // kube's Status message; a trailing * matches a prefix
	warning string // kube's Warning header texts, joined by newlines
}

func jobNamed(name string, mutate ...func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
		}}},
	}
	for _, m := range mutate {
		m(j)
	}
	return j
}

func cronJobNamed(name string, mutate func(*batchv1.CronJob)) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       batchv1.CronJobSpec{Schedule: "*/5 * * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: jobNamed(name).Spec}},
	}
	if mutate != nil {
		mutate(cj)
	}
	return cj
}

func ptrTo[T any](v T) *T { return &v }

// templateWrites are bad pod templates, each written in a Job and in a
// CronJob's job template; the error is relative to the template.
var templateWrites = []struct {
	name   string
	mutate func(*corev1.PodTemplateSpec)
	err    string
}{
	{"requests above limits", func(t *corev1.PodTemplateSpec) {
		t.Spec.Containers[0].Resources = corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
	}, `spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1`},
	{"mount of no volume", func(t *corev1.PodTemplateSpec) {
		t.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	}, `spec.containers[0].volumeMounts[0].name: Not found: "data"`},
	{"volume with two sources", func(t *corev1.PodTemplateSpec) {
		t.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}, HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}}}
	}, `spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type`},
	{"toleration operator", func(t *corev1.PodTemplateSpec) {
		t.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: "Bogus"}}
	}, `spec.tolerations[0].operator: Unsupported value: "Bogus": supported values: "Equal", "Exists"`},
	{"nodeSelector key", func(t *corev1.PodTemplateSpec) {
		t.Spec.NodeSelector = map[string]string{"bad key!": "x"}
	}, `spec.nodeSelector: Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
	{"runAsUser -1", func(t *corev1.PodTemplateSpec) {
		t.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptrTo(int64(-1))}
	}, `spec.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive`},
	{"uppercase hostname", func(t *corev1.PodTemplateSpec) {
		t.Spec.Hostname = "Foo"
	}, `spec.hostname: Invalid value: "Foo": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
	{"probe with no handler", func(t *corev1.PodTemplateSpec) {
		t.Spec.Containers[0].LivenessProbe = &corev1.Probe{}
	}, `spec.containers[0].livenessProbe: Required value: must specify a handler type`},
	{"negative emptyDir sizeLimit", func(t *corev1.PodTemplateSpec) {
		t.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptrTo(resource.MustParse("-1"))}}}}
	}, `spec.volumes[0].emptyDir.sizeLimit: Forbidden: SizeLimit field must be a valid resource quantity`},
	{"ephemeral containers", func(t *corev1.PodTemplateSpec) {
		t.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e", Image: "busybox"}}}
	}, `spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template`},
}

const negativeGraceWarning = "spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1"

func specWrites() []specWrite {
	invalid := func(kind, name, detail string) string {
		return fmt.Sprintf("%s.batch %q is invalid: %s", kind, name, detail)
	}
	failJob := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1}}}}}
	indexed := func(j *batchv1.Job) {
		j.Spec.CompletionMode = ptrTo(batchv1.IndexedCompletion)
		j.Spec.Completions = ptrTo(int32(2))
	}
	writes := []specWrite{
		{name: "podReplacementPolicy value", resource: "jobs", body: jobNamed("replacement", func(j *batchv1.Job) {
			j.Spec.PodReplacementPolicy = ptrTo(batchv1.PodReplacementPolicy("Bogus"))
		}), code: 422, message: invalid("Job", "replacement", `spec.podReplacementPolicy: Unsupported value: "Bogus": supported values: "Failed", "TerminatingOrFailed"`)},
		{name: "podFailurePolicy needs replacement Failed", resource: "jobs", body: jobNamed("failurepolicy", func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = failJob
			j.Spec.PodReplacementPolicy = ptrTo(batchv1.TerminatingOrFailed)
		}), code: 422, message: invalid("Job", "failurepolicy", `spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": supported values: "Failed"`)},
		{name: "backoffLimitPerIndex on a NonIndexed Job", resource: "jobs", body: jobNamed("perindex", func(j *batchv1.Job) {
			j.Spec.BackoffLimitPerIndex = ptrTo(int32(1))
		}), code: 422, message: invalid("Job", "perindex", `spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode`)},
		{name: "exit code 0 with In", resource: "jobs", body: jobNamed("exitzero", func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action: batchv1.PodFailurePolicyActionIgnore, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{0, 1}}}}}
		}), code: 422, message: invalid("Job", "exitzero", `spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator`)},
		{name: "Indexed parallelism above 100000", resource: "jobs", body: jobNamed("wide", indexed, func(j *batchv1.Job) {
			j.Spec.Parallelism = ptrTo(int32(100001))
		}), code: 422, message: invalid("Job", "wide", `spec.parallelism: Invalid value: 100001: must be less than or equal to 100000 when completion mode is Indexed`)},
		{name: "completions are immutable", resource: "jobs", before: jobNamed("completions"), body: `{"spec":{"completions":2}}`,
			code: 422, message: invalid("Job", "completions", `spec.completions: Invalid value: 2: field is immutable`)},
		{name: "Indexed completions change with parallelism only", resource: "jobs", before: jobNamed("elastic", indexed), body: `{"spec":{"completions":3}}`,
			code: 422, message: invalid("Job", "elastic", `spec.completions: Invalid value: 3: can only be modified in tandem with spec.parallelism`)},
		{name: "podFailurePolicy is immutable", resource: "jobs", before: jobNamed("policy", func(j *batchv1.Job) { j.Spec.PodFailurePolicy = failJob }),
			body: `{"spec":{"podFailurePolicy":{"rules":[{"action":"Ignore","onExitCodes":{"operator":"In","values":[1]}}]}}}`,
			code: 422, message: invalid("Job", "policy", `spec.podFailurePolicy: Invalid value: batch.PodFailurePolicy{Rules:[]batch.PodFailurePolicyRule{batch.PodFailurePolicyRule{Action:"Ignore", OnExitCodes:(*batch.PodFailurePolicyOnExitCodesRequirement)(0x*`)},
		{name: "backoffLimitPerIndex is immutable", resource: "jobs", before: jobNamed("limitperindex", indexed, func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = ptrTo(int32(1)) }),
			body: `{"spec":{"backoffLimitPerIndex":2}}`,
			code: 422, message: invalid("Job", "limitperindex", `spec.backoffLimitPerIndex: Invalid value: 2: field is immutable`)},
		{name: "template of a running Job is immutable", resource: "jobs", before: jobNamed("running"),
			body: `{"spec":{"template":{"metadata":{"labels":{"extra":"x"}}}}}`,
			code: 422, message: invalid("Job", "running", `spec.template: Invalid value: core.PodTemplateSpec{ObjectMeta:v1.ObjectMeta{Name:"", GenerateName:"", Namespace:"", SelfLink:"", UID:"", ResourceVersion:"", Generation:0, CreationTimestamp:time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC), DeletionTimestamp:<nil>, DeletionGracePeriodSeconds:(*int64)(nil), Labels:map[string]string{"batch.kubernetes.io/controller-uid":*`)},
		{name: "selector not matching the template", resource: "jobs", body: jobNamed("manual", func(j *batchv1.Job) {
			j.Spec.ManualSelector = ptrTo(true)
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
			j.Spec.Template.Labels = map[string]string{"a": "c"}
		}), code: 422, message: invalid("Job", "manual", "spec.template.metadata.labels: Invalid value: map[string]string{\"a\":\"c\"}: `selector` does not match template `labels`")},
		{name: "selector in a job template", resource: "cronjobs", body: cronJobNamed("manual", func(cj *batchv1.CronJob) {
			cj.Spec.JobTemplate.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
		}), code: 422, message: invalid("CronJob", "manual", "spec.jobTemplate.spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"a\":\"b\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` will be auto-generated")},

		{name: "maxFailedIndexes without backoffLimitPerIndex", resource: "jobs", body: jobNamed("maxfailed", indexed, func(j *batchv1.Job) {
			j.Spec.MaxFailedIndexes = ptrTo(int32(1))
		}), code: 422, message: invalid("Job", "maxfailed", `spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified`)},
		{name: "FailIndex without backoffLimitPerIndex", resource: "jobs", body: jobNamed("failindex", indexed, func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action: batchv1.PodFailurePolicyActionFailIndex, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1}}}}}
		}), code: 422, message: invalid("Job", "failindex", `spec.podFailurePolicy.rules[0].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set`)},
		{name: "podFailurePolicy with restartPolicy OnFailure", resource: "jobs", body: jobNamed("onfailure", func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = failJob
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		}), code: 422, message: invalid("Job", "onfailure", `spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified`)},
		{name: "pod failure rule with two requirements, unordered exit codes", resource: "jobs", body: jobNamed("rules", func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:          batchv1.PodFailurePolicyActionIgnore,
				OnExitCodes:     &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: ptrTo("x"), Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{2, 1, 1}},
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: "DisruptionTarget", Status: "Maybe"}},
			}}}
		}), code: 422, message: invalid("Job", "rules", `[spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: "x": must be one of the container or initContainer names in the pod template, `+
			`spec.podFailurePolicy.rules[0].onExitCodes.values[2]: Duplicate value: 1, spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []int32{2, 1, 1}: must be ordered, `+
			`spec.podFailurePolicy.rules[0].onPodConditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown", `+
			`spec.podFailurePolicy.rules[0]: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported]`)},
		{name: "Indexed without completions", resource: "jobs", body: jobNamed("nocompletions", func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptrTo(batchv1.IndexedCompletion)
			j.Spec.Parallelism = ptrTo(int32(2))
		}), code: 422, message: invalid("Job", "nocompletions", `spec.completions: Required value: when completion mode is Indexed`)},
		{name: "Indexed pod hostnames beyond a DNS label", resource: "jobs", body: jobNamed(strings.Repeat("a", 62), indexed, func(j *batchv1.Job) {
			j.Spec.Completions = ptrTo(int32(11))
		}), code: 422, message: invalid("Job", strings.Repeat("a", 62), `metadata.name: Invalid value: "`+strings.Repeat("a", 62)+`": will not able to create pod with invalid DNS label: `+strings.Repeat("a", 62)+`-10`)},
		{name: "generated label set by the client", resource: "jobs", body: jobNamed("labelled", func(j *batchv1.Job) {
			j.Spec.Template.Labels = map[string]string{"job-name": "other"}
		}), code: 422, message: invalid("Job", "labelled", `spec.template.metadata.labels[job-name]: Invalid value: map[string]string{"batch.kubernetes.io/controller-uid":*`)},
		{name: "TZ in a schedule", resource: "cronjobs", body: cronJobNamed("tz", func(cj *batchv1.CronJob) {
			cj.Spec.Schedule = "CRON_TZ=UTC 0 * * * *"
			cj.Spec.TimeZone = ptrTo("UTC")
		}), code: 422, message: invalid("CronJob", "tz", `spec.schedule: Invalid value: "CRON_TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead`)},
		{name: "manual selector in a job template", resource: "cronjobs", body: cronJobNamed("manualselector", func(cj *batchv1.CronJob) {
			cj.Spec.JobTemplate.Spec.ManualSelector = ptrTo(true)
		}), code: 422, message: invalid("CronJob", "manualselector", `spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: "nil", "false"`)},
		{name: "an update words a spec error once", resource: "jobs", before: jobNamed("negative"), body: `{"spec":{"parallelism":-1}}`,
			code: 422, message: invalid("Job", "negative", `spec.parallelism: Invalid value: -1: must be greater than or equal to 0`)},
		{name: "containers of a suspended Job are immutable", resource: "jobs", before: jobNamed("suspendedimage", func(j *batchv1.Job) { j.Spec.Suspend = ptrTo(true) }),
			body: `{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"busybox:1.36"}]}}}}`,
			code: 422, message: invalid("Job", "suspendedimage", `spec.template: Invalid value: core.PodTemplateSpec{*`)},

		// Writes kube accepts.
		{name: "template labels of a suspended Job change", resource: "jobs", before: jobNamed("suspended", func(j *batchv1.Job) { j.Spec.Suspend = ptrTo(true) }),
			body: `{"spec":{"template":{"metadata":{"labels":{"extra":"x"}},"spec":{"nodeSelector":{"disk":"ssd"}}}}}`, code: 200},
		{name: "job template metadata kube does not check", resource: "cronjobs", body: cronJobNamed("templatemeta", func(cj *batchv1.CronJob) {
			cj.Spec.JobTemplate.Labels = map[string]string{"bad key!": "x"}
		}), code: 201},
		{name: "Job activeDeadlineSeconds 0", resource: "jobs", body: jobNamed("deadline", func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptrTo(int64(0)) }), code: 201},
		{name: "negative terminationGracePeriodSeconds in a Job", resource: "jobs", body: jobNamed("grace", func(j *batchv1.Job) {
			j.Spec.Template.Spec.TerminationGracePeriodSeconds = ptrTo(int64(-5))
		}), code: 201, warning: negativeGraceWarning},
		{name: "negative terminationGracePeriodSeconds in a CronJob", resource: "cronjobs", body: cronJobNamed("grace", func(cj *batchv1.CronJob) {
			cj.Spec.JobTemplate.Spec.Template.Spec.TerminationGracePeriodSeconds = ptrTo(int64(-5))
		}), code: 201, warning: "spec.jobTemplate." + negativeGraceWarning},
	}
	for i, tw := range templateWrites {
		mutate := tw.mutate
		jobName, cronName := fmt.Sprintf("template-%d", i), fmt.Sprintf("template-%d", i)
		writes = append(writes,
			specWrite{name: tw.name + " in a Job", resource: "jobs", body: jobNamed(jobName, func(j *batchv1.Job) { mutate(&j.Spec.Template) }),
				code: 422, message: invalid("Job", jobName, "spec.template."+tw.err)},
			specWrite{name: tw.name + " in a CronJob", resource: "cronjobs", body: cronJobNamed(cronName, func(cj *batchv1.CronJob) { mutate(&cj.Spec.JobTemplate.Spec.Template) }),
				code: 422, message: invalid("CronJob", cronName, "spec.jobTemplate.spec.template."+tw.err)})
	}
	return writes
}

// apiTarget is a server the writes go to.
type apiTarget struct {
	base   string
	client *http.Client
	token  string
	// revision reads what etcd stores, where the test can read it.
	revision func(t *testing.T) storedState
}

func (a *apiTarget) do(t *testing.T, method, path, contentType string, body []byte) (int, []byte, http.Header) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data, resp.Header
}

// resourceVersionOf reads an object's resourceVersion, "" if it is absent.
func (a *apiTarget) resourceVersionOf(t *testing.T, path string) string {
	t.Helper()
	code, data, _ := a.do(t, "GET", path, "", nil)
	switch code {
	case http.StatusNotFound:
		return ""
	case http.StatusOK:
		var m metav1.PartialObjectMetadata
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return m.ResourceVersion
	}
	t.Fatalf("GET %s: %d %s", path, code, data)
	return ""
}

// runSpecWrites sends each write in namespace ns and checks kube's
// answer, and that a refused write leaves what is stored as it was.
func runSpecWrites(t *testing.T, a *apiTarget, ns string) {
	for _, w := range specWrites() {
		t.Run(w.resource+"/"+w.name, func(t *testing.T) {
			collection := "/apis/batch/v1/namespaces/" + ns + "/" + w.resource
			body, ok := w.body.(string)
			if !ok {
				data, err := json.Marshal(w.body)
				if err != nil {
					t.Fatal(err)
				}
				body = string(data)
			}
			method, path, contentType := "POST", collection, "application/json"
			var name string
			if w.before == nil {
				name = objectName(t, w.body)
			} else {
				before, err := json.Marshal(w.before)
				if err != nil {
					t.Fatal(err)
				}
				if code, data, _ := a.do(t, "POST", collection, "application/json", before); code != http.StatusCreated {
					t.Fatalf("creating the object to change: %d %s", code, data)
				}
				name = objectName(t, w.before)
				method, path, contentType = "PATCH", collection+"/"+name, "application/merge-patch+json"
			}
			rvBefore := a.resourceVersionOf(t, collection+"/"+name)
			var revBefore storedState
			if a.revision != nil {
				revBefore = a.revision(t)
			}
			code, data, header := a.do(t, method, path, contentType, []byte(body))
			if code != w.code {
				t.Fatalf("code %d, want %d: %s", code, w.code, data)
			}
			if got := strings.Join(header.Values("Warning"), "\n"); got != warningHeaders(w.warning) {
				t.Errorf("warnings %q, want %q", got, warningHeaders(w.warning))
			}
			if code < 300 {
				return
			}
			status := decodeStatus(t, data)
			want, got := w.message, status.Message
			if prefix, found := strings.CutSuffix(want, "*"); found && strings.HasPrefix(got, prefix) {
				want = got
			}
			if status.Reason != metav1.StatusReasonInvalid || got != want {
				t.Errorf("got %s %q\nwant %s %q", status.Reason, status.Message, metav1.StatusReasonInvalid, w.message)
			}
			if rv := a.resourceVersionOf(t, collection+"/"+name); rv != rvBefore {
				t.Errorf("the object's resourceVersion went from %q to %q", rvBefore, rv)
			}
			if a.revision != nil {
				if rev := a.revision(t); rev != revBefore {
					t.Errorf("etcd changed from %+v to %+v: something was stored", revBefore, rev)
				}
			}
		})
	}
}

func objectName(t *testing.T, obj interface{}) string {
	t.Helper()
	switch o := obj.(type) {
	case *batchv1.Job:
		return o.Name
	case *batchv1.CronJob:
		return o.Name
	}
	t.Fatalf("no name in %T", obj)
	return ""
}

// warningHeaders renders warning texts as kube's Warning header values.
func warningHeaders(texts string) string {
	if texts == "" {
		return ""
	}
	var out []string
	for _, text := range strings.Split(texts, "\n") {
		out = append(out, fmt.Sprintf("299 - %q", text))
	}
	return strings.Join(out, "\n")
}

// TestJobAndCronJobSpecs_AnswerAsKubeAndStoreNothingBad writes bad Jobs
// and CronJobs (their own fields, their pod templates, the update rules)
// and the valid writes kube accepts, and checks each answer and that a
// refused write stores nothing.
func TestJobAndCronJobSpecs_AnswerAsKubeAndStoreNothingBad(t *testing.T) {
	a := &apiTarget{base: srv.URL, client: srv.HTTPClient(), token: srv.AdminToken, revision: stored}
	runSpecWrites(t, a, namespace(t))
}

// TestJobAndCronJobSpecs_ReferenceAnswersTheSame sends the same writes to
// a reference kube-apiserver v1.29, when one runs: the table is kube's
// answers.
func TestJobAndCronJobSpecs_ReferenceAnswersTheSame(t *testing.T) {
	cfg, err := clientcmd.BuildConfigFromFlags("", referenceKubeconfig())
	if err != nil {
		t.Skipf("no reference kube-apiserver: %v", err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := &apiTarget{base: cfg.Host, client: &http.Client{Transport: transport, Timeout: 30 * time.Second}}
	ns := "podspec-" + randomSuffix()
	nsBody := fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, ns)
	if code, data, _ := a.do(t, "POST", "/api/v1/namespaces", "application/json", []byte(nsBody)); code != http.StatusCreated {
		t.Skipf("reference kube-apiserver not reachable: %d %s", code, data)
	}
	t.Cleanup(func() { a.do(t, "DELETE", "/api/v1/namespaces/"+ns, "", nil) })
	runSpecWrites(t, a, ns)
}
