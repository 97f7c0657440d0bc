package batch

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/podspec"
)

// Bounds kube v1.29 puts on Jobs, to keep status.completedIndexes and
// status.failedIndexes small and pod failure policies cheap to evaluate.
const (
	maxParallelismForIndexedJob             = 100_000
	maxFailedIndexesForIndexedJob           = 100_000
	completionsSoftLimit                    = 100_000
	parallelismLimitForHighCompletions      = 10_000
	maxFailedIndexesLimitForHighCompletions = 10_000
	maxPodFailurePolicyRules                = 20
	maxPodFailurePolicyOnExitCodesValues    = 255
	maxPodFailurePolicyOnPodConditions      = 20
)

var (
	podFailurePolicyActions = []batchv1.PodFailurePolicyAction{batchv1.PodFailurePolicyActionCount,
		batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore}
	onExitCodesOperators   = []batchv1.PodFailurePolicyOnExitCodesOperator{batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn}
	conditionStatuses      = []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown}
	podReplacementPolicies = []batchv1.PodReplacementPolicy{batchv1.Failed, batchv1.TerminatingOrFailed}
)

// validateJobSpec checks what a Job's spec and a CronJob's job template
// share (the selector is the Job's alone): counts, completion mode, the
// pod failure and replacement policies, the pod template and a restart
// policy a Job can use.
func validateJobSpec(spec *batchv1.JobSpec, path *field.Path, opts podspec.Options) field.ErrorList {
	var errs field.ErrorList
	nonNegative := func(v *int32, name string) {
		if v != nil {
			errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*v), path.Child(name))...)
		}
	}
	nonNegative(spec.Parallelism, "parallelism")
	nonNegative(spec.Completions, "completions")
	if d := spec.ActiveDeadlineSeconds; d != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*d, path.Child("activeDeadlineSeconds"))...)
	}
	nonNegative(spec.BackoffLimit, "backoffLimit")
	nonNegative(spec.TTLSecondsAfterFinished, "ttlSecondsAfterFinished")
	nonNegative(spec.BackoffLimitPerIndex, "backoffLimitPerIndex")
	if spec.MaxFailedIndexes != nil {
		nonNegative(spec.MaxFailedIndexes, "maxFailedIndexes")
		if spec.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Required(path.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
		}
	}
	indexed := spec.CompletionMode != nil && *spec.CompletionMode == batchv1.IndexedCompletion
	if m := spec.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
		errs = append(errs, field.NotSupported(path.Child("completionMode"), *m, []batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
	}
	if indexed {
		errs = append(errs, validateIndexed(spec, path)...)
	}
	if spec.CompletionMode == nil || *spec.CompletionMode == batchv1.NonIndexedCompletion {
		if b := spec.BackoffLimitPerIndex; b != nil {
			errs = append(errs, field.Invalid(path.Child("backoffLimitPerIndex"), *b, "requires indexed completion mode"))
		}
		if m := spec.MaxFailedIndexes; m != nil {
			errs = append(errs, field.Invalid(path.Child("maxFailedIndexes"), *m, "requires indexed completion mode"))
		}
	}
	if spec.PodFailurePolicy != nil {
		errs = append(errs, validatePodFailurePolicy(spec, path.Child("podFailurePolicy"))...)
	}
	if p := spec.PodReplacementPolicy; p != nil {
		if spec.PodFailurePolicy != nil {
			if *p != batchv1.Failed {
				errs = append(errs, field.NotSupported(path.Child("podReplacementPolicy"), *p, []batchv1.PodReplacementPolicy{batchv1.Failed}))
			}
		} else if !sets.New(podReplacementPolicies...).Has(*p) {
			errs = append(errs, field.NotSupported(path.Child("podReplacementPolicy"), *p, podReplacementPolicies))
		}
	}
	errs = append(errs, podspec.ValidateTemplate(&spec.Template, path.Child("template"), opts)...)
	// The defaults make a missing policy Always, so kube words Always as
	// missing.
	restart := path.Child("template", "spec", "restartPolicy")
	switch p := spec.Template.Spec.RestartPolicy; {
	case p == corev1.RestartPolicyAlways || p == "":
		errs = append(errs, field.Required(restart, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)))
	case p != corev1.RestartPolicyOnFailure && p != corev1.RestartPolicyNever:
		errs = append(errs, field.NotSupported(restart, p, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	case spec.PodFailurePolicy != nil && p != corev1.RestartPolicyNever:
		errs = append(errs, field.Invalid(restart, p, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}
	return errs
}

// validateIndexed checks the bounds of an Indexed Job.
func validateIndexed(spec *batchv1.JobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Completions == nil {
		errs = append(errs, field.Required(path.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
	}
	if p := spec.Parallelism; p != nil && *p > maxParallelismForIndexedJob {
		errs = append(errs, field.Invalid(path.Child("parallelism"), *p, fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxParallelismForIndexedJob, batchv1.IndexedCompletion)))
	}
	if c, m := spec.Completions, spec.MaxFailedIndexes; c != nil && m != nil && *m > *c {
		errs = append(errs, field.Invalid(path.Child("maxFailedIndexes"), *m, "must be less than or equal to completions"))
	}
	if m := spec.MaxFailedIndexes; m != nil && *m > maxFailedIndexesForIndexedJob {
		errs = append(errs, field.Invalid(path.Child("maxFailedIndexes"), *m, fmt.Sprintf("must be less than or equal to %d", maxFailedIndexesForIndexedJob)))
	}
	if c := spec.Completions; c != nil && *c > completionsSoftLimit && spec.BackoffLimitPerIndex != nil {
		if spec.MaxFailedIndexes == nil {
			errs = append(errs, field.Required(path.Child("maxFailedIndexes"), fmt.Sprintf("must be specified when completions is above %d", completionsSoftLimit)))
		}
		if p := spec.Parallelism; p != nil && *p > parallelismLimitForHighCompletions {
			errs = append(errs, field.Invalid(path.Child("parallelism"), *p, fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", parallelismLimitForHighCompletions, completionsSoftLimit)))
		}
		if m := spec.MaxFailedIndexes; m != nil && *m > maxFailedIndexesLimitForHighCompletions {
			errs = append(errs, field.Invalid(path.Child("maxFailedIndexes"), *m, fmt.Sprintf("must be less than or equal to %d when completions are above %d and used with backoff limit per index", maxFailedIndexesLimitForHighCompletions, completionsSoftLimit)))
		}
	}
	return errs
}

func validatePodFailurePolicy(spec *batchv1.JobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	rules := spec.PodFailurePolicy.Rules
	rulesPath := path.Child("rules")
	if len(rules) > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(rulesPath, len(rules), maxPodFailurePolicyRules))
	}
	containers := sets.New[string]()
	for _, c := range spec.Template.Spec.Containers {
		containers.Insert(c.Name)
	}
	for _, c := range spec.Template.Spec.InitContainers {
		containers.Insert(c.Name)
	}
	for i := range rules {
		errs = append(errs, validatePodFailurePolicyRule(spec, &rules[i], rulesPath.Index(i), containers)...)
	}
	return errs
}

func validatePodFailurePolicyRule(spec *batchv1.JobSpec, rule *batchv1.PodFailurePolicyRule, path *field.Path, containers sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	action := path.Child("action")
	switch {
	case rule.Action == "":
		errs = append(errs, field.Required(action, fmt.Sprintf("valid values: %q", podFailurePolicyActions)))
	case rule.Action == batchv1.PodFailurePolicyActionFailIndex:
		if spec.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Invalid(action, rule.Action, "requires the backoffLimitPerIndex to be set"))
		}
	case !sets.New(podFailurePolicyActions...).Has(rule.Action):
		errs = append(errs, field.NotSupported(action, rule.Action, podFailurePolicyActions))
	}
	if rule.OnExitCodes != nil {
		errs = append(errs, validateOnExitCodes(rule.OnExitCodes, path.Child("onExitCodes"), containers)...)
	}
	if len(rule.OnPodConditions) > 0 {
		errs = append(errs, validateOnPodConditions(rule.OnPodConditions, path.Child("onPodConditions"))...)
	}
	if rule.OnExitCodes != nil && len(rule.OnPodConditions) > 0 {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
	}
	if rule.OnExitCodes == nil && len(rule.OnPodConditions) == 0 {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
	}
	return errs
}

func validateOnPodConditions(patterns []batchv1.PodFailurePolicyOnPodConditionsPattern, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(patterns) > maxPodFailurePolicyOnPodConditions {
		errs = append(errs, field.TooMany(path, len(patterns), maxPodFailurePolicyOnPodConditions))
	}
	for i, p := range patterns {
		pp := path.Index(i)
		for _, msg := range validation.IsQualifiedName(string(p.Type)) {
			errs = append(errs, field.Invalid(pp.Child("type"), string(p.Type), msg))
		}
		switch {
		case p.Status == "":
			errs = append(errs, field.Required(pp.Child("status"), fmt.Sprintf("valid values: %q", conditionStatuses)))
		case !sets.New(conditionStatuses...).Has(p.Status):
			errs = append(errs, field.NotSupported(pp.Child("status"), p.Status, conditionStatuses))
		}
	}
	return errs
}

func validateOnExitCodes(r *batchv1.PodFailurePolicyOnExitCodesRequirement, path *field.Path, containers sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	op := path.Child("operator")
	switch {
	case r.Operator == "":
		errs = append(errs, field.Required(op, fmt.Sprintf("valid values: %q", onExitCodesOperators)))
	case !sets.New(onExitCodesOperators...).Has(r.Operator):
		errs = append(errs, field.NotSupported(op, r.Operator, onExitCodesOperators))
	}
	if r.ContainerName != nil && !containers.Has(*r.ContainerName) {
		errs = append(errs, field.Invalid(path.Child("containerName"), *r.ContainerName, "must be one of the container or initContainer names in the pod template"))
	}
	values := path.Child("values")
	if len(r.Values) == 0 {
		errs = append(errs, field.Invalid(values, r.Values, "at least one value is required"))
	} else if len(r.Values) > maxPodFailurePolicyOnExitCodesValues {
		errs = append(errs, field.TooMany(values, len(r.Values), maxPodFailurePolicyOnExitCodesValues))
	}
	ordered := true
	seen := sets.New[int32]()
	for i, v := range r.Values {
		if r.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
			errs = append(errs, field.Invalid(values.Index(i), v, "must not be 0 for the In operator"))
		}
		if seen.Has(v) {
			errs = append(errs, field.Duplicate(values.Index(i), v))
		} else {
			seen.Insert(v)
		}
		if i > 0 && r.Values[i-1] > v {
			ordered = false
		}
	}
	if !ordered {
		errs = append(errs, field.Invalid(values, r.Values, "must be ordered"))
	}
	return errs
}

// jobSpecWarnings are kube's warnings on a Job spec at path: an Indexed
// Job too large to track failed indexes, and the pod template's.
func jobSpecWarnings(path *field.Path, spec *batchv1.JobSpec) []string {
	var out []string
	if spec.CompletionMode != nil && *spec.CompletionMode == batchv1.IndexedCompletion {
		if deref(spec.Completions) > completionsSoftLimit && deref(spec.Parallelism) > parallelismLimitForHighCompletions {
			out = append(out, fmt.Sprintf("%s: In Indexed Jobs with a number of completions higher than 10^5 and a parallelism higher than 10^4, Kubernetes might not be able to track completedIndexes when a big number of indexes fail", path))
		}
	}
	return append(out, podspec.TemplateWarnings(path.Child("template"), &spec.Template)...)
}

func deref(v *int32) int32 {
	if v == nil {
		return 0
	}
	return *v
}

// nameWarnings advises against a Job or CronJob name that is not a DNS
// label: the name goes into pod names and hostnames.
func nameWarnings(name string) []string {
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return []string{fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs)}
	}
	return nil
}
