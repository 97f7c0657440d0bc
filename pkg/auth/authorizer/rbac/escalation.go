package rbac

import (
	"fmt"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/cronplane/cronplane/pkg/auth/user"
)

// ConfirmNoEscalation refuses to let u grant rules it does not hold
// itself in namespace (cluster-wide when ""), as kube refuses a Role, a
// ClusterRole or a binding that would hand out more than its author has.
// The error names every missing permission, in kube's words.
func (x *Index) ConfirmNoEscalation(u *user.Info, namespace string, rules []rbacv1.PolicyRule) error {
	owner, errs := x.RulesFor(u, namespace)
	missing := Uncovered(owner, rules)
	if len(missing) == 0 {
		return nil
	}
	seen := map[string]bool{}
	var lines []string
	for _, r := range compact(missing) {
		if s := compactString(r); !seen[s] {
			seen[s] = true
			lines = append(lines, s)
		}
	}
	sort.Strings(lines)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", u.Name, u.Groups, strings.Join(lines, "\n"))
	if len(errs) > 0 {
		// kube reads the roles from storage here, whose errors name the
		// resource, and lists its one aggregate error.
		for i, err := range errs {
			if nf, ok := err.(notFound); ok {
				errs[i] = notFound{resource: nf.resource + "s", name: nf.name}
			}
		}
		msg += fmt.Sprintf("; resolution errors: %v", []error{utilerrors.NewAggregate(errs)})
	}
	return fmt.Errorf("%s", msg)
}

// Uncovered returns the parts of rules that no rule of owner grants, each
// one verb on one resource (or name, or URL) of one group.
func Uncovered(owner, rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var missing []rbacv1.PolicyRule
	for _, r := range rules {
		for _, atom := range breakdown(r) {
			covered := false
			for i := range owner {
				if covers(&owner[i], &atom) {
					covered = true
					break
				}
			}
			if !covered {
				missing = append(missing, atom)
			}
		}
	}
	return missing
}

// breakdown splits a rule into rules of one verb each on one group and
// resource (and one name, when it names some), or on one URL.
func breakdown(r rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, group := range r.APIGroups {
		for _, resource := range r.Resources {
			for _, verb := range r.Verbs {
				if len(r.ResourceNames) == 0 {
					out = append(out, rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: []string{verb}})
					continue
				}
				for _, name := range r.ResourceNames {
					out = append(out, rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, ResourceNames: []string{name}, Verbs: []string{verb}})
				}
			}
		}
	}
	for _, url := range r.NonResourceURLs {
		for _, verb := range r.Verbs {
			out = append(out, rbacv1.PolicyRule{NonResourceURLs: []string{url}, Verbs: []string{verb}})
		}
	}
	return out
}

// covers reports whether owner grants everything atom does.
func covers(owner, atom *rbacv1.PolicyRule) bool {
	if !has(owner.Verbs, rbacv1.VerbAll) && !hasAll(owner.Verbs, atom.Verbs) {
		return false
	}
	if len(atom.NonResourceURLs) > 0 {
		for _, want := range atom.NonResourceURLs {
			if !urlCovered(owner.NonResourceURLs, want) {
				return false
			}
		}
		return true
	}
	if !has(owner.APIGroups, rbacv1.APIGroupAll) && !hasAll(owner.APIGroups, atom.APIGroups) {
		return false
	}
	for _, want := range atom.Resources {
		if !resourceCovered(owner.Resources, want) {
			return false
		}
	}
	if len(owner.ResourceNames) == 0 {
		return true
	}
	return len(atom.ResourceNames) > 0 && hasAll(owner.ResourceNames, atom.ResourceNames)
}

func hasAll(set, want []string) bool {
	for _, w := range want {
		if !has(set, w) {
			return false
		}
	}
	return true
}

// resourceCovered: "*" covers all, a name itself, "*/sub" every "x/sub".
func resourceCovered(owner []string, want string) bool {
	for _, o := range owner {
		if o == rbacv1.ResourceAll || o == want {
			return true
		}
		if sub, ok := strings.CutPrefix(o, "*/"); ok {
			if i := strings.Index(want, "/"); i >= 0 && want[i+1:] == sub {
				return true
			}
		}
	}
	return false
}

// urlCovered: a URL itself, or a prefix ending in "*".
func urlCovered(owner []string, want string) bool {
	for _, o := range owner {
		if o == want || (strings.HasSuffix(o, "*") && strings.HasPrefix(want, o[:len(o)-1])) {
			return true
		}
	}
	return false
}

// compact merges the verbs of rules on the same single resource of the
// same group, or on the same one object of it, as kube words the missing
// permissions.
func compact(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	type key struct {
		group, resource string
		named           bool
		name            string
	}
	var out []rbacv1.PolicyRule
	merged := map[key]int{}
	for _, r := range rules {
		if len(r.APIGroups) == 1 && len(r.Resources) == 1 && len(r.ResourceNames) <= 1 && len(r.NonResourceURLs) == 0 {
			k := key{group: r.APIGroups[0], resource: r.Resources[0]}
			if len(r.ResourceNames) == 1 {
				k.named, k.name = true, r.ResourceNames[0]
			}
			if i, ok := merged[k]; ok {
				out[i].Verbs = append(out[i].Verbs, r.Verbs...)
				continue
			}
			merged[k] = len(out)
			r.Verbs = append([]string(nil), r.Verbs...)
		}
		out = append(out, r)
	}
	return out
}

// compactString writes a rule as kube's messages do:
// {APIGroups:["batch"], Resources:["cronjobs"], Verbs:["get" "list"]}.
func compactString(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(name string, v []string) {
		if len(v) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", name, v))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("NonResourceURLs", r.NonResourceURLs)
	add("ResourceNames", r.ResourceNames)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}
