package batch

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	// The time zone database, for scratch images without one.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/podspec"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// Resources registers cronjobs and jobs.
func Resources() []*generic.Resource {
	return []*generic.Resource{cronJobResource(), jobResource()}
}

func cronJobResource() *generic.Resource {
	gvk := batchv1.SchemeGroupVersion.WithKind("CronJob")
	newFunc := func() runtime.Object { return &batchv1.CronJob{} }
	s := cronJobStrategy{}
	return &generic.Resource{
		Resource: rest.Resource{
			GroupVersionKind: gvk,
			Plural:           "cronjobs",
			Singular:         "cronjob",
			ShortNames:       []string{"cj"},
			Categories:       []string{"all"},
			Namespaced:       true,
			New:              newFunc,
			NewList:          func() runtime.Object { return &batchv1.CronJobList{} },
			Table:            cronJobTable,
			Default:          defaultCronJob,
		},
		Codec:        codec.Protobuf(gvk, newFunc),
		Strategy:     s,
		Subresources: map[string]generic.Strategy{"status": generic.StatusStrategy{}},
	}
}

type cronJobStrategy struct{ generic.SpecStatusStrategy }

func (s cronJobStrategy) PrepareForCreate(obj runtime.Object) {
	s.SpecStatusStrategy.PrepareForCreate(obj)
	podspec.DropDisabledFields(&obj.(*batchv1.CronJob).Spec.JobTemplate.Spec.Template.Spec, nil)
}

func (s cronJobStrategy) PrepareForUpdate(obj, old runtime.Object) {
	podspec.DropDisabledFields(&obj.(*batchv1.CronJob).Spec.JobTemplate.Spec.Template.Spec, &old.(*batchv1.CronJob).Spec.JobTemplate.Spec.Template.Spec)
	s.SpecStatusStrategy.PrepareForUpdate(obj, old)
}

// defaultCronJob applies kube's CronJob defaults, and the pod defaults inside its
// job template (kube does not default the template's Job fields).
func defaultCronJob(obj runtime.Object) {
	cj := obj.(*batchv1.CronJob)
	if cj.Spec.ConcurrencyPolicy == "" {
		cj.Spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if cj.Spec.Suspend == nil {
		cj.Spec.Suspend = new(bool)
	}
	if cj.Spec.SuccessfulJobsHistoryLimit == nil {
		n := int32(3)
		cj.Spec.SuccessfulJobsHistoryLimit = &n
	}
	if cj.Spec.FailedJobsHistoryLimit == nil {
		n := int32(1)
		cj.Spec.FailedJobsHistoryLimit = &n
	}
	podspec.DefaultTemplate(&cj.Spec.JobTemplate.Spec.Template)
}

// maxCronJobNameLength leaves room for the 11-character suffix of the
// Jobs a CronJob creates, within a 63-character label value.
const maxCronJobNameLength = 52

var jobTemplateSpecPath = field.NewPath("spec", "jobTemplate", "spec")

func (cronJobStrategy) WarningsOnCreate(obj runtime.Object) []string {
	cj := obj.(*batchv1.CronJob)
	return append(nameWarnings(cj.Name), jobSpecWarnings(jobTemplateSpecPath, &cj.Spec.JobTemplate.Spec)...)
}

// WarningsOnUpdate warns of the spec only when it changed.
func (cronJobStrategy) WarningsOnUpdate(obj, old runtime.Object) []string {
	cj := obj.(*batchv1.CronJob)
	if cj.Generation == old.(*batchv1.CronJob).Generation {
		return nil
	}
	return jobSpecWarnings(jobTemplateSpecPath, &cj.Spec.JobTemplate.Spec)
}

// Validate checks a new CronJob; its name must leave room for the Jobs'.
func (cronJobStrategy) Validate(obj runtime.Object) field.ErrorList {
	cj := obj.(*batchv1.CronJob)
	errs := validateCronJobSpec(&cj.Spec, nil)
	if len(cj.Name) > maxCronJobNameLength {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cj.Name, fmt.Sprintf("must be no more than %d characters", maxCronJobNameLength)))
	}
	return errs
}

// ValidateUpdate checks a CronJob's spec; the name's bound is for new
// CronJobs only, so that older long-named ones can still change.
func (cronJobStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return validateCronJobSpec(&obj.(*batchv1.CronJob).Spec, &old.(*batchv1.CronJob).Spec)
}

// validateCronJobSpec checks a CronJob's spec, written over old (nil on
// create): a stored schedule with TZ in it, or a stored time zone, stays
// valid.
func validateCronJobSpec(spec, old *batchv1.CronJobSpec) field.ErrorList {
	path := field.NewPath("spec")
	var errs field.ErrorList
	if spec.Schedule == "" {
		errs = append(errs, field.Required(path.Child("schedule"), ""))
	} else {
		errs = append(errs, validateSchedule(spec.Schedule, old != nil && strings.Contains(old.Schedule, "TZ"), spec.TimeZone, path.Child("schedule"))...)
	}
	if d := spec.StartingDeadlineSeconds; d != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*d, path.Child("startingDeadlineSeconds"))...)
	}
	if old == nil || !equalStrings(old.TimeZone, spec.TimeZone) {
		errs = append(errs, validateTimeZone(spec.TimeZone, path.Child("timeZone"))...)
	}
	switch spec.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		errs = append(errs, field.Required(path.Child("concurrencyPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(path.Child("concurrencyPolicy"), spec.ConcurrencyPolicy, []batchv1.ConcurrencyPolicy{
			batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}))
	}
	errs = append(errs, validateJobTemplate(&spec.JobTemplate, old, path.Child("jobTemplate"))...)
	for _, limit := range []struct {
		name string
		v    *int32
	}{{"successfulJobsHistoryLimit", spec.SuccessfulJobsHistoryLimit}, {"failedJobsHistoryLimit", spec.FailedJobsHistoryLimit}} {
		if limit.v != nil {
			errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*limit.v), path.Child(limit.name))...)
		}
	}
	return errs
}

// validateJobTemplate checks a CronJob's job template: kube leaves its
// metadata alone, and generates the selector of each Job.
func validateJobTemplate(t *batchv1.JobTemplateSpec, old *batchv1.CronJobSpec, path *field.Path) field.ErrorList {
	opts := podspec.TemplateOptions(nil)
	if old != nil {
		opts = podspec.TemplateOptions(&old.JobTemplate.Spec.Template)
	}
	spec := path.Child("spec")
	errs := validateJobSpec(&t.Spec, spec, opts)
	if t.Spec.Selector != nil {
		errs = append(errs, field.Invalid(spec.Child("selector"), t.Spec.Selector, "`selector` will be auto-generated"))
	}
	if m := t.Spec.ManualSelector; m != nil && *m {
		errs = append(errs, field.NotSupported(spec.Child("manualSelector"), *m, []string{"nil", "false"}))
	}
	return errs
}

func equalStrings(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// validateSchedule checks a schedule; TZ in it is refused, unless the
// stored schedule already had it (allowTZ).
func validateSchedule(schedule string, allowTZ bool, timeZone *string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := cron.ParseStandard(schedule); err != nil {
		errs = append(errs, field.Invalid(path, schedule, err.Error()))
	}
	switch hasTZ := strings.Contains(schedule, "TZ"); {
	case allowTZ && hasTZ && timeZone != nil:
		errs = append(errs, field.Invalid(path, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
	case !allowTZ && hasTZ:
		errs = append(errs, field.Invalid(path, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	}
	return errs
}

var timeZonePart = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

func validateTimeZone(tz *string, path *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(path, *tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !timeZonePart.MatchString(part) {
			return field.ErrorList{field.Invalid(path, *tz, fmt.Sprintf("unknown time zone %s", *tz))}
		}
	}
	if strings.EqualFold(*tz, "Local") {
		return field.ErrorList{field.Invalid(path, *tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones")}
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		return field.ErrorList{field.Invalid(path, *tz, err.Error())}
	}
	return nil
}
