package batch

import (
	"fmt"
	"math"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/podspec"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

func jobResource() *generic.Resource {
	gvk := batchv1.SchemeGroupVersion.WithKind("Job")
	newFunc := func() runtime.Object { return &batchv1.Job{} }
	s := jobStrategy{}
	return &generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: gvk,
			Plural:           "jobs",
			Singular:         "job",
			Categories:       []string{"all"},
			Namespaced:       true,
			New:              newFunc,
			NewList:          func() runtime.Object { return &batchv1.JobList{} },
			Table:            jobTable,
			Default:          defaultJob,
		},
		Codec:           codec.Protobuf(gvk, newFunc),
		Strategy:        s,
		Subresources:    map[string]generic.Strategy{"status": generic.StatusStrategy{ValidateStatus: validateJobStatus}},
		OrphanByDefault: true,
		SelectableFields: func(obj runtime.Object) fields.Set {
			return fields.Set{"status.successful": strconv.Itoa(int(obj.(*batchv1.Job).Status.Succeeded))}
		},
		FieldLabels: jobFieldLabels,
	}
}

// jobFieldLabels are the field labels of Jobs, refused in kube's words
// for Jobs.
func jobFieldLabels(label string) (string, error) {
	switch label {
	case "metadata.name", "metadata.namespace", "status.successful":
		return label, nil
	}
	return "", fmt.Errorf("field label %q not supported for Job", label)
}

// Labels kube puts on a Job's pods to tie them to it.
const (
	labelControllerUID       = "batch.kubernetes.io/controller-uid"
	labelJobName             = "batch.kubernetes.io/job-name"
	legacyLabelControllerUID = "controller-uid"
	legacyLabelJobName       = "job-name"
)

type jobStrategy struct{ generic.SpecStatusStrategy }

// PrepareForCreate clears the status and, unless the selector is manual,
// labels the pod template with the job's name and uid and selects them,
// keeping labels and a selector the client already set, as kube does. The
// fields of features v1.29 has off are dropped.
func (s jobStrategy) PrepareForCreate(obj runtime.Object) {
	s.SpecStatusStrategy.PrepareForCreate(obj)
	job := obj.(*batchv1.Job)
	podspec.DropDisabledFields(&job.Spec.Template.Spec, nil)
	if job.Spec.ManualSelector != nil && *job.Spec.ManualSelector {
		return
	}
	if job.Spec.Template.Labels == nil {
		job.Spec.Template.Labels = map[string]string{}
	}
	uid := string(job.UID)
	for k, v := range map[string]string{labelControllerUID: uid, labelJobName: job.Name, legacyLabelControllerUID: uid, legacyLabelJobName: job.Name} {
		if _, set := job.Spec.Template.Labels[k]; !set {
			job.Spec.Template.Labels[k] = v
		}
	}
	if job.Spec.Selector == nil {
		job.Spec.Selector = &metav1.LabelSelector{}
	}
	if job.Spec.Selector.MatchLabels == nil {
		job.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, set := job.Spec.Selector.MatchLabels[labelControllerUID]; !set {
		job.Spec.Selector.MatchLabels[labelControllerUID] = uid
	}
}

func (s jobStrategy) PrepareForUpdate(obj, old runtime.Object) {
	podspec.DropDisabledFields(&obj.(*batchv1.Job).Spec.Template.Spec, &old.(*batchv1.Job).Spec.Template.Spec)
	s.SpecStatusStrategy.PrepareForUpdate(obj, old)
}

// defaultJob applies kube's Job defaults and the pod defaults of its
// template. A Job without labels takes its template's: on a new Job the
// template has none yet (the selector's labels come later), so kube stores
// it unlabelled and labels it whenever it is read.
func defaultJob(obj runtime.Object) {
	job := obj.(*batchv1.Job)
	spec := &job.Spec
	if spec.Completions == nil && spec.Parallelism == nil {
		one := int32(1)
		spec.Completions = &one
	}
	if spec.Parallelism == nil {
		one := int32(1)
		spec.Parallelism = &one
	}
	if spec.BackoffLimit == nil {
		limit := int32(6)
		if spec.BackoffLimitPerIndex != nil {
			limit = math.MaxInt32
		}
		spec.BackoffLimit = &limit
	}
	if labels := spec.Template.Labels; labels != nil && len(job.Labels) == 0 {
		job.Labels = labels
	}
	if spec.CompletionMode == nil {
		mode := batchv1.NonIndexedCompletion
		spec.CompletionMode = &mode
	}
	if spec.Suspend == nil {
		spec.Suspend = new(bool)
	}
	if p := spec.PodFailurePolicy; p != nil {
		for _, rule := range p.Rules {
			for i := range rule.OnPodConditions {
				if rule.OnPodConditions[i].Status == "" {
					rule.OnPodConditions[i].Status = corev1.ConditionTrue
				}
			}
		}
	}
	if spec.PodReplacementPolicy == nil {
		policy := batchv1.TerminatingOrFailed
		if spec.PodFailurePolicy != nil {
			policy = batchv1.Failed
		}
		spec.PodReplacementPolicy = &policy
	}
	if spec.ManualSelector == nil {
		spec.ManualSelector = new(bool)
	}
	podspec.DefaultTemplate(&spec.Template)
}

func (jobStrategy) WarningsOnCreate(obj runtime.Object) []string {
	job := obj.(*batchv1.Job)
	return append(nameWarnings(job.Name), jobSpecWarnings(field.NewPath("spec"), &job.Spec)...)
}

// WarningsOnUpdate warns of the spec only when it changed.
func (jobStrategy) WarningsOnUpdate(obj, old runtime.Object) []string {
	job := obj.(*batchv1.Job)
	if job.Generation == old.(*batchv1.Job).Generation {
		return nil
	}
	return jobSpecWarnings(field.NewPath("spec"), &job.Spec)
}

// jobOptions are what a Job's validation depends on besides the Job.
type jobOptions struct {
	pod podspec.Options
	// requirePrefixedLabels: the template must carry the batch.kubernetes.io
	// labels too (Jobs stored before v1.27 may lack them).
	requirePrefixedLabels bool
	// mutableScheduling: a suspended Job that never started may change its
	// template's labels, annotations, node selector, node affinity,
	// tolerations and scheduling gates.
	mutableScheduling bool
}

func jobOptionsFor(old *batchv1.Job) jobOptions {
	if old == nil {
		return jobOptions{pod: podspec.TemplateOptions(nil), requirePrefixedLabels: true}
	}
	_, hadName := old.Spec.Template.Labels[labelJobName]
	_, hadUID := old.Spec.Template.Labels[labelControllerUID]
	opts := jobOptions{
		pod:                   podspec.TemplateOptions(&old.Spec.Template),
		requirePrefixedLabels: hadName && hadUID,
		mutableScheduling:     old.Spec.Suspend != nil && *old.Spec.Suspend && old.Status.StartTime == nil,
	}
	// Label values a stored selector has are forgiven in every selector.
	opts.pod.AllowInvalidLabelValueInSelector = opts.pod.AllowInvalidLabelValueInSelector || metav1validation.LabelSelectorHasInvalidLabelValue(old.Spec.Selector)
	return opts
}

func (jobStrategy) Validate(obj runtime.Object) field.ErrorList {
	return validateJob(obj.(*batchv1.Job), jobOptionsFor(nil))
}

// ValidateUpdate checks the Job as on create, then what may change: kube
// validates the spec twice on the way, and so words its errors twice.
func (jobStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	job, oldJob := obj.(*batchv1.Job), old.(*batchv1.Job)
	opts := jobOptionsFor(oldJob)
	errs := validateJob(job, opts)
	spec, oldSpec, path := &job.Spec, &oldJob.Spec, field.NewPath("spec")
	errs = append(errs, validateJobSelectorAndSpec(spec, path, opts)...)
	errs = append(errs, validateCompletionsUpdate(spec, oldSpec, path)...)
	errs = append(errs, apivalidation.ValidateImmutableField(spec.Selector, oldSpec.Selector, path.Child("selector"))...)
	errs = append(errs, validateTemplateUpdate(&spec.Template, &oldSpec.Template, path.Child("template"), opts.mutableScheduling)...)
	errs = append(errs, apivalidation.ValidateImmutableField(spec.CompletionMode, oldSpec.CompletionMode, path.Child("completionMode"))...)
	errs = append(errs, immutableStruct(spec.PodFailurePolicy, oldSpec.PodFailurePolicy, path.Child("podFailurePolicy"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(spec.BackoffLimitPerIndex, oldSpec.BackoffLimitPerIndex, path.Child("backoffLimitPerIndex"))...)
	return errs
}

// validateCompletionsUpdate: completions are fixed, but an Indexed Job
// may scale (ElasticIndexedJob, on in v1.29) by changing completions and
// parallelism together.
func validateCompletionsUpdate(spec, old *batchv1.JobSpec, path *field.Path) field.ErrorList {
	p := path.Child("completions")
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
		return apivalidation.ValidateImmutableField(spec.Completions, old.Completions, p)
	}
	if spec.Completions == nil || (old.Completions != nil && *spec.Completions == *old.Completions) {
		return nil
	}
	if spec.Parallelism == nil || *spec.Completions != *spec.Parallelism {
		return field.ErrorList{field.Invalid(p, *spec.Completions, fmt.Sprintf("can only be modified in tandem with %s", path.Child("parallelism")))}
	}
	return nil
}

// validateTemplateUpdate: the template is fixed, but for the scheduling
// directives of a suspended Job that never started.
func validateTemplateUpdate(t, old *corev1.PodTemplateSpec, path *field.Path, mutableScheduling bool) field.ErrorList {
	if mutableScheduling {
		old = old.DeepCopy()
		switch {
		case t.Spec.Affinity == nil && old.Spec.Affinity != nil:
			// The affinity may go only if it held nothing but node affinity.
			old.Spec.Affinity.NodeAffinity = nil
			if *old.Spec.Affinity == (corev1.Affinity{}) {
				old.Spec.Affinity = nil
			}
		case t.Spec.Affinity != nil && old.Spec.Affinity == nil:
			old.Spec.Affinity = &corev1.Affinity{NodeAffinity: t.Spec.Affinity.NodeAffinity}
		case t.Spec.Affinity != nil && old.Spec.Affinity != nil:
			old.Spec.Affinity.NodeAffinity = t.Spec.Affinity.NodeAffinity
		}
		old.Spec.NodeSelector = t.Spec.NodeSelector
		old.Spec.Tolerations = t.Spec.Tolerations
		old.Annotations = t.Annotations
		old.Labels = t.Labels
		old.Spec.SchedulingGates = t.Spec.SchedulingGates
	}
	return immutableStruct(t, old, path)
}

// immutableStruct refuses a change of a struct field, showing the new
// value as kube shows its internal types.
func immutableStruct[T any](v, old *T, path *field.Path) field.ErrorList {
	if v == nil || old == nil || equality.Semantic.DeepEqual(v, old) {
		return apivalidation.ValidateImmutableField(v, old, path)
	}
	return field.ErrorList{field.Invalid(path, podspec.InternalValue(v), apivalidation.FieldImmutableErrorMsg)}
}

// validateJob checks a Job as kube does but for its metadata, which is
// the store's: the generated selector and labels, the spec, and that
// the hostnames of an Indexed Job's pods are DNS labels.
func validateJob(job *batchv1.Job, opts jobOptions) field.ErrorList {
	errs := validateGeneratedSelector(job, opts.requirePrefixedLabels)
	errs = append(errs, validateJobSelectorAndSpec(&job.Spec, field.NewPath("spec"), opts)...)
	if m, c := job.Spec.CompletionMode, job.Spec.Completions; m != nil && *m == batchv1.IndexedCompletion && c != nil && *c > 0 {
		hostname := fmt.Sprintf("%s-%d", job.Name, *c-1)
		if len(validation.IsDNS1123Label(hostname)) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), job.Name, fmt.Sprintf("will not able to create pod with invalid DNS label: %s", hostname)))
		}
	}
	return errs
}

// validateGeneratedSelector: unless the selector is manual, the template
// carries the labels generated from the Job's name and uid, and the
// selector selects them.
func validateGeneratedSelector(job *batchv1.Job, requirePrefixed bool) field.ErrorList {
	if (job.Spec.ManualSelector != nil && *job.Spec.ManualSelector) || job.Spec.Selector == nil {
		return nil
	}
	var errs field.ErrorList
	if job.UID == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "uid"), ""))
	}
	labelsPath := field.NewPath("spec", "template", "metadata", "labels")
	want := [][2]string{{legacyLabelControllerUID, string(job.UID)}, {legacyLabelJobName, job.Name}}
	if requirePrefixed {
		want = append(want, [2]string{labelControllerUID, string(job.UID)}, [2]string{labelJobName, job.Name})
	}
	expected := labels.Set{}
	for _, kv := range want {
		expected[kv[0]] = kv[1]
		switch v, set := job.Spec.Template.Labels[kv[0]]; {
		case !set:
			errs = append(errs, field.Required(labelsPath.Key(kv[0]), fmt.Sprintf("must be '%s'", kv[1])))
		case v != kv[1]:
			errs = append(errs, field.Invalid(labelsPath.Key(kv[0]), job.Spec.Template.Labels, fmt.Sprintf("must be '%s'", kv[1])))
		}
	}
	if sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector); err == nil && !sel.Matches(expected) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), job.Spec.Selector, "`selector` not auto-generated"))
	}
	return errs
}

// validateJobSelectorAndSpec checks a Job's spec with its selector, which
// must select the template's labels.
func validateJobSelectorAndSpec(spec *batchv1.JobSpec, path *field.Path, opts jobOptions) field.ErrorList {
	errs := validateJobSpec(spec, path, opts.pod)
	if spec.Selector == nil {
		errs = append(errs, field.Required(path.Child("selector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: opts.pod.AllowInvalidLabelValueInSelector}, path.Child("selector"))...)
	}
	if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !sel.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(path.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	return errs
}

// validateJobStatus checks what kube v1.29 checks of a Job's status: counts
// that are not negative and uncounted pods named once, across both lists.
// Times, indexes and conditions are the controller's word, unchecked.
func validateJobStatus(obj, _ runtime.Object) field.ErrorList {
	status := &obj.(*batchv1.Job).Status
	path := field.NewPath("status")
	errs := apivalidation.ValidateNonnegativeField(int64(status.Active), path.Child("active"))
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(status.Succeeded), path.Child("succeeded"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(status.Failed), path.Child("failed"))...)
	if status.Ready != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*status.Ready), path.Child("ready"))...)
	}
	if status.Terminating != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*status.Terminating), path.Child("terminating"))...)
	}
	if pods := status.UncountedTerminatedPods; pods != nil {
		seen := map[types.UID]bool{}
		for _, list := range []struct {
			name string
			uids []types.UID
		}{{"succeeded", pods.Succeeded}, {"failed", pods.Failed}} {
			for i, uid := range list.uids {
				p := path.Child("uncountedTerminatedPods", list.name).Index(i)
				switch {
				case uid == "":
					errs = append(errs, field.Invalid(p, uid, "must not be empty"))
				case seen[uid]:
					errs = append(errs, field.Duplicate(p, uid))
				default:
					seen[uid] = true
				}
			}
		}
	}
	return errs
}
