// Package authorizer owns the authorization stage of the filter chain: after
// authentication has put a user in the request's context and the request
// info is known, an Authorizer decides whether the user may perform the
// verb on the resource or path. A denied request gets a 403 Status.
package authorizer

import (
	"context"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/auth/authenticator"
	"github.com/cronplane/cronplane/pkg/endpoints/request"
	"github.com/cronplane/cronplane/pkg/endpoints/responsewriters"
)

// Decision is an authorizer's answer.
type Decision int

const (
	// NoOpinion lets the next authorizer decide; at the end of the chain it
	// denies.
	NoOpinion Decision = iota
	Allow
	Deny
)

// Attributes are what an authorizer decides on.
type Attributes struct {
	User *authenticator.User
	Info *request.RequestInfo
}

// Authorizer decides one request. reason explains a Deny.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (d Decision, reason string, err error)
}

// Chain asks authorizers in order until one allows or denies.
type Chain []Authorizer

func (c Chain) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	for _, z := range c {
		d, reason, err := z.Authorize(ctx, a)
		if err != nil || d != NoOpinion {
			return d, reason, err
		}
	}
	return NoOpinion, "", nil
}

// AuthenticatedUsers allows every request of an authenticated user (kube's
// AlwaysAllow mode behind authentication); anonymous requests get no
// opinion.
type AuthenticatedUsers struct{}

func (AuthenticatedUsers) Authorize(_ context.Context, a Attributes) (Decision, string, error) {
	if a.User == nil {
		return NoOpinion, "", nil
	}
	for _, g := range a.User.Groups {
		if g == authenticator.GroupAuthenticated {
			return Allow, "", nil
		}
	}
	return NoOpinion, "", nil
}

// PublicPaths allows anyone to read the health and version endpoints, as
// kube's default policy does.
type PublicPaths map[string]bool

func (p PublicPaths) Authorize(_ context.Context, a Attributes) (Decision, string, error) {
	if a.Info != nil && !a.Info.IsResourceRequest && a.Info.Verb == "get" && p[a.Info.Path] {
		return Allow, "", nil
	}
	return NoOpinion, "", nil
}

// WithAuthorization rejects requests the authorizer does not allow.
func WithAuthorization(next http.Handler, z Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _ := authenticator.UserFrom(r.Context())
		info, _ := request.RequestInfoFrom(r.Context())
		d, reason, err := z.Authorize(r.Context(), Attributes{User: user, Info: info})
		if err != nil {
			responsewriters.WriteError(w, r, apierrors.NewInternalError(err))
			return
		}
		if d != Allow {
			responsewriters.WriteError(w, r, forbidden(user, info, reason))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func forbidden(user *authenticator.User, info *request.RequestInfo, reason string) error {
	name := "system:anonymous"
	if user != nil {
		name = user.Name
	}
	var msg string
	if info != nil && info.IsResourceRequest {
		msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q", name, info.Verb, info.Resource, info.APIGroup)
		if info.Namespace != "" {
			msg += fmt.Sprintf(" in the namespace %q", info.Namespace)
		} else {
			msg += " at the cluster scope"
		}
	} else if info != nil {
		msg = fmt.Sprintf("User %q cannot %s path %q", name, info.Verb, info.Path)
	}
	if reason != "" {
		msg += ": " + reason
	}
	gr := schema.GroupResource{}
	resName := ""
	if info != nil {
		gr = schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
		resName = info.Name
	}
	return apierrors.NewForbidden(gr, resName, fmt.Errorf("%s", msg))
}
