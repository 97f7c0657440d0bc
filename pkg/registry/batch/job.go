package batch

import (
	"fmt"
	"math"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/codec"
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
// keeping labels and a selector the client already set, as kube does.
func (s jobStrategy) PrepareForCreate(obj runtime.Object) {
	s.SpecStatusStrategy.PrepareForCreate(obj)
	job := obj.(*batchv1.Job)
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
	defaultPodSpec(&spec.Template.Spec)
}

func (jobStrategy) WarningsOnCreate(obj runtime.Object) []string {
	return nameWarnings(obj.(*batchv1.Job).Name)
}

func (jobStrategy) WarningsOnUpdate(_, _ runtime.Object) []string { return nil }

func (jobStrategy) Validate(obj runtime.Object) field.ErrorList {
	job := obj.(*batchv1.Job)
	var errs field.ErrorList
	if len(job.Name) > 63 {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), job.Name, "must be no more than 63 characters"))
	}
	return append(errs, validateJobSpec(&job.Spec, field.NewPath("spec"), true)...)
}

func (s jobStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	job, oldJob := obj.(*batchv1.Job), old.(*batchv1.Job)
	errs := validateJobSpec(&job.Spec, field.NewPath("spec"), true)
	spec := field.NewPath("spec")
	errs = append(errs, apivalidation.ValidateImmutableField(job.Spec.Selector, oldJob.Spec.Selector, spec.Child("selector"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(job.Spec.CompletionMode, oldJob.Spec.CompletionMode, spec.Child("completionMode"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(job.Spec.Template, oldJob.Spec.Template, spec.Child("template"))...)
	return errs
}

// validateJobStatus checks what kube v1.29 checks of a Job's status: counts
// that are not negative and uncounted pods named once, across both lists.
// Times, indexes and conditions are the controller's word, unchecked.
func validateJobStatus(obj, _ runtime.Object) field.ErrorList {
	status := &obj.(*batchv1.Job).Status
	path := field.NewPath("status")
	errs := nonNegative32(&status.Active, path.Child("active"))
	errs = append(errs, nonNegative32(&status.Succeeded, path.Child("succeeded"))...)
	errs = append(errs, nonNegative32(&status.Failed, path.Child("failed"))...)
	errs = append(errs, nonNegative32(status.Ready, path.Child("ready"))...)
	errs = append(errs, nonNegative32(status.Terminating, path.Child("terminating"))...)
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

// validateJobSpec checks a Job's spec; a template inside a CronJob has no
// selector yet.
func validateJobSpec(spec *batchv1.JobSpec, path *field.Path, needSelector bool) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, nonNegative32(spec.Parallelism, path.Child("parallelism"))...)
	errs = append(errs, nonNegative32(spec.Completions, path.Child("completions"))...)
	errs = append(errs, nonNegative32(spec.BackoffLimit, path.Child("backoffLimit"))...)
	if d := spec.ActiveDeadlineSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(path.Child("activeDeadlineSeconds"), *d, "must be greater than 0"))
	}
	if t := spec.TTLSecondsAfterFinished; t != nil && *t < 0 {
		errs = append(errs, field.Invalid(path.Child("ttlSecondsAfterFinished"), *t, "must be greater than or equal to 0"))
	}
	if m := spec.CompletionMode; m != nil {
		switch *m {
		case batchv1.NonIndexedCompletion:
		case batchv1.IndexedCompletion:
			if spec.Completions == nil {
				errs = append(errs, field.Required(path.Child("completions"), `when completion mode is "Indexed"`))
			}
		default:
			errs = append(errs, field.NotSupported(path.Child("completionMode"), *m, []string{string(batchv1.NonIndexedCompletion), string(batchv1.IndexedCompletion)}))
		}
	}
	if needSelector {
		if spec.Selector == nil {
			errs = append(errs, field.Required(path.Child("selector"), ""))
		} else {
			errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, path.Child("selector"))...)
			if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !sel.Matches(labels.Set(spec.Template.Labels)) {
				errs = append(errs, field.Invalid(path.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
			}
		}
	}
	return append(errs, validatePodTemplate(&spec.Template, path.Child("template"))...)
}
