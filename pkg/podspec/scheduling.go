package podspec

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

func validateAffinity(a *corev1.Affinity, opts Options, path *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		p := path.Child("nodeAffinity")
		if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
			errs = append(errs, validateNodeSelector(r, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			tp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			if term.Weight <= 0 || term.Weight > 100 {
				errs = append(errs, field.Invalid(tp.Child("weight"), term.Weight, "must be in the range 1-100"))
			}
			errs = append(errs, validateNodeSelectorTerm(term.Preference, tp.Child("preference"))...)
		}
	}
	for _, pa := range []struct {
		name      string
		required  []corev1.PodAffinityTerm
		preferred []corev1.WeightedPodAffinityTerm
		set       bool
	}{
		{"podAffinity", podAffinityRequired(a.PodAffinity), podAffinityPreferred(a.PodAffinity), a.PodAffinity != nil},
		{"podAntiAffinity", podAntiAffinityRequired(a.PodAntiAffinity), podAntiAffinityPreferred(a.PodAntiAffinity), a.PodAntiAffinity != nil},
	} {
		if !pa.set {
			continue
		}
		p := path.Child(pa.name)
		for i, term := range pa.required {
			errs = append(errs, validatePodAffinityTerm(term, opts, p.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))...)
		}
		for i, term := range pa.preferred {
			tp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			if term.Weight <= 0 || term.Weight > 100 {
				errs = append(errs, field.Invalid(tp.Child("weight"), term.Weight, "must be in the range 1-100"))
			}
			errs = append(errs, validatePodAffinityTerm(term.PodAffinityTerm, opts, tp.Child("podAffinityTerm"))...)
		}
	}
	return errs
}

func podAffinityRequired(a *corev1.PodAffinity) []corev1.PodAffinityTerm {
	if a == nil {
		return nil
	}
	return a.RequiredDuringSchedulingIgnoredDuringExecution
}

func podAffinityPreferred(a *corev1.PodAffinity) []corev1.WeightedPodAffinityTerm {
	if a == nil {
		return nil
	}
	return a.PreferredDuringSchedulingIgnoredDuringExecution
}

func podAntiAffinityRequired(a *corev1.PodAntiAffinity) []corev1.PodAffinityTerm {
	if a == nil {
		return nil
	}
	return a.RequiredDuringSchedulingIgnoredDuringExecution
}

func podAntiAffinityPreferred(a *corev1.PodAntiAffinity) []corev1.WeightedPodAffinityTerm {
	if a == nil {
		return nil
	}
	return a.PreferredDuringSchedulingIgnoredDuringExecution
}

func validateNodeSelector(s *corev1.NodeSelector, path *field.Path) field.ErrorList {
	p := path.Child("nodeSelectorTerms")
	if len(s.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(p, "must have at least one node selector term")}
	}
	var errs field.ErrorList
	for i, term := range s.NodeSelectorTerms {
		errs = append(errs, validateNodeSelectorTerm(term, p.Index(i))...)
	}
	return errs
}

func validateNodeSelectorTerm(term corev1.NodeSelectorTerm, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, r := range term.MatchExpressions {
		p := path.Child("matchExpressions").Index(i)
		switch r.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(r.Values) == 0 {
				errs = append(errs, field.Required(p.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
			}
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			if len(r.Values) > 0 {
				errs = append(errs, field.Forbidden(p.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
			}
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(r.Values) != 1 {
				errs = append(errs, field.Required(p.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
			}
		default:
			errs = append(errs, field.Invalid(p.Child("operator"), r.Operator, "not a valid selector operator"))
		}
		errs = append(errs, metav1validation.ValidateLabelName(r.Key, p.Child("key"))...)
	}
	for i, r := range term.MatchFields {
		p := path.Child("matchFields").Index(i)
		switch r.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(r.Values) != 1 {
				errs = append(errs, field.Required(p.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
			}
		default:
			errs = append(errs, field.Invalid(p.Child("operator"), r.Operator, "not a valid selector operator"))
		}
		if r.Key != metav1.ObjectNameField {
			errs = append(errs, field.Invalid(p.Child("key"), r.Key, "not a valid field selector key"))
			continue
		}
		for j, v := range r.Values {
			errs = append(errs, subdomainName(v, p.Child("values").Index(j))...)
		}
	}
	return errs
}

func validatePodAffinityTerm(term corev1.PodAffinityTerm, opts Options, path *field.Path) field.ErrorList {
	errs := affinityTermSelectorErrors(term, opts.AllowInvalidLabelValueInSelector, path)
	for _, ns := range term.Namespaces {
		for _, msg := range apivalidation.ValidateNamespaceName(ns, false) {
			errs = append(errs, field.Invalid(path.Child("namespace"), ns, msg))
		}
	}
	errs = append(errs, validateMatchLabelKeys(path, term.MatchLabelKeys, term.MismatchLabelKeys, term.LabelSelector)...)
	if term.TopologyKey == "" {
		errs = append(errs, field.Required(path.Child("topologyKey"), "can not be empty"))
	}
	return append(errs, metav1validation.ValidateLabelName(term.TopologyKey, path.Child("topologyKey"))...)
}

func affinityTermSelectorErrors(term corev1.PodAffinityTerm, allowInvalidValues bool, path *field.Path) field.ErrorList {
	opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: allowInvalidValues}
	errs := metav1validation.ValidateLabelSelector(term.LabelSelector, opts, path.Child("labelSelector"))
	return append(errs, metav1validation.ValidateLabelSelector(term.NamespaceSelector, opts, path.Child("namespaceSelector"))...)
}

// validateMatchLabelKeys checks a pod affinity term's matchLabelKeys and
// mismatchLabelKeys (kept only where the stored spec has them, the gate
// being off in v1.29).
func validateMatchLabelKeys(path *field.Path, match, mismatch []string, selector *metav1.LabelSelector) field.ErrorList {
	var errs field.ErrorList
	for _, keys := range []struct {
		name string
		keys []string
	}{{"matchLabelKeys", match}, {"mismatchLabelKeys", mismatch}} {
		if len(keys.keys) == 0 {
			continue
		}
		if selector == nil {
			errs = append(errs, field.Forbidden(path.Child(keys.name), "must not be specified when labelSelector is not set"))
			continue
		}
		for i, k := range keys.keys {
			errs = append(errs, metav1validation.ValidateLabelName(k, path.Child(keys.name).Index(i))...)
		}
	}
	if selector != nil {
		index := map[string]int{}
		for i, k := range match {
			index[k] = i
		}
		keys := sets.New[string]()
		for k := range selector.MatchLabels {
			keys.Insert(k)
		}
		for _, e := range selector.MatchExpressions {
			if i, ok := index[e.Key]; ok && keys.Has(e.Key) {
				errs = append(errs, field.Invalid(path.Index(i), e.Key, "exists in both matchLabelKeys and labelSelector"))
			}
			keys.Insert(e.Key)
		}
	}
	mismatched := sets.New(mismatch...)
	for i, k := range match {
		if mismatched.Has(k) {
			errs = append(errs, field.Invalid(path.Child("matchLabelKeys").Index(i), k, "exists in both matchLabelKeys and mismatchLabelKeys"))
		}
	}
	return errs
}

// ValidateTolerations checks tolerations as kube does in a pod spec and
// in the tolerations annotation.
func ValidateTolerations(tolerations []corev1.Toleration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		p := path.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(p.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, strings.Join(msgs, ";")))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("operator"), internalValue{t}, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		switch t.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}))
		}
	}
	return errs
}

// validateHostAliases: kube words these errors at the list, not the item.
func validateHostAliases(aliases []corev1.HostAlias, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, a := range aliases {
		if netutils.ParseIPSloppy(a.IP) == nil {
			errs = append(errs, field.Invalid(path.Child("ip"), a.IP, "must be valid IP address"))
		}
		for _, h := range a.Hostnames {
			errs = append(errs, dnsSubdomain(h, path.Child("hostnames"))...)
		}
	}
	return errs
}

const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

func validateDNSConfig(c *corev1.PodDNSConfig, policy corev1.DNSPolicy, path *field.Path) field.ErrorList {
	if policy == corev1.DNSNone {
		if c == nil {
			return field.ErrorList{field.Required(path, "must provide `dnsConfig` when `dnsPolicy` is None")}
		}
		if len(c.Nameservers) == 0 {
			return field.ErrorList{field.Required(path.Child("nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None")}
		}
	}
	if c == nil {
		return nil
	}
	var errs field.ErrorList
	if len(c.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(path.Child("nameservers"), c.Nameservers, fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
	}
	for i, ns := range c.Nameservers {
		if netutils.ParseIPSloppy(ns) == nil {
			errs = append(errs, field.Invalid(path.Child("nameservers").Index(i), ns, "must be valid IP address"))
		}
	}
	if len(c.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(path.Child("searches"), c.Searches, fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths)))
	}
	if len(strings.Join(c.Searches, " ")) > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(path.Child("searches"), c.Searches, fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, s := range c.Searches {
		errs = append(errs, dnsSubdomain(strings.TrimSuffix(s, "."), path.Child("searches").Index(i))...)
	}
	for i, o := range c.Options {
		if o.Name == "" {
			errs = append(errs, field.Required(path.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}

func validateSchedulingGates(gates []corev1.PodSchedulingGate, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, g := range gates {
		errs = append(errs, qualifiedName(g.Name, path.Index(i))...)
		if seen.Has(g.Name) {
			errs = append(errs, field.Duplicate(path.Index(i), g.Name))
		}
		seen.Insert(g.Name)
	}
	return errs
}

func validateTopologySpreadConstraints(constraints []corev1.TopologySpreadConstraint, path *field.Path, opts Options) field.ErrorList {
	var errs field.ErrorList
	for i, c := range constraints {
		p := path.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, "must be greater than zero"))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
		}
		if c.WhenUnsatisfiable != corev1.DoNotSchedule && c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			errs = append(errs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}))
		}
		for _, later := range constraints[i+1:] {
			if c.TopologyKey == later.TopologyKey && c.WhenUnsatisfiable == later.WhenUnsatisfiable {
				errs = append(errs, field.Duplicate(p.Child("{topologyKey, whenUnsatisfiable}"), fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
		if m := c.MinDomains; m != nil {
			if *m <= 0 {
				errs = append(errs, field.Invalid(p.Child("minDomains"), *m, "must be greater than zero"))
			}
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				errs = append(errs, field.Invalid(p.Child("minDomains"), *m, fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", corev1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		for _, policy := range []struct {
			name string
			p    *corev1.NodeInclusionPolicy
		}{{"nodeAffinityPolicy", c.NodeAffinityPolicy}, {"nodeTaintsPolicy", c.NodeTaintsPolicy}} {
			if v := policy.p; v != nil && *v != corev1.NodeInclusionPolicyHonor && *v != corev1.NodeInclusionPolicyIgnore {
				errs = append(errs, field.NotSupported(p.Child(policy.name), *v, []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore}))
			}
		}
		errs = append(errs, validateSpreadMatchLabelKeys(p.Child("matchLabelKeys"), c.MatchLabelKeys, c.LabelSelector)...)
		if !opts.AllowInvalidTopologySpreadConstraintLabelSelector {
			errs = append(errs, metav1validation.ValidateLabelSelector(c.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("labelSelector"))...)
		}
	}
	return errs
}

func validateSpreadMatchLabelKeys(path *field.Path, keys []string, selector *metav1.LabelSelector) field.ErrorList {
	if len(keys) == 0 {
		return nil
	}
	var errs field.ErrorList
	inSelector := sets.New[string]()
	if selector != nil {
		for k := range selector.MatchLabels {
			inSelector.Insert(k)
		}
		for _, e := range selector.MatchExpressions {
			inSelector.Insert(e.Key)
		}
	} else {
		errs = append(errs, field.Forbidden(path, "must not be specified when labelSelector is not set"))
	}
	for i, k := range keys {
		errs = append(errs, metav1validation.ValidateLabelName(k, path.Index(i))...)
		if inSelector.Has(k) {
			errs = append(errs, field.Invalid(path.Index(i), k, "exists in both matchLabelKeys and labelSelector"))
		}
	}
	return errs
}

// hasInvalidAffinityLabelValue reports whether a stored spec has a pod
// affinity selector with a label value kube now refuses: its updates are
// forgiven those.
func hasInvalidAffinityLabelValue(spec *corev1.PodSpec) bool {
	if spec.Affinity == nil {
		return false
	}
	for _, terms := range podAffinityTerms(spec.Affinity) {
		for _, t := range terms {
			if len(affinityTermSelectorErrors(*t, false, nil)) > 0 {
				return true
			}
		}
	}
	return false
}

func hasInvalidSpreadSelector(spec *corev1.PodSpec) bool {
	for _, c := range spec.TopologySpreadConstraints {
		if len(metav1validation.ValidateLabelSelector(c.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, nil)) > 0 {
			return true
		}
	}
	return false
}
