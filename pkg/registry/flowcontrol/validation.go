package flowcontrol

import (
	"fmt"
	"math"
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cronplane/cronplane/pkg/flowcontrol/bootstrap"
	"github.com/cronplane/cronplane/pkg/podspec"
)

// The values kube accepts, sorted as its messages list them.
var (
	supportedVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"}
	subjectKinds   = []string{string(flowcontrolv1.SubjectKindGroup), string(flowcontrolv1.SubjectKindServiceAccount), string(flowcontrolv1.SubjectKindUser)}
	distinguishers = []string{string(flowcontrolv1.FlowDistinguisherMethodByNamespaceType), string(flowcontrolv1.FlowDistinguisherMethodByUserType)}
	enablements    = []string{string(flowcontrolv1.PriorityLevelEnablementExempt), string(flowcontrolv1.PriorityLevelEnablementLimited)}
	limitResponses = []string{string(flowcontrolv1.LimitResponseTypeQueue), string(flowcontrolv1.LimitResponseTypeReject)}
)

const (
	maxMatchingPrecedence = 10000
	maxQueues             = 10 * 1000 * 1000
	// maxHashBits bounds the entropy shuffle sharding draws from one hash.
	maxHashBits = 60
	nsErrIntro  = "each member of this list must be '*' or a DNS-1123 label; "
)

func hasWildcard(list []string) bool { return slices.Contains(list, "*") }

func mandatoryFlowSchema(name string) *flowcontrolv1.FlowSchema {
	fs, _ := bootstrap.Mandatory()
	for _, o := range fs {
		if o.Name == name {
			return o
		}
	}
	return nil
}

func mandatoryLevel(name string) *flowcontrolv1.PriorityLevelConfiguration {
	_, pl := bootstrap.Mandatory()
	for _, o := range pl {
		if o.Name == name {
			return o
		}
	}
	return nil
}

// validateFlowSchema is kube's validation of a FlowSchema's spec and
// status; the mandatory schemas' specs are fixed.
func validateFlowSchema(fs *flowcontrolv1.FlowSchema) field.ErrorList {
	specPath := field.NewPath("spec")
	errs := validateFlowSchemaSpec(fs.Name, &fs.Spec, specPath)
	if mand := mandatoryFlowSchema(fs.Name); mand != nil && !equality.Semantic.DeepEqual(fs.Spec, mand.Spec) {
		errs = append(errs, field.Invalid(specPath, podspec.InternalValue(fs.Spec), fmt.Sprintf("spec of '%s' must equal the fixed value", fs.Name)))
	}
	return append(errs, validateFlowSchemaStatus(&fs.Status)...)
}

func validateFlowSchemaSpec(name string, spec *flowcontrolv1.FlowSchemaSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	precedence := path.Child("matchingPrecedence")
	switch {
	case spec.MatchingPrecedence <= 0:
		errs = append(errs, field.Invalid(precedence, spec.MatchingPrecedence, "must be a positive value"))
	case spec.MatchingPrecedence > maxMatchingPrecedence:
		errs = append(errs, field.Invalid(precedence, spec.MatchingPrecedence, fmt.Sprintf("must not be greater than %v", maxMatchingPrecedence)))
	}
	if spec.MatchingPrecedence == 1 && name != flowcontrolv1.FlowSchemaNameExempt {
		errs = append(errs, field.Invalid(precedence, spec.MatchingPrecedence, "only the schema named 'exempt' may have matchingPrecedence 1"))
	}
	if d := spec.DistinguisherMethod; d != nil && !slices.Contains(distinguishers, string(d.Type)) {
		// kube reports the whole method, not its type.
		errs = append(errs, field.NotSupported(path.Child("distinguisherMethod", "type"), podspec.InternalValue(d), distinguishers))
	}
	level := path.Child("priorityLevelConfiguration", "name")
	if n := spec.PriorityLevelConfiguration.Name; n != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(n, false) {
			errs = append(errs, field.Invalid(level, n, msg))
		}
	} else {
		errs = append(errs, field.Required(level, "must reference a priority level"))
	}
	for i := range spec.Rules {
		errs = append(errs, validatePolicyRulesWithSubjects(&spec.Rules[i], path.Child("rules").Index(i))...)
	}
	return errs
}

func validatePolicyRulesWithSubjects(rule *flowcontrolv1.PolicyRulesWithSubjects, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Subjects) == 0 {
		errs = append(errs, field.Required(path.Child("subjects"), "subjects must contain at least one value"))
	}
	if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
		errs = append(errs, field.Required(path, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i := range rule.Subjects {
		errs = append(errs, validateSubject(&rule.Subjects[i], path.Child("subjects").Index(i))...)
	}
	for i := range rule.ResourceRules {
		errs = append(errs, validateResourceRule(&rule.ResourceRules[i], path.Child("resourceRules").Index(i))...)
	}
	for i := range rule.NonResourceRules {
		errs = append(errs, validateNonResourceRule(&rule.NonResourceRules[i], path.Child("nonResourceRules").Index(i))...)
	}
	return errs
}

func validateSubject(s *flowcontrolv1.Subject, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	forbid := func(set bool, name, kind string) {
		if set {
			errs = append(errs, field.Forbidden(path.Child(name), fmt.Sprintf("%s is forbidden when subject kind is not '%s'", name, kind)))
		}
	}
	switch s.Kind {
	case flowcontrolv1.SubjectKindServiceAccount:
		errs = append(errs, validateServiceAccountSubject(s.ServiceAccount, path.Child("serviceAccount"))...)
		forbid(s.User != nil, "user", "User")
		forbid(s.Group != nil, "group", "Group")
	case flowcontrolv1.SubjectKindUser:
		if s.User == nil {
			errs = append(errs, field.Required(path.Child("user"), "user is required when subject kind is 'User'"))
		} else if s.User.Name == "" {
			errs = append(errs, field.Required(path.Child("user", "name"), ""))
		}
		forbid(s.ServiceAccount != nil, "serviceAccount", "ServiceAccount")
		forbid(s.Group != nil, "group", "Group")
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			errs = append(errs, field.Required(path.Child("group"), "group is required when subject kind is 'Group'"))
		} else if s.Group.Name == "" {
			errs = append(errs, field.Required(path.Child("group", "name"), ""))
		}
		forbid(s.ServiceAccount != nil, "serviceAccount", "ServiceAccount")
		forbid(s.User != nil, "user", "User")
	default:
		errs = append(errs, field.NotSupported(path.Child("kind"), s.Kind, subjectKinds))
	}
	return errs
}

func validateServiceAccountSubject(sa *flowcontrolv1.ServiceAccountSubject, path *field.Path) field.ErrorList {
	if sa == nil {
		return field.ErrorList{field.Required(path, "serviceAccount is required when subject kind is 'ServiceAccount'")}
	}
	var errs field.ErrorList
	switch {
	case sa.Name == "":
		errs = append(errs, field.Required(path.Child("name"), ""))
	case sa.Name != flowcontrolv1.NameAll:
		for _, msg := range apivalidation.ValidateServiceAccountName(sa.Name, false) {
			errs = append(errs, field.Invalid(path.Child("name"), sa.Name, msg))
		}
	}
	if sa.Namespace == "" {
		errs = append(errs, field.Required(path.Child("namespace"), "must specify namespace for service account"))
	} else {
		for _, msg := range apivalidation.ValidateNamespaceName(sa.Namespace, false) {
			errs = append(errs, field.Invalid(path.Child("namespace"), sa.Namespace, msg))
		}
	}
	return errs
}

func validateVerbs(verbs []string, path *field.Path) field.ErrorList {
	switch {
	case len(verbs) == 0:
		return field.ErrorList{field.Required(path, "verbs must contain at least one value")}
	case hasWildcard(verbs):
		if len(verbs) > 1 {
			return field.ErrorList{field.Invalid(path, verbs, "if '*' is present, must not specify other verbs")}
		}
	default:
		for _, v := range verbs {
			if !slices.Contains(supportedVerbs, v) {
				return field.ErrorList{field.NotSupported(path, verbs, supportedVerbs)}
			}
		}
	}
	return nil
}

// validateList checks a list that is either "*" alone or names things.
func validateList(list []string, path *field.Path, required, what string) field.ErrorList {
	if len(list) == 0 {
		return field.ErrorList{field.Required(path, required)}
	}
	if hasWildcard(list) && len(list) > 1 {
		return field.ErrorList{field.Invalid(path, list, "if '*' is present, must not specify other "+what)}
	}
	return nil
}

func validateResourceRule(rule *flowcontrolv1.ResourcePolicyRule, path *field.Path) field.ErrorList {
	errs := validateVerbs(rule.Verbs, path.Child("verbs"))
	errs = append(errs, validateList(rule.APIGroups, path.Child("apiGroups"), "resource rules must supply at least one api group", "api groups")...)
	errs = append(errs, validateList(rule.Resources, path.Child("resources"), "resource rules must supply at least one resource", "resources")...)
	namespaces := path.Child("namespaces")
	switch {
	case len(rule.Namespaces) == 0:
		if !rule.ClusterScope {
			errs = append(errs, field.Required(namespaces, "resource rules that are not cluster scoped must supply at least one namespace"))
		}
	case hasWildcard(rule.Namespaces):
		if len(rule.Namespaces) > 1 {
			errs = append(errs, field.Invalid(namespaces, rule.Namespaces, "if '*' is present, must not specify other namespaces"))
		}
	default:
		for i, ns := range rule.Namespaces {
			for _, msg := range apivalidation.ValidateNamespaceName(ns, false) {
				errs = append(errs, field.Invalid(namespaces.Index(i), ns, nsErrIntro+msg))
			}
		}
	}
	return errs
}

func validateNonResourceRule(rule *flowcontrolv1.NonResourcePolicyRule, path *field.Path) field.ErrorList {
	errs := validateVerbs(rule.Verbs, path.Child("verbs"))
	urls := path.Child("nonResourceURLs")
	if more := validateList(rule.NonResourceURLs, urls, "nonResourceURLs must contain at least one value", "non-resource URLs"); more != nil || hasWildcard(rule.NonResourceURLs) {
		return append(errs, more...)
	}
	for i, u := range rule.NonResourceURLs {
		if err := validateNonResourceURL(u, urls.Index(i)); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func validateNonResourceURL(u string, path *field.Path) *field.Error {
	switch {
	case u == "":
		return field.Invalid(path, u, "must not be empty")
	case u == "/":
		return nil
	case !strings.HasPrefix(u, "/"):
		return field.Invalid(path, u, "must start with slash")
	case strings.Contains(u, " "):
		return field.Invalid(path, u, "must not contain white-space")
	case strings.Contains(u, "//"):
		return field.Invalid(path, u, "must not contain double slash")
	}
	if n := strings.Count(u, "*"); n > 1 || (n == 1 && !strings.HasSuffix(u, "/*")) {
		return field.Invalid(path, u, "wildcard can only do suffix matching")
	}
	return nil
}

func validateFlowSchemaStatus(status *flowcontrolv1.FlowSchemaStatus) field.ErrorList {
	types := make([]string, 0, len(status.Conditions))
	for _, c := range status.Conditions {
		types = append(types, string(c.Type))
	}
	return validateConditionTypes(types)
}

func validateLevelStatus(status *flowcontrolv1.PriorityLevelConfigurationStatus) field.ErrorList {
	types := make([]string, 0, len(status.Conditions))
	for _, c := range status.Conditions {
		types = append(types, string(c.Type))
	}
	return validateConditionTypes(types)
}

// validateConditionTypes: each condition has a type, and only one of each.
func validateConditionTypes(types []string) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	path := field.NewPath("status", "conditions")
	for i, t := range types {
		if seen[t] {
			errs = append(errs, field.Duplicate(path.Index(i).Child("type"), t))
		}
		seen[t] = true
		if t == "" {
			errs = append(errs, field.Required(path.Index(i).Child("type"), "must not be empty"))
		}
	}
	return errs
}

// validateLevel is kube's validation of a priority level; allowZeroShares
// is whether a Limited level may have 0 nominalConcurrencyShares, which
// v1.29 allows only to levels that already have it (the
// ZeroLimitedNominalConcurrencyShares gate is off).
func validateLevel(pl *flowcontrolv1.PriorityLevelConfiguration, allowZeroShares bool) field.ErrorList {
	specPath := field.NewPath("spec")
	errs := validateLevelSpec(pl.Name, &pl.Spec, specPath, allowZeroShares)
	if mand := mandatoryLevel(pl.Name); mand != nil {
		have := pl.Spec.DeepCopy()
		msg := "spec of '%s' must equal the fixed value"
		if pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
			// The exempt level's exempt fields are the operator's to tune.
			have.Exempt = mand.Spec.Exempt
			msg = "spec of '%s' except the 'spec.exempt' field must equal the fixed value"
		}
		if !equality.Semantic.DeepEqual(*have, mand.Spec) {
			errs = append(errs, field.Invalid(specPath, podspec.InternalValue(pl.Spec), fmt.Sprintf(msg, pl.Name)))
		}
	}
	return append(errs, validateLevelStatus(&pl.Status)...)
}

func validateLevelSpec(name string, spec *flowcontrolv1.PriorityLevelConfigurationSpec, path *field.Path, allowZeroShares bool) field.ErrorList {
	var errs field.ErrorList
	if (name == flowcontrolv1.PriorityLevelConfigurationNameExempt) != (spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		errs = append(errs, field.Invalid(path.Child("type"), spec.Type, "type must be 'Exempt' if and only if name is 'exempt'"))
	}
	switch spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if spec.Limited != nil {
			errs = append(errs, field.Forbidden(path.Child("limited"), "must be nil if the type is not Limited"))
		}
		if e := spec.Exempt; e != nil {
			exempt := path.Child("exempt")
			if e.NominalConcurrencyShares != nil && *e.NominalConcurrencyShares < 0 {
				errs = append(errs, field.Invalid(exempt.Child("nominalConcurrencyShares"), *e.NominalConcurrencyShares, "must be a non-negative integer"))
			}
			errs = append(errs, validateLendable(e.LendablePercent, exempt)...)
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if spec.Exempt != nil {
			errs = append(errs, field.Forbidden(path.Child("exempt"), "must be nil if the type is Limited"))
		}
		if spec.Limited == nil {
			errs = append(errs, field.Required(path.Child("limited"), "must not be empty when type is Limited"))
		} else {
			errs = append(errs, validateLimited(spec.Limited, path.Child("limited"), allowZeroShares)...)
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("type"), spec.Type, enablements))
	}
	return errs
}

func validateLendable(lendable *int32, path *field.Path) field.ErrorList {
	if lendable != nil && (*lendable < 0 || *lendable > 100) {
		return field.ErrorList{field.Invalid(path.Child("lendablePercent"), *lendable, "must be between 0 and 100, inclusive")}
	}
	return nil
}

func validateLimited(l *flowcontrolv1.LimitedPriorityLevelConfiguration, path *field.Path, allowZeroShares bool) field.ErrorList {
	var errs field.ErrorList
	var shares int32
	if l.NominalConcurrencyShares != nil {
		shares = *l.NominalConcurrencyShares
	}
	sharesPath := path.Child("nominalConcurrencyShares")
	switch {
	case allowZeroShares && shares < 0:
		errs = append(errs, field.Invalid(sharesPath, shares, "must be a non-negative integer"))
	case !allowZeroShares && shares <= 0:
		errs = append(errs, field.Invalid(sharesPath, shares, "must be positive"))
	}
	errs = append(errs, validateLimitResponse(&l.LimitResponse, path.Child("limitResponse"))...)
	errs = append(errs, validateLendable(l.LendablePercent, path)...)
	if b := l.BorrowingLimitPercent; b != nil && *b < 0 {
		errs = append(errs, field.Invalid(path.Child("borrowingLimitPercent"), *b, "if specified, must be a non-negative integer"))
	}
	return errs
}

func validateLimitResponse(lr *flowcontrolv1.LimitResponse, path *field.Path) field.ErrorList {
	switch lr.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if lr.Queuing != nil {
			return field.ErrorList{field.Forbidden(path.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited")}
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		if lr.Queuing == nil {
			return field.ErrorList{field.Required(path.Child("queuing"), "must not be empty if limited.limitResponse.type is Limited")}
		}
		return validateQueuing(lr.Queuing, path.Child("queuing"))
	default:
		return field.ErrorList{field.NotSupported(path.Child("type"), lr.Type, limitResponses)}
	}
	return nil
}

func validateQueuing(q *flowcontrolv1.QueuingConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.QueueLengthLimit <= 0 {
		errs = append(errs, field.Invalid(path.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
	}
	if q.Queues <= 0 {
		errs = append(errs, field.Invalid(path.Child("queues"), q.Queues, "must be positive"))
	} else if q.Queues > maxQueues {
		errs = append(errs, field.Invalid(path.Child("queues"), q.Queues, fmt.Sprintf("must not be greater than %d", maxQueues)))
	}
	hand := path.Child("handSize")
	switch {
	case q.HandSize <= 0:
		errs = append(errs, field.Invalid(hand, q.HandSize, "must be positive"))
	case q.HandSize > q.Queues:
		errs = append(errs, field.Invalid(hand, q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues)))
	case entropyBits(q.Queues, q.HandSize) > maxHashBits:
		errs = append(errs, field.Invalid(hand, q.HandSize,
			fmt.Sprintf("required entropy bits of deckSize %d and handSize %d should not be greater than %d", q.Queues, q.HandSize, maxHashBits)))
	}
	return errs
}

// entropyBits is how many hash bits dealing a hand of handSize from
// deckSize queues needs.
func entropyBits(deckSize, handSize int32) int {
	return int(math.Ceil(float64(handSize) * math.Log2(float64(deckSize))))
}
