package validatingadmissionpolicy

import (
	"k8s.io/api/admissionregistration/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/cronplane/cronplane/pkg/admission"
)

// request is what matching reads of a write.
type request struct {
	a *admission.Attributes
	// objectLabels and oldLabels are the labels of the new and the
	// stored object.
	objectLabels, oldLabels labels.Set
	// namespaceLabels are the labels of the request's namespace (of the
	// namespace itself for a write of one); nil for other cluster-scoped
	// resources.
	namespaceLabels labels.Set
}

// matches reports whether m selects the request: a resource rule
// matches, no exclude rule does, and both selectors match. A bad
// selector matches nothing.
func matches(m *v1beta1.MatchResources, r *request) bool {
	if m == nil {
		return true
	}
	if !anyRule(m.ResourceRules, r.a) || anyRule(m.ExcludeResourceRules, r.a) {
		return false
	}
	if r.namespaceLabels != nil && !selects(m.NamespaceSelector, r.namespaceLabels) {
		return false
	}
	// An object matches when it or its stored form does, as in kube.
	return selects(m.ObjectSelector, r.objectLabels) || selects(m.ObjectSelector, r.oldLabels)
}

func selects(s *metav1.LabelSelector, set labels.Set) bool {
	if s == nil {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return false
	}
	return sel.Matches(set)
}

// anyRule reports whether one of rules names the request's operation,
// resource (and subresource), scope and name.
func anyRule(rules []v1beta1.NamedRuleWithOperations, a *admission.Attributes) bool {
	for _, r := range rules {
		if ruleMatches(r, a) {
			return true
		}
	}
	return false
}

func ruleMatches(r v1beta1.NamedRuleWithOperations, a *admission.Attributes) bool {
	if len(r.ResourceNames) > 0 && !contains(r.ResourceNames, a.Name) {
		return false
	}
	if !containsOrStar(r.Operations, v1beta1.OperationType(a.Operation)) ||
		!containsOrStar(r.APIGroups, a.Resource.Group) ||
		!containsOrStar(r.APIVersions, a.Resource.Version) {
		return false
	}
	if r.Scope != nil {
		switch *r.Scope {
		case "Namespaced":
			if a.Namespace == "" {
				return false
			}
		case "Cluster":
			if a.Namespace != "" {
				return false
			}
		}
	}
	for _, res := range r.Resources {
		if resourceMatches(res, a.Resource.Resource, a.Subresource) {
			return true
		}
	}
	return false
}

// resourceMatches matches "res", "res/sub", "*" (resources, not
// subresources), "res/*", "*/sub" and "*/*".
func resourceMatches(pattern, resource, subresource string) bool {
	want := resource
	if subresource != "" {
		want += "/" + subresource
	}
	switch pattern {
	case "*/*", want:
		return true
	case "*":
		return subresource == ""
	}
	res, sub, ok := cutSlash(pattern)
	if !ok || subresource == "" {
		return false
	}
	return (res == "*" || res == resource) && (sub == "*" || sub == subresource)
}

func cutSlash(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func containsOrStar[T ~string](l []T, s T) bool {
	for _, x := range l {
		if x == s || x == "*" {
			return true
		}
	}
	return false
}
