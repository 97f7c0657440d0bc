package flowcontrol

import (
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/endpoints/request"
)

// Digest is what classification reads of a request: who sends it and
// what it asks for.
type Digest struct {
	User *user.Info
	Info *request.RequestInfo
}

// serviceAccountPrefix starts the user name of a service account:
// system:serviceaccount:<namespace>:<name>.
const serviceAccountPrefix = "system:serviceaccount:"

// matches reports whether fs classifies d: some rule has a subject that
// is the sender and a resource or non-resource rule that is the request.
func matches(fs *flowcontrolv1.FlowSchema, d Digest) bool {
	for i := range fs.Spec.Rules {
		if matchesRule(&fs.Spec.Rules[i], d) {
			return true
		}
	}
	return false
}

func matchesRule(r *flowcontrolv1.PolicyRulesWithSubjects, d Digest) bool {
	if !slices.ContainsFunc(r.Subjects, func(s flowcontrolv1.Subject) bool { return matchesSubject(s, d.User) }) {
		return false
	}
	if d.Info.IsResourceRequest {
		return slices.ContainsFunc(r.ResourceRules, func(rr flowcontrolv1.ResourcePolicyRule) bool { return matchesResourceRule(rr, d.Info) })
	}
	return slices.ContainsFunc(r.NonResourceRules, func(nr flowcontrolv1.NonResourcePolicyRule) bool { return matchesNonResourceRule(nr, d.Info) })
}

func matchesSubject(s flowcontrolv1.Subject, u *user.Info) bool {
	switch s.Kind {
	case flowcontrolv1.SubjectKindUser:
		return s.User != nil && (s.User.Name == flowcontrolv1.NameAll || s.User.Name == u.Name)
	case flowcontrolv1.SubjectKindGroup:
		return s.Group != nil && (s.Group.Name == flowcontrolv1.NameAll || slices.Contains(u.Groups, s.Group.Name))
	case flowcontrolv1.SubjectKindServiceAccount:
		if s.ServiceAccount == nil {
			return false
		}
		ns, name, ok := strings.Cut(strings.TrimPrefix(u.Name, serviceAccountPrefix), ":")
		if !ok || !strings.HasPrefix(u.Name, serviceAccountPrefix) {
			return false
		}
		return (s.ServiceAccount.Namespace == flowcontrolv1.NamespaceEvery || s.ServiceAccount.Namespace == ns) &&
			(s.ServiceAccount.Name == flowcontrolv1.NameAll || s.ServiceAccount.Name == name)
	}
	return false
}

// matchesAll reports whether list holds want or the wildcard.
func matchesAll(list []string, want string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, want)
}

func matchesResourceRule(rr flowcontrolv1.ResourcePolicyRule, ri *request.RequestInfo) bool {
	if !matchesAll(rr.Verbs, ri.Verb) || !matchesAll(rr.APIGroups, ri.APIGroup) {
		return false
	}
	resource := ri.Resource
	if ri.Subresource != "" {
		resource += "/" + ri.Subresource
	}
	if !matchesAll(rr.Resources, resource) {
		return false
	}
	if ri.Namespace == "" {
		return rr.ClusterScope
	}
	return matchesAll(rr.Namespaces, ri.Namespace)
}

func matchesNonResourceRule(nr flowcontrolv1.NonResourcePolicyRule, ri *request.RequestInfo) bool {
	if !matchesAll(nr.Verbs, ri.Verb) {
		return false
	}
	for _, u := range nr.NonResourceURLs {
		if u == "*" || u == ri.Path {
			return true
		}
		// A rule covers the paths below it, "/healthz" and "/healthz/*"
		// alike.
		prefix := strings.TrimSuffix(u, "*")
		if !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		if strings.HasPrefix(ri.Path, prefix) {
			return true
		}
	}
	return false
}

// distinguisher is the part of the flow's name the schema's
// distinguisher method takes from the request.
func distinguisher(fs *flowcontrolv1.FlowSchema, d Digest) string {
	if fs.Spec.DistinguisherMethod == nil {
		return ""
	}
	switch fs.Spec.DistinguisherMethod.Type {
	case flowcontrolv1.FlowDistinguisherMethodByUserType:
		return d.User.Name
	case flowcontrolv1.FlowDistinguisherMethodByNamespaceType:
		return d.Info.Namespace
	}
	return ""
}

// sortSchemas orders the schemas as they are tried: by
// matchingPrecedence, then by name.
func sortSchemas(fss []*flowcontrolv1.FlowSchema) {
	slices.SortFunc(fss, func(a, b *flowcontrolv1.FlowSchema) int {
		if a.Spec.MatchingPrecedence != b.Spec.MatchingPrecedence {
			return int(a.Spec.MatchingPrecedence - b.Spec.MatchingPrecedence)
		}
		return strings.Compare(a.Name, b.Name)
	})
}
