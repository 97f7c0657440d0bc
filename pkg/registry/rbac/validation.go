package rbac

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var metadataPath = field.NewPath("metadata")

// validateName is kube's rule for the names of RBAC objects and of the
// role a binding refers to: a path segment, of any length. A
// generateName is held to the same rule as a name.
func validateName(name string, _ bool) []string {
	return path.IsValidPathSegmentName(name)
}

// standardFinalizers are the finalizer names that need no domain.
var standardFinalizers = map[string]bool{
	string(corev1.FinalizerKubernetes): true,
	metav1.FinalizerOrphanDependents:   true,
	metav1.FinalizerDeleteDependents:   true,
}

// validateFinalizers is the check kube adds to the metadata of its
// built-in kinds: a finalizer without a domain must be a standard one.
func validateFinalizers(finalizers []string) field.ErrorList {
	var errs field.ErrorList
	for i, f := range finalizers {
		if !strings.Contains(f, "/") && !standardFinalizers[f] {
			errs = append(errs, field.Invalid(metadataPath.Child("finalizers").Index(i), f, "name is neither a standard finalizer name nor is it fully qualified"))
		}
	}
	return errs
}

// updateErrors lists what kube's update validation of an RBAC object adds
// to the store's metadata checks, given the kind's own checks of the new
// object (content, which starts with the finalizers). kube's strategy
// validates the new object, metadata included, and then its update
// validation validates it once more before checking the metadata change:
// so each error of the new object is a cause twice, as in kube (the
// message, which drops repeats, names it once).
func updateErrors(m, old *metav1.ObjectMeta, namespaced bool, content field.ErrorList) field.ErrorList {
	full := append(apivalidation.ValidateObjectMeta(m, namespaced, validateName, metadataPath), content...)
	errs := append(append(field.ErrorList{}, full...), full...)
	errs = append(errs, apivalidation.ValidateObjectMetaUpdate(m, old, metadataPath)...)
	return append(errs, validateFinalizers(m.Finalizers)...)
}

// validateRules checks each rule: it needs verbs, and either
// non-resource URLs (in a cluster role only, and nothing else) or API
// groups and resources.
func validateRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, r := range rules {
		p := field.NewPath("rules").Index(i)
		if len(r.Verbs) == 0 {
			errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
		}
		if len(r.NonResourceURLs) > 0 {
			if namespaced {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(r.APIGroups) == 0 {
			errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(r.Resources) == 0 {
			errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
	return errs
}

// validateAggregationRule checks the selectors of a cluster role's
// aggregation rule; allowInvalidLabelValue skips the check of label values.
func validateAggregationRule(rule *rbacv1.AggregationRule, allowInvalidLabelValue bool) field.ErrorList {
	if rule == nil {
		return nil
	}
	var errs field.ErrorList
	p := field.NewPath("aggregationRule", "clusterRoleSelectors")
	if len(rule.ClusterRoleSelectors) == 0 {
		errs = append(errs, field.Required(p, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
	}
	opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: allowInvalidLabelValue}
	for i := range rule.ClusterRoleSelectors {
		sel := &rule.ClusterRoleSelectors[i]
		errs = append(errs, metav1validation.ValidateLabelSelector(sel, opts, p.Index(i))...)
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			// kube shows the selector it failed to build, which is nil.
			errs = append(errs, field.Invalid(p.Index(i), nil, "invalid label selector."))
		}
	}
	return errs
}

// hasInvalidSelectorLabelValue reports whether a stored cluster role has
// a selector that today's checks refuse; kube then lets an update keep
// its label values.
func hasInvalidSelectorLabelValue(cr *rbacv1.ClusterRole) bool {
	if cr.AggregationRule == nil {
		return false
	}
	for i := range cr.AggregationRule.ClusterRoleSelectors {
		if len(metav1validation.ValidateLabelSelector(&cr.AggregationRule.ClusterRoleSelectors[i], metav1validation.LabelSelectorValidationOptions{}, nil)) > 0 {
			return true
		}
	}
	return false
}

// validateBinding checks what a binding of either scope holds beyond
// metadata: its roleRef (a Role, in a namespace only, or a ClusterRole)
// and its subjects.
func validateBinding(m *metav1.ObjectMeta, ref rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	errs := validateFinalizers(m.Finalizers)
	refPath := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(refPath.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	kinds := []string{"ClusterRole"}
	if namespaced {
		kinds = []string{"Role", "ClusterRole"}
	}
	if !slices.Contains(kinds, ref.Kind) {
		errs = append(errs, field.NotSupported(refPath.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(refPath.Child("name"), ""))
	} else {
		for _, msg := range validateName(ref.Name, false) {
			errs = append(errs, field.Invalid(refPath.Child("name"), ref.Name, msg))
		}
	}
	for i, s := range subjects {
		errs = append(errs, validateSubject(s, namespaced, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

// validateSubject checks one subject: a ServiceAccount is named as
// service accounts are, is in the core group and, bound cluster-wide,
// names its namespace; a User or Group is in the RBAC group.
func validateSubject(s rbacv1.Subject, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range apivalidation.NameIsDNSSubdomain(s.Name, false) {
				errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(p.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}

// validateRoleRefUnchanged refuses a change of a binding's role: what a
// binding grants is fixed at its creation.
func validateRoleRefUnchanged(ref, old rbacv1.RoleRef) field.ErrorList {
	if ref == old {
		return nil
	}
	// kube's message shows the value as its internal type prints:
	// rbac.RoleRef{APIGroup:"...", Kind:"...", Name:"..."}.
	type RoleRef rbacv1.RoleRef
	return field.ErrorList{field.Invalid(field.NewPath("roleRef"), RoleRef(ref), "cannot change roleRef")}
}
