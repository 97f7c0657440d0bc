// Package authentication serves authentication.k8s.io/v1's reviews:
// TokenReview, which asks the server to authenticate a token, and
// SelfSubjectReview, which tells the requester who the server takes it
// for (kubectl auth whoami). Both are create-only virtual resources;
// nothing is stored.
package authentication

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cronplane/cronplane/pkg/auth/authenticator"
	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// Entries are the two reviews; tokens authenticates what a TokenReview
// carries.
func Entries(tokens authenticator.Token) []*registry.Entry {
	entry := func(kind, plural string, newFunc func() runtime.Object, s rest.Storage) *registry.Entry {
		return &registry.Entry{
			Resource: &rest.Resource{
				GroupVersionKind: authenticationv1.SchemeGroupVersion.WithKind(kind),
				Plural:           plural,
				Singular:         plural[:len(plural)-1],
				New:              newFunc,
			},
			Storage: s,
		}
	}
	return []*registry.Entry{
		entry("SelfSubjectReview", "selfsubjectreviews", func() runtime.Object { return &authenticationv1.SelfSubjectReview{} }, selfReviews{}),
		entry("TokenReview", "tokenreviews", func() runtime.Object { return &authenticationv1.TokenReview{} }, tokenReviews{tokens}),
	}
}

func userInfo(u *user.Info) authenticationv1.UserInfo {
	out := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		out.Extra = make(map[string]authenticationv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			out.Extra[k] = v
		}
	}
	return out
}

type tokenReviews struct{ tokens authenticator.Token }

func (tokenReviews) New() runtime.Object { return &authenticationv1.TokenReview{} }

// Create authenticates the token as a request bearing it would be: a
// user in system:authenticated, or not authenticated with the reason.
func (s tokenReviews) Create(ctx context.Context, _ string, obj runtime.Object, v rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	r := obj.(*authenticationv1.TokenReview)
	if r.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	if v != nil {
		if err := v(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	if len(r.Spec.Audiences) > 0 {
		ctx = authenticator.WithAudiences(ctx, r.Spec.Audiences)
	}
	u, ok, err := s.tokens.AuthenticateToken(ctx, r.Spec.Token)
	r.Status = authenticationv1.TokenReviewStatus{Authenticated: ok}
	switch {
	case ok:
		r.Status.User = userInfo(authenticator.WithAuthenticatedGroup(u))
		r.Status.Audiences = authenticator.AudiencesFrom(ctx)
	case err != nil:
		r.Status.Error = err.Error()
	}
	return r, nil
}

type selfReviews struct{}

func (selfReviews) New() runtime.Object { return &authenticationv1.SelfSubjectReview{} }

func (selfReviews) Create(ctx context.Context, _ string, obj runtime.Object, v rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	r := obj.(*authenticationv1.SelfSubjectReview)
	u, ok := user.From(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	if v != nil {
		if err := v(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	r.Status.UserInfo = userInfo(u)
	return r, nil
}
