// Package authorizer owns authorization decisions: whether a user may
// perform a verb on a resource or a path. The question is a plain record,
// Attributes, that the request filter builds from the request and that an
// access review can build without one; an Authorizer answers allow, deny
// or no opinion with a reason, and a Union asks several in turn.
package authorizer

import (
	"context"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/cronplane/cronplane/pkg/auth/user"
)

// Decision is an authorizer's answer.
type Decision int

const (
	// NoOpinion lets the next authorizer decide; at the end of a union it
	// denies.
	NoOpinion Decision = iota
	Allow
	Deny
)

// Attributes describe one access to decide.
type Attributes struct {
	User *user.Info
	// Verb is the API verb (get, list, watch, create, update, patch,
	// delete, deletecollection, or one such as impersonate) of a resource
	// request, the lower-case HTTP method otherwise.
	Verb string
	// ResourceRequest is false for paths such as /healthz or /apis, which
	// Path then names.
	ResourceRequest bool
	Path            string
	Namespace       string
	APIGroup        string
	APIVersion      string
	Resource        string
	Subresource     string
	Name            string
}

// Authorizer decides one access. reason explains the decision to a
// human; err is a failure to decide, which denies.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (d Decision, reason string, err error)
}

// Union asks authorizers in order until one allows or denies, and
// answers as it does. A failure to decide is no opinion: the next is
// asked. When none decides, the reasons of all (one per line) and their
// failures come back, as kube's union answers: a 403 then says why.
type Union []Authorizer

func (u Union) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	var reasons []string
	var errs []error
	for _, z := range u {
		d, reason, err := z.Authorize(ctx, a)
		if d != NoOpinion {
			return d, reason, err
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return NoOpinion, strings.Join(reasons, "\n"), utilerrors.NewAggregate(errs)
}

// AlwaysAllow allows everything, as kube's AlwaysAllow mode does.
type AlwaysAllow struct{}

func (AlwaysAllow) Authorize(context.Context, Attributes) (Decision, string, error) {
	return Allow, "", nil
}

// AlwaysDeny allows nothing, as kube's AlwaysDeny mode does: it has no
// opinion, with a reason, so that the modes after it still decide.
type AlwaysDeny struct{}

func (AlwaysDeny) Authorize(context.Context, Attributes) (Decision, string, error) {
	return NoOpinion, "Everything is forbidden.", nil
}

// PrivilegedGroups allows everything to members of its groups (kube's
// system:masters), before any other authorizer is asked.
type PrivilegedGroups []string

func (p PrivilegedGroups) Authorize(_ context.Context, a Attributes) (Decision, string, error) {
	if a.User != nil {
		for _, g := range a.User.Groups {
			for _, pg := range p {
				if g == pg {
					return Allow, "", nil
				}
			}
		}
	}
	return NoOpinion, "", nil
}

// RuleResolver lists what a user may do in a namespace, for rules
// reviews. incomplete reports that some rules could not be read (err says
// why); the rules returned are then a part of the truth.
type RuleResolver interface {
	RulesFor(ctx context.Context, u *user.Info, namespace string) (rules []rbacv1.PolicyRule, incomplete bool, err error)
}

// RuleResolvers asks every resolver and joins the answers; the errors
// are joined as kube aggregates them.
type RuleResolvers []RuleResolver

func (rs RuleResolvers) RulesFor(ctx context.Context, u *user.Info, namespace string) ([]rbacv1.PolicyRule, bool, error) {
	var all []rbacv1.PolicyRule
	incomplete := false
	var errs []error
	for _, r := range rs {
		rules, inc, err := r.RulesFor(ctx, u, namespace)
		all = append(all, rules...)
		incomplete = incomplete || inc
		if err != nil {
			errs = append(errs, err)
		}
	}
	return all, incomplete, utilerrors.NewAggregate(errs)
}

// RulesFor of AlwaysAllow is everything.
func (AlwaysAllow) RulesFor(context.Context, *user.Info, string) ([]rbacv1.PolicyRule, bool, error) {
	return []rbacv1.PolicyRule{
		{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
		{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
	}, false, nil
}
