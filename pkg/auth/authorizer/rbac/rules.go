package rbac

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/cronplane/cronplane/pkg/auth/authorizer"
)

// RuleAllows reports whether rule grants the access a describes: its
// verb, and its API group, resource (with "resource/subresource" and
// "*/subresource" forms) and name, or its path for a non-resource
// request ("/healthz", "/apis/*").
func RuleAllows(a authorizer.Attributes, rule *rbacv1.PolicyRule) bool {
	if !hasOrStar(rule.Verbs, a.Verb) {
		return false
	}
	if !a.ResourceRequest {
		return urlMatches(rule.NonResourceURLs, a.Path)
	}
	return hasOrStar(rule.APIGroups, a.APIGroup) &&
		resourceMatches(rule.Resources, a.Resource, a.Subresource) &&
		(len(rule.ResourceNames) == 0 || has(rule.ResourceNames, a.Name))
}

func has(set []string, s string) bool {
	for _, v := range set {
		if v == s {
			return true
		}
	}
	return false
}

func hasOrStar(set []string, s string) bool {
	for _, v := range set {
		if v == s || v == rbacv1.VerbAll {
			return true
		}
	}
	return false
}

// resourceMatches: a subresource is granted by its combined name, by
// "*/<subresource>" or by "*"; a resource by its name or "*".
func resourceMatches(rules []string, resource, subresource string) bool {
	for _, r := range rules {
		switch {
		case r == rbacv1.ResourceAll:
			return true
		case subresource == "" && r == resource:
			return true
		case subresource != "" && len(r) == len(resource)+1+len(subresource) &&
			strings.HasPrefix(r, resource) && r[len(resource)] == '/' && strings.HasSuffix(r, subresource):
			return true
		case subresource != "" && strings.HasPrefix(r, "*/") && r[2:] == subresource:
			return true
		}
	}
	return false
}

// urlMatches: a path is granted by itself, by "*", or by a prefix ending
// in "*".
func urlMatches(rules []string, path string) bool {
	for _, r := range rules {
		switch {
		case r == rbacv1.NonResourceAll || r == path:
			return true
		case strings.HasSuffix(r, "*") && strings.HasPrefix(path, r[:len(r)-1]):
			return true
		}
	}
	return false
}
