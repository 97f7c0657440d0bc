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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/codec"
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
	defaultPodSpec(&cj.Spec.JobTemplate.Spec.Template.Spec)
}

// maxCronJobNameLength leaves room for the 11-character suffix of the
// Jobs a CronJob creates, within a 63-character label value.
const maxCronJobNameLength = 52

func (cronJobStrategy) WarningsOnCreate(obj runtime.Object) []string {
	return nameWarnings(obj.(*batchv1.CronJob).Name)
}

func (cronJobStrategy) WarningsOnUpdate(_, _ runtime.Object) []string { return nil }

func (cronJobStrategy) Validate(obj runtime.Object) field.ErrorList {
	return validateCronJob(obj.(*batchv1.CronJob))
}

func (cronJobStrategy) ValidateUpdate(obj, _ runtime.Object) field.ErrorList {
	return validateCronJob(obj.(*batchv1.CronJob))
}

func validateCronJob(cj *batchv1.CronJob) field.ErrorList {
	var errs field.ErrorList
	if len(cj.Name) > maxCronJobNameLength {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cj.Name, fmt.Sprintf("must be no more than %d characters", maxCronJobNameLength)))
	}
	spec := field.NewPath("spec")
	errs = append(errs, validateSchedule(cj.Spec.Schedule, cj.Spec.TimeZone, spec.Child("schedule"))...)
	errs = append(errs, validateTimeZone(cj.Spec.TimeZone, spec.Child("timeZone"))...)
	errs = append(errs, nonNegative64(cj.Spec.StartingDeadlineSeconds, spec.Child("startingDeadlineSeconds"))...)
	errs = append(errs, nonNegative32(cj.Spec.SuccessfulJobsHistoryLimit, spec.Child("successfulJobsHistoryLimit"))...)
	errs = append(errs, nonNegative32(cj.Spec.FailedJobsHistoryLimit, spec.Child("failedJobsHistoryLimit"))...)
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		errs = append(errs, field.Required(spec.Child("concurrencyPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(spec.Child("concurrencyPolicy"), cj.Spec.ConcurrencyPolicy, []string{
			string(batchv1.AllowConcurrent), string(batchv1.ForbidConcurrent), string(batchv1.ReplaceConcurrent)}))
	}
	tmpl := spec.Child("jobTemplate")
	errs = append(errs, validateLabels(cj.Spec.JobTemplate.Labels, tmpl.Child("metadata", "labels"))...)
	errs = append(errs, validateJobSpec(&cj.Spec.JobTemplate.Spec, tmpl.Child("spec"), false)...)
	return errs
}

func validateSchedule(schedule string, timeZone *string, path *field.Path) field.ErrorList {
	if schedule == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	if _, err := cron.ParseStandard(schedule); err != nil {
		errs = append(errs, field.Invalid(path, schedule, err.Error()))
	}
	if strings.Contains(schedule, "TZ") {
		msg := "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
		if timeZone != nil {
			msg = "cannot use both timeZone field and TZ or CRON_TZ in schedule"
		}
		errs = append(errs, field.Invalid(path, schedule, msg))
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
